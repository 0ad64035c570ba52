//! Read-side questions over a graph: decisions, open questions, the
//! disagreement map, state as of a time or an entry.

use crate::graph::{Graph, LogEvent, NodeRef, Status};
use agora_core::EntryId;

/// A decision: a node that closed something, with the events that made it so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The resolved node (question, challenge, refinement, frame, task).
    pub node: EntryId,
    /// What resolved it, and what it resolved or survived.
    pub because: Vec<EntryId>,
}

/// A contested node and what contests it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The contested node (or a node under open tension).
    pub node: EntryId,
    /// Open contradictions and `contradicts` relations against it.
    pub challenges: Vec<EntryId>,
    /// Open tensions involving it.
    pub tensions: Vec<EntryId>,
}

impl Graph {
    /// What was decided and why: every resolved node, in log order.
    pub fn decisions(&self) -> Vec<Decision> {
        self.nodes().filter(|n| n.status() == Status::Resolved).map(|n| Decision { node: n.id, because: self.why(n) }).collect()
    }

    /// Questions not yet resolved (active or contested), in log order.
    pub fn open_questions(&self) -> Vec<NodeRef<'_>> {
        self.nodes().filter(|n| n.kind() == "question" && matches!(n.status(), Status::Active | Status::Contested)).collect()
    }

    /// Every node with an open challenge or tension, and what is open against it.
    pub fn disagreements(&self) -> Vec<Disagreement> {
        self.nodes()
            .filter(|n| n.disagreed())
            .filter(|n| !matches!(n.status(), Status::Retracted | Status::Superseded | Status::Duplicate))
            .map(|n| Disagreement { node: n.id, challenges: self.open_challenges(n), tensions: self.tensions(n) })
            .collect()
    }

    /// Derived claims with no source events.
    pub fn orphans(&self) -> Vec<NodeRef<'_>> {
        self.nodes().filter(|n| n.orphan()).collect()
    }

    /// Nodes that arrived but break a rule.
    pub fn invalid(&self) -> Vec<NodeRef<'_>> {
        self.nodes().filter(|n| n.status() == Status::Invalid).collect()
    }

    /// Frames under `root` (inclusive) in post-order: leaves first, root last,
    /// the order in which conclusions are verified (002).
    pub fn frames_post_order(&self, root: &EntryId) -> Vec<EntryId> {
        let mut out = Vec::new();
        // Iterative post-order over frame_children.
        let mut stack: Vec<(EntryId, bool)> = vec![(*root, false)];
        while let Some((id, expanded)) = stack.pop() {
            let Some(n) = self.node(&id) else { continue };
            let children = self.frame_children(n);
            if expanded || children.is_empty() {
                out.push(id);
            } else {
                stack.push((id, true));
                for c in children.iter().rev() {
                    stack.push((*c, false));
                }
            }
        }
        out
    }

    /// Memory items with their outcome counts: (item, successes, failures, uses).
    pub fn memory_item_outcomes(&self) -> Vec<(EntryId, u64, u64, usize)> {
        self.nodes()
            .filter(|n| n.kind() == "memory_item" && n.is_event())
            .map(|n| {
                let (s, f, u) = n.outcomes();
                (n.id, s, f, u)
            })
            .collect()
    }
}

/// The graph as it was at `time_ms`: only events stamped at or before it.
pub fn as_of_time(events: &[LogEvent], time_ms: u64) -> Graph {
    Graph::replay(events.iter().filter(|e| e.pos.timestamp_ms <= time_ms).cloned().collect())
}

/// The graph as it was right after entry `id` (in log order). `None` if the
/// entry is not among `events`.
pub fn as_of_entry(events: &[LogEvent], id: &EntryId) -> Option<Graph> {
    let target = events.iter().find(|e| e.id == *id)?;
    let key = (target.pos, target.id);
    Some(Graph::replay(events.iter().filter(|e| (e.pos, e.id) <= key).cloned().collect()))
}
