//! The snapshot: the canonical bytes of the derived graph
//! ([`Graph::snapshot`]), their SHA-256 ([`Graph::view_hash`]), and the
//! nodes in id order both are written in ([`Graph::by_id`], [`ById`]).
//!
//! The invariant: the bytes depend only on the set of events, never on
//! arrival order, batching or memory layout, and are pinned byte for byte by
//! `tests/pinned.rs`; two graphs with equal snapshots are equal views. The
//! id order is sorted once and kept until the next apply. This is its own
//! module because it is the graph's one canonical output, which other nodes
//! compare against, and because writing it fast (warmed reads in id order,
//! pieces written on every thread while the last one is hashed) has nothing
//! to do with how the graph is built.

use super::Graph;
use super::node::{Node, NodeRef, Status};
use super::node_state::{Ix, Mark};
use super::replay::WARM_BATCH;
use agora_core::id_arena::IdsRead;
use agora_core::{EntryId, LogPosition};
use rayon::prelude::*;

/// Nodes a piece of the snapshot [`Graph::view_hash`] hashes: about 700 KB,
/// in cache while it is hashed.
const VIEW_HASH_PIECE: usize = 4 * 1024;
/// Parts a piece is written in, each a task any thread may take.
const VIEW_HASH_PARTS: usize = 8;

impl Graph {
    /// The nodes in id order: the order of [`Graph::snapshot`] and of
    /// published views. Computed on first use and kept until the next event
    /// is applied.
    pub fn by_id(&self) -> ById<'_> {
        ById { graph: self, order: self.id_order.get_or_init(|| self.sort_by_id()) }
    }

    /// Node positions sorted by id. Sorts (first eight bytes, position)
    /// pairs, which stay in cache, rather than the nodes or references to
    /// them (a comparison of two nodes' ids is two cache misses), on every
    /// thread. (A bucket sort on the ids' leading bits, which are uniform, was
    /// measured slower here: 42-51 ms against 31-37 ms for 730k nodes.) Ids
    /// are SHA-256 outputs, so equal prefixes are rare and are ordered by the
    /// whole id afterwards.
    fn sort_by_id(&self) -> Vec<Ix> {
        let ids = self.ids.read();
        let keys: Vec<(u64, Ix)> = self
            .nodes
            .par_iter()
            .enumerate()
            .map(|(i, n)| {
                let mut first = [0u8; 8];
                first.copy_from_slice(&ids.id(n.row).as_bytes()[..8]);
                (u64::from_be_bytes(first), i as Ix)
            })
            .collect();
        let mut sorted = keys;
        sorted.par_sort_unstable();
        // Runs of equal prefixes, by the whole id.
        let mut i = 0;
        while i < sorted.len() {
            let run = sorted[i..].iter().take_while(|k| k.0 == sorted[i].0).count();
            if run > 1 {
                sorted[i..i + run].sort_unstable_by_key(|a| ids.id(self.nodes[a.1 as usize].row));
            }
            i += run;
        }
        sorted.into_iter().map(|(_, i)| i).collect()
    }

    /// The canonical bytes of the derived graph: every node sorted by id with
    /// its kind, status, settled flag and the events that made it so, plus the
    /// pending set. Two graphs with equal snapshots are equal views.
    pub fn snapshot(&self) -> Vec<u8> {
        let by_id = self.by_id();
        let mut out = Vec::new();
        by_id.write_nodes(&self.ids.read(), 0..by_id.len(), &mut out);
        self.write_pending(&mut out);
        out
    }

    /// SHA-256 of [`Graph::snapshot`]: a short fingerprint of the view.
    ///
    /// The snapshot is never held whole (about 170 bytes a node). It is
    /// written a piece at a time, each piece in parts on every thread, and
    /// the next piece is written while the last one is hashed: writing (which
    /// reads the nodes in id order, so from anywhere in memory) takes about
    /// twice as long as hashing, and hashing is the one step that cannot be
    /// split.
    pub fn view_hash(&self) -> [u8; 32] {
        use sha2::Digest;
        let by_id = self.by_id();
        let ids = self.ids.read();
        let ids = &ids;
        let len = by_id.len();
        let parts = |piece: usize| {
            (0..VIEW_HASH_PARTS).map(move |p| {
                let start = piece * VIEW_HASH_PIECE + p * VIEW_HASH_PIECE / VIEW_HASH_PARTS;
                start.min(len)..(start + VIEW_HASH_PIECE / VIEW_HASH_PARTS).min(len)
            })
        };
        let write = |piece: usize, bufs: &mut Vec<Vec<u8>>| {
            bufs.par_iter_mut().zip(parts(piece).collect::<Vec<_>>()).for_each(|(buf, range)| {
                buf.clear();
                by_id.write_nodes(ids, range, buf);
            });
        };
        let mut hasher = sha2::Sha256::new();
        let mut current = vec![Vec::new(); VIEW_HASH_PARTS];
        let mut next = vec![Vec::new(); VIEW_HASH_PARTS];
        write(0, &mut current);
        for piece in 1..=len.div_ceil(VIEW_HASH_PIECE) {
            rayon::join(|| current.iter().for_each(|b| hasher.update(b)), || write(piece, &mut next));
            std::mem::swap(&mut current, &mut next);
        }
        let mut tail = Vec::new();
        self.write_pending(&mut tail);
        hasher.update(&tail);
        hasher.finalize().into()
    }

    /// The snapshot's tail: the ids of the events held as pending, in log order.
    fn write_pending(&self, out: &mut Vec<u8>) {
        let mut held: Vec<(LogPosition, EntryId)> = self.waiting.values().flatten().map(|e| (e.pos, e.id)).collect();
        held.sort_unstable();
        for (_, id) in held {
            out.extend_from_slice(id.as_bytes());
        }
    }
}

