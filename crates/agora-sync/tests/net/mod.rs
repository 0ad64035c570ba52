//! A deterministic in-memory network of replicators and in-memory stores,
//! with virtual time. It does what the libp2p node does and nothing more:
//! every message is encoded to its wire bytes and decoded on arrival (with
//! the workspace check and the `Busy` / `WrongWorkspace` answers), ranges are
//! read as the replicator's `Serve` output says and cut by `respond`, gossip
//! carries only what replicators publish or accept, deduplicated by the
//! message id of the bytes, and imports follow the store's rules (links,
//! one proof per forked seq, entries dated ahead deferred) and are reported
//! with the store's typed outcome. It decides nothing of its own.
#![allow(dead_code)]

use agora_core::entry::next_header;
use agora_core::limits::FUTURE_SKEW_MAX_MS;
use agora_core::verify::{verify_link, CheckedEntry};
use agora_core::{AgentId, AgentKey, EntryId, EntryRef, ForkProof, SignedEntry};
use agora_sync::wire::gossip_message_id;
use agora_sync::{
    Config, Gossip, GossipVerdict, Head, ImportOutcome, Message, Output, PeerId, RangeStart, Replicator, ServeRequest, WireEntry, WireRequest,
    WireResponse, WorkspaceId,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A stored entry and its payload, when held.
pub type Stored = (SignedEntry, Option<Vec<u8>>);

/// An in-memory store with agora-store's rules.
#[derive(Default, Clone)]
pub struct MemStore {
    pub entries: BTreeMap<(AgentId, u64, EntryId), Stored>,
    pub ids: BTreeMap<EntryId, (AgentId, u64)>,
    pub proofs: BTreeMap<(AgentId, u64), ForkProof>,
    /// Tips by author, kept as entries are stored.
    tip_set: BTreeMap<AgentId, BTreeSet<(u64, EntryId)>>,
}

/// What an import did, as agora-store reports it.
pub struct Imported {
    pub outcome: ImportOutcome,
    pub new_forks: Vec<ForkProof>,
    pub changed: BTreeSet<AgentId>,
    pub missing: Vec<EntryRef>,
    pub filled: Vec<EntryId>,
}

impl MemStore {
    pub fn get(&self, id: &EntryId) -> Option<&Stored> {
        self.ids.get(id).map(|(a, s)| &self.entries[&(*a, *s, *id)])
    }

    /// All or nothing for the part that is stored, like agora-store: links
    /// checked, one proof per forked position, entries dated beyond the
    /// skew (and their successors) deferred.
    pub fn import(&mut self, entries: Vec<CheckedEntry>, now_ms: u64) -> Imported {
        let mut out = Imported { outcome: ImportOutcome::Stored, new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), filled: Vec::new() };
        let mut batch: BTreeMap<EntryId, SignedEntry> = BTreeMap::new();
        let mut fresh = Vec::new();
        let mut held_back: BTreeSet<EntryId> = BTreeSet::new();
        let mut fills = Vec::new();
        for c in entries {
            let (e, payload) = c.into_parts();
            let e = e.into_entry();
            let h = e.header().clone();
            if let Some(&(a, s)) = self.ids.get(&e.id()) {
                if self.entries[&(a, s, e.id())].1.is_none() && payload.is_some() {
                    fills.push(((a, s, e.id()), payload));
                }
                continue;
            }
            if h.timestamp_ms > now_ms + FUTURE_SKEW_MAX_MS || h.backlink.is_some_and(|b| held_back.contains(&b)) {
                if held_back.is_empty() {
                    out.outcome = ImportOutcome::Deferred { seq: h.seq, until_ms: h.timestamp_ms - FUTURE_SKEW_MAX_MS };
                }
                held_back.insert(e.id());
                continue;
            }
            if let Some(back) = h.backlink {
                let prev = batch.get(&back).cloned().or_else(|| self.get(&back).map(|(p, _)| p.clone()));
                let Some(prev) = prev else {
                    out.outcome = ImportOutcome::PredecessorMissing { seq: h.seq };
                    return Imported { new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), ..out };
                };
                if let Err(err) = verify_link(&prev, &e) {
                    out.outcome = ImportOutcome::Invalid { reason: err.to_string() };
                    return Imported { new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), ..out };
                }
            }
            batch.insert(e.id(), e.clone());
            fresh.push((e, payload));
        }
        for (key, payload) in fills {
            out.filled.push(key.2);
            self.entries.get_mut(&key).expect("held").1 = payload;
        }
        for (e, payload) in fresh {
            let (a, s, id) = (e.header().author, e.header().seq, e.id());
            if !self.proofs.contains_key(&(a, s))
                && let Some(((_, _, rival), (r, _))) = self.entries.range((a, s, EntryId([0; 32]))..).next().filter(|((ra, rs, _), _)| *ra == a && *rs == s)
            {
                let _ = rival;
                let proof = ForkProof::new(r.clone(), e.clone()).expect("two entries at one seq");
                self.proofs.insert((a, s), proof.clone());
                out.new_forks.push(proof);
            }
            if payload.is_none() {
                out.missing.push(e.entry_ref());
            }
            let tips = self.tip_set.entry(a).or_default();
            if let Some(back) = e.header().backlink {
                tips.remove(&(s - 1, back));
            }
            tips.insert((s, id));
            self.ids.insert(id, (a, s));
            self.entries.insert((a, s, id), (e, payload));
            out.changed.insert(a);
        }
        out
    }

    /// Sign and store the next entry of `key`'s chain (its highest tip).
    pub fn append(&mut self, key: &AgentKey, payload: &[u8], now_ms: u64) -> SignedEntry {
        let prev = self.tips(&key.agent_id()).into_iter().max().map(|h| self.entries[&(h.author, h.seq, h.id)].0.clone());
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), now_ms, payload).expect("header"), key);
        let c = agora_core::verify::check_entries(vec![(e.clone(), Some(payload.to_vec()))]).expect("own entry");
        let r = self.import(c, now_ms);
        assert_eq!(r.outcome, ImportOutcome::Stored);
        e
    }

    /// Store an entry signed elsewhere (a fork, a test's own chain).
    pub fn put(&mut self, e: &SignedEntry, payload: Option<&[u8]>, now_ms: u64) -> Imported {
        let c = agora_core::verify::check_entries(vec![(e.clone(), payload.map(<[u8]>::to_vec))]).expect("valid entry");
        self.import(c, now_ms)
    }

    pub fn tips(&self, author: &AgentId) -> Vec<Head> {
        self.tip_set.get(author).map(|t| t.iter().map(|(seq, id)| Head { author: *author, seq: *seq, id: *id }).collect()).unwrap_or_default()
    }

    pub fn heads(&self) -> Vec<Head> {
        self.tip_set.keys().flat_map(|a| self.tips(a)).collect()
    }

    pub fn max_seq(&self, author: &AgentId) -> u64 {
        self.tips(author).iter().map(|h| h.seq).max().unwrap_or(0)
    }

    /// What the driver reads for a `Serve`.
    pub fn serve(&self, s: &ServeRequest) -> Vec<(u64, WireEntry)> {
        let first = s.start.after.map_or(EntryId([0; 32]), |id| id);
        self.entries
            .range((s.author, s.start.seq, first)..)
            .take_while(|((a, _, _), _)| *a == s.author)
            .filter(|((_, seq, id), _)| s.start.after.is_none() || *seq > s.start.seq || Some(*id) > s.start.after)
            .take(s.read_max)
            .map(|((_, seq, _), (e, p))| (*seq, WireEntry { entry: e.encode(), payload: p.clone() }))
            .collect()
    }

    pub fn missing_payloads(&self) -> Vec<EntryRef> {
        self.entries.values().filter(|(_, p)| p.is_none()).map(|(e, _)| e.entry_ref()).collect()
    }
}

