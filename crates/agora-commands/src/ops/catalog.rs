//! The catalog: every operation with its typed input, output schema,
//! description for a model and effect on the log (read-only, appending, or
//! appending an event that gives something up for good). It is data, so the
//! MCP server lists it and a test checks every entry's schema.

use super::argv::Argv;
use super::invoke::{Invoke, OpError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// What a tool does to the log, as MCP's hints say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only. Repeating it changes nothing.
    Read,
    /// Appends one signed event to this agent's chain. Nothing is ever
    /// overwritten (not destructive), but each call is a new event (not
    /// idempotent).
    Append,
    /// Appends an event that gives something up for good: which branch of a
    /// forked chain continues.
    AppendFinal,
    /// Stores other agents' entries after verifying them. Nothing is
    /// overwritten, and storing the same entries again changes nothing
    /// (idempotent).
    Store,
    /// Deletes data held here for good: a redacted payload (the signed
    /// header stays, so the chain still verifies).
    Delete,
}

impl Effect {
    /// MCP's hints: (read-only, destructive, idempotent).
    pub fn hints(self) -> (bool, bool, bool) {
        match self {
            Effect::Read => (true, false, true),
            Effect::Append => (false, false, false),
            Effect::AppendFinal | Effect::Delete => (false, true, false),
            Effect::Store => (false, false, true),
        }
    }

    /// What it does, in a sentence (the HTTP API's descriptions).
    pub fn sentence(self) -> &'static str {
        match self {
            Effect::Read => "Reads only.",
            Effect::Append => "Appends one signed event to this agent's chain.",
            Effect::AppendFinal => "Appends one signed event that gives something up for good.",
            Effect::Store => "Stores verified entries; never overwrites.",
            Effect::Delete => "Deletes data held on this node for good.",
        }
    }
}

/// One operation.
pub struct Operation {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub effect: Effect,
    /// The input's JSON Schema.
    pub input_schema: fn() -> Map<String, Value>,
    /// The structured output's JSON Schema.
    pub output_schema: fn() -> Map<String, Value>,
    /// Check the input, run the commands, shape the result.
    pub run: fn(&dyn Invoke, Value) -> Result<Value, OpError>,
}

/// How to name an earlier event, said once and added to every tool that
/// takes one.
macro_rules! references {
    () => {
        " Refer to an earlier event by its entry id: the 64 hex characters every recording tool returns as `id`, or a unique prefix of it (8 or more characters are usually enough). A full id of an event not received yet is accepted: the new event waits for it (`pending`)."
    };
}

/// The statuses a node of the graph can have, for the reads' descriptions.
macro_rules! statuses {
    () => {
        " Statuses: active (current, unchallenged or every challenge answered), contested (a challenge is open against it), superseded (replaced by a refinement, reframe or update: read its successor), resolved (a question answered, a challenge answered, a frame completed, a task done), parked (set aside), retracted (withdrawn as wrong; hidden from current state, the record stays), duplicate (restates another node), invalid (arrived from a peer but breaks a rule)."
    };
}

pub fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::schema_for!(T);
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut m)) => {
            // MCP wants an object schema at the top; a unit input is one with no properties.
            m.entry("type").or_insert_with(|| json!("object"));
            m
        }
        _ => Map::from_iter([("type".to_string(), json!("object"))]),
    }
}

fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, OpError> {
    let input = if input.is_null() { json!({}) } else { input };
    serde_json::from_value(input).map_err(|e| OpError {
        message: format!("{tool}: the input does not match its schema: {e}"),
        rule: Some("input_schema".to_string()),
        entry: None,
    })
}

/// An input that is one command line.
pub trait OneCommand: DeserializeOwned + JsonSchema {
    /// The tool's name, for errors.
    const NAME: &'static str;
    /// The command line.
    fn argv(&self) -> Vec<String>;
}

/// A result wrapped so that it is always a JSON object (MCP's structured
/// content is one): lists come back as `{"result": [...]}`.
pub fn as_object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        other => json!({ "result": other }),
    }
}

fn run_one<T: OneCommand>(invoker: &dyn Invoke, input: Value) -> Result<Value, OpError> {
    let input: T = parse(T::NAME, input)?;
    invoker.invoke(input.argv()).map(as_object)
}

// ---------------------------------------------------------------------------
// Outputs

