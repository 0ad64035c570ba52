//! The checked-in scenarios hold every invariant; a run is the same bytes
//! for the same seed; and a bounded sweep of short adversarial runs holds
//! every invariant on every seed (a failure names its seed and the command
//! that replays it).

use agora_sim::{run, Scenario};
use std::path::{Path, PathBuf};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn load(name: &str) -> Scenario {
    let path = scenarios_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn violations(report: &agora_sim::Report) -> Vec<String> {
    report.invariants.iter().filter(|i| !i.held).map(|i| format!("{}: {}", i.name, i.violation.clone().unwrap_or_default())).collect()
}

/// Every scenario file parses and, run with its own seed, holds every invariant.
#[test]
fn every_checked_in_scenario_holds_its_invariants() {
    let mut names: Vec<String> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        let s = load(&name);
        if s.nodes > 50 {
            continue; // the scale scenarios run in the bench, not here
        }
        let report = run(&s, s.seed, format!("agora sim run simulations/scenarios/{name} --seed {}", s.seed));
        assert!(report.ok, "{name} (seed {}): {:?}", s.seed, violations(&report));
    }
}

/// The same seed gives a byte-identical report; another seed another one.
#[test]
fn the_same_seed_gives_a_byte_identical_report() {
    let s = short_adversarial();
    let a = serde_json::to_vec(&run(&s, 7, String::new())).expect("json");
    let b = serde_json::to_vec(&run(&s, 7, String::new())).expect("json");
    assert!(a == b, "two runs of seed 7 differ");
    let c = serde_json::to_vec(&run(&s, 8, String::new())).expect("json");
    assert!(a != c, "seeds 7 and 8 gave the same report");
}

/// The adversarial scenario, shortened so that many seeds fit in CI.
fn short_adversarial() -> Scenario {
    let mut s = load("adversarial.toml");
    s.nodes = 6;
    s.agents_per_node = 1;
    s.duration_ms = 30_000;
    s.generated.events_per_agent = 6;
    s.partitions[0].at_ms = 5_000;
    s.partitions[0].heal_ms = 20_000;
    s.partitions[0].groups = vec![vec![0, 1], vec![2, 3, 4, 5]];
    s.churn = vec![
        agora_sim::scenario::Churn { node: 3, crash_ms: Some(8_000), restart_ms: Some(15_000), ..Default::default() },
        agora_sim::scenario::Churn { node: 5, join_ms: Some(10_000), ..Default::default() },
    ];
    for a in &mut s.adversaries {
        if let agora_sim::scenario::AdversaryKind::Equivocator { branches, .. } = &mut a.kind {
            *branches = (*branches).min(50);
        }
        if let agora_sim::scenario::AdversaryKind::HeadFlooder { authors } = &mut a.kind {
            *authors = 500;
        }
    }
    s.validate().expect("a valid shortened scenario");
    s
}

/// Many short seeds of the adversarial scenario: every invariant on every
/// seed. `AGORA_SIM_SEEDS=FROM..TO` runs others.
#[test]
fn a_sweep_of_adversarial_seeds_holds_every_invariant() {
    let seeds = match std::env::var("AGORA_SIM_SEEDS") {
        Ok(v) => {
            let (a, b) = v.split_once("..").expect("AGORA_SIM_SEEDS=FROM..TO");
            a.parse::<u64>().expect("from")..=b.parse::<u64>().expect("to")
        }
        Err(_) => 1..=12,
    };
    let s = short_adversarial();
    for seed in seeds {
        let report = run(&s, seed, String::new());
        assert!(report.ok, "seed {seed} (replay: the short adversarial scenario of tests/scenarios.rs with seed {seed}): {:?}", violations(&report));
    }
}
