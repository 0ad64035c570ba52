//! Rewinding: a live graph that keeps a journal of its last applies takes
//! an event that sorts before them by undoing them, applying it, and
//! applying them again ([`Graph::keep_journal`], used by
//! [`Graph::apply_late`]).
//!
//! Taking a late event in place (`late.rs`) works when nothing it names or
//! writes was named or written by a later event. In a swarm whose agents
//! write at once and reference each other's recent events, that fails for a
//! few percent of late arrivals (the seeded debate of `agora-bench graph`,
//! arrivals skewed by up to 100 events: 16k of 181k), and each failure
//! cost a replay of the whole graph. With a journal, a late event costs the
//! applies after it instead. Each apply is recorded ([`Record`]): the event
//! as it came, and what it changed: the state of every existing node before
//! its first change (every write goes through `Graph::changed`, and every
//! read of a reference through `Graph::accessed_by_current`), the nodes it
//! added, the events it held as pending or released, the memory-item
//! content ids and action spans it claimed. The newest applies are undone
//! exactly, newest first, until the graph's last position sorts at or
//! before the late event; then it and the undone events are applied again
//! in log order, each recorded again. So a journaled graph's applies stay
//! in log order, and it lists its nodes as a replay does.
//!
//! An event that sorts before the whole journal is taken in place as
//! before, recorded as late; rewinding past such a record must go back to
//! its place too (it is applied again in log order), which the journal
//! seldom reaches, so the caller then replays.
//!
//! The invariant: undoing a record gives back the graph exactly as it was
//! before that apply (nodes, index, pending set, digest, every reading), so
//! a rewound graph equals a replay of its events: `tests/pinned.rs` checks
//! it after every arrival of seeded logs of every kind delivered out of
//! order, with journals of 4, 64 and 10,000 applies. The journal holds at
//! most the number of records it was given, so rewinding costs at most that
//! many applies per event received.

use super::Graph;
use super::input::{Key, LogEvent, key_of};
use super::journal::{Journal, Record, WaitOp};
use super::late::Late;
use super::node_state::Ix;
use agora_core::EntryId;
use std::collections::VecDeque;

/// Applies a live graph keeps in its journal: at a thousand events a second,
/// about four seconds of arrivals, so a peer's event that arrives up to that
/// late rewinds them instead of replaying the graph. About 1.1 KB a record
/// (the event, the nodes it changed as they were: `agora-bench late`
/// prints it), so about 4.7 MB a graph; a rewind costs at most this many
/// applies.
pub const LIVE_GRAPH_JOURNAL: usize = 4_096;

impl Graph {
    /// Keep a journal of the last `records` applies from now on, so that
    /// [`Graph::apply_late`] can rewind for a late event that it cannot take
    /// in place (see the module docs). A live graph keeps one; a replay
    /// needs none. `0` drops it.
    pub fn keep_journal(&mut self, records: usize) {
        self.journal = (records > 0).then(|| Box::new(Journal { records: VecDeque::new(), capacity: records, open: None }));
    }

    /// Start recording an apply of `event` (when a journal is kept), `late`
    /// when it sorts before the last event applied.
    pub(super) fn open_record(&mut self, event: &LogEvent, late: bool) {
        let record = Record {
            event: event.clone(),
            late,
            nodes_len: self.nodes.len() as Ix,
            authors_len: self.authors.len(),
            last_key: self.last_key,
            pending_count: self.pending_count,
            late_nodes_len: self.late_nodes.len(),
            released_nodes_len: self.released_nodes.len(),
            saved: Vec::new(),
            content_ids: Vec::new(),
            action_spans: Vec::new(),
            memory_actions: Vec::new(),
            memory_claims: Vec::new(),
            waiting: Vec::new(),
        };
        if let Some(j) = self.journal.as_deref_mut() {
            debug_assert!(j.open.is_none(), "one apply at a time");
            j.open = Some(record);
        }
    }

    /// Finish the apply being recorded; the oldest record goes past the
    /// journal's capacity.
    pub(super) fn close_record(&mut self) {
        if let Some(j) = self.journal.as_deref_mut()
            && let Some(mut r) = j.open.take()
        {
            // A vector's first push makes room for four: most applies change
            // one or two nodes (136 bytes each), and the room was most of a
            // record (1.4 KB a record at first).
            r.saved.shrink_to_fit();
            r.waiting.shrink_to_fit();
            r.content_ids.shrink_to_fit();
            r.action_spans.shrink_to_fit();
            r.memory_actions.shrink_to_fit();
            r.memory_claims.shrink_to_fit();
            j.records.push_back(r);
            if j.records.len() > j.capacity {
                j.records.pop_front();
            }
        }
    }

    /// Is an apply being recorded?
    #[inline]
    pub(super) fn recording(&self) -> bool {
        self.journal.as_deref().is_some_and(|j| j.open.is_some())
    }

