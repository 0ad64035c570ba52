//! The entry format: a signed header and a separate payload.
//!
//! ```text
//! signed entry = header bytes || signature (64 bytes)
//! entry id     = SHA-256(header bytes)
//! signature    = Ed25519(author, "agora-entry-v1" || header bytes)
//! ```
//!
//! The header binds the payload by its SHA-256 and length, so a payload can be
//! deleted (redacted) while the header, its signature and every backlink after
//! it still verify. The signature is not part of the id: the id names what the
//! author said, not one particular encoding of their signature.
//!
//! Header bytes are postcard; see `protocol-spec/entry-format.md` for the exact
//! layout. postcard alone is not canonical (it accepts overlong varints and
//! trailing bytes), so [`Header::decode`] re-encodes what it decoded and refuses
//! anything that is not byte-identical.

use crate::id::{AgentId, EntryId};
use crate::identity::AgentKey;
use crate::limits::{FORMAT_VERSION, HEADER_BYTES_MAX, PAYLOAD_BYTES_MAX, SIGNATURE_BYTES, SIGNED_ENTRY_BYTES_MAX};
use crate::sha256;
use serde::{Deserialize, Serialize};

/// Domain-separation prefix of every entry signature, so that an agent's key
/// signing an entry can never be confused with it signing anything else.
pub const ENTRY_SIGNING_DOMAIN: &[u8] = b"agora-entry-v1";

/// A decoded, structurally valid header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version; always [`FORMAT_VERSION`] for headers this crate accepts.
    pub version: u8,
    /// The agent whose chain this entry extends, and who signs it.
    pub author: AgentId,
    /// Position in the author's chain, starting at 1.
    pub seq: u64,
    /// Id of the entry at `seq - 1`; `None` exactly when `seq == 1`.
    pub backlink: Option<EntryId>,
    /// Author's clock, milliseconds since the Unix epoch. Never decreases along
    /// a chain, so "state as of time T" is a prefix of each chain.
    pub timestamp_ms: u64,
    /// Length of the payload in bytes, at most [`PAYLOAD_BYTES_MAX`].
    pub payload_len: u32,
    /// SHA-256 of the payload.
    pub payload_hash: [u8; 32],
}

/// The header as postcard lays it out. Field order is the wire order.
#[derive(Serialize, Deserialize)]
struct HeaderWire {
    version: u8,
    author: [u8; 32],
    seq: u64,
    backlink: Option<[u8; 32]>,
    timestamp_ms: u64,
    payload_len: u32,
    payload_hash: [u8; 32],
}

/// Why bytes are not a valid header or signed entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Longer than the limit; rejected before decoding.
    #[error("{what} is {len} bytes, more than the limit of {max}")]
    TooLong {
        /// What was too long.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The bytes end before the structure does.
    #[error("truncated: {0}")]
    Truncated(&'static str),
    /// The first byte names a version this implementation does not know.
    #[error("unsupported format version {0} (this implementation reads version {FORMAT_VERSION})")]
    UnsupportedVersion(u8),
    /// postcard could not decode the structure.
    #[error("malformed header: {0}")]
    Malformed(String),
    /// Bytes remain after the header.
    #[error("{0} trailing bytes after the header")]
    TrailingBytes(usize),
    /// The bytes decode, but are not the canonical encoding of what they decode to
    /// (e.g. an overlong varint).
    #[error("non-canonical encoding (re-encoding differs from the input)")]
    NonCanonical,
    /// `seq` is 0.
    #[error("seq must start at 1, found 0")]
    ZeroSeq,
    /// `seq == 1` but a backlink is present, or `seq > 1` and it is missing.
    #[error("seq {seq} {problem}")]
    Backlink {
        /// The seq.
        seq: u64,
        /// What is wrong.
        problem: &'static str,
    },
    /// The header declares a payload longer than the limit.
    #[error("payload length {len} exceeds the limit of {max} bytes")]
    PayloadTooLarge {
        /// Declared length.
        len: u32,
        /// The limit.
        max: u32,
    },
}

impl DecodeError {
    /// A stable, machine-readable name for the error (used in test vectors).
    pub fn code(&self) -> &'static str {
        match self {
            DecodeError::TooLong { .. } => "too_long",
            DecodeError::Truncated(_) => "truncated",
            DecodeError::UnsupportedVersion(_) => "unsupported_version",
            DecodeError::Malformed(_) => "malformed",
            DecodeError::TrailingBytes(_) => "trailing_bytes",
            DecodeError::NonCanonical => "non_canonical",
            DecodeError::ZeroSeq => "zero_seq",
            DecodeError::Backlink { .. } => "backlink_structure",
            DecodeError::PayloadTooLarge { .. } => "payload_too_large",
        }
    }
}

