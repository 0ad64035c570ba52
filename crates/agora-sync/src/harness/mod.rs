//! What every driver of the replicator but the node's shares: an in-memory
//! store with agora-store's import rules ([`MemStore`]) and the reference
//! executor of the store's side of the replicator's outputs ([`import`],
//! [`serve`], [`append`]): each writes or reads the store and tells the
//! replicator what happened through the one commit contract
//! ([`crate::Replicator::committed`]). The simulator and the fuzzer drive
//! the replicator through it; the node's driver does the same against
//! RocksDB (`node/src/daemon/driver/`). Behind the `harness` feature.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod store;

pub use store::{Contents, Imported, Interner, MemStore, SharedScope, Stored};

use crate::{ImportOutcome, Replicator, ServeRequest};
use agora_core::verify::CheckedEntry;
use agora_core::{AgentKey, SignedEntry};

/// Carry out `Output::Import { id, entries, .. }`: store the entries, give
/// the replicator the import's outcome, then what the write committed.
pub fn import(rep: &mut Replicator, store: &mut MemStore, id: u64, entries: Vec<CheckedEntry>, now_ms: u64) -> Imported {
    let imported = store.import(entries, now_ms);
    rep.import_result(id, imported.outcome.clone(), now_ms);
    rep.committed(&imported.commit(&[]), now_ms);
    imported
}

/// Carry out `Output::Serve`: read the range from the store and hand it to
/// the replicator, which cuts and sends the response.
pub fn serve(rep: &mut Replicator, store: &MemStore, request: ServeRequest) {
    let served = store.serve(&request);
    rep.respond(request, served);
}

/// An agent of this node writes: sign and store the next entry of `key`'s
/// chain, and tell the replicator, which publishes it.
pub fn append(rep: &mut Replicator, store: &mut MemStore, key: &AgentKey, payload: &[u8], now_ms: u64) -> (SignedEntry, Imported) {
    let (entry, imported) = store.append_reporting(key, payload, now_ms);
    debug_assert_eq!(imported.outcome, ImportOutcome::Stored);
    rep.committed(&imported.commit(&[(entry.clone(), Some(payload.to_vec()))]), now_ms);
    (entry, imported)
}
