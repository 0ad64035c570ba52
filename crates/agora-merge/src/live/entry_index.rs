//! Where each entry a [`LiveMerge`](super::LiveMerge) knows sits: its
//! chain's slot and its seq, by entry id.
//!
//! The live merge looks an id up for every arrival and for every reference
//! an accept, dispute or withdrawal makes, and holds one row per entry: a
//! million rows at a million entries. The ids themselves are in an
//! [`IdArena`], which the node's other views (its reasoning graph, the
//! perspectives in use) share, so that each id is held once; a row here is
//! the id's row there. Per row this keeps where the entry is (8 bytes) and
//! its merge record (4 bytes), densely, by row: about 12 bytes an entry
//! beside the arena's 43 (a `HashMap<EntryId, Loc>` kept 48-byte rows in
//! buckets at most 7/8 full and doubling, about 100 MiB at a million; an
//! index with ids of its own, 55 bytes an entry). Rows are never removed:
//! an entry once known stays known. A row the arena gave out for an id this
//! view does not know yet (another view asked first) is a hole here.

use agora_core::EntryId;
use agora_core::id_arena::IdArena;
use std::sync::Arc;

/// Where a known entry is: its chain's slot and its seq. The entry index
/// keeps one per entry it knows, densely, in 8 bytes (its seq in 32 bits,
/// a larger one aside: see [`Packed`]).
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(super) struct Loc {
    pub(super) chain: u32,
    pub(super) seq: u64,
}

const _: () = assert!(std::mem::size_of::<Loc>() == 12);

/// Entry id -> [`Loc`], one dense row per id (see the module docs).
#[derive(Debug, Default)]
pub(super) struct EntryIndex {
    /// The ids, by row: shared with the node's other views.
    ids: Arc<IdArena>,
    /// Per row, where the entry is, in 8 bytes ([`Packed`]);
    /// [`Packed::UNKNOWN`] for a row of an id not known here.
    locs: Vec<Packed>,
    /// The seqs that do not fit a packed location's 32 bits, by row: an
    /// author may sign an entry with any seq (its predecessors need not be
    /// held), but a chain grown one entry at a time never gets there.
    big_seqs: std::collections::HashMap<u32, u64>,
    /// Per row, the entry's record among its chain's merge records
    /// ([`NO_RECORD`] when it is none): 4 bytes an entry, where a map by
    /// id in each chain took about 55 bytes a merge event.
    records: Vec<u32>,
    /// Entries known.
    known: usize,
}

/// What `records` holds for an entry that is not a merge event.
pub(super) const NO_RECORD: u32 = u32::MAX;

/// A [`Loc`] as a row keeps it: its seq in 32 bits, or [`BIG_SEQ`] for
/// one kept in `big_seqs` (4 bytes an entry less than a whole `Loc`).
#[derive(Clone, Copy, Debug)]
struct Packed {
    chain: u32,
    seq: u32,
}

impl Packed {
    /// A row whose id this view does not know. (Chain slots stay below it:
    /// there are fewer chains than entries, and rows are below 2^31.)
    const UNKNOWN: Packed = Packed { chain: u32::MAX, seq: 0 };

    fn known(self) -> bool {
        self.chain != u32::MAX
    }
}

/// A packed seq that stands for one at least this large, kept aside.
const BIG_SEQ: u32 = u32::MAX;

impl EntryIndex {
    /// An empty index whose ids are held in `ids`.
    pub(super) fn sharing(ids: Arc<IdArena>) -> Self {
        Self { ids, ..Self::default() }
    }

    /// The arena the ids are held in.
    pub(super) fn arena(&self) -> &Arc<IdArena> {
        &self.ids
    }

    /// `id`'s row, if it is known: what a chain's view holds of it.
    pub(super) fn row(&self, id: &EntryId) -> Option<u32> {
        self.ids.row(id).filter(|&r| self.locs.get(r as usize).is_some_and(|p| p.known()))
    }

    /// Where `id` is, if it is known.
    pub(super) fn get(&self, id: &EntryId) -> Option<Loc> {
        self.row(id).map(|r| Loc { chain: self.locs[r as usize].chain, seq: self.seq(r) })
    }

    pub(super) fn contains_key(&self, id: &EntryId) -> bool {
        self.row(id).is_some()
    }

    /// The id in row `r`.
    pub(super) fn id(&self, r: u32) -> EntryId {
        self.ids.id(r)
    }

    /// The seq of the entry in row `r`.
    pub(super) fn seq(&self, r: u32) -> u64 {
        match self.locs[r as usize].seq {
            // Every row packed with `BIG_SEQ` has its seq kept aside (`insert`).
            BIG_SEQ => self.big_seqs.get(&r).copied().unwrap_or(u64::from(BIG_SEQ)),
            seq => u64::from(seq),
        }
    }

