//! The `roster_event` target: roster event payloads (`agrs`).

use crate::fixture;
use agora_roster::{RosterError, RosterEvent};
use std::mem::discriminant;

/// `agora_roster::RosterEvent::decode` (`agrs`): an accepted payload
/// re-encodes to the input and keeps the note limit; its residue is the event
/// without its text; the residue of a payload that does not decode fails with
/// the same error (roster.md); `check_local` never panics.
pub fn roster_event(data: &[u8]) {
    let decoded = RosterEvent::decode(data);
    assert_eq!(RosterEvent::is_roster_payload(data), data.starts_with(b"agrs"));
    let residue = RosterEvent::residue(data);
    match &decoded {
        Ok(ev) => {
            assert_eq!(ev.encode(), data, "roster event not canonical");
            assert!(ev.note().len() <= agora_roster::NOTE_BYTES_MAX);
            let founder = fixture::agent(0);
            let local = ev.check_local(&founder);
            let removes_founder = matches!(ev, RosterEvent::Remove { agent, .. } | RosterEvent::RemoveAfter { agent, .. } | RosterEvent::RemoveAt { agent, .. } if *agent == founder);
            let bad_recovery = matches!(ev, RosterEvent::Recover { agent, key, .. } if *agent == founder || agent == key);
            let bad_admins = matches!(ev, RosterEvent::Admins { admins, threshold, .. } if admins.len() > agora_roster::ADMINS_MAX
                || admins.windows(2).any(|w| w[0] >= w[1])
                || admins.contains(&founder)
                || if admins.is_empty() { *threshold != 0 } else { *threshold == 0 || *threshold > admins.len() as u64 });
            assert_eq!(local.is_err(), removes_founder || bad_recovery || bad_admins);
            assert_eq!(RosterEvent::decode(&residue).as_ref(), Ok(&ev.without_text()));
        }
        Err(RosterError::NotRoster) => assert!(residue.is_empty()),
        Err(e) => {
            let r = RosterEvent::decode(&residue).expect_err("the residue of an invalid roster event is invalid");
            assert_eq!(discriminant(&r), discriminant(e), "residue error {r:?} for {e:?}");
        }
    }
}
