//! `node gossip`: time for a new event to reach every node of a local swarm.

use super::harness::{Home, agora_json, new_home, start, wait_until};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) fn run(agora: &Path, n: usize, events: usize) -> Result<()> {
    if n < 2 {
        bail!("--nodes must be at least 2");
    }
    let homes: Vec<Home> = (0..n).map(|_| new_home(agora)).collect::<Result<_>>()?;
    let founder = homes[0].agent.clone();
    for h in &homes[1..] {
        agora_json(agora, &homes[0].path, &["admit", &h.agent])?;
    }
    let first = start(agora, &homes[0], &founder, &[])?;
    let mut nodes = vec![first];
    for h in &homes[1..] {
        let boot = nodes[0].addr.clone();
        nodes.push(start(agora, h, &founder, &[&boot])?);
    }
    // Ready: every node holds the roster and has joined the gossip topic.
    wait_until(Duration::from_secs(60), || {
        for node in &nodes {
            let s = node.control.status()?;
            if s["gossip"]["topic_peers"].as_u64().unwrap_or(0) < 1 || node.control.max_seq(&founder)? < (n - 1) as u64 {
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    // Two times per event: until every node holds the entry, and until every
    // node's derived status (its reasoning graph, through its API) shows it.
    let mut latencies = Vec::with_capacity(events);
    let mut derived = Vec::with_capacity(events);
    for i in 0..events {
        let origin = i % n;
        let home = &homes[origin];
        let before = nodes[origin].control.max_seq(&home.agent)?;
        let t0 = Instant::now();
        let id = agora_json(agora, &home.path, &["propose", &format!("event {i}")])?["id"].as_str().context("propose printed no id")?.to_string();
        let mut held: Vec<Option<Duration>> = vec![None; n];
        let mut shown: Vec<Option<Duration>> = vec![None; n];
        let deadline = Instant::now() + Duration::from_secs(30);
        while shown.iter().any(Option::is_none) {
            if Instant::now() > deadline {
                bail!("event {i} not in every node's derived status after 30 s");
            }
            for (k, node) in nodes.iter().enumerate() {
                if held[k].is_none() && node.control.max_seq(&home.agent)? > before {
                    held[k] = Some(t0.elapsed());
                }
                if shown[k].is_none() && node.control.derived_status(&id)?.is_some() {
                    shown[k] = Some(t0.elapsed());
                    held[k].get_or_insert(t0.elapsed());
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let last = |v: &[Option<Duration>]| v.iter().flatten().max().copied().unwrap_or_default().as_secs_f64() * 1000.0;
        latencies.push(last(&held));
        derived.push(last(&shown));
    }
    latencies.sort_by(f64::total_cmp);
    derived.sort_by(f64::total_cmp);
    let pct = |v: &[f64], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!("gossip: {events} events, each recorded on one of {n} nodes (round robin) with `agora propose`;");
    println!("time from issuing the command to the last of the {n} nodes (every node polled in turn, 1 ms apart):");
    println!(
        "  holding the entry:             p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 1000 ms)",
        pct(&latencies, 0.5),
        pct(&latencies, 0.9),
        pct(&latencies, 0.99),
        pct(&latencies, 1.0)
    );
    println!(
        "  showing it in derived status:  p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 100 ms)",
        pct(&derived, 0.5),
        pct(&derived, 0.9),
        pct(&derived, 0.99),
        pct(&derived, 1.0)
    );
    Ok(())
}
