//! Replay: a graph built from a whole log at once, from decoded events in any
//! order ([`Graph::replay`]), from stored payloads decoded just before they
//! are applied ([`Graph::replay_encoded`], [`Graph::replay_contents`]), or
//! from batches a caller hands over already in log order
//! ([`Graph::ordered_replay`], [`OrderedReplay`]).
//!
//! The invariant: every replay applies the events in log order, by the same
//! `apply` an incremental graph uses, so a replay and any sequence of
//! incremental applies of the same events give the same snapshot. Replay is
//! its own module because it is where the time goes when a node rebuilds its
//! view: it knows the log's size up front (so nothing grows while it runs)
//! and looks each batch's ids up before applying it, so their cache misses
//! overlap.

use super::Graph;
use super::input::{Body, LogEvent};
use agora_core::{EntryId, LogPosition};

/// Events looked up together, ahead of applying them, by a replay (see
/// `Graph::warm`): enough independent lookups to keep the memory system busy.
/// Measured: 16 gave two thirds of the gain of 64; 128 and 256 no more than
/// 64. The decoded batch is 14 KB (216 bytes an event).
pub(super) const WARM_BATCH: usize = 64;

/// Room a replay makes in the node table for `len` events: exactly that,
/// or for a graph kept live (one that keeps a journal of `records`
/// applies) a quarter more, so that its first arrival does not copy the
/// whole table to grow it (70 ms at a million nodes, measured by
/// `agora-bench late`). Room not yet written is address space, not
/// resident memory. (Not so the index, whose slots are written all over as
/// it fills: it keeps its own growth.)
fn live_room(len: usize, records: usize) -> usize {
    if records == 0 { len } else { len + len / 4 }
}

impl Graph {
    /// Build the graph from events in any order: they are sorted into log
    /// order first, so the result depends only on the set of events.
    pub fn replay(events: Vec<LogEvent>) -> Self {
        Self::replay_journaled(events, 0)
    }

    /// [`Graph::replay`], keeping a journal of `records` applies
    /// ([`Graph::keep_journal`]) that already holds the last of them: a live
    /// graph built again by replay can rewind for a late event at once,
    /// where one with an empty journal could only take it in place or be
    /// replayed again.
    pub fn replay_journaled(events: Vec<LogEvent>, records: usize) -> Self {
        Graph::new().replayed(events, records)
    }

    /// [`Graph::replay_journaled`] onto this graph, which must be empty:
    /// one made [`Graph::with_texts_from`] a store, say.
    pub fn replayed(mut self, mut events: Vec<LogEvent>, records: usize) -> Self {
        assert!(self.nodes.is_empty() && self.pending_count == 0, "a replay starts from an empty graph");
        events.sort_by_key(|e| (e.pos, e.id));
        self.reserve(events.len(), live_room(events.len(), records));
        let split = events.len().saturating_sub(records);
        let (head, tail) = events.split_at_mut(split);
        self.apply_in_order(head);
        self.keep_journal(records);
        self.apply_in_order(tail);
        self
    }

