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
//!   changed), no event it left out is back, and the newly included events
//!   all sort after the last one its graph applied. Its own new events and accepts of
//!   others' latest events are of this kind. The new events are asked of the
//!   caller (only those) and applied; the graph's digest
//!   ([`agora_graph::Graph::digest`]) then hashes again only the buckets they
//!   changed.
//! - **Rebuilt** otherwise (an accept that reaches back into another chain's
//!   history, a withdrawn dispute, a redaction inside it): the included
//!   prefixes are asked of the caller and replayed, as a recompute does.
//!
//! After every refresh it equals [`Merge::perspective`](crate::Merge::perspective)
//! over the same set: the property test `live_equals_recompute` checks the
//! hash after each delivery.
//!
//! Pure like the rest of the crate: the caller reads the store.

use crate::input::MergeEntry;
use crate::live::LiveMerge;
use crate::payload::MergeEvent;
use crate::views::{DisputeMark, Perspective};
use agora_core::{AgentId, EntryId};
use agora_graph::{Graph, LogEvent};
use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;

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
        if let Some(&head) = upto.checked_sub(1).and_then(|i| view.get(i as usize)) {
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
                    && merge.view_chain(&author).get((seq - 1) as usize) == Some(&d.target)
                    && !merge.is_merge_event(&d.target)
            })
        })
        .map(|d| d.target)
        .collect();
    excluded.sort_unstable();
    excluded.dedup();
    Inputs { prefixes, disputes, excluded }
}

/// The graph's events among `entries` (every entry held of `author` with a
/// seq in a range, any branch): those on the view chain `view` (seq 1 first),
/// not merge events, not excluded, payload known.
pub(crate) fn events_of(entries: Vec<MergeEntry>, view: &[EntryId], excluded: &HashSet<EntryId>, out: &mut Vec<LogEvent>) {
    for e in entries {
        let id = e.id();
        let on_view = e.seq().checked_sub(1).and_then(|i| view.get(i as usize)) == Some(&id);
        if !on_view || excluded.contains(&id) || e.payload().is_some_and(MergeEvent::is_merge_payload) {
            continue;
        }
        out.extend(LogEvent::from_content(id, e.signed().header().log_position(), e.content()));
    }
}

/// The graph of the events on `prefixes` (of view chains), less
/// `excluded`, replayed.
pub(crate) fn replay_prefixes<E>(
    merge: &LiveMerge,
    prefixes: &BTreeMap<AgentId, Prefix>,
    excluded: &HashSet<EntryId>,
    load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
) -> Result<Graph, E> {
    let mut events = Vec::new();
    for (author, p) in prefixes {
        events_of(load(author, 1..=p.upto)?, merge.view_chain(author), excluded, &mut events);
    }
    Ok(Graph::replay(events))
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
    was.iter().all(|(author, w)| {
        now.get(author).is_some_and(|p| p.upto >= w.upto) && merge.view_chain(author).get((w.upto - 1) as usize) == Some(&w.head)
    })
}

/// The events on the prefixes `now` past the prefixes `was` (which `now`
/// keeps), not in `excluded`, in log order.
pub(crate) fn new_events<E>(
    merge: &LiveMerge,
    was: &BTreeMap<AgentId, Prefix>,
    now: &BTreeMap<AgentId, Prefix>,
    excluded: &HashSet<EntryId>,
    load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
) -> Result<Vec<LogEvent>, E> {
    let mut events = Vec::new();
    for (author, p) in now {
        let from = was.get(author).map_or(1, |w| w.upto + 1);
        if from <= p.upto {
            events_of(load(author, from..=p.upto)?, merge.view_chain(author), excluded, &mut events);
        }
    }
    events.sort_by_key(|e| (e.pos, e.id));
    Ok(events)
}

