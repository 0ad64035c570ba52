//! `agora sim run`: play a scenario file in the swarm simulator (`agora-sim`)
//! and report. The simulator runs its own simulated nodes; no home, store or
//! network of this machine is touched, except the report written to `--out`.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::ExitCode;

/// Play `path` with `seed` (or the scenario's), print the summary (or the
/// report, with `--json`), write `out/report.json`. Exit code 3 when an
/// invariant was violated.
pub fn run(path: &Path, seed: Option<u64>, out: Option<&Path>, json: bool) -> Result<ExitCode> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the scenario {}", path.display()))?;
    let scenario = agora_sim::Scenario::from_toml(&text).with_context(|| format!("scenario {}", path.display()))?;
    let seed = seed.unwrap_or(scenario.seed);
    let replay = format!("agora sim run {} --seed {seed}", path.display());
    if !json {
        println!("scenario {} (seed {seed}); replay: {replay}", scenario.name);
    }
    let started = std::time::Instant::now();
    let report = agora_sim::run(&scenario, seed, replay);
    let wall = started.elapsed();
    let bytes = serde_json::to_vec_pretty(&report)?;
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join("report.json");
        std::fs::write(&file, &bytes).with_context(|| format!("writing {}", file.display()))?;
    }
    if json {
        println!("{}", String::from_utf8_lossy(&bytes));
    } else {
        let s = &report.swarm;
        println!(
            "{} honest nodes, {} adversary nodes, {} honest agents; {} entries written by honest agents, {} by adversaries",
            s.honest_nodes, s.adversary_nodes, s.honest_agents, report.entries_written.honest, report.entries_written.adversary
        );
        match report.convergence_ms {
            Some(ms) => println!("converged {ms} ms (virtual) after activity ended at {} ms", report.activity_end_ms),
            None => println!("did not converge within {} ms after activity ended", report.settle_ms),
        }
        for f in &report.forks {
            let all = f.all_honest_ms.map_or("not at every honest node".to_string(), |t| format!("at every honest node by {t} ms"));
            println!("fork {}… seq {}: first proven at {} ms, {all}", &f.author[..16], f.seq, f.first_ms);
        }
        for i in &report.invariants {
            match &i.violation {
                None => println!("  held: {}", i.name),
                Some(v) => println!("  VIOLATED: {}: {v}", i.name),
            }
        }
        if let Some(dir) = out {
            println!("report: {}", dir.join("report.json").display());
        }
        println!("{:.1} s of wall time for {} ms of virtual time", wall.as_secs_f64(), report.end_ms);
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(3) })
}
