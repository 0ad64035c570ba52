//! An agent's perspective kept current as entries arrive:
//! [`LivePerspective`].
//!
//! [`Merge::perspective`](crate::Merge::perspective) replays every event the
//! agent sees into a reasoning graph (about 0.5 s at 700k events) and hashes
//! it whole. A node answers the perspectives in use from a
//! `LivePerspective` instead, refreshed from the [`LiveMerge`] after each
//! update:
//!
//! - **In place**, the common case: every prefix it included is still there
//!   unchanged (each chain's included head is still on its view: the entries
//!   link by hash, so the head names the prefix; and no payload inside it
//!   changed). An event inside them that the agent now disputes is taken
//!   out ([`Graph::exclude`]: the graph's journal of its last applies is
//!   rewound past it and the rest applied again). The new events (past the
//!   prefixes it included, and those it left out that are back, a dispute
//!   withdrawn) are asked of the caller (only those) and applied in log
//!   order: those that sort after the last one its graph applied as usual,
//!   an earlier one (an accept that reaches back into a chain's history,
//!   another agent's event that arrived late, an event back) with one
//!   rewind of the journal around them or, older than the journal, in place
//!   when nothing they name or write was named or written by a later event
//!   ([`Graph::apply_all`]). The graph lists its nodes in a
//!   replay's order all the same ([`Graph::nodes`]). The graph's digest
//!   ([`agora_graph::Graph::digest`]) then hashes again only the buckets the
//!   new events changed.
//! - **Rebuilt** otherwise (a fork that freezes a chain below what it
//!   included, a redaction inside it, an event older than the journal that
//!   is newly left out or whose place in log order matters): the included
//!   prefixes are asked of the caller and replayed, as a recompute does.
//!
//! After every refresh it equals [`Merge::perspective`](crate::Merge::perspective)
//! over the same set: the property test `live_equals_recompute` checks the
//! hash after each delivery.
//!
//! Pure like the rest of the crate: the caller reads the store.

use crate::input::MergeEntry;
use crate::live::LiveMerge;
use crate::views::{DisputeMark, Perspective};
use agora_core::id_arena::IdArena;
use agora_core::{AgentId, EntryId};
use agora_graph::{Graph, LIVE_GRAPH_JOURNAL, Late, LogEvent, TextSource};
use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::Arc;

/// What a perspective includes of one chain: its prefix through `upto`,
/// whose last entry is `head`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prefix {
    pub(crate) upto: u64,
    pub(crate) head: EntryId,
}

/// What one [`LivePerspective::refresh`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerspectiveRefresh {
    /// Events applied to the graph in place.
    pub applied: usize,
    /// The graph was replayed from the included prefixes.
    pub rebuilt: bool,
}

/// One agent's perspective, kept current. See the module docs.
#[derive(Debug)]
pub struct LivePerspective {
    view: Perspective,
    prefixes: BTreeMap<AgentId, Prefix>,
}

/// The inputs of a perspective as the merged state has them now.
#[derive(Debug)]
struct Inputs {
    prefixes: BTreeMap<AgentId, Prefix>,
    disputes: Vec<DisputeMark>,
    /// Sorted.
    excluded: Vec<EntryId>,
}

fn inputs(merge: &LiveMerge, agent: &AgentId) -> Inputs {
    let mut prefixes = BTreeMap::new();
    for author in merge.agents() {
        let view = merge.view_chain(&author);
        let upto = if author == *agent { view.len() as u64 } else { merge.frontier(agent, &author).map_or(0, |f| f.seq) };
        if let Some(head) = upto.checked_sub(1).and_then(|i| view.get(i as usize)) {
            prefixes.insert(author, Prefix { upto, head });
        }
    }
    let disputes = merge.open_disputes_by(agent);
    // The reasoning events on those prefixes that the agent disputes.
    let mut excluded: Vec<EntryId> = disputes
        .iter()
        .filter(|d| {
            merge.locate(&d.target).is_some_and(|(author, seq)| {
                prefixes.get(&author).is_some_and(|p| seq <= p.upto)
                    && merge.view_chain(&author).get((seq - 1) as usize) == Some(d.target)
                    && !merge.is_merge_event(&d.target)
            })
        })
        .map(|d| d.target)
        .collect();
    excluded.sort_unstable();
    excluded.dedup();
    Inputs { prefixes, disputes, excluded }
}

