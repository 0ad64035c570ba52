//! The event vocabulary and its payload encoding.
//!
//! ```text
//! event payload = "agev" (4 ASCII bytes) || version (1 byte, = 1) || postcard(Event)
//! ```
//!
//! The enum's variant index is the kind code on the wire; codes are stable and
//! new kinds are only ever appended. Decoding is canonical (re-encoding must give
//! back the input). A payload that does not start with the magic is not an event
//! (a raw note); one with a newer version or an unknown kind code is refused
//! locally and reported as invalid when it arrives from a peer.

use crate::inline::InlineList;
use agora_core::EntryId;
use agora_core::canonical::{FrameError, Framing};
use serde::{Deserialize, Serialize};

/// First bytes of every event payload.
pub const EVENT_MAGIC: &[u8; 4] = b"agev";
/// The only event format version this implementation reads and writes.
pub const EVENT_VERSION: u8 = 1;
/// Longest text field, in bytes.
pub const TEXT_BYTES_MAX: usize = 16 * 1024;
/// Most references one event may carry.
pub const REFS_MAX: usize = 64;
/// Longest `text` of an action (the contents a framework kept: a tool's
/// result, a checkpoint), in bytes; every other text field is held to
/// [`TEXT_BYTES_MAX`].
pub const ACTION_TEXT_BYTES_MAX: usize = 512 * 1024;
/// Longest `operation` of an action, in bytes.
pub const OPERATION_BYTES_MAX: usize = 64;

/// Kinds of memory a claim can be (003: a memory is a claim with a source).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// What happened: the evidence layer. Never derived.
    Episodic,
    /// What is true: derived from episodes.
    Semantic,
    /// What the user wants by default: derived, should be confirmed.
    Preference,
    /// How to do things: derived from successful actions.
    Procedural,
    /// Objectives and their state.
    Task,
    /// Cached state of the world; decays by TTL.
    Environmental,
    /// Shared between agents or users.
    Shared,
    /// Operator constraints; not model-writable.
    System,
    /// Immutable audit records.
    Audit,
}

impl MemoryKind {
    /// Derived kinds must name their source events; one without is an orphan.
    pub fn is_derived(self) -> bool {
        matches!(self, MemoryKind::Semantic | MemoryKind::Preference | MemoryKind::Procedural)
    }
    /// Every kind, in code order.
    pub const ALL: [MemoryKind; 9] = [
        MemoryKind::Episodic,
        MemoryKind::Semantic,
        MemoryKind::Preference,
        MemoryKind::Procedural,
        MemoryKind::Task,
        MemoryKind::Environmental,
        MemoryKind::Shared,
        MemoryKind::System,
        MemoryKind::Audit,
    ];
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Episodic => "episodic",
            MemoryKind::Semantic => "semantic",
            MemoryKind::Preference => "preference",
            MemoryKind::Procedural => "procedural",
            MemoryKind::Task => "task",
            MemoryKind::Environmental => "environmental",
            MemoryKind::Shared => "shared",
            MemoryKind::System => "system",
            MemoryKind::Audit => "audit",
        }
    }
}

/// Typed relations between claims (001), each with its own read semantics.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Relation {
    /// Same thing, new state: `from` supersedes `to`; forms chains.
    Update,
    /// A discrete event changed the state: `from` supersedes `to`; forms chains.
    StateChange,
    /// Same fact, more specific: both stay true.
    Expands,
    /// Adds a condition or nuance: both stay true.
    Qualifies,
    /// Mutual exclusion with no winner: both become contested.
    Contradicts,
    /// `to` was wrong: hidden from current state, record kept.
    Retracts,
    /// `from` restates `to`: `from` is a duplicate.
    SameAs,
}

impl Relation {
    /// Every relation, in code order.
    pub const ALL: [Relation; 7] =
        [Relation::Update, Relation::StateChange, Relation::Expands, Relation::Qualifies, Relation::Contradicts, Relation::Retracts, Relation::SameAs];
    /// snake_case name, as in the seed essay.
    pub fn name(self) -> &'static str {
        match self {
            Relation::Update => "update",
            Relation::StateChange => "state_change",
            Relation::Expands => "expands",
            Relation::Qualifies => "qualifies",
            Relation::Contradicts => "contradicts",
            Relation::Retracts => "retracts",
            Relation::SameAs => "same_as",
        }
    }
    /// Does `from` replace `to` as the current state (a chain edge)?
    pub fn supersedes(self) -> bool {
        matches!(self, Relation::Update | Relation::StateChange)
    }
}

/// Lifecycle of a task (003).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Created, not started.
    Created,
    /// Being worked on.
    InProgress,
    /// Waiting on something.
    Blocked,
    /// Finished.
    Done,
    /// Given up.
    Abandoned,
}

impl TaskState {
    /// Every state, in lifecycle order.
    pub const ALL: [TaskState; 5] = [TaskState::Created, TaskState::InProgress, TaskState::Blocked, TaskState::Done, TaskState::Abandoned];

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Created => "created",
            TaskState::InProgress => "in_progress",
            TaskState::Blocked => "blocked",
            TaskState::Done => "done",
            TaskState::Abandoned => "abandoned",
        }
    }
}

/// Confidence of a judgment (004).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Confidence {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