/// The events a graph built over the prefixes `was` takes to cover `now`
/// (which keeps every prefix of `was`): those past `was` on each view
/// chain, not in `excluded`, in log order; `None` if the first sorts before
/// the last event `graph` applied (the graph must then be replayed).
pub(crate) fn extension<E>(
    graph: &Graph,
    merge: &LiveMerge,
    was: &BTreeMap<AgentId, Prefix>,
    now: &BTreeMap<AgentId, Prefix>,
    excluded: &HashSet<EntryId>,
    load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
) -> Result<Option<Vec<LogEvent>>, E> {
    let events = new_events(merge, was, now, excluded, load)?;
    let in_order = match (events.first(), graph.last_position()) {
        (Some(first), Some(last)) => first.pos >= last,
        _ => true,
    };
    Ok(in_order.then_some(events))
}

impl LivePerspective {
    /// `agent`'s perspective of `merge`, built by replay. `load(author,
    /// seqs)` must return every entry held of `author` with a seq in `seqs`
    /// (any branch, any order), with what is known of its payload.
    pub fn build<E>(merge: &LiveMerge, agent: AgentId, mut load: impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>) -> Result<Self, E> {
        let inputs = inputs(merge, &agent);
        let graph = Self::replay(merge, &inputs, &mut load)?;
        Ok(Self::of(agent, inputs, graph))
    }

    fn of(agent: AgentId, inputs: Inputs, graph: Graph) -> Self {
        let included = inputs.prefixes.iter().map(|(a, p)| (*a, p.upto)).collect();
        Self { view: Perspective { agent, included, disputes: inputs.disputes, excluded: inputs.excluded, graph }, prefixes: inputs.prefixes }
    }

    fn replay<E>(merge: &LiveMerge, inputs: &Inputs, load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>) -> Result<Graph, E> {
        let excluded: HashSet<EntryId> = inputs.excluded.iter().copied().collect();
        replay_prefixes(merge, &inputs.prefixes, &excluded, load)
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
        let now = inputs(merge, &self.view.agent);
        let graph = Self::replay(merge, &now, &mut load)?;
        *self = Self::of(self.view.agent, now, graph);
        Ok(PerspectiveRefresh { applied: 0, rebuilt: true })
    }

    /// [`LivePerspective::refresh`] when it can be done in place; `None`,
    /// changing nothing, when the perspective would have to be replayed.
    /// A node keeps perspectives current on the thread that keeps its
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
        let Some(events) = self.appended(merge, &now, &mut load)? else { return Ok(None) };
        let applied = events.len();
        for e in events {
            let ok = self.view.graph.apply(e);
            debug_assert!(ok, "checked to sort after the last event applied");
        }
        self.view.included = now.prefixes.iter().map(|(a, p)| (*a, p.upto)).collect();
        self.view.disputes = now.disputes;
        self.view.excluded = now.excluded;
        self.prefixes = now.prefixes;
        Ok(Some(PerspectiveRefresh { applied, rebuilt: false }))
    }

    /// The events to apply in place, in log order, or `None` if the
    /// perspective must be rebuilt.
    fn appended<E>(
        &self,
        merge: &LiveMerge,
        now: &Inputs,
        load: &mut impl FnMut(&AgentId, RangeInclusive<u64>) -> Result<Vec<MergeEntry>, E>,
    ) -> Result<Option<Vec<LogEvent>>, E> {
        if !prefixes_kept(merge, &self.prefixes, &now.prefixes) {
            return Ok(None);
        }
        // No event left out before is back, and none of the old prefixes is
        // newly left out.
        let now_excluded: HashSet<EntryId> = now.excluded.iter().copied().collect();
        if self.view.excluded.iter().any(|id| !now_excluded.contains(id)) {
            return Ok(None);
        }
        let was_excluded: HashSet<EntryId> = self.view.excluded.iter().copied().collect();
        for id in now.excluded.iter().filter(|id| !was_excluded.contains(id)) {
            let Some((author, seq)) = merge.locate(id) else { return Ok(None) };
            if self.prefixes.get(&author).is_some_and(|was| seq <= was.upto) {
                return Ok(None);
            }
        }
        extension(&self.view.graph, merge, &self.prefixes, &now.prefixes, &now_excluded, load)
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
