//! The replication state machine driven by a deterministic in-memory network
//! and in-memory stores: catch-up, relays, resumption, forks, bad peers and
//! timeouts, with no sockets and no clock.

use agora_core::entry::next_header;
use agora_core::verify::{check_signatures, verify_link};
use agora_core::{AgentId, AgentKey, EntryId, SignedEntry};
use agora_sync::{Config, Gossip, GossipVerdict, Head, Message, Output, PeerId, Replicator, VerifiedEntry, WireEntry};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// An in-memory stand-in for agora-store: verified entries, all branches kept.
#[derive(Default)]
struct MemStore {
    entries: BTreeMap<(AgentId, u64, EntryId), VerifiedEntry>,
    ids: BTreeMap<EntryId, (AgentId, u64)>,
}

impl MemStore {
    /// All or nothing, like agora-store: `Err(seq)` names the first entry
    /// whose predecessor is neither held nor earlier in the batch.
    fn import(&mut self, entries: Vec<VerifiedEntry>) -> Result<(), u64> {
        let batch: BTreeSet<EntryId> = entries.iter().map(|(e, _)| e.id()).collect();
        for (e, _) in &entries {
            if let Some(back) = e.header().backlink
                && !self.ids.contains_key(&back)
                && !batch.contains(&back)
            {
                return Err(e.header().seq);
            }
        }
        for (e, p) in entries {
            if self.ids.contains_key(&e.id()) {
                continue;
            }
            let h = e.header();
            if let Some(back) = h.backlink {
                let (a, s) = *self.ids.get(&back).expect("checked above");
                let prev: &SignedEntry = &self.entries[&(a, s, back)].0;
                verify_link(prev, &e).expect("links verified by the replicator");
            }
            self.ids.insert(e.id(), (h.author, h.seq));
            self.entries.insert((h.author, h.seq, e.id()), (e, p));
        }
        Ok(())
    }
    fn append(&mut self, key: &AgentKey, payload: &[u8]) -> SignedEntry {
        let prev = self.heads().into_iter().filter(|h| h.author == key.agent_id()).max().map(|h| self.entries[&(h.author, h.seq, h.id)].0.clone());
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_deref(), 1, payload).unwrap(), key);
        let checked = check_signatures(vec![e.clone()]).unwrap().pop().unwrap();
        self.import(vec![(checked, Some(payload.to_vec()))]).unwrap();
        e
    }
    fn heads(&self) -> Vec<Head> {
        let linked: BTreeSet<EntryId> = self.entries.values().filter_map(|(e, _)| e.header().backlink).collect();
        self.entries.keys().filter(|(_, _, id)| !linked.contains(id)).map(|(author, seq, id)| Head { author: *author, seq: *seq, id: *id }).collect()
    }
    fn serve(&self, author: AgentId, from: u64, limit: u32) -> (Vec<(u64, WireEntry)>, bool) {
        let end = from + u64::from(limit);
        let out = self
            .entries
            .range((author, from, EntryId([0; 32]))..(author, end, EntryId([0; 32])))
            .map(|((_, seq, _), (e, p))| (*seq, WireEntry { entry: e.encode(), payload: p.clone() }))
            .collect();
        let more = self.entries.range((author, end, EntryId([0; 32]))..).next().is_some_and(|((a, _, _), _)| *a == author);
        (out, more)
    }
}

struct Node {
    rep: Replicator,
    store: MemStore,
    /// Responds with corrupted entries when set.
    evil: bool,
    /// Never answers requests when set.
    silent: bool,
}

