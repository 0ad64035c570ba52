//! A sweep over swarm sizes runs every size, is the same bytes when run
//! again, and draws its plots and a run's plots as SVG and PNG.

use agora_sim::{Scenario, SweepAxis, draw_run, draw_sweep, sweep_with};
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
    assert_figures(&files, &["run-disputes-forks", "run-fork-detection"]);
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
