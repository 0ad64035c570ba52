//! Liveness of payload refetch against peers that serve entries without
//! their payloads (`protocol-spec/replication.md`, "Payload refetch" and
//! "Liveness"): a new node with one honest peer holding an author's chain
//! with every payload, and peers that strip the payloads of a pattern of
//! entries (strippers, and honest peers that got those entries stripped and
//! fetch their payloads late), holds every entry and every payload within
//! twice the time it takes with the honest peer alone, plus a constant,
//! whatever the pattern, its rate and the peers' order.
//!
//! The harness drives one `Replicator` on virtual time, as `liveness.rs`
//! does: peers answer range requests after a latency that grows with the
//! entries sent, and the node's store is a chain that takes entries in
//! order, with or without their payloads, and fills a missing payload when
//! an entry comes again with it.

use agora_core::{AgentId, EntryId, EntryRef, SignedEntry};
use agora_sync::{Config, Head, ImportOutcome, Message, Output, PeerId, RangeStart, Replicator, WireEntry};
use std::collections::BTreeMap;

mod support;

/// Round trip of a request, in ms.
const RTT_MS: u64 = 50;
/// Transfer and serving time per entry sent, in µs.
const PER_ENTRY_US: u64 = 200;

/// `n` entries of one author's chain, with their payloads.
fn chain(n: usize) -> Vec<(SignedEntry, Vec<u8>)> {
    support::chain(9, n)
}

/// Is the entry at `seq` in the `per_mille` thousandths a stripping
/// pattern strips? By a hash of its id and the pattern's salt.
fn stripped_by(id: &EntryId, per_mille: u32, salt: u8) -> bool {
    let mut bytes = id.as_bytes().to_vec();
    bytes.push(salt);
    let h = agora_core::sha256(&bytes);
    u32::from(u16::from_be_bytes([h[0], h[1]])) % 1_000 < per_mille
}

/// How a peer serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Peer {
    /// Every entry with its payload.
    Holder,
    /// Every entry, the pattern's without their payloads.
    Stripper { per_mille: u32, salt: u8 },
    /// An honest peer that got the pattern's entries stripped: it serves
    /// them without payloads until `until_ms`, with them after.
    Lacks { per_mille: u32, salt: u8, until_ms: u64 },
}

struct Sim {
    rep: Replicator,
    now: u64,
    last_tick: u64,
    chain: Vec<(SignedEntry, Vec<u8>)>,
    author: AgentId,
    /// The node's store: the chain up to `tip`, and which payloads it holds.
    tip: u64,
    tip_id: Option<EntryId>,
    has_payload: Vec<bool>,
    peers: BTreeMap<PeerId, Peer>,
    events: BTreeMap<(u64, u64), (PeerId, Message)>,
    order: u64,
    bans: Vec<PeerId>,
    payload_requests: u64,
}

impl Sim {
    fn new(chain: Vec<(SignedEntry, Vec<u8>)>, peers: &[(u64, Peer)]) -> Self {
        let author = chain[0].0.header().author;
        let n = chain.len();
        let mut sim = Sim {
            rep: Replicator::new(Config::default()),
            now: 0,
            last_tick: 0,
            chain,
            author,
            tip: 0,
            tip_id: None,
            has_payload: vec![false; n + 1],
            peers: BTreeMap::new(),
            events: BTreeMap::new(),
            order: 0,
            bans: Vec::new(),
            payload_requests: 0,
        };
        for &(id, peer) in peers {
            let p = PeerId(id);
            sim.peers.insert(p, peer);
            sim.rep.connected(p, 0);
            let (last, _) = sim.chain.last().expect("a chain");
            let claim = Message::Frontier(vec![Head { author, seq: last.header().seq, id: last.id() }]);
            sim.rep.handle(p, claim, 0);
            sim.drain();
        }
        sim
    }

    fn serve(&mut self, peer: PeerId, req: u64, start: RangeStart, limit: u32) {
        let Some(&how) = self.peers.get(&peer) else { return };
        let from = if start.after.is_some() { start.seq + 1 } else { start.seq };
        let end = start.seq.saturating_add(u64::from(limit)).min(self.chain.len() as u64 + 1);
        let now = self.now;
        let entries: Vec<WireEntry> = (from..end)
            .map(|seq| {
                let (e, payload) = &self.chain[seq as usize - 1];
                let strip = match how {
                    Peer::Holder => false,
                    Peer::Stripper { per_mille, salt } => stripped_by(&e.id(), per_mille, salt),
                    Peer::Lacks { per_mille, salt, until_ms } => now < until_ms && stripped_by(&e.id(), per_mille, salt),
                };
                WireEntry { entry: e.encode(), payload: (!strip).then(|| payload.clone()) }
            })
            .collect();
        let t = self.now + RTT_MS + entries.len() as u64 * PER_ENTRY_US / 1_000;
        self.order += 1;
        self.events.insert((t, self.order), (peer, Message::Response { req, entries, more: false }));
    }

