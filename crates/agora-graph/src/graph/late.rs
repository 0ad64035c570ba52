//! Late events: an event that sorts before the last one applied, applied
//! in place when that gives what a replay in log order would
//! ([`Graph::apply_late`]).
//!
//! A live graph (a node's merged view) receives events in arrival order,
//! and in a swarm whose agents write at once most arrivals sort before the
//! last event applied: each made the graph be replayed. An event applied at
//! the end instead of at its place in log order gives the same graph when
//! nothing it reads or writes was read or written by an event that sorts
//! after it: then no later event saw a state it would have changed, and its
//! own reads see the state they would have seen. The graph records, per
//! node, the last event that named it as a reference or wrote it
//! (`Graph::accessed`, kept by `apply_ready` and by `Graph::changed`, which
//! every write goes through), at the place in log order where it took
//! effect (an event held as pending takes effect where the event it
//! waited for did); a late event whose references were accessed
//! by a later event is refused before anything changes, and one whose
//! effects write a node a later event accessed spoils the graph (the caller
//! replays it). Kinds whose rules or effects read nodes beyond their
//! references and the nodes they write (a relation's supersession walk, a
//! frame invalidation's cascade, a judgment's usages, a memory item's
//! content rule, the span rule of an action from a span) are refused, as
//! is an event other events wait for. The causal walk some rules ask
//! (`causal.rs`) reads only what never changes once a node is applied
//! (authors, the edges a node's own event drew), so it does not make a
//! kind one of those.
//!
//! A graph that keeps a journal of its last applies (`rewind.rs`) does not
//! take a late event in place while the journal reaches back to it: it
//! rewinds, which succeeds whatever the event touches. What is described
//! here is then only for an event older than the whole journal.
//!
//! The nodes of late events are appended at the end of the graph's table;
//! the graph notes which they were (`Graph::late_nodes`) and
//! [`Graph::nodes`] lists them where a replay would have applied them, so
//! that listings read as a replay's too. The snapshot, digest, every reading
//! by id and every listing are the replay's: `tests/pinned.rs` checks it
//! over seeded logs of every kind delivered out of order.

use super::input::{Body, Key, LogEvent, key_of};
use super::node_state::{Ix, UNKNOWN};
use super::{Graph, LateCheck};
use crate::event::Event;

/// What [`Graph::apply_late`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Late {
    /// Applied (or held as pending, or known already): the graph is what a
    /// replay of its events gives.
    Applied,
    /// Not applied, nothing changed: only a replay places it.
    Refused,
    /// Applied, but it wrote a node that a later event had read or written:
    /// the graph is no longer a replay's, and must be replayed.
    Spoiled,
}

impl Graph {
    /// Node `ix` was named or written by the event being applied. While a
    /// late event is applied, a node last accessed by a later event spoils
    /// the graph.
    #[inline]
    pub(super) fn accessed_by_current(&mut self, ix: Ix) {
        let Some(slot) = self.accessed.get(ix as usize).copied() else { return };
        if self.recording() {
            self.record_change(ix);
        }
        if let Some(check) = self.late
            && slot != UNKNOWN
            && slot != self.point
            && self.key_at(slot) > check.key
        {
            self.late = Some(LateCheck { spoiled: true, ..check });
        }
        self.accessed[ix as usize] = self.point;
    }

    pub(super) fn key_at(&self, ix: Ix) -> Key {
        let n = &self.nodes[ix as usize];
        (self.position(n), self.id_of(n))
    }

