//! An agent's keys (`protocol-spec/keys.md`): its next key, rotation to it,
//! revocation of the current key after a trust boundary, and the key
//! history written in its chain.

use crate::args::{now_ms, parse_author};
use crate::output::refused;
use crate::session::Session;
use agora_command_line::inputs::{KeyCommand, KeyHistory, KeyNew, KeyNext, KeyRecover, KeyRevoke, KeyRotate, KeyTakeOver};
use agora_core::{AgentId, AgentKey, EntryId, KeyEvent, SignedEntry, key_commitment};
use agora_store::StoreError;
use anyhow::{Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::ExitCode;

/// Run one key command.
pub fn run(s: &Session, command: KeyCommand) -> Result<ExitCode> {
    match command {
        KeyCommand::Next(KeyNext { export }) => next(s, export.as_deref()),
        KeyCommand::Rotate(KeyRotate { next_key }) => rotate(s, None, next_key.as_deref()),
        KeyCommand::Revoke(KeyRevoke { after, next_key }) => rotate(s, Some(&after), next_key.as_deref()),
        KeyCommand::History(KeyHistory { agent }) => history(s, agent.as_deref()),
        KeyCommand::Recover(KeyRecover { agent, after, key, note }) => recover(s, &agent, &after, &key, note),
        KeyCommand::TakeOver(KeyTakeOver { key }) => take_over(s, &key),
        KeyCommand::New(KeyNew { out }) => new_key(s, &out),
    }
}

/// Where an agent's next key is.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct NextKeyAnswer {
    /// The agent.
    pub agent: String,
    /// The commitment to its next key this home holds (SHA-256 of the key, hex).
    pub commitment: Option<String>,
    /// The next key's file in the home, while it is there; null once exported.
    pub in_home: Option<String>,
    /// The file it was exported to by this command.
    pub exported_to: Option<String>,
}

