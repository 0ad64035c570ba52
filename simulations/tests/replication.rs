//! The replication state machine driven by the deterministic in-memory
//! network of `net/`: catch-up, relays, resumption, forks, bad peers and
//! timeouts, and each attack of the hardening review, with no sockets and no
//! clock. Every message goes through its wire bytes.

mod common;

use agora_core::entry::next_header;
use agora_core::limits::FUTURE_SKEW_MAX_MS;
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentId, AgentKey, EntryId, SignedEntry};
use agora_sync::{BUSY_BACKOFF_MS, Config, Gossip, Head, Message, Output, PeerId, RESPONSE_ENTRIES_MAX, Replicator, WAIT_MIN_MS, WireEntry};
use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Counts the bytes each thread holds (allocated minus freed on it), so a
/// test can tell what one replicator keeps in memory while other tests run
/// beside it on other threads.
struct PerThread;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.with(|h| h.set(h.get() + layout.size() as isize));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.with(|h| h.set(h.get() - layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HELD.with(|h| h.set(h.get() + new_size as isize - layout.size() as isize));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: PerThread = PerThread;

fn held_here() -> isize {
    HELD.with(Cell::get)
}

fn alice() -> AgentKey {
    AgentKey::from_seed([1; 32])
}

#[test]
fn an_empty_node_catches_up_in_resumed_ranges() {
    let mut net = Net::new(2, small());
    let (alice, bob) = (alice(), AgentKey::from_seed([2; 32]));
    chain(&mut net.nodes[0].store, &alice, 1_050, 1);
    chain(&mut net.nodes[0].store, &bob, 30, 1);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.heads(), net.nodes[0].store.heads());
    assert_eq!(net.nodes[1].store.entries.len(), 1_080);
    assert!(net.bans.is_empty());
    assert_eq!(net.nodes[1].rep.in_flight(), 0);
}

/// Several ranges of one chain are in flight at once, and responses that
/// arrive in reverse order are still stored in seq order (none is lost or
/// asked for twice).
#[test]
fn ranges_are_pipelined_and_stored_in_order_whatever_order_responses_arrive_in() {
    for newest_first in [false, true] {
        let mut net = Net::new(2, small());
        net.newest_first = newest_first;
        chain(&mut net.nodes[0].store, &alice(), 1_050, 1);
        net.connect(0, 1);
        net.run();
        assert_eq!(net.nodes[1].store.heads(), net.nodes[0].store.heads());
        assert_eq!(net.nodes[1].store.entries.len(), 1_050);
        assert_eq!(net.max_in_flight[1], Config::default().in_flight_per_peer, "pipelined");
        assert_eq!(net.requests_sent[1], 11, "each range of 100 asked for once");
        assert_eq!((net.nodes[1].rep.in_flight(), net.nodes[1].rep.held()), (0, 0));
        assert!(net.bans.is_empty());
    }
}

/// A node that served a chain is not offered it back.
#[test]
fn a_node_never_asks_back_for_what_it_served() {
    let mut net = Net::new(2, small());
    chain(&mut net.nodes[0].store, &alice(), 1_000, 1);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 1_000);
    assert_eq!(net.requests_sent[0], 0);
}

/// Node 1 holds the first `shared` entries of alice's chain held by node 0,
/// then its own continuation of `own` entries: a fork at `shared + 1`.
fn forked_pair(net: &mut Net, theirs: usize, shared: usize, own: usize) {
    let alice = alice();
    chain(&mut net.nodes[0].store, &alice, theirs, 1);
    let first: Vec<Stored> = net.nodes[0].store.entries.values().take(shared).cloned().collect();
    for (e, p) in first {
        net.nodes[1].store.put(&e, p.as_deref(), 1);
    }
    for i in 0..own {
        net.nodes[1].store.append(&alice, format!("other branch {i}").as_bytes(), 2);
    }
}

