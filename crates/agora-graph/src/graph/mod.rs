//! The reasoning graph: a pure, deterministic function of the events.
//!
//! Events are applied in **log order**: by (timestamp, author, seq), which every
//! node computes the same way from the same entries. An event whose references
//! are not all known yet is held as *pending* and applied the moment the last
//! one arrives. Nothing here is stored state that could drift: [`Graph::replay`]
//! rebuilds everything from the events, and [`Graph::snapshot`] gives a
//! canonical byte form so that a rebuild can be compared bit for bit.
//!
//! This file holds the [`Graph`] itself, applying one event (holding and
//! releasing pending ones), and the public queries. Each other job has a
//! module of its own, which adds to `Graph` in an `impl` block of its own.
//! What the graph holds is defined below it, in files that never name the
//! graph (so no two files know each other):
//!
//! - `input`: what the graph is fed ([`LogEvent`], [`Body`]) and log order;
//! - `index`: node positions by id (`NodeIndex`);
//! - `node`: a [`Node`] and its [`Status`]; `node_state`: the parts its
//!   state is made of (positions, marks, [`FrameState`], rare state);
//!   `links`: its relations, packed in one allocation;
//! - `buckets`, `journal`: the state of the digest and of the rewinding;
//! - `rules`: whether an event may apply ([`Graph::check`], [`RuleError`]);
//! - `causal`: whether an event's author had seen an earlier event
//!   (`Graph::saw`), which the rules and effects ask instead of log order
//!   wherever two agents' events compete;
//! - `effects`: what a valid event does to the nodes it names;
//! - `replay`: a graph built from a whole log ([`Graph::replay`],
//!   [`OrderedReplay`]);
//! - `snapshot`: the canonical bytes and their hash ([`Graph::snapshot`],
//!   [`Graph::view_hash`], [`Graph::by_id`]);
//! - `digest`: a two-level hash of the same bytes kept current as events
//!   apply ([`Graph::digest`]);
//! - `late`: an event that sorts before the last one applied, taken in
//!   place where its order does not matter ([`Graph::apply_late`]);
//! - `rewind`: a journal of the last applies, undone and applied again
//!   around a late event where its order does matter
//!   ([`Graph::keep_journal`]).
//!
//! Inside the graph a node is named by its position in application order,
//! and so are the nodes it keeps relations to (edges, touches, marks); at the
//! public surface, by its entry id. An event's references are looked up once,
//! when it is applied; the rules, then (if it keeps them) the effects, reach
//! the nodes by position.

mod buckets;
mod causal;
mod digest;
mod effects;
mod index;
mod input;
mod journal;
mod late;
mod links;
mod memory;
mod node;
mod node_state;
mod replay;
mod rewind;
mod rules;
mod snapshot;
mod text;

pub use agora_core::LogPosition;
pub use buckets::DIGEST_BUCKETS;
pub use causal::CAUSAL_WALK_MAX;
pub use index::NODES_MAX;
pub use input::{Body, LogEvent};
pub use late::Late;
pub use memory::GraphMemory;
pub use node::{AsNode, Node, NodeRef, Status};
pub use node_state::FrameState;
pub use replay::{NotInLogOrder, OrderedReplay};
pub use rewind::LIVE_GRAPH_JOURNAL;
pub use rules::RuleError;
pub use snapshot::ById;
pub use text::{TextSource, TextUnavailable, text_of_content};

