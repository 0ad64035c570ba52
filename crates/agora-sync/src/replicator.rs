//! The replication state machine.

use crate::limiter::TokenBucket;
use agora_core::verify::{check_signatures, verify_payload, SignatureChecked};
use agora_core::{AgentId, EntryId, ForkProof, SignedEntry};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A verified entry (its signature checked; the proof is in the type) with
/// its payload, when the sender held it (checked against the header's hash).
pub type VerifiedEntry = (SignatureChecked, Option<Vec<u8>>);

/// A peer, as the driver names it (a libp2p peer id, or a simulator index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u64);

/// Limits and timings. Every queue and message is bounded by one of these.
#[derive(Clone, Debug)]
pub struct Config {
    /// Most entries asked for (and served) in one response.
    pub range_limit: u32,
    /// Most bytes (entries and payloads) served in one response; a response
    /// is cut at a seq boundary to fit and marked `more`.
    pub response_bytes_max: usize,
    /// Most requests in flight to one peer.
    pub in_flight_per_peer: usize,
    /// Most requests in flight in all (bounds the memory that responses can
    /// occupy: `in_flight_max * response_bytes_max`).
    pub in_flight_max: usize,
    /// A request unanswered for this long is sent again (to any peer that has the range).
    pub request_timeout_ms: u64,
    /// How long a peer that sent invalid data is ignored.
    pub ban_ms: u64,
    /// Most heads in one frontier message. Longer frontiers are sent as
    /// several messages; a peer that sends a longer one is banned.
    pub frontier_heads_max: usize,
    /// Most outputs queued before the driver drains them; beyond it, new
    /// requests wait (never dropped silently: they are re-planned on timeout)
    /// and requests from peers are refused (the peer asks again on its timeout).
    pub outputs_max: usize,
    /// Unsolicited messages (frontiers, requests, gossip) a peer may send per
    /// second, sustained. Excess messages are dropped and counted.
    pub peer_messages_per_s: u32,
    /// Burst allowance on top of the sustained rate.
    pub peer_messages_burst: u32,
    /// A peer that sends this many messages beyond its budget within one
    /// second is banned as a flooder.
    pub peer_flood_ban_after: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            range_limit: 1000,
            response_bytes_max: 2 << 20,
            in_flight_per_peer: 4,
            in_flight_max: 16,
            request_timeout_ms: 10_000,
            ban_ms: 600_000,
            frontier_heads_max: 50_000,
            outputs_max: 10_000,
            peer_messages_per_s: 500,
            peer_messages_burst: 2_000,
            peer_flood_ban_after: 10_000,
        }
    }
}

/// One tip of an author's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Head {
    /// The author.
    pub author: AgentId,
    /// The tip's seq.
    pub seq: u64,
    /// The tip's id.
    pub id: EntryId,
}

/// A signed entry with its payload, as bytes on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireEntry {
    /// Signed entry bytes (see protocol-spec/entry-format.md).
    #[serde(with = "serde_bytes")]
    pub entry: Vec<u8>,
    /// The payload, if the sender holds it.
    #[serde(with = "serde_bytes")]
    pub payload: Option<Vec<u8>>,
}

impl WireEntry {
    /// Bytes this entry occupies in a response (entry, payload, framing).
    pub fn wire_len(&self) -> usize {
        self.entry.len() + self.payload.as_ref().map_or(0, Vec::len) + 8
    }
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

/// What gossip carries (one message per new entry, or a fork proof).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Gossip {
    /// A new entry with its payload inline.
    Entry(WireEntry),
    /// A new entry (signed entry bytes) whose payload is too large to carry
    /// inline: verified like any entry, then fetched by range sync.
    Announce(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A standalone fork proof (encoded, see protocol-spec/fork-proofs.md).
    ForkProof(#[serde(with = "serde_bytes")] Vec<u8>),
}

/// What the gossip layer should do with a message ([`Replicator::gossip`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GossipVerdict {
    /// Valid: deliver and forward it.
    Accept,
    /// Not invalid, but not for us (an author outside the roster, a peer over
    /// its rate): do not forward, do not penalise the sender.
    Ignore,
    /// Invalid (bad signature, malformed, forged proof): do not forward, and
    /// penalise the peer that sent it. The peer is banned as well.
    Reject(String),
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
        /// They arrived by gossip, relayed by `from`, which could check
        /// signatures but not links: if the store finds a chain rule broken,
        /// the author is at fault, not the relay, so `from` is not banned.
        relayed: bool,
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
    /// A request from `peer` will not be served (over its rate, or this node
    /// is overloaded): tell it so at once, so it asks again later.
    Decline {
        /// Who asked.
        peer: PeerId,
        /// Their request id.
        req: u64,
    },
    /// Data by an author outside the workspace roster arrived and was refused.
    Refused {
        /// Who sent it.
        peer: PeerId,
        /// The author.
        author: AgentId,
        /// What it was.
        what: &'static str,
    },
}

/// Counters of what was refused, for status displays. Monotonic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Peers banned for bad data or flooding.
    pub bans: u64,
    /// Entries and heads refused because their author is not admitted.
    pub refused_not_admitted: u64,
    /// Unsolicited messages dropped because the peer was over its rate.
    pub rate_limited: u64,
    /// Gossip messages rejected as invalid.
    pub gossip_rejected: u64,
    /// Requests from peers refused because the output queue was full.
    pub requests_shed: u64,
    /// Entries verified in responses and gossip.
    pub entries_verified: u64,
}