/// A branch that diverges further back than one range is fetched whole, in
/// both directions: the part below is backfilled, then the rest.
#[test]
fn a_fork_deeper_than_one_range_is_fetched_whole() {
    let mut net = Net::new(2, small());
    forked_pair(&mut net, 20, 10, 250);
    net.connect(0, 1);
    net.run();
    for n in 0..2 {
        assert_eq!(net.nodes[n].store.entries.len(), 270, "node {n}");
        assert_eq!(net.nodes[n].store.heads().len(), 2, "node {n} keeps both branches");
        assert_eq!(net.nodes[n].store.proofs.len(), 10, "node {n}: one proof per seq both branches hold (11 to 20)");
    }
    assert!(net.bans.is_empty(), "{:?}", net.bans);
}

#[test]
fn entries_relay_across_a_line_of_nodes_and_new_heads_propagate() {
    let mut net = Net::new(4, small());
    let alice = alice();
    chain(&mut net.nodes[0].store, &alice, 250, 1);
    net.connect(0, 1);
    net.connect(1, 2);
    net.connect(2, 3);
    net.run();
    for n in 1..4 {
        assert_eq!(net.nodes[n].store.entries.len(), 250, "node {n}");
    }
    // A new local append is published and announced, and reaches the far end.
    net.append(0, &alice, b"late");
    net.run();
    assert_eq!(net.nodes[3].store.heads(), net.nodes[0].store.heads());
}

#[test]
fn forked_chains_are_exchanged_once_and_not_requested_in_a_loop() {
    let mut net = Net::new(2, small());
    forked_pair(&mut net, 20, 10, 5);
    net.connect(0, 1);
    let delivered = net.run();
    assert_eq!(net.nodes[0].store.entries.len(), 25);
    assert_eq!(net.nodes[1].store.entries.len(), 25);
    assert_eq!(net.nodes[0].store.heads().len(), 2, "both branches kept");
    assert!(delivered < 80, "{delivered} packets: a fork must not cause a request loop");
    // Reconnecting moves nothing new.
    net.connect(0, 1);
    assert!(net.run() <= 12);
}

#[test]
fn a_peer_that_sends_bad_entries_is_banned_and_others_still_serve() {
    let mut net = Net::new(3, small());
    let alice = alice();
    chain(&mut net.nodes[0].store, &alice, 120, 1);
    chain(&mut net.nodes[1].store, &alice, 120, 1);
    net.nodes[1].behaviour = Behaviour::Corrupter;
    net.connect(2, 1);
    net.run();
    assert_eq!(net.bans.len(), 1);
    assert_eq!((net.bans[0].0, net.bans[0].1), (2, 1));
    assert!(net.bans[0].2.contains("signature"), "{}", net.bans[0].2);
    assert!(net.nodes[2].store.entries.is_empty(), "nothing from a bad response is stored");
    net.connect(2, 0);
    net.run();
    assert_eq!(net.nodes[2].store.entries.len(), 120);
}

/// Every message goes through the wire: a peer in another workspace is
/// answered `WrongWorkspace` and dropped, a request over a peer's rate is
/// answered `Wait`.
#[test]
fn the_wire_answers_wrong_workspace_and_wait() {
    let mut net = Net::new(2, small());
    chain(&mut net.nodes[0].store, &alice(), 10, 1);
    net.nodes[1].workspace = agora_sync::WorkspaceId::new(&AgentId([9; 32]), "elsewhere");
    net.connect(0, 1);
    net.run();
    assert!(net.wrong_workspace >= 1);
    assert!(!net.connected(0, 1));
    assert!(net.nodes[1].store.entries.is_empty());

    let config = Config { peer_messages_per_s: 1, peer_messages_burst: 1, ..small() };
    let mut net = Net::new(2, config);
    chain(&mut net.nodes[0].store, &alice(), 10, 1);
    net.connect(0, 1);
    net.run();
    // Node 1's frontier took node 0's only token: its range request is declined.
    assert!(net.waits >= 1, "a request over the rate is answered Wait");
    net.advance(Config::default().request_timeout_ms);
    net.advance(2_000);
    assert_eq!(net.nodes[1].store.entries.len(), 10, "asked again later, served");
}

