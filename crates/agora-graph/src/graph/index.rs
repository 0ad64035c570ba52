//! Node positions by id: the one table that turns an entry id into the
//! node's place in application order ([`Ix`]).
//!
//! Inside the graph a node is named by that position (the resolved
//! references, the rules and the effects all use it), so this table is what
//! every lookup by id goes through, and a replay does one or more for every
//! event. Its invariant: it holds each applied node's id once, beside its
//! position, and is never more than 3/4 full (so a probe always ends). It is
//! its own module because it is its own data structure, chosen against
//! hashbrown for its cache behaviour (see [`NodeIndex`]), with a test of its
//! own; it knows nodes only by their ids.

use super::node::Node;
use super::node_state::Ix;
use agora_core::EntryId;
use agora_core::id_arena::IdArena;

/// Most nodes a graph holds. Positions are u32 and the index stores a
/// position plus one beside 32 bits of hash, so 2^31 keeps both in range;
/// at ~150 bytes a node that is 300 GB, far past any machine this runs on.
pub const NODES_MAX: usize = 1 << 31;

/// Node positions by id, in one array of u64 slots probed linearly: the top
/// 32 bits of a slot are the id's hash, the low 32 the position plus one (0
/// is an empty slot). A lookup costs one cache miss for the slot and one for
/// the node whose id confirms it; hashbrown keeps control bytes and slots in
/// separate arrays, so it paid three, and a profile of the replay put a fifth
/// of the time there. 8 bytes a slot, at most 3/4 full.
///
/// Entry ids are SHA-256 outputs, so their first bytes are already a uniform
/// hash. Grinding ids that collide costs about a million SHA-256 evaluations
/// per entry in a table of a million slots, and every entry must be signed
/// by an admitted author.
#[derive(Clone, Debug)]
pub(super) struct NodeIndex {
    slots: Vec<u64>,
    /// Slots in use.
    len: usize,
    /// `32 - log2(slots.len())`: a hash's home slot is its top bits.
    shift: u32,
}

impl Default for NodeIndex {
    fn default() -> Self {
        Self::with_slots(16)
    }
}

impl NodeIndex {
    fn with_slots(slots: usize) -> Self {
        assert!(slots.is_power_of_two() && (16..=1 << 32).contains(&slots));
        Self { slots: vec![0; slots], len: 0, shift: 32 - slots.trailing_zeros() }
    }

