//! The Model Context Protocol server: Agora's moves and reads as tools an
//! LLM agent calls, and the node's status and merged view as resources.
//!
//! Served two ways, with one handler: `agora mcp` over standard input and
//! output (an agent's MCP client starts it as a subprocess), and the running
//! node's `/mcp` endpoint over streamable HTTP, behind the control channel's
//! bearer token. Every tool is an operation of `ops/`: commands of the CLI
//! run where the CLI would run them. The server adds no rules of its own,
//! and a broken rule comes back as a tool error (`isError`) with the
//! command's message as text and the HTTP API's error object
//! ([`ApiError`]: `code`, `rule`, `message`, `entry`) as structured content.

use crate::http_api::ApiError;
use agora_commands::ops::operation::{Group, REFERENCES, STATUSES};
use agora_commands::ops::{Backend, OpError, Operation};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The resources, by URI.
const STATUS_URI: &str = "agora://status";
const VIEW_URI: &str = "agora://view";
/// One event (a node of the graph): its status, read like the `status` tool.
const EVENT_TEMPLATE: &str = "agora://event/{id}";
const EVENT_PREFIX: &str = "agora://event/";

/// How often a subscription looks for a change: well within the second the
/// protocol's clients are promised.
const WATCH_EVERY: Duration = Duration::from_millis(200);

const INSTRUCTIONS: &str = "Agora records reasoning as signed events in this agent's own hash-linked chain, replicated to every peer. \
Each recording tool (propose, support, contradict, refine, ask, resolve, ...) appends one event and returns its `id`, `kind` and `seq` (its place in this agent's chain); later events refer to earlier ones by that id. \
Nothing is ever overwritten: a position is superseded by refining it, a challenge is answered by resolving it (or by a refinement that lists it in `resolves`), and another agent's reasoning is accepted up to an event (`accept`) or disputed at exactly one event, with a reason and a counter-claim (`dispute`). \
Start on a topic with `orient`; read one node with `status` (who disputes it, who accepts it, its successor) or `trace` (every event that touched it). \
A failed call is a tool error whose structured content is {code, rule, message, entry}: `rule` names the rule broken, `entry` the event it concerns.";

/// The tools listed: the groups selected (the core profile always), and
/// where the server says so.
fn instructions(groups: &[Group]) -> String {
    let names: Vec<&str> = groups.iter().map(|g| g.name()).collect();
    let others: Vec<&str> = Group::ALL.iter().filter(|g| !groups.contains(g)).map(|g| g.name()).collect();
    let mut text = format!("{INSTRUCTIONS}\n\n{REFERENCES}\n\n{STATUSES}\n\nTool groups listed: {}.", names.join(", "));
    if !others.is_empty() {
        text.push_str(&format!(
            " Not listed (the operator enables them: `agora mcp --tools core,NAME`, `[mcp] tools` in agora.toml, or `/mcp?tools=NAME,...`): {}.",
            others.join(", ")
        ));
    }
    text.push_str(" Resources: agora://view (the merged view) and agora://event/{id} (one event's status) can be subscribed to: notifications/resources/updated follows a change, including one arriving from a peer.");
    text
}

/// Where a subscription learns that the log changed: the node's count of
/// committed writes, or (no node in this process) the merged view's hash,
/// read again each time it looks.
#[derive(Clone)]
pub enum Changes {
    /// The node's write generation: it moves on every committed write, a
    /// peer's entries included.
    Generation(Arc<AtomicU64>),
    /// The merged view's hash (`view_hash`), read through the backend.
    ViewHash,
}

/// One session's subscriptions: the URIs, each with what was last seen of
/// it, and the client to notify.
#[derive(Default)]
struct Subscriptions {
    uris: BTreeMap<String, Option<String>>,
    peer: Option<Peer<RoleServer>>,
    watching: bool,
}