/// How a node behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Behaviour {
    #[default]
    Honest,
    /// Claims what it holds and never answers a range request.
    Withholder,
    /// Serves and relays entries without their payloads.
    Stripper,
    /// Breaks the signature of the first entry of every response.
    Corrupter,
}

pub struct Node {
    pub rep: Replicator,
    pub store: MemStore,
    pub workspace: WorkspaceId,
    pub behaviour: Behaviour,
    /// Gossip message ids already seen (gossipsub's duplicate filter).
    seen: BTreeSet<[u8; 32]>,
    pub unavailable: Vec<EntryRef>,
}

/// Bytes in transit.
#[derive(Clone, Debug)]
pub enum Packet {
    Request(Vec<u8>),
    /// A response, with the id of the range request it answers (the
    /// transport correlates them, as libp2p's request-response does).
    Response(Option<u64>, Vec<u8>),
    Gossip(Vec<u8>),
}

pub struct Net {
    pub nodes: Vec<Node>,
    pub wire: VecDeque<(u64, u64, Packet)>,
    pub links: BTreeSet<(u64, u64)>,
    pub bans: Vec<(u64, u64, String)>,
    pub refused: Vec<(u64, u64, AgentId, &'static str)>,
    pub delivered: usize,
    pub now: u64,
    /// Deliver the newest packet first (responses arrive out of order).
    pub newest_first: bool,
    /// Range requests each node sent.
    pub requests_sent: Vec<usize>,
    /// Most requests each node had in flight at once.
    pub max_in_flight: Vec<usize>,
    /// Answers by kind, for tests of the wire's answers.
    pub busy: usize,
    pub wrong_workspace: usize,
    /// Every range request: (from, to, start, limit).
    pub request_log: Vec<(usize, u64, RangeStart, u32)>,
}

fn link(a: u64, b: u64) -> (u64, u64) {
    (a.min(b), a.max(b))
}

impl Net {
    pub fn new(n: usize, config: Config) -> Self {
        let workspace = WorkspaceId::new(&AgentId([0xf0; 32]), "sim");
        let nodes = (0..n)
            .map(|_| Node { rep: Replicator::new(config.clone()), store: MemStore::default(), workspace, behaviour: Behaviour::Honest, seen: BTreeSet::new(), unavailable: Vec::new() })
            .collect();
        Self {
            nodes,
            wire: VecDeque::new(),
            links: BTreeSet::new(),
            bans: Vec::new(),
            refused: Vec::new(),
            delivered: 0,
            now: 1_000,
            newest_first: false,
            requests_sent: vec![0; n],
            max_in_flight: vec![0; n],
            busy: 0,
            wrong_workspace: 0,
            request_log: Vec::new(),
        }
    }

