//! `node views`: merge-layer reads through a running node holding the merge
//! bench's swarm, and the node's memory.

use super::harness::{Node, agora_cmd, agora_json, new_home, rss_kib, start, store_swarm};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) fn run(agora: &Path, agents: usize, per_agent: usize, rounds: usize) -> Result<()> {
    let home = new_home(agora)?;
    let n = store_swarm(agora, &home, agents, per_agent)?;
    let t = Instant::now();
    let node = start(agora, &home, &home.agent, &[])?;
    let ready = t.elapsed();
    // The first answer waits for the view built at start.
    let t = Instant::now();
    agora_json(agora, &home.path, &["view-hash"])?;
    let built = t.elapsed();
    // Memory at points of the run: RSS, and what the allocator says the
    // node's structures hold (allocated) and keeps resident.
    let mut memory: Vec<(&str, String)> = Vec::new();
    let mut memory_at = |what: &'static str, node: &Node| -> Result<()> {
        std::thread::sleep(Duration::from_secs(2)); // freed pages go back within a second
        let (rss, _) = rss_kib(node.child.id())?;
        let status = node.control.status()?;
        let (m, store) = (&status["memory"], &status["store_memory"]);
        let mib = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0) >> 20;
        // The resident set's anonymous and file-backed parts (the program's
        // pages), and what RocksDB holds outside the allocator.
        let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", node.child.id())).unwrap_or_default();
        let rollup_mib = |name: &str| -> u64 {
            rollup.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) / 1024
        };
        let (anon, file) = (rollup_mib("Anonymous:"), rollup_mib("Rss:").saturating_sub(rollup_mib("Anonymous:")));
        memory.push((
            what,
            format!(
                "RSS {} MiB ({anon} anonymous, {file} file-backed); allocated {} MiB, resident {} MiB, metadata {} MiB; RocksDB: block cache {} MiB, memtables {} MiB, table readers {} MiB",
                rss / 1024,
                mib(m, "allocated"),
                mib(m, "resident"),
                mib(m, "metadata"),
                mib(store, "block_cache_bytes"),
                mib(store, "memtables_bytes"),
                mib(store, "table_readers_bytes"),
            ),
        ));
        Ok(())
    };
    memory_at("the live merged view built", &node)?;
    // A reasoning read builds the node's reasoning graph (on first use).
    let probe = agora_json(agora, &home.path, &["propose", "memory probe"])?;
    agora_json(agora, &home.path, &["status", probe["id"].as_str().context("propose printed no id")?])?;
    memory_at("the reasoning graph built too", &node)?;
    let timed_as = |json: bool, args: &[&str]| -> Result<Duration> {
        let t = Instant::now();
        let mut cmd = agora_cmd(agora, &home.path);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.args(args).output()?;
        let took = t.elapsed();
        // `audit` exits 3 on a chain with forks, which the swarm has.
        let audited = args.first() == Some(&"audit") && out.status.code() == Some(3);
        if !out.status.success() && !audited {
            bail!("agora {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(took)
    };
    let timed = |args: &[&str]| timed_as(true, args);
    let timed_op = |name: &str, input: Value| -> Result<Duration> {
        let t = Instant::now();
        let (status, v) = node.control.op(name, &input)?;
        let took = t.elapsed();
        if status != 200 {
            bail!("{name}: {status} {v}");
        }
        Ok(took)
    };
    let (mut hash_http, mut consensus_http) = (Vec::new(), Vec::new());
    // The floor: a command the node answers without reading any view.
    let (mut hash, mut consensus, mut consensus_json, mut floor) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut consensus_summary, mut consensus_summary_http) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        timed(&["propose", &format!("live view round {i}")])?;
        hash.push(timed(&["view-hash"])?);
        consensus.push(timed_as(false, &["consensus", "--quorum", "2"])?);
        consensus_json.push(timed(&["consensus", "--quorum", "2"])?);
        floor.push(timed(&["node", "status"])?);
        hash_http.push(timed_op("view_hash", serde_json::json!({}))?);
        consensus_http.push(timed_op("consensus", serde_json::json!({ "quorum": 2 }))?);
        consensus_summary.push(timed(&["consensus", "--quorum", "2", "--summary"])?);
        consensus_summary_http.push(timed_op("consensus", serde_json::json!({ "quorum": 2, "summary": true }))?);
    }
    // The node's agent accepts the first half of every chain of the swarm,
    // so its perspective holds about half the history; asked once, it is
    // built by replay, then kept current with every update.
    let chains: Vec<(String, u64)> = agora_json(agora, &home.path, &["consensus", "--quorum", "1"])?["chains"]
        .as_array()
        .context("consensus printed no chains")?
        .iter()
        .filter_map(|c| Some((c["author"].as_str()?.to_string(), c["view_len"].as_u64()?)))
        .filter(|(a, len)| *a != home.agent && *len >= 2)
        .collect();
    for (author, len) in &chains {
        timed(&["accept", author, &(len / 2).to_string()])?;
    }
    let t = Instant::now();
    let first = agora_json(agora, &home.path, &["perspective", "--summary"])?;
    let perspective_built = t.elapsed();
    let perspective_nodes = first["node_count"].as_u64().unwrap_or(0);
    memory_at("the perspective built", &node)?;
    let (mut perspective, mut perspective_http) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        timed(&["propose", &format!("perspective round {i}")])?;
        perspective.push(timed(&["perspective", "--summary"])?);
        perspective_http.push(timed_op("perspective", serde_json::json!({ "summary": true }))?);
    }
    // An accept that reaches further into another chain's history: the
    // perspective takes in events older than its last one, and is replayed.
    // The view thread drops the perspective rather than replay it, so a
    // read of the merged view right after does not wait for the replay;
    // the perspective is replayed when it is next asked for.
    let reach_back = match chains.first() {
        Some((author, len)) => {
            timed(&["accept", author, &len.to_string()])?;
            let hash_after = timed(&["view-hash"])?;
            Some((hash_after, timed(&["perspective", "--summary"])?))
        }
        None => None,
    };
    memory_at("the perspective replayed after the accept", &node)?;
    // Audits of whole chains (10,000 entries each in the swarm): the chain
    // read and checked again, the merge events about it from the live view.
    let mut audit = Vec::new();
    for (i, (author, _)) in chains.iter().cycle().take(rounds.min(50)).enumerate() {
        timed(&["propose", &format!("audit round {i}")])?;
        audit.push(timed(&["audit", author])?);
    }
    memory_at("the audits read", &node)?;
    // The disagreement map (every open dispute with the reasoning that led
    // to it, every fork with who accepts and builds on each side): the
    // first ask indexes the references into forked chains (one pass over
    // the store), later ones read the disputed entries, their ancestors and
    // the forked chains only.
    let disputes_first = timed(&["disputes"])?;
    // What it prints: every disputed event lists every agent that accepts it.
    let map = agora_json(agora, &home.path, &["disputes"])?;
    let map_bytes = serde_json::to_vec(&map)?.len();
    let listed = |field: &str| map["disputed"].as_array().map_or(0, |d| d.iter().map(|x| x[field].as_array().map_or(0, Vec::len)).sum::<usize>());
    let (map_events, map_acceptors) = (map["disputed"].as_array().map_or(0, Vec::len), listed("accepted_by"));
    drop(map);
    let (mut disputes, mut disputes_summary) = (Vec::new(), Vec::new());
    for i in 0..rounds.min(50) {
        timed(&["propose", &format!("disputes round {i}")])?;
        disputes.push(timed(&["disputes"])?);
        disputes_summary.push(timed(&["disputes", "--summary"])?);
    }
    let summary_bytes = serde_json::to_vec(&agora_json(agora, &home.path, &["disputes", "--summary"])?)?.len();
    memory_at("the disagreement maps read", &node)?;
    // The start-up floor of each program: the command line that forwards,
    // and the full program it hands local commands to.
    let full = agora.with_file_name("agora-node");
    let (mut start_client, mut start_full) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        for (program, out) in [(agora, &mut start_client), (full.as_path(), &mut start_full)] {
            let t = Instant::now();
            let status = std::process::Command::new(program).arg("--version").stdout(std::process::Stdio::null()).status()?;
            out.push(t.elapsed());
            if !status.success() {
                bail!("{} --version failed", program.display());
            }
        }
    }
    for v in [&mut perspective, &mut perspective_http, &mut audit, &mut disputes, &mut disputes_summary, &mut start_client, &mut start_full] {
        v.sort();
    }
    for v in
        [&mut hash, &mut consensus, &mut consensus_json, &mut floor, &mut hash_http, &mut consensus_http, &mut consensus_summary, &mut consensus_summary_http]
    {
        v.sort();
    }
    memory_at("at the end of the reads", &node)?;
    // Where the views' memory goes, as each view counts it.
    let views_memory = node.control.memory()?;
    let (rss, hwm) = rss_kib(node.child.id())?;
    // The same audit with no node: the command reads every entry and
    // recomputes the merge.
    drop(node);
    let audit_by_hand = match chains.first() {
        Some((author, _)) => Some(timed(&["audit", author])?),
        None => None,
    };
    let disputes_by_hand = timed(&["disputes"])?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let q = |v: &[Duration], p: f64| ms(crate::measure::percentile(v, p));
    println!("a node holding {n} entries ({agents} agents x {per_agent} events, the merge bench's swarm):");
    println!("  start: ready in {:.2} s; first view-hash answered {:.2} s later (the live merged view built once)", ready.as_secs_f64(), built.as_secs_f64());
    println!("  after each of {rounds} new entries (`agora propose` through the node), whole `agora --json` commands:");
    println!("    view-hash:            p50 {:.1} ms, p99 {:.1} ms", q(&hash, 0.5), q(&hash, 0.99));
    println!("    consensus --quorum 2 (text: one line per chain): p50 {:.1} ms, p99 {:.1} ms", q(&consensus, 0.5), q(&consensus, 0.99));
    println!("    consensus --quorum 2 --json (every disputed event listed): p50 {:.1} ms, p99 {:.1} ms", q(&consensus_json, 0.5), q(&consensus_json, 0.99));
    println!("  the same through the HTTP API (POST /v1/ops/<name>, JSON answers, no process started):");
    println!("    view_hash:            p50 {:.1} ms, p99 {:.1} ms", q(&hash_http, 0.5), q(&hash_http, 0.99));
    println!("    consensus quorum 2:   p50 {:.1} ms, p99 {:.1} ms (every disputed event listed)", q(&consensus_http, 0.5), q(&consensus_http, 0.99));
    println!(
        "    consensus quorum 2, summary (disputed events counted): p50 {:.1} ms, p99 {:.1} ms; the same as a whole `agora --json consensus --quorum 2 --summary`: p50 {:.1} ms, p99 {:.1} ms",
        q(&consensus_summary_http, 0.5),
        q(&consensus_summary_http, 0.99),
        q(&consensus_summary, 0.5),
        q(&consensus_summary, 0.99)
    );
    println!(
        "  perspective of the node's agent ({perspective_nodes} nodes): built when first asked in {:.2} s, then kept current",
        perspective_built.as_secs_f64()
    );
    println!(
        "    perspective --summary: p50 {:.1} ms, p99 {:.1} ms; through the HTTP API p50 {:.1} ms, p99 {:.1} ms",
        q(&perspective, 0.5),
        q(&perspective, 0.99),
        q(&perspective_http, 0.5),
        q(&perspective_http, 0.99)
    );
    if let Some((hash_after, d)) = reach_back {
        println!(
            "    after an accept that reaches further back into a chain: view-hash {:.1} ms (the perspective is not replayed on the view thread); the perspective, replayed when next asked: {:.0} ms",
            ms(hash_after),
            ms(d)
        );
    }
    println!("  audit <chain> (one of {} chains, after a new entry each time): p50 {:.1} ms, p99 {:.1} ms", chains.len(), q(&audit, 0.5), q(&audit, 0.99));
    if let Some(d) = audit_by_hand {
        println!("    the same audit with the node stopped (every entry read, the merge recomputed): {:.0} ms", ms(d));
    }
    println!(
        "  disputes (the whole disagreement map, JSON: {map_events} disputed events, {map_acceptors} acceptors listed, {:.0} MB): first {:.0} ms (references into forked chains indexed), then after each of {} new entries p50 {:.1} ms, p99 {:.1} ms; with the node stopped (every entry read, the merge recomputed): {:.0} ms",
        map_bytes as f64 / 1e6,
        ms(disputes_first),
        disputes.len(),
        q(&disputes, 0.5),
        q(&disputes, 0.99),
        ms(disputes_by_hand)
    );
    println!(
        "    disputes --summary (acceptors and fork sides' entries counted, {:.1} MB): p50 {:.1} ms, p99 {:.1} ms",
        summary_bytes as f64 / 1e6,
        q(&disputes_summary, 0.5),
        q(&disputes_summary, 0.99)
    );
    println!("    node status (floor: a command that reads no view): p50 {:.1} ms, p99 {:.1} ms", q(&floor, 0.5), q(&floor, 0.99));
    println!(
        "  start-up, `--version` x100: agora (the command line) p50 {:.2} ms, p99 {:.2} ms; agora-node (the full program) p50 {:.2} ms, p99 {:.2} ms",
        q(&start_client, 0.5),
        q(&start_client, 0.99),
        q(&start_full, 0.5),
        q(&start_full, 0.99)
    );
    println!("  node RSS {} MiB (peak {} MiB)", rss / 1024, hwm / 1024);
    for (what, line) in &memory {
        println!("    memory, {what}: {line}");
    }
    // GET /v1/memory: each view's parts, in MiB.
    let parts = |v: &Value| -> String {
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        let total: u64 = v.as_object().map_or(0, |o| o.values().filter_map(Value::as_u64).sum());
        let list: Vec<String> = v
            .as_object()
            .map_or_else(Vec::new, |o| o.iter().filter_map(|(k, b)| b.as_u64().filter(|&b| b >= 1 << 19).map(|b| format!("{k} {:.1}", mib(b)))).collect());
        format!("{:.1} MiB ({})", mib(total), list.join(", "))
    };
    println!("  the views at the end, as each counts its memory (GET /v1/memory; reserved room included):");
    println!("    live merged view: {}", parts(&views_memory["merged_view"]["live_view"]));
    if let Some(g) = views_memory["reasoning_graph"].as_object() {
        println!("    reasoning graph ({} nodes): {}", g["nodes"], parts(&g["bytes"]));
    }
    for p in views_memory["merged_view"]["perspectives"].as_array().into_iter().flatten() {
        println!("    perspective ({} nodes): {}", p["nodes"], parts(&p["bytes"]));
    }
    Ok(())
}
