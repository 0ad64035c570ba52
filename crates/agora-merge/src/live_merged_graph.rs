//! The merged reasoning graph kept current as entries arrive:
//! [`LiveMergedGraph`].
//!
//! The merged graph is every view chain's reasoning events replayed together
//! ([`Merge::merged_graph`](crate::Merge::merged_graph)): what the Automerge
//! document publishes. Recomputing it replays every event (about a second at
//! 700k events). A node that publishes the document keeps this instead,
//! refreshed from the [`LiveMerge`] after each update in the same two ways as
//! a [`LivePerspective`](crate::LivePerspective), whose mechanics it shares
//! (`live_perspective.rs`): it is the perspective of an agent that includes
//! every view chain whole and excludes nothing.
//!
//! - **In place**: every chain's view still starts with what the graph
//!   applied of it, and no payload inside that changed. Only the new events
//!   are asked of the caller. Those that sort after the last one applied are
//!   applied as usual; earlier ones (in a swarm whose agents write at once,
//!   most arrivals) with one rewind of the graph's journal of its last
//!   applies, or, older than the journal, in place when nothing they read
//!   or write was touched by a later event ([`Graph::apply_all`]).
//! - **Rebuilt** otherwise (a fork that freezes a chain below what was
//!   applied, a resolution that switches branch, a redaction, an event
//!   older than the journal whose order matters): every view chain is asked
//!   of the caller and replayed.
//!
//! After every refresh it equals `Merge::merged_graph` over the same set
//! (snapshot, texts and digest): the property test `live_equals_recompute`
//! checks it after each delivery.

use crate::input::MergeEntry;
use crate::live::LiveMerge;
use crate::live_perspective::{PerspectiveRefresh, Prefix, new_events, payload_changed_inside, prefixes_kept, replay_prefixes};
use agora_core::id_arena::IdArena;
use agora_core::{AgentId, EntryId};
use agora_graph::{Graph, Late, TextSource};
use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::Arc;

/// The merged reasoning graph, kept current. See the module docs.
#[derive(Debug)]
pub struct LiveMergedGraph {
    graph: Graph,
    /// What the graph holds of each chain: its whole view chain as of the
    /// last refresh.
    prefixes: BTreeMap<AgentId, Prefix>,
}

/// Every chain's whole view.
fn whole_views(merge: &LiveMerge) -> BTreeMap<AgentId, Prefix> {
    let mut prefixes = BTreeMap::new();
    for author in merge.agents() {
        let view = merge.view_chain(&author);
        if let Some(head) = view.last() {
            prefixes.insert(author, Prefix { upto: view.len() as u64, head });
        }
    }
    prefixes
}

/// What the merged graph is built from, as the merged state had it when
/// the plan was made ([`LiveMergedGraph::plan`]): every view chain, named by
/// its head. Building from it ([`MergedGraphPlan::build`]) reads only the
/// store, so a node builds the graph (about a second at a million entries)
/// without holding its merged view, then brings it up to date in place
/// ([`LiveMergedGraph::refresh_in_place`]).
#[derive(Debug)]
pub struct MergedGraphPlan {
    prefixes: BTreeMap<AgentId, Prefix>,
    texts: Option<Arc<dyn TextSource>>,
    /// The arena the merged state holds its ids in: the graph holds its
    /// own there too.
    ids: Arc<IdArena>,
}

impl MergedGraphPlan {
    /// Build a graph that holds no texts but reads them from `source`, the
    /// store `load` reads ([`Graph::with_texts_from`]); it is built again
    /// the same way when it must be replayed.
    pub fn texts_from(mut self, source: Arc<dyn TextSource>) -> Self {
        self.texts = Some(source);
        self
    }

    /// The merged graph as of the plan, built by replay. `load` as for
    /// [`LiveMergedGraph::build`].
    pub fn build<E>(self, mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>) -> Result<LiveMergedGraph, E> {
        let graph = replay_prefixes(&self.prefixes, &HashSet::new(), self.texts, self.ids, &mut load)?;
        Ok(LiveMergedGraph { graph, prefixes: self.prefixes })
    }
}

impl LiveMergedGraph {
    /// The merged graph of `merge`, built by replay. `load(author, seqs)`
    /// must return every entry held of `author` with a seq in `seqs` (any
    /// branch, any order), with what is known of its payload.
    pub fn build<E>(merge: &LiveMerge, load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>) -> Result<Self, E> {
        Self::plan(merge).build(load)
    }

    /// What the merged graph of `merge` is built from (see [`MergedGraphPlan`]).
    pub fn plan(merge: &LiveMerge) -> MergedGraphPlan {
        MergedGraphPlan { prefixes: whole_views(merge), texts: None, ids: merge.ids().clone() }
    }

    /// Bring the graph up to date with `merge`, in place when it can be,
    /// by replay otherwise (see the module docs). `payloads_changed`: every
    /// entry whose payload was filled in or redacted since the last refresh.
    pub fn refresh<E>(
        &mut self,
        merge: &LiveMerge,
        payloads_changed: &[EntryId],
        mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
    ) -> Result<PerspectiveRefresh, E> {
        if let Some(done) = self.refresh_in_place(merge, payloads_changed, &mut load)? {
            return Ok(done);
        }
        let mut plan = Self::plan(merge);
        plan.texts = self.graph.text_source();
        *self = plan.build(load)?;
        Ok(PerspectiveRefresh { applied: 0, rebuilt: true })
    }

    /// [`LiveMergedGraph::refresh`] when it can be done in place; `None`
    /// when the graph must be replayed, in which case it may have taken
    /// some of the new events already and must not be used again (a node
    /// drops it, rather than replay on its view thread, and builds it again
    /// when it is next asked for).
    pub fn refresh_in_place<E>(
        &mut self,
        merge: &LiveMerge,
        payloads_changed: &[EntryId],
        mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
    ) -> Result<Option<PerspectiveRefresh>, E> {
        if payload_changed_inside(merge, &self.prefixes, payloads_changed) {
            return Ok(None);
        }
        let now = whole_views(merge);
        if !prefixes_kept(merge, &self.prefixes, &now) {
            return Ok(None);
        }
        let events = new_events(&self.prefixes, &now, &HashSet::new(), &mut load)?;
        let applied = events.len();
        // Those that sort after the last one applied as usual, earlier ones
        // with one rewind of the graph's journal, or in place
        // (`Graph::apply_all`).
        if self.graph.apply_all(events) != Late::Applied {
            return Ok(None);
        }
        self.prefixes = now;
        Ok(Some(PerspectiveRefresh { applied, rebuilt: false }))
    }

    /// The merged graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The graph's digest ([`Graph::digest`]): hashes again only the buckets
    /// changed since it was last asked.
    pub fn digest(&mut self) -> [u8; 32] {
        self.graph.digest()
    }
}
