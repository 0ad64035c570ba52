//! What the replicator tells its driver: outputs to execute, verdicts on gossip,
//! outcomes of imports, check errors, counters and lag.

use crate::wire::{Gossip, Message, RangeStart};
use agora_core::verify::{CheckedEntry, VerifyError};
use agora_core::{AgentId, DecodeError, EntryRef, ForkProofError};
use serde::Serialize;
use std::collections::BTreeMap;

/// A verified entry: its signature checked and its payload, when the sender
/// had it, checked against the header (the proof is in the type).
pub type VerifiedEntry = CheckedEntry;

/// A peer, as the driver names it (a libp2p peer id, or a simulator index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u64);

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
    /// is overloaded): tell it so at once, so it asks again later: `Wait`
    /// with `wait_ms` when known, else `Busy`.
    Decline {
        /// Who asked.
        peer: PeerId,
        /// Their request id.
        req: u64,
        /// Over its rate: milliseconds until its rate budget holds
        /// `in_flight_per_peer` requests (at most its burst). `None`:
        /// overloaded, or a budget that never refills.
        wait_ms: Option<u32>,
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
