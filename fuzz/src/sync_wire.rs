//! The `sync_wire` target: replication's wire messages as a peer sends them.

use crate::{fork_proof, signed_entry};
use agora_core::{SignedEntry, sha256};
use agora_sync::wire::{GOSSIP_BYTES_MAX, REQUEST_BYTES_MAX, RESPONSE_BYTES_MAX};
use agora_sync::{Gossip, WireEntry, WireRequest, WireResponse};

/// `agora_sync::wire`: the input as a request, a response and a gossip
/// message (the three families a peer sends, `protocol-spec/replication.md`).
/// Each accepted message re-encodes to the input and is within its size
/// limit; a request is the one its replicator message travels as; a
/// response's entries go through the replicator's check without a panic;
/// gossip's entries and fork proofs go through their decoders.
pub fn sync_wire(data: &[u8]) {
    if let Ok(r) = WireRequest::decode(data) {
        assert_eq!(r.encode(), data, "request not canonical");
        assert!(data.len() <= REQUEST_BYTES_MAX);
        let back = WireRequest::from_message(r.workspace(), r.clone().into_message());
        assert_eq!(back.as_ref().ok(), Some(&r));
    }
    if let Ok(r) = WireResponse::decode(data) {
        assert_eq!(r.encode(), data, "response not canonical");
        assert!(data.len() <= RESPONSE_BYTES_MAX);
        if let WireResponse::Entries { entries, .. } = r {
            let _ = entries.iter().map(WireEntry::wire_len).sum::<usize>();
            if let Ok(checked) = agora_sync::check_entries(entries.clone()) {
                for (c, w) in checked.iter().zip(&entries) {
                    assert_eq!(c.encode(), w.entry);
                    assert_eq!(c.payload(), w.payload.as_deref());
                }
            }
        }
    }
    if let Ok(g) = Gossip::decode(data) {
        assert_eq!(g.encode(), data, "gossip not canonical");
        assert!(data.len() <= GOSSIP_BYTES_MAX);
        assert_eq!(agora_sync::wire::gossip_message_id(data), sha256(data));
        match &g {
            Gossip::Entry(w) => {
                if let Ok(e) = SignedEntry::decode(&w.entry) {
                    let again = Gossip::for_entry(&e, w.payload.as_deref());
                    let inline = w.payload.as_ref().is_some_and(|p| p.len() <= agora_sync::wire::GOSSIP_INLINE_PAYLOAD_MAX);
                    assert_eq!(again == g, inline);
                }
            }
            Gossip::Announce(bytes) => signed_entry(bytes),
            Gossip::ForkProof(bytes) => fork_proof(bytes),
        }
    }
}