/// The MCP server: one per session.
#[derive(Clone)]
pub struct AgoraMcp {
    /// Every operation (resources and prompts read through them all).
    tools: Arc<Vec<Operation>>,
    /// The groups whose tools are listed and may be called.
    groups: Arc<Vec<Group>>,
    backend: Arc<dyn Backend>,
    /// The named agent of the home's keyring every call acts as (none: the
    /// home's own agent).
    agent: Option<Arc<str>>,
    changes: Changes,
    end: CancellationToken,
    subscriptions: Arc<Mutex<Subscriptions>>,
}

impl AgoraMcp {
    /// The server whose calls `backend` runs as `agent`, listing the core
    /// profile.
    pub fn new(backend: Arc<dyn Backend>, agent: Option<&str>) -> Self {
        Self::with_groups(backend, agent, &[Group::Core], Changes::ViewHash, CancellationToken::new())
    }

    /// The server listing the tools of `groups` (the core profile always),
    /// its subscriptions told of changes by `changes` until `end`.
    pub fn with_groups(backend: Arc<dyn Backend>, agent: Option<&str>, groups: &[Group], changes: Changes, end: CancellationToken) -> Self {
        let mut groups = groups.to_vec();
        if !groups.contains(&Group::Core) {
            groups.push(Group::Core);
        }
        groups.sort();
        groups.dedup();
        Self {
            tools: Arc::new(agora_commands::ops::catalog()),
            groups: Arc::new(groups),
            backend,
            agent: agent.map(Arc::from),
            changes,
            end,
            subscriptions: Default::default(),
        }
    }

    /// The same server for a new session: its own subscriptions.
    fn session(&self) -> Self {
        Self { subscriptions: Default::default(), ..self.clone() }
    }

    /// The tools as MCP lists them.
    pub fn listed(&self) -> Vec<rmcp::model::Tool> {
        self.tools.iter().filter(|t| self.groups.contains(&t.group)).map(describe).collect()
    }

    /// Run the operation `name` on the backend, whatever its group.
    fn call(&self, name: &str, input: Value) -> Result<Value, OpError> {
        let op = self.tools.iter().find(|t| t.name == name).ok_or_else(|| OpError::msg(format!("no operation {name:?}")))?;
        self.backend.call(self.agent.as_deref(), op, input)
    }

    fn merged_view(&self) -> Result<Value, OpError> {
        let hash = self.call("view_hash", serde_json::json!({}))?;
        let now = agora_commands::args::now_ms().saturating_add(1).to_string();
        let nodes = self.call("history", serde_json::json!({ "as_of": now }))?;
        let disputes = self.call("disputes", serde_json::json!({}))?;
        // Operations answer objects: a list comes as `{"result": [...]}`.
        let unwrapped = |v: Value| match v {
            Value::Object(mut m) if m.len() == 1 && m.contains_key("result") => m.remove("result").unwrap_or_default(),
            other => other,
        };
        let (nodes, disputes) = (unwrapped(nodes), unwrapped(disputes));
        Ok(serde_json::json!({ "view_hash": hash["view_hash"], "entries": hash["entries"], "nodes": nodes, "disputes": disputes }))
    }

    /// One event's status (`agora://event/{id}`).
    fn event(&self, id: &str) -> Result<Value, OpError> {
        self.call("status", serde_json::json!({ "target": id }))
    }

    /// What a subscribed URI is now, as far as a change of it shows: the
    /// view's hash, an event's status without the frontier it was read over.
    fn seen(&self, uri: &str) -> Option<String> {
        if uri == VIEW_URI {
            return self.call("view_hash", serde_json::json!({})).ok().map(|v| v["view_hash"].to_string());
        }
        let mut status = self.event(uri.strip_prefix(EVENT_PREFIX)?).ok()?;
        if let Value::Object(m) = &mut status {
            m.remove("computed_over");
        }
        Some(status.to_string())
    }

    /// The log's change counter as the subscription sees it.
    fn generation(&self) -> String {
        match &self.changes {
            Changes::Generation(g) => g.load(Ordering::Acquire).to_string(),
            Changes::ViewHash => self.call("view_hash", serde_json::json!({})).map(|v| v["view_hash"].to_string()).unwrap_or_default(),
        }
    }

