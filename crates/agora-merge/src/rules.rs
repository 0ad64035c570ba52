//! The rules of merge events, and what became of each one.
//!
//! One error type serves both directions: a locally written event that breaks
//! a rule is refused with it ([`crate::Merge::check`]); the same event arriving
//! from a peer is kept and reported with it as [`MergeStatus::Invalid`] (or,
//! for an accept that reaches past a fork, [`MergeStatus::Clipped`]).

use crate::payload::MergeDecodeError;
use agora_core::{AgentId, EntryId};

/// A rule a merge event breaks. Each names what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeRuleError {
    /// The payload has the merge magic but does not decode.
    #[error("{0}")]
    Decode(MergeDecodeError),
    /// An accept of the signer's own chain (an author's chain is its own word already).
    #[error("an agent cannot accept its own chain ({0})")]
    SelfAccept(AgentId),
    /// An accept with `up_to_seq` 0.
    #[error("an accept must name a seq of at least 1")]
    ZeroSeq,
    /// Locally: a referenced entry is not known here (from a peer this is
    /// [`MergeStatus::Pending`] instead).
    #[error("{what} {id} is not known here")]
    UnknownEntry {
        /// Which reference ("accept head", "dispute target", ...).
        what: &'static str,
        /// The id.
        id: EntryId,
    },
    /// Locally: an accept beyond the chain's known head (from a peer: pending).
    #[error("accept of {author} up to seq {up_to_seq} goes beyond its known head (seq {head_seq})")]
    BeyondHead {
        /// The chain.
        author: AgentId,
        /// The seq named.
        up_to_seq: u64,
        /// The chain's head as viewed here (0 when empty).
        head_seq: u64,
    },
    /// The accept's head is not the named author's entry at the named seq.
    #[error("accept head {head} is entry seq {found_seq} of {found_author}, not seq {up_to_seq} of {author}")]
    HeadMismatch {
        /// The head named.
        head: EntryId,
        /// The author named.
        author: AgentId,
        /// The seq named.
        up_to_seq: u64,
        /// The head's real author.
        found_author: AgentId,
        /// The head's real seq.
        found_seq: u64,
    },
    /// The accept reaches past the point where the chain is frozen (forked and
    /// unresolved): it would pick a branch for the author.
    #[error("accept of {author} up to seq {up_to_seq} crosses the fork at seq {fork_seq}; the chain is frozen at seq {}", fork_seq - 1)]
    CrossesFork {
        /// The forked chain.
        author: AgentId,
        /// The seq named.
        up_to_seq: u64,
        /// Where the chain forks.
        fork_seq: u64,
    },
    /// The accept's head is on a branch its author dropped by a fork resolution.
    #[error("accept of {author} up to seq {up_to_seq} is on the branch dropped at seq {fork_seq}")]
    DroppedBranch {
        /// The chain.
        author: AgentId,
        /// The seq named.
        up_to_seq: u64,
        /// Where the branches part.
        fork_seq: u64,
    },
    /// A dispute of the signer's own event.
    #[error("an agent cannot dispute its own event {0}")]
    SelfDispute(EntryId),
    /// Locally: the signer already has an open dispute of this event.
    #[error("{target} is already disputed by this agent (dispute {dispute})")]
    AlreadyDisputed {
        /// The target.
        target: EntryId,
        /// The open dispute.
        dispute: EntryId,
    },
    /// A withdrawal of someone else's dispute.
    #[error("dispute {dispute} is by {author}, not by the withdrawing agent")]
    NotOwnDispute {
        /// The dispute named.
        dispute: EntryId,
        /// Its author.
        author: AgentId,
    },
    /// A withdrawal naming an entry that is not an earlier dispute on the
    /// signer's viewed chain.
    #[error("{0} is not an earlier dispute on the withdrawing agent's chain")]
    NotADispute(EntryId),
    /// A second withdrawal of one dispute.
    #[error("dispute {dispute} was already withdrawn by {by}")]
    AlreadyWithdrawn {
        /// The dispute.
        dispute: EntryId,
        /// The first withdrawal.
        by: EntryId,
    },
    /// A fork resolution naming another agent's entry: only the forked author
    /// can resolve its chain.
    #[error("fork resolution by {signer} names {continue_with}, an entry of {author}: only the forked author can resolve its chain")]
    ResolutionForeign {
        /// Who signed the resolution.
        signer: AgentId,
        /// The entry named.
        continue_with: EntryId,
        /// That entry's author.
        author: AgentId,
    },
    /// `continue_with` is not at `fork_seq`.
    #[error("fork resolution names {continue_with} at seq {found_seq}, not at the fork seq {fork_seq}")]
    ResolutionSeq {
        /// The entry named.
        continue_with: EntryId,
        /// The fork seq named.
        fork_seq: u64,
        /// The entry's seq.
        found_seq: u64,
    },
    /// A fork number that is not greater than an earlier one on the signer's chain.
    #[error("fork number {fork_number} does not increase (an earlier resolution on this chain has {previous})")]
    ForkNumberNotIncreasing {
        /// This resolution's number.
        fork_number: u64,
        /// The highest earlier number.
        previous: u64,
    },
    /// Locally: the views meet no fork of the signer's chain at that seq (none
    /// is known there, or it lies past an earlier unresolved fork or on a
    /// dropped branch), or the entry named is not one of its sides.
    #[error("the chain of {author} has no fork at seq {fork_seq} that a resolution naming that entry would decide")]
    NoFork {
        /// The chain.
        author: AgentId,
        /// The seq named.
        fork_seq: u64,
    },
    /// Locally: the signer's chain is frozen by a fork; only a fork resolution
    /// may be written until it is resolved.
    #[error("the chain of {author} is forked at seq {fork_seq} and frozen; sign a fork resolution first")]
    SignerForked {
        /// The signer.
        author: AgentId,
        /// Where it forks.
        fork_seq: u64,
    },
    /// Locally: the branch to continue has no single tip to extend.
    #[error("the branch from {continue_with} has {tips} tips; there is no single tip to extend")]
    AmbiguousTip {
        /// The branch's first entry.
        continue_with: EntryId,
        /// Its number of tips.
        tips: usize,
    },
}

