//! Column families and key layouts. See `protocol-spec/storage.md`.
//!
//! All integers are big-endian so that RocksDB's bytewise order is numeric order.
//!
//! | column family | key                                   | value                       |
//! |---------------|---------------------------------------|-----------------------------|
//! | `meta`        | `format`                              | [`crate::STORE_FORMAT`]     |
//! | `entries`     | author(32) seq(8) id(32)              | signed entry bytes          |
//! | `payloads`    | author(32) seq(8) id(32)              | payload bytes               |
//! | `ids`         | id(32)                                | author(32) seq(8) [signer(32)] |
//! | `heads`       | author(32)                            | head seq(8) id(32) count(8) |
//! | `forked_tips` | author(32) seq(8) id(32)              | empty (authors with 2+ tips)|
//! | `key_events`  | author(32) seq(8) id(32)              | event(1): 1 rotate, 2 recover |
//! | `redactions`  | author(32) seq(8) id(32)              | at_ms(8) [01 residue]       |
//! | `forks`       | author(32) seq(8)                     | fork proof bytes            |
//! | `missing`     | author(32) seq(8) id(32)              | empty                       |

use agora_core::import::TipSummary;
use agora_core::verify::EntryRef;
use agora_core::{AgentId, EntryId, KeyEvent};

pub(crate) const CF_META: &str = "meta";
pub(crate) const CF_ENTRIES: &str = "entries";
pub(crate) const CF_PAYLOADS: &str = "payloads";
pub(crate) const CF_REDACTIONS: &str = "redactions";
pub(crate) const CF_IDS: &str = "ids";
pub(crate) const CF_HEADS: &str = "heads";
pub(crate) const CF_FORKS: &str = "forks";
pub(crate) const CF_MISSING: &str = "missing";
pub(crate) const CF_FORKED_TIPS: &str = "forked_tips";
pub(crate) const CF_KEY_EVENTS: &str = "key_events";

pub(crate) const META_FORMAT_KEY: &[u8] = b"format";

/// Length of an entry key.
pub(crate) const ENTRY_KEY_LEN: usize = 72;

/// author || seq || id
pub(crate) fn entry_key(author: &AgentId, seq: u64, id: &EntryId) -> [u8; ENTRY_KEY_LEN] {
    let mut k = [0u8; ENTRY_KEY_LEN];
    k[..32].copy_from_slice(author.as_bytes());
    k[32..40].copy_from_slice(&seq.to_be_bytes());
    k[40..].copy_from_slice(id.as_bytes());
    k
}