/// Node 1 syncs 300 one-entry chains from node 0, which takes 50 requests
/// a second from a peer, in bursts of 10. `Wait` tells node 1 when its next
/// requests will be served, so it is served at node 0's rate; a `Busy`
/// would keep it away `BUSY_BACKOFF_MS` each time, for one burst a second.
/// Returns (ms to hold every entry, requests sent, declined).
fn sync_from_a_rate_limited_peer() -> (u64, usize, usize) {
    let authors = 300;
    let mut net = Net::new(2, Config::default());
    net.nodes[0].rep = Replicator::new(Config { peer_messages_per_s: 50, peer_messages_burst: 10, ..Config::default() });
    for a in 0..authors {
        let mut seed = [7u8; 32];
        seed[..2].copy_from_slice(&(a as u16).to_le_bytes());
        chain(&mut net.nodes[0].store, &AgentKey::from_seed(seed), 1, 1);
    }
    let start = net.now;
    net.connect(0, 1);
    while net.nodes[1].store.entries.len() < authors && net.now < start + 120_000 {
        net.run_until(net.now + 10);
    }
    assert_eq!(net.nodes[1].store.entries.len(), authors);
    assert!(net.bans.is_empty(), "{:?}", net.bans);
    (net.now - start, net.requests_sent[1], net.busy)
}

#[test]
fn a_requester_told_to_wait_comes_back_when_it_will_be_served() {
    let (ms, sent, declined) = sync_from_a_rate_limited_peer();
    println!("300 chains from a peer at 50 requests/s: {ms} ms, {sent} requests, {declined} declined");
    // 300 requests at 50 a second, after a burst of 10: about 6 s (30 s
    // answered `Busy`: a second for each burst of 10).
    assert!(ms <= 8_000, "{ms} ms");
    assert!(declined <= sent / 2, "{declined} of {sent} requests declined");
}

/// A `Wait` is bounded by the one who obeys it: told 0 ms, a node waits
/// `WAIT_MIN_MS` (a peer cannot have itself hammered); told a year, it
/// waits `BUSY_BACKOFF_MS`, as after a `Busy`.
#[test]
fn a_hostile_wait_is_clamped() {
    let peer = PeerId(1);
    let claim = Head { author: AgentId([3; 32]), seq: 5, id: EntryId([4; 32]) };
    for (told, waited) in [(0, WAIT_MIN_MS), (1, WAIT_MIN_MS), (250, 250), (u32::MAX, BUSY_BACKOFF_MS)] {
        let mut rep = Replicator::new(Config::default());
        rep.connected(peer, 0);
        rep.handle(peer, Message::Frontier(vec![claim]), 0);
        let requests = |rep: &mut Replicator| {
            std::iter::from_fn(|| rep.poll())
                .filter_map(|o| if let Output::Send(p, Message::Request { req, .. }) = o { (p == peer).then_some(req) } else { None })
                .collect::<Vec<_>>()
        };
        let asked = requests(&mut rep);
        assert_eq!(asked.len(), 1, "the claim is asked for");
        rep.wait(peer, asked[0], told, 0);
        assert_eq!(rep.poll_timeout(), Some(waited), "told {told}");
        rep.handle_timeout(waited - 1);
        assert!(requests(&mut rep).is_empty(), "told {told}: asked again before {waited} ms");
        rep.handle_timeout(waited);
        assert_eq!(requests(&mut rep).len(), 1, "told {told}: asked again at {waited} ms");
    }
}

#[test]
fn seeded_random_swarms_converge() {
    for seed in 1..=20u64 {
        let mut rng = Xorshift64(seed * 0x9e37_79b9_7f4a_7c15);
        let n = 3 + rng.below(4);
        let mut net = Net::new(n, Config { range_limit: 1 + rng.below(40) as u32, ..Config::default() });
        let keys: Vec<AgentKey> = (0..n).map(|i| AgentKey::from_seed([i as u8 + 1; 32])).collect();
        for round in 0..6 {
            for (i, key) in keys.iter().enumerate() {
                for _ in 0..rng.below(30) {
                    net.nodes[i].store.append(key, format!("seed {seed} round {round}").as_bytes(), 1);
                }
                net.sync_local(i);
            }
            let a = rng.below_u64(n as u64);
            let b = (a + 1 + rng.below_u64(n as u64 - 1)) % n as u64;
            net.connect(a, b);
            net.run();
        }
        for i in 0..n as u64 {
            net.connect(i, (i + 1) % n as u64);
        }
        net.run();
        let reference: Vec<_> = net.nodes[0].store.entries.keys().cloned().collect();
        for (i, node) in net.nodes.iter().enumerate() {
            let keys: Vec<_> = node.store.entries.keys().cloned().collect();
            assert_eq!(keys, reference, "seed {seed}: node {i} differs");
        }
        assert!(net.bans.is_empty(), "seed {seed}: {:?}", net.bans);
    }
}

