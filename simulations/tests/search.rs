//! The adversary search: deterministic per seed (the same report bytes), one
//! trial replayed alone by its family and strategy seed, every family
//! sampled in turn, and the liveness bound caught when a replicator waits
//! too long on a peer that never answers.

use agora_sim::search::{LIVENESS_SLACK_MS, plan};
use agora_sim::{Family, Scenario, SearchOptions, search};

/// A small swarm: three honest nodes write, a fourth joins when they stop.
fn small(extra: &str) -> Scenario {
    let text = format!(
        r#"
name = "search-small"
nodes = 4
agents_per_node = 1
duration_ms = 5_000
settle_ms = 120_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 30 }}, bandwidth_bytes_per_s = 1_000_000 }}
churn = [{{ node = 3, join_ms = 5_000 }}]
generated = {{ events_per_agent = 40, interval = {{ kind = "uniform", min_ms = 50, max_ms = 150 }} }}
{extra}
"#
    );
    Scenario::from_toml(&text).expect("valid")
}

fn options(budget: usize, seed: u64) -> SearchOptions {
    SearchOptions { budget, seed, family: None, strategy_seed: None }
}

#[test]
fn a_search_is_the_same_bytes_for_the_same_seed_and_takes_every_family_in_turn() {
    let s = small("");
    let replay = |f: Family, seed: u64| format!("agora sim search small.toml --family {} --strategy-seed {seed}", f.name());
    let budget = Family::ALL.len();
    let a = search(&s, &options(budget, 7), replay, |_| {}).expect("search");
    let b = search(&s, &options(budget, 7), replay, |_| {}).expect("search");
    assert_eq!(serde_json::to_vec(&a).unwrap(), serde_json::to_vec(&b).unwrap(), "the same seed gives the same report");
    let families: Vec<Family> = a.families.iter().map(|f| f.family).collect();
    assert_eq!(families, Family::ALL, "every family once");
    let other: Vec<u64> = plan(&options(budget, 8)).unwrap().iter().map(|(_, s)| *s).collect();
    let these: Vec<u64> = plan(&options(budget, 7)).unwrap().iter().map(|(_, s)| *s).collect();
    assert_ne!(these, other, "another seed samples other strategies");
    // One trial replayed alone gives that trial.
    let worst = &a.families[0].worst;
    let one = SearchOptions { budget: 1, seed: 0, family: Some(worst.family), strategy_seed: Some(worst.strategy_seed) };
    let again = search(&s, &one, replay, |_| {}).expect("replay");
    assert_eq!(serde_json::to_value(&again.families[0].worst).unwrap(), serde_json::to_value(worst).unwrap());
    assert!(worst.replay.contains(&format!("--strategy-seed {}", worst.strategy_seed)));
}

/// With a request timeout of a minute, a node that asks a silent peer waits
/// a minute: far over twice the honest-only time plus the constant, and the
/// search says so, naming the liveness bound.
#[test]
fn the_liveness_bound_catches_a_replicator_that_waits_on_a_silent_peer() {
    let s = small("replicator = { request_timeout_ms = 60_000 }");
    let one = SearchOptions { budget: 6, seed: 3, family: Some(Family::Silent), strategy_seed: None };
    let report = search(&s, &one, |_, _| String::new(), |_| {}).expect("search");
    let caught: Vec<_> = report.violations.iter().filter(|t| t.violated.iter().any(|v| v.starts_with("liveness"))).collect();
    assert!(!caught.is_empty(), "a silent peer and a minute's timeout: {:?}", report.families);
    for t in caught {
        let (a, h) = (t.convergence_ms.unwrap_or(u64::MAX), t.honest_convergence_ms.expect("the honest-only run converges"));
        assert!(a > 2 * h + LIVENESS_SLACK_MS);
    }
}

#[test]
fn a_budget_and_a_family_are_checked() {
    assert!(plan(&options(0, 1)).is_err());
    assert!(Family::from_name("nobody").is_err());
    for f in Family::ALL {
        assert_eq!(Family::from_name(f.name()).unwrap(), f);
    }
}

/// The families added for Sybil groups, eclipses, selective relays and
/// colluding forkers and strippers: a few strategies of each hold every
/// invariant, the liveness bound's included.
#[test]
fn the_sybil_eclipse_selective_relay_and_colluding_families_hold_every_invariant() {
    let s = small("");
    for family in [Family::Sybil, Family::Eclipse, Family::SelectiveRelay, Family::ColludingForker] {
        let one = SearchOptions { budget: 3, seed: 11, family: Some(family), strategy_seed: None };
        let report = search(&s, &one, |_, _| String::new(), |_| {}).expect("search");
        assert_eq!(report.families.len(), 1);
        assert!(report.ok, "{}: {:?}", family.name(), report.violations);
    }
}

/// The key families: thefts early and late, thieves slow and fast, of the
/// current key (the owner revokes) or of both keys (the founder recovers),
/// revocations and recoveries before and after the thief's entries spread,
/// one thief or two; each holds every invariant, the liveness bound's
/// included.
#[test]
fn the_key_thief_and_key_recovery_families_hold_every_invariant() {
    let s = small("");
    for (family, seed) in [(Family::KeyThief, 41), (Family::KeyRecovery, 43)] {
        let some = SearchOptions { budget: 6, seed, family: Some(family), strategy_seed: None };
        let report = search(&s, &some, |_, _| String::new(), |_| {}).expect("search");
        assert_eq!((report.families.len(), report.families[0].runs), (1, 6));
        assert!(report.ok, "{}: {:?}", family.name(), report.violations);
    }
}
