//! Hash maps keyed by entry ids or agent ids.
//!
//! Entry ids are SHA-256 outputs and agent ids Ed25519 public keys, both
//! already uniformly distributed, so maps keyed by them hash their first
//! eight bytes instead of running SipHash over all 32 (when the graph's node
//! index was such a map, a third of the replay time went to hashing).
//! Grinding ids that collide in a table of a million buckets costs about a
//! million SHA-256 evaluations per entry, and every entry and author must be
//! admitted, signed and stored first.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The hash of an id's bytes: the first eight, little-endian (0 for fewer).
/// Also for tables that hash ids themselves (a `hashbrown::HashTable` of
/// positions).
pub fn id_hash(bytes: &[u8]) -> u64 {
    bytes.first_chunk::<8>().map_or(0, |first| u64::from_le_bytes(*first))
}

/// Hashes a 32-byte id by its first eight bytes ([`id_hash`]).
#[derive(Default, Clone, Copy, Debug)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // An id hashes as its 32-byte array: a length prefix, then the bytes.
        self.0 ^= id_hash(bytes);
    }
    fn write_usize(&mut self, _: usize) {}
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` keyed by ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A `HashSet` of ids, hashed with [`IdHasher`].
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::IdMap;
    use crate::{AgentId, EntryId};

    #[test]
    fn ids_that_share_their_first_bytes_stay_distinct_keys() {
        let mut m: IdMap<EntryId, u32> = IdMap::default();
        let mut a = [7u8; 32];
        m.insert(EntryId(a), 1);
        a[31] = 8;
        m.insert(EntryId(a), 2);
        assert_eq!(m.len(), 2);
        assert_eq!(m[&EntryId(a)], 2);
        let mut agents: IdMap<AgentId, ()> = IdMap::default();
        agents.insert(AgentId([1; 32]), ());
        assert!(agents.contains_key(&AgentId([1; 32])));
    }
}
