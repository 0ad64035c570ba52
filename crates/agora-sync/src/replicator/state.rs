//! The state the replicator keeps per request, per held response, per
//! missing payload and per peer: declared here, below the [`Replicator`]
//! that holds it (`mod.rs`) and the files of its concerns, which add the
//! behaviour (`planning.rs`, `imports.rs`, `payloads.rs`, `peers.rs`) and
//! know both, while neither knows them.
//!
//! [`Replicator`]: super::Replicator

use super::outputs::{PeerId, VerifiedEntry};
use crate::limiter::TokenBucket;
use crate::wire::{Head, RangeStart};
use agora_core::{AgentId, EntryId};
use std::collections::{BTreeMap, VecDeque};

/// A range asked of a peer and not yet answered.
#[derive(Clone, Debug)]
pub(super) struct InFlight {
    pub(super) peer: PeerId,
    pub(super) author: AgentId,
    pub(super) start: RangeStart,
    /// Most seqs asked for.
    pub(super) limit: u32,
    pub(super) purpose: Purpose,
    /// When it was sent.
    pub(super) sent_ms: u64,
    pub(super) deadline_ms: u64,
    /// Time of it already charged to the peer's record (when it was hedged).
    pub(super) charged_ms: u64,
    /// When it is asked of another claimant too, if still unanswered
    /// (`u64::MAX`: never; see [`Config::hedge_min_ms`](super::Config::hedge_min_ms)).
    pub(super) hedge_at_ms: u64,
    /// A hedge (asked because another claimant was slow): counted against
    /// `in_flight_max` separately.
    pub(super) hedge: bool,
    /// Requests for the same range sent to several peers at once (a retry
    /// after a timeout) share a group; the first answer settles all.
    pub(super) group: u64,
    /// Sent by planning, within the in-flight limits (the rest of a cut
    /// response inherits it from the request it continues). `false`: a
    /// follow-up of an import (a backfill, a resumed range), which the
    /// limits do not hold back.
    pub(super) planned: bool,
}

/// Why a range was asked for, which decides how its response is imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
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

/// A verified response waiting for the responses to earlier ranges of the
/// same author (requests are pipelined; the store takes a chain in order).
#[derive(Debug)]
pub(super) struct Held {
    pub(super) peer: PeerId,
    pub(super) limit: u32,
    pub(super) entries: Vec<VerifiedEntry>,
    /// Dropped (and asked for again when planned) if the ranges before it
    /// have not been handed to the store by then.
    pub(super) deadline_ms: u64,
}

/// An import handed to the driver and not yet reported.
#[derive(Debug)]
pub(super) struct Importing {
    pub(super) from: PeerId,
    pub(super) author: AgentId,
    pub(super) first_seq: u64,
    /// For a gossiped entry (relayed by `from`, not served by it): its head.
    pub(super) gossiped: Option<Head>,
}

/// An entry held without its payload, being asked of peers.
#[derive(Debug, Clone, Default)]
pub(super) struct Missing {
    /// Rounds that ended without the payload (every claimant asked once).
    pub(super) tries: u32,
    /// Not asked again before this.
    pub(super) next_ms: u64,
    /// Reported unavailable (after `payload_tries_max` rounds): still asked,
    /// slowly, and the first to make room for a new missing payload.
    pub(super) reported: bool,
    /// Claimants asked in the current round (at most the peers connected):
    /// not asked again before the round ends.
    pub(super) asked: Vec<PeerId>,
    /// Claimants that declined once in the current round (`Busy`, `Wait`):
    /// asked again once they may be, and a second decline counts as their
    /// answer, so a peer that declines every time cannot hold a round open
    /// (a round costs at most two requests a claimant).
    pub(super) declined: Vec<PeerId>,
}

/// A peer's record: its claims, its score and strikes, its budgets.
#[derive(Debug)]
pub(super) struct PeerState {
    /// The peer's tips, by author (admitted authors; at most
    /// `heads_per_author_max` each).
    pub(super) frontier: BTreeMap<AgentId, Vec<Head>>,
    /// How many heads of authors outside the roster `frontier` holds (kept
    /// in case they are admitted): at most `non_member_heads_per_peer`.
    /// Claims dropped since (empty answers, timeouts) may still count.
    pub(super) non_member_heads: usize,
    /// Budget for its own unsolicited messages.
    pub(super) bucket: TokenBucket,
    /// Messages dropped for being over budget in the current one-second window.
    pub(super) dropped_in_window: u32,
    /// Start of that window.
    pub(super) window_start_ms: u64,
    /// Ids of the last entries this peer sent us (the last of each response,
    /// each gossiped entry), most recent last: it holds them, so our heads
    /// among them are not announced back to it.
    pub(super) holds: VecDeque<EntryId>,
    /// Requests it let time out, empty answers to its own claims, repeated
    /// short answers, payloads it claimed and did not send: each divides
    /// its score.
    pub(super) strikes: u32,
    /// Entries new to us it delivered in answers to forward ranges.
    pub(super) useful: u64,
    /// Milliseconds its forward requests took (answered, cut short by a
    /// hedge, or timed out). `useful / spent_ms` is its measured rate; both
    /// are halved once this passes [`RATE_WINDOW_MS`](super::RATE_WINDOW_MS).
    pub(super) spent_ms: u64,
    /// Short answers in a row (fewer entries than asked and than it
    /// claims, not `more`): from the second on, each is a strike.
    pub(super) shorts: u32,
    /// Answers to payload requests that came without the payload: a missing
    /// payload is asked of peers that sent fewer of these first.
    pub(super) stripped: u32,
    /// It answered `Busy` or `Wait`: not asked again before this.
    pub(super) busy_until_ms: u64,
    /// When it is sent our whole frontier again ([`Config::frontier_refresh_ms`](super::Config::frontier_refresh_ms)).
    pub(super) refresh_at_ms: u64,
}
