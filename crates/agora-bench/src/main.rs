//! `agora-bench`: throughput of durable appends and of verifying stored
//! entries, each printed beside this machine's raw Ed25519 rates measured in the
//! same run, so every figure is also a ratio to what the hardware allows.
//!
//! Run: `cargo run --release -p agora-bench -- store --entries 100000`
//! and `cargo run --release -p agora-bench -- graph --events 1000000`
//! and `cargo run --release -p agora-bench -- merge --agents 100 --events-per-agent 10000`
//! and `cargo run --release -p agora-bench -- sim --agents 10,100,1000,10000`.

use agora_core::AgentKey;
use agora_store::{Store, StoreOptions};
use anyhow::Result;
use clap::Parser;
use ed25519_dalek::{Signer, SigningKey};
use measure::rate;
use std::time::{Duration, Instant};

/// The allocator and options of the `agora` binary (see `node/src/main.rs`),
/// so that what is timed here allocates as it does in a node (and the
/// simulator measures each node's memory as `agora sim` does).
#[global_allocator]
static ALLOCATOR: agora_sim::heap::Metered<tikv_jemallocator::Jemalloc> = agora_sim::heap::Metered(tikv_jemallocator::Jemalloc);

#[used]
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 60] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

mod automerge_bench;
mod graph_bench;
mod keys_bench;
mod late_bench;
mod live_bench;
mod measure;
mod merge_bench;
mod node_bench;
mod sim_bench;

#[derive(Parser)]
#[command(about = "Agora benchmarks: store (appends, verification), graph (replay, lookups, trace) and merge (merged-view recompute)")]
enum Bench {
    /// Durable appends and verification of stored entries, against raw ed25519 rates.
    Store(Args),
    /// Reasoning-graph replay, status lookups and verified traces.
    Graph(graph_bench::GraphArgs),
    /// Late arrivals into a live reasoning graph (its journal rewound around
    /// them), against what a graph without one could not take in place.
    Late(late_bench::LateArgs),
    /// Real node processes: full sync, gossip latency, memory.
    Node(node_bench::NodeArgs),
    /// Recompute of the merged view (merge layer) of a synthetic swarm.
    Merge(merge_bench::MergeArgs),
    /// The live merged view: built once, then kept current entry by entry.
    Live(live_bench::LiveArgs),
    /// The merged view published as an Automerge document from the live
    /// view, republished after each arrival, against republishing by recompute.
    Automerge(automerge_bench::AutomergeArgs),
    /// Keys: verifying chains with rotations against chains without, and
    /// which key signed an entry in a store of many agents' key histories.
    Keys(keys_bench::KeysArgs),
    /// The swarm simulator: wall time, entries per second and peak memory of
    /// a scenario (by default a thousand agents), optionally at several sizes.
    Sim(sim_bench::SimArgs),
}

#[derive(clap::Args)]
struct Args {
    /// Entries in the stored chain used for batch-append and verification.
    #[arg(long, default_value_t = 100_000)]
    entries: usize,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 256)]
    payload_bytes: usize,
    /// Entries per append batch (one synced write each).
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Single synced appends to time.
    #[arg(long, default_value_t = 2000)]
    single_appends: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

struct Row {
    name: String,
    per_s: f64,
    denominator: &'static str,
    ratio: f64,
}

fn main() -> Result<()> {
    match Bench::parse() {
        Bench::Store(args) => store_bench(args),
        Bench::Graph(args) => graph_bench::run(args),
        Bench::Late(args) => late_bench::run(args),
        Bench::Node(args) => node_bench::run(args),
        Bench::Merge(args) => merge_bench::run(args),
        Bench::Live(args) => live_bench::run(args),
        Bench::Automerge(args) => automerge_bench::run(args),
        Bench::Sim(args) => sim_bench::run(args),
        Bench::Keys(args) => keys_bench::run(args),
    }
}

