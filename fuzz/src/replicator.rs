//! The replicator target: one node's `agora_sync::Replicator`, driven the way
//! the node's driver and the simulator drive it (`simulations/src/net.rs`),
//! fed a sequence of events from peers whose bytes come from the fuzzer:
//! wire requests, responses and gossip (decoded as the driver decodes them,
//! undecodable ones reported with `report_invalid`), time passing, peers
//! connecting and leaving, roster changes and local appends. Its outputs are
//! carried out against an in-memory store with the real import rules
//! ([`agora_sync::harness::MemStore`]), so imports, serves and their follow-ups run.
//!
//! Besides the replicator's own assertions (its bounds and the driver
//! contract), every run checks that:
//! - what the node sends or publishes encodes, within its size limit, to
//!   bytes that decode to the same message (a peer will not ban it for them),
//!   and no request it sends breaks the bounds it bans peers for;
//! - while the roster is unchanged, nothing of an author it does not admit
//!   (or beyond a cut-off) reaches the store;
//! - the store's import rules never find the store inconsistent (one proof
//!   per forked position, no entry stored twice);
//! - every import is reported, and draining the outputs terminates (at most
//!   [`OUTPUTS_PER_STEP_MAX`] per step).
//!
//! Input layout: byte 0 picks the configuration (bit 0: small limits, so
//! the bounds are reached; bit 1: no roster, else alice, bob, carol and this
//! node admitted), then operations until the input ends:
//!
//! | op | fields | what |
//! |---|---|---|
//! | 0 | peer, len: u16, bytes | a request from the peer |
//! | 1 | peer (bit 7: checked on a worker first), len: u16, bytes | a response from the peer |
//! | 2 | peer, len: u16, bytes | gossip relayed by the peer |
//! | 3 | ms: u16 | time passes (ms × 8), `handle_timeout` |
//! | 4 | peer | the peer connects |
//! | 5 | peer | the peer disconnects |
//! | 6 | mask, cut | the roster: agents 0..4 of the mask admitted; bit 7 of the mask: no roster; agent 3 (dave) removed with cut-off `cut` |
//! | 7 | len: u8, payload | this node appends an entry |
//! | 8 | | the clock jumps to `poll_timeout`, `handle_timeout` |
//!
//! Peers are numbered 0..3; 1 and 2 are connected at the start.

use crate::fixture::{self, LOCAL, START_MS, agent, key};
use crate::reader::Reader;
use agora_core::AgentId;
use agora_sync::harness::{self, MemStore};
use agora_sync::wire::{GOSSIP_BYTES_MAX, REQUEST_BYTES_MAX, RESPONSE_BYTES_MAX};
use agora_sync::{Config, Gossip, GossipVerdict, Message, Output, PeerId, RESPONSE_ENTRIES_MAX, Replicator, WireRequest, WireResponse, WorkspaceId};
use std::collections::{BTreeMap, BTreeSet};

/// Most outputs one step may produce before draining is taken to loop.
pub const OUTPUTS_PER_STEP_MAX: usize = 100_000;

/// The small limits of configuration bit 0.
pub fn small_config() -> Config {
    Config {
        range_limit: 4,
        response_bytes_max: 2048,
        in_flight_per_peer: 2,
        in_flight_max: 3,
        request_timeout_ms: 1_000,
        request_timeout_base_ms: 400,
        hedge_min_ms: 200,
        hedge_slowdown: 2,
        ban_ms: 5_000,
        frontier_heads_max: 6,
        frontier_refresh_ms: 3_000,
        heads_per_author_max: 3,
        non_member_heads_per_peer: 4,
        outputs_max: 64,
        peer_messages_per_s: 8,
        peer_messages_burst: 16,
        peer_flood_ban_after: 24,
        author_gossip_per_s: 4,
        author_gossip_burst: 8,
        missing_payloads_max: 3,
        payload_tries_max: 2,
    }
}

