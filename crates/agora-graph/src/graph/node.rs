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
//! tight lists, other nodes named by 4-byte position), and because it is the
//! graph's public reading surface: the node alone for what it is (status,
//! kind, text, flags), the node with its graph for the events it names (why,
//! touched by, edges, challenges), which the graph turns back into ids.

use super::Graph;
use super::index::Ix;
use super::links::Links;
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
}

impl Rel {
    /// Every relation, in declaration order: a relation's place here is the
    /// word [`Links`](super::links::Links) keeps it as.
    pub(super) const ALL: [Rel; 23] = [
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

impl Meta {
    pub(super) fn of(ev: &Event) -> Self {
        match ev {
            Event::Claim { kind, sources, confirmed, .. } => Meta::Claim { kind: *kind, has_sources: !sources.is_empty(), confirmed: *confirmed },
            Event::Relate { relation, .. } => Meta::Relate(*relation),
            _ => Meta::None,
        }
    }
}

/// Per-node state that most nodes never have, boxed so that a node stays
/// small: replaying a million events touches every node's memory, and on this
/// machine fresh memory is the dominant cost. The marks later events leave
/// (a contradiction on its target, say) are not here but in the node's
/// [`Links`], so that a node with a mark and no other rare state has no box.
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
    /// The node's seq when it is [`BIG_SEQ`] or more.
    pub(super) big_seq: Option<u64>,
}

/// What [`Node::seq`](Node) holds for a seq kept in [`Extra::big_seq`].
const BIG_SEQ: u32 = u32::MAX;

static NO_EXTRA: std::sync::LazyLock<Extra> = std::sync::LazyLock::new(Extra::default);

/// A node of the reasoning graph: one applied event, with what later events did to it.
///
/// A node names other nodes (its edges, what touched it, its marks) by their
/// position in the graph, 4 bytes each rather than a 32-byte id: at a million
/// nodes the ids were most of the graph's memory. So the readings that answer
/// with other events' ids ([`Graph::why`](super::Graph::why),
/// [`Graph::touched_by`](super::Graph::touched_by),
/// [`Graph::edges`](super::Graph::edges), ...) are asked of the graph with the
/// node; the rest (status, kind, text, flags) of the node alone. For the
/// same reason two nodes compare equal (`==`) only as nodes of graphs that
/// applied the same events in the same order; graphs are compared by
/// [`Graph::snapshot`](super::Graph::snapshot) or
/// [`Graph::digest`](super::Graph::digest).
#[derive(Clone, Debug)]
pub struct Node {
    /// Author's timestamp.
    pub timestamp_ms: u64,
    /// The entry id's row in the graph's [`IdArena`](agora_core::id_arena::IdArena) (4 bytes instead of
    /// 32: the node's views share one arena, so each id is held once).
    pub(super) row: u32,
    /// Seq in the author's chain, or [`BIG_SEQ`] for one that does not fit
    /// 32 bits, kept in the rare state ([`Extra::big_seq`]): an author may
    /// sign any seq, a chain grown one entry at a time never gets there.
    seq: u32,
    /// The author, as an index into the graph's author table (see
    /// [`Graph::position`](super::Graph::position)): 4 bytes a node instead
    /// of 32.
    pub(super) author: u32,
    /// Its kind, one byte: an event kind's place in [`Event::KIND_NAMES`],
    /// or [`RAW`], [`REDACTED`], [`INVALID`] (read by [`Node::kind`]).
    kind: u8,
    /// Every later event that touched this node, in log order (see
    /// [`Graph::touched_by`](super::Graph::touched_by)); its outgoing typed
    /// edges, in the order they were drawn (see
    /// [`Graph::edges`](super::Graph::edges)); the marks later events left
    /// on it. All by position.
    /// And, behind the same pointer, the rare state ([`Extra`]) of the
    /// few nodes that have any.
    pub(super) links: Links,
    pub(super) meta: Meta,
}

/// Two nodes are equal when everything but their id's row is: rows are an
/// arena's, and two graphs may hold their ids in different arenas. (A
/// [`NodeRef`] compares the ids too.)
impl PartialEq for Node {
    fn eq(&self, other: &Self) -> bool {
        (self.timestamp_ms, self.seq, self.author, self.kind, &self.links, self.meta)
            == (other.timestamp_ms, other.seq, other.author, other.kind, &other.links, other.meta)
    }
}

impl Eq for Node {}

/// A node as the graph's readings hand it out ([`Graph::node`],
/// [`Graph::nodes`], ...): with its entry id, read from the graph's
/// [`IdArena`](agora_core::id_arena::IdArena) (the node itself keeps only the id's row). Everything else
/// is the [`Node`]'s, which it dereferences to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef<'g> {
    /// The entry id.
    pub id: EntryId,
    node: &'g Node,
}

