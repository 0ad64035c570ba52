//! The rules: whether an event may apply to the nodes it names, and the
//! error that says why not ([`RuleError`]).
//!
//! Rules are checked before effects, and they only read: an event that
//! breaks one is refused when written locally ([`Graph::check`]) and, when it
//! arrives from a peer, becomes an `invalid` node with no effect. One
//! exception keeps statuses independent of the authors' clocks:
//! [`Graph::concurrent_setter`] finds a state rule broken only because of
//! another agent's event that this event's author had not seen
//! (`causal.rs`), and the event is then kept as a conflict (see
//! `effects.rs`). This is its own module so that what may happen is read in
//! one place, apart from what it does.

use super::node::Meta;
use super::node_state::{FrameState, Ix, Mark, UNKNOWN};
use super::{Graph, Targets};
use crate::event::{Event, EventDecodeError, Relation, TaskState};
use agora_core::EntryId;

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

impl RuleError {
    /// The rule's name, stable, for programs (an API's error `rule`).
    pub fn rule(&self) -> &'static str {
        match self {
            RuleError::SelfReference(_) => "self_reference",
            RuleError::SynthesisArity(_) => "synthesis_arity",
            RuleError::WrongKind { .. } => "wrong_kind",
            RuleError::Cycle { .. } => "supersession_cycle",
            RuleError::WrongState { .. } => "wrong_state",
            RuleError::Decode(_) => "undecodable_event",
        }
    }

    /// The entry the rule was broken about, where there is one.
    pub fn entry(&self) -> Option<EntryId> {
        match self {
            RuleError::SelfReference(id) => Some(*id),
            RuleError::WrongKind { target, .. } | RuleError::WrongState { target, .. } => Some(*target),
            RuleError::Cycle { to, .. } => Some(*to),
            RuleError::SynthesisArity(_) | RuleError::Decode(_) => None,
        }
    }
}

const POSITION_KINDS: &[&str] = &["proposition", "support", "contradiction", "refinement", "synthesis", "reframe", "claim", "memory_item"];
const CLAIM_KINDS: &[&str] = &["proposition", "refinement", "synthesis", "reframe", "claim", "memory_item"];
/// What a claim may derive from: content (the kinds before the last), or
/// an action (a memory a framework wrote: `protocol-spec/otlp.md`, "Memory
/// records").
const CLAIM_SOURCE_KINDS: &[&str] = &[
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
    "action",
];
/// Content nodes: what connections and tensions relate, parks and resumes name.
const CONTENT_KINDS: &[&str] = match CLAIM_SOURCE_KINDS.split_last() {
    Some((_, content)) => content,
    None => &[],
};

impl Graph {
    /// Check an event against the rules, given that all its references are known.
    /// Used for local writes (refuse) and for arrivals (mark invalid).
    pub fn check(&self, id: EntryId, ev: &Event) -> Result<(), RuleError> {
        let refs = ev.ref_list();
        let mut targets = Targets::default();
        for r in refs.iter() {
            targets.push(self.index.get(&self.nodes, &self.ids, r).unwrap_or(UNKNOWN));
        }
        self.check_refs(id, ev, &refs, &targets)
    }