/// The graph's events among `entries` (every entry held of one author with
/// a seq in a range, any branch): those on the chain that ends at `head`
/// (the entry at the range's end on its view chain), followed down by
/// backlinks, not merge events, not excluded, payload known. Following the
/// links needs nothing of the merged state, so a perspective can be built
/// while the state moves on ([`PerspectivePlan::build`]).
pub(crate) fn events_of(mut entries: Vec<MergeEntry>, head: EntryId, excluded: &HashSet<EntryId>, out: &mut Vec<LogEvent>) {
    debug_assert!(entries.iter().all(|e| !e.reasoning_dropped()), "a perspective reads reasoning payloads");
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.seq()));
    let mut next = Some(head);
    for e in entries {
        let id = e.id();
        if next != Some(id) {
            // Another branch's entry, or one above the head.
            continue;
        }
        next = e.signed().header().backlink;
        if excluded.contains(&id) {
            continue;
        }
        // No event for a merge payload or one not held (`LogEvent::from_content`).
        out.extend(LogEvent::from_content(id, e.signed().header().log_position(), e.content()));
    }
}

/// The graph of the events on `prefixes` (of view chains), less
/// `excluded`, replayed.
pub(crate) fn replay_prefixes<E>(
    prefixes: &BTreeMap<AgentId, Prefix>,
    excluded: &HashSet<EntryId>,
    texts: Option<Arc<dyn TextSource>>,
    ids: Arc<IdArena>,
    load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
) -> Result<Graph, E> {
    let mut events = Vec::new();
    for (author, p) in prefixes {
        events_of(load(author, 1..=p.upto)?, p.head, excluded, &mut events);
    }
    // Kept live from here on: with a journal of its last applies, so that
    // a late event whose place matters rewinds them rather than replaying.
    let graph = match texts {
        Some(source) => Graph::with_texts_from(source),
        None => Graph::new(),
    };
    Ok(graph.sharing_ids(ids).replayed(events, LIVE_GRAPH_JOURNAL))
}

/// Did the payload of an entry inside the prefixes `was` change (filled
/// in or redacted)? A graph over them must then be replayed: its text or
/// meaning changed where it was applied already.
pub(crate) fn payload_changed_inside(merge: &LiveMerge, was: &BTreeMap<AgentId, Prefix>, payloads_changed: &[EntryId]) -> bool {
    payloads_changed.iter().any(|id| merge.locate(id).is_some_and(|(author, seq)| was.get(&author).is_some_and(|p| seq <= p.upto)))
}

/// Is every prefix of `was` still there, unchanged, in `now`? (Each chain's
/// head of `was` is still on its view: the entries link by hash, so the
/// head names the prefix.)
pub(crate) fn prefixes_kept(merge: &LiveMerge, was: &BTreeMap<AgentId, Prefix>, now: &BTreeMap<AgentId, Prefix>) -> bool {
    was.iter().all(|(author, w)| now.get(author).is_some_and(|p| p.upto >= w.upto) && merge.view_chain(author).get((w.upto - 1) as usize) == Some(w.head))
}

/// The events on the prefixes `now` past the prefixes `was` (which `now`
/// keeps), not in `excluded`, in log order.
pub(crate) fn new_events<E>(
    was: &BTreeMap<AgentId, Prefix>,
    now: &BTreeMap<AgentId, Prefix>,
    excluded: &HashSet<EntryId>,
    load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
) -> Result<Vec<LogEvent>, E> {
    let mut events = Vec::new();
    for (author, p) in now {
        let from = was.get(author).map_or(1, |w| w.upto + 1);
        if from <= p.upto {
            events_of(load(author, from..=p.upto)?, p.head, excluded, &mut events);
        }
    }
    events.sort_by_key(|e| (e.pos, e.id));
    Ok(events)
}

