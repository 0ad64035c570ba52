//! Agora's durable log store on RocksDB.
//!
//! Invariants this crate keeps:
//! - **Verify before store.** Nothing reaches RocksDB unless its signature, its
//!   payload binding and its link to a stored predecessor have been checked.
//! - **One atomic batch per operation.** An append, an import or a redaction is
//!   a single `WriteBatch` (entry, payload, tips, indexes, fork proofs), written
//!   with a synced WAL by default. A failure before the write changes nothing.
//! - **Forks are kept.** A second entry at an author's seq is stored beside the
//!   first, and a standalone [`agora_core::ForkProof`] is stored with it.
//! - **Never rewrite what we did not write.** Opening a directory that is not an
//!   Agora store is refused before RocksDB is allowed to create anything there.
//!
//! It knows nothing about the command line, the network or the reasoning graph.
//! The clock is a parameter: callers pass `now_ms`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// Errors carry the entry they name (author, seq, id): ~128 bytes. They are only
// built on failure paths, and each verification costs microseconds, so boxing
// them would buy nothing measurable and cost an allocation per error.
#![allow(clippy::result_large_err)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod audit;
mod error;
mod keys;
mod long_read;
mod read;
mod readers;
mod store;
mod write;

pub use agora_core::import::{Deferred, TipChange};
pub use audit::{AuditReport, AuthorAudit};
pub use error::{ImportFailure, ImportProblem, StoreError};
pub use long_read::LongRead;
pub use read::{AuthorSummary, PayloadState, RawStoredEntry, StoredEntry};
pub use readers::RedactReport;
pub use store::{
    COLUMN_FAMILIES, CommitNotice, MemoryUsage, Observer, STORE_FORMAT, STORE_FORMAT_1, STORE_FORMAT_2, STORE_FORMAT_3, STORE_FORMAT_4, Store, StoreOptions,
};
pub use write::{ImportItem, ImportReport, REDACT_WAIT_MAX};

#[cfg(test)]
mod tests;
