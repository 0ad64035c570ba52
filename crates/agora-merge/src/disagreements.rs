//! The disagreement map ([`DisagreementMap`]): every event with an open
//! dispute, with the reasoning that led to it and who accepts it, and every
//! fork met on a view chain, with who accepts and who builds on each side.
//!
//! [`Merge::disagreements`] reads it off a recompute of every entry; a node
//! reads it off its live state (`LiveMerge::disagreements`, in
//! `live/disagreements.rs`), asking its store only for what the map shows.
//! The two share the functions here, which turn what each reads into the
//! map, so that they differ only in where they read; the property test
//! `live_equals_recompute` compares them after every step.

use crate::merge::{ForkOutcome, IdMap, Merge, NONE};
use crate::payload::MergeEvent;
use crate::views::{ANCESTORS_MAX, Branch, DisagreementMap, DisputeMark, DisputedEventView, ForkBranches};
use agora_core::{AgentId, EntryId};
use agora_graph::Event;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// The reasoning event an entry's meaning (its payload, or the residue left
/// by a redaction) carries, if it is one.
pub(crate) fn reasoning_event_of(meaning: Option<&[u8]>) -> Option<Event> {
    meaning.filter(|p| Event::is_event_payload(p)).and_then(|p| Event::decode(p).ok())
}

/// An entry's kind and text in the map. `record` is `Some` for a merge event
/// (with its event, `None` when its payload does not decode); `missing` when
/// its payload never arrived; `meaning` its payload or residue.
pub(crate) fn kind_and_text_of(record: Option<Option<&MergeEvent>>, missing: bool, meaning: Option<&[u8]>) -> (String, String) {
    if let Some(event) = record {
        return (event.map_or("invalid", |e| e.kind_name()).to_string(), String::new());
    }
    if missing {
        return ("missing".into(), String::new());
    }
    match meaning {
        None => ("redacted".into(), String::new()),
        Some(p) if !Event::is_event_payload(p) => ("raw".into(), String::new()),
        Some(p) => match Event::decode(p) {
            Ok(e) => (e.kind_name().to_string(), e.into_text()),
            Err(_) => ("invalid".into(), String::new()),
        },
    }
}

/// The reasoning that led to `start`: breadth first over `refs` (the known
/// entries an entry's reasoning event refers to), nearest first, at most
/// [`ANCESTORS_MAX`]; true when there are more.
pub(crate) fn ancestors_by(start: EntryId, mut refs: impl FnMut(&EntryId) -> Vec<EntryId>) -> (Vec<EntryId>, bool) {
    let mut out = Vec::new();
    let mut seen: HashSet<EntryId> = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(x) = queue.pop_front() {
        for y in refs(&x) {
            if seen.insert(y) {
                if out.len() == ANCESTORS_MAX {
                    return (out, true);
                }
                out.push(y);
                queue.push_back(y);
            }
        }
    }
    (out, false)
}

/// The sides of one fork, acceptors and builders not yet known, with each
/// side's members: the held entries that descend from its first entry (none
/// when that entry is not held).
pub(crate) type ForkSides = (ForkBranches, Vec<Vec<EntryId>>);

/// Fill in who accepts each side of every fork (`sides`, in chain order)
/// and note which side each member is on (the last fork's side, where forks
/// nest), for [`add_builder`].
///
/// `clipped_accepts(author)`: (head, signer) of every accept whose head is
/// held on `author`'s chain off its view (clipped at a fork); such an accept
/// is on the side that holds its head. `frontiers(author)`: (acceptor, seq)
/// of every accept frontier on `author`'s chain; one at or past the fork is
/// on the kept side.
pub(crate) fn with_acceptors(
    sides: Vec<ForkSides>,
    counts: &dyn Fn(&AgentId) -> bool,
    mut clipped_accepts: impl FnMut(&AgentId) -> Vec<(EntryId, AgentId)>,
    mut frontiers: impl FnMut(&AgentId) -> Vec<(AgentId, u64)>,
) -> (Vec<ForkBranches>, IdMap<(usize, usize)>) {
    let mut member: IdMap<(usize, usize)> = IdMap::default();
    let mut out = Vec::with_capacity(sides.len());
    for (mut fork, members) in sides {
        let f = out.len();
        let accepts = clipped_accepts(&fork.author);
        let past = if fork.branches.iter().any(|b| b.kept) { frontiers(&fork.author) } else { Vec::new() };
        for (b, (branch, ids)) in fork.branches.iter_mut().zip(&members).enumerate() {
            if !branch.held {
                continue;
            }
            for id in ids {
                member.insert(*id, (f, b));
            }
            let inside: HashSet<&EntryId> = ids.iter().collect();
            let mut by: BTreeSet<AgentId> = accepts.iter().filter(|(head, _)| inside.contains(head)).map(|(_, signer)| *signer).collect();
            if branch.kept {
                // Accepts on the kept side past the fork are applied ones.
                by.extend(past.iter().filter(|(_, seq)| *seq >= fork.fork.seq).map(|(a, _)| *a));
            }
            branch.accepted_by = by.into_iter().filter(|a| counts(a)).collect();
        }
        out.push(fork);
    }
    (out, member)
}

