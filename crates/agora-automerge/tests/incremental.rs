//! Issue 16: the document published incrementally from a live view (a
//! [`Publisher`] over a `LiveMerge` and a `LiveMergedGraph`, as a node
//! publishes) equals, after every delivery, the document of the merged view
//! recomputed from every entry; and after one new entry it writes only what
//! that entry changed.

use agora_automerge::{LiveViewParts, Publisher, Section, apply, publish, read_tree, view_tree};
use agora_core::{EntryId, Payload};
use agora_graph::Event;
use agora_merge::{LiveMerge, LiveMergedGraph, LiveUpdate, Merge, MergeEntry, MergeEvent, residue};
use automerge::AutoCommit;
use proptest::prelude::*;
use std::convert::Infallible;

mod common;
use common::Log;

/// One agent's move: what it writes, about which earlier entry (`pick`).
#[derive(Clone, Debug)]
enum Move {
    Propose,
    Support,
    Challenge,
    Refine,
    Accept,
    Dispute,
    Withdraw,
    /// The agent signs a second continuation of an earlier entry of its
    /// chain: its chain is frozen at the fork, and the nodes past it leave
    /// the merged graph.
    Fork,
}

fn moves() -> impl Strategy<Value = (usize, Move, usize)> {
    let m = prop_oneof![
        3 => Just(Move::Propose),
        2 => Just(Move::Support),
        2 => Just(Move::Challenge),
        1 => Just(Move::Refine),
        3 => Just(Move::Accept),
        2 => Just(Move::Dispute),
        1 => Just(Move::Withdraw),
        1 => Just(Move::Fork),
    ];
    (0usize..3, m, any::<usize>())
}

/// The swarm's log from the moves (a move that has nothing to name is a
/// proposition).
fn history(moves: &[(usize, Move, usize)]) -> Log {
    let mut log = Log::new(3);
    let mut reasoning: Vec<EntryId> = Vec::new();
    let mut disputes: Vec<(usize, EntryId)> = Vec::new();
    for (k, (i, mv, pick)) in moves.iter().enumerate() {
        let i = *i;
        let target = (!reasoning.is_empty()).then(|| reasoning[pick % reasoning.len()]);
        let other = (i + 1 + pick % 2) % 3;
        let payload = match (mv, target) {
            (Move::Support, Some(t)) => Event::Support { target: t, text: format!("support {k}") }.encode(),
            (Move::Challenge, Some(t)) => Event::Contradiction { target: t, text: format!("challenge {k}") }.encode(),
            (Move::Refine, Some(t)) => Event::Refinement { target: t, resolves: vec![], text: format!("refinement {k}") }.encode(),
            (Move::Accept, _) if !log.chain(other).is_empty() => {
                let chain = log.chain(other);
                let upto = 1 + pick % chain.len();
                let head = chain[upto - 1].id();
                MergeEvent::Accept { author: log.keys[other].agent_id(), up_to_seq: upto as u64, head }.encode()
            }
            (Move::Dispute, _) if !log.chain(other).is_empty() => {
                let chain = log.chain(other);
                let target = chain[pick % chain.len()].id();
                MergeEvent::Dispute { target, reason: format!("reason {k}"), counter_claim: (pick % 2 == 0).then(|| format!("instead {k}")) }.encode()
            }
            (Move::Withdraw, _) if disputes.iter().any(|(by, _)| *by == i) => {
                let mine: Vec<EntryId> = disputes.iter().filter(|(by, _)| *by == i).map(|(_, d)| *d).collect();
                MergeEvent::Withdraw { dispute: mine[pick % mine.len()] }.encode()
            }
            _ => Event::Proposition { text: format!("proposition {k}") }.encode(),
        };
        if matches!(mv, Move::Fork) && !log.chain(i).is_empty() {
            // Only one fork a chain: further ones change nothing the test needs.
            let len = log.chain(i).len();
            let already = log.chain(i).iter().map(|e| e.seq()).collect::<std::collections::HashSet<_>>().len() < len;
            if !already {
                let after = (pick % len).checked_sub(1);
                log.fork(i, after, Event::Proposition { text: format!("the other branch {k}") }.encode());
                continue;
            }
        }
        let is_dispute = matches!(mv, Move::Dispute) && MergeEvent::is_merge_payload(&payload);
        let is_reasoning = Event::is_event_payload(&payload);
        let id = log.push(i, payload);
        if is_dispute {
            disputes.push((i, id));
        }
        if is_reasoning {
            reasoning.push(id);
        }
    }
    log
}