/// What a recording tool returns: the event's entry.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Recorded {
    /// The new entry's id: how later events refer to this one.
    pub id: String,
    /// The event kind recorded (proposition, contradiction, ...).
    pub kind: String,
    /// Its position in this agent's chain (1 is the first).
    pub seq: u64,
    /// Referenced events not received yet: the event takes effect when they arrive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Vec<String>>,
    /// For a fork resolution: the entry this agent's chain now continues after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// Any JSON object: a read's result (lists as `{"result": [...]}`).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ReadResult {
    /// A list result; object results carry their own fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

// ---------------------------------------------------------------------------
// Inputs: reasoning moves

macro_rules! one_command {
    ($ty:ident, $name:literal, |$s:ident| $argv:expr) => {
        impl OneCommand for $ty {
            const NAME: &'static str = $name;
            fn argv(&$s) -> Vec<String> {
                $argv.build()
            }
        }
    };
}

/// An input with the same fields as `$inner`: deserialized and described
/// as it, under its own tool name.
macro_rules! same_input {
    ($ty:ident, $inner:ident) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $inner::deserialize(d).map($ty)
            }
        }
        impl JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $inner::json_schema(g)
            }
        }
    };
}

/// A new position.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Propose {
    /// The position, stated so it can be supported or contradicted.
    pub text: String,
}
one_command!(Propose, "propose", |self| Argv::new(&["propose"]).arg(&self.text));

/// A move about one earlier event.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnTarget {
    /// The event this move is about.
    pub target: String,
    /// What is said.
    pub text: String,
}

pub struct Support(OnTarget);
pub struct Contradict(OnTarget);
pub struct Resolve(OnTarget);
pub struct Reframe(OnTarget);

macro_rules! on_target {
    ($ty:ident, $name:literal) => {
        same_input!($ty, OnTarget);
        one_command!($ty, $name, |self| Argv::new(&[$name]).arg(&self.0.target).arg(&self.0.text));
    };
}
on_target!(Support, "support");
on_target!(Contradict, "contradict");
on_target!(Resolve, "resolve");
on_target!(Reframe, "reframe");

/// A refinement: a successor to a node, which may answer contradictions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refine {
    /// The node refined (it becomes superseded).
    pub target: String,
    /// The refined position.
    pub text: String,
    /// Contradictions this refinement answers (they become resolved).
    #[serde(default)]
    pub resolves: Vec<String>,
}
one_command!(Refine, "refine", |self| Argv::new(&["refine"]).each("resolves", &self.resolves).arg(&self.target).arg(&self.text));

/// A synthesis of two or more nodes.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Synthesize {
    /// The nodes combined (two or more).
    #[schemars(length(min = 2))]
    pub sources: Vec<String>,
    /// The synthesis.
    pub text: String,
}
one_command!(Synthesize, "synthesize", |self| Argv::new(&["synthesize"]).args(self.sources.iter().cloned()).arg(&self.text));

/// A question.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    /// The question.
    pub text: String,
}
one_command!(Ask, "ask", |self| Argv::new(&["ask"]).arg(&self.text));

/// A relation between two nodes.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    /// One node.
    pub a: String,
    /// The other node.
    pub b: String,
    /// What relates them.
    pub text: String,
}
pub struct Connect(Pair);
pub struct Tension(Pair);
macro_rules! pair {
    ($ty:ident, $name:literal) => {
        same_input!($ty, Pair);
        one_command!($ty, $name, |self| Argv::new(&[$name]).arg(&self.0.a).arg(&self.0.b).arg(&self.0.text));
    };
}
pair!(Connect, "connect");
pair!(Tension, "tension");

/// Park a node (set it aside for now).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Park {
    /// The node parked.
    pub target: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}
one_command!(Park, "park", |self| Argv::new(&["park"]).arg(&self.target).arg(&self.reason));

/// Resume a parked node.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeNode {
    /// The parked node.
    pub target: String,
}
one_command!(ResumeNode, "resume", |self| Argv::new(&["resume"]).arg(&self.target));

/// The kinds of memory a claim can be.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy, Default)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    Episodic,
    #[default]
    Semantic,
    Preference,
    Procedural,
    Task,
    Environmental,
    Shared,
    System,
    Audit,
}

fn snake<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// A memory claim with its kind and provenance.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// What is claimed.
    pub text: String,
    /// Its kind of memory.
    #[serde(default)]
    pub kind: MemoryKind,
    /// The events it derives from (its provenance).
    #[serde(default)]
    pub sources: Vec<String>,
    /// Whose it is, e.g. `user:8831`.
    #[serde(default)]
    pub owner: Option<String>,
    /// Confirmed by its owner.
    #[serde(default)]
    pub confirmed: bool,
    /// When it stops holding, in ms since the Unix epoch.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
}
one_command!(Claim, "claim", |self| Argv::new(&["claim"])
    .opt("kind", Some(snake(&self.kind)))
    .each("source", &self.sources)
    .opt("owner", self.owner.as_ref())
    .switch("confirmed", self.confirmed)
    .opt("expires-at-ms", self.expires_at_ms)
    .arg(&self.text));

