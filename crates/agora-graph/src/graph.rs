//! The reasoning graph: a pure, deterministic function of the events.
//!
//! Events are applied in **log order**: by (timestamp, author, seq), which every
//! node computes the same way from the same entries. An event whose references
//! are not all known yet is held as *pending* and applied the moment the last
//! one arrives. Nothing here is stored state that could drift: [`Graph::replay`]
//! rebuilds everything from the events, and [`Graph::snapshot`] gives a
//! canonical byte form so that a rebuild can be compared bit for bit.

use crate::event::{memory_item_content_id, Event, EventDecodeError, MemoryKind, Relation, TaskState};
use agora_core::{AgentId, EntryId};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// Entry ids are SHA-256 outputs, already uniformly distributed, so the index
/// hashes them by their first eight bytes instead of running SipHash over all
/// 32 (a third of the replay time went to hashing). Grinding ids that collide
/// in a table of a million buckets costs about a million SHA-256 evaluations
/// per entry, and every entry must be signed by an admitted author.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // `EntryId` hashes as its 32-byte array: a length prefix, then the bytes.
        if bytes.len() >= 8 {
            let mut first = [0u8; 8];
            first.copy_from_slice(&bytes[..8]);
            self.0 ^= u64::from_le_bytes(first);
        }
    }
    fn write_usize(&mut self, _: usize) {}
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<V> = HashMap<EntryId, V, BuildHasherDefault<IdHasher>>;

fn id_hash(id: &EntryId) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&id.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// Node positions by id. Only the u32 position is stored; the id is read from
/// the node itself, so the index costs 5 bytes a node instead of 37, which on
/// a million-node replay is 60 MB less memory to fault in.
#[derive(Clone, Debug, Default)]
struct NodeIndex {
    table: hashbrown::HashTable<u32>,
}

impl NodeIndex {
    fn get(&self, nodes: &[Node], id: &EntryId) -> Option<u32> {
        self.table.find(id_hash(id), |&i| nodes[i as usize].id == *id).copied()
    }
    fn contains(&self, nodes: &[Node], id: &EntryId) -> bool {
        self.get(nodes, id).is_some()
    }
    /// Index the node at position `i` (already in `nodes`).
    fn insert(&mut self, nodes: &[Node], i: u32) {
        let hash = id_hash(&nodes[i as usize].id);
        self.table.insert_unique(hash, i, |&j| id_hash(&nodes[j as usize].id));
    }
    fn reserve(&mut self, nodes: &[Node], additional: usize) {
        self.table.reserve(additional, |&j| id_hash(&nodes[j as usize].id));
    }
}

/// Where an event sits in the log: the order in which it is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogPosition {
    /// Author's timestamp.
    pub timestamp_ms: u64,
    /// Author.
    pub author: AgentId,
    /// Seq in the author's chain.
    pub seq: u64,
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
}