/// Where an entry sits in the log that the reasoning graph replays: ordered
/// by the author's timestamp, then author, then seq (then, where it matters,
/// the entry id). Every view computes it from the header alone, the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogPosition {
    /// Author's timestamp.
    pub timestamp_ms: u64,
    /// Author.
    pub author: AgentId,
    /// Seq in the author's chain.
    pub seq: u64,
}

impl Header {
    /// The canonical bytes of this header.
    pub fn encode(&self) -> Vec<u8> {
        let wire = HeaderWire {
            version: self.version,
            author: self.author.0,
            seq: self.seq,
            backlink: self.backlink.map(|b| b.0),
            timestamp_ms: self.timestamp_ms,
            payload_len: self.payload_len,
            payload_hash: self.payload_hash,
        };
        // Serializing plain integers and arrays into a Vec cannot fail.
        postcard::to_allocvec(&wire).unwrap_or_default()
    }

    /// The entry's place in the log (see [`LogPosition`]).
    pub fn log_position(&self) -> LogPosition {
        LogPosition { timestamp_ms: self.timestamp_ms, author: self.author, seq: self.seq }
    }

    /// The id this header has once encoded: SHA-256 of [`Header::encode`].
    pub fn id(&self) -> EntryId {
        EntryId(sha256(&self.encode()))
    }

    /// Decode header bytes, accepting only the canonical encoding of a
    /// structurally valid version-1 header.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        if bytes.len() > HEADER_BYTES_MAX {
            return Err(DecodeError::TooLong { what: "header", len: bytes.len(), max: HEADER_BYTES_MAX });
        }
        match bytes.first() {
            None => return Err(DecodeError::Truncated("empty header")),
            Some(&v) if v != FORMAT_VERSION => return Err(DecodeError::UnsupportedVersion(v)),
            Some(_) => {}
        }
        let (wire, rest): (HeaderWire, &[u8]) = postcard::take_from_bytes(bytes).map_err(|e| match e {
            postcard::Error::DeserializeUnexpectedEnd => DecodeError::Truncated("header ends early"),
            other => DecodeError::Malformed(other.to_string()),
        })?;
        if !rest.is_empty() {
            return Err(DecodeError::TrailingBytes(rest.len()));
        }
        let header = Header {
            version: wire.version,
            author: AgentId(wire.author),
            seq: wire.seq,
            backlink: wire.backlink.map(EntryId),
            timestamp_ms: wire.timestamp_ms,
            payload_len: wire.payload_len,
            payload_hash: wire.payload_hash,
        };
        if !crate::canonical::encodes_to(&wire, bytes) {
            return Err(DecodeError::NonCanonical);
        }
        header.check_structure()?;
        Ok(header)
    }

    /// Rules a header must meet on its own, independent of any other entry.
    fn check_structure(&self) -> Result<(), DecodeError> {
        if self.seq == 0 {
            return Err(DecodeError::ZeroSeq);
        }
        match (self.seq, self.backlink) {
            (1, Some(_)) => {
                return Err(DecodeError::Backlink { seq: 1, problem: "is the first entry but has a backlink" });
            }
            (seq, None) if seq > 1 => {
                return Err(DecodeError::Backlink { seq, problem: "has no backlink" });
            }
            _ => {}
        }
        if self.payload_len > PAYLOAD_BYTES_MAX {
            return Err(DecodeError::PayloadTooLarge { len: self.payload_len, max: PAYLOAD_BYTES_MAX });
        }
        Ok(())
    }
}

/// A header with its exact bytes, id and signature. Constructed only by decoding
/// or signing, so `header_bytes` is always the canonical encoding of `header`
/// and `id` its hash. The signature is *not* checked by construction; see
/// [`crate::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedEntry {
    header: Header,
    header_bytes: Vec<u8>,
    id: EntryId,
    signature: [u8; 64],
}