/// Entries in a seeded shuffled order: out of log order, so that a live
/// graph sometimes takes an event that sorts before its last one and must
/// be replayed.
fn shuffled(entries: &[MergeEntry], seed: u64) -> Vec<MergeEntry> {
    let mut out = entries.to_vec();
    let mut x = seed | 1;
    for i in (1..out.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.swap(i, (x % (i as u64 + 1)) as usize);
    }
    out
}

/// A publisher's node: the live view and the document it publishes.
struct Node {
    held: Vec<MergeEntry>,
    live: LiveMerge,
    graph: LiveMergedGraph,
    publisher: Publisher,
    doc: AutoCommit,
}

impl Node {
    fn new() -> Self {
        let live = LiveMerge::new();
        let graph = LiveMergedGraph::build(&live, |_, _| Ok::<_, Infallible>(Vec::new())).unwrap();
        Self { held: Vec::new(), live, graph, publisher: Publisher::new(), doc: AutoCommit::new() }
    }

    /// Take in `update` (whose entries are already in `held`), refresh the
    /// graph and publish; what was written.
    fn step(&mut self, update: LiveUpdate, payloads_changed: &[EntryId]) -> agora_automerge::ViewChanges {
        let held = &self.held;
        let load = |a: &agora_core::AgentId, seqs: std::ops::RangeInclusive<u64>| {
            Ok::<_, Infallible>(held.iter().filter(|e| e.author() == *a && seqs.contains(&e.seq())).cloned().collect::<Vec<_>>())
        };
        self.live.apply(update, |a| Ok::<_, Infallible>((held.iter().filter(|e| e.author() == *a).cloned().collect(), Vec::new()))).unwrap();
        let refresh = self.graph.refresh(&self.live, payloads_changed, load).unwrap();
        let graph_digest = self.graph.digest();
        let changes = self
            .publisher
            .changes(LiveViewParts {
                view_hash: self.live.view_hash(),
                graph: self.graph.graph(),
                graph_digest,
                chains: self.live.chain_summaries(),
                disputes: self.live.open_disputes(),
                payloads_changed: Some(payloads_changed),
            })
            .unwrap();
        let _ = refresh;
        apply(&mut self.doc, &changes).unwrap();
        changes
    }

