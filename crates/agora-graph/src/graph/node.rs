//! A node of the graph ([`Node`]), its [`Status`] and [`FrameState`], and
//! the state behind them: what a node keeps of its event ([`Meta`]) and what
//! later events did to it (the marks, [`Mark`], and the rarer state in
//! [`Extra`]).
//!
//! A node's status, why it has it, and every other public reading are pure
//! functions of that state, computed on each call, never stored: that is
//! the invariant that lets a status be a function of the set of events. The
//! state is set when a node is added (`mod.rs`) and changed only by the
//! graph's effects (`effects.rs`); the rules, the snapshot and the public
//! methods here read it. It is its own module because the node's layout is
//! what a replay's speed and memory turn on (small nodes, rare state boxed,
//! tight lists), and because it is the graph's public reading surface, which
//! readers use without the graph.

use crate::event::{Event, MemoryKind, Relation, TaskState};
use agora_core::{EntryId, LogPosition};

/// A node's status. See `protocol-spec/events.md` for the rules and their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Current and unchallenged (or every challenge answered).
    Active,
    /// At least one challenge against it is open.
    Contested,
    /// Replaced by a successor (refinement, reframe, update, state change).
    Superseded,
    /// Closed: a question answered, a challenge answered, a frame completed, a task done.
    Resolved,
    /// Set aside: parked, a suspended frame, an abandoned task.
    Parked,
    /// Withdrawn as wrong, or an invalidated frame. Hidden from current state; the record stays.
    Retracted,
    /// Restates another node.
    Duplicate,
    /// Arrived from a peer but breaks a rule; kept in the log, reported here.
    Invalid,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 8] =
        [Status::Active, Status::Contested, Status::Superseded, Status::Resolved, Status::Parked, Status::Retracted, Status::Duplicate, Status::Invalid];

    /// The status with this [`Status::name`].
    pub fn from_name(name: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Contested => "contested",
            Status::Superseded => "superseded",
            Status::Resolved => "resolved",
            Status::Parked => "parked",
            Status::Retracted => "retracted",
            Status::Duplicate => "duplicate",
            Status::Invalid => "invalid",
        }
    }
}

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

/// What a node keeps of its event beyond its text: just what later rules and
/// reads need. (Keeping whole events would double the graph's memory.) Four
/// bytes: a claim's expiry, which few claims have, lives in [`Extra`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Meta {
    None,
    Claim { kind: MemoryKind, has_sources: bool, confirmed: bool },
    Relate(Relation),
}

/// Push without the default growth to 4 elements on the first push: most
/// nodes get one or two edges, touches or marks, and a million nodes with room
/// for four would triple the graph's memory.
pub(super) fn push_tight<T>(v: &mut Vec<T>, item: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len().max(1));
    }
    v.push(item);
}

/// What a later event did to a node, recorded as (mark, the other event).
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
    /// Events by different agents, neither on the other's chain, that changed
    /// this node's state in ways that exclude each other (two resolutions, a
    /// completion and a reopening, ...): both kept, the node contested.
    Conflict,
}

impl Meta {
    pub(super) fn of(ev: &Event) -> Self {
        match ev {
            Event::Claim { kind, sources, confirmed, .. } => {
                Meta::Claim { kind: *kind, has_sources: !sources.is_empty(), confirmed: *confirmed }
            }
            Event::Relate { relation, .. } => Meta::Relate(*relation),
            _ => Meta::None,
        }
    }
}

/// Per-node state that most nodes never have, boxed so that a node stays
/// small: replaying a million events touches every node's memory, and on this
/// machine fresh memory is the dominant cost. Relations to other events are one
/// list of marks rather than a field (and a list) per relation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Extra {
    pub(super) invalid: Option<Box<str>>,
    pub(super) marks: Vec<(Mark, EntryId)>,
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
    pub(super) state_by: Option<EntryId>,
    pub(super) resumed_by: Option<EntryId>,
    pub(super) judged_by: Option<EntryId>,
    /// Made from a redacted payload's residue.
    pub(super) redacted: bool,
}