impl SignedEntry {
    /// Sign `header` with `key`. The header's author must be the key's agent.
    ///
    /// # Panics
    /// If `header.author` is not `key`'s agent id or the header is structurally
    /// invalid: both are programming errors in the caller, never input errors.
    pub fn sign(header: Header, key: &AgentKey) -> Self {
        assert_eq!(header.author, key.agent_id(), "signing another agent's header");
        assert!(header.check_structure().is_ok(), "signing a structurally invalid header");
        let header_bytes = header.encode();
        let signature = key.sign_with_domain(ENTRY_SIGNING_DOMAIN, &header_bytes);
        let id = EntryId(sha256(&header_bytes));
        Self { header, header_bytes, id, signature }
    }

    /// Decode a signed entry (header bytes followed by a 64-byte signature).
    /// The length limit is checked before anything else.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        if bytes.len() > SIGNED_ENTRY_BYTES_MAX {
            return Err(DecodeError::TooLong { what: "signed entry", len: bytes.len(), max: SIGNED_ENTRY_BYTES_MAX });
        }
        if bytes.len() <= SIGNATURE_BYTES {
            return Err(DecodeError::Truncated("signed entry shorter than a signature plus a header"));
        }
        let (header_bytes, sig) = bytes.split_at(bytes.len() - SIGNATURE_BYTES);
        let header = Header::decode(header_bytes)?;
        let mut signature = [0u8; 64];
        signature.copy_from_slice(sig);
        Ok(Self { id: EntryId(sha256(header_bytes)), header, header_bytes: header_bytes.to_vec(), signature })
    }

    /// The encoded signed entry: header bytes then signature.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.header_bytes.len() + SIGNATURE_BYTES);
        out.extend_from_slice(&self.header_bytes);
        out.extend_from_slice(&self.signature);
        out
    }

    /// The decoded header.
    pub fn header(&self) -> &Header {
        &self.header
    }
    /// The exact header bytes that were signed and hashed.
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }
    /// The entry id: SHA-256 of the header bytes.
    pub fn id(&self) -> EntryId {
        self.id
    }
    /// The signature bytes `R || S`.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }
    /// Author, seq and id, for error messages and indexes.
    pub fn entry_ref(&self) -> crate::id::EntryRef {
        crate::id::EntryRef { author: self.header.author, seq: self.header.seq, id: self.id }
    }
}

/// A signed entry with its payload, when the payload is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The signed header.
    pub signed: SignedEntry,
    /// The payload; `None` when redacted or never received.
    pub payload: Option<Vec<u8>>,
}

/// Why a next header could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The payload is larger than [`PAYLOAD_BYTES_MAX`].
    #[error("payload is {len} bytes, more than the limit of {PAYLOAD_BYTES_MAX}")]
    PayloadTooLarge {
        /// Its length.
        len: usize,
    },
    /// The chain is at seq `u64::MAX`.
    #[error("chain is full (seq {0})")]
    ChainFull(u64),
}

/// Build the header that extends `author`'s chain after `prev` (or starts it),
/// binding `payload`. The timestamp is `now_ms`, raised to the previous entry's
/// if the local clock went backwards, so timestamps never decrease.
pub fn next_header(author: AgentId, prev: Option<&SignedEntry>, now_ms: u64, payload: &[u8]) -> Result<Header, BuildError> {
    next_header_after(author, prev.map(|p| (p.header(), p.id())), now_ms, payload)
}

