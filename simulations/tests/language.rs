//! The scenario language's means of attack: scripted adversaries with
//! their own timestamps and forks, and node clocks that are off. Each test
//! runs a small swarm and asserts what the nodes hold and what their merged
//! views show.

use agora_sim::run::{Run, START_MS};
use agora_sim::scenario::Verdict;
use agora_sim::{Report, Scenario};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn violations(report: &Report) -> Vec<String> {
    report.invariants.iter().filter(|i| !i.held).map(|i| format!("{}: {}", i.name, i.violation.clone().unwrap_or_default())).collect()
}

/// An honest agent runs a trajectory, judges it a success and writes a
/// lesson; an adversary on the roster writes, through another honest node,
/// a failure judgment of the same trajectory and the same lesson, after
/// the honest ones but dated `dates` (backdated before them, or not).
fn judged_twice(dates: (&str, &str)) -> String {
    format!(
        r#"
name = "backdated-verdicts"
nodes = 3
duration_ms = 12_000
settle_ms = 120_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 40 }} }}

[[scripted]]
name = "honest"
node = 0
moves = [
  {{ at_ms = 1_000, move = "trajectory", label = "run", text = "find the failing test" }},
  {{ at_ms = 5_000, move = "judgment", label = "worked", target = "run", success = true, text = "the test passes" }},
  {{ at_ms = 6_000, move = "memory_item", label = "lesson", text = "bisect before reading" }},
]

[[scripted]]
name = "mallory"
node = 1
adversary = true
moves = [
  {{ at_ms = 8_000, move = "judgment", label = "failed", target = "run", success = false, text = "it failed" {} }},
  {{ at_ms = 9_000, move = "memory_item", label = "copy", text = "bisect before reading" {} }},
]

[[expect]]
label = "run"
judged = "none"

[[expect]]
label = "lesson"
status = "contested"
"#,
        dates.0, dates.1
    )
}

/// A backdated failure judgment or duplicate lesson does not flip the
/// honest outcome: the node's rules order two agents' events causally, not
/// by their clocks, so the adversary's verdict dated before the honest one
/// is a conflict (no verdict stands), exactly as when it is dated after,
/// and the honest lesson is an original, never a duplicate of the copy
/// dated before it. The adversary's entries do carry the dates it chose.
#[test]
fn backdated_scripted_verdicts_and_lessons_do_not_flip_the_honest_outcome() {
    let backdated = scenario(&judged_twice((", time_ms = 2_000", ", skew_ms = -8_000")));
    let (report, net) = Run::new(&backdated, 1).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    assert_eq!((report.swarm.honest_agents, report.swarm.adversary_agents), (1, 1));
    assert_eq!((report.entries_written.honest, report.entries_written.adversary), (3, 2));
    // Every honest node holds the honest moves dated when made (1, 5 and
    // 6 s) and mallory's dated as it chose: 2 s, and 1 s raised to 2 s
    // (never earlier than its predecessor, the format's rule).
    for n in 0..3 {
        let mut dates: Vec<u64> = net.nodes[n].store.entries.values().map(|(e, _)| e.header().timestamp_ms - START_MS).collect();
        dates.sort_unstable();
        assert_eq!(dates, [1_000, 2_000, 2_000, 5_000, 6_000], "node {n}");
    }

    // The same moves, dated when made: the same outcome.
    let on_time = scenario(&judged_twice(("", "")));
    let report = agora_sim::run(&on_time, 1, String::new());
    assert!(report.ok, "{:?}", violations(&report));

    // Without the adversary's judgment the honest verdict stands: the
    // expectation of no verdict is not met (the check has teeth).
    let mut alone = backdated.clone();
    alone.scripted[1].moves.remove(0);
    alone.validate().expect("valid");
    let report = agora_sim::run(&alone, 1, String::new());
    assert!(!report.ok);
    let unmet = violations(&report).join("; ");
    assert!(unmet.contains(&format!("\"run\" judged: expected None, found {:?}", Verdict::Success)), "{unmet}");
}