impl Confidence {
    /// Every confidence, lowest first.
    pub const ALL: [Confidence; 3] = [Confidence::Low, Confidence::Medium, Confidence::High];

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// One typed cognitive event. See `protocol-spec/events.md` for each kind's
/// fields and effect. References are entry ids, never positions or text.
// Field meanings are specified per kind in protocol-spec/events.md.
#[allow(missing_docs)]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// 0: a new position.
    Proposition { text: String },
    /// 1: support or evidence for a node.
    Support { target: EntryId, text: String },
    /// 2: a challenge to a node; the node is contested while it is open.
    Contradiction { target: EntryId, text: String },
    /// 3: a successor to `target` (which becomes superseded); may resolve
    /// contradictions, which then count as answered.
    Refinement { target: EntryId, resolves: Vec<EntryId>, text: String },
    /// 4: a new node drawing on two or more sources.
    Synthesis { sources: Vec<EntryId>, text: String },
    /// 5: an open question.
    Question { text: String },
    /// 6: resolves a question, a contradiction, a tension or a `contradicts` relation.
    Resolve { target: EntryId, text: String },
    /// 7: notes that two nodes are related; no status effect.
    Connection { a: EntryId, b: EntryId, text: String },
    /// 8: notes an unresolved tension between two nodes.
    Tension { a: EntryId, b: EntryId, text: String },
    /// 9: recasts `target` in new terms; `target` becomes superseded.
    Reframe { target: EntryId, text: String },
    /// 10: parks (abandons for now) a node.
    Park { target: EntryId, reason: String },
    /// 11: resumes a parked node.
    Resume { target: EntryId },
    /// 12: a memory: a claim with its kind, sources, owner, confirmation, expiry.
    Claim { text: String, kind: MemoryKind, sources: Vec<EntryId>, owner_scope: String, confirmed: bool, expires_at_ms: Option<u64> },
    /// 13: a typed relation between two claims.
    Relate { from: EntryId, to: EntryId, relation: Relation, reason: String },
    /// 14: the owner confirms a claim.
    Confirm { target: EntryId },
    /// 15: opens a causal frame (002), optionally under a parent, optionally a
    /// pivot away from `branched_from` (which is suspended).
    FrameOpen { parent: Option<EntryId>, query: String, branched_from: Option<EntryId>, invalidation_condition: String },
    /// 16: evidence gathered by a frame.
    FrameEvidence { frame: EntryId, text: String },
    /// 17: a frame's conclusion, with confidence in basis points (0..=10000).
    FrameConclude { frame: EntryId, conclusion: String, confidence_bp: u16 },
    /// 18: suspends a frame.
    FrameSuspend { frame: EntryId },
    /// 19: resumes a suspended or invalidated frame.
    FrameResume { frame: EntryId },
    /// 20: invalidates a frame and, top-down, every frame under it.
    FrameInvalidate { frame: EntryId, reason: String },
    /// 21: a task (003).
    Task { objective: String, owner_scope: String },
    /// 22: a task's lifecycle moves.
    TaskUpdate { task: EntryId, state: TaskState, note: String },
    /// 23: a trajectory: one attempt at a task (004).
    Trajectory { task_query: String, final_answer: String, iterations: u32, converged: bool },
    /// 24: the judgment of a trajectory.
    Judgment { trajectory: EntryId, success: bool, reason: String, confidence: Confidence },
    /// 25: a memory item extracted from experience; its content hash de-duplicates.
    MemoryItem { title: String, description: String, content: String, scope: String, source_trajectory: Option<EntryId> },
    /// 26: an item was retrieved for a trajectory, with its rank and score (basis points).
    Usage { trajectory: EntryId, item: EntryId, rank: u32, score_bp: u16 },
    /// 27: an agent's action as a framework traces it (an OpenTelemetry
    /// GenAI span: a tool call, an agent run, a handoff...): what was done
    /// (`operation`, [`check_operation`]), to or with what (`name`), in which
    /// conversation, from which span (`trace/span` in hex, [`check_span`], or
    /// empty) under which parent span of the same trace (empty for a root:
    /// the trace's causal link, whichever of the two is recorded first),
    /// caused by which event, the SHA-256 of its arguments and result when
    /// hashed, their contents when kept, and the error if it failed. A
    /// repeated non-empty `span` by the same author is a duplicate.
    Action {
        operation: String,
        name: String,
        conversation: String,
        span: String,
        parent: String,
        cause: Option<EntryId>,
        input_hash: Option<[u8; 32]>,
        output_hash: Option<[u8; 32]>,
        text: String,
        error: String,
    },
}

/// Why a payload is not a valid event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventDecodeError {
    /// The payload does not start with the event magic: it is not an event.
    #[error("not an event payload (no \"agev\" magic)")]
    NotAnEvent,
    /// A newer event format version.
    #[error("unknown event format version {0} (this implementation reads version {EVENT_VERSION})")]
    UnknownVersion(u8),
    /// The kind code is not one this implementation knows (a newer kind).
    #[error("unknown event kind {0} (from a newer format version?)")]
    UnknownKind(u32),
    /// Malformed, truncated, trailing or non-canonical bytes.
    #[error("malformed event: {0}")]
    Malformed(String),
    /// A field breaks a limit.
    #[error("limit: {0}")]
    Limit(String),
}

/// Number of kinds defined in version 1.
pub const KIND_COUNT: u32 = 28;