impl<'g> NodeRef<'g> {
    pub(super) fn new(id: EntryId, node: &'g Node) -> Self {
        Self { id, node }
    }

    /// The node, for as long as the graph is borrowed.
    pub fn node(&self) -> &'g Node {
        self.node
    }
}

/// What the graph's readings of a node take ([`Graph::text`],
/// [`Graph::edges`], [`Graph::why`], ...): a node borrowed from the graph,
/// as a [`NodeRef`] or a plain [`Node`].
pub trait AsNode<'g>: Copy {
    /// The node.
    fn as_node(self) -> &'g Node;
}

impl<'g> AsNode<'g> for &'g Node {
    fn as_node(self) -> &'g Node {
        self
    }
}

impl<'g> AsNode<'g> for NodeRef<'g> {
    fn as_node(self) -> &'g Node {
        self.node
    }
}

impl<'g> AsNode<'g> for &NodeRef<'g> {
    fn as_node(self) -> &'g Node {
        self.node
    }
}

impl std::ops::Deref for NodeRef<'_> {
    type Target = Node;
    fn deref(&self) -> &Node {
        self.node
    }
}

/// The kind of a node made by a payload that is not an event (a raw note).
pub(super) const RAW: u8 = Event::KIND_NAMES.len() as u8;
/// The kind of a node whose payload was redacted without a residue.
pub(super) const REDACTED: u8 = RAW + 1;
/// The kind of a node whose payload did not decode.
pub(super) const INVALID: u8 = RAW + 2;

/// The node's size is what a million-node graph pays a million times (see
/// the README's replay figures): kept at 32 bytes on 64-bit targets. Its
/// text is not in it (the graph holds texts beside the nodes, or leaves them
/// in the store: `text.rs`), nor its id (a row of the graph's [`IdArena`](agora_core::id_arena::IdArena)),
/// its seq is 32 bits (a larger one is rare state), its kind is a byte, its
/// author, kind and rule metadata share one 8-byte word, and its three lists
/// of other nodes and its rare state are behind one pointer, their lengths
/// in front of them (`links.rs`).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Node>() <= 32);

impl Node {
    pub(super) fn new(row: u32, pos: LogPosition, author: u32, kind: u8) -> Self {
        let mut node = Self { timestamp_ms: pos.timestamp_ms, row, seq: 0, author, kind, links: Links::default(), meta: Meta::None };
        match u32::try_from(pos.seq) {
            Ok(seq) if seq != BIG_SEQ => node.seq = seq,
            _ => {
                node.seq = BIG_SEQ;
                node.links.extra_mut().big_seq = Some(pos.seq);
            }
        }
        node
    }

    /// Seq in the author's chain.
    pub fn seq(&self) -> u64 {
        match self.seq {
            BIG_SEQ => self.x().big_seq.unwrap_or(u64::from(BIG_SEQ)),
            seq => u64::from(seq),
        }
    }

    /// A copy of the node: what a rewind (`rewind.rs`) keeps of a node
    /// before an event changes it.
    pub(super) fn clone_state(&self) -> Self {
        self.clone()
    }