    /// Watch for changes while this session has subscriptions: after each,
    /// every subscribed URI whose content changed is notified.
    fn watch(&self) {
        let this = self.clone();
        tokio::spawn(async move {
            let read = |this: &AgoraMcp| {
                let this = this.clone();
                tokio::task::spawn_blocking(move || this.generation())
            };
            let Ok(mut last) = read(&this).await else { return };
            loop {
                tokio::select! {
                    _ = this.end.cancelled() => return,
                    _ = tokio::time::sleep(WATCH_EVERY) => {}
                }
                let (peer, uris) = {
                    let subs = this.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
                    (subs.peer.clone(), subs.uris.keys().cloned().collect::<Vec<_>>())
                };
                let Some(peer) = peer.filter(|p| !p.is_transport_closed()) else { break };
                let Ok(now) = read(&this).await else { break };
                if now == last {
                    continue;
                }
                last = now;
                for uri in uris {
                    let (probe, key) = (this.clone(), uri.clone());
                    let Ok(seen) = tokio::task::spawn_blocking(move || probe.seen(&key)).await else { continue };
                    let changed = {
                        let mut subs = this.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
                        match subs.uris.get_mut(&uri) {
                            Some(before) if *before != seen => {
                                *before = seen;
                                true
                            }
                            _ => false,
                        }
                    };
                    if changed && peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri)).await.is_err() {
                        break;
                    }
                }
            }
            this.subscriptions.lock().unwrap_or_else(|p| p.into_inner()).watching = false;
        });
    }
}

/// The operation whose `sampling` classifier this server runs: it asks its
/// client's model (`sampling/createMessage`) and passes the answer in
/// `sampled`, which the operation reads strictly and audits.
const INGEST: &str = "ingest";
/// The field of `ingest`'s input carrying the client's model's answer.
const SAMPLED: &str = "sampled";
/// Longest answer asked of the client's model, in tokens.
const SAMPLING_MAX_TOKENS: u32 = 4096;

/// Ask the client's model to classify `input`'s text, with the prompt the
/// `openai` classifier sends: `{"model", "answer"}` for `ingest`'s
/// `sampled`. A client that did not declare the sampling capability gets
/// a tool error saying so.
#[allow(deprecated)]
async fn sample_classification(peer: &Peer<RoleServer>, input: &Value) -> Result<Value, ApiError> {
    use agora_commands::ingest::classify::{SYSTEM_PROMPT, user_message};
    use rmcp::model::{CreateMessageRequestParams, ModelHint, ModelPreferences, SamplingMessage, SamplingMessageContentBlock};
    let declared = peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_some());
    if !declared {
        return Err(ApiError::new(
            "refused",
            "ingest: the sampling classifier asks this MCP client's own model (sampling/createMessage), but the client did not declare the sampling capability when it connected; use classifier rules or openai",
        )
        .rule(agora_commands::ingest::SAMPLING_UNAVAILABLE));
    }
    let text = input.get("text").and_then(Value::as_str).unwrap_or_default();
    let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::text(user_message(text)));
    let mut params = CreateMessageRequestParams::new(vec![message], SAMPLING_MAX_TOKENS).with_system_prompt(SYSTEM_PROMPT).with_temperature(0.0);
    if let Some(model) = input.get("model").and_then(Value::as_str) {
        params = params.with_model_preferences(ModelPreferences::new().with_hints(vec![ModelHint::new(model)]));
    }
    let answer = peer
        .create_message(params)
        .await
        .map_err(|e| ApiError::new("refused", format!("ingest: the MCP client's model did not answer the sampling request: {e}")).rule("classifier_failed"))?;
    let text: Vec<String> = answer
        .message
        .content
        .into_vec()
        .into_iter()
        .filter_map(|block| match block {
            SamplingMessageContentBlock::Text(t) => Some(t.text),
            _ => None,
        })
        .collect();
    Ok(serde_json::json!({ "model": answer.model, "answer": text.join("") }))
}