#[test]
fn gossip_delivers_a_new_entry_to_every_node_and_fills_gaps_by_range_sync() {
    let mut net = Net::new(5, small());
    let alice = alice();
    for i in 0..4 {
        net.connect(i, i + 1);
    }
    net.run();
    // Node 0 writes 2 entries without telling anyone, then appends a third:
    // the others learn the head, cannot link it, and fetch the range.
    chain(&mut net.nodes[0].store, &alice, 2, 1);
    net.append(0, &alice, b"third");
    net.run();
    for n in 1..5 {
        assert_eq!(net.nodes[n].store.entries.len(), 3, "node {n}");
    }
    // The next entry links to what everyone holds: gossip alone delivers it.
    let before = net.requests_sent.clone();
    net.append(0, &alice, b"fourth");
    net.run();
    for n in 1..5 {
        assert_eq!(net.nodes[n].store.entries.len(), 4, "node {n}");
    }
    assert_eq!(net.requests_sent, before, "no range request");
    assert!(net.bans.is_empty());
}

#[test]
fn gossip_with_a_bad_signature_or_a_forged_fork_proof_is_rejected_and_its_relay_banned() {
    let mut net = Net::new(2, small());
    net.connect(0, 1);
    net.run();
    let e = net.nodes[0].store.append(&alice(), b"x", 1);
    let mut w = WireEntry { entry: e.encode(), payload: Some(b"x".to_vec()) };
    let n = w.entry.len();
    w.entry[n - 1] ^= 1;
    net.gossip_from(0, Gossip::Entry(w));
    net.run();
    assert_eq!(net.bans.len(), 1);
    assert!(net.bans[0].2.contains("signature"), "{}", net.bans[0].2);
    assert!(net.nodes[1].store.entries.is_empty());

    let mut net = Net::new(2, small());
    net.connect(0, 1);
    net.run();
    let a = net.nodes[0].store.append(&alice(), b"a", 1);
    let b = net.nodes[0].store.append(&alice(), b"b", 1);
    let mut forged = vec![1u8];
    for e in [&a, &b] {
        let bytes = e.encode();
        forged.push(bytes.len() as u8 | 0x80);
        forged.push((bytes.len() >> 7) as u8);
        forged.extend(bytes);
    }
    net.gossip_from(0, Gossip::ForkProof(forged));
    net.run();
    assert_eq!(net.nodes[1].rep.stats().gossip_rejected, 1);
    assert!(net.bans[0].2.contains("fork proof"), "{}", net.bans[0].2);
}

#[test]
fn a_genuine_fork_proof_makes_nodes_fetch_both_branches() {
    let mut net = Net::new(3, small());
    net.connect(0, 1);
    net.connect(1, 2);
    net.run();
    // Node 0 holds two branches of alice's chain (an equivocation it stored).
    let alice = alice();
    chain(&mut net.nodes[0].store, &alice, 2, 1);
    let first = net.nodes[0].store.entries.values().next().unwrap().0.clone();
    let rival = SignedEntry::sign(next_header(alice.agent_id(), Some(&first), 5, b"rival").unwrap(), &alice);
    let r = net.nodes[0].store.put(&rival, Some(b"rival"), 5);
    assert_eq!(r.new_forks.len(), 1);
    net.committed(0, &[], &r);
    net.run();
    for n in 1..3 {
        assert_eq!(net.nodes[n].store.tips(&alice.agent_id()).len(), 2, "node {n} holds both branches");
        assert_eq!(net.nodes[n].store.proofs.len(), 1);
    }
    assert!(net.bans.is_empty());
}