    /// `loc` as row `r` keeps it.
    fn pack(&mut self, r: u32, loc: Loc) -> Packed {
        let seq = loc.seq;
        debug_assert!(loc.chain != Packed::UNKNOWN.chain);
        match u32::try_from(seq) {
            Ok(small) if small != BIG_SEQ => {
                self.big_seqs.remove(&r);
                Packed { chain: loc.chain, seq: small }
            }
            _ => {
                self.big_seqs.insert(r, seq);
                Packed { chain: loc.chain, seq: BIG_SEQ }
            }
        }
    }

    /// Record where `id` is, replacing what was recorded for it; its row
    /// (a row never changes once given).
    pub(super) fn insert(&mut self, id: EntryId, loc: Loc) -> u32 {
        // Rows stay below 2^31 (the arena's bound): a merge record keeps
        // whether the entry is on its view in the top bit.
        let r = self.ids.intern(&id);
        if self.locs.len() <= r as usize {
            self.locs.resize(r as usize + 1, Packed::UNKNOWN);
            self.records.resize(r as usize + 1, NO_RECORD);
        }
        if !self.locs[r as usize].known() {
            self.known += 1;
        }
        self.locs[r as usize] = self.pack(r, loc);
        r
    }

    /// The record among its chain's merge records of the entry in row `r`.
    pub(super) fn set_record(&mut self, r: u32, record: u32) {
        self.records[r as usize] = record;
    }

    /// `id`'s record among the merge records of the chain in `slot`, if it
    /// is a merge event of that chain.
    pub(super) fn record_on(&self, slot: u32, id: &EntryId) -> Option<u32> {
        let r = self.row(id)? as usize;
        (self.locs[r].chain == slot && self.records[r] != NO_RECORD).then_some(self.records[r])
    }

    /// Bytes on the heap ([`LiveMerge::memory`](super::LiveMerge::memory)):
    /// the rows, not the arena (which the node's views share: reported
    /// on its own).
    pub(super) fn heap_bytes(&self) -> usize {
        self.locs.capacity() * size_of::<Packed>() + self.big_seqs.capacity() * (size_of::<(u32, u64)>() + 1) + self.records.capacity() * size_of::<u32>()
    }

    /// Entries known.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.known
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids that share the hashed prefix stay apart, a second insert replaces
    /// the location, and what was never inserted is not found.
    #[test]
    fn finds_each_id_and_replaces_on_insert() {
        let mut index = EntryIndex::default();
        let id = |i: u32, prefix: u8| {
            let mut b = [prefix; 32];
            b[28..].copy_from_slice(&i.to_be_bytes());
            EntryId(b)
        };
        for i in 0..1_000u32 {
            index.insert(id(i, (i % 2) as u8), Loc { chain: i, seq: u64::from(i) });
        }
        index.insert(id(7, 1), Loc { chain: 70, seq: 700 });
        assert_eq!(index.len(), 1_000);
        // An id another view gave a row first is not known here.
        index.arena().intern(&id(5_000, 0));
        assert!(!index.contains_key(&id(5_000, 0)) && index.get(&id(5_000, 0)).is_none());
        index.insert(id(5_001, 0), Loc { chain: 1, seq: 1 });
        assert_eq!(index.len(), 1_001, "the hole left by the other view's row is not counted");
        for i in 0..1_000u32 {
            let loc = index.get(&id(i, (i % 2) as u8)).expect("inserted");
            let want = if i == 7 { (70, 700) } else { (i, u64::from(i)) };
            assert_eq!((loc.chain, loc.seq), want);
            assert!(!index.contains_key(&id(i, 2)));
        }
    }

    /// A seq past 32 bits (an author may sign one without its predecessors)
    /// is kept aside and read back whole; replaced by a small one, the
    /// copy aside goes.
    #[test]
    fn seqs_past_32_bits_are_kept_whole() {
        let mut index = EntryIndex::default();
        let id = |i: u8| EntryId([i; 32]);
        let seqs = [1, u64::from(u32::MAX) - 1, u64::from(u32::MAX), u64::from(u32::MAX) + 5, u64::MAX];
        for (i, &seq) in seqs.iter().enumerate() {
            index.insert(id(i as u8), Loc { chain: 3, seq });
        }
        for (i, &seq) in seqs.iter().enumerate() {
            let loc = index.get(&id(i as u8)).expect("inserted");
            assert_eq!((loc.chain, loc.seq), (3, seq));
            assert_eq!(index.seq(index.row(&id(i as u8)).expect("a row")), seq);
        }
        assert_eq!(index.big_seqs.len(), 3);
        index.insert(id(4), Loc { chain: 3, seq: 9 });
        assert_eq!(index.get(&id(4)).map(|l| l.seq), Some(9));
        assert_eq!(index.big_seqs.len(), 2, "the replaced seq is not kept aside");
    }
}