/// A scripted adversary's `fork` is an equivocation: a second entry at the
/// seq of its previous move, proven at every honest node, its moves still
/// no honest entry.
#[test]
fn a_scripted_fork_is_proven_at_every_honest_node() {
    let s = scenario(
        r#"
name = "scripted-fork"
nodes = 4
duration_ms = 10_000
settle_ms = 120_000
network = { latency = { kind = "uniform", min_ms = 5, max_ms = 40 } }

[[scripted]]
name = "mallory"
node = 2
adversary = true
moves = [
  { at_ms = 1_000, move = "propose", label = "a", text = "the cache is safe" },
  { at_ms = 2_000, move = "propose", label = "b", text = "the cache is unsafe", fork = true, time_ms = 500 },
  { at_ms = 3_000, move = "support", target = "b", text = "as I said" },
]
"#,
    );
    let report = agora_sim::run(&s, 3, String::new());
    assert!(report.ok, "{:?}", violations(&report));
    assert_eq!(report.forks.len(), 1, "{:?}", report.forks);
    assert_eq!((report.forks[0].seq, report.forks[0].forked_ms), (1, 2_000));
    assert_eq!((report.entries_written.honest, report.entries_written.adversary), (0, 3));
    assert!(report.spread.is_none(), "an adversary's moves are not honest moves");
}

