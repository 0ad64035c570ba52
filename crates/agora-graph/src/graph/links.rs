//! A node's relations to other nodes, and its rare state, in one
//! allocation ([`Links`]): the later events that touched it, its outgoing
//! typed edges and the marks later events left on it, each naming the other
//! node by position ([`Ix`]); and, for the few nodes that have any, a
//! pointer to their boxed rare state ([`Extra`]: a frame's or task's state,
//! a judgment, a claim's expiry, why it is invalid).
//!
//! Every node has these three lists and most have one or two entries in
//! them, so their layout is paid a million times in a million-node graph.
//! Three boxed slices took 48 bytes in the node and up to three
//! allocations; marks also needed the node's boxed rare state (96 bytes),
//! which a contradiction's target then carried for one mark. One boxed
//! slice of 4-byte words with two counts in front took 16 bytes in the node
//! (a pointer and a length) and 8 bytes of counts, and the rare state's
//! box 8 more bytes in every node.
//!
//! Here the node holds only a pointer (8 bytes, and no allocation at all
//! for a node whose lists are empty and that has no rare state), and the
//! lists' lengths, from which the allocation's follows, are one word in
//! front of the entries: the three counts packed into 12, 8 and 10 bits,
//! or, for a node whose lists outgrow those (a position challenged
//! thousands of times), a word that says so and the three counts in full
//! (a wide header). A bit of that first word says whether the rare state's
//! pointer follows the counts, in two words. In the merge bench's swarm a
//! node was 64 bytes instead of 80 (32 since its id is a row of an arena),
//! and most allocations 4 bytes smaller.
//!
//! Its invariant: no allocation, or exactly `header + (2 if rare state) +
//! touched + 2 * edges + 2 * marks` words, the header first, each list in
//! the order its entries were pushed; the rare state, if any, owned by
//! this allocation alone. Allocations are made by [`Links::from_lists`]
//! alone; their words are freed by `free_words` (from [`Drop`], and from
//! `rebuild`, which moves the rare state into the new allocation), the
//! rare state by [`Drop`] alone. Every read goes through the header.

use super::node_state::{Extra, Ix, Mark, Rel};
use std::ptr::NonNull;

/// A pointer to `[header..., extra pointer?, touched..., (rel, ix)...,
/// (mark, ix)...]` (see the module docs), or none when every list is empty
/// and the node has no rare state.
#[derive(Default)]
pub(super) struct Links(Option<NonNull<u32>>);

// Safety: `Links` owns its words as a `Box<[u32]>` would, and the node's
// rare state as a `Box<Extra>` would (both made by `from_lists` or
// `extra_mut`, freed by `Drop`, never shared between two `Links`), so it
// may move to and be read from other threads like them.
unsafe impl Send for Links {}
unsafe impl Sync for Links {}

/// The bit of the first word that says the header is wide.
const WIDE: u32 = 1 << 31;
/// The bit of the first word that says a pointer to the node's rare state
/// ([`Extra`]) follows the header.
const EXTRA: u32 = 1 << 30;
/// Largest counts a packed header holds: touched 12 bits, edges 8, marks 10.
const PACKED_TOUCHED: usize = (1 << 12) - 1;
const PACKED_EDGES: usize = (1 << 8) - 1;
const PACKED_MARKS: usize = (1 << 10) - 1;

/// The counts in front of the entries, and whether the rare state's
/// pointer sits between them and the entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    /// `[WIDE | EXTRA?, touched, edges, marks]` rather than one word with
    /// touched in bits 0..12, edges in 12..20, marks in 20..30 and `EXTRA`.
    wide: bool,
    extra: bool,
    touched: usize,
    edges: usize,
    marks: usize,
}

impl Header {
    fn of(extra: bool, touched: usize, edges: usize, marks: usize) -> Self {
        let wide = touched > PACKED_TOUCHED || edges > PACKED_EDGES || marks > PACKED_MARKS;
        Header { wide, extra, touched, edges, marks }
    }

    /// Read from the first word at `p`.
    ///
    /// Safety: `p` is a live allocation of [`Links`], its header in front
    /// (written by [`Links::from_lists`]).
    #[inline]
    unsafe fn read(p: NonNull<u32>) -> Self {
        // Safety (for the reads below): the header is there, and a wide
        // header's first word says its three counts follow.
        let first = unsafe { *p.as_ptr() };
        let extra = first & EXTRA != 0;
        if first & WIDE == 0 {
            let f = first as usize;
            Header { wide: false, extra, touched: f & PACKED_TOUCHED, edges: (f >> 12) & PACKED_EDGES, marks: (f >> 20) & PACKED_MARKS }
        } else {
            let word = |i: usize| unsafe { *p.as_ptr().add(i) } as usize;
            Header { wide: true, extra, touched: word(1), edges: word(2), marks: word(3) }
        }
    }

