//! A node's relations to other nodes, in one allocation ([`Links`]): the
//! later events that touched it, its outgoing typed edges and the marks
//! later events left on it, each naming the other node by position ([`Ix`]).
//!
//! Every node has these three lists and most have one or two entries in
//! them, so their layout is paid a million times in a million-node graph.
//! Three boxed slices took 48 bytes in the node and up to three
//! allocations; marks also needed the node's boxed rare state ([`Extra`],
//! 96 bytes), which a contradiction's target then carried for one mark.
//! One boxed slice of 4-byte words with two counts in front took 16 bytes
//! in the node (a pointer and a length) and 8 bytes of counts.
//!
//! Here the node holds only a pointer (8 bytes, and none of the words for a
//! node whose lists are all empty), and the lists' lengths, from which the
//! allocation's follows, are one word in front of the entries: the three
//! counts packed into 12, 8 and 11 bits ([`Header::Packed`]), or, for a node
//! whose lists outgrow those (a position challenged thousands of times), a
//! word that says so and the three counts in full ([`Header::Wide`]). In
//! the merge bench's swarm that is 72 bytes a node instead of 80, and most
//! allocations 4 bytes smaller.
//!
//! Its invariant: no allocation, or exactly `header + touched + 2 * edges +
//! 2 * marks` words, the header first, each list in the order its entries
//! were pushed. Every allocation is made by [`Links::from_lists`] and freed
//! by [`Drop`], the only two places that turn the pointer into a box and
//! back; every read goes through [`Links::words`], which reads the length
//! from the header.
//!
//! [`Extra`]: super::node::Extra

use super::index::Ix;
use super::node::{Mark, Rel};
use std::ptr::NonNull;

/// A pointer to `[header..., touched..., (rel, ix)..., (mark, ix)...]`
/// (see the module docs), or none when every list is empty.
#[derive(Default)]
pub(super) struct Links(Option<NonNull<u32>>);

// Safety: `Links` owns its words as a `Box<[u32]>` would (made by
// `from_lists`, freed by `Drop`, never shared between two `Links`), so it
// may move to and be read from other threads like one.
unsafe impl Send for Links {}
unsafe impl Sync for Links {}

/// The bit of the first word that says the header is [`Header::Wide`].
const WIDE: u32 = 1 << 31;
/// Largest counts a packed header holds: touched 12 bits, edges 8, marks 11.
const PACKED_TOUCHED: usize = (1 << 12) - 1;
const PACKED_EDGES: usize = (1 << 8) - 1;
const PACKED_MARKS: usize = (1 << 11) - 1;

/// The counts in front of the entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Header {
    /// One word: touched in bits 0..12, edges in 12..20, marks in 20..31.
    Packed { touched: usize, edges: usize, marks: usize },
    /// `[WIDE, touched, edges, marks]`.
    Wide { touched: usize, edges: usize, marks: usize },
}

impl Header {
    fn of(touched: usize, edges: usize, marks: usize) -> Self {
        if touched <= PACKED_TOUCHED && edges <= PACKED_EDGES && marks <= PACKED_MARKS {
            Header::Packed { touched, edges, marks }
        } else {
            Header::Wide { touched, edges, marks }
        }
    }

    /// Read from the first word at `p`, which must be the start of a live
    /// allocation of [`Links`].
    ///
    /// Safety: `p` points at a header written by [`Links::from_lists`].
    #[inline]
    unsafe fn read(p: NonNull<u32>) -> Self {
        // Safety (for the reads below): the header is there, and a wide
        // header's first word says its three counts follow.
        let first = unsafe { *p.as_ptr() };
        if first & WIDE == 0 {
            let f = first as usize;
            Header::Packed { touched: f & PACKED_TOUCHED, edges: (f >> 12) & PACKED_EDGES, marks: (f >> 20) & PACKED_MARKS }
        } else {
            let word = |i: usize| unsafe { *p.as_ptr().add(i) } as usize;
            Header::Wide { touched: word(1), edges: word(2), marks: word(3) }
        }
    }

    /// (header words, touched, edges, marks).
    fn counts(self) -> (usize, usize, usize, usize) {
        match self {
            Header::Packed { touched, edges, marks } => (1, touched, edges, marks),
            Header::Wide { touched, edges, marks } => (4, touched, edges, marks),
        }
    }

    /// Words of the whole allocation.
    fn total(self) -> usize {
        let (h, t, e, m) = self.counts();
        h + t + 2 * e + 2 * m
    }

