//! `agora admit`, `remove`, `admins` and `roster`: workspace membership,
//! recorded as roster events in the founder's own chain, and the admins'
//! votes in theirs (see `agora-roster`).

use crate::cli::MembershipCommand;
use crate::session::Session;
use agora_command_line::inputs::{AdminsSet, Admit, Remove};
use agora_core::{AgentId, KeyEvent};
use agora_roster::RosterEvent;
use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// Run one membership command.
pub fn run(s: &Session, command: MembershipCommand) -> Result<ExitCode> {
    match command {
        MembershipCommand::Admit(Admit { agent, note }) => admit(s, &agent, &note),
        MembershipCommand::Remove(Remove { agent, reason, at }) => remove(s, &agent, &reason, at.as_deref()),
        MembershipCommand::Admins(AdminsSet { admins, threshold, note }) => set_admins(s, &admins, threshold, note),
        MembershipCommand::Roster => roster(s),
    }
}

fn record(s: &Session, event: RosterEvent) -> Result<ExitCode> {
    let entry = write_event(s, &event)?;
    let last_seq = match &event {
        RosterEvent::RemoveAfter { last_seq, .. } | RosterEvent::RemoveAt { last_seq, .. } => Some(*last_seq),
        _ => None,
    };
    let vote = vote_count(s, &entry, &event)?;
    let answer = RosterRecorded { id: entry.id().to_string(), seq: entry.header().seq, last_seq_admitted: last_seq, vote };
    s.print(&answer, || {
        let mut line = match last_seq {
            Some(n) => format!("{} (entries up to seq {n} stay admitted)", entry.id()),
            None => entry.id().to_string(),
        };
        if let Some(v) = &answer.vote {
            line.push_str(&format!("\n{}", v.line()));
        }
        line
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Append a roster event to this agent's chain: the founder's, any kind; an
/// admin's in force, a removal or a recovery as its vote. Any other agent
/// is refused (its roster events would have no effect), and so is an event
/// the checks before writing refuse (roster.md).
pub(crate) fn write_event(s: &Session, event: &RosterEvent) -> Result<agora_core::SignedEntry> {
    let key = s.key()?;
    let founder = s.founder()?;
    let me = key.agent_id();
    let roster = || agora_view::derive_roster(s.store()?, founder).map_err(anyhow::Error::from);
    if me == founder {
        if let RosterEvent::Admins { .. } = event {
            roster()?.check(event).map_err(|e| refused_roster(&e))?;
        }
    } else if !(event.is_quorum_act() && roster()?.admins.contains(&me)) {
        let (rule, who) =
            if event.is_quorum_act() { ("admins_only", "the workspace founder or one of its admins") } else { ("founder_only", "only the workspace founder") };
        return Err(crate::output::refused(
            rule,
            format!("refused: {who} ({founder}) can change its roster; this agent is {me} (roster events in any other chain have no effect)"),
        ));
    }
    event.check_local(&founder).map_err(|e| refused_roster(&e))?;
    crate::own_chain::append_own(s, &event.encode())
}

/// A check before writing refused `e`: its rule, named (roster.md).
pub(crate) fn refused_roster(e: &agora_roster::RosterError) -> anyhow::Error {
    let rule = match e {
        agora_roster::RosterError::NoteTooLong(_) => "limit",
        other => other.code(),
    };
    crate::output::refused(rule, e.to_string())
}

/// An admin's vote just written: how many admins in force wrote the same
/// act, and whether it applied (none for the founder's own events).
pub(crate) fn vote_count(s: &Session, entry: &agora_core::SignedEntry, event: &RosterEvent) -> Result<Option<VoteCount>> {
    let founder = s.founder()?;
    if entry.header().author == founder {
        return Ok(None);
    }
    let roster = agora_view::derive_roster(s.store()?, founder)?;
    let act = event.without_text();
    let v = roster.votes.iter().find(|v| v.event == act);
    Ok(Some(VoteCount {
        voters: v.map_or(0, |v| v.voters.len() as u64),
        threshold: roster.threshold,
        outcome: v.map_or("short", |v| outcome(v.outcome)).to_string(),
    }))
}

fn outcome(o: agora_roster::VoteOutcome) -> &'static str {
    match o {
        agora_roster::VoteOutcome::Short => "short",
        agora_roster::VoteOutcome::Applied => "applied",
        agora_roster::VoteOutcome::Conflict => "conflict",
    }
}

/// `agora admins A B C --threshold K`: the founder names the admins (sorted
/// by id, as the event requires) and lists the acts a quorum made that
/// the new set does not sustain.
pub fn set_admins(s: &Session, names: &[String], threshold: u64, note: String) -> Result<ExitCode> {
    let mut admins = Vec::with_capacity(names.len());
    for n in names {
        admins.push(crate::agents::agent_by_name_or_id(s, n, "an admin")?);
    }
    admins.sort();
    let event = RosterEvent::Admins { admins, threshold, note };
    let before = agora_view::derive_roster(s.store()?, s.founder()?)?;
    let entry = write_event(s, &event)?;
    let after = agora_view::derive_roster(s.store()?, s.founder()?)?;
    let withdrawn: Vec<String> = before
        .votes
        .iter()
        .filter(|v| v.outcome == agora_roster::VoteOutcome::Applied && !after.votes.iter().any(|w| w.event == v.event && w.outcome == v.outcome))
        .map(|v| act_text(&v.event))
        .collect();
    let answer = AdminsRecorded {
        id: entry.id().to_string(),
        seq: entry.header().seq,
        admins: after.admins.iter().map(|a| a.to_string()).collect(),
        threshold: after.threshold,
        withdrawn,
    };
    s.print(&answer, || {
        let mut out = vec![format!("{}: {} admins, {} of them make a quorum", answer.id, answer.admins.len(), answer.threshold)];
        out.extend(answer.withdrawn.iter().map(|w| format!("withdrawn (the new admins do not sustain it; write it yourself to keep it): {w}")));
        out.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A quorum act in one line.
fn act_text(e: &RosterEvent) -> String {
    match e {
        RosterEvent::RemoveAt { agent, last_seq, head, .. } => format!("remove_at {agent} at seq {last_seq} ({head})"),
        RosterEvent::Recover { agent, last_seq, head, key, .. } => format!("recover {agent} after seq {last_seq} ({head}) to key {key}"),
        other => format!("{other:?}"),
    }
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
pub fn remove(s: &Session, agent_text: &str, reason: &str, at: Option<&str>) -> Result<ExitCode> {
    let agent = agent(s, agent_text)?;
    let reason = reason.to_string();
    if let Some(at) = at {
        let store = s.store()?;
        let head = store.resolve(at)?;
        return match store.locate(&head)? {
            Some((author, last_seq)) if author == agent => record(s, RosterEvent::RemoveAt { agent, last_seq, head, reason }),
            _ => Err(crate::output::refused("not_agents_entry", format!("{head} is not an entry of {agent}'s chain held here"))),
        };
    }
    match s.store()?.tip_summary(&agent)? {
        Some(tips) => record(s, RosterEvent::RemoveAt { agent, last_seq: tips.head.seq, head: tips.head.id, reason }),
        None => record(s, RosterEvent::RemoveAfter { agent, last_seq: 0, reason }),
    }
}

/// `agora roster`.
pub fn roster(s: &Session) -> Result<ExitCode> {
    let founder = s.founder()?;
    let store = s.store()?;
    let r = agora_view::derive_roster(store, founder)?;
    let names = agora_view::display_names(store, &r)?;
    let mut members = Vec::with_capacity(r.members.len());
    for (a, by) in &r.members {
        let (key, rotations) = crate::revoked::current_key(store, &r, a)?;
        members.push(Member {
            agent: a.to_string(),
            admitted_by: by.map(|e| e.to_string()),
            display_name: names.get(a).cloned(),
            current_key: key.to_string(),
            rotations,
            recoveries: recovery_rows(store, &r, a)?,
        });
    }
    let answer = RosterAnswer {
        founder: founder.to_string(),
        members,
        removed: r.removed.iter().map(|(a, by)| RemovedAgent { agent: a.to_string(), removed_by: by.to_string() }).collect(),
        frozen_at_fork_seq: r.frozen_at_fork_seq,
        pending_at_seq: r.pending_at_seq,
        cut_off: r.cut_off.iter().map(|(a, n)| CutOff { agent: a.to_string(), last_seq_admitted: *n }).collect(),
        skipped: r.skipped.iter().map(|k| SkippedEvent { entry: k.id.to_string(), reason: k.reason.clone() }).collect(),
        admins: r.admins.iter().map(|a| a.to_string()).collect(),
        threshold: r.threshold,
        votes: r
            .votes
            .iter()
            .map(|v| VoteRow { act: act_text(&v.event), voters: v.voters.values().map(|e| e.to_string()).collect(), outcome: outcome(v.outcome).to_string() })
            .collect(),
    };
    s.print(&answer, || {
        let mut out = vec![format!("founder {founder}")];
        for m in answer.members.iter() {
            let key = match (m.rotations, m.recoveries.len()) {
                (0, 0) if m.current_key == m.agent => String::new(),
                (n, 0) => format!(" key {} ({n} rotations)", &m.current_key[..8]),
                (n, k) => format!(" key {} ({n} rotations, {k} recoveries)", &m.current_key[..8]),
            };
            if m.agent == answer.founder {
                if !key.is_empty() {
                    out[0].push_str(&key);
                }
                continue;
            }
            match &m.display_name {
                Some(name) => out.push(format!("member  {} \"{name}\"{key}", m.agent)),
                None => out.push(format!("member  {}{key}", m.agent)),
            }
        }
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
        if !answer.admins.is_empty() {
            out.push(format!("admins {} ({} make a quorum)", answer.admins.iter().map(|a| &a[..8]).collect::<Vec<_>>().join(" "), answer.threshold));
        }
        out.extend(answer.votes.iter().map(|v| format!("vote {}: {} of {} ({})", v.act, v.voters.len(), answer.threshold, v.outcome)));
        out.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `admit` and `remove`: the roster event's entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RosterRecorded {
    /// The new entry's id.
    pub id: String,
    /// Its seq in the founder's chain.
    pub seq: u64,
    /// For a removal: the agent's entries up to this seq stay admitted (null for an admission).
    pub last_seq_admitted: Option<u64>,
    /// For an admin's vote: where its quorum stands (null for the founder's events).
    #[serde(default)]
    pub vote: Option<VoteCount>,
}

/// Where an admin's vote stands.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VoteCount {
    /// Admins in force that wrote this act, this one included.
    pub voters: u64,
    /// How many make a quorum.
    pub threshold: u64,
    /// short, applied or conflict.
    pub outcome: String,
}

impl VoteCount {
    fn line(&self) -> String {
        format!("vote {} of {} ({})", self.voters, self.threshold, self.outcome)
    }
}

/// `admins`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminsRecorded {
    /// The founder's entry.
    pub id: String,
    /// Its seq.
    pub seq: u64,
    /// The admins in force.
    pub admins: Vec<String>,
    /// How many make a quorum.
    pub threshold: u64,
    /// Acts a quorum made that the new admins do not sustain.
    pub withdrawn: Vec<String>,
}

/// An act admins voted for.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VoteRow {
    /// The act.
    pub act: String,
    /// The votes of the admins in force (entries).
    pub voters: Vec<String>,
    /// short, applied or conflict.
    pub outcome: String,
}

/// `roster`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RosterAnswer {
    /// The founder.
    pub founder: String,
    /// The members.
    pub members: Vec<Member>,
    /// The agents removed.
    pub removed: Vec<RemovedAgent>,
    /// The founder's chain forks at this seq: the roster is frozen before it (null when not).
    pub frozen_at_fork_seq: Option<u64>,
    /// The founder's entry at this seq has no payload yet: the roster stops before it (null when not).
    pub pending_at_seq: Option<u64>,
    /// Removed agents' last admitted seqs.
    pub cut_off: Vec<CutOff>,
    /// Roster events with no effect, and why.
    pub skipped: Vec<SkippedEvent>,
    /// The admins in force.
    #[serde(default)]
    pub admins: Vec<String>,
    /// How many admins make a quorum (0: none).
    #[serde(default)]
    pub threshold: u64,
    /// The acts admins voted for.
    #[serde(default)]
    pub votes: Vec<VoteRow>,
}

/// A member.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Member {
    /// Its agent id.
    pub agent: String,
    /// The admission's entry (null for the founder).
    pub admitted_by: Option<String>,
    /// Its display name (null when none).
    pub display_name: Option<String>,
    /// The key that signs for it now (hex): the signer of its highest entry that counts; its agent id when it never rotated.
    pub current_key: String,
    /// How many key rotations of it count (0: it signs with its inception key, its id).
    pub rotations: u64,
    /// The recoveries the roster binds (the last decides).
    #[serde(default)]
    pub recoveries: Vec<RecoveryRow>,
}

/// An agent removed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RemovedAgent {
    /// Its agent id.
    pub agent: String,
    /// The removal's entry.
    pub removed_by: String,
}

/// How far a removed agent stays admitted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CutOff {
    /// Its agent id.
    pub agent: String,
    /// Its entries up to this seq stay admitted.
    pub last_seq_admitted: u64,
}

/// A roster event with no effect.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SkippedEvent {
    /// Its entry.
    pub entry: String,
    /// Why.
    pub reason: String,
}