impl AgoraMcp {
    /// Run the operation at `index` on the backend, off the async threads
    /// (commands touch the store, and a forwarded one waits on the node).
    async fn call_blocking(&self, index: usize, input: Value) -> Result<Value, OpError> {
        let (backend, tools, agent) = (self.backend.clone(), self.tools.clone(), self.agent.clone());
        tokio::task::spawn_blocking(move || backend.call(agent.as_deref(), &tools[index], input))
            .await
            .unwrap_or_else(|e| Err(OpError::msg(format!("the tool stopped unexpectedly: {e}"))))
    }
}

fn describe(t: &Operation) -> rmcp::model::Tool {
    let (read_only, destructive, idempotent) = t.effect.hints();
    let mut tool = rmcp::model::Tool::new(t.name, t.description, compact((t.input_schema)(), Keep::Descriptions))
        .with_raw_output_schema(Arc::new(compact((t.output_schema)(), if read_only { Keep::Fields } else { Keep::Types })))
        .with_annotations(ToolAnnotations::new().read_only(read_only).destructive(destructive).idempotent(idempotent).open_world(false));
    tool.title = Some(t.title.to_string());
    tool
}

/// What a listed schema keeps besides its types, bounds and required fields.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// Every field's description (an input's: what the model writes).
    Descriptions,
    /// A read's output: its top-level fields' descriptions only (nested
    /// types are typed, and the instructions say what statuses mean).
    Fields,
    /// A move's output (`id`, `kind`, `seq`, `pending`: the instructions
    /// say what they are): types only.
    Types,
}

/// A schema as MCP lists it: what a model needs (types, bounds, enums,
/// required fields, descriptions as `keep` says), without what it does not
/// (`$schema`, titles, integer formats). `tools/list` is read into a
/// model's context whole, so every byte counts.
fn compact(schema: JsonObject, keep: Keep) -> JsonObject {
    #[derive(Clone, Copy, PartialEq)]
    enum At {
        Root,
        Field,
        Nested,
    }
    fn strip(m: &mut JsonObject, keep: Keep, at: At) {
        m.remove("$schema");
        m.remove("format");
        if m.get("title").is_some_and(Value::is_string) {
            m.remove("title");
        }
        // The root's description is the tool's; a read's top-level field keeps its own.
        if at == At::Root || (at == At::Nested && keep != Keep::Descriptions) || (at == At::Field && keep == Keep::Types) {
            m.remove("description");
        }
        for (key, child) in m.iter_mut() {
            match (key.as_str(), child) {
                ("properties" | "$defs", Value::Object(fields)) => {
                    let next = if key == "properties" && at == At::Root { At::Field } else { At::Nested };
                    for field in fields.values_mut() {
                        if let Value::Object(f) = field {
                            strip(f, keep, next);
                        }
                    }
                }
                (_, Value::Object(sub)) => strip(sub, keep, At::Nested),
                (_, Value::Array(list)) => list.iter_mut().filter_map(Value::as_object_mut).for_each(|sub| strip(sub, keep, At::Nested)),
                _ => {}
            }
        }
    }
    let mut schema = schema;
    strip(&mut schema, keep, At::Root);
    schema
}

/// A tool error: `isError`, the error's fields (`code`, `rule`, `message`,
/// `entry`: the HTTP API's error shape) as structured content, and its
/// message with the rule and entry as text for a model.
fn tool_error(error: ApiError) -> CallToolResult {
    let text = match &error.entry {
        Some(entry) => format!("{} (rule: {}; entry: {entry})", error.message, error.rule),
        None => format!("{} (rule: {})", error.message, error.rule),
    };
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(error.to_value());
    result
}

fn json_object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => JsonObject::from_iter([("result".to_string(), other)]),
    }
}

/// The prompts, by name.
const OPEN_DEBATE: &str = "open_debate";
const REVIEW_CHAIN: &str = "review_chain";

fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            OPEN_DEBATE,
            Some("Open a debate on a topic: see what is already recorded on it, then state a position or a question others can answer."),
            Some(vec![PromptArgument::new("topic").with_description("What the debate is about.").with_required(true)]),
        )
        .with_title("Open a debate"),
        Prompt::new(
            REVIEW_CHAIN,
            Some("Review a peer's chain before accepting it: its events in order, then accept it up to the last event you agree with and dispute the one you do not."),
            Some(vec![PromptArgument::new("agent").with_description("The peer's agent id (64 hex characters).").with_required(true)]),
        )
        .with_title("Review a peer's chain"),
    ]
}

