//! The replicator's bounds and invariants under input that the scenarios of
//! `replication.rs` do not reach: bursts of gossiped branch entries, claims repeated
//! with more heads, branches whose forward range comes back before their
//! backfill, and random swarms under small limits, with forks, withholders
//! and strippers (every `assert!` in the replicator runs on each of them).

mod common;

use agora_core::entry::next_header;
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentId, AgentKey, EntryId, SignedEntry};
use agora_sync::{Config, Gossip, Head, ImportOutcome, Message, Output, PeerId, Replicator, WireEntry};
use common::*;
use std::collections::BTreeMap;

/// `n` entries of `key`'s chain, signed without a store.
fn signed_chain(key: &AgentKey, n: usize, salt: &str) -> Vec<SignedEntry> {
    let mut chain: Vec<SignedEntry> = Vec::with_capacity(n);
    for i in 0..n {
        let payload = format!("{salt} {i}");
        let header = next_header(key.agent_id(), chain.last(), 1, payload.as_bytes()).expect("header");
        chain.push(SignedEntry::sign(header, key));
    }
    chain
}

/// A member's branch, gossiped entry by entry through one relay, does not
/// link to what this node holds. Gossip takes no request slot, so each
/// failed import must not ask for a range at once: the branch heads are
/// claimed for the relay and probed within the limits.
#[test]
fn gossiped_branch_entries_never_put_requests_beyond_the_limits() {
    let key = AgentKey::from_seed([1; 32]);
    let ours = signed_chain(&key, 3_000, "ours");
    let branch = signed_chain(&key, 3_000, "theirs");
    let config = Config::default();
    let mut rep = Replicator::new(config.clone());
    let tip = ours.last().expect("entries");
    rep.set_local_frontier(vec![Head { author: key.agent_id(), seq: tip.header().seq, id: tip.id() }], 0);
    rep.connected(PeerId(7), 0);
    let mut most = 0;
    for e in branch.iter().skip(1).step_by(3) {
        rep.gossip(PeerId(7), Gossip::Entry(WireEntry { entry: e.encode(), payload: None }), 0);
        while let Some(out) = rep.poll() {
            if let Output::Import { id, .. } = out {
                rep.import_result(id, ImportOutcome::PredecessorMissing { seq: e.header().seq }, 0);
            }
        }
        most = most.max(rep.in_flight());
    }
    assert!(most >= 1, "the branch is asked for");
    assert!(most <= config.in_flight_per_peer, "{most} requests in flight to the relay");
}

/// A peer that claims an author outside the roster with one head, then the
/// same author with many, holds no more claims than its bound.
#[test]
fn claims_of_non_members_stay_within_their_bound_when_repeated() {
    let config = Config::default();
    let mut rep = Replicator::new(config.clone());
    rep.set_admitted(Some(BTreeMap::new()), 0);
    rep.connected(PeerId(7), 0);
    let id = |a: u32, i: u32| {
        let mut id = [0u8; 32];
        id[..4].copy_from_slice(&a.to_le_bytes());
        id[4..8].copy_from_slice(&i.to_le_bytes());
        EntryId(id)
    };
    for a in 0..config.non_member_heads_per_peer as u32 {
        let author = AgentId([a as u8; 32]);
        let now = 10 * u64::from(a);
        rep.handle(PeerId(7), Message::Frontier(vec![Head { author, seq: 1, id: id(a, 0) }]), now);
        let many = (1..=config.heads_per_author_max as u32).map(|i| Head { author, seq: 5, id: id(a, i) }).collect();
        rep.handle(PeerId(7), Message::Frontier(many), now);
    }
    assert!(rep.claims_held() <= config.non_member_heads_per_peer, "{} claims held", rep.claims_held());
    // Admitting everyone makes them members: their claims are no longer counted against the bound.
    rep.set_admitted(None, 1_000_000);
    assert!(rep.claims_held() <= config.non_member_heads_per_peer);
}

/// Two nodes hold branches of one chain that part at seq 10. The forward
/// range above the asker's head fails to link; while the range below is
/// backfilled, that forward range is not asked again (responses arrive
/// newest first, so it would come back, fail and be asked again, in a loop,
/// before the backfill arrives). Both end with both branches.
#[test]
fn a_range_that_fails_to_link_is_not_asked_again_while_its_backfill_is_in_flight() {
    let mut net = Net::new(2, small());
    net.newest_first = true;
    let key = AgentKey::from_seed([3; 32]);
    let ours = signed_chain(&key, 18, "ours");
    let theirs: Vec<SignedEntry> = {
        let mut chain = ours[..9].to_vec();
        for i in 9..22 {
            let header = next_header(key.agent_id(), chain.last(), 1, format!("theirs {i}").as_bytes()).expect("header");
            chain.push(SignedEntry::sign(header, &key));
        }
        chain
    };
    for e in &ours {
        net.nodes[0].store.put(e, Some(format!("ours {}", e.header().seq - 1).as_bytes()), 1);
    }
    for (i, e) in theirs.iter().enumerate() {
        let payload = if i < 9 { format!("ours {i}") } else { format!("theirs {i}") };
        net.nodes[1].store.put(e, Some(payload.as_bytes()), 1);
    }
    net.connect(0, 1);
    net.run();
    let asked_above = net.request_log.iter().filter(|(from, _, start, _)| *from == 0 && start.seq == 19).count();
    assert!(asked_above <= 2, "node 0 asked for seq 19 on {asked_above} times");
    assert_eq!(net.nodes[0].store.entries.len(), 31);
    assert_eq!(net.nodes[1].store.entries.keys().collect::<Vec<_>>(), net.nodes[0].store.entries.keys().collect::<Vec<_>>());
    assert!(net.bans.is_empty(), "{:?}", net.bans);
}