impl LogEvent {
    /// Classify a payload (`None` when not held).
    pub fn from_payload(id: EntryId, pos: LogPosition, payload: Option<&[u8]>) -> Self {
        let body = match payload {
            None => Body::Redacted,
            Some(p) if !Event::is_event_payload(p) => Body::Raw,
            Some(p) => match Event::decode(p) {
                Ok(e) => Body::Event(e),
                Err(e) => Body::Undecodable(e),
            },
        };
        Self { id, pos, body }
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
/// reads need. (Keeping whole events would double the graph's memory.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Meta {
    None,
    Claim { kind: MemoryKind, has_sources: bool, confirmed: bool, expires_at_ms: Option<u64> },
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
}

impl Meta {
    fn of(ev: &Event) -> Self {
        match ev {
            Event::Claim { kind, sources, confirmed, expires_at_ms, .. } => {
                Meta::Claim { kind: *kind, has_sources: !sources.is_empty(), confirmed: *confirmed, expires_at_ms: *expires_at_ms }
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
    confirmed: bool,
    frame_state: Option<FrameState>,
    task_state: Option<TaskState>,
    judged: Option<bool>,
    successes: u32,
    failures: u32,
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
    /// Every later event that touched this node, in log order (see [`Node::touched_by`]).
    touched: Vec<EntryId>,
    /// Outgoing typed edges: (relation name, target).
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
        } else if x.has(Mark::OpenChallenge) {
            Status::Contested
        } else if x.has(Mark::ResolvedBy) || x.frame_state == Some(FrameState::Completed) || x.task_state == Some(TaskState::Done) {
            Status::Resolved
        } else {
            Status::Active
        }
    }

    /// The events that make the status what it is.
    pub fn why(&self) -> Vec<EntryId> {
        let x = self.x();
        match self.status() {
            Status::Invalid | Status::Active => x.all(Mark::Survived),
            Status::Retracted => x.last(Mark::RetractedBy).into_iter().collect(),
            Status::Duplicate => x.last(Mark::DuplicateBy).into_iter().chain(x.last(Mark::DuplicateOf)).collect(),
            Status::Superseded => x.first(Mark::SupersededBy).into_iter().collect(),
            Status::Parked => x.last(Mark::ParkedBy).into_iter().collect(),
            Status::Contested => x.all(Mark::OpenChallenge),
            Status::Resolved => x
                .last(Mark::ResolvedBy)
                .filter(|by| *by != self.id)
                .into_iter()
                .chain(x.all(Mark::Closed))
                .chain(x.all(Mark::Survived))
                .collect(),
        }
    }

    /// Survived at least one challenge, and nothing is open against it.
    pub fn settled(&self) -> bool {
        let x = self.x();
        matches!(self.status(), Status::Active | Status::Resolved) && x.has(Mark::Survived) && !x.has(Mark::OpenChallenge)
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
        matches!(self.meta, Meta::Claim { expires_at_ms: Some(t), .. } if t <= now_ms)
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
    author_index: HashMap<AgentId, u32>,
    /// Held events, by one of the ids they still miss.
    waiting: IdMap<Vec<LogEvent>>,
    pending_count: usize,
    /// Memory item content id -> first item with that content.
    content_ids: HashMap<[u8; 32], EntryId>,
    last_pos: Option<LogPosition>,
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
        g.nodes.reserve(events.len());
        g.index.reserve(&g.nodes, events.len());
        for e in events {
            g.apply(e);
        }
        g
    }

    /// Build the graph straight from stored payloads: sorts only the (position,
    /// id) keys, then decodes each payload just before applying it, so no
    /// decoded copy of the whole log is ever held. Same result as
    /// [`Graph::replay`] over the decoded events.
    pub fn replay_encoded(items: &[(EntryId, LogPosition, Option<&[u8]>)]) -> Self {
        let mut order: Vec<u32> = (0..items.len() as u32).collect();
        order.sort_unstable_by_key(|&i| {
            let (id, pos, _) = &items[i as usize];
            (*pos, *id)
        });
        let mut g = Graph::new();
        g.nodes.reserve(items.len());
        g.index.reserve(&g.nodes, items.len());
        for i in order {
            let (id, pos, payload) = items[i as usize];
            g.apply(LogEvent::from_payload(id, pos, payload));
        }
        g
    }

    /// Apply one event. Events must come in log order (see [`Graph::replay`]);
    /// returns `false`, applying nothing, if `event` sorts before the last one
    /// applied, in which case the caller replays. Applying an id twice is a no-op.
    pub fn apply(&mut self, event: LogEvent) -> bool {
        if self.index.contains(&self.nodes, &event.id) {
            return true;
        }
        if self.last_pos.is_some_and(|last| event.pos < last) {
            return false;
        }
        self.last_pos = Some(event.pos);
        // Usually nothing is released, so avoid allocating a queue for one event.
        let mut next = Some(event);
        let mut queue: Vec<LogEvent> = Vec::new();
        while let Some(e) = next.take().or_else(|| queue.pop()) {
            let id = e.id;
            if self.index.contains(&self.nodes, &id) {
                continue;
            }
            let refs = match &e.body {
                Body::Event(ev) => ev.ref_list(),
                _ => crate::event::RefList::default(),
            };
            if let Some(first) = refs.iter().find(|r| !self.index.contains(&self.nodes, r)) {
                self.pending_count += 1;
                self.waiting.entry(*first).or_default().push(e);
                continue;
            }
            self.apply_ready(e, &refs);
            if let Some(mut released) = self.waiting.remove(&id) {
                self.pending_count -= released.len();
                // Apply released events in log order: push in reverse onto the stack.
                released.sort_by_key(|r| std::cmp::Reverse((r.pos, r.id)));
                queue.extend(released);
            }
        }
        true
    }

    fn apply_ready(&mut self, e: LogEvent, refs: &[EntryId]) {
        let kind = match &e.body {
            Body::Raw => "raw",
            Body::Redacted => "redacted",
            Body::Undecodable(_) => "invalid",
            Body::Event(ev) => ev.kind_name(),
        };
        let author = match self.author_index.get(&e.pos.author) {
            Some(a) => *a,
            None => {
                let a = self.authors.len() as u32;
                self.authors.push(e.pos.author);
                self.author_index.insert(e.pos.author, a);
                a
            }
        };
        let mut node = Node::new(e.id, e.pos, author, kind);
        let event = match e.body {
            Body::Raw | Body::Redacted => None,
            Body::Undecodable(err) => {
                node.extra.get_or_insert_with(Box::default).invalid = Some(err.to_string().into_boxed_str());
                None
            }
            Body::Event(ev) => {
                match self.check_refs(e.id, &ev, refs) {
                    Err(err) => node.extra.get_or_insert_with(Box::default).invalid = Some(err.to_string().into_boxed_str()),
                    Ok(()) => node.meta = Meta::of(&ev),
                }
                Some(ev)
            }
        };
        self.nodes.push(node);
        self.index.insert(&self.nodes, (self.nodes.len() - 1) as u32);
        if let Some(ev) = event {
            if self.nodes.last().is_some_and(|n| n.invalid().is_none()) {
                self.effects(e.id, &ev);
            }
            let text = ev.into_text();
            if let Some(n) = self.nodes.last_mut() {
                n.text = text;
            }
        }
    }

    fn kind_of(&self, id: &EntryId) -> &'static str {
        self.node(id).map_or("unknown", |n| if n.invalid().is_some() { "invalid" } else { n.kind })
    }

