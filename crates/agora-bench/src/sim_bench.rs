//! Simulator benchmark: how fast the swarm simulator (`agora-sim`) plays a
//! scenario on one thread, and how much memory it takes. Each run is a child
//! process of its own, so that its peak resident memory is its alone.
//!
//! The figure beside it is this machine's single-thread rate of Ed25519
//! batch verification, measured in the same run: every simulated node checks
//! every entry it receives, so entries delivered (entries × honest nodes) per
//! second of wall time, divided by that rate, says how close the simulator
//! comes to the cost of the checks it cannot skip. The CPU time of the run
//! (user and system, the child's alone) over its deliveries is the cost per
//! delivery.

use crate::measure::rate;
use anyhow::{Context, Result, bail};
use ed25519_dalek::{Signer, SigningKey};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct SimArgs {
    /// The scenario to play.
    #[arg(long, default_value = "simulations/scenarios/scale-1000.toml")]
    scenario: PathBuf,
    /// Its seed (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Honest nodes (default: the scenario's; fewer when there are fewer
    /// agents).
    #[arg(long)]
    nodes: Option<usize>,
    /// Total honest agents for each run, spread over the scenario's nodes
    /// (e.g. `10,100,1000,10000`); default: the scenario as written.
    #[arg(long, value_delimiter = ',')]
    agents: Vec<usize>,
    /// Moves per generated agent (default: the scenario's).
    #[arg(long)]
    events: Option<usize>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
    /// Internal: play one run in this process and print its figures as JSON.
    #[arg(long, hide = true)]
    child: bool,
}

/// The figures of one run.
#[derive(serde::Serialize, serde::Deserialize)]
struct RunFigures {
    agents: usize,
    nodes: usize,
    events_per_agent: usize,
    entries: u64,
    deliveries: u64,
    wall_s: f64,
    /// CPU time, user and system, seconds.
    cpu_s: f64,
    /// CPU time per delivery, microseconds.
    cpu_us_per_delivery: f64,
    /// The largest measured peak memory of a simulated honest node, MiB.
    node_memory_peak_mib: f64,
    virtual_s: f64,
    entries_per_s: f64,
    deliveries_per_s: f64,
    peak_rss_mib: f64,
    convergence_ms: Option<u64>,
    ok: bool,
    violations: Vec<String>,
}

