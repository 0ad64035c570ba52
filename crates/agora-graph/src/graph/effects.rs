//! The effects: what a valid event does to the nodes it names (edges,
//! touches, marks, frame and task states, outcome counts), and, for an event
//! kept as concurrent with another agent's, the conflict it records instead.
//!
//! Effects run only after the rules passed, on the event's own (newest) node
//! and its references already resolved to positions. They change only nodes
//! already applied (and the memory items' content ids), and the same event
//! on the same graph always has the same effects, so a replay in log order
//! rebuilds the same nodes. Apart from what a node starts with (its kind,
//! meta, expiry, redacted flag or invalid reason, set when `mod.rs` adds it),
//! every mark and state a status is computed from is written here (each
//! write announced by `Graph::changed` first, which keeps the digest of
//! `digest.rs` current): the
//! rules (`rules.rs`) read that state, the node (`node.rs`) turns it into
//! statuses and readings. That is why it is one module.

use super::Graph;
use super::links::Links;
use super::node_state::{Extra, FrameState, Ix, Mark, Rel};
use crate::event::{Event, Relation, TaskState, memory_item_content_id};

impl Graph {
    /// What a valid event does to the graph. `me` is its own (newest) node,
    /// `t` its references' nodes in [`Event::ref_list`] order.
    pub(super) fn effects(&mut self, me: Ix, ev: &Event, t: &[Ix], redacted: bool) {
        match ev {
            Event::Proposition { .. } | Event::Question { .. } | Event::Trajectory { .. } => {}
            Event::Task { .. } => self.extra_at(me).task_state = Some(TaskState::Created),
            Event::Support { .. } => self.edge(me, Rel::Supports, t[0]),
            Event::Contradiction { .. } => {
                self.edge(me, Rel::Contradicts, t[0]);
                self.links_at(t[0]).push(Mark::OpenChallenge, me);
            }
            Event::Refinement { resolves, .. } => {
                self.edge(me, Rel::Refines, t[0]);
                self.supersede(t[0], me, me, t);
                for &cx in t[1..].iter().take(resolves.len()) {
                    // Resolved already by an event its author had not seen:
                    // two resolutions, as for two `resolve` events.
                    let earlier = self.nodes[cx as usize].links.all(Mark::ResolvedBy).collect::<Vec<_>>();
                    let author = self.nodes[me as usize].author;
                    let concurrent = earlier.last().copied().filter(|_| !earlier.iter().any(|&r| self.saw(author, t, r)));
                    self.edge(me, Rel::Resolves, cx);
                    self.close_challenge(cx, me);
                    self.links_at(me).push(Mark::Closed, cx);
                    if let Some(setter) = concurrent {
                        self.mark_conflict(cx, setter, me);
                    }
                }
                if !resolves.is_empty() {
                    self.links_at(me).push(Mark::ResolvedBy, me);
                }
            }
            Event::Synthesis { .. } => {
                for &s in t {
                    self.edge(me, Rel::Synthesizes, s);
                }
            }
            Event::Resolve { .. } => {
                self.edge(me, Rel::Resolves, t[0]);
                self.close_challenge(t[0], me);
            }
            Event::Connection { .. } => {
                self.edge(me, Rel::Connects, t[0]);
                self.edge(me, Rel::Connects, t[1]);
            }
            Event::Tension { .. } => {
                for &x in &t[..2] {
                    self.edge(me, Rel::Tension, x);
                    self.links_at(x).push(Mark::Tension, me);
                }
            }
            Event::Reframe { .. } => {
                self.edge(me, Rel::Reframes, t[0]);
                self.supersede(t[0], me, me, t);
            }
            Event::Park { .. } => {
                self.touch(t[0], me);
                self.links_at(t[0]).push(Mark::ParkedBy, me);
            }
            Event::Resume { .. } => {
                self.touch(t[0], me);
                self.links_at(t[0]).clear(Mark::ParkedBy);
                self.extra_at(t[0]).resumed_by = Some(me);
            }
            Event::Claim { .. } => {
                for &s in t {
                    self.edge(me, Rel::DerivedFrom, s);
                }
                if let Some(&first) = t.first() {
                    self.index_memory_claim(me, first);
                }
            }
            Event::Relate { relation, .. } => {
                let (fx, tx) = (t[0], t[1]);
                self.touch(fx, me);
                self.edge(me, Rel::of(*relation), tx);
                self.changed(fx);
                self.nodes[fx as usize].links.push_edge(Rel::of(*relation), tx);
                match relation {
                    Relation::Update | Relation::StateChange => self.supersede(tx, fx, me, t),
                    Relation::Expands | Relation::Qualifies => {}
                    Relation::Contradicts => {
                        // No winner: both sides are challenged by this relation.
                        self.changed(me);
                        self.nodes[me as usize].links.push_edge(Rel::Contradicts, fx);
                        self.links_at(fx).push(Mark::OpenChallenge, me);
                        self.links_at(tx).push(Mark::OpenChallenge, me);
                    }
                    Relation::Retracts => self.links_at(tx).push(Mark::RetractedBy, me),
                    Relation::SameAs => {
                        let n = self.links_at(fx);
                        n.push(Mark::DuplicateOf, tx);
                        n.push(Mark::DuplicateBy, me);
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
                    self.edge(me, Rel::ChildOf, p);
                    self.links_at(p).push(Mark::FrameChild, me);
                }
                if branched_from.is_some() {
                    let b = t[branched];
                    self.edge(me, Rel::BranchedFrom, b);
                    let n = self.extra_at(b);
                    if n.frame_state == Some(FrameState::Active) {
                        n.frame_state = Some(FrameState::Suspended);
                        n.state_by = Some(me);
                    }
                }
            }
            Event::FrameEvidence { .. } => self.edge(me, Rel::EvidenceFor, t[0]),
            Event::FrameConclude { .. } => {
                self.edge(me, Rel::Concludes, t[0]);
                self.set_frame_state(t[0], FrameState::Completed, me);
            }
            Event::FrameSuspend { .. } => {
                self.touch(t[0], me);
                self.set_frame_state(t[0], FrameState::Suspended, me);
            }
            Event::FrameResume { .. } => {
                self.touch(t[0], me);
                self.set_frame_state(t[0], FrameState::Active, me);
            }
            Event::FrameInvalidate { .. } => {
                // Top-down cascade: the frame, then every frame under it.
                let mut stack = vec![t[0]];
                while let Some(f) = stack.pop() {
                    self.touch(f, me);
                    self.set_frame_state(f, FrameState::Invalidated, me);
                    stack.extend(self.nodes[f as usize].links.all(Mark::FrameChild).rev());
                }
            }
            Event::TaskUpdate { state, .. } => {
                self.touch(t[0], me);
                let n = self.extra_at(t[0]);
                n.task_state = Some(*state);
                n.state_by = Some(me);
            }
            Event::Judgment { success, .. } => {
                self.edge(me, Rel::Judges, t[0]);
                let n = self.extra_at(t[0]);
                n.judged = Some(*success);
                n.judged_by = Some(me);
                self.count_usages(t[0], *success, 1);
            }
            Event::MemoryItem { title, content, source_trajectory, .. } => {
                if source_trajectory.is_some() {
                    self.edge(me, Rel::ExtractedFrom, t[0]);
                }
                // A redacted item keeps its content id in its residue (see
                // `Event::residue`): the same duplicates either way.
                let cid = match redacted.then(|| crate::event::residue_content_id(content)).flatten() {
                    Some(cid) => cid,
                    None => memory_item_content_id(title, content),
                };
                self.memory_item_content(me, cid);
            }
            Event::Action { cause, span, operation, name, .. } => {
                if cause.is_some() {
                    self.edge(me, Rel::CausedBy, t[0]);
                }
                // Its record's key is kept in its residue too.
                if let Some(key) = crate::event::memory_record_key(operation, name, redacted) {
                    self.record_memory_action(me);
                    self.memory_actions.insert(me, key);
                }
                // Its span is kept in its residue: the same duplicates either way.
                if let Some(key) = crate::event::span_key(span) {
                    self.action_span(me, key);
                }
            }
            Event::Usage { .. } => {
                self.links_at(me).push(Mark::UsageItem, t[1]);
                self.edge(me, Rel::UsedIn, t[0]);
                self.edge(me, Rel::Uses, t[1]);
                self.links_at(t[0]).push(Mark::Usage, me);
                self.links_at(t[1]).push(Mark::Usage, me);
                // A trajectory judged differently by concurrent judgments
                // counts for nothing (`judged` is `None`).
                if let Some(success) = self.nodes[t[0] as usize].judged() {
                    self.count_outcome(t[1], success, 1);
                }
            }
        }
    }

    /// The effects of an event that [`Graph::concurrent_setter`] found
    /// concurrent with `setter`. Exclusive outcomes (two resolutions, two
    /// judgments, a completion against a reopening, a task moved after
    /// another agent closed it, two supersessions that would form a cycle)
    /// both stay and mark the target as a conflict, which makes it
    /// contested; outcomes that agree (a second park, a second resume,
    /// evidence for a frame another agent closed) just apply.
    pub(super) fn concurrent_effects(&mut self, me: Ix, ev: &Event, t: &[Ix], setter: Ix, redacted: bool) {
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
            Event::Judgment { success, .. } => {
                self.edge(me, Rel::Judges, t[0]);
                let trajectory = &self.nodes[t[0] as usize];
                let (conflicted, first) = (trajectory.links.has(Mark::Conflict), trajectory.x().judged);
                if !conflicted && first == Some(*success) {
                    // The same verdict: it agrees, and is counted once.
                    Vec::new()
                } else {
                    if !conflicted {
                        // Verdicts that differ, and nothing says which came
                        // after the other: the trajectory counts for
                        // neither, and every judgment of it is named
                        // (those that agreed with the first too, so the
                        // list is the same in any log order).
                        if let Some(first) = first {
                            self.count_usages(t[0], first, -1);
                        }
                        let earlier: Vec<Ix> = self.judgments_of(t[0]).filter(|&j| j != me).collect();
                        let n = self.links_at(t[0]);
                        for j in earlier {
                            n.push(Mark::Conflict, j);
                        }
                    }
                    vec![t[0]]
                }
            }
            Event::Relate { relation, .. } => {
                // No supersession (it would close a cycle): the relation stands
                // as an edge, both claims contested. (Only a supersession is
                // ever blocked: `concurrent_setter`.)
                self.touch(t[0], me);
                self.edge(me, Rel::of(*relation), t[1]);
                self.changed(t[0]);
                self.nodes[t[0] as usize].links.push_edge(Rel::of(*relation), t[1]);
                vec![t[0], t[1]]
            }
            _ => {
                self.effects(me, ev, t, redacted);
                vec![t[0]]
            }
        };
        for ix in conflict_on {
            self.mark_conflict(ix, setter, me);
        }
    }