fn next(s: &Session, export: Option<&Path>) -> Result<ExitCode> {
    let key = s.key()?;
    let name = own_name(s);
    if let Some(to) = export {
        s.home.export_next_key(name, to)?;
    }
    let path = s.home.next_key_path(name)?;
    let answer = NextKeyAnswer {
        agent: key.agent_id().to_string(),
        commitment: s.home.commitment(name)?.map(hex::encode),
        in_home: path.exists().then(|| path.display().to_string()),
        exported_to: export.map(|p| p.display().to_string()),
    };
    s.print(&answer, || match (&answer.exported_to, &answer.in_home) {
        (Some(to), _) => format!("next key moved to {to}: keep it apart from this home; `agora key rotate --next-key {to}` uses it"),
        (None, Some(p)) => format!("next key in {p}: move it apart with `agora key next --export FILE`"),
        (None, None) => "the next key is not in this home (exported): `agora key rotate --next-key FILE` uses it".to_string(),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A key event this command wrote.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct KeyEventAnswer {
    /// The agent.
    pub agent: String,
    /// The key event's entry.
    pub entry: String,
    /// Its seq.
    pub seq: u64,
    /// `rotate`.
    pub event: String,
    /// The trust boundary: the entry the event follows (protocol-spec/keys.md).
    pub boundary: String,
    /// The key that signs the agent's entries from this one on.
    pub key: String,
    /// The commitment to the next key, drawn by this command.
    pub commitment: String,
    /// Where the new next key is (move it apart with `agora key next --export`).
    pub next_key_file: String,
}

/// A rotation after this agent's tip (`after` = None) or a revocation
/// after the entry `after` names: either way signed by the pre-committed
/// next key, which becomes the current key; a new next key is drawn.
fn rotate(s: &Session, after: Option<&str>, next_key: Option<&Path>) -> Result<ExitCode> {
    let key = s.key()?;
    let me = key.agent_id();
    let name = own_name(s);
    let store = s.store()?;
    let boundary: EntryId = match after {
        Some(text) => {
            let id = store.resolve(text)?;
            match store.locate(&id)? {
                Some((author, _)) if author == me => id,
                _ => return Err(refused("not_own_entry", format!("{id} is not an entry of this agent's chain ({me})"))),
            }
        }
        None => match store.tips(&me)?.as_slice() {
            [] => {
                return Err(refused("empty_chain", "this agent's chain is empty: its first entry commits to the next key, so there is nothing to rotate yet"));
            }
            [tip] => tip.id,
            tips => {
                return Err(refused(
                    "own_chain_forked",
                    format!("this agent's chain has {} tips; revoke after the last entry you vouch for: `agora key revoke <entry>`", tips.len()),
                ));
            }
        },
    };
    let prev = store.get(&boundary)?.with_context(|| format!("entry {boundary} vanished while reading"))?;
    let Some(committed) = prev.signed.header().keys.map(|k| k.next) else {
        return Err(refused(
            "no_commitment",
            format!("{boundary} commits to no next key (a chain written before pre-rotation): its next entry will commit to one; rotate after it"),
        ));
    };
    let next = s.home.load_next_key(name, next_key)?.for_agent(me);
    if key_commitment(&next.public_key()) != committed {
        return Err(refused("rotation_key", format!("the next key {} is not the one {boundary} committed to", next.public_key())));
    }
    let after_next = agora_home::home::Home::draw_key()?;
    let commitment = key_commitment(&after_next.public_key());
    let entry = store.append_key_event(&next, &boundary, KeyEvent::Rotate, commitment, b"", now_ms()).map_err(|e| match e {
        StoreError::Import(failure) => refused("rotation_refused", failure.to_string()),
        other => other.into(),
    })?;
    s.home.install_keys(name, &next, &after_next)?;
    print_key_event(s, name, &me, &entry, &boundary, &next, commitment)
}

/// Answer a key event this home wrote: who signs from which seq, and where
/// the new next key is.
fn print_key_event(
    s: &Session,
    name: Option<&str>,
    agent: &AgentId,
    entry: &SignedEntry,
    boundary: &EntryId,
    key: &AgentKey,
    commitment: [u8; 32],
) -> Result<ExitCode> {
    let event = entry.header().key_event();
    let answer = KeyEventAnswer {
        agent: agent.to_string(),
        entry: entry.id().to_string(),
        seq: entry.header().seq,
        event: event.name().to_string(),
        boundary: boundary.to_string(),
        key: key.public_key().to_string(),
        commitment: hex::encode(commitment),
        next_key_file: s.home.next_key_path(name)?.display().to_string(),
    };
    let done = if event == KeyEvent::Recover { "recovered" } else { "rotated" };
    s.print(&answer, || {
        format!(
            "{done}: {} signs {} from seq {} ({}), after {}\nnew next key in {}: move it apart with `agora key next --export FILE`",
            answer.key, answer.agent, answer.seq, answer.entry, answer.boundary, answer.next_key_file
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A recovery the founder wrote, or an admin's vote for one
/// (`protocol-spec/roster.md`, `recover`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct RecoveryRecorded {
    /// The roster entry: the founder's that binds the recovery, or an admin's vote.
    pub id: String,
    /// Its seq in the founder's chain.
    pub seq: u64,
    /// The agent recovered.
    pub agent: String,
    /// The boundary: the agent's last legitimate entry.
    pub boundary: String,
    /// The boundary's seq.
    pub last_seq: u64,
    /// The key granted (public key, hex).
    pub key: String,
    /// For an admin's vote: where its quorum stands (null for the founder's).
    #[serde(default)]
    pub vote: Option<crate::membership::VoteCount>,
}

/// `agora key recover AGENT --after ENTRY --key KEY`: the founder binds
/// AGENT, whose keys are both lost, to KEY after ENTRY; an admin writes
/// the same event as its vote, which binds once a quorum wrote it
/// (roster.md).
fn recover(s: &Session, agent_text: &str, after: &str, key_text: &str, note: String) -> Result<ExitCode> {
    let agent = crate::agents::agent_by_name_or_id(s, agent_text, "the agent to recover")?;
    let key = crate::args::agent_id(key_text, "the new key (64 hex, as `agora key new` prints it)")?;
    let store = s.store()?;
    let head = store.resolve(after)?;
    let last_seq = match store.locate(&head)? {
        Some((author, seq)) if author == agent => seq,
        _ => return Err(refused("not_agents_entry", format!("{head} is not an entry of {agent}'s chain held here"))),
    };
    let event = agora_roster::RosterEvent::Recover { agent, last_seq, head, key, note };
    event.check_local(&s.founder()?).map_err(|e| crate::membership::refused_roster(&e))?;
    let entry = crate::membership::write_event(s, &event)?;
    let vote = crate::membership::vote_count(s, &entry, &event)?;
    let answer = RecoveryRecorded {
        id: entry.id().to_string(),
        seq: entry.header().seq,
        agent: agent.to_string(),
        boundary: head.to_string(),
        last_seq,
        key: key.to_string(),
        vote,
    };
    s.print(&answer, || match &answer.vote {
        Some(v) if v.outcome != "applied" => format!(
            "{}: a vote to bind {} to the key {} after {} (seq {}): {} of {} admins ({})",
            answer.id, answer.agent, answer.key, answer.boundary, answer.last_seq, v.voters, v.threshold, v.outcome
        ),
        _ => format!(
            "{}: {} is bound to the key {} after {} (seq {}); its owner takes over with `agora key take-over --key FILE`",
            answer.id, answer.agent, answer.key, answer.boundary, answer.last_seq
        ),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `agora key take-over --key FILE`: the owner's side of a recovery. The
/// roster's last binding of the agent acted as must grant FILE's key; the
/// recover entry is signed by it after the binding's boundary, the key is
/// installed as the agent's, and a new next key is drawn and committed to.
fn take_over(s: &Session, file: &Path) -> Result<ExitCode> {
    let granted = agora_home::home::load_key_file(file)?;
    let name = own_name(s);
    let key_path = match name {
        None => s.home.key_path(),
        Some(n) => s.home.agent_key_path(n)?,
    };
    let store = s.store()?;
    let roster = agora_view::derive_roster(store, s.founder()?)?;
    let bound: Vec<(AgentId, agora_roster::Recovery)> =
        roster.recoveries.iter().filter_map(|(a, list)| list.last().filter(|r| r.key == granted.public_key()).map(|r| (*a, *r))).collect();
    let (me, binding) = match bound.as_slice() {
        [one] => *one,
        [] => {
            return Err(refused(
                "not_bound",
                format!(
                    "the roster binds the key {} to no agent (as its last recovery): the founder, or a quorum of its admins, runs `agora key recover`",
                    granted.public_key()
                ),
            ));
        }
        _ => return Err(refused("bound_twice", format!("the roster binds the key {} to several agents", granted.public_key()))),
    };
    if key_path.exists() {
        let held = agora_home::home::load_key_file(&key_path)?;
        if held.agent_id() != me {
            return Err(refused("other_agent", format!("this home's key at {} is {}'s, not {me}'s", key_path.display(), held.agent_id())));
        }
    }
    if store.get(&binding.head)?.is_none() {
        return Err(refused(
            "boundary_not_held",
            format!("the boundary {} of the recovery is not held here yet: let the node sync, then run this again", binding.head),
        ));
    }
    let key = granted.for_agent(me);
    let after_next = agora_home::home::Home::draw_key()?;
    let commitment = key_commitment(&after_next.public_key());
    let entry = store.append_key_event(&key, &binding.head, KeyEvent::Recover, commitment, b"", now_ms()).map_err(|e| match e {
        StoreError::Import(failure) => refused("recovery_refused", failure.to_string()),
        other => other.into(),
    })?;
    s.home.install_keys(name, &key, &after_next)?;
    print_key_event(s, name, &me, &entry, &binding.head, &key, commitment)
}

/// A new key file.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct NewKeyAnswer {
    /// The file written (mode 0600).
    pub file: String,
    /// Its public key (hex): what `agora key recover --key` takes.
    pub public_key: String,
}

/// `agora key new --out FILE`.
fn new_key(s: &Session, out: &Path) -> Result<ExitCode> {
    let key = agora_home::home::Home::draw_key()?;
    agora_home::home::write_private_file(out, &key.to_key_file_bytes())?;
    let answer = NewKeyAnswer { file: out.display().to_string(), public_key: key.public_key().to_string() };
    s.print(&answer, || format!("{}\nkey file {} (keep it apart; the founder binds its public key with `agora key recover`)", answer.public_key, answer.file))?;
    Ok(ExitCode::SUCCESS)
}

/// One key event of an agent's chain.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct KeyEventRow {
    /// The event's entry.
    pub entry: String,
    /// Its seq.
    pub seq: u64,
    /// `commit` (the chain's first commitment), `rotate` or `recover`.
    pub event: String,
    /// The entry before it: the trust boundary of a rotation.
    pub boundary: Option<String>,
    /// The key that signs from this entry on.
    pub key: String,
    /// The commitment to the next key it makes (hex).
    pub commitment: String,
}

/// An agent's key history.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct KeyHistoryAnswer {
    /// The agent.
    pub agent: String,
    /// Its key events in seq order (every branch).
    pub events: Vec<KeyEventRow>,
    /// The key that signs each tip of its chain.
    pub current: Vec<String>,
    /// The recoveries the roster binds (the last decides).
    #[serde(default)]
    pub recoveries: Vec<crate::membership::RecoveryRow>,
}

fn history(s: &Session, agent: Option<&str>) -> Result<ExitCode> {
    let agent: AgentId = match agent {
        Some(a) => parse_author(a)?,
        None => s.key()?.agent_id(),
    };
    let store = s.store()?;
    let mut events = Vec::new();
    let mut prev_keyed: std::collections::HashMap<EntryId, bool> = std::collections::HashMap::new();
    let mut from = 1;
    loop {
        let page = store.chain(&agent, from, 10_000)?;
        let Some(last) = page.last() else { break };
        from = last.signed.header().seq + 1;
        for e in &page {
            let h = e.signed.header();
            prev_keyed.insert(e.signed.id(), h.keys.is_some());
            if let Some(row) = key_event_row(&e.signed, |b| prev_keyed.get(b).copied()) {
                events.push(row);
            }
        }
        if page.len() < 10_000 {
            break;
        }
    }
    let mut current = Vec::new();
    for tip in store.tips(&agent)? {
        if let Some(e) = store.get(&tip.id)? {
            current.push(e.signed.header().signing_key().to_string());
        }
    }
    current.dedup();
    let roster = agora_view::derive_roster(store, s.founder()?)?;
    let recoveries = crate::membership::recovery_rows(store, &roster, &agent)?;
    let answer = KeyHistoryAnswer { agent: agent.to_string(), events, current, recoveries };
    s.print(&answer, || {
        let mut lines: Vec<String> =
            answer.events.iter().map(|r| format!("{:>6}  {:<8} {}  key {}  next {}", r.seq, r.event, r.entry, r.key, &r.commitment[..16])).collect();
        lines.extend(answer.recoveries.iter().map(|r| {
            let held = r.entry.as_deref().map_or("recover entry not held yet".to_string(), |e| format!("recover entry {e}"));
            format!("recovery bound by {}: key {} after {} (seq {}), {held}", r.bound_by, r.key, r.boundary, r.last_seq)
        }));
        lines.push(format!("current key {}", answer.current.join(", ")));
        lines.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The key event `e` is, if any: a first commitment (a version-2 entry at
/// seq 1 or after a version-1 one) or a rotation.
fn key_event_row(e: &SignedEntry, prev_keyed: impl Fn(&EntryId) -> Option<bool>) -> Option<KeyEventRow> {
    let h = e.header();
    let keys = h.keys?;
    let event = match keys.event {
        KeyEvent::None if h.backlink.is_none_or(|b| prev_keyed(&b) == Some(false)) => "commit",
        KeyEvent::None => return None,
        other => other.name(),
    };
    Some(KeyEventRow {
        entry: e.id().to_string(),
        seq: h.seq,
        event: event.to_string(),
        boundary: h.backlink.map(|b| b.to_string()),
        key: h.signing_key().to_string(),
        commitment: hex::encode(keys.next),
    })
}

/// The keyring name of the agent the command acts as (`None`: the home's own).
fn own_name<'a>(s: &'a Session<'_>) -> Option<&'a str> {
    s.agent_name().filter(|n| *n != agora_home::home::OWN_AGENT)
}
