//! The control channel's server side: proves knowledge of the token to a
//! client that asks (`/v1/hello`), runs forwarded commands on the node's open
//! store (`/v1/command`), answers status requests (`/v1/status`) and serves
//! the merged view over Automerge sync (`/v1/automerge/sync`) and over the
//! automerge-repo protocol on a WebSocket (`/v1/automerge/repo`, see
//! `automerge_routes.rs`), and serves the MCP tools over streamable HTTP
//! (`/mcp`), the JSON API (`/v1/ops/<name>`) and the live page, the last
//! three from `agora-interfaces` over [`NodeBackend`]. The page, its reads,
//! its change stream and its WebSocket are served under the run's page path
//! behind the page's session, never the token (`page_access.rs`). See
//! `agora_commands::control` for the protocol.

use super::automerge_repo::WEBSOCKET_PATH;
use super::automerge_routes;
use super::control_listener::{ConnectionSlot, hold_until_sent};
use super::control_state::{ControlState, TOKEN_PROTOCOL_PREFIX};
use agora_commands::control::{
    CHALLENGE_HEADER, COMMAND_LINE_BYTES_MAX, CommandRequest, FRAME_EXIT, FRAME_STDERR, FRAME_STDOUT, PROOF_HEADER, STDIN_BYTES_MAX, frame, proof,
};
use agora_commands::ops::{Backend, NodeRunner, OpError, Operation};
use agora_commands::run::{OpenStore, run_in_open_store};
use agora_interfaces::http_api::ApiError;
use agora_interfaces::{http_api, live_page, mcp};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// Largest body of a page login (`code=<64 hex digits>`).
const LOGIN_FORM_BYTES_MAX: usize = 256;
/// How long a page login's body may take to arrive (it is a few bytes).
const LOGIN_FORM_READ_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// Largest body of an Automerge sync message from a client (its heads,
/// haves and needs; changes it sends are dropped: the view is read only).
const AUTOMERGE_MESSAGE_BYTES_MAX: usize = 16 << 20;