/// `"agev" || version || postcard(Event)`. A payload is at most
/// `PAYLOAD_BYTES_MAX`, so that bounds the body; texts and references have
/// limits of their own ([`Event::check_limits`]).
pub const EVENT_FRAMING: Framing =
    Framing { magic: EVENT_MAGIC, version: EVENT_VERSION, body_max: agora_core::limits::PAYLOAD_BYTES_MAX as usize, kinds: Some(KIND_COUNT) };

impl From<FrameError> for EventDecodeError {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::NoMagic => EventDecodeError::NotAnEvent,
            FrameError::Version(v) => EventDecodeError::UnknownVersion(v),
            FrameError::UnknownKind(k) => EventDecodeError::UnknownKind(k),
            FrameError::TooLarge { .. } => EventDecodeError::Limit(e.to_string()),
            FrameError::NoVersion | FrameError::Malformed(_) => EventDecodeError::Malformed(e.to_string()),
        }
    }
}

/// The one field that is a kind's node text, by shared or mutable reference
/// (match ergonomics give `&String` or `&mut String`); `None` for kinds whose
/// text combines fields or that have none.
macro_rules! single_text_field {
    ($event:expr) => {
        match $event {
            Event::Proposition { text }
            | Event::Support { text, .. }
            | Event::Contradiction { text, .. }
            | Event::Refinement { text, .. }
            | Event::Synthesis { text, .. }
            | Event::Question { text }
            | Event::Resolve { text, .. }
            | Event::Connection { text, .. }
            | Event::Tension { text, .. }
            | Event::Reframe { text, .. }
            | Event::Claim { text, .. }
            | Event::FrameEvidence { text, .. } => Some(text),
            Event::Park { reason, .. } | Event::Relate { reason, .. } | Event::FrameInvalidate { reason, .. } => Some(reason),
            Event::FrameOpen { query, .. } => Some(query),
            Event::FrameConclude { conclusion, .. } => Some(conclusion),
            Event::Task { objective, .. } => Some(objective),
            Event::TaskUpdate { note, .. } => Some(note),
            Event::Judgment { reason, .. } => Some(reason),
            _ => None,
        }
    };
}

