//! Many agents on one node (`./scripts/bench.sh node agents --agents 100
//! --moves 20`): the keyring's agents recording at once through the JSON
//! API, each its own client and its own chain (`Agora-Agent: NAME`), against
//! one agent alone on the same node, moving one after another.
//!
//! A node runs on 127.0.0.1; `--agents` named agents are made in its home's
//! keyring and admitted. First one agent alone makes `--agents × --moves`
//! moves back to back (`propose`, a signed durable append, answered once
//! the live views hold it); then every agent makes `--moves` moves at once,
//! one thread each. Figures: moves per second sustained over the whole run,
//! and each move's latency p50 / p99 / max. The limit measured in the same
//! run is the agent alone: the concurrent figures are given as its
//! multiples. Every chain is then checked to hold its agent's moves.

use super::harness::{Home, agora_json, new_home, start};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

pub fn run(agora: &Path, agents: usize, moves: usize) -> Result<()> {
    if agents == 0 || moves == 0 {
        bail!("--agents and --moves must be at least 1");
    }
    let home = new_home(agora)?;
    let names: Vec<String> = (0..agents).map(|i| format!("agent{i:03}")).collect();
    let mut ids = Vec::with_capacity(agents);
    for name in &names {
        ids.push(agora_json(agora, &home.path, &["agent", "new", name])?["id"].as_str().context("agent new printed no id")?.to_string());
        agora_json(agora, &home.path, &["admit", name])?;
    }
    let node = start(agora, &home, &home.agent, &[])?;
    let (url, token) = (node.control.url.clone(), node.control.token.clone());

    let alone_moves = agents * moves;
    let alone = moving(&url, &token, &names[0], alone_moves)?;
    let started = Instant::now();
    let threads: Vec<_> = names[1..]
        .iter()
        .chain(std::iter::once(&names[0]))
        .map(|name| {
            let (url, token, name) = (url.clone(), token.clone(), name.clone());
            std::thread::spawn(move || moving(&url, &token, &name, moves))
        })
        .collect();
    let mut together = Moves { latencies_ms: Vec::new(), elapsed: Duration::ZERO };
    for t in threads {
        let m = t.join().map_err(|_| anyhow::anyhow!("an agent's thread panicked"))??;
        together.latencies_ms.extend(m.latencies_ms);
    }
    together.elapsed = started.elapsed();
    together.latencies_ms.sort_by(f64::total_cmp);

    // Every agent's chain holds its moves (agent 0: its moves alone too).
    let status = node.control.status()?;
    for (i, id) in ids.iter().enumerate() {
        let want = if i == 0 { alone_moves + moves } else { moves };
        let held = status["frontier"].as_array().into_iter().flatten().find(|f| f["author"] == id.as_str()).and_then(|f| f["max_seq"].as_u64());
        if held != Some(want as u64) {
            bail!("{}'s chain holds {held:?} entries, not {want}", names[i]);
        }
    }
    drop(node);
    let _: &Home = &home;

    println!("agents: {agents} agents of one node's keyring, {moves} moves each at once, against one agent alone making {alone_moves} moves in a row");
    println!("{:<40} {:>10} {:>8} {:>8} {:>8}", "", "moves/s", "p50 ms", "p99 ms", "max ms");
    for (name, m) in [("one agent alone (the limit)", &alone), (&*format!("{agents} agents at once"), &together)] {
        println!("{name:<40} {:>10.0} {:>8.2} {:>8.2} {:>8.2}", m.rate(), m.pct(0.5), m.pct(0.99), m.pct(1.0));
    }
    println!(
        "{agents} agents at once: {:.2}x the agent alone's moves/s; p99 {:.1}x its p99; {agents} moves in flight at {:.0}/s wait {:.1} ms each on average (Little's law), p50 {:.1} ms",
        together.rate() / alone.rate(),
        together.pct(0.99) / alone.pct(0.99),
        together.rate(),
        agents as f64 / together.rate() * 1000.0,
        together.pct(0.5)
    );
    Ok(())
}

/// A run of moves: each one's latency, and the whole run's time.
struct Moves {
    latencies_ms: Vec<f64>,
    elapsed: Duration,
}

impl Moves {
    fn rate(&self) -> f64 {
        self.latencies_ms.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn pct(&self, p: f64) -> f64 {
        self.latencies_ms[((self.latencies_ms.len() as f64 - 1.0) * p).round() as usize]
    }
}

/// `n` proposals by agent `name`, one after another, over one keep-alive
/// connection.
fn moving(url: &str, token: &str, name: &str, n: usize) -> Result<Moves> {
    let agent = ureq::Agent::config_builder().proxy(None).http_status_as_error(false).timeout_global(Some(Duration::from_secs(60))).build().new_agent();
    let mut latencies_ms = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let body = json!({ "text": format!("{name}'s position {i} on the launch date") }).to_string();
        let t0 = Instant::now();
        let mut r = agent
            .post(format!("{url}/v1/ops/propose"))
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("agora-agent", name)
            .send(body)?;
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string()?;
        latencies_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
        if status != 200 {
            bail!("{name}'s move {i}: {status} {text}");
        }
    }
    let elapsed = started.elapsed();
    latencies_ms.sort_by(f64::total_cmp);
    Ok(Moves { latencies_ms, elapsed })
}