/// The routes. Every route but `/v1/hello` sits behind [`require_token`],
/// which runs before any body is read, and each has its own body limit:
/// a command carries at most a piped pack ([`STDIN_BYTES_MAX`]) after its
/// request line, a status request nothing.
pub fn router(state: Arc<ControlState>) -> Router {
    let authenticated = Router::new()
        .route("/v1/command", post(command).layer(DefaultBodyLimit::max(STDIN_BYTES_MAX + COMMAND_LINE_BYTES_MAX)))
        .route("/v1/status", get(status).layer(DefaultBodyLimit::max(0)))
        .route("/metrics", get(metrics).layer(DefaultBodyLimit::max(0)))
        .route("/v1/memory", get(memory).layer(DefaultBodyLimit::max(0)))
        .route("/v1/automerge/sync", post(automerge_sync).layer(DefaultBodyLimit::max(AUTOMERGE_MESSAGE_BYTES_MAX)))
        .route(WEBSOCKET_PATH, get(automerge_routes::websocket).layer(DefaultBodyLimit::max(0)))
        .route("/v1/automerge/url", get(automerge_routes::url).layer(DefaultBodyLimit::max(0)))
        .route("/v1/page/code", post(page_code).layer(DefaultBodyLimit::max(0)))
        .route("/v1/traces", post(super::otlp_route::export).layer(DefaultBodyLimit::max(agora_otlp::REQUEST_BYTES_MAX)))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    // The front ends, run on this node's open store, behind the same token:
    // the MCP endpoint (streamable HTTP: the same tools as `agora mcp`), the
    // JSON API over the same operations (its OpenAPI document is open), and
    // the live page's change stream (its static files are open).
    let backend: Arc<dyn Backend> = Arc::new(NodeBackend { state: state.clone() });
    // `[mcp] tools` of the home's agora.toml (a request's `?tools=` overrides it).
    let groups = agora_home::config::mcp_tools_of_home(&state.home.dir).and_then(|g| mcp::parse_groups(&g.unwrap_or_default())).unwrap_or_else(|e| {
        tracing::warn!("[mcp] tools in {}/agora.toml: {e:#}; /mcp lists the core profile", state.home.dir.display());
        vec![agora_commands::ops::operation::Group::Core]
    });
    let endpoint = mcp::Endpoint::new(backend.clone(), groups, mcp::Changes::Generation(state.generation.clone()), state.streams_end.clone());
    let agents = Arc::new(AgentSessions { endpoint, state: state.clone() });
    let mcp = Router::new().route("/mcp", axum::routing::any(mcp_as_home)).route("/mcp/agents/{name}", axum::routing::any(mcp_as_agent)).with_state(agents);
    let (ops, openapi) = http_api::routes(backend.clone());
    let changes = live_page::Changes { generation: state.generation.clone(), end: state.streams_end.clone() };
    let front_ends = mcp.merge(ops).merge(live_page::events(changes.clone(), "")).layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    // The page's own: under the run's page path, behind the page's session,
    // only what the page reads.
    let base = state.page.prefix.clone();
    let page_api = Router::new()
        .route(&format!("{base}{}", WEBSOCKET_PATH), get(automerge_routes::websocket).layer(DefaultBodyLimit::max(0)))
        .route(&format!("{base}/v1/automerge/url"), get(automerge_routes::url).layer(DefaultBodyLimit::max(0)))
        .with_state(state.clone())
        .merge(http_api::read_routes(backend, &base))
        .merge(live_page::events(changes, &base))
        .layer(axum::middleware::from_fn_with_state(state.clone(), require_page_session));
    Router::new()
        .route("/v1/hello", get(hello))
        .route("/v1/page/session", post(page_session).layer(DefaultBodyLimit::max(LOGIN_FORM_BYTES_MAX)))
        .merge(authenticated)
        .with_state(state)
        .merge(front_ends)
        .merge(page_api)
        .merge(openapi)
        .merge(live_page::login_page())
        .merge(live_page::page_files(&base))
}

fn authorized(state: &ControlState, headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).is_some_and(|t| state.token.matches(t))
}

/// The token as a WebSocket subprotocol.
fn websocket_authorized(state: &ControlState, headers: &HeaderMap) -> bool {
    headers
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|p| p.trim().strip_prefix(TOKEN_PROTOCOL_PREFIX))
        .any(|t| state.token.matches(t))
}

/// A refusal that closes its connection: the request's body is left
/// unread, and a client that kept the connection for its next request
/// would find it gone.
fn refusal(message: &str) -> Response {
    let mut refusal = ApiError::new("unauthorized", message).into_response();
    refusal.headers_mut().insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    refusal
}

/// Mark the request's connection as serving an authorised request until
/// its answer is sent (the listener never closes it for room meanwhile).
async fn run_authorised(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let guard = request.extensions().get::<ConnectionSlot>().map(ConnectionSlot::authorised);
    let response = next.run(request).await;
    match guard {
        Some(guard) => hold_until_sent(response, guard),
        None => response,
    }
}

/// `POST /v1/page/code` (behind the token): a login code for the live page,
/// good once within a minute (`page_access.rs`).
async fn page_code(State(state): State<Arc<ControlState>>) -> Response {
    match state.page.issue_code(Instant::now()) {
        Ok(code) => (
            StatusCode::OK,
            [("cache-control", "no-store")],
            axum::Json(serde_json::json!({ "code": code, "expires_in_ms": super::page_access::LOGIN_CODE_TTL.as_millis() as u64 })),
        )
            .into_response(),
        Err(e) => ApiError::new("internal", format!("{e:#}")).into_response(),
    }
}