    /// Node `ix` is about to change (or its access record): keep it as it
    /// was, once per apply, if it existed before the apply.
    #[inline]
    pub(super) fn record_change(&mut self, ix: Ix) {
        let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) else { return };
        if ix >= r.nodes_len || r.saved.iter().any(|(s, _, _)| *s == ix) {
            return;
        }
        r.saved.push((ix, self.nodes[ix as usize].clone_state(), self.accessed[ix as usize]));
    }

    /// A memory item's content id was claimed, first (`rival` `None`) or
    /// as the original of another author.
    pub(super) fn record_content_id(&mut self, cid: [u8; 32], rival: Option<u32>) {
        if let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) {
            r.content_ids.push((cid, rival));
        }
    }

    /// An action's span was claimed first by its author.
    pub(super) fn record_action_span(&mut self, author: u32, span: [u8; 24]) {
        if let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) {
            r.action_spans.push((author, span));
        }
    }

    /// A memory-write action was indexed.
    pub(super) fn record_memory_action(&mut self, ix: Ix) {
        if let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) {
            r.memory_actions.push(ix);
        }
    }

    /// A record's current claim is about to change from `before`.
    pub(super) fn record_memory_claim(&mut self, key: (u32, [u8; 32]), before: Option<Ix>) {
        if let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) {
            r.memory_claims.push((key, before));
        }
    }

    /// Event `id` was held until `on` arrives.
    pub(super) fn record_held(&mut self, on: EntryId, id: EntryId) {
        if let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) {
            r.waiting.push(WaitOp::Held { on, id });
        }
    }

    /// The events held for `on` were taken to be applied.
    pub(super) fn record_released(&mut self, on: EntryId, events: &[LogEvent]) {
        if let Some(r) = self.journal.as_deref_mut().and_then(|j| j.open.as_mut()) {
            r.waiting.push(WaitOp::Released { on, events: events.to_vec() });
        }
    }

    /// Undo the newest record, giving back the graph as it was before that
    /// apply; its event, as it came.
    fn undo_last(&mut self) -> Option<LogEvent> {
        let r = self.journal.as_deref_mut()?.records.pop_back()?;
        // The pending set, newest change first.
        for op in r.waiting.into_iter().rev() {
            match op {
                WaitOp::Held { on, id } => {
                    let Some(list) = self.waiting.get_mut(&on) else { unreachable!("a held event is in the pending set until released") };
                    let Some(at) = list.iter().rposition(|e| e.id == id) else { unreachable!("held under the id it waits for") };
                    list.remove(at);
                    if list.is_empty() {
                        self.waiting.remove(&on);
                    }
                }
                WaitOp::Released { on, events } => {
                    let was = self.waiting.insert(on, events);
                    debug_assert!(was.is_none(), "nothing is held for a known id");
                }
            }
            self.pending_changed();
        }
        self.pending_count = r.pending_count;
        // The nodes it added: out of the index and the digest, then off.
        for ix in (r.nodes_len..self.nodes.len() as Ix).rev() {
            let id = self.id_at(ix);
            self.index.remove(&self.nodes, &self.ids, &id);
            self.removed(ix);
        }
        self.nodes.truncate(r.nodes_len as usize);
        self.texts.truncate(r.nodes_len as usize);
        self.accessed.truncate(r.nodes_len as usize);
        // The nodes it changed, as they were (their text never changed).
        for (ix, node, accessed) in r.saved.into_iter().rev() {
            self.changed_digest(ix);
            self.nodes[ix as usize] = node;
            self.accessed[ix as usize] = accessed;
        }
        for (cid, rival) in r.content_ids {
            match rival {
                None => self.content_ids.remove(&cid),
                Some(author) => self.content_rivals.remove(&(cid, author)),
            };
        }
        for key in r.action_spans {
            self.action_spans.remove(&key);
        }
        for ix in r.memory_actions {
            self.memory_actions.remove(&ix);
        }
        for (key, before) in r.memory_claims.into_iter().rev() {
            match before {
                Some(ix) => self.memory_claims.insert(key, ix),
                None => self.memory_claims.remove(&key),
            };
        }
        for author in self.authors.drain(r.authors_len..) {
            self.author_index.remove(&author);
        }
        self.late_nodes.truncate(r.late_nodes_len);
        self.released_nodes.truncate(r.released_nodes_len);
        self.last_key = r.last_key;
        self.orders_changed();
        Some(r.event)
    }

    /// Undo the newest apply: a late event taken in place that spoiled the
    /// graph. Nothing is left changed.
    pub(super) fn undo_spoiled(&mut self) {
        let event = self.undo_last();
        debug_assert!(event.is_some(), "the late event was recorded");
    }

    /// How many records must be undone to apply an event at `key` in log
    /// order, if the journal reaches back that far (see [`Graph::depth`]).
    pub(super) fn rewind_depth(&self, key: Key) -> Option<usize> {
        self.depth(0, Some(key))
    }

    /// How many records must be undone, at least `at_least`, for what is
    /// undone to be applied again in log order after an event at `key` (if
    /// any), if the journal reaches back that far: newest first, until the
    /// graph's last event applied in log order sorts before `key` and
    /// before every late record undone.
    fn depth(&self, at_least: usize, key: Option<Key>) -> Option<usize> {
        let j = self.journal.as_deref()?;
        let (mut target, mut last, mut back) = (key, self.last_key, 0);
        while back < at_least || last.is_some_and(|l| target.is_some_and(|t| t < l)) {
            let r = j.records.get(j.records.len().checked_sub(back + 1)?)?;
            if r.late {
                let k = key_of(&r.event);
                target = Some(target.map_or(k, |t| t.min(k)));
            }
            last = r.last_key;
            back += 1;
        }
        Some(back)
    }

    /// Apply `events` (in any order, any of them late): the way a live
    /// graph takes what arrived since it was last refreshed. Those the
    /// journal reaches back to are applied with one rewind, back to the
    /// earliest of them (one at a time, each would rewind the same applies
    /// again: a batch of 300 arrivals took 44 ms so); older ones are then
    /// taken in place one by one ([`Graph::apply_late`]). `Applied` if
    /// every one was; otherwise the graph may have taken some of them, and
    /// the caller replays.
    pub fn apply_all(&mut self, mut events: Vec<LogEvent>) -> Late {
        events.retain(|e| !self.index.contains(&self.nodes, &self.ids, &e.id));
        events.sort_by_key(|e| (e.pos, e.id));
        let last = self.last_key;
        // `events[..late]` sort before the last event applied.
        let late = events.partition_point(|e| last.is_some_and(|l| key_of(e) < l));
        let mut old = Vec::new();
        if late > 0 && self.journal.is_some() {
            // The earliest the journal can rewind to (reaching further back
            // is monotone in the position).
            let first = events[..late].partition_point(|e| self.rewind_depth(key_of(e)).is_none());
            if first < events.len()
                && let Some(back) = self.rewind_depth(key_of(&events[first]))
            {
                old = events.drain(..first).collect();
                let mut undone = Vec::with_capacity(back + events.len());
                for _ in 0..back {
                    undone.extend(self.undo_last());
                }
                undone.append(&mut events);
                undone.sort_by_key(|e| (e.pos, e.id));
                events = undone;
            }
        }
        // In log order after the undo, but for those older than the journal.
        for e in old.into_iter().chain(events) {
            match self.apply_late(e) {
                Late::Applied => {}
                failed => return failed,
            }
        }
        Late::Applied
    }

    /// Take the events `ids` out of the graph, as if they had never come
    /// (an agent's perspective when it disputes an event it included): the
    /// applies back to the earliest of them are undone and the others
    /// applied again, so events that named one of them wait for it as
    /// pending, as in a replay without them. False, changing nothing, when
    /// one of them is older than the journal (the caller replays); ids the
    /// graph does not hold are left alone.
    pub fn exclude(&mut self, ids: &[EntryId]) -> bool {
        let Some(j) = self.journal.as_deref() else {
            return ids.iter().all(|id| !self.holds(id));
        };
        let n = j.records.len();
        let mut first = n;
        for id in ids {
            match j.records.iter().rposition(|r| r.event.id == *id) {
                Some(k) => first = first.min(k),
                None if self.holds(id) => return false,
                None => {}
            }
        }
        if first == n {
            return true;
        }
        let Some(back) = self.depth(n - first, None) else { return false };
        let mut events = Vec::with_capacity(back);
        for _ in 0..back {
            events.extend(self.undo_last());
        }
        events.retain(|e| !ids.contains(&e.id));
        events.sort_by_key(|e| (e.pos, e.id));
        for mut e in events {
            let applied = self.apply_in_place(&mut e);
            debug_assert!(applied, "after the undo, in log order");
        }
        true
    }

    /// Is `id` applied or held as pending?
    fn holds(&self, id: &EntryId) -> bool {
        self.index.contains(&self.nodes, &self.ids, id) || self.waiting.values().flatten().any(|e| e.id == *id)
    }

    /// Apply `event`, which sorts before the last event applied, by undoing
    /// the newest `back` records ([`Graph::rewind_depth`]) and applying it
    /// and their events again, in log order: after the undo, every one of
    /// them sorts at or after the graph's last position.
    pub(super) fn rewind(&mut self, event: LogEvent, back: usize) {
        let mut events = Vec::with_capacity(back + 1);
        for _ in 0..back {
            events.extend(self.undo_last());
        }
        events.push(event);
        events.sort_by_key(|e| (e.pos, e.id));
        for mut e in events {
            let applied = self.apply_in_place(&mut e);
            debug_assert!(applied, "after the undo, in log order");
        }
    }
}