struct Net {
    nodes: Vec<Node>,
    wire: VecDeque<(PeerId, PeerId, Message)>,
    links: BTreeSet<(u64, u64)>,
    bans: Vec<(u64, u64, String)>,
    refused: Vec<(u64, u64, AgentId, &'static str)>,
    delivered: usize,
    now: u64,
    /// Deliver the newest message first (responses arrive out of order).
    newest_first: bool,
    /// Requests each node sent.
    requests_sent: Vec<usize>,
    /// Most requests each node had in flight at once.
    max_in_flight: Vec<usize>,
}

impl Net {
    fn new(n: usize, config: Config) -> Self {
        let nodes = (0..n).map(|_| Node { rep: Replicator::new(config.clone()), store: MemStore::default(), evil: false, silent: false }).collect();
        Self {
            nodes,
            wire: VecDeque::new(),
            links: BTreeSet::new(),
            bans: Vec::new(),
            refused: Vec::new(),
            delivered: 0,
            now: 0,
            newest_first: false,
            requests_sent: vec![0; n],
            max_in_flight: vec![0; n],
        }
    }
    fn connect(&mut self, a: u64, b: u64) {
        self.links.insert((a.min(b), a.max(b)));
        for n in [a as usize, b as usize] {
            let heads = self.nodes[n].store.heads();
            self.nodes[n].rep.set_local_frontier(heads, self.now);
        }
        self.nodes[a as usize].rep.connected(PeerId(b), self.now);
        self.nodes[b as usize].rep.connected(PeerId(a), self.now);
    }
    /// Run until nothing moves; returns messages delivered. Bounded.
    fn run(&mut self) -> usize {
        let start = self.delivered;
        for _ in 0..1_000_000 {
            let mut progressed = false;
            for i in 0..self.nodes.len() {
                while let Some(out) = self.nodes[i].rep.poll() {
                    progressed = true;
                    self.output(i, out);
                }
            }
            for (i, node) in self.nodes.iter().enumerate() {
                self.max_in_flight[i] = self.max_in_flight[i].max(node.rep.in_flight());
            }
            let next = if self.newest_first { self.wire.pop_back() } else { self.wire.pop_front() };
            if let Some((from, to, msg)) = next {
                progressed = true;
                self.delivered += 1;
                if self.links.contains(&(from.0.min(to.0), from.0.max(to.0))) {
                    self.nodes[to.0 as usize].rep.handle(from, msg, self.now);
                }
            }
            if !progressed {
                return self.delivered - start;
            }
        }
        panic!("network did not settle");
    }
    fn output(&mut self, i: usize, out: Output) {
        match out {
            Output::Send(to, msg) => {
                if matches!(msg, Message::Request { .. }) {
                    self.requests_sent[i] += 1;
                }
                self.wire.push_back((PeerId(i as u64), to, msg))
            }
            Output::Import { from, entries, .. } => {
                let author = entries[0].0.header().author;
                self.nodes[i].rep.import_done(self.now);
                match self.nodes[i].store.import(entries) {
                    Ok(()) => {
                        let tips: Vec<Head> = self.nodes[i].store.heads().into_iter().filter(|h| h.author == author).collect();
                        self.nodes[i].rep.set_local_heads(author, tips, self.now);
                    }
                    Err(missing_seq) => self.nodes[i].rep.import_failed(from, author, missing_seq, self.now),
                }
            }
            Output::Serve { peer, req, author, from_seq, limit } => {
                if self.nodes[i].silent {
                    return;
                }
                let (mut entries, more) = self.nodes[i].store.serve(author, from_seq, limit);
                if self.nodes[i].evil
                    && let Some((_, w)) = entries.get_mut(0)
                {
                    let n = w.entry.len();
                    w.entry[n - 3] ^= 0x40; // break the signature
                }
                self.nodes[i].rep.respond(peer, req, entries, more);
            }
            Output::Ban { peer, reason, .. } => {
                self.bans.push((i as u64, peer.0, reason));
                self.links.remove(&((i as u64).min(peer.0), (i as u64).max(peer.0)));
                self.nodes[peer.0 as usize].rep.disconnected(PeerId(i as u64));
            }
            Output::Decline { .. } => {}
            Output::Refused { peer, author, what } => self.refused.push((i as u64, peer.0, author, what)),
        }
    }
    /// Flood a gossip message from node `origin` the way gossipsub does: each
    /// node that accepts it forwards it to its other neighbours once.
    fn gossip(&mut self, origin: u64, message: Gossip) -> Vec<(u64, GossipVerdict)> {
        let mut seen = BTreeSet::from([origin]);
        let mut queue = VecDeque::from([origin]);
        let mut verdicts = Vec::new();
        while let Some(from) = queue.pop_front() {
            let neighbours: Vec<u64> = self.links.iter().filter_map(|&(a, b)| if a == from { Some(b) } else if b == from { Some(a) } else { None }).collect();
            for to in neighbours {
                if !seen.insert(to) {
                    continue;
                }
                let v = self.nodes[to as usize].rep.gossip(PeerId(from), message.clone(), self.now);
                verdicts.push((to, v.clone()));
                if v == GossipVerdict::Accept {
                    queue.push_back(to);
                }
                // Let the node store what it accepted before it forwards.
                while let Some(out) = self.nodes[to as usize].rep.poll() {
                    self.output(to as usize, out);
                }
            }
        }
        verdicts
    }
}

fn chain(store: &mut MemStore, key: &AgentKey, n: usize) {
    for i in 0..n {
        store.append(key, format!("event {i}").as_bytes());
    }
}

fn small() -> Config {
    Config { range_limit: 100, ..Config::default() }
}

#[test]
fn an_empty_node_catches_up_in_resumed_ranges() {
    let mut net = Net::new(2, small());
    let (alice, bob) = (AgentKey::from_seed([1; 32]), AgentKey::from_seed([2; 32]));
    chain(&mut net.nodes[0].store, &alice, 1_050);
    chain(&mut net.nodes[0].store, &bob, 30);
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
        let alice = AgentKey::from_seed([1; 32]);
        chain(&mut net.nodes[0].store, &alice, 1_050);
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

/// A node that served a chain is not offered it back: the receiver does not
/// announce heads the sender gave it, so the sender asks for nothing.
#[test]
fn a_node_never_asks_back_for_what_it_served() {
    let mut net = Net::new(2, small());
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 1_000);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 1_000);
    assert_eq!(net.requests_sent[0], 0);
}