/// How one claim relates to another.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    Update,
    StateChange,
    Expands,
    Qualifies,
    Contradicts,
    Retracts,
    SameAs,
}

/// Relate two claims.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Relate {
    /// The claim that relates.
    pub from: String,
    /// The claim related to.
    pub to: String,
    /// update and state_change supersede `to`; retracts retracts it; contradicts contests it; same_as marks `from` a duplicate.
    pub relation: Relation,
    /// Why.
    #[serde(default)]
    pub reason: String,
}
one_command!(Relate, "relate", |self| Argv::new(&["relate"]).arg(&self.from).arg(&self.to).arg(snake(&self.relation)).arg(&self.reason));

/// Confirm a claim.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Confirm {
    /// The claim.
    pub target: String,
}
one_command!(Confirm, "confirm", |self| Argv::new(&["confirm"]).arg(&self.target));

/// Open a causal frame: a question being worked on, under a parent frame.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameOpen {
    /// What the frame sets out to answer.
    pub query: String,
    /// The frame it is a step of.
    #[serde(default)]
    pub parent: Option<String>,
    /// A frame it branches from (an alternative approach).
    #[serde(default)]
    pub branched_from: Option<String>,
    /// A condition under which its conclusion stops holding.
    #[serde(default)]
    pub invalidate_if: Option<String>,
}
one_command!(FrameOpen, "frame_open", |self| Argv::new(&["frame", "open"])
    .opt("parent", self.parent.as_ref())
    .opt("branched-from", self.branched_from.as_ref())
    .opt("invalidate-if", self.invalidate_if.as_ref())
    .arg(&self.query));

/// Evidence found inside a frame.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameEvidence {
    /// The frame.
    pub frame: String,
    /// The evidence.
    pub text: String,
}
one_command!(FrameEvidence, "frame_evidence", |self| Argv::new(&["frame", "evidence"]).arg(&self.frame).arg(&self.text));

/// Conclude a frame.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameConclude {
    /// The frame.
    pub frame: String,
    /// Its conclusion.
    pub conclusion: String,
    /// Confidence, 0 to 1 (default 1).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: Option<f64>,
}
one_command!(FrameConclude, "frame_conclude", |self| Argv::new(&["frame", "conclude"])
    .opt("confidence", self.confidence)
    .arg(&self.frame)
    .arg(&self.conclusion));

/// A frame named alone.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameRef {
    /// The frame.
    pub frame: String,
}
pub struct FrameSuspend(FrameRef);
pub struct FrameResume(FrameRef);
pub struct FrameTree(FrameRef);
macro_rules! frame_ref {
    ($ty:ident, $name:literal, $words:expr) => {
        same_input!($ty, FrameRef);
        one_command!($ty, $name, |self| Argv::new(&$words).arg(&self.0.frame));
    };
}
frame_ref!(FrameSuspend, "frame_suspend", ["frame", "suspend"]);
frame_ref!(FrameResume, "frame_resume", ["frame", "resume"]);
frame_ref!(FrameTree, "frame_tree", ["frame", "tree"]);

/// Invalidate a frame and every frame under it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameInvalidate {
    /// The frame.
    pub frame: String,
    /// Why its conclusion no longer holds.
    pub reason: String,
}
one_command!(FrameInvalidate, "frame_invalidate", |self| Argv::new(&["frame", "invalidate"]).arg(&self.frame).arg(&self.reason));

/// A new task.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskNew {
    /// What the task is to achieve.
    pub objective: String,
    /// Who owns it.
    #[serde(default)]
    pub owner: Option<String>,
}
one_command!(TaskNew, "task_new", |self| Argv::new(&["task", "new"]).opt("owner", self.owner.as_ref()).arg(&self.objective));

/// A task's states.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Created,
    InProgress,
    Blocked,
    Done,
    Abandoned,
}

/// Move a task to a new state.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskUpdate {
    /// The task.
    pub task: String,
    /// Its new state (done resolves it; abandoned parks it).
    pub state: TaskState,
    /// A note.
    #[serde(default)]
    pub note: String,
}
one_command!(TaskUpdate, "task_update", |self| Argv::new(&["task", "update"]).arg(&self.task).arg(snake(&self.state)).arg(&self.note));

