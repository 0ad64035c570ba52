//! What a graph holds in memory, part by part ([`Graph::memory`]).
//!
//! A node that keeps graphs of a million events live (its reasoning graph,
//! the perspectives in use, the merged graph) must be able to say where its
//! memory goes, and a change to a layout must be measurable without a heap
//! profiler. The figures are what the graph's structures hold (capacities
//! times sizes, heap lists by their length), not what the allocator rounds
//! them up to; room reserved but never written is counted, although it is
//! address space rather than resident memory until it is written.

use super::node_state::{Extra, Ix};
use super::{Graph, LogEvent, Node};

/// Bytes a [`Graph`] holds, by part. See [`Graph::memory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GraphMemory {
    /// The node table (its whole capacity).
    pub nodes: usize,
    /// The nodes' ids, in the graph's arena when the arena is its own
    /// (none when it shares one: the node reports a shared arena with its
    /// live merged view, which knows every entry).
    pub ids: usize,
    /// Node positions by id.
    pub index: usize,
    /// The nodes' relation lists (touched by, edges, marks).
    pub links: usize,
    /// The nodes' rare state, boxed (frames, tasks, judgments, expiry).
    pub extra: usize,
    /// Texts held in the graph (none for a graph that reads them from a store).
    pub texts: usize,
    /// Per node, where it was last read or written (for late events).
    pub accessed: usize,
    /// The digest's buckets, once asked for.
    pub digest: usize,
    /// Events held as pending.
    pub pending: usize,
    /// The journal of the last applies, when kept.
    pub journal: usize,
    /// The other tables: orders, authors, content ids.
    pub other: usize,
}

impl GraphMemory {
    /// Every part, named, in declaration order.
    pub fn parts(&self) -> [(&'static str, usize); 11] {
        [
            ("nodes", self.nodes),
            ("ids", self.ids),
            ("index", self.index),
            ("links", self.links),
            ("extra", self.extra),
            ("texts", self.texts),
            ("accessed", self.accessed),
            ("digest", self.digest),
            ("pending", self.pending),
            ("journal", self.journal),
            ("other", self.other),
        ]
    }

    /// All parts together.
    pub fn total(&self) -> usize {
        self.parts().iter().map(|(_, b)| b).sum()
    }
}

fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * size_of::<T>()
}

impl Graph {
    /// What the graph holds in memory, by part (see the module docs). Reads
    /// every node once: for reports and benchmarks, not for every answer.
    pub fn memory(&self) -> GraphMemory {
        let links = self.nodes.iter().map(|n| n.links.heap_bytes()).sum();
        let extra = self.nodes.iter().filter_map(|n| n.links.extra()).map(|e| size_of::<Extra>() + e.invalid.as_ref().map_or(0, |s| s.len())).sum();
        let texts = match &self.texts {
            super::text::Texts::Kept(t) => vec_bytes(t) + t.iter().map(|s| s.len()).sum::<usize>(),
            super::text::Texts::Elsewhere(_) => 0,
        };
        let pending =
            self.waiting.capacity() * (size_of::<agora_core::EntryId>() + size_of::<Vec<LogEvent>>()) + self.waiting.values().map(vec_bytes).sum::<usize>();
        let orders = [self.id_order.get(), self.replay_order.get()].into_iter().flatten().map(vec_bytes::<Ix>).sum::<usize>()
            + vec_bytes(&self.late_nodes)
            + vec_bytes(&self.released_nodes);
        GraphMemory {
            nodes: vec_bytes::<Node>(&self.nodes),
            ids: if std::sync::Arc::strong_count(&self.ids) == 1 { self.ids.heap_bytes() } else { 0 },
            index: self.index.heap_bytes(),
            links,
            extra,
            texts,
            accessed: vec_bytes(&self.accessed),
            digest: self.digests.as_deref().map_or(0, |d| d.heap_bytes()),
            pending,
            journal: self.journal.as_deref().map_or(0, |j| j.heap_bytes()),
            other: orders
                + vec_bytes(&self.authors)
                + self.author_index.capacity() * (size_of::<agora_core::AgentId>() + 4)
                + self.content_ids.capacity() * (32 + size_of::<Ix>() + 1)
                + self.content_rivals.capacity() * (32 + 4 + size_of::<Ix>() + 1)
                + self.action_spans.capacity() * (4 + 24 + size_of::<Ix>() + 1)
                + self.memory_actions.capacity() * (size_of::<Ix>() + 32 + 1)
                + self.memory_claims.capacity() * (4 + 32 + size_of::<Ix>() + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Event, Graph, LogEvent, LogPosition};
    use agora_core::{AgentId, EntryId};

    fn log(n: u8) -> Vec<LogEvent> {
        (0..n)
            .map(|i| {
                let event = match i {
                    0 => Event::Proposition { text: "the first position, with a text".into() },
                    _ => Event::Contradiction { target: EntryId([0; 32]), text: format!("objection {i}") },
                };
                let pos = LogPosition { timestamp_ms: 1_000 + u64::from(i), author: AgentId([9; 32]), seq: u64::from(i) + 1 };
                LogEvent::from_payload(EntryId([i; 32]), pos, Some(&event.encode()))
            })
            .collect()
    }

    /// The report counts what the graph holds: every node's slot, the
    /// texts only where they are kept, the relation lists the events drew
    /// (each contradiction touches, and marks, the first node), the digest
    /// once asked for; and its parts add up to its total.
    #[test]
    fn memory_counts_what_the_graph_holds() {
        let mut kept = Graph::replay(log(10));
        let m = kept.memory();
        assert!(m.nodes >= 10 * size_of::<crate::Node>());
        assert!(m.ids >= 10 * 32, "its own arena's ids");
        let shared = Graph::new().sharing_ids(std::sync::Arc::new(agora_core::id_arena::IdArena::new())).replayed(log(10), 4);
        let arena = shared.ids().clone();
        assert_eq!((shared.memory().ids, arena.len()), (0, 10), "a shared arena is not the graph's to report");
        assert!(m.texts >= "the first position, with a text".len() + 9 * "objection 1".len());
        // Nine contradictions: each a touch and a mark on the first node, and an edge of its own.
        assert!(m.links >= 9 * 3 * size_of::<u32>(), "{m:?}");
        assert_eq!((m.digest, m.pending, m.journal), (0, 0, 0));
        assert_eq!(m.total(), m.parts().iter().map(|(_, b)| b).sum::<usize>());
        kept.digest();
        assert!(kept.memory().digest > 0, "the digest's buckets, once asked for");

        struct NoTexts;
        impl crate::TextSource for NoTexts {
            fn node_text(&self, _: &LogPosition, id: &EntryId) -> Result<String, crate::TextUnavailable> {
                Err(crate::TextUnavailable { id: *id, problem: "none here".into() })
            }
        }
        let elsewhere = Graph::with_texts_from(std::sync::Arc::new(NoTexts)).replayed(log(10), 4);
        let m = elsewhere.memory();
        assert_eq!(m.texts, 0, "texts read from a store are not held");
        assert!(m.journal > 0, "a journal of the last applies");
    }
}