/// The roster of operation 6.
pub fn admission(mask: u8, cut: u8) -> Option<BTreeMap<AgentId, Option<u64>>> {
    if mask & 0x80 != 0 {
        return None;
    }
    let mut m: BTreeMap<AgentId, Option<u64>> = (0..5u8).filter(|i| mask & (1 << i) != 0).map(|i| (agent(i), None)).collect();
    if mask & (1 << 3) == 0 {
        m.insert(agent(3), Some(u64::from(cut)));
    }
    m.insert(agent(LOCAL), None);
    Some(m)
}

/// One node: its replicator, its store and what its driver knows.
pub struct Harness {
    /// The replicator under test.
    pub rep: Replicator,
    /// Its store.
    pub store: MemStore,
    /// The clock.
    pub now: u64,
    /// The replicator's configuration.
    pub config: Config,
    workspace: WorkspaceId,
    admitted: Option<BTreeMap<AgentId, Option<u64>>>,
    /// No roster change since the start.
    admission_fixed: bool,
    connected: BTreeSet<u64>,
    /// The last request id sent to each peer (a `Busy` or `Wait` answers it).
    last_req: BTreeMap<u64, u64>,
    /// Every message sent, in order (for the seed generator).
    pub sent: Vec<(PeerId, Message)>,
    /// Every gossip message published.
    pub published: Vec<Gossip>,
}

impl Harness {
    /// A node per configuration byte `conf` (see the module's table), with
    /// two entries of its own and peers 1 and 2 connected.
    pub fn new(conf: u8) -> Self {
        let config = if conf & 1 != 0 { small_config() } else { Config::default() };
        let admitted = if conf & 2 != 0 { None } else { admission(0b1_0111, 0) };
        let mut store = MemStore::default();
        store.append(key(LOCAL), b"agev\x01\x00\x05first", START_MS - 50_000);
        store.append(key(LOCAL), b"a raw note", START_MS - 40_000);
        let mut h = Self {
            rep: Replicator::new(config.clone()),
            store,
            now: START_MS,
            config,
            workspace: fixture::workspace(),
            admitted: admitted.clone(),
            admission_fixed: true,
            connected: BTreeSet::new(),
            last_req: BTreeMap::new(),
            sent: Vec::new(),
            published: Vec::new(),
        };
        h.rep.set_admitted(admitted, h.now);
        h.rep.set_local_frontier(h.store.heads(), h.now);
        h.drain();
        for p in [1, 2] {
            h.connect(p);
        }
        h
    }

    fn connect(&mut self, p: u64) {
        self.connected.insert(p);
        self.rep.connected(PeerId(p), self.now);
        self.drain();
    }

    fn disconnect(&mut self, p: u64) {
        self.connected.remove(&p);
        self.rep.disconnected(PeerId(p));
        self.drain();
    }

