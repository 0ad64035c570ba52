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
use crate::limits::{FORMAT_VERSION, HEADER_BYTES_MAX, KEYED_FORMAT_VERSION, PAYLOAD_BYTES_MAX, SIGNATURE_BYTES, SIGNED_ENTRY_BYTES_MAX};
use crate::sha256;
use serde::{Deserialize, Serialize};

/// Domain-separation prefix of every entry signature, so that an agent's key
/// signing an entry can never be confused with it signing anything else.
pub const ENTRY_SIGNING_DOMAIN: &[u8] = b"agora-entry-v1";

/// What an entry does to its author's keys (a version-2 header's
/// `key_event`, `protocol-spec/keys.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyEvent {
    /// 0: nothing; the current key signs and the commitment is unchanged.
    None,
    /// 1: the pre-committed next key signs, becomes the current key and
    /// commits to the key after it; the predecessor is a trust boundary.
    Rotate,
    /// 2: both keys were lost: a key the workspace's founder bound to the
    /// agent after this entry's predecessor (the boundary) signs, becomes
    /// the current key and commits to the key after it. It counts only
    /// where the roster binds it (`protocol-spec/keys.md`, "Recovery").
    Recover,
}

impl KeyEvent {
    /// The name used in answers and the specification.
    pub fn name(self) -> &'static str {
        match self {
            KeyEvent::None => "none",
            KeyEvent::Rotate => "rotate",
            KeyEvent::Recover => "recover",
        }
    }
}

/// The key fields of a version-2 header (`protocol-spec/keys.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyFields {
    /// The key that signs the entry; `None` for the author's inception key
    /// (the agent id), never `Some(author)`.
    pub signer: Option<AgentId>,
    /// SHA-256 of the next key ([`key_commitment`]): the pre-commitment.
    pub next: [u8; 32],
    /// What the entry does to the author's keys.
    pub event: KeyEvent,
}

/// The commitment to a next key: SHA-256 of its 32 bytes.
pub fn key_commitment(key: &AgentId) -> [u8; 32] {
    sha256(key.as_bytes())
}

/// A decoded, structurally valid header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version: [`FORMAT_VERSION`] without key fields,
    /// [`KEYED_FORMAT_VERSION`] with them.
    pub version: u8,
    /// The agent whose chain this entry extends: its id, the key it was
    /// created with, whatever key signs today (see [`Header::signing_key`]).
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
    /// The key fields; present exactly in a version-2 header.
    pub keys: Option<KeyFields>,
}

/// A version-1 header as postcard lays it out. Field order is the wire order.
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

/// A version-2 header: version 1's fields, then the key fields.
#[derive(Serialize, Deserialize)]
struct KeyedHeaderWire {
    version: u8,
    author: [u8; 32],
    seq: u64,
    backlink: Option<[u8; 32]>,
    timestamp_ms: u64,
    payload_len: u32,
    payload_hash: [u8; 32],
    signer: Option<[u8; 32]>,
    next: [u8; 32],
    key_event: KeyEvent,
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
    #[error("unsupported format version {0} (this implementation reads versions {FORMAT_VERSION} and {KEYED_FORMAT_VERSION})")]
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
    /// A version-2 header names the author id as its signer (the inception
    /// key is written as no signer).
    #[error("the signer is the author id, which is written as no signer")]
    SignerIsAuthor,
    /// The first entry of a chain names a signer: an agent starts with its
    /// inception key.
    #[error("seq 1 names a signer: an agent starts with its own key")]
    SignerAtFirst,
    /// The first entry of a chain is a key event.
    #[error("seq 1 is a {0} key event: an agent starts with its own key")]
    KeyEventAtFirst(&'static str),
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
            DecodeError::SignerIsAuthor => "signer_is_author",
            DecodeError::SignerAtFirst => "signer_at_first",
            DecodeError::KeyEventAtFirst(_) => "key_event_at_first",
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
        // Serializing plain integers and arrays into a Vec cannot fail.
        match self.keys {
            None => postcard::to_allocvec(&HeaderWire {
                version: self.version,
                author: self.author.0,
                seq: self.seq,
                backlink: self.backlink.map(|b| b.0),
                timestamp_ms: self.timestamp_ms,
                payload_len: self.payload_len,
                payload_hash: self.payload_hash,
            }),
            Some(k) => postcard::to_allocvec(&KeyedHeaderWire {
                version: self.version,
                author: self.author.0,
                seq: self.seq,
                backlink: self.backlink.map(|b| b.0),
                timestamp_ms: self.timestamp_ms,
                payload_len: self.payload_len,
                payload_hash: self.payload_hash,
                signer: k.signer.map(|s| s.0),
                next: k.next,
                key_event: k.event,
            }),
        }
        .unwrap_or_default()
    }