/// The first text lines of a chain's listing, for the review prompt.
fn chain_lines(log: &Value) -> String {
    let entries = log.get("result").and_then(Value::as_array).cloned().unwrap_or_default();
    if entries.is_empty() {
        return "(no entry of this chain is held here yet)".to_string();
    }
    entries
        .iter()
        .take(100)
        .map(|e| {
            let field = |k: &str| e.get(k).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default();
            format!("- seq {} id {}: {}", field("seq"), field("id"), field("preview"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl ServerHandler for AgoraMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().enable_resources_subscribe().build())
            .with_server_info(Implementation::new("agora", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions(&self.groups))
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools.iter().find(|t| t.name == name && self.groups.contains(&t.group)).map(describe)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let Some(index) = self.tools.iter().position(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
        };
        let group = self.tools[index].group;
        if !self.groups.contains(&group) {
            let e = ApiError::new("not_found", format!("the tool {:?} is in the group {:?}, which this server does not list", request.name, group.name()))
                .rule("tool_group_not_enabled");
            return Ok(tool_error(e).into());
        }
        let mut input = Value::Object(request.arguments.unwrap_or_default());
        if let Err(e) = crate::http_api::check_input(&self.tools[index], &input) {
            return Ok(tool_error(e).into());
        }
        let ingest = request.name == INGEST;
        if ingest {
            // Only this server fills in what the client's model answered.
            if let Some(fields) = input.as_object_mut() {
                fields.remove(SAMPLED);
            }
        }
        let asks_sampling = ingest && input.get("classifier").and_then(Value::as_str) == Some("sampling");
        if asks_sampling {
            match sample_classification(&context.peer, &input).await {
                Ok(sampled) => input[SAMPLED] = sampled,
                Err(e) => return Ok(tool_error(e).into()),
            }
        }
        let mut result = self.call_blocking(index, input.clone()).await;
        // No classifier named, and the home's default is sampling: ask the client's model, then again.
        if ingest && !asks_sampling && matches!(&result, Err(e) if e.rule.as_deref() == Some(agora_commands::ingest::SAMPLING_UNAVAILABLE)) {
            match sample_classification(&context.peer, &input).await {
                Ok(sampled) => {
                    input[SAMPLED] = sampled;
                    input["classifier"] = Value::from("sampling");
                    result = self.call_blocking(index, input).await;
                }
                Err(e) => return Ok(tool_error(e).into()),
            }
        }
        Ok(match result {
            Ok(value) => CallToolResult::structured(Value::Object(json_object(value))),
            Err(e) => tool_error(ApiError::from_op(e)),
        }
        .into())
    }

    async fn list_resources(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(STATUS_URI, "status")
                .with_description("The node's status: peers, per-author frontiers, sync lag and refused input (or, with no node running, this agent and the chains stored here).")
                .with_mime_type("application/json"),
            Resource::new(VIEW_URI, "merged view")
                .with_description("The merged reasoning view of every chain held: its hash (equal on every node holding the same entries), every node with its status, and the disagreement map across agents. Subscribe to hear of every change.")
                .with_mime_type("application/json"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(EVENT_TEMPLATE, "event")
                .with_title("One event")
                .with_description("One event (a node of the graph) by its entry id: its status as the `status` tool reads it. Subscribe to hear when it changes (contested, disputed, superseded, ...).")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _context: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        let this = self.clone();
        let uri = request.uri.clone();
        let value = tokio::task::spawn_blocking(move || match uri.as_str() {
            STATUS_URI => Some(this.backend.node_status()),
            VIEW_URI => Some(this.merged_view()),
            other => other.strip_prefix(EVENT_PREFIX).map(|id| this.event(id)),
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("reading {}: {e}", request.uri), None))?;
        let value = match value {
            None => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {:?}; there are {STATUS_URI}, {VIEW_URI} and {EVENT_TEMPLATE}", request.uri),
                    None,
                ));
            }
            Some(Err(e)) => {
                let e = ApiError::from_op(e);
                let data = Some(e.to_value());
                return Err(if e.code == "not_found" { ErrorData::resource_not_found(e.message, data) } else { ErrorData::invalid_params(e.message, data) });
            }
            Some(Ok(v)) => v,
        };
        let text = serde_json::to_string_pretty(&value).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri).with_mime_type("application/json")]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(&self, request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let uri = request.uri;
        if uri != VIEW_URI && !uri.starts_with(EVENT_PREFIX) {
            return Err(ErrorData::invalid_params(format!("{uri:?} cannot be subscribed to; {VIEW_URI} and {EVENT_TEMPLATE} can"), None));
        }
        let (this, key) = (self.clone(), uri.clone());
        let seen = tokio::task::spawn_blocking(move || this.seen(&key)).await.ok().flatten();
        if seen.is_none() && uri != VIEW_URI {
            return Err(ErrorData::resource_not_found(format!("no event {uri:?} here"), None));
        }
        let start = {
            let mut subs = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
            subs.uris.insert(uri, seen);
            subs.peer = Some(context.peer.clone());
            !std::mem::replace(&mut subs.watching, true)
        };
        if start {
            self.watch();
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(&self, request: UnsubscribeRequestParams, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.subscriptions.lock().unwrap_or_else(|p| p.into_inner()).uris.remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts()))
    }

    async fn get_prompt(&self, request: GetPromptRequestParams, _context: RequestContext<RoleServer>) -> Result<GetPromptResponse, ErrorData> {
        let arg =
            |name: &str| request.arguments.as_ref().and_then(|a| a.get(name)).and_then(Value::as_str).map(str::to_string).filter(|s| !s.trim().is_empty());
        let missing = |name: &str| ErrorData::invalid_params(format!("the prompt {:?} needs the argument {name:?}", request.name), None);
        let (description, text) = match request.name.as_str() {
            OPEN_DEBATE => {
                let topic = arg("topic").ok_or_else(|| missing("topic"))?;
                (
                    format!("Open a debate on {topic}"),
                    format!(
                        "Open a debate on this topic: {topic}\n\n\
1. Call `orient` with this topic to see what is already recorded: positions, their statuses, who disputes or accepts them, open questions and contested nodes.\n\
2. If a position you hold is there, `support` it, `contradict` it, or `refine` it (list in `resolves` the contradictions your refinement answers) rather than restating it.\n\
3. Otherwise `propose` one position, stated so that it can be supported or contradicted, and `ask` the open question others should answer.\n\
4. Keep the ids the tools return: later moves name their `target` by them. Read one node with `status` or `trace`, and subscribe to agora://event/{{id}} to hear when it is contested, disputed or superseded."
                    ),
                )
            }
            REVIEW_CHAIN => {
                let agent = arg("agent").ok_or_else(|| missing("agent"))?;
                let (this, who) = (self.clone(), agent.clone());
                let log = tokio::task::spawn_blocking(move || this.call("log", serde_json::json!({ "agent": who })))
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
                    .map_err(|e| {
                        let e = ApiError::from_op(e);
                        let data = Some(e.to_value());
                        ErrorData::invalid_params(e.message, data)
                    })?;
                (
                    format!("Review the chain of {agent} before accepting it"),
                    format!(
                        "Review the chain of agent {agent} before accepting it. Its events held here, in order:\n{}\n\n\
1. Read each event that makes a claim with `status` (or `trace` for what touched it); check it against what you know.\n\
2. Accept the chain up to the last event you agree with: `accept` with this `agent` and `up_to` that event's seq or id. Accepting is of a prefix: everything before it is accepted too.\n\
3. Dispute exactly the event you reject: `dispute` with its `target`, a `reason`, and a `counter` claim saying what should be believed instead. The rest of the chain stays accepted.\n\
4. Then `status` of a disputed event shows your dispute in `disputed_by`.",
                        chain_lines(&log)
                    ),
                )
            }
            other => return Err(ErrorData::invalid_params(format!("no prompt {other:?}; there are {OPEN_DEBATE} and {REVIEW_CHAIN}"), None)),
        };
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        result.description = Some(description);
        Ok(result.into())
    }
}