use crate::event::Event;
use crate::inline::InlineList;
use agora_core::id_arena::IdArena;
use agora_core::idmap::IdMap;
use agora_core::{AgentId, EntryId};
use index::NodeIndex;
use input::{Key, key_of};
use node::Meta;
use node_state::{Ix, Mark};
use std::collections::HashMap;
use std::sync::Arc;

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
    /// Memory item content id -> first item with that content, in log order.
    content_ids: HashMap<[u8; 32], Ix>,
    /// (content id, author) -> the author's first item with that content,
    /// for authors other than the first item's: an *original* too, since
    /// nothing shows its author had seen the first (`causal.rs`).
    content_rivals: HashMap<([u8; 32], u32), Ix>,
    /// (author, an action's trace id and span id) -> the author's first
    /// action from that span, in log order (`effects.rs` `action_span`).
    action_spans: HashMap<(u32, [u8; 24]), Ix>,
    /// A memory-write action (`create_memory`, `update_memory`) -> the key
    /// of the record it wrote (`event::memory_record_key`).
    memory_actions: HashMap<Ix, [u8; 32]>,
    /// (author, record key) -> the author's last claim of that record in
    /// log order: a claim whose first source is the author's own
    /// memory-write action of it (`effects.rs` `index_memory_claim`).
    memory_claims: HashMap<(u32, [u8; 32]), Ix>,
    /// The log-order key (position, then id) of the last event applied in
    /// log order: one that sorts before it is late.
    last_key: Option<Key>,
    /// Node positions in id order, once asked for ([`Graph::by_id`]); cleared
    /// by every apply.
    id_order: std::sync::OnceLock<Vec<Ix>>,
    /// Nodes that [`Graph::apply_late`] appended ahead of their place in log
    /// order, ascending. Empty for a graph that took no late event, whose
    /// application order is a replay's.
    late_nodes: Vec<Ix>,
    /// Nodes of events held as pending, placed where the event that released
    /// them was (not at their own place in log order), ascending.
    released_nodes: Vec<Ix>,
    /// Node positions in a replay's application order, once asked for by
    /// [`Graph::nodes`] of a graph that took late events; cleared by every
    /// apply.
    replay_order: std::sync::OnceLock<Vec<Ix>>,
    /// The bucket digests of [`Graph::digest`], once asked for; kept current
    /// by every apply from then on.
    digests: Option<Box<buckets::Digests>>,
    /// Per node, where in log order the last event that named it as a
    /// reference or wrote it took effect, as the node of the event whose
    /// (position, id) that is: the event itself, or for an event held as
    /// pending and released, the event whose arrival released it. What
    /// [`Graph::apply_late`] checks.
    accessed: Vec<Ix>,
    /// That node for the event being applied.
    point: Ix,
    /// While an event is applied late: its (position, id), and whether it
    /// wrote a node a later event had read or written.
    late: Option<LateCheck>,
    /// The last applies, for rewinding around a late event, when kept
    /// ([`Graph::keep_journal`]).
    journal: Option<Box<journal::Journal>>,
    /// The nodes' texts, held or read from a store ([`Graph::with_texts_from`]).
    texts: text::Texts,
    /// The nodes' ids, each node naming its own by row: the graph's own
    /// arena, or one its node's other views share ([`Graph::sharing_ids`]).
    ids: Arc<IdArena>,
}

/// The late event being applied (see `late.rs`).
#[derive(Clone, Copy, Debug)]
struct LateCheck {
    key: Key,
    spoiled: bool,
}

