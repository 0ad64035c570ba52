//! `node load`: a sustained load into one node; how far behind the commits
//! its live merged view runs and the CPU it uses.

use super::harness::{admit_all, agora_cmd, agora_json, new_home, rss_kib, start, store_swarm};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// CPU time (user + system, in clock ticks) of each thread of `pid`, by name.
fn thread_ticks(pid: u32) -> Result<std::collections::BTreeMap<String, u64>> {
    let mut out = std::collections::BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(stat) = std::fs::read_to_string(task?.path().join("stat")) else { continue };
        // pid (comm) state ... ; utime and stime are fields 14 and 15.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let ticks = fields.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + fields.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        *out.entry(name).or_default() += ticks;
    }
    Ok(out)
}

/// The bucket bound under which a share `p` of a Prometheus histogram's
/// observations fall, and the count, from `/metrics` text.
fn histogram_quantile(text: &str, name: &str, p: f64) -> Option<(f64, u64)> {
    let mut buckets: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{name}_bucket{{le=\"")))
        .filter_map(|rest| {
            let (le, count) = rest.split_once("\"} ")?;
            Some((if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? }, count.trim().parse().ok()?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    let want = (total as f64 * p).ceil() as u64;
    buckets.iter().find(|(_, c)| *c >= want).map(|(le, _)| (*le, total))
}

/// The count of a Prometheus histogram's observations, from `/metrics` text.
fn histogram_count(text: &str, name: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(&format!("{name}_count "))).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

pub(super) fn run(agora: &Path, rate: usize, agents: usize, seconds: usize, preload_agents: usize, preload_events: usize, skew_ms: u64) -> Result<()> {
    anyhow::ensure!(agents >= 2 && rate >= 10 && seconds >= 1, "need at least 2 agents, 10 entries/s and 1 s");
    let home = new_home(agora)?;
    let preloaded = if preload_agents > 0 { store_swarm(agora, &home, preload_agents, preload_events)? } else { 0 };
    let per_agent = (rate * seconds).div_ceil(agents);
    // Other agents than the preloaded ones, writing after them.
    let clock = crate::merge_bench::SWARM_CLOCK + (preloaded as u64) + 1_000;
    let mut entries = crate::merge_bench::swarm_from(agents, per_agent, preload_agents, clock);
    // Delivered in the order they reach the node: each agent's entries
    // `delay` ms after they were written.
    let mut rng = agora_core::xorshift::Xorshift64(0x5eed ^ skew_ms);
    let delays: std::collections::HashMap<agora_core::AgentId, u64> = entries
        .iter()
        .map(|e| e.author())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|a| (a, if skew_ms == 0 { 0 } else { rng.below(skew_ms as usize) as u64 }))
        .collect();
    entries.sort_by_key(|e| (e.timestamp_ms() + delays[&e.author()], e.author(), e.seq()));
    admit_all(agora, &home, entries.iter().map(|e| e.author()))?;
    let t = Instant::now();
    let node = start(agora, &home, &home.agent, &[])?;
    agora_json(agora, &home.path, &["view-hash"])?;
    if preloaded > 0 {
        println!(
            "on top of {preloaded} entries ({preload_agents} agents x {preload_events} events) stored before the node started; its view built in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    // The node's reasoning graph and the perspective of one of the agents
    // writing (who accepts the others' chains as they grow), in use from the
    // start: built now, kept current through the load, read every second.
    let probe = agora_json(agora, &home.path, &["propose", "load probe"])?;
    let probe = probe["id"].as_str().context("propose printed no id")?.to_string();
    let viewer = entries.first().context("no entries")?.author().to_string();
    agora_json(agora, &home.path, &["status", &probe])?;
    agora_json(agora, &home.path, &["perspective", &viewer, "--summary"])?;
    let (replays_before, builds_before) = {
        let m = node.control.metrics()?;
        (histogram_count(&m, "agora_view_recompute_seconds"), histogram_count(&m, "agora_perspective_build_seconds"))
    };
    let pid = node.child.id();
    let batch = rate / 10;
    let before = thread_ticks(pid)?;
    let t0 = Instant::now();
    let mut late = 0usize;
    let (mut status_reads, mut perspective_reads) = (Vec::new(), Vec::new());
    let timed = |args: &[&str]| -> Result<Duration> {
        let t = Instant::now();
        agora_json(agora, &home.path, args)?;
        Ok(t.elapsed())
    };
    for (i, chunk) in entries.chunks(batch).enumerate() {
        if i % 10 == 9 {
            status_reads.push(timed(&["status", &probe])?);
            perspective_reads.push(timed(&["perspective", &viewer, "--summary"])?);
        }
        let due = t0 + Duration::from_millis(100 * i as u64);
        match due.checked_duration_since(Instant::now()) {
            Some(wait) => std::thread::sleep(wait),
            None => late += 1,
        }
        let mut pack = agora_core::pack::header_line();
        pack.push('\n');
        for e in chunk {
            pack.push_str(&agora_core::pack::entry_line(e.signed(), e.payload()));
            pack.push('\n');
        }
        let mut child =
            agora_cmd(agora, &home.path).args(["--json", "import", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
        std::io::Write::write_all(&mut child.stdin.take().context("no stdin")?, pack.as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!("import of batch {i}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let fed = t0.elapsed();
    // Until the view has caught up with the last batch.
    let hash = agora_json(agora, &home.path, &["view-hash"])?;
    let after = thread_ticks(pid)?;
    let wall = t0.elapsed();
    let tick = 100.0; // USER_HZ on Linux
    let used = |name: Option<&str>| -> f64 {
        let sum = |m: &std::collections::BTreeMap<String, u64>| m.iter().filter(|(k, _)| name.is_none_or(|n| k.as_str() == n)).map(|(_, v)| *v).sum::<u64>();
        (sum(&after).saturating_sub(sum(&before))) as f64 / tick / wall.as_secs_f64()
    };
    let metrics = node.control.metrics()?;
    let replays = histogram_count(&metrics, "agora_view_recompute_seconds") - replays_before;
    let builds = histogram_count(&metrics, "agora_perspective_build_seconds") - builds_before;
    let (lag_p99, lags) = histogram_quantile(&metrics, "agora_merge_view_lag_seconds", 0.99).context("no agora_merge_view_lag_seconds in /metrics")?;
    let (lag_p50, _) = histogram_quantile(&metrics, "agora_merge_view_lag_seconds", 0.5).context("no agora_merge_view_lag_seconds")?;
    let (rss, hwm) = rss_kib(pid)?;
    let n = entries.len();
    println!(
        "sustained load: {n} entries of {agents} agents into one node, {batch} every 100 ms (`agora import -` through the node){}",
        if skew_ms > 0 { format!(", each agent's entries up to {skew_ms} ms late (out of log order)") } else { String::new() }
    );
    println!(
        "  fed in {:.1} s = {:.0} entries/s ({late} batches started late); the view current {:.2} s after the start",
        fed.as_secs_f64(),
        n as f64 / fed.as_secs_f64(),
        wall.as_secs_f64()
    );
    println!(
        "  live merged view lag behind commits ({lags} updates): p50 <= {:.1} ms, p99 <= {:.1} ms (histogram bucket bounds; target p99 < 100 ms)",
        lag_p50 * 1e3,
        lag_p99 * 1e3
    );
    println!("  CPU over the run, in cores: merged-view thread {:.3}, whole node {:.3} (target: views < 1 core)", used(Some("merged-view")), used(None));
    status_reads.sort();
    perspective_reads.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if let (Some(s), Some(p)) = (status_reads.last(), perspective_reads.last()) {
        println!(
            "  reads every second during the load ({} each): `status` (the reasoning graph) p50 {:.1} ms, max {:.1} ms; `perspective <a writing agent> --summary` p50 {:.1} ms, max {:.1} ms; the reasoning graph replayed {replays} times, the perspective {builds} times",
            status_reads.len(),
            ms(crate::measure::percentile(&status_reads, 0.5)),
            ms(*s),
            ms(crate::measure::percentile(&perspective_reads, 0.5)),
            ms(*p)
        );
    }
    println!("  node RSS {} MiB (peak {} MiB); view hash {}", rss / 1024, hwm / 1024, hash["view_hash"].as_str().unwrap_or("?"));
    Ok(())
}