/// A graph's nodes in id order (see [`Graph::by_id`]).
#[derive(Clone, Copy)]
pub struct ById<'g> {
    graph: &'g Graph,
    order: &'g [Ix],
}

impl<'g> ById<'g> {
    /// The nodes, ascending by id.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeRef<'g>> + 'g {
        let graph = self.graph;
        self.order.iter().map(move |&i| graph.node_ref(&graph.nodes[i as usize]))
    }

    /// The node at `k` in id order.
    pub fn get(&self, k: usize) -> Option<NodeRef<'g>> {
        self.order.get(k).map(|&i| self.graph.node_ref(&self.graph.nodes[i as usize]))
    }

    /// Where `id` is in id order, if it is a node.
    pub fn position(&self, id: &EntryId) -> Option<usize> {
        let ids = self.graph.ids.read();
        let k = self.order.partition_point(|&i| ids.id(self.graph.nodes[i as usize].row) < *id);
        drop(ids);
        self.get(k).is_some_and(|n| n.id == *id).then_some(k)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Load, before reading the nodes at `range` (in id order), the memory
    /// their snapshot is written from: each node, then what it points to
    /// (its links: touched-by list, edges and marks; its extra state), then
    /// the ids of the nodes those name. In id order consecutive nodes sit anywhere in
    /// memory, and reading them one at a time waits for each miss in turn;
    /// these loads do not depend on each other, so the processor overlaps
    /// them (as [`Graph::replay`] does for its lookups). Pure reads.
    fn warm(&self, ids: &IdsRead<'_>, range: std::ops::Range<usize>) {
        let order = &self.order[range];
        let nodes = &self.graph.nodes;
        let id_at = |ix: Ix| ids.id(nodes[ix as usize].row).0[0];
        for &i in order {
            let n = &nodes[i as usize];
            std::hint::black_box((n.row, n.links.extra().is_some(), n.links.touched().len()));
        }
        for &i in order {
            std::hint::black_box(id_at(i));
        }
        for &i in order {
            let n = &nodes[i as usize];
            std::hint::black_box((n.links.touched().first().copied(), n.links.edges().next().map(|e| e.1), n.links.extra().map(|x| x.frame_state)));
        }
        for &i in order {
            let n = &nodes[i as usize];
            n.links.touched().iter().for_each(|&t| _ = std::hint::black_box(id_at(t)));
            n.links.edges().for_each(|e| _ = std::hint::black_box(id_at(e.1)));
            n.links.marks().for_each(|m| _ = std::hint::black_box(id_at(m.1)));
        }
    }

    /// Append the snapshot bytes of the nodes at `range` (in id order) to `out`.
    fn write_nodes(&self, ids: &IdsRead<'_>, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        for start in range.clone().step_by(WARM_BATCH) {
            let end = (start + WARM_BATCH).min(range.end);
            self.warm(ids, start..end);
            for &i in &self.order[start..end] {
                write_snapshot_node(&self.graph.nodes, ids, i, out);
            }
        }
    }
}