impl Event {
    /// The kind's stable name (snake_case).
    pub fn kind_name(&self) -> &'static str {
        Self::KIND_NAMES[self.kind_index() as usize]
    }

    /// Every kind's name, in the order of [`Event::kind_index`].
    pub const KIND_NAMES: [&'static str; 28] = [
        "proposition",
        "support",
        "contradiction",
        "refinement",
        "synthesis",
        "question",
        "resolve",
        "connection",
        "tension",
        "reframe",
        "park",
        "resume",
        "claim",
        "relate",
        "confirm",
        "frame_open",
        "frame_evidence",
        "frame_conclude",
        "frame_suspend",
        "frame_resume",
        "frame_invalidate",
        "task",
        "task_update",
        "trajectory",
        "judgment",
        "memory_item",
        "usage",
        "action",
    ];

    /// The kind's place in [`Event::KIND_NAMES`]: one byte, where a graph
    /// node keeps its kind.
    pub fn kind_index(&self) -> u8 {
        match self {
            Event::Proposition { .. } => 0,
            Event::Support { .. } => 1,
            Event::Contradiction { .. } => 2,
            Event::Refinement { .. } => 3,
            Event::Synthesis { .. } => 4,
            Event::Question { .. } => 5,
            Event::Resolve { .. } => 6,
            Event::Connection { .. } => 7,
            Event::Tension { .. } => 8,
            Event::Reframe { .. } => 9,
            Event::Park { .. } => 10,
            Event::Resume { .. } => 11,
            Event::Claim { .. } => 12,
            Event::Relate { .. } => 13,
            Event::Confirm { .. } => 14,
            Event::FrameOpen { .. } => 15,
            Event::FrameEvidence { .. } => 16,
            Event::FrameConclude { .. } => 17,
            Event::FrameSuspend { .. } => 18,
            Event::FrameResume { .. } => 19,
            Event::FrameInvalidate { .. } => 20,
            Event::Task { .. } => 21,
            Event::TaskUpdate { .. } => 22,
            Event::Trajectory { .. } => 23,
            Event::Judgment { .. } => 24,
            Event::MemoryItem { .. } => 25,
            Event::Usage { .. } => 26,
            Event::Action { .. } => 27,
        }
    }

    /// Every entry id this event refers to, in field order.
    pub fn refs(&self) -> Vec<EntryId> {
        self.ref_list().to_vec()
    }

    /// [`Event::refs`] without a heap allocation for events with at most two
    /// references (all kinds but synthesis, refinement and claim lists).
    pub fn ref_list(&self) -> RefList {
        let mut out = InlineList::default();
        self.for_each_ref(|r| out.push(*r));
        RefList(out)
    }

    /// Call `f` on every entry id this event refers to, in field order,
    /// without collecting them.
    pub fn for_each_ref(&self, mut f: impl FnMut(&EntryId)) {
        match self {
            Event::Proposition { .. } | Event::Question { .. } | Event::Task { .. } | Event::Trajectory { .. } => {}
            Event::Support { target, .. }
            | Event::Contradiction { target, .. }
            | Event::Resolve { target, .. }
            | Event::Reframe { target, .. }
            | Event::Park { target, .. }
            | Event::Resume { target }
            | Event::Confirm { target } => f(target),
            Event::Refinement { target, resolves, .. } => {
                f(target);
                resolves.iter().for_each(f);
            }
            Event::Synthesis { sources, .. } | Event::Claim { sources, .. } => sources.iter().for_each(f),
            Event::Connection { a, b, .. } | Event::Tension { a, b, .. } => {
                f(a);
                f(b);
            }
            Event::Relate { from, to, .. } => {
                f(from);
                f(to);
            }
            Event::FrameOpen { parent, branched_from, .. } => parent.iter().chain(branched_from.iter()).for_each(f),
            Event::FrameEvidence { frame, .. }
            | Event::FrameConclude { frame, .. }
            | Event::FrameSuspend { frame }
            | Event::FrameResume { frame }
            | Event::FrameInvalidate { frame, .. } => f(frame),
            Event::TaskUpdate { task, .. } => f(task),
            Event::Judgment { trajectory, .. } => f(trajectory),
            Event::MemoryItem { source_trajectory, .. } => source_trajectory.iter().for_each(f),
            Event::Usage { trajectory, item, .. } => {
                f(trajectory);
                f(item);
            }
            // The hashes name no event: only the cause is a reference.
            Event::Action { cause, .. } => cause.iter().for_each(f),
        }
    }

    /// The node's searchable text (empty for control events).
    pub fn text(&self) -> String {
        match self.single_text() {
            Some(t) => t.to_string(),
            None => self.composite_text(),
        }
    }

    /// [`Event::text`], moving the string out where there is just one.
    pub fn into_text(mut self) -> String {
        self.take_text()
    }

    /// [`Event::into_text`] without moving the event: the single text field
    /// is left empty.
    pub(crate) fn take_text(&mut self) -> String {
        match self.single_text_mut() {
            Some(t) => std::mem::take(t),
            None => self.composite_text(),
        }
    }

    /// The text of kinds whose node text is one field.
    fn single_text(&self) -> Option<&String> {
        single_text_field!(self)
    }

    fn single_text_mut(&mut self) -> Option<&mut String> {
        single_text_field!(self)
    }

    /// Text of kinds whose node text combines fields, or has none.
    fn composite_text(&self) -> String {
        match self {
            Event::Trajectory { task_query, final_answer, .. } => format!("{task_query}\n{final_answer}"),
            Event::MemoryItem { title, description, content, .. } => format!("{title}\n{description}\n{content}"),
            // What it was done with, its contents and its error, those
            // that are there (the operation and span are identifiers).
            Event::Action { name, text, error, .. } => {
                [name, text, error].into_iter().filter(|t| !t.is_empty()).map(String::as_str).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        }
    }

    fn texts(&self) -> Vec<&str> {
        let mut out = Vec::new();
        match self {
            Event::Claim { text, owner_scope, .. } => {
                out.push(text.as_str());
                out.push(owner_scope.as_str());
            }
            Event::FrameOpen { query, invalidation_condition, .. } => {
                out.push(query.as_str());
                out.push(invalidation_condition.as_str());
            }
            Event::Task { objective, owner_scope } => {
                out.push(objective.as_str());
                out.push(owner_scope.as_str());
            }
            Event::Trajectory { task_query, final_answer, .. } => {
                out.push(task_query.as_str());
                out.push(final_answer.as_str());
            }
            Event::MemoryItem { title, description, content, scope, .. } => {
                out.extend([title.as_str(), description.as_str(), content.as_str(), scope.as_str()]);
            }
            Event::Action { operation, name, conversation, span, parent, text, error, .. } => {
                out.extend([operation.as_str(), name.as_str(), conversation.as_str(), span.as_str(), parent.as_str(), text.as_str(), error.as_str()]);
            }
            _ => {}
        }
        out
    }

    /// Check the limits on text lengths and reference counts.
    pub fn check_limits(&self) -> Result<(), EventDecodeError> {
        let single = self.single_text().map_or(0, String::len);
        // An action's contents have their own, larger bound.
        let contents = match self {
            Event::Action { text, .. } => Some(text.as_str()),
            _ => None,
        };
        if let Some(text) = contents
            && text.len() > ACTION_TEXT_BYTES_MAX
        {
            return Err(EventDecodeError::Limit(format!("an action's text is longer than {ACTION_TEXT_BYTES_MAX} bytes")));
        }
        let is_contents = |t: &&str| contents.is_some_and(|c| std::ptr::eq(c.as_ptr(), t.as_ptr()) && c.len() == t.len());
        if single > TEXT_BYTES_MAX || self.texts().iter().filter(|t| !is_contents(t)).any(|t| t.len() > TEXT_BYTES_MAX) {
            return Err(EventDecodeError::Limit(format!("a text field is longer than {TEXT_BYTES_MAX} bytes")));
        }
        // Only the list-valued kinds can exceed the limit; counted without
        // collecting the references.
        let refs = match self {
            Event::Refinement { resolves, .. } => 1 + resolves.len(),
            Event::Synthesis { sources, .. } | Event::Claim { sources, .. } => sources.len(),
            _ => 0,
        };
        if refs > REFS_MAX {
            return Err(EventDecodeError::Limit(format!("{refs} references, more than {REFS_MAX}")));
        }
        if let Event::FrameConclude { confidence_bp, .. } | Event::Usage { score_bp: confidence_bp, .. } = self
            && *confidence_bp > 10_000
        {
            return Err(EventDecodeError::Limit(format!("basis points {confidence_bp} > 10000")));
        }
        if let Event::Action { operation, span, parent, .. } = self {
            check_operation(operation)?;
            check_span(span)?;
            check_parent(span, parent)?;
        }
        Ok(())
    }

    /// The payload bytes of this event.
    pub fn encode(&self) -> Vec<u8> {
        EVENT_FRAMING.encode(self)
    }

    /// Is this payload meant to be an event (starts with the magic)?
    pub fn is_event_payload(payload: &[u8]) -> bool {
        EVENT_FRAMING.claims(payload)
    }
}

