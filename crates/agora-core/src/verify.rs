//! The chain rules. Each check names the entry (author, seq, id) and the rule it
//! broke, so a failure can be located without any other context.
//!
//! - [`verify_signature`] / [`verify_signatures`]: the header is signed by its
//!   author under the rules of [`crate::signature`]. The batch form verifies
//!   [`VERIFY_BATCH_LEN`] signatures at a time and, if a batch fails, checks each
//!   of its signatures to name the first bad entry.
//! - [`verify_payload`]: the payload has the header's length and hash.
//! - [`verify_link`]: an entry follows its predecessor (same author, seq + 1,
//!   backlink = predecessor's id, timestamp not earlier) under the key rules
//!   of `protocol-spec/keys.md` (the current key signs; only a rotation by
//!   the pre-committed key changes it).

use crate::entry::{DecodeError, ENTRY_SIGNING_DOMAIN, KeyEvent, SignedEntry, key_commitment};
pub use crate::id::EntryRef;
use crate::id::{AgentId, EntryId};
use crate::limits::VERIFY_BATCH_LEN;
use crate::sha256;
use crate::signature::{self, BatchItem, PublicKey, SignatureError};

/// The rule an entry broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rule {
    /// The bytes are not a canonical signed entry.
    #[error("encoding: {0}")]
    Encoding(#[from] DecodeError),
    /// The signature or the author key is invalid.
    #[error("signature: {0}")]
    Signature(#[from] SignatureError),
    /// The payload's length differs from the header's `payload_len`.
    #[error("payload length: header says {expected} bytes, payload has {actual}")]
    PayloadLength {
        /// From the header.
        expected: u32,
        /// Of the payload.
        actual: usize,
    },
    /// The payload's SHA-256 differs from the header's `payload_hash`.
    #[error("payload hash: payload does not match the hash in the header")]
    PayloadHash,
    /// The entry's author differs from its predecessor's.
    #[error("author: predecessor is by {0}")]
    AuthorChanged(AgentId),
    /// The entry's seq is not its predecessor's plus one.
    #[error("seq continuity: expected seq {expected}, found {found}")]
    Seq {
        /// Predecessor's seq + 1.
        expected: u64,
        /// This entry's seq.
        found: u64,
    },
    /// The backlink is not the predecessor's id.
    #[error("backlink: expected {expected}, found {found}")]
    Backlink {
        /// Predecessor's id.
        expected: EntryId,
        /// This entry's backlink.
        found: String,
    },
    /// The timestamp is earlier than the predecessor's.
    #[error("timestamp: {found} ms is earlier than the predecessor's {previous} ms")]
    TimestampBackwards {
        /// Predecessor's timestamp.
        previous: u64,
        /// This entry's timestamp.
        found: u64,
    },
    /// A version-1 entry after a version-2 one: once an agent has committed
    /// to a next key, every later entry commits.
    #[error("key downgrade: a version-1 entry after a version-2 one")]
    KeyDowngrade,
    /// An entry that is no key event is signed by another key than its
    /// predecessor's (the current key).
    #[error("signer: the current key is {expected}, the entry is signed by {found}")]
    Signer {
        /// The predecessor's signing key.
        expected: AgentId,
        /// This entry's.
        found: AgentId,
    },
    /// An entry that is no key event changes the commitment to the next key.
    #[error("next changed: only a key event changes the commitment to the next key")]
    NextChanged,
    /// A rotation not signed by the key its predecessor committed to.
    #[error("rotation key: {0}")]
    RotationKey(&'static str),
    /// A recovery signed by the agent's inception key (no `signer`): it
    /// must be signed by a new key, the one the roster binds.
    #[error("recovery key: a recovery is signed by a new key (its header names a signer)")]
    RecoveryKey,
}

impl Rule {
    /// A stable, machine-readable name for the rule (used in test vectors and
    /// in JSON error output).
    pub fn code(&self) -> &'static str {
        match self {
            Rule::Encoding(e) => e.code(),
            Rule::Signature(e) => e.code(),
            Rule::PayloadLength { .. } => "payload_length",
            Rule::PayloadHash => "payload_hash",
            Rule::AuthorChanged(_) => "author_changed",
            Rule::Seq { .. } => "seq",
            Rule::Backlink { .. } => "backlink",
            Rule::TimestampBackwards { .. } => "timestamp_backwards",
            Rule::KeyDowngrade => "key_downgrade",
            Rule::Signer { .. } => "signer",
            Rule::NextChanged => "next_changed",
            Rule::RotationKey(_) => "rotation_key",
            Rule::RecoveryKey => "recovery_key",
        }
    }
}

/// An entry that broke a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry} breaks the {rule} rule")]
pub struct VerifyError {
    /// Which entry.
    pub entry: EntryRef,
    /// Which rule.
    pub rule: Rule,
}

impl VerifyError {
    fn new(entry: &SignedEntry, rule: impl Into<Rule>) -> Self {
        Self { entry: entry.entry_ref(), rule: rule.into() }
    }
}

/// The entry's signing key (its author's, or the signer its header names).
fn author_key(entry: &SignedEntry) -> Result<PublicKey, VerifyError> {
    PublicKey::from_bytes(entry.header().signing_key().as_bytes()).map_err(|e| VerifyError::new(entry, e))
}

/// Verify one entry's signature.
pub fn verify_signature(entry: &SignedEntry) -> Result<(), VerifyError> {
    let key = author_key(entry)?;
    signature::verify(&key, &[ENTRY_SIGNING_DOMAIN, entry.header_bytes()], entry.signature()).map_err(|e| VerifyError::new(entry, e))
}

/// The entries (id and signature) whose signatures this thread found valid,
/// once it asked to remember them ([`remember_verified`]).
struct Verified {
    seen: std::collections::HashSet<(EntryId, [u8; 64])>,
    capacity: usize,
}

thread_local! {
    static VERIFIED: std::cell::RefCell<Option<Verified>> = const { std::cell::RefCell::new(None) };
}

/// Remember on this thread, from now on, up to `capacity` entries whose
/// signatures were found valid, so that the same signed entry checked again
/// on this thread (by another simulated node, say) is not verified again: an
/// entry's id is the hash of its header, so the same id and signature are the
/// same check, with the same answer. The table is allocated here, whole, and
/// emptied when full, so checking allocates nothing after this call and
/// every answer is what the full check gives. `capacity` 0 forgets
/// everything and stops remembering. The node never calls it: its threads
/// verify what they receive once; the simulator does, since its nodes share
/// one thread.
pub fn remember_verified(capacity: usize) {
    VERIFIED.with(|v| {
        *v.borrow_mut() = (capacity > 0).then(|| Verified { seen: std::collections::HashSet::with_capacity(capacity), capacity });
    });
}

/// Was `entry`'s signature found valid on this thread (and remembered)?
fn verified_before(entry: &SignedEntry) -> bool {
    VERIFIED.with(|v| v.borrow().as_ref().is_some_and(|v| v.seen.contains(&(entry.id(), *entry.signature()))))
}

/// Remember that these entries' signatures are valid, if this thread remembers.
fn remember(entries: &[&SignedEntry]) {
    VERIFIED.with(|v| {
        if let Some(v) = v.borrow_mut().as_mut() {
            for e in entries {
                if v.seen.len() >= v.capacity {
                    v.seen.clear();
                }
                v.seen.insert((e.id(), *e.signature()));
            }
        }
    });
}

/// Verify the signatures of many entries with batch verification. Returns the
/// first invalid entry, in input order, if any.
pub fn verify_signatures(entries: &[&SignedEntry]) -> Result<(), VerifyError> {
    if VERIFIED.with(|v| v.borrow().is_some()) {
        let fresh: Vec<&SignedEntry> = entries.iter().copied().filter(|e| !verified_before(e)).collect();
        verify_signatures_fully(&fresh)?;
        remember(&fresh);
        return Ok(());
    }
    verify_signatures_fully(entries)
}

fn verify_signatures_fully(entries: &[&SignedEntry]) -> Result<(), VerifyError> {
    // Keys are decompressed once per signing key per call, not once per entry.
    let mut keys: Vec<(AgentId, PublicKey)> = Vec::new();
    for chunk in entries.chunks(VERIFY_BATCH_LEN) {
        let mut chunk_keys = Vec::with_capacity(chunk.len());
        for (i, entry) in chunk.iter().enumerate() {
            let author = entry.header().signing_key();
            let key = match keys.iter().find(|(a, _)| *a == author) {
                Some((_, k)) => *k,
                None => match author_key(entry) {
                    Ok(k) => {
                        keys.push((author, k));
                        k
                    }
                    Err(e) => {
                        // An earlier entry of the chunk (its key is valid) may
                        // be badly signed: it is the first invalid one.
                        verify_signatures_fully(&chunk[..i])?;
                        return Err(e);
                    }
                },
            };
            chunk_keys.push(key);
        }
        let items: Vec<BatchItem<'_>> = chunk
            .iter()
            .zip(&chunk_keys)
            .map(|(entry, key)| BatchItem { key, message: [ENTRY_SIGNING_DOMAIN, entry.header_bytes()], signature: entry.signature() })
            .collect();
        if signature::verify_batch(&items).is_err() {
            // Find the culprit; the batch says only that one exists.
            for entry in chunk {
                verify_signature(entry)?;
            }
            // Unreachable when single and batch rules agree; keep the verdict safe.
            return Err(VerifyError::new(chunk[0], SignatureError::Equation));
        }
    }
    Ok(())
}

/// An entry whose signature has been verified. Only [`check_signatures`]
/// makes one, so a function that takes it (the store's import of entries a
/// peer sent, which the replicator verified in batches) can skip checking the
/// signature again without trusting its caller's word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureChecked(SignedEntry);

impl SignatureChecked {
    /// The entry.
    pub fn entry(&self) -> &SignedEntry {
        &self.0
    }
    /// The entry, giving up the proof of verification.
    pub fn into_entry(self) -> SignedEntry {
        self.0
    }
}

impl std::ops::Deref for SignatureChecked {
    type Target = SignedEntry;
    fn deref(&self) -> &SignedEntry {
        &self.0
    }
}

/// Verify signatures in batches of [`VERIFY_BATCH_LEN`] and wrap each entry
/// as [`SignatureChecked`]. Returns the first invalid entry, in input order.
pub fn check_signatures(entries: Vec<SignedEntry>) -> Result<Vec<SignatureChecked>, VerifyError> {
    let refs: Vec<&SignedEntry> = entries.iter().collect();
    verify_signatures(&refs)?;
    Ok(entries.into_iter().map(SignatureChecked).collect())
}

/// An entry whose signature was verified and whose payload, when it came
/// with one, was checked against the header's length and hash: what a
/// replicator hands to the store, which then checks neither again (only the
/// link to what it holds). Only [`check_entries`] makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedEntry {
    entry: SignatureChecked,
    payload: Option<Vec<u8>>,
}

