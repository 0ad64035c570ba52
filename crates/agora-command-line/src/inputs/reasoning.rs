//! Reasoning's commands: the moves that record events (`agora propose`,
//! `contradict`, `frame open`, `task new`...) and the reads of the graph
//! (`agora status`, `search`, `history`...), and their inputs.

use crate::named::Named;
use agora_graph::event::{ACTION_TEXT_BYTES_MAX, Confidence, OPERATION_BYTES_MAX, TEXT_BYTES_MAX};
use agora_graph::{MemoryKind, Relation, TaskState};
use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Reasoning: recording typed events, and reading the graph they derive.
#[derive(Subcommand, Debug, Clone)]
pub enum ReasoningCommand {
    #[command(flatten)]
    Record(RecordCommand),
    /// Causal frames: open, evidence, conclude, suspend, resume, invalidate, tree.
    #[command(subcommand)]
    Frame(FrameCommand),
    #[command(flatten)]
    Read(ReadCommand),
}

/// Recording reasoning events. Target ids come first, text last.
#[derive(Subcommand, Debug, Clone)]
pub enum RecordCommand {
    /// Propose a position.
    Propose(Propose),
    /// Support a node with evidence: <id> "text".
    Support(OnTarget),
    /// Contradict a node: <id> "text".
    Contradict(OnTarget),
    /// Refine a node into a successor: <id> "text" [--resolves <contradiction>...].
    Refine(Refine),
    /// Synthesize two or more nodes: <id> <id> [<id>...] "text".
    Synthesize(Synthesize),
    /// Ask a question.
    Ask(Ask),
    /// Resolve a question, contradiction, tension or contradicts-relation: <id> "text".
    Resolve(OnTarget),
    /// Connect two nodes: <id> <id> "text".
    Connect(Pair),
    /// Note a tension between two nodes: <id> <id> "text".
    Tension(Pair),
    /// Reframe a position or question: <id> "text".
    Reframe(OnTarget),
    /// Park (abandon for now) a node: <id> ["reason"].
    Park(Park),
    /// Resume a parked node.
    Resume(NodeRef),
    /// Record a memory claim with its kind and provenance.
    Claim(Claim),
    /// Relate two claims: <from> <to> <relation> ["reason"].
    Relate(Relate),
    /// Confirm a claim.
    Confirm(NodeRef),
    /// Tasks: new, update.
    #[command(subcommand)]
    Task(TaskCommand),
    /// Record a trajectory (one attempt at a task).
    Trajectory(Trajectory),
    /// Judge a trajectory: <trajectory> success|failure "reason" [--confidence low|medium|high].
    Judge(Judge),
    /// Record a memory item: "title" "description" "content" [--scope S] [--from <trajectory>].
    Item(MemoryItem),
    /// Record that an item was retrieved for a trajectory: <trajectory> <item> --rank N [--score 0.82].
    Use(RecordUse),
    /// Record an action, as a framework traced it: <operation> [--name N] [--text T] [--span S --parent P] [--cause <id>]...
    Act(Act),
    /// Record typed events from free text (turns, notes): "text"|- [--classifier rules|openai|sampling] [--threshold 0.5], audited.
    Ingest(Ingest),
}

/// Reading the reasoning graph.
#[derive(Subcommand, Debug, Clone)]
pub enum ReadCommand {
    /// A node's status and the events that made it so.
    Status(NodeRef),
    /// Every event that touched a node, in order, each verified against its chain.
    Trace(NodeRef),
    /// The graph as of a time (ms, or YYYY-MM-DD in UTC) or an entry: all nodes, or one.
    History(History),
    /// The current state of a node: follow updates, state changes, refinements.
    Latest(NodeRef),
    /// What was decided, and why.
    Decisions,
    /// Open questions.
    Questions,
    /// Contested nodes and what contests them.
    Disagreements,
    /// BM25 full-text search over node text; hides superseded and retracted unless --all.
    Search(Search),
    /// Derived claims with no source (orphans).
    Orphans,
    /// Success and failure counts of memory items.
    Outcomes,
    /// Export the graph: --format dot|mermaid|json (json: nodes with statuses, and edges).
    Graph(GraphExport),
    /// Actions recorded, in log order: [--conversation C] [--operation O] [--name N] [--agent <id>].
    Actions(ActionsQuery),
}

/// Causal frames: moves that record events, and the tree (a read).
#[derive(Subcommand, Debug, Clone)]
pub enum FrameCommand {
    #[command(flatten)]
    Move(FrameMove),
    /// The frame tree under <frame>, in verification (post-) order.
    Tree(FrameRef),
}