pub fn run(args: SimArgs) -> Result<()> {
    if args.child {
        return child(&args);
    }
    let raw_batch = raw_batch_verify_rate();
    let points: Vec<Option<usize>> = if args.agents.is_empty() { vec![None] } else { args.agents.iter().copied().map(Some).collect() };
    let exe = std::env::current_exe().context("locating the bench binary")?;
    if !args.json {
        println!("raw Ed25519 batch verify, one thread: {raw_batch:.0}/s");
        println!(
            "{:>7} {:>5} {:>7} {:>9} {:>9} {:>8} {:>10} {:>12} {:>8} {:>9} {:>9} {:>10} {:>5}",
            "agents", "nodes", "events", "entries", "wall s", "CPU s", "µs/deliv", "deliveries/s", "ratio", "peak MiB", "node MiB", "converged", "ok"
        );
    }
    for agents in points {
        let mut cmd = Command::new(&exe);
        cmd.arg("sim").arg("--child").arg("--scenario").arg(&args.scenario);
        if let Some(seed) = args.seed {
            cmd.arg("--seed").arg(seed.to_string());
        }
        if let Some(n) = args.nodes {
            cmd.arg("--nodes").arg(n.to_string());
        }
        if let Some(a) = agents {
            cmd.arg("--agents").arg(a.to_string());
        }
        if let Some(e) = args.events {
            cmd.arg("--events").arg(e.to_string());
        }
        let out = cmd.output().context("running a simulation")?;
        if !out.status.success() {
            bail!("the simulation failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let f: RunFigures = serde_json::from_slice(&out.stdout).context("reading the run's figures")?;
        let ratio = f.deliveries_per_s / raw_batch;
        if args.json {
            let mut v = serde_json::to_value(&f)?;
            v["raw_batch_verify_per_s"] = raw_batch.into();
            v["ratio_to_raw_batch_verify"] = ratio.into();
            println!("{v}");
        } else {
            let converged = f.convergence_ms.map_or("no".to_string(), |ms| format!("{ms} ms"));
            println!(
                "{:>7} {:>5} {:>7} {:>9} {:>9.1} {:>8.1} {:>10.1} {:>12.0} {:>8.3} {:>9.0} {:>9.1} {:>10} {:>5}",
                f.agents,
                f.nodes,
                f.events_per_agent,
                f.entries,
                f.wall_s,
                f.cpu_s,
                f.cpu_us_per_delivery,
                f.deliveries_per_s,
                ratio,
                f.peak_rss_mib,
                f.node_memory_peak_mib,
                converged,
                f.ok
            );
            for v in &f.violations {
                println!("        VIOLATED: {v}");
            }
        }
    }
    Ok(())
}

/// One run, in this process: play it, print its figures as JSON.
fn child(args: &SimArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.scenario).with_context(|| format!("reading {}", args.scenario.display()))?;
    let mut scenario = agora_sim::Scenario::from_toml(&text).with_context(|| format!("scenario {}", args.scenario.display()))?;
    if let Some(n) = args.nodes {
        scenario.nodes = n;
    }
    if let Some(agents) = args.agents.first().copied() {
        if agents == 0 {
            bail!("--agents must be positive");
        }
        // Spread over the scenario's nodes, fewer nodes when there are fewer agents.
        scenario.nodes = scenario.nodes.min(agents);
        scenario.agents_per_node = agents.div_ceil(scenario.nodes);
    }
    if let Some(e) = args.events {
        scenario.generated.events_per_agent = e;
    }
    scenario.validate().map_err(|e| anyhow::anyhow!("scenario {}: {e}", args.scenario.display()))?;
    let seed = args.seed.unwrap_or(scenario.seed);
    let started = Instant::now();
    let cpu_before = cpu_seconds().context("reading this process's CPU time")?;
    let report = agora_sim::run(&scenario, seed, String::new());
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds().context("reading this process's CPU time")? - cpu_before;
    let entries = report.entries_written.honest + report.entries_written.adversary;
    let deliveries = entries * report.swarm.honest_nodes as u64;
    let figures = RunFigures {
        agents: report.swarm.honest_agents,
        nodes: report.swarm.honest_nodes,
        events_per_agent: scenario.generated.events_per_agent,
        entries,
        deliveries,
        wall_s: wall,
        cpu_s: cpu,
        cpu_us_per_delivery: cpu * 1e6 / deliveries.max(1) as f64,
        node_memory_peak_mib: report.nodes.iter().filter(|n| n.node < report.swarm.honest_nodes).map(|n| n.memory_bytes).max().unwrap_or(0) as f64
            / f64::from(1 << 20),
        virtual_s: report.end_ms as f64 / 1e3,
        entries_per_s: entries as f64 / wall,
        deliveries_per_s: deliveries as f64 / wall,
        peak_rss_mib: peak_rss_bytes().unwrap_or(0) as f64 / f64::from(1 << 20),
        convergence_ms: report.convergence_ms,
        ok: report.ok,
        violations: report.invariants.iter().filter_map(|i| i.violation.as_ref().map(|v| format!("{}: {v}", i.name))).collect(),
    };
    println!("{}", serde_json::to_string(&figures)?);
    Ok(())
}

/// This process's CPU time so far, user and system, seconds (Linux:
/// `/proc/self/stat` fields 14 and 15, in the kernel's fixed 100 ticks a
/// second that `/proc` reports in).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // `rest` starts at field 3, so field 14 is index 11.
    Some((ticks(11)? + ticks(12)?) as f64 / 100.0)
}

/// This process's peak resident memory (Linux: `VmHWM`).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Ed25519 batch verification on one thread (batches of 64, one key, messages
/// the size of a header and its signing domain), per signature.
fn raw_batch_verify_rate() -> f64 {
    let sk = SigningKey::from_bytes(&[7; 32]);
    let msgs: Vec<[u8; 124]> = (0..64u8)
        .map(|i| {
            let mut m = [0x5au8; 124];
            m[0] = i;
            m
        })
        .collect();
    let sigs: Vec<_> = msgs.iter().map(|m| sk.sign(m)).collect();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
    let keys = vec![sk.verifying_key(); 64];
    rate(Duration::from_secs(2), 64, || {
        ed25519_dalek::verify_batch(&refs, &sigs, &keys).expect("valid batch");
    })
}
