//! The reasoning graph: a pure, deterministic function of the events.
//!
//! Events are applied in **log order**: by (timestamp, author, seq), which every
//! node computes the same way from the same entries. An event whose references
//! are not all known yet is held as *pending* and applied the moment the last
//! one arrives. Nothing here is stored state that could drift: [`Graph::replay`]
//! rebuilds everything from the events, and [`Graph::snapshot`] gives a
//! canonical byte form so that a rebuild can be compared bit for bit.

use crate::event::{memory_item_content_id, Event, EventDecodeError, MemoryKind, Relation, TaskState};
use agora_core::idmap::IdMap;
pub use agora_core::LogPosition;
use agora_core::{AgentId, EntryId};
use rayon::prelude::*;
use std::collections::HashMap;

/// Events looked up together, ahead of applying them, by a replay (see
/// `Graph::warm`): enough independent lookups to keep the memory system busy.
/// Measured: 16 gave two thirds of the gain of 64; 128 and 256 no more than
/// 64. The decoded batch is 14 KB (216 bytes an event).
const WARM_BATCH: usize = 64;

/// Nodes a piece of the snapshot [`Graph::view_hash`] hashes: about 700 KB,
/// in cache while it is hashed.
const VIEW_HASH_PIECE: usize = 4 * 1024;
/// Parts a piece is written in, each a task any thread may take.
const VIEW_HASH_PARTS: usize = 8;

/// A node's place in [`Graph::nodes`] (application order). The index, the
/// resolved references, the rules and the effects name nodes by these; the
/// relations a node keeps (edges, touches, marks) stay 32-byte ids, because
/// readers take them from the node alone (see [`Node`]).
type Ix = u32;

/// An index that names no node: what [`Graph::check`] resolves an unknown
/// reference to, so that the rules see it as a node of kind `unknown`.
const UNKNOWN: Ix = Ix::MAX;

/// Most nodes a graph holds. Positions are u32 and the index stores a
/// position plus one beside 32 bits of hash, so 2^31 keeps both in range;
/// at ~150 bytes a node that is 300 GB, far past any machine this runs on.
pub const NODES_MAX: usize = 1 << 31;

/// Node positions by id, in one array of u64 slots probed linearly: the top
/// 32 bits of a slot are the id's hash, the low 32 the position plus one (0
/// is an empty slot). A lookup costs one cache miss for the slot and one for
/// the node whose id confirms it; hashbrown keeps control bytes and slots in
/// separate arrays, so it paid three, and a profile of the replay put a fifth
/// of the time there. 8 bytes a slot, at most 3/4 full.
///
/// Entry ids are SHA-256 outputs, so their first bytes are already a uniform
/// hash. Grinding ids that collide costs about a million SHA-256 evaluations
/// per entry in a table of a million slots, and every entry must be signed
/// by an admitted author.
#[derive(Clone, Debug)]
struct NodeIndex {
    slots: Vec<u64>,
    /// Slots in use.
    len: usize,
    /// `32 - log2(slots.len())`: a hash's home slot is its top bits.
    shift: u32,
}

impl Default for NodeIndex {
    fn default() -> Self {
        Self::with_slots(16)
    }
}

impl NodeIndex {
    fn with_slots(slots: usize) -> Self {
        assert!(slots.is_power_of_two() && (16..=1 << 32).contains(&slots));
        Self { slots: vec![0; slots], len: 0, shift: 32 - slots.trailing_zeros() }
    }

    fn hash(id: &EntryId) -> u32 {
        let b = id.as_bytes();
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn home(&self, hash: u32) -> usize {
        (hash >> self.shift) as usize
    }

    fn get(&self, nodes: &[Node], id: &EntryId) -> Option<Ix> {
        let hash = Self::hash(id);
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        // Terminates: the table is never more than 3/4 full.
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            if (slot >> 32) as u32 == hash {
                let ix = slot as u32 - 1;
                if nodes[ix as usize].id == *id {
                    return Some(ix);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn contains(&self, nodes: &[Node], id: &EntryId) -> bool {
        self.get(nodes, id).is_some()
    }

    /// Index position `ix`, whose node has id `id` and is not indexed yet.
    fn insert(&mut self, id: &EntryId, ix: Ix) {
        assert!((ix as usize) < NODES_MAX);
        self.reserve(1);
        self.place(Self::hash(id), ix);
        self.len += 1;
    }

    fn place(&mut self, hash: u32, ix: Ix) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = u64::from(hash) << 32 | u64::from(ix + 1);
    }

    /// Room for `additional` more ids without growing.
    fn reserve(&mut self, additional: usize) {
        let needed = self.len + additional;
        assert!(needed <= NODES_MAX, "more than {NODES_MAX} nodes");
        if needed * 4 <= self.slots.len() * 3 {
            return;
        }
        let slots = (needed * 4).div_ceil(3).next_power_of_two().max(16);
        let old = std::mem::replace(self, Self::with_slots(slots));
        // A slot holds its hash, so growing never reads the nodes.
        for slot in old.slots.into_iter().filter(|&s| s != 0) {
            self.place((slot >> 32) as u32, slot as u32 - 1);
        }
        self.len = old.len;
    }
}

/// What an entry's payload is, as far as the graph is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// A decoded event.
    Event(Event),
    /// A payload that is not an event (a raw note). No effect.
    Raw,
    /// The payload is not held (redacted). The node exists without content.
    Redacted,
    /// An event payload that failed to decode (e.g. a newer kind).
    Undecodable(EventDecodeError),
}

/// One entry of the log as the graph sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEvent {
    /// The entry id.
    pub id: EntryId,
    /// Position in the log.
    pub pos: LogPosition,
    /// Its payload.
    pub body: Body,
    /// Read from the residue of a payload redacted here (see
    /// `agora_core::payload`): the event's meaning without its text.
    pub redacted: bool,
}

impl LogEvent {
    /// What the graph makes of an entry, from what the node knows of its
    /// payload: the event itself (held), its meaning without text (redacted
    /// with a residue), a node of unknown meaning (a redaction that kept no
    /// residue), or nothing yet (`None`: never received; events that refer to
    /// it wait, pending, until it arrives).
    pub fn from_content(id: EntryId, pos: LogPosition, content: agora_core::Content<'_>) -> Option<Self> {
        match content {
            agora_core::Content::Held(p) => Some(Self::from_payload(id, pos, Some(p))),
            agora_core::Content::Redacted(Some(residue)) => {
                let mut e = Self::from_payload(id, pos, Some(residue));
                e.redacted = true;
                Some(e)
            }
            agora_core::Content::Redacted(None) => Some(Self::from_payload(id, pos, None)),
            agora_core::Content::Missing => None,
        }
    }

    /// Classify a payload (`None`: redacted with no residue, meaning unknown).
    pub fn from_payload(id: EntryId, pos: LogPosition, payload: Option<&[u8]>) -> Self {
        let body = match payload {
            None => Body::Redacted,
            Some(p) if !Event::is_event_payload(p) => Body::Raw,
            Some(p) => match Event::decode(p) {
                Ok(e) => Body::Event(e),
                Err(e) => Body::Undecodable(e),
            },
        };
        Self { id, pos, body, redacted: false }
    }
}

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
enum Meta {
    None,
    Claim { kind: MemoryKind, has_sources: bool, confirmed: bool },
    Relate(Relation),
}

/// Push without the default growth to 4 elements on the first push: most
/// nodes get one or two edges, touches or marks, and a million nodes with room
/// for four would triple the graph's memory.
fn push_tight<T>(v: &mut Vec<T>, item: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len().max(1));
    }
    v.push(item);
}

