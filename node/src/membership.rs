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
pub fn derive(store: &Store, founder: AgentId) -> Result<Roster> {
    let mut held: Vec<(u64, agora_core::EntryId, Option<Vec<u8>>)> = Vec::new();
    store.for_each_entry(Some(&founder), |e| {
        let payload = match e.payload {
            PayloadState::Held(p) => Some(p),
            _ => None,
        };
        held.push((e.signed.header().seq, e.signed.id(), payload));
        Ok(())
    })?;
    Ok(Roster::derive(founder, held.iter().map(|(seq, id, p)| FounderEntry { seq: *seq, id: *id, payload: p.as_deref() })))
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