/// A branch that diverges further back than one range is fetched whole, in
/// both directions: the part below is backfilled, then the part that did not
/// link is asked for again.
#[test]
fn a_fork_deeper_than_one_range_is_fetched_whole() {
    let mut net = Net::new(2, small());
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 20);
    let first: Vec<_> = net.nodes[0].store.entries.values().take(10).cloned().collect();
    net.nodes[1].store.import(first).unwrap();
    for i in 0..250 {
        net.nodes[1].store.append(&alice, format!("other branch {i}").as_bytes());
    }
    net.connect(0, 1);
    net.run();
    for n in 0..2 {
        assert_eq!(net.nodes[n].store.entries.len(), 270, "node {n}");
        assert_eq!(net.nodes[n].store.heads().len(), 2, "node {n} keeps both branches");
    }
    assert!(net.bans.is_empty(), "{:?}", net.bans);
}

#[test]
fn entries_relay_across_a_line_of_nodes_and_new_heads_propagate() {
    let mut net = Net::new(4, small());
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 250);
    net.connect(0, 1);
    net.connect(1, 2);
    net.connect(2, 3);
    net.run();
    for n in 1..4 {
        assert_eq!(net.nodes[n].store.entries.len(), 250, "node {n}");
    }
    // A new local append is announced and reaches the far end.
    net.nodes[0].store.append(&alice, b"late");
    let heads = net.nodes[0].store.heads();
    net.nodes[0].rep.set_local_frontier(heads, 0);
    net.run();
    assert_eq!(net.nodes[3].store.heads(), net.nodes[0].store.heads());
}

#[test]
fn forked_chains_are_exchanged_once_and_not_requested_in_a_loop() {
    let mut net = Net::new(2, small());
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 20);
    // Node 1 holds a copy of the first 10 and then a different continuation
    // (a restored backup), so the chain is forked at seq 11.
    let first: Vec<_> = net.nodes[0].store.entries.values().take(10).cloned().collect();
    net.nodes[1].store.import(first).unwrap();
    for i in 0..5 {
        net.nodes[1].store.append(&alice, format!("other branch {i}").as_bytes());
    }
    net.connect(0, 1);
    let delivered = net.run();
    assert_eq!(net.nodes[0].store.entries.len(), 25);
    assert_eq!(net.nodes[1].store.entries.len(), 25);
    assert_eq!(net.nodes[0].store.heads().len(), 2, "both branches kept");
    assert!(delivered < 40, "{delivered} messages: a fork must not cause a request loop");
    // Reconnecting moves nothing new.
    net.connect(0, 1);
    assert!(net.run() <= 4);
}

