//! Each command's input, written once: the same struct is the command
//! line's arguments (clap), an operation's JSON input (serde) and its JSON
//! Schema (schemars), with one doc comment per field for all three. A
//! field's JSON name is its Rust name, except where one thing has one name
//! across operations: the entry a move is about is `target` (a second one
//! `other`, a relating claim `claim`), an agent is `agent` (each keeps its
//! older name as an alias); on the command line, targets come first as
//! positional arguments and texts last, options are `--flags`.
//!
//! An optional number or text is `Option` here and its default is applied
//! by the command, so that both front ends share it.
//!
//! A text that becomes a field of an event is at most
//! [`TEXT_BYTES_MAX`] bytes (the merge layer's texts have the same limit):
//! its schema says `maxLength` with that number, in characters, which is
//! the most such a text can have (a character is one to four bytes).

use crate::named::Named;
use agora_graph::event::{Confidence, TEXT_BYTES_MAX};
use agora_graph::{MemoryKind, Relation, TaskState};
use clap::Args;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

// ---------------------------------------------------------------------------
// Reasoning moves

/// A new position.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Propose {
    /// The position, stated so it can be supported or contradicted.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
}

/// A move about one earlier event.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct OnTarget {
    /// The event this move is about.
    pub target: String,
    /// What is said.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
}

/// A refinement: a successor to a node, which may answer contradictions.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Refine {
    /// The node refined (it becomes superseded).
    pub target: String,
    /// The refined position.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
    /// Contradictions this refinement answers (they become resolved).
    #[arg(long, num_args = 1..)]
    #[serde(default)]
    pub resolves: Vec<String>,
}

/// A synthesis of two or more nodes.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Synthesize {
    /// The nodes combined (two or more).
    #[arg(num_args = 1.., required = true, value_name = "ID")]
    #[schemars(length(min = 2))]
    pub sources: Vec<String>,
    /// The synthesis.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
}

/// A question.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    /// The question.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
}

/// A relation between two nodes.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    /// One node.
    #[serde(rename = "target", alias = "a")]
    pub a: String,
    /// The other node.
    #[serde(rename = "other", alias = "b")]
    pub b: String,
    /// What relates them.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
}

/// Park a node (set it aside for now).
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Park {
    /// The node parked.
    pub target: String,
    /// Why.
    #[arg(default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub reason: String,
}

/// A node named alone.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct NodeRef {
    /// The node (an entry id or unique prefix).
    pub target: String,
}

fn semantic() -> Named<MemoryKind> {
    Named(MemoryKind::Semantic)
}

/// A memory claim with its kind and provenance.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// What is claimed.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
    /// Its kind of memory.
    #[arg(long, default_value = "semantic", value_parser = Named::<MemoryKind>::parser())]
    #[serde(default = "semantic")]
    pub kind: Named<MemoryKind>,
    /// The events it derives from (its provenance).
    #[arg(long = "source", value_name = "ID")]
    #[serde(default)]
    pub sources: Vec<String>,
    /// Whose it is, e.g. `user:8831`.
    #[arg(long)]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub owner: Option<String>,
    /// Confirmed by its owner.
    #[arg(long)]
    #[serde(default)]
    pub confirmed: bool,
    /// When it stops holding, in ms since the Unix epoch.
    #[arg(long)]
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
}

/// Relate two claims.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Relate {
    /// The claim that relates (the newer one).
    #[serde(rename = "claim", alias = "from")]
    pub from: String,
    /// The claim related to.
    #[serde(rename = "target", alias = "to")]
    pub to: String,
    /// update and state_change supersede `target`; retracts retracts it; contradicts contests it; same_as marks `claim` a duplicate.
    #[arg(value_parser = Named::<Relation>::parser())]
    pub relation: Named<Relation>,
    /// Why.
    #[arg(default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub reason: String,
}

/// Open a causal frame: a question being worked on, under a parent frame.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FrameOpen {
    /// What the frame sets out to answer.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub query: String,
    /// The frame it is a step of.
    #[arg(long)]
    #[serde(default)]
    pub parent: Option<String>,
    /// A frame it branches from (an alternative approach).
    #[arg(long)]
    #[serde(default)]
    pub branched_from: Option<String>,
    /// A condition under which its conclusion stops holding.
    #[arg(long)]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub invalidate_if: Option<String>,
}

/// Evidence found inside a frame.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FrameEvidence {
    /// The frame.
    pub frame: String,
    /// The evidence.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub text: String,
}

/// Conclude a frame.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FrameConclude {
    /// The frame.
    pub frame: String,
    /// Its conclusion.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub conclusion: String,
    /// Confidence, 0 to 1 (default 1).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: Option<f64>,
}

/// A frame named alone.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FrameRef {
    /// The frame.
    pub frame: String,
}

/// Invalidate a frame and every frame under it.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FrameInvalidate {
    /// The frame.
    pub frame: String,
    /// Why its conclusion no longer holds.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub reason: String,
}

/// A new task.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct TaskNew {
    /// What the task is to achieve.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub objective: String,
    /// Who owns it.
    #[arg(long)]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub owner: Option<String>,
}