#[derive(Clone, Debug)]
struct InFlight {
    peer: PeerId,
    author: AgentId,
    from_seq: u64,
    /// Most seqs asked for.
    limit: u32,
    purpose: Purpose,
    deadline_ms: u64,
}

/// Why a range was asked for, which decides how its response is imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    /// Entries beyond what we hold. Several such ranges of one author are in
    /// flight at once; their responses are imported in seq order.
    Forward,
    /// The seq of a peer's head that is not one of our tips (a possible
    /// branch): asked once (see `Replicator::sought`), imported at once.
    Branch(EntryId),
    /// Entries below a batch that did not link (a branch that diverges
    /// further back), or the rest of such a branch once its base is stored:
    /// imported at once.
    Backfill,
}

impl Purpose {
    /// The purpose of the rest of a range whose response was cut short.
    fn rest(self) -> Self {
        match self {
            Purpose::Forward => Purpose::Forward,
            Purpose::Branch(_) | Purpose::Backfill => Purpose::Backfill,
        }
    }
}

/// Most branch heads remembered as already fetched.
const SOUGHT_MAX: usize = 100_000;

/// Most entry ids remembered per peer as held by it (entries it sent us):
/// our new heads among them are not announced back to it.
const PEER_HOLDS_MAX: usize = 64;

/// A verified response waiting for the responses to earlier ranges of the
/// same author (requests are pipelined; the store takes a chain in order).
#[derive(Debug)]
struct Held {
    peer: PeerId,
    limit: u32,
    entries: Vec<VerifiedEntry>,
    /// Dropped (and asked for again when planned) if the ranges before it
    /// have not been handed to the store by then.
    deadline_ms: u64,
}

/// Most ranges remembered to be asked for again once the entries below them
/// are stored (see `Replicator::resume`).
const RESUME_MAX: usize = 256;

#[derive(Debug)]
struct PeerState {
    /// The peer's tips, by author.
    frontier: BTreeMap<AgentId, Vec<Head>>,
    /// Budget for unsolicited messages.
    bucket: TokenBucket,
    /// Messages dropped for being over budget in the current one-second window.
    dropped_in_window: u32,
    /// Start of that window.
    window_start_ms: u64,
    /// Ids of the last entries this peer sent us (the last of each response,
    /// each gossiped entry), most recent last: it holds them, so our heads
    /// among them are not announced back to it.
    holds: VecDeque<EntryId>,
}

impl PeerState {
    fn note_holds(&mut self, id: EntryId) {
        if self.holds.len() >= PEER_HOLDS_MAX {
            self.holds.pop_front();
        }
        self.holds.push_back(id);
    }
}

/// The replication state of one node.
#[derive(Debug)]
pub struct Replicator {
    config: Config,
    /// What the local store holds: tips by author.
    local: BTreeMap<AgentId, Vec<Head>>,
    /// Authors whose entries are replicated; `None`: everyone.
    admitted: Option<BTreeSet<AgentId>>,
    peers: BTreeMap<PeerId, PeerState>,
    banned: BTreeMap<PeerId, u64>,
    in_flight: BTreeMap<u64, InFlight>,
    /// Verified responses held back until the earlier ranges of their author
    /// arrive, by (author, first seq asked). Counted against the in-flight
    /// limits, so they bound memory the same way.
    held: BTreeMap<(AgentId, u64), Held>,
    /// Per author, the highest seq handed to the store in an
    /// [`Output::Import`] of a response and not yet reported back through
    /// [`Replicator::set_local_heads`]: not asked for again meanwhile.
    importing: BTreeMap<AgentId, u64>,
    /// Ranges whose import failed to link, to be asked for again (from the
    /// same peer) once the backfill below them is stored: (peer, author,
    /// first seq). A stack per author, lowest seq first out.
    resume: VecDeque<(PeerId, AgentId, u64)>,
    /// [`Output::Import`]s handed out and not yet reported done
    /// ([`Replicator::import_done`]). They count against
    /// [`Config::in_flight_max`]: a store slower than the network slows the
    /// requests instead of queueing verified entries without bound.
    pending_imports: usize,
    /// Branch heads (below our highest seq) already fetched once: not
    /// fetched again however often peers announce them.
    sought: BTreeSet<EntryId>,
    next_req: u64,
    outputs: VecDeque<Output>,
    stats: Stats,
}

fn max_seq(heads: &[Head]) -> u64 {
    heads.iter().map(|h| h.seq).max().unwrap_or(0)
}

fn group(heads: Vec<Head>) -> BTreeMap<AgentId, Vec<Head>> {
    let mut out: BTreeMap<AgentId, Vec<Head>> = BTreeMap::new();
    for h in heads {
        out.entry(h.author).or_default().push(h);
    }
    for tips in out.values_mut() {
        tips.sort();
        tips.dedup();
    }
    out
}