/// The server over streamable HTTP ([`Endpoint`]).
pub type HttpService = StreamableHttpService<AgoraMcp, LocalSessionManager>;

/// The groups a `--tools` flag, an `[mcp] tools` setting or a `?tools=`
/// query names (the core profile always).
pub fn parse_groups<S: AsRef<str>>(names: &[S]) -> anyhow::Result<Vec<Group>> {
    Group::parse_list(names).map_err(|e| anyhow::anyhow!("{}", e.message))
}

/// `agora mcp [--as NAME] [--tools GROUPS]`: serve over standard input and
/// output until the client closes them, acting as `agent` (none: the home's
/// own agent), listing `groups`. Logs go to standard error; standard output
/// is the protocol's.
pub fn serve_stdio(home: agora_home::home::Home, agent: Option<&str>, groups: &[Group]) -> anyhow::Result<std::process::ExitCode> {
    use rmcp::ServiceExt;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let end = CancellationToken::new();
        let server = AgoraMcp::with_groups(Arc::new(agora_commands::ops::HomeBackend { home }), agent, groups, Changes::ViewHash, end.clone());
        let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| anyhow::anyhow!("MCP initialization failed: {e}"))?;
        let stopped = running.waiting().await.map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"));
        end.cancel();
        stopped?;
        Ok(std::process::ExitCode::SUCCESS)
    })
}