impl Extra {
    pub(super) fn first(&self, mark: Mark) -> Option<EntryId> {
        self.marks.iter().find(|(m, _)| *m == mark).map(|(_, id)| *id)
    }
    pub(super) fn last(&self, mark: Mark) -> Option<EntryId> {
        self.marks.iter().rev().find(|(m, _)| *m == mark).map(|(_, id)| *id)
    }
    pub(super) fn all(&self, mark: Mark) -> Vec<EntryId> {
        self.marks.iter().filter(|(m, _)| *m == mark).map(|(_, id)| *id).collect()
    }
    pub(super) fn has(&self, mark: Mark) -> bool {
        self.marks.iter().any(|(m, _)| *m == mark)
    }
    pub(super) fn push(&mut self, mark: Mark, id: EntryId) {
        push_tight(&mut self.marks, (mark, id));
    }
    /// Remove `(mark, id)`; true if it was there.
    pub(super) fn remove(&mut self, mark: Mark, id: EntryId) -> bool {
        let before = self.marks.len();
        self.marks.retain(|(m, x)| !(*m == mark && *x == id));
        self.marks.len() < before
    }
    pub(super) fn clear(&mut self, mark: Mark) {
        self.marks.retain(|(m, _)| *m != mark);
    }
}

static NO_EXTRA: std::sync::LazyLock<Extra> = std::sync::LazyLock::new(Extra::default);

/// A node of the reasoning graph: one applied event, with what later events did to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The entry id.
    pub id: EntryId,
    /// Author's timestamp.
    pub timestamp_ms: u64,
    /// Seq in the author's chain.
    pub seq: u64,
    /// The author, as an index into the graph's author table (see
    /// [`Graph::position`](super::Graph::position)): 4 bytes a node instead
    /// of 32.
    pub(super) author: u32,
    /// Kind name (`proposition`, ..., or `raw`, `redacted`, `invalid`).
    pub kind: &'static str,
    /// Searchable text.
    pub text: String,
    /// Every later event that touched this node, in log order (see
    /// [`Node::touched_by`]). Ids, not positions, because `touched_by` answers
    /// from the node alone.
    pub(super) touched: Vec<EntryId>,
    /// Outgoing typed edges: (relation name, target). Ids, not positions, for
    /// the same reason: readers take them from the node alone.
    pub edges: Vec<(&'static str, EntryId)>,
    pub(super) meta: Meta,
    pub(super) extra: Option<Box<Extra>>,
}

impl Node {
    pub(super) fn new(id: EntryId, pos: LogPosition, author: u32, kind: &'static str) -> Self {
        Self {
            id,
            timestamp_ms: pos.timestamp_ms,
            seq: pos.seq,
            author,
            kind,
            text: String::new(),
            touched: Vec::new(),
            edges: Vec::new(),
            meta: Meta::None,
            extra: None,
        }
    }

    /// The entry id.
    pub fn id(&self) -> &EntryId {
        &self.id
    }

    /// Every event that touched this node, in log order, starting with itself.
    pub fn touched_by(&self) -> Vec<EntryId> {
        std::iter::once(self.id).chain(self.touched.iter().copied()).collect()
    }

    pub(super) fn x(&self) -> &Extra {
        self.extra.as_deref().unwrap_or(&NO_EXTRA)
    }

    /// Why it is invalid (it broke a rule, or could not be decoded), if it is.
    pub fn invalid(&self) -> Option<&str> {
        self.x().invalid.as_deref()
    }

    /// True for nodes made by a valid, held event (not raw, redacted or invalid).
    pub fn is_event(&self) -> bool {
        self.x().invalid.is_none() && !matches!(self.kind, "raw" | "redacted" | "invalid")
    }

    /// The node's status, by the rules in order: invalid, retracted, duplicate,
    /// superseded, parked, contested, resolved, active.
    pub fn status(&self) -> Status {
        let x = self.x();
        if x.invalid.is_some() {
            Status::Invalid
        } else if x.has(Mark::RetractedBy) || x.frame_state == Some(FrameState::Invalidated) {
            Status::Retracted
        } else if x.has(Mark::DuplicateOf) {
            Status::Duplicate
        } else if x.has(Mark::SupersededBy) {
            Status::Superseded
        } else if x.has(Mark::ParkedBy) || x.frame_state == Some(FrameState::Suspended) || x.task_state == Some(TaskState::Abandoned) {
            Status::Parked
        } else if x.has(Mark::OpenChallenge) || x.has(Mark::Conflict) {
            Status::Contested
        } else if x.has(Mark::ResolvedBy) || x.frame_state == Some(FrameState::Completed) || x.task_state == Some(TaskState::Done) {
            Status::Resolved
        } else {
            Status::Active
        }
    }

