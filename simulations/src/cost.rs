//! What verification and writes cost a node, on virtual time, with the
//! node's queue limits ([`agora_sync::queues`], used by the node's driver
//! and here).
//!
//! The node runs its store work on threads of its own: one reads ranges
//! for peers, one writes verified imports, up to [`VERIFY_THREADS_MAX`]
//! check responses; each takes jobs from a bounded queue. Modelled the same
//! way: a job waits for its thread and for a free core (the node's cores
//! are shared by all its threads, first come first served, a job runs to
//! its end), and costs
//! - a check of a response: [`Cost::verify_ns_per_signature`] per entry;
//! - an import: [`Cost::commit_ns`] + [`Cost::commit_ns_per_entry`] per
//!   entry + [`Cost::commit_ns_per_byte`] per byte;
//! - a range read: nothing but its turn on a core (the benchmarks do not
//!   measure reads apart).
//!
//! A job that finds its queue full is handled as the node handles it: a
//! range request is answered `Busy`, an import is dropped and reported
//! `Lost` to the replicator (which asks for the entries again), a response
//! is checked on the event loop (at once; the loop's own time is not
//! modelled, nor is the check of a gossiped entry, which the node does on
//! the loop, nor the node's own appends).

use agora_sync::queues::{CHECK_QUEUE_MAX, STORE_QUEUE_MAX, VERIFY_THREADS_MAX, WRITE_QUEUE_MAX};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// A scenario's `[cost]` block: what a node's verification and writes
/// cost. Every field left out takes its measured default (`BENCHMARKS.md`,
/// "Store", dev-2c, 2026-11-22). A scenario without the block has no cost:
/// every job is done the instant it is asked for, as before the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cost {
    /// Checking one entry's signature (and payload hash), ns. Default
    /// 22,667: "verify stored entries, 1 thread", 44,116 entries/s.
    pub verify_ns_per_signature: u64,
    /// A commit's fixed cost (its synced write), ns. Default 169,262: "one
    /// synced 443-byte RocksDB write 5,908/s".
    pub commit_ns: u64,
    /// A commit's cost per entry, ns. Default 8,600: "durable append,
    /// batches of 1,000" at 41,860 entries/s is 23.9 ms a batch, of which
    /// signing (33,204/s on each of 2 cores) takes 15.1 ms: 8.8 µs an entry
    /// of 443 bytes written, less the synced write's share.
    pub commit_ns_per_entry: u64,
    /// A commit's cost per byte, ns. Default 0: the benchmark writes
    /// entries of one size, so their bytes are in the per-entry figure.
    pub commit_ns_per_byte: u64,
    /// The node's cores, shared by its threads. Default 2 (dev-2c).
    pub cores: u32,
}

impl Default for Cost {
    fn default() -> Self {
        Self { verify_ns_per_signature: 22_667, commit_ns: 169_262, commit_ns_per_entry: 8_600, commit_ns_per_byte: 0, cores: 2 }
    }
}

/// Bounds of the `[cost]` fields: (name, least, most).
pub const COST_BOUNDS: [(&str, u64, u64); 5] = [
    ("cost.verify_ns_per_signature", 0, 1_000_000_000),
    ("cost.commit_ns", 0, 10_000_000_000),
    ("cost.commit_ns_per_entry", 0, 1_000_000_000),
    ("cost.commit_ns_per_byte", 0, 1_000_000),
    ("cost.cores", 1, 64),
];

impl Cost {
    /// Each field with its name, for [`COST_BOUNDS`].
    pub fn fields(&self) -> [(&'static str, u64); 5] {
        [
            ("cost.verify_ns_per_signature", self.verify_ns_per_signature),
            ("cost.commit_ns", self.commit_ns),
            ("cost.commit_ns_per_entry", self.commit_ns_per_entry),
            ("cost.commit_ns_per_byte", self.commit_ns_per_byte),
            ("cost.cores", u64::from(self.cores)),
        ]
    }

    /// The first field out of its bounds: (name, value, least, most).
    pub fn out_of_bounds(&self) -> Option<(&'static str, u64, u64, u64)> {
        self.fields().into_iter().zip(COST_BOUNDS).find(|((_, v), (_, lo, hi))| v < lo || v > hi).map(|((name, v), (_, lo, hi))| (name, v, lo, hi))
    }

    /// A check of `entries` entries, ns.
    pub fn verify_cost_ns(&self, entries: usize) -> u64 {
        self.verify_ns_per_signature.saturating_mul(entries as u64)
    }

    /// A commit of `entries` entries of `bytes` bytes in all, ns.
    pub fn commit_cost_ns(&self, entries: usize, bytes: usize) -> u64 {
        self.commit_ns
            .saturating_add(self.commit_ns_per_entry.saturating_mul(entries as u64))
            .saturating_add(self.commit_ns_per_byte.saturating_mul(bytes as u64))
    }
}

/// A node's thread that store work runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    /// The store's read thread (range reads for peers).
    Read,
    /// The store's write thread (imports).
    Write,
    /// The verify workers (responses).
    Check,
}