    /// The store takes a batch in order (entries held are skipped, but a
    /// payload they lack is filled in; one that does not link stops it).
    fn store(&mut self, entries: &[agora_sync::VerifiedEntry]) -> (ImportOutcome, Vec<EntryId>, Vec<EntryRef>) {
        let (mut filled, mut missing) = (Vec::new(), Vec::new());
        for e in entries {
            let h = e.header();
            if h.seq <= self.tip {
                if e.payload().is_some() && !self.has_payload[h.seq as usize] {
                    self.has_payload[h.seq as usize] = true;
                    filled.push(e.id());
                }
                continue;
            }
            if h.seq != self.tip + 1 || h.backlink != self.tip_id {
                return (ImportOutcome::PredecessorMissing { seq: h.seq }, filled, missing);
            }
            self.tip = h.seq;
            self.tip_id = Some(e.id());
            self.has_payload[h.seq as usize] = e.payload().is_some();
            if e.payload().is_none() {
                missing.push(e.entry_ref());
            }
        }
        (ImportOutcome::Stored, filled, missing)
    }

    fn drain(&mut self) {
        while let Some(out) = self.rep.poll() {
            match out {
                Output::Send(peer, Message::Request { req, author, start, limit }) => {
                    assert_eq!(author, self.author);
                    if limit == 1 && start.after.is_none() && start.seq <= self.tip {
                        self.payload_requests += 1;
                    }
                    self.serve(peer, req, start, limit);
                }
                Output::Import { id, entries, .. } => {
                    let before = self.tip;
                    let (outcome, filled, missing) = self.store(&entries);
                    if self.tip != before {
                        let head = Head { author: self.author, seq: self.tip, id: self.tip_id.expect("a tip") };
                        self.rep.set_local_heads(self.author, vec![head], self.now);
                    }
                    self.rep.import_result(id, outcome, self.now);
                    if !filled.is_empty() {
                        self.rep.payloads_arrived(&filled);
                    }
                    if !missing.is_empty() {
                        self.rep.payloads_missing(&missing, self.now);
                    }
                }
                Output::Ban { peer, .. } => {
                    self.bans.push(peer);
                    self.peers.remove(&peer);
                }
                _ => {}
            }
        }
    }

    fn done(&self) -> bool {
        self.tip == self.chain.len() as u64 && self.has_payload[1..].iter().all(|h| *h)
    }

    /// Run until the node holds the whole chain and every payload; its
    /// virtual time then, or `None` past `limit_ms`.
    fn run(&mut self, limit_ms: u64) -> Option<u64> {
        loop {
            if self.done() {
                return Some(self.now);
            }
            let next_event = self.events.keys().next().map(|k| k.0);
            let next_tick = self.rep.poll_timeout().map(|t| t.max(self.last_tick + 1));
            let t = support::next_time(next_event, next_tick)?;
            if t > limit_ms {
                return None;
            }
            self.now = self.now.max(t);
            if next_event == Some(t) {
                let (_, (peer, m)) = self.events.pop_first().expect("an event");
                if self.peers.contains_key(&peer) {
                    self.rep.handle(peer, m, self.now);
                }
            } else {
                self.last_tick = self.now;
                self.rep.handle_timeout(self.now);
            }
            self.drain();
        }
    }
}

/// The honest peer's number; strippers and lacking peers take numbers
/// below it (ranked first on a tie: asked first) and above it.
const HONEST: u64 = 4;

fn constant_ms() -> u64 {
    Config::default().request_timeout_ms
}

#[test]
fn any_stripping_pattern_costs_at_most_twice_the_honest_time_plus_a_constant() {
    let chain = chain(2_000);
    let mut alone = Sim::new(chain.clone(), &[(HONEST, Peer::Holder)]);
    let honest = alone.run(600_000).expect("the honest peer alone syncs");
    let bound = 2 * honest + constant_ms();
    let mut worst = (0, String::new());
    for per_mille in [100, 500, 900, 1_000] {
        let strip = |salt: u8| Peer::Stripper { per_mille, salt };
        // An honest peer that got the same pattern stripped (from the same
        // strippers), and fetches its payloads a few seconds later.
        let lacks = |until_ms: u64| Peer::Lacks { per_mille, salt: 0, until_ms };
        let swarms: Vec<(&str, Vec<(u64, Peer)>)> = vec![
            ("one stripper first", vec![(1, strip(0)), (HONEST, Peer::Holder)]),
            ("one stripper last", vec![(HONEST, Peer::Holder), (5, strip(0))]),
            ("three strippers, patterns apart", vec![(1, strip(0)), (2, strip(1)), (3, strip(2)), (HONEST, Peer::Holder)]),
            (
                "three strippers and two lacking peers",
                vec![(1, strip(0)), (2, lacks(3_000)), (3, strip(0)), (HONEST, Peer::Holder), (5, lacks(20_000)), (6, strip(0))],
            ),
            ("lacking peers only", vec![(1, lacks(5_000)), (2, lacks(60_000)), (3, lacks(60_000)), (HONEST, Peer::Holder)]),
        ];
        for (name, peers) in swarms {
            let mut sim = Sim::new(chain.clone(), &peers);
            let t = sim.run(600_000);
            assert!(!sim.bans.contains(&PeerId(HONEST)), "{name}, {per_mille}‰: the honest peer banned");
            let t = t.unwrap_or_else(|| panic!("{name}, {per_mille}‰: payloads not all fetched within ten minutes"));
            eprintln!("{name}, {per_mille}‰: {t} ms, {} payload requests (honest alone {honest} ms)", sim.payload_requests);
            assert!(t <= bound, "{name}, {per_mille}‰ stripped: every payload in {t} ms, more than 2 × {honest} + {} ms", constant_ms());
            if t > worst.0 {
                worst = (t, format!("{name}, {per_mille}‰"));
            }
        }
    }
    eprintln!("honest alone: {honest} ms; worst: {} ms ({})", worst.0, worst.1);
}