/// `POST /v1/page/session` (open): a login code, as the form field `code`,
/// exchanged for the page's session cookie, and the browser sent on to the
/// page. A code is good once.
async fn page_session(State(state): State<Arc<ControlState>>, request: axum::extract::Request) -> Response {
    let refused = || {
        (
            StatusCode::UNAUTHORIZED,
            [("content-type", "text/plain; charset=utf-8"), ("cache-control", "no-store")],
            "This login code is used up or expired: run `agora open` again.\n",
        )
            .into_response()
    };
    let body = tokio::time::timeout(LOGIN_FORM_READ_MAX, axum::body::to_bytes(request.into_body(), LOGIN_FORM_BYTES_MAX)).await;
    let Ok(Ok(body)) = body else { return refusal("the login form did not arrive whole") };
    let code = std::str::from_utf8(&body)
        .ok()
        .and_then(|form| form.split('&').find_map(|field| field.trim().strip_prefix("code=")))
        .filter(|c| c.bytes().all(|b| b.is_ascii_hexdigit()));
    let Some(code) = code else { return refused() };
    match state.page.redeem(code, Instant::now()) {
        Ok(Some(session)) => Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header("location", format!("{}/", state.page.prefix))
            .header("set-cookie", state.page.cookie(&session))
            .header("cache-control", "no-store")
            .header("referrer-policy", "no-referrer")
            .body(Body::empty())
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        Ok(None) => refused(),
        Err(e) => ApiError::new("internal", format!("{e:#}")).into_response(),
    }
}

/// Refuse a page request without a live page session (the cookie of this
/// node's port); the WebSocket also needs this node's own origin (a browser
/// always sends `Origin` on a WebSocket handshake).
async fn require_page_session(State(state): State<Arc<ControlState>>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let headers = request.headers();
    let cookies = headers.get_all("cookie").iter().filter_map(|v| v.to_str().ok());
    let in_session = state.page.session_of(cookies).is_some_and(|s| state.page.session_valid(s, Instant::now()));
    let websocket = request.uri().path().ends_with(WEBSOCKET_PATH);
    let host = headers.get("host").and_then(|v| v.to_str().ok());
    let same_origin = headers.get("origin").and_then(|v| v.to_str().ok()).zip(host).is_some_and(|(o, h)| o == format!("http://{h}"));
    if !in_session || (websocket && !same_origin) {
        return refusal("no page session: open the page with `agora open`");
    }
    run_authorised(request, next).await
}

/// Refuse a request without the bearer token from its headers alone: the
/// body of an unauthenticated request is never read (nor buffered). The
/// automerge-repo WebSocket also takes the token as a subprotocol
/// ([`websocket_authorized`]).
async fn require_token(State(state): State<Arc<ControlState>>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let websocket = request.uri().path() == WEBSOCKET_PATH;
    let allowed = authorized(&state, request.headers()) || (websocket && websocket_authorized(&state, request.headers()));
    if !allowed {
        return refusal("bad or missing bearer token (the node's control token: `agora token show`)");
    }
    run_authorised(request, next).await
}

/// Prove knowledge of the token without revealing it: the answer to the
/// client's challenge (see `control::proof`). A client checks it before it
/// sends the token, its arguments or its input (a stale `node.json` may
/// point at someone else's listener).
async fn hello(State(state): State<Arc<ControlState>>, headers: HeaderMap) -> Response {
    let Some(challenge) = headers.get(CHALLENGE_HEADER).and_then(|v| v.to_str().ok()).filter(|c| c.len() <= 128) else {
        return (StatusCode::BAD_REQUEST, "no challenge").into_response();
    };
    (StatusCode::OK, [(PROOF_HEADER, proof(&state.token.current(), challenge))]).into_response()
}

async fn status(State(state): State<Arc<ControlState>>) -> Response {
    let (tx, rx) = oneshot::channel();
    if state.status.send(tx).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response();
    }
    match rx.await {
        Ok(mut v) => {
            // Where an automerge-repo client finds the view; what the
            // control listener holds and did.
            if let Some(o) = v.as_object_mut() {
                o.insert("automerge".to_string(), state.automerge_repo.describe());
                o.insert("control".to_string(), state.control_counters.snapshot(&state.control_limits));
            }
            (StatusCode::OK, axum::Json(v)).into_response()
        }
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response(),
    }
}