    /// Run one operation; `false` at the end of the input.
    pub fn step(&mut self, r: &mut Reader<'_>) -> bool {
        let Some(op) = r.u8() else { return false };
        let now = self.now;
        match op % 9 {
            0 => {
                let (Some(peer), Some(bytes)) = (r.u8(), r.u16().and_then(|n| r.bytes(n.into()))) else { return false };
                let p = PeerId(u64::from(peer % 4));
                match WireRequest::decode(bytes) {
                    Err(e) => self.rep.report_invalid(p, e.to_string(), now),
                    // Answered WrongWorkspace by the driver; the replicator never sees it.
                    Ok(req) if req.workspace() != self.workspace => {}
                    Ok(req) => self.rep.handle(p, req.into_message(), now),
                }
            }
            1 => {
                let (Some(peer), Some(bytes)) = (r.u8(), r.u16().and_then(|n| r.bytes(n.into()))) else { return false };
                let p = PeerId(u64::from(peer % 4));
                match WireResponse::decode(bytes) {
                    Err(e) => self.rep.report_invalid(p, e.to_string(), now),
                    Ok(WireResponse::Entries { req, entries, more }) if peer & 0x80 != 0 => {
                        let checked = agora_sync::check_entries(entries);
                        self.rep.handle_checked_response(p, req, checked, more, now);
                    }
                    Ok(WireResponse::Entries { req, entries, more }) => self.rep.handle(p, Message::Response { req, entries, more }, now),
                    Ok(WireResponse::Ack) => {}
                    Ok(WireResponse::Busy) => {
                        let req = self.last_req.get(&p.0).copied().unwrap_or(0);
                        self.rep.busy(p, req, now);
                    }
                    Ok(WireResponse::Wait { ms }) => {
                        let req = self.last_req.get(&p.0).copied().unwrap_or(0);
                        self.rep.wait(p, req, ms, now);
                    }
                    Ok(WireResponse::WrongWorkspace) => self.disconnect(p.0),
                }
            }
            2 => {
                let (Some(peer), Some(bytes)) = (r.u8(), r.u16().and_then(|n| r.bytes(n.into()))) else { return false };
                let p = PeerId(u64::from(peer % 4));
                match Gossip::decode(bytes) {
                    Err(e) => self.rep.report_invalid(p, e.to_string(), now),
                    Ok(g) => {
                        if let GossipVerdict::Reject(_) = self.rep.gossip(p, g, now) {
                            assert!(self.rep.banned_until(p, now).is_some() || !self.connected.contains(&p.0), "a rejected relay is banned");
                        }
                    }
                }
            }
            3 => {
                let Some(ms) = r.u16() else { return false };
                self.now += u64::from(ms) * 8;
                self.rep.handle_timeout(self.now);
            }
            4 => {
                let Some(peer) = r.u8() else { return false };
                self.connect(u64::from(peer % 4));
            }
            5 => {
                let Some(peer) = r.u8() else { return false };
                self.disconnect(u64::from(peer % 4));
            }
            6 => {
                let (Some(mask), Some(cut)) = (r.u8(), r.u8()) else { return false };
                let a = admission(mask, cut);
                self.admission_fixed &= a == self.admitted;
                self.admitted = a.clone();
                self.rep.set_admitted(a, now);
            }
            7 => {
                let Some(payload) = r.u8().and_then(|n| r.bytes(n.into())) else { return false };
                harness::append(&mut self.rep, &mut self.store, key(LOCAL), payload, now);
            }
            _ => {
                if let Some(t) = self.rep.poll_timeout() {
                    self.now = self.now.max(t);
                }
                self.rep.handle_timeout(self.now);
            }
        }
        self.drain();
        true
    }

    fn admits(&self, author: &AgentId, seq: u64) -> bool {
        match &self.admitted {
            None => true,
            Some(m) => m.get(author).is_some_and(|cut| cut.is_none_or(|last| seq <= last)),
        }
    }

    /// Carry out every output, as the node's driver does.
    pub fn drain(&mut self) {
        let mut n = 0usize;
        while let Some(out) = self.rep.poll() {
            n += 1;
            assert!(n <= OUTPUTS_PER_STEP_MAX, "draining the outputs does not end");
            self.output(out);
        }
    }

    fn output(&mut self, out: Output) {
        let now = self.now;
        match out {
            Output::Send(to, Message::Response { req, entries, more }) => {
                assert!(entries.len() <= RESPONSE_ENTRIES_MAX);
                let response = WireResponse::Entries { req, entries, more };
                let bytes = response.encode();
                assert!(bytes.len() <= RESPONSE_BYTES_MAX, "a response of {} bytes", bytes.len());
                assert_eq!(WireResponse::decode(&bytes).as_ref(), Ok(&response), "our response does not decode");
                if let WireResponse::Entries { req, entries, more } = response {
                    self.sent.push((to, Message::Response { req, entries, more }));
                }
            }
            Output::Send(to, message) => {
                match &message {
                    Message::Request { req, start, limit, .. } => {
                        assert!(*limit > 0 && *limit <= self.config.range_limit && start.seq > 0, "we send a request we would ban for: {message:?}");
                        self.last_req.insert(to.0, *req);
                    }
                    Message::Frontier(heads) => assert!(heads.len() <= self.config.frontier_heads_max, "a frontier over the limit"),
                    Message::Response { .. } => unreachable!(),
                }
                let request = WireRequest::from_message(self.workspace, message.clone()).expect("frontiers and ranges travel as requests");
                let bytes = request.encode();
                assert!(bytes.len() <= REQUEST_BYTES_MAX);
                assert_eq!(WireRequest::decode(&bytes).as_ref(), Ok(&request), "our request does not decode");
                self.sent.push((to, message));
            }
            Output::Publish(g) => {
                let bytes = g.encode();
                assert!(bytes.len() <= GOSSIP_BYTES_MAX, "gossip of {} bytes", bytes.len());
                assert_eq!(Gossip::decode(&bytes).as_ref(), Ok(&g), "our gossip does not decode");
                self.published.push(g);
            }
            Output::Import { id, from: _, entries } => {
                if self.admission_fixed {
                    for e in &entries {
                        let h = e.header();
                        assert!(self.admits(&h.author, h.seq), "an entry the roster does not admit reached the store");
                    }
                }
                harness::import(&mut self.rep, &mut self.store, id, entries, now);
            }
            Output::Serve(s) => harness::serve(&mut self.rep, &self.store, s),
            Output::Ban { peer, .. } => {
                // The driver disconnects a banned peer.
                self.connected.remove(&peer.0);
                self.rep.disconnected(peer);
            }
            Output::Decline { .. } | Output::Refused { .. } | Output::PayloadUnavailable(_) => {}
        }
    }

