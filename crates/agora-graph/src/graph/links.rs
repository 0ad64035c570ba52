//! A node's relations to other nodes, in one allocation ([`Links`]): the
//! later events that touched it, its outgoing typed edges and the marks
//! later events left on it, each naming the other node by position ([`Ix`]).
//!
//! Every node has these three lists and most have one or two entries in
//! them, so their layout is paid a million times in a million-node graph.
//! Three boxed slices took 48 bytes in the node and up to three
//! allocations; marks also needed the node's boxed rare state ([`Extra`],
//! 96 bytes), which a contradiction's target then carried for one mark.
//! Here they are one boxed slice of 4-byte words: 16 bytes in the node, one
//! allocation of 8 bytes plus the entries for a node that has any, none for
//! one that has none. Its invariant: the words are empty, or two counts
//! followed by exactly the entries they count (and the marks after them).
//!
//! [`Extra`]: super::node::Extra

use super::index::Ix;
use super::node::{Mark, Rel};

/// `[touched count, edge count, touched..., (rel, ix)..., (mark, ix)...]`,
/// or no words at all when every list is empty. Each list keeps the order
/// its entries were pushed in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Links(Box<[u32]>);

/// The two counts in front.
const HEADER: usize = 2;

impl Links {
    /// Bytes on the heap ([`Graph::memory`](super::Graph::memory)).
    pub(super) fn heap_bytes(&self) -> usize {
        self.0.len() * size_of::<u32>()
    }

    /// (touched count, edge count).
    fn counts(&self) -> (usize, usize) {
        match &*self.0 {
            [] => (0, 0),
            w => (w[0] as usize, w[1] as usize),
        }
    }

    fn edge_words(&self) -> &[u32] {
        let (t, e) = self.counts();
        self.0.get(HEADER + t..HEADER + t + 2 * e).unwrap_or(&[])
    }

    fn mark_words(&self) -> &[u32] {
        let (t, e) = self.counts();
        self.0.get(HEADER + t + 2 * e..).unwrap_or(&[])
    }

    /// The nodes that touched this one, in log order.
    pub(super) fn touched(&self) -> &[Ix] {
        let (t, _) = self.counts();
        self.0.get(HEADER..HEADER + t).unwrap_or(&[])
    }

