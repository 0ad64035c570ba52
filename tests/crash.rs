//! Crash safety at scale: a node is SIGKILLed at random moments, over and
//! over, while writers record through it and while it syncs a peer's
//! chain, and restarted on the same home each time. Every entry it
//! acknowledged (a command that exited 0) must be there afterwards, every
//! chain must verify, and no chain may fork.
//!
//! `AGORA_CRASH_KILLS` (default 100) sets the number of kills and
//! `AGORA_CRASH_SEED` the seed of the kill moments and batch sizes; a failure
//! prints both, so the same schedule can be run again.

mod support;

use agora_core::entry::next_header;
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentKey, SignedEntry, pack};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

/// Entries of the bulk writer's chain the peer takes in before each kill,
/// for the victim to sync while it dies.
const BATCH: usize = 2_000;
/// Concurrent writers recording through the victim.
const WRITERS: usize = 2;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The bulk writer's chain, `rounds * BATCH` entries, as one pack file per
/// round (each continues the chain the previous one ended).
fn batches(key: &AgentKey, rounds: usize, dir: &Path) -> Vec<PathBuf> {
    let mut prev: Option<SignedEntry> = None;
    (0..rounds)
        .map(|r| {
            let path = dir.join(format!("batch-{r}.jsonl"));
            let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            writeln!(out, "{}", pack::header_line()).unwrap();
            for i in 0..BATCH {
                let n = r * BATCH + i;
                let payload = format!("bulk {n:0>200}");
                let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), 1_000 + n as u64, payload.as_bytes()).unwrap(), key);
                writeln!(out, "{}", pack::entry_line(&e, Some(payload.as_bytes()))).unwrap();
                prev = Some(e);
            }
            out.flush().unwrap();
            path
        })
        .collect()
}

/// Ids of `author`'s chain as `home` holds it.
fn chain_ids(home: &Path, author: &str) -> Vec<String> {
    let rows = json(home, &["log", "--author", author, "--limit", "10000000"]);
    rows.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
}

fn author_row(home: &Path, author: &str) -> Option<Value> {
    json(home, &["authors"]).as_array().unwrap().iter().find(|a| a["author"] == author).cloned()
}

