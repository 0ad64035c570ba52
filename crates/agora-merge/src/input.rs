//! What the merge layer is given: entries (signed headers, payloads when held)
//! and standalone fork proofs.
//!
//! The caller (the store, a replication driver, a test) hands over entries it
//! has verified: signature and chain link are the store's invariants. The
//! payload binding is checked here again when a [`MergeEntry`] is built, so a
//! payload that does not match its header can never be read as an event.

use agora_core::verify::{VerifyError, verify_payload};
use agora_core::{AgentId, Content, EntryId, ForkProof, ForkProofError, Payload, SignedEntry};

/// Most entries one merge computation takes (positions are `u32`).
pub const MERGE_ENTRIES_MAX: usize = 16_000_000;
/// Most fork proofs one merge computation takes.
pub const MERGE_PROOFS_MAX: usize = 1_000_000;

/// One entry as the merge layer sees it: the signed header and what the node
/// knows of its payload (held, checked against the header's hash and length;
/// redacted here, with its residue; or missing: never received).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeEntry {
    signed: SignedEntry,
    content: Payload,
    /// A held payload that is no merge event, whose bytes were dropped once
    /// checked ([`MergeEntry::for_merge_state`]): it reads as held and
    /// empty, which is all the merge state needs of it; the computations
    /// that read reasoning refuse it.
    reasoning_dropped: bool,
}

impl MergeEntry {
    /// Build from a signed entry and its payload, `None` when it never
    /// arrived (its meaning is then unknown: see merge.md). A payload must be
    /// the one the header binds.
    pub fn new(signed: SignedEntry, payload: Option<&[u8]>) -> Result<Self, VerifyError> {
        Self::from_owned(signed, payload.map(<[u8]>::to_vec))
    }

    /// [`MergeEntry::new`] taking ownership of the payload (no copy).
    pub fn from_owned(signed: SignedEntry, payload: Option<Vec<u8>>) -> Result<Self, VerifyError> {
        Self::with_content(signed, payload.map_or(Payload::Missing, Payload::Held))
    }

    /// Build from a signed entry and what the node knows of its payload. A
    /// held payload is checked against the header; a residue cannot be (it is
    /// the node's own record of what a payload it held meant).
    pub fn with_content(signed: SignedEntry, content: Payload) -> Result<Self, VerifyError> {
        if let Payload::Held(p) = &content {
            verify_payload(&signed, p)?;
        }
        Ok(Self { signed, content, reasoning_dropped: false })
    }

    /// [`MergeEntry::with_content`] keeping of a held payload only what the
    /// merge state reads: a merge event whole; of any other payload, once
    /// checked against the header, only that it is held. For
    /// [`LiveMerge::from_entries`](crate::LiveMerge::from_entries) at a
    /// node's start, which reads every entry held: a million entries' worth
    /// of reasoning payloads in memory at once is what made the start-up's
    /// peak. [`Merge::compute`](crate::Merge::compute) and
    /// [`Merge::compute_with_view`](crate::Merge::compute_with_view), which
    /// read the reasoning, refuse such entries; the loaders given to the
    /// live perspectives and the merged graph must read entries whole.
    pub fn for_merge_state(signed: SignedEntry, content: Payload) -> Result<Self, VerifyError> {
        let mut e = Self::with_content(signed, content)?;
        if let Payload::Held(p) = &mut e.content
            && !crate::MergeEvent::is_merge_payload(p)
        {
            *p = Vec::new();
            e.reasoning_dropped = true;
        }
        Ok(e)
    }

    /// Built by [`MergeEntry::for_merge_state`] from a payload that is no
    /// merge event: its bytes are gone.
    pub fn reasoning_dropped(&self) -> bool {
        self.reasoning_dropped
    }

    /// The signed header.
    pub fn signed(&self) -> &SignedEntry {
        &self.signed
    }
    /// The bytes that carry the entry's meaning: the payload when held, the
    /// residue when redacted here; `None` when unknown.
    pub fn payload(&self) -> Option<&[u8]> {
        self.content.meaning()
    }
    /// What the node knows of the payload.
    pub fn content(&self) -> Content<'_> {
        self.content.as_content()
    }
    /// The entry id.
    pub fn id(&self) -> EntryId {
        self.signed.id()
    }
    /// The author.
    pub fn author(&self) -> AgentId {
        self.signed.header().author
    }
    /// Position in the author's chain.
    pub fn seq(&self) -> u64 {
        self.signed.header().seq
    }
    /// Id of the predecessor (`None` at seq 1).
    pub fn backlink(&self) -> Option<EntryId> {
        self.signed.header().backlink
    }
    /// The author's timestamp.
    pub fn timestamp_ms(&self) -> u64 {
        self.signed.header().timestamp_ms
    }
}

/// Why input was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// More entries or proofs than the limits allow.
    #[error("{what}: {len} given, the limit is {max}")]
    TooMany {
        /// "entries" or "fork proofs".
        what: &'static str,
        /// How many were given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A fork proof from a peer does not check (forged, malformed, not a fork).
    #[error("fork proof refused: {0}")]
    ForkProof(#[from] ForkProofError),
    /// An entry built for the merge state alone
    /// ([`MergeEntry::for_merge_state`]) given to a computation that reads
    /// its reasoning.
    #[error("entry {0} was loaded without its reasoning payload, which this computation reads")]
    ReasoningDropped(EntryId),
}

/// Refuse entries whose reasoning was dropped, for computations that read it.
pub(crate) fn check_reasoning_held(entries: &[MergeEntry]) -> Result<(), InputError> {
    match entries.iter().find(|e| e.reasoning_dropped) {
        Some(e) => Err(InputError::ReasoningDropped(e.id())),
        None => Ok(()),
    }
}

/// Decode and check a fork proof received from a peer. A forged proof (a bad
/// signature, two entries that do not conflict, two authors, bad bytes) is
/// refused here and never reaches a view.
pub fn decode_fork_proof(bytes: &[u8]) -> Result<ForkProof, InputError> {
    Ok(ForkProof::decode(bytes)?)
}