impl Replicator {
    /// A replicator with nothing known.
    pub fn new(config: Config) -> Self {
        assert!(config.range_limit > 0 && config.in_flight_per_peer > 0 && config.in_flight_max > 0, "config limits must be positive");
        Self {
            config,
            local: BTreeMap::new(),
            admitted: None,
            peers: BTreeMap::new(),
            banned: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            held: BTreeMap::new(),
            importing: BTreeMap::new(),
            resume: VecDeque::new(),
            pending_imports: 0,
            sought: BTreeSet::new(),
            next_req: 1,
            outputs: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Replicate only these authors (the workspace roster); `None` replicates
    /// everyone. Entries and heads of anyone else are refused and reported.
    /// Newly admitted authors are requested from peers that hold them.
    pub fn set_admitted(&mut self, admitted: Option<BTreeSet<AgentId>>, now_ms: u64) {
        self.admitted = admitted;
        self.plan_all(now_ms);
    }

    fn is_admitted(&self, author: &AgentId) -> bool {
        self.admitted.as_ref().is_none_or(|a| a.contains(author))
    }

    /// Replace everything known about the local store's tips (at start-up).
    /// Announces changed authors and plans requests.
    pub fn set_local_frontier(&mut self, heads: Vec<Head>, now_ms: u64) {
        let next = group(heads);
        let changed: Vec<Head> =
            next.iter().filter(|(a, tips)| self.local.get(*a) != Some(*tips)).flat_map(|(_, tips)| tips.iter().copied()).collect();
        self.local = next;
        self.announce(changed);
        self.plan_all(now_ms);
    }

    /// One author's tips in the local store changed (after an import or a
    /// local append): announce them to every peer and plan further requests
    /// for that author only.
    pub fn set_local_heads(&mut self, author: AgentId, mut tips: Vec<Head>, now_ms: u64) {
        debug_assert!(tips.iter().all(|h| h.author == author), "tips of another author");
        tips.sort();
        tips.dedup();
        let our_max = max_seq(&tips);
        if self.importing.get(&author).is_some_and(|&s| s <= our_max) {
            self.importing.remove(&author);
        }
        if self.local.get(&author) == Some(&tips) {
            return;
        }
        self.announce(tips.clone());
        if tips.is_empty() {
            self.local.remove(&author);
        } else {
            self.local.insert(author, tips);
        }
        self.release_held(author, now_ms);
        self.resume(author, now_ms);
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for p in peers {
            self.plan_author(p, author, now_ms);
        }
    }

    /// Announce changed tips to every peer, except tips a peer is known to
    /// hold (it sent them to us): that would only make it ask for them.
    fn announce(&mut self, changed: Vec<Head>) {
        if changed.is_empty() {
            return;
        }
        let sends: Vec<(PeerId, Vec<Head>)> = self
            .peers
            .iter()
            .map(|(p, s)| (*p, changed.iter().filter(|h| !s.holds.contains(&h.id)).copied().collect::<Vec<Head>>()))
            .filter(|(_, heads)| !heads.is_empty())
            .collect();
        for (p, heads) in sends {
            self.send_frontier(p, heads);
        }
    }

    /// A frontier, in messages of at most [`Config::frontier_heads_max`] heads.
    fn send_frontier(&mut self, peer: PeerId, heads: Vec<Head>) {
        if heads.is_empty() {
            return self.outputs.push_back(Output::Send(peer, Message::Frontier(heads)));
        }
        for chunk in heads.chunks(self.config.frontier_heads_max.max(1)) {
            self.outputs.push_back(Output::Send(peer, Message::Frontier(chunk.to_vec())));
        }
    }

    /// Every local tip.
    pub fn local_heads(&self) -> Vec<Head> {
        self.local.values().flatten().copied().collect()
    }

    fn is_banned(&self, peer: PeerId, now_ms: u64) -> bool {
        self.banned.get(&peer).is_some_and(|until| *until > now_ms)
    }

    /// Is this peer banned at `now_ms` (the driver refuses its connections)?
    pub fn banned_until(&self, peer: PeerId, now_ms: u64) -> Option<u64> {
        self.banned.get(&peer).copied().filter(|until| *until > now_ms)
    }

    /// A peer connected: send it our frontier.
    pub fn connected(&mut self, peer: PeerId, now_ms: u64) {
        if self.is_banned(peer, now_ms) {
            return;
        }
        let bucket = TokenBucket::new(self.config.peer_messages_per_s, self.config.peer_messages_burst, now_ms);
        self.peers.insert(
            peer,
            PeerState { frontier: BTreeMap::new(), bucket, dropped_in_window: 0, window_start_ms: now_ms, holds: VecDeque::new() },
        );
        let frontier = self.local_heads();
        self.send_frontier(peer, frontier);
    }

    /// A peer went away: its in-flight requests are re-planned on timeout.
    pub fn disconnected(&mut self, peer: PeerId) {
        self.peers.remove(&peer);
        for f in self.in_flight.values_mut().filter(|f| f.peer == peer) {
            f.deadline_ms = 0;
        }
    }

    /// Peers currently connected (and not banned).
    pub fn peers(&self) -> Vec<PeerId> {
        self.peers.keys().copied().collect()
    }

    /// The frontier a peer announced, for status displays (sync lag).
    pub fn peer_frontier(&self, peer: PeerId) -> Vec<Head> {
        self.peers.get(&peer).map(|s| s.frontier.values().flatten().copied().collect()).unwrap_or_default()
    }

    fn ban(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        let until_ms = now_ms.saturating_add(self.config.ban_ms);
        self.banned.insert(peer, until_ms);
        self.peers.remove(&peer);
        self.stats.bans += 1;
        self.outputs.push_back(Output::Ban { peer, reason, until_ms });
        // Requests to the banned peer are asked again of others at once.
        self.in_flight.retain(|_, f| f.peer != peer);
        self.plan_all(now_ms);
    }

    /// The driver found `peer`'s input invalid where the replicator could not
    /// see it (undecodable wire bytes, entries that break a chain rule against
    /// what the store holds): ban it like any other bad input.
    pub fn report_invalid(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        if self.peers.contains_key(&peer) && !self.is_banned(peer, now_ms) {
            self.ban(peer, reason, now_ms);
        }
    }

    /// Charge one unsolicited message to `peer`'s budget. `false`: drop it.
    fn admit_message(&mut self, peer: PeerId, now_ms: u64) -> bool {
        let Some(state) = self.peers.get_mut(&peer) else { return false };
        if state.bucket.take(now_ms) {
            return true;
        }
        if now_ms.saturating_sub(state.window_start_ms) >= 1_000 {
            state.window_start_ms = now_ms;
            state.dropped_in_window = 0;
        }
        state.dropped_in_window = state.dropped_in_window.saturating_add(1);
        self.stats.rate_limited += 1;
        if state.dropped_in_window > self.config.peer_flood_ban_after {
            let n = state.dropped_in_window;
            self.ban(peer, format!("flooding: {n} messages beyond its rate limit within one second"), now_ms);
        }
        false
    }

    /// A message arrived from `peer`.
    pub fn handle(&mut self, peer: PeerId, message: Message, now_ms: u64) {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return;
        }
        match message {
            Message::Frontier(heads) => {
                if !self.admit_message(peer, now_ms) {
                    return;
                }
                if heads.len() > self.config.frontier_heads_max {
                    return self.ban(peer, format!("frontier of {} heads exceeds the limit", heads.len()), now_ms);
                }
                let update = group(heads);
                // Heads of authors outside the roster are remembered (they
                // are requested if the author is admitted later) but never
                // planned while it is not.
                self.stats.refused_not_admitted += update.keys().filter(|a| !self.is_admitted(a)).count() as u64;
                let authors: Vec<AgentId> = update.keys().copied().collect();
                if let Some(state) = self.peers.get_mut(&peer) {
                    state.frontier.extend(update);
                }
                for author in authors {
                    self.plan_author(peer, author, now_ms);
                }
            }
            Message::Request { req, author, from_seq, limit } => {
                if !self.admit_message(peer, now_ms) {
                    if self.peers.contains_key(&peer) {
                        self.outputs.push_back(Output::Decline { peer, req });
                    }
                    return;
                }
                if limit == 0 || limit > self.config.range_limit || from_seq == 0 {
                    return self.ban(peer, format!("request {req}: limit {limit} from seq {from_seq} out of bounds"), now_ms);
                }
                if self.outputs.len() >= self.config.outputs_max {
                    // Overloaded: the peer asks again later.
                    self.stats.requests_shed += 1;
                    self.outputs.push_back(Output::Decline { peer, req });
                    return;
                }
                // Served whatever the roster says here: our roster may lag the
                // peer's (it is itself replicated), and the peer filters what
                // it receives by its own.
                self.outputs.push_back(Output::Serve { peer, req, author, from_seq, limit });
            }
            Message::Response { req, entries, more } => {
                if !self.in_flight.contains_key(&req) {
                    return; // late or unsolicited: not worth checking
                }
                let checked = check_entries(entries);
                self.on_response(peer, req, checked, more, now_ms)
            }
        }
    }

    /// A response whose entries the driver already passed through
    /// [`check_entries`] (on a worker thread: signature checks are the
    /// CPU-heavy part of replication). Same as [`Replicator::handle`] with
    /// [`Message::Response`] otherwise.
    pub fn handle_checked_response(
        &mut self,
        peer: PeerId,
        req: u64,
        checked: Result<Vec<VerifiedEntry>, String>,
        more: bool,
        now_ms: u64,
    ) {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return;
        }
        self.on_response(peer, req, checked, more, now_ms)
    }

