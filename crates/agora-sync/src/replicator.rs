//! The replication state machine.

use agora_core::verify::{verify_payload, verify_signatures};
use agora_core::{AgentId, EntryId, SignedEntry};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A verified entry with its payload, when the sender held it.
pub type VerifiedEntry = (SignedEntry, Option<Vec<u8>>);

/// A peer, as the driver names it (a libp2p peer id, or a simulator index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u64);

/// Limits and timings. Every queue and message is bounded by one of these.
#[derive(Clone, Debug)]
pub struct Config {
    /// Most entries asked for (and served) in one response.
    pub range_limit: u32,
    /// Most requests in flight to one peer.
    pub in_flight_per_peer: usize,
    /// A request unanswered for this long is sent again (to any peer that has the range).
    pub request_timeout_ms: u64,
    /// How long a peer that sent invalid data is ignored.
    pub ban_ms: u64,
    /// Most authors listed in one frontier.
    pub frontier_authors_max: usize,
    /// Most outputs queued before the driver drains them; beyond it, new
    /// requests wait (never dropped silently: they are re-planned on timeout).
    pub outputs_max: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            range_limit: 1000,
            in_flight_per_peer: 4,
            request_timeout_ms: 10_000,
            ban_ms: 600_000,
            frontier_authors_max: 100_000,
            outputs_max: 10_000,
        }
    }
}

/// One tip of an author's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Head {
    /// The author.
    pub author: AgentId,
    /// The tip's seq.
    pub seq: u64,
    /// The tip's id.
    pub id: EntryId,
}

/// A signed entry with its payload, as bytes on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireEntry {
    /// Signed entry bytes (see protocol-spec/entry-format.md).
    pub entry: Vec<u8>,
    /// The payload, if the sender holds it.
    pub payload: Option<Vec<u8>>,
}

/// A replication message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Tips the sender holds. On connect: every tip. Afterwards: the tips of
    /// the authors that changed, which replace the receiver's view of those
    /// authors (this is also how new heads are announced).
    Frontier(Vec<Head>),
    /// Ask for `author`'s entries with seq in `from_seq..from_seq + limit`, all branches.
    Request {
        /// Request id, echoed in the response.
        req: u64,
        /// The author.
        author: AgentId,
        /// First seq wanted.
        from_seq: u64,
        /// Most seqs wanted.
        limit: u32,
    },
    /// Entries answering a request, in (seq, id) order.
    Response {
        /// The request id.
        req: u64,
        /// The entries.
        entries: Vec<WireEntry>,
        /// The sender holds entries beyond this range.
        more: bool,
    },
}

/// Something the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send a message to a peer.
    Send(PeerId, Message),
    /// Store these entries (verified: signatures, payload hashes, links within
    /// the batch). The store checks the link to what it already holds.
    Import {
        /// Who sent them.
        from: PeerId,
        /// The entries, in (seq, id) order, with payloads when sent.
        entries: Vec<VerifiedEntry>,
    },
    /// Read `author`'s entries with seq in `from_seq..from_seq + limit` (all
    /// branches) from the store and call [`Replicator::respond`].
    Serve {
        /// Who asked.
        peer: PeerId,
        /// Their request id.
        req: u64,
        /// The author.
        author: AgentId,
        /// First seq.
        from_seq: u64,
        /// Most seqs.
        limit: u32,
    },
    /// Disconnect this peer and ignore it until `until_ms`.
    Ban {
        /// The peer.
        peer: PeerId,
        /// Why, naming the bad input.
        reason: String,
        /// Until when.
        until_ms: u64,
    },
}

#[derive(Clone, Debug)]
struct InFlight {
    peer: PeerId,
    author: AgentId,
    from_seq: u64,
    deadline_ms: u64,
}

#[derive(Default, Debug)]
struct PeerState {
    /// The peer's tips, by author.
    frontier: BTreeMap<AgentId, Vec<Head>>,
}

/// The replication state of one node.
#[derive(Debug)]
pub struct Replicator {
    config: Config,
    /// What the local store holds: tips by author.
    local: BTreeMap<AgentId, Vec<Head>>,
    peers: BTreeMap<PeerId, PeerState>,
    banned: BTreeMap<PeerId, u64>,
    in_flight: BTreeMap<u64, InFlight>,
    next_req: u64,
    outputs: VecDeque<Output>,
}

fn max_seq(heads: &[Head]) -> u64 {
    heads.iter().map(|h| h.seq).max().unwrap_or(0)
}