/// New fields are refused when they make no sense, naming the field.
#[test]
fn timestamps_forks_and_clocks_are_bounded_and_named() {
    let base = r#"
name = "refusals"
nodes = 2
duration_ms = 1_000
"#;
    let refused = |extra: &str, says: &str| {
        let error = Scenario::from_toml(&format!("{base}{extra}")).expect_err(extra).to_string();
        assert!(error.contains(says), "{extra:?} was refused with {error:?}, not naming {says:?}");
    };
    let agent = |adversary: bool, moves: &str| format!("[[scripted]]\nname = \"m\"\nnode = 0\nadversary = {adversary}\nmoves = [{moves}]\n");
    refused(&agent(true, r#"{ at_ms = 1, move = "propose", time_ms = 5, skew_ms = 3 }"#), "time_ms and skew_ms both given");
    refused(&agent(true, r#"{ at_ms = 1, move = "propose", time_ms = 100_000_000_000 }"#), "scripted[0].moves[0].time_ms: 100000000000 is more than");
    refused(&agent(true, r#"{ at_ms = 1, move = "propose", skew_ms = -400_000_000_000 }"#), "scripted[0].moves[0].skew_ms (either way)");
    refused(&agent(false, r#"{ at_ms = 1, move = "propose" }, { at_ms = 2, move = "propose", fork = true }"#), "fork is for adversaries");
    refused(&agent(true, r#"{ at_ms = 1, move = "propose", fork = true }"#), "fork needs an earlier move");
    refused(
        &agent(true, r#"{ at_ms = 1, move = "propose", label = "p" }, { at_ms = 2, move = "judgment", target = "p", success = true }"#),
        "not a trajectory",
    );
    refused(&agent(true, r#"{ at_ms = 1, move = "trajectory", label = "t" }, { at_ms = 2, move = "judgment", target = "t" }"#), "a judgment needs one");
    refused("[[clocks]]\nnode = 2\nskew_ms = 5\n", "clocks[0].node: node 2 is not one of the 2 honest nodes");
    refused("[[clocks]]\nnode = 1\ndrift_ppm = 200_000\n", "clocks[0].drift_ppm (either way): 200000 is more than 100000");
    refused("[[clocks]]\nnode = 1\n[[clocks]]\nnode = 1\n", "clocks[1].node: node 1 has a clock already");
    refused("[[clocks]]\nnode = 1\nlate = 3\n", "unknown field `late`");
}

/// Three nodes, one agent each, node 2's clock `clock` (a TOML table's
/// fields, or nothing).
fn clocked(clock: &str) -> Scenario {
    let clocks = if clock.is_empty() { String::new() } else { format!("[[clocks]]\nnode = 2\n{clock}\n") };
    scenario(&format!(
        r#"
name = "clock-skew"
nodes = 3
agents_per_node = 1
duration_ms = 5_000
settle_ms = 300_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 40 }} }}
generated = {{ events_per_agent = 10, interval = {{ kind = "uniform", min_ms = 100, max_ms = 400 }} }}
{clocks}
"#
    ))
}

/// A node whose clock runs two minutes ahead signs its entries two minutes
/// ahead (with its drift): its peers defer them, as dated beyond the
/// allowed skew, and take them when they fall due; then the swarm
/// converges and every invariant holds.
#[test]
fn a_node_clock_ahead_has_its_entries_deferred_then_accepted() {
    let on_time = agora_sim::run(&clocked(""), 5, String::new());
    assert!(on_time.ok, "{:?}", violations(&on_time));
    let quick = on_time.convergence_ms.expect("converged");
    assert!(quick < 5_000, "{quick} ms");

    let s = clocked("skew_ms = 120_000\ndrift_ppm = 50_000");
    let (report, net) = Run::new(&s, 5).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    let slow = report.convergence_ms.expect("converged");
    // The last entries are due 120 s − 60 s after they were written, at
    // most 5 s before activity ended.
    assert!(slow > 50_000, "converged {slow} ms after activity, entries dated 120 s ahead");
    for n in [0, 1] {
        assert!(net.nodes[n].rep.stats().deferred > 0, "node {n} deferred nothing");
    }
    // Each of node 2's entries is dated by its clock: 120 s ahead, plus
    // 5% of the time elapsed since the run's start.
    let mut dated = 0;
    for (id, spread) in &net.spread {
        let (e, _) = net.nodes[0].store.get(id).expect("held everywhere");
        let expected = spread.appended_ms + 120_000 + (spread.appended_ms - START_MS) / 20;
        if e.header().timestamp_ms > spread.appended_ms + 60_000 {
            assert_eq!(e.header().timestamp_ms, expected);
            dated += 1;
        } else {
            assert_eq!(e.header().timestamp_ms, spread.appended_ms, "an entry of an on-time node");
        }
    }
    assert_eq!(dated, 10, "node 2's agent's ten moves, dated by its clock");
}

/// Alice writes on node 0 before and after the founder removes her at 5 s;
/// Bob, off the roster until admitted at 5 s, tries a move at 2 s and makes
/// one at 6 s. After the run every node's roster pins Alice's chain at her
/// second entry: her later entries count in no node's view (and reach no
/// other node), every node's views agree, and Bob's one move counts
/// everywhere.
#[test]
fn a_removal_during_the_run_keeps_the_removed_agents_later_entries_out_of_every_view() {
    let s = scenario(
        r#"
name = "roster-changes"
nodes = 3
duration_ms = 12_000
settle_ms = 120_000
network = { latency = { kind = "uniform", min_ms = 5, max_ms = 40 } }

[[scripted]]
name = "alice"
node = 0
moves = [
  { at_ms = 1_000, move = "propose", text = "one" },
  { at_ms = 3_000, move = "propose", text = "two" },
  { at_ms = 7_000, move = "propose", text = "three" },
  { at_ms = 9_000, move = "propose", text = "four" },
]

[[scripted]]
name = "bob"
node = 1
moves = [
  { at_ms = 2_000, move = "propose", text = "too early" },
  { at_ms = 6_000, move = "propose", label = "bob", text = "on the roster" },
]

[[roster]]
at_ms = 5_000
remove = "alice"

[[roster]]
at_ms = 5_000
admit = "bob"
"#,
    );
    let (report, net) = Run::new(&s, 2).play_and_keep(String::new());
    // Alice's two moves, bob's one and the founder's three (alice's
    // admission, on the roster from the start, then her removal and bob's
    // admission) are honest; alice's two after her removal are not.
    assert_eq!((report.entries_written.honest, report.entries_written.adversary), (6, 2));
    let alice = agora_core::AgentKey::from_seed(agora_core::sha256(b"agora-sim scripted alice")).agent_id();
    let bob = agora_core::AgentKey::from_seed(agora_core::sha256(b"agora-sim scripted bob")).agent_id();
    for n in 0..3 {
        let store = &net.nodes[n].store;
        let roster = agora_sim::views::derive_roster(store, net.founder, &net.members_from_start);
        assert_eq!(
            roster.cut_off.get(&alice),
            Some(&2),
            "node {n}: {:?} {:?} {:?} {:?}",
            roster.removed,
            roster.skipped,
            roster.members.len(),
            roster.pending_at_seq
        );
        assert!(roster.admits(&bob), "node {n}");
        let held: Vec<(u64, bool)> =
            store.entries.keys().filter(|(a, _, _)| *a == alice).map(|(a, seq, id)| (*seq, roster.admits_entry(a, *seq, id))).collect();
        let expected: &[(u64, bool)] = if n == 0 { &[(1, true), (2, true), (3, false), (4, false)] } else { &[(1, true), (2, true)] };
        assert_eq!(held, expected, "node {n}: alice's entries held, and whether they count");
        let bobs: Vec<u64> = store.entries.keys().filter(|(a, _, _)| *a == bob).map(|(_, seq, _)| *seq).collect();
        assert_eq!(bobs, [1], "node {n}: bob's one move, made once admitted");
    }
    assert!(report.ok, "{:?}", violations(&report));
}

/// Agents listed node by node (`agents = [..]`), and agents whose node
/// crashed and restarted, or joined late, acting again once it is back
/// (`resume_after_churn`): every generated agent makes all its moves, and
/// the swarm converges.
#[test]
fn agents_listed_per_node_act_again_after_their_node_comes_back() {
    let s = scenario(
        r#"
name = "agents-back"
nodes = 4
agents = [2, 0, 1, 1]
duration_ms = 30_000
settle_ms = 120_000
network = { latency = { kind = "uniform", min_ms = 5, max_ms = 40 } }
generated = { events_per_agent = 12, resume_after_churn = true, interval = { kind = "uniform", min_ms = 200, max_ms = 600 } }
churn = [{ node = 2, crash_ms = 1_000, restart_ms = 4_000 }, { node = 3, join_ms = 6_000 }]
"#,
    );
    let (report, net) = Run::new(&s, 4).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    assert_eq!(report.swarm.honest_agents, 4);
    // Every move of every agent, those of nodes 2 and 3 included.
    assert_eq!(report.entries_written.honest, 4 * 12);
    assert_eq!(net.nodes[0].store.entries.len(), 4 * 12);
    // Node 3's agent moved only once its node had joined, node 2's agent
    // both before its crash and after its restart.
    let agent = |name: &str| agora_core::AgentKey::from_seed(agora_core::sha256(format!("agora-sim 4 {name}").as_bytes())).agent_id();
    let dates = |name: &str| -> Vec<u64> {
        let a = agent(name);
        net.nodes[0].store.entries.iter().filter(|((author, _, _), _)| *author == a).map(|(_, (e, _))| e.header().timestamp_ms - START_MS).collect()
    };
    let (node2, node3) = (dates("agent-2-0"), dates("agent-3-0"));
    assert_eq!((node2.len(), node3.len()), (12, 12));
    assert!(node3.iter().all(|t| *t >= 6_000), "{node3:?}");
    assert!(node2.iter().any(|t| *t < 1_000) && node2.iter().any(|t| *t >= 4_000) && !node2.iter().any(|t| (1_000..4_000).contains(t)), "{node2:?}");

    // Without it, the agents of nodes 2 and 3 stop for good at their
    // node's first downtime.
    let mut stopping = s.clone();
    stopping.generated.resume_after_churn = false;
    let report = agora_sim::run(&stopping, 4, String::new());
    assert!(report.ok, "{:?}", violations(&report));
    assert!(report.entries_written.honest < 4 * 12 - 12, "{:?}", report.entries_written);

    let refused = |extra: &str, says: &str| {
        let error = Scenario::from_toml(&format!("name = \"x\"\nnodes = 3\nduration_ms = 1\n{extra}")).expect_err(extra).to_string();
        assert!(error.contains(says), "{extra:?} was refused with {error:?}, not naming {says:?}");
    };
    refused("agents = [1, 2]", "agents (count): 2 is less than 3");
    refused("agents = [1, 2, 3]\nagents_per_node = 2", "agents and agents_per_node both given");
    refused("agents = [1, 20000, 3]", "agents[1]: 20000 is more than 10000");
}

/// The topic a generated move's text names (`topic N: ...`), if any.
fn topic_of(payload: &[u8]) -> Option<u64> {
    use agora_graph::Event;
    let text = match Event::decode(payload) {
        Ok(Event::Proposition { text } | Event::Support { text, .. } | Event::Contradiction { text, .. }) => text,
        Ok(Event::Refinement { text, .. } | Event::Synthesis { text, .. }) => text,
        _ => match agora_merge::MergeEvent::decode(payload) {
            Ok(agora_merge::MergeEvent::Dispute { counter_claim: Some(text), .. }) => text,
            _ => return None,
        },
    };
    text.strip_prefix("topic ")?.split(':').next()?.parse().ok()
}

/// What each generated move targets: (its topic, each target's topic).
fn targets_by_topic(topic_bound: bool) -> Vec<(u64, Vec<u64>)> {
    let s = scenario(&format!(
        r#"
name = "topics"
nodes = 3
agents_per_node = 3
duration_ms = 20_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 40 }} }}
generated = {{ events_per_agent = 30, topics = 5, topic_bound = {topic_bound}, interval = {{ kind = "uniform", min_ms = 100, max_ms = 500 }} }}
"#
    ));
    let (report, net) = Run::new(&s, 6).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    let store = &net.nodes[0].store;
    let topic = |id: &agora_core::EntryId| store.get(id).and_then(|(_, p)| p.as_deref().and_then(topic_of));
    let mut answers = Vec::new();
    for (e, p) in store.entries.values() {
        let payload = p.as_deref().expect("every payload held");
        let targets: Vec<agora_core::EntryId> = match agora_graph::Event::decode(payload) {
            Ok(agora_graph::Event::Support { target, .. } | agora_graph::Event::Contradiction { target, .. }) => vec![target],
            Ok(agora_graph::Event::Refinement { target, .. }) => vec![target],
            Ok(agora_graph::Event::Synthesis { sources, .. }) => sources,
            _ => match agora_merge::MergeEvent::decode(payload) {
                Ok(agora_merge::MergeEvent::Dispute { target, .. }) => vec![target],
                _ => continue,
            },
        };
        let own = topic_of(payload).unwrap_or_else(|| panic!("{:?} names no topic", e.id()));
        answers.push((own, targets.iter().map(|t| topic(t).expect("a generated target")).collect()));
    }
    assert!(answers.len() > 50, "{} answers", answers.len());
    answers
}

/// With `topic_bound`, every support, contradiction, refinement, synthesis
/// and dispute a generated agent makes targets a position of its own
/// topic; without it, targets are any recent position (some of another
/// topic).
#[test]
fn topic_bound_targets_stay_within_their_topic() {
    let bound = targets_by_topic(true);
    let off: Vec<_> = bound.iter().filter(|(own, targets)| targets.iter().any(|t| t != own)).collect();
    assert!(off.is_empty(), "answers across topics: {off:?}");
    let free = targets_by_topic(false);
    assert!(free.iter().any(|(own, targets)| targets.iter().any(|t| t != own)), "unbound targets all within their topic");
}

/// Four honest nodes writing, and `adversary` (a TOML inline table).
fn attacked(adversary: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "attacked"
nodes = 4
agents_per_node = 1
duration_ms = 10_000
settle_ms = 120_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 40 }} }}
generated = {{ events_per_agent = 20, interval = {{ kind = "uniform", min_ms = 100, max_ms = 400 }} }}
adversaries = [{adversary}]
"#
    ))
}

