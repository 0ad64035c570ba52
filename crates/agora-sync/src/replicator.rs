//! The replication state machine.

use crate::limiter::TokenBucket;
use crate::tips::Tips;
use crate::wire::{Gossip, Head, Message, RangeStart, WireEntry};
use agora_core::verify::{CheckedEntry, VerifyError, check_entries as check_signed_entries};
use agora_core::{AgentId, DecodeError, EntryId, EntryRef, ForkProof, ForkProofError, SignedEntry};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A verified entry: its signature checked and its payload, when the sender
/// had it, checked against the header (the proof is in the type).
pub type VerifiedEntry = CheckedEntry;

/// A peer, as the driver names it (a libp2p peer id, or a simulator index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u64);

/// Most entries one response carries (beyond the byte budget): a seq with
/// many branches is sent over several responses, each resumed after the last
/// entry of the one before.
pub const RESPONSE_ENTRIES_MAX: usize = 4_096;

/// Most peers a range is asked of at once after a request for it timed out:
/// one of them withholding cannot stall it a second time.
pub const RETRY_FANOUT_MAX: usize = 8;

/// Changed tips are announced at most this often: the first change at once,
/// later ones within the interval together, when it ends. A node that
/// imports thousands of entries a second (a relay under a burst) sends its
/// peers a few frontiers a second, not one per entry, and so never exceeds
/// their rate limits with honest traffic.
pub const ANNOUNCE_INTERVAL_MS: u64 = 200;

/// Most disconnected peers whose record is remembered.
const PAST_PEERS_MAX: usize = 4_096;

/// How long a peer that answered `Busy` is left alone.
pub const BUSY_BACKOFF_MS: u64 = 1_000;

/// Most ranges remembered as "timed out once", to be fanned out when asked again.
const RETRIED_MAX: usize = 1_024;

/// A payload reported unavailable is asked for again, `payload_tries_max`
/// more times, this many request timeouts later (and so on while it is
/// missing): a peer that holds it may connect, or its claims come back, later.
const PAYLOAD_RETRY_SLOW_TIMEOUTS: u64 = 10;

/// Most per-author gossip budgets kept while no roster bounds the authors.
const AUTHOR_BUCKETS_MAX: usize = 16_384;

/// Most branch heads remembered as already fetched.
const SOUGHT_MAX: usize = 100_000;

/// A branch head asked for and still not held may be asked for again after
/// this many request timeouts: its fetch can be lost without an answer
/// that says so (its range resumed from a peer that left, a backfill cut
/// short by another branch), and a claim of a connected peer must not stay
/// unfetched for ever. Rare enough that announcements cannot make a node
/// ask for one head more than once in a while.
const SOUGHT_RETRY_TIMEOUTS: u64 = 4;

/// Most entry ids remembered per peer as held by it (entries it sent us):
/// our new heads among them are not announced back to it.
const PEER_HOLDS_MAX: usize = 64;

/// Most ranges remembered to be asked for again once the entries below them
/// are stored (see `Replicator::resume`).
const RESUME_MAX: usize = 256;
/// `behind` (authors some peer may hold more of) is pruned of caught-up
/// authors once it reaches twice its size after the last pruning, and never
/// below this many.
const BEHIND_PRUNE_MIN: usize = 4_096;

/// A peer's measured rate (entries new to us per millisecond of its
/// requests' time) counts the recent past: once its time passes this, both
/// its entries and its time are halved.
const RATE_WINDOW_MS: u64 = 60_000;

/// Tips passed remembered per author held (a peer that lags claims one of
/// them until it announces its own new tips; it is not probed as a branch).
const PASSED_TIPS_MAX: usize = 8;

/// Limits and timings. Every queue and message is bounded by one of these.
#[derive(Clone, Debug)]
pub struct Config {
    /// Most seqs asked for (and served) in one range request.
    pub range_limit: u32,
    /// Most bytes (entries and payloads) served in one response; a response
    /// is cut at an entry boundary to fit and marked `more`.
    pub response_bytes_max: usize,
    /// Most requests in flight to one peer.
    pub in_flight_per_peer: usize,
    /// Most requests in flight in all (bounds the memory that responses can
    /// occupy: `in_flight_max * response_bytes_max`). Planned requests go
    /// out only below it, so at most `in_flight_max - 1 +`
    /// [`RETRY_FANOUT_MAX`] are in flight (a fan-out sends several at once);
    /// the follow-ups of imports (a backfill, a resumed range) come on top.
    pub in_flight_max: usize,
    /// A request for a whole range (`range_limit` seqs) unanswered for this
    /// long is struck and asked again, of every other peer that claims the
    /// range. A smaller request gets a deadline in proportion, never below
    /// `request_timeout_base_ms`: see [`Config::request_timeout_base_ms`].
    pub request_timeout_ms: u64,
    /// The deadline of a request scales with what it asks for: a request for
    /// `n` seqs gets `base + (request_timeout_ms − base) × n / range_limit`
    /// milliseconds, with `base` this value (at most `request_timeout_ms`).
    pub request_timeout_base_ms: u64,
    /// Hedging: a request still unanswered after `hedge_slowdown` times the
    /// time the fastest other claimant would take for it at its measured
    /// rate (and never before `hedge_min_ms`) is asked of that claimant too;
    /// the first answer settles both. With no claimant measured yet, a
    /// request is hedged at half its deadline.
    pub hedge_min_ms: u64,
    /// See [`Config::hedge_min_ms`]: how many times slower than the best
    /// other claimant a request may be before it is hedged (at least 1).
    pub hedge_slowdown: u32,
    /// How long a peer that sent invalid data is ignored.
    pub ban_ms: u64,
    /// Most heads in one frontier message. Longer frontiers are sent as
    /// several messages; a peer that sends a longer one is banned.
    pub frontier_heads_max: usize,
    /// Every connected peer is sent our whole frontier again this often
    /// (0: only on connecting). A peer's claims are dropped when it lets a
    /// request time out or answers empty, and it announces only tips that
    /// change: without this, one lost packet could leave an honest peer's
    /// claims forgotten for as long as the connection lasts.
    pub frontier_refresh_ms: u64,
    /// Most tips kept (and announced) per author and peer: a chain forked a
    /// thousand ways is fetched by seq, not by tip, so more would only cost
    /// memory. The highest-seq tips are kept.
    pub heads_per_author_max: usize,
    /// Most heads of authors outside the roster remembered per peer (they
    /// are requested if the author is admitted later); beyond it they are
    /// dropped and the peer is scored down.
    pub non_member_heads_per_peer: usize,
    /// Most outputs queued before the driver drains them; beyond it, new
    /// requests wait (never dropped silently: they are re-planned on timeout)
    /// and requests from peers are refused (the peer asks again on its timeout).
    pub outputs_max: usize,
    /// Unsolicited messages of its own (frontiers, range requests) a peer may
    /// send per second, sustained. Excess messages are dropped and counted.
    pub peer_messages_per_s: u32,
    /// Burst allowance on top of the sustained rate.
    pub peer_messages_burst: u32,
    /// A peer that sends this many of its own messages beyond its budget
    /// within one second is banned as a flooder.
    pub peer_flood_ban_after: u32,
    /// Gossip charges the entry's author, not the relay that forwarded it:
    /// entries of one author accepted per second, sustained. Excess is
    /// dropped silently (it arrives by range sync later); no relay is ever
    /// banned for forwarding valid entries.
    pub author_gossip_per_s: u32,
    /// Burst allowance of an author's gossip.
    pub author_gossip_burst: u32,
    /// Most entries held without their payload that are asked of peers at
    /// once; more wait in the store's list.
    pub missing_payloads_max: usize,
    /// Peers asked for a missing payload before it is reported unavailable.
    pub payload_tries_max: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            range_limit: 1000,
            response_bytes_max: 2 << 20,
            in_flight_per_peer: 4,
            in_flight_max: 16,
            request_timeout_ms: 10_000,
            request_timeout_base_ms: 2_000,
            hedge_min_ms: 500,
            hedge_slowdown: 2,
            ban_ms: 600_000,
            frontier_heads_max: 50_000,
            frontier_refresh_ms: 30_000,
            heads_per_author_max: 64,
            non_member_heads_per_peer: 256,
            outputs_max: 10_000,
            peer_messages_per_s: 500,
            peer_messages_burst: 2_000,
            peer_flood_ban_after: 10_000,
            author_gossip_per_s: 1_000,
            author_gossip_burst: 20_000,
            missing_payloads_max: 4_096,
            payload_tries_max: 8,
        }
    }
}

/// Why a response or gossiped entry was refused. Names the entry (by its
/// position in the message) and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// An entry does not decode.
    #[error("entry {index}: {error}")]
    Entry {
        /// Its position in the message.
        index: usize,
        /// Why it does not decode.
        error: DecodeError,
    },
    /// A signature (or a batch of them) failed.
    #[error("{0}")]
    Verify(#[from] VerifyError),
    /// More entries than a response may carry.
    #[error("{count} entries, more than {max}")]
    TooMany {
        /// How many came.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// An entry by another author than the one asked for.
    #[error("entry {index} is by {author}, not the requested author")]
    WrongAuthor {
        /// Its position.
        index: usize,
        /// Its author.
        author: AgentId,
    },
    /// An entry outside the range asked for.
    #[error("entry {index} (seq {seq}) is outside the requested range")]
    OutOfRange {
        /// Its position.
        index: usize,
        /// Its seq.
        seq: u64,
    },
    /// Entries not in strictly increasing (seq, id) order.
    #[error("entry {index} is out of (seq, id) order")]
    Order {
        /// Its position.
        index: usize,
    },
    /// A response to a request that was sent to another peer.
    #[error("response to request {req}, which was sent to another peer")]
    NotAsked {
        /// The request id.
        req: u64,
    },
    /// A fork proof that does not check.
    #[error("fork proof rejected: {0}")]
    ForkProof(ForkProofError),
}

/// What the gossip layer should do with a message ([`Replicator::gossip`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GossipVerdict {
    /// Valid: deliver and forward it.
    Accept,
    /// Not invalid, but not for us (an author outside the roster, over its
    /// author's rate): do not forward, do not penalise the relay.
    Ignore,
    /// Invalid (bad signature, malformed, forged proof): do not forward, and
    /// penalise the peer that sent it. The peer is banned as well.
    Reject(CheckError),
}

/// A range read the driver must make from its store for a peer, and hand
/// back to [`Replicator::respond`] with what it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeRequest {
    /// Who asked.
    pub peer: PeerId,
    /// Their request id.
    pub req: u64,
    /// The author.
    pub author: AgentId,
    /// Where the read starts: entries of `author` from `(start.seq,
    /// start.after)` on, in (seq, id) order, all branches.
    pub start: RangeStart,
    /// Most seqs asked for (the read stops below `start.seq + limit`).
    pub limit: u32,
    /// Read at most this many entries ([`RESPONSE_ENTRIES_MAX`] + 1, so that
    /// the replicator can tell whether more follow).
    pub read_max: usize,
}

/// What the store made of an [`Output::Import`], reported through
/// [`Replicator::import_result`] exactly once per import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportOutcome {
    /// Stored (or already held). The driver also reports the author's new
    /// tips through [`Replicator::set_local_heads`].
    Stored,
    /// The entry at `seq` links to an entry the store does not hold.
    PredecessorMissing {
        /// Its seq.
        seq: u64,
    },
    /// An entry breaks a chain rule against what is stored (or its payload
    /// or signature, where the store had to check them).
    Invalid {
        /// The store's error.
        reason: String,
    },
    /// Entries from `seq` on are dated too far ahead of the clock: not
    /// stored before `until_ms` (on the clock the driver passes in).
    Deferred {
        /// The first held back.
        seq: u64,
        /// When it may be stored.
        until_ms: u64,
    },
    /// The store could not write, or the driver could not hand the entries
    /// over (its queue was full): asked for again.
    Lost,
}

impl ImportOutcome {
    /// The outcome of an import the store accepted: stored, or partly held
    /// back for the clock. Every driver (the node, the simulator) translates
    /// the store's answer through this and [`ImportOutcome::refused`], so
    /// the replicator hears the same thing from both.
    pub fn accepted(deferred: Option<&agora_core::import::Deferred>) -> Self {
        match deferred {
            Some(d) => ImportOutcome::Deferred { seq: d.first.seq, until_ms: d.until_ms },
            None => ImportOutcome::Stored,
        }
    }

