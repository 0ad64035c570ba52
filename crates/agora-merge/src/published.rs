//! The merged view as one document: what `agora-automerge` publishes.
//!
//! It holds every node of the merged reasoning graph (the reasoning events on
//! every view chain, replayed together) with its status and edges, the open
//! dispute marks on each node, and per chain its view head, fork state and
//! accept frontiers (a node is accepted by an agent when its frontier on the
//! node's chain reaches the node's seq).

use crate::merge::{ForkOutcome, Merge, NONE};
use crate::views::DisputeMark;
use agora_core::{AgentId, EntryId};
use agora_graph::Graph;
use std::collections::BTreeMap;

/// One chain in the published view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainSummary {
    /// The author.
    pub author: AgentId,
    /// Length of the view chain.
    pub view_len: u64,
    /// Its head.
    pub head: Option<EntryId>,
    /// Where it forks, if frozen.
    pub frozen_at: Option<u64>,
    /// Resolved forks: (fork seq, entry the view continues with).
    pub resolved: Vec<(u64, EntryId)>,
    /// Accept frontiers on this chain: (agent, seq), ascending.
    pub accepted_by: Vec<(AgentId, u64)>,
}

/// One node of the merged reasoning graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewNode {
    /// Entry id.
    pub id: EntryId,
    /// Author.
    pub author: AgentId,
    /// Seq.
    pub seq: u64,
    /// Kind name.
    pub kind: String,
    /// Text.
    pub text: String,
    /// Status name in the merged graph.
    pub status: &'static str,
    /// Outgoing edges: (relation, target).
    pub edges: Vec<(String, EntryId)>,
    /// Open disputes: (disputer, dispute entry), ascending.
    pub disputed_by: Vec<(AgentId, EntryId)>,
}

/// The whole merged view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergedView {
    /// [`Merge::view_hash`].
    pub view_hash: [u8; 32],
    /// SHA-256 of the merged graph's snapshot.
    pub graph_hash: [u8; 32],
    /// Chains, ascending by author.
    pub chains: Vec<ChainSummary>,
    /// Nodes, ascending by id.
    pub nodes: Vec<ViewNode>,
    /// Open disputes, by (target, disputer).
    pub disputes: Vec<DisputeMark>,
}

impl Merge<'_> {
    /// The reasoning graph of every view chain together (merge events left out).
    pub fn merged_graph(&self) -> Graph {
        let mut log = Vec::new();
        for chain in &self.chains {
            for &k in &chain.view {
                let it = &self.items[k as usize];
                if it.record == NONE {
                    let h = it.signed.header();
                    log.push((it.id(), agora_graph::LogPosition { timestamp_ms: h.timestamp_ms, author: h.author, seq: h.seq }, it.payload));
                }
            }
        }
        Graph::replay_encoded(&log)
    }

    /// The merged view: chains, the merged graph's nodes with statuses and
    /// edges, and the accept and dispute marks.
    pub fn merged_view(&self) -> MergedView {
        let graph = self.merged_graph();
        let disputes = self.open_disputes();
        let mut marks: BTreeMap<EntryId, Vec<(AgentId, EntryId)>> = BTreeMap::new();
        for d in &disputes {
            marks.entry(d.target).or_default().push((d.by, d.dispute));
        }
        let mut nodes: Vec<ViewNode> = graph
            .nodes()
            .map(|n| {
                let mut disputed_by = marks.get(&n.id).cloned().unwrap_or_default();
                disputed_by.sort_unstable();
                ViewNode {
                    id: n.id,
                    author: graph.position(n).author,
                    seq: n.seq,
                    kind: n.kind.to_string(),
                    text: n.text.clone(),
                    status: n.status().name(),
                    edges: n.edges.iter().map(|(r, t)| (r.to_string(), *t)).collect(),
                    disputed_by,
                }
            })
            .collect();
        nodes.sort_unstable_by_key(|n| n.id);
        let chains = self
            .chains
            .iter()
            .map(|c| ChainSummary {
                author: c.author,
                view_len: c.view_len(),
                head: c.view.last().map(|&k| self.items[k as usize].id()),
                frozen_at: c.frozen().map(|f| f.seq),
                resolved: c
                    .forks
                    .iter()
                    .filter_map(|f| match &f.outcome {
                        ForkOutcome::Resolved { continue_with, .. } => Some((f.seq, *continue_with)),
                        _ => None,
                    })
                    .collect(),
                accepted_by: self.frontiers.iter().filter(|((_, b), _)| *b == c.author).map(|((a, _), f)| (*a, f.seq)).collect(),
            })
            .collect();
        MergedView { view_hash: self.view_hash(), graph_hash: graph.view_hash(), chains, nodes, disputes }
    }
}
