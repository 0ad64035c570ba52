//! Workspace membership (`agora admit`, `remove`, `roster`) and the home's
//! keyring (`agora agent`): the commands and their inputs.

use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Deserialize;

/// Workspace membership, written by the founder.
#[derive(Subcommand, Debug, Clone)]
pub enum MembershipCommand {
    /// Admit an agent to this workspace (founder only): <agent> ["note"].
    Admit(Admit),
    /// Remove an agent from this workspace (the founder, or an admin's
    /// vote): <agent> ["reason"] [--at ENTRY].
    Remove(Remove),
    /// Name the workspace's admins and how many make a quorum (founder
    /// only): <agent>... --threshold K. None with --threshold 0.
    Admins(AdminsSet),
    /// The workspace roster, derived from the founder's chain and its admins' votes.
    Roster,
}

/// The keyring's commands.
#[derive(Subcommand, Debug, Clone)]
pub enum AgentCommand {
    /// Create a named agent: a new key in <home>/agents/NAME.key (mode
    /// 0600). Prints its id; the workspace founder admits it (`agora admit
    /// NAME`) before its entries count anywhere.
    New(AgentName),
    /// The home's agents: its own and the keyring's, with ids, display
    /// names (the roster's admission note) and chain lengths.
    List,
    /// One agent of the keyring (or `self`, the home's own agent).
    Show(AgentName),
}

// ---------------------------------------------------------------------------
// Inputs

/// Admit an agent to the workspace.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Admit {
    /// The agent: its 64-hex id, or the name of an agent of this home's keyring.
    pub agent: String,
    /// Who it is: the first line is its display name (`agora agent list`; default: its keyring name).
    #[arg(default_value = "")]
    #[serde(default)]
    pub note: String,
}

/// A named agent of the home's keyring.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AgentName {
    /// The agent's name: 1 to 64 ASCII letters, digits, '-' or '_'.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
}

/// Remove an agent from the workspace.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Remove {
    /// The agent (64-hex agent id).
    pub agent: String,
    /// Why.
    #[arg(default_value = "")]
    #[serde(default)]
    pub reason: String,
    /// The agent's last entry that stays (id or prefix); default: its tip here.
    #[arg(long)]
    #[serde(default)]
    pub at: Option<String>,
}

/// Name the workspace's admins.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AdminsSet {
    /// The admins (ids or keyring names), each a member; none to name none.
    #[serde(default)]
    pub admins: Vec<String>,
    /// How many admins must write the same removal or recovery (1 to their number; 0 with none).
    #[arg(long)]
    pub threshold: u64,
    /// Why, at most 1,024 bytes.
    #[arg(long, default_value = "")]
    #[serde(default)]
    pub note: String,
}