/// The rule of an action's `operation`: 1 to [`OPERATION_BYTES_MAX`] bytes
/// of lowercase ASCII letters, digits, `_`, `.` and `-` (a span's
/// `gen_ai.operation.name`, such as `execute_tool`, or a framework's own,
/// such as `handoff`). Checked at decoding, as every limit is.
pub fn check_operation(operation: &str) -> Result<(), EventDecodeError> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-');
    if operation.is_empty() || operation.len() > OPERATION_BYTES_MAX || !operation.bytes().all(allowed) {
        return Err(EventDecodeError::Limit(format!(
            "an action's operation is 1 to {OPERATION_BYTES_MAX} bytes of a-z, 0-9, '_', '.', '-' (got {} bytes)",
            operation.len()
        )));
    }
    Ok(())
}

/// The rule of an action's `span`: empty (not from a trace), or the trace
/// id and span id in lowercase hex, `<32 hex>/<16 hex>`.
pub fn check_span(span: &str) -> Result<(), EventDecodeError> {
    match span_key(span) {
        Some(_) => Ok(()),
        None if span.is_empty() => Ok(()),
        None => Err(EventDecodeError::Limit("an action's span is empty or <32 lowercase hex>/<16 lowercase hex>".into())),
    }
}

/// The rule of an action's `parent`: empty, or a span of the same trace as
/// the action's own (non-empty) `span`, other than it.
pub fn check_parent(span: &str, parent: &str) -> Result<(), EventDecodeError> {
    if parent.is_empty() {
        return Ok(());
    }
    match (span_key(span), span_key(parent)) {
        (Some(s), Some(p)) if s[..16] == p[..16] && s != p => Ok(()),
        _ => Err(EventDecodeError::Limit("an action's parent is empty or another span of its own span's trace".into())),
    }
}

/// The 16-byte trace id and 8-byte span id of a non-empty `span` in the
/// form [`check_span`] accepts; `None` for anything else (and for empty).
pub(crate) fn span_key(span: &str) -> Option<[u8; 24]> {
    let lower_hex = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let (trace, id) = span.split_once('/')?;
    if trace.len() != 32 || id.len() != 16 || !lower_hex(trace) || !lower_hex(id) {
        return None;
    }
    let mut out = [0u8; 24];
    hex::decode_to_slice(trace, &mut out[..16]).ok()?;
    hex::decode_to_slice(id, &mut out[16..]).ok()?;
    Some(out)
}

/// The operations whose action writes a memory record, named by the
/// action's `name` (`protocol-spec/otlp.md`, "Memory records").
pub const MEMORY_WRITE_OPERATIONS: [&str; 2] = ["create_memory", "update_memory"];

/// The key of a memory record: SHA-256 of its id.
pub fn memory_record_key_of(record: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(record.as_bytes()).into()
}

/// The key of the record a memory-write action wrote: of its `name`, or,
/// in a redacted action's residue, the key its name keeps (`"sha256:"` +
/// 64 hex digits). `None` for another operation or an empty name.
pub(crate) fn memory_record_key(operation: &str, name: &str, redacted: bool) -> Option<[u8; 32]> {
    if name.is_empty() || !MEMORY_WRITE_OPERATIONS.contains(&operation) {
        return None;
    }
    match redacted {
        true => {
            let mut key = [0u8; 32];
            hex::decode_to_slice(name.strip_prefix(RESIDUE_CONTENT_ID)?, &mut key).ok()?;
            Some(key)
        }
        false => Some(memory_record_key_of(name)),
    }
}

/// Prefix of the text that holds a memory item's content id in its residue.
const RESIDUE_CONTENT_ID: &str = "sha256:";

/// The content id a memory item's residue keeps (`"sha256:" + 64 hex`), if
/// `content` is one.
pub(crate) fn residue_content_id(content: &str) -> Option<[u8; 32]> {
    let hex_text = content.strip_prefix(RESIDUE_CONTENT_ID)?;
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_text, &mut out).ok()?;
    Some(out)
}

