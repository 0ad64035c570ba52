//! Which of an agent's entries count, by its rotations
//! (`protocol-spec/keys.md`, "Which entries count"): an entry counts iff it
//! is comparable with every rotation of its author (equal, an ancestor or a
//! descendant). When the rotations lie on one path that is the ancestors and
//! descendants of the last one; otherwise the ancestors of their lowest
//! common ancestor. A chain that is not forked loses nothing, so only a
//! forked chain is ever examined.
//!
//! Work is linear in the chain: one pass in seq order, one walk back from
//! the last rotation, and, when the rotations are on different branches, one
//! walk back from each.

use crate::entry::KeyEvent;
use crate::id::EntryId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One entry of a chain, as the bounds need it: from its header alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainLink {
    /// The entry.
    pub id: EntryId,
    /// Its seq.
    pub seq: u64,
    /// Its predecessor.
    pub backlink: Option<EntryId>,
    /// Its key event.
    pub event: KeyEvent,
}

/// What an author's rotations leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyBounds {
    /// Entries that count in no view.
    pub excluded: BTreeSet<EntryId>,
    /// Seqs where two or more entries that count sit: the forks that still
    /// count (a fork between an excluded branch and a counted one does not).
    pub forks: BTreeSet<u64>,
}

impl KeyBounds {
    /// Does this entry count?
    pub fn counts(&self, id: &EntryId) -> bool {
        !self.excluded.contains(id)
    }
}

