//! The `merge_event` target: merge-layer event payloads (`agmg`).

use agora_merge::payload::MERGE_FRAMING;
use agora_merge::{MergeDecodeError, MergeEvent};

/// `agora_merge::MergeEvent::decode` (`agmg`): an accepted payload re-encodes
/// to the input and keeps the text limits; a dispute's residue keeps its
/// target and whether it had a counter-claim, other kinds' residues are the
/// payload itself; the residue of a payload that does not decode fails with
/// the same error code (merge.md).
pub fn merge_event(data: &[u8]) {
    let decoded = MergeEvent::decode(data);
    assert_eq!(MergeEvent::is_merge_payload(data), data.starts_with(b"agmg"));
    let reference: Result<MergeEvent, MergeDecodeError> =
        MERGE_FRAMING.decode::<MergeEvent>(data).map_err(MergeDecodeError::from).and_then(|e| e.check_limits().map(|()| e));
    assert_eq!(decoded, reference);
    let residue = MergeEvent::residue(data);
    match &decoded {
        Ok(ev) => {
            assert_eq!(ev.encode(), data, "merge event not canonical");
            let _ = ev.kind_name();
            let r = MergeEvent::decode(&residue).expect("the residue of a merge event decodes");
            match (ev, &r) {
                (MergeEvent::Dispute { target, counter_claim, .. }, MergeEvent::Dispute { target: t, reason, counter_claim: c }) => {
                    assert_eq!((target, counter_claim.is_some()), (t, c.is_some()));
                    assert!(reason.is_empty() && c.as_ref().is_none_or(String::is_empty));
                }
                (MergeEvent::Dispute { .. }, _) => panic!("a dispute's residue is {r:?}"),
                _ => assert_eq!(&r, ev),
            }
        }
        Err(MergeDecodeError::NotMerge) => assert!(residue.is_empty()),
        Err(e) => {
            let r = MergeEvent::decode(&residue).expect_err("the residue of an invalid merge event is invalid");
            assert_eq!(r.code(), e.code(), "residue error {r:?} for {e:?}");
        }
    }
}
