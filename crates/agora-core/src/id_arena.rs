//! Entry ids held once, named by 4-byte rows: [`IdArena`].
//!
//! A node keeps several views of the same entries current at once: the
//! merged state knows every entry, the reasoning graph every event, each
//! perspective in use the events its agent sees. Each used to hold the
//! 32-byte id of everything it knew, so a node holding a million entries
//! kept about 2.1 million ids (64 MiB) for a million distinct ones. An arena
//! holds each id once; a view names an entry by its row (4 bytes) and reads
//! the id back from the arena when it needs it (to confirm a lookup, to
//! answer).
//!
//! Its invariants: a row, once given to an id, names that id for as long as
//! the arena lives (rows are never removed or reused), and an id has at most
//! one row. So a view may keep rows, and two views that share an arena agree
//! on every row. Rows say nothing about order: they are given out in the
//! order ids are first asked for ([`IdArena::intern`]), which differs between
//! threads and runs, so nothing a view derives or answers may depend on them.
//!
//! The views of one node run on different threads (the graph's, the merged
//! state's, the readers'), so the arena is shared behind an `Arc` and guarded
//! by a reader-writer lock: a read (an id by row, a row by id) takes it
//! shared, giving an id a row takes it exclusively. Reads take it even while
//! a writer waits (`read_recursive`): a thread that holds it for a parallel
//! read (a digest on the thread pool) may pick up another task that reads,
//! and with writers first that task would wait for the writer, which waits
//! for the first read: a deadlock. A view that was never given an arena
//! makes its own ([`IdArena::default`]).

use crate::id::EntryId;
use crate::idmap::id_hash;
use parking_lot::{RwLock, RwLockReadGuard};

/// Most rows an arena gives out: rows are u32, and views keep flags in the
/// top bit of a row. At 32 bytes an id that is 64 GiB of ids.
pub const ROWS_MAX: usize = 1 << 31;

/// Entry ids by row, each held once. See the module docs.
#[derive(Debug, Default)]
pub struct IdArena {
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Rows, hashed by their id's first eight bytes (ids are SHA-256
    /// outputs, already uniform: see [`crate::idmap`]).
    table: hashbrown::HashTable<u32>,
    /// The id of each row.
    ids: Vec<EntryId>,
}

impl State {
    fn row(&self, id: &EntryId) -> Option<u32> {
        self.table.find(id_hash(id.as_bytes()), |&r| self.ids[r as usize] == *id).copied()
    }
}

/// The arena read under one shared lock, for many reads in a row (a
/// listing, a digest): [`IdArena::read`].
#[derive(Debug)]
pub struct IdsRead<'a>(RwLockReadGuard<'a, State>);

impl IdsRead<'_> {
    /// The id in `row`. Panics if no id has that row.
    pub fn id(&self, row: u32) -> EntryId {
        self.0.ids[row as usize]
    }

    /// `id`'s row, if it has one.
    pub fn row(&self, id: &EntryId) -> Option<u32> {
        self.0.row(id)
    }
}

impl IdArena {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shared access for many reads; drop it before giving an id a row on
    /// the same thread (that would wait for it forever).
    pub fn read(&self) -> IdsRead<'_> {
        IdsRead(self.state.read_recursive())
    }

    /// `id`'s row, giving it the next one if it has none.
    ///
    /// Panics past [`ROWS_MAX`] rows.
    pub fn intern(&self, id: &EntryId) -> u32 {
        if let Some(row) = self.row(id) {
            return row;
        }
        let mut state = self.state.write();
        let State { table, ids } = &mut *state;
        // Another thread may have given it one between the two locks.
        match table.entry(id_hash(id.as_bytes()), |&r| ids[r as usize] == *id, |&r| id_hash(ids[r as usize].as_bytes())) {
            hashbrown::hash_table::Entry::Occupied(row) => *row.get(),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                assert!(ids.len() < ROWS_MAX, "more than {ROWS_MAX} entry ids");
                let row = ids.len() as u32;
                ids.push(*id);
                slot.insert(row);
                row
            }
        }
    }

    /// Room for `additional` more ids without growing: for a caller about
    /// to give rows to that many new ids (a replay into an arena of its
    /// own), which saves the table's rehashing on the way (each reads every
    /// id again).
    pub fn reserve(&self, additional: usize) {
        let mut state = self.state.write();
        let State { table, ids } = &mut *state;
        ids.reserve(additional);
        table.reserve(additional, |&r| id_hash(ids[r as usize].as_bytes()));
    }

    /// `id`'s row, if it has one.
    pub fn row(&self, id: &EntryId) -> Option<u32> {
        self.read().row(id)
    }

    /// The id in `row`. Panics if no id has that row.
    pub fn id(&self, row: u32) -> EntryId {
        self.read().id(row)
    }

    /// Whether `row` names `id`.
    pub fn is(&self, row: u32, id: &EntryId) -> bool {
        self.read().0.ids.get(row as usize) == Some(id)
    }

    /// Rows given out.
    pub fn len(&self) -> usize {
        self.read().0.ids.len()
    }

    /// True if no id has a row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes on the heap: the table's slots (a row and a control byte each)
    /// and the ids, by capacity.
    pub fn heap_bytes(&self) -> usize {
        let state = self.read();
        state.0.table.capacity() * (size_of::<u32>() + 1) + state.0.ids.capacity() * size_of::<EntryId>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn id(i: u32, prefix: u8) -> EntryId {
        let mut b = [prefix; 32];
        b[28..].copy_from_slice(&i.to_be_bytes());
        EntryId(b)
    }

    /// Each id gets one row and keeps it; ids that share the hashed prefix
    /// stay apart; what was never interned has no row.
    #[test]
    fn one_row_per_id_kept() {
        let arena = IdArena::new();
        let rows: Vec<u32> = (0..1_000).map(|i| arena.intern(&id(i, (i % 2) as u8))).collect();
        assert_eq!(rows, (0..1_000).collect::<Vec<_>>());
        for i in 0..1_000u32 {
            let the = id(i, (i % 2) as u8);
            assert_eq!(arena.intern(&the), i, "interned again, same row");
            assert_eq!(arena.row(&the), Some(i));
            assert_eq!(arena.id(i), the);
            assert!(arena.is(i, &the) && !arena.is(i, &id(i, 9)));
            assert_eq!(arena.row(&id(i, 2)), None);
        }
        assert!(!arena.is(5_000, &id(0, 0)), "a row not given out names nothing");
        assert_eq!(arena.len(), 1_000);
    }

    /// Threads interning overlapping ids at once agree on every row, and
    /// no id gets two.
    #[test]
    fn threads_agree_on_rows() {
        let arena = Arc::new(IdArena::new());
        let seen: Vec<Vec<(EntryId, u32)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u32)
                .map(|t| {
                    let arena = arena.clone();
                    s.spawn(move || (0..2_000u32).map(|i| (i * 7 + t * 13) % 3_000).map(|i| (id(i, 1), arena.intern(&id(i, 1)))).collect::<Vec<_>>())
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        for (the, row) in seen.into_iter().flatten() {
            assert_eq!(arena.id(row), the);
            assert_eq!(arena.row(&the), Some(row));
        }
        let read = arena.read();
        let distinct: std::collections::HashSet<EntryId> = (0..arena_len(&read)).map(|r| read.id(r)).collect();
        assert_eq!(distinct.len() as u32, arena_len(&read));
    }

    fn arena_len(read: &IdsRead<'_>) -> u32 {
        read.0.ids.len() as u32
    }
}
