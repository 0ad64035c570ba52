//! Spans to what is recorded: for each span the keyring agent that signs it,
//! its action, and the reasoning move it carries, if any. The table this
//! code follows is `protocol-spec/otlp.md`.

use agora_graph::MemoryKind;
use agora_graph::event::{MEMORY_WRITE_OPERATIONS, OPERATION_BYTES_MAX, check_operation};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, status::StatusCode};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// Longest name, conversation id or error recorded; a longer name or
/// conversation id refuses the span, a longer error is cut.
pub const FIELD_BYTES_MAX: usize = 1024;
/// Longest contents kept in an action's text (only with `keep_contents`);
/// longer contents are cut there, their hashes cover them whole.
pub const TEXT_BYTES_MAX: usize = 16 * 1024;

/// How spans are attributed to the node's agents, and what of them is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    /// A framework's agent (its `gen_ai.agent.id`, `gen_ai.agent.name`, or
    /// the resource's `service.name`) to the keyring agent that signs for it.
    /// A framework name that is itself a keyring agent's name needs no line.
    pub agents: BTreeMap<String, String>,
    /// The keyring agent that signs spans whose agent neither this mapping
    /// nor the keyring knows; none: such spans are refused, never signed by
    /// an agent created for them.
    pub default_agent: Option<String>,
    /// Keep what went in and came out (arguments, results, messages, memory
    /// contents) in the action's text; otherwise only their SHA-256.
    pub keep_contents: bool,
}

/// An action to record: the `action` event of `protocol-spec/events.md`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionDraft {
    /// What was done: `gen_ai.operation.name`, or `move` for a span that
    /// only carries a reasoning move.
    pub operation: String,
    /// What it was done to or with: the tool, the agent, the model, the
    /// memory record.
    pub name: String,
    /// `gen_ai.conversation.id`.
    pub conversation: String,
    /// `<trace id>/<span id>` in lowercase hex.
    pub span: String,
    /// `<trace id>/<parent span id>`, or empty for a root span.
    pub parent: String,
    /// An event the span names as its cause (`agora.cause`).
    pub cause: Option<[u8; 32]>,
    /// SHA-256 of what went in.
    pub input_hash: Option<[u8; 32]>,
    /// SHA-256 of what came out.
    pub output_hash: Option<[u8; 32]>,
    /// The contents, when kept.
    pub text: String,
    /// What went wrong; empty when the span succeeded.
    pub error: String,
}

/// A reasoning move a span carries: an operation of the catalog (`propose`,
/// `contradict`, `accept`, ...) with its input, recorded under the same
/// rules as from the command line.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveDraft {
    /// The operation's name (`agora.move`).
    pub operation: String,
    /// Its input, from the `agora.move.<field>` attributes.
    pub input: Map<String, Value>,
}

/// What a span did to one memory record, recorded as the record's claim
/// (`protocol-spec/otlp.md`, "Memory records").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryDraft {
    /// The record's id (`gen_ai.memory.record.id`, else `gen_ai.memory.id`):
    /// also the action's name.
    pub record: String,
    /// A write's new state, or `None` for a deletion.
    pub write: Option<MemoryWrite>,
}

/// A memory record's state as a write left it: the claim's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryWrite {
    /// The record's contents (`gen_ai.memory.content`) when contents are
    /// kept, else the record named with its contents' SHA-256.
    pub text: String,
    /// `gen_ai.memory.type` when it names a memory kind, else episodic.
    pub kind: MemoryKind,
    /// `gen_ai.memory.scope`, or empty.
    pub scope: String,
}

/// One span's record.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// The keyring agent that signs it.
    pub agent: String,
    /// The action.
    pub action: ActionDraft,
    /// The move it carries.
    pub carried_move: Option<MoveDraft>,
    /// The memory record it wrote or deleted, when it names one.
    pub memory: Option<MemoryDraft>,
    /// When the span started (ns since the epoch): the order of records.
    pub start_ns: u64,
}

/// A span not recorded, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// Its `<trace id>/<span id>` (as far as it could be read).
    pub span: String,
    /// Why, in a sentence naming the attribute.
    pub reason: String,
}

/// What a request records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The spans to record, parents before children (by start time).
    pub planned: Vec<Planned>,
    /// The spans refused.
    pub refused: Vec<Refused>,
    /// Spans left out by design: neither a GenAI operation nor a move.
    pub ignored: usize,
}

