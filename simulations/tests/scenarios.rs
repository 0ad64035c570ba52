//! The checked-in scenarios hold every invariant, their expectations of the
//! merged view among them; a wrong expectation fails a run, naming what it
//! expected and found; a run is the same bytes for the same seed; and a
//! bounded sweep of short adversarial runs holds every invariant on every
//! seed (a failure names its seed and the command that replays it).

use agora_graph::Status;
use agora_sim::scenario::Expectation;
use agora_sim::{Scenario, run};
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

/// The checked-in scenario files, by name, sorted.
fn scenario_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    names
}

/// Every scenario file parses and, run with its own seed, holds every invariant.
#[test]
fn every_checked_in_scenario_holds_its_invariants() {
    for name in scenario_names() {
        let s = load(&name);
        if s.nodes * s.agents_per_node * s.generated.events_per_agent > 50_000 {
            continue; // the scale scenarios run in the bench (`./scripts/bench.sh sim`), not here
        }
        let report = run(&s, s.seed, format!("agora sim run simulations/scenarios/{name} --seed {}", s.seed));
        assert!(report.ok, "{name} (seed {}): {:?}", s.seed, violations(&report));
    }
}

/// A scripted debate means the same whatever the network does: every
/// scenario with expectations meets them on other seeds too (other
/// latencies, losses and arrival orders), not only on its own.
#[test]
fn scripted_debates_meet_their_expectations_on_every_seed() {
    for name in scenario_names() {
        let s = load(&name);
        if s.expect.is_empty() {
            continue;
        }
        for seed in 1..=16 {
            let report = run(&s, seed, String::new());
            assert!(report.ok, "{name} (seed {seed}; replay: agora sim run simulations/scenarios/{name} --seed {seed}): {:?}", violations(&report));
        }
    }
}

/// The invariant that holds a run to its scenario's expectations.
const EXPECTATIONS_HOLD: &str = "scripted expectations hold at every honest node";

/// A wrong expectation fails the run, and only it: flip what the partition
/// debate expects of Alice's proposal and the invariant names the node, the
/// label, what was expected and what every node found.
#[test]
fn a_wrong_expectation_fails_the_run_naming_its_label() {
    let mut s = load("debate-partition.toml");
    let tier = s.expect.iter_mut().find(|e| e.label == "tier").expect("debate-partition expects something of \"tier\"");
    assert_eq!(tier.status, Some(Status::Superseded), "the flip below assumes the checked-in expectation");
    tier.status = Some(Status::Active);
    s.validate().expect("a flipped status is still a valid scenario");
    let report = run(&s, s.seed, String::new());
    assert!(!report.ok, "a wrong expectation passed");
    let broken = violations(&report);
    assert_eq!(broken.len(), 1, "only the expectation should fail: {broken:?}");
    let invariant = report.invariants.iter().find(|i| i.name == EXPECTATIONS_HOLD).expect("the expectations are an invariant of every run");
    let violation = invariant.violation.as_deref().unwrap_or_default();
    assert!(violation.starts_with("node 0: \"tier\" status: expected active, found superseded"), "{violation}");

    // A wrong dispute or accept is caught as well, with the sets compared.
    let mut s = load("debate-partition.toml");
    let tier_25 = s.expect.iter_mut().find(|e| e.label == "tier-25").expect("debate-partition expects something of \"tier-25\"");
    tier_25.disputed_by = Some(vec![]);
    let report = run(&s, s.seed, String::new());
    let violation = report.invariants.iter().find(|i| i.name == EXPECTATIONS_HOLD).and_then(|i| i.violation.clone()).unwrap_or_default();
    assert!(violation.contains("\"tier-25\" disputed_by: expected {}, found {\"carol\"}"), "{violation}");
}

