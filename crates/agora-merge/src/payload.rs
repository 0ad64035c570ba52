//! The merge-event payload format.
//!
//! ```text
//! merge payload = "agmg" (4 ASCII bytes) || version (1 byte, = 1) || postcard(MergeEvent)
//! ```
//!
//! Merge events are their own payload format, beside reasoning events
//! (`"agev"`, see `agora_graph::event`): they say what an agent thinks of other
//! chains (accept, dispute, withdraw) or of its own (fork resolution), not a
//! step of reasoning. The enum's variant index is the kind code on the wire;
//! codes are stable and new kinds are only ever appended. Decoding is canonical
//! exactly as for reasoning events: `take_from_bytes`, no trailing bytes,
//! re-encoding must give back the input, limits checked, and an unknown kind
//! code or version is a typed error. See `protocol-spec/merge.md`.

use agora_core::canonical::{FrameError, Framing};
use agora_core::{AgentId, EntryId};
use serde::{Deserialize, Serialize};

/// First bytes of every merge-event payload (declared in `agora_core`, where
/// the reasoning graph reads it too).
pub use agora_core::payload::MERGE_MAGIC;
/// The only merge-event format version this implementation reads and writes.
pub const MERGE_VERSION: u8 = 1;
/// Longest text field (a dispute's reason or counter-claim), in bytes.
pub const TEXT_BYTES_MAX: usize = 16 * 1024;
/// Number of kinds defined in version 1.
pub const KIND_COUNT: u32 = 4;

/// `"agmg" || version || postcard(MergeEvent)`. Text fields bound the whole
/// payload: a valid event is far below `2 × TEXT_BYTES_MAX + 64`, so anything
/// longer is refused before postcard allocates its strings.
pub const MERGE_FRAMING: Framing = Framing { magic: MERGE_MAGIC, version: MERGE_VERSION, body_max: 2 * TEXT_BYTES_MAX + 64, kinds: Some(KIND_COUNT) };

impl From<FrameError> for MergeDecodeError {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::NoMagic => MergeDecodeError::NotMerge,
            FrameError::Version(v) => MergeDecodeError::UnknownVersion(v),
            FrameError::UnknownKind(k) => MergeDecodeError::UnknownKind(k),
            FrameError::TooLarge { len, max } => MergeDecodeError::Limit(format!("merge event body is {len} bytes, more than {max}")),
            FrameError::NoVersion | FrameError::Malformed(_) => MergeDecodeError::Malformed(e.to_string()),
        }
    }
}

/// One merge event. It goes on the signer's own chain; it is unilateral
/// (nothing is co-signed). See `protocol-spec/merge.md` for each kind's
/// validity rules and effect.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum MergeEvent {
    /// 0: the signer endorses `author`'s chain from seq 1 through `up_to_seq`,
    /// whose entry there is `head`.
    Accept {
        /// Whose chain.
        author: AgentId,
        /// Last seq endorsed (≥ 1).
        up_to_seq: u64,
        /// Id of `author`'s entry at `up_to_seq`: pins the branch.
        head: EntryId,
    },
    /// 1: the signer disputes exactly one event (of another agent).
    Dispute {
        /// The disputed entry.
        target: EntryId,
        /// Why (at most [`TEXT_BYTES_MAX`] bytes).
        reason: String,
        /// What the signer holds instead, if anything.
        counter_claim: Option<String>,
    },
    /// 2: the signer withdraws its own earlier dispute.
    Withdraw {
        /// The dispute entry being withdrawn.
        dispute: EntryId,
    },
    /// 3: the signer, whose own chain is forked, says which branch continues:
    /// `continue_with` is the entry at `fork_seq` on the kept branch. Fork
    /// numbers only increase along the signer's chain; the highest wins.
    ForkResolution {
        /// Strictly greater than every earlier resolution's on the signer's chain (so ≥ 1).
        fork_number: u64,
        /// The seq at which the chain forks.
        fork_seq: u64,
        /// The signer's own entry at `fork_seq` on the branch that continues.
        continue_with: EntryId,
    },
}

/// Why a payload is not a valid merge event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeDecodeError {
    /// The payload does not start with the merge magic: it is not a merge event.
    #[error("not a merge payload (no \"agmg\" magic)")]
    NotMerge,
    /// A newer merge format version.
    #[error("unknown merge format version {0} (this implementation reads version {MERGE_VERSION})")]
    UnknownVersion(u8),
    /// The kind code is not one this implementation knows (a newer kind).
    #[error("unknown merge event kind {0} (from a newer format version?)")]
    UnknownKind(u32),
    /// Malformed, truncated, trailing or non-canonical bytes.
    #[error("malformed merge event: {0}")]
    Malformed(String),
    /// A field breaks a limit.
    #[error("limit: {0}")]
    Limit(String),
}