#[test]
fn a_peer_that_sends_bad_entries_is_banned_and_others_still_serve() {
    let mut net = Net::new(3, small());
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 120);
    chain(&mut net.nodes[1].store, &alice, 120);
    net.nodes[1].evil = true;
    // Node 2 hears of the chain from the evil node first.
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

#[test]
fn an_unanswered_request_is_asked_again_of_another_peer() {
    let mut net = Net::new(3, Config { range_limit: 100, request_timeout_ms: 1_000, ..Config::default() });
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 50);
    chain(&mut net.nodes[1].store, &alice, 50);
    net.nodes[1].silent = true;
    net.connect(2, 1);
    net.run();
    assert!(net.nodes[2].store.entries.is_empty());
    assert_eq!(net.nodes[2].rep.poll_timeout(), Some(1_000));
    net.connect(0, 2);
    net.run();
    assert!(net.nodes[2].store.entries.is_empty(), "the range is still in flight to the silent peer");
    // Node 0's frontier made node 2 ask it too (a different range start is not
    // needed: the in-flight range to node 1 is skipped until it times out).
    net.now = 1_000;
    net.nodes[2].rep.handle_timeout(1_000);
    net.run();
    assert_eq!(net.nodes[2].store.entries.len(), 50);
}

/// xorshift64*, so every run of this test is the same run.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Random swarms: nodes append to their own chains and connect in random
/// pairs, in seeded order; every connected component converges to the same
/// set of entries, and nothing honest is ever banned.
#[test]
fn seeded_random_swarms_converge() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed * 0x9e37_79b9_7f4a_7c15);
        let n = 3 + rng.below(4) as usize;
        let mut net = Net::new(n, Config { range_limit: 1 + rng.below(40) as u32, ..Config::default() });
        let keys: Vec<AgentKey> = (0..n).map(|i| AgentKey::from_seed([i as u8 + 1; 32])).collect();
        for round in 0..6 {
            for (i, key) in keys.iter().enumerate() {
                for _ in 0..rng.below(30) {
                    net.nodes[i].store.append(key, format!("seed {seed} round {round}").as_bytes());
                }
                let heads = net.nodes[i].store.heads();
                net.nodes[i].rep.set_local_frontier(heads, 0);
            }
            let a = rng.below(n as u64);
            let b = (a + 1 + rng.below(n as u64 - 1)) % n as u64;
            net.connect(a, b);
            net.run();
        }
        // Finally connect everyone in a ring and let it settle.
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

fn gossip_of(store: &MemStore, e: &SignedEntry) -> Gossip {
    let h = e.header();
    let (_, payload) = &store.entries[&(h.author, h.seq, e.id())];
    Gossip::for_entry(e, payload.as_deref())
}

#[test]
fn gossip_delivers_a_new_entry_to_every_node_and_fills_gaps_by_range_sync() {
    let mut net = Net::new(5, small());
    let alice = AgentKey::from_seed([1; 32]);
    for i in 0..4 {
        net.connect(i, i + 1);
    }
    net.run();
    // Node 0 appends 3 entries, gossiping only the last: the others learn the
    // head, cannot link it, and fetch the range from whoever relayed it.
    chain(&mut net.nodes[0].store, &alice, 3);
    let tips = net.nodes[0].store.heads();
    let last: SignedEntry = net.nodes[0].store.entries[&(tips[0].author, tips[0].seq, tips[0].id)].0.clone().into_entry();
    let message = gossip_of(&net.nodes[0].store, &last);
    let verdicts = net.gossip(0, message.clone());
    assert!(verdicts.iter().all(|(_, v)| *v == GossipVerdict::Accept), "{verdicts:?}");
    net.run();
    for n in 1..5 {
        assert_eq!(net.nodes[n].store.entries.len(), 3, "node {n}");
    }
    // The next entry links to what everyone holds: gossip alone delivers it,
    // with no range request at all.
    let e = net.nodes[0].store.append(&alice, b"fourth");
    let message = gossip_of(&net.nodes[0].store, &e);
    net.gossip(0, message);
    for n in 1..5 {
        assert_eq!(net.nodes[n].store.entries.len(), 4, "node {n} without any request");
    }
    assert!(net.bans.is_empty());
}