/// Expectations are checked when the file is read: statuses by the graph's
/// own names, labels of scripted moves that make nodes, scripted agents,
/// no unknown field.
#[test]
fn expectations_are_checked_when_the_file_is_read() {
    for name in ["active", "contested", "superseded", "resolved", "parked", "retracted", "duplicate", "invalid"] {
        let e: Expectation = toml::from_str(&format!("label = \"x\"\nstatus = \"{name}\"")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(e.status.map(|s| s.name()), Some(name));
    }
    let text = std::fs::read_to_string(scenarios_dir().join("debate-partition.toml")).expect("debate-partition.toml");
    let refused = |extra: &str, says: &str| {
        let error = Scenario::from_toml(&format!("{text}\n[[expect]]\n{extra}\n")).expect_err(extra).to_string();
        assert!(error.contains(says), "{extra:?} was refused with {error:?}, not naming {says:?}");
    };
    refused("label = \"carol-disputes\"\nstatus = \"overruled\"", "overruled");
    refused("label = \"calls\"\nstatus = \"active\"\nwinner = \"alice\"", "winner");
    refused("label = \"nobody-wrote-this\"\nstatus = \"active\"", "\"nobody-wrote-this\" is not the label of a scripted move");
    refused("label = \"carol-disputes\"\nstatus = \"active\"", "\"carol-disputes\" is a Dispute, a merge event");
    refused("label = \"calls\"", "\"calls\" has an expectation already");

    let mut s = load("debate-partition.toml");
    s.expect.retain(|e| e.label != "too-high");
    s.expect.push(Expectation {
        label: "too-high".into(),
        status: None,
        superseded_by: None,
        settled: None,
        disputed_by: None,
        accepted_by: None,
        judged: None,
    });
    assert!(s.validate().expect_err("an empty expectation").contains("expects nothing"));
    let last = s.expect.len() - 1;
    s.expect[last].disputed_by = Some(vec!["dave".into()]);
    assert!(s.validate().expect_err("an unknown agent").contains("\"dave\" is not a scripted agent"));
    s.expect[last].disputed_by = Some(vec!["carol".into(), "carol".into()]);
    assert!(s.validate().expect_err("an agent named twice").contains("\"carol\" is named twice"));
    s.expect[last].disputed_by = None;
    s.expect[last].superseded_by = Some("carol-disputes".into());
    assert!(s.validate().expect_err("a successor that is no node").contains("superseded_by: \"carol-disputes\" is a Dispute, a merge event"));
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

/// Every honest move's spread is measured: at ten nodes with one agent
/// each, every move reaches every node, and the median, the 99th percentile
/// and the slowest are in order and within the propagation a 20-60 ms mesh
/// allows.
#[test]
fn the_spread_of_every_honest_move_is_reported() {
    let s = load("fanout.toml");
    let report = run(&s, 3, String::new());
    assert!(report.ok, "{:?}", violations(&report));
    let spread = report.spread.expect("moves reached every honest node");
    assert_eq!((spread.moves, spread.moves_not_everywhere), (s.nodes * s.agents_per_node * s.generated.events_per_agent, 0));
    assert!(spread.p50_ms <= spread.p99_ms && spread.p99_ms <= spread.max_ms, "{spread:?}");
    assert!(spread.p50_ms >= 20 && spread.max_ms < 5_000, "{spread:?}");
}

/// "Nothing lost" counts only what an honest node still online holds: an
/// entry whose only holder left for good 50 ms after writing it, before any
/// packet could carry it, is gone with its node, not lost by the swarm (the
/// check counted it lost). An entry that reached one other node before its
/// writer left must be everywhere.
#[test]
fn an_entry_whose_only_holder_left_is_not_counted_lost() {
    let text = r#"
name = "gone-with-its-node"
nodes = 3
duration_ms = 5_000
settle_ms = 20_000
network = { latency = { kind = "fixed", ms = 200 } }
churn = [{ node = 0, leave_ms = 2_050 }]
scripted = [
  { name = "ann", node = 0, moves = [{ at_ms = 1_000, move = "propose", text = "spread" }, { at_ms = 2_000, move = "propose", text = "gone" }] },
  { name = "bob", node = 1, moves = [{ at_ms = 3_000, move = "propose", text = "later" }] },
]
"#;
    let s = Scenario::from_toml(text).expect("the scenario is valid");
    let report = run(&s, 1, String::new());
    assert!(report.ok, "{:?}", violations(&report));
    assert_eq!(report.entries_written.honest, 3);
    let honest: Vec<usize> = report.nodes.iter().filter(|n| n.role == "honest" && n.up).map(|n| n.entries).collect();
    assert_eq!(honest, [2, 2], "the two nodes online hold the first entry and bob's, not the one that left with node 0");
}
