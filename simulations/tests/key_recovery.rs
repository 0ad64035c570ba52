//! Both keys stolen, the roster's authority recovers (`protocol-spec/keys.md`,
//! "Recovery: both keys lost"; `scenarios/key-recovery.toml`): a thief
//! copies an honest agent's current and next keys, so its rotation of the
//! chain to a key of its own is valid and every node stores it; the owner
//! cannot revoke, and the workspace's founder binds the agent to a fresh key
//! after its last entry before the theft (a roster `recover` event), then the
//! owner writes its recover entry and goes on under the new key. On several
//! seeds, with the recovery long after the thief's entries spread and before
//! its first one: one view hash, nothing the thief signed counts (its valid
//! rotation and what follows it included), the owner's entries from the
//! recover entry on count. Without the recovery, the run's own checks say
//! the thief's entries count. The search's key-recovery family is tested
//! with the others (`search.rs`).

use agora_core::{AgentId, KeyEvent};
use agora_sim::net::Net;
use agora_sim::scenario::AdversaryKind;
use agora_sim::{Report, Scenario};
use std::collections::BTreeSet;
use std::path::Path;

fn load() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/key-recovery.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The scenario with the recovery `revoke_ms` after the theft.
fn recovering_after(revoke_ms: u64) -> Scenario {
    let mut s = load();
    match &mut s.adversaries[0].kind {
        AdversaryKind::KeyThief { revoke_ms: r, both_keys: true, .. } => *r = Some(revoke_ms),
        other => panic!("key-recovery.toml's adversary is a thief of both keys, not {other:?}"),
    }
    s
}

fn violations(report: &Report) -> Vec<String> {
    report.invariants.iter().filter(|i| !i.held).map(|i| format!("{}: {}", i.name, i.violation.clone().unwrap_or_default())).collect()
}

const COUNTED: &str = "no entry a key thief signed counts at any honest node";
const OWNERS: &str = "every entry an owner wrote from its revocation or recovery on counts at every honest node";
const ROTATED: &str = "every rotation a thief of both keys made is stored at every honest node, and neither it nor any entry after it counts";

/// The victim: the author of the recover entries a node holds (exactly one).
fn victim(net: &Net, n: usize) -> AgentId {
    let store = &net.nodes[n].store;
    let recovered: BTreeSet<AgentId> =
        store.entries.values().filter(|(e, _)| e.header().key_event() == KeyEvent::Recover).map(|(e, _)| e.header().author).collect();
    assert_eq!(recovered.len(), 1, "node {n} holds the recover entries of one agent");
    recovered.into_iter().next().expect("one")
}

/// Play `s` with `seed` and check what a recovery must leave: every
/// invariant (the thieves' among them: nothing the thief signed counts, its
/// valid rotation stored everywhere and nothing after it counting, the
/// owner's entries from the recover entry on counting) and one view hash;
/// and, at every honest node, the roster binds one recovery of the victim,
/// the node holds the thief's rotation (valid: nothing was refused) and
/// counts the owner's entries under the recovered key, the recover entry
/// and more.
fn recovered(s: &Scenario, seed: u64) {
    let (report, net) = agora_sim::run::Run::new(s, seed).play_and_keep(String::new());
    assert!(report.ok, "seed {seed}: {:?}", violations(&report));
    for name in [COUNTED, OWNERS, ROTATED] {
        assert!(report.invariants.iter().any(|i| i.name == name && i.held), "{name} is checked: {:?}", report.invariants);
    }
    let distinct: BTreeSet<&String> = report.view_hashes.iter().collect();
    assert_eq!(distinct.len(), 1, "seed {seed}: one view hash: {:?}", report.view_hashes);
    let x = victim(&net, 0);
    for n in 0..s.nodes {
        let store = &net.nodes[n].store;
        let roster = agora_sim::views::derive_roster(store, net.founder, &net.members_from_start);
        let bindings = roster.recoveries.get(&x).map_or(0, Vec::len);
        assert_eq!(bindings, 1, "seed {seed}: node {n}'s roster binds one recovery of the victim");
        let granted = roster.recoveries[&x][0].key;
        let chain: Vec<_> = store.entries.iter().filter(|((a, _, _), _)| *a == x).collect();
        let rotations = chain.iter().filter(|(_, (e, _))| e.header().key_event() == KeyEvent::Rotate).count();
        assert!(rotations >= 1, "seed {seed}: node {n} holds the thief's valid rotation");
        assert!(store.refused.is_empty(), "seed {seed}: node {n} refused entries: {:?}", store.refused);
        let counted_under_granted =
            chain.iter().filter(|((a, seq, id), (e, _))| e.header().signing_key() == granted && roster.admits_entry(a, *seq, id)).count();
        assert!(counted_under_granted >= 2, "seed {seed}: node {n} counts the recover entry and what the owner wrote after it ({counted_under_granted})");
    }
    assert!(report.entries_written.adversary >= 2 + 6, "two rotations and six entries: {:?}", report.entries_written);
}

/// The recovery 3 s after the theft: every node held the thief's rotations
/// and entries, and counted the chain the thief took over, before it.
#[test]
fn a_recovery_after_the_thiefs_entries_spread_leaves_them_out_everywhere() {
    for seed in 1..=3 {
        recovered(&load(), seed);
    }
}

/// The recovery at the theft: the founder binds before the thief rotates;
/// its valid rotation arrives at nodes that already bind the recovery.
#[test]
fn a_recovery_before_the_thiefs_rotation_leaves_it_out_everywhere() {
    for seed in 1..=2 {
        recovered(&recovering_after(0), seed);
    }
}

/// Without the recovery (the founder binds nothing, the owner writes on
/// under its old key), the thief's valid rotation decides what counts: its
/// entries after it count at every node, and the run's checks say so.
#[test]
fn without_the_recovery_the_thiefs_entries_count_and_the_run_says_so() {
    let s = load();
    let report = agora_sim::run::Run::new(&s, 1).without_recovery().play(String::new());
    assert!(!report.ok, "a run without the recovery fails");
    for name in [COUNTED, ROTATED] {
        let check = report.invariants.iter().find(|i| i.name == name).unwrap_or_else(|| panic!("{name} is checked"));
        assert!(!check.held, "{name} is violated without the recovery: {:?}", report.invariants);
        assert!(check.violation.as_deref().is_some_and(|v| v.contains("counts")), "{name}: {:?}", check.violation);
    }
    let distinct: BTreeSet<&String> = report.view_hashes.iter().collect();
    assert_eq!(distinct.len(), 1, "the nodes agree, on the thief's chain: {:?}", report.view_hashes);
}

/// `both_keys` is read from the file and written back only when set: a
/// thief of the current key alone reads and writes as before.
#[test]
fn both_keys_is_a_field_of_the_key_thief() {
    let s = load();
    assert!(matches!(s.adversaries[0].kind, AdversaryKind::KeyThief { both_keys: true, .. }));
    let one_key = AdversaryKind::KeyThief { victim: None, steal_ms: None, revoke_ms: None, forks: 4, both_keys: false };
    assert!(!serde_json::to_string(&one_key).expect("json").contains("both_keys"));
    let both = AdversaryKind::KeyThief { victim: None, steal_ms: None, revoke_ms: None, forks: 4, both_keys: true };
    assert!(serde_json::to_string(&both).expect("json").contains("\"both_keys\":true"));
}