/// The frame events.
#[derive(Subcommand, Debug, Clone)]
pub enum FrameMove {
    /// Open a frame: "query" [--parent <frame>] [--branched-from <frame>] [--invalidate-if "condition"].
    Open(FrameOpen),
    /// Record evidence: <frame> "text".
    Evidence(FrameEvidence),
    /// Conclude: <frame> "conclusion" [--confidence 0.9].
    Conclude(FrameConclude),
    /// Suspend a frame.
    Suspend(FrameRef),
    /// Resume a suspended or invalidated frame.
    Resume(FrameRef),
    /// Invalidate a frame and every frame under it: <frame> "reason".
    Invalidate(FrameInvalidate),
}

#[derive(Subcommand, Debug, Clone)]
pub enum TaskCommand {
    /// Create a task: "objective" [--owner S].
    New(TaskNew),
    /// Move a task: <task> created|in_progress|blocked|done|abandoned ["note"].
    Update(TaskUpdate),
}

// ---------------------------------------------------------------------------
// Inputs

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

/// An action: what an agent did, as its framework traced it (a tool call,
/// an agent run, a handoff, a checkpoint).
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Act {
    /// What was done: `invoke_agent`, `execute_tool`, `chat`, `handoff`, `checkpoint`... (a-z, 0-9, `_`, `.`, `-`).
    #[schemars(length(min = 1, max = OPERATION_BYTES_MAX))]
    pub operation: String,
    /// What it was done to or with: the tool, the agent, the model, the record.
    #[arg(long, default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub name: String,
    /// The conversation or thread it belongs to.
    #[arg(long, default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub conversation: String,
    /// The span it comes from: `<32 hex trace id>/<16 hex span id>`, lowercase.
    #[arg(long, default_value = "")]
    #[serde(default)]
    pub span: String,
    /// The span it ran under, of the same trace.
    #[arg(long, default_value = "")]
    #[serde(default)]
    pub parent: String,
    /// An event that caused it (id or unique prefix).
    #[arg(long)]
    #[serde(default)]
    pub cause: Option<String>,
    /// SHA-256 of what went in (64 hex digits).
    #[arg(long)]
    #[serde(default)]
    pub input_hash: Option<String>,
    /// SHA-256 of what came out (64 hex digits).
    #[arg(long)]
    #[serde(default)]
    pub output_hash: Option<String>,
    /// The contents, when kept (arguments, result, a checkpoint).
    #[arg(long, default_value = "")]
    #[serde(default)]
    #[schemars(length(max = ACTION_TEXT_BYTES_MAX))]
    pub text: String,
    /// What went wrong; empty when it succeeded.
    #[arg(long, default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub error: String,
}

/// Longest text `ingest` takes, in bytes.
pub const INGEST_TEXT_BYTES_MAX: usize = 64 * 1024;

/// Free text (conversation turns, notes) for a classifier to turn into
/// typed events, each recorded as its move would be, with an audit
/// (protocol-spec/ingest.md).
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Ingest {
    /// Turns (`speaker: words`, a line each) or notes; `-`: standard input (command line).
    #[schemars(length(min = 1, max = INGEST_TEXT_BYTES_MAX))]
    pub text: String,
    /// rules (offline), openai (an OpenAI-compatible endpoint) or sampling (your own model). Default: agora.toml's, else rules.
    #[arg(long)]
    #[serde(default)]
    pub classifier: Option<String>,
    /// openai's chat endpoint (`/chat/completions` added to a base URL). Default: agora.toml's.
    #[arg(long)]
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The model asked (openai) or hinted (sampling). Default: agora.toml's.
    #[arg(long)]
    #[serde(default)]
    pub model: Option<String>,
    /// Less confident proposals are dropped. Default: agora.toml's, else 0.5.
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub threshold: Option<f64>,
    /// Its conversation, kept in the audit.
    #[arg(long, default_value = "")]
    #[serde(default)]
    #[schemars(length(max = TEXT_BYTES_MAX))]
    pub conversation: String,
    /// The sampling classifier's answer, filled in by the MCP server after
    /// asking its client's model (`sampling/createMessage`); no schema lists it.
    #[arg(skip)]
    #[serde(default)]
    #[schemars(skip)]
    pub sampled: Option<Sampled>,
}

/// What the MCP client's model answered to the classifier's prompt.
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sampled {
    /// The model that answered, as the client names it.
    pub model: String,
    /// Its answer's text.
    pub answer: String,
}

// ---------------------------------------------------------------------------
// Reads of the graph

/// Which actions to list.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ActionsQuery {
    /// Only this conversation's.
    #[arg(long)]
    #[serde(default)]
    pub conversation: Option<String>,
    /// Only this operation's.
    #[arg(long)]
    #[serde(default)]
    pub operation: Option<String>,
    /// Only those done to or with this.
    #[arg(long)]
    #[serde(default)]
    pub name: Option<String>,
    /// Only this agent's (64-hex agent id).
    #[arg(long)]
    #[serde(default)]
    pub agent: Option<String>,
    /// At most this many, the latest (default 1000).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub limit: Option<usize>,
}

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
