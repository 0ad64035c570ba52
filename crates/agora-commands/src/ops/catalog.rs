//! The catalog: every operation with its typed input, output schema,
//! description for a model and effect on the log (read-only, appending, or
//! appending an event that gives something up for good). It is data, so the
//! MCP server lists it and a test checks every entry's schema.

use super::invoke::{OpError, Runner};
use crate::cli::{ChainCommand, Command, FrameCommand, FrameMove, MembershipCommand, MergeCommand, ReadCommand, ReasoningCommand, RecordCommand, TaskCommand};
use agora_command_line::inputs::*;
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
    pub run: fn(&dyn Runner, Value) -> Result<Value, OpError>,
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
    serde_json::from_value(input).map_err(|e| OpError::input(format!("{tool}: the input does not match its schema: {e}")))
}

/// A result wrapped so that it is always a JSON object (MCP's structured
/// content is one): lists come back as `{"result": [...]}`.
pub fn as_object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        other => json!({ "result": other }),
    }
}

fn rec(c: RecordCommand) -> Command {
    Command::Reasoning(ReasoningCommand::Record(c))
}

fn frame(m: FrameMove) -> Command {
    Command::Reasoning(ReasoningCommand::Frame(FrameCommand::Move(m)))
}

fn read(c: ReadCommand) -> Command {
    Command::Reasoning(ReasoningCommand::Read(c))
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
fn orient(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let o: Orient = parse("orient", input)?;
    let limit = o.limit.unwrap_or(20).clamp(1, 1000);
    let found = runner.value(read(ReadCommand::Search(Search { query: o.topic.clone(), all: o.include_superseded, limit: Some(limit) })))?;
    let hits = found["hits"].clone();
    let ids: std::collections::BTreeSet<String> =
        hits.as_array().into_iter().flatten().filter_map(|h| h.get("id").and_then(Value::as_str)).map(str::to_string).collect();
    let on_topic = |rows: Value| -> Vec<Value> {
        rows.as_array().into_iter().flatten().filter(|r| r.get("id").and_then(Value::as_str).is_some_and(|id| ids.contains(id))).cloned().collect()
    };
    let questions = on_topic(runner.value(read(ReadCommand::Questions))?);
    let contested = on_topic(runner.value(read(ReadCommand::Disagreements))?);
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

/// One operation: its name, its input type and the command it stands for,
/// its title, effect, output type and description.
macro_rules! tool {
    ($name:literal, |$i:tt: $input:ty| $command:expr, $title:literal, $effect:expr, $out:ty, $desc:expr) => {
        Operation {
            name: $name,
            title: $title,
            description: $desc,
            effect: $effect,
            input_schema: schema_of::<$input>,
            output_schema: schema_of::<$out>,
            run: {
                fn run(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
                    let $i: $input = parse($name, input)?;
                    runner.value($command).map(as_object)
                }
                run
            },
        }
    };
}

// Children of this module (they use its macros and private helpers),
// kept in their own files beside it.
#[path = "answers.rs"]
mod answers;
#[path = "composed.rs"]
mod composed;
use answers::*;

/// Every operation, in the order they are listed.
pub fn catalog() -> Vec<Operation> {
    use Effect::*;
    let mut ops = vec![
        tool!(
            "propose",
            |i: Propose| rec(RecordCommand::Propose(i)),
            "Propose a position",
            Append,
            Recorded,
            "Record a new position (a proposition) in this agent's signed chain. Use it for a claim others may support, contradict or refine. Returns the new event's id, which later moves use to refer to it."
        ),
        tool!(
            "support",
            |i: OnTarget| rec(RecordCommand::Support(i)),
            "Support a node",
            Append,
            Recorded,
            concat!("Record evidence for an earlier node.", references!())
        ),
        tool!(
            "contradict",
            |i: OnTarget| rec(RecordCommand::Contradict(i)),
            "Contradict a node",
            Append,
            Recorded,
            concat!(
                "Record a contradiction of an earlier node: the node becomes contested until the contradiction is resolved (by a refinement that resolves it, or a resolve).",
                references!()
            )
        ),
        tool!(
            "refine",
            |i: Refine| rec(RecordCommand::Refine(i)),
            "Refine a node",
            Append,
            Recorded,
            concat!(
                "Record a refinement: a successor to an earlier node, which becomes superseded. List in `resolves` the contradictions the refinement answers: they become resolved, and the contested node's successor is active.",
                references!()
            )
        ),
        tool!(
            "synthesize",
            |i: Synthesize| rec(RecordCommand::Synthesize(i)),
            "Synthesize nodes",
            Append,
            Recorded,
            concat!("Record a synthesis combining two or more earlier nodes into one position.", references!())
        ),
        tool!(
            "ask",
            |i: Ask| rec(RecordCommand::Ask(i)),
            "Ask a question",
            Append,
            Recorded,
            "Record an open question. It stays open (listed by `questions`) until a `resolve` answers it."
        ),
        tool!(
            "resolve",
            |i: OnTarget| rec(RecordCommand::Resolve(i)),
            "Resolve",
            Append,
            Recorded,
            concat!("Resolve a question, contradiction, tension or contradicts-relation with an answer: it becomes resolved.", references!())
        ),
        tool!(
            "park",
            |i: Park| rec(RecordCommand::Park(i)),
            "Park a node",
            Append,
            Recorded,
            concat!("Set a node aside for now (status parked); `resume` brings it back.", references!())
        ),
        tool!(
            "resume",
            |i: NodeRef| rec(RecordCommand::Resume(i)),
            "Resume a parked node",
            Append,
            Recorded,
            concat!("Bring a parked node back.", references!())
        ),
        tool!(
            "reframe",
            |i: OnTarget| rec(RecordCommand::Reframe(i)),
            "Reframe",
            Append,
            Recorded,
            concat!("Restate a position or question in other terms; the original becomes superseded.", references!())
        ),
        tool!(
            "connect",
            |i: Pair| rec(RecordCommand::Connect(i)),
            "Connect two nodes",
            Append,
            Recorded,
            concat!("Record that two nodes are related, and how.", references!())
        ),
        tool!(
            "tension",
            |i: Pair| rec(RecordCommand::Tension(i)),
            "Note a tension",
            Append,
            Recorded,
            concat!("Record a tension between two nodes (not a contradiction: both may hold). It stays open until resolved.", references!())
        ),
        tool!(
            "claim",
            |i: Claim| rec(RecordCommand::Claim(i)),
            "Record a memory claim",
            Append,
            Recorded,
            concat!(
                "Record a memory claim with its kind (episodic, semantic, preference, ...) and provenance (the events it derives from). A derived claim with no source is an orphan.",
                references!()
            )
        ),
        tool!(
            "relate",
            |i: Relate| rec(RecordCommand::Relate(i)),
            "Relate two claims",
            Append,
            Recorded,
            concat!(
                "Relate one claim to another: update or state_change supersede the older one, retracts retracts it, contradicts contests it, expands and qualifies add to it, same_as marks a duplicate.",
                references!()
            )
        ),
        tool!(
            "confirm",
            |i: NodeRef| rec(RecordCommand::Confirm(i)),
            "Confirm a claim",
            Append,
            Recorded,
            concat!("Record that a claim's owner confirms it.", references!())
        ),
        tool!(
            "frame_open",
            |i: FrameOpen| frame(FrameMove::Open(i)),
            "Open a frame",
            Append,
            Recorded,
            concat!(
                "Open a causal frame: a question being worked on, optionally under a parent frame. Its conclusion holds until the frame, or one above it, is invalidated.",
                references!()
            )
        ),
        tool!(
            "frame_evidence",
            |i: FrameEvidence| frame(FrameMove::Evidence(i)),
            "Frame evidence",
            Append,
            Recorded,
            concat!("Record evidence found inside a frame.", references!())
        ),
        tool!(
            "frame_conclude",
            |i: FrameConclude| frame(FrameMove::Conclude(i)),
            "Conclude a frame",
            Append,
            Recorded,
            concat!("Conclude a frame (status resolved).", references!())
        ),
        tool!(
            "frame_suspend",
            |i: FrameRef| frame(FrameMove::Suspend(i)),
            "Suspend a frame",
            Append,
            Recorded,
            concat!("Suspend a frame (status parked).", references!())
        ),
        tool!(
            "frame_resume",
            |i: FrameRef| frame(FrameMove::Resume(i)),
            "Resume a frame",
            Append,
            Recorded,
            concat!("Resume a suspended or invalidated frame.", references!())
        ),
        tool!(
            "frame_invalidate",
            |i: FrameInvalidate| frame(FrameMove::Invalidate(i)),
            "Invalidate a frame",
            Append,
            Recorded,
            concat!("Invalidate a frame and every frame under it (status retracted): their conclusions no longer hold.", references!())
        ),
        tool!(
            "task_new",
            |i: TaskNew| rec(RecordCommand::Task(TaskCommand::New(i))),
            "Create a task",
            Append,
            Recorded,
            "Record a new task: an objective to work on, optionally with its owner. Move it through its states with `task_update`."
        ),
        tool!(
            "task_update",
            |i: TaskUpdate| rec(RecordCommand::Task(TaskCommand::Update(i))),
            "Update a task",
            Append,
            Recorded,
            concat!("Move a task to a new state: done resolves it, abandoned parks it.", references!())
        ),
        tool!(
            "trajectory",
            |i: Trajectory| rec(RecordCommand::Trajectory(i)),
            "Record a trajectory",
            Append,
            Recorded,
            "Record one attempt at a task: the query, the final answer, how many iterations, whether it converged. Judge it with `judge`."
        ),
        tool!(
            "judge",
            |i: Judge| rec(RecordCommand::Judge(i)),
            "Judge a trajectory",
            Append,
            Recorded,
            concat!("Record whether a trajectory succeeded or failed, why, and how sure.", references!())
        ),
        tool!(
            "memory_item",
            |i: MemoryItem| rec(RecordCommand::Item(i)),
            "Record a memory item",
            Append,
            Recorded,
            concat!(
                "Record a reusable lesson (title, when it applies, content), optionally learned from a trajectory. `outcomes` counts how often items led to success.",
                references!()
            )
        ),
        tool!(
            "record_use",
            |i: RecordUse| rec(RecordCommand::Use(i)),
            "Record an item's use",
            Append,
            Recorded,
            concat!("Record that a memory item was retrieved for a trajectory, at which rank and score.", references!())
        ),
        tool!(
            "accept",
            |i: Accept| Command::Merge(MergeCommand::Accept(i)),
            "Accept a chain",
            Append,
            Recorded,
            "Accept another agent's chain up to an event (a seq of that chain or an entry id): this agent's perspective then includes that prefix. Accepting further later moves the frontier; to reject one event, `dispute` it."
        ),
        tool!(
            "dispute",
            |i: Dispute| Command::Merge(MergeCommand::Dispute(i)),
            "Dispute an event",
            Append,
            Recorded,
            concat!(
                "Dispute exactly one event of another agent's chain with a reason and, optionally, a counter-claim. The dispute is signed and locatable: it says which event, and leaves the rest of the chain accepted.",
                references!()
            )
        ),
        tool!(
            "withdraw",
            |i: Withdraw| Command::Merge(MergeCommand::Withdraw(i)),
            "Withdraw a dispute",
            Append,
            Recorded,
            "Withdraw one of this agent's disputes (name the dispute event's id)."
        ),
        tool!(
            "resolve_fork",
            |i: ResolveFork| Command::Merge(MergeCommand::ResolveFork(i)),
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
        tool!(
            "status",
            |i: NodeRef| read(ReadCommand::Status(i)),
            "A node's status",
            Read,
            StatusAnswer,
            concat!("A node's status and the events that made it so.", statuses!())
        ),
        tool!(
            "trace",
            |i: NodeRef| read(ReadCommand::Trace(i)),
            "Trace a node",
            Read,
            TraceAnswer,
            "Every event that touched a node, in order, each verified against its author's chain."
        ),
        tool!(
            "history",
            |i: History| read(ReadCommand::History(i)),
            "History as of",
            Read,
            ReadResult,
            "The graph as it was at a time (ms since the epoch or YYYY-MM-DD, UTC) or as of an event: every node with its status then, or one node."
        ),
        tool!(
            "latest",
            |i: NodeRef| read(ReadCommand::Latest(i)),
            "Latest version of a node",
            Read,
            LatestAnswer,
            "The current version of a node: follows refinements, reframes, updates and state changes to the newest."
        ),
        tool!("decisions", |_: Nothing| read(ReadCommand::Decisions), "Decisions", Read, DecisionList, "What was decided, and the events it rests on."),
        tool!("questions", |_: Nothing| read(ReadCommand::Questions), "Open questions", Read, NodeList, "Questions not yet resolved."),
        tool!(
            "disagreements",
            |_: Nothing| read(ReadCommand::Disagreements),
            "Contested nodes",
            Read,
            ContestedList,
            "Contested nodes and what contests them (open contradictions and tensions)."
        ),
        tool!(
            "perspective",
            |i: Perspective| Command::Merge(MergeCommand::Perspective(i)),
            "An agent's perspective",
            Read,
            PerspectiveAnswer,
            concat!(
                "An agent's perspective: its own chain plus the prefixes of other chains it accepts, minus the events it disputes, with statuses.",
                statuses!()
            )
        ),
        tool!(
            "consensus",
            |i: Consensus| Command::Merge(MergeCommand::Consensus(i)),
            "Consensus",
            Read,
            ConsensusAnswer,
            "Which prefix of each chain at least `quorum` agents accept, what is disputed and by whom, and the merged view's hash."
        ),
        tool!(
            "disputes",
            |i: Disputes| Command::Merge(MergeCommand::Disputes(i)),
            "Dispute map",
            Read,
            ReadResult,
            "The disagreement map across agents: each disputed event, who accepts and who disputes it, counter-claims; and forked chains by branch."
        ),
        tool!(
            "audit",
            |i: AgentRef| Command::Merge(MergeCommand::Audit(i)),
            "Audit a chain",
            Read,
            ReadResult,
            "Verify an agent's replicated chain end to end: forks, gaps, missing payloads, disputes, accept frontiers."
        ),
        tool!(
            "frame_tree",
            |i: FrameRef| Command::Reasoning(ReasoningCommand::Frame(FrameCommand::Tree(i))),
            "Frame tree",
            Read,
            ReadResult,
            "The frames under a frame, in verification (post-) order, with their states."
        ),
        tool!(
            "outcomes",
            |_: Nothing| read(ReadCommand::Outcomes),
            "Memory item outcomes",
            Read,
            ReadResult,
            "Success and failure counts of memory items, from the judged trajectories that used them."
        ),
        tool!(
            "identity",
            |_: Nothing| Command::Chain(ChainCommand::Id),
            "This agent's id",
            Read,
            ReadResult,
            "This agent's id (64 hex characters): what others pass as `author` or `agent`."
        ),
        tool!(
            "graph",
            |i: GraphExport| read(ReadCommand::Graph(GraphExport { format: i.format.or(Some(GraphFormat::Json)) })),
            "The whole graph",
            Read,
            ReadResult,
            concat!(
                "Every node of the reasoning graph with its status, author and place in its chain, and every edge (from the newer event to the one it names), as data (json) or as Graphviz DOT or Mermaid text.",
                statuses!()
            )
        ),
        tool!(
            "view_hash",
            |_: Nothing| Command::Merge(MergeCommand::ViewHash),
            "Merged view hash",
            Read,
            ViewHashAnswer,
            "The merged view's hash and entry count: equal on every node that holds the same entries."
        ),
    ];
    ops.extend(composed::operations());
    ops
}
