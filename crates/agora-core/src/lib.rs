//! Agora's core: the bytes of an agent's chain and the rules that make them valid.
//!
//! This crate is the single place that defines what is on disk and on the wire for
//! the signed log (see `protocol-spec/`). It is pure: it knows nothing about
//! RocksDB, libp2p, tokio, files, clocks or randomness. Callers pass time and
//! random keys in. Because it cannot do I/O, it cannot fail for I/O reasons, and
//! every function is deterministic, which the store, the node and the simulator
//! all rely on.
//!
//! Map of the crate:
//! - [`limits`]: every size bound, checked before anything is allocated.
//! - [`id`]: [`AgentId`] and [`EntryId`] with their one stable text form.
//! - [`identity`]: an agent's signing key and its key-file bytes.
//! - [`signature`]: Ed25519 verification rules, single and batched, which agree
//!   exactly on every input.
//! - [`entry`]: the header, its canonical encoding, signing and the entry id.
//! - [`verify`]: the chain rules (signature, backlink, seq, payload binding).
//! - [`fork`]: standalone, checkable equivocation proofs.
//! - [`import`]: the import rules (skip, defer, link, one proof per fork,
//!   tips), planned against any store through the [`import::Held`] questions.
//! - [`pack`]: the JSONL export/import format.
//! - [`canonical`]: canonical postcard decoding and the framing
//!   (magic, version, postcard) that every payload and wire format shares.
//! - [`payload`]: what a node knows of a payload (held, redacted with its
//!   residue, missing), as every view reads it.
//! - [`idmap`]: hash maps keyed by ids, hashed by their first bytes.
//! - [`id_arena`]: entry ids held once and named by 4-byte rows, shared by
//!   the views of one node.
//! - [`xorshift`]: the seeded generator of deterministic workloads.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// Errors carry the entry they name (author, seq, id): ~128 bytes. They are only
// built on failure paths, and each verification costs microseconds, so boxing
// them would buy nothing measurable and cost an allocation per error.
#![allow(clippy::result_large_err)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod canonical;
pub mod entry;
pub mod fork;
pub mod id;
pub mod id_arena;
pub mod identity;
pub mod idmap;
pub mod import;
pub mod key_bounds;
pub mod limits;
pub mod pack;
pub mod payload;
pub mod signature;
pub mod verify;
pub mod xorshift;

pub use entry::{DecodeError, Entry, Header, KeyEvent, KeyFields, LogPosition, SignedEntry, key_commitment};
pub use fork::{ForkProof, ForkProofError};
pub use id::{AgentId, EntryId, EntryRef, ParseIdError};
pub use identity::{AgentKey, KeyFileError};
pub use payload::{Content, Payload};
pub use verify::{Rule, VerifyError};

/// SHA-256 of `bytes`. The only hash function of the format.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest);
    out
}