    /// Words of the counts.
    fn counts_len(self) -> usize {
        if self.wide { 4 } else { 1 }
    }

    /// Words before the entries: the counts, and the rare state's pointer.
    fn head(self) -> usize {
        self.counts_len() + if self.extra { 2 } else { 0 }
    }

    /// Words of the whole allocation.
    fn total(self) -> usize {
        self.head() + self.touched + 2 * self.edges + 2 * self.marks
    }

    /// The counts and, if any, the pointer to the rare state.
    fn write(self, out: &mut Vec<u32>, extra: Option<NonNull<Extra>>) {
        let flag = if self.extra { EXTRA } else { 0 };
        if self.wide {
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            out.extend_from_slice(&[WIDE | flag, count(self.touched), count(self.edges), count(self.marks)]);
        } else {
            out.push((self.touched | self.edges << 12 | self.marks << 20) as u32 | flag);
        }
        if let Some(e) = extra {
            // The address, exposed: read back by `Links::extra_ptr`.
            let address = e.as_ptr().expose_provenance() as u64;
            out.extend_from_slice(&[address as u32, (address >> 32) as u32]);
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

/// Free the words of the allocation at `p`, not the rare state it points to.
///
/// Safety: `p` is a live allocation of [`Links`], made by
/// [`Links::from_lists`] from a boxed slice of exactly the words its header
/// counts, and is not used again.
unsafe fn free_words(p: NonNull<u32>) {
    unsafe {
        let len = Header::read(p).total();
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.as_ptr(), len)));
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        if let Some(extra) = self.extra_ptr() {
            // Safety: made by `Box::into_raw`/`Box::leak` and owned by this
            // allocation alone (moved, never copied, by `rebuild`).
            drop(unsafe { Box::from_raw(extra.as_ptr()) });
        }
        if let Some(p) = self.0.take() {
            // Safety: ours, and taken out of `self`, so freed once.
            unsafe { free_words(p) }
        }
    }
}

impl Clone for Links {
    fn clone(&self) -> Self {
        let (t, e, m) = self.lists();
        let extra = self.extra().map(|x| NonNull::from(Box::leak(Box::new(x.clone()))));
        Links::from_lists(t, e, m, Add::Nothing, extra)
    }
}

impl PartialEq for Links {
    fn eq(&self, other: &Self) -> bool {
        self.lists() == other.lists() && self.extra() == other.extra()
    }
}

impl Eq for Links {}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links").field("words", &self.words()).field("extra", &self.extra()).finish()
    }
}

