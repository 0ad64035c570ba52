//! `node sync`: full sync of one chain from a node to a fresh node, beside
//! this machine's batch-verify rate.

use super::harness::{agora_json, fill, key_of, new_home, rss_kib, start, wait_until};
use agora_core::verify::verify_signatures;
use agora_core::{AgentKey, SignedEntry};
use anyhow::Result;
use std::path::Path;
use std::time::{Duration, Instant};

/// This machine's batch verification rate for one chain (batches of
/// `VERIFY_BATCH_LEN` signatures of one key, as replication verifies them),
/// one thread: the denominator of the sync figure.
fn batch_verify_rate(key: &AgentKey) -> f64 {
    let mut prev: Option<SignedEntry> = None;
    let entries: Vec<SignedEntry> = (0..4096u64)
        .map(|i| {
            let p = format!("{i:0>256}");
            let e = SignedEntry::sign(agora_core::entry::next_header(key.agent_id(), prev.as_ref(), i, p.as_bytes()).unwrap_or_else(|_| unreachable!()), key);
            prev = Some(e.clone());
            e
        })
        .collect();
    let refs: Vec<&SignedEntry> = entries.iter().collect();
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed() < Duration::from_secs(2) {
        for chunk in refs.chunks(agora_core::limits::VERIFY_BATCH_LEN) {
            let _ = verify_signatures(chunk);
        }
        n += refs.len();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

pub(super) fn run(agora: &Path, entries: usize, payload_bytes: usize) -> Result<()> {
    let a = new_home(agora)?;
    let b = new_home(agora)?;
    let verify_rate = batch_verify_rate(&key_of(&a.path)?);
    fill(&a.path, entries, payload_bytes)?;
    let node_a = start(agora, &a, &a.agent, &[])?;
    let t0 = Instant::now();
    let node_b = start(agora, &b, &a.agent, &[&node_a.addr])?;
    let target = entries as u64;
    wait_until(Duration::from_secs(600), || Ok(node_b.control.max_seq(&a.agent)? >= target))?;
    let elapsed = t0.elapsed();
    let (rss_a, hwm_a) = rss_kib(node_a.child.id())?;
    let (rss_b, hwm_b) = rss_kib(node_b.child.id())?;
    drop(node_b);
    drop(node_a);
    // The receiver's store verifies end to end after the sync.
    let verified = agora_json(agora, &b.path, &["verify"])?;
    let rate = entries as f64 / elapsed.as_secs_f64();
    println!("full sync of {entries} entries ({payload_bytes}-byte payloads), node process to node process over 127.0.0.1 TCP,");
    println!("verified (batched signatures, payload hashes, links) and stored durably (synced WAL):");
    println!("  elapsed (start of the receiving node to its last entry stored): {:.2} s", elapsed.as_secs_f64());
    println!("  sync rate:                          {rate:>10.0} entries/s (target >= 35,000)");
    println!("  this machine's batch verify (1 thread, {} per batch, one key): {verify_rate:>10.0} signatures/s", agora_core::limits::VERIFY_BATCH_LEN);
    println!("  ratio sync / batch verify:          {:>10.2}", rate / verify_rate);
    println!("  receiver store verifies clean:      {}", verified["ok"]);
    println!("  RSS after sync: sender {} MiB (peak {}), receiver {} MiB (peak {})", rss_a / 1024, hwm_a / 1024, rss_b / 1024, hwm_b / 1024);
    Ok(())
}