/// One random swarm under small random limits (one request in flight,
/// responses of a few entries, short timeouts), with withholders and
/// strippers, responses delivered oldest or newest first, and (`forks`)
/// three authors written on several nodes, so that their chains branch at
/// many seqs. Run until the network has healed (a ring over every node).
fn random_swarm(forks: bool, seed: u64) -> Net {
    let mut rng = Xorshift64(seed * 0x9e37_79b9_7f4a_7c15 + 5);
    let n = 2 + rng.below(5);
    let config = Config {
        range_limit: 1 + rng.below(30) as u32,
        in_flight_max: 1 + rng.below(6),
        in_flight_per_peer: 1 + rng.below(4),
        response_bytes_max: 1 + rng.below(3_000),
        request_timeout_ms: 2_000 + rng.below_u64(3_000),
        non_member_heads_per_peer: rng.below(8),
        ..Config::default()
    };
    let mut net = Net::new(n, config);
    net.newest_first = rng.chance(30);
    for node in &mut net.nodes {
        if rng.chance(15) {
            node.behaviour = Behaviour::Withholder;
        } else if rng.chance(10) {
            node.behaviour = Behaviour::Stripper;
        }
    }
    // Without forks each node writes its own chain; with them three
    // authors are written on every node, so their chains branch.
    let keys: Vec<AgentKey> = (0..n).map(|i| AgentKey::from_seed([if forks { i % 3 } else { i } as u8 + 1; 32])).collect();
    for round in 0..8 {
        for i in 0..n {
            let key = if forks { &keys[rng.below(n)] } else { &keys[i] };
            let count = rng.below(25);
            if rng.chance(50) {
                for _ in 0..count {
                    let payload = format!("seed {seed} round {round} node {i} {}", rng.next_u64());
                    net.nodes[i].store.append(key, payload.as_bytes(), 1);
                }
                net.sync_local(i);
            } else {
                for _ in 0..count.min(5) {
                    let payload = format!("gossip {seed} {round} {i} {}", rng.next_u64());
                    net.append(i, key, payload.as_bytes());
                }
            }
        }
        let a = rng.below_u64(n as u64);
        let b = (a + 1 + rng.below_u64(n as u64 - 1)) % n as u64;
        net.connect(a, b);
        net.run();
        if rng.chance(50) {
            net.advance(rng.below_u64(5_000));
        }
    }
    for i in 0..n as u64 {
        net.connect(i, (i + 1) % n as u64);
    }
    for _ in 0..20 {
        net.run();
        net.advance(4_000);
    }
    net
}

/// What a healed swarm must hold: honest nodes are never banned, and every
/// honest node holds the same entries (so the same fork proofs) as every
/// honest node it is connected to through honest nodes. Withholders and
/// strippers may hold entries nobody else can get (they never serve them,
/// or serve them without payloads), so they are compared with nobody.
fn converged(net: &Net) -> Result<(), String> {
    let honest = |i: usize| net.nodes[i].behaviour == Behaviour::Honest;
    if let Some((by, peer, reason)) = net.bans.iter().find(|(_, peer, _)| honest(*peer as usize)) {
        return Err(format!("node {by} banned honest node {peer}: {reason}"));
    }
    // Components of the honest nodes over the links between honest nodes.
    let n = net.nodes.len();
    let mut component: Vec<usize> = (0..n).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for &(a, b) in &net.links {
            let (a, b) = (a as usize, b as usize);
            if honest(a) && honest(b) && component[a] != component[b] {
                let m = component[a].min(component[b]);
                component[a] = m;
                component[b] = m;
                changed = true;
            }
        }
    }
    for i in (0..n).filter(|&i| honest(i)) {
        let r = component[i];
        if r == i {
            continue;
        }
        let (a, b) = (&net.nodes[r].store, &net.nodes[i].store);
        let only = |x: &MemStore, y: &MemStore| x.entries.keys().filter(|k| !y.entries.contains_key(k)).count();
        if !a.entries.keys().eq(b.entries.keys()) {
            return Err(format!("honest nodes {r} and {i} differ: {} entries only at {r}, {} only at {i}", only(a, b), only(b, a)));
        }
        if !a.proofs.keys().eq(b.proofs.keys()) {
            return Err(format!("honest nodes {r} and {i} prove different forks"));
        }
    }
    Ok(())
}

/// Seeds of the random swarms: `AGORA_SWARM_SEEDS=FROM..TO` runs others
/// (hundreds, when the replicator's planning changes).
fn swarm_seeds(default: std::ops::RangeInclusive<u64>) -> std::ops::RangeInclusive<u64> {
    match std::env::var("AGORA_SWARM_SEEDS") {
        Ok(s) => {
            let (a, b) = s.split_once("..").expect("AGORA_SWARM_SEEDS=FROM..TO");
            a.parse().expect("from")..=b.parse().expect("to")
        }
        Err(_) => default,
    }
}

/// Random swarms, with and without forks: every assert of the replicator
/// holds throughout, no honest node is banned, and once the network has
/// healed the honest nodes hold the same entries and prove the same forks.
#[test]
fn random_swarms_under_small_limits_keep_every_invariant() {
    for (forks, seeds) in [(false, swarm_seeds(1..=60)), (true, swarm_seeds(1..=40))] {
        for seed in seeds {
            let net = random_swarm(forks, seed);
            if let Err(e) = converged(&net) {
                panic!("seed {seed}{}: {e}", if forks { " (forks)" } else { "" });
            }
        }
    }
}
