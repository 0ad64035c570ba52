//! The store's typed errors. Each says what went wrong and where.

use agora_core::{AgentId, EntryId, VerifyError};
use std::path::PathBuf;

/// Something the store refused or could not do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory is not an Agora store (made by something else, or missing).
    #[error("{path}: not an Agora store: {reason}")]
    NotAStore {
        /// The directory.
        path: PathBuf,
        /// Why it is not one.
        reason: String,
    },
    /// Another process holds the store open.
    #[error("{path}: the store is in use by another process (RocksDB lock held): {detail}")]
    Locked {
        /// The directory.
        path: PathBuf,
        /// RocksDB's message.
        detail: String,
    },
    /// Stored data is inconsistent or damaged. Nothing was changed.
    #[error("store corrupt at {location}: {problem}")]
    Corrupt {
        /// Key, column family or entry concerned.
        location: String,
        /// What is wrong.
        problem: String,
    },
    /// RocksDB reported an error.
    #[error("RocksDB error during {during}: {source}")]
    Db {
        /// The operation.
        during: &'static str,
        /// The error.
        source: rocksdb::Error,
    },
    /// An entry failed verification.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// No entry has this id or prefix.
    #[error("no entry matches {0}")]
    NotFound(String),
    /// The prefix matches more than one entry.
    #[error("entry prefix {prefix} is ambiguous: it matches {count} or more entries")]
    Ambiguous {
        /// The prefix.
        prefix: String,
        /// How many matched (at least).
        count: usize,
    },
    /// The text is not a hex entry id or prefix.
    #[error("{0:?} is not a hex entry id or prefix")]
    BadPrefix(String),
    /// The local agent's chain is forked; extending it would pick a branch
    /// silently, so it is refused until the author resolves the fork.
    #[error("chain of {author} is forked at {tips} tips; refusing to extend it until the fork is resolved")]
    Forked {
        /// The author.
        author: AgentId,
        /// Number of tips.
        tips: usize,
    },
    /// [`crate::Store::append_after`] was given an entry that is not a current
    /// tip of the key's own chain (unknown, interior, or another author's).
    #[error("{tip} is not a tip of the chain of {author} ({tips} tips); only a current tip can be extended")]
    NotATip {
        /// The chain's author (the signing key's agent).
        author: AgentId,
        /// The entry named as the tip.
        tip: EntryId,
        /// Number of current tips of the chain.
        tips: usize,
    },
    /// The entry could not be built.
    #[error(transparent)]
    Build(#[from] agora_core::entry::BuildError),
    /// The payload was already redacted.
    #[error("payload of entry {0} is already redacted")]
    AlreadyRedacted(EntryId),
    /// The payload is not held (redacted at the source or never received).
    #[error("payload of entry {0} is not held here")]
    PayloadNotHeld(EntryId),
    /// An import was refused; nothing was written.
    #[error("import refused, nothing written: {0}")]
    Import(#[from] ImportFailure),
    /// A fixed limit would be exceeded.
    #[error("limit exceeded: {0}")]
    Limit(String),
}

/// Why an import was refused, naming the item by its origin (e.g. pack line).
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {problem}")]
pub struct ImportFailure {
    /// Where the item came from, as given by the caller (e.g. "line 7").
    pub origin: String,
    /// What is wrong.
    pub problem: ImportProblem,
}

pub use agora_core::import::ImportProblem;

pub(crate) fn db(during: &'static str) -> impl FnOnce(rocksdb::Error) -> StoreError {
    move |source| StoreError::Db { during, source }
}
