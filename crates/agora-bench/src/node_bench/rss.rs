//! `node rss`: resident memory of a node holding many entries, idle and
//! while serving and receiving a full sync.

use super::harness::{agora_json, fill, new_home, rss_kib, start, wait_until};
use anyhow::Result;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) fn run(agora: &Path, entries: usize, payload_bytes: usize) -> Result<()> {
    let a = new_home(agora)?;
    let b = new_home(agora)?;
    fill(&a.path, entries, payload_bytes)?;
    let node_a = start(agora, &a, &a.agent, &[])?;
    // Idle once its views are built: the first answer from the merged view
    // waits for the build that every node does at start.
    agora_json(agora, &a.path, &["view-hash"])?;
    std::thread::sleep(Duration::from_secs(2));
    let (idle, idle_hwm) = rss_kib(node_a.child.id())?;
    let t0 = Instant::now();
    let node_b = start(agora, &b, &a.agent, &[&node_a.addr])?;
    let target = entries as u64;
    let mut peak_a = 0;
    let mut peak_b = 0;
    wait_until(Duration::from_secs(3600), || {
        peak_a = peak_a.max(rss_kib(node_a.child.id())?.0);
        peak_b = peak_b.max(rss_kib(node_b.child.id())?.0);
        Ok(node_b.control.max_seq(&a.agent)? >= target)
    })?;
    let took = t0.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let (after_b, hwm_b) = rss_kib(node_b.child.id())?;
    let status_b = node_b.control.status()?;
    let store_memory = status_b["store_memory"].clone();
    let allocator = |k: &str| status_b["memory"][k].as_u64().unwrap_or(0) >> 20;
    let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", node_b.child.id())).unwrap_or_default();
    let rollup_mib = |name: &str| -> u64 {
        rollup.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) / 1024
    };
    let (anon_b, file_b) = (rollup_mib("Anonymous:"), rollup_mib("Rss:").saturating_sub(rollup_mib("Anonymous:")));
    let (_, hwm_a) = rss_kib(node_a.child.id())?;
    println!("node memory holding {entries} entries ({payload_bytes}-byte payloads):");
    println!("  sender, idle after start (views built): RSS {} MiB (peak so far {} MiB: the merged view built from the store)", idle / 1024, idle_hwm / 1024);
    println!("  sender, serving a full sync:        peak RSS {} MiB (VmHWM {} MiB)", peak_a / 1024, hwm_a / 1024);
    println!("  receiver, during the sync:          peak RSS {} MiB (VmHWM {} MiB)", peak_b / 1024, hwm_b / 1024);
    println!("  receiver, holding all of them:      RSS {} MiB ({anon_b} MiB anonymous, {file_b} MiB file-backed)", after_b / 1024);
    println!(
        "    of which the allocator: {} MiB allocated, {} MiB resident ({} MiB its metadata)",
        allocator("allocated"),
        allocator("resident"),
        allocator("metadata")
    );
    let mib = |k: &str| store_memory[k].as_u64().unwrap_or(0) as f64 / f64::from(1 << 20);
    println!(
        "    of which RocksDB: memtables {:.0} MiB, block cache {:.0} MiB ({:.0} pinned), table readers {:.0} MiB",
        mib("memtables_bytes"),
        mib("block_cache_bytes"),
        mib("block_cache_pinned_bytes"),
        mib("table_readers_bytes")
    );
    println!("  (sync took {:.1} s = {:.0} entries/s; target: RSS < 150 MiB)", took.as_secs_f64(), entries as f64 / took.as_secs_f64());
    Ok(())
}
