//! The merged view served over the automerge-repo sync protocol (the one
//! the JS `@automerge/automerge-repo` and Rust `samod` speak), on a
//! WebSocket of the control channel: `GET /v1/automerge/repo`, behind the
//! control token (as a bearer token, or as the subprotocol
//! `agora-token.<token>`: browsers cannot put headers on a WebSocket), and
//! `GET <page>/v1/automerge/repo` under the live page's path, behind the
//! page's session cookie and the node's own `Origin` (see `server.rs`,
//! `page_access.rs`). `GET /v1/automerge/url` names the one document served.
//!
//! The node runs a `samod` repo (in-memory storage) holding ONE document, a
//! copy of [`PublishedView`]'s (the document `POST /v1/automerge/sync`
//! serves): it is created from the published document's changes, and every
//! later change of the published document is applied to it, so both have
//! the same history and content (the served one has, besides, the empty
//! first change automerge-repo gives a document created empty). While at
//! least one WebSocket is open, a task looks at the store's write
//! generation every [`POLL`] and, when it moved, republishes the merged
//! view (`PublishedView::refresh`, which does nothing when the generation
//! is the one already published) and applies the changes the served
//! document lacks; samod then sends each connected client its diff. A new
//! connection brings the document up to date before its handshake. With no
//! socket open, this module republishes nothing.
//!
//! Clients read and never write: the share policy is read-only for every
//! peer (samod ignores the changes a client sends), and the document is a
//! view derived from the signed log, with no authority of its own (see
//! `automerge_view.rs`; `POST /v1/automerge/sync` drops the changes its
//! clients send as well). The document and its URL are new on each node
//! run, like the token.
//!
//! Bounded: at most [`CONNECTIONS_MAX`] sockets at once (beyond: 503), a
//! message of at most [`MESSAGE_BYTES_MAX`], one refresh at a time, and
//! every socket ends when the node stops (the `streams_end` token), so none
//! holds the graceful shutdown open.
//!
//! Lock order: `copied` (this module's, held across awaits) is taken before
//! `ControlState::published` (a std mutex, held only on a blocking thread,
//! never across an await), which is released before the served document is
//! locked.

use super::server::ControlState;
use agora_commands::automerge_view::PublishedView;
use anyhow::{Context, Result, anyhow};
use automerge::{Automerge, ChangeHash};
use axum::Json;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use futures::{Sink, SinkExt, Stream, StreamExt};
use samod::{AcceptorHandle, DocHandle, PeerId, Repo, ShareConfig, Transport};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

/// The WebSocket route.
pub const WEBSOCKET_PATH: &str = "/v1/automerge/repo";
/// Most WebSockets open at once.
pub const CONNECTIONS_MAX: usize = 64;
/// Largest WebSocket message a client may send (its sync messages carry
/// heads, haves and needs; its changes are ignored anyway).
pub const MESSAGE_BYTES_MAX: usize = 16 << 20;
/// How often the served document looks for a committed write while a
/// socket is open: at most one republish per this, so a burst of writes
/// costs one.
pub const POLL: Duration = Duration::from_millis(100);
/// How long the repo may take to stop when the node stops.
const STOP_MAX: Duration = Duration::from_millis(500);

/// The samod repo and the one document it serves.
pub struct AutomergeRepo {
    repo: Repo,
    doc: DocHandle,
    acceptor: AcceptorHandle,
    connections: Arc<Semaphore>,
    copied: Mutex<Copied>,
}

/// What the served document holds of the published one.
struct Copied {
    /// The store generation it was last brought up to date at.
    generation: Option<u64>,
    /// The published document's heads then: every change up to them is in
    /// the served document.
    heads: Vec<ChangeHash>,
}

impl AutomergeRepo {
    /// Start the repo with one document made of `published`'s changes (as
    /// they are: the view is republished on first use, not here). `peer` names
    /// the node in the handshake; `url` (for samod's logs) is where the
    /// WebSocket listens.
    pub async fn start(published: &mut PublishedView, peer: &str, url: &str) -> Result<Self> {
        let repo = Repo::build_tokio().with_peer_id(PeerId::from_string(format!("agora-node-{peer}"))).with_share_policy(ShareConfig::read_only()).load().await;
        let heads = published.heads();
        // A fresh actor: the served document never makes changes of its own
        // but the empty first one samod gives an empty document.
        let mut initial = Automerge::new();
        initial.apply_changes(published.changes_since(&[])).context("copying the published document")?;
        let doc = repo.create(initial).await.map_err(|_| anyhow!("the automerge repo stopped while starting"))?;
        let url = samod::Url::parse(url).context("the automerge-repo WebSocket's URL")?;
        let acceptor = repo.make_acceptor(url).map_err(|_| anyhow!("the automerge repo stopped while starting"))?;
        tracing::debug!(url = %doc.url(), "automerge-repo document served");
        Ok(Self {
            repo,
            doc,
            acceptor,
            connections: Arc::new(Semaphore::new(CONNECTIONS_MAX)),
            copied: Mutex::new(Copied { generation: published.generation(), heads }),
        })
    }

    /// The document's URL, `automerge:<document id>`.
    pub fn url(&self) -> String {
        self.doc.url().to_string()
    }

    /// The document's id (the URL without its scheme).
    pub fn document_id(&self) -> String {
        self.doc.document_id().to_string()
    }

    /// WebSockets open now.
    pub fn connections(&self) -> usize {
        CONNECTIONS_MAX - self.connections.available_permits()
    }