/// Map a request's spans. `is_agent` says whether a name is an agent of the
/// node's keyring. Work is linear in the request.
pub fn plan(request: &ExportTraceServiceRequest, mapping: &Mapping, is_agent: &dyn Fn(&str) -> bool) -> Plan {
    let mut out = Plan::default();
    // Every span of the request by id, with its resource's service name:
    // a span that names no agent is its nearest named ancestor's.
    let mut by_id: HashMap<&[u8], (&Span, Option<&str>)> = HashMap::new();
    let mut spans: Vec<(&Span, Option<&str>)> = Vec::new();
    for resource_spans in &request.resource_spans {
        let service = resource_spans.resource.as_ref().and_then(|r| text_attr(&r.attributes, "service.name"));
        for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
            by_id.insert(span.span_id.as_slice(), (span, service));
            spans.push((span, service));
        }
    }
    for (span, service) in spans {
        match plan_span(span, service, &by_id, mapping, is_agent) {
            Ok(Some(planned)) => out.planned.push(planned),
            Ok(None) => out.ignored += 1,
            Err(reason) => out.refused.push(Refused { span: span_text(&span.trace_id, &span.span_id), reason }),
        }
    }
    out.planned.sort_by(|a, b| (a.start_ns, &a.action.span).cmp(&(b.start_ns, &b.action.span)));
    out
}

fn plan_span(
    span: &Span,
    service: Option<&str>,
    by_id: &HashMap<&[u8], (&Span, Option<&str>)>,
    mapping: &Mapping,
    is_agent: &dyn Fn(&str) -> bool,
) -> Result<Option<Planned>, String> {
    let attrs = &span.attributes;
    let operation = text_attr(attrs, "gen_ai.operation.name");
    let carried_move = text_attr(attrs, "agora.move");
    let operation = match (operation, carried_move) {
        (None, None) => return Ok(None),
        (Some(op), _) => op,
        (None, Some(_)) => "move",
    };
    if check_operation(operation).is_err() {
        return Err(format!(
            "gen_ai.operation.name {:?} is not an operation name (1 to {OPERATION_BYTES_MAX} lowercase letters, digits, `_`, `.`, `-`)",
            cut(operation, 80)
        ));
    }
    if !valid_id(&span.trace_id, 16) || !valid_id(&span.span_id, 8) {
        return Err("the span has no valid trace id (16 bytes) and span id (8 bytes)".into());
    }
    if !span.parent_span_id.is_empty() && !valid_id(&span.parent_span_id, 8) {
        return Err("the span's parent span id is not 8 bytes".into());
    }
    let agent = agent_of(span, service, by_id, mapping, is_agent)?;
    let name = name_of(operation, attrs).unwrap_or(&span.name);
    let conversation = text_attr(attrs, "gen_ai.conversation.id").unwrap_or("");
    for (what, value) in [("name", name), ("gen_ai.conversation.id", conversation)] {
        if value.len() > FIELD_BYTES_MAX {
            return Err(format!("the span's {what} is {} bytes, more than {FIELD_BYTES_MAX}", value.len()));
        }
    }
    let cause = match text_attr(attrs, "agora.cause") {
        None => None,
        Some(text) => Some(hex32(text).ok_or_else(|| format!("agora.cause {:?} is not an event id (64 hex digits)", cut(text, 80)))?),
    };
    let input = first_value(attrs, INPUT_KEYS);
    let output = first_value(attrs, OUTPUT_KEYS);
    let input_hash = given_hash(attrs, "agora.input.sha256")?.or_else(|| input.as_ref().map(|v| sha256(v)));
    let output_hash = given_hash(attrs, "agora.output.sha256")?.or_else(|| output.as_ref().map(|v| sha256(v)));
    let text = if mapping.keep_contents { contents_text(input.as_deref(), output.as_deref()) } else { String::new() };
    let error = if span.status.as_ref().is_some_and(|s| s.code == StatusCode::Error as i32) {
        let message = span.status.as_ref().map(|s| s.message.as_str()).filter(|m| !m.is_empty());
        cut(message.or(text_attr(attrs, "error.type")).unwrap_or("error"), FIELD_BYTES_MAX).to_string()
    } else {
        String::new()
    };
    let parent = if span.parent_span_id.is_empty() { String::new() } else { span_text(&span.trace_id, &span.parent_span_id) };
    let carried_move = match carried_move {
        None => None,
        Some(op) => Some(MoveDraft { operation: op.to_string(), input: move_input(attrs)? }),
    };
    let memory = memory_of(operation, attrs, mapping.keep_contents, input_hash.as_ref())?;
    let action = ActionDraft {
        operation: operation.to_string(),
        name: name.to_string(),
        conversation: conversation.to_string(),
        span: span_text(&span.trace_id, &span.span_id),
        parent,
        cause,
        input_hash,
        output_hash,
        text,
        error,
    };
    Ok(Some(Planned { agent, action, carried_move, memory, start_ns: span.start_time_unix_nano }))
}

