//! A key thief (`protocol-spec/keys.md`): it copies an honest agent's
//! current key at a seeded moment, signs forks of the victim's chain with it
//! (after its tip and below it, spread over time) and tries to rotate the
//! chain to a key of its own, by that key and by the stolen one; the owner
//! revokes with its pre-committed next key after its last entry before the
//! theft, and writes on under the new key. With the revocation before the
//! thief's entries reach the nodes and after: every honest node ends with
//! the same view hash, none counts an entry the thief signed, every node's
//! import refused both rotations by `rotation_key` and none stores them, and
//! the owner's entries from its revocation on count everywhere. The search's
//! key-thief family is tested with the others (`search.rs`).

use agora_sim::scenario::AdversaryKind;
use agora_sim::{Report, Scenario};
use std::collections::BTreeSet;

/// Four nodes, two agents each; one thief, robbing `agent-0-0` at 2 s,
/// acting every `every_ms`, whose victim's owner revokes `revoke_ms` after
/// the theft.
fn scenario(revoke_ms: u64, every_ms: u64) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
name = "key-thief"
nodes = 4
agents_per_node = 2
duration_ms = 10_000
settle_ms = 120_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 40 }}, bandwidth_bytes_per_s = 1_000_000 }}
generated = {{ events_per_agent = 20, interval = {{ kind = "uniform", min_ms = 200, max_ms = 600 }} }}
[[adversaries]]
kind = "key_thief"
victim = "agent-0-0"
steal_ms = 2_000
revoke_ms = {revoke_ms}
forks = 6
every_ms = {every_ms}
"#
    ))
    .expect("a valid scenario")
}

fn violations(report: &Report) -> Vec<String> {
    report.invariants.iter().filter(|i| !i.held).map(|i| format!("{}: {}", i.name, i.violation.clone().unwrap_or_default())).collect()
}

const THIEF_INVARIANTS: [&str; 3] = [
    "no entry a key thief signed counts at any honest node",
    "every rotation a key thief tried is stored nowhere and refused by every honest node's import (rotation_key)",
    "every entry an owner wrote from its revocation or recovery on counts at every honest node",
];

/// Play `s` and check what a key theft must leave: every invariant (the
/// thief's among them, and the same view hash everywhere), the thief's
/// entries held by every honest node (they did arrive, and count nowhere),
/// rotations refused during the run by every honest node's import.
fn thief_held_off(s: &Scenario, seed: u64) {
    let (report, net) = agora_sim::run::Run::new(s, seed).play_and_keep(String::new());
    assert!(report.ok, "seed {seed}: {:?}", violations(&report));
    for name in THIEF_INVARIANTS {
        assert!(report.invariants.iter().any(|i| i.name == name && i.held), "{name} is checked: {:?}", report.invariants);
    }
    let distinct: BTreeSet<&String> = report.view_hashes.iter().collect();
    assert_eq!(distinct.len(), 1, "one view hash: {:?}", report.view_hashes);
    for n in 0..s.nodes {
        let store = &net.nodes[n].store;
        // The rotations arrive by gossip as new tips (those made after the
        // highest entry the node holds), by the thief's own key and by the
        // stolen one in turn: imported, and refused. (The run's invariant
        // offers every one of them to every node's import rules at the end.)
        assert!(!store.refused.is_empty(), "node {n} refused none of the thief's rotations during the run");
        assert!(store.refused.values().all(|rule| *rule == "rotation_key"), "node {n} refused by other rules: {:?}", store.refused);
        assert!(!store.proofs.is_empty(), "node {n} holds proofs of the forks the theft made");
    }
    assert!(report.entries_written.adversary >= 6 + 2, "six forks and two rotations: {:?}", report.entries_written);
}

/// The owner revokes at the theft: the revocation reaches every node before
/// any entry the thief signs.
#[test]
fn a_revocation_before_the_thiefs_entries_leaves_them_out_everywhere() {
    for seed in 1..=3 {
        thief_held_off(&scenario(0, 300), seed);
    }
}

/// The owner revokes long after: every node held the thief's forks (and
/// counted the victim's chain frozen by them) before the revocation.
#[test]
fn a_revocation_after_the_thiefs_entries_spread_leaves_them_out_everywhere() {
    for seed in 1..=3 {
        thief_held_off(&scenario(4_000, 300), seed);
    }
}

/// A fast thief, and a revocation while its forks are still arriving.
#[test]
fn a_revocation_among_a_fast_thiefs_entries_leaves_them_out_everywhere() {
    thief_held_off(&scenario(150, 50), 5);
}

/// A victim drawn from the seed, the theft and the revocation too: the
/// scenario names none of them, and the run still holds.
#[test]
fn a_thief_with_every_moment_drawn_from_the_seed_is_held_off() {
    let mut s = scenario(0, 300);
    s.adversaries[0].kind = AdversaryKind::KeyThief { victim: None, steal_ms: None, revoke_ms: None, forks: 4, both_keys: false };
    for seed in 1..=3 {
        let report = agora_sim::run(&s, seed, String::new());
        assert!(report.ok, "seed {seed}: {:?}", violations(&report));
    }
}

/// A victim that is no honest agent is refused by name.
#[test]
fn a_thief_s_victim_must_be_an_honest_agent() {
    let mut s = scenario(0, 300);
    s.adversaries[0].kind = AdversaryKind::KeyThief { victim: Some("nobody".into()), steal_ms: None, revoke_ms: None, forks: 4, both_keys: false };
    assert!(s.validate().expect_err("no such agent").contains("adversaries[0].victim"));
}
