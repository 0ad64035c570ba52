//! Reasoning-graph benchmarks: replay rate, status lookup latency, and the
//! latency of a trace that verifies its own entries.

use crate::measure::percentile;
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentKey, EntryId};
use agora_graph::{Event, Graph, LogEvent, LogPosition, TaskState};
use agora_store::{Store, StoreOptions};
use anyhow::Result;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct GraphArgs {
    /// Events in the in-memory log for replay and lookups.
    #[arg(long, default_value_t = 1_000_000)]
    events: usize,
    /// Entries in the on-disk store used for trace latency.
    #[arg(long, default_value_t = 100_000)]
    store_entries: usize,
    /// Status lookups to time.
    #[arg(long, default_value_t = 1_000_000)]
    lookups: usize,
    /// Traces to time.
    #[arg(long, default_value_t = 2_000)]
    traces: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Measure only the replay from payload bytes (for profiling).
    #[arg(long)]
    replay_only: bool,
}

/// CPU time of the calling thread (Linux, from /proc): what the replay itself
/// used, apart from time spent waiting for a core on a loaded machine.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}

/// Resident set of this process in bytes (Linux, from /proc; 0 elsewhere).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) * 4096
}

pub fn run(args: GraphArgs) -> Result<()> {
    // 1. An in-memory log of `events` events by 16 authors.
    let log = agora_graph::workload::debate(args.events, 16);
    let mut rng = Xorshift64(0x9e37_79b9_7f4a_7c15 ^ 1);
    let payload_bytes: usize = log.iter().map(|(_, _, p)| p.len()).sum();

    // 2. Replay straight from payload bytes: decode each event just before
    //    applying it, one core. This is the rebuild-from-the-log figure.
    let encoded: Vec<(EntryId, LogPosition, Option<&[u8]>)> = log.iter().map(|(id, pos, p)| (*id, *pos, Some(&p[..]))).collect();
    let resident_before = resident_bytes();
    let cpu_start = thread_cpu();
    let start = Instant::now();
    let streamed = Graph::replay_encoded(&encoded);
    let replay = start.elapsed();
    let replay_cpu = thread_cpu().map(|end| end.saturating_sub(cpu_start.unwrap_or_default()));
    let replay_mb = resident_bytes().saturating_sub(resident_before) / 1_000_000;
    let replay_rate = args.events as f64 / replay.as_secs_f64();
    // On a shared machine the wall clock includes time spent waiting for a
    // core; the thread's own CPU time does not.
    let replay_cpu_rate = replay_cpu.map(|c| args.events as f64 / c.as_secs_f64());
    if args.replay_only {
        println!(
            "replay from payload bytes, streamed: {:.0} events/s ({:.2} s, {} nodes; on-cpu {:.0} events/s; resident +{} MB)",
            replay_rate,
            replay.as_secs_f64(),
            streamed.len(),
            replay_cpu_rate.unwrap_or(f64::NAN),
            replay_mb
        );
        return Ok(());
    }
    let streamed_hash = streamed.view_hash();
    drop(streamed);
    drop(encoded);

    // The same in two phases: decode everything, then apply.
    let start = Instant::now();
    let events: Vec<LogEvent> = log.iter().map(|(id, pos, p)| LogEvent::from_payload(*id, *pos, Some(p))).collect();
    let decode = start.elapsed();
    let for_incremental = events.clone();
    let start = Instant::now();
    let graph = Graph::replay(events);
    let apply = start.elapsed();
    assert_eq!(graph.len(), args.events, "every event applied");
    let invalid = graph.invalid().len();
    assert_eq!(graph.view_hash(), streamed_hash, "both replays build the same view");
    let two_phase_rate = args.events as f64 / (decode + apply).as_secs_f64();
    let apply_rate = args.events as f64 / apply.as_secs_f64();

    // Incremental application in log order gives the same view, bit for bit.
    let mut incremental = Graph::new();
    let mut sorted = for_incremental;
    sorted.sort_by_key(|e| (e.pos, e.id));
    for e in sorted {
        incremental.apply(e);
    }
    assert_eq!(incremental.view_hash(), graph.view_hash(), "incremental view differs from replay");

    // 3. Status lookups with the whole log loaded.
    let mut lat = Vec::with_capacity(args.lookups);
    let mut sink = 0usize;
    for _ in 0..args.lookups {
        let id = log[rng.below(log.len())].0;
        let t = Instant::now();
        let n = graph.node(&id).expect("node exists");
        sink += n.status() as usize + graph.why(n).len() + n.settled() as usize;
        lat.push(t.elapsed());
    }
    std::hint::black_box(sink);
    lat.sort();

    // 4. Traces against a real store: a node touched by 10 events, verified.
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path().join("store"), &StoreOptions { create: true, sync: false, ..Default::default() })?;
    let key = AgentKey::from_seed([3; 32]);
    let mut known = agora_graph::workload::Debate::default();
    let mut rng = Xorshift64(42);
    let mut target: Option<EntryId> = None;
    let mut touches = 0;
    let mut written = 0;
    let batch = 1000;
    while written < args.store_entries {
        let n = batch.min(args.store_entries - written);
        let mut evs = Vec::with_capacity(n);
        for j in 0..n {
            let i = written + j;
            // The traced node is a task, which the random debate never refers
            // to; every 10,000 entries one more update touches it, so its
            // trace is exactly 10 events, spread across the store.
            let ev = match target {
                None if i == 1_000 => Event::Task { objective: "ship pricing v2".into(), owner_scope: "team:growth".into() },
                Some(t) if i % 10_000 == 5_000 && touches < 9 => {
                    touches += 1;
                    let state = if touches % 2 == 0 { TaskState::Blocked } else { TaskState::InProgress };
                    Event::TaskUpdate { task: t, state, note: format!("update {touches}") }
                }
                _ => known.make(&mut rng, i),
            };
            evs.push(ev);
        }
        let payloads: Vec<Vec<u8>> = evs.iter().map(Event::encode).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
        let entries = store.append_batch(&key, &refs, written as u64)?;
        for (e, ev) in entries.iter().zip(&evs) {
            known.record(e.id(), ev);
            if target.is_none() && matches!(ev, Event::Task { .. }) {
                target = Some(e.id());
            }
        }
        written += n;
    }
    let target = target.expect("the traced task was written");
    // No roster entries in this store: the founder's chain is empty.
    let graph_on_disk = agora_view::load_graph(&store, key.agent_id())?;
    let touched = graph_on_disk.node(&target).map_or(0, |n| graph_on_disk.touched_by(n).len());
    let mut trace_lat = Vec::with_capacity(args.traces);
    for _ in 0..args.traces {
        let t = Instant::now();
        let traced = agora_view::trace(&store, &graph_on_disk, &target)?;
        trace_lat.push(t.elapsed());
        assert_eq!(traced.len(), touched);
    }
    trace_lat.sort();

    let us = |d: Duration| d.as_secs_f64() * 1e6;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "events": args.events, "payload_bytes": payload_bytes, "invalid_events": invalid,
                "replay_events_per_s": replay_rate.round(), "replay_on_cpu_events_per_s": replay_cpu_rate.map(f64::round), "replay_resident_mb": replay_mb,
                "two_phase_events_per_s": two_phase_rate.round(), "apply_only_events_per_s": apply_rate.round(),
                "node_bytes": std::mem::size_of::<agora_graph::Node>(),
                "status_lookup_us": { "p50": us(percentile(&lat, 0.5)), "p99": us(percentile(&lat, 0.99)), "max": us(*lat.last().expect("lookups")) },
                "trace": { "store_entries": written, "events_in_trace": touched,
                           "p50_us": us(percentile(&trace_lat, 0.5)), "p99_us": us(percentile(&trace_lat, 0.99)) },
            })
        );
    } else {
        println!("graph of {} events ({} MB of payloads, {} invalid by the rules), one core", args.events, payload_bytes / 1_000_000, invalid);
        println!(
            "replay from payload bytes, streamed:        {:>10.0} events/s  ({:.2} s; on-cpu {:.0} events/s; resident +{} MB)",
            replay_rate,
            replay.as_secs_f64(),
            replay_cpu_rate.unwrap_or(f64::NAN),
            replay_mb
        );
        println!(
            "replay in two phases (decode all, apply):   {:>10.0} events/s  (decode {:.2} s, apply {:.2} s)",
            two_phase_rate,
            decode.as_secs_f64(),
            apply.as_secs_f64()
        );
        println!("apply only (decoded events):                {:>10.0} events/s", apply_rate);
        println!(
            "status lookup (status + why + settled), {} lookups: p50 {:.2} us, p99 {:.2} us, max {:.1} us",
            args.lookups,
            us(percentile(&lat, 0.5)),
            us(percentile(&lat, 0.99)),
            us(*lat.last().expect("lookups"))
        );
        println!(
            "trace of a node touched by {} events in a {}-entry store, verified (batch signatures, payload hashes, chain links), {} runs: p50 {:.0} us, p99 {:.0} us",
            touched,
            written,
            args.traces,
            us(percentile(&trace_lat, 0.5)),
            us(percentile(&trace_lat, 0.99))
        );
    }
    Ok(())
}