/// An event's references resolved to node positions, in [`Event::ref_list`]
/// order: four inline (every kind but long source lists), more on the heap.
type Targets = InlineList<Ix, 4>;

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty graph that holds no texts: [`Graph::text`] reads each from
    /// `source`, the store its events come from (see `text.rs`). Build it
    /// with [`Graph::replayed`] or by applying events.
    pub fn with_texts_from(source: std::sync::Arc<dyn TextSource>) -> Self {
        Self { texts: text::Texts::Elsewhere(source), ..Self::default() }
    }

    /// This graph, still empty, with its nodes' ids held in `ids` (which
    /// other views may share: each id is held once) instead of an arena of
    /// its own. Panics if the graph has nodes.
    pub fn sharing_ids(mut self, ids: Arc<IdArena>) -> Self {
        assert!(self.nodes.is_empty(), "a graph's arena is chosen before its first node");
        self.ids = ids;
        self
    }

    /// The arena the graph's ids are held in.
    pub fn ids(&self) -> &Arc<IdArena> {
        &self.ids
    }

    /// True if the graph holds its nodes' texts (rather than reading them
    /// from a store).
    pub fn keeps_texts(&self) -> bool {
        matches!(self.texts, text::Texts::Kept(_))
    }

    /// Where the graph reads its texts from, if it holds none: for a graph
    /// built again from the same store.
    pub fn text_source(&self) -> Option<std::sync::Arc<dyn TextSource>> {
        match &self.texts {
            text::Texts::Kept(_) => None,
            text::Texts::Elsewhere(source) => Some(source.clone()),
        }
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
        if self.index.contains(&self.nodes, &self.ids, &event.id) {
            return true;
        }
        self.orders_changed();
        if self.last_key.is_some_and(|last| key_of(event) < last) {
            return false;
        }
        if self.journal.is_some() {
            self.open_record(event, false);
        }
        self.last_key = Some(key_of(event));
        let id = event.id;
        // Its node's position if it is applied; events it releases take
        // effect at its place in log order too.
        self.point = self.nodes.len() as Ix;
        if self.try_apply(event) && !self.waiting.is_empty() {
            self.release(id);
        }
        self.close_record();
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
            match self.index.get(&self.nodes, &self.ids, r) {
                Some(ix) => targets.push(ix),
                None => {
                    let held = std::mem::replace(e, LogEvent { id: e.id, pos: e.pos, body: Body::Redacted, redacted: false });
                    self.record_held(*r, held.id);
                    self.pending_count += 1;
                    // Room for exactly the events held while they are few:
                    // most ids are waited for by one, and a first push would
                    // make room for four (224 bytes each; a perspective that
                    // accepts half of a swarm holds tens of thousands of
                    // these). Doubling beyond, so that many events waiting
                    // for one id cost linear time.
                    let list = self.waiting.entry(*r).or_default();
                    if list.len() < 4 {
                        list.reserve_exact(1);
                    }
                    list.push(held);
                    self.pending_changed();
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
            if self.index.contains(&self.nodes, &self.ids, &id) {
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
            self.record_released(*id, &released);
            self.pending_changed();
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
            Body::Raw => node::RAW,
            Body::Redacted => node::REDACTED,
            Body::Undecodable(_) => node::INVALID,
            Body::Event(ev) => ev.kind_index(),
        };
        let author = self.author(&pos.author);
        let mut node = Node::new(self.ids.intern(&id), pos, author, kind);
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
                        node.links.extra_mut().expires_at_ms = Some(*t);
                    }
                    None
                }
            },
        };
        let valid = invalid.is_none();
        if let Some(reason) = invalid {
            node.links.extra_mut().invalid = Some(reason.into_boxed_str());
        }
        assert!(self.nodes.len() < NODES_MAX, "more than {NODES_MAX} nodes");
        let me = self.nodes.len() as Ix;
        self.nodes.push(node);
        self.texts.added();
        self.accessed.push(self.point);
        if self.point != me {
            self.released_nodes.push(me);
        }
        for &t in targets {
            self.accessed_by_current(t);
        }
        self.index.insert(&id, me);
        self.added(me);
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
            self.texts.set(me, ev);
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

    /// The node at `ix`; `None` for [`UNKNOWN`](index::UNKNOWN).
    fn at(&self, ix: Ix) -> Option<&Node> {
        self.nodes.get(ix as usize)
    }

    /// Where a node sits in the log: its timestamp, author and seq.
    pub fn position<'g>(&'g self, node: impl AsNode<'g>) -> LogPosition {
        let node = node.as_node();
        LogPosition { timestamp_ms: node.timestamp_ms, author: self.authors[node.author as usize], seq: node.seq() }
    }

    /// The text of `n`, one of this graph's nodes: held, or read from the
    /// store for a graph built [`Graph::with_texts_from`] it, which can fail.
    pub fn text<'g>(&'g self, n: impl AsNode<'g>) -> Result<std::borrow::Cow<'g, str>, TextUnavailable> {
        let n = n.as_node();
        self.texts.get(self.ix_of_node(n), &self.position(n), &self.id_of(n))
    }

    /// A node by id.
    pub fn node(&self, id: &EntryId) -> Option<NodeRef<'_>> {
        self.index.get(&self.nodes, &self.ids, id).map(|i| NodeRef::new(*id, &self.nodes[i as usize]))
    }

    /// Nodes in a replay's application order: log order, each event held as
    /// pending placed right after the event that released it
    /// (`protocol-spec/events.md`, "Replay order"). A graph that took late
    /// events ([`Graph::apply_late`]) applied them at the end; it lists them
    /// where a replay would have applied them, so every listing (decisions,
    /// open questions, exports, search) reads as a replay's.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeRef<'_>> {
        let order = (!self.late_nodes.is_empty()).then(|| self.replay_order.get_or_init(|| self.sort_into_replay_order()).as_slice());
        (0..self.nodes.len()).map(move |k| match order {
            Some(order) => self.node_ref(&self.nodes[order[k] as usize]),
            None => self.node_ref(&self.nodes[k]),
        })
    }

    /// The orders kept for readers (by id, a replay's) no longer hold: a
    /// node is about to be added or changed.
    fn orders_changed(&mut self) {
        self.id_order.take();
        self.replay_order.take();
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
                    Body::Event(ev) => ev.refs().into_iter().filter(|r| !self.index.contains(&self.nodes, &self.ids, r)).collect(),
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
    /// current state of `id` (itself if nothing supersedes it). The walk
    /// stops at a node two agents superseded concurrently: which successor
    /// is current is theirs to settle, not their clocks'.
    pub fn latest_in_chain(&self, id: &EntryId) -> Option<EntryId> {
        let mut cur = self.index.get(&self.nodes, &self.ids, id)?;
        let mut steps = 0;
        while let Some(next) = self.nodes[cur as usize].sole_successor() {
            cur = next;
            steps += 1;
            if steps > self.nodes.len() {
                break;
            }
        }
        Some(self.id_at(cur))
    }
}