    fn write(self, out: &mut Vec<u32>) {
        match self {
            Header::Packed { touched, edges, marks } => out.push((touched | edges << 12 | marks << 20) as u32),
            Header::Wide { touched, edges, marks } => {
                let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                out.extend_from_slice(&[WIDE, count(touched), count(edges), count(marks)]);
            }
        }
    }
}

/// One of the three lists.
#[derive(Clone, Copy)]
enum Part {
    Touched,
    Edges,
    Marks,
}

/// What one edit adds to the lists.
enum Add {
    Nothing,
    Touched(Ix),
    Edge(Rel, Ix),
    Mark(Mark, Ix),
}

impl Drop for Links {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            // Safety: `p` was made by `from_lists` from a boxed slice of
            // exactly `total` words, which its header records, and is
            // dropped once (taken out of `self`).
            unsafe {
                let len = Header::read(p).total();
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.as_ptr(), len)));
            }
        }
    }
}

impl Clone for Links {
    fn clone(&self) -> Self {
        let (t, e, m) = self.lists();
        Links::from_lists(t, e, m, Add::Nothing)
    }
}

impl PartialEq for Links {
    fn eq(&self, other: &Self) -> bool {
        self.lists() == other.lists()
    }
}

impl Eq for Links {}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.words()).finish()
    }
}

