//! `agora admit`, `remove` and `roster`: workspace membership, recorded as
//! roster events in the founder's own chain (see `agora-roster`).

use crate::cli::MembershipCommand;
use crate::session::Session;
use agora_command_line::inputs::{Admit, Remove};
use agora_core::AgentId;
use agora_roster::RosterEvent;
use anyhow::Result;
use serde_json::json;
use std::process::ExitCode;

/// Run one membership command.
pub fn run(s: &Session, command: MembershipCommand) -> Result<ExitCode> {
    match command {
        MembershipCommand::Admit(Admit { agent, note }) => admit(s, &agent, &note),
        MembershipCommand::Remove(Remove { agent, reason }) => remove(s, &agent, &reason),
        MembershipCommand::Roster => roster(s),
    }
}

fn record(s: &Session, event: RosterEvent) -> Result<ExitCode> {
    let key = s.key()?;
    let founder = s.founder()?;
    if key.agent_id() != founder {
        return Err(crate::output::refused(
            "founder_only",
            format!(
                "refused: only the workspace founder {founder} can change its roster; this agent is {} \
             (roster events in any other chain have no effect)",
                key.agent_id()
            ),
        ));
    }
    event.check_local(&founder)?;
    let entry = crate::own_chain::append_own(s, &event.encode())?;
    let last_seq = match &event {
        RosterEvent::RemoveAfter { last_seq, .. } | RosterEvent::RemoveAt { last_seq, .. } => Some(*last_seq),
        _ => None,
    };
    s.print(&json!({ "id": entry.id().to_string(), "seq": entry.header().seq, "last_seq_admitted": last_seq }), || match last_seq {
        Some(n) => format!("{} (entries up to seq {n} stay admitted)", entry.id()),
        None => entry.id().to_string(),
    })?;
    Ok(ExitCode::SUCCESS)
}

fn agent(s: &Session, text: &str) -> Result<AgentId> {
    crate::agents::agent_by_name_or_id(s, text, "the agent to admit or remove")
}

/// `agora admit <agent> [note]`: the agent by id or by its name in this
/// home's keyring; the note's first line is its display name, by default
/// its keyring name.
pub fn admit(s: &Session, agent_text: &str, note: &str) -> Result<ExitCode> {
    let agent = agent(s, agent_text)?;
    let note = if note.is_empty() && agent_text.len() != 64 { agent_text.to_string() } else { note.to_string() };
    record(s, RosterEvent::Admit { agent, note })
}

/// `agora remove <agent> [reason]`: the agent's history as this node holds
/// it is pinned by its head (its tip at the highest seq; of several there,
/// the first by id) and stays admitted; nothing else its key signs, at any
/// seq, counts anywhere (roster.md), so every node counts the same entries
/// of it. An agent of which nothing is held is removed with nothing kept.
pub fn remove(s: &Session, agent_text: &str, reason: &str) -> Result<ExitCode> {
    let agent = agent(s, agent_text)?;
    let reason = reason.to_string();
    match s.store()?.tip_summary(&agent)? {
        Some(tips) => record(s, RosterEvent::RemoveAt { agent, last_seq: tips.head.seq, head: tips.head.id, reason }),
        None => record(s, RosterEvent::RemoveAfter { agent, last_seq: 0, reason }),
    }
}

/// `agora roster`.
pub fn roster(s: &Session) -> Result<ExitCode> {
    let founder = s.founder()?;
    let r = agora_view::derive_roster(s.store()?, founder)?;
    let names = agora_view::display_names(s.store()?, &r)?;
    let members: Vec<_> =
        r.members.iter().map(|(a, by)| json!({ "agent": a.to_string(), "admitted_by": by.map(|e| e.to_string()), "display_name": names.get(a) })).collect();
    let removed: Vec<_> = r.removed.iter().map(|(a, by)| json!({ "agent": a.to_string(), "removed_by": by.to_string() })).collect();
    let skipped: Vec<_> = r.skipped.iter().map(|k| json!({ "entry": k.id.to_string(), "reason": k.reason })).collect();
    let cut_off: Vec<_> = r.cut_off.iter().map(|(a, n)| json!({ "agent": a.to_string(), "last_seq_admitted": n })).collect();
    s.print(
        &json!({ "founder": founder.to_string(), "members": members, "removed": removed, "frozen_at_fork_seq": r.frozen_at_fork_seq, "pending_at_seq": r.pending_at_seq, "cut_off": cut_off, "skipped": skipped }),
        || {
            let mut out = vec![format!("founder {founder}")];
            out.extend(r.members.keys().filter(|a| **a != founder).map(|a| match names.get(a) {
                Some(name) => format!("member  {a} \"{name}\""),
                None => format!("member  {a}"),
            }));
            out.extend(r.removed.keys().map(|a| match r.cut_off.get(a) {
                Some(n) => format!("removed {a} (its entries up to seq {n} stay admitted)"),
                None => format!("removed {a}"),
            }));
            if let Some(seq) = r.pending_at_seq {
                out.push(format!("the payload of the founder's entry at seq {seq} has not arrived: the roster is as of seq {}", seq - 1));
            }
            if let Some(seq) = r.frozen_at_fork_seq {
                out.push(format!("the founder's chain is forked at seq {seq}: the roster is frozen before it"));
            }
            out.extend(r.skipped.iter().map(|k| format!("no effect: {} ({})", k.id, k.reason)));
            out.join("\n")
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