    /// Record on the node at `on` that `me`, the event being applied, and
    /// `setter`, an earlier one, conflict over its state: the setter named
    /// once, `me` (new) appended (a node never names itself).
    fn mark_conflict(&mut self, on: Ix, setter: Ix, me: Ix) {
        let n = self.links_at(on);
        if setter != on && setter != me && !n.all(Mark::Conflict).any(|c| c == setter) {
            n.push(Mark::Conflict, setter);
        }
        if me != on {
            n.push(Mark::Conflict, me);
        }
    }

    /// The content rule of a memory item `me` with content id `cid`. An
    /// item repeats an earlier one with the same content (is its
    /// *duplicate*) when its author had seen that one: its own earlier item
    /// (a memory item names only a trajectory, which names nothing, so its
    /// own chain is the only causal order two items can have; see
    /// `causal.rs`). Otherwise it is an *original* too, and the originals
    /// of one content by different agents conflict: which of them log order
    /// puts first is the authors' clocks' choice, so none is the others'
    /// duplicate. Each later original names the first and the first names
    /// each (both of two, in either order).
    fn memory_item_content(&mut self, me: Ix, cid: [u8; 32]) {
        let author = self.nodes[me as usize].author;
        let Some(&first) = self.content_ids.get(&cid) else {
            self.record_content_id(cid, None);
            self.content_ids.insert(cid, me);
            return;
        };
        let original = match self.nodes[first as usize].author == author {
            true => Some(first),
            false => self.content_rivals.get(&(cid, author)).copied(),
        };
        match original {
            Some(original) => {
                let n = self.links_at(me);
                n.push(Mark::DuplicateOf, original);
                n.push(Mark::DuplicateBy, me);
                self.touch(original, me);
            }
            None => {
                self.record_content_id(cid, Some(author));
                self.content_rivals.insert((cid, author), me);
                self.links_at(first).push(Mark::Conflict, me);
                self.links_at(me).push(Mark::Conflict, first);
            }
        }
    }

