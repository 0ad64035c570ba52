//! A swarm of agents with real keys, signing real entries in memory.
#![allow(dead_code)]

use agora_core::entry::next_header_after;
use agora_core::{AgentId, AgentKey, EntryId, SignedEntry};
use agora_graph::Event;
use agora_merge::{Merge, MergeEntry, MergeEvent};
use std::collections::HashMap;

pub struct Swarm {
    pub keys: Vec<AgentKey>,
    pub entries: Vec<MergeEntry>,
    signed: HashMap<EntryId, SignedEntry>,
    tips: HashMap<AgentId, EntryId>,
    pub clock: u64,
}

impl Swarm {
    pub fn new(n: usize) -> Self {
        let keys = (0..n).map(|i| AgentKey::from_seed([i as u8 + 1; 32])).collect();
        Self { keys, entries: Vec::new(), signed: HashMap::new(), tips: HashMap::new(), clock: 1_700_000_000_000 }
    }

    pub fn agent(&self, i: usize) -> AgentId {
        self.keys[i].agent_id()
    }

    /// Append after the agent's latest entry.
    pub fn append(&mut self, i: usize, payload: Vec<u8>) -> EntryId {
        let prev = self.tips.get(&self.agent(i)).copied();
        self.append_after(i, prev, payload)
    }

    /// Append after a chosen entry of the agent's own (or start a chain):
    /// this is how a test makes forks.
    pub fn append_after(&mut self, i: usize, prev: Option<EntryId>, payload: Vec<u8>) -> EntryId {
        let e = self.sign_after(i, prev, &payload);
        let id = e.id();
        self.entries.push(MergeEntry::new(e, Some(&payload)).unwrap());
        self.tips.insert(self.agent(i), id);
        id
    }

    /// Sign without adding the entry to the swarm's set.
    pub fn sign_after(&mut self, i: usize, prev: Option<EntryId>, payload: &[u8]) -> SignedEntry {
        self.clock += 1_000;
        let key = &self.keys[i];
        let prev = prev.map(|p| self.signed[&p].clone());
        let h = next_header_after(key.agent_id(), prev.as_ref().map(|p| (p.header(), p.id())), self.clock, payload).unwrap();
        let e = SignedEntry::sign(h, key);
        self.signed.insert(e.id(), e.clone());
        e
    }

    pub fn event(&mut self, i: usize, ev: Event) -> EntryId {
        self.append(i, ev.encode())
    }

    pub fn merge(&mut self, i: usize, ev: MergeEvent) -> EntryId {
        self.append(i, ev.encode())
    }

    pub fn signed(&self, id: &EntryId) -> SignedEntry {
        self.signed[id].clone()
    }

    pub fn seq(&self, id: &EntryId) -> u64 {
        self.signed[id].header().seq
    }

    pub fn author_of(&self, id: &EntryId) -> AgentId {
        self.signed[id].header().author
    }

    /// An accept of `id`'s chain up to `id`.
    pub fn accept_of(&self, id: &EntryId) -> MergeEvent {
        MergeEvent::Accept { author: self.author_of(id), up_to_seq: self.seq(id), head: *id }
    }

    pub fn compute(&self) -> Merge<'_> {
        Merge::compute(&self.entries, &[]).unwrap()
    }

    /// The entries without the ones listed.
    pub fn without(&self, ids: &[EntryId]) -> Vec<MergeEntry> {
        self.entries.iter().filter(|e| !ids.contains(&e.id())).cloned().collect()
    }
}

pub fn text(t: &str) -> String {
    t.to_string()
}
