//! Causal order between two events: had the author of the event being
//! applied seen an earlier one ([`Graph::saw`])?
//!
//! Log order sorts by the authors' timestamps, which an author chooses, so
//! every rule where the order of two events by different agents decides an
//! outcome asks this instead (`protocol-spec/events.md`, "Concurrent
//! events"). An event's author had seen an earlier event when it is on its
//! own chain (the author's own earlier event: a chain's order is its seq
//! order, which the author cannot make disagree with its timestamps), or
//! when the earlier event is an ancestor of the event through the
//! references it makes (it names it, or names an event that names it, and
//! so on). Neither: the two are *concurrent*, and the rule keeps both as a
//! conflict instead of letting log order pick one.
//!
//! The walk reads only what does not change once a node is applied: its
//! author, and the edges its own event drew (a `relate` event also draws an
//! edge on its `from` node, which later events would see and earlier ones
//! not, so those are skipped). The answer is therefore the same in a replay
//! and in a live graph that took the events in any order, late ones by
//! rewinding or in place. It is conservative: an event seen only through
//! the references of its author's *earlier* events, or further than
//! [`CAUSAL_WALK_MAX`] ancestors away, counts as concurrent, which shows a
//! conflict rather than letting a clock decide.

use super::Graph;
use super::node::{Meta, Node};
use super::node_state::{Ix, Rel, UNKNOWN};
use crate::event::REFS_MAX;

/// Ancestors a causal walk visits at most ([`Graph::saw`]): it runs only
/// when an event meets state another agent set, and a bound keeps what an
/// adversary can make one such event cost constant. References between
/// competing events are short (a refinement of a refinement, an update of
/// a node that refines another), so a real causal link is found well
/// within it; past it, the events count as concurrent (a visible conflict).
pub const CAUSAL_WALK_MAX: usize = 256;

impl Graph {
    /// Had the author of an event by `author` (in the author table), naming
    /// the nodes `refs`, seen the event at `earlier`? True when `earlier`
    /// is the author's own, or an ancestor of the event through references
    /// (breadth first, at most [`CAUSAL_WALK_MAX`] nodes). See the module
    /// docs.
    pub(super) fn saw(&self, author: u32, refs: &[Ix], earlier: Ix) -> bool {
        let Some(target) = self.at(earlier) else {
            return false;
        };
        if target.author == author {
            return true;
        }
        let mut queue: Vec<Ix> = Vec::with_capacity(refs.len().min(CAUSAL_WALK_MAX));
        for &r in refs {
            if r == earlier {
                return true;
            }
            if r != UNKNOWN && queue.len() < CAUSAL_WALK_MAX && !queue.contains(&r) {
                queue.push(r);
            }
        }
        let mut known: std::collections::HashSet<Ix> = queue.iter().copied().collect();
        let mut next = 0;
        while next < queue.len() {
            let n = &self.nodes[queue[next] as usize];
            next += 1;
            // Its own event's edges come first (later relations' after
            // them), and are at most its references.
            for (rel, to) in n.links.edges().take(REFS_MAX) {
                if !drawn_by_own_event(n, rel) {
                    continue;
                }
                if to == earlier {
                    return true;
                }
                if queue.len() < CAUSAL_WALK_MAX && known.insert(to) {
                    queue.push(to);
                }
            }
        }
        false
    }
}

/// Was the edge `rel` of `node` drawn by `node`'s own event (so fixed when
/// it was applied)? Every edge is, but the one a `relate` event draws on
/// its `from` node, typed with the relation: a claim-like node never draws
/// a relation-typed edge itself (a contradiction's `contradicts` edge is
/// its own).
fn drawn_by_own_event(node: &Node, rel: Rel) -> bool {
    let relation_typed = matches!(rel, Rel::Update | Rel::StateChange | Rel::Expands | Rel::Qualifies | Rel::Contradicts | Rel::Retracts | Rel::SameAs);
    !relation_typed || matches!(node.meta, Meta::Relate(_)) || (rel == Rel::Contradicts && node.kind() == "contradiction")
}
