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

pub fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, OpError> {
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
/// its title, effect, output type and description.
macro_rules! tool {
    ($name:literal, |$i:tt: $input:ty| $command:expr, $title:literal, $effect:expr, $out:ty, $desc:expr) => {
        $crate::ops::operation::Operation {
            name: $name,
            title: $title,
            description: $desc,
            effect: $effect,
            input_schema: $crate::ops::operation::schema_of::<$input>,
            output_schema: $crate::ops::operation::schema_of::<$out>,
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
pub(crate) use {references, statuses, tool};
