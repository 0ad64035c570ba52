//! `agora agent new|list|show`: the home's keyring. One home (one store, one
//! node, one libp2p identity) hosts any number of named agents, each with
//! its own key and chain, each admitted to the workspace on its own; a
//! command acts as one with `--as NAME` (`Session::key`).

use crate::cli::AgentCommand;
use crate::session::Session;
use agora_command_line::inputs::AgentName;
use agora_core::{AgentId, AgentKey};
use anyhow::{Result, bail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::process::ExitCode;

use agora_home::home::OWN_AGENT;

/// Run one keyring command.
pub fn run(s: &Session, command: AgentCommand) -> Result<ExitCode> {
    match command {
        AgentCommand::New(AgentName { name }) => new(s, &name),
        AgentCommand::List => list(s),
        AgentCommand::Show(AgentName { name }) => show(s, &name),
    }
}

/// What the workspace knows of agents: its founder, members and their
/// display names, and each chain's length here.
struct Known {
    founder: AgentId,
    members: std::collections::BTreeSet<AgentId>,
    names: BTreeMap<AgentId, String>,
}

impl Known {
    fn read(s: &Session) -> Result<Self> {
        let founder = s.founder()?;
        let roster = agora_view::derive_roster(s.store()?, founder)?;
        let names = agora_view::display_names(s.store()?, &roster)?;
        Ok(Self { founder, members: roster.member_set(), names })
    }

    fn answer(&self, s: &Session, name: &str, key: &AgentKey, key_file: std::path::PathBuf) -> Result<AgentAnswer> {
        let id = key.agent_id();
        Ok(AgentAnswer {
            name: name.to_string(),
            id: id.to_string(),
            display_name: self.names.get(&id).cloned(),
            admitted: self.members.contains(&id),
            founder: id == self.founder,
            max_seq: s.store()?.tip_summary(&id)?.map_or(0, |t| t.head.seq),
            key_file: key_file.display().to_string(),
        })
    }
}

fn text(a: &AgentAnswer) -> String {
    let role = if a.founder {
        "founder"
    } else if a.admitted {
        "member"
    } else {
        "not admitted"
    };
    let shown = a.display_name.as_deref().map_or(String::new(), |d| format!(" \"{d}\""));
    format!("{:<16} {}{shown}  {role}, {} entries", a.name, a.id, a.max_seq)
}

/// `agora agent new NAME`.
fn new(s: &Session, name: &str) -> Result<ExitCode> {
    if name == OWN_AGENT {
        bail!("{OWN_AGENT:?} names the home's own agent (agent.key); choose another name");
    }
    let key = s.home.new_agent(name)?;
    let answer = Known::read(s)?.answer(s, name, &key, s.home.agent_key_path(name)?)?;
    let hint = if answer.admitted {
        String::new()
    } else {
        format!("\nnot admitted yet: the founder admits it with `agora admit {name}` (its entries count nowhere before)")
    };
    let text = format!("{}{hint}", answer.id);
    s.print_lazy(|| &answer, || text)?;
    Ok(ExitCode::SUCCESS)
}

/// `agora agent list`: the home's own agent, then the keyring's by name.
fn list(s: &Session) -> Result<ExitCode> {
    let known = Known::read(s)?;
    let mut agents = vec![known.answer(s, OWN_AGENT, &s.home.load_key()?, s.home.key_path())?];
    for (name, key) in s.home.agents()? {
        agents.push(known.answer(s, &name, &key, s.home.agent_key_path(&name)?)?);
    }
    let answer = AgentList { agents };
    let text = answer.agents.iter().map(text).collect::<Vec<_>>().join("\n");
    s.print_lazy(|| &answer, || text)?;
    Ok(ExitCode::SUCCESS)
}

/// `agora agent show NAME`.
fn show(s: &Session, name: &str) -> Result<ExitCode> {
    let known = Known::read(s)?;
    let answer = if name == OWN_AGENT {
        known.answer(s, OWN_AGENT, &s.home.load_key()?, s.home.key_path())?
    } else {
        known.answer(s, name, &s.home.load_agent_key(Some(name))?, s.home.agent_key_path(name)?)?
    };
    let text = text(&answer);
    s.print_lazy(|| &answer, || text)?;
    Ok(ExitCode::SUCCESS)
}

/// An agent named on the command line: a full agent id, or the name of an
/// agent of this home's keyring (`self`: the home's own agent). `what`
/// names the argument in the error.
pub fn agent_by_name_or_id(s: &Session, text: &str, what: &str) -> Result<AgentId> {
    if text.len() == 64 {
        return crate::args::agent_id(text, what);
    }
    if text == OWN_AGENT {
        return Ok(s.home.load_key()?.agent_id());
    }
    if agora_home::home::valid_agent_name(text) && s.home.agent_key_path(text)?.exists() {
        return Ok(s.home.load_agent_key(Some(text))?.agent_id());
    }
    crate::args::agent_id(text, what)
}

/// One agent of the home: its own (`self`) or one of the keyring's.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentAnswer {
    /// Its name in this home (`self` for the home's own agent); `--as NAME` acts as it.
    pub name: String,
    /// Its agent id (64 hex characters).
    pub id: String,
    /// Its display name: the first line of the roster's admission note, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The workspace's roster admits it: its entries count in every view.
    pub admitted: bool,
    /// It founded the workspace.
    pub founder: bool,
    /// Its chain's highest seq held here (0: nothing written yet).
    pub max_seq: u64,
    /// Its key file (mode 0600).
    pub key_file: String,
}

/// `agent list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentList {
    /// The home's own agent first, then the keyring's by name.
    pub agents: Vec<AgentAnswer>,
}