#[test]
fn authors_outside_the_roster_are_neither_requested_nor_accepted() {
    let mut net = Net::new(2, small());
    let (alice, mallory) = (alice(), AgentKey::from_seed([9; 32]));
    chain(&mut net.nodes[0].store, &alice, 5, 1);
    chain(&mut net.nodes[0].store, &mallory, 5, 1);
    net.nodes[1].rep.set_admitted(Some(BTreeMap::from([(alice.agent_id(), None)])), 0);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 5, "only alice's chain");
    assert!(net.nodes[1].rep.stats().refused_not_admitted >= 1);
    // Gossip of mallory's entry is ignored (not forwarded) and reported.
    net.append(0, &mallory, b"let me in");
    net.run();
    assert!(net.refused.iter().any(|(node, _, a, _)| *node == 1 && *a == mallory.agent_id()));
    assert!(net.bans.is_empty(), "refusing is not banning");
    // Admitting mallory later fetches the chain from the peer that has it.
    net.nodes[1].rep.set_admitted(Some(BTreeMap::from([(alice.agent_id(), None), (mallory.agent_id(), None)])), net.now);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 11);
}

/// Hardening item 9: an agent removed with a cut-off: its entries up to the
/// cut-off are still fetched and accepted, later ones are not (refused, not
/// a ban).
#[test]
fn a_removal_cut_off_admits_exactly_the_entries_up_to_it() {
    let mut net = Net::new(2, small());
    let m = AgentKey::from_seed([5; 32]);
    chain(&mut net.nodes[0].store, &m, 8, 1);
    net.nodes[1].rep.set_admitted(Some(BTreeMap::from([(m.agent_id(), Some(5))])), 0);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.max_seq(&m.agent_id()), 5);
    net.append(0, &m, b"after the cut-off");
    net.run();
    assert_eq!(net.nodes[1].store.max_seq(&m.agent_id()), 5);
    assert!(net.refused.iter().any(|(n, _, a, _)| *n == 1 && *a == m.agent_id()));
    assert!(net.bans.is_empty());
}

#[test]
fn a_flooding_peer_is_rate_limited_then_banned() {
    let config = Config { peer_messages_per_s: 10, peer_messages_burst: 20, peer_flood_ban_after: 50, ..small() };
    let mut net = Net::new(2, config);
    net.connect(0, 1);
    net.run();
    // Connecting already spent one message (node 0's frontier).
    for _ in 0..19 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 1_000);
    }
    assert_eq!(net.nodes[1].rep.stats().rate_limited, 0, "within the burst");
    for _ in 0..50 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 1_000);
    }
    assert_eq!(net.nodes[1].rep.stats().rate_limited, 50);
    assert_eq!(net.nodes[1].rep.stats().bans, 0);
    for _ in 0..10 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 2_000);
    }
    assert_eq!(net.nodes[1].rep.stats().rate_limited, 50);
    for _ in 0..52 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 2_000);
    }
    assert_eq!(net.nodes[1].rep.stats().bans, 1);
}

#[test]
fn large_responses_are_cut_and_resumed() {
    let config = Config { range_limit: 100, response_bytes_max: 4_000, ..Config::default() };
    let mut net = Net::new(2, config);
    for i in 0..60 {
        net.nodes[0].store.append(&alice(), format!("{i:0>200}").as_bytes(), 1);
    }
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 60);
    assert!(net.requests_sent[1] > 5, "60 entries of ~400 bytes need several 4 kB responses");
    assert!(net.bans.is_empty());
}

#[test]
fn stale_or_false_heads_never_cause_a_request_loop() {
    let mut net = Net::new(2, small());
    let alice = alice();
    chain(&mut net.nodes[0].store, &alice, 30, 1);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 30);
    // A peer claims heads it does not hold: one above our head, one branch
    // below it. Each is asked for at most once.
    let fake_above = Head { author: alice.agent_id(), seq: 40, id: EntryId([7; 32]) };
    let fake_branch = Head { author: alice.agent_id(), seq: 10, id: EntryId([8; 32]) };
    net.nodes[1].rep.handle(PeerId(0), Message::Frontier(vec![fake_above, fake_branch]), net.now);
    assert!(net.run() < 12, "false claims are asked about once, then forgotten");
    net.connect(0, 1);
    assert!(net.run() < 12);
    assert!(net.bans.is_empty());
    assert!(net.nodes[1].rep.strikes(PeerId(0)).unwrap() >= 1, "an empty answer to its own claim costs the claimant");
}

