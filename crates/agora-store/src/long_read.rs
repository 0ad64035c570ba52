//! A long read's registration ([`Store::long_read`]): what a redaction
//! waits for before it erases a payload's bytes (the registry and the wait
//! are in `readers.rs`).

use crate::store::Store;

/// One open long read; dropping it ends it. Drop it after the snapshot or
/// iterators it covers.
pub struct LongRead<'s> {
    store: &'s Store,
    ticket: u64,
}

impl Store {
    /// Register a read that keeps a snapshot or iterators over payloads open
    /// for longer than a lookup; a redaction waits for it (module docs).
    pub fn long_read(&self) -> LongRead<'_> {
        LongRead { store: self, ticket: self.readers.begin() }
    }

    /// Erase the pending keys that no open read can hold any more. Errors
    /// leave the bytes to RocksDB's own compactions: there is no caller to
    /// tell (a read ending, the store closing).
    pub(crate) fn erase_due(&self) {
        for key in self.readers.due() {
            let _ = self.erase_deleted(&key);
        }
    }
}

impl Drop for LongRead<'_> {
    fn drop(&mut self) {
        self.store.readers.end(self.ticket);
        self.store.erase_due();
    }
}
