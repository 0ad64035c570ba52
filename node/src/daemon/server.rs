//! The control channel's server side: proves knowledge of the token to a
//! client that asks (`/v1/hello`), runs forwarded commands on the node's open
//! store (`/v1/command`), answers status requests (`/v1/status`) and serves
//! the merged view over Automerge sync (`/v1/automerge/sync`) and over the
//! automerge-repo protocol on a WebSocket (`/v1/automerge/repo`, see
//! `automerge_repo.rs`), and serves the MCP tools over streamable HTTP
//! (`/mcp`, see `mcp/`). See `control.rs` for the protocol.

use crate::cli::{Args, ChainCommand, Command, NodeCommand};
use crate::control::{
    frame, proof, token_matches, CommandRequest, CHALLENGE_HEADER, COMMAND_LINE_BYTES_MAX, FRAME_EXIT, FRAME_STDERR, FRAME_STDOUT, PROOF_HEADER,
    STDIN_BYTES_MAX,
};
use crate::graph_cache::GraphCache;
use crate::home::Home;
use crate::session::Session;
use agora_core::AgentId;
use agora_store::Store;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use clap::Parser;
use std::convert::Infallible;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// What the handlers share.
pub struct ControlState {
    pub store: Arc<Store>,
    pub graph: Arc<GraphCache>,
    pub home: Home,
    pub founder: AgentId,
    pub token: String,
    /// Asks the event loop for a status snapshot.
    pub status: mpsc::Sender<oneshot::Sender<serde_json::Value>>,
    /// The merged view published as an Automerge document.
    pub published: std::sync::Mutex<crate::automerge_view::PublishedView>,
    /// Counts committed writes (set by the store observer), so the document
    /// is republished only when something changed.
    pub generation: Arc<std::sync::atomic::AtomicU64>,
    /// The histograms `/metrics` reports beside the status snapshot.
    pub histograms: crate::metrics::Histograms,
    /// Cancelled when the node stops: long-lived streams end.
    pub streams_end: tokio_util::sync::CancellationToken,
    /// The published document served over the automerge-repo protocol
    /// (`/v1/automerge/repo`, `/v1/automerge/url`).
    pub automerge_repo: Arc<super::automerge_repo::AutomergeRepo>,
}

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
        .route("/v1/events", get(super::live_page::events).layer(DefaultBodyLimit::max(0)))
        .route("/v1/automerge/sync", post(automerge_sync).layer(DefaultBodyLimit::max(AUTOMERGE_MESSAGE_BYTES_MAX)))
        .route(super::automerge_repo::WEBSOCKET_PATH, get(super::automerge_repo::websocket).layer(DefaultBodyLimit::max(0)))
        .route("/v1/automerge/url", get(super::automerge_repo::url).layer(DefaultBodyLimit::max(0)))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    // The MCP endpoint (streamable HTTP): the same tools as `agora mcp`,
    // run on this node's open store, behind the same token. Its host check
    // admits 127.0.0.1 and localhost, where the control channel listens.
    let backend: Arc<dyn crate::ops::Backend> = Arc::new(crate::ops::invoke::NodeInvoker { state: state.clone() });
    let server = crate::mcp::AgoraMcp::new(backend);
    let mcp: StreamableHttpService<crate::mcp::AgoraMcp, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(state.streams_end.child_token()),
    );
    let mcp = Router::new().nest_service("/mcp", mcp).layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    // The JSON API over the same operations, and its OpenAPI document.
    let (ops, openapi) = super::http_api::routes(state.clone());
    let ops = ops.layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/v1/hello", get(hello))
        .merge(authenticated)
        .with_state(state)
        .merge(mcp)
        .merge(ops)
        .merge(openapi)
        .merge(super::live_page::static_files())
}

fn authorized(state: &ControlState, headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| token_matches(t, &state.token))
}

/// Refuse a request without the bearer token from its headers alone: the
/// body of an unauthenticated request is never read (nor buffered).
async fn require_token(State(state): State<Arc<ControlState>>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if !authorized(&state, request.headers()) {
        return super::http_api::ApiError::new("unauthorized", "bad or missing bearer token (the node's control token, in node.json)").into_response();
    }
    next.run(request).await
}

/// Prove knowledge of the token without revealing it: the answer to the
/// client's challenge (see `control::proof`). A client checks it before it
/// sends the token, its arguments or its input (a stale `node.json` may
/// point at someone else's listener).
async fn hello(State(state): State<Arc<ControlState>>, headers: HeaderMap) -> Response {
    let Some(challenge) = headers.get(CHALLENGE_HEADER).and_then(|v| v.to_str().ok()).filter(|c| c.len() <= 128) else {
        return (StatusCode::BAD_REQUEST, "no challenge").into_response();
    };
    (StatusCode::OK, [(PROOF_HEADER, proof(&state.token, challenge))]).into_response()
}