    /// Tell node `i`'s replicator what its store holds (after writing to it
    /// directly), as the node does at start-up and after a resync.
    pub fn sync_local(&mut self, i: usize) {
        let heads = self.nodes[i].store.heads();
        let now = self.now;
        self.nodes[i].rep.set_local_frontier(heads, now);
        let missing = self.nodes[i].store.missing_payloads();
        self.nodes[i].rep.payloads_missing(&missing, now);
    }

    pub fn connect(&mut self, a: u64, b: u64) {
        self.links.insert(link(a, b));
        for n in [a as usize, b as usize] {
            self.sync_local(n);
        }
        let now = self.now;
        self.nodes[a as usize].rep.connected(PeerId(b), now);
        self.nodes[b as usize].rep.connected(PeerId(a), now);
    }

    pub fn connected(&self, a: u64, b: u64) -> bool {
        self.links.contains(&link(a, b))
    }

    /// Append on node `i` and publish as its node would.
    pub fn append(&mut self, i: usize, key: &AgentKey, payload: &[u8]) -> SignedEntry {
        let now = self.now;
        let e = self.nodes[i].store.append(key, payload, now);
        let tips = self.nodes[i].store.tips(&key.agent_id());
        self.nodes[i].rep.local_commit(&[(e.clone(), Some(payload.to_vec()))], &[]);
        self.nodes[i].rep.set_local_heads(key.agent_id(), tips, now);
        e
    }

    /// Run until nothing moves, letting virtual time pass for the short
    /// timers (announcements coalesced for `ANNOUNCE_INTERVAL_MS`, `Busy`
    /// backoffs) but not for request timeouts; returns packets delivered.
    pub fn run(&mut self) -> usize {
        let start = self.delivered;
        loop {
            self.run_now();
            let next = self.nodes.iter().filter_map(|n| n.rep.poll_timeout()).min();
            match next {
                Some(t) if t > self.now && t <= self.now + agora_sync::BUSY_BACKOFF_MS.max(agora_sync::ANNOUNCE_INTERVAL_MS) => {
                    self.now = t;
                    let now = self.now;
                    for n in &mut self.nodes {
                        n.rep.handle_timeout(now);
                    }
                }
                _ => return self.delivered - start,
            }
        }
    }