impl MergeDecodeError {
    /// A stable, machine-readable name (used in test vectors and JSON).
    pub fn code(&self) -> &'static str {
        match self {
            MergeDecodeError::NotMerge => "not_merge",
            MergeDecodeError::UnknownVersion(_) => "unknown_version",
            MergeDecodeError::UnknownKind(_) => "unknown_kind",
            MergeDecodeError::Malformed(_) => "malformed",
            MergeDecodeError::Limit(_) => "limit",
        }
    }
}

impl MergeEvent {
    /// The kind's stable name.
    pub fn kind_name(&self) -> &'static str {
        match self {
            MergeEvent::Accept { .. } => "accept",
            MergeEvent::Dispute { .. } => "dispute",
            MergeEvent::Withdraw { .. } => "withdraw",
            MergeEvent::ForkResolution { .. } => "fork_resolution",
        }
    }

    /// Check the text limits.
    pub fn check_limits(&self) -> Result<(), MergeDecodeError> {
        if let MergeEvent::Dispute { reason, counter_claim, .. } = self {
            let longest = reason.len().max(counter_claim.as_ref().map_or(0, String::len));
            if longest > TEXT_BYTES_MAX {
                return Err(MergeDecodeError::Limit(format!("a text field is {longest} bytes, more than {TEXT_BYTES_MAX}")));
            }
        }
        Ok(())
    }

    /// The payload bytes of this event.
    pub fn encode(&self) -> Vec<u8> {
        MERGE_FRAMING.encode(self)
    }

    /// Does this payload claim to be a merge event (starts with the magic)?
    pub fn is_merge_payload(payload: &[u8]) -> bool {
        MERGE_FRAMING.claims(payload)
    }

    /// Decode a merge payload canonically.
    pub fn decode(payload: &[u8]) -> Result<Self, MergeDecodeError> {
        let event: MergeEvent = MERGE_FRAMING.decode(payload)?;
        event.check_limits()?;
        Ok(event)
    }
}

impl MergeEvent {
    /// The residue of a merge payload: what it meant without its text, kept
    /// by a node that redacts it (`agora_core::payload`, merge.md). A
    /// dispute keeps its target and whether it had a counter-claim; accepts,
    /// withdrawals and resolutions have no text and stay as they are. A
    /// payload that does not decode gets a residue that fails with the same
    /// error code, so its status is the same.
    pub fn residue(payload: &[u8]) -> Vec<u8> {
        match MergeEvent::decode(payload) {
            // Every kind and field named: a new one does not compile until
            // it is sorted into text (emptied) or structure (kept).
            Ok(MergeEvent::Dispute { target, reason: _, counter_claim }) => {
                MergeEvent::Dispute { target, reason: String::new(), counter_claim: counter_claim.map(|_| String::new()) }.encode()
            }
            Ok(
                kept @ (MergeEvent::Accept { author: _, up_to_seq: _, head: _ }
                | MergeEvent::Withdraw { dispute: _ }
                | MergeEvent::ForkResolution { fork_number: _, fork_seq: _, continue_with: _ }),
            ) => kept.encode(),
            Err(e) => match e {
                MergeDecodeError::NotMerge => Vec::new(),
                MergeDecodeError::UnknownVersion(v) => MERGE_FRAMING.frame_raw(v, &[]),
                MergeDecodeError::UnknownKind(k) => MERGE_FRAMING.encode(&k),
                MergeDecodeError::Limit(_) => {
                    // A text over the limit, made of zero bytes.
                    let reason = "\0".repeat(TEXT_BYTES_MAX + 1);
                    MergeEvent::Dispute { target: EntryId([0; 32]), reason, counter_claim: None }.encode()
                }
                MergeDecodeError::Malformed(_) => MERGE_FRAMING.frame_raw(MERGE_VERSION, &[1]),
            },
        }
    }
}