    /// The span rule of an action `me` whose span is `span` (trace id and
    /// span id): it repeats its author's earlier action with that span (is
    /// its *duplicate*), a framework sending one span twice. Only its
    /// author's own actions count: its own chain orders them (`causal.rs`;
    /// two of one author's actions are concurrent only in a fork, whose
    /// author answers for both), and another agent's action with the same
    /// span is another record of it, neither a duplicate.
    fn action_span(&mut self, me: Ix, span: [u8; 24]) {
        let author = self.nodes[me as usize].author;
        match self.action_spans.get(&(author, span)) {
            Some(&original) => {
                let n = self.links_at(me);
                n.push(Mark::DuplicateOf, original);
                n.push(Mark::DuplicateBy, me);
                self.touch(original, me);
            }
            None => {
                self.record_action_span(author, span);
                self.action_spans.insert((author, span), me);
            }
        }
    }

    /// A claim `me` whose first source is `source`: when that is its own
    /// author's memory-write action, `me` is the current claim of the
    /// record the action wrote (the last in log order).
    fn index_memory_claim(&mut self, me: Ix, source: Ix) {
        let author = self.nodes[me as usize].author;
        let Some(&record) = self.memory_actions.get(&source) else { return };
        if self.nodes[source as usize].author != author {
            return;
        }
        let before = self.memory_claims.insert((author, record), me);
        self.record_memory_claim((author, record), before);
    }

