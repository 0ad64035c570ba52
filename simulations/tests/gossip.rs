//! The gossip model (the node's gossipsub: a mesh, a duplicate cache with
//! its time to live, bans taking peers out of the mesh) and the cost model
//! (checks and writes on the node's threads, in its bounded queues: `Busy`
//! answers and lost writes, and convergence all the same).

mod common;

use agora_core::AgentKey;
use agora_sync::gossip::{DUPLICATE_CACHE_MS, MESH_N_HIGH, MESH_N_LOW};
use agora_sync::{Config, Gossip, WireEntry};
use common::*;

/// `n` nodes, every pair connected, settled (meshes formed, heartbeats idle).
fn full(n: usize, seed: u64) -> Net {
    let mut net = Net::with_seed(n, Config::default(), seed);
    for a in 0..n as u64 {
        for b in a + 1..n as u64 {
            net.connect(a, b);
        }
    }
    net.run();
    net.advance(5_000);
    net
}

/// Gossip traffic while one entry appended on node 0 spreads: (messages,
/// bytes of messages and control messages), and whether every node holds it.
fn spread_one(net: &mut Net) -> (u64, u64, bool) {
    let before = net.gossip_traffic;
    let key = AgentKey::from_seed([7; 32]);
    let e = net.append(0, &key, b"a move");
    net.run();
    let after = net.gossip_traffic;
    let everywhere = net.nodes.iter().all(|n| n.store.get(&e.id()).is_some());
    let bytes = after.message_bytes + after.control_bytes - before.message_bytes - before.control_bytes;
    (after.messages - before.messages, bytes, everywhere)
}

/// A move published on one node of 30 (all connected) reaches all of them
/// over the mesh with far fewer gossip messages than flooding sends: below
/// half of flood's count, and at least what the meshes carry (the
/// publisher's flood publish to its 29 peers, then each node's relay to its
/// mesh but the peer it came from); with the IHAVE of three heartbeats
/// counted, fewer bytes too. Flooding (the model before the mesh,
/// `net.flood`) fails the first bound: 29 + 29 × 28 = 841 messages.
#[test]
fn a_message_reaches_every_node_over_the_mesh_with_fewer_packets_than_flooding() {
    let mut flooding = full(30, 3);
    flooding.flood = true;
    let (flood_messages, flood_bytes, flood_everywhere) = spread_one(&mut flooding);
    assert!(flood_everywhere);
    assert_eq!(flood_messages, 29 + 29 * 28, "flooding sends every message on every link but the one it came by");

    let mut net = full(30, 3);
    for i in 0..30 {
        let m = net.mesh(i).len();
        assert!((MESH_N_LOW..=MESH_N_HIGH).contains(&m), "node {i}'s mesh has {m} peers, outside D_low..D_high");
    }
    let relays: u64 = (1..30).map(|i| net.mesh(i).len() as u64 - 1).sum();
    let control_before = net.gossip_traffic.control;
    let (messages, bytes, everywhere) = spread_one(&mut net);
    assert!(everywhere, "the move reached every node");
    assert!(messages * 2 < flood_messages, "{messages} gossip messages over the mesh, {flood_messages} flooding");
    assert!(messages >= 29 + relays, "{messages} gossip messages: fewer than the mesh's {}", 29 + relays);
    assert!(net.gossip_traffic.control > control_before, "IHAVE went out at the heartbeats");
    assert!(bytes < flood_bytes, "{bytes} bytes of gossip and control over the mesh, {flood_bytes} flooding");
    // The same seed gives the same run.
    let mut again = full(30, 3);
    assert_eq!(spread_one(&mut again), (messages, bytes, true));
}

/// A message seen again within the duplicate cache's time is dropped before
/// validation; seen again after it, it is a new message (validated again).
/// A cache that never forgets fails the last step.
#[test]
fn the_duplicate_cache_drops_a_repeat_within_its_time_and_takes_it_after() {
    let mut net = Net::new(2, Config::default());
    net.connect(0, 1);
    net.run();
    let key = AgentKey::from_seed([9; 32]);
    let e = net.nodes[0].store.append(&key, b"once", net.now);
    let bytes = Gossip::Entry(WireEntry { entry: e.encode(), payload: Some(b"once".to_vec()) }).encode();
    net.send_raw_gossip(0, 1, bytes.clone());
    net.run();
    assert!(net.nodes[1].store.get(&e.id()).is_some(), "the first copy is taken");
    let dup = net.gossip_traffic.duplicates;
    net.advance(DUPLICATE_CACHE_MS / 2);
    net.send_raw_gossip(0, 1, bytes.clone());
    net.run();
    assert_eq!(net.gossip_traffic.duplicates, dup + 1, "a repeat within the cache's time is a duplicate");
    net.advance(DUPLICATE_CACHE_MS / 2 + 1_000);
    net.send_raw_gossip(0, 1, bytes);
    net.run();
    assert_eq!(net.gossip_traffic.duplicates, dup + 1, "after the cache's time the same bytes are a new message");
}

