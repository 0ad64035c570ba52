//! What the simulator's tests share: small chains and configurations.
#![allow(dead_code)]

use agora_core::{AgentKey, SignedEntry};
pub use agora_sim::*;
use agora_sync::{Config, Head, RangeStart};

/// `n` entries appended to `key`'s chain in `store`.
pub fn chain(store: &mut MemStore, key: &AgentKey, n: usize, now_ms: u64) {
    for i in 0..n {
        store.append(key, format!("event {i}").as_bytes(), now_ms);
    }
}

/// The replicator's defaults with ranges of 100.
pub fn small() -> Config {
    Config { range_limit: 100, ..Config::default() }
}

/// A head of `e`.
pub fn head(e: &SignedEntry) -> Head {
    Head { author: e.header().author, seq: e.header().seq, id: e.id() }
}

/// The start of a whole seq.
pub fn at(seq: u64) -> RangeStart {
    RangeStart::at(seq)
}