    /// The outcome of an import the import rules refused.
    pub fn refused(problem: &agora_core::import::ImportProblem) -> Self {
        use agora_core::import::ImportProblem;
        match problem {
            ImportProblem::PredecessorMissing { entry, .. } => ImportOutcome::PredecessorMissing { seq: entry.seq },
            ImportProblem::Link(_) | ImportProblem::Payload(_) | ImportProblem::Signature(_) => ImportOutcome::Invalid { reason: problem.to_string() },
        }
    }
}

/// Something the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send a message to a peer.
    Send(PeerId, Message),
    /// Publish on the workspace's gossip topic.
    Publish(Gossip),
    /// Store these entries (signatures and payloads verified). The store
    /// checks links; report the outcome with [`Replicator::import_result`]
    /// and this `id`.
    Import {
        /// Names this import in [`Replicator::import_result`].
        id: u64,
        /// Who sent them.
        from: PeerId,
        /// The entries, in (seq, id) order, with payloads when sent.
        entries: Vec<VerifiedEntry>,
    },
    /// Read from the store and call [`Replicator::respond`].
    Serve(ServeRequest),
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
    /// The payload of this entry was asked of `payload_tries_max` peers and
    /// none had it: it stays pending (views wait for it) until a peer offers
    /// it. Reported once.
    PayloadUnavailable(EntryRef),
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
    /// Gossiped entries dropped because their author was over its rate.
    pub author_rate_limited: u64,
    /// Gossip messages rejected as invalid.
    pub gossip_rejected: u64,
    /// Requests from peers refused because the output queue was full.
    pub requests_shed: u64,
    /// Entries verified in responses and gossip.
    pub entries_verified: u64,
    /// Requests that timed out, and empty answers to claims: charged to the
    /// peer that claimed the range.
    pub withheld: u64,
    /// Claimed heads dropped: authors outside the roster beyond
    /// `non_member_heads_per_peer`, tips beyond `heads_per_author_max`.
    pub claims_dropped: u64,
    /// Payloads fetched again after an entry arrived without one.
    pub payloads_refetched: u64,
    /// Payloads no peer had after `payload_tries_max` asks.
    pub payloads_unavailable: u64,
    /// Imports held back because their entries are dated in the future.
    pub deferred: u64,
    /// Short answers: fewer entries than asked and than the peer claims,
    /// not marked `more` (the peer is demoted, its claim cut to what it sent).
    pub short_answers: u64,
    /// Requests asked of a second claimant because the first was slow.
    pub hedged: u64,
    /// Gossip that carried no new tip (an entry or announcement at or below
    /// the highest seq held, being imported, or already gossiped): dropped
    /// before any author is charged, charged to the relay.
    pub gossip_not_new: u64,
}

/// Entries peers announced that this node does not hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lag {
    /// Over all peers: per author, the best seq any peer claims above ours.
    pub total: u64,
    /// Per peer: what it claims beyond us.
    pub per_peer: BTreeMap<PeerId, u64>,
    /// Per admitted author some peer claims more of: how many more (authors
    /// caught up are left out, so this is bounded by the authors behind).
    pub per_author: BTreeMap<AgentId, u64>,
}

#[derive(Clone, Debug)]
struct InFlight {
    peer: PeerId,
    author: AgentId,
    start: RangeStart,
    /// Most seqs asked for.
    limit: u32,
    purpose: Purpose,
    /// When it was sent.
    sent_ms: u64,
    deadline_ms: u64,
    /// Time of it already charged to the peer's record (when it was hedged).
    charged_ms: u64,
    /// When it is asked of another claimant too, if still unanswered
    /// (`u64::MAX`: never; see [`Config::hedge_min_ms`]).
    hedge_at_ms: u64,
    /// A hedge (asked because another claimant was slow): counted against
    /// `in_flight_max` separately.
    hedge: bool,
    /// Requests for the same range sent to several peers at once (a retry
    /// after a timeout) share a group; the first answer settles all.
    group: u64,
    /// Sent by planning, within the in-flight limits (the rest of a cut
    /// response inherits it from the request it continues). `false`: a
    /// follow-up of an import (a backfill, a resumed range), which the
    /// limits do not hold back.
    planned: bool,
}

/// Why a range was asked for, which decides how its response is imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    /// Entries beyond what we hold. Several such ranges of one author are in
    /// flight at once; their responses are imported in order.
    Forward,
    /// The seq of a peer's head that is not one of our tips (a possible
    /// branch): asked once (see `Replicator::sought`), imported at once.
    Branch(EntryId),
    /// Entries below a batch that did not link (a branch that diverges
    /// further back), or the rest of such a branch once its base is stored:
    /// imported at once.
    Backfill,
    /// The seq of an entry held without its payload, asked to get the payload.
    Payload,
}

impl Purpose {
    /// The purpose of the rest of a range whose response was cut short.
    fn rest(self) -> Self {
        match self {
            Purpose::Forward => Purpose::Forward,
            Purpose::Branch(_) | Purpose::Backfill | Purpose::Payload => Purpose::Backfill,
        }
    }
}

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

/// An import handed to the driver and not yet reported.
#[derive(Debug)]
struct Importing {
    from: PeerId,
    author: AgentId,
    first_seq: u64,
    /// For a gossiped entry (relayed by `from`, not served by it): its head.
    gossiped: Option<Head>,
}

/// An entry held without its payload, being asked of peers.
#[derive(Debug, Clone, Default)]
struct Missing {
    /// Rounds that ended without the payload (every claimant asked once).
    tries: u32,
    /// Not asked again before this.
    next_ms: u64,
    /// Reported unavailable (after `payload_tries_max` rounds): still asked,
    /// slowly, and the first to make room for a new missing payload.
    reported: bool,
    /// Claimants asked in the current round (at most the peers connected):
    /// not asked again before the round ends.
    asked: Vec<PeerId>,
}

#[derive(Debug)]
struct PeerState {
    /// The peer's tips, by author (admitted authors; at most
    /// `heads_per_author_max` each).
    frontier: BTreeMap<AgentId, Vec<Head>>,
    /// How many heads of authors outside the roster `frontier` holds (kept
    /// in case they are admitted): at most `non_member_heads_per_peer`.
    /// Claims dropped since (empty answers, timeouts) may still count.
    non_member_heads: usize,
    /// Budget for its own unsolicited messages.
    bucket: TokenBucket,
    /// Messages dropped for being over budget in the current one-second window.
    dropped_in_window: u32,
    /// Start of that window.
    window_start_ms: u64,
    /// Ids of the last entries this peer sent us (the last of each response,
    /// each gossiped entry), most recent last: it holds them, so our heads
    /// among them are not announced back to it.
    holds: VecDeque<EntryId>,
    /// Requests it let time out, empty answers to its own claims, repeated
    /// short answers, payloads it claimed and did not send: each divides
    /// its score.
    strikes: u32,
    /// Entries new to us it delivered in answers to forward ranges.
    useful: u64,
    /// Milliseconds its forward requests took (answered, cut short by a
    /// hedge, or timed out). `useful / spent_ms` is its measured rate; both
    /// are halved once this passes [`RATE_WINDOW_MS`].
    spent_ms: u64,
    /// Short answers in a row (fewer entries than asked and than it
    /// claims, not `more`): from the second on, each is a strike.
    shorts: u32,
    /// Answers to payload requests that came without the payload: a missing
    /// payload is asked of peers that sent fewer of these first.
    stripped: u32,
    /// It answered `Busy`: not asked again before this.
    busy_until_ms: u64,
    /// When it is sent our whole frontier again ([`Config::frontier_refresh_ms`]).
    refresh_at_ms: u64,
}

impl PeerState {
    fn note_holds(&mut self, id: EntryId) {
        if self.holds.len() >= PEER_HOLDS_MAX {
            self.holds.pop_front();
        }
        self.holds.push_back(id);
    }

    /// Who is asked first: the highest score (ties by peer number).
    fn rank(&self) -> std::cmp::Reverse<u64> {
        std::cmp::Reverse(self.score())
    }

    /// Useful data per unit of time: entries new to us per millisecond of
    /// its requests' time (in millionths, one entry and one millisecond
    /// added so an unmeasured peer scores one entry per millisecond),
    /// divided by one plus its strikes.
    fn score(&self) -> u64 {
        let rate = u128::from(self.useful.saturating_add(1)) * 1_000_000 / u128::from(self.spent_ms.saturating_add(1));
        u64::try_from(rate / u128::from(self.strikes.saturating_add(1))).unwrap_or(u64::MAX)
    }

    /// Milliseconds it would take for `n` entries at its measured rate, if
    /// it has delivered any.
    fn expected_ms(&self, n: u64) -> Option<u64> {
        (self.useful > 0).then(|| u64::try_from(u128::from(n) * u128::from(self.spent_ms.saturating_add(1)) / u128::from(self.useful)).unwrap_or(u64::MAX))
    }

    /// Add an answer (or a wait) to its record.
    fn charge(&mut self, useful: u64, ms: u64) {
        self.useful = self.useful.saturating_add(useful);
        self.spent_ms = self.spent_ms.saturating_add(ms);
        if self.spent_ms > RATE_WINDOW_MS {
            self.useful /= 2;
            self.spent_ms /= 2;
        }
    }

    /// Does this peer claim what a request of `purpose` for `author` from
    /// `seq` asks for?
    fn claims(&self, author: &AgentId, seq: u64, purpose: Purpose) -> bool {
        self.frontier.get(author).is_some_and(|t| match purpose {
            Purpose::Branch(tip) => t.iter().any(|h| h.id == tip),
            _ => max_seq(t) >= seq,
        })
    }
}

/// The replication state of one node.
#[derive(Debug)]
pub struct Replicator {
    config: Config,
    /// What the local store holds: tips by author.
    local: BTreeMap<AgentId, Tips>,
    /// Local tips looked at by tip updates, over the replicator's life: a
    /// commit's share follows what it changed (tests read it).
    tips_handled: u64,
    /// Authors whose entries are replicated, each up to a seq (`None`: all);
    /// `None` for the whole map: everyone.
    admitted: Option<BTreeMap<AgentId, Option<u64>>>,
    peers: BTreeMap<PeerId, PeerState>,
    banned: BTreeMap<PeerId, u64>,
    in_flight: BTreeMap<u64, InFlight>,
    /// Verified responses held back until the earlier ranges of their author
    /// arrive, by (author, start). Counted against the in-flight limits, so
    /// they bound memory the same way.
    held: BTreeMap<(AgentId, RangeStart), Held>,
    /// Per author, the highest seq handed to the store in an import (of a
    /// response or a gossiped entry) and not yet reported back through
    /// [`Replicator::set_local_heads`]: not asked for again meanwhile.
    importing: BTreeMap<AgentId, u64>,
    /// Ranges whose import failed to link, to be asked for again (from the
    /// same peer) once the backfill below them is stored: (peer, author,
    /// first seq).
    resume: VecDeque<(PeerId, AgentId, u64)>,
    /// Imports handed out and not yet reported. They count against
    /// [`Config::in_flight_max`]: a store slower than the network slows the
    /// requests instead of queueing verified entries without bound.
    imports: BTreeMap<u64, Importing>,
    /// Branch heads (below our highest seq) asked for, with the time they
    /// were: not asked again however often peers announce them, until
    /// [`SOUGHT_RETRY_TIMEOUTS`] request timeouts have passed.
    sought: BTreeMap<EntryId, u64>,
    /// Ranges whose request timed out: the next ask goes to every claimant.
    retried: BTreeSet<(AgentId, u64)>,
    /// Authors whose entries from some seq are dated in the future: not
    /// asked for before the time given.
    deferred: BTreeMap<AgentId, u64>,
    /// Entries held without their payload, being asked of peers.
    missing: BTreeMap<EntryRef, Missing>,
    /// Gossip budgets of authors (admitted authors only).
    author_buckets: BTreeMap<AgentId, TokenBucket>,
    /// Per author, the highest seq accepted from gossip: gossip at or below
    /// it (or below what is held or being imported) is no new tip. Bounded
    /// like `author_buckets`.
    gossiped: BTreeMap<AgentId, u64>,
    /// Fork proofs already published, by (author, seq).
    published_forks: BTreeSet<(AgentId, u64)>,
    /// The record (strikes, entries delivered, time spent) of peers that
    /// disconnected, so that reconnecting does not wash it.
    past: BTreeMap<PeerId, (u32, u64, u64)>,
    /// Authors whose tips changed and are not announced yet.
    pending_announce: BTreeSet<AgentId>,
    /// Authors some peer may hold more of than we do: every author whose
    /// claims (a peer's frontier) or local tips changed since planning last
    /// found it caught up with every claim. Planning looks at these only, so
    /// its cost follows what changed, not how many authors the swarm has
    /// (an author outside it is one [`Replicator::want`] answers `None` for,
    /// whatever the peer). At most the authors claimed by peers or held.
    behind: BTreeSet<AgentId>,
    /// `behind` is pruned when it reaches this size.
    behind_prune_at: usize,
    /// Per author held, the last [`PASSED_TIPS_MAX`] tips we passed: held
    /// entries, so a peer's claim of one is not a branch to probe.
    passed_tips: BTreeMap<AgentId, VecDeque<EntryId>>,
    /// A planning step stopped at a limit (requests in flight, a peer's
    /// share, the output queue) since the last full pass: a slot coming free
    /// then plans everything again. Otherwise every change has planned what
    /// it affects, and a free slot plans only its own author, so that the
    /// cost of an import or a response does not grow with the authors.
    starved: bool,
    /// When tips were last announced.
    last_announce_ms: u64,
    /// The latest time passed in (for decisions made without one).
    clock_ms: u64,
    next_req: u64,
    next_group: u64,
    next_import: u64,
    outputs: VecDeque<Output>,
    stats: Stats,
}

