//! The parts a node's state is made of, below both the node (`node.rs`)
//! and its packed lists (`links.rs`), which know them and not each other's
//! internals: a node's position in the graph ([`Ix`]), the relation an
//! outgoing edge is typed with ([`Rel`]), what a later event did to it
//! ([`Mark`]), and the rare state boxed behind its lists ([`Extra`], with a
//! frame's [`FrameState`]).

use crate::event::{Relation, TaskState};

/// A node's place in [`Graph::nodes`](super::Graph::nodes) (application
/// order). The index, the resolved references, the rules and the effects name
/// nodes by these, and so do the relations a node keeps (edges, touches,
/// marks): 4 bytes each instead of a 32-byte id. Positions never change
/// while the graph lives (nodes are only ever appended), so they can be kept.
pub(super) type Ix = u32;

/// An index that names no node: what [`Graph::check`](super::Graph::check)
/// resolves an unknown reference to, so that the rules see it as a node of
/// kind `unknown`.
pub(super) const UNKNOWN: Ix = Ix::MAX;

/// State of a causal frame (002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameState {
    /// Being worked on.
    Active,
    /// Set aside (a pivot, or explicitly); can be resumed.
    Suspended,
    /// Concluded.
    Completed,
    /// Its invalidation condition was met (or an ancestor's); can be resumed.
    Invalidated,
}

impl FrameState {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            FrameState::Active => "active",
            FrameState::Suspended => "suspended",
            FrameState::Completed => "completed",
            FrameState::Invalidated => "invalidated",
        }
    }
}

/// The relation an outgoing edge is typed with: one byte in the node, its
/// name ([`Rel::name`]) where it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rel {
    Supports,
    Contradicts,
    Refines,
    Resolves,
    Synthesizes,
    Connects,
    Tension,
    Reframes,
    DerivedFrom,
    Update,
    StateChange,
    Expands,
    Qualifies,
    Retracts,
    SameAs,
    ChildOf,
    BranchedFrom,
    EvidenceFor,
    Concludes,
    Judges,
    ExtractedFrom,
    UsedIn,
    Uses,
    CausedBy,
}

impl Rel {
    /// Every relation, in declaration order: a relation's place here is the
    /// word [`Links`](super::links::Links) keeps it as.
    pub(super) const ALL: [Rel; 24] = [
        Rel::Supports,
        Rel::Contradicts,
        Rel::Refines,
        Rel::Resolves,
        Rel::Synthesizes,
        Rel::Connects,
        Rel::Tension,
        Rel::Reframes,
        Rel::DerivedFrom,
        Rel::Update,
        Rel::StateChange,
        Rel::Expands,
        Rel::Qualifies,
        Rel::Retracts,
        Rel::SameAs,
        Rel::ChildOf,
        Rel::BranchedFrom,
        Rel::EvidenceFor,
        Rel::Concludes,
        Rel::Judges,
        Rel::ExtractedFrom,
        Rel::UsedIn,
        Rel::Uses,
        Rel::CausedBy,
    ];

    /// The relation's name, as the snapshot, exports and views write it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Rel::Supports => "supports",
            Rel::Contradicts => "contradicts",
            Rel::Refines => "refines",
            Rel::Resolves => "resolves",
            Rel::Synthesizes => "synthesizes",
            Rel::Connects => "connects",
            Rel::Tension => "tension",
            Rel::Reframes => "reframes",
            Rel::DerivedFrom => "derived_from",
            Rel::Update => "update",
            Rel::StateChange => "state_change",
            Rel::Expands => "expands",
            Rel::Qualifies => "qualifies",
            Rel::Retracts => "retracts",
            Rel::SameAs => "same_as",
            Rel::ChildOf => "child_of",
            Rel::BranchedFrom => "branched_from",
            Rel::EvidenceFor => "evidence_for",
            Rel::Concludes => "concludes",
            Rel::Judges => "judges",
            Rel::ExtractedFrom => "extracted_from",
            Rel::UsedIn => "used_in",
            Rel::Uses => "uses",
            Rel::CausedBy => "caused_by",
        }
    }

    /// The edge a `relate` event of `relation` draws (same name).
    pub(super) fn of(relation: Relation) -> Rel {
        match relation {
            Relation::Update => Rel::Update,
            Relation::StateChange => Rel::StateChange,
            Relation::Expands => Rel::Expands,
            Relation::Qualifies => Rel::Qualifies,
            Relation::Contradicts => Rel::Contradicts,
            Relation::Retracts => Rel::Retracts,
            Relation::SameAs => Rel::SameAs,
        }
    }
}

/// What a later event did to a node, recorded as (mark, the other event's node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mark {
    SupersededBy,
    ResolvedBy,
    RetractedBy,
    ParkedBy,
    DuplicateOf,
    DuplicateBy,
    OpenChallenge,
    Survived,
    Closed,
    Tension,
    FrameChild,
    Usage,
    UsageItem,
    /// Events by different agents, neither seen by the other's author
    /// (`causal.rs`), that changed this node's state in ways that exclude
    /// each other (two resolutions, two verdicts, two successors, a
    /// completion and a reopening, two originals of one memory content, ...):
    /// all kept, the node contested.
    Conflict,
}

impl Mark {
    /// Every mark, in declaration order (see [`Rel::ALL`]).
    pub(super) const ALL: [Mark; 14] = [
        Mark::SupersededBy,
        Mark::ResolvedBy,
        Mark::RetractedBy,
        Mark::ParkedBy,
        Mark::DuplicateOf,
        Mark::DuplicateBy,
        Mark::OpenChallenge,
        Mark::Survived,
        Mark::Closed,
        Mark::Tension,
        Mark::FrameChild,
        Mark::Usage,
        Mark::UsageItem,
        Mark::Conflict,
    ];
}

/// Per-node state that most nodes never have, boxed so that a node stays
/// small: replaying a million events touches every node's memory, and on this
/// machine fresh memory is the dominant cost. The marks later events leave
/// (a contradiction on its target, say) are not here but in the node's
/// [`Links`](super::links::Links), so that a node with a mark and no other rare state has no box.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Extra {
    pub(super) invalid: Option<Box<str>>,
    /// A valid claim's expiry.
    pub(super) expires_at_ms: Option<u64>,
    pub(super) confirmed: bool,
    pub(super) frame_state: Option<FrameState>,
    pub(super) task_state: Option<TaskState>,
    pub(super) judged: Option<bool>,
    pub(super) successes: u32,
    pub(super) failures: u32,
    /// The event that last set `frame_state` or `task_state`, the last resume
    /// and the judgment: who set the state a later event may be blocked by
    /// (see [`Graph::concurrent_setter`](super::Graph::concurrent_setter)).
    /// Derived, and decided by the marks and states the snapshot holds, so
    /// not part of it.
    pub(super) state_by: Option<Ix>,
    pub(super) resumed_by: Option<Ix>,
    pub(super) judged_by: Option<Ix>,
    /// The `update` or `state_change` relation that first superseded this
    /// node, whose successor (its `from`) is the [`Mark::SupersededBy`]
    /// (a refinement or reframe is both, and leaves this `None`).
    pub(super) superseded_via: Option<Ix>,
    /// Made from a redacted payload's residue.
    pub(super) redacted: bool,
    /// The node's seq when it is `BIG_SEQ` (`node.rs`) or more.
    pub(super) big_seq: Option<u64>,
}