    /// The driver read the entries for a [`Output::Serve`], in (seq, id)
    /// order, each with its seq (as the store keys it: the entries are sent
    /// as stored, not decoded here; the receiver verifies them). The response is cut to [`Config::response_bytes_max`] at a seq
    /// boundary and then marked `more`, so a resumed request (from the last
    /// seq sent + 1) never skips an entry. If the first seq alone is over the
    /// budget (many forked entries with large payloads), all its entries are
    /// sent, with payloads only as far as the budget allows: the rest arrive
    /// as "payload not held", rather than never.
    pub fn respond(&mut self, peer: PeerId, req: u64, served: Vec<(u64, WireEntry)>, mut more: bool) {
        if !self.peers.contains_key(&peer) {
            return;
        }
        let budget = self.config.response_bytes_max;
        let (seqs, mut entries): (Vec<u64>, Vec<WireEntry>) = served.into_iter().unzip();
        let mut bytes = 0usize;
        for i in 0..entries.len() {
            bytes += entries[i].wire_len();
            if bytes <= budget || i == 0 {
                continue;
            }
            let first_of_seq = (0..=i).rev().take_while(|&j| seqs[j] == seqs[i]).last().unwrap_or(i);
            let end = if first_of_seq > 0 {
                first_of_seq
            } else {
                // The first seq alone is over budget: keep it whole, drop
                // payloads past the budget (never the first entry's).
                let end = (0..entries.len()).take_while(|&j| seqs[j] == seqs[0]).count();
                let mut used = 0usize;
                for (j, w) in entries.iter_mut().enumerate().take(end) {
                    used += w.wire_len();
                    if used > budget && j > 0 {
                        used -= w.payload.take().map_or(0, |p| p.len());
                    }
                }
                end
            };
            more = more || end < entries.len();
            entries.truncate(end);
            break;
        }
        self.outputs.push_back(Output::Send(peer, Message::Response { req, entries, more }));
    }