    /// What `/v1/automerge/url` answers and the status shows.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "url": self.url(),
            "document_id": self.document_id(),
            "websocket": WEBSOCKET_PATH,
            "connections": self.connections(),
        })
    }

    /// Bring the served document up to date with the store: republish the
    /// merged view if a write was committed since, then apply the changes
    /// the served document lacks. One at a time.
    pub async fn update(self: &Arc<Self>, state: &Arc<ControlState>) -> Result<()> {
        let mut copied = self.copied.lock().await;
        if copied.generation == Some(state.generation.load(Ordering::Acquire)) {
            return Ok(());
        }
        let since = copied.heads.clone();
        let (state, this) = (state.clone(), self.clone());
        let (generation, heads) = tokio::task::spawn_blocking(move || -> Result<(u64, Vec<ChangeHash>)> {
            let (generation, changes, heads) = {
                let mut published = state.published.lock().unwrap_or_else(|p| p.into_inner());
                // Read under the lock: the newest generation, so a sync
                // round that republished meanwhile is not redone for an
                // older one.
                let generation = state.generation.load(Ordering::Acquire);
                published.refresh(&state.merge, &state.store, generation)?;
                (generation, published.changes_since(&since), published.heads())
            };
            if !changes.is_empty() {
                let n = changes.len();
                this.doc.with_document(|doc| doc.apply_changes(changes)).context("applying the view's changes to the served document")?;
                tracing::debug!(changes = n, generation, "automerge-repo document updated");
            }
            Ok((generation, heads))
        })
        .await
        .context("the update stopped")??;
        *copied = Copied { generation: Some(generation), heads };
        Ok(())
    }

    /// The task that keeps the served document up to date while a socket is
    /// open, and stops the repo when the node stops.
    pub fn spawn_watcher(self: Arc<Self>, state: Arc<ControlState>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let end = state.streams_end.clone();
            // The generation last looked at: a failed update is tried again
            // at the next write, not every poll.
            let mut seen = None;
            loop {
                tokio::select! {
                    _ = end.cancelled() => break,
                    _ = tokio::time::sleep(POLL) => {}
                }
                if self.connections() == 0 {
                    continue;
                }
                let now = state.generation.load(Ordering::Acquire);
                if seen == Some(now) {
                    continue;
                }
                seen = Some(now);
                if let Err(e) = self.update(&state).await {
                    tracing::warn!("updating the automerge-repo document: {e:#}");
                }
            }
            self.acceptor.close();
            if tokio::time::timeout(STOP_MAX, self.repo.stop()).await.is_err() {
                tracing::debug!("the automerge repo did not stop in time");
            }
        })
    }
}

/// `GET /v1/automerge/url`.
pub async fn url(State(state): State<Arc<ControlState>>) -> Response {
    Json(state.automerge_repo.describe()).into_response()
}

/// `GET /v1/automerge/repo`: the WebSocket, handed to the repo once the
/// document is up to date.
pub async fn websocket(State(state): State<Arc<ControlState>>, upgrade: WebSocketUpgrade) -> Response {
    let unavailable = |why: &str| agora_interfaces::http_api::ApiError::new("unavailable", why).into_response();
    if state.streams_end.is_cancelled() {
        return unavailable("the node is shutting down");
    }
    let repo = state.automerge_repo.clone();
    let Ok(permit) = repo.connections.clone().try_acquire_owned() else {
        return unavailable(&format!("{CONNECTIONS_MAX} automerge-repo connections are open; try again later"));
    };
    // A client that sent the token as a subprotocol gets it selected (a
    // browser refuses a handshake that selects none of those it offered).
    let offered = format!("{}{}", super::server::TOKEN_PROTOCOL_PREFIX, state.token);
    upgrade.protocols([offered]).max_message_size(MESSAGE_BYTES_MAX).on_upgrade(move |socket| async move {
        if let Err(e) = repo.update(&state).await {
            tracing::warn!("updating the automerge-repo document: {e:#}");
        }
        let (stream, sink) = bytes_of(socket, permit, state.streams_end.clone());
        if repo.acceptor.accept(Transport::new(stream, sink)).is_err() {
            tracing::debug!("automerge-repo connection refused: the repo stopped");
        }
    })
}

type Received = Pin<Box<dyn Stream<Item = Result<Vec<u8>, axum::Error>> + Send>>;

/// The socket as samod's transport wants it: binary messages in and out
/// (text is an error, pings and closes are the socket's business). The
/// incoming stream ends when the node stops, which ends the connection;
/// it holds the connection's permit until samod drops it.
fn bytes_of(
    socket: WebSocket,
    permit: OwnedSemaphorePermit,
    end: tokio_util::sync::CancellationToken,
) -> (Held, impl Sink<Vec<u8>, Error = axum::Error> + Send + Unpin + 'static) {
    let (sink, stream) = socket.split();
    let stream = stream.take_until(end.cancelled_owned()).filter_map(|message| async move {
        match message {
            Ok(Message::Binary(bytes)) => Some(Ok(bytes.to_vec())),
            Ok(Message::Text(_)) => Some(Err(axum::Error::new(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a text message on the automerge-repo socket (the protocol is binary)",
            )))),
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Close(_)) => None,
            Err(e) => Some(Err(e)),
        }
    });
    let sink = sink.with(|bytes: Vec<u8>| futures::future::ready(Ok::<_, axum::Error>(Message::Binary(bytes.into()))));
    (Held { inner: Box::pin(stream), _permit: permit }, sink)
}

/// A stream that holds a connection's permit as long as it lives.
struct Held {
    inner: Received,
    _permit: OwnedSemaphorePermit,
}

impl Stream for Held {
    type Item = Result<Vec<u8>, axum::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
