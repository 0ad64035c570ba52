//! The tests' swarm log: agents' signed entries, in log order.

#![allow(dead_code)]

use agora_core::entry::next_header_after;
use agora_core::{AgentKey, EntryId, SignedEntry};
use agora_merge::MergeEntry;

/// A swarm's log, written in log order (one clock for every agent).
pub struct Log {
    pub keys: Vec<AgentKey>,
    pub entries: Vec<MergeEntry>,
    last: Vec<Option<SignedEntry>>,
    clock: u64,
}

impl Log {
    pub fn new(n: usize) -> Self {
        Self { keys: (0..n).map(|i| AgentKey::from_seed([i as u8 + 1; 32])).collect(), entries: vec![], last: vec![None; n], clock: 1_000 }
    }
    pub fn push(&mut self, i: usize, payload: Vec<u8>) -> EntryId {
        self.clock += 1;
        let key = &self.keys[i];
        let prev = self.last[i].as_ref().map(|p| (p.header(), p.id()));
        let e = SignedEntry::sign(next_header_after(key.agent_id(), prev, self.clock, &payload).unwrap(), key);
        self.entries.push(MergeEntry::new(e.clone(), Some(&payload)).unwrap());
        self.last[i] = Some(e.clone());
        e.id()
    }
    /// A second entry after agent `i`'s entry `after` (seq 1 if `None`),
    /// its chain going on from the first branch.
    pub fn fork(&mut self, i: usize, after: Option<usize>, payload: Vec<u8>) -> EntryId {
        self.clock += 1;
        let chain = self.chain(i);
        let prev = after.map(|k| (chain[k].signed().header().clone(), chain[k].id()));
        let key = &self.keys[i];
        let e = SignedEntry::sign(next_header_after(key.agent_id(), prev.as_ref().map(|(h, id)| (h, *id)), self.clock, &payload).unwrap(), key);
        self.entries.push(MergeEntry::new(e.clone(), Some(&payload)).unwrap());
        e.id()
    }
    /// The entries of agent `i` so far, seq 1 first.
    pub fn chain(&self, i: usize) -> Vec<&MergeEntry> {
        let author = self.keys[i].agent_id();
        self.entries.iter().filter(|e| e.author() == author).collect()
    }
}