impl CheckedEntry {
    /// The entry.
    pub fn entry(&self) -> &SignatureChecked {
        &self.entry
    }
    /// Its payload, when it came with one (checked).
    pub fn payload(&self) -> Option<&[u8]> {
        self.payload.as_deref()
    }
    /// The entry and its payload, giving up the proof of verification of
    /// the payload (the entry keeps its own).
    pub fn into_parts(self) -> (SignatureChecked, Option<Vec<u8>>) {
        (self.entry, self.payload)
    }
}

impl std::ops::Deref for CheckedEntry {
    type Target = SignedEntry;
    fn deref(&self) -> &SignedEntry {
        &self.entry
    }
}

/// Check payloads against their headers and signatures in batches (see
/// [`check_signatures`]): the stateless, CPU-heavy part of accepting entries
/// from outside. The error names the first bad entry, payloads first.
pub fn check_entries(entries: Vec<(SignedEntry, Option<Vec<u8>>)>) -> Result<Vec<CheckedEntry>, VerifyError> {
    for (e, p) in &entries {
        if let Some(p) = p {
            verify_payload(e, p)?;
        }
    }
    let (signed, payloads): (Vec<SignedEntry>, Vec<Option<Vec<u8>>>) = entries.into_iter().unzip();
    Ok(check_signatures(signed)?.into_iter().zip(payloads).map(|(entry, payload)| CheckedEntry { entry, payload }).collect())
}

