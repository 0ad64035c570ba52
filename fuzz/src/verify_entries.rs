//! The `verify_entries` target: the verification of a response's entries.

use crate::layout::read_entries;
use agora_core::SignedEntry;
use agora_core::verify::{check_entries, verify_link, verify_payload, verify_signature, verify_signatures};
use agora_sync::WireEntry;

/// `agora_core::verify::check_entries` on decoded entries ([`read_entries`]):
/// the batched verification names the same first bad entry and rule as
/// checking each payload, then each signature, one at a time in input order
/// (signatures.md: single and batched verification agree on every input);
/// `agora_sync::check_entries` (the replicator's) agrees with it; and the
/// link rule between neighbours never panics.
pub fn verify_entries(data: &[u8]) {
    let raw = read_entries(data);
    let decoded: Vec<(SignedEntry, Option<Vec<u8>>)> = raw.iter().filter_map(|(e, p)| SignedEntry::decode(e).ok().map(|e| (e, p.clone()))).collect();
    // One at a time: payloads first, then signatures, in input order.
    let expected = decoded
        .iter()
        .filter_map(|(e, p)| p.as_ref().map(|p| (e, p)))
        .map(|(e, p)| verify_payload(e, p))
        .chain(decoded.iter().map(|(e, _)| verify_signature(e)))
        .find_map(Result::err);
    let refs: Vec<&SignedEntry> = decoded.iter().map(|(e, _)| e).collect();
    let batch_signatures = verify_signatures(&refs);
    let single_signatures = refs.iter().map(|e| verify_signature(e)).find_map(Result::err);
    assert_eq!(batch_signatures.err(), single_signatures, "batched and single signature checks disagree");
    let checked = check_entries(decoded.clone());
    assert_eq!(checked.as_ref().err(), expected.as_ref(), "check_entries names another entry or rule");
    if let Ok(checked) = &checked {
        assert_eq!(checked.len(), decoded.len());
        for (c, (e, p)) in checked.iter().zip(&decoded) {
            assert_eq!(c.entry().entry(), e);
            assert_eq!(c.payload(), p.as_deref());
        }
    }
    for w in decoded.windows(2) {
        if verify_link(&w[0].0, &w[1].0).is_ok() {
            let (a, b) = (w[0].0.header(), w[1].0.header());
            assert!(a.author == b.author && b.seq == a.seq + 1 && b.backlink == Some(w[0].0.id()) && b.timestamp_ms >= a.timestamp_ms);
        }
    }
    // The replicator's check of a response's entries: the same verdict.
    let wire: Vec<WireEntry> = raw.iter().map(|(e, p)| WireEntry { entry: e.clone(), payload: p.clone() }).collect();
    let all_decode = decoded.len() == raw.len();
    match agora_sync::check_entries(wire) {
        Ok(v) => {
            assert!(all_decode && checked.is_ok());
            assert_eq!(v.len(), raw.len());
        }
        Err(agora_sync::CheckError::Entry { index, .. }) => assert!(SignedEntry::decode(&raw[index].0).is_err()),
        Err(agora_sync::CheckError::Verify(e)) => assert!(all_decode && checked.err() == Some(e)),
        Err(other) => panic!("unexpected check error {other:?}"),
    }
}
