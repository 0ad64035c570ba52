//! The journal of a graph's last applies ([`Journal`]), which `rewind.rs`
//! undoes and applies again around a late event: per apply ([`Record`]),
//! the event as it came and what it changed. Kept apart from the rewinding
//! because the graph holds it: the graph's file knows this one, and the
//! rewinding knows both.

use super::input::{Key, LogEvent};
use super::node::Node;
use super::node_state::Ix;
use agora_core::EntryId;
use std::collections::VecDeque;

/// A memory record of an author: (author, record key).
pub(super) type MemoryRecord = (u32, [u8; 32]);

/// The last applies of a graph, newest last, and the one under way.
#[derive(Clone, Debug)]
pub(super) struct Journal {
    pub(super) records: VecDeque<Record>,
    pub(super) capacity: usize,
    pub(super) open: Option<Record>,
}

impl Journal {
    /// Bytes on the heap ([`Graph::memory`](super::Graph::memory)): the
    /// records and what they saved (an event's text not counted).
    pub(super) fn heap_bytes(&self) -> usize {
        let record = |r: &Record| {
            r.saved.capacity() * size_of::<(Ix, Node, Ix)>()
                + r.saved.iter().map(|(_, n, _)| n.links.heap_bytes()).sum::<usize>()
                + r.content_ids.capacity() * size_of::<([u8; 32], Option<u32>)>()
                + r.action_spans.capacity() * size_of::<(u32, [u8; 24])>()
                + r.memory_actions.capacity() * size_of::<Ix>()
                + r.memory_claims.capacity() * size_of::<(MemoryRecord, Option<Ix>)>()
                + r.waiting.capacity() * size_of::<WaitOp>()
        };
        size_of::<Self>() + self.records.capacity() * size_of::<Record>() + self.records.iter().chain(self.open.as_ref()).map(record).sum::<usize>()
    }
}

/// One apply: the event as it came and what it changed.
#[derive(Clone, Debug)]
pub(super) struct Record {
    pub(super) event: LogEvent,
    /// Taken in place by [`Graph::apply_late`](super::Graph::apply_late) while sorting before the
    /// last event applied (it sorted before the whole journal).
    pub(super) late: bool,
    pub(super) nodes_len: Ix,
    pub(super) authors_len: usize,
    pub(super) last_key: Option<Key>,
    pub(super) pending_count: usize,
    pub(super) late_nodes_len: usize,
    pub(super) released_nodes_len: usize,
    /// Existing nodes before their first change by this apply (a node
    /// holds no text, which never changes anyway), with their access record.
    pub(super) saved: Vec<(Ix, Node, Ix)>,
    /// Memory-item content ids it claimed: first (`None`), or as another
    /// author's original (`Some(author)`).
    pub(super) content_ids: Vec<([u8; 32], Option<u32>)>,
    /// Action spans it claimed first, by (author, trace and span id).
    pub(super) action_spans: Vec<(u32, [u8; 24])>,
    /// Memory-write actions it indexed.
    pub(super) memory_actions: Vec<Ix>,
    /// Records whose current claim it set, with the claim before it.
    pub(super) memory_claims: Vec<(MemoryRecord, Option<Ix>)>,
    /// What it did to the pending set, in order.
    pub(super) waiting: Vec<WaitOp>,
}

#[derive(Clone, Debug)]
pub(super) enum WaitOp {
    /// Event `id` was held until `on` arrives.
    Held { on: EntryId, id: EntryId },
    /// The events held for `on` were taken to be applied (as they were).
    Released { on: EntryId, events: Vec<LogEvent> },
}