    /// The events that make the status what it is.
    pub fn why(&self) -> Vec<EntryId> {
        let mut out = Vec::new();
        self.for_each_why(self.status(), |id| out.push(id));
        out
    }

    /// [`Node::why`] for the node's `status`, one id at a time.
    pub(super) fn for_each_why(&self, status: Status, mut f: impl FnMut(EntryId)) {
        let x = self.x();
        let all = |mark: Mark, f: &mut dyn FnMut(EntryId)| x.marks.iter().filter(|(m, _)| *m == mark).for_each(|(_, id)| f(*id));
        match status {
            Status::Invalid | Status::Active => all(Mark::Survived, &mut f),
            Status::Retracted => x.last(Mark::RetractedBy).into_iter().for_each(f),
            Status::Duplicate => x.last(Mark::DuplicateBy).into_iter().chain(x.last(Mark::DuplicateOf)).for_each(f),
            Status::Superseded => x.first(Mark::SupersededBy).into_iter().for_each(f),
            Status::Parked => x.last(Mark::ParkedBy).into_iter().for_each(f),
            Status::Contested => {
                all(Mark::OpenChallenge, &mut f);
                all(Mark::Conflict, &mut f);
            }
            Status::Resolved => {
                x.last(Mark::ResolvedBy).filter(|by| *by != self.id).into_iter().for_each(&mut f);
                all(Mark::Closed, &mut f);
                all(Mark::Survived, &mut f);
            }
        }
    }

    /// Made from the residue of a payload redacted on this node: its kind
    /// and effects are the event's, its text is gone.
    pub fn redacted(&self) -> bool {
        self.x().redacted
    }

    /// The events that conflict over this node's state (see
    /// `protocol-spec/events.md`, "Concurrent events"), empty when none.
    pub fn conflicts(&self) -> Vec<EntryId> {
        self.x().all(Mark::Conflict)
    }

    /// Survived at least one challenge, and nothing is open against it.
    pub fn settled(&self) -> bool {
        let x = self.x();
        matches!(self.status(), Status::Active | Status::Resolved) && x.has(Mark::Survived) && !x.has(Mark::OpenChallenge) && !x.has(Mark::Conflict)
    }

    /// A derived claim (semantic, preference, procedural) with no source events.
    pub fn orphan(&self) -> bool {
        matches!(self.meta, Meta::Claim { kind, has_sources: false, .. } if kind.is_derived())
    }

    /// A claim that is not confirmed (by its event or a later `confirm`).
    pub fn unconfirmed(&self) -> bool {
        matches!(self.meta, Meta::Claim { confirmed: false, .. }) && !self.x().confirmed
    }

    /// A claim whose expiry is at or before `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        matches!(self.meta, Meta::Claim { .. }) && self.x().expires_at_ms.is_some_and(|t| t <= now_ms)
    }

    /// The memory kind of a claim.
    pub fn memory_kind(&self) -> Option<MemoryKind> {
        match self.meta {
            Meta::Claim { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// Frame state, for frames.
    pub fn frame_state(&self) -> Option<FrameState> {
        self.x().frame_state
    }
    /// Child frames, for frames.
    pub fn frame_children(&self) -> Vec<EntryId> {
        self.x().all(Mark::FrameChild)
    }
    /// Task state, for tasks.
    pub fn task_state(&self) -> Option<TaskState> {
        self.x().task_state
    }
    /// Open challenges.
    pub fn open_challenges(&self) -> Vec<EntryId> {
        self.x().all(Mark::OpenChallenge)
    }
    /// Open tensions.
    pub fn tensions(&self) -> Vec<EntryId> {
        self.x().all(Mark::Tension)
    }
    /// The node that supersedes this one, if any.
    pub fn superseded_by(&self) -> Option<EntryId> {
        self.x().first(Mark::SupersededBy)
    }
    /// For memory items: (successes, failures, uses) over judged trajectories.
    pub fn outcomes(&self) -> (u64, u64, usize) {
        let x = self.x();
        (u64::from(x.successes), u64::from(x.failures), x.all(Mark::Usage).len())
    }
    /// For trajectories: the judgment (success?), if judged.
    pub fn judged(&self) -> Option<bool> {
        self.x().judged
    }
}