impl MergeRuleError {
    /// A stable, machine-readable name for the rule.
    pub fn code(&self) -> &'static str {
        match self {
            MergeRuleError::Decode(e) => e.code(),
            MergeRuleError::SelfAccept(_) => "self_accept",
            MergeRuleError::ZeroSeq => "zero_seq",
            MergeRuleError::UnknownEntry { .. } => "unknown_entry",
            MergeRuleError::BeyondHead { .. } => "beyond_head",
            MergeRuleError::HeadMismatch { .. } => "head_mismatch",
            MergeRuleError::CrossesFork { .. } => "crosses_fork",
            MergeRuleError::DroppedBranch { .. } => "dropped_branch",
            MergeRuleError::SelfDispute(_) => "self_dispute",
            MergeRuleError::AlreadyDisputed { .. } => "already_disputed",
            MergeRuleError::NotOwnDispute { .. } => "not_own_dispute",
            MergeRuleError::NotADispute(_) => "not_a_dispute",
            MergeRuleError::AlreadyWithdrawn { .. } => "already_withdrawn",
            MergeRuleError::ResolutionForeign { .. } => "resolution_foreign",
            MergeRuleError::ResolutionSeq { .. } => "resolution_seq",
            MergeRuleError::ForkNumberNotIncreasing { .. } => "fork_number_not_increasing",
            MergeRuleError::NoFork { .. } => "no_fork",
            MergeRuleError::SignerForked { .. } => "signer_forked",
            MergeRuleError::AmbiguousTip { .. } => "ambiguous_tip",
        }
    }
}

/// What became of one merge event, as every node computes it from the same
/// set of entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeStatus {
    /// In effect: an accept counted in full, an open dispute, a withdrawal
    /// that closed its dispute, a resolution that decides a fork.
    Applied,
    /// An accept whose head lies past a fork (beyond the freeze point, or on a
    /// dropped branch): reported with the rule, and counted only for the prefix
    /// both branches share (`effective_seq`, 0 for none).
    Clipped {
        /// Last seq it counts for.
        effective_seq: u64,
        /// Why it is clipped.
        rule: MergeRuleError,
    },
    /// A dispute its signer withdrew.
    Withdrawn {
        /// The withdrawal.
        by: EntryId,
    },
    /// A valid fork resolution that decides no fork (no fork at its seq, or a
    /// higher-numbered resolution decides it).
    Idle,
    /// Waits for an entry that is not held yet (a dispute target, an accept
    /// head, a withdrawn dispute, a resolution's branch, or a missing
    /// predecessor below the entry itself). Re-evaluated when it arrives.
    Pending {
        /// The id waited for.
        missing: EntryId,
    },
    /// Breaks a rule; kept, reported, no effect.
    Invalid(MergeRuleError),
    /// On its signer's chain but not on the chain as views follow it (beyond
    /// the signer's own freeze point, or on a branch the signer dropped): no
    /// effect.
    OffView,
}

impl MergeStatus {
    /// Stable name.
    pub fn name(&self) -> &'static str {
        match self {
            MergeStatus::Applied => "applied",
            MergeStatus::Clipped { .. } => "clipped",
            MergeStatus::Withdrawn { .. } => "withdrawn",
            MergeStatus::Idle => "idle",
            MergeStatus::Pending { .. } => "pending",
            MergeStatus::Invalid(_) => "invalid",
            MergeStatus::OffView => "off_view",
        }
    }

    /// The one-byte code used in the view hash (see `protocol-spec/merge.md`).
    pub fn code_byte(&self) -> u8 {
        match self {
            MergeStatus::Applied => 0,
            MergeStatus::Clipped { .. } => 1,
            MergeStatus::Withdrawn { .. } => 2,
            MergeStatus::Idle => 3,
            MergeStatus::Pending { .. } => 4,
            MergeStatus::Invalid(_) => 5,
            MergeStatus::OffView => 6,
        }
    }
}
