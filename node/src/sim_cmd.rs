//! `agora sim run`, `agora sim sweep` and `agora sim search`: play a
//! scenario file in the swarm simulator (`agora-sim`), once, over a range of
//! sizes or seeds, or against sampled adversary strategies; report and draw.
//! `agora sim results` keeps the results pages' tables equal to their reports. The simulator runs its own simulated nodes; no home, store or
//! network of this machine is touched, except the reports and plots written
//! to `--out`.

use agora_sim::SweepAxis;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

fn load(path: &Path) -> Result<agora_sim::Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the scenario {}", path.display()))?;
    agora_sim::Scenario::from_toml(&text).with_context(|| format!("scenario {}", path.display()))
}

/// Write `report` as `dir/report.json` and draw the run's plots beside it.
fn write_run(report: &agora_sim::Report, bytes: &[u8], dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = dir.join("report.json");
    std::fs::write(&file, bytes).with_context(|| format!("writing {}", file.display()))?;
    Ok(agora_sim::draw_run(report, dir)?)
}

/// Play `path` with `seed` (or the scenario's), print the summary (or the
/// report, with `--json`), write `out/report.json` and the run's plots.
/// Exit code 3 when an invariant was violated.
pub fn run(path: &Path, seed: Option<u64>, out: Option<&Path>, json: bool) -> Result<ExitCode> {
    let scenario = load(path)?;
    let seed = seed.unwrap_or(scenario.seed);
    let replay = format!("agora sim run {} --seed {seed}", agora_sim::scenario_path_shown(path));
    if !json {
        println!("scenario {} (seed {seed}); replay: {replay}", scenario.name);
    }
    let started = std::time::Instant::now();
    let report = agora_sim::run(&scenario, seed, replay);
    let wall = started.elapsed();
    let bytes = serde_json::to_vec_pretty(&report)?;
    let plots = match out {
        Some(dir) => write_run(&report, &bytes, dir)?,
        None => Vec::new(),
    };
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
            let first = f.to_first_honest_ms().map_or("proven at no honest node".to_string(), |t| format!("first proven at an honest node {t} ms later"));
            let all = f.to_all_honest_ms().map_or("not at every honest node".to_string(), |t| format!("at every honest node {t} ms later"));
            println!("fork {}… seq {}: signed at {} ms, {first}, {all}", &f.author[..16], f.seq, f.forked_ms);
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
        for plot in &plots {
            println!("plot: {}", plot.display());
        }
        println!("{:.1} s of wall time for {} ms of virtual time", wall.as_secs_f64(), report.end_ms);
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(3) })
}