impl Lane {
    /// Jobs that may wait for it; a job past them is refused.
    pub fn queue_max(self) -> usize {
        match self {
            Lane::Read => STORE_QUEUE_MAX,
            Lane::Write => WRITE_QUEUE_MAX,
            Lane::Check => CHECK_QUEUE_MAX,
        }
    }
}

/// One node's threads and cores, on virtual time (ns).
#[derive(Clone, Debug)]
pub struct Cpu {
    /// When each core is free.
    cores_free_ns: Vec<u64>,
    /// When the read and write threads are free.
    read_free_ns: u64,
    write_free_ns: u64,
    /// When each verify worker is free.
    check_free_ns: Vec<u64>,
    /// Start times of jobs not started yet, per lane (they are its queue).
    waiting: [VecDeque<u64>; 3],
}

impl Cpu {
    /// A node with `cores` cores (its verify workers: as many, at most
    /// [`VERIFY_THREADS_MAX`], as the node starts them).
    pub fn new(cores: u32) -> Self {
        let cores = cores.max(1) as usize;
        Self {
            cores_free_ns: vec![0; cores],
            read_free_ns: 0,
            write_free_ns: 0,
            check_free_ns: vec![0; cores.min(VERIFY_THREADS_MAX)],
            waiting: [VecDeque::new(), VecDeque::new(), VecDeque::new()],
        }
    }

    /// Jobs waiting on `lane` at `now_ns`.
    pub fn queued(&mut self, lane: Lane, now_ns: u64) -> usize {
        let q = &mut self.waiting[lane as usize];
        while q.front().is_some_and(|&start| start <= now_ns) {
            q.pop_front();
        }
        q.len()
    }

    /// Take a job of `cost_ns` on `lane` at `now_ns`: when it is done, or
    /// `None` if its queue is full.
    pub fn take(&mut self, lane: Lane, now_ns: u64, cost_ns: u64) -> Option<u64> {
        if self.queued(lane, now_ns) >= lane.queue_max() {
            return None;
        }
        let (thread, slot) = match lane {
            Lane::Read => (self.read_free_ns, None),
            Lane::Write => (self.write_free_ns, None),
            Lane::Check => {
                let (k, &t) = self.check_free_ns.iter().enumerate().min_by_key(|(_, t)| **t).unwrap_or((0, &0));
                (t, Some(k))
            }
        };
        let (core, &core_free) = self.cores_free_ns.iter().enumerate().min_by_key(|(_, t)| **t).unwrap_or((0, &0));
        let start = now_ns.max(thread).max(core_free);
        let done = start.saturating_add(cost_ns);
        self.cores_free_ns[core] = done;
        match (lane, slot) {
            (Lane::Read, _) => self.read_free_ns = done,
            (Lane::Write, _) => self.write_free_ns = done,
            (Lane::Check, Some(k)) => self.check_free_ns[k] = done,
            (Lane::Check, None) => {}
        }
        if start > now_ns {
            self.waiting[lane as usize].push_back(start);
        }
        Some(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_write_queue_refuses_the_next_import() {
        let mut cpu = Cpu::new(1);
        // One running, WRITE_QUEUE_MAX waiting.
        for _ in 0..=WRITE_QUEUE_MAX {
            assert!(cpu.take(Lane::Write, 0, 1_000).is_some());
        }
        assert_eq!(cpu.take(Lane::Write, 0, 1_000), None);
        // Once one has started, there is room again.
        assert!(cpu.take(Lane::Write, 1_000, 1_000).is_some());
    }

    #[test]
    fn jobs_share_the_cores() {
        let mut cpu = Cpu::new(1);
        assert_eq!(cpu.take(Lane::Write, 0, 500), Some(500));
        // The read waits for the one core.
        assert_eq!(cpu.take(Lane::Read, 0, 0), Some(500));
        let mut two = Cpu::new(2);
        assert_eq!(two.take(Lane::Write, 0, 500), Some(500));
        assert_eq!(two.take(Lane::Read, 0, 0), Some(0));
    }

    #[test]
    fn defaults_are_within_bounds() {
        assert_eq!(Cost::default().out_of_bounds(), None);
        assert_eq!(Cost { cores: 0, ..Cost::default() }.out_of_bounds().map(|b| b.0), Some("cost.cores"));
    }
}