#[test]
fn gossip_with_a_bad_signature_or_a_forged_fork_proof_is_rejected_and_its_relay_banned() {
    let mut net = Net::new(2, small());
    let alice = AgentKey::from_seed([1; 32]);
    net.connect(0, 1);
    net.run();
    let e = net.nodes[0].store.append(&alice, b"x");
    let Gossip::Entry(mut w) = gossip_of(&net.nodes[0].store, &e) else { panic!("small payload travels inline") };
    let n = w.entry.len();
    w.entry[n - 1] ^= 1;
    let v = net.nodes[1].rep.gossip(PeerId(0), Gossip::Entry(w), 0);
    assert!(matches!(v, GossipVerdict::Reject(ref r) if r.contains("signature")), "{v:?}");
    while let Some(out) = net.nodes[1].rep.poll() {
        net.output(1, out);
    }
    assert_eq!(net.bans.len(), 1);
    assert!(net.nodes[1].store.entries.is_empty());

    // A "fork proof" of two entries that do not conflict is forged.
    let mut net = Net::new(2, small());
    net.connect(0, 1);
    net.run();
    let a = net.nodes[0].store.append(&alice, b"a");
    let b = net.nodes[0].store.append(&alice, b"b");
    let mut forged = vec![1u8];
    let wire = (a.encode(), b.encode());
    forged.extend(postcard_like(&wire.0));
    forged.extend(postcard_like(&wire.1));
    let v = net.nodes[1].rep.gossip(PeerId(0), Gossip::ForkProof(forged), 0);
    assert!(matches!(v, GossipVerdict::Reject(ref r) if r.contains("fork proof")), "{v:?}");
    assert_eq!(net.nodes[1].rep.stats().gossip_rejected, 1);
}

/// A length-prefixed byte string as postcard writes it (lengths < 128).
fn postcard_like(bytes: &[u8]) -> Vec<u8> {
    assert!(bytes.len() < 128 * 128);
    let mut out = Vec::new();
    let mut n = bytes.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(bytes);
    out
}

#[test]
fn a_genuine_fork_proof_makes_nodes_fetch_both_branches() {
    let mut net = Net::new(3, small());
    let alice = AgentKey::from_seed([1; 32]);
    // Node 0 holds two branches of alice's chain (an equivocation it stored).
    chain(&mut net.nodes[0].store, &alice, 3);
    let first: Vec<_> = net.nodes[0].store.entries.values().take(2).cloned().collect();
    let mut other = MemStore::default();
    other.import(first).unwrap();
    let rival = other.append(&alice, b"rival at seq 3");
    let checked = check_signatures(vec![rival.clone()]).unwrap().pop().unwrap();
    net.nodes[0].store.import(vec![(checked, Some(b"rival at seq 3".to_vec()))]).unwrap();
    let tips = net.nodes[0].store.heads();
    assert_eq!(tips.len(), 2);
    let x: SignedEntry = net.nodes[0].store.entries[&(tips[0].author, tips[0].seq, tips[0].id)].0.clone().into_entry();
    let y = if x.id() == rival.id() {
        net.nodes[0].store.entries[&(tips[1].author, tips[1].seq, tips[1].id)].0.clone().into_entry()
    } else {
        rival.clone()
    };
    let proof = agora_core::ForkProof::new(x, y).unwrap();
    net.connect(0, 1);
    net.connect(1, 2);
    net.run();
    let verdicts = net.gossip(0, Gossip::ForkProof(proof.encode()));
    assert!(verdicts.iter().all(|(_, v)| *v == GossipVerdict::Accept));
    net.run();
    for n in 1..3 {
        assert_eq!(net.nodes[n].store.heads().len(), 2, "node {n} holds both branches");
    }
    assert!(net.bans.is_empty());
}

