//! The threads beside the event loop: one reads ranges from the store for
//! peers, one imports verified entries into it, and a few verify responses
//! (the CPU-heavy part of replication). They take jobs from bounded queues
//! and report on one channel; none of them decides anything about
//! replication: each does what an `agora_sync::Output` asked and reports
//! what the store said, typed, for the replicator to judge.

use agora_store::{PayloadState, Store, StoreError};
use agora_sync::{CheckError, ImportOutcome, PeerId, ServeRequest, VerifiedEntry, WireEntry};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use tokio::sync::mpsc;

pub use agora_sync::queues::{CHECK_QUEUE_MAX, STORE_QUEUE_MAX, VERIFY_THREADS_MAX, WRITE_QUEUE_MAX};

/// A range read for a peer ([`agora_sync::Output::Serve`]).
pub struct ReadJob(pub ServeRequest);

/// Verified entries to store ([`agora_sync::Output::Import`]).
pub struct WriteJob {
    pub id: u64,
    pub from: PeerId,
    pub entries: Vec<VerifiedEntry>,
}

/// A response to check (decode, payload hashes, signatures) off the loop.
pub struct CheckJob {
    pub peer: PeerId,
    pub req: u64,
    pub entries: Vec<WireEntry>,
    pub more: bool,
}

/// What the threads report back.
pub enum Done {
    /// A range read: hand it to `Replicator::respond`.
    Served { serve: ServeRequest, entries: Vec<(u64, WireEntry)> },
    /// The read failed: the peer is told `Busy`.
    ServeFailed { serve: ServeRequest, error: String },
    /// What the store made of an import, for `Replicator::import_result`.
    /// `Deferred`'s time is on the wall clock here; the loop converts it.
    Imported { id: u64, outcome: ImportOutcome, stored: usize, wall_now_ms: u64, error: Option<String> },
    /// A response's entries, checked by a verify worker.
    Checked { peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, CheckError>, more: bool },
}

/// Milliseconds since the Unix epoch: the clock entries' timestamps are on.
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Serve range reads until the loop goes away.
pub fn read_worker(store: Arc<Store>, jobs: std_mpsc::Receiver<ReadJob>, done: mpsc::Sender<Done>) {
    while let Ok(ReadJob(serve)) = jobs.recv() {
        let msg = match store.chain_raw(&serve.author, serve.start.seq, serve.start.after.as_ref(), serve.read_max) {
            Ok(stored) => {
                let entries = stored
                    .into_iter()
                    .map(|e| {
                        let payload = match e.payload {
                            PayloadState::Held(p) => Some(p),
                            // A residue is local knowledge and never sent.
                            PayloadState::Redacted { .. } | PayloadState::NotHeld => None,
                        };
                        (e.seq, WireEntry { entry: e.entry, payload })
                    })
                    .collect();
                Done::Served { serve, entries }
            }
            Err(e) => Done::ServeFailed { serve, error: e.to_string() },
        };
        if done.blocking_send(msg).is_err() {
            return;
        }
    }
}

/// Check responses until the loop goes away. Several of these share one queue.
pub fn verify_worker(jobs: Arc<Mutex<std_mpsc::Receiver<CheckJob>>>, done: mpsc::Sender<Done>) {
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(CheckJob { peer, req, entries, more }) = job else { return };
        let checked = agora_sync::check_entries(entries);
        if done.blocking_send(Done::Checked { peer, req, checked, more }).is_err() {
            return;
        }
    }
}

/// Import verified entries until the loop goes away (and then drain what is
/// queued: it was verified; losing it would only cost a re-fetch, but a
/// clean shutdown stores everything it accepted).
pub fn write_worker(store: Arc<Store>, jobs: std_mpsc::Receiver<WriteJob>, done: mpsc::Sender<Done>) {
    while let Ok(WriteJob { id, from, entries }) = jobs.recv() {
        let msg = import(&store, id, from, entries);
        let _ = done.blocking_send(msg);
    }
}

/// Store entries and translate the store's typed answer into the
/// replicator's: a missing predecessor, a broken rule, entries dated ahead,
/// or a failure to write (asked for again).
pub fn import(store: &Store, id: u64, from: PeerId, entries: Vec<VerifiedEntry>) -> Done {
    let wall_now_ms = wall_ms();
    let result = store.import_checked(entries, &format!("peer {}", from.0), wall_now_ms);
    let (outcome, stored, error) = outcome_of(result);
    Done::Imported { id, outcome, stored, wall_now_ms, error }
}

/// The replicator's view of an import's result, how many entries were
/// stored, and the store's error when it could not write.
pub fn outcome_of(result: Result<agora_store::ImportReport, StoreError>) -> (ImportOutcome, usize, Option<String>) {
    match result {
        Ok(report) => (ImportOutcome::accepted(report.deferred.as_ref()), report.imported, None),
        Err(StoreError::Import(failure)) => (ImportOutcome::refused(&failure.problem), 0, None),
        Err(StoreError::Verify(e)) => (ImportOutcome::Invalid { reason: e.to_string() }, 0, None),
        Err(e) => (ImportOutcome::Lost, 0, Some(e.to_string())),
    }
}