/// `GET /v1/memory`: what the node's views hold in memory, part by part
/// (the live merged view, the reasoning graph, the perspectives kept, the
/// merged graph), beside the allocator's and the store's figures. Each
/// graph's nodes are read once, off the async workers.
async fn memory(State(state): State<Arc<ControlState>>) -> Response {
    let report = tokio::task::spawn_blocking(move || {
        serde_json::json!({
            "allocator": crate::metrics::allocator_memory(),
            "store": state.store.memory_usage().ok(),
            "reasoning_graph": state.graph.memory(),
            "merged_view": state.merge.memory(),
        })
    })
    .await;
    match report {
        Ok(v) => (StatusCode::OK, axum::Json(v)).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "the memory report failed").into_response(),
    }
}

/// `GET /metrics`: the status snapshot and the histograms, in the
/// Prometheus text format.
async fn metrics(State(state): State<Arc<ControlState>>) -> Response {
    let (tx, rx) = oneshot::channel();
    if state.status.send(tx).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response();
    }
    match rx.await {
        Ok(status) => {
            (StatusCode::OK, [("content-type", "text/plain; version=0.0.4; charset=utf-8")], crate::metrics::render(&status, &state.histograms)).into_response()
        }
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response(),
    }
}

/// Standard output or error of a command running on a blocking thread,
/// sent as frames. A closed channel (the client went away) fails the write,
/// which stops the command at its next output.
struct FrameWriter {
    kind: u8,
    tx: mpsc::Sender<Vec<u8>>,
}

impl Write for FrameWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tx.blocking_send(frame(self.kind, buf)).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn command(State(state): State<Arc<ControlState>>, body: Bytes) -> Response {
    let (request, stdin) = match agora_command_line::wire::decode_request(&body) {
        Ok((request, stdin)) => {
            let at = body.len() - stdin.len();
            (request, body.slice(at..))
        }
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(32);
    tokio::task::spawn_blocking(move || run_forwarded(&state, request, stdin, tx));
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|f| f.map(|f| Ok::<_, Infallible>(Bytes::from(f)))));
    Response::builder().status(StatusCode::OK).body(Body::from_stream(stream)).unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Bytes of standard output gathered into one frame. A command's output is
/// written in small pieces (a JSON answer token by token); sent as they come,
/// a 3 MB answer took 2.2 s in hundreds of thousands of frames.
pub const OUTPUT_FRAME_BYTES: usize = 64 * 1024;

fn run_forwarded(state: &ControlState, request: CommandRequest, stdin: Bytes, tx: mpsc::Sender<Vec<u8>>) {
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_FRAME_BYTES, FrameWriter { kind: FRAME_STDOUT, tx: tx.clone() });
    let mut err = FrameWriter { kind: FRAME_STDERR, tx: tx.clone() };
    let code = run_in_node(state, &request, &stdin, &mut out, &mut err);
    // Whatever is left, before the exit code (a client gone fails it; nothing to do).
    let _ = out.flush();
    let _ = tx.blocking_send(frame(FRAME_EXIT, &[code]));
}

/// Run a command line on the node's open store and live graph, as `agora`
/// would run it by hand. Forwarded commands and the front ends' operations
/// both come through here.
fn run_in_node(state: &ControlState, request: &CommandRequest, stdin: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let open = OpenStore { home: &state.home, store: &state.store, graph: &state.graph, merge: &state.merge, founder: state.founder };
    run_in_open_store(&open, request, stdin, out, err)
}

/// The node as the front ends' backend: operations run on its open store,
/// its status from the event loop.
pub struct NodeBackend {
    pub state: Arc<ControlState>,
}