/// The attributes that name a memory record, first found.
const RECORD_KEYS: &[&str] = &["gen_ai.memory.record.id", "gen_ai.memory.id"];

/// What a memory span did to the record it names: a write
/// (`create_memory`, `update_memory`) or a deletion (`delete_memory`). A
/// span naming no record (a store's operation, a search) records none.
fn memory_of(operation: &str, attrs: &[KeyValue], keep_contents: bool, contents_hash: Option<&[u8; 32]>) -> Result<Option<MemoryDraft>, String> {
    let deletes = operation == "delete_memory";
    if !deletes && !MEMORY_WRITE_OPERATIONS.contains(&operation) {
        return Ok(None);
    }
    let Some(record) = RECORD_KEYS.iter().find_map(|k| text_attr(attrs, k)).filter(|r| !r.is_empty()) else { return Ok(None) };
    if deletes {
        return Ok(Some(MemoryDraft { record: record.to_string(), write: None }));
    }
    let scope = text_attr(attrs, "gen_ai.memory.scope").unwrap_or("");
    if scope.len() > FIELD_BYTES_MAX {
        return Err(format!("gen_ai.memory.scope is {} bytes, more than {FIELD_BYTES_MAX}", scope.len()));
    }
    let kind = text_attr(attrs, "gen_ai.memory.type").and_then(|t| MemoryKind::ALL.into_iter().find(|k| k.name() == t)).unwrap_or(MemoryKind::Episodic);
    let contents = keep_contents.then(|| first_value(attrs, &["gen_ai.memory.content"])).flatten();
    let text = match (contents, contents_hash) {
        (Some(c), _) => cut(&c, TEXT_BYTES_MAX).to_string(),
        (None, Some(h)) => format!("memory record {record}, contents sha256:{}", hex::encode(h)),
        (None, None) => format!("memory record {record}"),
    };
    Ok(Some(MemoryDraft { record: record.to_string(), write: Some(MemoryWrite { text, kind, scope: scope.to_string() }) }))
}

/// The attributes whose value is what went in, first found.
const INPUT_KEYS: &[&str] =
    &["agora.input", "gen_ai.tool.call.arguments", "gen_ai.input.messages", "gen_ai.memory.content", "gen_ai.memory.query", "gen_ai.prompt"];
/// The attributes whose value is what came out, first found.
const OUTPUT_KEYS: &[&str] = &["agora.output", "gen_ai.tool.call.result", "gen_ai.output.messages", "gen_ai.completion"];

/// The attribute that names what the operation was done to or with.
fn name_of<'a>(operation: &str, attrs: &'a [KeyValue]) -> Option<&'a str> {
    let keys: &[&str] = match operation {
        "execute_tool" => &["gen_ai.tool.name"],
        "invoke_agent" | "create_agent" => &["gen_ai.agent.name", "gen_ai.agent.id"],
        "chat" | "text_completion" | "generate_content" | "embeddings" => &["gen_ai.request.model", "gen_ai.response.model"],
        "handoff" => &["agora.handoff.to", "gen_ai.agent.name"],
        "retrieval" => &["gen_ai.data_source.id"],
        op if op.ends_with("_memory") || op.ends_with("_memory_store") => &["gen_ai.memory.record.id", "gen_ai.memory.id", "gen_ai.memory.store.id"],
        _ => &["agora.name", "gen_ai.tool.name", "gen_ai.agent.name"],
    };
    keys.iter().find_map(|k| text_attr(attrs, k))
}