fn max_seq(heads: &[Head]) -> u64 {
    heads.iter().map(|h| h.seq).max().unwrap_or(0)
}

/// Group heads by author, each author's tips sorted and deduplicated.
///
/// Each author's tips are an exact-size vector: the groups are kept (a
/// peer's frontier is held per author for as long as it is connected), and
/// a vector grown by pushing holds room for four heads where almost every
/// author has one: 288 bytes instead of 72, per author per peer.
fn group(mut heads: Vec<Head>) -> BTreeMap<AgentId, Vec<Head>> {
    // Head orders by author, then seq, then id.
    heads.sort_unstable();
    heads.dedup();
    heads.chunk_by(|a, b| a.author == b.author).map(|tips| (tips[0].author, tips.to_vec())).collect()
}

/// Keep the `max` highest-seq tips (ties by id), in (seq, id) order.
fn cap_tips(tips: &mut Vec<Head>, max: usize) -> usize {
    if tips.len() <= max {
        return 0;
    }
    let dropped = tips.len() - max;
    tips.sort_by_key(|h| std::cmp::Reverse((h.seq, h.id)));
    tips.truncate(max);
    tips.sort();
    dropped
}

impl Replicator {
    /// A replicator with nothing known.
    pub fn new(config: Config) -> Self {
        assert!(
            config.range_limit > 0 && config.in_flight_per_peer > 0 && config.in_flight_max > 0 && config.heads_per_author_max > 0,
            "config limits must be positive"
        );
        Self {
            config,
            local: BTreeMap::new(),
            tips_handled: 0,
            admitted: None,
            peers: BTreeMap::new(),
            banned: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            held: BTreeMap::new(),
            importing: BTreeMap::new(),
            resume: VecDeque::new(),
            imports: BTreeMap::new(),
            sought: BTreeMap::new(),
            retried: BTreeSet::new(),
            deferred: BTreeMap::new(),
            missing: BTreeMap::new(),
            author_buckets: BTreeMap::new(),
            gossiped: BTreeMap::new(),
            published_forks: BTreeSet::new(),
            past: BTreeMap::new(),
            pending_announce: BTreeSet::new(),
            behind: BTreeSet::new(),
            behind_prune_at: BEHIND_PRUNE_MIN,
            passed_tips: BTreeMap::new(),
            starved: false,
            last_announce_ms: 0,
            clock_ms: 0,
            next_req: 1,
            next_group: 1,
            next_import: 1,
            outputs: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    // ---------------------------------------------------------------------
    // The roster.

    /// Replicate only these authors, each up to a seq (`None`: all of its
    /// chain): the workspace roster's admission (`Roster::admission`). `None`
    /// replicates everyone. Entries and heads of anyone else are refused and
    /// reported. Newly admitted authors are requested from peers that hold them.
    pub fn set_admitted(&mut self, admitted: Option<BTreeMap<AgentId, Option<u64>>>, now_ms: u64) {
        if let Some(a) = &admitted {
            self.author_buckets.retain(|author, _| a.contains_key(author));
            self.gossiped.retain(|author, _| a.contains_key(author));
        }
        self.admitted = admitted;
        // Authors admitted now may be claimed already.
        let claimed: Vec<AgentId> = self.peers.values().flat_map(|s| s.frontier.keys().copied()).collect();
        self.behind.extend(claimed);
        // Who is outside the roster changed: count each peer's claims of
        // non-members again, keeping them within their bound.
        let (admitted, max) = (&self.admitted, self.config.non_member_heads_per_peer);
        for state in self.peers.values_mut() {
            let outside: Vec<(AgentId, usize)> =
                state.frontier.iter().filter(|(a, _)| admitted.as_ref().is_some_and(|m| !m.contains_key(*a))).map(|(a, t)| (*a, t.len())).collect();
            state.non_member_heads = 0;
            for (author, n) in outside {
                if state.non_member_heads + n <= max {
                    state.non_member_heads += n;
                } else {
                    state.frontier.remove(&author);
                }
            }
        }
        self.plan_all(now_ms);
    }

    fn is_member(&self, author: &AgentId) -> bool {
        self.admitted.as_ref().is_none_or(|a| a.contains_key(author))
    }

    /// Is this entry of `author` admitted (its author a member, and the seq
    /// not beyond a removal's cut-off)?
    fn admits(&self, author: &AgentId, seq: u64) -> bool {
        match &self.admitted {
            None => true,
            Some(a) => a.get(author).is_some_and(|cut| cut.is_none_or(|last| seq <= last)),
        }
    }

    /// The highest seq of `author` that may be asked for.
    fn admitted_up_to(&self, author: &AgentId) -> Option<u64> {
        match &self.admitted {
            None => Some(u64::MAX),
            Some(a) => a.get(author).map(|cut| cut.unwrap_or(u64::MAX)),
        }
    }

    // ---------------------------------------------------------------------
    // The local store.

    /// Replace everything known about the local store's tips (at start-up).
    /// Announces changed authors and plans requests.
    pub fn set_local_frontier(&mut self, heads: Vec<Head>, now_ms: u64) {
        let next: BTreeMap<AgentId, Tips> = group(heads).into_iter().map(|(a, tips)| (a, Tips::from_sorted(tips))).collect();
        self.tips_handled += next.values().map(|t| t.len() as u64).sum::<u64>();
        let changed: Vec<Head> = next.iter().filter(|(a, tips)| self.local.get(*a) != Some(*tips)).flat_map(|(_, tips)| self.capped(tips)).collect();
        self.behind.extend(self.local.keys().chain(next.keys()).copied());
        self.local = next;
        self.announce(changed);
        self.plan_all(now_ms);
    }

    /// One author's tips in the local store are now `tips` (all of them):
    /// [`Replicator::local_tips_changed`] with what differs, found in one
    /// pass over both. A driver that knows what a commit changed gives that
    /// instead, so that a commit costs what it adds.
    pub fn set_local_heads(&mut self, author: AgentId, mut tips: Vec<Head>, now_ms: u64) {
        // Else another author's tips would be filed, and announced, as this one's.
        assert!(tips.iter().all(|h| h.author == author), "tips of another author");
        tips.sort();
        tips.dedup();
        let old: Vec<Head> = self.local.get(&author).map(|t| t.iter().copied().collect()).unwrap_or_default();
        self.tips_handled += (old.len() + tips.len()) as u64;
        let new: BTreeSet<Head> = tips.iter().copied().collect();
        let kept: BTreeSet<Head> = old.iter().copied().collect();
        let passed: Vec<Head> = old.into_iter().filter(|h| !new.contains(h)).collect();
        let added: Vec<Head> = tips.into_iter().filter(|h| !kept.contains(h)).collect();
        self.local_tips_changed(author, &passed, &added, now_ms);
    }

    /// One author's tips in the local store changed (after an import or a
    /// local append): `passed` are tips no longer (an entry built on them),
    /// `added` new tips. Costs what they hold, whatever the author's other
    /// tips (a fork flood's thousands): the tips are kept incrementally and
    /// only the highest `heads_per_author_max` are announced. Announces
    /// them to every peer and plans further requests for that author only.
    pub fn local_tips_changed(&mut self, author: AgentId, passed: &[Head], added: &[Head], now_ms: u64) {
        // Else another author's tips would be filed, and announced, as this one's.
        assert!(passed.iter().chain(added).all(|h| h.author == author), "tips of another author");
        self.tips_handled += (passed.len() + added.len()) as u64;
        let our_max = self.local.get(&author).map_or(0, Tips::max_seq).max(added.iter().map(|h| h.seq).max().unwrap_or(0));
        if self.importing.get(&author).is_some_and(|&s| s <= our_max) {
            self.importing.remove(&author);
        }
        let tips = self.local.entry(author).or_insert_with(|| Tips::from_sorted(Vec::new()));
        let before = tips.len();
        let gone = tips.apply(passed, added);
        let changed = !gone.is_empty() || tips.len() != before;
        if tips.is_empty() {
            self.local.remove(&author);
            self.passed_tips.remove(&author);
        } else {
            // Tips passed are held (entries are never deleted): a peer that
            // still claims one lags, it holds no branch of ours to probe.
            let recent = self.passed_tips.entry(author).or_default();
            for h in gone.iter().skip(gone.len().saturating_sub(PASSED_TIPS_MAX)) {
                if recent.len() == PASSED_TIPS_MAX {
                    recent.pop_front();
                }
                recent.push_back(h.id);
            }
        }
        if !changed {
            return;
        }
        // A tip we passed may now be an interior entry some peer still
        // claims: a branch to probe, as `want` sees it, unless it is one of
        // the recent tips we passed.
        self.behind.insert(author);
        self.prune_behind_if_large();
        self.pending_announce.insert(author);
        if now_ms >= self.last_announce_ms.saturating_add(ANNOUNCE_INTERVAL_MS) {
            self.flush_announcements(now_ms);
        }
        self.release_held(author);
        self.resume(author, now_ms);
        let peers = self.peers_in_rank_order();
        for p in peers {
            self.plan_author(p, author, now_ms);
        }
    }

    /// Local tips looked at by tip updates so far: each commit adds what it
    /// passed and added (a full list given to [`Replicator::set_local_heads`]
    /// adds the old and new lists' lengths).
    pub fn tips_handled(&self) -> u64 {
        self.tips_handled
    }

    /// Announce the current tips of every author whose tips changed since
    /// the last announcement, in one frontier per peer.
    fn flush_announcements(&mut self, now_ms: u64) {
        if self.pending_announce.is_empty() {
            return;
        }
        let authors = std::mem::take(&mut self.pending_announce);
        let heads: Vec<Head> = authors.iter().filter_map(|a| self.local.get(a)).flat_map(|t| self.capped(t)).collect();
        self.last_announce_ms = now_ms;
        self.announce(heads);
    }

    /// The tips of an author as announced: at most `heads_per_author_max`,
    /// the highest first.
    fn capped(&self, tips: &Tips) -> Vec<Head> {
        tips.highest(self.config.heads_per_author_max)
    }

    /// What the local store committed: entries appended here (signed by this
    /// node's agent, with their payloads) and fork proofs it proved for the
    /// first time. Each is published on gossip: an entry inline when its
    /// payload is small, announced otherwise; a proof once per position.
    pub fn local_commit(&mut self, appended: &[(SignedEntry, Option<Vec<u8>>)], new_proofs: &[ForkProof]) {
        for (e, payload) in appended {
            self.outputs.push_back(Output::Publish(Gossip::for_entry(e, payload.as_deref())));
        }
        for p in new_proofs {
            if self.published_forks.insert((p.author(), p.seq())) {
                self.outputs.push_back(Output::Publish(Gossip::ForkProof(p.encode())));
            }
        }
    }

    /// Entries the store holds without their payload (never received): ask
    /// peers for them, a bounded number at a time. The driver hands them over
    /// at start-up and as imports without payloads commit, from the store's
    /// list, while [`Replicator::missing_payload_room`] is positive.
    pub fn payloads_missing(&mut self, entries: &[EntryRef], now_ms: u64) {
        for e in entries {
            if self.missing.contains_key(e) {
                continue;
            }
            if self.missing.len() >= self.config.missing_payloads_max {
                // A payload already reported unavailable makes room (it stays
                // in the store's list, and is handed over again later).
                let Some(old) = self.missing.iter().find(|(_, m)| m.reported).map(|(e, _)| *e) else { break };
                self.missing.remove(&old);
            }
            self.missing.insert(*e, Missing { next_ms: now_ms, ..Missing::default() });
        }
        self.plan_all(now_ms);
    }

    /// How many more missing payloads the replicator takes now.
    pub fn missing_payload_room(&self) -> usize {
        self.config.missing_payloads_max.saturating_sub(self.missing.len())
    }

    /// The payloads of these entries arrived (or were redacted here): stop
    /// asking for them.
    pub fn payloads_arrived(&mut self, ids: &[EntryId]) {
        let ids: BTreeSet<&EntryId> = ids.iter().collect();
        self.missing.retain(|e, _| !ids.contains(&e.id));
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

    /// When a frontier sent at `now_ms` is due to be sent again.
    fn next_refresh(&self, now_ms: u64) -> u64 {
        match self.config.frontier_refresh_ms {
            0 => u64::MAX,
            every => now_ms.saturating_add(every),
        }
    }

    /// Send our whole frontier to every peer whose refresh is due.
    fn refresh_frontiers(&mut self, now_ms: u64) {
        let due: Vec<PeerId> = self.peers.iter().filter(|(_, s)| s.refresh_at_ms <= now_ms).map(|(p, _)| *p).collect();
        if due.is_empty() {
            return;
        }
        let frontier = self.local_heads();
        let next = self.next_refresh(now_ms);
        for peer in due {
            if let Some(s) = self.peers.get_mut(&peer) {
                s.refresh_at_ms = next;
            }
            self.send_frontier(peer, frontier.clone());
        }
    }

    /// Every local tip, at most `heads_per_author_max` per author.
    pub fn local_heads(&self) -> Vec<Head> {
        self.local.values().flat_map(|tips| self.capped(tips)).collect()
    }

    // ---------------------------------------------------------------------
    // Peers.

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
        // A reconnection does not wash a peer's record.
        let (strikes, useful, spent_ms) =
            self.peers.get(&peer).map(|s| (s.strikes, s.useful, s.spent_ms)).or_else(|| self.past.remove(&peer)).unwrap_or((0, 0, 0));
        self.peers.insert(
            peer,
            PeerState {
                frontier: BTreeMap::new(),
                non_member_heads: 0,
                bucket,
                dropped_in_window: 0,
                window_start_ms: now_ms,
                holds: VecDeque::new(),
                strikes,
                useful,
                spent_ms,
                shorts: 0,
                stripped: 0,
                busy_until_ms: 0,
                refresh_at_ms: self.next_refresh(now_ms),
            },
        );
        let frontier = self.local_heads();
        self.send_frontier(peer, frontier);
    }

    /// `peer` answered request `req` with `Busy` (over its rate, or
    /// overloaded): not withholding. The request is dropped without a
    /// strike and the peer is not asked anything for [`BUSY_BACKOFF_MS`];
    /// the range is asked again as planned.
    pub fn busy(&mut self, peer: PeerId, req: u64, now_ms: u64) {
        if self.in_flight.get(&req).is_some_and(|f| f.peer == peer)
            && let Some(f) = self.in_flight.remove(&req)
            && f.purpose == Purpose::Payload
        {
            // Not an answer: the peer stays in the round, asked again once it may be.
            let at = EntryRef { author: f.author, seq: f.start.seq, id: EntryId::default() };
            for (_, m) in self.missing.range_mut(at..).take_while(|(e, _)| e.author == f.author && e.seq == f.start.seq) {
                m.asked.retain(|p| *p != peer);
            }
            self.payload_request_ended(f.author, f.start.seq, now_ms);
        }
        if let Some(s) = self.peers.get_mut(&peer) {
            s.busy_until_ms = now_ms.saturating_add(BUSY_BACKOFF_MS);
        }
        self.plan_all(now_ms);
    }

    /// A peer went away: its in-flight requests are re-planned on timeout.
    pub fn disconnected(&mut self, peer: PeerId) {
        self.forget_peer(peer);
        for f in self.in_flight.values_mut().filter(|f| f.peer == peer) {
            f.deadline_ms = 0;
        }
    }

    /// Drop a peer's state, keeping its record (strikes, entries delivered)
    /// among the bounded past ones.
    fn forget_peer(&mut self, peer: PeerId) {
        if let Some(s) = self.peers.remove(&peer)
            && (s.strikes, s.useful, s.spent_ms) != (0, 0, 0)
        {
            if self.past.len() >= PAST_PEERS_MAX {
                self.past.pop_first();
            }
            self.past.insert(peer, (s.strikes, s.useful, s.spent_ms));
        }
    }

    /// Peers currently connected (and not banned).
    pub fn peers(&self) -> Vec<PeerId> {
        self.peers.keys().copied().collect()
    }

    /// Connected peers, the ones to ask first first.
    fn peers_in_rank_order(&self) -> Vec<PeerId> {
        let mut v: Vec<(_, PeerId)> = self.peers.iter().map(|(p, s)| (s.rank(), *p)).collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// A peer's strikes (timeouts, empty answers to its claims), for tests
    /// and status displays.
    pub fn strikes(&self, peer: PeerId) -> Option<u32> {
        self.peers.get(&peer).map(|s| s.strikes)
    }

    /// The frontier a peer announced, for status displays.
    pub fn peer_frontier(&self, peer: PeerId) -> Vec<Head> {
        self.peers.get(&peer).map(|s| s.frontier.values().flatten().copied().collect()).unwrap_or_default()
    }

    /// Heads remembered of all peers' claims: bounded by the roster size
    /// times `heads_per_author_max` per peer, plus `non_member_heads_per_peer`.
    pub fn claims_held(&self) -> usize {
        self.peers.values().map(|s| s.frontier.values().map(Vec::len).sum::<usize>()).sum()
    }

    /// Entries connected peers announced that this node does not hold.
    pub fn lag(&self) -> Lag {
        let ours = |a: &AgentId| self.local.get(a).map_or(0, Tips::max_seq);
        let mut best: BTreeMap<AgentId, u64> = BTreeMap::new();
        let mut per_peer = BTreeMap::new();
        for (p, s) in &self.peers {
            let mut lag = 0u64;
            // Claims of authors outside the roster are kept (bounded) while
            // the roster may be incomplete, but are not ours to fetch.
            for (a, tips) in s.frontier.iter().filter(|(a, _)| self.is_member(a)) {
                let theirs = max_seq(tips);
                lag += theirs.saturating_sub(ours(a));
                let b = best.entry(*a).or_insert(0);
                *b = (*b).max(theirs);
            }
            per_peer.insert(*p, lag);
        }
        let per_author: BTreeMap<AgentId, u64> = best.iter().map(|(a, s)| (*a, s.saturating_sub(ours(a)))).filter(|(_, l)| *l > 0).collect();
        let total = per_author.values().sum();
        Lag { total, per_peer, per_author }
    }

    fn ban(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        let until_ms = now_ms.saturating_add(self.config.ban_ms);
        self.banned.insert(peer, until_ms);
        // Its record outlives the ban: back, it starts where it left off.
        self.forget_peer(peer);
        self.stats.bans += 1;
        self.outputs.push_back(Output::Ban { peer, reason, until_ms });
        // Requests to the banned peer are asked again of others at once.
        self.in_flight.retain(|_, f| f.peer != peer);
        self.plan_all(now_ms);
    }

    /// The driver found `peer`'s input invalid where the replicator could not
    /// see it (undecodable wire bytes): ban it like any other bad input.
    pub fn report_invalid(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        if self.peers.contains_key(&peer) && !self.is_banned(peer, now_ms) {
            self.ban(peer, reason, now_ms);
        }
    }

    /// Charge one of `peer`'s own unsolicited messages to its budget. `false`: drop it.
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

    /// Charge one gossiped entry to its author's budget. `false`: drop it
    /// silently (it arrives by range sync later).
    fn admit_author(&mut self, author: AgentId, now_ms: u64) -> bool {
        let (per_s, burst) = (self.config.author_gossip_per_s, self.config.author_gossip_burst);
        if !self.author_buckets.contains_key(&author) && self.admitted.is_none() && self.author_buckets.len() >= AUTHOR_BUCKETS_MAX {
            // No roster to bound the authors by: forget the budgets rather
            // than grow without bound (a fresh budget is a full one).
            self.author_buckets.clear();
            self.gossiped.clear();
        }
        let ok = self.author_buckets.entry(author).or_insert_with(|| TokenBucket::new(per_s, burst, now_ms)).take(now_ms);
        if !ok {
            self.stats.author_rate_limited += 1;
        }
        ok
    }

    fn strike(&mut self, peer: PeerId) {
        self.stats.withheld += 1;
        if let Some(s) = self.peers.get_mut(&peer) {
            s.strikes = s.strikes.saturating_add(1);
        }
    }

    // ---------------------------------------------------------------------
    // Messages.

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
                self.learn_frontier(peer, heads, now_ms);
            }
            Message::Request { req, author, start, limit } => {
                if !self.admit_message(peer, now_ms) {
                    if self.peers.contains_key(&peer) {
                        self.outputs.push_back(Output::Decline { peer, req });
                    }
                    return;
                }
                if limit == 0 || limit > self.config.range_limit || start.seq == 0 {
                    return self.ban(peer, format!("request {req}: limit {limit} from seq {} out of bounds", start.seq), now_ms);
                }
                if self.outputs.len() >= self.config.outputs_max {
                    // Overloaded: the peer asks again later.
                    self.stats.requests_shed += 1;
                    self.outputs.push_back(Output::Decline { peer, req });
                    return;
                }
                // Reads are open to any peer of the workspace, whatever our
                // roster says: ours may lag the peer's (it is itself
                // replicated), and the peer filters what it receives by its own.
                let read_max = RESPONSE_ENTRIES_MAX + 1;
                self.outputs.push_back(Output::Serve(ServeRequest { peer, req, author, start, limit, read_max }));
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

    /// A frontier from `peer`: its claims replace its view of each author
    /// listed, within the bounds; then plan.
    fn learn_frontier(&mut self, peer: PeerId, heads: Vec<Head>, now_ms: u64) {
        let update = group(heads);
        let (cap, non_member_max) = (self.config.heads_per_author_max, self.config.non_member_heads_per_peer);
        let mut refused = 0u64;
        let mut dropped = 0u64;
        let mut planned = Vec::new();
        let members: Vec<bool> = update.keys().map(|a| self.is_member(a)).collect();
        let Some(state) = self.peers.get_mut(&peer) else { return };
        for ((author, mut tips), member) in update.into_iter().zip(members) {
            dropped += cap_tips(&mut tips, cap) as u64;
            if member {
                self.behind.insert(author);
                state.frontier.insert(author, tips);
                planned.push(author);
                continue;
            }
            // Outside the roster: remembered (fetched if the author is
            // admitted later) only up to a small bound, never planned.
            refused += 1;
            // The author's earlier claims are replaced, so they leave the count.
            let others = state.non_member_heads.saturating_sub(state.frontier.get(&author).map_or(0, Vec::len));
            if others + tips.len() <= non_member_max {
                state.non_member_heads = others + tips.len();
                // Planned only if admitted later (`set_admitted` marks it then).
                state.frontier.insert(author, tips);
            } else {
                dropped += tips.len() as u64;
            }
            // Else a peer could hold `heads_per_author_max` times the bound,
            // by claiming an author with one head and then with many.
            assert!(state.non_member_heads <= non_member_max, "{} claims of non-members held", state.non_member_heads);
        }
        if dropped > 0 {
            state.strikes = state.strikes.saturating_add(1);
        }
        self.stats.refused_not_admitted += refused;
        self.stats.claims_dropped += dropped;
        self.prune_behind_if_large();
        for author in planned {
            self.plan_author(peer, author, now_ms);
        }
    }

    /// A response whose entries the driver already passed through
    /// [`check_entries`] (on a worker thread: signature checks are the
    /// CPU-heavy part of replication). Same as [`Replicator::handle`] with
    /// [`Message::Response`] otherwise.
    pub fn handle_checked_response(&mut self, peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, CheckError>, more: bool, now_ms: u64) {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return;
        }
        self.on_response(peer, req, checked, more, now_ms)
    }

    /// The driver read what a [`ServeRequest`] asked for: at most `read_max`
    /// entries of the author from `start` on, in (seq, id) order, each with
    /// its seq (as the store keys it: entries are sent as stored, not decoded
    /// here; the receiver verifies them). The response keeps those below the
    /// range's end, at most [`RESPONSE_ENTRIES_MAX`] of them and as many as
    /// fit in [`Config::response_bytes_max`] (the first always), and is
    /// marked `more` when the store held more: the requester resumes after
    /// the last entry sent, inside its seq if need be.
    pub fn respond(&mut self, serve: ServeRequest, served: Vec<(u64, WireEntry)>) {
        if !self.peers.contains_key(&serve.peer) {
            return;
        }
        let end = serve.start.seq.saturating_add(u64::from(serve.limit));
        // `more`: entries of the range remain unsent (the response was cut),
        // so the requester resumes after the last entry it got.
        let within = served.iter().take_while(|(seq, _)| *seq < end).count();
        let mut more = within >= serve.read_max;
        let mut entries = Vec::new();
        let mut bytes = 0usize;
        for (seq, w) in served {
            if seq >= end {
                break;
            }
            if entries.len() >= RESPONSE_ENTRIES_MAX || (!entries.is_empty() && bytes + w.wire_len() > self.config.response_bytes_max) {
                more = true;
                break;
            }
            bytes += w.wire_len();
            entries.push(w);
        }
        // Else the requester would refuse the response and ban this node
        // (only a single entry may exceed the byte budget).
        assert!(
            entries.len() <= RESPONSE_ENTRIES_MAX && (entries.len() <= 1 || bytes <= self.config.response_bytes_max),
            "a response of {} entries and {bytes} bytes",
            entries.len()
        );
        self.outputs.push_back(Output::Send(serve.peer, Message::Response { req: serve.req, entries, more }));
    }

    // ---------------------------------------------------------------------
    // Planning.

    fn plan_all(&mut self, now_ms: u64) {
        self.clock_ms = self.clock_ms.max(now_ms);
        self.starved = false;
        for p in self.peers_in_rank_order() {
            self.plan(p, now_ms);
        }
        self.plan_payloads(now_ms);
    }

    /// The first seq of `author` after `our_max` that is neither asked for
    /// (a forward range in flight), held back, nor being imported.
    fn next_unasked(&self, author: &AgentId, our_max: u64) -> u64 {
        let mut cursor = our_max.max(self.importing.get(author).copied().unwrap_or(0)).saturating_add(1);
        let mut ranges: Vec<(u64, u64)> = self
            .in_flight
            .values()
            .filter(|f| f.author == *author && f.purpose == Purpose::Forward)
            .map(|f| (f.start.seq, f.start.seq.saturating_add(u64::from(f.limit))))
            .chain(
                self.held
                    .range((*author, RangeStart::at(0))..)
                    .take_while(|((a, _), _)| a == author)
                    .map(|((_, s), h)| (s.seq, s.seq.saturating_add(u64::from(h.limit)))),
            )
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

    /// Forget the authors of `behind` that are caught up, once it has grown
    /// to twice what was left the last time (or [`BEHIND_PRUNE_MIN`]): it
    /// then never holds more than twice the authors claimed or held, however
    /// peers rotate their claims between planning passes, and pruning costs
    /// a constant per author marked.
    fn prune_behind_if_large(&mut self) {
        if self.behind.len() < self.behind_prune_at {
            return;
        }
        let caught_up: Vec<AgentId> = self.behind.iter().filter(|a| !self.is_behind(a)).copied().collect();
        for a in caught_up {
            self.behind.remove(&a);
        }
        self.behind_prune_at = (2 * self.behind.len()).max(BEHIND_PRUNE_MIN);
    }

    /// Does some peer claim an entry of `author` that [`Replicator::want`]
    /// could ask for: a seq above our highest, or, at or below it, a head
    /// that is not one of our tips (a branch, or an entry we passed)? `want`
    /// adds only conditions of time, admission and requests in flight, so
    /// for an author where this is false it answers `None` for every peer.
    fn is_behind(&self, author: &AgentId) -> bool {
        let ours = self.local.get(author);
        let our_max = ours.map_or(0, Tips::max_seq);
        self.peers
            .values()
            .filter_map(|s| s.frontier.get(author))
            .any(|theirs| max_seq(theirs) > our_max || theirs.iter().any(|h| h.seq <= our_max && !self.known_held(author, ours, h)))
    }

    /// Is `id` one of our tips of `author`, or a tip we held and passed
    /// lately (so an entry we hold, not a branch)?
    fn known_held(&self, author: &AgentId, ours: Option<&Tips>, head: &Head) -> bool {
        ours.is_some_and(|o| o.contains(head)) || self.passed_tips.get(author).is_some_and(|p| p.contains(&head.id))
    }

    /// Was the branch head `tip` asked for less than
    /// [`SOUGHT_RETRY_TIMEOUTS`] request timeouts ago?
    fn sought_recently(&self, tip: EntryId, now_ms: u64) -> bool {
        let wait = self.config.request_timeout_ms.saturating_mul(SOUGHT_RETRY_TIMEOUTS);
        self.sought.get(&tip).is_some_and(|&at| now_ms < at.saturating_add(wait))
    }

    /// What we want of `author` from a peer whose tips are `theirs`: the
    /// range to request next (its start, most seqs, and for a branch the head
    /// it is for), if any.
    fn want(&self, author: &AgentId, theirs: &[Head], now_ms: u64) -> Option<(RangeStart, u32, Purpose)> {
        let up_to = self.admitted_up_to(author)?;
        if self.deferred.get(author).is_some_and(|until| *until > now_ms) {
            return None;
        }
        let ours = self.local.get(author);
        let our_max = ours.map_or(0, Tips::max_seq);
        // `next` is above our highest seq: a peer claiming no more than that
        // has nothing forward for us, and the scan of requests is skipped.
        let next = if max_seq(theirs) > our_max { self.next_unasked(author, our_max) } else { u64::MAX };
        if max_seq(theirs) >= next && next <= up_to {
            let limit = u64::from(self.config.range_limit).min(up_to - next + 1);
            return Some((RangeStart::at(next), u32::try_from(limit).unwrap_or(self.config.range_limit), Purpose::Forward));
        }
        // A head below our highest seq that is not one of our tips: another
        // branch (a fork), or an entry we hold that has successors. Ask for
        // its seq alone, once in a while (`sought`): the store skips what it holds, and
        // an entry of a branch we lack fails to link, which asks for the
        // range before it ([`Replicator::import_result`]). A claimed head at
        // seq 0 names no entry (seqs start at 1): never asked about, or we
        // would send a request that peers ban for.
        let tip = theirs
            .iter()
            .filter(|h| h.seq >= 1 && h.seq <= our_max && h.seq <= up_to && !self.known_held(author, ours, h) && !self.sought_recently(h.id, now_ms))
            .min()?;
        Some((RangeStart::at(tip.seq), 1, Purpose::Branch(tip.id)))
    }

    /// For each author where `peer` holds what we lack, ask for it, within
    /// the in-flight limits: several ranges of one author at a time
    /// (pipelined), each range asked of one peer only (at first).
    fn plan(&mut self, peer: PeerId, now_ms: u64) {
        // Only authors in `behind`: the others are caught up with every
        // claim, and `want` is `None` for them. Walked lazily, so a pass
        // that finds the limits reached stops at once.
        let mut after: Option<AgentId> = None;
        loop {
            if !self.may_request(peer) {
                self.starved = true;
                return;
            }
            let Some(state) = self.peers.get(&peer) else { return };
            let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
            let Some(author) = self.behind.range((from, std::ops::Bound::Unbounded)).find(|a| state.frontier.contains_key(*a)).copied() else { return };
            after = Some(author);
            self.plan_author(peer, author, now_ms);
            // Found caught up with every claim: out of `behind` until the
            // next change marks it again.
            if !self.is_behind(&author) {
                self.behind.remove(&author);
            }
        }
    }

    /// Is there a peer to prefer over `peer` for `author` from `seq` on: one
    /// that ranks better and claims it too? Then `peer` is not asked: the
    /// better one is, when it has a free slot.
    /// For a branch, only a peer that claims that very tip counts (another
    /// peer may hold the author that far on other branches only), and a
    /// peer in back-off (`Busy`) never does: it will not be asked soon.
    fn better_claimant(&self, peer: PeerId, author: &AgentId, seq: u64, purpose: Purpose) -> bool {
        let Some(mine) = self.peers.get(&peer).map(PeerState::rank) else { return false };
        self.peers.iter().any(|(q, s)| *q != peer && s.rank() < mine && s.busy_until_ms <= self.clock_ms && s.claims(author, seq, purpose))
    }

    fn plan_author(&mut self, peer: PeerId, author: AgentId, now_ms: u64) {
        loop {
            let Some(theirs) = self.peers.get(&peer).and_then(|s| s.frontier.get(&author)) else { return };
            let Some((start, limit, purpose)) = self.want(&author, theirs, now_ms) else { return };
            if purpose != Purpose::Forward && self.in_flight.values().any(|f| f.author == author && f.start.seq == start.seq) {
                return;
            }
            // While the range below this peer's branch is backfilled, its
            // forward range waits: the range that failed to link is resumed
            // once the backfill is stored, and asking it again now would
            // only fail again, and again with every answer.
            if purpose == Purpose::Forward && self.in_flight.values().any(|f| f.peer == peer && f.author == author && f.purpose == Purpose::Backfill) {
                return;
            }
            if self.better_claimant(peer, &author, start.seq, purpose) {
                return;
            }
            // A gap below a held response is asked for even when the limits
            // are reached: the held responses wait for it, and they occupy
            // the slots (there are never more gaps than held responses).
            let fills_gap = purpose == Purpose::Forward
                && self.in_flight.len() < self.config.in_flight_max
                && self.held.range((author, start)..).next().is_some_and(|((a, _), _)| *a == author);
            if !fills_gap && !self.may_request(peer) {
                self.starved = true;
                return;
            }
            // Planned requests go out only below the limit of requests in
            // flight (else responses could occupy more than
            // `in_flight_max * response_bytes_max`).
            assert!(self.in_flight.len() < self.config.in_flight_max, "planning {author} past the in-flight limit");
            if self.retried.remove(&(author, start.seq)) {
                self.fan_out(author, start, limit, purpose, now_ms);
            } else {
                let group = self.new_group();
                self.request(peer, author, start, limit, purpose, group, true, now_ms);
                // A planned request keeps its peer's share too, except a gap
                // fill (bounded by the total alone, as asserted above); else
                // one peer could hold every slot and the pipelining stall on it.
                assert!(fills_gap || self.peer_load(peer) <= self.config.in_flight_per_peer, "{peer:?} asked past its share");
            }
        }
    }

    /// Ask every connected peer that claims `author` at `start.seq` (at most
    /// [`RETRY_FANOUT_MAX`], best ranked first) for the range at once: it
    /// timed out before, so one withholder must not stall it again.
    fn fan_out(&mut self, author: AgentId, start: RangeStart, limit: u32, purpose: Purpose, now_ms: u64) {
        let claimants: Vec<PeerId> = self
            .peers_in_rank_order()
            .into_iter()
            .filter(|p| self.peers.get(p).and_then(|s| s.frontier.get(&author)).is_some_and(|t| max_seq(t) >= start.seq))
            .take(RETRY_FANOUT_MAX)
            .collect();
        let group = self.new_group();
        for p in claimants {
            self.request(p, author, start, limit, purpose, group, true, now_ms);
        }
    }

    /// Remember that a range went unanswered, so that its next ask is fanned
    /// out; at most [`RETRIED_MAX`] marks (beyond that they are forgotten).
    /// Keyed by the range's first seq: the rest of a cut response (which
    /// starts after an entry) is asked again from its seq, as planned.
    fn mark_retried(&mut self, author: AgentId, start: RangeStart) {
        if self.retried.len() >= RETRIED_MAX {
            self.retried.clear();
        }
        self.retried.insert((author, start.seq));
        // Else empty answers could grow the marks without bound.
        assert!(self.retried.len() <= RETRIED_MAX, "{} ranges marked retried", self.retried.len());
    }

    fn new_group(&mut self) -> u64 {
        let g = self.next_group;
        self.next_group += 1;
        g
    }

    /// Requests in flight to `peer` plus responses held back from it: what
    /// counts against [`Config::in_flight_per_peer`].
    fn peer_load(&self, peer: PeerId) -> usize {
        self.in_flight.values().filter(|f| f.peer == peer).count() + self.held.values().filter(|h| h.peer == peer).count()
    }

    fn may_request(&self, peer: PeerId) -> bool {
        if self.peers.get(&peer).is_some_and(|s| s.busy_until_ms > self.clock_ms) {
            return false;
        }
        self.peer_load(peer) < self.config.in_flight_per_peer
            && self.in_flight.len() + self.held.len() + self.imports.len() < self.config.in_flight_max
            && self.outputs.len() < self.config.outputs_max
    }

    /// Send a range request. `planned`: see [`InFlight::planned`].
    #[allow(clippy::too_many_arguments)]
    fn request(&mut self, peer: PeerId, author: AgentId, start: RangeStart, limit: u32, purpose: Purpose, group: u64, planned: bool, now_ms: u64) {
        let req = self.next_req;
        self.next_req += 1;
        if let Purpose::Branch(tip) = purpose {
            if self.sought.len() >= SOUGHT_MAX {
                // Forget the oldest marks; at worst a branch is fetched twice.
                self.sought.clear();
            }
            self.sought.insert(tip, now_ms);
            // Else announcements of branch heads could grow the marks without bound.
            assert!(self.sought.len() <= SOUGHT_MAX, "{} branch heads sought", self.sought.len());
        }
        let deadline_ms = now_ms.saturating_add(self.timeout_for(limit));
        let hedge_at_ms = self.hedge_wait(peer, author, start.seq, limit, purpose).map_or(u64::MAX, |w| now_ms.saturating_add(w));
        let f = InFlight { peer, author, start, limit, purpose, sent_ms: now_ms, deadline_ms, charged_ms: 0, hedge_at_ms, hedge: false, group, planned };
        let reused = self.in_flight.insert(req, f);
        // Else one answer would settle two requests, and the other's slot never come free.
        assert!(reused.is_none(), "request id {req} used twice");
        // Planned requests go out only while fewer than `in_flight_max` are in
        // flight, a fan-out adding at most RETRY_FANOUT_MAX at once, and the
        // rest of a cut response takes over the slot of the request it
        // continues; else responses could occupy more memory than the limit
        // says. (Follow-ups of imports are not counted: they take over the
        // import's slot, or come from the bounded list of ranges to resume.)
        if planned {
            let planned_in_flight = self.in_flight.values().filter(|f| f.planned).count();
            assert!(planned_in_flight < self.config.in_flight_max + RETRY_FANOUT_MAX, "{planned_in_flight} planned requests in flight, over the limit");
        }
        self.outputs.push_back(Output::Send(peer, Message::Request { req, author, start, limit }));
    }

    /// The deadline of a request for `limit` seqs: `request_timeout_base_ms`
    /// plus the rest of `request_timeout_ms` in proportion to the seqs
    /// asked, so a whole range gets `request_timeout_ms`.
    fn timeout_for(&self, limit: u32) -> u64 {
        let full = self.config.request_timeout_ms;
        let base = self.config.request_timeout_base_ms.min(full);
        let n = u64::from(limit.min(self.config.range_limit));
        base.saturating_add((full - base).saturating_mul(n) / u64::from(self.config.range_limit))
    }

    /// How long a request to `peer` may go unanswered before it is hedged:
    /// `hedge_slowdown` times what the fastest measured other claimant
    /// would take for it (at least `hedge_min_ms`), or half its deadline if
    /// no other claimant is measured. `None`: not before its deadline (or a
    /// payload request, asked of claimants in turn instead).
    fn hedge_wait(&self, peer: PeerId, author: AgentId, seq: u64, limit: u32, purpose: Purpose) -> Option<u64> {
        if purpose == Purpose::Payload {
            return None;
        }
        let timeout = self.timeout_for(limit);
        let best = self.peers.iter().filter(|(q, s)| **q != peer && s.claims(&author, seq, purpose)).filter_map(|(_, s)| s.expected_ms(u64::from(limit))).min();
        let wait = match best {
            Some(ms) => ms.saturating_mul(u64::from(self.config.hedge_slowdown.max(1))).max(self.config.hedge_min_ms),
            None => timeout / 2,
        };
        (wait < timeout).then_some(wait)
    }

    /// A peer's measured rate changed: when each request not yet hedged is
    /// due to be.
    fn reschedule_hedges(&mut self) {
        let due: Vec<(u64, u64)> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.hedge_at_ms != u64::MAX)
            .map(|(r, f)| (*r, self.hedge_wait(f.peer, f.author, f.start.seq, f.limit, f.purpose).map_or(u64::MAX, |w| f.sent_ms.saturating_add(w))))
            .collect();
        for (req, at) in due {
            if let Some(f) = self.in_flight.get_mut(&req) {
                f.hedge_at_ms = at;
            }
        }
    }

    /// Ask the range of request `req`, slow to come, of the best other
    /// claimant too (same group: the first answer settles both). The slow
    /// peer is charged the time waited so far. At most `in_flight_max`
    /// hedges are in flight, and a group holds at most [`RETRY_FANOUT_MAX`]
    /// requests.
    fn hedge(&mut self, req: u64, now_ms: u64) {
        let Some(f) = self.in_flight.get_mut(&req) else { return };
        f.hedge_at_ms = u64::MAX;
        let waited = now_ms.saturating_sub(f.sent_ms);
        let charge = waited.saturating_sub(f.charged_ms);
        f.charged_ms = waited;
        let f = f.clone();
        if matches!(f.purpose, Purpose::Forward)
            && let Some(s) = self.peers.get_mut(&f.peer)
        {
            s.charge(0, charge);
        }
        let hedges = self.in_flight.values().filter(|g| g.hedge).count();
        let group: Vec<PeerId> = self.in_flight.values().filter(|g| g.group == f.group).map(|g| g.peer).collect();
        if hedges >= self.config.in_flight_max || group.len() >= RETRY_FANOUT_MAX {
            return;
        }
        // The fastest measured claimant; else the best ranked.
        let candidates: Vec<PeerId> = self
            .peers_in_rank_order()
            .into_iter()
            .filter(|q| !group.contains(q))
            .filter(|q| self.peers.get(q).is_some_and(|s| s.busy_until_ms <= now_ms && s.claims(&f.author, f.start.seq, f.purpose)))
            .collect();
        let fastest =
            candidates.iter().filter_map(|q| self.peers.get(q).and_then(|s| s.expected_ms(u64::from(f.limit))).map(|ms| (ms, *q))).min().map(|(_, q)| q);
        let Some(target) = fastest.or_else(|| candidates.first().copied()) else { return };
        self.stats.hedged += 1;
        let hedge_req = self.next_req;
        self.request(target, f.author, f.start, f.limit, f.purpose, f.group, false, now_ms);
        if let Some(h) = self.in_flight.get_mut(&hedge_req) {
            h.hedge = true;
        }
    }

    /// Ask peers for payloads of entries held without one: the seq of each,
    /// in rounds; a round asks every claimant (a peer that claims the author
    /// that far) once, those that answered fewest payload requests without
    /// the payload first, and the next one as soon as one has not brought it
    /// (answered without it, answered nothing, declined or timed out).
    fn plan_payloads(&mut self, now_ms: u64) {
        let due: Vec<EntryRef> = self.missing.iter().filter(|(_, m)| m.next_ms <= now_ms).map(|(e, _)| *e).take(64).collect();
        for e in due {
            if self.in_flight.len() + self.held.len() + self.imports.len() >= self.config.in_flight_max {
                self.starved = true;
                return;
            }
            let Some(m) = self.missing.get(&e) else { continue };
            if m.tries >= self.config.payload_tries_max {
                // Reported once; then asked again, slowly: a peer that holds
                // it may connect, or its claims come back, later.
                if !m.reported {
                    self.stats.payloads_unavailable += 1;
                    self.outputs.push_back(Output::PayloadUnavailable(e));
                }
                let slow = self.config.request_timeout_ms.saturating_mul(PAYLOAD_RETRY_SLOW_TIMEOUTS);
                self.missing.insert(e, Missing { next_ms: now_ms.saturating_add(slow), reported: true, ..Missing::default() });
                continue;
            }
            if let Some(deadline) =
                self.in_flight.values().filter(|f| f.author == e.author && f.start.seq == e.seq && f.purpose == Purpose::Payload).map(|f| f.deadline_ms).min()
            {
                // Asked already (its answer or its deadline makes it due again).
                if let Some(state) = self.missing.get_mut(&e) {
                    state.next_ms = deadline.max(now_ms.saturating_add(1));
                }
                continue;
            }
            let mut claimants: Vec<PeerId> = self
                .peers_in_rank_order()
                .into_iter()
                .filter(|p| !m.asked.contains(p) && self.peers.get(p).and_then(|s| s.frontier.get(&e.author)).is_some_and(|t| max_seq(t) >= e.seq))
                .collect();
            // Stable: rank order among peers that stripped as often.
            claimants.sort_by_key(|p| self.peers.get(p).map_or(u32::MAX, |s| s.stripped));
            let ready = claimants.iter().copied().find(|p| self.peers.get(p).is_some_and(|s| s.busy_until_ms <= now_ms));
            let busy_until = claimants.iter().filter_map(|p| self.peers.get(p)).map(|s| s.busy_until_ms).min();
            let deadline_ms = now_ms.saturating_add(self.timeout_for(1));
            let round_gap_ms = self.config.request_timeout_base_ms.min(self.config.request_timeout_ms);
            let Some(state) = self.missing.get_mut(&e) else { continue };
            match (ready, busy_until) {
                (Some(peer), _) => {
                    state.asked.push(peer);
                    // Due again at its deadline if not answered before.
                    state.next_ms = deadline_ms;
                    let group = self.new_group();
                    self.request(peer, e.author, RangeStart::at(e.seq), 1, Purpose::Payload, group, true, now_ms);
                }
                // Every claimant left declined a moment ago: asked once it may be.
                (None, Some(until)) => state.next_ms = until.max(now_ms.saturating_add(1)),
                // Every claimant asked (or none): the round ends without it.
                (None, None) => {
                    state.tries += 1;
                    state.asked.clear();
                    state.next_ms = now_ms.saturating_add(round_gap_ms.max(1));
                }
            }
        }
    }

    /// A payload request for `author`'s `seq` ended without the payload
    /// (answered without it or with nothing, declined, timed out): the
    /// entry is due again at once, for the next claimant of its round.
    fn payload_request_ended(&mut self, author: AgentId, seq: u64, now_ms: u64) {
        // Every branch's entry at that seq (a fork's entries share it).
        for (_, m) in self.missing.range_mut(EntryRef { author, seq, id: EntryId::default() }..).take_while(|(e, _)| e.author == author && e.seq == seq) {
            m.next_ms = m.next_ms.min(now_ms);
        }
    }

    // ---------------------------------------------------------------------
    // Responses.

    /// The checks of a response that depend on what was asked: the author,
    /// the range and (seq, id) order. Links are the store's to check (once).
    fn check_response(&self, asked: &InFlight, out: Vec<VerifiedEntry>) -> Result<Vec<VerifiedEntry>, CheckError> {
        if out.len() > RESPONSE_ENTRIES_MAX {
            return Err(CheckError::TooMany { count: out.len(), max: RESPONSE_ENTRIES_MAX });
        }
        let end = asked.start.seq.saturating_add(u64::from(asked.limit));
        for (index, e) in out.iter().enumerate() {
            let h = e.header();
            if h.author != asked.author {
                return Err(CheckError::WrongAuthor { index, author: h.author });
            }
            let before_start = (h.seq, Some(e.id())) <= (asked.start.seq, asked.start.after) && asked.start.after.is_some();
            if h.seq < asked.start.seq || h.seq >= end || before_start {
                return Err(CheckError::OutOfRange { index, seq: h.seq });
            }
            if index > 0 && (out[index - 1].header().seq, out[index - 1].id()) >= (h.seq, e.id()) {
                return Err(CheckError::Order { index });
            }
        }
        Ok(out)
    }

    fn on_response(&mut self, peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, CheckError>, more: bool, now_ms: u64) {
        let Some(asked) = self.in_flight.get(&req).cloned() else {
            return; // late or unsolicited: ignore
        };
        if asked.peer != peer {
            return self.ban(peer, CheckError::NotAsked { req }.to_string(), now_ms);
        }
        let verified = match checked.and_then(|entries| self.check_response(&asked, entries)) {
            Ok(verified) => verified,
            Err(reason) => return self.ban(peer, format!("response to request {req}: {reason}"), now_ms),
        };
        self.in_flight.remove(&req);
        self.stats.entries_verified += verified.len() as u64;
        let author = asked.author;
        // The peer's record: entries new to us per millisecond it took (a
        // forward range's; other requests are asked of whoever claims them).
        let claimed = self.peers.get(&peer).and_then(|s| s.frontier.get(&author)).map_or(0, |t| max_seq(t));
        if asked.purpose == Purpose::Forward {
            let ours = self.local.get(&author).map_or(0, Tips::max_seq).max(self.importing.get(&author).copied().unwrap_or(0));
            // An entry sent without its payload is not useful yet: it costs
            // a payload request of its own (a stripper ranks below a peer
            // that sends whole entries, however fast it answers).
            let useful = verified.iter().filter(|e| e.header().seq > ours && e.payload().is_some()).count() as u64;
            let took = now_ms.saturating_sub(asked.sent_ms).saturating_sub(asked.charged_ms);
            if let Some(s) = self.peers.get_mut(&peer) {
                s.charge(useful, took);
            }
            self.reschedule_hedges();
        }
        let Some(last) = verified.last().map(|e| (e.header().seq, e.id())) else {
            // Nothing from where it claimed to have more: its claim is
            // dropped and it is struck, so it is asked last from now on. The
            // other peers asked for the range at once (a fan-out) may still
            // answer; if none do, the range is asked again as planned.
            self.strike(peer);
            if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                tips.retain(|h| h.seq < asked.start.seq);
            }
            if let Purpose::Branch(tip) = asked.purpose {
                self.sought.remove(&tip);
            }
            if asked.purpose == Purpose::Payload {
                self.payload_request_ended(author, asked.start.seq, now_ms);
            }
            if !self.in_flight.values().any(|f| f.group == asked.group) {
                self.mark_retried(author, asked.start);
            }
            return self.plan_all(now_ms);
        };
        let end = asked.start.seq.saturating_add(u64::from(asked.limit));
        // Short: fewer entries than asked and than the peer claims, and not
        // cut (`more`). It under-delivers: its claim is cut to what it sent
        // (it proved it holds that), the range's rest is planned again for
        // every claimant, and from the second short answer in a row on,
        // each is a strike. Other requests of its group stay in flight
        // (they may bring the whole range).
        let short = asked.purpose == Purpose::Forward && !more && last.0.saturating_add(1) < end && claimed > last.0;
        if short {
            self.stats.short_answers += 1;
            let struck = self.peers.get_mut(&peer).is_some_and(|s| {
                s.shorts = s.shorts.saturating_add(1);
                s.shorts >= 2
            });
            if struck {
                self.strike(peer);
            }
            if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                tips.retain(|h| h.seq <= last.0);
                if tips.is_empty() {
                    tips.push(Head { author, seq: last.0, id: last.1 });
                }
            }
            self.behind.insert(author);
        } else {
            // The first answer of a group settles it: the others are not waited for.
            self.in_flight.retain(|_, f| f.group != asked.group);
            if let Some(s) = self.peers.get_mut(&peer) {
                s.shorts = 0;
            }
        }
        self.retried.remove(&(author, asked.start.seq));
        if let Some(state) = self.peers.get_mut(&peer) {
            state.note_holds(last.1);
        }
        if asked.purpose == Purpose::Payload {
            // A peer that claims the entry but sends it without its payload
            // is stripping: it ranks lower.
            let awaited = |e: &VerifiedEntry| self.missing.contains_key(&e.entry_ref());
            let stripped: Vec<EntryRef> = verified.iter().filter(|e| e.payload().is_none() && awaited(e)).map(|e| e.entry_ref()).collect();
            let refetched = verified.iter().filter(|e| e.payload().is_some() && awaited(e)).count();
            self.stats.payloads_refetched += refetched as u64;
            if !stripped.is_empty() {
                self.strike(peer);
                if let Some(s) = self.peers.get_mut(&peer) {
                    s.stripped = s.stripped.saturating_add(1);
                }
            }
            // Asked of the next claimant of its round at once, not after a
            // timeout: an answer without the payload is as final as an
            // answer. (Stripped, or not sent at all.)
            let brought = verified.iter().any(|e| e.header().seq == asked.start.seq && e.payload().is_some());
            if !brought {
                self.payload_request_ended(author, asked.start.seq, now_ms);
            }
        }
        let mut rest_purpose = asked.purpose.rest();
        if let Purpose::Branch(tip) = asked.purpose
            && !verified.iter().any(|e| e.id() == tip)
        {
            if more {
                // The tip may be further on in its seq: the rest is for it too.
                rest_purpose = asked.purpose;
            } else {
                // The whole seq came without the tip it claimed: the claim is
                // dropped, and the tip may be asked of another claimant.
                self.sought.remove(&tip);
                if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                    tips.retain(|h| h.id != tip);
                }
            }
        }
        if more {
            // Cut short: ask for the rest of the range, after the last entry
            // received (before this response is released, so it is imported
            // after it). The rest of a forward range goes to the best ranked
            // claimant, which is this peer unless a better one claims the
            // author beyond the last entry: a peer cutting every answer to
            // one entry is not asked for the rest again and again.
            let mut target = peer;
            if asked.purpose == Purpose::Forward && self.better_claimant(peer, &author, last.0.saturating_add(1), Purpose::Forward) {
                let next = last.0.saturating_add(1);
                let clock = self.clock_ms;
                if let Some(q) = self
                    .peers_in_rank_order()
                    .into_iter()
                    .find(|q| self.peers.get(q).is_some_and(|s| s.busy_until_ms <= clock && s.claims(&author, next, Purpose::Forward)))
                {
                    target = q;
                }
            }
            let rest = u32::try_from(end - last.0).unwrap_or(u32::MAX);
            let group = self.new_group();
            self.request(target, author, RangeStart { seq: last.0, after: Some(last.1) }, rest, rest_purpose, group, asked.planned, now_ms);
        }
        // What the held response covers: the range asked, or only up to its
        // last entry when the rest is planned anew.
        let held_limit = if short { u32::try_from(last.0 - asked.start.seq + 1).unwrap_or(asked.limit).min(asked.limit) } else { asked.limit };
        let admitted: Vec<VerifiedEntry> = verified.into_iter().filter(|e| self.admits(&author, e.header().seq)).collect();
        if !admitted.is_empty() {
            if asked.purpose == Purpose::Forward {
                let deadline_ms = now_ms.saturating_add(self.config.request_timeout_ms.saturating_mul(2));
                // A range asked again after its first part failed to import
                // may be cut at the same entry again: the newer answer to
                // that rest replaces the one still held.
                self.held.insert((author, asked.start), Held { peer, limit: held_limit, entries: admitted, deadline_ms });
                self.release_held(author);
            } else {
                self.import(peer, admitted, None);
            }
        }
        // Else a second answer would be accepted and the slot never come free.
        assert!(!self.in_flight.contains_key(&req), "request {req} still in flight after its answer");
        // A slot came free: this author first, then any other that waited
        // for one. The rest of a short range is planned for every claimant,
        // best first.
        if short {
            for p in self.peers_in_rank_order() {
                self.plan_author(p, author, now_ms);
            }
        } else {
            self.plan_author(peer, author, now_ms);
        }
        if self.starved {
            self.plan_all(now_ms);
        }
    }

    /// Hand the held responses of `author` that now continue what the store
    /// holds (or is importing) to the store, strictly in order: only the
    /// earliest held one, only when nothing earlier is still in flight.
    fn release_held(&mut self, author: AgentId) {
        loop {
            let Some((&key, _)) = self.held.range((author, RangeStart::at(0))..).next().filter(|((a, _), _)| *a == author) else { return };
            let our_max = self.local.get(&author).map_or(0, Tips::max_seq);
            let stored_or_importing = our_max.max(self.importing.get(&author).copied().unwrap_or(0));
            if key.1.seq > stored_or_importing.saturating_add(1) {
                return;
            }
            let earlier_in_flight = self.in_flight.values().any(|f| f.author == author && f.purpose == Purpose::Forward && f.start < key.1);
            if earlier_in_flight {
                return;
            }
            let Some(held) = self.held.remove(&key) else { return };
            // Held responses are keyed by where they start; else the order
            // they are released in would not be the chain's.
            assert!(held.entries.first().is_some_and(|e| e.header().seq >= key.1.seq), "a held response of {author} starts before its key");
            self.import(held.peer, held.entries, None);
        }
    }

    /// Ask again for the lowest range of `author` whose import failed to
    /// link, now that more of the author's entries are stored.
    fn resume(&mut self, author: AgentId, now_ms: u64) {
        let Some(i) = self.resume.iter().enumerate().filter(|(_, r)| r.1 == author).min_by_key(|(_, r)| r.2).map(|(i, _)| i) else {
            return;
        };
        let Some((peer, author, from_seq)) = self.resume.remove(i) else { return };
        // Only a request from the very start covers it: the rest of a cut
        // response (same seq, after some entry) misses what came before.
        if self.peers.contains_key(&peer) && !self.in_flight.values().any(|f| f.author == author && f.start == RangeStart::at(from_seq)) {
            let group = self.new_group();
            self.request(peer, author, RangeStart::at(from_seq), self.config.range_limit, Purpose::Backfill, group, false, now_ms);
        }
    }

    /// Hand entries to the store. `gossiped`: the head of a gossiped entry
    /// (then the only one), relayed rather than served by `from`.
    fn import(&mut self, from: PeerId, entries: Vec<VerifiedEntry>, gossiped: Option<Head>) {
        let Some(first) = entries.first() else { return };
        let author = first.header().author;
        // One author's chain in (seq, id) order, as every response was
        // checked to be; else the store would get a chain out of order, and
        // `importing` and a failed import's `lost` would track the wrong chain.
        assert!(
            entries.windows(2).all(|w| w[1].header().author == author && (w[0].header().seq, w[0].id()) < (w[1].header().seq, w[1].id())),
            "an import of {author} out of (seq, id) order or of two authors"
        );
        if let Some(last) = entries.last() {
            // Not asked for again while the store takes them (the store's new
            // tips arrive through `set_local_heads`, maybe after the result).
            let importing = self.importing.entry(author).or_insert(0);
            *importing = (*importing).max(last.header().seq);
        }
        let id = self.next_import;
        self.next_import += 1;
        let reused = self.imports.insert(id, Importing { from, author, first_seq: first.header().seq, gossiped });
        // Else one report would settle two imports, and the other's slot never come free.
        assert!(reused.is_none(), "import id {id} used twice");
        self.outputs.push_back(Output::Import { id, from, entries });
    }

    /// What the store made of import `id`: every [`Output::Import`] is
    /// reported here exactly once; until then it holds a request slot.
    pub fn import_result(&mut self, id: u64, outcome: ImportOutcome, now_ms: u64) {
        let imp = self.imports.remove(&id);
        // Else a slot would be freed twice, or never: the driver broke the exactly-once rule.
        assert!(imp.is_some(), "import {id} reported twice or never handed out");
        let Some(Importing { from, author, first_seq, gossiped }) = imp else { return };
        match outcome {
            // The new tips arrive through `set_local_heads`, which plans the
            // author; the slot that came free matters only to what waited.
            ImportOutcome::Stored => {
                if self.starved {
                    self.plan_all(now_ms);
                }
                return;
            }
            ImportOutcome::PredecessorMissing { seq } => self.predecessor_missing(from, author, seq, gossiped, now_ms),
            ImportOutcome::Invalid { reason } => {
                if gossiped.is_some() {
                    // A relay checked the signature, not the link: the
                    // author is at fault, not the relay.
                } else if self.peers.contains_key(&from) {
                    self.ban(from, reason, now_ms);
                }
                self.lost(author, first_seq);
            }
            ImportOutcome::Deferred { seq, until_ms } => {
                self.stats.deferred += 1;
                self.deferred.insert(author, until_ms);
                self.lost(author, seq);
            }
            ImportOutcome::Lost => self.lost(author, first_seq),
        }
        self.plan_all(now_ms);
    }

    /// Entries of `author` from `first_seq` were not stored: those, and
    /// anything imported after them, count as not asked for.
    fn lost(&mut self, author: AgentId, first_seq: u64) {
        if self.importing.get(&author).is_some_and(|&s| first_seq <= s) {
            self.importing.remove(&author);
        }
    }

    /// The store refused an import from `from` because the entry at
    /// `missing_seq` links to something it does not hold: the sender's branch
    /// diverges from ours further back (or, for gossip, we are behind). Ask
    /// for the range before it; entries already held are skipped by the
    /// store. A peer whose chain cannot be linked even from seq 1 sent
    /// entries that cannot be valid: banned. A gossiped entry (`gossiped`,
    /// its head) of a diverging branch is claimed for its relay and asked
    /// for as planned.
    fn predecessor_missing(&mut self, from: PeerId, author: AgentId, missing_seq: u64, gossiped: Option<Head>, now_ms: u64) {
        if !self.peers.contains_key(&from) {
            return;
        }
        if missing_seq <= 1 {
            return self.ban(from, format!("entries of {author} do not link to any chain start"), now_ms);
        }
        let our_max = self.local.get(&author).map_or(0, Tips::max_seq);
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
        if let Some(head) = gossiped {
            // Gossip takes no request slot, so asking for the range at once
            // would let a burst of an author's branch entries put any number
            // of requests in flight: the relay holds the entry, so its head
            // becomes one of the relay's claims, probed within the limits
            // (whose answer, a response, asks for the range below).
            let cap = self.config.heads_per_author_max;
            let member = self.is_member(&author);
            if let Some(state) = self.peers.get_mut(&from).filter(|_| member) {
                merge_head(&mut state.frontier, head, true);
                self.behind.insert(author);
                if let Some(tips) = state.frontier.get_mut(&author) {
                    cap_tips(tips, cap);
                }
            }
            self.prune_behind_if_large();
            return self.plan_author(from, author, now_ms);
        }
        if !self.resume.iter().any(|r| r.1 == author && r.2 == missing_seq) {
            if self.resume.len() >= RESUME_MAX {
                self.resume.pop_front();
            }
            self.resume.push_back((from, author, missing_seq));
            // Else imports that fail to link could grow the list without bound.
            assert!(self.resume.len() <= RESUME_MAX, "{} ranges to resume", self.resume.len());
        }
        let from_seq = missing_seq.saturating_sub(u64::from(self.config.range_limit)).max(1);
        let limit = u32::try_from(missing_seq - from_seq).unwrap_or(self.config.range_limit);
        if !self.in_flight.values().any(|f| f.author == author && f.start == RangeStart::at(from_seq)) {
            let group = self.new_group();
            self.request(from, author, RangeStart::at(from_seq), limit, Purpose::Backfill, group, false, now_ms);
        }
    }

    // ---------------------------------------------------------------------
    // Gossip.

    /// A gossip message arrived, relayed by `peer` (the propagation source).
    /// A valid entry is offered to the store at once (the store checks its
    /// link; if its predecessor is missing, the range is asked of `peer`).
    /// The verdict tells the gossip layer whether to forward it. Gossip is
    /// charged to the entry's author, never to the relay.
    pub fn gossip(&mut self, peer: PeerId, message: Gossip, now_ms: u64) -> GossipVerdict {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return GossipVerdict::Ignore;
        }
        let checked = match message {
            Gossip::Entry(w) => self.gossip_entry(peer, w, now_ms),
            Gossip::Announce(bytes) => self.gossip_announce(peer, &bytes, now_ms),
            Gossip::ForkProof(bytes) => match ForkProof::decode(&bytes) {
                Ok(proof) => {
                    if !self.admits(&proof.author(), proof.seq()) {
                        self.refuse(peer, proof.author(), "fork proof");
                        return GossipVerdict::Ignore;
                    }
                    // Fetch both branches; the store proves the fork itself.
                    let (a, b) = proof.entries();
                    let heads: Vec<Head> = [a, b].iter().map(|e| Head { author: e.header().author, seq: e.header().seq, id: e.id() }).collect();
                    self.learn_heads(peer, &heads, now_ms);
                    Ok(GossipVerdict::Accept)
                }
                Err(e) => Err(CheckError::ForkProof(e)),
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

    fn gossip_entry(&mut self, peer: PeerId, w: WireEntry, now_ms: u64) -> Result<GossipVerdict, CheckError> {
        let e = SignedEntry::decode(&w.entry).map_err(|error| CheckError::Entry { index: 0, error })?;
        let h = e.header().clone();
        if !self.admits(&h.author, h.seq) {
            self.refuse(peer, h.author, "gossiped entry");
            return Ok(GossipVerdict::Ignore);
        }
        let head = Head { author: h.author, seq: h.seq, id: e.id() };
        if !self.gossip_is_new(&head) {
            return Ok(self.gossip_not_new(peer, head, now_ms));
        }
        if !self.admit_author(h.author, now_ms) {
            return Ok(GossipVerdict::Ignore);
        }
        let mut checked = check_signed_entries(vec![(e, w.payload)])?;
        let Some(entry) = checked.pop() else { return Ok(GossipVerdict::Ignore) };
        self.stats.entries_verified += 1;
        let cap = self.config.heads_per_author_max;
        if let Some(state) = self.peers.get_mut(&peer) {
            merge_head(&mut state.frontier, head, false);
            self.behind.insert(head.author);
            // A forked author's tips grow with every higher entry relayed.
            if let Some(tips) = state.frontier.get_mut(&head.author) {
                cap_tips(tips, cap);
            }
            state.note_holds(head.id);
        }
        self.prune_behind_if_large();
        self.gossiped.insert(head.author, head.seq);
        self.import(peer, vec![entry], Some(head));
        Ok(GossipVerdict::Accept)
    }

    /// Is gossip of `head` a new tip: above the highest seq of its author
    /// held, handed to the store, or accepted from gossip before? Needs no
    /// store read. Anything else (a replay of an entry held, its stripped or
    /// announced variant, an entry of another branch below our tip) is
    /// dropped before its author is charged or its signature checked.
    fn gossip_is_new(&self, head: &Head) -> bool {
        let held = self.local.get(&head.author).map_or(0, Tips::max_seq);
        let importing = self.importing.get(&head.author).copied().unwrap_or(0);
        let gossiped = self.gossiped.get(&head.author).copied().unwrap_or(0);
        head.seq > held.max(importing).max(gossiped)
    }

    /// Gossip that is no new tip: `Ignore` (not forwarded), charged to the
    /// relay's own message budget instead of the author's, unverified. It is
    /// taken as the relay's claim of that head, as a frontier would be: a
    /// head below our tip that is not one we hold (another branch) is probed
    /// within the request limits, once per `sought` mark.
    fn gossip_not_new(&mut self, peer: PeerId, head: Head, now_ms: u64) -> GossipVerdict {
        self.stats.gossip_not_new += 1;
        if !self.admit_message(peer, now_ms) {
            return GossipVerdict::Ignore;
        }
        let ours = self.local.get(&head.author);
        let branch = head.seq <= ours.map_or(0, Tips::max_seq) && !self.known_held(&head.author, ours, &head);
        let cap = self.config.heads_per_author_max;
        if let Some(state) = self.peers.get_mut(&peer) {
            state.note_holds(head.id);
            merge_head(&mut state.frontier, head, branch);
            if let Some(tips) = state.frontier.get_mut(&head.author) {
                cap_tips(tips, cap);
            }
            self.behind.insert(head.author);
        }
        self.prune_behind_if_large();
        self.plan_author(peer, head.author, now_ms);
        GossipVerdict::Ignore
    }

    fn gossip_announce(&mut self, peer: PeerId, bytes: &[u8], now_ms: u64) -> Result<GossipVerdict, CheckError> {
        let e = SignedEntry::decode(bytes).map_err(|error| CheckError::Entry { index: 0, error })?;
        let head = Head { author: e.header().author, seq: e.header().seq, id: e.id() };
        if !self.admits(&head.author, head.seq) {
            self.refuse(peer, head.author, "announced entry");
            return Ok(GossipVerdict::Ignore);
        }
        if !self.gossip_is_new(&head) {
            return Ok(self.gossip_not_new(peer, head, now_ms));
        }
        if !self.admit_author(head.author, now_ms) {
            return Ok(GossipVerdict::Ignore);
        }
        // Signed by its author, so the head is real (not that `peer` holds it).
        check_signed_entries(vec![(e, None)])?;
        self.stats.entries_verified += 1;
        self.gossiped.insert(head.author, head.seq);
        self.learn_heads(peer, &[head], now_ms);
        Ok(GossipVerdict::Accept)
    }

    /// `peer` holds these heads: remember them and plan requests.
    fn learn_heads(&mut self, peer: PeerId, heads: &[Head], now_ms: u64) {
        let fork = heads.len() > 1;
        let cap = self.config.heads_per_author_max;
        if let Some(state) = self.peers.get_mut(&peer) {
            for h in heads {
                merge_head(&mut state.frontier, *h, fork);
                self.behind.insert(h.author);
                if let Some(tips) = state.frontier.get_mut(&h.author) {
                    cap_tips(tips, cap);
                }
            }
        }
        self.prune_behind_if_large();
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

    // ---------------------------------------------------------------------
    // Time.

    /// Time passed: requests slower than their claimants' rates allow are
    /// hedged (asked of another claimant too); requests past their deadline
    /// are struck against the peer they were sent to (its claim of the range
    /// dropped) and asked again of every other peer that claims the range;
    /// expired bans are lifted.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        self.clock_ms = self.clock_ms.max(now_ms);
        let slow: Vec<u64> = self.in_flight.iter().filter(|(_, f)| f.hedge_at_ms <= now_ms && f.deadline_ms > now_ms).map(|(r, _)| *r).collect();
        for req in slow {
            self.hedge(req, now_ms);
        }
        let expired: Vec<(u64, InFlight)> = self.in_flight.iter().filter(|(_, f)| f.deadline_ms <= now_ms).map(|(r, f)| (*r, f.clone())).collect();
        for (req, f) in expired {
            self.in_flight.remove(&req);
            if f.purpose == Purpose::Forward
                && let Some(s) = self.peers.get_mut(&f.peer)
            {
                s.charge(0, now_ms.saturating_sub(f.sent_ms).saturating_sub(f.charged_ms));
            }
            if let Purpose::Branch(tip) = f.purpose {
                // Unanswered: the branch may be fetched again.
                self.sought.remove(&tip);
            }
            if self.peers.contains_key(&f.peer) {
                self.strike(f.peer);
                if let Some(tips) = self.peers.get_mut(&f.peer).and_then(|s| s.frontier.get_mut(&f.author)) {
                    tips.retain(|h| h.seq < f.start.seq);
                }
            }
            if f.purpose == Purpose::Payload {
                self.payload_request_ended(f.author, f.start.seq, now_ms);
            }
            let group_alive = self.in_flight.values().any(|g| g.group == f.group);
            if !group_alive && f.purpose != Purpose::Payload {
                self.mark_retried(f.author, f.start);
            }
        }
        // Held responses whose earlier ranges never came: dropped, asked for
        // again as planned (their slots are needed for the earlier ranges).
        self.held.retain(|_, h| h.deadline_ms > now_ms);
        self.banned.retain(|_, until| *until > now_ms);
        self.deferred.retain(|_, until| *until > now_ms);
        if now_ms >= self.last_announce_ms.saturating_add(ANNOUNCE_INTERVAL_MS) {
            self.flush_announcements(now_ms);
        }
        self.refresh_frontiers(now_ms);
        self.plan_all(now_ms);
    }

    /// When the driver should call [`Replicator::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<u64> {
        let requests = self.in_flight.values().map(|f| f.deadline_ms.min(f.hedge_at_ms)).min();
        let held = self.held.values().map(|h| h.deadline_ms).min();
        let bans = self.banned.values().copied().min();
        let deferred = self.deferred.values().copied().min();
        let payloads = self.missing.values().map(|m| m.next_ms).min();
        let busy = self.peers.values().map(|s| s.busy_until_ms).filter(|t| *t > self.clock_ms).min();
        let announce = (!self.pending_announce.is_empty()).then(|| self.last_announce_ms.saturating_add(ANNOUNCE_INTERVAL_MS));
        let refresh = self.peers.values().map(|s| s.refresh_at_ms).filter(|t| *t != u64::MAX).min();
        [requests, held, bans, deferred, payloads, busy, announce, refresh].into_iter().flatten().min()
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

    /// Imports handed out and not yet reported (for status displays).
    pub fn pending_imports(&self) -> usize {
        self.imports.len()
    }

    /// Entries whose payload is being asked of peers.
    pub fn payloads_sought(&self) -> usize {
        self.missing.len()
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
pub fn check_entries(entries: Vec<WireEntry>) -> Result<Vec<VerifiedEntry>, CheckError> {
    if entries.len() > RESPONSE_ENTRIES_MAX {
        return Err(CheckError::TooMany { count: entries.len(), max: RESPONSE_ENTRIES_MAX });
    }
    let mut decoded = Vec::with_capacity(entries.len());
    for (index, w) in entries.into_iter().enumerate() {
        let e = SignedEntry::decode(&w.entry).map_err(|error| CheckError::Entry { index, error })?;
        decoded.push((e, w.payload));
    }
    Ok(check_signed_entries(decoded)?)
}