    /// A replay's application order of this graph's nodes (see
    /// [`Graph::nodes`]). Without the late nodes, application order is a
    /// replay's: nodes were appended in log order of the event that placed
    /// them (each released node right after its releaser). A late event
    /// releases nothing (`apply_late` refuses one that others wait for), so
    /// in a replay its node stands alone at its own place: before the first
    /// other node placed by an event that sorts after it. Linear in the
    /// nodes, plus sorting the late ones.
    pub(super) fn sort_into_replay_order(&self) -> Vec<Ix> {
        let mut late = self.late_nodes.clone();
        late.sort_unstable_by_key(|&ix| self.key_at(ix));
        let mut out = Vec::with_capacity(self.nodes.len());
        let (mut next_late, mut skip, mut released) = (0, self.late_nodes.iter().peekable(), self.released_nodes.iter().peekable());
        for ix in 0..self.nodes.len() as Ix {
            if skip.next_if_eq(&&ix).is_some() {
                continue;
            }
            // A node placed by its own event (not released by another's):
            // late nodes that sort before that event come first.
            if released.next_if_eq(&&ix).is_none() && next_late < late.len() {
                let key = self.key_at(ix);
                while next_late < late.len() && self.key_at(late[next_late]) < key {
                    out.push(late[next_late]);
                    next_late += 1;
                }
            }
            out.push(ix);
        }
        out.extend_from_slice(&late[next_late..]);
        debug_assert_eq!(out.len(), self.nodes.len());
        out
    }

    /// Apply `event`, which may sort before the last event applied (see the
    /// module docs). One that does not is applied as [`Graph::apply`] does.
    ///
    /// A graph that keeps a journal ([`Graph::keep_journal`]) rewinds for
    /// a late event when the journal reaches back far enough: it undoes the
    /// applies after the event and applies them again after it, so its
    /// applies stay in log order. Only an event that sorts before the whole
    /// journal is taken in place as above; it is refused, changing nothing,
    /// when it cannot be, and such a graph never spoils.
    pub fn apply_late(&mut self, mut event: LogEvent) -> Late {
        if self.journal.is_some()
            && !self.index.contains(&self.nodes, &self.ids, &event.id)
            && self.last_key.is_some_and(|last| key_of(&event) < last)
            && let Some(back) = self.rewind_depth(key_of(&event))
        {
            self.rewind(event, back);
            return Late::Applied;
        }
        match self.apply_late_in_place(&mut event) {
            Late::Spoiled if self.journal.is_some() => {
                self.undo_spoiled();
                Late::Refused
            }
            done => done,
        }
    }

    /// [`Graph::apply_late`] without rewinding. `event` is left whole when
    /// refused; otherwise its text is taken into its node.
    pub(super) fn apply_late_in_place(&mut self, event: &mut LogEvent) -> Late {
        if self.index.contains(&self.nodes, &self.ids, &event.id) {
            return Late::Applied;
        }
        if self.last_key.is_none_or(|last| key_of(event) >= last) {
            let applied = self.apply_in_place(event);
            debug_assert!(applied, "sorts after the last event applied");
            return Late::Applied;
        }
        if self.waiting.contains_key(&event.id) {
            return Late::Refused;
        }
        let key = key_of(event);
        if let Body::Event(ev) = &event.body {
            let reads_beyond = match ev {
                Event::Relate { .. } | Event::FrameInvalidate { .. } | Event::Judgment { .. } | Event::MemoryItem { .. } => true,
                Event::Action { span, .. } => !span.is_empty(),
                // A state of a memory record: its current claim is the
                // last in log order. Any other claim applies in place.
                Event::Claim { sources, .. } => {
                    sources.first().and_then(|s| self.index.get(&self.nodes, &self.ids, s)).is_some_and(|ix| self.memory_actions.contains_key(&ix))
                }
                _ => false,
            };
            if reads_beyond {
                return Late::Refused;
            }
            let mut later = false;
            ev.for_each_ref(|r| {
                if let Some(ix) = self.index.get(&self.nodes, &self.ids, r) {
                    let slot = self.accessed[ix as usize];
                    later |= slot != UNKNOWN && self.key_at(slot) > key;
                }
            });
            if later {
                return Late::Refused;
            }
        }
        // Held as pending (a reference is missing) or applied; a held event
        // is placed by its references' arrival, whatever the order.
        self.orders_changed();
        if self.journal.is_some() {
            self.open_record(event, true);
        }
        self.late = Some(LateCheck { key, spoiled: false });
        self.point = self.nodes.len() as Ix;
        let id = event.id;
        let applied = self.try_apply(event);
        if applied {
            self.late_nodes.push(self.point);
        }
        self.close_record();
        let spoiled = self.late.take().is_some_and(|c| c.spoiled);
        debug_assert!(!applied || !self.waiting.contains_key(&id), "nothing waited for it");
        if spoiled { Late::Spoiled } else { Late::Applied }
    }
}