/// Play `path` at every size of `sizes` (with `seed`, or the scenario's) or
/// at every seed of `seeds`, one run after another; print a line per run as
/// it ends (or, with `--json`, the sweep's report at the end); write
/// `out/sweep.json`, the sweep's plots, and each run's report and plots under
/// `out/runs/`. Exit code 3 when an invariant was violated in any run.
pub fn sweep(path: &Path, sizes: Option<&str>, seeds: Option<&str>, seed: Option<u64>, out: Option<&Path>, json: bool) -> Result<ExitCode> {
    let scenario = load(path)?;
    let seed = seed.unwrap_or(scenario.seed);
    let shown = agora_sim::scenario_path_shown(path);
    let (axis, replay_sweep) = match (sizes, seeds) {
        (Some(list), None) => (SweepAxis::parse_sizes(list)?, format!("agora sim sweep {shown} --sizes {list} --seed {seed}")),
        (Some(list), Some(range)) => {
            (SweepAxis::parse_sizes(list)?.with_seeds(SweepAxis::parse_seeds(range)?)?, format!("agora sim sweep {shown} --sizes {list} --seeds {range}"))
        }
        (None, Some(range)) => (SweepAxis::parse_seeds(range)?, format!("agora sim sweep {shown} --seeds {range}")),
        (None, None) => bail!("give --sizes, --seeds, or both (each size with each seed)"),
    };
    let seeds_per_size = matches!(&axis, SweepAxis::Sizes { seeds, .. } if !seeds.is_empty());
    // A size sweep's run is replayed as a sweep of that one size; a seed
    // sweep's run is the scenario as written, so `sim run` replays it.
    let replay_point = |nodes: usize, seed: u64| match axis {
        SweepAxis::Sizes { .. } => format!("agora sim sweep {shown} --sizes {nodes} --seed {seed}"),
        SweepAxis::Seeds(_) => format!("agora sim run {shown} --seed {seed}"),
    };
    if !json {
        println!("scenario {}: {} runs; replay: {replay_sweep}", scenario.name, axis.len());
    }
    let started = Instant::now();
    let mut lap = started;
    let mut failed_write = None;
    let report = agora_sim::sweep_with(&scenario, &axis, seed, replay_point, |point, run| {
        let took = lap.elapsed();
        lap = Instant::now();
        if let Some(dir) = out
            && failed_write.is_none()
        {
            let name = match axis {
                SweepAxis::Sizes { .. } if seeds_per_size => format!("nodes-{}-seed-{}", point.nodes, point.seed),
                SweepAxis::Sizes { .. } => format!("nodes-{}", point.nodes),
                SweepAxis::Seeds(_) => format!("seed-{}", point.seed),
            };
            let written = serde_json::to_vec_pretty(run).map_err(anyhow::Error::from).and_then(|bytes| write_run(run, &bytes, &dir.join("runs").join(name)));
            if let Err(e) = written {
                failed_write = Some(e);
            }
        }
        if !json {
            println!("{}", point_line(point, took.as_secs_f64()));
        }
    })?;
    if let Some(e) = failed_write {
        return Err(e);
    }
    let bytes = serde_json::to_vec_pretty(&report)?;
    let mut plots = Vec::new();
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join("sweep.json");
        std::fs::write(&file, &bytes).with_context(|| format!("writing {}", file.display()))?;
        plots = agora_sim::draw_sweep(&report, dir)?;
    }
    if json {
        println!("{}", String::from_utf8_lossy(&bytes));
    } else {
        let violated = report.points.iter().filter(|p| !p.ok).count();
        match violated {
            0 => println!("every invariant held in every run"),
            n => println!("VIOLATED in {n} of {} runs (each run's replay is above)", report.points.len()),
        }
        if let Some(dir) = out {
            println!("report: {}", dir.join("sweep.json").display());
            println!("runs: {}", dir.join("runs").display());
        }
        for plot in &plots {
            println!("plot: {}", plot.display());
        }
        println!("{:.1} s of wall time", started.elapsed().as_secs_f64());
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(3) })
}

/// One run of a sweep, in a line: its size, convergence, traffic, forks and
/// invariants, and how to replay it when one was violated.
fn point_line(p: &agora_sim::SweepPoint, wall_s: f64) -> String {
    let converged = p.convergence_ms.map_or(format!("did not converge within {} ms", p.settle_ms), |ms| format!("converged in {ms} ms"));
    let traffic = format!("{} sent, {} received per honest node", bytes(p.traffic.bytes_sent_per_honest_node), bytes(p.traffic.bytes_received_per_honest_node));
    let forks = match p.forks.iter().map(|f| f.to_all_honest_ms()).collect::<Option<Vec<u64>>>() {
        _ if p.forks.is_empty() => String::new(),
        Some(all) => format!("; {} forks, each proven at every honest node within {} ms of being signed", p.forks.len(), all.into_iter().max().unwrap_or(0)),
        None => format!("; {} forks, not all proven everywhere", p.forks.len()),
    };
    let held = if p.ok { "ok".to_string() } else { format!("VIOLATED: {}; replay: {}", p.violated.join(", "), p.replay) };
    format!("  {} nodes, {} agents, seed {}: {converged}; {traffic}{forks}; {held} ({wall_s:.1} s of wall time)", p.nodes, p.agents, p.seed)
}