    fn plan_all(&mut self, now_ms: u64) {
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for p in peers {
            self.plan(p, now_ms);
        }
    }

    /// The first seq of `author` after `our_max` that is neither asked for
    /// (a forward range in flight), held back, nor being imported.
    fn next_unasked(&self, author: &AgentId, our_max: u64) -> u64 {
        let mut cursor = our_max.max(self.importing.get(author).copied().unwrap_or(0)).saturating_add(1);
        let mut ranges: Vec<(u64, u64)> = self
            .in_flight
            .values()
            .filter(|f| f.author == *author && f.purpose == Purpose::Forward)
            .map(|f| (f.from_seq, f.from_seq.saturating_add(u64::from(f.limit))))
            .chain(self.held.range((*author, 0)..=(*author, u64::MAX)).map(|((_, from), h)| (*from, from.saturating_add(u64::from(h.limit)))))
            .collect();
        ranges.sort_unstable();
        for (from, end) in ranges {
            if from > cursor {
                break;
            }
            cursor = cursor.max(end);
        }
        cursor
    }

    /// What we want of `author` from a peer whose tips are `theirs`: the
    /// range to request next (first seq, most seqs, and for a branch the head
    /// it is for), if any.
    fn want(&self, author: &AgentId, theirs: &[Head]) -> Option<(u64, u32, Purpose)> {
        if !self.is_admitted(author) {
            return None;
        }
        let ours = self.local.get(author).map(Vec::as_slice).unwrap_or(&[]);
        let our_max = max_seq(ours);
        let next = self.next_unasked(author, our_max);
        if max_seq(theirs) >= next {
            return Some((next, self.config.range_limit, Purpose::Forward));
        }
        // A head below our highest seq that is not one of our tips: another
        // branch (a fork), or an entry we hold that has successors. Ask for
        // its seq alone, once (`sought`): the store skips what it holds, and
        // an entry of a branch we lack fails to link, which asks for the
        // range before it ([`Replicator::import_failed`]).
        let tip = theirs
            .iter()
            .filter(|h| h.seq <= our_max && !ours.iter().any(|o| o.id == h.id) && !self.sought.contains(&h.id))
            .min()?;
        Some((tip.seq, 1, Purpose::Branch(tip.id)))
    }

    /// For each author where `peer` holds what we lack, ask for it, within
    /// the in-flight limits: several ranges of one author at a time
    /// (pipelined), each range asked of one peer only.
    fn plan(&mut self, peer: PeerId, now_ms: u64) {
        let Some(state) = self.peers.get(&peer) else { return };
        let authors: Vec<AgentId> = state.frontier.keys().copied().collect();
        for author in authors {
            if !self.may_request(peer) {
                break;
            }
            self.plan_author(peer, author, now_ms);
        }
    }

    fn plan_author(&mut self, peer: PeerId, author: AgentId, now_ms: u64) {
        loop {
            let Some(theirs) = self.peers.get(&peer).and_then(|s| s.frontier.get(&author)) else { return };
            let Some((from_seq, limit, purpose)) = self.want(&author, theirs) else { return };
            if purpose != Purpose::Forward && self.in_flight.values().any(|f| f.author == author && f.from_seq == from_seq) {
                return;
            }
            // A gap below a held response is asked for even when the limits
            // are reached: the held responses wait for it, and they occupy
            // the slots (there are never more gaps than held responses).
            let fills_gap = purpose == Purpose::Forward
                && self.in_flight.len() < self.config.in_flight_max
                && self.held.range((author, from_seq)..=(author, u64::MAX)).next().is_some();
            if !fills_gap && !self.may_request(peer) {
                return;
            }
            self.request(peer, author, from_seq, limit, purpose, now_ms);
        }
    }

    fn may_request(&self, peer: PeerId) -> bool {
        let busy = self.in_flight.values().filter(|f| f.peer == peer).count() + self.held.values().filter(|h| h.peer == peer).count();
        busy < self.config.in_flight_per_peer
            && self.in_flight.len() + self.held.len() + self.pending_imports < self.config.in_flight_max
            && self.outputs.len() < self.config.outputs_max
    }

    fn request(&mut self, peer: PeerId, author: AgentId, from_seq: u64, limit: u32, purpose: Purpose, now_ms: u64) {
        let req = self.next_req;
        self.next_req += 1;
        if let Purpose::Branch(tip) = purpose {
            if self.sought.len() >= SOUGHT_MAX {
                // Forget the oldest marks; at worst a branch is fetched twice.
                self.sought.clear();
            }
            self.sought.insert(tip);
        }
        let deadline_ms = now_ms.saturating_add(self.config.request_timeout_ms);
        self.in_flight.insert(req, InFlight { peer, author, from_seq, limit, purpose, deadline_ms });
        self.outputs.push_back(Output::Send(peer, Message::Request { req, author, from_seq, limit }));
    }

