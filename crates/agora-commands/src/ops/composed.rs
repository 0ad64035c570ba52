//! The operations with code of their own: `orient` runs several reads and
//! joins them; `append`, `export` and `import` take or give a payload or a
//! pack inline where their commands read standard input or write a pack.
//! `catalog.rs` lists them with the others.

use super::error::OpError;
use super::operation::{as_object, parse, read};
use super::runner::{Runner, value_of};
use crate::answers::ComputedOver;
use crate::cli::{ChainCommand, Command, ReadCommand};
use crate::reasoning::{Contested, ListedNode, SearchAnswer, SearchHit};
use crate::run::Produced;
use agora_command_line::inputs::{Export, Search};
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

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

/// `orient`: search (a superseded match replaced by its current version,
/// unless `include_superseded`), then the open questions and contested
/// nodes among what was found.
pub fn orient(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let o: Orient = parse("orient", input)?;
    let limit = o.limit.unwrap_or(20).clamp(1, 1000);
    let search = Search { query: o.topic.clone(), all: o.include_superseded, current: !o.include_superseded, limit: Some(limit) };
    let found: SearchAnswer = typed(runner.value(read(ReadCommand::Search(search)))?)?;
    let ids: BTreeSet<&str> = found.hits.iter().map(|h| h.id.as_str()).collect();
    let questions: Vec<ListedNode> = typed(runner.value(read(ReadCommand::Questions))?)?;
    let contested: Vec<Contested> = typed(runner.value(read(ReadCommand::Disagreements))?)?;
    let oriented = Oriented {
        topic: o.topic.clone(),
        open_questions: questions.into_iter().filter(|q| ids.contains(q.id.as_str())).collect(),
        contested: contested.into_iter().filter(|c| ids.contains(c.id.as_str())).collect(),
        nodes: found.hits,
        computed_over: found.computed_over,
    };
    serde_json::to_value(oriented).map_err(|e| OpError::msg(format!("orient: {e}")))
}

/// A command's answer read back as its type.
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, OpError> {
    serde_json::from_value(value).map_err(|e| OpError::msg(format!("an answer does not match its type: {e}")))
}

/// A raw entry: a payload appended to this agent's chain as it is.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendRaw {
    /// The payload as UTF-8 text.
    #[serde(default)]
    pub text: Option<String>,
    /// The payload as base64 (standard alphabet, padded), for binary payloads.
    #[serde(default)]
    pub base64: Option<String>,
}

/// `append`: the payload goes to the command on its standard input.
pub fn append(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let a: AppendRaw = parse("append", input)?;
    let payload = match (a.text, a.base64) {
        (Some(t), None) => t.into_bytes(),
        (None, Some(b)) => {
            base64::engine::general_purpose::STANDARD.decode(b.trim()).map_err(|e| OpError::input(format!("append: `base64` is not base64: {e}")))?
        }
        _ => {
            return Err(OpError::input("append: give the payload as exactly one of `text` or `base64`"));
        }
    };
    value_of(runner.produce(Command::Chain(ChainCommand::Append { file: Some("-".into()) }), &payload)?).map(as_object)
}

/// `export`: the pack the command writes to its standard output.
pub fn export(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let e: Export = parse("export", input)?;
    let out = match runner.produce(Command::Chain(ChainCommand::Export(e)), &[])? {
        Produced::Bytes(out) => out,
        Produced::Value(_) => return Err(OpError::msg("export: the command wrote no pack")),
    };
    let pack = String::from_utf8(out).map_err(|_| OpError::msg("export: the pack is not UTF-8".to_string()))?;
    // The first line is the pack's header; every other line one entry.
    let entries = pack.lines().skip(1).filter(|l| !l.trim().is_empty()).count();
    serde_json::to_value(Exported { entries, pack }).map_err(|e| OpError::msg(format!("export: {e}")))
}

/// Import a pack.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Import {
    /// The pack: JSON lines as `export` writes them. Verified whole before anything is stored.
    pub pack: String,
}

/// `import`: the pack goes to the command on its standard input.
pub fn import(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let i: Import = parse("import", input)?;
    value_of(runner.produce(Command::Chain(ChainCommand::Import { file: "-".into() }), i.pack.as_bytes())?).map(as_object)
}

/// What `orient` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Oriented {
    /// The topic searched.
    pub topic: String,
    /// The nodes found, best match first. A superseded match is replaced by its current version (`found_through` names the matches that led to it) unless `include_superseded`.
    pub nodes: Vec<SearchHit>,
    /// Open questions among them.
    pub open_questions: Vec<ListedNode>,
    /// Contested nodes among them, with what contests them.
    pub contested: Vec<Contested>,
    /// The frontier the search was computed over.
    pub computed_over: ComputedOver,
}

/// What `export` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Exported {
    /// How many entries the pack holds.
    pub entries: usize,
    /// The pack: JSON lines, a header line then one entry per line (protocol-spec/pack.md).
    pub pack: String,
}