    /// Build the graph straight from stored payloads: sorts only the (position,
    /// id) keys, then decodes each payload just before applying it, so no
    /// decoded copy of the whole log is ever held. Same result as
    /// [`Graph::replay`] over the decoded events.
    pub fn replay_encoded(items: &[(EntryId, LogPosition, Option<&[u8]>)]) -> Self {
        let contents: Vec<(EntryId, LogPosition, agora_core::Content<'_>)> =
            items.iter().map(|(id, pos, p)| (*id, *pos, p.map_or(agora_core::Content::Redacted(None), agora_core::Content::Held))).collect();
        Self::replay_contents(&contents)
    }

    /// [`Graph::replay_encoded`] from what a node knows of each payload
    /// (see [`LogEvent::from_content`]): entries whose payload is missing are
    /// no event yet.
    pub fn replay_contents(items: &[(EntryId, LogPosition, agora_core::Content<'_>)]) -> Self {
        Self::replay_contents_journaled(items, 0)
    }

    /// [`Graph::replay_contents`], keeping a journal that holds the last
    /// `records` applies (see [`Graph::replay_journaled`]).
    pub fn replay_contents_journaled(items: &[(EntryId, LogPosition, agora_core::Content<'_>)], records: usize) -> Self {
        Graph::new().replayed_contents(items, records)
    }

    /// [`Graph::replay_contents_journaled`] onto this graph, which must be
    /// empty: one made [`Graph::with_texts_from`] a store, say.
    pub fn replayed_contents(mut self, items: &[(EntryId, LogPosition, agora_core::Content<'_>)], records: usize) -> Self {
        assert!(self.nodes.is_empty() && self.pending_count == 0, "a replay starts from an empty graph");
        // Only entries that become events: the graph reserves room for
        // exactly these (a swarm's merge events are a quarter of its entries).
        let mut order: Vec<u32> = (0..items.len() as u32).filter(|&i| Body::is_event_content(items[i as usize].2)).collect();
        order.sort_unstable_by_key(|&i| {
            let (id, pos, _) = &items[i as usize];
            (*pos, *id)
        });
        order.dedup_by_key(|&mut i| (items[i as usize].1, items[i as usize].0));
        self.reserve(order.len(), live_room(order.len(), records));
        let mut batch: Vec<LogEvent> = Vec::with_capacity(WARM_BATCH);
        let (head, tail) = order.split_at(order.len().saturating_sub(records));
        for (part, journal) in [(head, 0), (tail, records)] {
            self.keep_journal(journal);
            for chunk in part.chunks(WARM_BATCH) {
                batch.extend(chunk.iter().filter_map(|&i| {
                    let (id, pos, content) = items[i as usize];
                    LogEvent::from_content(id, pos, content)
                }));
                // Sorted and deduplicated above, so in log order.
                self.apply_in_order(&mut batch);
                batch.clear();
            }
        }
        self
    }

    /// A replay of `len` events that the caller hands over already in log
    /// order, a batch at a time: the caller may decode the next batch (on
    /// another thread, say) while this one is applied. [`Graph::replay_encoded`]
    /// is this with the decoding done in line.
    pub fn ordered_replay(len: usize) -> OrderedReplay {
        let mut graph = Graph::new();
        graph.reserve(len, len);
        OrderedReplay { graph, last: None }
    }

    /// Look up, before applying a batch of events, every id the batch will
    /// look up: its own ids and its references. The lookups of different ids
    /// do not depend on each other, so the processor overlaps their cache
    /// misses, where applying one event at a time waits for each in turn (a
    /// replay spent a quarter of its time in those waits). Pure reads; the
    /// results are thrown away, and a reference to an event earlier in the
    /// same batch just misses here.
    fn warm(&self, batch: &[LogEvent]) {
        for e in batch {
            std::hint::black_box(self.index.get(&self.nodes, &self.ids, &e.id));
            if let Body::Event(ev) = &e.body {
                ev.for_each_ref(|r| {
                    std::hint::black_box(self.index.get(&self.nodes, &self.ids, r));
                });
            }
        }
    }

    /// Apply `events`, which are in log order (ascending by (position, id)),
    /// a [`WARM_BATCH`] at a time, each batch warmed first (see
    /// [`Graph::warm`]). Every replay applies its events through this.
    fn apply_in_order(&mut self, events: &mut [LogEvent]) {
        for chunk in events.chunks_mut(WARM_BATCH) {
            self.warm(chunk);
            for e in chunk {
                let applied = self.apply_in_place(e);
                debug_assert!(applied, "in log order");
            }
        }
    }

    /// Room for `additional` more nodes (and `table` in the node table, at
    /// least as many): a replay knows how many events it holds, so neither
    /// the nodes nor the index ever grow (and copy) during it.
    fn reserve(&mut self, additional: usize, table: usize) {
        self.nodes.reserve_exact(table);
        self.texts.reserve_exact(table);
        self.accessed.reserve_exact(table);
        self.index.reserve(additional);
        // An arena of its own (a replay on its own, not a node's live
        // graph, whose arena the other views filled already): room for
        // every id at once, and as much room to grow as the nodes have.
        if self.ids.is_empty() && std::sync::Arc::strong_count(&self.ids) == 1 {
            self.ids.reserve(table);
        }
    }
}

/// A replay fed in log order (see [`Graph::ordered_replay`]).
pub struct OrderedReplay {
    graph: Graph,
    /// The (position, id) of the last event applied.
    last: Option<(LogPosition, EntryId)>,
}

/// A batch handed to an [`OrderedReplay`] was not in log order: strictly
/// ascending by (position, id), after everything applied before.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {id} is not after the event before it in log order (position, id)")]
pub struct NotInLogOrder {
    /// The first event out of order.
    pub id: EntryId,
}

impl OrderedReplay {
    /// Apply `batch`, which must continue the log order. Nothing of it is
    /// applied if it does not. Events are left behind with their text taken
    /// (the caller clears or drops the batch).
    pub fn apply_batch(&mut self, batch: &mut [LogEvent]) -> Result<(), NotInLogOrder> {
        let mut last = self.last;
        for e in batch.iter() {
            let key = (e.pos, e.id);
            if last.is_some_and(|l| key <= l) {
                return Err(NotInLogOrder { id: e.id });
            }
            last = Some(key);
        }
        self.last = last;
        self.graph.apply_in_order(batch);
        Ok(())
    }

    /// The graph of everything applied.
    pub fn finish(self) -> Graph {
        self.graph
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;
    use agora_core::AgentId;

    /// A batch out of log order is refused whole; the replay goes on from
    /// where it was.
    #[test]
    fn an_ordered_replay_refuses_a_batch_out_of_order_and_applies_none_of_it() {
        let author = AgentId([7; 32]);
        let ev = |i: u8, ts: u64| {
            let pos = LogPosition { timestamp_ms: ts, author, seq: u64::from(i) };
            LogEvent::from_payload(EntryId([i; 32]), pos, Some(&Event::Proposition { text: format!("p{i}") }.encode()))
        };
        let mut replay = Graph::ordered_replay(4);
        replay.apply_batch(&mut [ev(1, 10), ev(2, 20)]).unwrap();
        assert_eq!(replay.apply_batch(&mut [ev(3, 30), ev(4, 15)]), Err(NotInLogOrder { id: EntryId([4; 32]) }));
        let mut twin = ev(2, 20);
        twin.id = EntryId([1; 32]);
        assert_eq!(replay.apply_batch(&mut [twin]), Err(NotInLogOrder { id: EntryId([1; 32]) }), "same position as the last one, smaller id");
        replay.apply_batch(&mut [ev(3, 30)]).unwrap();
        let g = replay.finish();
        assert_eq!(g.nodes().map(|n| n.id.0[0]).collect::<Vec<_>>(), [1, 2, 3]);
    }
}