    fn on_response(&mut self, peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, String>, more: bool, now_ms: u64) {
        let Some(asked) = self.in_flight.get(&req).cloned() else {
            return; // late or unsolicited: ignore
        };
        if asked.peer != peer {
            return self.ban(peer, format!("response to request {req}, which was sent to another peer"), now_ms);
        }
        let verified = match checked.and_then(|entries| self.check_response(&asked, entries)) {
            Ok(verified) => verified,
            Err(reason) => return self.ban(peer, format!("response to request {req}: {reason}"), now_ms),
        };
        self.in_flight.remove(&req);
        self.stats.entries_verified += verified.len() as u64;
        let author = asked.author;
        let Some(last) = verified.last().map(|(e, _)| e.header().seq) else {
            // Nothing from where it claimed to have more: forget the claim
            // rather than ask again and again. A branch it did not deliver
            // was not fetched: a new announcement of it (charged to the
            // announcer's rate) may ask again.
            if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                tips.retain(|h| h.seq < asked.from_seq);
            }
            if let Purpose::Branch(tip) = asked.purpose {
                self.sought.remove(&tip);
            }
            return self.plan(peer, now_ms);
        };
        if let Some((e, _)) = verified.last()
            && let Some(state) = self.peers.get_mut(&peer)
        {
            state.note_holds(e.id());
        }
        let end = asked.from_seq.saturating_add(u64::from(asked.limit));
        if more && last.saturating_add(1) < end {
            // Cut short to fit the byte budget: ask for the rest of the range
            // (before this response is released, so it is imported after it).
            let rest = u32::try_from(end - last - 1).unwrap_or(u32::MAX);
            self.request(peer, author, last + 1, rest, asked.purpose.rest(), now_ms);
        }
        if self.is_admitted(&author) {
            if asked.purpose == Purpose::Forward {
                let deadline_ms = now_ms.saturating_add(self.config.request_timeout_ms.saturating_mul(2));
                self.held.insert((author, asked.from_seq), Held { peer, limit: asked.limit, entries: verified, deadline_ms });
                self.release_held(author, now_ms);
            } else {
                self.import(peer, verified, false);
            }
        }
        // A slot came free: this author first, then any other.
        self.plan_author(peer, author, now_ms);
        self.plan(peer, now_ms);
    }

    fn import(&mut self, from: PeerId, entries: Vec<VerifiedEntry>, relayed: bool) {
        self.pending_imports += 1;
        self.outputs.push_back(Output::Import { from, entries, relayed });
    }

    /// The driver's store finished one [`Output::Import`] (stored it, or
    /// refused it and said so through [`Replicator::import_failed`] or
    /// [`Replicator::report_invalid`]; or the driver dropped it and said so
    /// through [`Replicator::import_lost`]). Every import must be reported
    /// done exactly once: until then it holds a request slot.
    pub fn import_done(&mut self, now_ms: u64) {
        debug_assert!(self.pending_imports > 0, "import_done without an import");
        self.pending_imports = self.pending_imports.saturating_sub(1);
        self.plan_all(now_ms);
    }

    /// Imports handed out and not yet reported done (for status displays).
    pub fn pending_imports(&self) -> usize {
        self.pending_imports
    }

    /// Hand the held responses of `author` that now continue what the store
    /// holds (or is importing) to the store, in seq order.
    fn release_held(&mut self, author: AgentId, _now_ms: u64) {
        loop {
            let Some((&key, _)) = self.held.range((author, 0)..=(author, u64::MAX)).next() else { return };
            let our_max = self.local.get(&author).map_or(0, |t| max_seq(t));
            let stored_or_importing = our_max.max(self.importing.get(&author).copied().unwrap_or(0));
            if key.1 > stored_or_importing.saturating_add(1) {
                return;
            }
            let Some(held) = self.held.remove(&key) else { return };
            if let Some((e, _)) = held.entries.last() {
                let importing = self.importing.entry(author).or_insert(0);
                *importing = (*importing).max(e.header().seq);
            }
            self.import(held.peer, held.entries, false);
        }
    }

    /// Ask again for the lowest range of `author` whose import failed to
    /// link, now that more of the author's entries are stored.
    fn resume(&mut self, author: AgentId, now_ms: u64) {
        let Some(i) = self.resume.iter().enumerate().filter(|(_, r)| r.1 == author).min_by_key(|(_, r)| r.2).map(|(i, _)| i) else {
            return;
        };
        let Some((peer, author, from_seq)) = self.resume.remove(i) else { return };
        if self.peers.contains_key(&peer) && !self.in_flight.values().any(|f| f.author == author && f.from_seq == from_seq) {
            self.request(peer, author, from_seq, self.config.range_limit, Purpose::Backfill, now_ms);
        }
    }

    /// The checks of a response that depend on what was asked: the author,
    /// the range, (seq, id) order, and links inside the response.
    fn check_response(&self, asked: &InFlight, out: Vec<VerifiedEntry>) -> Result<Vec<VerifiedEntry>, String> {
        let limit = u64::from(asked.limit);
        if out.len() as u64 > limit.saturating_mul(4) {
            return Err(format!("{} entries for a range of {limit} seqs", out.len()));
        }
        for (i, (e, _)) in out.iter().enumerate() {
            let h = e.header();
            if h.author != asked.author {
                return Err(format!("entry {i} is by {}, not the requested author", h.author));
            }
            if h.seq < asked.from_seq || h.seq >= asked.from_seq.saturating_add(limit) {
                return Err(format!("entry {i} has seq {} outside the requested range", h.seq));
            }
            if i > 0 && (out[i - 1].0.header().seq, out[i - 1].0.id()) >= (h.seq, e.id()) {
                return Err(format!("entry {i} is out of (seq, id) order"));
            }
        }
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

    /// A gossip message arrived, relayed by `peer` (the propagation source).
    /// A valid entry is offered to the store at once (the store checks its
    /// link; if its predecessor is missing the driver calls
    /// [`Replicator::import_failed`], which asks `peer` for the range). The
    /// verdict tells the gossip layer whether to forward it.
    pub fn gossip(&mut self, peer: PeerId, message: Gossip, now_ms: u64) -> GossipVerdict {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return GossipVerdict::Ignore;
        }
        if !self.admit_message(peer, now_ms) {
            return GossipVerdict::Ignore;
        }
        let checked = match message {
            Gossip::Entry(w) => self.gossip_entry(peer, w),
            Gossip::Announce(bytes) => self.gossip_announce(peer, &bytes, now_ms),
            Gossip::ForkProof(bytes) => match ForkProof::decode(&bytes) {
                Ok(proof) => {
                    if !self.is_admitted(&proof.author()) {
                        self.refuse(peer, proof.author(), "fork proof");
                        return GossipVerdict::Ignore;
                    }
                    // Fetch both branches; the store proves the fork itself.
                    let (a, b) = proof.entries();
                    let heads: Vec<Head> =
                        [a, b].iter().map(|e| Head { author: e.header().author, seq: e.header().seq, id: e.id() }).collect();
                    self.learn_heads(peer, &heads, now_ms);
                    Ok(GossipVerdict::Accept)
                }
                Err(e) => Err(format!("fork proof rejected: {e}")),
            },
        };
        match checked {
            Ok(v) => v,
            Err(reason) => {
                self.stats.gossip_rejected += 1;
                self.ban(peer, format!("gossip: {reason}"), now_ms);
                GossipVerdict::Reject(reason)
            }
        }
    }

    fn gossip_entry(&mut self, peer: PeerId, w: WireEntry) -> Result<GossipVerdict, String> {
        let e = SignedEntry::decode(&w.entry).map_err(|err| format!("entry: {err}"))?;
        let h = e.header();
        if !self.is_admitted(&h.author) {
            self.refuse(peer, h.author, "gossiped entry");
            return Ok(GossipVerdict::Ignore);
        }
        if let Some(p) = &w.payload {
            verify_payload(&e, p).map_err(|err| err.to_string())?;
        }
        let head = Head { author: h.author, seq: h.seq, id: e.id() };
        let author = h.author;
        let mut checked = check_signatures(vec![e]).map_err(|err| err.to_string())?;
        let Some(e) = checked.pop() else { return Err("no entry".into()) };
        self.stats.entries_verified += 1;
        let known = self.local.get(&author).is_some_and(|tips| tips.iter().any(|t| t.id == head.id));
        if let Some(state) = self.peers.get_mut(&peer) {
            merge_head(&mut state.frontier, head, false);
            state.note_holds(head.id);
        }
        if !known {
            self.import(peer, vec![(e, w.payload)], true);
        }
        Ok(GossipVerdict::Accept)
    }

    fn gossip_announce(&mut self, peer: PeerId, bytes: &[u8], now_ms: u64) -> Result<GossipVerdict, String> {
        let e = SignedEntry::decode(bytes).map_err(|err| format!("announced entry: {err}"))?;
        let head = Head { author: e.header().author, seq: e.header().seq, id: e.id() };
        if !self.is_admitted(&head.author) {
            self.refuse(peer, head.author, "announced entry");
            return Ok(GossipVerdict::Ignore);
        }
        // Signed by its author, so the head is real (not that `peer` holds it).
        check_signatures(vec![e]).map_err(|err| err.to_string())?;
        self.stats.entries_verified += 1;
        self.learn_heads(peer, &[head], now_ms);
        Ok(GossipVerdict::Accept)
    }

    /// `peer` holds these heads: remember them and plan requests.
    fn learn_heads(&mut self, peer: PeerId, heads: &[Head], now_ms: u64) {
        let fork = heads.len() > 1;
        if let Some(state) = self.peers.get_mut(&peer) {
            for h in heads {
                merge_head(&mut state.frontier, *h, fork);
            }
        }
        let authors: BTreeSet<AgentId> = heads.iter().map(|h| h.author).collect();
        for a in authors {
            self.plan_author(peer, a, now_ms);
        }
    }

    fn refuse(&mut self, peer: PeerId, author: AgentId, what: &'static str) {
        self.stats.refused_not_admitted += 1;
        if self.outputs.len() < self.config.outputs_max {
            self.outputs.push_back(Output::Refused { peer, author, what });
        }
    }

    /// The store refused an [`Output::Import`] from `from` because the entry at
    /// `missing_seq` links to something it does not hold: the sender's branch
    /// diverges from ours further back (or, for gossip, we are behind). Ask for
    /// the range before it; entries already held are skipped by the store. A
    /// peer whose chain cannot be linked even from seq 1 sent entries that
    /// cannot be valid: banned.
    pub fn import_failed(&mut self, from: PeerId, author: AgentId, missing_seq: u64, now_ms: u64) {
        if !self.peers.contains_key(&from) {
            return;
        }
        if missing_seq <= 1 {
            return self.ban(from, format!("entries of {author} do not link to any chain start"), now_ms);
        }
        let our_max = self.local.get(&author).map_or(0, |t| max_seq(t));
        let importing = self.importing.get(&author).copied().unwrap_or(0);
        if missing_seq > our_max + 1 {
            if missing_seq <= importing.saturating_add(1) {
                // An import it was meant to follow was lost: ask again for
                // everything above what is stored.
                self.importing.remove(&author);
            }
            // Otherwise gossip ran ahead of us: what lies between is asked
            // for as planned.
            return self.plan_author(from, author, now_ms);
        }
        // The sender's branch diverges from ours further back: ask for the
        // range before it, and for this one again once that is stored.
        self.importing.remove(&author);
        if !self.resume.iter().any(|r| r.1 == author && r.2 == missing_seq) {
            if self.resume.len() >= RESUME_MAX {
                self.resume.pop_front();
            }
            self.resume.push_back((from, author, missing_seq));
        }
        let from_seq = missing_seq.saturating_sub(u64::from(self.config.range_limit)).max(1);
        let limit = u32::try_from(missing_seq - from_seq).unwrap_or(self.config.range_limit);
        if !self.in_flight.values().any(|f| f.author == author && f.from_seq == from_seq) {
            self.request(from, author, from_seq, limit, Purpose::Backfill, now_ms);
        }
    }

    /// The driver could not hand an [`Output::Import`] of `author` starting
    /// at `first_seq` to the store (its queue was full, or the write failed):
    /// those entries, and anything imported after them, are asked for again.
    pub fn import_lost(&mut self, author: AgentId, first_seq: u64, now_ms: u64) {
        if self.importing.get(&author).is_some_and(|&s| first_seq <= s) {
            self.importing.remove(&author);
        }
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for p in peers {
            self.plan_author(p, author, now_ms);
        }
    }

    /// Time passed: requests past their deadline are asked again, of any
    /// connected peer that holds the range; expired bans are lifted.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        let expired: Vec<Purpose> = self.in_flight.values().filter(|f| f.deadline_ms <= now_ms).map(|f| f.purpose).collect();
        for purpose in expired {
            if let Purpose::Branch(tip) = purpose {
                // Unanswered: the branch may be fetched again.
                self.sought.remove(&tip);
            }
        }
        self.in_flight.retain(|_, f| f.deadline_ms > now_ms);
        // Held responses whose earlier ranges never came: dropped, asked for
        // again as planned (their slots are needed for the earlier ranges).
        self.held.retain(|_, h| h.deadline_ms > now_ms);
        self.banned.retain(|_, until| *until > now_ms);
        self.plan_all(now_ms);
    }

    /// When the driver should call [`Replicator::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<u64> {
        let requests = self.in_flight.values().map(|f| f.deadline_ms).min();
        let held = self.held.values().map(|h| h.deadline_ms).min();
        let bans = self.banned.values().copied().min();
        requests.into_iter().chain(held).chain(bans).min()
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// Requests in flight (for status displays).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Verified responses held back until the ranges before them arrive
    /// (for status displays).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Counters of refused input.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