impl Replicator {
    /// A replicator with nothing known.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            local: BTreeMap::new(),
            peers: BTreeMap::new(),
            banned: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            next_req: 1,
            outputs: VecDeque::new(),
        }
    }

    /// The store's tips changed (after an import or a local append). Plans
    /// further requests from connected peers that hold more.
    pub fn set_local_frontier(&mut self, heads: Vec<Head>, now_ms: u64) {
        let mut next: BTreeMap<AgentId, Vec<Head>> = BTreeMap::new();
        for h in heads {
            next.entry(h.author).or_default().push(h);
        }
        for tips in next.values_mut() {
            tips.sort();
        }
        // Announce the authors whose tips changed to every connected peer.
        let changed: Vec<Head> =
            next.iter().filter(|(a, tips)| self.local.get(*a) != Some(*tips)).flat_map(|(_, tips)| tips.iter().copied()).collect();
        self.local = next;
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        if !changed.is_empty() {
            for p in &peers {
                self.outputs.push_back(Output::Send(*p, Message::Frontier(changed.clone())));
            }
        }
        for p in peers {
            self.plan(p, now_ms);
        }
    }

    fn local_heads(&self) -> Vec<Head> {
        self.local.values().flatten().copied().collect()
    }

    fn is_banned(&self, peer: PeerId, now_ms: u64) -> bool {
        self.banned.get(&peer).is_some_and(|until| *until > now_ms)
    }

    /// A peer connected: send it our frontier.
    pub fn connected(&mut self, peer: PeerId, now_ms: u64) {
        if self.is_banned(peer, now_ms) {
            return;
        }
        self.peers.insert(peer, PeerState::default());
        let frontier = self.local_heads();
        self.outputs.push_back(Output::Send(peer, Message::Frontier(frontier)));
    }

    /// A peer went away: its in-flight requests are re-planned on timeout.
    pub fn disconnected(&mut self, peer: PeerId) {
        self.peers.remove(&peer);
        for f in self.in_flight.values_mut().filter(|f| f.peer == peer) {
            f.deadline_ms = 0;
        }
    }

    fn ban(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        let until_ms = now_ms.saturating_add(self.config.ban_ms);
        self.banned.insert(peer, until_ms);
        self.peers.remove(&peer);
        self.in_flight.retain(|_, f| f.peer != peer);
        self.outputs.push_back(Output::Ban { peer, reason, until_ms });
    }

    /// A message arrived from `peer`.
    pub fn handle(&mut self, peer: PeerId, message: Message, now_ms: u64) {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return;
        }
        match message {
            Message::Frontier(heads) => {
                if heads.len() > self.config.frontier_authors_max {
                    return self.ban(peer, format!("frontier of {} heads exceeds the limit", heads.len()), now_ms);
                }
                let mut update: BTreeMap<AgentId, Vec<Head>> = BTreeMap::new();
                for h in heads {
                    update.entry(h.author).or_default().push(h);
                }
                if let Some(state) = self.peers.get_mut(&peer) {
                    state.frontier.extend(update);
                }
                self.plan(peer, now_ms);
            }
            Message::Request { req, author, from_seq, limit } => {
                if limit == 0 || limit > self.config.range_limit || from_seq == 0 {
                    return self.ban(peer, format!("request {req}: limit {limit} from seq {from_seq} out of bounds"), now_ms);
                }
                self.outputs.push_back(Output::Serve { peer, req, author, from_seq, limit });
            }
            Message::Response { req, entries, more } => self.on_response(peer, req, entries, more, now_ms),
        }
    }

    /// The driver read the entries for a [`Output::Serve`].
    pub fn respond(&mut self, peer: PeerId, req: u64, entries: Vec<WireEntry>, more: bool) {
        if self.peers.contains_key(&peer) {
            self.outputs.push_back(Output::Send(peer, Message::Response { req, entries, more }));
        }
    }

    /// For each author where `peer` holds what we lack, ask for it, within
    /// the per-peer in-flight limit, unless the range is already asked for.
    fn plan(&mut self, peer: PeerId, now_ms: u64) {
        let Some(state) = self.peers.get(&peer) else { return };
        let mut wants: Vec<(AgentId, u64)> = Vec::new();
        for (author, theirs) in &state.frontier {
            let ours = self.local.get(author).map(Vec::as_slice).unwrap_or(&[]);
            let our_max = max_seq(ours);
            let known: BTreeSet<EntryId> = ours.iter().map(|h| h.id).collect();
            if max_seq(theirs) > our_max {
                wants.push((*author, our_max + 1));
            } else if let Some(tip) = theirs.iter().filter(|h| !known.contains(&h.id) && h.seq <= our_max).min() {
                // A branch we lack (a fork below our head): fetch its range;
                // imports skip what we hold, and once stored its tip is known,
                // so a proven fork is not requested again.
                let from = tip.seq.saturating_sub(u64::from(self.config.range_limit) - 1).max(1);
                wants.push((*author, from));
            }
        }
        for (author, from_seq) in wants {
            let busy = self.in_flight.values().filter(|f| f.peer == peer).count();
            if busy >= self.config.in_flight_per_peer || self.outputs.len() >= self.config.outputs_max {
                break;
            }
            if self.in_flight.values().any(|f| f.author == author && f.from_seq == from_seq) {
                continue;
            }
            self.request(peer, author, from_seq, now_ms);
        }
    }

    fn request(&mut self, peer: PeerId, author: AgentId, from_seq: u64, now_ms: u64) {
        let req = self.next_req;
        self.next_req += 1;
        let limit = self.config.range_limit;
        self.in_flight.insert(req, InFlight { peer, author, from_seq, deadline_ms: now_ms.saturating_add(self.config.request_timeout_ms) });
        self.outputs.push_back(Output::Send(peer, Message::Request { req, author, from_seq, limit }));
    }

    fn on_response(&mut self, peer: PeerId, req: u64, entries: Vec<WireEntry>, more: bool, now_ms: u64) {
        let Some(asked) = self.in_flight.get(&req).cloned() else {
            return; // late or unsolicited: ignore
        };
        if asked.peer != peer {
            return self.ban(peer, format!("response to request {req}, which was sent to another peer"), now_ms);
        }
        match self.verify_response(&asked, entries) {
            Ok(verified) => {
                self.in_flight.remove(&req);
                let last = verified.last().map(|(e, _)| e.header().seq);
                if !verified.is_empty() {
                    self.outputs.push_back(Output::Import { from: peer, entries: verified });
                }
                if let (true, Some(last)) = (more, last) {
                    // Resume where this response stopped.
                    self.request(peer, asked.author, last + 1, now_ms);
                }
            }
            Err(reason) => self.ban(peer, format!("response to request {req}: {reason}"), now_ms),
        }
    }

    /// Decode and verify a response before anything of it is stored.
    fn verify_response(&self, asked: &InFlight, entries: Vec<WireEntry>) -> Result<Vec<VerifiedEntry>, String> {
        let limit = u64::from(self.config.range_limit);
        if entries.len() as u64 > limit.saturating_mul(4) {
            return Err(format!("{} entries for a range of {limit} seqs", entries.len()));
        }
        let mut out: Vec<VerifiedEntry> = Vec::with_capacity(entries.len());
        for (i, w) in entries.into_iter().enumerate() {
            let e = SignedEntry::decode(&w.entry).map_err(|err| format!("entry {i}: {err}"))?;
            let h = e.header();
            if h.author != asked.author {
                return Err(format!("entry {i} is by {}, not the requested author", h.author));
            }
            if h.seq < asked.from_seq || h.seq >= asked.from_seq.saturating_add(limit) {
                return Err(format!("entry {i} has seq {} outside the requested range", h.seq));
            }
            if let Some((prev, _)) = out.last()
                && (prev.header().seq, prev.id()) >= (h.seq, e.id())
            {
                return Err(format!("entry {i} is out of (seq, id) order"));
            }
            if let Some(p) = &w.payload {
                verify_payload(&e, p).map_err(|err| err.to_string())?;
            }
            out.push((e, w.payload));
        }
        let refs: Vec<&SignedEntry> = out.iter().map(|(e, _)| e).collect();
        verify_signatures(&refs).map_err(|err| err.to_string())?;
        // Links inside the batch: every entry after the first seq links to one
        // entry of the previous seq in the batch.
        let ids: BTreeSet<EntryId> = out.iter().map(|(e, _)| e.id()).collect();
        let first_seq = out.first().map(|(e, _)| e.header().seq);
        for (e, _) in &out {
            let h = e.header();
            if Some(h.seq) != first_seq && !h.backlink.is_some_and(|b| ids.contains(&b)) {
                return Err(format!("{} does not link to an entry of the previous seq in the response", e.entry_ref()));
            }
        }
        Ok(out)
    }

    /// The store refused an [`Output::Import`] from `from` because the entry at
    /// `missing_seq` links to something it does not hold: the sender's branch
    /// diverges from ours further back. Ask for the range before it; entries
    /// already held are skipped by the store. A peer whose chain cannot be
    /// linked even from seq 1 sent entries that cannot be valid: banned.
    pub fn import_failed(&mut self, from: PeerId, author: AgentId, missing_seq: u64, now_ms: u64) {
        if !self.peers.contains_key(&from) {
            return;
        }
        if missing_seq <= 1 {
            return self.ban(from, format!("entries of {author} do not link to any chain start"), now_ms);
        }
        let back = u64::from(self.config.range_limit);
        let from_seq = missing_seq.saturating_sub(back).max(1);
        if !self.in_flight.values().any(|f| f.author == author && f.from_seq == from_seq) {
            self.request(from, author, from_seq, now_ms);
        }
    }

    /// Time passed: requests past their deadline are asked again, of any
    /// connected peer that holds the range.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        let expired: Vec<(u64, InFlight)> =
            self.in_flight.iter().filter(|(_, f)| f.deadline_ms <= now_ms).map(|(r, f)| (*r, f.clone())).collect();
        for (req, _) in &expired {
            self.in_flight.remove(req);
        }
        self.banned.retain(|_, until| *until > now_ms);
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for p in peers {
            self.plan(p, now_ms);
        }
    }

    /// When the driver should call [`Replicator::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.in_flight.values().map(|f| f.deadline_ms).min()
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// Requests in flight (for status displays).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}
