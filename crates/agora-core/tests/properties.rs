//! Property tests for the encodings: round trips, canonical-only decoding, and
//! detection of any single bit flip in a signed entry or its payload.

use agora_core::entry::next_header;
use agora_core::verify::{verify_payload, verify_signature};
use agora_core::{AgentId, AgentKey, EntryId, ForkProof, Header, KeyEvent, SignedEntry};
use proptest::prelude::*;

/// Version-1 and version-2 headers (with a rotation after seq 1).
fn arb_header() -> impl Strategy<Value = Header> {
    (
        (any::<[u8; 32]>(), 1u64.., any::<[u8; 32]>(), any::<u64>(), 0u32..=agora_core::limits::PAYLOAD_BYTES_MAX, any::<[u8; 32]>()),
        (0u8..3, any::<[u8; 32]>(), any::<[u8; 32]>()),
    )
        .prop_map(|((author, seq, back, ts, len, hash), (keys, signer, next))| {
            let h = Header {
                version: 1,
                author: AgentId(author),
                seq,
                backlink: if seq == 1 { None } else { Some(EntryId(back)) },
                timestamp_ms: ts,
                payload_len: len,
                payload_hash: hash,
                keys: None,
            };
            match (keys, seq) {
                (0, _) => h,
                (_, 1) | (1, _) => h.committing(next),
                _ => h.key_event_by(KeyEvent::Rotate, AgentId(signer), next),
            }
        })
}

fn signed(seed: [u8; 32], payload: &[u8], ts: u64) -> SignedEntry {
    let key = AgentKey::from_seed(seed);
    SignedEntry::sign(next_header(key.agent_id(), None, ts, payload).unwrap(), &key)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn header_round_trips(h in arb_header()) {
        let bytes = h.encode();
        prop_assert!(bytes.len() <= agora_core::limits::HEADER_BYTES_MAX);
        prop_assert_eq!(Header::decode(&bytes).unwrap(), h);
    }

    #[test]
    fn signed_entry_round_trips(seed in any::<[u8; 32]>(), payload in proptest::collection::vec(any::<u8>(), 0..512), ts in any::<u64>()) {
        let e = signed(seed, &payload, ts);
        let back = SignedEntry::decode(&e.encode()).unwrap();
        prop_assert_eq!(&back, &e);
        verify_signature(&back).unwrap();
        verify_payload(&back, &payload).unwrap();
    }

    /// Any byte string that decodes is the canonical encoding of what it decodes
    /// to: decode(b) = h implies encode(h) = b.
    #[test]
    fn only_canonical_bytes_decode(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(h) = Header::decode(&bytes) {
            prop_assert_eq!(h.encode(), bytes);
        }
    }

    /// Overlong varints (a continuation byte followed by 0x00) in the seq or the
    /// timestamp are always rejected.
    #[test]
    fn overlong_varints_are_rejected(h in arb_header(), which in 0usize..2) {
        let bytes = h.encode();
        // seq starts at offset 33; find where timestamp starts by re-encoding pieces.
        let seq_len = postcard::to_allocvec(&h.seq).unwrap().len();
        let back_len = if h.backlink.is_some() { 33 } else { 1 };
        let (start, field_len) = if which == 0 {
            (33, seq_len)
        } else {
            (33 + seq_len + back_len, postcard::to_allocvec(&h.timestamp_ms).unwrap().len())
        };
        if field_len < 10 {
            let mut field = bytes[start..start + field_len].to_vec();
            let last = field.len() - 1;
            field[last] |= 0x80;
            field.push(0x00);
            let mangled = [&bytes[..start], &field[..], &bytes[start + field_len..]].concat();
            prop_assert!(Header::decode(&mangled).is_err());
        }
    }

    /// Flipping any single bit of a signed entry is detected: it no longer
    /// decodes, or its signature no longer verifies.
    #[test]
    fn any_bit_flip_in_an_entry_is_detected(seed in any::<[u8; 32]>(), payload in proptest::collection::vec(any::<u8>(), 0..64), bit in any::<prop::sample::Index>()) {
        let e = signed(seed, &payload, 1_000);
        let mut bytes = e.encode();
        let i = bit.index(bytes.len() * 8);
        bytes[i / 8] ^= 1 << (i % 8);
        match SignedEntry::decode(&bytes) {
            Err(_) => {}
            Ok(flipped) => prop_assert!(verify_signature(&flipped).is_err(), "bit {} flip accepted", i),
        }
    }

    /// Flipping any single bit of a payload is detected by its hash.
    #[test]
    fn any_bit_flip_in_a_payload_is_detected(payload in proptest::collection::vec(any::<u8>(), 1..256), bit in any::<prop::sample::Index>()) {
        let e = signed([3; 32], &payload, 1_000);
        let mut p = payload.clone();
        let i = bit.index(p.len() * 8);
        p[i / 8] ^= 1 << (i % 8);
        prop_assert!(verify_payload(&e, &p).is_err());
    }

    /// Fork proofs round-trip and are independent of argument order; flipping a
    /// bit anywhere in one makes it fail to check.
    #[test]
    fn fork_proofs_round_trip_and_resist_flips(a in proptest::collection::vec(any::<u8>(), 0..32), b in proptest::collection::vec(any::<u8>(), 0..32), bit in any::<prop::sample::Index>()) {
        prop_assume!(a != b);
        let x = signed([5; 32], &a, 7);
        let y = signed([5; 32], &b, 7);
        let p = ForkProof::new(x.clone(), y.clone()).unwrap();
        prop_assert_eq!(ForkProof::new(y, x).unwrap(), p.clone());
        let mut bytes = p.encode();
        prop_assert_eq!(ForkProof::decode(&bytes).unwrap(), p);
        let i = bit.index(bytes.len() * 8);
        bytes[i / 8] ^= 1 << (i % 8);
        prop_assert!(ForkProof::decode(&bytes).is_err());
    }
}
