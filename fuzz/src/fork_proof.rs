//! The `fork_proof` target: fork proofs as a peer sends them.

use agora_core::limits::FORK_PROOF_BYTES_MAX;
use agora_core::{ForkProof, ForkProofError};

/// `agora_core::ForkProof::decode`: an accepted proof re-encodes to the
/// input, checks, names two entries of one author in ascending id order that
/// share a seq or a backlink, and is the proof `ForkProof::new` builds from
/// its two entries in either order.
pub fn fork_proof(data: &[u8]) {
    match ForkProof::decode(data) {
        Ok(p) => {
            assert_eq!(p.encode(), data, "fork proof not canonical");
            assert_eq!(p.check(), Ok(()));
            let (a, b) = p.entries();
            let (ha, hb) = (a.header(), b.header());
            assert!(a.id() < b.id());
            assert_eq!(ha.author, hb.author);
            assert_eq!(p.author(), ha.author);
            assert!(ha.seq == hb.seq || (ha.backlink.is_some() && ha.backlink == hb.backlink));
            assert_eq!(p.seq(), ha.seq.min(hb.seq));
            assert_eq!(ForkProof::new(b.clone(), a.clone()).as_ref(), Ok(&p));
            assert_eq!(ForkProof::new(a.clone(), b.clone()).as_ref(), Ok(&p));
            // The same proof as the merge layer takes it from a peer.
            assert_eq!(agora_merge::decode_fork_proof(data).ok().as_ref(), Some(&p));
        }
        Err(err) => {
            let _ = err.code();
            if data.len() > FORK_PROOF_BYTES_MAX {
                assert!(matches!(err, ForkProofError::TooLong(_)), "{err:?}");
            }
            assert!(agora_merge::decode_fork_proof(data).is_err());
        }
    }
}