#[test]
fn authors_outside_the_roster_are_neither_requested_nor_accepted() {
    let mut net = Net::new(2, small());
    let (alice, mallory) = (AgentKey::from_seed([1; 32]), AgentKey::from_seed([9; 32]));
    chain(&mut net.nodes[0].store, &alice, 5);
    chain(&mut net.nodes[0].store, &mallory, 5);
    net.nodes[1].rep.set_admitted(Some(BTreeSet::from([alice.agent_id()])), 0);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 5, "only alice's chain");
    // Node 0 admits only alice too: it still serves mallory's chain when asked
    // (its roster may lag); node 1 never asks.
    assert!(net.nodes[1].store.entries.keys().all(|(a, _, _)| *a == alice.agent_id()));
    assert!(net.nodes[1].rep.stats().refused_not_admitted >= 1);
    // Gossip of mallory's entry is ignored (not forwarded) and reported.
    let e = net.nodes[0].store.append(&mallory, b"let me in");
    let message = gossip_of(&net.nodes[0].store, &e);
    assert_eq!(net.gossip(0, message), vec![(1, GossipVerdict::Ignore)]);
    assert!(net.refused.iter().any(|(node, _, a, _)| *node == 1 && *a == mallory.agent_id()));
    assert!(net.bans.is_empty(), "refusing is not banning");
    // Admitting mallory later fetches the chain from the peer that has it.
    net.nodes[1].rep.set_admitted(Some(BTreeSet::from([alice.agent_id(), mallory.agent_id()])), 0);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 11);
}

#[test]
fn a_flooding_peer_is_rate_limited_then_banned() {
    let config = Config { peer_messages_per_s: 10, peer_messages_burst: 20, peer_flood_ban_after: 50, ..small() };
    let mut net = Net::new(2, config);
    net.connect(0, 1);
    net.run();
    // Connecting already spent one message (node 0's frontier).
    for _ in 0..19 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 0);
    }
    assert_eq!(net.nodes[1].rep.stats().rate_limited, 0, "within the burst");
    for _ in 0..50 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 0);
    }
    assert_eq!(net.nodes[1].rep.stats().rate_limited, 50);
    assert_eq!(net.nodes[1].rep.stats().bans, 0);
    // A second later ten more are allowed again.
    for _ in 0..10 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 1_000);
    }
    assert_eq!(net.nodes[1].rep.stats().rate_limited, 50);
    for _ in 0..52 {
        net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), 1_000);
    }
    assert_eq!(net.nodes[1].rep.stats().bans, 1);

    // A steady flood far above the rate is banned too, although tokens keep
    // trickling in between its messages.
    let config = Config { peer_messages_per_s: 500, peer_messages_burst: 1_000, peer_flood_ban_after: 10_000, ..small() };
    let mut net = Net::new(2, config);
    net.connect(0, 1);
    net.run();
    'flood: for ms in 0..10_000u64 {
        for _ in 0..100 {
            net.nodes[1].rep.handle(PeerId(0), Message::Frontier(Vec::new()), ms);
            if net.nodes[1].rep.stats().bans == 1 {
                assert!(ms < 2_000, "banned only after {ms} ms");
                break 'flood;
            }
        }
    }
    assert_eq!(net.nodes[1].rep.stats().bans, 1, "a 100 messages/ms flood is banned");
    assert!(matches!(net.nodes[1].rep.poll_timeout(), Some(t) if t > 1_000), "the ban expires later");
}

#[test]
fn large_responses_are_cut_at_a_seq_boundary_and_resumed() {
    let config = Config { range_limit: 100, response_bytes_max: 4_000, ..Config::default() };
    let mut net = Net::new(2, config);
    let alice = AgentKey::from_seed([1; 32]);
    for i in 0..60 {
        net.nodes[0].store.append(&alice, format!("{i:0>200}").as_bytes());
    }
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 60);
    assert!(net.delivered > 10, "60 entries of ~400 bytes need several 4 kB responses");
    assert!(net.bans.is_empty());
}