    /// Deliver until nothing moves at this instant. Bounded.
    fn run_now(&mut self) -> usize {
        let start = self.delivered;
        for _ in 0..5_000_000 {
            let mut progressed = false;
            for i in 0..self.nodes.len() {
                while let Some(out) = self.nodes[i].rep.poll() {
                    progressed = true;
                    self.output(i, out);
                }
                self.max_in_flight[i] = self.max_in_flight[i].max(self.nodes[i].rep.in_flight());
            }
            let next = if self.newest_first { self.wire.pop_back() } else { self.wire.pop_front() };
            if let Some((from, to, packet)) = next {
                progressed = true;
                self.delivered += 1;
                if self.connected(from, to) {
                    self.deliver(from, to, packet);
                }
            }
            if !progressed {
                return self.delivered - start;
            }
        }
        panic!("network did not settle");
    }

    /// Let `ms` of virtual time pass (ticking every node), then run.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
        let now = self.now;
        for n in &mut self.nodes {
            n.rep.handle_timeout(now);
        }
        self.run();
    }

    fn send(&mut self, from: usize, to: u64, packet: Packet) {
        self.wire.push_back((from as u64, to, packet));
    }

    fn output(&mut self, i: usize, out: Output) {
        let now = self.now;
        match out {
            Output::Send(to, Message::Response { req, entries, more }) => {
                let bytes = WireResponse::Entries { req, entries, more }.encode();
                self.send(i, to.0, Packet::Response(Some(req), bytes));
            }
            Output::Send(to, message) => {
                if let Message::Request { start, limit, .. } = &message {
                    self.requests_sent[i] += 1;
                    self.request_log.push((i, to.0, *start, *limit));
                }
                let workspace = self.nodes[i].workspace;
                let request = WireRequest::from_message(workspace, message).expect("frontiers and ranges travel as requests");
                self.send(i, to.0, Packet::Request(request.encode()));
            }
            Output::Publish(g) => self.publish(i, g),
            Output::Import { id, from, entries } => {
                let r = self.nodes[i].store.import(entries, now);
                self.nodes[i].rep.import_result(id, r.outcome.clone(), now);
                self.after_commit(i, &r, from);
            }
            Output::Serve(s) => {
                let node = &self.nodes[i];
                if node.behaviour == Behaviour::Withholder {
                    return;
                }
                let mut served = node.store.serve(&s);
                match node.behaviour {
                    Behaviour::Stripper => served.iter_mut().for_each(|(_, w)| w.payload = None),
                    Behaviour::Corrupter => {
                        if let Some((_, w)) = served.get_mut(0) {
                            let n = w.entry.len();
                            w.entry[n - 3] ^= 0x40;
                        }
                    }
                    _ => {}
                }
                self.nodes[i].rep.respond(s, served);
            }
            Output::Ban { peer, reason, .. } => {
                self.bans.push((i as u64, peer.0, reason));
                self.links.remove(&link(i as u64, peer.0));
                self.nodes[peer.0 as usize].rep.disconnected(PeerId(i as u64));
                self.nodes[i].rep.disconnected(peer);
            }
            Output::Decline { peer, req } => self.send(i, peer.0, Packet::Response(Some(req), WireResponse::Busy.encode())),
            Output::Refused { peer, author, what } => self.refused.push((i as u64, peer.0, author, what)),
            Output::PayloadUnavailable(e) => self.nodes[i].unavailable.push(e),
        }
    }

    /// What the node's commit path does: tips to the replicator, new fork
    /// proofs published, payloads that arrived or are missing reported.
    fn after_commit(&mut self, i: usize, r: &Imported, _from: PeerId) {
        let now = self.now;
        for a in &r.changed {
            let tips = self.nodes[i].store.tips(a);
            self.nodes[i].rep.set_local_heads(*a, tips, now);
        }
        if !r.new_forks.is_empty() {
            self.nodes[i].rep.local_commit(&[], &r.new_forks);
        }
        if !r.filled.is_empty() {
            self.nodes[i].rep.payloads_arrived(&r.filled);
        }
        if !r.missing.is_empty() {
            self.nodes[i].rep.payloads_missing(&r.missing, now);
        }
    }