/// Add a head learnt from gossip to a peer's view of an author. A head above
/// everything known replaces a single-branch view (it extends it, as far as
/// we can tell without the backlink); a head at or below it is old news and
/// is ignored unless `fork` says it is a proven branch.
fn merge_head(frontier: &mut BTreeMap<AgentId, Vec<Head>>, head: Head, fork: bool) {
    let tips = frontier.entry(head.author).or_default();
    if tips.iter().any(|t| t.id == head.id) {
        return;
    }
    let max = max_seq(tips);
    if head.seq <= max && !fork {
        return;
    }
    if tips.len() <= 1 && head.seq > max {
        tips.clear();
    }
    tips.push(head);
    tips.sort();
}

/// Decode a response's entries and check each payload against its header and
/// every signature (in batches): the part of verifying a response that costs
/// CPU and needs no state, so a driver may run it on a worker thread and hand
/// the result to [`Replicator::handle_checked_response`]. The error names the
/// first bad entry by its position.
pub fn check_entries(entries: Vec<WireEntry>) -> Result<Vec<VerifiedEntry>, String> {
    let mut decoded: Vec<SignedEntry> = Vec::with_capacity(entries.len());
    let mut payloads: Vec<Option<Vec<u8>>> = Vec::with_capacity(entries.len());
    for (i, w) in entries.into_iter().enumerate() {
        let e = SignedEntry::decode(&w.entry).map_err(|err| format!("entry {i}: {err}"))?;
        if let Some(p) = &w.payload {
            verify_payload(&e, p).map_err(|err| format!("entry {i}: {err}"))?;
        }
        decoded.push(e);
        payloads.push(w.payload);
    }
    Ok(check_signatures(decoded).map_err(|err| err.to_string())?.into_iter().zip(payloads).collect())
}