impl Links {
    /// Every word, the header first; none for a node with empty lists and
    /// no rare state.
    fn words(&self) -> &[u32] {
        match self.0 {
            None => &[],
            // Safety: a live allocation of exactly `total` words (the
            // module's invariant), borrowed for as long as `self` is.
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), Header::read(p).total()) },
        }
    }

    /// The pointer to the node's rare state, if it has any.
    fn extra_ptr(&self) -> Option<NonNull<Extra>> {
        let p = self.0?;
        // Safety: `p` is a live allocation with its header in front, and
        // when the header says so, the pointer's two words right after the
        // counts (written by `Header::write`).
        unsafe {
            let header = Header::read(p);
            if !header.extra {
                return None;
            }
            let at = p.as_ptr().add(header.counts_len());
            let address = u64::from(*at) | u64::from(*at.add(1)) << 32;
            NonNull::new(std::ptr::with_exposed_provenance_mut::<Extra>(address as usize))
        }
    }

    /// The node's rare state, if it has any.
    pub(super) fn extra(&self) -> Option<&Extra> {
        // Safety: owned by this allocation, borrowed for as long as `self` is.
        self.extra_ptr().map(|e| unsafe { &*e.as_ptr() })
    }

    /// The node's rare state, made (default) if it has none.
    pub(super) fn extra_mut(&mut self) -> &mut Extra {
        if self.extra_ptr().is_none() {
            let made = NonNull::from(Box::leak(Box::<Extra>::default()));
            self.rebuild(Add::Nothing, None, Some(made));
        }
        match self.extra_ptr() {
            // Safety: owned by this allocation, borrowed mutably for as long
            // as `self` is.
            Some(e) => unsafe { &mut *e.as_ptr() },
            None => unreachable!("the rare state was just put in"),
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
            let h = Header::read(p);
            let head = h.head();
            let (start, len) = match part {
                Part::Touched => (head, h.touched),
                Part::Edges => (head + h.touched, 2 * h.edges),
                Part::Marks => (head + h.touched + 2 * h.edges, 2 * h.marks),
            };
            std::slice::from_raw_parts(p.as_ptr().add(start), len)
        }
    }

    /// The lists `touched`, `edges` and `marks` (word pairs for the last
    /// two), with `add` appended to its own list, and the rare state
    /// `extra` (whose ownership it takes), in one new allocation; none if
    /// there is nothing. The only place an allocation is made.
    fn from_lists(touched: &[u32], edges: &[u32], marks: &[u32], add: Add, extra: Option<NonNull<Extra>>) -> Self {
        let (t, e, m) = (touched.len(), edges.len() / 2, marks.len() / 2);
        let (t, e, m) = match add {
            Add::Nothing => (t, e, m),
            Add::Touched(_) => (t + 1, e, m),
            Add::Edge(..) => (t, e + 1, m),
            Add::Mark(..) => (t, e, m + 1),
        };
        if t + e + m == 0 && extra.is_none() {
            return Links(None);
        }
        let header = Header::of(extra.is_some(), t, e, m);
        let mut words = Vec::with_capacity(header.total());
        header.write(&mut words, extra);
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

    /// Replace the lists by these (`marks` instead of the marks, if
    /// given), with `add`, and the rare state `extra`, which is this
    /// allocation's own (moved into the new one) or a new one.
    fn rebuild(&mut self, add: Add, marks: Option<&[u32]>, extra: Option<NonNull<Extra>>) {
        let (t, e, m) = self.lists();
        let new = Links::from_lists(t, e, marks.unwrap_or(m), add, extra);
        if let Some(p) = self.0.take() {
            // Safety: ours, taken out of `self` so freed once; its rare
            // state, if any, now belongs to `new`, so only its words go.
            unsafe { free_words(p) }
        }
        // `self` holds nothing now: dropping it frees nothing.
        *self = new;
    }

    /// Replace the lists, keeping the rare state.
    fn set(&mut self, add: Add, marks: Option<&[u32]>) {
        let extra = self.extra_ptr();
        self.rebuild(add, marks, extra);
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
    /// say, or 1,024 marks) the header widens to four words and every list
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

    /// The rare state rides in the same allocation: made on first use (for
    /// a node with no lists too), kept through every edit of the lists and
    /// a widening of the header, copied whole by a clone, compared by
    /// `==`, and left alone when the lists empty again.
    #[test]
    fn the_rare_state_is_kept_through_every_edit() {
        let mut l = Links::default();
        assert!(l.extra().is_none());
        l.extra_mut().successes = 3;
        assert_eq!(l.words_len(), 1 + 2, "a header and the pointer, no lists");
        assert!(l.touched().is_empty() && l.edges().len() == 0 && !l.has_marks());
        l.push_touched(5);
        l.push(Mark::OpenChallenge, 6);
        l.extra_mut().failures = 1;
        l.push_edge(Rel::Supports, 7);
        for by in 0..5_000u32 {
            l.push_touched(by + 10);
        }
        assert_eq!(l.words_len(), 4 + 2 + 5_001 + 2 + 2, "wide, with the pointer");
        assert_eq!((l.extra().map(|x| x.successes), l.extra().map(|x| x.failures)), (Some(3), Some(1)));
        assert_eq!(l.touched()[..2], [5, 10]);
        assert_eq!(l.edges().collect::<Vec<_>>(), vec![(Rel::Supports, 7)]);
        let copy = l.clone();
        assert_eq!(copy, l);
        l.extra_mut().successes = 4;
        assert_ne!(copy, l, "the copy has a rare state of its own");
        assert_eq!(copy.extra().map(|x| x.successes), Some(3));
        drop(copy);
        l.clear(Mark::OpenChallenge);
        assert_eq!(l.extra().map(|x| x.successes), Some(4));
        let mut only = Links::default();
        only.push(Mark::ParkedBy, 1);
        only.extra_mut().confirmed = true;
        only.clear(Mark::ParkedBy);
        assert_eq!(only.words_len(), 3, "the rare state stays when the lists empty");
        assert!(only.extra().is_some_and(|x| x.confirmed));
    }

    /// Every relation and mark survives its trip through a word.
    #[test]
    fn kinds_round_trip_through_words() {
        for (i, r) in Rel::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        assert_eq!(Rel::ALL.len(), Rel::CausedBy as usize + 1);
        for (i, m) in Mark::ALL.iter().enumerate() {
            assert_eq!(*m as usize, i);
        }
        assert_eq!(Mark::ALL.len(), Mark::Conflict as usize + 1);
    }
}
