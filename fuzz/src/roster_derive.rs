//! The `roster_derive` target: a roster derived from a founder chain of
//! payloads from peers.

use crate::fixture;
use crate::layout::read_log;
use agora_core::Content;
use agora_roster::{FounderEntry, Roster, RosterEvent};

/// `agora_roster::Roster::derive` over a founder chain of payloads from
/// peers (the [`read_log`] layout; seq and payload used, the author ignored):
/// the roster does not depend on the order entries are given in; redacting
/// every held payload to its residue changes no membership, removal, cut-off,
/// freeze or pending seq, and skips the same entries; the founder is always a
/// member and admission agrees with the members and cut-offs.
pub fn roster_derive(data: &[u8]) {
    let founder = fixture::agent(0);
    let log = read_log(data);
    let residues: Vec<Vec<u8>> = log.iter().map(|(_, _, _, p)| RosterEvent::residue(p)).collect();
    let entries: Vec<FounderEntry<'_>> = log
        .iter()
        .zip(&residues)
        .map(|((id, pos, what, p), residue)| FounderEntry {
            seq: pos.seq,
            id: *id,
            content: match what {
                0 => Content::Held(p),
                1 => Content::Redacted(Some(residue)),
                2 => Content::Redacted(None),
                _ => Content::Missing,
            },
        })
        .collect();
    let roster = Roster::derive(founder, entries.iter().copied());
    assert_eq!(Roster::derive(founder, entries.iter().rev().copied()), roster, "the roster depends on the order");
    assert!(roster.admits(&founder));
    let admission = roster.admission();
    for (agent, cut) in &admission {
        assert_eq!(cut.is_none(), roster.members.contains_key(agent));
        let any = agora_core::EntryId([0; 32]);
        if let Some(last) = cut {
            if roster.pinned.contains_key(agent) {
                // A pinned history not resolved against a store: nothing counts yet.
                assert!(!roster.admits_entry(agent, *last, &any));
            } else {
                assert!(roster.admits_entry(agent, *last, &any) && !roster.admits_entry(agent, last.saturating_add(1), &any) || *last == u64::MAX);
            }
        }
    }
    let redacted: Vec<FounderEntry<'_>> = entries
        .iter()
        .zip(&residues)
        .map(|(e, residue)| match e.content {
            Content::Held(_) => FounderEntry { content: Content::Redacted(Some(residue)), ..*e },
            _ => *e,
        })
        .collect();
    let r = Roster::derive(founder, redacted);
    assert_eq!(
        (&r.members, &r.removed, &r.cut_off, &r.pinned, r.pending_at_seq, r.frozen_at_fork_seq),
        (&roster.members, &roster.removed, &roster.cut_off, &roster.pinned, roster.pending_at_seq, roster.frozen_at_fork_seq),
        "redaction changed the roster"
    );
    let skipped = |r: &Roster| r.skipped.iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(skipped(&r), skipped(&roster), "redaction changed what is skipped");
}