/// The bounds of one author's chain: `links` are its entries in any order
/// (every branch). `None` when its rotations leave nothing out (no rotation,
/// or no entry off their path).
pub fn key_bounds(links: &[ChainLink]) -> Option<KeyBounds> {
    let mut order: Vec<&ChainLink> = links.iter().collect();
    order.sort_by_key(|l| (l.seq, l.id));
    let index: HashMap<EntryId, usize> = order.iter().enumerate().map(|(i, l)| (l.id, i)).collect();
    // Each entry's parent, by index (none for seq 1, or a parent not given).
    let parent: Vec<Option<usize>> = order.iter().map(|l| l.backlink.and_then(|b| index.get(&b).copied()).filter(|p| order[*p].seq < l.seq)).collect();
    let rotation = |i: usize| order[i].event == KeyEvent::Rotate;
    if !(0..order.len()).any(rotation) {
        return None;
    }
    // The maximal rotations: those with no rotation among their descendants
    // (seq order backwards: children before parents).
    let mut rotation_below = vec![false; order.len()];
    for i in (0..order.len()).rev() {
        if let Some(p) = parent[i]
            && (rotation(i) || rotation_below[i])
        {
            rotation_below[p] = true;
        }
    }
    let maximal: Vec<usize> = (0..order.len()).filter(|i| rotation(*i) && !rotation_below[*i]).collect();
    let mut counted = vec![false; order.len()];
    let mark_path = |from: usize, counted: &mut Vec<bool>| {
        let mut at = Some(from);
        while let Some(i) = at {
            if counted[i] {
                break;
            }
            counted[i] = true;
            at = parent[i];
        }
    };
    if let [last] = maximal[..] {
        // Every rotation lies on one path: its ancestors, it, and its
        // descendants (seq order puts every parent before its children).
        mark_path(last, &mut counted);
        let mut below = vec![false; order.len()];
        below[last] = true;
        for i in last + 1..order.len() {
            if parent[i].is_some_and(|p| below[p]) {
                below[i] = true;
                counted[i] = true;
            }
        }
    } else {
        // Rotations on different branches: only the common ancestors of the
        // maximal ones count, the path from their lowest common ancestor.
        // Each entry is walked at most once: a walk stops at an entry an
        // earlier walk passed, whose answer it reuses.
        let mut lca = maximal[0];
        let mut on_lca_path = vec![false; order.len()];
        mark_path(lca, &mut on_lca_path);
        let mut answer: HashMap<usize, usize> = HashMap::new();
        for &m in &maximal[1..] {
            let mut walked = Vec::new();
            let mut at = Some(m);
            let found = loop {
                let Some(i) = at else { break None };
                if on_lca_path[i] {
                    break Some(i);
                }
                if let Some(a) = answer.get(&i) {
                    break Some(*a);
                }
                walked.push(i);
                at = parent[i];
            };
            let Some(found) = found else {
                // No common ancestor (a chain given without its root): nothing counts.
                lca = usize::MAX;
                break;
            };
            for i in walked {
                answer.insert(i, found);
            }
            // The path from `lca` only shortens: an answer deeper than it
            // lies on it, below it.
            if order[found].seq < order[lca].seq {
                lca = found;
            }
        }
        if lca != usize::MAX {
            mark_path(lca, &mut counted);
        }
    }
    let excluded: BTreeSet<EntryId> = (0..order.len()).filter(|i| !counted[*i]).map(|i| order[i].id).collect();
    if excluded.is_empty() {
        return None;
    }
    let mut per_seq: BTreeMap<u64, usize> = BTreeMap::new();
    for i in (0..order.len()).filter(|i| counted[*i]) {
        *per_seq.entry(order[i].seq).or_default() += 1;
    }
    let forks = per_seq.into_iter().filter(|(_, n)| *n > 1).map(|(s, _)| s).collect();
    Some(KeyBounds { excluded, forks })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> EntryId {
        EntryId([n; 32])
    }

    fn link(n: u8, seq: u64, back: Option<u8>, rotate: bool) -> ChainLink {
        ChainLink { id: id(n), seq, backlink: back.map(id), event: if rotate { KeyEvent::Rotate } else { KeyEvent::None } }
    }

    /// 1 - 2 - 3 - 4 (owner), the thief forks 2 - 13 - 14 with the old
    /// key, the owner revokes after 2 with 23 (a rotation) and goes on to
    /// 24. Whatever the order, 3, 4, 13 and 14 are out, and no fork counts.
    #[test]
    fn a_revocation_leaves_out_every_other_branch_after_its_boundary() {
        let mut links = vec![
            link(1, 1, None, false),
            link(2, 2, Some(1), false),
            link(3, 3, Some(2), false),
            link(4, 4, Some(3), false),
            link(13, 3, Some(2), false),
            link(14, 4, Some(13), false),
            link(23, 3, Some(2), true),
            link(24, 4, Some(23), false),
        ];
        let expected = KeyBounds { excluded: [3, 4, 13, 14].map(id).into(), forks: BTreeSet::new() };
        assert_eq!(key_bounds(&links), Some(expected.clone()));
        links.reverse();
        assert_eq!(key_bounds(&links), Some(expected));
    }

    /// A rotation at the tip of an unforked chain leaves nothing out; a
    /// thief's branch below the rotation's boundary is left out.
    #[test]
    fn a_branch_below_the_boundary_is_left_out_and_an_unforked_chain_keeps_all() {
        let chain = vec![link(1, 1, None, false), link(2, 2, Some(1), false), link(3, 3, Some(2), true), link(4, 4, Some(3), false)];
        assert_eq!(key_bounds(&chain), None);
        let mut forked = chain.clone();
        forked.push(link(12, 2, Some(1), false));
        assert_eq!(key_bounds(&forked), Some(KeyBounds { excluded: [12].map(id).into(), forks: BTreeSet::new() }));
    }

    /// Two rotations on different branches (the next key leaked too): only
    /// the shared history counts. Two rotations on one path: the last one
    /// bounds, and a fork among its descendants still counts.
    #[test]
    fn rotations_on_two_branches_keep_only_the_shared_history() {
        let links =
            vec![link(1, 1, None, false), link(2, 2, Some(1), false), link(3, 3, Some(2), true), link(13, 3, Some(2), true), link(4, 4, Some(3), false)];
        assert_eq!(key_bounds(&links), Some(KeyBounds { excluded: [3, 4, 13].map(id).into(), forks: BTreeSet::new() }));
        let links = vec![
            link(1, 1, None, false),
            link(2, 2, Some(1), true),
            link(12, 2, Some(1), false),
            link(3, 3, Some(2), true),
            link(4, 4, Some(3), false),
            link(14, 4, Some(3), false),
        ];
        assert_eq!(key_bounds(&links), Some(KeyBounds { excluded: [12].map(id).into(), forks: [4].into() }));
        // Two rotations below a first one, on branches that part after it:
        // the first rotation's descendants up to where they part count.
        let links = vec![
            link(1, 1, None, false),
            link(2, 2, Some(1), true),
            link(3, 3, Some(2), false),
            link(4, 4, Some(3), true),
            link(14, 4, Some(3), true),
            link(5, 5, Some(4), false),
        ];
        assert_eq!(key_bounds(&links), Some(KeyBounds { excluded: [4, 5, 14].map(id).into(), forks: BTreeSet::new() }));
    }
}