    fn expected(&self) -> std::collections::BTreeMap<String, agora_automerge::Tree> {
        view_tree(&Merge::compute(&self.held, &[]).unwrap().merged_view())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// After every delivery (in batches, out of log order, with redactions
    /// now and then), the incrementally published document equals the
    /// recomputed view's.
    #[test]
    fn incremental_publishing_equals_the_recomputed_document(
        moves in prop::collection::vec(moves(), 1..50),
        seed in any::<u64>(),
        batches in prop::collection::vec((1usize..6, any::<bool>(), any::<usize>()), 1..30),
    ) {
        let log = history(&moves);
        let order = shuffled(&log.entries, seed);
        let mut node = Node::new();
        let mut next = 0;
        let mut batches = batches;
        batches.push((order.len(), false, 0));
        for (b, (count, redact, pick)) in batches.into_iter().enumerate() {
            let end = (next + count).min(order.len());
            let mut update = LiveUpdate::default();
            let mut changed = Vec::new();
            for e in &order[next..end] {
                node.held.push(e.clone());
                update.entries.push(e.clone());
            }
            next = end;
            if redact && !node.held.is_empty() {
                let k = pick % node.held.len();
                if let Some(p) = node.held[k].payload() {
                    let r = residue(p);
                    let e = MergeEntry::with_content(node.held[k].signed().clone(), Payload::Redacted(Some(r))).unwrap();
                    update.changed.push(e.author());
                    changed.push(e.id());
                    node.held[k] = e;
                }
            }
            node.step(update, &changed);
            prop_assert_eq!(read_tree(&node.doc).unwrap(), node.expected(), "after batch {}", b);
        }
    }
}

/// One new entry, in log order, on a view of a few hundred nodes: the
/// publisher writes the nodes of the digest buckets it changed (its own
/// node's, its target's), the chain it extends, and nothing else; and the
/// document is the recomputed one.
#[test]
fn one_new_entry_writes_only_what_it_changed() {
    let mut log = Log::new(3);
    let mut ids = Vec::new();
    for k in 0..300 {
        ids.push(log.push(k % 3, Event::Proposition { text: format!("p{k}") }.encode()));
    }
    let mut node = Node::new();
    node.held = log.entries.clone();
    let first = node.step(LiveUpdate { entries: log.entries.clone(), ..LiveUpdate::default() }, &[]);
    assert!(matches!(first.nodes, Section::Whole(ref m) if m.len() == 300), "the first publish is whole");
    assert_eq!(first.nodes.len(), 300);
    assert_eq!(read_tree(&node.doc).unwrap(), node.expected());
    // Whole once more, into a fresh document, by the plain publisher: the same.
    let mut plain = AutoCommit::new();
    publish(&mut plain, &Merge::compute(&node.held, &[]).unwrap().merged_view()).unwrap();
    assert_eq!(read_tree(&plain).unwrap(), read_tree(&node.doc).unwrap());

    let support = log.push(1, Event::Support { target: ids[0], text: "agreed".into() }.encode());
    let e = log.entries.last().unwrap().clone();
    node.held.push(e.clone());
    let changes = node.step(LiveUpdate { entries: vec![e], ..LiveUpdate::default() }, &[]);
    assert_eq!(read_tree(&node.doc).unwrap(), node.expected());
    let Section::Part { ranges, .. } = &changes.nodes else { panic!("in place, not whole: {:?}", changes.nodes) };
    let written: Vec<&String> = ranges.iter().flat_map(|r| r.entries.keys()).collect();
    assert!(written.contains(&&support.to_string()) && written.contains(&&ids[0].to_string()), "{written:?}");
    // 301 nodes over 4,096 buckets: the two buckets hold little else.
    assert!(changes.nodes.len() <= 4, "wrote {} nodes", changes.nodes.len());
    assert!(matches!(&changes.chains, Section::Part { keys, .. } if keys.len() == 1), "one chain extended: {:?}", changes.chains);
    assert!(changes.disputes.is_empty());

    // A dispute: its target's node (disputed_by) and the dispute.
    let dispute = log.push(2, MergeEvent::Dispute { target: ids[1], reason: "no".into(), counter_claim: None }.encode());
    let e = log.entries.last().unwrap().clone();
    node.held.push(e.clone());
    let changes = node.step(LiveUpdate { entries: vec![e], ..LiveUpdate::default() }, &[]);
    assert_eq!(read_tree(&node.doc).unwrap(), node.expected());
    assert!(matches!(&changes.disputes, Section::Part { keys, .. } if keys.len() == 1 && keys[0].0 == dispute.to_string()));
    let Section::Part { ranges, keys } = &changes.nodes else { panic!("in place") };
    assert!(ranges.is_empty(), "no bucket digest changed: a merge event is not in the graph");
    assert_eq!(keys.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), vec![ids[1].to_string()], "only the disputed node");

    // A redaction that keeps the event's meaning: the node's text alone
    // changes (not its bucket's digest), and is written.
    let k = node.held.iter().position(|e| e.id() == ids[5]).unwrap();
    let e = MergeEntry::with_content(node.held[k].signed().clone(), Payload::Redacted(Some(residue(node.held[k].payload().unwrap())))).unwrap();
    node.held[k] = e.clone();
    let changes = node.step(LiveUpdate { changed: vec![e.author()], ..LiveUpdate::default() }, &[ids[5]]);
    assert_eq!(read_tree(&node.doc).unwrap(), node.expected());
    let Section::Part { ranges, keys } = &changes.nodes else { panic!("in place") };
    assert!(ranges.is_empty());
    assert_eq!(keys.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), vec![ids[5].to_string()], "only the redacted node");
}
