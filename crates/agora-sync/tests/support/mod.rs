//! What the replicator's tests on virtual time share: a signed chain to
//! sync, and the next moment a test's loop runs (a message due or the
//! node's timer).
#![allow(dead_code)]

use agora_core::entry::next_header;
use agora_core::{AgentKey, SignedEntry};

/// `n` entries of the chain of the key made from `seed`, with their
/// payloads (`event <i>`), one ms apart.
pub fn chain(seed: u8, n: usize) -> Vec<(SignedEntry, Vec<u8>)> {
    let key = AgentKey::from_seed([seed; 32]);
    let mut out: Vec<(SignedEntry, Vec<u8>)> = Vec::with_capacity(n);
    for i in 0..n {
        let payload = format!("event {i}").into_bytes();
        let header = next_header(key.agent_id(), out.last().map(|(e, _)| e), 1_000 + i as u64, &payload).expect("header");
        out.push((SignedEntry::sign(header, &key), payload));
    }
    out
}

/// The next moment of a run: the earlier of the next message due and the
/// node's timer; `None` when neither is pending.
pub fn next_time(next_event: Option<u64>, next_tick: Option<u64>) -> Option<u64> {
    match (next_event, next_tick) {
        (Some(e), Some(k)) => Some(e.min(k)),
        (e, k) => e.or(k),
    }
}
