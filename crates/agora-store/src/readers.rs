//! Long reads that can keep a deleted payload's bytes on disk, and the wait
//! a redaction makes for them.
//!
//! A RocksDB snapshot keeps every value it can see: a compaction that meets
//! a deleted payload keeps it while a snapshot older than the deletion is
//! open. An iterator pins the table files it reads, so a file that a
//! compaction made obsolete stays on disk until the iterator is dropped.
//! Either way the payload's bytes outlive the redaction as long as the read
//! does (a `verify` of a large store reads for many seconds).
//!
//! So every read that keeps a snapshot or an iterator over payloads longer
//! than a lookup registers (`Store::long_read`, in `long_read.rs`), and a redaction, once its
//! batch is written, waits for every read that began before it erases the
//! key (bounded by its caller), erases, then waits again for the reads that
//! began while it erased (they may pin the files it replaced). A read still
//! open when the wait ends leaves the erasure pending: the last such read
//! redoes it when it ends, or the store when it closes. See
//! `protocol-spec/storage.md`, "Redaction".

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The open long reads, and the erasures waiting for them.
#[derive(Debug, Default)]
pub(crate) struct Readers {
    state: Mutex<ReadersState>,
    released: Condvar,
}

#[derive(Debug, Default)]
struct ReadersState {
    /// The ticket the next read gets; tickets only grow.
    next: u64,
    /// Open reads: ticket → when it began.
    open: BTreeMap<u64, Instant>,
    /// Payload keys to erase again once every read with a ticket below the
    /// mark has ended.
    pending: Vec<(u64, Vec<u8>)>,
}

/// What a redaction left behind (`Store::redact`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RedactReport {
    /// How long it waited for reads that could hold the payload.
    pub waited: Duration,
    /// Reads that began before the erasure and were still open when the
    /// wait ended (0: no file of the store holds the payload's bytes).
    pub reads_left: usize,
    /// How long the oldest of them had been open then.
    pub oldest_read_age: Duration,
}

impl RedactReport {
    /// Were the payload's bytes erased from every file before it returned?
    pub fn erased(&self) -> bool {
        self.reads_left == 0
    }
}

impl Readers {
    /// A long read begins: its ticket.
    pub(crate) fn begin(&self) -> u64 {
        let mut state = self.state();
        let ticket = state.next;
        state.next += 1;
        state.open.insert(ticket, Instant::now());
        ticket
    }

    /// The long read with `ticket` ended: wake the redactions waiting.
    pub(crate) fn end(&self, ticket: u64) {
        self.state().open.remove(&ticket);
        self.released.notify_all();
    }

    fn state(&self) -> MutexGuard<'_, ReadersState> {
        // A reader that panicked left consistent state (tickets are removed
        // by its guard's drop, which runs on unwinding too).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The ticket the next read will get: every read open now has a lower one.
    pub(crate) fn mark(&self) -> u64 {
        self.state().next
    }

    /// Wait until no read with a ticket below `mark` is open, or `until`.
    /// Returns the reads left and the age of the oldest.
    pub(crate) fn wait_older(&self, mark: u64, until: Instant) -> (usize, Duration) {
        let mut state = self.state();
        loop {
            let older = state.open.range(..mark);
            let left = older.clone().count();
            if left == 0 {
                return (0, Duration::ZERO);
            }
            let now = Instant::now();
            if now >= until {
                let oldest = older.map(|(_, began)| now.saturating_duration_since(*began)).max().unwrap_or_default();
                return (left, oldest);
            }
            state = self.released.wait_timeout(state, until - now).map(|(s, _)| s).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Erase `key` again once every read below `mark` has ended.
    pub(crate) fn defer(&self, mark: u64, key: Vec<u8>) {
        self.state().pending.push((mark, key));
    }

    /// The pending keys no open read can hold any more, taken.
    pub(crate) fn due(&self) -> Vec<Vec<u8>> {
        let mut state = self.state();
        let oldest = state.open.keys().next().copied().unwrap_or(u64::MAX);
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut state.pending).into_iter().partition(|(mark, _)| *mark <= oldest);
        state.pending = keep;
        due.into_iter().map(|(_, key)| key).collect()
    }
}