/// What `agent`'s perspective is built from, as the merged state had it
/// when the plan was made ([`LivePerspective::plan`]): the prefix of each
/// view chain it includes (named by its head) and the events it leaves out.
/// Building from it ([`PerspectivePlan::build`]) reads only the store, so a
/// node builds a perspective (about a second at a million entries) without
/// holding its merged view, then brings it up to date in place
/// ([`LivePerspective::refresh_in_place`]).
#[derive(Debug)]
pub struct PerspectivePlan {
    agent: AgentId,
    inputs: Inputs,
    texts: Option<Arc<dyn TextSource>>,
    /// The arena the merged state holds its ids in: the graph holds its
    /// own there too.
    ids: Arc<IdArena>,
}

impl PerspectivePlan {
    /// The agent whose perspective this is.
    pub fn agent(&self) -> AgentId {
        self.agent
    }

    /// Build a graph that holds no texts but reads them from `source`, the
    /// store `load` reads ([`Graph::with_texts_from`]); it is built again
    /// the same way when it must be replayed.
    pub fn texts_from(mut self, source: Arc<dyn TextSource>) -> Self {
        self.texts = Some(source);
        self
    }

    /// The perspective as of the plan, built by replay. `load(author,
    /// seqs)` as for [`LivePerspective::build`].
    pub fn build<E>(self, mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>) -> Result<LivePerspective, E> {
        let excluded: HashSet<EntryId> = self.inputs.excluded.iter().copied().collect();
        let graph = replay_prefixes(&self.inputs.prefixes, &excluded, self.texts, self.ids, &mut load)?;
        Ok(LivePerspective::of(self.agent, self.inputs, graph))
    }
}

impl LivePerspective {
    /// `agent`'s perspective of `merge`, built by replay. `load(author,
    /// seqs)` must return every entry held of `author` with a seq in `seqs`
    /// (any branch, any order), with what is known of its payload.
    pub fn build<E>(merge: &LiveMerge, agent: AgentId, load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>) -> Result<Self, E> {
        Self::plan(merge, agent).build(load)
    }

    /// What `agent`'s perspective of `merge` is built from (see
    /// [`PerspectivePlan`]).
    pub fn plan(merge: &LiveMerge, agent: AgentId) -> PerspectivePlan {
        PerspectivePlan { agent, inputs: inputs(merge, &agent), texts: None, ids: merge.ids().clone() }
    }

    fn of(agent: AgentId, inputs: Inputs, graph: Graph) -> Self {
        let included = inputs.prefixes.iter().map(|(a, p)| (*a, p.upto)).collect();
        Self { view: Perspective { agent, included, disputes: inputs.disputes, excluded: inputs.excluded, graph }, prefixes: inputs.prefixes }
    }

    /// Bring the perspective up to date with `merge` (see the module docs).
    /// `payloads_changed`: every entry whose payload was filled in or
    /// redacted since the last refresh (only one inside the included
    /// prefixes makes it replay: a peer that releases withheld payloads of
    /// later entries one at a time costs it nothing). `load` as for
    /// [`LivePerspective::build`], asked only for what is new unless the
    /// perspective must be rebuilt.
    pub fn refresh<E>(
        &mut self,
        merge: &LiveMerge,
        payloads_changed: &[EntryId],
        mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
    ) -> Result<PerspectiveRefresh, E> {
        if let Some(done) = self.refresh_in_place(merge, payloads_changed, &mut load)? {
            return Ok(done);
        }
        let mut plan = Self::plan(merge, self.view.agent);
        plan.texts = self.view.graph.text_source();
        *self = plan.build(load)?;
        Ok(PerspectiveRefresh { applied: 0, rebuilt: true })
    }

