//! Fork (equivocation) proofs: two validly signed entries by one author that
//! cannot both belong to one chain.
//!
//! A proof is standalone: [`ForkProof::check`] needs nothing but the proof's own
//! bytes. Two entries conflict when they have the same author, different ids, and
//! either the same seq or the same backlink. The two entries are stored in
//! ascending id order, so one pair has exactly one encoding.
//!
//! ```text
//! proof = 0x01 (version)
//!         varint(len a) || signed entry a
//!         varint(len b) || signed entry b      with id(a) < id(b)
//! ```

use crate::entry::{DecodeError, SignedEntry};
use crate::id::{AgentId, EntryId};
use crate::limits::FORK_PROOF_BYTES_MAX;
use crate::verify::{VerifyError, verify_signature};
use serde::{Deserialize, Serialize};

/// Version byte of the proof encoding.
pub const FORK_PROOF_VERSION: u8 = 1;

/// Why a fork proof is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForkProofError {
    /// The encoded proof is over [`FORK_PROOF_BYTES_MAX`].
    #[error("fork proof is {0} bytes, more than the limit of {FORK_PROOF_BYTES_MAX}")]
    TooLong(usize),
    /// The proof bytes are malformed, truncated, or not canonical.
    #[error("malformed fork proof: {0}")]
    Malformed(String),
    /// Unknown proof version.
    #[error("unsupported fork proof version {0}")]
    UnsupportedVersion(u8),
    /// One of the two entries does not decode.
    #[error("entry {which} of the proof: {error}")]
    EntryEncoding {
        /// "a" or "b".
        which: &'static str,
        /// The decoding error.
        error: DecodeError,
    },
    /// One of the two entries is not validly signed.
    #[error("entry {which} of the proof: {error}")]
    EntrySignature {
        /// "a" or "b".
        which: &'static str,
        /// The verification error.
        error: VerifyError,
    },
    /// Both sides are the same entry.
    #[error("the proof names entry {0} twice")]
    SameEntry(EntryId),
    /// The two entries are by different authors.
    #[error("the entries are by different authors ({0} and {1})")]
    DifferentAuthors(AgentId, AgentId),
    /// The entries have neither the same seq nor the same backlink.
    #[error("the entries do not conflict: seqs {0} and {1} with different backlinks")]
    NotConflicting(u64, u64),
    /// The entries are not in ascending id order (non-canonical proof).
    #[error("entries are not in ascending id order")]
    NotOrdered,
}

impl ForkProofError {
    /// A stable, machine-readable name for the error (used in test vectors).
    pub fn code(&self) -> &'static str {
        match self {
            ForkProofError::TooLong(_) => "too_long",
            ForkProofError::Malformed(_) => "malformed",
            ForkProofError::UnsupportedVersion(_) => "unsupported_version",
            ForkProofError::EntryEncoding { .. } => "entry_encoding",
            ForkProofError::EntrySignature { .. } => "entry_signature",
            ForkProofError::SameEntry(_) => "same_entry",
            ForkProofError::DifferentAuthors(..) => "different_authors",
            ForkProofError::NotConflicting(..) => "not_conflicting",
            ForkProofError::NotOrdered => "not_ordered",
        }
    }
}

/// Evidence that an author signed two conflicting continuations of its chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkProof {
    a: SignedEntry,
    b: SignedEntry,
}

#[derive(Serialize, Deserialize)]
struct ForkProofWire {
    version: u8,
    a: Vec<u8>,
    b: Vec<u8>,
}

impl ForkProof {
    /// Build and check a proof from two entries, in either order.
    pub fn new(x: SignedEntry, y: SignedEntry) -> Result<Self, ForkProofError> {
        let (a, b) = if x.id() <= y.id() { (x, y) } else { (y, x) };
        let proof = Self { a, b };
        proof.check()?;
        Ok(proof)
    }

    /// Check every condition: both entries validly signed, same author,
    /// different ids in ascending order, and same seq or same backlink.
    pub fn check(&self) -> Result<(), ForkProofError> {
        let (a, b) = (&self.a, &self.b);
        if a.id() == b.id() {
            return Err(ForkProofError::SameEntry(a.id()));
        }
        if a.id() > b.id() {
            return Err(ForkProofError::NotOrdered);
        }
        let (ha, hb) = (a.header(), b.header());
        if ha.author != hb.author {
            return Err(ForkProofError::DifferentAuthors(ha.author, hb.author));
        }
        let same_seq = ha.seq == hb.seq;
        let same_backlink = ha.backlink.is_some() && ha.backlink == hb.backlink;
        if !same_seq && !same_backlink {
            return Err(ForkProofError::NotConflicting(ha.seq, hb.seq));
        }
        verify_signature(a).map_err(|error| ForkProofError::EntrySignature { which: "a", error })?;
        verify_signature(b).map_err(|error| ForkProofError::EntrySignature { which: "b", error })?;
        Ok(())
    }

