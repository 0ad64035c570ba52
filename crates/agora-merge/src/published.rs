//! The merged view as one document: what `agora-automerge` publishes.
//!
//! It holds the merged reasoning graph (the reasoning events on every view
//! chain, replayed together), whose nodes it reads out with their status,
//! edges and open dispute marks, and per chain its view head, fork state and
//! accept frontiers (a node is accepted by an agent when its frontier on the
//! node's chain reaches the node's seq).
//!
//! The view owns the graph and reads each node from it when asked, instead of
//! holding a copy of every node: a copy of 730k nodes' text and edges cost
//! more than replaying the graph did, and every reader converts the nodes into
//! its own form anyway (the Automerge document, JSON).

use crate::input::{InputError, MergeEntry};
use crate::merge::{ForkOutcome, Merge};
use crate::views::DisputeMark;
use agora_core::{AgentId, EntryId, ForkProof};
use agora_graph::{ById, Graph, NodeRef};

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

/// One node of the merged reasoning graph, read from the view's graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewNode<'v> {
    /// Entry id.
    pub id: EntryId,
    /// Author.
    pub author: AgentId,
    /// Seq.
    pub seq: u64,
    /// Kind name.
    pub kind: &'static str,
    /// Text (held by the graph, or read from its store).
    pub text: std::borrow::Cow<'v, str>,
    /// Status name in the merged graph.
    pub status: &'static str,
    /// Outgoing edges: (relation, target), in the order they were drawn.
    pub edges: Vec<(&'static str, EntryId)>,
    /// Open disputes of this node, ascending by (disputer, dispute entry).
    pub disputed_by: &'v [DisputeMark],
}

/// The whole merged view.
#[derive(Clone, Debug)]
pub struct MergedView {
    /// [`Merge::view_hash`].
    pub view_hash: [u8; 32],
    /// The merged graph's digest ([`Graph::digest`]: over 4,096 buckets of
    /// nodes, so that a live view hashes again only what changed).
    pub graph_digest: [u8; 32],
    /// Chains, ascending by author.
    pub chains: Vec<ChainSummary>,
    /// Open disputes, by (target, disputer, dispute entry).
    pub disputes: Vec<DisputeMark>,
    graph: Graph,
}

impl MergedView {
    pub(crate) fn new(view_hash: [u8; 32], graph_digest: [u8; 32], chains: Vec<ChainSummary>, disputes: Vec<DisputeMark>, graph: Graph) -> Self {
        MergedView { view_hash, graph_digest, chains, disputes, graph }
    }

    /// The merged reasoning graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.graph.len()
    }

    /// True when no view chain holds a reasoning event.
    pub fn is_empty(&self) -> bool {
        self.graph.is_empty()
    }

    /// The nodes, ascending by id, each with its dispute marks (found by
    /// walking the disputes, which are in target order, alongside).
    pub fn nodes(&self) -> ViewNodes<'_> {
        ViewNodes { view: self, by_id: self.graph.by_id(), next: 0, mark: 0 }
    }

    /// The node `id`, if it is in the merged graph.
    pub fn node(&self, id: &EntryId) -> Option<ViewNode<'_>> {
        let n = self.graph.node(id)?;
        let lo = self.disputes.partition_point(|d| d.target < *id);
        let hi = lo + self.disputes[lo..].partition_point(|d| d.target == *id);
        Some(ViewNode::read(&self.graph, n, &self.disputes[lo..hi]).unwrap_or_else(|_| unreachable!("a merged view's graph holds its texts")))
    }
}

impl<'v> ViewNode<'v> {
    /// Node `n` of the merged graph `graph`, with its open disputes
    /// `disputed_by`: how a view that is kept live (not a [`MergedView`])
    /// reads its nodes out. Fails only for a graph that reads its texts
    /// from a store ([`Graph::with_texts_from`]), if the store fails.
    pub fn read(graph: &'v Graph, n: NodeRef<'v>, disputed_by: &'v [DisputeMark]) -> Result<Self, agora_graph::TextUnavailable> {
        let text = graph.text(n)?;
        Ok(ViewNode {
            id: n.id,
            author: graph.position(n).author,
            seq: n.seq(),
            kind: n.kind(),
            text,
            status: n.status().name(),
            edges: graph.edges(n).collect(),
            disputed_by,
        })
    }
}

/// The nodes of a [`MergedView`] in id order (see [`MergedView::nodes`]).
pub struct ViewNodes<'v> {
    view: &'v MergedView,
    by_id: ById<'v>,
    /// Next position in id order.
    next: usize,
    /// First dispute whose target is not below the next node.
    mark: usize,
}

impl<'v> Iterator for ViewNodes<'v> {
    type Item = ViewNode<'v>;

    fn next(&mut self) -> Option<ViewNode<'v>> {
        let n = self.by_id.get(self.next)?;
        self.next += 1;
        let disputes = &self.view.disputes;
        while self.mark < disputes.len() && disputes[self.mark].target < n.id {
            self.mark += 1;
        }
        let lo = self.mark;
        while self.mark < disputes.len() && disputes[self.mark].target == n.id {
            self.mark += 1;
        }
        // A merged view's graph is replayed by the merge, which keeps texts.
        Some(ViewNode::read(&self.view.graph, n, &disputes[lo..self.mark]).unwrap_or_else(|_| unreachable!("a merged view's graph holds its texts")))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.by_id.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for ViewNodes<'_> {}

impl<'a> Merge<'a> {
    /// [`Merge::compute`] and [`Merge::merged_view`] together, in less time
    /// than one after the other: the merged graph depends only on the view
    /// chains (steps 1 and 2), so it is replayed while the merge events are
    /// evaluated (step 3). Same results as the two calls.
    pub fn compute_with_view(entries: &'a [MergeEntry], proofs: &'a [ForkProof]) -> Result<(Self, MergedView), InputError> {
        crate::input::check_reasoning_held(entries)?;
        let mut m = Self::chains_of(entries, proofs)?;
        let (mut graph, outcomes) = m.merged_graph_beside(m.chains.len(), |c| m.evaluate_signer(c));
        // The graph's digest (most of what is left) beside settling the
        // merge events and what the view takes from them.
        let (graph_digest, (view_hash, disputes, chains)) = rayon::join(
            || graph.digest(),
            || {
                m.settle(outcomes);
                (m.view_hash(), m.open_disputes(), m.chain_summaries())
            },
        );
        let view = MergedView::new(view_hash, graph_digest, chains, disputes, graph);
        Ok((m, view))
    }
}

impl Merge<'_> {
    /// The reasoning graph of every view chain together (merge events left out).
    pub fn merged_graph(&self) -> Graph {
        self.merged_graph_beside(0, |_| ()).0
    }

    /// The merged view: chains, the merged graph with its hash, and the accept
    /// and dispute marks. [`Merge::compute_with_view`] computes the merge and
    /// this together, faster.
    pub fn merged_view(&self) -> MergedView {
        self.view_of_merged_graph(self.merged_graph())
    }

    /// The merged view around `graph`, which is [`Merge::merged_graph`].
    fn view_of_merged_graph(&self, mut graph: Graph) -> MergedView {
        // The graph's digest is most of the work; the rest goes beside it.
        let (graph_digest, (view_hash, disputes, chains)) = rayon::join(|| graph.digest(), || (self.view_hash(), self.open_disputes(), self.chain_summaries()));
        MergedView { view_hash, graph_digest, chains, disputes, graph }
    }

    pub(crate) fn chain_summaries(&self) -> Vec<ChainSummary> {
        self.chains
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
            .collect()
    }
}
