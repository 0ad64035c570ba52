//! An operation: its name, description for a model, effect on the log,
//! input and output schemas, and how it runs; and the `tool!` line that
//! makes one from an input type and the command it stands for.

use super::error::OpError;
use super::runner::Runner;
use crate::cli::{Command, FrameCommand, FrameMove, ReadCommand, ReasoningCommand, RecordCommand};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
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

/// The groups of tools an MCP server offers: the core profile, listed by
/// default, covers a debate; the others are opt-in. The HTTP API serves
/// every operation, whatever the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// A debate: orient, propose, support, contradict, refine, ask,
    /// resolve, accept, dispute, status, trace, identity.
    Core,
    /// The other reasoning moves and reads of the graph.
    Reasoning,
    /// The merge layer's other moves and its views (perspective,
    /// consensus, the dispute map, audits, the view hash).
    Views,
    /// Memory claims and their relations.
    Memory,
    /// Causal frames.
    Frames,
    /// Tasks, trajectories, judgments, memory items and their outcomes.
    Tasks,
    /// The signed log: chains, entries, packs, fork proofs.
    Log,
    /// The workspace's roster.
    Roster,
}

impl Group {
    /// Every group, in the order they are listed.
    pub const ALL: [Group; 8] = [Group::Core, Group::Reasoning, Group::Views, Group::Memory, Group::Frames, Group::Tasks, Group::Log, Group::Roster];

    /// Its name (`agora mcp --tools NAME,...`).
    pub fn name(self) -> &'static str {
        match self {
            Group::Core => "core",
            Group::Reasoning => "reasoning",
            Group::Views => "views",
            Group::Memory => "memory",
            Group::Frames => "frames",
            Group::Tasks => "tasks",
            Group::Log => "log",
            Group::Roster => "roster",
        }
    }

    /// The groups a list of names selects (`core,memory`; `all` is every
    /// group). The core profile is always included.
    pub fn parse_list<S: AsRef<str>>(names: &[S]) -> Result<Vec<Group>, OpError> {
        let mut groups = vec![Group::Core];
        for name in names.iter().flat_map(|n| n.as_ref().split(',')).map(str::trim).filter(|n| !n.is_empty()) {
            if name == "all" {
                return Ok(Group::ALL.to_vec());
            }
            let Some(g) = Group::ALL.into_iter().find(|g| g.name() == name) else {
                let known: Vec<&str> = Group::ALL.iter().map(|g| g.name()).collect();
                return Err(OpError::input(format!("no tool group {name:?}; the groups are {}, or all", known.join(", "))));
            };
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        groups.sort();
        Ok(groups)
    }
}

/// One operation.
pub struct Operation {
    pub name: &'static str,
    /// The MCP tool group it is listed in.
    pub group: Group,
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

/// How to name an earlier event, and what a node's statuses mean: said
/// once, in the MCP server's instructions, not in every tool.
pub const REFERENCES: &str = "Refer to an earlier event (an entry) by its id: the 64 hex characters every recording tool returns as `id`, or a unique prefix of it (8 or more characters are usually enough); the entry a move is about is its `target`. An agent is named by its 64-hex id as `agent` (`identity` gives this agent's). A full id of an event not received yet is accepted: the new event waits for it (`pending`).";

/// The statuses a node of the graph can have.
pub const STATUSES: &str = "Statuses: active (current, unchallenged or every challenge answered), contested (a challenge is open against it), superseded (replaced by a refinement, reframe or update: `successor` names the current version), resolved (a question answered, a challenge answered, a frame completed, a task done), parked (set aside), retracted (withdrawn as wrong; hidden from current state, the record stays), duplicate (restates another node), invalid (arrived from a peer but breaks a rule); `status` of an entry a key revocation left out of every view says excluded (`excluded` names the rotation and its boundary).";

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

pub fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, OpError> {
    let input = if input.is_null() { json!({}) } else { input };
    serde_json::from_value(input).map_err(|e| OpError::input(format!("{tool}: the input does not match its schema: {e}")))
}

/// The JSON Schema of what an operation returns when its command answers
/// a `T`: `T`'s, with a list (or a list among the alternatives of an
/// untagged answer) wrapped as [`as_object`] wraps it.
pub fn output_schema_of<T: JsonSchema>() -> Map<String, Value> {
    let mut schema = schema_of::<T>();
    if let Some(Value::Array(alternatives)) = schema.get_mut("anyOf") {
        for a in alternatives {
            if let Value::Object(alternative) = a {
                *alternative = listed(std::mem::take(alternative));
            }
        }
        return schema;
    }
    if schema.get("type") != Some(&json!("array")) {
        return schema;
    }
    // The list's own schema goes in `result`; the root's keys stay at the root.
    let root: Map<String, Value> = ["$schema", "$defs", "title"].into_iter().filter_map(|k| schema.remove_entry(k)).collect();
    let mut wrapped = listed(schema);
    wrapped.extend(root);
    wrapped
}

/// A list's schema as the object [`as_object`] makes of it; any other schema as it is.
fn listed(schema: Map<String, Value>) -> Map<String, Value> {
    if schema.get("type") != Some(&json!("array")) {
        return schema;
    }
    let mut list = schema;
    let description = list.remove("description");
    let mut object = Map::from_iter([
        ("type".to_string(), json!("object")),
        ("properties".to_string(), json!({ "result": list })),
        ("required".to_string(), json!(["result"])),
    ]);
    object.extend(description.map(|d| ("description".to_string(), d)));
    object
}

/// A result wrapped so that it is always a JSON object (MCP's structured
/// content is one): lists come back as `{"result": [...]}`.
pub fn as_object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        other => json!({ "result": other }),
    }
}

pub fn rec(c: RecordCommand) -> Command {
    Command::Reasoning(ReasoningCommand::Record(c))
}

pub fn frame(m: FrameMove) -> Command {
    Command::Reasoning(ReasoningCommand::Frame(FrameCommand::Move(m)))
}

pub fn read(c: ReadCommand) -> Command {
    Command::Reasoning(ReasoningCommand::Read(c))
}

/// One operation: its name, its input type and the command it stands for,
/// its title, effect, output type and description; its group is the
/// calling file's `group_of($name)`, so that the catalog holds every
/// operation's line and group.
macro_rules! tool {
    ($name:literal, |$i:tt: $input:ty| $command:expr, $title:literal, $effect:expr, $out:ty, $desc:expr) => {
        $crate::ops::operation::Operation {
            name: $name,
            // The calling file's table (the catalog's `group_of`).
            group: group_of($name),
            title: $title,
            description: $desc,
            effect: $effect,
            input_schema: $crate::ops::operation::schema_of::<$input>,
            output_schema: $crate::ops::operation::output_schema_of::<$out>,
            run: {
                fn run(runner: &dyn $crate::ops::runner::Runner, input: serde_json::Value) -> Result<serde_json::Value, $crate::ops::error::OpError> {
                    let $i: $input = $crate::ops::operation::parse($name, input)?;
                    runner.value($command).map($crate::ops::operation::as_object)
                }
                run
            },
        }
    };
}
pub(crate) use tool;