/// Seq 1 of `key`, then `k` entries at seq 2, in `store`.
fn flood(store: &mut MemStore, key: &AgentKey, k: usize) -> Vec<SignedEntry> {
    let root = store.append(key, b"root", 1);
    (0..k)
        .map(|i| {
            let p = format!("branch {i}");
            let e = SignedEntry::sign(next_header(key.agent_id(), Some(&root), 2, p.as_bytes()).unwrap(), key);
            store.put(&e, Some(p.as_bytes()), 2);
            e
        })
        .collect()
}

/// Hardening item 1 (replication's part): 2,000 entries at one seq reach a
/// fresh node by range sync in a bounded number of requests (a seq larger
/// than a response is resumed inside it), and by gossip, with no ban, one
/// proof, and bounded claims.
#[test]
fn a_fork_flood_of_two_thousand_branches_is_transferred_linearly() {
    const K: usize = 2_000;
    let config = Config { response_bytes_max: 64 << 10, ..Config::default() };
    let mut net = Net::new(2, config);
    let m = AgentKey::from_seed([6; 32]);
    flood(&mut net.nodes[0].store, &m, K);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), K + 1);
    assert_eq!(net.nodes[1].store.proofs.len(), 1);
    assert!(net.bans.is_empty(), "{:?}", net.bans);
    // 2,001 entries of ~200 bytes in 64 kB responses: about 8 responses,
    // never one request per branch.
    assert!(net.requests_sent[1] <= 16, "{} requests", net.requests_sent[1]);
    assert!(net.nodes[1].rep.claims_held() <= Config::default().heads_per_author_max + 1);

    // By gossip: each branch published by the forking node.
    let mut net = Net::new(3, Config::default());
    net.connect(0, 1);
    net.connect(1, 2);
    net.run();
    let branches = flood(&mut net.nodes[0].store, &m, K);
    let root = SignedEntry::clone(&net.nodes[0].store.entries.values().next().unwrap().0);
    net.nodes[0].rep.local_commit(&[(root, Some(b"root".to_vec()))], &[]);
    let published: Vec<(SignedEntry, Option<Vec<u8>>)> =
        branches.iter().enumerate().map(|(i, e)| (e.clone(), Some(format!("branch {i}").into_bytes()))).collect();
    net.nodes[0].rep.local_commit(&published, &[]);
    net.run();
    net.advance(1_000);
    for n in 1..3 {
        assert_eq!(net.nodes[n].store.entries.len(), K + 1, "node {n}");
        assert_eq!(net.nodes[n].store.proofs.len(), 1);
    }
    assert!(net.bans.is_empty(), "{:?}", net.bans);
}