impl Links {
    /// Every word, the header first; none for a node with empty lists.
    fn words(&self) -> &[u32] {
        match self.0 {
            None => &[],
            // Safety: a live allocation of exactly `total` words (the
            // module's invariant), borrowed for as long as `self` is.
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), Header::read(p).total()) },
        }
    }

    /// The three lists: touched, edges (as (rel, ix) word pairs) and marks
    /// (as (mark, ix) word pairs).
    fn lists(&self) -> (&[u32], &[u32], &[u32]) {
        (self.part(Part::Touched), self.part(Part::Edges), self.part(Part::Marks))
    }

    /// One of the lists, read straight from the header's counts (a status
    /// reads the marks several times a node, a snapshot every list).
    #[inline]
    fn part(&self, part: Part) -> &[u32] {
        let Some(p) = self.0 else { return &[] };
        // Safety: `p` is a live allocation with its header in front, of
        // exactly the words the header counts (the module's invariant), so
        // each list lies inside it; borrowed for as long as `self` is.
        unsafe {
            let (h, t, e, m) = Header::read(p).counts();
            let (start, len) = match part {
                Part::Touched => (h, t),
                Part::Edges => (h + t, 2 * e),
                Part::Marks => (h + t + 2 * e, 2 * m),
            };
            std::slice::from_raw_parts(p.as_ptr().add(start), len)
        }
    }

    /// The lists `touched`, `edges` and `marks` (word pairs for the last
    /// two), with `add` appended to its own list, in one new allocation;
    /// none if they are all empty. The only place an allocation is made.
    fn from_lists(touched: &[u32], edges: &[u32], marks: &[u32], add: Add) -> Self {
        let (t, e, m) = (touched.len(), edges.len() / 2, marks.len() / 2);
        let (t, e, m) = match add {
            Add::Nothing => (t, e, m),
            Add::Touched(_) => (t + 1, e, m),
            Add::Edge(..) => (t, e + 1, m),
            Add::Mark(..) => (t, e, m + 1),
        };
        if t + e + m == 0 {
            return Links(None);
        }
        let header = Header::of(t, e, m);
        let mut words = Vec::with_capacity(header.total());
        header.write(&mut words);
        words.extend_from_slice(touched);
        if let Add::Touched(by) = add {
            words.push(by);
        }
        words.extend_from_slice(edges);
        if let Add::Edge(rel, to) = add {
            words.extend_from_slice(&[rel as u32, to]);
        }
        words.extend_from_slice(marks);
        if let Add::Mark(mark, ix) = add {
            words.extend_from_slice(&[mark as u32, ix]);
        }
        assert_eq!(words.len(), header.total(), "the header counts exactly the words after it");
        let raw = Box::into_raw(words.into_boxed_slice()) as *mut u32;
        Links(NonNull::new(raw))
    }

    /// Replace the lists by these, with `add`.
    fn set(&mut self, add: Add, marks: Option<&[u32]>) {
        let (t, e, m) = self.lists();
        *self = Links::from_lists(t, e, marks.unwrap_or(m), add);
    }

    /// Bytes on the heap ([`Graph::memory`](super::Graph::memory)).
    pub(super) fn heap_bytes(&self) -> usize {
        size_of_val(self.words())
    }

    /// The nodes that touched this one, in log order.
    pub(super) fn touched(&self) -> &[Ix] {
        self.part(Part::Touched)
    }

    /// Outgoing edges, in the order they were drawn.
    pub(super) fn edges(&self) -> impl DoubleEndedIterator<Item = (Rel, Ix)> + ExactSizeIterator + '_ {
        self.part(Part::Edges).chunks_exact(2).map(|p| (Rel::ALL[p[0] as usize], p[1]))
    }

    /// Marks, in the order they were left.
    pub(super) fn marks(&self) -> impl DoubleEndedIterator<Item = (Mark, Ix)> + ExactSizeIterator + '_ {
        self.part(Part::Marks).chunks_exact(2).map(|p| (Mark::ALL[p[0] as usize], p[1]))
    }

    /// Whether any mark is left on the node.
    pub(super) fn has_marks(&self) -> bool {
        !self.part(Part::Marks).is_empty()
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

    pub(super) fn push_touched(&mut self, by: Ix) {
        self.set(Add::Touched(by), None);
    }

    pub(super) fn push_edge(&mut self, rel: Rel, to: Ix) {
        self.set(Add::Edge(rel, to), None);
    }

    pub(super) fn push(&mut self, mark: Mark, ix: Ix) {
        self.set(Add::Mark(mark, ix), None);
    }

    /// Keep the marks `keep` holds for; the other lists as they are.
    fn retain_marks(&mut self, mut keep: impl FnMut(Mark, Ix) -> bool) {
        let kept: Vec<u32> = self.lists().2.chunks_exact(2).filter(|p| keep(Mark::ALL[p[0] as usize], p[1])).flatten().copied().collect();
        self.set(Add::Nothing, Some(&kept));
    }

    /// Remove `(mark, ix)`; true if it was there.
    pub(super) fn remove(&mut self, mark: Mark, ix: Ix) -> bool {
        let before = self.lists().2.len();
        self.retain_marks(|m, x| !(m == mark && x == ix));
        self.lists().2.len() < before
    }

    pub(super) fn clear(&mut self, mark: Mark) {
        if self.has(mark) {
            self.retain_marks(|m, _| m != mark);
        }
    }

    /// Words allocated beside the node.
    #[cfg(test)]
    pub(super) fn words_len(&self) -> usize {
        self.words().len()
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

    /// A node's words are one header word and its entries while its lists
    /// are short; past the packed header's counts (touched by 4,096 events,
    /// say, or 2,048 marks) the header widens to four words and every list
    /// still reads back whole and in order, through clones, removals and
    /// the drop of every copy.
    #[test]
    fn short_lists_take_one_header_word_and_long_ones_widen_it() {
        let mut l = Links::default();
        l.push_touched(1);
        l.push_edge(Rel::Refines, 2);
        assert_eq!(l.words_len(), 1 + 1 + 2, "one header word");
        assert_eq!(l.heap_bytes(), 16);
        for by in 0..5_000u32 {
            l.push_touched(by + 10);
        }
        assert_eq!(l.words_len(), 4 + 5_001 + 2, "a wide header past 4,095 touches");
        let copy = l.clone();
        assert_eq!(copy, l);
        for ix in 0..3_000u32 {
            l.push(Mark::OpenChallenge, ix);
        }
        assert_eq!(l.touched().len(), 5_001);
        assert_eq!(l.touched()[0], 1);
        assert_eq!(l.touched()[5_000], 5_009);
        assert_eq!(l.edges().collect::<Vec<_>>(), vec![(Rel::Refines, 2)]);
        assert_eq!(l.all(Mark::OpenChallenge).count(), 3_000);
        assert_eq!(l.last(Mark::OpenChallenge), Some(2_999));
        assert!(l.remove(Mark::OpenChallenge, 0));
        assert_eq!(l.first(Mark::OpenChallenge), Some(1));
        l.clear(Mark::OpenChallenge);
        assert!(!l.has_marks());
        assert_eq!(copy, l, "the marks gone, what is left is what the copy kept");
        l.push_touched(1);
        assert_ne!(copy, l, "the copy has words of its own");
        assert_eq!(copy.touched().len(), 5_001);
        drop(copy);
        // Many marks alone widen it too; and what is left is read as before.
        let mut marks = Links::default();
        for ix in 0..2_048u32 {
            marks.push(Mark::Conflict, ix);
        }
        assert_eq!(marks.words_len(), 4 + 2 * 2_048);
        assert_eq!(marks.marks().len(), 2_048);
        marks.clear(Mark::Conflict);
        assert_eq!(marks, Links::default(), "no words left");
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