/// Bytes in the unit that keeps the number short.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 10 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// Search `path` for the worst adversary strategy per family: `budget`
/// trials from `seed` (or the one trial of `family` and `strategy_seed`);
/// print a line per trial as it ends and the worst per family (or, with
/// `--json`, the search's report). Exit code 3 when a trial broke an
/// invariant, the liveness bound included.
pub fn search(path: &Path, budget: Option<usize>, seed: u64, family: Option<&str>, strategy_seed: Option<u64>, json: bool) -> Result<ExitCode> {
    let scenario = load(path)?;
    let family = family.map(agora_sim::Family::from_name).transpose()?;
    let budget = budget.unwrap_or(agora_sim::Family::ALL.len());
    let options = agora_sim::SearchOptions { budget, seed, family, strategy_seed };
    let shown = agora_sim::scenario_path_shown(path);
    let replay = |f: agora_sim::Family, s: u64| format!("agora sim search {shown} --family {} --strategy-seed {s}", f.name());
    if !json {
        println!("scenario {}: {} trials from seed {seed}; replay: agora sim search {shown} --budget {budget} --seed {seed}", scenario.name, options.budget);
    }
    let started = Instant::now();
    let report = agora_sim::search(&scenario, &options, replay, |t| {
        if !json {
            println!("  {}", trial_line(t));
        }
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("worst strategy per family (liveness bound: 2 × the honest-only convergence + {} ms):", report.slack_ms);
        for f in &report.families {
            println!("  {} ({} runs, {} broke an invariant): {}", f.family.name(), f.runs, f.violating_runs, trial_line(&f.worst));
        }
        match report.violations.len() {
            0 => println!("every invariant held in every trial"),
            n => println!("VIOLATED in {n} of {} trials (each trial's replay is above)", report.budget),
        }
        println!("{:.1} s of wall time", started.elapsed().as_secs_f64());
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(3) })
}

/// One trial in a line: its family and strategy, its convergence against
/// the honest-only run's, and what it broke with its replay.
fn trial_line(t: &agora_sim::Trial) -> String {
    let strategy = t.adversaries.iter().map(|a| serde_json::to_string(a).unwrap_or_default()).collect::<Vec<_>>().join(", ");
    let ms = |v: Option<u64>| v.map_or("no convergence".to_string(), |ms| format!("{ms} ms"));
    let ratio = t.ratio.map_or("∞".to_string(), |r| format!("{r:.2}"));
    let held = if t.violated.is_empty() { "ok".to_string() } else { format!("VIOLATED: {}", t.violated.join("; ")) };
    format!(
        "{} seed {}: {strategy}: {} against {} honest-only, ratio {ratio}; {held}; replay: {}",
        t.family.name(),
        t.strategy_seed,
        ms(t.convergence_ms),
        ms(t.honest_convergence_ms),
        t.replay
    )
}

/// Write every results page's tables in `dir` again from the reports they
/// name, or with `check` list the pages whose tables differ (exit 3).
pub fn results(dir: &Path, check: bool, json: bool) -> Result<ExitCode> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    let mut stale = Vec::new();
    for page in &pages {
        let name = page.display().to_string();
        let text = std::fs::read_to_string(page).with_context(|| format!("reading {name}"))?;
        if check {
            stale.extend(agora_sim::results::check_page(&text, &name, dir)?.into_iter().map(|data| format!("{name}: {data}")));
        } else {
            let rendered = agora_sim::results::render_page(&text, &name, dir)?;
            if rendered != text {
                std::fs::write(page, rendered).with_context(|| format!("writing {name}"))?;
                stale.push(name);
            }
        }
    }
    if json {
        println!("{}", serde_json::json!({ "pages": pages.len(), if check { "stale" } else { "written" }: stale }));
    } else {
        for s in &stale {
            println!("{} {s}", if check { "differs from its report:" } else { "written:" });
        }
        println!("{} pages, {} {}", pages.len(), stale.len(), if check { "tables differ from their reports" } else { "rewritten" });
    }
    Ok(if check && !stale.is_empty() { ExitCode::from(3) } else { ExitCode::SUCCESS })
}
