//! The merge layer's commands (`agora accept`, `dispute`, `perspective`,
//! `consensus`...) and their inputs.

use agora_graph::event::TEXT_BYTES_MAX;
use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Deserialize;

/// The merge layer: positions on other agents' reasoning, and the views
/// derived from all chains together.
#[derive(Subcommand, Debug, Clone)]
pub enum MergeCommand {
    /// Accept another agent's chain up to an event: <author> <seq | entry id>.
    Accept(Accept),
    /// Dispute exactly one event: <entry> "reason" [--counter "counter-claim"].
    Dispute(Dispute),
    /// Withdraw one of this agent's disputes: <dispute entry>.
    Withdraw(Withdraw),
    /// Resolve a fork of this agent's own chain: <entry at the fork seq on the branch that continues>.
    ResolveFork(ResolveFork),
    /// An agent's perspective: its chain, what it accepts, minus what it disputes, with statuses (default: this agent).
    Perspective(Perspective),
    /// Which prefix of each chain at least k agents accept, what is disputed and by whom.
    Consensus(Consensus),
    /// The disagreement map across agents: each disputed event, what led to it,
    /// who accepts and who disputes it, counter-claims; and forked chains by branch.
    Disputes(Disputes),
    /// Verify an agent's replicated chain end to end: forks, gaps, disputes, accept frontiers. Exit 3 on problems.
    Audit(AgentRef),
    /// The merged view's hash: equal on every node that holds the same entries.
    ViewHash,
}

// ---------------------------------------------------------------------------
// Inputs

/// Accept another agent's chain up to an event.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Accept {
    /// The agent whose chain is accepted (its 64-hex agent id).
    #[serde(rename = "agent", alias = "author")]
    pub author: String,
    /// Through which event: a seq number of that chain, or an entry id.
    pub up_to: String,
}

/// Dispute exactly one event.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Dispute {
    /// The event disputed.
    pub target: String,
    /// Why it is wrong.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub reason: String,
    /// What should be believed instead.
    #[arg(long)]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub counter: Option<String>,
}

/// Withdraw one of this agent's disputes.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Withdraw {
    /// The dispute event (returned as `id` when it was recorded).
    #[serde(rename = "target", alias = "dispute")]
    pub dispute: String,
}

/// Resolve a fork of this agent's own chain.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ResolveFork {
    /// The entry at the forked seq on the branch that continues.
    #[serde(rename = "target", alias = "keep")]
    pub keep: String,
}

/// An agent's perspective.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Perspective {
    /// The agent (default: this one).
    #[serde(default)]
    pub agent: Option<String>,
    /// Only the entries dated at or before this time (ms since the epoch,
    /// or YYYY-MM-DD in UTC): the view as it was then, read with today's
    /// roster.
    #[arg(long, value_name = "MS|DATE")]
    #[serde(default)]
    pub as_of: Option<String>,
    /// Leave out the node list (`nodes` is empty; `node_count` says how
    /// many there are).
    #[arg(long)]
    #[serde(default)]
    pub summary: bool,
}

/// What at least k agents accept.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Consensus {
    /// k: how many agents must accept a prefix of a chain.
    #[arg(long, short = 'k')]
    #[schemars(range(min = 1))]
    pub quorum: usize,
    /// The agents counted (default: every agent that wrote; on the command
    /// line comma-separated or repeated).
    #[arg(long)]
    #[serde(default)]
    pub agents: Vec<String>,
    /// Only the entries dated at or before this time (ms since the epoch,
    /// or YYYY-MM-DD in UTC): the view as it was then, read with today's
    /// roster.
    #[arg(long, value_name = "MS|DATE")]
    #[serde(default)]
    pub as_of: Option<String>,
    /// Count each chain's accept frontiers and disputed events instead of
    /// listing them (`frontiers` and `disputed` are empty;
    /// `frontier_count` and `disputed_count` say how many).
    #[arg(long)]
    #[serde(default)]
    pub summary: bool,
}

/// The disagreement map across agents.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Disputes {
    /// Only these agents' accepts and disputes (default: all; on the
    /// command line comma-separated or repeated).
    #[arg(long)]
    #[serde(default)]
    pub agents: Vec<String>,
    /// Only the entries dated at or before this time (ms since the epoch,
    /// or YYYY-MM-DD in UTC): the view as it was then, read with today's
    /// roster.
    #[arg(long, value_name = "MS|DATE")]
    #[serde(default)]
    pub as_of: Option<String>,
    /// Count who accepts each disputed event and each fork side's entries
    /// instead of listing them (`accepted_by` and `members` are empty;
    /// `accepted_by_count` and `member_count` say how many).
    #[arg(long)]
    #[serde(default)]
    pub summary: bool,
}

/// One agent named alone.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AgentRef {
    /// The agent (its 64-hex agent id).
    pub agent: String,
}