/// A peer that sends a node garbage is banned by its replicator; the ban
/// closes the connection, and the peer leaves the node's mesh (and stays
/// out: it cannot connect while banned).
#[test]
fn a_banned_peer_leaves_the_mesh() {
    let mut net = full(10, 5);
    let bad = net.mesh(1)[0];
    assert!(net.nodes[1].gossip.peers().contains(&bad));
    net.send_raw_gossip(bad as usize, 1, b"not a gossip message".to_vec());
    net.run();
    assert!(net.bans.iter().any(|(by, who, _)| *by == 1 && *who == bad), "node 1 banned {bad}: {:?}", net.bans);
    assert!(!net.mesh(1).contains(&bad), "the banned peer left the mesh");
    net.connect(1, bad);
    net.advance(5_000);
    assert!(!net.mesh(1).contains(&bad), "and does not come back while banned");
    assert!(net.mesh(1).len() >= MESH_N_LOW, "the mesh was mended from the other peers: {:?}", net.mesh(1));
}

/// A busy swarm: 20 nodes (19 peers × 4 requests in flight each can
/// overrun a read queue of 64), 5 agents each writing 20 moves fast, every
/// node connected to every other; with `cost` as its `[cost]` block.
fn loaded(cost: &str) -> Scenario {
    let text = format!(
        r#"
name = "loaded"
nodes = 20
agents_per_node = 5
duration_ms = 10_000
settle_ms = 600_000
topology = {{ kind = "full" }}

[network]
latency = {{ kind = "uniform", min_ms = 5, max_ms = 20 }}

[generated]
events_per_agent = 20
topics = 4
interval = {{ kind = "uniform", min_ms = 100, max_ms = 500 }}
{cost}
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("the loaded scenario: {e}"))
}

fn violations(report: &Report) -> Vec<String> {
    report.invariants.iter().filter(|i| !i.held).map(|i| format!("{}: {}", i.name, i.violation.clone().unwrap_or_default())).collect()
}

/// Writes slow enough (40 ms a commit, one core) fill the nodes' write
/// queues: imports are dropped and reported lost, and range requests
/// waiting behind the writes fill the read queues, answered `Busy`, as on
/// a loaded node; the replicators ask again and every honest node still
/// converges with nothing lost. Without the cost model (no `[cost]`) there
/// is neither.
#[test]
fn under_a_high_write_cost_nodes_answer_busy_and_lose_writes_and_still_converge() {
    let idle = run(&loaded(""), 1, "idle".into());
    assert!(idle.ok, "{:?}", violations(&idle));
    assert_eq!(idle.load.lost_writes, 0);

    let slow = loaded("[cost]\ncommit_ns = 40_000_000\ncores = 1\n");
    let report = run(&slow, 1, "slow".into());
    assert!(report.ok, "every invariant holds under load: {:?}", violations(&report));
    assert!(report.convergence_ms.is_some());
    assert!(report.load.lost_writes > 0, "writes were lost: {:?}", report.load);
    assert!(report.load.busy_answers > 0, "requests were answered Busy: {:?}", report.load);
    assert!(report.convergence_ms > idle.convergence_ms, "slow writes delay convergence: {:?} ms against {:?} ms", report.convergence_ms, idle.convergence_ms);
}

/// With every cost zero the runs are those of no cost model at all, byte
/// for byte: the jobs take no time and never queue.
#[test]
fn with_cost_zero_the_run_is_unchanged() {
    let none = run(&loaded(""), 2, "x".into());
    let zero = run(&loaded("[cost]\nverify_ns_per_signature = 0\ncommit_ns = 0\ncommit_ns_per_entry = 0\ncommit_ns_per_byte = 0\n"), 2, "x".into());
    let json = |r: &Report| serde_json::to_string(r).expect("a report serializes");
    assert_eq!(json(&none), json(&zero));
}

/// Every `[cost]` field out of its bounds is refused, named.
#[test]
fn cost_fields_are_bounded_and_named() {
    for (field, value) in [("cores", "0"), ("cores", "65"), ("commit_ns", "10_000_000_001"), ("verify_ns_per_signature", "1_000_000_001")] {
        let text = format!("name = \"c\"\nnodes = 2\nduration_ms = 1\n[cost]\n{field} = {value}\n");
        let e = Scenario::from_toml(&text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(&format!("cost.{field}")), "{field} = {value}: {e:?}");
    }
}