async fn status(State(state): State<Arc<ControlState>>) -> Response {
    let (tx, rx) = oneshot::channel();
    if state.status.send(tx).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response();
    }
    match rx.await {
        Ok(mut v) => {
            // Where an automerge-repo client finds the view.
            if let Some(o) = v.as_object_mut() {
                o.insert("automerge".to_string(), state.automerge_repo.describe());
            }
            (StatusCode::OK, v.to_string()).into_response()
        }
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response(),
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
        Ok(status) => (
            StatusCode::OK,
            [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
            crate::metrics::render(&status, &state.histograms),
        )
            .into_response(),
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
        self.tx
            .blocking_send(frame(self.kind, buf))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Make the command's relative paths relative to the caller's directory.
fn absolutize(command: &mut Command, cwd: &Path) {
    let fix = |p: &mut std::path::PathBuf| {
        if p.is_relative() && p.as_os_str() != "-" {
            *p = cwd.join(&*p);
        }
    };
    match command {
        Command::Chain(ChainCommand::Append { file: Some(p) }) => fix(p),
        Command::Chain(ChainCommand::Import { file }) => fix(file),
        Command::Chain(ChainCommand::Export { output: Some(p), .. }) => fix(p),
        _ => {}
    }
}

async fn command(State(state): State<Arc<ControlState>>, body: Bytes) -> Response {
    let Some(split) = body.iter().take(COMMAND_LINE_BYTES_MAX).position(|b| *b == b'\n') else {
        return (StatusCode::BAD_REQUEST, format!("no request line within {COMMAND_LINE_BYTES_MAX} bytes")).into_response();
    };
    let request: CommandRequest = match serde_json::from_slice(&body[..split]) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("request line: {e}")).into_response(),
    };
    let stdin = body.slice(split + 1..);
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(32);
    tokio::task::spawn_blocking(move || run_forwarded(&state, request, stdin, tx));
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|f| f.map(|f| Ok::<_, Infallible>(Bytes::from(f)))));
    Response::builder().status(StatusCode::OK).body(Body::from_stream(stream)).unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn run_forwarded(state: &ControlState, request: CommandRequest, stdin: Bytes, tx: mpsc::Sender<Vec<u8>>) {
    let mut out = FrameWriter { kind: FRAME_STDOUT, tx: tx.clone() };
    let mut err = FrameWriter { kind: FRAME_STDERR, tx: tx.clone() };
    let code = run_in_node(state, &request, &stdin, &mut out, &mut err);
    let _ = tx.blocking_send(frame(FRAME_EXIT, &[code]));
}

/// Run a command line on the node's open store and live graph, as `agora`
/// would run it by hand, with its output written to `out` and `err`.
/// Returns the exit code's byte. The control channel's forwarded commands
/// and the node's MCP tools both come through here.
pub fn run_in_node(state: &ControlState, request: &CommandRequest, stdin: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match Args::try_parse_from(&request.argv) {
        Err(e) => {
            let _ = write!(err, "{}", e.render());
            e.exit_code().clamp(0, 255) as u8
        }
        Ok(args) => {
            let json = args.json;
            let mut command = args.command;
            if matches!(command, Command::Chain(ChainCommand::Init) | Command::Node(NodeCommand::Run(_))) {
                let _ = writeln!(err, "error: a node is already running on {}", state.home.dir.display());
                1
            } else {
                absolutize(&mut command, &request.cwd);
                let mut input = std::io::Cursor::new(stdin);
                let result = {
                    let session = Session::in_node(&state.home, json, out, &mut input, &state.store, &state.graph, state.founder);
                    crate::commands::run(&session, command)
                };
                match result {
                    Ok(code) => exit_code_byte(code),
                    Err(e) => {
                        crate::output::write_error(&e, json, out, err);
                        1
                    }
                }
            }
        }
    }
}

/// `ExitCode` hides its value; the commands only return these.
pub(crate) fn exit_code_byte(code: std::process::ExitCode) -> u8 {
    if code == std::process::ExitCode::SUCCESS {
        0
    } else if code == std::process::ExitCode::from(3) {
        3
    } else if code == std::process::ExitCode::from(2) {
        2
    } else {
        1
    }
}

async fn automerge_sync(State(state): State<Arc<ControlState>>, body: Bytes) -> Response {
    let Some(split) = body.iter().position(|b| *b == b'\n') else {
        return (StatusCode::BAD_REQUEST, "no client id line").into_response();
    };
    let client = match std::str::from_utf8(&body[..split]) {
        Ok(c) if !c.is_empty() && c.len() <= crate::automerge_view::CLIENT_ID_MAX => c.to_string(),
        _ => return (StatusCode::BAD_REQUEST, "client id must be 1 to 64 bytes of UTF-8").into_response(),
    };
    let message = body.slice(split + 1..);
    let result = tokio::task::spawn_blocking(move || {
        let generation = state.generation.load(std::sync::atomic::Ordering::Acquire);
        let mut published = state.published.lock().unwrap_or_else(|p| p.into_inner());
        published.refresh(&state.store, state.founder, generation)?;
        published.sync(&client, &message)
    })
    .await;
    match result {
        Ok(Ok(reply)) => (StatusCode::OK, reply).into_response(),
        Ok(Err(e)) => (StatusCode::BAD_REQUEST, format!("{e:#}")).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