/// Note that `author`'s viewed reasoning `event` builds on the sides its
/// references fall on (never on a side of `author`'s own chain).
pub(crate) fn add_builder(
    built: &mut BTreeSet<(usize, usize, AgentId)>,
    forks: &[ForkBranches],
    member: &IdMap<(usize, usize)>,
    author: AgentId,
    event: &Event,
) {
    for r in event.ref_list().iter() {
        if let Some(&(f, b)) = member.get(r)
            && forks[f].author != author
        {
            built.insert((f, b, author));
        }
    }
}

/// Write the builders noted by [`add_builder`] into their sides, ascending.
pub(crate) fn set_builders(forks: &mut [ForkBranches], built: BTreeSet<(usize, usize, AgentId)>) {
    for (f, b, a) in built {
        forks[f].branches[b].built_on_by.push(a);
    }
}

impl Merge<'_> {
    /// The forks on chain `c`'s view, each side with its tips and members.
    pub(crate) fn fork_sides(&self, c: usize) -> Vec<ForkSides> {
        let chain = &self.chains[c];
        let mut out = Vec::new();
        for fork in &chain.forks {
            let kept = match &fork.outcome {
                ForkOutcome::Resolved { continue_with, .. } => Some(*continue_with),
                _ => None,
            };
            let mut branches = Vec::new();
            let mut members = Vec::new();
            for first in &fork.candidates {
                let Some(root) = self.lookup(first) else {
                    branches.push(Branch { first: *first, held: false, kept: false, tips: vec![], accepted_by: vec![], built_on_by: vec![] });
                    members.push(Vec::new());
                    continue;
                };
                let mut tips: Vec<(u64, EntryId)> =
                    self.subtree_tips(root).into_iter().map(|k| (self.items[k as usize].seq(), self.items[k as usize].id())).collect();
                tips.sort_unstable();
                members.push(self.subtree(root).into_iter().map(|k| self.items[k as usize].id()).collect());
                branches.push(Branch { first: *first, held: true, kept: kept == Some(*first), tips, accepted_by: vec![], built_on_by: vec![] });
            }
            out.push((ForkBranches { author: chain.author, fork: fork.clone(), branches }, members));
        }
        out
    }

    /// Frontiers grouped by the chain they are on: (acceptor, seq).
    fn frontiers_by_chain(&self) -> HashMap<AgentId, Vec<(AgentId, u64)>> {
        let mut out: HashMap<AgentId, Vec<(AgentId, u64)>> = HashMap::new();
        for ((acceptor, author), f) in &self.frontiers {
            out.entry(*author).or_default().push((*acceptor, f.seq));
        }
        out
    }

    /// Agents whose accepts cover item `t`.
    fn acceptors_of(&self, t: u32, by_chain: &HashMap<AgentId, Vec<(AgentId, u64)>>) -> Vec<AgentId> {
        let it = &self.items[t as usize];
        let chain = &self.chains[it.author as usize];
        let mut out: BTreeSet<AgentId> = BTreeSet::new();
        if it.on_view() {
            out.insert(chain.author);
            for (acceptor, seq) in by_chain.get(&chain.author).into_iter().flatten() {
                if *seq >= it.seq() {
                    out.insert(*acceptor);
                }
            }
        } else {
            for &(h, r) in &self.branch_accepts {
                if self.items[h as usize].author == it.author && self.descends_from(h, t) {
                    out.insert(self.records[r as usize].signer);
                }
            }
        }
        out.into_iter().collect()
    }

    /// The disagreement map. With `agents`, only their disputes, accepts and
    /// reasoning are counted.
    pub fn disagreements(&self, agents: Option<&[AgentId]>) -> DisagreementMap {
        let counted: Option<HashSet<AgentId>> = agents.map(|a| a.iter().copied().collect());
        let counts = |a: &AgentId| counted.as_ref().is_none_or(|c| c.contains(a));
        let mut grouped: BTreeMap<u32, Vec<DisputeMark>> = BTreeMap::new();
        for &(t, r) in &self.open_disputes {
            let rec = &self.records[r as usize];
            if counts(&rec.signer)
                && let Some(m) = self.dispute_mark(rec)
            {
                grouped.entry(t).or_default().push(m);
            }
        }
        let mut disputed = Vec::with_capacity(grouped.len());
        // Each entry's references, decoded once per query.
        let mut memo: HashMap<EntryId, Vec<EntryId>> = HashMap::new();
        let mut refs = |id: &EntryId| -> Vec<EntryId> {
            memo.entry(*id)
                .or_insert_with(|| match self.lookup(id).and_then(|k| reasoning_event_of(self.items[k as usize].payload)) {
                    Some(ev) => ev.ref_list().iter().filter(|r| self.lookup(r).is_some()).copied().collect(),
                    None => Vec::new(),
                })
                .clone()
        };
        let by_chain = self.frontiers_by_chain();
        for (t, mut marks) in grouped {
            marks.sort_by_key(|a| (a.by, a.dispute));
            let it = &self.items[t as usize];
            let record = (it.record != NONE).then(|| self.records[it.record as usize].event.as_ref());
            let (kind, text) = kind_and_text_of(record, it.missing(), it.payload);
            let (ancestors, ancestors_truncated) = ancestors_by(it.id(), &mut refs);
            disputed.push(DisputedEventView {
                target: it.id(),
                author: it.signed.header().author,
                seq: it.seq(),
                on_view: it.on_view(),
                kind,
                text,
                ancestors,
                ancestors_truncated,
                accepted_by: self.acceptors_of(t, &by_chain).into_iter().filter(|a| counts(a)).collect(),
                disputes: marks,
            });
        }
        let forks = self.branch_view(&counts);
        DisagreementMap { disputed, forks }
    }

    /// Every fork on a view chain, with each side's tips, acceptors and builders.
    fn branch_view(&self, counts: &dyn Fn(&AgentId) -> bool) -> Vec<ForkBranches> {
        let sides: Vec<ForkSides> = (0..self.chains.len()).flat_map(|c| self.fork_sides(c)).collect();
        let clipped = |_: &AgentId| self.branch_accepts.iter().map(|&(h, r)| (self.items[h as usize].id(), self.records[r as usize].signer)).collect();
        let by_chain = self.frontiers_by_chain();
        let frontiers = |author: &AgentId| by_chain.get(author).cloned().unwrap_or_default();
        let (mut out, member) = with_acceptors(sides, counts, clipped, frontiers);
        if member.is_empty() {
            return out;
        }
        // Who builds on which side: viewed reasoning that refers into a branch.
        // A reference is the 32 id bytes inside the payload, so a payload that
        // contains no 8-byte prefix of a branch entry's id is not decoded.
        let mut first = [false; 256];
        let mut prefixes: HashSet<[u8; 8]> = HashSet::new();
        for id in member.keys() {
            first[id.as_bytes()[0] as usize] = true;
            let mut p = [0u8; 8];
            p.copy_from_slice(&id.as_bytes()[..8]);
            prefixes.insert(p);
        }
        let may_refer = |payload: &[u8]| payload.windows(8).any(|w| first[w[0] as usize] && w.try_into().is_ok_and(|p: [u8; 8]| prefixes.contains(&p)));
        let mut built: BTreeSet<(usize, usize, AgentId)> = BTreeSet::new();
        for chain in &self.chains {
            if !counts(&chain.author) {
                continue;
            }
            for &k in &chain.view {
                let payload = self.items[k as usize].payload;
                if !payload.is_some_and(may_refer) {
                    continue;
                }
                if let Some(ev) = reasoning_event_of(payload) {
                    add_builder(&mut built, &out, &member, chain.author, &ev);
                }
            }
        }
        set_builders(&mut out, built);
        out
    }
}
