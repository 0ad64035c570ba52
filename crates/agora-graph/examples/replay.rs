//! Replay harness without the store: the same synthetic debate as
//! `agora-bench graph` (`agora_graph::workload`), so replay can be measured
//! and profiled without building RocksDB.
//!
//! ```sh
//! cargo run --release -p agora-graph --example replay -- [events] [--hash] [--lookups]
//! ```
//!
//! Prints the streamed replay rate (`Graph::replay_encoded`); `--hash` adds the
//! view hash (to check that a layout change leaves the view's bytes alone),
//! `--lookups` the status lookup latency with the whole log loaded.

use agora_core::EntryId;
use agora_graph::{Graph, LogPosition};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let events: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    let log = agora_graph::workload::debate(events, 16);
    let mut rng = agora_core::xorshift::Xorshift64(0x9e37_79b9_7f4a_7c15 ^ 1);
    let encoded: Vec<(EntryId, LogPosition, Option<&[u8]>)> = log.iter().map(|(id, pos, p)| (*id, *pos, Some(&p[..]))).collect();

    // `perf record --delay=-1 --control fifo:CTL` profiles the replay alone
    // when `PERF_CTL` names that fifo.
    let perf = |cmd: &str| {
        if let Ok(path) = std::env::var("PERF_CTL") {
            let _ = std::fs::write(path, cmd);
        }
    };
    if args.iter().any(|a| a == "--decode-only") {
        // The decoding share of the replay: every payload decoded, nothing applied.
        let cpu_start = cpu_ns();
        let mut sink = 0usize;
        for (id, pos, payload) in &encoded {
            let e = agora_graph::LogEvent::from_payload(*id, *pos, *payload);
            sink += matches!(e.body, agora_graph::Body::Event(_)) as usize;
        }
        let cpu = cpu_ns() - cpu_start;
        println!("decode only: {:.0} events/s on-cpu ({:.3} s, {sink} events)", events as f64 / (cpu as f64 / 1e9), cpu as f64 / 1e9);
        return;
    }
    let (rss_before, faults_before) = memory();
    perf("enable\n");
    let cpu_start = cpu_ns();
    let start = Instant::now();
    let graph = Graph::replay_encoded(&encoded);
    let replay = start.elapsed();
    let cpu = cpu_ns() - cpu_start;
    perf("disable\n");
    let (rss_after, faults_after) = memory();
    println!(
        "replay_encoded: {:.0} events/s ({:.3} s, {} nodes, node {} bytes)",
        events as f64 / replay.as_secs_f64(),
        replay.as_secs_f64(),
        graph.len(),
        std::mem::size_of::<agora_graph::Node>()
    );
    println!("on-cpu: {:.0} events/s ({:.3} s on this thread)", events as f64 / (cpu as f64 / 1e9), cpu as f64 / 1e9);
    println!("replay grew the resident set by {} MB ({} minor page faults)", (rss_after - rss_before) >> 20, faults_after - faults_before);
    let memory = graph.memory();
    println!(
        "the graph by part (Graph::memory), bytes per node: {}; total {} MB",
        memory.parts().iter().map(|(name, b)| format!("{name} {:.1}", *b as f64 / graph.len().max(1) as f64)).collect::<Vec<_>>().join(", "),
        memory.total() >> 20
    );
    if args.iter().any(|a| a == "--hist") {
        histogram(&graph);
    }
    if args.iter().any(|a| a == "--hash") {
        let start = Instant::now();
        let hash: String = graph.view_hash().iter().map(|b| format!("{b:02x}")).collect();
        let took = start.elapsed();
        println!("view hash {hash} ({} invalid; {:.0} ms, sorting by id included)", graph.invalid().len(), took.as_secs_f64() * 1e3);
    }
    if args.iter().any(|a| a == "--lookups") {
        let mut lat: Vec<Duration> = Vec::with_capacity(1_000_000);
        let mut sink = 0usize;
        for _ in 0..1_000_000 {
            let id = log[rng.below(log.len())].0;
            let t = Instant::now();
            let Some(n) = graph.node(&id) else { continue };
            sink += n.status() as usize + graph.why(n).len() + n.settled() as usize;
            lat.push(t.elapsed());
        }
        std::hint::black_box(sink);
        lat.sort();
        let p = |q: f64| lat[((lat.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6;
        println!("status lookup: p50 {:.2} us, p99 {:.2} us, max {:.1} us", p(0.5), p(0.99), p(1.0));
    }
}

/// (resident bytes, minor page faults so far) of this process, from /proc.
fn memory() -> (u64, u64) {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let rss_pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesized command name; minflt is field 10 overall.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let minflt: u64 = after.split_whitespace().nth(7).and_then(|v| v.parse().ok()).unwrap_or(0);
    (rss_pages * 4096, minflt)
}

/// Nanoseconds this thread has spent on a CPU (from /proc; the machine is
/// shared, so this separates our time from time spent waiting for a core).
fn cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn histogram(graph: &Graph) {
    let mut touched = [0usize; 6];
    let mut edges = [0usize; 6];
    let mut text = 0usize;
    for n in graph.nodes() {
        touched[(graph.touched_by(n).len() - 1).min(5)] += 1;
        edges[graph.edges(n).len().min(5)] += 1;
        text += graph.text(n).map_or(0, |t| t.len());
    }
    println!("touched (excluding self) 0..5+: {touched:?}\nedges 0..5+: {edges:?}\ntext bytes {text}");
}