fn store_bench(args: Args) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let min = Duration::from_secs(2);

    // Raw ed25519 on this machine, one thread. Messages the size of a header plus
    // the signing domain, so the hashing work matches what an entry costs.
    let sk = SigningKey::from_bytes(&[7; 32]);
    let msg = [0x5au8; 14 + 110];
    let raw_sign = rate(min, 1, || {
        std::hint::black_box(sk.sign(std::hint::black_box(&msg)));
    });
    // As many as Agora verifies in one batch (dalek's batch gets the first 64).
    let batch_len = agora_core::limits::VERIFY_BATCH_LEN;
    let sigs: Vec<_> = (0..batch_len)
        .map(|i| {
            let mut m = msg;
            m[0] = i as u8;
            m[1] = (i >> 8) as u8;
            (m, sk.sign(&m))
        })
        .collect();
    let msgs: Vec<&[u8]> = sigs.iter().map(|(m, _)| &m[..]).collect();
    let sig_list: Vec<_> = sigs.iter().map(|(_, s)| *s).collect();
    let keys = vec![sk.verifying_key(); 64];
    let raw_batch = rate(min, 64, || {
        ed25519_dalek::verify_batch(&msgs[..64], &sig_list[..64], &keys).expect("valid batch");
    });
    let raw_single = rate(min, 1, || {
        keys[0].verify_strict(msgs[0], &sig_list[0]).expect("valid");
    });

    // Agora's own batch primitive on a batch of VERIFY_BATCH_LEN signatures (one
    // key, as in a chain): the ceiling for verifying stored entries on one thread.
    let pk = agora_core::signature::PublicKey::from_bytes(sk.verifying_key().as_bytes()).expect("valid key");
    let sig_bytes: Vec<[u8; 64]> = sig_list.iter().map(|s| s.to_bytes()).collect();
    let items: Vec<agora_core::signature::BatchItem<'_>> =
        msgs.iter().zip(&sig_bytes).map(|(m, s)| agora_core::signature::BatchItem { key: &pk, message: [b"", m], signature: s }).collect();
    let agora_batch = rate(min, batch_len, || {
        agora_core::signature::verify_batch(&items).expect("valid batch");
    });

    let dir = tempfile::tempdir()?;
    // The disk's limit for one-at-a-time durability: synced RocksDB writes of
    // an entry-sized record.
    let raw_synced_writes = {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        let db = rocksdb::DB::open(&opts, dir.path().join("raw"))?;
        let mut wo = rocksdb::WriteOptions::default();
        wo.set_sync(true);
        let value = vec![0u8; 187 + args.payload_bytes];
        let n = args.single_appends;
        let start = Instant::now();
        for i in 0..n {
            db.put_opt((i as u64).to_be_bytes(), &value, &wo)?;
        }
        n as f64 / start.elapsed().as_secs_f64()
    };
    let key = AgentKey::from_seed([9; 32]);
    let payload = vec![0xabu8; args.payload_bytes];
    let mut rows = Vec::new();

    // Single durable appends: one synced WAL write each.
    {
        let store = Store::open(dir.path().join("single"), &StoreOptions { create: true, sync: true, ..Default::default() })?;
        let start = Instant::now();
        for i in 0..args.single_appends {
            store.append(&key, &payload, i as u64)?;
        }
        let per_s = args.single_appends as f64 / start.elapsed().as_secs_f64();
        rows.push(Row { name: "append, one synced write each".into(), per_s, denominator: "raw sign/s (1 thread)", ratio: per_s / raw_sign });
        rows.push(Row { name: "append, one synced write each".into(), per_s, denominator: "raw synced RocksDB writes/s", ratio: per_s / raw_synced_writes });
    }

    // Batched durable appends (group commit), then verification of that store.
    let store = Store::open(dir.path().join("batched"), &StoreOptions { create: true, sync: true, ..Default::default() })?;
    let payload_refs: Vec<&[u8]> = vec![&payload[..]; args.batch];
    let start = Instant::now();
    let mut written = 0;
    while written < args.entries {
        let n = args.batch.min(args.entries - written);
        store.append_batch(&key, &payload_refs[..n], written as u64)?;
        written += n;
    }
    let per_s = written as f64 / start.elapsed().as_secs_f64();
    rows.push(Row {
        name: format!("append, batches of {} (one synced write per batch)", args.batch),
        per_s,
        denominator: "raw sign/s (1 thread)",
        ratio: per_s / raw_sign,
    });

    for threads in [1, cores] {
        let start = Instant::now();
        let report = store.audit(None, threads)?;
        let secs = start.elapsed().as_secs_f64();
        assert!(report.is_clean(), "benchmark store failed verification");
        assert_eq!(report.entries(), written as u64);
        let per_s = written as f64 / secs;
        rows.push(Row {
            name: format!("verify stored entries, {threads} thread(s)"),
            per_s,
            denominator: "raw batch-verify/s x threads",
            ratio: per_s / (raw_batch * threads as f64),
        });
        rows.push(Row {
            name: format!("verify stored entries, {threads} thread(s)"),
            per_s,
            denominator: "agora batch primitive/s x threads",
            ratio: per_s / (agora_batch * threads as f64),
        });
        if cores == 1 {
            break;
        }
    }

    if args.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|r| serde_json::json!({ "name": r.name, "per_s": r.per_s.round(), "denominator": r.denominator, "ratio": (r.ratio * 100.0).round() / 100.0 }))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "cores": cores, "entries": written, "payload_bytes": args.payload_bytes,
                "raw_sign_per_s": raw_sign.round(), "raw_verify_strict_per_s": raw_single.round(),
                "raw_batch_verify_per_s": raw_batch.round(), "agora_batch_verify_per_s": agora_batch.round(),
                "raw_synced_writes_per_s": raw_synced_writes.round(), "results": rows,
            })
        );
    } else {
        println!("machine: {cores} core(s); chain of {written} entries with {}-byte payloads", args.payload_bytes);
        println!("raw ed25519 (1 thread): sign {:.0}/s, verify_strict {:.0}/s, dalek verify_batch(64) {:.0}/s", raw_sign, raw_single, raw_batch);
        println!("agora batch primitive ({batch_len} signatures, one key, 1 thread): {:.0}/s", agora_batch);
        println!("raw synced RocksDB writes of {} bytes: {:.0}/s", 187 + args.payload_bytes, raw_synced_writes);
        println!("{:<58} {:>12} {:>8}  denominator", "measurement", "per second", "ratio");
        for r in &rows {
            println!("{:<58} {:>12.0} {:>8.2}  {}", r.name, r.per_s, r.ratio, r.denominator);
        }
    }
    Ok(())
}
