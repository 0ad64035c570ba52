//! A node of the graph ([`Node`]), its [`Status`], and what it keeps of its
//! event ([`Meta`]). The parts of the state behind them (what later events
//! did to it: the marks, [`Mark`], and the rarer state in [`Extra`], with a
//! frame's [`FrameState`]) are in `node_state.rs`, below this file and the
//! node's packed lists (`links.rs`).
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
//! kind, text, flags). The node with its graph, for the events it names
//! (why, touched by, edges, challenges), is read in `mod.rs`, where the graph
//! turns positions back into ids.

use super::links::Links;
use super::node_state::{Extra, FrameState, Ix, Mark};
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

/// What a node keeps of its event beyond its text: just what later rules and
/// reads need. (Keeping whole events would double the graph's memory.) Four
/// bytes: a claim's expiry, which few claims have, lives in [`Extra`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Meta {
    None,
    Claim { kind: MemoryKind, has_sources: bool, confirmed: bool },
    Relate(Relation),
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

    /// Parked by a `park` no `resume` followed, whatever status decides.
    pub fn parked(&self) -> bool {
        self.links.has(Mark::ParkedBy)
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