impl Event {
    /// The residue of an event payload: what it meant without its text, kept
    /// by a node that redacts it (`agora_core::payload`). The event with every
    /// free-text field emptied (identifiers, states, numbers and references
    /// stay); a memory item keeps its content id as its `content`
    /// (`"sha256:"` + 64 hex digits), so it de-duplicates as before. A payload
    /// that does not decode gets a residue that fails with the same error code
    /// (`unknown_version`, `unknown_kind`, `limit`, `malformed`), so an invalid
    /// event stays invalid. Redacting keeps every status: see events.md.
    pub fn residue(payload: &[u8]) -> Vec<u8> {
        match Event::decode(payload) {
            Ok(mut ev) => {
                if let Event::MemoryItem { title, content, .. } = &ev {
                    let cid = memory_item_content_id(title, content);
                    if let Event::MemoryItem { content, .. } = &mut ev {
                        *content = format!("{RESIDUE_CONTENT_ID}{}", hex::encode(cid));
                    }
                }
                let record = match &ev {
                    Event::Action { operation, name, .. } => memory_record_key(operation, name, false),
                    _ => None,
                };
                ev.blank_texts();
                // A memory-write action keeps its record's key as its name,
                // as a memory item its content id: its claims stay current.
                if let (Some(key), Event::Action { name, .. }) = (record, &mut ev) {
                    *name = format!("{RESIDUE_CONTENT_ID}{}", hex::encode(key));
                }
                // An action's hashes commit to the contents it no longer
                // holds (a guessed argument could be checked against them),
                // and no rule reads them: dropped.
                if let Event::Action { input_hash, output_hash, .. } = &mut ev {
                    *input_hash = None;
                    *output_hash = None;
                }
                ev.encode()
            }
            Err(e) => match e {
                EventDecodeError::NotAnEvent => Vec::new(),
                EventDecodeError::UnknownVersion(v) => EVENT_FRAMING.frame_raw(v, &[]),
                EventDecodeError::UnknownKind(k) => EVENT_FRAMING.encode(&k),
                EventDecodeError::Limit(_) => Event::FrameConclude { frame: EntryId([0; 32]), conclusion: String::new(), confidence_bp: 10_001 }.encode(),
                EventDecodeError::Malformed(_) => EVENT_FRAMING.frame_raw(EVENT_VERSION, &[0]),
            },
        }
    }

    /// Empty every free-text field (a memory item's `content` is left to
    /// the caller). An action keeps its `operation` (a word of a fixed form,
    /// as a kind, which decoding requires) and its `span` (trace and span
    /// ids, which its duplicate rule reads, as a memory item's content id). Every field of every kind is named, with no `..`: a new
    /// kind or field does not compile until it is sorted into text (blanked)
    /// or structure (kept). `residue_tests` checks that no text survives.
    fn blank_texts(&mut self) {
        let texts: Vec<&mut String> = match self {
            Event::Proposition { text }
            | Event::Support { target: _, text }
            | Event::Contradiction { target: _, text }
            | Event::Refinement { target: _, resolves: _, text }
            | Event::Synthesis { sources: _, text }
            | Event::Question { text }
            | Event::Resolve { target: _, text }
            | Event::Connection { a: _, b: _, text }
            | Event::Tension { a: _, b: _, text }
            | Event::Reframe { target: _, text }
            | Event::FrameEvidence { frame: _, text } => vec![text],
            Event::Park { target: _, reason } | Event::FrameInvalidate { frame: _, reason } => vec![reason],
            Event::Resume { target: _ }
            | Event::Confirm { target: _ }
            | Event::FrameSuspend { frame: _ }
            | Event::FrameResume { frame: _ }
            | Event::Usage { trajectory: _, item: _, rank: _, score_bp: _ } => vec![],
            Event::Claim { text, kind: _, sources: _, owner_scope, confirmed: _, expires_at_ms: _ } => vec![text, owner_scope],
            Event::Relate { from: _, to: _, relation: _, reason } => vec![reason],
            Event::FrameOpen { parent: _, query, branched_from: _, invalidation_condition } => vec![query, invalidation_condition],
            Event::FrameConclude { frame: _, conclusion, confidence_bp: _ } => vec![conclusion],
            Event::Task { objective, owner_scope } => vec![objective, owner_scope],
            Event::TaskUpdate { task: _, state: _, note } => vec![note],
            Event::Trajectory { task_query, final_answer, iterations: _, converged: _ } => vec![task_query, final_answer],
            Event::Judgment { trajectory: _, success: _, reason, confidence: _ } => vec![reason],
            // `content` holds the content id by now (see `residue`).
            Event::MemoryItem { title, description, content: _, scope, source_trajectory: _ } => vec![title, description, scope],
            Event::Action { operation: _, name, conversation, span: _, parent: _, cause: _, input_hash: _, output_hash: _, text, error } => {
                vec![name, conversation, text, error]
            }
        };
        for t in texts {
            t.clear();
        }
    }
}

#[cfg(test)]
mod residue_tests {
    use super::*;