/// A recovery the roster binds.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct RecoveryRow {
    /// The boundary: the agent's last legitimate entry.
    pub boundary: String,
    /// Its seq.
    pub last_seq: u64,
    /// The key granted.
    pub key: String,
    /// The roster entry that binds it: the founder's, or a quorum's first vote.
    pub bound_by: String,
    /// The recover entry, once held.
    pub entry: Option<String>,
}

/// The roster's recoveries of `agent` as rows, each with its recover entry
/// when held (one short read at the seq after each boundary).
pub fn recovery_rows(store: &agora_store::Store, roster: &agora_roster::Roster, agent: &AgentId) -> Result<Vec<RecoveryRow>> {
    let mut rows = Vec::new();
    for r in roster.recoveries.get(agent).map_or(&[][..], Vec::as_slice) {
        let at = store.chain(agent, r.last_seq.saturating_add(1), 64)?;
        let entry = at
            .iter()
            .map(|e| &e.signed)
            .find(|e| {
                let h = e.header();
                h.seq == r.last_seq + 1 && h.key_event() == KeyEvent::Recover && h.backlink == Some(r.head) && h.signing_key() == r.key
            })
            .map(|e| e.id().to_string());
        rows.push(RecoveryRow { boundary: r.head.to_string(), last_seq: r.last_seq, key: r.key.to_string(), bound_by: r.by.to_string(), entry });
    }
    Ok(rows)
}