    /// Kind name (`proposition`, ..., or `raw`, `redacted`, `invalid`).
    pub fn kind(&self) -> &'static str {
        match self.kind {
            RAW => "raw",
            REDACTED => "redacted",
            INVALID => "invalid",
            event => Event::KIND_NAMES[event as usize],
        }
    }

    pub(super) fn x(&self) -> &Extra {
        self.links.extra().unwrap_or(&NO_EXTRA)
    }

    /// Why it is invalid (it broke a rule, or could not be decoded), if it is.
    pub fn invalid(&self) -> Option<&str> {
        self.x().invalid.as_deref()
    }

    /// True for nodes made by a valid, held event (not raw, redacted or invalid).
    pub fn is_event(&self) -> bool {
        self.x().invalid.is_none() && self.kind < RAW
    }

    /// The node's status, by the rules in order: invalid, retracted, duplicate,
    /// contested by a conflict, superseded, parked, contested, resolved, active.
    pub fn status(&self) -> Status {
        let (x, l) = (self.x(), &self.links);
        if x.invalid.is_some() {
            Status::Invalid
        } else if l.has(Mark::RetractedBy) || x.frame_state == Some(FrameState::Invalidated) {
            Status::Retracted
        } else if l.has(Mark::DuplicateOf) {
            Status::Duplicate
        } else if l.has(Mark::Conflict) {
            // Before superseded, parked and resolved: which of two
            // concurrent changes log order applied last is the authors'
            // clocks' choice, so a conflict reads the same either way.
            Status::Contested
        } else if l.has(Mark::SupersededBy) {
            Status::Superseded
        } else if l.has(Mark::ParkedBy) || x.frame_state == Some(FrameState::Suspended) || x.task_state == Some(TaskState::Abandoned) {
            Status::Parked
        } else if l.has(Mark::OpenChallenge) || l.has(Mark::Conflict) {
            Status::Contested
        } else if l.has(Mark::ResolvedBy) || x.frame_state == Some(FrameState::Completed) || x.task_state == Some(TaskState::Done) {
            Status::Resolved
        } else {
            Status::Active
        }
    }

    /// The nodes of the events that make the status `status` (the node's
    /// own) what it is, one at a time; `me` is this node's position (a
    /// refinement that resolves is resolved by itself, which is not a why).
    pub(super) fn for_each_why(&self, me: Ix, status: Status, mut f: impl FnMut(Ix)) {
        let x = &self.links;
        let all = |mark: Mark, f: &mut dyn FnMut(Ix)| x.all(mark).for_each(f);
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
                x.last(Mark::ResolvedBy).filter(|by| *by != me).into_iter().for_each(&mut f);
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

    /// Survived at least one challenge, and nothing is open against it.
    pub fn settled(&self) -> bool {
        let x = &self.links;
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
    /// Task state, for tasks.
    pub fn task_state(&self) -> Option<TaskState> {
        self.x().task_state
    }
    /// Whether an open challenge or tension stands against it.
    pub fn disagreed(&self) -> bool {
        self.links.has(Mark::OpenChallenge) || self.links.has(Mark::Tension)
    }
    /// For memory items: (successes, failures, uses) over judged trajectories.
    pub fn outcomes(&self) -> (u64, u64, usize) {
        let x = self.x();
        (u64::from(x.successes), u64::from(x.failures), self.links.all(Mark::Usage).count())
    }
    /// For trajectories: the judgment (success?), if judged, and judged
    /// alike by every agent that judged it: concurrent verdicts that differ
    /// are a conflict, and decide nothing (`None`).
    pub fn judged(&self) -> Option<bool> {
        self.x().judged.filter(|_| !self.links.has(Mark::Conflict))
    }

    /// The node's successor, when one event superseded it (two agents
    /// superseding it concurrently leave it in conflict, with none).
    pub(super) fn sole_successor(&self) -> Option<Ix> {
        let mut successors = self.links.all(Mark::SupersededBy);
        let first = successors.next();
        successors.next().is_none().then_some(first).flatten()
    }
}

/// The readings of a node that name other events: the node keeps their
/// positions, the graph turns them into ids. `n` must be a node of this
/// graph (from [`Graph::node`], [`Graph::nodes`], [`Graph::by_id`], ...).
impl Graph {
    pub(super) fn id_at(&self, ix: Ix) -> EntryId {
        self.ids.id(self.nodes[ix as usize].row)
    }

    /// The id of `n`, one of this graph's nodes.
    pub(super) fn id_of(&self, n: &Node) -> EntryId {
        self.ids.id(n.row)
    }

    /// `n` with its id: what the public readings hand out.
    pub(super) fn node_ref<'g>(&'g self, n: &'g Node) -> NodeRef<'g> {
        NodeRef::new(self.id_of(n), n)
    }

    /// The position of `n`, which must be one of this graph's nodes: from
    /// its address, so that reading a node costs no lookup.
    pub(super) fn ix_of_node(&self, n: &Node) -> Ix {
        let offset = (n as *const Node as usize).wrapping_sub(self.nodes.as_ptr() as usize);
        let ix = offset / std::mem::size_of::<Node>();
        assert!(ix < self.nodes.len() && offset.is_multiple_of(std::mem::size_of::<Node>()), "node at {offset:#x} from the first is not one of this graph's");
        ix as Ix
    }

    fn ids_marked(&self, n: &Node, mark: Mark) -> Vec<EntryId> {
        n.links.all(mark).map(|ix| self.id_at(ix)).collect()
    }

    /// Every event that touched `n`, in log order, starting with itself.
    pub fn touched_by<'g>(&'g self, n: impl AsNode<'g>) -> Vec<EntryId> {
        let n = n.as_node();
        std::iter::once(self.id_of(n)).chain(n.links.touched().iter().map(|&ix| self.id_at(ix))).collect()
    }

    /// `n`'s outgoing typed edges: (relation name, target), in the order they were drawn.
    pub fn edges<'g>(&'g self, n: impl AsNode<'g>) -> impl ExactSizeIterator<Item = (&'static str, EntryId)> + 'g {
        let n = n.as_node();
        n.links.edges().map(|(rel, to)| (rel.name(), self.id_at(to)))
    }

    /// The events that make `n`'s status what it is.
    pub fn why<'g>(&'g self, n: impl AsNode<'g>) -> Vec<EntryId> {
        let n = n.as_node();
        let me = self.ix_of_node(n);
        let mut out = Vec::new();
        n.for_each_why(me, n.status(), |ix| out.push(self.id_at(ix)));
        out
    }

    /// The events that conflict over `n`'s state (see
    /// `protocol-spec/events.md`, "Concurrent events"), empty when none.
    pub fn conflicts<'g>(&'g self, n: impl AsNode<'g>) -> Vec<EntryId> {
        self.ids_marked(n.as_node(), Mark::Conflict)
    }

    /// Child frames, for frames.
    pub fn frame_children<'g>(&'g self, n: impl AsNode<'g>) -> Vec<EntryId> {
        self.ids_marked(n.as_node(), Mark::FrameChild)
    }

    /// Open challenges against `n`.
    pub fn open_challenges<'g>(&'g self, n: impl AsNode<'g>) -> Vec<EntryId> {
        self.ids_marked(n.as_node(), Mark::OpenChallenge)
    }

    /// Open tensions on `n`.
    pub fn tensions<'g>(&'g self, n: impl AsNode<'g>) -> Vec<EntryId> {
        self.ids_marked(n.as_node(), Mark::Tension)
    }

    /// The event that superseded `n`, if one did (two concurrent
    /// successors are a conflict: `None`, and [`Graph::conflicts`] names them).
    pub fn superseded_by<'g>(&'g self, n: impl AsNode<'g>) -> Option<EntryId> {
        n.as_node().sole_successor().map(|ix| self.id_at(ix))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Event, Graph, LogEvent, LogPosition};
    use agora_core::{AgentId, EntryId};

    fn log(seq_base: u64) -> Vec<LogEvent> {
        (0..6u8)
            .map(|i| {
                let event = match i {
                    0 => Event::Proposition { text: "p".into() },
                    _ => Event::Support { target: EntryId([0; 32]), text: format!("s{i}") },
                };
                let pos = LogPosition { timestamp_ms: 1_000 + u64::from(i), author: AgentId([9; 32]), seq: seq_base + u64::from(i) };
                LogEvent::from_payload(EntryId([i; 32]), pos, Some(&event.encode()))
            })
            .collect()
    }

    /// A node keeps its seq in 32 bits and one past them (an author may
    /// sign any seq) in its rare state: read back whole, and the snapshot
    /// (which a node with rare state writes the long way) is the same as
    /// with small seqs.
    #[test]
    fn seqs_past_32_bits_are_kept_whole() {
        let base = u64::from(u32::MAX) - 2;
        let big = Graph::replay(log(base));
        let small = Graph::replay(log(1));
        for (n, i) in big.nodes().zip(0u64..) {
            assert_eq!((n.seq(), big.position(n).seq), (base + i, base + i));
            assert_eq!(n.links.extra().is_some(), base + i >= u64::from(super::BIG_SEQ), "rare state only past 32 bits");
        }
        assert_eq!(big.node(&EntryId([5; 32])).map(|n| n.seq()), Some(u64::from(u32::MAX) + 3));
        assert_eq!(big.snapshot(), small.snapshot());
        let at_max = Graph::replay(log(u64::MAX - 5));
        assert_eq!(at_max.nodes().map(|n| n.seq()).last(), Some(u64::MAX));
    }

    /// Nodes read from two graphs with their own arenas compare by id and
    /// state, not by the rows their arenas gave.
    #[test]
    fn nodes_compare_by_id_not_row() {
        let a = Graph::replay(log(1));
        let arena = std::sync::Arc::new(agora_core::id_arena::IdArena::new());
        arena.intern(&EntryId([0xaa; 32]));
        let b = Graph::new().sharing_ids(arena).replayed(log(1), 0);
        let id = EntryId([3; 32]);
        assert_ne!(a.node(&id).map(|n| n.row), b.node(&id).map(|n| n.row), "different rows");
        assert_eq!(a.node(&id), b.node(&id));
        assert_ne!(a.node(&id), a.node(&EntryId([4; 32])));
    }
}
