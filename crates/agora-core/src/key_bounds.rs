//! Which of an agent's entries count, by its key events
//! (`protocol-spec/keys.md`, "Which entries count"): an entry counts iff it
//! is comparable with every rotation of its author (equal, an ancestor or a
//! descendant). When the rotations lie on one path that is the ancestors and
//! descendants of the last one; otherwise the ancestors of their lowest
//! common ancestor. A chain that is not forked loses nothing to rotations,
//! so only a forked chain is examined for them.
//!
//! Recoveries (both keys lost) count by the roster's bindings: a recover
//! entry the roster does not bind counts nowhere, nor does anything after
//! it; the roster's last binding of the author (boundary `h`, key `K`) keeps
//! `h`'s history and the recover entries after `h` signed by `K` with their
//! descendants, and nothing else; a bound recover entry is a boundary like
//! a rotation.
//!
//! Work is linear in the chain: passes in seq order, one walk back from
//! the last boundary, and, when the boundaries are on different branches,
//! one walk back from each.

use crate::entry::KeyEvent;
use crate::id::{AgentId, EntryId};
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
    /// The key that signs it (`Header::signing_key`).
    pub key: AgentId,
}

/// A recovery the roster binds (`protocol-spec/roster.md`, `recover`): the
/// author's entry `boundary` is the last one its owner vouches for, and a
/// recover entry right after it signed by `key` carries the chain on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The boundary: the author's entry the recovery follows.
    pub boundary: EntryId,
    /// The key the roster grants.
    pub key: AgentId,
}

/// What an author's key events leave out.
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

/// An author's chain in (seq, id) order with each entry's parent, and what
/// the recoveries alone decide: which entries may count at all.
pub struct Judged<'a> {
    /// The entries in (seq, id) order.
    pub order: Vec<&'a ChainLink>,
    /// Each entry's parent, by index (none for seq 1, or a parent not given).
    pub parent: Vec<Option<usize>>,
    /// Of each entry, the unbound recover entry it is or descends from.
    pub unbound: Vec<Option<usize>>,
    /// Whether each entry lies within the last binding: its boundary's
    /// history, or a recover entry it binds and its descendants (every
    /// entry when there is no binding). Nothing of the author is within a
    /// binding whose boundary is not held.
    pub within: Vec<bool>,
    /// Whether each entry is a boundary that decides: a rotation or a bound
    /// recover entry, not unbound and within the last binding.
    pub boundary: Vec<bool>,
}

impl<'a> Judged<'a> {
    /// Sort `links` and judge them by `bindings` (the roster's, in its
    /// order: the last one decides).
    pub fn new(links: &'a [ChainLink], bindings: &[Binding]) -> Self {
        let mut order: Vec<&ChainLink> = links.iter().collect();
        order.sort_by_key(|l| (l.seq, l.id));
        let index: HashMap<EntryId, usize> = order.iter().enumerate().map(|(i, l)| (l.id, i)).collect();
        let parent: Vec<Option<usize>> = order.iter().map(|l| l.backlink.and_then(|b| index.get(&b).copied()).filter(|p| order[*p].seq < l.seq)).collect();
        let bound = |l: &ChainLink| l.backlink.is_some_and(|b| bindings.iter().any(|x| x.boundary == b && x.key == l.key));
        // Seq order puts every parent before its children.
        let mut unbound: Vec<Option<usize>> = vec![None; order.len()];
        for i in 0..order.len() {
            unbound[i] = parent[i].and_then(|p| unbound[p]).or((order[i].event == KeyEvent::Recover && !bound(order[i])).then_some(i));
        }
        let within = match bindings.last() {
            None => vec![true; order.len()],
            Some(last) => {
                let mut within = vec![false; order.len()];
                if let Some(&h) = index.get(&last.boundary) {
                    let mut at = Some(h);
                    while let Some(i) = at {
                        within[i] = true;
                        at = parent[i];
                    }
                    for i in h + 1..order.len() {
                        let l = order[i];
                        let recovers_at_h = parent[i] == Some(h) && l.event == KeyEvent::Recover && l.key == last.key;
                        if recovers_at_h || parent[i].is_some_and(|p| p > h && within[p]) {
                            within[i] = true;
                        }
                    }
                }
                within
            }
        };
        let boundary = (0..order.len()).map(|i| matches!(order[i].event, KeyEvent::Rotate | KeyEvent::Recover) && unbound[i].is_none() && within[i]).collect();
        Self { order, parent, unbound, within, boundary }
    }
}