/// One attempt at a task.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// The task as it was put.
    pub task_query: String,
    /// The answer the attempt ended with.
    pub final_answer: String,
    /// How many iterations it took (default 1).
    #[serde(default)]
    pub iterations: Option<u32>,
    /// Whether it converged.
    #[serde(default)]
    pub converged: bool,
}
one_command!(Trajectory, "trajectory", |self| Argv::new(&["trajectory"])
    .opt("iterations", self.iterations)
    .switch("converged", self.converged)
    .arg(&self.task_query)
    .arg(&self.final_answer));

/// An outcome.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failure,
}

/// How sure a judgment is.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// A judgment of a trajectory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    /// The trajectory judged.
    pub trajectory: String,
    /// Whether it succeeded.
    pub outcome: Outcome,
    /// Why.
    pub reason: String,
    /// How sure (default medium).
    #[serde(default)]
    pub confidence: Option<Confidence>,
}
one_command!(Judge, "judge", |self| Argv::new(&["judge"])
    .opt("confidence", self.confidence.as_ref().map(snake))
    .arg(&self.trajectory)
    .arg(snake(&self.outcome))
    .arg(&self.reason));

/// A memory item: a reusable lesson.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryItem {
    /// A short title.
    pub title: String,
    /// When it applies.
    pub description: String,
    /// The lesson.
    pub content: String,
    /// Where it applies.
    #[serde(default)]
    pub scope: Option<String>,
    /// The trajectory it was learned from.
    #[serde(default)]
    pub from: Option<String>,
}
one_command!(MemoryItem, "memory_item", |self| Argv::new(&["item"])
    .opt("scope", self.scope.as_ref())
    .opt("from", self.from.as_ref())
    .arg(&self.title)
    .arg(&self.description)
    .arg(&self.content));

/// That an item was retrieved for a trajectory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordUse {
    /// The trajectory it was used in.
    pub trajectory: String,
    /// The memory item.
    pub item: String,
    /// Its rank among the items retrieved (1 is first).
    pub rank: u32,
    /// The retrieval score.
    #[serde(default)]
    pub score: Option<f64>,
}
one_command!(RecordUse, "record_use", |self| Argv::new(&["use"]).opt("rank", Some(self.rank)).opt("score", self.score).arg(&self.trajectory).arg(&self.item));

// ---------------------------------------------------------------------------
// Inputs: the merge layer

/// Accept another agent's chain up to an event.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Accept {
    /// The agent whose chain is accepted (its 64-hex agent id).
    pub author: String,
    /// Through which event: a seq number of that chain, or an entry id.
    pub up_to: String,
}
one_command!(Accept, "accept", |self| Argv::new(&["accept"]).arg(&self.author).arg(&self.up_to));

/// Dispute exactly one event.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dispute {
    /// The event disputed.
    pub target: String,
    /// Why it is wrong.
    pub reason: String,
    /// What should be believed instead.
    #[serde(default)]
    pub counter: Option<String>,
}
one_command!(Dispute, "dispute", |self| Argv::new(&["dispute"]).opt("counter", self.counter.as_ref()).arg(&self.target).arg(&self.reason));

/// Withdraw one of this agent's disputes.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Withdraw {
    /// The dispute event (returned as `id` when it was recorded).
    pub dispute: String,
}
one_command!(Withdraw, "withdraw", |self| Argv::new(&["withdraw"]).arg(&self.dispute));

/// Resolve a fork of this agent's own chain.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveFork {
    /// The entry at the forked seq on the branch that continues.
    pub keep: String,
}
one_command!(ResolveFork, "resolve_fork", |self| Argv::new(&["resolve-fork"]).arg(&self.keep));

// ---------------------------------------------------------------------------
// Inputs: reads

/// A node named alone.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeRef {
    /// The node (an entry id or unique prefix).
    pub target: String,
}
pub struct Status(NodeRef);
pub struct Trace(NodeRef);
pub struct Latest(NodeRef);
macro_rules! node_ref {
    ($ty:ident, $name:literal) => {
        same_input!($ty, NodeRef);
        one_command!($ty, $name, |self| Argv::new(&[$name]).arg(&self.0.target));
    };
}
node_ref!(Status, "status");
node_ref!(Trace, "trace");
node_ref!(Latest, "latest");