/// An agent (none: the home's own) and the groups its session lists.
type ServiceKey = (Option<String>, Vec<Group>);

/// The node's MCP endpoints: `/mcp` (the home's own agent) and
/// `/mcp/agents/NAME`, each listing the groups of the configuration's
/// `[mcp] tools` or of the request's `?tools=core,memory` (`all`: every
/// group). One streamable HTTP service per agent and selection, made on its
/// first request.
pub struct Endpoint {
    backend: Arc<dyn Backend>,
    groups: Vec<Group>,
    changes: Changes,
    end: CancellationToken,
    services: Mutex<BTreeMap<ServiceKey, HttpService>>,
}

impl Endpoint {
    /// The endpoints of `backend`, listing `groups` unless a request names
    /// others, their subscriptions told of changes by `changes`; sessions
    /// end when `end` is cancelled.
    pub fn new(backend: Arc<dyn Backend>, groups: Vec<Group>, changes: Changes, end: CancellationToken) -> Self {
        Self { backend, groups, changes, end, services: Default::default() }
    }

    /// The service for a request to act as `agent` with the query `query`:
    /// its `tools` parameter (`core,memory`, `all`) chooses the groups, else
    /// the configuration's. The caller serves the request with it.
    pub fn service_for(&self, agent: Option<&str>, query: Option<&str>) -> Result<HttpService, ApiError> {
        let asked: Vec<String> = query
            .unwrap_or_default()
            .split('&')
            .filter_map(|pair| pair.strip_prefix("tools="))
            .map(|v| v.replace("%2C", ",").replace("%2c", ",").replace('+', " "))
            .collect();
        let groups = if asked.is_empty() {
            self.groups.clone()
        } else {
            Group::parse_list(&asked).map_err(|e| ApiError::new("bad_input", e.message).rule("tool_group"))?
        };
        let mut services = self.services.lock().unwrap_or_else(|p| p.into_inner());
        Ok(services.entry((agent.map(str::to_string), groups.clone())).or_insert_with(|| self.service(agent, &groups)).clone())
    }

    fn service(&self, agent: Option<&str>, groups: &[Group]) -> HttpService {
        let server = AgoraMcp::with_groups(self.backend.clone(), agent, groups, self.changes.clone(), self.end.clone());
        StreamableHttpService::new(
            move || Ok(server.session()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_cancellation_token(self.end.child_token()),
        )
    }
}
