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
use agora_commands::ops::{Backend, OpError, Operation};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;

/// The resources, by URI.
const STATUS_URI: &str = "agora://status";
const VIEW_URI: &str = "agora://view";

const INSTRUCTIONS: &str = "Agora records reasoning as signed events in this agent's own hash-linked chain, replicated to every peer. \
Each recording tool (propose, support, contradict, refine, ...) appends one event and returns its `id`; later events refer to earlier ones by that id. \
Nothing is ever overwritten: a position is superseded by refining it, a challenge is answered by resolving it, and another agent's reasoning is accepted up to an event (`accept`) or disputed at one event (`dispute`). \
Start on a topic with `orient`; read one node with `status` or `trace`. \
Statuses: active, contested (a challenge is open), superseded (read its successor with `latest`), resolved, parked, retracted, duplicate, invalid.";

/// The MCP server: one per session's agent.
#[derive(Clone)]
pub struct AgoraMcp {
    tools: Arc<Vec<Operation>>,
    backend: Arc<dyn Backend>,
    /// The named agent of the home's keyring every call acts as (none: the
    /// home's own agent).
    agent: Option<Arc<str>>,
}

impl AgoraMcp {
    /// The server whose calls `backend` runs as `agent`.
    pub fn new(backend: Arc<dyn Backend>, agent: Option<&str>) -> Self {
        Self { tools: Arc::new(agora_commands::ops::catalog()), backend, agent: agent.map(Arc::from) }
    }

    /// The tools as MCP lists them.
    pub fn listed(&self) -> Vec<rmcp::model::Tool> {
        self.tools.iter().map(describe).collect()
    }

    /// Run the operation `name` on the backend.
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
}

fn describe(t: &Operation) -> rmcp::model::Tool {
    let (read_only, destructive, idempotent) = t.effect.hints();
    let mut tool = rmcp::model::Tool::new(t.name, t.description, (t.input_schema)())
        .with_raw_output_schema(Arc::new((t.output_schema)()))
        .with_annotations(ToolAnnotations::with_title(t.title).read_only(read_only).destructive(destructive).idempotent(idempotent).open_world(false));
    tool.title = Some(t.title.to_string());
    tool
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

impl ServerHandler for AgoraMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("agora", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools.iter().find(|t| t.name == name).map(describe)
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let Some(index) = self.tools.iter().position(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        if let Err(e) = crate::http_api::check_input(&self.tools[index], &input) {
            return Ok(tool_error(e).into());
        }
        let (backend, tools, agent) = (self.backend.clone(), self.tools.clone(), self.agent.clone());
        // Commands touch the store (and a forwarded one waits on the node): off the async threads.
        let result = tokio::task::spawn_blocking(move || backend.call(agent.as_deref(), &tools[index], input))
            .await
            .unwrap_or_else(|e| Err(OpError::msg(format!("the tool stopped unexpectedly: {e}"))));
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
                .with_description("The merged reasoning view of every chain held: its hash (equal on every node holding the same entries), every node with its status, and the disagreement map across agents.")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _context: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        let this = self.clone();
        let uri = request.uri.clone();
        let value = tokio::task::spawn_blocking(move || match uri.as_str() {
            STATUS_URI => Some(this.backend.node_status()),
            VIEW_URI => Some(this.merged_view()),
            _ => None,
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("reading {}: {e}", request.uri), None))?;
        let value = match value {
            None => return Err(ErrorData::resource_not_found(format!("no resource {:?}; there are {STATUS_URI} and {VIEW_URI}", request.uri), None)),
            Some(Err(e)) => return Err(ErrorData::internal_error(format!("reading {}: {e}", request.uri), None)),
            Some(Ok(v)) => v,
        };
        let text = serde_json::to_string_pretty(&value).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri).with_mime_type("application/json")]).into())
    }
}

/// The server over streamable HTTP ([`http_service`]).
pub type HttpService = StreamableHttpService<AgoraMcp, LocalSessionManager>;

/// `agora mcp [--as NAME]`: serve over standard input and output until the
/// client closes them, acting as `agent` (none: the home's own agent). Logs
/// go to standard error; standard output is the protocol's.
pub fn serve_stdio(home: agora_home::home::Home, agent: Option<&str>) -> anyhow::Result<std::process::ExitCode> {
    use rmcp::ServiceExt;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let server = AgoraMcp::new(Arc::new(agora_commands::ops::HomeBackend { home }), agent);
        let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| anyhow::anyhow!("MCP initialization failed: {e}"))?;
        running.waiting().await.map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))?;
        Ok(std::process::ExitCode::SUCCESS)
    })
}

/// The same server over streamable HTTP, its tools run by `backend` (a
/// running node's open store) as `agent`, for the caller to mount (at
/// `/mcp`, and `/mcp/agents/NAME` for a named agent) behind its token.
/// Sessions end when `end` is cancelled. Its host check admits 127.0.0.1
/// and localhost, where the control channel listens.
pub fn http_service(backend: Arc<dyn Backend>, agent: Option<&str>, end: tokio_util::sync::CancellationToken) -> HttpService {
    let server = AgoraMcp::new(backend, agent);
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(end),
    )
}
