//! A sweep over swarm sizes runs every size, is the same bytes when run
//! again, and draws its plots and a run's plots as SVG and PNG.

use agora_sim::{RunEventKind, Scenario, SweepAxis, draw_run, draw_sweep, sweep_with};
use std::path::PathBuf;

/// A short scenario with a partition, a crash and an equivocator, so every
/// figure has something to show.
fn short() -> Scenario {
    Scenario::from_toml(
        r#"
name = "short-sweep"
seed = 3
nodes = 4
agents_per_node = 1
duration_ms = 12_000
settle_ms = 120_000
topology = { kind = "random", degree = 3 }

[network]
latency = { kind = "uniform", min_ms = 10, max_ms = 80 }

[[partitions]]
at_ms = 2_000
heal_ms = 7_000
groups = [[0, 1], [2, 3]]

[[churn]]
node = 3
crash_ms = 3_000
restart_ms = 6_000

[generated]
events_per_agent = 6
interval = { kind = "uniform", min_ms = 500, max_ms = 2_000 }
weights = { propose = 20, support = 10, contradict = 15, refine = 10, synthesize = 5, accept = 10, dispute = 30 }

[[adversaries]]
kind = "equivocator"
fork_at_seq = 2
"#,
    )
    .expect("a valid scenario")
}

fn assert_figures(files: &[PathBuf], stems: &[&str]) {
    for stem in stems {
        for ext in ["svg", "png"] {
            let path = files
                .iter()
                .find(|f| f.file_name().and_then(|n| n.to_str()) == Some(&format!("{stem}.{ext}")))
                .unwrap_or_else(|| panic!("{stem}.{ext} not written: {files:?}"));
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(bytes.len() > 1_000, "{} is {} bytes", path.display(), bytes.len());
            match ext {
                "png" => assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is not a PNG", path.display()),
                _ => assert!(String::from_utf8_lossy(&bytes).contains("<svg"), "{} is not an SVG", path.display()),
            }
        }
    }
}

#[test]
fn a_size_sweep_is_the_same_bytes_twice_and_draws_its_plots() {
    let scenario = short();
    let axis = SweepAxis::parse_sizes("3,5,8").expect("sizes");
    let replay = |n: usize, seed: u64| format!("agora sim sweep short.toml --sizes {n} --seed {seed}");
    let mut last_run = None;
    let report = sweep_with(&scenario, &axis, scenario.seed, replay, |_, run| last_run = Some(run.clone())).expect("sweep");
    let again = agora_sim::sweep(&scenario, &axis, scenario.seed, replay).expect("sweep");
    let (a, b) = (serde_json::to_vec_pretty(&report).expect("json"), serde_json::to_vec_pretty(&again).expect("json"));
    assert!(a == b, "two sweeps of the same scenario and seed differ");

    assert_eq!(report.points.iter().map(|p| p.nodes).collect::<Vec<_>>(), vec![3, 5, 8]);
    for p in &report.points {
        assert!(p.ok, "{} nodes: {:?} (replay: {})", p.nodes, p.violated, p.replay);
        assert_eq!(p.agents, p.nodes, "one agent per node");
        assert_eq!(p.forks.len(), 1, "{} nodes: the equivocator's fork", p.nodes);
        assert!(p.traffic.bytes_sent_per_honest_node > 0 && p.traffic.bytes_sent >= p.traffic.bytes_sent_per_honest_node * p.nodes as u64);
        assert_eq!(p.replay, format!("agora sim sweep short.toml --sizes {} --seed 3", p.nodes));
    }
    let json: serde_json::Value = serde_json::from_slice(&a).expect("json");
    assert_eq!(json["axis"], "nodes");

    let dir = tempfile::tempdir().expect("tempdir");
    let files = draw_sweep(&report, dir.path()).expect("sweep plots");
    assert_figures(&files, &["sweep-convergence", "sweep-bandwidth", "sweep-fork-detection"]);
    let run = last_run.expect("the last run");
    assert!(run.series.iter().any(|s| s.disputes > 0), "the run records disputes");
    let files = draw_run(&run, &dir.path().join("run")).expect("run plots");
    assert_figures(&files, &["run-timeline", "run-fork-detection"]);
    // The run's partition and churn are in its report, for the plots to mark.
    let kinds: Vec<(u64, RunEventKind)> = run.events.iter().map(|e| (e.at_ms, e.kind)).collect();
    assert_eq!(kinds, [(2_000, RunEventKind::Partition), (3_000, RunEventKind::Crash), (6_000, RunEventKind::Restart)]);
    assert_eq!(run.events[0].until_ms, Some(7_000));
}

