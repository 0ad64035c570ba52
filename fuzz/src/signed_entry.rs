//! The `signed_entry` target: signed entries and headers as a peer sends them.

use agora_core::limits::{PAYLOAD_BYTES_MAX, SIGNED_ENTRY_BYTES_MAX};
use agora_core::{DecodeError, Header, SignedEntry, sha256};

/// `agora_core::SignedEntry::decode` and `Header::decode`: an accepted entry
/// re-encodes to the input, its header bytes are the header's canonical
/// encoding, its id is their hash, and the header keeps the structure rules.
pub fn signed_entry(data: &[u8]) {
    match SignedEntry::decode(data) {
        Ok(e) => {
            assert_eq!(e.encode(), data, "signed entry not canonical");
            assert!(data.len() <= SIGNED_ENTRY_BYTES_MAX);
            let h = e.header();
            assert_eq!(h.encode(), e.header_bytes());
            assert_eq!(Header::decode(e.header_bytes()).as_ref(), Ok(h));
            assert_eq!(e.id(), h.id());
            assert_eq!(e.id().0, sha256(e.header_bytes()));
            assert!(h.seq >= 1 && (h.seq == 1) == h.backlink.is_none() && h.payload_len <= PAYLOAD_BYTES_MAX);
            assert_eq!(&data[data.len() - 64..], e.signature());
        }
        Err(err) => {
            let _ = err.code();
            if data.len() > SIGNED_ENTRY_BYTES_MAX {
                assert!(matches!(err, DecodeError::TooLong { .. }), "{err:?}");
            }
        }
    }
    if let Ok(h) = Header::decode(data) {
        assert_eq!(h.encode(), data, "header not canonical");
    }
}