/// What a later event did to a node, recorded as (mark, the other event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
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
    fn of(ev: &Event) -> Self {
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
struct Extra {
    invalid: Option<Box<str>>,
    marks: Vec<(Mark, EntryId)>,
    /// A valid claim's expiry.
    expires_at_ms: Option<u64>,
    confirmed: bool,
    frame_state: Option<FrameState>,
    task_state: Option<TaskState>,
    judged: Option<bool>,
    successes: u32,
    failures: u32,
    /// The event that last set `frame_state` or `task_state`, the last resume
    /// and the judgment: who set the state a later event may be blocked by
    /// (see [`Graph::concurrent_setter`]). Derived, and decided by the marks
    /// and states the snapshot holds, so not part of it.
    state_by: Option<EntryId>,
    resumed_by: Option<EntryId>,
    judged_by: Option<EntryId>,
    /// Made from a redacted payload's residue.
    redacted: bool,
}

impl Extra {
    fn first(&self, mark: Mark) -> Option<EntryId> {
        self.marks.iter().find(|(m, _)| *m == mark).map(|(_, id)| *id)
    }
    fn last(&self, mark: Mark) -> Option<EntryId> {
        self.marks.iter().rev().find(|(m, _)| *m == mark).map(|(_, id)| *id)
    }
    fn all(&self, mark: Mark) -> Vec<EntryId> {
        self.marks.iter().filter(|(m, _)| *m == mark).map(|(_, id)| *id).collect()
    }
    fn has(&self, mark: Mark) -> bool {
        self.marks.iter().any(|(m, _)| *m == mark)
    }
    fn push(&mut self, mark: Mark, id: EntryId) {
        push_tight(&mut self.marks, (mark, id));
    }
    /// Remove `(mark, id)`; true if it was there.
    fn remove(&mut self, mark: Mark, id: EntryId) -> bool {
        let before = self.marks.len();
        self.marks.retain(|(m, x)| !(*m == mark && *x == id));
        self.marks.len() < before
    }
    fn clear(&mut self, mark: Mark) {
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
    /// [`Graph::position`]): 4 bytes a node instead of 32.
    author: u32,
    /// Kind name (`proposition`, ..., or `raw`, `redacted`, `invalid`).
    pub kind: &'static str,
    /// Searchable text.
    pub text: String,
    /// Every later event that touched this node, in log order (see
    /// [`Node::touched_by`]). Ids, not positions, because `touched_by` answers
    /// from the node alone.
    touched: Vec<EntryId>,
    /// Outgoing typed edges: (relation name, target). Ids, not positions, for
    /// the same reason: readers take them from the node alone.
    pub edges: Vec<(&'static str, EntryId)>,
    meta: Meta,
    extra: Option<Box<Extra>>,
}

impl Node {
    fn new(id: EntryId, pos: LogPosition, author: u32, kind: &'static str) -> Self {
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

    /// Every event that touched this node, in log order, starting with itself.
    pub fn touched_by(&self) -> Vec<EntryId> {
        std::iter::once(self.id).chain(self.touched.iter().copied()).collect()
    }

    fn x(&self) -> &Extra {
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
    fn for_each_why(&self, status: Status, mut f: impl FnMut(EntryId)) {
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

/// Why an event may not be applied (locally: refused; from a peer: invalid).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// An event that refers to itself, or names the same event twice.
    #[error("refers to itself: {0} is named more than once")]
    SelfReference(EntryId),
    /// A synthesis of fewer than two sources.
    #[error("a synthesis needs at least two sources, found {0}")]
    SynthesisArity(usize),
    /// A reference to a node of a kind this event cannot apply to.
    #[error("{event} cannot refer to {target} ({kind}): {expected}")]
    WrongKind {
        /// The event kind.
        event: &'static str,
        /// The target.
        target: EntryId,
        /// The target's kind.
        kind: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// A supersession edge that would close a cycle (e.g. a cycle of refinements).
    #[error("{from} superseding {to} would close a cycle of refinements/updates")]
    Cycle {
        /// The new successor.
        from: EntryId,
        /// The node it would supersede.
        to: EntryId,
    },
    /// The target is in a state that does not allow this event.
    #[error("{target} is {state}: {event} does not apply")]
    WrongState {
        /// The event kind.
        event: &'static str,
        /// The target.
        target: EntryId,
        /// Its state.
        state: String,
    },
    /// The payload is an event this implementation cannot decode.
    #[error("{0}")]
    Decode(EventDecodeError),
}

/// An event held until the events it refers to arrive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The held event.
    pub event: LogEvent,
    /// The references still unknown.
    pub missing: Vec<EntryId>,
}

/// The reasoning graph derived from a set of events.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Nodes in application order (log order, with pending events placed where
    /// they were released). Stored in a Vec and indexed by id, so growing the
    /// index never moves the (large) nodes.
    nodes: Vec<Node>,
    index: NodeIndex,
    /// Every author seen, in order of first appearance; nodes refer to them by index.
    authors: Vec<AgentId>,
    /// Author keys are Ed25519 public keys, uniform like ids: hashed by prefix.
    author_index: IdMap<AgentId, u32>,
    /// Held events, by one of the ids they still miss.
    waiting: IdMap<EntryId, Vec<LogEvent>>,
    pending_count: usize,
    /// Memory item content id -> first item with that content.
    content_ids: HashMap<[u8; 32], Ix>,
    last_pos: Option<LogPosition>,
    /// Node positions in id order, once asked for ([`Graph::by_id`]); cleared
    /// by every apply.
    id_order: std::sync::OnceLock<Vec<Ix>>,
}

const POSITION_KINDS: &[&str] =
    &["proposition", "support", "contradiction", "refinement", "synthesis", "reframe", "claim", "memory_item"];
const CLAIM_KINDS: &[&str] = &["proposition", "refinement", "synthesis", "reframe", "claim", "memory_item"];
const CONTENT_KINDS: &[&str] = &[
    "proposition",
    "support",
    "contradiction",
    "refinement",
    "synthesis",
    "question",
    "reframe",
    "claim",
    "frame_open",
    "task",
    "trajectory",
    "memory_item",
    "tension",
];

/// An event's references resolved to node positions, in [`Event::ref_list`]
/// order: four inline (every kind but long source lists), more on the heap.
#[derive(Default)]
struct Targets {
    inline: [Ix; 4],
    len: usize,
    more: Vec<Ix>,
}

impl Targets {
    fn push(&mut self, ix: Ix) {
        if self.len < self.inline.len() && self.more.is_empty() {
            self.inline[self.len] = ix;
            self.len += 1;
        } else {
            if self.more.is_empty() {
                self.more.extend_from_slice(&self.inline[..self.len]);
            }
            self.more.push(ix);
        }
    }
}

impl std::ops::Deref for Targets {
    type Target = [Ix];
    fn deref(&self) -> &[Ix] {
        if self.more.is_empty() { &self.inline[..self.len] } else { &self.more }
    }
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Build the graph from events in any order: they are sorted into log
    /// order first, so the result depends only on the set of events.
    pub fn replay(mut events: Vec<LogEvent>) -> Self {
        events.sort_by_key(|e| (e.pos, e.id));
        let mut g = Graph::new();
        g.reserve(events.len());
        for batch in events.chunks_mut(WARM_BATCH) {
            g.warm(batch);
            for e in batch {
                g.apply_in_place(e);
            }
        }
        g
    }

    /// Build the graph straight from stored payloads: sorts only the (position,
    /// id) keys, then decodes each payload just before applying it, so no
    /// decoded copy of the whole log is ever held. Same result as
    /// [`Graph::replay`] over the decoded events.
    pub fn replay_encoded(items: &[(EntryId, LogPosition, Option<&[u8]>)]) -> Self {
        let contents: Vec<(EntryId, LogPosition, agora_core::Content<'_>)> = items
            .iter()
            .map(|(id, pos, p)| (*id, *pos, p.map_or(agora_core::Content::Redacted(None), agora_core::Content::Held)))
            .collect();
        Self::replay_contents(&contents)
    }

    /// [`Graph::replay_encoded`] from what a node knows of each payload
    /// (see [`LogEvent::from_content`]): entries whose payload is missing are
    /// no event yet.
    pub fn replay_contents(items: &[(EntryId, LogPosition, agora_core::Content<'_>)]) -> Self {
        let mut order: Vec<u32> = (0..items.len() as u32).filter(|&i| !items[i as usize].2.is_missing()).collect();
        order.sort_unstable_by_key(|&i| {
            let (id, pos, _) = &items[i as usize];
            (*pos, *id)
        });
        order.dedup_by_key(|&mut i| (items[i as usize].1, items[i as usize].0));
        let mut replay = Graph::ordered_replay(order.len());
        let mut batch: Vec<LogEvent> = Vec::with_capacity(WARM_BATCH);
        for chunk in order.chunks(WARM_BATCH) {
            batch.extend(chunk.iter().filter_map(|&i| {
                let (id, pos, content) = items[i as usize];
                LogEvent::from_content(id, pos, content)
            }));
            replay.apply_batch(&mut batch).expect("sorted and deduplicated above");
            batch.clear();
        }
        replay.finish()
    }

    /// A replay of `len` events that the caller hands over already in log
    /// order, a batch at a time: the caller may decode the next batch (on
    /// another thread, say) while this one is applied. [`Graph::replay_encoded`]
    /// is this with the decoding done in line.
    pub fn ordered_replay(len: usize) -> OrderedReplay {
        let mut graph = Graph::new();
        graph.reserve(len);
        OrderedReplay { graph, last: None }
    }

    /// Look up, before applying a batch of events, every id the batch will
    /// look up: its own ids and its references. The lookups of different ids
    /// do not depend on each other, so the processor overlaps their cache
    /// misses, where applying one event at a time waits for each in turn (a
    /// replay spent a quarter of its time in those waits). Pure reads; the
    /// results are thrown away, and a reference to an event earlier in the
    /// same batch just misses here.
    fn warm(&self, batch: &[LogEvent]) {
        for e in batch {
            std::hint::black_box(self.index.get(&self.nodes, &e.id));
            if let Body::Event(ev) = &e.body {
                ev.for_each_ref(|r| {
                    std::hint::black_box(self.index.get(&self.nodes, r));
                });
            }
        }
    }

    /// Room for `additional` more nodes: a replay knows how many events it
    /// holds, so neither the nodes nor the index ever grow (and copy) during it.
    fn reserve(&mut self, additional: usize) {
        self.nodes.reserve_exact(additional);
        self.index.reserve(additional);
    }

    /// Apply one event. Events must come in log order (see [`Graph::replay`]);
    /// returns `false`, applying nothing, if `event` sorts before the last one
    /// applied, in which case the caller replays. Applying an id twice is a no-op.
    pub fn apply(&mut self, mut event: LogEvent) -> bool {
        self.apply_in_place(&mut event)
    }

    /// [`Graph::apply`] without moving the event (216 bytes, and a replay
    /// moved each several times): its text is taken into the node, what is
    /// left is the caller's to drop. An event held as pending is moved out,
    /// leaving a redacted one with its id and position.
    fn apply_in_place(&mut self, event: &mut LogEvent) -> bool {
        if self.index.contains(&self.nodes, &event.id) {
            return true;
        }
        self.id_order.take();
        if self.last_pos.is_some_and(|last| event.pos < last) {
            return false;
        }
        self.last_pos = Some(event.pos);
        let id = event.id;
        if self.try_apply(event) && !self.waiting.is_empty() {
            self.release(id);
        }
        true
    }

    /// Apply `e` if every event it refers to is known; otherwise hold it as
    /// pending under the first one missing. True if applied.
    fn try_apply(&mut self, e: &mut LogEvent) -> bool {
        let refs = match &e.body {
            Body::Event(ev) => ev.ref_list(),
            _ => crate::event::RefList::default(),
        };
        // Each reference is looked up once, here; the rules and effects then
        // reach its node by position.
        let mut targets = Targets::default();
        for r in refs.iter() {
            match self.index.get(&self.nodes, r) {
                Some(ix) => targets.push(ix),
                None => {
                    let held = std::mem::replace(e, LogEvent { id: e.id, pos: e.pos, body: Body::Redacted, redacted: false });
                    self.pending_count += 1;
                    self.waiting.entry(*r).or_default().push(held);
                    return false;
                }
            }
        }
        self.apply_ready(e, &refs, &targets);
        true
    }

    /// Apply the events that waited for `id` (just applied), in log order,
    /// each followed at once by those that waited for it.
    fn release(&mut self, id: EntryId) {
        let mut stack: Vec<LogEvent> = Vec::new();
        self.take_waiting(&id, &mut stack);
        while let Some(mut e) = stack.pop() {
            let id = e.id;
            if self.index.contains(&self.nodes, &id) {
                continue;
            }
            if self.try_apply(&mut e) {
                self.take_waiting(&id, &mut stack);
            }
        }
    }

    /// Move the events waiting for `id` onto `stack`, the earliest on top.
    fn take_waiting(&mut self, id: &EntryId, stack: &mut Vec<LogEvent>) {
        if let Some(mut released) = self.waiting.remove(id) {
            self.pending_count -= released.len();
            released.sort_by_key(|r| std::cmp::Reverse((r.pos, r.id)));
            stack.extend(released);
        }
    }

    /// Add the node for `e`, whose references `refs` are all known, at
    /// `targets`; then, if it keeps the rules, its effects.
    fn apply_ready(&mut self, e: &mut LogEvent, refs: &[EntryId], targets: &[Ix]) {
        let (id, pos, body) = (e.id, e.pos, &mut e.body);
        let kind = match body {
            Body::Raw => "raw",
            Body::Redacted => "redacted",
            Body::Undecodable(_) => "invalid",
            Body::Event(ev) => ev.kind_name(),
        };
        let author = self.author(&pos.author);
        let mut node = Node::new(id, pos, author, kind);
        let mut concurrent = None;
        let invalid = match body {
            Body::Raw | Body::Redacted => None,
            Body::Undecodable(err) => Some(err.to_string()),
            Body::Event(ev) => match self.check_refs(id, ev, refs, targets) {
                Err(err) => match self.concurrent_setter(ev, &err, targets, author) {
                    // Blocked by another agent's event that is not on this
                    // event's chain: concurrent, so log order (the authors'
                    // clocks) must not decide. Kept valid; a conflict.
                    Some(setter) => {
                        concurrent = Some(setter);
                        node.meta = Meta::of(ev);
                        None
                    }
                    None => Some(err.to_string()),
                },
                Ok(()) => {
                    node.meta = Meta::of(ev);
                    if let Event::Claim { expires_at_ms: Some(t), .. } = ev {
                        node.extra.get_or_insert_with(Box::default).expires_at_ms = Some(*t);
                    }
                    None
                }
            },
        };
        let valid = invalid.is_none();
        if let Some(reason) = invalid {
            node.extra.get_or_insert_with(Box::default).invalid = Some(reason.into_boxed_str());
        }
        assert!(self.nodes.len() < NODES_MAX, "more than {NODES_MAX} nodes");
        let me = self.nodes.len() as Ix;
        self.nodes.push(node);
        self.index.insert(&id, me);
        if e.redacted {
            self.extra_at(me).redacted = true;
        }
        if let Body::Event(ev) = body {
            if valid {
                match concurrent {
                    None => self.effects(me, ev, targets, e.redacted),
                    Some(setter) => self.concurrent_effects(me, ev, targets, setter, e.redacted),
                }
            }
            self.nodes[me as usize].text = ev.take_text();
        }
    }

    /// When `ev` (by `author`) breaks a state rule only because of an event
    /// by another agent, that event's id. Such an event is not on `ev`'s
    /// chain, so nothing says `ev`'s author saw it: the two are concurrent,
    /// and which one log order puts first is decided by the authors' clocks,
    /// which must not decide between agents. (Conservative: an event another
    /// agent's chain references is still counted as concurrent.) `None`: the
    /// state was set by `ev`'s own author earlier on its chain (the chain's
    /// order is its own), or by nobody, and the rule stands.
    fn concurrent_setter(&self, ev: &Event, err: &RuleError, t: &[Ix], author: u32) -> Option<EntryId> {
        if !matches!(err, RuleError::WrongState { .. } | RuleError::Cycle { .. }) {
            return None;
        }
        let x = self.at(*t.first()?)?.x();
        let by_author = |id: &EntryId| self.index.get(&self.nodes, id).map(|ix| self.nodes[ix as usize].author);
        // Resolving or parking twice: refused if this author already did.
        let unless_own = |mark: Mark| {
            let all = x.all(mark);
            (!all.iter().any(|id| by_author(id) == Some(author))).then(|| all.last().copied()).flatten()
        };
        let setter = match ev {
            Event::Resolve { .. } => unless_own(Mark::ResolvedBy),
            Event::Park { .. } => unless_own(Mark::ParkedBy),
            Event::Resume { .. } => x.resumed_by,
            Event::FrameEvidence { .. }
            | Event::FrameConclude { .. }
            | Event::FrameSuspend { .. }
            | Event::FrameResume { .. }
            | Event::TaskUpdate { .. } => x.state_by,
            Event::Judgment { .. } => x.judged_by,
            // `from` is already superseded, transitively, by `to`: the first
            // step of that chain was taken by its successor's author.
            Event::Relate { .. } => x.first(Mark::SupersededBy),
            _ => None,
        }?;
        let setter_ix = self.index.get(&self.nodes, &setter)?;
        (self.nodes[setter_ix as usize].author != author).then_some(setter)
    }

    /// The effects of an event that [`Graph::concurrent_setter`] found
    /// concurrent with `setter`. Exclusive outcomes (two resolutions, two
    /// judgments, a completion against a reopening, a task moved after
    /// another agent closed it, two supersessions that would form a cycle)
    /// both stay and mark the target as a conflict, which makes it
    /// contested; outcomes that agree (a second park, a second resume,
    /// evidence for a frame another agent closed) just apply.
    fn concurrent_effects(&mut self, me: Ix, ev: &Event, t: &[Ix], setter: EntryId, redacted: bool) {
        let me_id = self.nodes[me as usize].id;
        let state = self.at(t[0]).map(|n| (n.x().frame_state, n.x().task_state));
        let conflict_on: Vec<Ix> = match ev {
            Event::Park { .. } | Event::FrameEvidence { .. } => {
                self.effects(me, ev, t, redacted);
                Vec::new()
            }
            Event::Resume { .. } => {
                self.touch(t[0], me);
                Vec::new()
            }
            Event::FrameSuspend { .. } if state.is_some_and(|(f, _)| f == Some(FrameState::Suspended)) => {
                self.touch(t[0], me);
                Vec::new()
            }
            Event::FrameResume { .. } if state.is_some_and(|(f, _)| f == Some(FrameState::Active)) => {
                self.touch(t[0], me);
                Vec::new()
            }
            Event::Judgment { .. } => {
                // The outcome counts stay with the first judgment; both are shown.
                self.edge(me, "judges", t[0]);
                vec![t[0]]
            }
            Event::Relate { relation, to, .. } => {
                // No supersession (it would close a cycle): the relation stands
                // as an edge, both claims contested.
                self.touch(t[0], me);
                self.edge(me, relation.name(), t[1]);
                push_tight(&mut self.nodes[t[0] as usize].edges, (relation.name(), *to));
                vec![t[0], t[1]]
            }
            _ => {
                self.effects(me, ev, t, redacted);
                vec![t[0]]
            }
        };
        for ix in conflict_on {
            let own = self.nodes[ix as usize].id;
            let n = self.extra_at(ix);
            if own != setter && !n.all(Mark::Conflict).contains(&setter) {
                n.push(Mark::Conflict, setter);
            }
            n.push(Mark::Conflict, me_id);
        }
    }

    /// The author's index in the author table, adding it on first sight.
    fn author(&mut self, author: &AgentId) -> u32 {
        if let Some(a) = self.author_index.get(author) {
            return *a;
        }
        // At most one new author a node, so this fits as positions do.
        assert!(self.authors.len() < NODES_MAX);
        let a = self.authors.len() as u32;
        self.authors.push(*author);
        self.author_index.insert(*author, a);
        a
    }

    /// The node at `ix`; `None` for [`UNKNOWN`].
    fn at(&self, ix: Ix) -> Option<&Node> {
        self.nodes.get(ix as usize)
    }

    fn kind_at(&self, ix: Ix) -> &'static str {
        self.at(ix).map_or("unknown", |n| if n.invalid().is_some() { "invalid" } else { n.kind })
    }

    /// The rule that `target` (at `ix`) is of one of `kinds`.
    fn expect(&self, event: &'static str, ix: Ix, target: &EntryId, kinds: &[&str], expected: &'static str) -> Result<(), RuleError> {
        let kind = self.kind_at(ix);
        // A redacted event's kind is unknowable here; redaction must not turn
        // the events that refer to it into rule breakers, so it matches any kind.
        if kinds.contains(&kind) || kind == "redacted" {
            Ok(())
        } else {
            Err(RuleError::WrongKind { event, target: *target, kind, expected })
        }
    }

    /// Check an event against the rules, given that all its references are known.
    /// Used for local writes (refuse) and for arrivals (mark invalid).
    pub fn check(&self, id: EntryId, ev: &Event) -> Result<(), RuleError> {
        let refs = ev.ref_list();
        let mut targets = Targets::default();
        for r in refs.iter() {
            targets.push(self.index.get(&self.nodes, r).unwrap_or(UNKNOWN));
        }
        self.check_refs(id, ev, &refs, &targets)
    }

    /// [`Graph::check`] with the event's references already collected and
    /// resolved: `targets[i]` is the node `refs[i]` names ([`UNKNOWN`] if none),
    /// in [`Event::ref_list`] order, which is field order.
    fn check_refs(&self, id: EntryId, ev: &Event, refs: &[EntryId], t: &[Ix]) -> Result<(), RuleError> {
        assert_eq!(refs.len(), t.len());
        for (i, r) in refs.iter().enumerate() {
            if *r == id || refs[..i].contains(r) {
                return Err(RuleError::SelfReference(*r));
            }
        }
        let name = ev.kind_name();
        let wrong_state = |target: &EntryId, state: String| Err(RuleError::WrongState { event: name, target: *target, state });
        match ev {
            Event::Proposition { .. } | Event::Question { .. } | Event::Task { .. } | Event::Trajectory { .. } => Ok(()),
            Event::Support { target, .. } | Event::Contradiction { target, .. } => {
                self.expect(name, t[0], target, POSITION_KINDS, "a position (proposition, claim, refinement, ...)")
            }
            Event::Refinement { target, resolves, .. } => {
                self.expect(name, t[0], target, POSITION_KINDS, "a position")?;
                for (c, &ix) in resolves.iter().zip(&t[1..]) {
                    self.expect(name, ix, c, &["contradiction"], "a contradiction to resolve")?;
                }
                Ok(())
            }
            Event::Synthesis { sources, .. } => {
                if sources.len() < 2 {
                    return Err(RuleError::SynthesisArity(sources.len()));
                }
                sources.iter().zip(t).try_for_each(|(s, &ix)| self.expect(name, ix, s, POSITION_KINDS, "a position"))
            }
            Event::Resolve { target, .. } => {
                let kind = self.kind_at(t[0]);
                let resolvable = matches!(kind, "question" | "contradiction" | "tension")
                    || matches!(self.at(t[0]).map(|n| n.meta), Some(Meta::Relate(Relation::Contradicts)));
                if !resolvable {
                    return Err(RuleError::WrongKind {
                        event: name,
                        target: *target,
                        kind,
                        expected: "a question, contradiction, tension or contradicts relation",
                    });
                }
                match self.at(t[0]).and_then(|n| n.x().last(Mark::ResolvedBy)) {
                    Some(by) => wrong_state(target, format!("already resolved by {by}")),
                    None => Ok(()),
                }
            }
            Event::Connection { a, b, .. } | Event::Tension { a, b, .. } => {
                self.expect(name, t[0], a, CONTENT_KINDS, "a content node")?;
                self.expect(name, t[1], b, CONTENT_KINDS, "a content node")
            }
            Event::Reframe { target, .. } => {
                let mut kinds = POSITION_KINDS.to_vec();
                kinds.push("question");
                self.expect(name, t[0], target, &kinds, "a position or question")
            }
            Event::Park { target, .. } => {
                self.expect(name, t[0], target, CONTENT_KINDS, "a content node")?;
                match self.at(t[0]).and_then(|n| n.x().last(Mark::ParkedBy)) {
                    Some(_) => wrong_state(target, "already parked".into()),
                    None => Ok(()),
                }
            }
            Event::Resume { target } => {
                self.expect(name, t[0], target, CONTENT_KINDS, "a content node")?;
                match self.at(t[0]).and_then(|n| n.x().last(Mark::ParkedBy)) {
                    Some(_) => Ok(()),
                    None => wrong_state(target, "not parked".into()),
                }
            }
            Event::Claim { sources, .. } => {
                sources.iter().zip(t).try_for_each(|(s, &ix)| self.expect(name, ix, s, CONTENT_KINDS, "a source event"))
            }
            Event::Relate { from, to, relation, .. } => {
                self.expect(name, t[0], from, CLAIM_KINDS, "a claim-like node (proposition, claim, refinement, ...)")?;
                self.expect(name, t[1], to, CLAIM_KINDS, "a claim-like node (proposition, claim, refinement, ...)")?;
                if relation.supersedes() && self.supersedes_transitively(to, from) {
                    return Err(RuleError::Cycle { from: *from, to: *to });
                }
                Ok(())
            }
            Event::Confirm { target } => self.expect(name, t[0], target, &["claim"], "a claim"),
            Event::FrameOpen { parent, branched_from, .. } => parent
                .iter()
                .chain(branched_from.iter())
                .zip(t)
                .try_for_each(|(f, &ix)| self.expect(name, ix, f, &["frame_open"], "a frame")),
            Event::FrameEvidence { frame, .. } | Event::FrameConclude { frame, .. } => {
                self.expect(name, t[0], frame, &["frame_open"], "a frame")?;
                match self.at(t[0]).and_then(|n| n.x().frame_state) {
                    Some(FrameState::Active) => Ok(()),
                    Some(s) => wrong_state(frame, format!("a {} frame", s.name())),
                    None => Ok(()),
                }
            }
            Event::FrameSuspend { frame } => {
                self.expect(name, t[0], frame, &["frame_open"], "a frame")?;
                match self.at(t[0]).and_then(|n| n.x().frame_state) {
                    Some(FrameState::Active) => Ok(()),
                    s => wrong_state(frame, format!("a {} frame", s.map_or("unknown", |s| s.name()))),
                }
            }
            Event::FrameResume { frame } => {
                self.expect(name, t[0], frame, &["frame_open"], "a frame")?;
                match self.at(t[0]).and_then(|n| n.x().frame_state) {
                    Some(FrameState::Suspended | FrameState::Invalidated) => Ok(()),
                    s => wrong_state(frame, format!("a {} frame", s.map_or("unknown", |s| s.name()))),
                }
            }
            Event::FrameInvalidate { frame, .. } => self.expect(name, t[0], frame, &["frame_open"], "a frame"),
            Event::TaskUpdate { task, .. } => {
                self.expect(name, t[0], task, &["task"], "a task")?;
                match self.at(t[0]).and_then(|n| n.x().task_state) {
                    Some(s @ (TaskState::Done | TaskState::Abandoned)) => wrong_state(task, format!("a {} task", s.name())),
                    _ => Ok(()),
                }
            }
            Event::Judgment { trajectory, .. } => {
                self.expect(name, t[0], trajectory, &["trajectory"], "a trajectory")?;
                match self.at(t[0]).and_then(|n| n.x().judged) {
                    Some(_) => wrong_state(trajectory, "already judged".into()),
                    None => Ok(()),
                }
            }
            Event::MemoryItem { source_trajectory, .. } => source_trajectory
                .iter()
                .zip(t)
                .try_for_each(|(s, &ix)| self.expect(name, ix, s, &["trajectory"], "a trajectory")),
            Event::Usage { trajectory, item, .. } => {
                self.expect(name, t[0], trajectory, &["trajectory"], "a trajectory")?;
                self.expect(name, t[1], item, &["memory_item"], "a memory item")
            }
        }
    }

    /// Does `a` (transitively) supersede `b`? Walks `b`'s successor chain.
    fn supersedes_transitively(&self, a: &EntryId, b: &EntryId) -> bool {
        let mut cur = *b;
        let mut steps = 0usize;
        while let Some(next) = self.node(&cur).and_then(|n| n.x().first(Mark::SupersededBy)) {
            if next == *a {
                return true;
            }
            cur = next;
            steps += 1;
            if steps > self.nodes.len() {
                return true; // defensive: a cycle already exists
            }
        }
        a == b
    }

    /// The position of a node a mark names. Marks only ever name applied
    /// nodes, so a miss is a broken invariant, not bad input.
    fn ix_of(&self, id: &EntryId) -> Ix {
        self.index.get(&self.nodes, id).unwrap_or_else(|| panic!("marked node {id} is not in the graph"))
    }

    fn extra_at(&mut self, ix: Ix) -> &mut Extra {
        self.nodes[ix as usize].extra.get_or_insert_with(Box::default)
    }

    /// Record that `by` touched `target` (once, and never a node itself).
    fn touch(&mut self, target: Ix, by: Ix) {
        let by_id = self.nodes[by as usize].id;
        let n = &mut self.nodes[target as usize];
        if n.touched.last() != Some(&by_id) && target != by {
            push_tight(&mut n.touched, by_id);
        }
    }

    fn edge(&mut self, from: Ix, relation: &'static str, to: Ix) {
        let to_id = self.nodes[to as usize].id;
        push_tight(&mut self.nodes[from as usize].edges, (relation, to_id));
        self.touch(to, from);
    }

    fn set_frame_state(&mut self, frame: Ix, state: FrameState, by: EntryId) {
        let n = self.extra_at(frame);
        n.frame_state = Some(state);
        n.state_by = Some(by);
    }

    fn supersede(&mut self, target: Ix, by: EntryId) {
        let n = self.extra_at(target);
        if !n.has(Mark::SupersededBy) {
            n.push(Mark::SupersededBy, by);
        }
    }

    /// Close challenge `c` (answered by `by`): every node it challenged
    /// survived it.
    fn close_challenge(&mut self, c: Ix, by: Ix) {
        let (c_id, by_id) = (self.nodes[c as usize].id, self.nodes[by as usize].id);
        self.extra_at(c).push(Mark::ResolvedBy, by_id);
        let challenged: Vec<Ix> = self.nodes[c as usize]
            .edges
            .iter()
            .filter(|(r, _)| matches!(*r, "contradicts" | "tension"))
            .map(|(_, t)| self.ix_of(t))
            .collect();
        for t in challenged {
            let n = self.extra_at(t);
            let was_challenge = n.remove(Mark::OpenChallenge, c_id);
            let was_tension = n.remove(Mark::Tension, c_id);
            if was_challenge || was_tension {
                n.push(Mark::Survived, c_id);
            }
            self.touch(t, by);
        }
    }

    /// What a valid event does to the graph. `me` is its own (newest) node,
    /// `t` its references' nodes in [`Event::ref_list`] order.
    fn effects(&mut self, me: Ix, ev: &Event, t: &[Ix], redacted: bool) {
        let id = self.nodes[me as usize].id;
        match ev {
            Event::Proposition { .. } | Event::Question { .. } | Event::Trajectory { .. } => {}
            Event::Task { .. } => self.extra_at(me).task_state = Some(TaskState::Created),
            Event::Support { .. } => self.edge(me, "supports", t[0]),
            Event::Contradiction { .. } => {
                self.edge(me, "contradicts", t[0]);
                self.extra_at(t[0]).push(Mark::OpenChallenge, id);
            }
            Event::Refinement { resolves, .. } => {
                self.edge(me, "refines", t[0]);
                self.supersede(t[0], id);
                for (c, &cx) in resolves.iter().zip(&t[1..]) {
                    self.edge(me, "resolves", cx);
                    self.close_challenge(cx, me);
                    self.extra_at(me).push(Mark::Closed, *c);
                }
                if !resolves.is_empty() {
                    self.extra_at(me).push(Mark::ResolvedBy, id);
                }
            }
            Event::Synthesis { .. } => {
                for &s in t {
                    self.edge(me, "synthesizes", s);
                }
            }
            Event::Resolve { .. } => {
                self.edge(me, "resolves", t[0]);
                self.close_challenge(t[0], me);
            }
            Event::Connection { .. } => {
                self.edge(me, "connects", t[0]);
                self.edge(me, "connects", t[1]);
            }
            Event::Tension { .. } => {
                for &x in &t[..2] {
                    self.edge(me, "tension", x);
                    self.extra_at(x).push(Mark::Tension, id);
                }
            }
            Event::Reframe { .. } => {
                self.edge(me, "reframes", t[0]);
                self.supersede(t[0], id);
            }
            Event::Park { .. } => {
                self.touch(t[0], me);
                self.extra_at(t[0]).push(Mark::ParkedBy, id);
            }
            Event::Resume { .. } => {
                self.touch(t[0], me);
                let n = self.extra_at(t[0]);
                n.clear(Mark::ParkedBy);
                n.resumed_by = Some(id);
            }
            Event::Claim { .. } => {
                for &s in t {
                    self.edge(me, "derived_from", s);
                }
            }
            Event::Relate { from, to, relation, .. } => {
                let (fx, tx) = (t[0], t[1]);
                self.touch(fx, me);
                self.edge(me, relation.name(), tx);
                push_tight(&mut self.nodes[fx as usize].edges, (relation.name(), *to));
                match relation {
                    Relation::Update | Relation::StateChange => self.supersede(tx, *from),
                    Relation::Expands | Relation::Qualifies => {}
                    Relation::Contradicts => {
                        // No winner: both sides are challenged by this relation.
                        push_tight(&mut self.nodes[me as usize].edges, ("contradicts", *from));
                        self.extra_at(fx).push(Mark::OpenChallenge, id);
                        self.extra_at(tx).push(Mark::OpenChallenge, id);
                    }
                    Relation::Retracts => self.extra_at(tx).push(Mark::RetractedBy, id),
                    Relation::SameAs => {
                        let n = self.extra_at(fx);
                        n.push(Mark::DuplicateOf, *to);
                        n.push(Mark::DuplicateBy, id);
                    }
                }
            }
            Event::Confirm { .. } => {
                self.touch(t[0], me);
                self.extra_at(t[0]).confirmed = true;
            }
            Event::FrameOpen { parent, branched_from, .. } => {
                self.extra_at(me).frame_state = Some(FrameState::Active);
                // `t` holds the parent first when there is one, then the frame branched from.
                let branched = usize::from(parent.is_some());
                if parent.is_some() {
                    let p = t[0];
                    self.edge(me, "child_of", p);
                    self.extra_at(p).push(Mark::FrameChild, id);
                }
                if branched_from.is_some() {
                    let b = t[branched];
                    self.edge(me, "branched_from", b);
                    let n = self.extra_at(b);
                    if n.frame_state == Some(FrameState::Active) {
                        n.frame_state = Some(FrameState::Suspended);
                        n.state_by = Some(id);
                    }
                }
            }
            Event::FrameEvidence { .. } => self.edge(me, "evidence_for", t[0]),
            Event::FrameConclude { .. } => {
                self.edge(me, "concludes", t[0]);
                self.set_frame_state(t[0], FrameState::Completed, id);
            }
            Event::FrameSuspend { .. } => {
                self.touch(t[0], me);
                self.set_frame_state(t[0], FrameState::Suspended, id);
            }
            Event::FrameResume { .. } => {
                self.touch(t[0], me);
                self.set_frame_state(t[0], FrameState::Active, id);
            }
            Event::FrameInvalidate { .. } => {
                // Top-down cascade: the frame, then every frame under it.
                let mut stack = vec![t[0]];
                while let Some(f) = stack.pop() {
                    self.touch(f, me);
                    self.set_frame_state(f, FrameState::Invalidated, id);
                    let n = self.extra_at(f);
                    let children = n.all(Mark::FrameChild);
                    stack.extend(children.iter().rev().map(|c| self.ix_of(c)));
                }
            }
            Event::TaskUpdate { state, .. } => {
                self.touch(t[0], me);
                let n = self.extra_at(t[0]);
                n.task_state = Some(*state);
                n.state_by = Some(id);
            }
            Event::Judgment { success, .. } => {
                self.edge(me, "judges", t[0]);
                let n = self.extra_at(t[0]);
                n.judged = Some(*success);
                n.judged_by = Some(id);
                let usages: Vec<EntryId> = self.extra_at(t[0]).all(Mark::Usage);
                for u in usages {
                    if let Some(item) = self.nodes[self.ix_of(&u) as usize].x().first(Mark::UsageItem) {
                        self.count_outcome(self.ix_of(&item), *success);
                    }
                }
            }
            Event::MemoryItem { title, content, source_trajectory, .. } => {
                if source_trajectory.is_some() {
                    self.edge(me, "extracted_from", t[0]);
                }
                // A redacted item keeps its content id in its residue (see
                // `Event::residue`): the same duplicates either way.
                let cid = match redacted.then(|| crate::event::residue_content_id(content)).flatten() {
                    Some(cid) => cid,
                    None => memory_item_content_id(title, content),
                };
                match self.content_ids.get(&cid) {
                    Some(&first) => {
                        let first_id = self.nodes[first as usize].id;
                        let n = self.extra_at(me);
                        n.push(Mark::DuplicateOf, first_id);
                        n.push(Mark::DuplicateBy, id);
                        self.touch(first, me);
                    }
                    None => {
                        self.content_ids.insert(cid, me);
                    }
                }
            }
            Event::Usage { item, .. } => {
                self.extra_at(me).push(Mark::UsageItem, *item);
                self.edge(me, "used_in", t[0]);
                self.edge(me, "uses", t[1]);
                self.extra_at(t[0]).push(Mark::Usage, id);
                self.extra_at(t[1]).push(Mark::Usage, id);
                if let Some(success) = self.extra_at(t[0]).judged {
                    self.count_outcome(t[1], success);
                }
            }
        }
    }

    fn count_outcome(&mut self, item: Ix, success: bool) {
        let n = self.extra_at(item);
        if success {
            n.successes += 1;
        } else {
            n.failures += 1;
        }
    }

    /// Where a node sits in the log: its timestamp, author and seq.
    pub fn position(&self, node: &Node) -> LogPosition {
        LogPosition { timestamp_ms: node.timestamp_ms, author: self.authors[node.author as usize], seq: node.seq }
    }

    /// A node by id.
    pub fn node(&self, id: &EntryId) -> Option<&Node> {
        self.index.get(&self.nodes, id).map(|i| &self.nodes[i as usize])
    }

    /// Nodes in application order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    /// Number of applied nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing is applied.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Events held for references that have not arrived, in log order.
    pub fn pending(&self) -> Vec<Pending> {
        let mut out: Vec<Pending> = self
            .waiting
            .values()
            .flatten()
            .map(|e| {
                let missing = match &e.body {
                    Body::Event(ev) => ev.refs().into_iter().filter(|r| !self.index.contains(&self.nodes, r)).collect(),
                    _ => Vec::new(),
                };
                Pending { event: e.clone(), missing }
            })
            .collect();
        out.sort_by_key(|p| (p.event.pos, p.event.id));
        debug_assert_eq!(out.len(), self.pending_count);
        out
    }

    /// Follow update, state-change, refinement and reframe edges to the
    /// current state of `id` (itself if nothing supersedes it).
    pub fn latest_in_chain(&self, id: &EntryId) -> Option<EntryId> {
        let mut cur = *self.node(id)?.id();
        let mut steps = 0;
        while let Some(next) = self.node(&cur).and_then(|n| n.x().first(Mark::SupersededBy)) {
            cur = next;
            steps += 1;
            if steps > self.nodes.len() {
                break;
            }
        }
        Some(cur)
    }

    /// The nodes in id order: the order of [`Graph::snapshot`] and of
    /// published views. Computed on first use and kept until the next event
    /// is applied.
    pub fn by_id(&self) -> ById<'_> {
        ById { graph: self, order: self.id_order.get_or_init(|| self.sort_by_id()) }
    }

    /// Node positions sorted by id. Sorts (first eight bytes, position)
    /// pairs, which stay in cache, rather than the nodes or references to
    /// them (a comparison of two nodes' ids is two cache misses), on every
    /// thread. (A bucket sort on the ids' leading bits, which are uniform, was
    /// measured slower here: 42-51 ms against 31-37 ms for 730k nodes.) Ids
    /// are SHA-256 outputs, so equal prefixes are rare and are ordered by the
    /// whole id afterwards.
    fn sort_by_id(&self) -> Vec<Ix> {
        let keys: Vec<(u64, Ix)> = self
            .nodes
            .par_iter()
            .enumerate()
            .map(|(i, n)| {
                let mut first = [0u8; 8];
                first.copy_from_slice(&n.id.as_bytes()[..8]);
                (u64::from_be_bytes(first), i as Ix)
            })
            .collect();
        let mut sorted = keys;
        sorted.par_sort_unstable();
        // Runs of equal prefixes, by the whole id.
        let mut i = 0;
        while i < sorted.len() {
            let run = sorted[i..].iter().take_while(|k| k.0 == sorted[i].0).count();
            if run > 1 {
                sorted[i..i + run].sort_unstable_by(|a, b| self.nodes[a.1 as usize].id.cmp(&self.nodes[b.1 as usize].id));
            }
            i += run;
        }
        sorted.into_iter().map(|(_, i)| i).collect()
    }

    /// The canonical bytes of the derived graph: every node sorted by id with
    /// its kind, status, settled flag and the events that made it so, plus the
    /// pending set. Two graphs with equal snapshots are equal views.
    pub fn snapshot(&self) -> Vec<u8> {
        let by_id = self.by_id();
        let mut out = Vec::new();
        by_id.write_nodes(0..by_id.len(), &mut out);
        self.write_pending(&mut out);
        out
    }

    /// SHA-256 of [`Graph::snapshot`]: a short fingerprint of the view.
    ///
    /// The snapshot is never held whole (about 170 bytes a node). It is
    /// written a piece at a time, each piece in parts on every thread, and
    /// the next piece is written while the last one is hashed: writing (which
    /// reads the nodes in id order, so from anywhere in memory) takes about
    /// twice as long as hashing, and hashing is the one step that cannot be
    /// split.
    pub fn view_hash(&self) -> [u8; 32] {
        use sha2::Digest;
        let by_id = self.by_id();
        let len = by_id.len();
        let parts = |piece: usize| (0..VIEW_HASH_PARTS).map(move |p| {
            let start = piece * VIEW_HASH_PIECE + p * VIEW_HASH_PIECE / VIEW_HASH_PARTS;
            start.min(len)..(start + VIEW_HASH_PIECE / VIEW_HASH_PARTS).min(len)
        });
        let write = |piece: usize, bufs: &mut Vec<Vec<u8>>| {
            bufs.par_iter_mut().zip(parts(piece).collect::<Vec<_>>()).for_each(|(buf, range)| {
                buf.clear();
                by_id.write_nodes(range, buf);
            });
        };
        let mut hasher = sha2::Sha256::new();
        let mut current = vec![Vec::new(); VIEW_HASH_PARTS];
        let mut next = vec![Vec::new(); VIEW_HASH_PARTS];
        write(0, &mut current);
        for piece in 1..=len.div_ceil(VIEW_HASH_PIECE) {
            rayon::join(|| current.iter().for_each(|b| hasher.update(b)), || write(piece, &mut next));
            std::mem::swap(&mut current, &mut next);
        }
        let mut tail = Vec::new();
        self.write_pending(&mut tail);
        hasher.update(&tail);
        hasher.finalize().into()
    }

    /// The snapshot's tail: the ids of the events held as pending, in log order.
    fn write_pending(&self, out: &mut Vec<u8>) {
        let mut held: Vec<(LogPosition, EntryId)> = self.waiting.values().flatten().map(|e| (e.pos, e.id)).collect();
        held.sort_unstable();
        for (_, id) in held {
            out.extend_from_slice(id.as_bytes());
        }
    }
}

/// A graph's nodes in id order (see [`Graph::by_id`]).
#[derive(Clone, Copy)]
pub struct ById<'g> {
    graph: &'g Graph,
    order: &'g [Ix],
}

impl<'g> ById<'g> {
    /// The nodes, ascending by id.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = &'g Node> + 'g {
        let nodes = &self.graph.nodes;
        self.order.iter().map(move |&i| &nodes[i as usize])
    }

    /// The node at `k` in id order.
    pub fn get(&self, k: usize) -> Option<&'g Node> {
        self.order.get(k).map(|&i| &self.graph.nodes[i as usize])
    }

    /// Where `id` is in id order, if it is a node.
    pub fn position(&self, id: &EntryId) -> Option<usize> {
        let k = self.order.partition_point(|&i| self.graph.nodes[i as usize].id < *id);
        self.get(k).is_some_and(|n| n.id == *id).then_some(k)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Load, before reading the nodes at `range` (in id order), the memory
    /// their snapshot is written from: each node, then what it points to
    /// (touched-by list, edges, extra state, its marks). In id order consecutive nodes sit
    /// anywhere in memory, and reading them one at a time waits for each miss
    /// in turn; these loads do not depend on each other, so the processor
    /// overlaps them (as [`Graph::replay`] does for its lookups). Pure reads.
    fn warm(&self, range: std::ops::Range<usize>) {
        let order = &self.order[range];
        for &i in order {
            let n = &self.graph.nodes[i as usize];
            std::hint::black_box((n.id.0[0], n.extra.is_some(), n.edges.len(), n.touched.len(), n.text.len()));
        }
        for &i in order {
            let n = &self.graph.nodes[i as usize];
            std::hint::black_box((n.touched.first().map(|t| t.0[0]), n.edges.first().map(|e| e.1 .0[0]), n.extra.as_deref().map(|x| x.marks.len())));
        }
        for &i in order {
            let n = &self.graph.nodes[i as usize];
            std::hint::black_box(n.extra.as_deref().and_then(|x| x.marks.first()).map(|m| m.1 .0[0]));
        }
    }

    /// Append the snapshot bytes of the nodes at `range` (in id order) to `out`.
    fn write_nodes(&self, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        for start in range.clone().step_by(WARM_BATCH) {
            let end = (start + WARM_BATCH).min(range.end);
            self.warm(start..end);
            for &i in &self.order[start..end] {
                write_snapshot_node(&self.graph.nodes[i as usize], out);
            }
        }
    }
}

/// One node's part of [`Graph::snapshot`]. Lists are written as a 4-byte
/// big-endian count and the ids; counts are patched in after the ids, so no
/// list is collected first.
fn write_snapshot_node(n: &Node, out: &mut Vec<u8>) {
    fn list(out: &mut Vec<u8>, ids: impl FnOnce(&mut dyn FnMut(EntryId))) {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        let mut count = 0u32;
        ids(&mut |id| {
            out.extend_from_slice(id.as_bytes());
            count += 1;
        });
        out[at..at + 4].copy_from_slice(&count.to_be_bytes());
    }
    out.extend_from_slice(n.id.as_bytes());
    let Some(x) = n.extra.as_deref() else {
        // Most nodes: nothing but the node itself and what touched it. Active
        // (no mark or state), not settled, every list but the first empty, no
        // frame or task state, no outcomes.
        debug_assert_eq!(n.status(), Status::Active);
        out.extend_from_slice(n.kind.as_bytes());
        out.extend_from_slice(&[0, Status::Active as u8, 0]);
        out.extend_from_slice(&(1 + n.touched.len() as u32).to_be_bytes());
        out.extend_from_slice(n.id.as_bytes());
        for t in &n.touched {
            out.extend_from_slice(t.as_bytes());
        }
        out.extend_from_slice(&[0; 16]);
        for (rel, to) in &n.edges {
            out.extend_from_slice(rel.as_bytes());
            out.extend_from_slice(to.as_bytes());
        }
        out.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        return;
    };
    let of = |mark: Mark| move |f: &mut dyn FnMut(EntryId)| x.marks.iter().filter(|(m, _)| *m == mark).for_each(|(_, id)| f(*id));
    out.extend_from_slice(n.kind.as_bytes());
    out.push(0);
    let status = n.status();
    out.push(status as u8);
    out.push(n.settled() as u8);
    list(out, |f| std::iter::once(n.id).chain(n.touched.iter().copied()).for_each(f));
    list(out, |f| n.for_each_why(status, f));
    list(out, of(Mark::OpenChallenge));
    list(out, of(Mark::Tension));
    list(out, of(Mark::FrameChild));
    for (rel, to) in &n.edges {
        out.extend_from_slice(rel.as_bytes());
        out.extend_from_slice(to.as_bytes());
    }
    out.push(x.frame_state.map_or(0xff, |s| s as u8));
    out.push(x.task_state.map_or(0xff, |s| s as u8));
    out.extend_from_slice(&x.successes.to_be_bytes());
    out.extend_from_slice(&x.failures.to_be_bytes());
    out.push(x.confirmed as u8);
}

/// A replay fed in log order (see [`Graph::ordered_replay`]).
pub struct OrderedReplay {
    graph: Graph,
    /// The (position, id) of the last event applied.
    last: Option<(LogPosition, EntryId)>,
}

/// A batch handed to an [`OrderedReplay`] was not in log order: strictly
/// ascending by (position, id), after everything applied before.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {id} is not after the event before it in log order (position, id)")]
pub struct NotInLogOrder {
    /// The first event out of order.
    pub id: EntryId,
}

impl OrderedReplay {
    /// Apply `batch`, which must continue the log order. Nothing of it is
    /// applied if it does not. Events are left behind with their text taken
    /// (the caller clears or drops the batch).
    pub fn apply_batch(&mut self, batch: &mut [LogEvent]) -> Result<(), NotInLogOrder> {
        let mut last = self.last;
        for e in batch.iter() {
            let key = (e.pos, e.id);
            if last.is_some_and(|l| key <= l) {
                return Err(NotInLogOrder { id: e.id });
            }
            last = Some(key);
        }
        self.last = last;
        for chunk in batch.chunks_mut(WARM_BATCH) {
            self.graph.warm(chunk);
            for e in chunk {
                let applied = self.graph.apply_in_place(e);
                debug_assert!(applied, "checked to be in log order");
            }
        }
        Ok(())
    }

    /// The graph of everything applied.
    pub fn finish(self) -> Graph {
        self.graph
    }
}

impl Node {
    /// The entry id.
    pub fn id(&self) -> &EntryId {
        &self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: EntryId) -> Node {
        Node::new(id, LogPosition { timestamp_ms: 0, author: AgentId([0; 32]), seq: 0 }, 0, "raw")
    }

    /// Ids that share their first eight bytes (the sort key) come out in
    /// full-id order, and the snapshot written in pieces is the one the
    /// hash covers.
    #[test]
    fn by_id_orders_ids_that_share_their_sort_prefix() {
        let author = AgentId([7; 32]);
        let events: Vec<LogEvent> = (0..10_000u32)
            .map(|i| {
                let mut id = [0u8; 32];
                id[..8].copy_from_slice(&u64::from(i % 3).to_be_bytes());
                id[8..12].copy_from_slice(&i.wrapping_mul(0x9e37_79b9).to_be_bytes());
                let pos = LogPosition { timestamp_ms: u64::from(i), author, seq: u64::from(i) + 1 };
                LogEvent::from_payload(EntryId(id), pos, Some(&Event::Proposition { text: format!("p{i}") }.encode()))
            })
            .collect();
        let mut events = events;
        let missing = EntryId([0xee; 32]);
        let pos = LogPosition { timestamp_ms: 20_000, author, seq: 20_000 };
        events.push(LogEvent::from_payload(EntryId([0xdd; 32]), pos, Some(&Event::Support { target: missing, text: "held".into() }.encode())));
        let g = Graph::replay(events);
        assert_eq!(g.pending().len(), 1, "the snapshot has a pending tail");
        assert!(g.id_order.get().is_none(), "computed on first use");
        let ids: Vec<EntryId> = g.by_id().nodes().map(|n| n.id).collect();
        let mut sorted: Vec<EntryId> = g.nodes().map(|n| n.id).collect();
        sorted.sort_unstable();
        assert_eq!(ids, sorted);
        assert_eq!(g.by_id().len(), 10_000);
        assert_eq!(g.view_hash(), agora_core::sha256(&g.snapshot()));
        assert!(g.len() > 2 * VIEW_HASH_PIECE, "the hash reads the snapshot in several pieces");
        for (k, n) in g.by_id().nodes().enumerate() {
            assert_eq!(g.by_id().position(&n.id), Some(k));
        }
        assert_eq!(g.by_id().position(&EntryId([0xff; 32])), None);
    }

    /// A batch out of log order is refused whole; the replay goes on from
    /// where it was.
    #[test]
    fn an_ordered_replay_refuses_a_batch_out_of_order_and_applies_none_of_it() {
        let author = AgentId([7; 32]);
        let ev = |i: u8, ts: u64| {
            let pos = LogPosition { timestamp_ms: ts, author, seq: u64::from(i) };
            LogEvent::from_payload(EntryId([i; 32]), pos, Some(&Event::Proposition { text: format!("p{i}") }.encode()))
        };
        let mut replay = Graph::ordered_replay(4);
        replay.apply_batch(&mut [ev(1, 10), ev(2, 20)]).unwrap();
        assert_eq!(replay.apply_batch(&mut [ev(3, 30), ev(4, 15)]), Err(NotInLogOrder { id: EntryId([4; 32]) }));
        let mut twin = ev(2, 20);
        twin.id = EntryId([1; 32]);
        assert_eq!(replay.apply_batch(&mut [twin]), Err(NotInLogOrder { id: EntryId([1; 32]) }), "same position as the last one, smaller id");
        replay.apply_batch(&mut [ev(3, 30)]).unwrap();
        let g = replay.finish();
        assert_eq!(g.nodes().map(|n| n.id.0[0]).collect::<Vec<_>>(), [1, 2, 3]);
    }

    /// Ids that share their hash (first four bytes), that sit at the end of
    /// the table (probing wraps around), and plain ones, inserted into a
    /// table that grows from its smallest size: every one is found at its
    /// position, and nothing else is.
    #[test]
    fn node_index_finds_what_it_holds_through_collisions_wraparound_and_growth() {
        let mut ids = Vec::new();
        for i in 0..300u32 {
            let mut id = [0u8; 32];
            match i % 3 {
                0 => id[..4].copy_from_slice(&0x5555_5555u32.to_le_bytes()),
                1 => id[..4].copy_from_slice(&u32::MAX.to_le_bytes()),
                _ => id[..4].copy_from_slice(&i.wrapping_mul(0x9e37_79b9).to_le_bytes()),
            }
            id[4..8].copy_from_slice(&i.to_le_bytes());
            ids.push(EntryId(id));
        }
        let mut nodes: Vec<Node> = Vec::new();
        let mut index = NodeIndex::default();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(index.get(&nodes, id), None);
            nodes.push(node(*id));
            index.insert(id, i as Ix);
            assert!(index.len * 4 <= index.slots.len() * 3, "at most 3/4 full");
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(index.get(&nodes, id), Some(i as Ix));
        }
        let mut absent = *ids[0].as_bytes();
        absent[31] = 1;
        assert_eq!(index.get(&nodes, &EntryId(absent)), None);
        assert_eq!(index.len, ids.len());
    }
}