/// author || seq: prefix of every entry at that position (forks share it).
pub(crate) fn seq_prefix(author: &AgentId, seq: u64) -> [u8; 40] {
    let mut k = [0u8; 40];
    k[..32].copy_from_slice(author.as_bytes());
    k[32..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// Split an entry key. `None` if it has the wrong length.
pub(crate) fn split_entry_key(key: &[u8]) -> Option<(AgentId, u64, EntryId)> {
    if key.len() != ENTRY_KEY_LEN {
        return None;
    }
    let author = AgentId(key[..32].try_into().ok()?);
    let seq = u64::from_be_bytes(key[32..40].try_into().ok()?);
    let id = EntryId(key[40..].try_into().ok()?);
    Some((author, seq, id))
}

/// The `heads` value: the author's head (its tip at the highest seq; of
/// several there, the first by id), seq(8) || id(32), then the number of its
/// tips(8). One row per author, overwritten on each write, so an unforked
/// chain's appends leave no tombstones; the tips of an author with more than
/// one are listed one row each in `forked_tips`.
pub(crate) fn encode_heads(summary: &TipSummary) -> [u8; 48] {
    let mut out = [0u8; 48];
    out[..8].copy_from_slice(&summary.head.seq.to_be_bytes());
    out[8..40].copy_from_slice(summary.head.id.as_bytes());
    out[40..].copy_from_slice(&summary.count.to_be_bytes());
    out
}

/// Decode a `heads` value. `None` if malformed (wrong length, no tip).
pub(crate) fn decode_heads(author: &AgentId, bytes: &[u8]) -> Option<TipSummary> {
    let bytes: &[u8; 48] = bytes.try_into().ok()?;
    let seq = u64::from_be_bytes(bytes[..8].try_into().ok()?);
    let id = EntryId(bytes[8..40].try_into().ok()?);
    let count = u64::from_be_bytes(bytes[40..].try_into().ok()?);
    (count >= 1 && seq >= 1).then_some(TipSummary { head: EntryRef { author: *author, seq, id }, count })
}

/// Decode a `heads` value of format 2 (every tip, seq(8) || id(32) each,
/// sorted by (seq, id)), for the migration to format 3. `None` if malformed.
pub(crate) fn decode_heads_2(author: &AgentId, bytes: &[u8]) -> Option<Vec<EntryRef>> {
    if !bytes.len().is_multiple_of(40) || bytes.is_empty() {
        return None;
    }
    let tips: Vec<EntryRef> = bytes
        .chunks_exact(40)
        .map(|c| {
            let seq = u64::from_be_bytes(c[..8].try_into().ok()?);
            let id = EntryId(c[8..].try_into().ok()?);
            Some(EntryRef { author: *author, seq, id })
        })
        .collect::<Option<_>>()?;
    tips.windows(2).all(|w| (w[0].seq, w[0].id) < (w[1].seq, w[1].id)).then_some(tips)
}

/// author || seq: the one fork proof of a forked position. Stores written
/// before format 2 may also hold pairwise keys `author || seq || id_a || id_b`;
/// readers take one proof per (author, seq) prefix whatever the key's length.
pub(crate) fn fork_key(author: &AgentId, seq: u64) -> [u8; 40] {
    seq_prefix(author, seq)
}

/// The value of an `ids` row: author || seq, then the key that signed the
/// entry (`Header::signing_key`) when it is not the author id, so that
/// "which key signed this entry" is the one read that finds it.
pub(crate) fn id_value(author: &AgentId, seq: u64, signer: &AgentId) -> IdValue {
    let mut bytes = [0u8; 72];
    bytes[..40].copy_from_slice(&seq_prefix(author, seq));
    let len = if signer == author {
        40
    } else {
        bytes[40..].copy_from_slice(signer.as_bytes());
        72
    };
    IdValue { bytes, len }
}

/// An `ids` value: 40 or 72 bytes.
pub(crate) struct IdValue {
    bytes: [u8; 72],
    len: usize,
}

impl AsRef<[u8]> for IdValue {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Decode an `ids` value: (author, seq, the key that signed the entry).
/// `None` if malformed.
pub(crate) fn decode_id_value(bytes: &[u8]) -> Option<(AgentId, u64, AgentId)> {
    let author = AgentId(bytes.get(..32)?.try_into().ok()?);
    let seq = u64::from_be_bytes(bytes.get(32..40)?.try_into().ok()?);
    let signer = match bytes.len() {
        40 => author,
        72 => AgentId(bytes[40..].try_into().ok()?),
        _ => return None,
    };
    Some((author, seq, signer))
}

/// The smallest key greater than every key starting with `prefix`, if any.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The value of a `key_events` row: the header's key event number (1
/// rotate, 2 recover); `None` for an entry with no key event, which has no row.
pub(crate) fn key_event_value(event: KeyEvent) -> Option<[u8; 1]> {
    match event {
        KeyEvent::None => None,
        KeyEvent::Rotate => Some([1]),
        KeyEvent::Recover => Some([2]),
    }
}

/// Decode a `key_events` value. `None` if malformed.
pub(crate) fn decode_key_event(bytes: &[u8]) -> Option<KeyEvent> {
    match bytes {
        [1] => Some(KeyEvent::Rotate),
        [2] => Some(KeyEvent::Recover),
        _ => None,
    }
}