    /// Every string field of `ev`, named exhaustively (no `..`, no `_` arm):
    /// a new kind or field breaks this test's compilation until it is listed.
    /// An action's `operation` and `span` are named and left out: they are
    /// identifiers of a fixed form that the residue keeps
    /// (`an_action_residue_keeps_its_identifiers_and_cause_only`).
    fn string_fields(ev: &Event) -> Vec<&String> {
        match ev {
            Event::Proposition { text } | Event::Question { text } => vec![text],
            Event::Support { target: _, text }
            | Event::Contradiction { target: _, text }
            | Event::Resolve { target: _, text }
            | Event::Reframe { target: _, text }
            | Event::FrameEvidence { frame: _, text } => vec![text],
            Event::Refinement { target: _, resolves: _, text } => vec![text],
            Event::Synthesis { sources: _, text } => vec![text],
            Event::Connection { a: _, b: _, text } | Event::Tension { a: _, b: _, text } => vec![text],
            Event::Park { target: _, reason } | Event::FrameInvalidate { frame: _, reason } => vec![reason],
            Event::Resume { target: _ } | Event::Confirm { target: _ } | Event::FrameSuspend { frame: _ } | Event::FrameResume { frame: _ } => vec![],
            Event::Claim { text, kind: _, sources: _, owner_scope, confirmed: _, expires_at_ms: _ } => vec![text, owner_scope],
            Event::Relate { from: _, to: _, relation: _, reason } => vec![reason],
            Event::FrameOpen { parent: _, query, branched_from: _, invalidation_condition } => vec![query, invalidation_condition],
            Event::FrameConclude { frame: _, conclusion, confidence_bp: _ } => vec![conclusion],
            Event::Task { objective, owner_scope } => vec![objective, owner_scope],
            Event::TaskUpdate { task: _, state: _, note } => vec![note],
            Event::Trajectory { task_query, final_answer, iterations: _, converged: _ } => vec![task_query, final_answer],
            Event::Judgment { trajectory: _, success: _, reason, confidence: _ } => vec![reason],
            Event::MemoryItem { title, description, content, scope, source_trajectory: _ } => vec![title, description, content, scope],
            Event::Usage { trajectory: _, item: _, rank: _, score_bp: _ } => vec![],
            Event::Action { operation: _, name, conversation, span: _, parent: _, cause: _, input_hash: _, output_hash: _, text, error } => {
                vec![name, conversation, text, error]
            }
        }
    }

    /// One event of kind `code` with every string field set to `m()`.
    fn marked(code: u32, m: &mut impl FnMut() -> String) -> Event {
        let id = EntryId([7; 32]);
        match code {
            0 => Event::Proposition { text: m() },
            1 => Event::Support { target: id, text: m() },
            2 => Event::Contradiction { target: id, text: m() },
            3 => Event::Refinement { target: id, resolves: vec![id], text: m() },
            4 => Event::Synthesis { sources: vec![id, id], text: m() },
            5 => Event::Question { text: m() },
            6 => Event::Resolve { target: id, text: m() },
            7 => Event::Connection { a: id, b: id, text: m() },
            8 => Event::Tension { a: id, b: id, text: m() },
            9 => Event::Reframe { target: id, text: m() },
            10 => Event::Park { target: id, reason: m() },
            11 => Event::Resume { target: id },
            12 => Event::Claim { text: m(), kind: MemoryKind::Shared, sources: vec![id], owner_scope: m(), confirmed: true, expires_at_ms: Some(9) },
            13 => Event::Relate { from: id, to: id, relation: Relation::Qualifies, reason: m() },
            14 => Event::Confirm { target: id },
            15 => Event::FrameOpen { parent: Some(id), query: m(), branched_from: Some(id), invalidation_condition: m() },
            16 => Event::FrameEvidence { frame: id, text: m() },
            17 => Event::FrameConclude { frame: id, conclusion: m(), confidence_bp: 5 },
            18 => Event::FrameSuspend { frame: id },
            19 => Event::FrameResume { frame: id },
            20 => Event::FrameInvalidate { frame: id, reason: m() },
            21 => Event::Task { objective: m(), owner_scope: m() },
            22 => Event::TaskUpdate { task: id, state: TaskState::Blocked, note: m() },
            23 => Event::Trajectory { task_query: m(), final_answer: m(), iterations: 3, converged: true },
            24 => Event::Judgment { trajectory: id, success: true, reason: m(), confidence: Confidence::High },
            25 => Event::MemoryItem { title: m(), description: m(), content: m(), scope: m(), source_trajectory: Some(id) },
            26 => Event::Usage { trajectory: id, item: id, rank: 1, score_bp: 2 },
            27 => Event::Action {
                operation: "execute_tool".into(),
                name: m(),
                conversation: m(),
                span: format!("{}/{}", "ab".repeat(16), "cd".repeat(8)),
                parent: format!("{}/{}", "ab".repeat(16), "ef".repeat(8)),
                cause: Some(id),
                input_hash: Some([1; 32]),
                output_hash: Some([2; 32]),
                text: m(),
                error: m(),
            },
            other => panic!("no example of kind {other}: add one"),
        }
    }

    /// Every string field of every kind carries its own marker; the residue
    /// holds none of them (nor any part of one), and keeps the kind.
    #[test]
    fn a_residue_keeps_no_byte_of_any_text_field() {
        for code in 0..KIND_COUNT {
            let mut markers = Vec::new();
            let mut m = || {
                let marker = format!("MARK-{code:02}-{}-{:08x}", markers.len(), 0x5eed_u32.wrapping_mul(code + 7 * markers.len() as u32 + 1));
                markers.push(marker.clone());
                marker
            };
            let ev = marked(code, &mut m);
            assert_eq!(u32::from(ev.kind_index()), code);
            let fields = string_fields(&ev);
            assert_eq!(fields.len(), markers.len(), "{}: every string field is set to a marker", ev.kind_name());
            for (f, marker) in fields.iter().zip(&markers) {
                assert_eq!(f.as_str(), marker);
            }
            let residue = Event::residue(&ev.encode());
            let back = Event::decode(&residue).expect("a residue decodes");
            assert_eq!(back.kind_index(), ev.kind_index());
            for marker in &markers {
                // The marker's distinctive middle: no part of the text survives.
                let core = &marker.as_bytes()[4..];
                assert!(!residue.windows(core.len()).any(|w| w == core), "{}: the residue keeps {marker:?}", ev.kind_name());
            }
            for f in string_fields(&back) {
                assert!(f.is_empty() || f.starts_with(RESIDUE_CONTENT_ID), "{}: a field kept {f:?}", ev.kind_name());
            }
        }
    }