    /// [`Graph::check`] with the event's references already collected and
    /// resolved: `targets[i]` is the node `refs[i]` names ([`UNKNOWN`] if none),
    /// in [`Event::ref_list`] order, which is field order.
    pub(super) fn check_refs(&self, id: EntryId, ev: &Event, refs: &[EntryId], t: &[Ix]) -> Result<(), RuleError> {
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
                match self.at(t[0]).and_then(|n| n.links.last(Mark::ResolvedBy)) {
                    Some(by) => wrong_state(target, format!("already resolved by {}", self.id_at(by))),
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
                match self.at(t[0]).and_then(|n| n.links.last(Mark::ParkedBy)) {
                    Some(_) => wrong_state(target, "already parked".into()),
                    None => Ok(()),
                }
            }
            Event::Resume { target } => {
                self.expect(name, t[0], target, CONTENT_KINDS, "a content node")?;
                match self.at(t[0]).and_then(|n| n.links.last(Mark::ParkedBy)) {
                    Some(_) => Ok(()),
                    None => wrong_state(target, "not parked".into()),
                }
            }
            Event::Claim { sources, .. } => sources.iter().zip(t).try_for_each(|(s, &ix)| self.expect(name, ix, s, CLAIM_SOURCE_KINDS, "a source event")),
            Event::Relate { from, to, relation, .. } => {
                self.expect(name, t[0], from, CLAIM_KINDS, "a claim-like node (proposition, claim, refinement, ...)")?;
                self.expect(name, t[1], to, CLAIM_KINDS, "a claim-like node (proposition, claim, refinement, ...)")?;
                if relation.supersedes() && self.supersedes_transitively(t[1], t[0]) {
                    return Err(RuleError::Cycle { from: *from, to: *to });
                }
                Ok(())
            }
            Event::Confirm { target } => self.expect(name, t[0], target, &["claim"], "a claim"),
            Event::FrameOpen { parent, branched_from, .. } => {
                parent.iter().chain(branched_from.iter()).zip(t).try_for_each(|(f, &ix)| self.expect(name, ix, f, &["frame_open"], "a frame"))
            }
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
            Event::MemoryItem { source_trajectory, .. } => {
                source_trajectory.iter().zip(t).try_for_each(|(s, &ix)| self.expect(name, ix, s, &["trajectory"], "a trajectory"))
            }
            Event::Usage { trajectory, item, .. } => {
                self.expect(name, t[0], trajectory, &["trajectory"], "a trajectory")?;
                self.expect(name, t[1], item, &["memory_item"], "a memory item")
            }
            // A cause may be any event, by any agent (a handoff names
            // another agent's action); not a raw note or an invalid event.
            Event::Action { cause, .. } => cause.iter().zip(t).try_for_each(|(c, &ix)| self.expect(name, ix, c, &Event::KIND_NAMES, "an event")),
        }
    }

    fn kind_at(&self, ix: Ix) -> &'static str {
        self.at(ix).map_or("unknown", |n| if n.invalid().is_some() { "invalid" } else { n.kind() })
    }

    /// The rule that `target` (at `ix`) is of one of `kinds`.
    fn expect(&self, event: &'static str, ix: Ix, target: &EntryId, kinds: &[&str], expected: &'static str) -> Result<(), RuleError> {
        let kind = self.kind_at(ix);
        // A redacted event's kind is unknowable here; redaction must not turn
        // the events that refer to it into rule breakers, so it matches any kind.
        if kinds.contains(&kind) || kind == "redacted" { Ok(()) } else { Err(RuleError::WrongKind { event, target: *target, kind, expected }) }
    }

    /// Does the node at `a` (transitively) supersede the one at `b`? Walks
    /// every successor of `b` (a node two agents superseded concurrently
    /// has two), each node once.
    fn supersedes_transitively(&self, a: Ix, b: Ix) -> bool {
        if a == b {
            return true;
        }
        let mut stack = vec![b];
        let mut visited = std::collections::HashSet::new();
        while let Some(cur) = stack.pop() {
            let Some(n) = self.at(cur) else { continue };
            for next in n.links.all(Mark::SupersededBy) {
                if next == a {
                    return true;
                }
                if visited.insert(next) {
                    stack.push(next);
                }
            }
        }
        false
    }

    /// The event that first superseded the node at `ix` (a refinement or
    /// reframe, which is also its successor, or the `update`/`state_change`
    /// relation that named its successor), if any.
    pub(super) fn supersession_setter(&self, ix: Ix) -> Option<Ix> {
        let n = self.at(ix)?;
        n.x().superseded_via.or_else(|| n.links.first(Mark::SupersededBy))
    }

    /// The judgments of the trajectory at `ix` that took effect, in
    /// application order (each touched it by its `judges` edge).
    pub(super) fn judgments_of(&self, ix: Ix) -> impl Iterator<Item = Ix> + '_ {
        let touched = self.at(ix).map_or(&[][..], |n| n.links.touched());
        touched.iter().copied().filter(|&j| self.nodes[j as usize].kind() == "judgment" && self.nodes[j as usize].is_event())
    }

    /// When `ev` (by `author`) breaks a state rule only because of an event
    /// by another agent that `ev`'s author had not seen ([`Graph::saw`]:
    /// not on its chain, not among the ancestors it names), that event's
    /// node. The two are concurrent, and which one log order puts first is
    /// decided by the authors' clocks, which must not decide between
    /// agents. `None`: the state was set by an event `ev`'s author had
    /// seen (its own, or one it names), or by nobody, and the rule stands.
    pub(super) fn concurrent_setter(&self, ev: &Event, err: &RuleError, t: &[Ix], author: u32) -> Option<Ix> {
        if !matches!(err, RuleError::WrongState { .. } | RuleError::Cycle { .. }) {
            return None;
        }
        let target = self.at(*t.first()?)?;
        let (x, marks) = (target.x(), &target.links);
        let saw = |ix: Ix| self.saw(author, t, ix);
        // Resolving, parking or judging twice: refused if this author had
        // seen any of the earlier ones.
        let unless_seen = |mark: Mark| (!marks.all(mark).any(saw)).then(|| marks.all(mark).last()).flatten();
        let setter = match ev {
            Event::Resolve { .. } => unless_seen(Mark::ResolvedBy),
            Event::Park { .. } => unless_seen(Mark::ParkedBy),
            Event::Resume { .. } => x.resumed_by,
            Event::FrameEvidence { .. } | Event::FrameConclude { .. } | Event::FrameSuspend { .. } | Event::FrameResume { .. } | Event::TaskUpdate { .. } => {
                x.state_by
            }
            Event::Judgment { .. } => (!self.judgments_of(t[0]).any(saw)).then_some(x.judged_by).flatten(),
            // `from` is already superseded, transitively, by `to`: the first
            // step of that chain was taken by the event that superseded `from`.
            Event::Relate { .. } => self.supersession_setter(t[0]),
            _ => None,
        }?;
        (!saw(setter)).then_some(setter)
    }
}