/// A colluding forker reaches honest nodes only through its strippers:
/// every honest node holds its forked entries without their payloads and
/// the proof of its fork, and every invariant holds.
#[test]
fn a_colluding_forker_and_stripper_leave_honest_nodes_proofs_without_payloads() {
    let s = attacked(r#"{ kind = "colluding_forker", fork_at_seq = 2, branches = 3, count = 2, every_ms = 1_000 }"#);
    let (report, net) = Run::new(&s, 7).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    assert_eq!(report.forks.len(), 1);
    let forker = agora_core::AgentKey::from_seed(agora_core::sha256(b"agora-sim 7 adversary 4 0")).agent_id();
    for n in 0..4 {
        let store = &net.nodes[n].store;
        let held: Vec<bool> = store.entries.iter().filter(|((a, _, _), _)| *a == forker).map(|(_, (_, p))| p.is_some()).collect();
        assert!(held.len() >= 4, "node {n} holds {} of the forker's entries", held.len());
        assert!(held.iter().all(|p| !p), "node {n} holds a payload of the forker's");
        assert!(store.proofs.keys().any(|(a, seq)| *a == forker && *seq == 2), "node {n}: no proof");
    }
}

/// An eclipse: until it ends the victim's only links are the eclipsers,
/// so it holds nothing of the honest agents but its own; then it gets one
/// honest peer and the swarm converges.
#[test]
fn an_eclipsed_node_catches_up_once_it_has_one_honest_peer() {
    let s = attacked(r#"{ kind = "eclipse", victim = 2, until_ms = 8_000, count = 2 }"#);
    let (report, net) = Run::new(&s, 8).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    let before = report.series.iter().filter(|p| (2_000..8_000).contains(&p.at_ms)).map(|p| p.nodes_in_sync).max().unwrap_or(0);
    assert!(before < 4, "all four honest nodes in sync during the eclipse");
    assert!(net.connected(2, 3) && !net.connected(2, 0) && !net.connected(2, 1), "the victim's one honest peer is node 3");
    assert_eq!(net.nodes[2].store.entries.len(), net.nodes[0].store.entries.len());
}

/// A selective relay that drops the gossip of every author: the nodes it
/// links still get everything, by range sync.
#[test]
fn a_selective_relay_delays_nothing_that_range_sync_does_not_bring() {
    let s = attacked(r#"{ kind = "selective_relay", per_mille = 1_000, delay_ms = 0 }"#);
    let report = agora_sim::run(&s, 9, String::new());
    assert!(report.ok, "{:?}", violations(&report));
    let s = attacked(r#"{ kind = "sybil", identities = 3, count = 2, every_ms = 2_000 }"#);
    let report = agora_sim::run(&s, 9, String::new());
    assert!(report.ok, "{:?}", violations(&report));
    // Every action: 2 nodes × 3 identities, a proposal or support each, and
    // a dispute each once an honest position is held.
    assert!(report.entries_written.adversary >= 6 * 4, "{:?}", report.entries_written);
    assert_eq!(report.entries_written.adversary % 6, 0, "{:?}", report.entries_written);
}

/// Alice proposes through node 0 and Bob contradicts through node 1; at
/// 5 s node 0's operator redacts Alice's claim and node 1's every entry of
/// Bob's. Node 2 joins at 8 s, while a partition leaves it only node 0,
/// which sends the claim without its payload; after the heal node 2 fetches
/// the payload from node 1.
const REDACTED: &str = r#"
name = "redacted"
nodes = 3
duration_ms = 20_000
settle_ms = 120_000
network = { latency = { kind = "uniform", min_ms = 5, max_ms = 40 } }
churn = [{ node = 2, join_ms = 8_000 }]
redactions = [{ at_ms = 5_000, node = 0, label = "claim" }, { at_ms = 5_000, node = 1, agent = "bob" }]

[[partitions]]
at_ms = 6_000
heal_ms = 15_000
groups = [[0, 2], [1]]

[[scripted]]
name = "alice"
node = 0
moves = [{ at_ms = 1_000, move = "propose", label = "claim", text = "the cache is stale" }]

[[scripted]]
name = "bob"
node = 1
moves = [{ at_ms = 2_000, move = "contradict", label = "doubt", target = "claim", text = "the cache was flushed" }]

[[expect]]
label = "claim"
status = "contested"
"#;

/// A redaction changes no view and sticks: the redacting nodes hold the
/// residues and never the payloads again, every node shows the same
/// statuses and view hash, and the node that got the claim without its
/// payload from the redactor fetched it from the node that kept it.
#[test]
fn a_redaction_changes_no_view_and_never_comes_back() {
    let s = scenario(REDACTED);
    let (report, net) = Run::new(&s, 1).play_and_keep(String::new());
    assert!(report.ok, "{:?}", violations(&report));
    let invariant = report.invariants.iter().find(|i| i.name == "a payload redacted at a node never comes back to it").expect("the redaction invariant");
    assert!(invariant.held);
    // Node n's entry of the proposition (or the contradiction): is it
    // redacted there, is its payload held there?
    let entry = |n: usize, contradiction: bool| {
        let store = &net.nodes[n].store;
        store
            .entries
            .iter()
            .find_map(|((_, _, id), (_, p))| {
                let meaning = p.as_deref().or_else(|| store.redacted.get(id).map(|r| &r[..]))?;
                let is_contradiction = matches!(agora_graph::Event::decode(meaning).ok()?, agora_graph::Event::Contradiction { .. });
                (is_contradiction == contradiction).then(|| (store.redacted.contains_key(id), p.is_some()))
            })
            .unwrap_or_else(|| panic!("node {n} holds the move's entry"))
    };
    // Alice's claim: redacted at node 0, held at 1 and 2; Bob's doubt:
    // redacted at 1, held at 0 and 2.
    assert_eq!([entry(0, false), entry(1, false), entry(2, false)], [(true, false), (false, true), (false, true)]);
    assert_eq!([entry(0, true), entry(1, true), entry(2, true)], [(false, true), (true, false), (false, true)]);
    assert_eq!(report.view_hashes.iter().collect::<std::collections::BTreeSet<_>>().len(), 1, "{:?}", report.view_hashes);
    let redactions: Vec<_> = report.events.iter().filter(|e| e.kind == agora_sim::RunEventKind::Redact).map(|e| (e.at_ms, e.nodes.clone())).collect();
    assert_eq!(redactions, [(5_000, vec![0]), (5_000, vec![1])]);
}