impl Backend for NodeBackend {
    fn call(&self, agent: Option<&str>, op: &Operation, input: serde_json::Value) -> Result<serde_json::Value, OpError> {
        let s = &self.state;
        let open = OpenStore { home: &s.home, store: &s.store, graph: &s.graph, merge: &s.merge, founder: s.founder };
        let Some(telemetry) = &s.telemetry else { return (op.run)(&NodeRunner { open, agent }, input) };
        let started = std::time::SystemTime::now();
        let result = (op.run)(&NodeRunner { open, agent }, input);
        telemetry.operation(op, agent, started, &result);
        result
    }

    fn node_status(&self) -> Result<serde_json::Value, OpError> {
        let (tx, rx) = oneshot::channel();
        let gone = || OpError::msg("the node is shutting down".to_string());
        self.state.status.blocking_send(tx).map_err(|_| gone())?;
        rx.blocking_recv().map_err(|_| gone())
    }
}

/// The MCP endpoints: `/mcp` as the home's own agent, and the keyring's
/// agents at `/mcp/agents/NAME`, each session acting as that agent, with the
/// tool groups of the configuration or of the request's `?tools=`.
struct AgentSessions {
    endpoint: mcp::Endpoint,
    state: Arc<ControlState>,
}

impl AgentSessions {
    fn service(&self, name: Option<&str>, query: Option<&str>) -> Result<mcp::HttpService, http_api::ApiError> {
        let Some(name) = name else { return self.endpoint.service_for(None, query) };
        let held =
            agora_home::home::valid_agent_name(name) && (name == agora_home::home::OWN_AGENT || self.state.home.agent_key_path(name).is_ok_and(|p| p.exists()));
        if !held {
            return Err(http_api::ApiError::new("not_found", format!("no agent named {name:?} in this node's keyring (`agora agent new {name}` on its home)"))
                .rule("unknown_agent"));
        }
        self.endpoint.service_for(Some(name), query)
    }
}

async fn mcp_serve(agents: &AgentSessions, name: Option<&str>, request: axum::extract::Request) -> Response {
    use tower::ServiceExt;
    match agents.service(name, request.uri().query()) {
        Ok(service) => match service.oneshot(request).await {
            Ok(response) => response.map(axum::body::Body::new),
            Err(never) => match never {},
        },
        Err(e) => e.into_response(),
    }
}

async fn mcp_as_home(State(agents): State<Arc<AgentSessions>>, request: axum::extract::Request) -> Response {
    mcp_serve(&agents, None, request).await
}

async fn mcp_as_agent(State(agents): State<Arc<AgentSessions>>, Path(name): Path<String>, request: axum::extract::Request) -> Response {
    mcp_serve(&agents, Some(&name), request).await
}

async fn automerge_sync(State(state): State<Arc<ControlState>>, body: Bytes) -> Response {
    let Some(split) = body.iter().position(|b| *b == b'\n') else {
        return (StatusCode::BAD_REQUEST, "no client id line").into_response();
    };
    let client = match std::str::from_utf8(&body[..split]) {
        Ok(c) if !c.is_empty() && c.len() <= agora_commands::automerge_pull::CLIENT_ID_MAX => c.to_string(),
        _ => return (StatusCode::BAD_REQUEST, "client id must be 1 to 64 bytes of UTF-8").into_response(),
    };
    let message = body.slice(split + 1..);
    let result = tokio::task::spawn_blocking(move || {
        let generation = state.generation.load(std::sync::atomic::Ordering::Acquire);
        let mut published = state.published.lock().unwrap_or_else(|p| p.into_inner());
        published.refresh(&state.merge, &state.store, generation)?;
        Ok::<_, anyhow::Error>((published.sync(&client, &message)?, published.document_id()))
    })
    .await;
    match result {
        Ok(Ok((reply, document))) => (StatusCode::OK, [(agora_commands::automerge_pull::DOCUMENT_HEADER, document)], reply).into_response(),
        Ok(Err(e)) => (StatusCode::BAD_REQUEST, format!("{e:#}")).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