    /// Outgoing edges, in the order they were drawn.
    pub(super) fn edges(&self) -> impl DoubleEndedIterator<Item = (Rel, Ix)> + ExactSizeIterator + '_ {
        self.edge_words().chunks_exact(2).map(|p| (Rel::ALL[p[0] as usize], p[1]))
    }

    /// Marks, in the order they were left.
    pub(super) fn marks(&self) -> impl DoubleEndedIterator<Item = (Mark, Ix)> + ExactSizeIterator + '_ {
        self.mark_words().chunks_exact(2).map(|p| (Mark::ALL[p[0] as usize], p[1]))
    }

    /// Whether any mark is left on the node.
    pub(super) fn has_marks(&self) -> bool {
        !self.mark_words().is_empty()
    }

    pub(super) fn first(&self, mark: Mark) -> Option<Ix> {
        self.marks().find(|(m, _)| *m == mark).map(|(_, ix)| ix)
    }
    pub(super) fn last(&self, mark: Mark) -> Option<Ix> {
        self.marks().rev().find(|(m, _)| *m == mark).map(|(_, ix)| ix)
    }
    pub(super) fn all(&self, mark: Mark) -> impl DoubleEndedIterator<Item = Ix> + '_ {
        self.marks().filter(move |(m, _)| *m == mark).map(|(_, ix)| ix)
    }
    pub(super) fn has(&self, mark: Mark) -> bool {
        self.marks().any(|(m, _)| m == mark)
    }

    /// Insert `words` at `at` (counted from the front of the words, header
    /// included) and add `counted` to the header's count `which` (none for
    /// marks, which are counted by what is left). Grown in place: the
    /// allocator's size classes hold several of these small entries, so
    /// most inserts do not move it.
    fn insert(&mut self, at: impl FnOnce(usize, usize) -> usize, words: [u32; 2], len: usize, which: Option<usize>) {
        let mut v = std::mem::take(&mut self.0).into_vec();
        if v.is_empty() {
            v.extend_from_slice(&[0; HEADER]);
        }
        let at = at(v[0] as usize, v[1] as usize);
        v.reserve_exact(len);
        v.splice(at..at, words[..len].iter().copied());
        if let Some(which) = which {
            v[which] += 1;
        }
        self.0 = v.into_boxed_slice();
    }

    pub(super) fn push_touched(&mut self, by: Ix) {
        self.insert(|t, _| HEADER + t, [by, 0], 1, Some(0));
    }

    pub(super) fn push_edge(&mut self, rel: Rel, to: Ix) {
        self.insert(|t, e| HEADER + t + 2 * e, [rel as u32, to], 2, Some(1));
    }

    pub(super) fn push(&mut self, mark: Mark, ix: Ix) {
        let end = self.0.len().max(HEADER);
        self.insert(|_, _| end, [mark as u32, ix], 2, None);
    }

    /// Keep the marks `keep` holds for; the other lists as they are.
    fn retain_marks(&mut self, mut keep: impl FnMut(Mark, Ix) -> bool) {
        let start = self.0.len() - self.mark_words().len();
        let mut v = std::mem::take(&mut self.0).into_vec();
        let kept: Vec<u32> = v[start..].chunks_exact(2).filter(|p| keep(Mark::ALL[p[0] as usize], p[1])).flatten().copied().collect();
        v.truncate(start);
        v.extend_from_slice(&kept);
        // No words at all when nothing is left, as for a node that never had any.
        if v.len() == HEADER && v[..HEADER] == [0; HEADER] {
            v.clear();
        }
        self.0 = v.into_boxed_slice();
    }

    /// Remove `(mark, ix)`; true if it was there.
    pub(super) fn remove(&mut self, mark: Mark, ix: Ix) -> bool {
        let before = self.mark_words().len();
        self.retain_marks(|m, x| !(m == mark && x == ix));
        self.mark_words().len() < before
    }

    pub(super) fn clear(&mut self, mark: Mark) {
        if self.has(mark) {
            self.retain_marks(|m, _| m != mark);
        }
    }

    /// Words allocated beside the node.
    #[cfg(test)]
    pub(super) fn words_len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three lists keep their own entries in push order whatever the
    /// order of pushes, and a node that lost its last mark holds no words.
    #[test]
    fn lists_stay_apart_and_in_order() {
        let mut l = Links::default();
        assert_eq!(l.words_len(), 0);
        l.push(Mark::OpenChallenge, 9);
        l.push_edge(Rel::Supports, 3);
        l.push_touched(7);
        l.push(Mark::Tension, 11);
        l.push_touched(8);
        l.push_edge(Rel::Uses, 4);
        l.push(Mark::OpenChallenge, 12);
        assert_eq!(l.touched(), &[7, 8]);
        assert_eq!(l.edges().collect::<Vec<_>>(), vec![(Rel::Supports, 3), (Rel::Uses, 4)]);
        assert_eq!(l.all(Mark::OpenChallenge).collect::<Vec<_>>(), vec![9, 12]);
        assert_eq!((l.first(Mark::OpenChallenge), l.last(Mark::OpenChallenge)), (Some(9), Some(12)));
        assert!(l.has(Mark::Tension) && !l.has(Mark::Survived));
        assert!(l.remove(Mark::OpenChallenge, 9));
        assert!(!l.remove(Mark::OpenChallenge, 9));
        l.clear(Mark::Tension);
        assert_eq!(l.all(Mark::OpenChallenge).collect::<Vec<_>>(), vec![12]);
        assert_eq!(l.touched(), &[7, 8]);
        assert_eq!(l.edges().len(), 2);

        let mut only_marks = Links::default();
        only_marks.push(Mark::ParkedBy, 1);
        only_marks.clear(Mark::ParkedBy);
        assert_eq!(only_marks, Links::default(), "no words left");
        assert!(!only_marks.has_marks());
    }

    /// Every relation and mark survives its trip through a word.
    #[test]
    fn kinds_round_trip_through_words() {
        for (i, r) in Rel::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        assert_eq!(Rel::ALL.len(), Rel::Uses as usize + 1);
        for (i, m) in Mark::ALL.iter().enumerate() {
            assert_eq!(*m as usize, i);
        }
        assert_eq!(Mark::ALL.len(), Mark::Conflict as usize + 1);
    }
}