    fn expect(&self, event: &'static str, target: &EntryId, kinds: &[&str], expected: &'static str) -> Result<(), RuleError> {
        let kind = self.kind_of(target);
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
        self.check_refs(id, ev, &ev.ref_list())
    }

    /// [`Graph::check`] with the event's references already collected.
    fn check_refs(&self, id: EntryId, ev: &Event, refs: &[EntryId]) -> Result<(), RuleError> {
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
                self.expect(name, target, POSITION_KINDS, "a position (proposition, claim, refinement, ...)")
            }
            Event::Refinement { target, resolves, .. } => {
                self.expect(name, target, POSITION_KINDS, "a position")?;
                for c in resolves {
                    self.expect(name, c, &["contradiction"], "a contradiction to resolve")?;
                }
                Ok(())
            }
            Event::Synthesis { sources, .. } => {
                if sources.len() < 2 {
                    return Err(RuleError::SynthesisArity(sources.len()));
                }
                sources.iter().try_for_each(|s| self.expect(name, s, POSITION_KINDS, "a position"))
            }
            Event::Resolve { target, .. } => {
                let kind = self.kind_of(target);
                let resolvable = matches!(kind, "question" | "contradiction" | "tension")
                    || matches!(self.node(target).map(|n| n.meta), Some(Meta::Relate(Relation::Contradicts)));
                if !resolvable {
                    return Err(RuleError::WrongKind {
                        event: name,
                        target: *target,
                        kind,
                        expected: "a question, contradiction, tension or contradicts relation",
                    });
                }
                match self.node(target).and_then(|n| n.x().last(Mark::ResolvedBy)) {
                    Some(by) => wrong_state(target, format!("already resolved by {by}")),
                    None => Ok(()),
                }
            }
            Event::Connection { a, b, .. } | Event::Tension { a, b, .. } => {
                self.expect(name, a, CONTENT_KINDS, "a content node")?;
                self.expect(name, b, CONTENT_KINDS, "a content node")
            }
            Event::Reframe { target, .. } => {
                let mut kinds = POSITION_KINDS.to_vec();
                kinds.push("question");
                self.expect(name, target, &kinds, "a position or question")
            }
            Event::Park { target, .. } => {
                self.expect(name, target, CONTENT_KINDS, "a content node")?;
                match self.node(target).and_then(|n| n.x().last(Mark::ParkedBy)) {
                    Some(_) => wrong_state(target, "already parked".into()),
                    None => Ok(()),
                }
            }
            Event::Resume { target } => {
                self.expect(name, target, CONTENT_KINDS, "a content node")?;
                match self.node(target).and_then(|n| n.x().last(Mark::ParkedBy)) {
                    Some(_) => Ok(()),
                    None => wrong_state(target, "not parked".into()),
                }
            }
            Event::Claim { sources, .. } => sources.iter().try_for_each(|s| self.expect(name, s, CONTENT_KINDS, "a source event")),
            Event::Relate { from, to, relation, .. } => {
                self.expect(name, from, CLAIM_KINDS, "a claim-like node (proposition, claim, refinement, ...)")?;
                self.expect(name, to, CLAIM_KINDS, "a claim-like node (proposition, claim, refinement, ...)")?;
                if relation.supersedes() && self.supersedes_transitively(to, from) {
                    return Err(RuleError::Cycle { from: *from, to: *to });
                }
                Ok(())
            }
            Event::Confirm { target } => self.expect(name, target, &["claim"], "a claim"),
            Event::FrameOpen { parent, branched_from, .. } => {
                parent.iter().chain(branched_from.iter()).try_for_each(|f| self.expect(name, f, &["frame_open"], "a frame"))
            }
            Event::FrameEvidence { frame, .. } | Event::FrameConclude { frame, .. } => {
                self.expect(name, frame, &["frame_open"], "a frame")?;
                match self.node(frame).and_then(|n| n.x().frame_state) {
                    Some(FrameState::Active) => Ok(()),
                    Some(s) => wrong_state(frame, format!("a {} frame", s.name())),
                    None => Ok(()),
                }
            }
            Event::FrameSuspend { frame } => {
                self.expect(name, frame, &["frame_open"], "a frame")?;
                match self.node(frame).and_then(|n| n.x().frame_state) {
                    Some(FrameState::Active) => Ok(()),
                    s => wrong_state(frame, format!("a {} frame", s.map_or("unknown", |s| s.name()))),
                }
            }
            Event::FrameResume { frame } => {
                self.expect(name, frame, &["frame_open"], "a frame")?;
                match self.node(frame).and_then(|n| n.x().frame_state) {
                    Some(FrameState::Suspended | FrameState::Invalidated) => Ok(()),
                    s => wrong_state(frame, format!("a {} frame", s.map_or("unknown", |s| s.name()))),
                }
            }
            Event::FrameInvalidate { frame, .. } => self.expect(name, frame, &["frame_open"], "a frame"),
            Event::TaskUpdate { task, .. } => {
                self.expect(name, task, &["task"], "a task")?;
                match self.node(task).and_then(|n| n.x().task_state) {
                    Some(s @ (TaskState::Done | TaskState::Abandoned)) => wrong_state(task, format!("a {} task", s.name())),
                    _ => Ok(()),
                }
            }
            Event::Judgment { trajectory, .. } => {
                self.expect(name, trajectory, &["trajectory"], "a trajectory")?;
                match self.node(trajectory).and_then(|n| n.x().judged) {
                    Some(_) => wrong_state(trajectory, "already judged".into()),
                    None => Ok(()),
                }
            }
            Event::MemoryItem { source_trajectory, .. } => {
                source_trajectory.iter().try_for_each(|t| self.expect(name, t, &["trajectory"], "a trajectory"))
            }
            Event::Usage { trajectory, item, .. } => {
                self.expect(name, trajectory, &["trajectory"], "a trajectory")?;
                self.expect(name, item, &["memory_item"], "a memory item")
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

    fn node_mut(&mut self, id: &EntryId) -> &mut Node {
        // The event being applied is the newest node: skip the index for it.
        let newest = self.nodes.len().wrapping_sub(1);
        if self.nodes.last().is_some_and(|n| n.id == *id) {
            return &mut self.nodes[newest];
        }
        // Effects run only after `check`, which proved every reference exists.
        let i = self.index.get(&self.nodes, id).unwrap_or_else(|| panic!("reference {id} checked but missing"));
        &mut self.nodes[i as usize]
    }

    fn extra_mut(&mut self, id: &EntryId) -> &mut Extra {
        self.node_mut(id).extra.get_or_insert_with(Box::default)
    }

    fn touch(&mut self, target: &EntryId, by: EntryId) {
        let n = self.node_mut(target);
        if n.touched.last() != Some(&by) && n.id != by {
            push_tight(&mut n.touched, by);
        }
    }

    fn edge(&mut self, from: EntryId, relation: &'static str, to: EntryId) {
        push_tight(&mut self.node_mut(&from).edges, (relation, to));
        self.touch(&to, from);
    }

    fn supersede(&mut self, target: &EntryId, by: EntryId) {
        let n = self.extra_mut(target);
        if !n.has(Mark::SupersededBy) {
            n.push(Mark::SupersededBy, by);
        }
    }

    /// Close challenge `c` (answered by `by`): every node it challenged
    /// survived it.
    fn close_challenge(&mut self, c: &EntryId, by: EntryId) {
        self.extra_mut(c).push(Mark::ResolvedBy, by);
        let challenged: Vec<EntryId> = self.node_mut(c).edges.iter().filter(|(r, _)| matches!(*r, "contradicts" | "tension")).map(|(_, t)| *t).collect();
        for t in challenged {
            let n = self.extra_mut(&t);
            let was_challenge = n.remove(Mark::OpenChallenge, *c);
            let was_tension = n.remove(Mark::Tension, *c);
            if was_challenge || was_tension {
                n.push(Mark::Survived, *c);
            }
            self.touch(&t, by);
        }
    }

    fn effects(&mut self, id: EntryId, ev: &Event) {
        match ev {
            Event::Proposition { .. } | Event::Question { .. } | Event::Trajectory { .. } => {}
            Event::Task { .. } => self.extra_mut(&id).task_state = Some(TaskState::Created),
            Event::Support { target, .. } => self.edge(id, "supports", *target),
            Event::Contradiction { target, .. } => {
                self.edge(id, "contradicts", *target);
                self.extra_mut(target).push(Mark::OpenChallenge, id);
            }
            Event::Refinement { target, resolves, .. } => {
                self.edge(id, "refines", *target);
                self.supersede(target, id);
                for c in resolves {
                    self.edge(id, "resolves", *c);
                    self.close_challenge(c, id);
                    self.extra_mut(&id).push(Mark::Closed, *c);
                }
                if !resolves.is_empty() {
                    self.extra_mut(&id).push(Mark::ResolvedBy, id);
                }
            }
            Event::Synthesis { sources, .. } => {
                for s in sources {
                    self.edge(id, "synthesizes", *s);
                }
            }
            Event::Resolve { target, .. } => {
                self.edge(id, "resolves", *target);
                self.close_challenge(target, id);
            }
            Event::Connection { a, b, .. } => {
                self.edge(id, "connects", *a);
                self.edge(id, "connects", *b);
            }
            Event::Tension { a, b, .. } => {
                for t in [a, b] {
                    self.edge(id, "tension", *t);
                    self.extra_mut(t).push(Mark::Tension, id);
                }
            }
            Event::Reframe { target, .. } => {
                self.edge(id, "reframes", *target);
                self.supersede(target, id);
            }
            Event::Park { target, .. } => {
                self.touch(target, id);
                self.extra_mut(target).push(Mark::ParkedBy, id);
            }
            Event::Resume { target } => {
                self.touch(target, id);
                self.extra_mut(target).clear(Mark::ParkedBy);
            }
            Event::Claim { sources, .. } => {
                for s in sources {
                    self.edge(id, "derived_from", *s);
                }
            }
            Event::Relate { from, to, relation, .. } => {
                self.touch(from, id);
                self.edge(id, relation.name(), *to);
                push_tight(&mut self.node_mut(from).edges, (relation.name(), *to));
                match relation {
                    Relation::Update | Relation::StateChange => self.supersede(to, *from),
                    Relation::Expands | Relation::Qualifies => {}
                    Relation::Contradicts => {
                        // No winner: both sides are challenged by this relation.
                        push_tight(&mut self.node_mut(&id).edges, ("contradicts", *from));
                        self.extra_mut(from).push(Mark::OpenChallenge, id);
                        self.extra_mut(to).push(Mark::OpenChallenge, id);
                    }
                    Relation::Retracts => self.extra_mut(to).push(Mark::RetractedBy, id),
                    Relation::SameAs => {
                        let n = self.extra_mut(from);
                        n.push(Mark::DuplicateOf, *to);
                        n.push(Mark::DuplicateBy, id);
                    }
                }
            }
            Event::Confirm { target } => {
                self.touch(target, id);
                self.extra_mut(target).confirmed = true;
            }
            Event::FrameOpen { parent, branched_from, .. } => {
                self.extra_mut(&id).frame_state = Some(FrameState::Active);
                if let Some(p) = parent {
                    self.edge(id, "child_of", *p);
                    self.extra_mut(p).push(Mark::FrameChild, id);
                }
                if let Some(b) = branched_from {
                    self.edge(id, "branched_from", *b);
                    let n = self.extra_mut(b);
                    if n.frame_state == Some(FrameState::Active) {
                        n.frame_state = Some(FrameState::Suspended);
                    }
                }
            }
            Event::FrameEvidence { frame, .. } => self.edge(id, "evidence_for", *frame),
            Event::FrameConclude { frame, .. } => {
                self.edge(id, "concludes", *frame);
                self.extra_mut(frame).frame_state = Some(FrameState::Completed);
            }
            Event::FrameSuspend { frame } => {
                self.touch(frame, id);
                self.extra_mut(frame).frame_state = Some(FrameState::Suspended);
            }
            Event::FrameResume { frame } => {
                self.touch(frame, id);
                self.extra_mut(frame).frame_state = Some(FrameState::Active);
            }
            Event::FrameInvalidate { frame, .. } => {
                // Top-down cascade: the frame, then every frame under it.
                let mut stack = vec![*frame];
                while let Some(f) = stack.pop() {
                    self.touch(&f, id);
                    let n = self.extra_mut(&f);
                    n.frame_state = Some(FrameState::Invalidated);
                    stack.extend(n.all(Mark::FrameChild).into_iter().rev());
                }
            }
            Event::TaskUpdate { task, state, .. } => {
                self.touch(task, id);
                self.extra_mut(task).task_state = Some(*state);
            }
            Event::Judgment { trajectory, success, .. } => {
                self.edge(id, "judges", *trajectory);
                self.extra_mut(trajectory).judged = Some(*success);
                let usages: Vec<EntryId> = self.extra_mut(trajectory).all(Mark::Usage);
                for u in usages {
                    if let Some(item) = self.node_mut(&u).x().first(Mark::UsageItem) {
                        self.count_outcome(&item, *success);
                    }
                }
            }
            Event::MemoryItem { title, content, source_trajectory, .. } => {
                if let Some(t) = source_trajectory {
                    self.edge(id, "extracted_from", *t);
                }
                let cid = memory_item_content_id(title, content);
                match self.content_ids.get(&cid) {
                    Some(first) => {
                        let first = *first;
                        let n = self.extra_mut(&id);
                        n.push(Mark::DuplicateOf, first);
                        n.push(Mark::DuplicateBy, id);
                        self.touch(&first, id);
                    }
                    None => {
                        self.content_ids.insert(cid, id);
                    }
                }
            }
            Event::Usage { trajectory, item, .. } => {
                self.extra_mut(&id).push(Mark::UsageItem, *item);
                self.edge(id, "used_in", *trajectory);
                self.edge(id, "uses", *item);
                self.extra_mut(trajectory).push(Mark::Usage, id);
                self.extra_mut(item).push(Mark::Usage, id);
                if let Some(success) = self.extra_mut(trajectory).judged {
                    self.count_outcome(item, success);
                }
            }
        }
    }

    fn count_outcome(&mut self, item: &EntryId, success: bool) {
        let n = self.extra_mut(item);
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

    /// The canonical bytes of the derived graph: every node sorted by id with
    /// its kind, status, settled flag and the events that made it so, plus the
    /// pending set. Two graphs with equal snapshots are equal views.
    pub fn snapshot(&self) -> Vec<u8> {
        let sorted: BTreeMap<&EntryId, &Node> = self.nodes.iter().map(|n| (&n.id, n)).collect();
        let mut out = Vec::new();
        for (id, n) in sorted {
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(n.kind.as_bytes());
            out.push(0);
            out.push(n.status() as u8);
            out.push(n.settled() as u8);
            let x = n.x();
            for list in [&n.touched_by(), &n.why(), &x.all(Mark::OpenChallenge), &x.all(Mark::Tension), &x.all(Mark::FrameChild)] {
                out.extend_from_slice(&(list.len() as u32).to_be_bytes());
                for x in list.iter() {
                    out.extend_from_slice(x.as_bytes());
                }
            }
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
        for p in self.pending() {
            out.extend_from_slice(p.event.id.as_bytes());
        }
        out
    }

    /// SHA-256 of [`Graph::snapshot`]: a short fingerprint of the view.
    pub fn view_hash(&self) -> [u8; 32] {
        agora_core::sha256(&self.snapshot())
    }
}

impl Node {
    /// The entry id.
    pub fn id(&self) -> &EntryId {
        &self.id
    }
}
