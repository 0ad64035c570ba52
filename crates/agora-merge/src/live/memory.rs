//! What a [`LiveMerge`] holds in memory, part by part
//! ([`LiveMerge::memory`]).
//!
//! A node keeps one live merged view for as long as it runs, about 120
//! bytes an entry: an operator must be able to see where that goes, and a
//! change to a layout must be measurable without a heap profiler. The
//! figures are what the structures hold (capacities times sizes, boxed and
//! listed state by its length), not what the allocator rounds them up to;
//! hash maps are counted by capacity at their key and value sizes plus a
//! control byte, leaving out their load slack.

use super::{LiveChain, LiveMerge, LiveRecord};
use crate::payload::MergeEvent;
use crate::views::{ChainConsensus, DisputedEvent};
use agora_core::{AgentId, EntryId};

/// Bytes a [`LiveMerge`] holds, by part. See [`LiveMerge::memory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveMemory {
    /// Every entry id, in the arena the node's views share (its table and
    /// ids): the live view knows every entry, so it reports the arena.
    pub ids: usize,
    /// Where each known entry is (the entry index: its locations and
    /// record numbers, by row).
    pub entry_index: usize,
    /// Each chain's view, as rows of the entry index.
    pub views: usize,
    /// The merge records: one per merge event, with its decoded event and
    /// boxed statuses.
    pub records: usize,
    /// Fork points, entries off their chain's view, gaps.
    pub forks: usize,
    /// Accepts by the chain they reach, and each signer's furthest.
    pub accepts: usize,
    /// Open disputes by target, and who refers to what.
    pub disputes: usize,
    /// The consensus of the quorums asked for most recently.
    pub consensus: usize,
}

impl LiveMemory {
    /// Every part, named, in declaration order.
    pub fn parts(&self) -> [(&'static str, usize); 8] {
        [
            ("ids", self.ids),
            ("entry_index", self.entry_index),
            ("views", self.views),
            ("records", self.records),
            ("forks", self.forks),
            ("accepts", self.accepts),
            ("disputes", self.disputes),
            ("consensus", self.consensus),
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

/// A hash map's slots: key and value, and a control byte.
fn map_bytes<K, V>(capacity: usize) -> usize {
    capacity * (size_of::<K>() + size_of::<V>() + 1)
}

fn event_heap(e: &MergeEvent) -> usize {
    match e {
        MergeEvent::Dispute { reason, counter_claim, .. } => reason.capacity() + counter_claim.as_ref().map_or(0, String::capacity),
        _ => 0,
    }
}

fn record_bytes(r: &LiveRecord) -> usize {
    r.event.as_ref().map_or(0, event_heap) + r.rare.as_ref().map_or(0, |_| size_of::<super::RareStatus>())
}

fn chain_consensus_bytes(c: &ChainConsensus) -> usize {
    size_of::<ChainConsensus>() + vec_bytes(&c.frontiers) + vec_bytes::<DisputedEvent>(&c.disputed) + c.disputed.iter().map(|d| vec_bytes(&d.by)).sum::<usize>()
}

impl LiveChain {
    fn fork_bytes(&self) -> usize {
        vec_bytes(&self.forks)
            + self.forks.iter().map(|f| vec_bytes(&f.candidates)).sum::<usize>()
            + vec_bytes(&self.fork_seqs)
            + vec_bytes(&self.missing)
            + map_bytes::<EntryId, super::OffView>(self.off_view.capacity())
    }
}

impl LiveMerge {
    /// What the live view holds in memory, by part (see the module docs).
    /// Reads every chain and record once: for reports and benchmarks, not
    /// for every answer.
    pub fn memory(&self) -> LiveMemory {
        let chains = &self.chains;
        LiveMemory {
            ids: self.index.arena().heap_bytes(),
            entry_index: self.index.heap_bytes(),
            views: vec_bytes(chains) + chains.iter().map(|c| vec_bytes(&c.view)).sum::<usize>() + self.by_author.len() * (size_of::<AgentId>() + 4),
            records: chains.iter().map(|c| vec_bytes::<LiveRecord>(&c.records) + c.records.iter().map(record_bytes).sum::<usize>()).sum(),
            forks: chains.iter().map(LiveChain::fork_bytes).sum(),
            accepts: chains
                .iter()
                .map(|c| {
                    map_bytes::<u32, Vec<u32>>(c.accepts_on.capacity())
                        + c.accepts_on.values().map(vec_bytes).sum::<usize>()
                        + map_bytes::<u32, (u64, u32)>(c.reach.capacity())
                })
                .sum::<usize>()
                + map_bytes::<u32, std::collections::BTreeSet<u32>>(self.referrers.capacity())
                + self.referrers.values().map(|s| s.len() * size_of::<u32>()).sum::<usize>(),
            disputes: map_bytes::<u32, super::OpenMarks>(self.open.capacity())
                + self
                    .open
                    .values()
                    .flat_map(|m| m.values())
                    .map(|d| size_of::<((u64, EntryId), super::Disputers)>() + d.0.capacity() * size_of::<(AgentId, EntryId)>())
                    .sum::<usize>()
                + map_bytes::<EntryId, std::collections::BTreeSet<u32>>(self.waiting.capacity())
                + self.waiting.values().map(|s| s.len() * size_of::<u32>()).sum::<usize>(),
            consensus: self
                .consensus_cache
                .iter()
                .map(|q| vec_bytes(&q.agents) + vec_bytes(&q.per_slot) + q.per_slot.iter().flatten().map(|(_, c)| chain_consensus_bytes(c)).sum::<usize>())
                .sum(),
        }
    }
}