/// The keyring agent that signs `span`: the agent it names
/// (`gen_ai.agent.id`, else `gen_ai.agent.name`), else its nearest ancestor's
/// in the request, else its resource's `service.name`; mapped by the
/// configuration or taken as a keyring name; else the default agent.
fn agent_of<'a>(
    span: &'a Span,
    service: Option<&'a str>,
    by_id: &HashMap<&[u8], (&'a Span, Option<&'a str>)>,
    mapping: &Mapping,
    is_agent: &dyn Fn(&str) -> bool,
) -> Result<String, String> {
    fn named(s: &Span) -> Option<&str> {
        text_attr(&s.attributes, "gen_ai.agent.id").or(text_attr(&s.attributes, "gen_ai.agent.name"))
    }
    let mut framework = named(span).map(|n| ("gen_ai.agent", n));
    // Up the request's ancestors (bounded: a cycle of parent ids cannot loop).
    let mut at = span;
    for _ in 0..by_id.len() {
        if framework.is_some() || at.parent_span_id.is_empty() {
            break;
        }
        let Some((parent, _)) = by_id.get(at.parent_span_id.as_slice()) else { break };
        framework = named(parent).map(|n| ("an ancestor's gen_ai.agent", n));
        at = parent;
    }
    let framework = framework.or(service.map(|s| ("service.name", s)));
    if let Some((_, name)) = framework {
        if let Some(mapped) = mapping.agents.get(name) {
            return if is_agent(mapped) {
                Ok(mapped.clone())
            } else {
                Err(format!("[otlp] agents maps {:?} to {mapped:?}, which is not an agent of this node's keyring", cut(name, 80)))
            };
        }
        if is_agent(name) {
            return Ok(name.to_string());
        }
    }
    if let Some(default) = &mapping.default_agent {
        return Ok(default.clone());
    }
    Err(match framework {
        Some((attr, name)) => {
            format!("{attr} {:?} is no agent of this node's keyring: create it (`agora agent new`) or map it (`[otlp] agents` in agora.toml)", cut(name, 80))
        }
        None => "the span names no agent (gen_ai.agent.id, gen_ai.agent.name or the resource's service.name) and [otlp] default_agent is not set".into(),
    })
}

/// The move's input: every `agora.move.<field>` attribute as `<field>`.
fn move_input(attrs: &[KeyValue]) -> Result<Map<String, Value>, String> {
    let mut input = Map::new();
    for kv in attrs {
        let Some(field) = kv.key.strip_prefix("agora.move.") else { continue };
        let value = kv.value.as_ref().and_then(json_of).ok_or_else(|| format!("agora.move.{field} has no value"))?;
        input.insert(field.to_string(), value);
    }
    Ok(input)
}

fn text_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs.iter().find(|kv| kv.key == key).and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.as_str()),
        _ => None,
    })
}

/// The bytes of the first of `keys` present: a string's UTF-8, any other
/// value's JSON text.
fn first_value(attrs: &[KeyValue], keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| attrs.iter().find(|kv| kv.key == *k)).and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => kv.value.as_ref().and_then(json_of).map(|v| v.to_string()),
    })
}

/// An attribute value as JSON: strings, booleans, numbers, arrays, and
/// key-value lists as objects; bytes as hex.
fn json_of(value: &AnyValue) -> Option<Value> {
    Some(match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Value::String(s.clone()),
        any_value::Value::BoolValue(b) => Value::Bool(*b),
        any_value::Value::IntValue(i) => Value::from(*i),
        any_value::Value::DoubleValue(d) => serde_json::Number::from_f64(*d).map(Value::Number)?,
        any_value::Value::ArrayValue(a) => Value::Array(a.values.iter().filter_map(json_of).collect()),
        any_value::Value::KvlistValue(l) => {
            Value::Object(l.values.iter().filter_map(|kv| Some((kv.key.clone(), kv.value.as_ref().and_then(json_of)?))).collect())
        }
        any_value::Value::BytesValue(b) => Value::String(hex::encode(b)),
        any_value::Value::StringValueStrindex(_) => return None,
    })
}

fn given_hash(attrs: &[KeyValue], key: &str) -> Result<Option<[u8; 32]>, String> {
    match text_attr(attrs, key) {
        None => Ok(None),
        Some(text) => hex32(text).map(Some).ok_or_else(|| format!("{key} {:?} is not a SHA-256 (64 hex digits)", cut(text, 80))),
    }
}

fn contents_text(input: Option<&str>, output: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(i) = input {
        text.push_str("input: ");
        text.push_str(i);
    }
    if let Some(o) = output {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str("output: ");
        text.push_str(o);
    }
    cut(&text, TEXT_BYTES_MAX).to_string()
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn hex32(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out).ok().map(|()| out)
}

fn valid_id(id: &[u8], len: usize) -> bool {
    id.len() == len && id.iter().any(|b| *b != 0)
}

fn span_text(trace: &[u8], span: &[u8]) -> String {
    format!("{}/{}", hex::encode(trace), hex::encode(span))
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests;