    fn deliver(&mut self, from: u64, to: u64, packet: Packet) {
        let now = self.now;
        let i = to as usize;
        let p = PeerId(from);
        match packet {
            Packet::Request(bytes) => {
                let request = match WireRequest::decode(&bytes) {
                    Ok(r) => r,
                    Err(e) => return self.nodes[i].rep.report_invalid(p, format!("request: {e}"), now),
                };
                if request.workspace() != self.nodes[i].workspace {
                    return self.send(i, from, Packet::Response(None, WireResponse::WrongWorkspace.encode()));
                }
                let message = request.into_message();
                if matches!(message, Message::Frontier(_)) {
                    self.send(i, from, Packet::Response(None, WireResponse::Ack.encode()));
                }
                self.nodes[i].rep.handle(p, message, now);
            }
            Packet::Response(req, bytes) => match WireResponse::decode(&bytes) {
                Ok(WireResponse::Entries { req, entries, more }) => self.nodes[i].rep.handle(p, Message::Response { req, entries, more }, now),
                Ok(WireResponse::Ack) => {}
                Ok(WireResponse::Busy) => {
                    self.busy += 1;
                    if let Some(req) = req {
                        self.nodes[i].rep.busy(p, req, now);
                    }
                }
                Ok(WireResponse::WrongWorkspace) => {
                    self.wrong_workspace += 1;
                    self.links.remove(&link(from, to));
                    self.nodes[i].rep.disconnected(p);
                }
                Err(e) => self.nodes[i].rep.report_invalid(p, format!("response: {e}"), now),
            },
            Packet::Gossip(bytes) => self.receive_gossip(i, from, bytes),
        }
    }

    /// Publish from node `i` to its neighbours (gossipsub's flood).
    fn publish(&mut self, i: usize, g: Gossip) {
        let bytes = g.encode();
        self.nodes[i].seen.insert(gossip_message_id(&bytes));
        self.forward(i, None, bytes);
    }

    fn forward(&mut self, i: usize, except: Option<u64>, bytes: Vec<u8>) {
        let neighbours: Vec<u64> =
            self.links.iter().filter_map(|&(a, b)| if a == i as u64 { Some(b) } else if b == i as u64 { Some(a) } else { None }).collect();
        for n in neighbours {
            if Some(n) != except {
                self.send(i, n, Packet::Gossip(bytes.clone()));
            }
        }
    }

    fn receive_gossip(&mut self, i: usize, from: u64, bytes: Vec<u8>) {
        let now = self.now;
        if !self.nodes[i].seen.insert(gossip_message_id(&bytes)) {
            return; // a duplicate: dropped before validation
        }
        let verdict = match Gossip::decode(&bytes) {
            Ok(g) => self.nodes[i].rep.gossip(PeerId(from), g, now),
            Err(e) => {
                self.nodes[i].rep.report_invalid(PeerId(from), format!("gossip: {e}"), now);
                return;
            }
        };
        if verdict != GossipVerdict::Accept {
            return;
        }
        let out = match (self.nodes[i].behaviour, Gossip::decode(&bytes)) {
            (Behaviour::Stripper, Ok(Gossip::Entry(w))) => {
                // Relays the entry without its payload: a different message.
                let stripped = Gossip::Entry(WireEntry { entry: w.entry, payload: None }).encode();
                self.nodes[i].seen.insert(gossip_message_id(&stripped));
                stripped
            }
            _ => bytes,
        };
        self.forward(i, Some(from), out);
    }

    /// Publish an arbitrary gossip message as node `origin` (a test's own).
    pub fn gossip_from(&mut self, origin: usize, g: Gossip) {
        self.publish(origin, g);
    }
}

/// `n` entries appended to `key`'s chain in `store`.
pub fn chain(store: &mut MemStore, key: &AgentKey, n: usize, now_ms: u64) {
    for i in 0..n {
        store.append(key, format!("event {i}").as_bytes(), now_ms);
    }
}

pub fn small() -> Config {
    Config { range_limit: 100, ..Config::default() }
}

/// A head of `e`.
pub fn head(e: &SignedEntry) -> Head {
    Head { author: e.header().author, seq: e.header().seq, id: e.id() }
}

/// The start of a whole seq.
pub fn at(seq: u64) -> RangeStart {
    RangeStart::at(seq)
}