/// Check that `payload` is the one `entry` binds.
pub fn verify_payload(entry: &SignedEntry, payload: &[u8]) -> Result<(), VerifyError> {
    let header = entry.header();
    if payload.len() != header.payload_len as usize {
        return Err(VerifyError::new(entry, Rule::PayloadLength { expected: header.payload_len, actual: payload.len() }));
    }
    if sha256(payload) != header.payload_hash {
        return Err(VerifyError::new(entry, Rule::PayloadHash));
    }
    Ok(())
}

/// Check that `next` directly follows `prev` in one author's chain, keys
/// included (`protocol-spec/keys.md`): a version-2 chain stays version 2,
/// the current key signs and the commitment stays unless the entry is a key
/// event, and a rotation is signed by the key its predecessor committed to.
pub fn verify_link(prev: &SignedEntry, next: &SignedEntry) -> Result<(), VerifyError> {
    let (p, n) = (prev.header(), next.header());
    if n.author != p.author {
        return Err(VerifyError::new(next, Rule::AuthorChanged(p.author)));
    }
    if Some(n.seq) != p.seq.checked_add(1) {
        return Err(VerifyError::new(next, Rule::Seq { expected: p.seq.saturating_add(1), found: n.seq }));
    }
    if n.backlink != Some(prev.id()) {
        let found = n.backlink.map_or_else(|| "none".to_string(), |b| b.to_string());
        return Err(VerifyError::new(next, Rule::Backlink { expected: prev.id(), found }));
    }
    if n.timestamp_ms < p.timestamp_ms {
        return Err(VerifyError::new(next, Rule::TimestampBackwards { previous: p.timestamp_ms, found: n.timestamp_ms }));
    }
    verify_key_step(prev, next)
}