/// The part of [`Graph::snapshot`] of the node at `ix` in `nodes`. Lists are
/// written as a 4-byte big-endian count and the ids (of the nodes the node
/// names by position); counts are patched in after the ids, so no list is
/// collected first.
pub(super) fn write_snapshot_node(nodes: &[Node], ids: &IdsRead<'_>, ix: Ix, out: &mut Vec<u8>) {
    fn list(out: &mut Vec<u8>, nodes: &[Node], ids: &IdsRead<'_>, ixs: impl FnOnce(&mut dyn FnMut(Ix))) {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        let mut count = 0u32;
        ixs(&mut |ix| {
            out.extend_from_slice(ids.id(nodes[ix as usize].row).as_bytes());
            count += 1;
        });
        out[at..at + 4].copy_from_slice(&count.to_be_bytes());
    }
    let n = &nodes[ix as usize];
    let id_of = |ix: Ix| ids.id(nodes[ix as usize].row).0;
    let id = ids.id(n.row);
    out.extend_from_slice(id.as_bytes());
    if n.links.extra().is_none() && !n.links.has_marks() {
        // Most nodes: nothing but the node itself and what touched it. Active
        // (no mark or state), not settled, every list but the first empty, no
        // frame or task state, no outcomes.
        debug_assert_eq!(n.status(), Status::Active);
        out.extend_from_slice(n.kind().as_bytes());
        out.extend_from_slice(&[0, Status::Active as u8, 0]);
        out.extend_from_slice(&(1 + n.links.touched().len() as u32).to_be_bytes());
        out.extend_from_slice(id.as_bytes());
        for &t in n.links.touched() {
            out.extend_from_slice(&id_of(t));
        }
        out.extend_from_slice(&[0; 16]);
        for (rel, to) in n.links.edges() {
            out.extend_from_slice(rel.name().as_bytes());
            out.extend_from_slice(&id_of(to));
        }
        out.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        return;
    }
    let x = n.x();
    let marks = &n.links;
    let of = |mark: Mark| move |f: &mut dyn FnMut(Ix)| marks.all(mark).for_each(f);
    out.extend_from_slice(n.kind().as_bytes());
    out.push(0);
    let status = n.status();
    out.push(status as u8);
    out.push(n.settled() as u8);
    list(out, nodes, ids, |f| std::iter::once(ix).chain(n.links.touched().iter().copied()).for_each(f));
    list(out, nodes, ids, |f| n.for_each_why(ix, status, f));
    list(out, nodes, ids, of(Mark::OpenChallenge));
    list(out, nodes, ids, of(Mark::Tension));
    list(out, nodes, ids, of(Mark::FrameChild));
    for (rel, to) in n.links.edges() {
        out.extend_from_slice(rel.name().as_bytes());
        out.extend_from_slice(&id_of(to));
    }
    out.push(x.frame_state.map_or(0xff, |s| s as u8));
    out.push(x.task_state.map_or(0xff, |s| s as u8));
    out.extend_from_slice(&x.successes.to_be_bytes());
    out.extend_from_slice(&x.failures.to_be_bytes());
    out.push(x.confirmed as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;
    use crate::graph::LogEvent;
    use agora_core::AgentId;

    /// Ids that share their first eight bytes (the sort key) come out in
    /// full-id order, and the snapshot written in pieces is the one the
    /// hash covers.
    #[test]
    fn by_id_orders_ids_that_share_their_sort_prefix() {
        let author = AgentId([7; 32]);
        let events: Vec<LogEvent> = (0..10_000u32)
            .map(|i| {
                let mut id = [0u8; 32];
                id[..8].copy_from_slice(&u64::from(i % 3).to_be_bytes());
                id[8..12].copy_from_slice(&i.wrapping_mul(0x9e37_79b9).to_be_bytes());
                let pos = LogPosition { timestamp_ms: u64::from(i), author, seq: u64::from(i) + 1 };
                LogEvent::from_payload(EntryId(id), pos, Some(&Event::Proposition { text: format!("p{i}") }.encode()))
            })
            .collect();
        let mut events = events;
        let missing = EntryId([0xee; 32]);
        let pos = LogPosition { timestamp_ms: 20_000, author, seq: 20_000 };
        events.push(LogEvent::from_payload(EntryId([0xdd; 32]), pos, Some(&Event::Support { target: missing, text: "held".into() }.encode())));
        let g = Graph::replay(events);
        assert_eq!(g.pending().len(), 1, "the snapshot has a pending tail");
        assert!(g.id_order.get().is_none(), "computed on first use");
        let ids: Vec<EntryId> = g.by_id().nodes().map(|n| n.id).collect();
        let mut sorted: Vec<EntryId> = g.nodes().map(|n| n.id).collect();
        sorted.sort_unstable();
        assert_eq!(ids, sorted);
        assert_eq!(g.by_id().len(), 10_000);
        assert_eq!(g.view_hash(), agora_core::sha256(&g.snapshot()));
        assert!(g.len() > 2 * VIEW_HASH_PIECE, "the hash reads the snapshot in several pieces");
        for (k, n) in g.by_id().nodes().enumerate() {
            assert_eq!(g.by_id().position(&n.id), Some(k));
        }
        assert_eq!(g.by_id().position(&EntryId([0xff; 32])), None);
    }
}
