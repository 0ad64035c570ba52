//! The state of the graph digest (`digest.rs`): which nodes are in each
//! bucket, each bucket's digest and which must be computed again
//! ([`Digests`]). Kept apart from the digest's computation because the
//! graph holds it: the graph's file knows this one, and the computation
//! knows both.

use super::node::Node;
use super::node_state::Ix;
use agora_core::EntryId;
use agora_core::id_arena::IdArena;
use rayon::prelude::*;

/// Buckets of [`Graph::digest`](super::Graph::digest): nodes grouped by the first 12 bits of their id.
pub const DIGEST_BUCKETS: usize = 4096;
pub(super) const DIGEST_TAG: &[u8] = b"agora-graph-digest/1";

/// The bucket digests and which of them must be computed again.
#[derive(Clone, Debug)]
pub(super) struct Digests {
    /// Node positions of each bucket, ascending by id.
    pub(super) members: Vec<Vec<Ix>>,
    pub(super) hashes: Vec<[u8; 32]>,
    pub(super) dirty: Vec<bool>,
    /// The buckets marked dirty, each once.
    pub(super) dirty_list: Vec<u16>,
    /// The pending set's digest, until an event is held or released.
    pub(super) pending: Option<[u8; 32]>,
    /// The digest, until the next apply.
    pub(super) root: Option<[u8; 32]>,
}

pub(super) fn bucket(id: &EntryId) -> usize {
    (usize::from(id.0[0]) << 4) | usize::from(id.0[1] >> 4)
}

impl Digests {
    /// Every node of `nodes` placed, every bucket dirty.
    pub(super) fn of(nodes: &[Node], ids: &IdArena) -> Self {
        let ids = ids.read();
        let id = |ix: Ix| ids.id(nodes[ix as usize].row);
        let mut members: Vec<Vec<Ix>> = vec![Vec::new(); DIGEST_BUCKETS];
        for ix in 0..nodes.len() as Ix {
            members[bucket(&id(ix))].push(ix);
        }
        // Each bucket exactly as large as it is (built by pushes, each had
        // up to half its room spare: 2.5 bytes a node of 4).
        members.par_iter_mut().for_each(|m| {
            m.sort_unstable_by_key(|&a| id(a));
            m.shrink_to_fit();
        });
        Self {
            members,
            hashes: vec![[0; 32]; DIGEST_BUCKETS],
            dirty: vec![true; DIGEST_BUCKETS],
            dirty_list: (0..DIGEST_BUCKETS as u16).collect(),
            pending: None,
            root: None,
        }
    }

    /// Bytes on the heap ([`Graph::memory`](super::Graph::memory)).
    pub(super) fn heap_bytes(&self) -> usize {
        size_of::<Self>()
            + self.members.capacity() * size_of::<Vec<Ix>>()
            + self.members.iter().map(|m| m.capacity() * size_of::<Ix>()).sum::<usize>()
            + self.hashes.capacity() * 32
            + self.dirty.capacity()
            + self.dirty_list.capacity() * size_of::<u16>()
    }

    pub(super) fn mark(&mut self, b: usize) {
        self.root = None;
        if !self.dirty[b] {
            self.dirty[b] = true;
            self.dirty_list.push(b as u16);
        }
    }
}