/// The graph as it was.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct History {
    /// When: ms since the Unix epoch, a date (YYYY-MM-DD, UTC), or an entry id (as of that event).
    pub as_of: String,
    /// One node only; every node when absent.
    #[serde(default)]
    pub target: Option<String>,
}
one_command!(History, "history", |self| Argv::new(&["history"]).opt("as-of", Some(&self.as_of)).args(self.target.iter().cloned()));

/// No input.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}
pub struct Decisions(Nothing);
pub struct Questions(Nothing);
pub struct Disagreements(Nothing);
pub struct Outcomes(Nothing);
pub struct Identity(Nothing);
pub struct ViewHash(Nothing);
macro_rules! nothing {
    ($ty:ident, $name:literal, $words:expr) => {
        same_input!($ty, Nothing);
        one_command!($ty, $name, |self| Argv::new(&$words));
    };
}
nothing!(Decisions, "decisions", ["decisions"]);
nothing!(Questions, "questions", ["questions"]);
nothing!(Disagreements, "disagreements", ["disagreements"]);
nothing!(Outcomes, "outcomes", ["outcomes"]);
nothing!(Identity, "identity", ["id"]);
nothing!(ViewHash, "view_hash", ["view-hash"]);

/// An agent's perspective.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Perspective {
    /// The agent (default: this one).
    #[serde(default)]
    pub agent: Option<String>,
    /// Only the entries dated at or before this time (ms since the epoch,
    /// or YYYY-MM-DD in UTC): the view as it was then.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Leave out the node list (`nodes` is empty; `node_count` says how
    /// many there are).
    #[serde(default)]
    pub summary: bool,
}
one_command!(Perspective, "perspective", |self| Argv::new(&["perspective"])
    .opt("as-of", self.as_of.clone())
    .switch("summary", self.summary)
    .args(self.agent.iter().cloned()));

/// What at least k agents accept.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consensus {
    /// k: how many agents must accept a prefix of a chain.
    #[schemars(range(min = 1))]
    pub quorum: usize,
    /// The agents counted (default: every agent that wrote).
    #[serde(default)]
    pub agents: Vec<String>,
    /// Only the entries dated at or before this time (ms since the epoch,
    /// or YYYY-MM-DD in UTC): the view as it was then.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Count each chain's accept frontiers and disputed events instead of
    /// listing them (`frontiers` and `disputed` are empty;
    /// `frontier_count` and `disputed_count` say how many).
    #[serde(default)]
    pub summary: bool,
}
one_command!(Consensus, "consensus", |self| Argv::new(&["consensus"])
    .opt("quorum", Some(self.quorum))
    .each("agents", &self.agents)
    .opt("as-of", self.as_of.clone())
    .switch("summary", self.summary));

/// The disagreement map across agents.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Disputes {
    /// Only these agents' accepts and disputes (default: all).
    #[serde(default)]
    pub agents: Vec<String>,
    /// Only the entries dated at or before this time (ms since the epoch,
    /// or YYYY-MM-DD in UTC): the view as it was then.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Count who accepts each disputed event and each fork side's entries
    /// instead of listing them (`accepted_by` and `members` are empty;
    /// `accepted_by_count` and `member_count` say how many).
    #[serde(default)]
    pub summary: bool,
}
one_command!(Disputes, "disputes", |self| Argv::new(&["disputes"])
    .each("agents", &self.agents)
    .opt("as-of", self.as_of.clone())
    .switch("summary", self.summary));

/// Audit one agent's replicated chain.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// The agent (its 64-hex agent id).
    pub agent: String,
}
one_command!(Audit, "audit", |self| Argv::new(&["audit"]).arg(&self.agent));

/// A format of the whole graph.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy, Default)]
#[serde(rename_all = "snake_case")]
pub enum GraphFormat {
    /// Nodes (with statuses, authors, places in their chains) and edges, as data.
    #[default]
    Json,
    /// Graphviz DOT.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

/// The whole reasoning graph.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphExport {
    /// json (default), dot or mermaid.
    #[serde(default)]
    pub format: GraphFormat,
}
one_command!(GraphExport, "graph", |self| Argv::new(&["graph"]).opt("format", Some(snake(&self.format))));

/// Where to start on a topic.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Orient {
    /// The topic, in words (full-text search over the nodes' text).
    pub topic: String,
    /// Also show superseded and retracted nodes (left out by default).
    #[serde(default)]
    pub include_superseded: bool,
    /// At most this many nodes (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// `orient`: search, then the open questions and contested nodes among what