/// The readings of a node that name other events: the node keeps their
/// positions, the graph turns them into ids. `n` must be a node of this
/// graph (from [`Graph::node`], [`Graph::nodes`], [`Graph::by_id`], ...).
impl Graph {
    fn id_at(&self, ix: Ix) -> EntryId {
        self.ids.id(self.nodes[ix as usize].row)
    }

    /// The id of `n`, one of this graph's nodes.
    fn id_of(&self, n: &Node) -> EntryId {
        self.ids.id(n.row)
    }

    /// `n` with its id: what the public readings hand out.
    fn node_ref<'g>(&'g self, n: &'g Node) -> NodeRef<'g> {
        NodeRef::new(self.id_of(n), n)
    }

    /// The position of `n`, which must be one of this graph's nodes: from
    /// its address, so that reading a node costs no lookup.
    fn ix_of_node(&self, n: &Node) -> Ix {
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

    /// The first action by `author` recorded from `span` (`<trace id>/<span
    /// id>`), the one a later action from it duplicates: whether a span was
    /// recorded already. `None` for an empty or malformed span.
    pub fn action_of_span(&self, author: &AgentId, span: &str) -> Option<EntryId> {
        let key = crate::event::span_key(span)?;
        let author = *self.author_index.get(author)?;
        self.action_spans.get(&(author, key)).map(|&ix| self.id_at(ix))
    }

    /// The current claim of the memory record `record` that `author`'s
    /// memory-write actions wrote: the last of its claims in log order
    /// whose first source is one of those actions (`protocol-spec/otlp.md`,
    /// "Memory records"). `None` when it has none.
    pub fn memory_record_claim(&self, author: &AgentId, record: &str) -> Option<EntryId> {
        let author = *self.author_index.get(author)?;
        let key = crate::event::memory_record_key_of(record);
        self.memory_claims.get(&(author, key)).map(|&ix| self.id_at(ix))
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