    /// Bytes on the heap ([`Graph::memory`](super::Graph::memory)).
    pub(super) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<u64>()
    }

    fn hash(id: &EntryId) -> u32 {
        let b = id.as_bytes();
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn home(&self, hash: u32) -> usize {
        (hash >> self.shift) as usize
    }

    /// `id`'s position: a slot whose hash matches is confirmed by its
    /// node's row in `ids`.
    pub(super) fn get(&self, nodes: &[Node], ids: &IdArena, id: &EntryId) -> Option<Ix> {
        let hash = Self::hash(id);
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        // Terminates: the table is never more than 3/4 full.
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            if (slot >> 32) as u32 == hash {
                let ix = slot as u32 - 1;
                if ids.is(nodes[ix as usize].row, id) {
                    return Some(ix);
                }
            }
            i = (i + 1) & mask;
        }
    }

    pub(super) fn contains(&self, nodes: &[Node], ids: &IdArena, id: &EntryId) -> bool {
        self.get(nodes, ids, id).is_some()
    }

    /// Index position `ix`, whose node has id `id` and is not indexed yet.
    pub(super) fn insert(&mut self, id: &EntryId, ix: Ix) {
        assert!((ix as usize) < NODES_MAX);
        self.reserve(1);
        self.place(Self::hash(id), ix);
        self.len += 1;
    }

    /// Remove `id`, which must be indexed (its node still in `nodes`): the
    /// slots after it that probed past it move back into the hole
    /// (backward-shift deletion), so every lookup still ends at an empty
    /// slot with nothing it must find beyond. What rewinding a graph
    /// (`rewind.rs`) does to the nodes it takes off.
    pub(super) fn remove(&mut self, nodes: &[Node], ids: &IdArena, id: &EntryId) {
        let hash = Self::hash(id);
        let mask = self.slots.len() - 1;
        let mut hole = self.home(hash);
        loop {
            let slot = self.slots[hole];
            assert!(slot != 0, "removing an id that is not indexed");
            if (slot >> 32) as u32 == hash && ids.is(nodes[(slot as u32 - 1) as usize].row, id) {
                break;
            }
            hole = (hole + 1) & mask;
        }
        let mut j = (hole + 1) & mask;
        loop {
            let slot = self.slots[j];
            if slot == 0 {
                break;
            }
            // The slot at j may fill the hole if its probe, from its home
            // to j, passed the hole.
            let home = self.home((slot >> 32) as u32);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = slot;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = 0;
        self.len -= 1;
    }

    fn place(&mut self, hash: u32, ix: Ix) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = u64::from(hash) << 32 | u64::from(ix + 1);
    }

    /// Room for `additional` more ids without growing.
    pub(super) fn reserve(&mut self, additional: usize) {
        let needed = self.len + additional;
        assert!(needed <= NODES_MAX, "more than {NODES_MAX} nodes");
        if needed * 4 <= self.slots.len() * 3 {
            return;
        }
        let slots = (needed * 4).div_ceil(3).next_power_of_two().max(16);
        let old = std::mem::replace(self, Self::with_slots(slots));
        // A slot holds its hash, so growing never reads the nodes.
        for slot in old.slots.into_iter().filter(|&s| s != 0) {
            self.place((slot >> 32) as u32, slot as u32 - 1);
        }
        self.len = old.len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{AgentId, LogPosition};

    fn node(arena: &IdArena, id: EntryId) -> Node {
        Node::new(arena.intern(&id), LogPosition { timestamp_ms: 0, author: AgentId([0; 32]), seq: 0 }, 0, crate::graph::node::RAW)
    }

    /// Ids that share their hash (first four bytes), that sit at the end of
    /// the table (probing wraps around), and plain ones, inserted into a
    /// table that grows from its smallest size: every one is found at its
    /// position, and nothing else is.
    #[test]
    fn node_index_finds_what_it_holds_through_collisions_wraparound_and_growth() {
        let mut ids = Vec::new();
        for i in 0..300u32 {
            let mut id = [0u8; 32];
            match i % 3 {
                0 => id[..4].copy_from_slice(&0x5555_5555u32.to_le_bytes()),
                1 => id[..4].copy_from_slice(&u32::MAX.to_le_bytes()),
                _ => id[..4].copy_from_slice(&i.wrapping_mul(0x9e37_79b9).to_le_bytes()),
            }
            id[4..8].copy_from_slice(&i.to_le_bytes());
            ids.push(EntryId(id));
        }
        let mut nodes: Vec<Node> = Vec::new();
        let arena = IdArena::new();
        let mut index = NodeIndex::default();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(index.get(&nodes, &arena, id), None);
            nodes.push(node(&arena, *id));
            index.insert(id, i as Ix);
            assert!(index.len * 4 <= index.slots.len() * 3, "at most 3/4 full");
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(index.get(&nodes, &arena, id), Some(i as Ix));
        }
        let mut absent = *ids[0].as_bytes();
        absent[31] = 1;
        assert_eq!(index.get(&nodes, &arena, &EntryId(absent)), None);
        assert_eq!(index.len, ids.len());
        // Removed from the end back (as a rewind takes nodes off), through
        // the same collisions and wraparound: what is left is still found,
        // what was removed is not.
        for (i, id) in ids.iter().enumerate().rev().step_by(2) {
            index.remove(&nodes, &arena, id);
            assert_eq!(index.get(&nodes, &arena, id), None, "removed {i}");
        }
        for (i, id) in ids.iter().enumerate() {
            let kept = (ids.len() - 1 - i) % 2 == 1;
            assert_eq!(index.get(&nodes, &arena, id), kept.then_some(i as Ix), "{i}");
        }
        assert_eq!(index.len, ids.len() / 2);
    }
}