/// [`next_header`] given the previous header and its id rather than a signed
/// entry, so that a batch of headers can be chained before any is signed (ids do
/// not depend on signatures) and the signatures computed in parallel.
pub fn next_header_after(author: AgentId, prev: Option<(&Header, EntryId)>, now_ms: u64, payload: &[u8]) -> Result<Header, BuildError> {
    let payload_len = u32::try_from(payload.len()).ok().filter(|len| *len <= PAYLOAD_BYTES_MAX).ok_or(BuildError::PayloadTooLarge { len: payload.len() })?;
    let (seq, backlink, timestamp_ms) = match prev {
        None => (1, None, now_ms),
        Some((p, id)) => {
            let seq = p.seq.checked_add(1).ok_or(BuildError::ChainFull(p.seq))?;
            (seq, Some(id), now_ms.max(p.timestamp_ms))
        }
    };
    Ok(Header { version: FORMAT_VERSION, author, seq, backlink, timestamp_ms, payload_len, payload_hash: sha256(payload) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (AgentKey, SignedEntry, SignedEntry) {
        let key = AgentKey::from_seed([1; 32]);
        let h1 = next_header(key.agent_id(), None, 1_000, b"first").unwrap();
        let e1 = SignedEntry::sign(h1, &key);
        let h2 = next_header(key.agent_id(), Some(&e1), 900, b"second").unwrap();
        let e2 = SignedEntry::sign(h2, &key);
        (key, e1, e2)
    }

    #[test]
    fn chain_headers_link_and_round_trip() {
        let (_, e1, e2) = sample();
        assert_eq!(e2.header().seq, 2);
        assert_eq!(e2.header().backlink, Some(e1.id()));
        assert_eq!(e2.header().timestamp_ms, 1_000, "timestamps never decrease");
        let bytes = e2.encode();
        assert_eq!(SignedEntry::decode(&bytes).unwrap(), e2);
        assert!(e1.header_bytes().len() <= HEADER_BYTES_MAX);
    }

    #[test]
    fn maximal_header_fits_the_limit() {
        let h = Header {
            version: FORMAT_VERSION,
            author: AgentId([0xff; 32]),
            seq: u64::MAX,
            backlink: Some(EntryId([0xff; 32])),
            timestamp_ms: u64::MAX,
            payload_len: u32::MAX,
            payload_hash: [0xff; 32],
        };
        assert_eq!(h.encode().len(), HEADER_BYTES_MAX);
    }

    #[test]
    fn rejects_trailing_overlong_truncated_and_unknown_version() {
        let (_, e1, _) = sample();
        let hb = e1.header_bytes().to_vec();
        let mut trailing = hb.clone();
        trailing.push(0);
        assert_eq!(Header::decode(&trailing), Err(DecodeError::TrailingBytes(1)));
        assert!(matches!(Header::decode(&hb[..hb.len() - 1]), Err(DecodeError::Truncated(_))));
        let mut v2 = hb.clone();
        v2[0] = 2;
        assert_eq!(Header::decode(&v2), Err(DecodeError::UnsupportedVersion(2)));
        // seq is the varint right after version and author: 0x01 -> 0x81 0x00 (overlong 1).
        let mut overlong = hb[..33].to_vec();
        assert_eq!(hb[33], 0x01);
        overlong.extend_from_slice(&[0x81, 0x00]);
        overlong.extend_from_slice(&hb[34..]);
        assert_eq!(Header::decode(&overlong), Err(DecodeError::NonCanonical));
        let too_long = vec![1u8; HEADER_BYTES_MAX + 1];
        assert!(matches!(Header::decode(&too_long), Err(DecodeError::TooLong { .. })));
    }

    #[test]
    fn structural_rules() {
        let (_, e1, e2) = sample();
        let mut h = e1.header().clone();
        h.seq = 0;
        assert_eq!(Header::decode(&h.encode()), Err(DecodeError::ZeroSeq));
        let mut h = e1.header().clone();
        h.backlink = Some(EntryId([1; 32]));
        assert!(matches!(Header::decode(&h.encode()), Err(DecodeError::Backlink { seq: 1, .. })));
        let mut h = e2.header().clone();
        h.backlink = None;
        assert!(matches!(Header::decode(&h.encode()), Err(DecodeError::Backlink { seq: 2, .. })));
        let mut h = e1.header().clone();
        h.payload_len = PAYLOAD_BYTES_MAX + 1;
        assert!(matches!(Header::decode(&h.encode()), Err(DecodeError::PayloadTooLarge { .. })));
    }

    #[test]
    fn oversized_payload_is_refused_when_building() {
        let key = AgentKey::from_seed([1; 32]);
        let big = vec![0u8; PAYLOAD_BYTES_MAX as usize + 1];
        assert!(matches!(next_header(key.agent_id(), None, 0, &big), Err(BuildError::PayloadTooLarge { .. })));
    }
}