/// was found.
fn orient(invoker: &dyn Invoke, input: Value) -> Result<Value, OpError> {
    let o: Orient = parse("orient", input)?;
    let limit = o.limit.unwrap_or(20).clamp(1, 1000);
    let found = invoker.invoke(Argv::new(&["search"]).switch("all", o.include_superseded).opt("limit", Some(limit)).arg(&o.topic).build())?;
    let hits = found["hits"].clone();
    let ids: std::collections::BTreeSet<String> =
        hits.as_array().into_iter().flatten().filter_map(|h| h.get("id").and_then(Value::as_str)).map(str::to_string).collect();
    let on_topic = |rows: Value| -> Vec<Value> {
        rows.as_array().into_iter().flatten().filter(|r| r.get("id").and_then(Value::as_str).is_some_and(|id| ids.contains(id))).cloned().collect()
    };
    let questions = on_topic(invoker.invoke(Argv::new(&["questions"]).build())?);
    let contested = on_topic(invoker.invoke(Argv::new(&["disagreements"]).build())?);
    Ok(json!({ "topic": o.topic, "nodes": hits, "open_questions": questions, "contested": contested, "computed_over": found["computed_over"] }))
}

/// What `orient` returns.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Oriented {
    /// The topic searched.
    pub topic: String,
    /// The nodes found, best match first: id, score, status, kind, text.
    pub nodes: Vec<Value>,
    /// Open questions among them.
    pub open_questions: Vec<Value>,
    /// Contested nodes among them, with what contests them.
    pub contested: Vec<Value>,
    /// The frontier the search was computed over.
    pub computed_over: ComputedOver,
}

/// The frontier an answer was computed over: every author's tips in the
/// store when it was read.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ComputedOver {
    /// SHA-256 of the frontier (protocol-spec/views.md): two answers with the same hash were computed over the same entries.
    pub frontier_hash: String,
    /// How many chains (authors) are stored.
    pub authors: usize,
    /// Each chain's highest seq by author id (an object with `max_seq` and `tips` when the chain is forked); at most 256 chains.
    pub chains: Map<String, Value>,
    /// True when more chains are stored than listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chains_truncated: Option<bool>,
}

// ---------------------------------------------------------------------------
// The catalog

macro_rules! tool {
    ($ty:ty, $title:literal, $effect:expr, $out:ty, $desc:expr) => {
        Operation {
            name: <$ty as OneCommand>::NAME,
            title: $title,
            description: $desc,
            effect: $effect,
            input_schema: schema_of::<$ty>,
            output_schema: schema_of::<$out>,
            run: run_one::<$ty>,
        }
    };
}

// Children of this module (they use its macros and private helpers),
// kept in their own files beside it.
#[path = "answers.rs"]
mod answers;
#[path = "log_inputs.rs"]
mod log_inputs;
use answers::*;