/// The key rules between an entry and its predecessor.
fn verify_key_step(prev: &SignedEntry, next: &SignedEntry) -> Result<(), VerifyError> {
    let (p, n) = (prev.header(), next.header());
    let Some(keys) = n.keys else {
        return match p.keys {
            Some(_) => Err(VerifyError::new(next, Rule::KeyDowngrade)),
            None => Ok(()),
        };
    };
    match keys.event {
        KeyEvent::None => {
            if n.signing_key() != p.signing_key() {
                return Err(VerifyError::new(next, Rule::Signer { expected: p.signing_key(), found: n.signing_key() }));
            }
            if p.keys.is_some_and(|pk| pk.next != keys.next) {
                return Err(VerifyError::new(next, Rule::NextChanged));
            }
        }
        KeyEvent::Rotate => match p.keys {
            None => return Err(VerifyError::new(next, Rule::RotationKey("the predecessor commits to no next key"))),
            Some(pk) if key_commitment(&n.signing_key()) != pk.next => {
                return Err(VerifyError::new(next, Rule::RotationKey("not signed by the key the predecessor committed to")));
            }
            Some(_) => {}
        },
        // Both keys are lost: nothing the predecessor committed to can sign.
        // Whether the new key counts is the roster's binding (key_bounds).
        KeyEvent::Recover if keys.signer.is_none() => return Err(VerifyError::new(next, Rule::RecoveryKey)),
        KeyEvent::Recover => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Header, next_header};
    use crate::identity::AgentKey;

    fn chain(key: &AgentKey, n: usize) -> Vec<SignedEntry> {
        let mut out: Vec<SignedEntry> = Vec::new();
        for i in 0..n {
            let h = next_header(key.agent_id(), out.last(), 1000 + i as u64, format!("p{i}").as_bytes()).unwrap();
            out.push(SignedEntry::sign(h, key));
        }
        out
    }

    #[test]
    fn valid_chain_verifies() {
        let key = AgentKey::from_seed([2; 32]);
        let c = chain(&key, 150);
        let refs: Vec<_> = c.iter().collect();
        verify_signatures(&refs).unwrap();
        for w in c.windows(2) {
            verify_link(&w[0], &w[1]).unwrap();
        }
        verify_payload(&c[3], b"p3").unwrap();
    }

    #[test]
    fn batch_names_the_bad_entry() {
        let key = AgentKey::from_seed([2; 32]);
        let c = chain(&key, 100);
        let mut bytes = c[70].encode();
        let last = bytes.len() - 1;
        bytes[last - 40] ^= 0x01; // inside S
        let bad = SignedEntry::decode(&bytes).unwrap();
        let mut refs: Vec<_> = c.iter().collect();
        refs[70] = &bad;
        let err = verify_signatures(&refs).unwrap_err();
        assert_eq!(err.entry.seq, 71);
        assert!(matches!(err.rule, Rule::Signature(_)));
    }

    /// A thread that remembers valid signatures answers every check as the
    /// full check does: a remembered entry passes, the same header with a
    /// changed signature is still refused, a bad batch still names its first
    /// bad entry, and a full table starts over.
    #[test]
    fn remembered_signatures_give_the_full_checks_answers() {
        let key = AgentKey::from_seed([2; 32]);
        let c = chain(&key, 5);
        let refs: Vec<_> = c.iter().collect();
        remember_verified(3);
        verify_signatures(&refs).unwrap();
        verify_signatures(&refs).unwrap();
        let mut bytes = c[2].encode();
        let n = bytes.len();
        bytes[n - 40] ^= 1; // inside S
        let changed = SignedEntry::decode(&bytes).unwrap();
        assert_eq!(changed.id(), c[2].id(), "the same header");
        let err = verify_signatures(&[&c[0], &changed, &c[4]]).unwrap_err();
        assert_eq!((err.entry.seq, matches!(err.rule, Rule::Signature(_))), (3, true));
        assert!(verify_signatures(&[&changed]).is_err(), "a refused signature is never remembered");
        remember_verified(0);
        assert!(verify_signatures(&[&changed]).is_err());
        verify_signatures(&refs).unwrap();
    }

    #[test]
    fn a_header_signed_by_another_key_fails() {
        let alice = AgentKey::from_seed([2; 32]);
        let mallory = AgentKey::from_seed([3; 32]);
        let h: Header = next_header(mallory.agent_id(), None, 0, b"x").unwrap();
        let signed = SignedEntry::sign(h, &mallory);
        // Rewrite the author to alice, keep mallory's signature.
        let mut bytes = signed.encode();
        bytes[1..33].copy_from_slice(alice.agent_id().as_bytes());
        let forged = SignedEntry::decode(&bytes).unwrap();
        assert!(matches!(verify_signature(&forged).unwrap_err().rule, Rule::Signature(SignatureError::Equation)));
    }

    /// The key rules of `protocol-spec/keys.md`, each refusal by its code: a
    /// chain that commits, rotates to the committed key, continues under it;
    /// the thief's variants (the old key after the rotation, a rotation by
    /// the current key, by a key of its own, a changed commitment, a version-1
    /// entry) are refused.
    #[test]
    fn key_rules() {
        use crate::entry::{KeyEvent, key_commitment, next_header_after};
        let k0 = AgentKey::from_seed([10; 32]);
        let k1 = AgentKey::from_seed([11; 32]);
        let k2 = AgentKey::from_seed([12; 32]);
        let thief = AgentKey::from_seed([13; 32]);
        let a = k0.agent_id();
        let next = |prev: &SignedEntry, ts: u64| next_header_after(a, Some((prev.header(), prev.id())), ts, b"x").unwrap();
        let e1 = SignedEntry::sign(next_header(a, None, 1, b"x").unwrap().committing(key_commitment(&k1.agent_id())), &k0);
        let e2 = SignedEntry::sign(next(&e1, 2), &k0);
        verify_link(&e1, &e2).unwrap();
        assert_eq!(e2.header().version, 2, "a committed chain stays version 2");
        let r3 = SignedEntry::sign(next(&e2, 3).key_event_by(KeyEvent::Rotate, k1.agent_id(), key_commitment(&k2.agent_id())), &k1);
        verify_link(&e2, &r3).unwrap();
        verify_signature(&r3).unwrap();
        let e4 = SignedEntry::sign(next(&r3, 4), &k1);
        verify_link(&r3, &e4).unwrap();
        assert_eq!(e4.header().signing_key(), k1.agent_id());
        let code = |p: &SignedEntry, n: &SignedEntry| verify_link(p, n).unwrap_err().rule.code();

        // The old key after the rotation (the thief holding it).
        let mut h = next(&r3, 4);
        h.keys = h.keys.map(|k| crate::KeyFields { signer: None, ..k });
        assert_eq!(code(&r3, &SignedEntry::sign(h, &k0)), "signer");
        // A rotation signed by the current key, or by a key of the thief's.
        let by_current = next(&e2, 3).key_event_by(KeyEvent::Rotate, a, key_commitment(&thief.agent_id()));
        assert_eq!(code(&e2, &SignedEntry::sign(by_current, &k0)), "rotation_key");
        let by_thief = next(&e2, 3).key_event_by(KeyEvent::Rotate, thief.agent_id(), key_commitment(&thief.agent_id()));
        assert_eq!(code(&e2, &SignedEntry::sign(by_thief, &thief)), "rotation_key");
        // The current key changing the commitment without a key event.
        let mut h = next(&e2, 3);
        h.keys = h.keys.map(|k| crate::KeyFields { next: key_commitment(&thief.agent_id()), ..k });
        assert_eq!(code(&e2, &SignedEntry::sign(h, &k0)), "next_changed");
        // A version-1 entry after a version-2 one.
        let mut h = next(&e2, 3);
        (h.version, h.keys) = (1, None);
        assert_eq!(code(&e2, &SignedEntry::sign(h, &k0)), "key_downgrade");
        // A rotation in a chain that committed to nothing.
        let v1 = chain(&k0, 2);
        let h = next_header(a, Some(&v1[1]), 3, b"x").unwrap().key_event_by(KeyEvent::Rotate, k1.agent_id(), [0; 32]);
        assert_eq!(code(&v1[1], &SignedEntry::sign(h, &k1)), "rotation_key");
        // A version-1 chain adopts pre-rotation with its current key.
        let adopt = SignedEntry::sign(next_header(a, Some(&v1[1]), 3, b"x").unwrap().committing([7; 32]), &k0);
        verify_link(&v1[1], &adopt).unwrap();
        // The signature is checked against the signer the header names:
        // the author's own key signing a header that names another fails.
        let mut bytes = e4.encode();
        let n = bytes.len();
        bytes[n - 64..].copy_from_slice(&k0.sign_with_domain(ENTRY_SIGNING_DOMAIN, e4.header_bytes()));
        assert_eq!(verify_signature(&SignedEntry::decode(&bytes).unwrap()).unwrap_err().rule.code(), "bad_signature");
    }

    /// A recovery (`protocol-spec/keys.md`, "Recovery"): signed by a new
    /// key, whatever the predecessor committed to, after a version-1 or a
    /// version-2 entry, and the chain goes on under it; one that names no
    /// signer (the inception key) is refused, and none is allowed at seq 1.
    #[test]
    fn a_recovery_is_signed_by_a_new_key_whatever_the_commitment() {
        use crate::entry::{KeyEvent, key_commitment, next_header_after};
        let k0 = AgentKey::from_seed([20; 32]);
        let k1 = AgentKey::from_seed([21; 32]);
        let granted = AgentKey::from_seed([22; 32]);
        let a = k0.agent_id();
        let next = |prev: &SignedEntry, ts: u64| next_header_after(a, Some((prev.header(), prev.id())), ts, b"x").unwrap();
        let e1 = SignedEntry::sign(next_header(a, None, 1, b"x").unwrap().committing(key_commitment(&k1.agent_id())), &k0);
        let r2 = SignedEntry::sign(next(&e1, 2).key_event_by(KeyEvent::Recover, granted.agent_id(), [5; 32]), &granted);
        verify_link(&e1, &r2).unwrap();
        verify_signature(&r2).unwrap();
        let e3 = SignedEntry::sign(next(&r2, 3), &granted);
        verify_link(&r2, &e3).unwrap();
        // After a version-1 entry too (a chain that never committed).
        let v1 = chain(&k0, 2);
        let after_v1 = SignedEntry::sign(next_header(a, Some(&v1[1]), 3, b"x").unwrap().key_event_by(KeyEvent::Recover, granted.agent_id(), [5; 32]), &granted);
        verify_link(&v1[1], &after_v1).unwrap();
        // Signed by the inception key: refused.
        let by_author = next(&e1, 2).key_event_by(KeyEvent::Recover, a, [5; 32]);
        assert_eq!(verify_link(&e1, &SignedEntry::sign(by_author, &k0)).unwrap_err().rule.code(), "recovery_key");
        // Never at seq 1.
        let mut first = next_header(a, None, 1, b"x").unwrap().committing([1; 32]);
        first.keys = first.keys.map(|k| crate::KeyFields { event: KeyEvent::Recover, ..k });
        assert_eq!(Header::decode(&first.encode()).unwrap_err().code(), "key_event_at_first");
    }

    #[test]
    fn link_rules() {
        let key = AgentKey::from_seed([2; 32]);
        let c = chain(&key, 3);
        assert!(matches!(verify_link(&c[0], &c[2]).unwrap_err().rule, Rule::Seq { expected: 2, found: 3 }));
        let other = chain(&AgentKey::from_seed([4; 32]), 2);
        assert!(matches!(verify_link(&c[0], &other[1]).unwrap_err().rule, Rule::AuthorChanged(_)));
        // Same seq continuity but a backlink to something else.
        let mut h = c[1].header().clone();
        h.backlink = Some(EntryId([9; 32]));
        let wrong = SignedEntry::sign(h, &key);
        assert!(matches!(verify_link(&c[0], &wrong).unwrap_err().rule, Rule::Backlink { .. }));
        let mut h = c[1].header().clone();
        h.timestamp_ms = 1;
        let early = SignedEntry::sign(h, &key);
        assert!(matches!(verify_link(&c[0], &early).unwrap_err().rule, Rule::TimestampBackwards { .. }));
        assert!(matches!(verify_payload(&c[0], b"p1").unwrap_err().rule, Rule::PayloadHash));
        assert!(matches!(verify_payload(&c[0], b"p10").unwrap_err().rule, Rule::PayloadLength { .. }));
    }
}