    /// The relations of the node at `ix`, to change (announced first).
    pub(super) fn links_at(&mut self, ix: Ix) -> &mut Links {
        self.changed(ix);
        &mut self.nodes[ix as usize].links
    }

    pub(super) fn extra_at(&mut self, ix: Ix) -> &mut Extra {
        self.changed(ix);
        self.nodes[ix as usize].links.extra_mut()
    }

    /// Record that `by` touched `target` (once, and never a node itself).
    fn touch(&mut self, target: Ix, by: Ix) {
        self.changed(target);
        let n = &mut self.nodes[target as usize];
        if n.links.touched().last() != Some(&by) && target != by {
            n.links.push_touched(by);
        }
    }

    fn edge(&mut self, from: Ix, relation: Rel, to: Ix) {
        self.changed(from);
        self.nodes[from as usize].links.push_edge(relation, to);
        self.touch(to, from);
    }

    fn set_frame_state(&mut self, frame: Ix, state: FrameState, by: Ix) {
        let n = self.extra_at(frame);
        n.frame_state = Some(state);
        n.state_by = Some(by);
    }

    /// `by` succeeds `target`, by the event `event` (`by` itself for a
    /// refinement or reframe; the relation for an `update` or
    /// `state_change`), whose references are at `refs`. A node has one
    /// successor: a later supersession by an event whose author had seen
    /// the first one (`causal.rs`) leaves it as it is (a branch from an
    /// older state). One whose author had not is concurrent with it: both
    /// successors are kept, and the node is in conflict, with no current
    /// successor ([`Node::sole_successor`]), whatever the clocks say.
    fn supersede(&mut self, target: Ix, by: Ix, event: Ix, refs: &[Ix]) {
        let Some(setter) = self.supersession_setter(target) else {
            self.links_at(target).push(Mark::SupersededBy, by);
            if event != by {
                self.extra_at(target).superseded_via = Some(event);
            }
            return;
        };
        if self.saw(self.nodes[event as usize].author, refs, setter) {
            return;
        }
        let n = self.links_at(target);
        if !n.all(Mark::SupersededBy).any(|s| s == by) {
            n.push(Mark::SupersededBy, by);
        }
        self.mark_conflict(target, setter, event);
    }

    /// Close challenge `c` (answered by `by`): every node it challenged
    /// survived it.
    fn close_challenge(&mut self, c: Ix, by: Ix) {
        self.links_at(c).push(Mark::ResolvedBy, by);
        let challenged: Vec<Ix> = self.nodes[c as usize].links.edges().filter(|(r, _)| matches!(r, Rel::Contradicts | Rel::Tension)).map(|(_, t)| t).collect();
        for t in challenged {
            let n = self.links_at(t);
            let was_challenge = n.remove(Mark::OpenChallenge, c);
            let was_tension = n.remove(Mark::Tension, c);
            if was_challenge || was_tension {
                n.push(Mark::Survived, c);
            }
            self.touch(t, by);
        }
    }

    /// Count (`by` 1) or take back (`by` -1) one outcome of the item at `item`.
    fn count_outcome(&mut self, item: Ix, success: bool, by: i32) {
        let n = self.extra_at(item);
        let count = if success { &mut n.successes } else { &mut n.failures };
        *count = count.saturating_add_signed(by);
    }

    /// Count (or take back) the verdict `success` for the item of every
    /// usage of the trajectory at `trajectory`.
    fn count_usages(&mut self, trajectory: Ix, success: bool, by: i32) {
        let usages: Vec<Ix> = self.nodes[trajectory as usize].links.all(Mark::Usage).collect();
        for u in usages {
            if let Some(item) = self.nodes[u as usize].links.first(Mark::UsageItem) {
                self.count_outcome(item, success, by);
            }
        }
    }
}
