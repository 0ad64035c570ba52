//! `agora admit`, `remove` and `roster`: workspace membership, recorded as
//! roster events in the founder's own chain (see `agora-roster`).

use crate::commands::parse_author;
use crate::session::Session;
use agora_core::AgentId;
use agora_roster::{FounderEntry, Roster, RosterEvent};
use agora_store::{PayloadState, Store};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::process::ExitCode;

/// The roster of the workspace whose founder is `founder`, from the store.
///
/// Only what can change the roster is kept while the chain is read (roster
/// payloads, entries whose payload is not held, and the entries of a forked
/// seq), so memory stays small however long the founder's chain is; other
/// entries are passed on with an empty payload only where needed to show a
/// fork.
pub fn derive(store: &Store, founder: AgentId) -> Result<Roster> {
    let mut kept: Vec<(u64, agora_core::EntryId, Option<Vec<u8>>)> = Vec::new();
    // The previous entry (entries come in (seq, id) order), kept aside until
    // it is known whether a second entry shares its seq.
    let mut prev: Option<(u64, agora_core::EntryId, Option<Vec<u8>>)> = None;
    store.for_each_entry(Some(&founder), |e| {
        let (seq, id) = (e.signed.header().seq, e.signed.id());
        let payload = match e.payload {
            // Anything else reads as "not a roster event": an empty payload.
            PayloadState::Held(p) => Some(if RosterEvent::is_roster_payload(&p) { p } else { Vec::new() }),
            _ => None,
        };
        if let Some(p) = prev.take() {
            let matters = p.0 == seq || kept.last().is_some_and(|k| k.0 == p.0) || p.2.as_ref().is_none_or(|b| !b.is_empty());
            if matters {
                kept.push(p);
            }
        }
        prev = Some((seq, id, payload));
        Ok(())
    })?;
    if let Some(p) = prev.take() {
        let matters = kept.last().is_some_and(|k| k.0 == p.0) || p.2.as_ref().is_none_or(|b| !b.is_empty());
        if matters {
            kept.push(p);
        }
    }
    Ok(Roster::derive(founder, kept.iter().map(|(seq, id, p)| FounderEntry { seq: *seq, id: *id, payload: p.as_deref() })))
}

fn record(s: &Session, event: RosterEvent) -> Result<ExitCode> {
    let key = s.home.load_key()?;
    let founder = s.founder()?;
    if key.agent_id() != founder {
        bail!(
            "refused: only the workspace founder {founder} can change its roster; this agent is {} \
             (roster events in any other chain have no effect)",
            key.agent_id()
        );
    }
    event.check_local(&founder)?;
    let entry = crate::merge_cmds::append_own(s, &event.encode())?;
    s.print(&json!({ "id": entry.id().to_string(), "seq": entry.header().seq }), || entry.id().to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn agent(text: &str) -> Result<AgentId> {
    parse_author(text).with_context(|| "the agent to admit or remove must be a full agent id (agora id prints it)")
}

/// `agora admit <agent> [note]`.
pub fn admit(s: &Session, agent_text: &str, note: &str) -> Result<ExitCode> {
    record(s, RosterEvent::Admit { agent: agent(agent_text)?, note: note.to_string() })
}

/// `agora remove <agent> [reason]`.
pub fn remove(s: &Session, agent_text: &str, reason: &str) -> Result<ExitCode> {
    record(s, RosterEvent::Remove { agent: agent(agent_text)?, reason: reason.to_string() })
}

/// `agora roster`.
pub fn roster(s: &Session) -> Result<ExitCode> {
    let founder = s.founder()?;
    let r = derive(s.store()?, founder)?;
    let members: Vec<_> =
        r.members.iter().map(|(a, by)| json!({ "agent": a.to_string(), "admitted_by": by.map(|e| e.to_string()) })).collect();
    let removed: Vec<_> = r.removed.iter().map(|(a, by)| json!({ "agent": a.to_string(), "removed_by": by.to_string() })).collect();
    let skipped: Vec<_> = r.skipped.iter().map(|k| json!({ "entry": k.id.to_string(), "reason": k.reason })).collect();
    s.print(
        &json!({ "founder": founder.to_string(), "members": members, "removed": removed, "frozen_at_fork_seq": r.frozen_at_fork_seq, "skipped": skipped }),
        || {
            let mut out = vec![format!("founder {founder}")];
            out.extend(r.members.keys().filter(|a| **a != founder).map(|a| format!("member  {a}")));
            out.extend(r.removed.keys().map(|a| format!("removed {a}")));
            if let Some(seq) = r.frozen_at_fork_seq {
                out.push(format!("the founder's chain is forked at seq {seq}: the roster is frozen before it"));
            }
            out.extend(r.skipped.iter().map(|k| format!("no effect: {} ({})", k.id, k.reason)));
            out.join("\n")
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::derive;
    use agora_core::entry::next_header;
    use agora_core::{AgentKey, SignedEntry};
    use agora_roster::{FounderEntry, Roster, RosterEvent};
    use agora_store::{ImportItem, PayloadState, Store, StoreOptions};

    /// The roster as `Roster::derive` reads it from every entry of the chain.
    fn derive_from_everything(store: &Store, founder: agora_core::AgentId) -> Roster {
        let mut all = Vec::new();
        store
            .for_each_entry(Some(&founder), |e| {
                let p = match e.payload {
                    PayloadState::Held(p) => Some(p),
                    _ => None,
                };
                all.push((e.signed.header().seq, e.signed.id(), p));
                Ok(())
            })
            .unwrap();
        Roster::derive(founder, all.iter().map(|(seq, id, p)| FounderEntry { seq: *seq, id: *id, payload: p.as_deref() }))
    }

    /// Keeping only what can change the roster gives the same roster as
    /// reading every entry: with roster events among other payloads, a
    /// redacted roster event, and a fork after them.
    #[test]
    fn the_lean_roster_derivation_equals_the_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap();
        let founder = AgentKey::from_seed([1; 32]);
        let f = founder.agent_id();
        let (b, c) = (AgentKey::from_seed([2; 32]).agent_id(), AgentKey::from_seed([3; 32]).agent_id());
        let mut t = 1_000;
        let mut append = |payload: Vec<u8>| {
            t += 1;
            store.append(&founder, &payload, t).unwrap()
        };
        append(b"a note".to_vec());
        append(RosterEvent::Admit { agent: b, note: String::new() }.encode());
        append(b"another note".to_vec());
        let admit_c = append(RosterEvent::Admit { agent: c, note: String::new() }.encode());
        let before_fork = append(RosterEvent::Remove { agent: b, reason: "left".into() }.encode());
        append(b"after".to_vec());
        store.redact(&admit_c.id(), 5_000).unwrap();
        assert_eq!(derive(&store, f).unwrap(), derive_from_everything(&store, f));
        // A second entry at seq 6: the chain is forked there.
        let rival_payload = b"rival".to_vec();
        let rival = SignedEntry::sign(next_header(f, Some(&before_fork), 9_000, &rival_payload).unwrap(), &founder);
        store.import(vec![ImportItem { entry: rival, payload: Some(rival_payload), origin: "test".into() }]).unwrap();
        let lean = derive(&store, f).unwrap();
        assert_eq!(lean.frozen_at_fork_seq, Some(6));
        assert_eq!(lean, derive_from_everything(&store, f));
    }
}