/// All orders of a slice.
fn permutations(v: &[u64]) -> Vec<Vec<u64>> {
    if v.len() <= 1 {
        return vec![v.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..v.len() {
        let mut rest = v.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// Hardening item 2: peers that claim the data and never answer cost one
/// timeout at most: the range is then asked of every claimant at once, and
/// peers that served are asked first. A new node with one honest peer and
/// one to five withholders, connected in every order, holds everything
/// within two timeouts.
#[test]
fn withholding_peers_never_stall_a_sync_past_two_timeouts() {
    let timeout = Config::default().request_timeout_ms;
    let mut data = MemStore::default();
    chain(&mut data, &alice(), 500, 1);
    for withholders in 1..=5u64 {
        for order in permutations(&(1..=withholders + 1).collect::<Vec<_>>()) {
            let mut net = Net::new(withholders as usize + 2, Config::default());
            net.nodes[1].store = data.clone();
            for w in 2..=withholders as usize + 1 {
                net.nodes[w].store = data.clone();
                net.nodes[w].behaviour = Behaviour::Withholder;
            }
            for &peer in &order {
                net.connect(0, peer);
            }
            net.run();
            let start = net.now;
            while net.nodes[0].store.entries.len() < 500 && net.now - start < 10 * timeout {
                // Straight to the node's next timer.
                let next = net.nodes[0].rep.poll_timeout().map_or(100, |t| t.saturating_sub(net.now).max(1));
                net.advance(next);
            }
            assert_eq!(net.nodes[0].store.entries.len(), 500, "{withholders} withholders, order {order:?}");
            assert!(net.now - start <= 2 * timeout, "{withholders} withholders, order {order:?}: {} ms", net.now - start);
            assert!(net.bans.is_empty());
        }
    }
}

/// Hardening item 3: a peer that claims heads of 2,000,000 random authors
/// outside the roster makes the node keep at most a small bounded number of
/// them, and is scored down.
#[test]
fn claimed_heads_of_unknown_authors_are_bounded() {
    let mut net = Net::new(2, Config::default());
    let alice = alice();
    net.nodes[1].rep.set_admitted(Some(BTreeMap::from([(alice.agent_id(), None)])), 0);
    net.connect(0, 1);
    net.run();
    let mut rng = Xorshift64(77);
    let mut random_id = || {
        let mut b = [0u8; 32];
        for chunk in b.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        b
    };
    // The cost of a tick with nothing claimed, the median of many.
    let tick = |net: &mut Net| {
        let mut times: Vec<Duration> = (0..41)
            .map(|_| {
                let t = Instant::now();
                let now = net.now;
                net.nodes[1].rep.handle_timeout(now);
                t.elapsed()
            })
            .collect();
        times.sort();
        times[20]
    };
    let tick_before = tick(&mut net);
    let memory_before = held_here();
    for _ in 0..40 {
        let heads: Vec<Head> = (0..50_000).map(|_| Head { author: AgentId(random_id()), seq: 7, id: EntryId(random_id()) }).collect();
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(heads), net.now);
        net.now += 1_000;
    }
    let grown = held_here() - memory_before;
    assert!(grown < 20 << 20, "the replicator kept {grown} bytes of claims");
    let tick_after = tick(&mut net);
    assert!(tick_after <= tick_before * 2 + Duration::from_millis(1), "tick {tick_before:?} before, {tick_after:?} after");
    let held = net.nodes[1].rep.claims_held();
    assert!(held <= Config::default().non_member_heads_per_peer, "{held} claims held");
    assert!(net.nodes[1].rep.strikes(PeerId(0)).unwrap() >= 1, "scored down");
    assert!(net.nodes[1].rep.stats().claims_dropped >= 1_999_000);
    // A tick walks only what is held.
    net.advance(100);
    assert!(net.bans.is_empty());
}

/// Hardening item 5: gossip is charged to the entry's author, not to the
/// relay: ten nodes in a line relay a burst of 20,000 valid entries from four
/// authors, and nobody is banned; everything arrives (what an author's
/// budget drops comes by range sync).
#[test]
fn honest_relays_are_never_banned_under_a_gossip_burst() {
    let mut net = Net::new(10, Config::default());
    for i in 0..9 {
        net.connect(i, i + 1);
    }
    net.run();
    let keys: Vec<AgentKey> = (0..4).map(|i| AgentKey::from_seed([40 + i; 32])).collect();
    for round in 0..5_000 {
        for (k, key) in keys.iter().enumerate() {
            net.append(k, key, format!("entry {round}").as_bytes());
        }
    }
    net.run();
    net.advance(30_000);
    for n in 0..10 {
        let per_author: Vec<u64> = keys.iter().map(|k| net.nodes[n].store.max_seq(&k.agent_id())).collect();
        assert_eq!(net.nodes[n].store.entries.len(), 20_000, "node {n}: {per_author:?} {:?}", net.nodes[n].rep.stats());
    }
    assert!(net.bans.is_empty(), "{:?}", &net.bans[..net.bans.len().min(3)]);
}

/// Hardening item 6 (replication's part): a peer that strips every payload
/// it relays and serves sits between the author and half the swarm; every
/// honest node still ends with every payload, fetched again from others.
#[test]
fn a_payload_stripper_between_the_author_and_half_the_swarm_shadows_nothing() {
    // 0: author; 1: stripper; 2, 3: behind the stripper; 4, 5: beside the author.
    let mut net = Net::new(6, Config::default());
    net.nodes[1].behaviour = Behaviour::Stripper;
    for (a, b) in [(0, 1), (1, 2), (1, 3), (0, 4), (4, 5), (5, 2)] {
        net.connect(a, b);
    }
    net.run();
    let alice = alice();
    for i in 0..50 {
        net.append(0, &alice, format!("payload {i}").as_bytes());
    }
    net.run();
    for _ in 0..20 {
        net.advance(Config::default().request_timeout_ms);
    }
    for n in [2usize, 3, 4, 5] {
        let missing = net.nodes[n].store.missing_payloads();
        assert_eq!(net.nodes[n].store.entries.len(), 50, "node {n}");
        // Node 3 is reachable only through the stripper: its payloads cannot
        // arrive, and it reports them unavailable instead of holding them as
        // "no event".
        if n == 3 {
            assert!(missing.is_empty() || !net.nodes[n].unavailable.is_empty(), "node 3 reports what no peer would give");
        } else {
            assert!(missing.is_empty(), "node {n} lacks {} payloads", missing.len());
        }
    }
}

/// Hardening item 8 (replication's part): entries dated an hour ahead are
/// not stored and not asked for again before their time; nobody is banned;
/// after their time they arrive.
#[test]
fn entries_dated_ahead_are_fetched_after_their_time_without_a_ban() {
    let mut net = Net::new(2, Config::default());
    let alice = alice();
    let hour = 3_600_000;
    let first = net.nodes[0].store.append(&alice, b"now", net.now);
    let later = SignedEntry::sign(next_header(alice.agent_id(), Some(&first), net.now + hour, b"later").unwrap(), &alice);
    // Node 0's own clock is ahead (the test writes into it directly).
    net.nodes[0].store.put(&later, Some(b"later"), net.now + hour);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 1, "only the present");
    let sent = net.requests_sent[1];
    net.advance(60_000);
    assert!(net.requests_sent[1] <= sent + 1, "not asked again before its time");
    net.advance(hour - FUTURE_SKEW_MAX_MS);
    net.advance(1_000);
    assert_eq!(net.nodes[1].store.entries.len(), 2, "stored once its time came");
    assert!(net.bans.is_empty());
}

/// A response is never more than RESPONSE_ENTRIES_MAX entries, whatever the
/// byte budget; a replicator refuses a response with more.
#[test]
fn a_response_with_too_many_entries_is_refused() {
    let mut rep = Replicator::new(Config::default());
    rep.connected(PeerId(1), 0);
    while rep.poll().is_some() {}
    let entries = vec![WireEntry { entry: vec![0], payload: None }; RESPONSE_ENTRIES_MAX + 1];
    assert!(agora_sync::check_entries(entries).is_err());
}

/// A peer that lags (it still claims an entry we held as our tip and have
/// since passed) holds no branch of ours: it is not probed for its claim.
/// Before the tips passed were remembered, every such stale claim was asked
/// for alone, as a possible fork, once per four request timeouts: at a
/// thousand authors and hundreds of nodes, most of the planning work and of
/// the requests.
#[test]
fn a_lagging_peer_is_not_probed_for_a_tip_we_passed() {
    let mut net = Net::new(2, Config::default());
    let alice = alice();
    let mut prev: Option<SignedEntry> = None;
    for i in 0..3u8 {
        let payload = [i; 8];
        let e = SignedEntry::sign(next_header(alice.agent_id(), prev.as_ref(), 1_000, &payload).unwrap(), &alice);
        net.nodes[0].store.put(&e, Some(&payload), 1_000);
        prev = Some(e);
    }
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.max_seq(&alice.agent_id()), 3);
    // Node 1 gets seq 4 from elsewhere (its own writer, say) while node 0
    // still claims seq 3: node 1's old tip, an entry it holds.
    let payload = [9u8; 8];
    let four = SignedEntry::sign(next_header(alice.agent_id(), prev.as_ref(), 2_000, &payload).unwrap(), &alice);
    let r = net.nodes[1].store.put(&four, Some(&payload), 2_000);
    let asked_before = net.request_log.len();
    net.committed(1, &[(four.clone(), Some(payload.to_vec()))], &r);
    net.run();
    let probes: Vec<_> =
        net.request_log[asked_before..].iter().filter(|(from, to, start, limit)| *from == 1 && *to == 0 && start.seq == 3 && *limit == 1).collect();
    assert!(probes.is_empty(), "node 1 probed node 0's stale claim: {probes:?}");
    assert_eq!(net.nodes[0].store.max_seq(&alice.agent_id()), 4, "node 0 still catches up");
}