    /// The canonical encoding.
    pub fn encode(&self) -> Vec<u8> {
        let wire = ForkProofWire { version: FORK_PROOF_VERSION, a: self.a.encode(), b: self.b.encode() };
        postcard::to_allocvec(&wire).unwrap_or_default()
    }

    /// Decode and check a proof. Only the canonical encoding is accepted.
    pub fn decode(bytes: &[u8]) -> Result<Self, ForkProofError> {
        if bytes.len() > FORK_PROOF_BYTES_MAX {
            return Err(ForkProofError::TooLong(bytes.len()));
        }
        match bytes.first() {
            None => return Err(ForkProofError::Malformed("empty".into())),
            Some(&v) if v != FORK_PROOF_VERSION => return Err(ForkProofError::UnsupportedVersion(v)),
            Some(_) => {}
        }
        let (wire, rest): (ForkProofWire, &[u8]) = postcard::take_from_bytes(bytes).map_err(|e| ForkProofError::Malformed(e.to_string()))?;
        if !rest.is_empty() {
            return Err(ForkProofError::Malformed(format!("{} trailing bytes", rest.len())));
        }
        let a = SignedEntry::decode(&wire.a).map_err(|error| ForkProofError::EntryEncoding { which: "a", error })?;
        let b = SignedEntry::decode(&wire.b).map_err(|error| ForkProofError::EntryEncoding { which: "b", error })?;
        let proof = Self { a, b };
        if proof.encode() != bytes {
            return Err(ForkProofError::Malformed("non-canonical encoding".into()));
        }
        proof.check()?;
        Ok(proof)
    }

    /// The forked author.
    pub fn author(&self) -> AgentId {
        self.a.header().author
    }
    /// The two entries, in ascending id order.
    pub fn entries(&self) -> (&SignedEntry, &SignedEntry) {
        (&self.a, &self.b)
    }
    /// The lowest seq at which the chain is known to fork: the seq both entries
    /// share, or for a same-backlink proof the smaller of the two.
    pub fn seq(&self) -> u64 {
        self.a.header().seq.min(self.b.header().seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::next_header;
    use crate::identity::AgentKey;

    fn entry(key: &AgentKey, prev: Option<&SignedEntry>, payload: &[u8]) -> SignedEntry {
        SignedEntry::sign(next_header(key.agent_id(), prev, 10, payload).unwrap(), key)
    }

    #[test]
    fn valid_proof_round_trips_and_checks() {
        let key = AgentKey::from_seed([1; 32]);
        let root = entry(&key, None, b"root");
        let x = entry(&key, Some(&root), b"left");
        let y = entry(&key, Some(&root), b"right");
        let proof = ForkProof::new(y.clone(), x.clone()).unwrap();
        let bytes = proof.encode();
        let back = ForkProof::decode(&bytes).unwrap();
        assert_eq!(back, proof);
        assert_eq!(back.seq(), 2);
        assert_eq!(ForkProof::new(x, y).unwrap().encode(), bytes, "order-independent");
    }

    #[test]
    fn rejects_same_entry_two_authors_and_non_conflicts() {
        let key = AgentKey::from_seed([1; 32]);
        let other = AgentKey::from_seed([2; 32]);
        let a1 = entry(&key, None, b"a");
        let a2 = entry(&key, Some(&a1), b"b");
        assert!(matches!(ForkProof::new(a1.clone(), a1.clone()), Err(ForkProofError::SameEntry(_))));
        let b1 = entry(&other, None, b"a");
        assert!(matches!(ForkProof::new(a1.clone(), b1), Err(ForkProofError::DifferentAuthors(..))));
        assert!(matches!(ForkProof::new(a1, a2), Err(ForkProofError::NotConflicting(1, 2))));
    }

    #[test]
    fn rejects_a_forged_side_and_unordered_encoding() {
        let key = AgentKey::from_seed([1; 32]);
        let x = entry(&key, None, b"x");
        let y = entry(&key, None, b"y");
        let proof = ForkProof::new(x, y).unwrap();
        let (a, b) = proof.entries();
        // Swap the order in the encoding.
        let wire = ForkProofWire { version: 1, a: b.encode(), b: a.encode() };
        let swapped = postcard::to_allocvec(&wire).unwrap();
        assert!(ForkProof::decode(&swapped).is_err());
        // Corrupt b's signature.
        let mut bb = b.encode();
        let n = bb.len();
        bb[n - 1] ^= 0x10;
        let wire = ForkProofWire { version: 1, a: a.encode(), b: bb };
        let forged = postcard::to_allocvec(&wire).unwrap();
        assert!(matches!(ForkProof::decode(&forged), Err(ForkProofError::EntrySignature { which: "b", .. })));
    }
}