    /// The key that signs this entry: the header's signer, or the author id
    /// (the inception key) when it names none.
    pub fn signing_key(&self) -> AgentId {
        self.keys.and_then(|k| k.signer).unwrap_or(self.author)
    }

    /// What this entry does to its author's keys (none for version 1).
    pub fn key_event(&self) -> KeyEvent {
        self.keys.map_or(KeyEvent::None, |k| k.event)
    }

    /// This header as a version-2 one committing to `next`, signed by the
    /// key that signs it now: how a chain adopts pre-rotation (its first
    /// entry, or the entry after a version-1 one).
    pub fn committing(mut self, next: [u8; 32]) -> Self {
        let signer = self.keys.and_then(|k| k.signer);
        self.version = KEYED_FORMAT_VERSION;
        self.keys = Some(KeyFields { signer, next, event: KeyEvent::None });
        self
    }

    /// This header committing to `commitment` (a key's
    /// [`AgentKey::commitment`]) if it commits to nothing yet and there is
    /// one; otherwise unchanged.
    pub fn commit_if_none(self, commitment: Option<[u8; 32]>) -> Self {
        match (self.keys, commitment) {
            (None, Some(c)) => self.committing(c),
            _ => self,
        }
    }

    /// This header as a key event: signed by `key` (the pre-committed next
    /// key, for [`KeyEvent::Rotate`]; the key bound by the roster, for
    /// [`KeyEvent::Recover`]), committing to `next`.
    pub fn key_event_by(mut self, event: KeyEvent, key: AgentId, next: [u8; 32]) -> Self {
        let signer = (key != self.author).then_some(key);
        self.version = KEYED_FORMAT_VERSION;
        self.keys = Some(KeyFields { signer, next, event });
        self
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
    /// structurally valid version-1 or version-2 header.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        if bytes.len() > HEADER_BYTES_MAX {
            return Err(DecodeError::TooLong { what: "header", len: bytes.len(), max: HEADER_BYTES_MAX });
        }
        let header = match bytes.first() {
            None => return Err(DecodeError::Truncated("empty header")),
            Some(&FORMAT_VERSION) => {
                let wire: HeaderWire = take_all(bytes)?;
                Header {
                    version: wire.version,
                    author: AgentId(wire.author),
                    seq: wire.seq,
                    backlink: wire.backlink.map(EntryId),
                    timestamp_ms: wire.timestamp_ms,
                    payload_len: wire.payload_len,
                    payload_hash: wire.payload_hash,
                    keys: None,
                }
            }
            Some(&KEYED_FORMAT_VERSION) => {
                let wire: KeyedHeaderWire = take_all(bytes)?;
                Header {
                    version: wire.version,
                    author: AgentId(wire.author),
                    seq: wire.seq,
                    backlink: wire.backlink.map(EntryId),
                    timestamp_ms: wire.timestamp_ms,
                    payload_len: wire.payload_len,
                    payload_hash: wire.payload_hash,
                    keys: Some(KeyFields { signer: wire.signer.map(AgentId), next: wire.next, event: wire.key_event }),
                }
            }
            Some(&v) => return Err(DecodeError::UnsupportedVersion(v)),
        };
        if header.encode() != bytes {
            return Err(DecodeError::NonCanonical);
        }
        header.check_structure()?;
        Ok(header)
    }

    /// Rules a header must meet on its own, independent of any other entry.
    fn check_structure(&self) -> Result<(), DecodeError> {
        debug_assert_eq!(self.version == KEYED_FORMAT_VERSION, self.keys.is_some(), "version and key fields agree");
        if let Some(k) = self.keys {
            if k.signer == Some(self.author) {
                return Err(DecodeError::SignerIsAuthor);
            }
            if self.seq == 1 && k.signer.is_some() {
                return Err(DecodeError::SignerAtFirst);
            }
            if self.seq == 1 && k.event != KeyEvent::None {
                return Err(DecodeError::KeyEventAtFirst(k.event.name()));
            }
        }
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

/// Decode one postcard value that must use every byte.
fn take_all<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, DecodeError> {
    let (wire, rest): (T, &[u8]) = postcard::take_from_bytes(bytes).map_err(|e| match e {
        postcard::Error::DeserializeUnexpectedEnd => DecodeError::Truncated("header ends early"),
        other => DecodeError::Malformed(other.to_string()),
    })?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes(rest.len()));
    }
    Ok(wire)
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
    /// Sign `header` with `key`, which must be the header's signing key
    /// ([`Header::signing_key`]: the author's own, or the signer it names).
    ///
    /// # Panics
    /// If `key` is not the header's signing key or the header is structurally
    /// invalid: both are programming errors in the caller, never input errors.
    pub fn sign(header: Header, key: &AgentKey) -> Self {
        assert_eq!(header.signing_key(), key.public_key(), "signing with a key the header does not name");
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
/// if the local clock went backwards, so timestamps never decrease. After a
/// version-2 entry the header is version 2 with the same signer and
/// commitment (no key event): see [`Header::committing`] and
/// [`Header::key_event_by`] for the others.
pub fn next_header(author: AgentId, prev: Option<&SignedEntry>, now_ms: u64, payload: &[u8]) -> Result<Header, BuildError> {
    next_header_after(author, prev.map(|p| (p.header(), p.id())), now_ms, payload)
}

/// [`next_header`] given the previous header and its id rather than a signed
/// entry, so that a batch of headers can be chained before any is signed (ids do
/// not depend on signatures) and the signatures computed in parallel.
pub fn next_header_after(author: AgentId, prev: Option<(&Header, EntryId)>, now_ms: u64, payload: &[u8]) -> Result<Header, BuildError> {
    let payload_len = u32::try_from(payload.len()).ok().filter(|len| *len <= PAYLOAD_BYTES_MAX).ok_or(BuildError::PayloadTooLarge { len: payload.len() })?;
    let (seq, backlink, timestamp_ms, keys) = match prev {
        None => (1, None, now_ms, None),
        Some((p, id)) => {
            let seq = p.seq.checked_add(1).ok_or(BuildError::ChainFull(p.seq))?;
            let keys = p.keys.map(|k| KeyFields { event: KeyEvent::None, ..k });
            (seq, Some(id), now_ms.max(p.timestamp_ms), keys)
        }
    };
    let version = if keys.is_some() { KEYED_FORMAT_VERSION } else { FORMAT_VERSION };
    Ok(Header { version, author, seq, backlink, timestamp_ms, payload_len, payload_hash: sha256(payload), keys })
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
            keys: None,
        };
        assert_eq!(h.encode().len(), 123, "version 1");
        let h = h.key_event_by(KeyEvent::Rotate, AgentId([0xfe; 32]), [0xff; 32]);
        assert_eq!(h.encode().len(), HEADER_BYTES_MAX, "version 2");
    }

    #[test]
    fn rejects_trailing_overlong_truncated_and_unknown_version() {
        let (_, e1, _) = sample();
        let hb = e1.header_bytes().to_vec();
        let mut trailing = hb.clone();
        trailing.push(0);
        assert_eq!(Header::decode(&trailing), Err(DecodeError::TrailingBytes(1)));
        assert!(matches!(Header::decode(&hb[..hb.len() - 1]), Err(DecodeError::Truncated(_))));
        let mut v3 = hb.clone();
        v3[0] = 3;
        assert_eq!(Header::decode(&v3), Err(DecodeError::UnsupportedVersion(3)));
        let mut v2 = hb.clone();
        v2[0] = 2;
        assert!(matches!(Header::decode(&v2), Err(DecodeError::Truncated(_))), "version 2 needs its key fields");
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