    /// Checks at the end of a run.
    pub fn finish(&mut self) {
        self.drain();
        assert_eq!(self.rep.pending_imports(), 0, "an import was never reported");
        let _ = (self.rep.lag(), self.rep.stats(), self.rep.poll_timeout(), self.rep.peers(), self.rep.local_heads());
        assert!(self.rep.in_flight() <= self.config.in_flight_max + agora_sync::RETRY_FANOUT_MAX + 64);
    }
}

/// `agora_sync::Replicator` fed a peer's input: see [`run`].
pub fn replicator(data: &[u8]) {
    run(data);
}

/// Run the operations of `data` (the module's layout) and return the node.
pub fn run_with(data: &[u8]) -> Harness {
    let mut r = Reader::new(data);
    let mut h = Harness::new(r.u8().unwrap_or(0));
    while h.step(&mut r) {}
    h.finish();
    h
}

/// The fuzz target.
pub fn run(data: &[u8]) {
    run_with(data);
}

/// Writing inputs in the module's layout (for the seed generator).
#[derive(Default, Clone)]
pub struct Script(pub Vec<u8>);

impl Script {
    /// A script starting with configuration byte `conf`.
    pub fn new(conf: u8) -> Self {
        Self(vec![conf])
    }
    fn framed(mut self, op: u8, peer: u8, bytes: &[u8]) -> Self {
        self.0.extend([op, peer]);
        self.0.extend((bytes.len() as u16).to_le_bytes());
        self.0.extend_from_slice(bytes);
        self
    }
    /// Op 0.
    pub fn request(self, peer: u8, bytes: &[u8]) -> Self {
        self.framed(0, peer, bytes)
    }
    /// Op 1.
    pub fn response(self, peer: u8, checked: bool, bytes: &[u8]) -> Self {
        self.framed(1, peer | if checked { 0x80 } else { 0 }, bytes)
    }
    /// Op 2.
    pub fn gossip(self, peer: u8, bytes: &[u8]) -> Self {
        self.framed(2, peer, bytes)
    }
    /// Op 3: `ms` (rounded down to 8) pass.
    pub fn advance(mut self, ms: u32) -> Self {
        self.0.push(3);
        self.0.extend(((ms / 8).min(u32::from(u16::MAX)) as u16).to_le_bytes());
        self
    }
    /// Op 4.
    pub fn connect(mut self, peer: u8) -> Self {
        self.0.extend([4, peer]);
        self
    }
    /// Op 5.
    pub fn disconnect(mut self, peer: u8) -> Self {
        self.0.extend([5, peer]);
        self
    }
    /// Op 6.
    pub fn admit(mut self, mask: u8, cut: u8) -> Self {
        self.0.extend([6, mask, cut]);
        self
    }
    /// Op 7.
    pub fn append(mut self, payload: &[u8]) -> Self {
        self.0.extend([7, payload.len() as u8]);
        self.0.extend_from_slice(payload);
        self
    }
    /// Op 8.
    pub fn timer(mut self) -> Self {
        self.0.push(8);
        self
    }
}