#[test]
fn a_node_killed_a_hundred_times_while_recording_and_syncing_loses_nothing_and_never_forks() {
    let kills = env_u64("AGORA_CRASH_KILLS", 100) as usize;
    let seed = env_u64("AGORA_CRASH_SEED", 0x5eed_c0de);
    println!("crash test: {kills} kills, seed {seed} (AGORA_CRASH_KILLS, AGORA_CRASH_SEED)");
    let mut rng = Xorshift64(seed.max(1));

    let (peer, victim) = (Agent::new(), Agent::new());
    let founder = peer.id.clone();
    let bulk = AgentKey::from_seed([7; 32]);
    let bulk_id = bulk.agent_id().to_string();
    admit(&peer, &[&victim]);
    ok(&peer.home, &["admit", &bulk_id, "bulk writer"]);
    let packs = batches(&bulk, kills, peer.home.parent().unwrap());
    let peer_node = Node::start(&peer, &founder, &[]);

    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let started = Instant::now();
    let mut restarts = Duration::ZERO;
    // Kills that cut a sync short: after them the victim held less of the
    // bulk chain than the peer had offered it.
    let mut mid_sync = 0;
    // The round is a number in its own right (how much was offered), not
    // only an index.
    #[allow(clippy::needless_range_loop)]
    for round in 0..kills {
        let restart = Instant::now();
        let mut node = Node::start(&victim, &founder, &[&peer_node.addr]);
        restarts += restart.elapsed();
        if round > 0 && node.max_seq(&bulk_id) < (round * BATCH) as u64 {
            mid_sync += 1;
        }
        // Whatever was acknowledged before this start is here.
        if round % 10 == 0 || round + 1 == kills {
            let held: BTreeSet<String> = chain_ids(&victim.home, &victim.id).into_iter().collect();
            let acked = acknowledged.lock().unwrap().clone();
            let lost: Vec<&String> = acked.iter().filter(|id| !held.contains(*id)).collect();
            assert!(lost.is_empty(), "seed {seed}, round {round}: {} acknowledged entries lost after SIGKILL: {lost:?}", lost.len());
        }
        // The peer takes in a batch of the bulk chain: the victim syncs it.
        ok(&peer.home, &["import", packs[round].to_str().unwrap()]);
        // Writers record through the victim's node until it dies.
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (home, stop, acknowledged) = (victim.home.clone(), stop.clone(), acknowledged.clone());
                std::thread::spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Acquire) {
                        let out = agora(&home, &["--json", "propose", &format!("round {round} writer {w} claim {i}")]);
                        i += 1;
                        // Exit 0 is the acknowledgement. A command cut off
                        // by the kill fails; one that ran on the store after
                        // the node died (node.json left behind) counts too.
                        if out.status.success() {
                            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                            acknowledged.lock().unwrap().push(v["id"].as_str().unwrap().to_string());
                        }
                    }
                })
            })
            .collect();
        // Half the kills come early, while the batch is still syncing.
        let delay = if rng.chance(50) { rng.below_u64(40) } else { rng.below_u64(400) };
        std::thread::sleep(Duration::from_millis(delay));
        node.kill();
        stop.store(true, Ordering::Release);
        for w in writers {
            w.join().unwrap();
        }
    }
    let elapsed = started.elapsed();

    // After the last kill: everything acknowledged is there, the chains
    // verify, and none forks.
    let node = Node::start(&victim, &founder, &[&peer_node.addr]);
    let acked = acknowledged.lock().unwrap().clone();
    let held: BTreeSet<String> = chain_ids(&victim.home, &victim.id).into_iter().collect();
    let lost: Vec<&String> = acked.iter().filter(|id| !held.contains(*id)).collect();
    assert!(lost.is_empty(), "seed {seed}: {} acknowledged entries lost: {lost:?}", lost.len());
    let verify = json(&victim.home, &["verify"]);
    assert_eq!(verify["ok"], true, "seed {seed}: the store verifies after {kills} kills: {verify}");
    for author in [&victim.id, &bulk_id, &peer.id] {
        let row = author_row(&victim.home, author).unwrap_or_else(|| panic!("seed {seed}: no chain of {author}"));
        assert_eq!(row["tips"].as_array().map(Vec::len), Some(1), "seed {seed}: a forked chain after the kills: {row}");
    }
    assert_eq!(json(&victim.home, &["forks"]).as_array().map(Vec::len), Some(0), "seed {seed}: no fork proof");
    // The victim finishes the sync it was killed in, and the peer holds
    // everything the victim acknowledged.
    let total = (kills * BATCH) as u64;
    wait_for("the victim to hold the whole bulk chain", || (node.max_seq(&bulk_id) == total).then_some(()));
    wait_for("the peer to hold every acknowledged entry", || (peer_node.max_seq(&victim.id) as usize == held.len()).then_some(()));
    let peer_ids = chain_ids(&peer.home, &victim.id);
    assert_eq!(peer_ids, chain_ids(&victim.home, &victim.id), "seed {seed}: the peer holds the victim's chain as the victim does");
    println!(
        "crash test: {kills} SIGKILLs survived in {:.1} s ({:.0} ms per restart), {mid_sync} of them mid-sync; {} entries acknowledged, 0 lost; \
         {} entries of the victim's chain ({} written by commands cut off by a kill and not acknowledged); \
         {total} bulk entries synced through the kills; every chain verifies, none forked",
        elapsed.as_secs_f64(),
        restarts.as_secs_f64() * 1e3 / kills as f64,
        acked.len(),
        held.len(),
        held.len() - acked.len(),
    );
}