    /// An action's residue keeps what its decoding and its rules read (its
    /// operation, its span, its cause) and nothing else: no text, no hash.
    #[test]
    fn an_action_residue_keeps_its_identifiers_and_cause_only() {
        let span = format!("{}/{}", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
        let ev = Event::Action {
            operation: "execute_tool".into(),
            name: "get_weather".into(),
            conversation: "conv-1".into(),
            span: span.clone(),
            parent: format!("{}/{}", "0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7"),
            cause: Some(EntryId([3; 32])),
            input_hash: Some([4; 32]),
            output_hash: Some([5; 32]),
            text: "{\"city\":\"Paris\"}".into(),
            error: "timeout".into(),
        };
        let back = Event::decode(&Event::residue(&ev.encode())).unwrap();
        let expected = Event::Action {
            operation: "execute_tool".into(),
            name: String::new(),
            conversation: String::new(),
            span,
            parent: format!("{}/{}", "0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7"),
            cause: Some(EntryId([3; 32])),
            input_hash: None,
            output_hash: None,
            text: String::new(),
            error: String::new(),
        };
        assert_eq!(back, expected);
        assert_eq!(back.text(), "");
        assert_eq!(ev.text(), "get_weather\n{\"city\":\"Paris\"}\ntimeout");
    }

    /// An action's text (its contents) may be up to 512 KiB; its other
    /// text fields, as every other kind's, up to 16 KiB.
    #[test]
    fn an_action_text_has_its_own_bound() {
        let action = |name: usize, text: usize| Event::Action {
            operation: "checkpoint".into(),
            name: "n".repeat(name),
            conversation: String::new(),
            span: String::new(),
            parent: String::new(),
            cause: None,
            input_hash: None,
            output_hash: None,
            text: "t".repeat(text),
            error: String::new(),
        };
        for ok in [action(1, ACTION_TEXT_BYTES_MAX), action(TEXT_BYTES_MAX, TEXT_BYTES_MAX + 1)] {
            assert_eq!(Event::decode(&ok.encode()), Ok(ok));
        }
        for bad in [action(1, ACTION_TEXT_BYTES_MAX + 1), action(TEXT_BYTES_MAX + 1, 1)] {
            assert!(matches!(Event::decode(&bad.encode()), Err(EventDecodeError::Limit(_))));
        }
    }

    /// An action's operation and span have the forms of events.md, checked
    /// at decoding (a `limit` error, as every limit).
    #[test]
    fn an_action_operation_and_span_are_checked_at_decoding() {
        let action = |operation: &str, span: &str| Event::Action {
            operation: operation.into(),
            name: String::new(),
            conversation: String::new(),
            span: span.into(),
            parent: String::new(),
            cause: None,
            input_hash: None,
            output_hash: None,
            text: String::new(),
            error: String::new(),
        };
        let span = format!("{}/{}", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
        for (operation, span) in [("chat", ""), ("execute_tool", span.as_str()), ("a.b-c_9", ""), (&"x".repeat(OPERATION_BYTES_MAX), "")] {
            let ev = action(operation, span);
            assert_eq!(Event::decode(&ev.encode()), Ok(ev), "{operation:?} {span:?}");
        }
        let upper_span = span.to_uppercase();
        let bad = [
            ("", ""),
            ("Chat", ""),
            ("execute tool", ""),
            ("é", ""),
            (&*"x".repeat(OPERATION_BYTES_MAX + 1), ""),
            ("chat", upper_span.as_str()),
            ("chat", &span[1..]),
            ("chat", "0af7651916cd43dd8448eb211c80319c"),
            ("chat", "0af7651916cd43dd8448eb211c80319cb7ad6b7169203331"),
            ("chat", "0af7651916cd43dd8448eb211c80319g/b7ad6b7169203331"),
            ("chat", "0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331/"),
        ];
        for (operation, span) in bad {
            assert!(matches!(Event::decode(&action(operation, span).encode()), Err(EventDecodeError::Limit(_))), "{operation:?} {span:?}");
        }
    }
}

/// An event's references: up to two inline, more on the heap.
#[derive(Clone, Debug, Default)]
pub struct RefList(InlineList<EntryId, 2>);

impl std::ops::Deref for RefList {
    type Target = [EntryId];
    fn deref(&self) -> &[EntryId] {
        &self.0
    }
}

/// The content id of a memory item: SHA-256 of `title "\n" content`, so that
/// extracting the same lesson twice yields the same id (004).
pub fn memory_item_content_id(title: &str, content: &str) -> [u8; 32] {
    let mut text = Vec::with_capacity(title.len() + 1 + content.len());
    text.extend_from_slice(title.as_bytes());
    text.push(b'\n');
    text.extend_from_slice(content.as_bytes());
    agora_core::sha256(&text)
}
