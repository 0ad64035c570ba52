//! The `graph_event` target: reasoning-graph event payloads (`agev`).

use agora_graph::event::EVENT_FRAMING;
use agora_graph::{Event, EventDecodeError};
use std::mem::discriminant;

/// `agora_graph::Event::decode` (`agev`): the one-pass reader accepts exactly
/// what the serde path accepts, with the same result or error; an accepted
/// payload re-encodes to the input; the residue of an event decodes to the
/// same kind with the same references; the residue of a payload that does not
/// decode fails with the same error (events.md, "Residues").
pub fn graph_event(data: &[u8]) {
    let fast = Event::decode(data);
    let serde: Result<Event, EventDecodeError> = EVENT_FRAMING.decode::<Event>(data).map_err(EventDecodeError::from).and_then(|e| e.check_limits().map(|()| e));
    assert_eq!(fast, serde, "the one-pass reader and serde disagree");
    assert_eq!(Event::is_event_payload(data), data.starts_with(b"agev"));
    let residue = Event::residue(data);
    match &fast {
        Ok(ev) => {
            assert_eq!(ev.encode(), data, "event not canonical");
            let _ = (ev.kind_name(), ev.text(), ev.ref_list());
            let r = Event::decode(&residue).expect("the residue of an event decodes");
            assert_eq!((r.kind_name(), r.refs()), (ev.kind_name(), ev.refs()));
        }
        Err(EventDecodeError::NotAnEvent) => assert!(residue.is_empty()),
        Err(e) => {
            let r = Event::decode(&residue).expect_err("the residue of an invalid event is invalid");
            assert_eq!(discriminant(&r), discriminant(e), "residue error {r:?} for {e:?}");
            match (&r, e) {
                (EventDecodeError::UnknownKind(a), EventDecodeError::UnknownKind(b)) => assert_eq!(a, b),
                (EventDecodeError::UnknownVersion(a), EventDecodeError::UnknownVersion(b)) => assert_eq!(a, b),
                _ => {}
            }
        }
    }
}