#[test]
fn a_seed_sweep_runs_each_seed_at_the_scenarios_size() {
    let mut scenario = short();
    scenario.adversaries.clear();
    let axis = SweepAxis::parse_seeds("1..3").expect("seeds");
    let report = agora_sim::sweep(&scenario, &axis, 0, |_, seed| format!("agora sim run short.toml --seed {seed}")).expect("sweep");
    assert_eq!(report.points.iter().map(|p| (p.seed, p.nodes)).collect::<Vec<_>>(), vec![(1, 4), (2, 4), (3, 4)]);
    assert!(report.ok, "{:?}", report.points.iter().map(|p| &p.violated).collect::<Vec<_>>());
    let dir = tempfile::tempdir().expect("tempdir");
    let files = draw_sweep(&report, dir.path()).expect("plots");
    assert_figures(&files, &["sweep-convergence", "sweep-bandwidth"]);
    assert!(!dir.path().join("sweep-fork-detection.png").exists(), "no forks, no fork plot");
}

/// Each size with several seeds: every (size, seed) is run, the report is
/// the same bytes twice, and the figures draw each size's median with the
/// spread of its seeds (a bar per size), on a logarithmic axis when the
/// sizes span a factor of ten.
#[test]
fn sizes_with_seeds_run_every_pair_and_draw_each_sizes_spread() {
    let mut scenario = short();
    scenario.adversaries.clear();
    scenario.partitions.clear();
    scenario.churn.clear();
    scenario.generated.events_per_agent = 2;
    let axis = SweepAxis::parse_sizes("2,20").expect("sizes").with_seeds(SweepAxis::parse_seeds("1..3").expect("seeds")).expect("grid");
    let replay = |n: usize, seed: u64| format!("agora sim sweep short.toml --sizes {n} --seed {seed}");
    let report = agora_sim::sweep(&scenario, &axis, 0, replay).expect("sweep");
    let again = agora_sim::sweep(&scenario, &axis, 0, replay).expect("sweep");
    assert_eq!(serde_json::to_vec(&report).expect("json"), serde_json::to_vec(&again).expect("json"));
    let runs: Vec<(usize, u64)> = report.points.iter().map(|p| (p.nodes, p.seed)).collect();
    assert_eq!(runs, [(2, 1), (2, 2), (2, 3), (20, 1), (20, 2), (20, 3)]);
    assert!(report.ok, "{:?}", report.points.iter().map(|p| &p.violated).collect::<Vec<_>>());
    let dir = tempfile::tempdir().expect("tempdir");
    let files = draw_sweep(&report, dir.path()).expect("plots");
    assert_figures(&files, &["sweep-convergence", "sweep-spread", "sweep-bandwidth"]);
    let svg = std::fs::read_to_string(dir.path().join("sweep-spread.svg")).expect("svg");
    assert!(svg.contains("median of 3 seeds"), "the title says what a point is");
    assert!(svg.contains("honest nodes (logarithmic)"), "2 to 20 nodes is drawn on a logarithmic axis");
    let texts: Vec<&str> = svg.split("<text").skip(1).map(|t| t.split('>').nth(1).unwrap_or("").split('<').next().unwrap_or("").trim()).collect();
    let ticks: Vec<&str> = texts.iter().copied().filter(|t| t.parse::<u32>().is_ok_and(|n| n >= 2)).collect();
    assert_eq!(ticks, ["2", "5", "10", "20"], "the logarithmic axis labels 1, 2 and 5 times each power of ten: {texts:?}");
}

/// A run that broke an invariant is ringed in red on every sweep figure,
/// with a legend entry saying so.
#[test]
fn a_run_that_broke_an_invariant_is_marked_on_the_sweep_figures() {
    let mut scenario = short();
    scenario.adversaries.clear();
    scenario.generated.events_per_agent = 2;
    // A memory bound no node can keep: that invariant breaks in every run.
    scenario.bounds.node_memory_bytes = 1;
    let axis = SweepAxis::parse_sizes("3,4").expect("sizes");
    let report = agora_sim::sweep(&scenario, &axis, 1, |n, seed| format!("{n} {seed}")).expect("sweep");
    assert!(report.points.iter().all(|p| !p.ok), "every run breaks the memory bound");
    let dir = tempfile::tempdir().expect("tempdir");
    draw_sweep(&report, dir.path()).expect("plots");
    let svg = std::fs::read_to_string(dir.path().join("sweep-bandwidth.svg")).expect("svg");
    assert!(svg.contains("run broke an invariant"), "the broken runs are marked");
}