/// Move a task to a new state.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct TaskUpdate {
    /// The task.
    pub task: String,
    /// Its new state (done resolves it; abandoned parks it).
    #[arg(value_parser = Named::<TaskState>::parser())]
    pub state: Named<TaskState>,
    /// A note.
    #[arg(default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub note: String,
}

/// One attempt at a task.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// The task as it was put.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub task_query: String,
    /// The answer the attempt ended with.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub final_answer: String,
    /// How many iterations it took (default 1).
    #[arg(long)]
    #[serde(default)]
    pub iterations: Option<u32>,
    /// Whether it converged.
    #[arg(long)]
    #[serde(default)]
    pub converged: bool,
}

/// An outcome.
#[derive(clap::ValueEnum, Deserialize, Serialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failure,
}

/// A judgment of a trajectory.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    /// The trajectory judged.
    pub trajectory: String,
    /// Whether it succeeded.
    #[arg(value_enum)]
    pub outcome: Outcome,
    /// Why.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub reason: String,
    /// How sure (default medium).
    #[arg(long, value_parser = Named::<Confidence>::parser())]
    #[serde(default)]
    pub confidence: Option<Named<Confidence>>,
}

/// A memory item: a reusable lesson.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct MemoryItem {
    /// A short title.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub title: String,
    /// When it applies.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub description: String,
    /// The lesson.
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub content: String,
    /// Where it applies.
    #[arg(long)]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub scope: Option<String>,
    /// The trajectory it was learned from.
    #[arg(long)]
    #[serde(default, rename = "trajectory", alias = "from")]
    pub from: Option<String>,
}

/// That an item was retrieved for a trajectory.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct RecordUse {
    /// The trajectory it was used in.
    pub trajectory: String,
    /// The memory item.
    pub item: String,
    /// Its rank among the items retrieved (1 is first).
    #[arg(long)]
    pub rank: u32,
    /// The retrieval score.
    #[arg(long)]
    #[serde(default)]
    pub score: Option<f64>,
}

// ---------------------------------------------------------------------------
// The merge layer

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

// ---------------------------------------------------------------------------
// Reads of the graph

/// The graph as it was.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct History {
    /// When: ms since the Unix epoch, a date (YYYY-MM-DD, UTC), or an entry id (as of that event).
    #[arg(long, value_name = "MS|DATE|ENTRY")]
    pub as_of: String,
    /// One node only; every node when absent.
    #[serde(default)]
    pub target: Option<String>,
}

/// Full-text search.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// The words searched for (BM25 over the nodes' text).
    pub query: String,
    /// Also superseded and retracted nodes (left out by default).
    #[arg(long)]
    #[serde(default)]
    pub all: bool,
    /// Show a superseded match's current version in its place (its `found_through` names the match): a refined position is found by the words of the one it replaced.
    #[arg(long)]
    #[serde(default)]
    pub current: bool,
    /// At most this many hits (default 20).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A format of the whole graph.
#[derive(clap::ValueEnum, Deserialize, Serialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GraphFormat {
    /// Nodes (with statuses, authors, places in their chains) and edges, as data.
    Json,
    /// Graphviz DOT.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

impl GraphFormat {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            GraphFormat::Json => "json",
            GraphFormat::Dot => "dot",
            GraphFormat::Mermaid => "mermaid",
        }
    }
}

/// The whole reasoning graph.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct GraphExport {
    /// json, dot or mermaid (default: json for programs, dot on the command line).
    #[arg(long, value_enum)]
    #[serde(default)]
    pub format: Option<GraphFormat>,
}

// ---------------------------------------------------------------------------
// The signed log

/// One chain or all of them, listed in order.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Log {
    /// The agent whose chain to list (64-hex agent id; default: this agent).
    #[arg(long, conflicts_with = "all")]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
    /// Every author's chain.
    #[arg(long)]
    #[serde(default)]
    pub all: bool,
    /// The first seq listed (default 1).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub from: Option<u64>,
    /// At most this many entries per chain (default 1000).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub limit: Option<usize>,
}

/// One entry named by id.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct EntryRef {
    /// The entry (its id, or a unique prefix of it).
    #[serde(rename = "target", alias = "entry")]
    pub entry: String,
}

/// One author's chain, or all of them.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AuthorFilter {
    /// Only this agent's chain (64-hex agent id); every agent's when absent.
    #[arg(long)]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
}

/// Verify stored chains.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    /// Only this agent's chain (64-hex agent id); every agent's when absent.
    #[arg(long)]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
    /// Verification threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    #[schemars(skip)]
    pub threads: usize,
}

/// Export entries as a pack.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Export {
    /// Only this agent's chain (64-hex agent id); every chain when absent.
    #[arg(long)]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
    /// Output file (default: standard output; an operation returns the pack).
    #[arg(long, short)]
    #[serde(skip)]
    #[schemars(skip)]
    pub output: Option<PathBuf>,
}

/// A standalone fork proof.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct CheckProof {
    /// The proof, hex-encoded (as `forks` lists it).
    pub proof: String,
}

// ---------------------------------------------------------------------------
// Membership

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
}

/// No input.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}
