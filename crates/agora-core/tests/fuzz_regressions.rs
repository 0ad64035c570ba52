//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found wrong, kept as
//! tests. Each names its target.

use agora_core::entry::next_header;
use agora_core::signature::{PublicKey, SignatureError};
use agora_core::verify::{check_entries, verify_signature, verify_signatures};
use agora_core::{AgentKey, SignedEntry};

fn sign(key: &AgentKey, prev: Option<&SignedEntry>, payload: &[u8]) -> SignedEntry {
    SignedEntry::sign(next_header(key.agent_id(), prev, 1_000, payload).unwrap(), key)
}

/// Target `verify_entries`: a badly signed entry, then an entry whose author
/// is not a valid key. The batched check decoded the keys of a whole batch
/// before checking any signature, so it named the later entry (its key),
/// where checking one by one names the earlier (its signature). Both must
/// name the first invalid entry in input order (signatures.md: single and
/// batched verification agree).
#[test]
fn batch_names_a_bad_signature_before_a_later_bad_key() {
    let alice = AgentKey::from_seed([0x11; 32]);
    let first = sign(&alice, None, b"one");
    let second = sign(&alice, Some(&first), b"two");
    let mut bytes = second.encode();
    let n = bytes.len();
    bytes[n - 20] ^= 1; // inside S
    let bad_signature = SignedEntry::decode(&bytes).unwrap();
    // An entry whose author bytes are not the encoding of a point.
    let not_a_key = (0..=255u8).map(|b| [b; 32]).find(|k| PublicKey::from_bytes(k) == Err(SignatureError::KeyEncoding)).unwrap();
    let mut bytes = sign(&alice, None, b"three").encode();
    bytes[1..33].copy_from_slice(&not_a_key);
    let bad_key = SignedEntry::decode(&bytes).unwrap();

    let expected = verify_signature(&bad_signature).unwrap_err();
    assert_eq!(expected.entry, bad_signature.entry_ref());
    assert_eq!(verify_signatures(&[&first, &bad_signature, &bad_key]).unwrap_err(), expected);
    let with_payloads = vec![(first.clone(), None), (bad_signature.clone(), None), (bad_key.clone(), None)];
    assert_eq!(check_entries(with_payloads).unwrap_err(), expected);
    // The bad key alone, or first, is still named.
    let key_error = verify_signature(&bad_key).unwrap_err();
    assert_eq!(verify_signatures(&[&first, &bad_key, &bad_signature]).unwrap_err(), key_error);
}