#[test]
fn stale_or_false_heads_never_cause_a_request_loop() {
    let mut net = Net::new(2, small());
    let alice = AgentKey::from_seed([1; 32]);
    chain(&mut net.nodes[0].store, &alice, 30);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 30);
    // Gossip of an old entry (seq 5) after the frontier announced seq 30.
    let old = net.nodes[0].store.entries.values().nth(4).unwrap().0.clone().into_entry();
    let message = gossip_of(&net.nodes[0].store, &old);
    net.gossip(0, message);
    assert!(net.run() < 10, "old news must not start a fetch loop");
    // A peer claims heads it does not hold (frontiers are not signed): one
    // above our head, one branch below it. Each is asked for at most once.
    let fake_above = Head { author: alice.agent_id(), seq: 40, id: EntryId([7; 32]) };
    let fake_branch = Head { author: alice.agent_id(), seq: 10, id: EntryId([8; 32]) };
    net.nodes[1].rep.handle(PeerId(0), Message::Frontier(vec![fake_above, fake_branch]), 0);
    assert!(net.run() < 10, "false claims are asked about once, then forgotten");
    net.connect(0, 1);
    assert!(net.run() < 10);
    assert!(net.bans.is_empty());
}

#[test]
fn forked_entries_over_the_response_budget_all_arrive() {
    let config = Config { range_limit: 100, response_bytes_max: 2 << 20, ..Config::default() };
    let mut net = Net::new(2, config);
    let alice = AgentKey::from_seed([1; 32]);
    // Seq 1, then three rival entries at seq 2 with 1 MiB payloads each.
    let first = net.nodes[0].store.append(&alice, b"genesis");
    for i in 0..3u8 {
        let payload = vec![i; 1 << 20];
        let e = SignedEntry::sign(next_header(alice.agent_id(), Some(&first), 2 + u64::from(i), &payload).unwrap(), &alice);
        let checked = check_signatures(vec![e]).unwrap().pop().unwrap();
        net.nodes[0].store.import(vec![(checked, Some(payload))]).unwrap();
    }
    assert_eq!(net.nodes[0].store.entries.len(), 4);
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), 4, "every branch arrives");
    let with_payload = net.nodes[1].store.entries.values().filter(|(_, p)| p.is_some()).count();
    assert!(with_payload >= 2, "payloads within the budget travel; the rest arrive as not held");
    assert!(net.bans.is_empty());
}

#[test]
fn a_branch_a_peer_failed_to_deliver_is_asked_for_again_when_announced_again() {
    let mut net = Net::new(3, small());
    let alice = AgentKey::from_seed([1; 32]);
    // Node 0 holds two branches of alice's chain at seq 2; node 1 one of them.
    chain(&mut net.nodes[0].store, &alice, 2);
    let first: Vec<_> = net.nodes[0].store.entries.values().take(1).cloned().collect();
    net.nodes[1].store.import(first.clone()).unwrap();
    let mut other = MemStore::default();
    other.import(first).unwrap();
    let rival = other.append(&alice, b"rival");
    let checked = check_signatures(vec![rival.clone()]).unwrap().pop().unwrap();
    net.nodes[0].store.import(vec![(checked, Some(b"rival".to_vec()))]).unwrap();
    net.nodes[1].store.append(&alice, b"node 1's own second entry");
    // Node 2 holds nothing but claims the rival branch (frontiers are not
    // signed): asked once, it answers with nothing.
    net.connect(1, 2);
    net.run();
    let rival_head = Head { author: alice.agent_id(), seq: 2, id: rival.id() };
    net.nodes[1].rep.handle(PeerId(2), Message::Frontier(vec![rival_head]), 0);
    assert!(net.run() < 10);
    assert!(!net.nodes[1].store.ids.contains_key(&rival.id()));
    // Announced by a peer that has it: fetched after all.
    net.connect(0, 1);
    net.run();
    assert!(net.nodes[1].store.ids.contains_key(&rival.id()), "the branch was fetched");
    assert!(net.bans.is_empty());
}