/// The bounds of one author's chain: `links` are its entries in any order
/// (every branch), `bindings` the roster's recoveries of it in the roster's
/// order. `None` when its key events leave nothing out.
pub fn key_bounds(links: &[ChainLink], bindings: &[Binding]) -> Option<KeyBounds> {
    let judged = Judged::new(links, bindings);
    let Judged { order, parent, unbound, within, boundary } = &judged;
    let candidate = |i: usize| unbound[i].is_none() && within[i];
    let is_boundary = |i: usize| boundary[i];
    // The maximal boundaries: those with no boundary among their descendants
    // (seq order backwards: children before parents).
    let mut boundary_below = vec![false; order.len()];
    for i in (0..order.len()).rev() {
        if let Some(p) = parent[i]
            && (is_boundary(i) || boundary_below[i])
        {
            boundary_below[p] = true;
        }
    }
    let maximal: Vec<usize> = (0..order.len()).filter(|i| is_boundary(*i) && !boundary_below[*i]).collect();
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
    match maximal[..] {
        [] => counted.iter_mut().for_each(|c| *c = true),
        [last] => {
            // Every boundary lies on one path: its ancestors, it, and its
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
        }
        _ => {
            // Boundaries on different branches: only the common ancestors of
            // the maximal ones count, the path from their lowest common
            // ancestor. Each entry is walked at most once: a walk stops at an
            // entry an earlier walk passed, whose answer it reuses.
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
    }
    for (i, c) in counted.iter_mut().enumerate() {
        *c = *c && candidate(i);
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
        ChainLink { id: id(n), seq, backlink: back.map(id), event: if rotate { KeyEvent::Rotate } else { KeyEvent::None }, key: AgentId([0; 32]) }
    }

    /// A recover entry signed by `key`.
    fn recover(n: u8, seq: u64, back: u8, key: u8) -> ChainLink {
        ChainLink { id: id(n), seq, backlink: Some(id(back)), event: KeyEvent::Recover, key: AgentId([key; 32]) }
    }

    /// An entry signed by `key` (after a recovery).
    fn under(n: u8, seq: u64, back: u8, key: u8) -> ChainLink {
        ChainLink { key: AgentId([key; 32]), ..link(n, seq, Some(back), false) }
    }

    fn binding(boundary: u8, key: u8) -> Binding {
        Binding { boundary: id(boundary), key: AgentId([key; 32]) }
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
        assert_eq!(key_bounds(&links, &[]), Some(expected.clone()));
        links.reverse();
        assert_eq!(key_bounds(&links, &[]), Some(expected));
    }

    /// A rotation at the tip of an unforked chain leaves nothing out; a
    /// thief's branch below the rotation's boundary is left out.
    #[test]
    fn a_branch_below_the_boundary_is_left_out_and_an_unforked_chain_keeps_all() {
        let chain = vec![link(1, 1, None, false), link(2, 2, Some(1), false), link(3, 3, Some(2), true), link(4, 4, Some(3), false)];
        assert_eq!(key_bounds(&chain, &[]), None);
        let mut forked = chain.clone();
        forked.push(link(12, 2, Some(1), false));
        assert_eq!(key_bounds(&forked, &[]), Some(KeyBounds { excluded: [12].map(id).into(), forks: BTreeSet::new() }));
    }

    /// Two rotations on different branches (the next key leaked too): only
    /// the shared history counts. Two rotations on one path: the last one
    /// bounds, and a fork among its descendants still counts.
    #[test]
    fn rotations_on_two_branches_keep_only_the_shared_history() {
        let links =
            vec![link(1, 1, None, false), link(2, 2, Some(1), false), link(3, 3, Some(2), true), link(13, 3, Some(2), true), link(4, 4, Some(3), false)];
        assert_eq!(key_bounds(&links, &[]), Some(KeyBounds { excluded: [3, 4, 13].map(id).into(), forks: BTreeSet::new() }));
        let links = vec![
            link(1, 1, None, false),
            link(2, 2, Some(1), true),
            link(12, 2, Some(1), false),
            link(3, 3, Some(2), true),
            link(4, 4, Some(3), false),
            link(14, 4, Some(3), false),
        ];
        assert_eq!(key_bounds(&links, &[]), Some(KeyBounds { excluded: [12].map(id).into(), forks: [4].into() }));
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
        assert_eq!(key_bounds(&links, &[]), Some(KeyBounds { excluded: [4, 5, 14].map(id).into(), forks: BTreeSet::new() }));
    }

    /// Both keys lost, the thief holding both: after 2 it writes 13, then
    /// rotates to the stolen next key (14). The founder binds boundary 2 to
    /// key 9, and the owner recovers with 23 and goes on (24). Whatever the
    /// order: the thief's branch and rotation are out, the recovery and its
    /// descendants count, no fork counts. Before the owner's recovery
    /// arrives, the binding already keeps only 2's history.
    #[test]
    fn the_last_binding_keeps_its_boundary_history_and_its_recovery() {
        let mut links = vec![
            link(1, 1, None, false),
            link(2, 2, Some(1), false),
            link(13, 3, Some(2), false),
            link(14, 4, Some(13), true),
            link(15, 5, Some(14), false),
            recover(23, 3, 2, 9),
            under(24, 4, 23, 9),
        ];
        let expected = KeyBounds { excluded: [13, 14, 15].map(id).into(), forks: BTreeSet::new() };
        assert_eq!(key_bounds(&links, &[binding(2, 9)]), Some(expected.clone()));
        links.reverse();
        assert_eq!(key_bounds(&links, &[binding(2, 9)]), Some(expected));
        // Without the binding the recovery counts nowhere, nor what follows
        // it; the thief's rotation stands (on its branch alone).
        assert_eq!(key_bounds(&links, &[]), Some(KeyBounds { excluded: [23, 24].map(id).into(), forks: BTreeSet::new() }));
        // The binding before the recovery: only the boundary's history.
        let early: Vec<ChainLink> = links.iter().copied().filter(|l| l.id != id(23) && l.id != id(24)).collect();
        assert_eq!(key_bounds(&early, &[binding(2, 9)]), Some(KeyBounds { excluded: [13, 14, 15].map(id).into(), forks: BTreeSet::new() }));
        // A binding whose boundary is not held: nothing counts yet.
        let none_held = key_bounds(&early, &[binding(77, 9)]).unwrap();
        assert_eq!(none_held.excluded.len(), early.len());
    }

    /// A recover entry by a key the roster did not bind (a stranger's, or
    /// the right key after another boundary) counts nowhere, nor its
    /// descendants, on an unforked chain too; a second binding after a first
    /// recovery keeps the first one in its boundary's history.
    #[test]
    fn an_unbound_recovery_counts_nowhere_and_a_second_binding_decides() {
        let chain = vec![link(1, 1, None, false), link(2, 2, Some(1), false), recover(3, 3, 2, 8), under(4, 4, 3, 8)];
        assert_eq!(key_bounds(&chain, &[]), Some(KeyBounds { excluded: [3, 4].map(id).into(), forks: BTreeSet::new() }));
        assert_eq!(key_bounds(&chain, &[binding(1, 8)]).map(|b| b.excluded), Some([2, 3, 4].map(id).into()), "bound after another boundary");
        assert_eq!(key_bounds(&chain, &[binding(2, 8)]), None, "bound: an unforked chain keeps all");
        // A second loss: the founder binds 4 to key 6; the first recovery
        // stays in the history, the thief's entry 15 after 4 is out.
        let mut again = chain.clone();
        again.extend([under(15, 5, 4, 8), recover(25, 5, 4, 6), under(26, 6, 25, 6)]);
        assert_eq!(key_bounds(&again, &[binding(2, 8), binding(4, 6)]), Some(KeyBounds { excluded: [15].map(id).into(), forks: BTreeSet::new() }));
        // Two recover entries by the bound key on two branches (the granted
        // key leaked too): like two rotations there, only the shared history
        // counts.
        let mut forked = chain.clone();
        forked.push(recover(33, 3, 2, 8));
        assert_eq!(key_bounds(&forked, &[binding(2, 8)]), Some(KeyBounds { excluded: [3, 4, 33].map(id).into(), forks: BTreeSet::new() }));
    }
}