/// The residue a node keeps when it redacts `payload` (see
/// `agora_core::payload`): what the payload meant without its text, in the
/// payload's own format (reasoning event, merge event, roster event), or
/// empty for a payload of no known format (it meant nothing to any view).
pub fn residue(payload: &[u8]) -> Vec<u8> {
    if agora_graph::Event::is_event_payload(payload) {
        agora_graph::Event::residue(payload)
    } else if MergeEvent::is_merge_payload(payload) {
        MergeEvent::residue(payload)
    } else if agora_roster::RosterEvent::is_roster_payload(payload) {
        agora_roster::RosterEvent::residue(payload)
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> EntryId {
        EntryId([n; 32])
    }

    /// Every kind with each string field set to its own marker: the residue
    /// keeps none of them. The match names every field, so a new kind or
    /// field breaks this test's compilation until it is listed.
    #[test]
    fn a_residue_keeps_no_byte_of_any_text_field() {
        let events = [
            MergeEvent::Accept { author: AgentId([1; 32]), up_to_seq: 4, head: id(2) },
            MergeEvent::Dispute { target: id(3), reason: "MARK-reason-4f1e".into(), counter_claim: Some("MARK-counter-9a2c".into()) },
            MergeEvent::Withdraw { dispute: id(4) },
            MergeEvent::ForkResolution { fork_number: 1, fork_seq: 8, continue_with: id(5) },
        ];
        assert_eq!(events.len() as u32, KIND_COUNT);
        for e in &events {
            let strings: Vec<&String> = match e {
                MergeEvent::Accept { author: _, up_to_seq: _, head: _ } => vec![],
                MergeEvent::Dispute { target: _, reason, counter_claim } => std::iter::once(reason).chain(counter_claim).collect(),
                MergeEvent::Withdraw { dispute: _ } => vec![],
                MergeEvent::ForkResolution { fork_number: _, fork_seq: _, continue_with: _ } => vec![],
            };
            let residue = MergeEvent::residue(&e.encode());
            assert_eq!(MergeEvent::decode(&residue).unwrap().kind_name(), e.kind_name());
            for s in strings {
                assert!(!residue.windows(s.len()).any(|w| w == s.as_bytes()), "{}: the residue keeps {s:?}", e.kind_name());
            }
        }
    }

    #[test]
    fn round_trip_every_kind() {
        let events = [
            MergeEvent::Accept { author: AgentId([1; 32]), up_to_seq: 4, head: id(2) },
            MergeEvent::Dispute { target: id(3), reason: "no".into(), counter_claim: Some("yes".into()) },
            MergeEvent::Withdraw { dispute: id(4) },
            MergeEvent::ForkResolution { fork_number: 1, fork_seq: 8, continue_with: id(5) },
        ];
        for (code, e) in events.iter().enumerate() {
            let bytes = e.encode();
            assert_eq!(&bytes[..5], b"agmg\x01");
            assert_eq!(bytes[5] as usize, code);
            assert_eq!(&MergeEvent::decode(&bytes).unwrap(), e);
        }
    }

    #[test]
    fn refuses_non_canonical_unknown_and_oversized() {
        let ok = MergeEvent::Withdraw { dispute: id(1) }.encode();
        let mut trailing = ok.clone();
        trailing.push(0);
        assert!(matches!(MergeEvent::decode(&trailing), Err(MergeDecodeError::Malformed(_))));
        let mut overlong = ok.clone();
        overlong.splice(5..6, [0x82, 0x00]);
        assert!(matches!(MergeEvent::decode(&overlong), Err(MergeDecodeError::Malformed(_))));
        assert_eq!(MergeEvent::decode(b"agmg\x01\x04"), Err(MergeDecodeError::UnknownKind(4)));
        assert_eq!(MergeEvent::decode(b"agmg\x02\x00"), Err(MergeDecodeError::UnknownVersion(2)));
        assert_eq!(MergeEvent::decode(b"agev\x01\x00"), Err(MergeDecodeError::NotMerge));
        assert!(matches!(MergeEvent::decode(b"agmg"), Err(MergeDecodeError::Malformed(_))));
        assert!(matches!(MergeEvent::decode(&ok[..ok.len() - 1]), Err(MergeDecodeError::Malformed(_))));
        let long = MergeEvent::Dispute { target: id(1), reason: "x".repeat(TEXT_BYTES_MAX + 1), counter_claim: None };
        assert!(matches!(MergeEvent::decode(&long.encode()), Err(MergeDecodeError::Limit(_))));
        let at_limit = MergeEvent::Dispute { target: id(1), reason: "x".repeat(TEXT_BYTES_MAX), counter_claim: Some("y".repeat(TEXT_BYTES_MAX)) };
        assert_eq!(MergeEvent::decode(&at_limit.encode()).unwrap(), at_limit);
        // Invalid UTF-8 in a text field.
        let mut bad_utf8 = MergeEvent::Dispute { target: id(1), reason: "ab".into(), counter_claim: None }.encode();
        let n = bad_utf8.len();
        bad_utf8[n - 2] = 0xff;
        assert!(matches!(MergeEvent::decode(&bad_utf8), Err(MergeDecodeError::Malformed(_))));
    }
}