    /// [`LivePerspective::refresh`] when it can be done in place; `None`
    /// when the perspective would have to be replayed, in which case it may
    /// have taken some of the new events already and must not be used again
    /// (it is left unchanged when a payload inside it changed or a prefix it
    /// included did). A node keeps perspectives current on the thread that keeps its
    /// merged view current: a replay there (about a second at a million
    /// entries, after an accept that reaches back into a chain's history)
    /// would hold every update back, so it drops such a perspective instead
    /// and builds it again when it is next asked for.
    pub fn refresh_in_place<E>(
        &mut self,
        merge: &LiveMerge,
        payloads_changed: &[EntryId],
        mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
    ) -> Result<Option<PerspectiveRefresh>, E> {
        let now = inputs(merge, &self.view.agent);
        if payload_changed_inside(merge, &self.prefixes, payloads_changed) {
            return Ok(None);
        }
        let Some((events, left_out)) = self.appended(merge, &now, &mut load)? else { return Ok(None) };
        // Events it included and now leaves out (disputed since): taken
        // out of the graph by rewinding its journal past them.
        if !left_out.is_empty() && !self.view.graph.exclude(&left_out) {
            return Ok(None);
        }
        let applied = events.len();
        // Those that sort after the last one applied as usual, earlier ones
        // with one rewind of the graph's journal, or in place
        // (`Graph::apply_all`).
        if self.view.graph.apply_all(events) != Late::Applied {
            return Ok(None);
        }
        self.view.included = now.prefixes.iter().map(|(a, p)| (*a, p.upto)).collect();
        self.view.disputes = now.disputes;
        self.view.excluded = now.excluded;
        self.prefixes = now.prefixes;
        Ok(Some(PerspectiveRefresh { applied, rebuilt: false }))
    }

    /// The events to apply in place, in log order, and those it included
    /// that it now leaves out, or `None` if the perspective must be rebuilt
    /// (a prefix it included changed). The events to apply are those past
    /// the prefixes it included, and those it left out before that are back
    /// (a dispute withdrawn), which sort before most of what it applied.
    #[allow(clippy::type_complexity)]
    fn appended<E>(
        &self,
        merge: &LiveMerge,
        now: &Inputs,
        load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
    ) -> Result<Option<(Vec<LogEvent>, Vec<EntryId>)>, E> {
        if !prefixes_kept(merge, &self.prefixes, &now.prefixes) {
            return Ok(None);
        }
        let was_excluded: HashSet<EntryId> = self.view.excluded.iter().copied().collect();
        let mut left_out = Vec::new();
        for id in now.excluded.iter().filter(|id| !was_excluded.contains(id)) {
            let Some((author, seq)) = merge.locate(id) else { return Ok(None) };
            if self.prefixes.get(&author).is_some_and(|was| seq <= was.upto) {
                left_out.push(*id);
            }
        }
        let now_excluded: HashSet<EntryId> = now.excluded.iter().copied().collect();
        let mut events = new_events(&self.prefixes, &now.prefixes, &now_excluded, load)?;
        let before = events.len();
        for id in self.view.excluded.iter().filter(|id| !now_excluded.contains(id)) {
            let Some((author, seq)) = merge.locate(id) else { return Ok(None) };
            // Past the old prefix, `new_events` has it; inside, it is on
            // the view chain (the prefix is kept).
            if self.prefixes.get(&author).is_some_and(|was| seq <= was.upto) {
                events_of(load(&author, seq..=seq)?, *id, &now_excluded, &mut events);
            }
        }
        if events.len() > before {
            events.sort_by_key(|e| (e.pos, e.id));
        }
        Ok(Some((events, left_out)))
    }

    /// The agent.
    pub fn agent(&self) -> AgentId {
        self.view.agent
    }

    /// The perspective, as [`Merge::perspective`](crate::Merge::perspective)
    /// gives it.
    pub fn view(&self) -> &Perspective {
        &self.view
    }

    /// [`Perspective::hash`]: hashes again only the graph's buckets changed
    /// since it was last asked.
    pub fn hash(&mut self) -> [u8; 32] {
        self.view.hash()
    }
}