/// Every operation, in the order they are listed.
pub fn catalog() -> Vec<Operation> {
    use Effect::*;
    let mut ops = vec![
        tool!(
            Propose,
            "Propose a position",
            Append,
            Recorded,
            "Record a new position (a proposition) in this agent's signed chain. Use it for a claim others may support, contradict or refine. Returns the new event's id, which later moves use to refer to it."
        ),
        tool!(Support, "Support a node", Append, Recorded, concat!("Record evidence for an earlier node.", references!())),
        tool!(
            Contradict,
            "Contradict a node",
            Append,
            Recorded,
            concat!(
                "Record a contradiction of an earlier node: the node becomes contested until the contradiction is resolved (by a refinement that resolves it, or a resolve).",
                references!()
            )
        ),
        tool!(
            Refine,
            "Refine a node",
            Append,
            Recorded,
            concat!(
                "Record a refinement: a successor to an earlier node, which becomes superseded. List in `resolves` the contradictions the refinement answers: they become resolved, and the contested node's successor is active.",
                references!()
            )
        ),
        tool!(
            Synthesize,
            "Synthesize nodes",
            Append,
            Recorded,
            concat!("Record a synthesis combining two or more earlier nodes into one position.", references!())
        ),
        tool!(Ask, "Ask a question", Append, Recorded, "Record an open question. It stays open (listed by `questions`) until a `resolve` answers it."),
        tool!(
            Resolve,
            "Resolve",
            Append,
            Recorded,
            concat!("Resolve a question, contradiction, tension or contradicts-relation with an answer: it becomes resolved.", references!())
        ),
        tool!(Park, "Park a node", Append, Recorded, concat!("Set a node aside for now (status parked); `resume` brings it back.", references!())),
        tool!(ResumeNode, "Resume a parked node", Append, Recorded, concat!("Bring a parked node back.", references!())),
        tool!(Reframe, "Reframe", Append, Recorded, concat!("Restate a position or question in other terms; the original becomes superseded.", references!())),
        tool!(Connect, "Connect two nodes", Append, Recorded, concat!("Record that two nodes are related, and how.", references!())),
        tool!(
            Tension,
            "Note a tension",
            Append,
            Recorded,
            concat!("Record a tension between two nodes (not a contradiction: both may hold). It stays open until resolved.", references!())
        ),
        tool!(
            Claim,
            "Record a memory claim",
            Append,
            Recorded,
            concat!(
                "Record a memory claim with its kind (episodic, semantic, preference, ...) and provenance (the events it derives from). A derived claim with no source is an orphan.",
                references!()
            )
        ),
        tool!(
            Relate,
            "Relate two claims",
            Append,
            Recorded,
            concat!(
                "Relate one claim to another: update or state_change supersede the older one, retracts retracts it, contradicts contests it, expands and qualifies add to it, same_as marks a duplicate.",
                references!()
            )
        ),
        tool!(Confirm, "Confirm a claim", Append, Recorded, concat!("Record that a claim's owner confirms it.", references!())),
        tool!(
            FrameOpen,
            "Open a frame",
            Append,
            Recorded,
            concat!(
                "Open a causal frame: a question being worked on, optionally under a parent frame. Its conclusion holds until the frame, or one above it, is invalidated.",
                references!()
            )
        ),
        tool!(FrameEvidence, "Frame evidence", Append, Recorded, concat!("Record evidence found inside a frame.", references!())),
        tool!(FrameConclude, "Conclude a frame", Append, Recorded, concat!("Conclude a frame (status resolved).", references!())),
        tool!(FrameSuspend, "Suspend a frame", Append, Recorded, concat!("Suspend a frame (status parked).", references!())),
        tool!(FrameResume, "Resume a frame", Append, Recorded, concat!("Resume a suspended or invalidated frame.", references!())),
        tool!(
            FrameInvalidate,
            "Invalidate a frame",
            Append,
            Recorded,
            concat!("Invalidate a frame and every frame under it (status retracted): their conclusions no longer hold.", references!())
        ),
        tool!(
            TaskNew,
            "Create a task",
            Append,
            Recorded,
            "Record a new task: an objective to work on, optionally with its owner. Move it through its states with `task_update`."
        ),
        tool!(TaskUpdate, "Update a task", Append, Recorded, concat!("Move a task to a new state: done resolves it, abandoned parks it.", references!())),
        tool!(
            Trajectory,
            "Record a trajectory",
            Append,
            Recorded,
            "Record one attempt at a task: the query, the final answer, how many iterations, whether it converged. Judge it with `judge`."
        ),
        tool!(Judge, "Judge a trajectory", Append, Recorded, concat!("Record whether a trajectory succeeded or failed, why, and how sure.", references!())),
        tool!(
            MemoryItem,
            "Record a memory item",
            Append,
            Recorded,
            concat!(
                "Record a reusable lesson (title, when it applies, content), optionally learned from a trajectory. `outcomes` counts how often items led to success.",
                references!()
            )
        ),
        tool!(
            RecordUse,
            "Record an item's use",
            Append,
            Recorded,
            concat!("Record that a memory item was retrieved for a trajectory, at which rank and score.", references!())
        ),
        tool!(
            Accept,
            "Accept a chain",
            Append,
            Recorded,
            "Accept another agent's chain up to an event (a seq of that chain or an entry id): this agent's perspective then includes that prefix. Accepting further later moves the frontier; to reject one event, `dispute` it."
        ),
        tool!(
            Dispute,
            "Dispute an event",
            Append,
            Recorded,
            concat!(
                "Dispute exactly one event of another agent's chain with a reason and, optionally, a counter-claim. The dispute is signed and locatable: it says which event, and leaves the rest of the chain accepted.",
                references!()
            )
        ),
        tool!(Withdraw, "Withdraw a dispute", Append, Recorded, "Withdraw one of this agent's disputes (name the dispute event's id)."),
        tool!(
            ResolveFork,
            "Resolve a fork of this chain",
            AppendFinal,
            Recorded,
            "Resolve a fork of this agent's own chain: name the entry, at the forked seq, of the branch that continues. The other branch stays stored and proven, but this chain no longer continues it."
        ),
        Operation {
            name: "orient",
            title: "Orient on a topic",
            description: concat!(
                "Start here on a topic: the nodes whose text matches it (full-text search, best first; superseded and retracted nodes are left out unless include_superseded), with their statuses, and the open questions and contested nodes among them. Then read one node with `status` or `trace`.",
                statuses!()
            ),
            effect: Read,
            input_schema: schema_of::<Orient>,
            output_schema: schema_of::<Oriented>,
            run: orient,
        },
        tool!(Status, "A node's status", Read, StatusAnswer, concat!("A node's status and the events that made it so.", statuses!())),
        tool!(Trace, "Trace a node", Read, TraceAnswer, "Every event that touched a node, in order, each verified against its author's chain."),
        tool!(
            History,
            "History as of",
            Read,
            ReadResult,
            "The graph as it was at a time (ms since the epoch or YYYY-MM-DD, UTC) or as of an event: every node with its status then, or one node."
        ),
        tool!(
            Latest,
            "Latest version of a node",
            Read,
            LatestAnswer,
            "The current version of a node: follows refinements, reframes, updates and state changes to the newest."
        ),
        tool!(Decisions, "Decisions", Read, DecisionList, "What was decided, and the events it rests on."),
        tool!(Questions, "Open questions", Read, NodeList, "Questions not yet resolved."),
        tool!(Disagreements, "Contested nodes", Read, ContestedList, "Contested nodes and what contests them (open contradictions and tensions)."),
        tool!(
            Perspective,
            "An agent's perspective",
            Read,
            PerspectiveAnswer,
            concat!(
                "An agent's perspective: its own chain plus the prefixes of other chains it accepts, minus the events it disputes, with statuses.",
                statuses!()
            )
        ),
        tool!(
            Consensus,
            "Consensus",
            Read,
            ConsensusAnswer,
            "Which prefix of each chain at least `quorum` agents accept, what is disputed and by whom, and the merged view's hash."
        ),
        tool!(
            Disputes,
            "Dispute map",
            Read,
            ReadResult,
            "The disagreement map across agents: each disputed event, who accepts and who disputes it, counter-claims; and forked chains by branch."
        ),
        tool!(
            Audit,
            "Audit a chain",
            Read,
            ReadResult,
            "Verify an agent's replicated chain end to end: forks, gaps, missing payloads, disputes, accept frontiers."
        ),
        tool!(FrameTree, "Frame tree", Read, ReadResult, "The frames under a frame, in verification (post-) order, with their states."),
        tool!(Outcomes, "Memory item outcomes", Read, ReadResult, "Success and failure counts of memory items, from the judged trajectories that used them."),
        tool!(Identity, "This agent's id", Read, ReadResult, "This agent's id (64 hex characters): what others pass as `author` or `agent`."),
        tool!(
            GraphExport,
            "The whole graph",
            Read,
            ReadResult,
            concat!(
                "Every node of the reasoning graph with its status, author and place in its chain, and every edge (from the newer event to the one it names), as data (json) or as Graphviz DOT or Mermaid text.",
                statuses!()
            )
        ),
        tool!(ViewHash, "Merged view hash", Read, ViewHashAnswer, "The merged view's hash and entry count: equal on every node that holds the same entries."),
    ];
    ops.extend(log_inputs::operations());
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<T: JsonSchema>() -> Vec<String> {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
        let mut v: Vec<String> = schema["enum"]
            .as_array()
            .or_else(|| schema["oneOf"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().or_else(|| x["const"].as_str()).map(str::to_string))
            .collect();
        v.sort();
        v
    }

    fn sorted(mut v: Vec<&str>) -> Vec<String> {
        v.sort();
        v.into_iter().map(str::to_string).collect()
    }

    /// The schemas' enums are the graph's names: a kind, relation or task
    /// state added to the graph and not here (or spelt differently) fails.
    #[test]
    fn the_schema_enums_are_the_graphs_names() {
        assert_eq!(names::<MemoryKind>(), sorted(agora_graph::MemoryKind::ALL.iter().map(|k| k.name()).collect()));
        assert_eq!(names::<Relation>(), sorted(agora_graph::Relation::ALL.iter().map(|r| r.name()).collect()));
        let states = [
            agora_graph::TaskState::Created,
            agora_graph::TaskState::InProgress,
            agora_graph::TaskState::Blocked,
            agora_graph::TaskState::Done,
            agora_graph::TaskState::Abandoned,
        ];
        assert_eq!(names::<TaskState>(), sorted(states.iter().map(|s| s.name()).collect()));
    }
}
