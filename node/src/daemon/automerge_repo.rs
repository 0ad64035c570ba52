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
//! After a redaction the published document is made again from nothing
//! (Automerge keeps every value a document ever held, so a new client would
//! pull the redacted text from the history): the update that meets the new
//! document starts a new repo holding a copy of it, under a new document id,
//! stops the old repo (its document and in-memory storage dropped) and
//! closes the old repo's sockets. That is how connected clients are told:
//! their socket closes, and `GET /v1/automerge/url` names the new document
//! (`remade` counts the documents replaced this run). The old id is then
//! unknown here: a client asking for it is told it is unavailable.
//!
//! Clients read and never write: the share policy is read-only for every
//! peer (samod ignores the changes a client sends), and the document is a
//! view derived from the signed log, with no authority of its own (see
//! `published_view.rs`; `POST /v1/automerge/sync` drops the changes its
//! clients send as well). The document and its URL are new on each node
//! run, like the token.
//!
//! Bounded: at most [`CONNECTIONS_MAX`] sockets at once (beyond: 503), a
//! message of at most [`MESSAGE_BYTES_MAX`], one refresh at a time, and
//! every socket ends when the node stops (the `streams_end` token), so none
//! holds the graceful shutdown open.
//!
//! Lock order: `served` (this module's, held across awaits) is taken before
//! `ControlState::published` (a std mutex, held only on a blocking thread,
//! never across an await), which is released before the served document is
//! locked.

use super::published_view::PublishedView;
use super::server::ControlState;
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
use tokio_util::sync::CancellationToken;

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

/// The samod repo of the document served now, and what the sockets share.
pub struct AutomergeRepo {
    /// The node's peer id, and the WebSocket's URL, for each repo made.
    peer: String,
    url: String,
    connections: Arc<Semaphore>,
    served: Mutex<Served>,
    /// What `describe` answers: the served document's URL and id, and
    /// which one it is (read without waiting for `served`).
    named: std::sync::Mutex<(String, String, u64)>,
}

/// One samod repo holding one document: a copy of one published document.
/// Replaced by a new one when the published document is made again (after
/// a redaction): the old repo, its document and its in-memory storage hold
/// the redacted text in their history, so they are stopped and dropped,
/// and their sockets closed.
struct Served {
    repo: Repo,
    doc: DocHandle,
    acceptor: AcceptorHandle,
    /// Ends this repo's sockets.
    sockets_end: CancellationToken,
    /// The published document it copies (`PublishedView::document_id`).
    document: String,
    /// The store generation it was last brought up to date at.
    generation: Option<u64>,
    /// The published document's heads then: every change up to them is in
    /// the served document.
    heads: Vec<ChangeHash>,
}

impl Served {
    /// A repo with one document made of `changes` (the published
    /// document's, all of them).
    async fn start(peer: &str, url: &str, changes: Vec<automerge::Change>, document: String, generation: Option<u64>, heads: Vec<ChangeHash>) -> Result<Self> {
        let repo = Repo::build_tokio().with_peer_id(PeerId::from_string(format!("agora-node-{peer}"))).with_share_policy(ShareConfig::read_only()).load().await;
        // A fresh actor: the served document never makes changes of its own
        // but the empty first one samod gives an empty document.
        let mut initial = Automerge::new();
        initial.apply_changes(changes).context("copying the published document")?;
        let doc = repo.create(initial).await.map_err(|_| anyhow!("the automerge repo stopped while starting"))?;
        let url = samod::Url::parse(url).context("the automerge-repo WebSocket's URL")?;
        let acceptor = repo.make_acceptor(url).map_err(|_| anyhow!("the automerge repo stopped while starting"))?;
        tracing::debug!(url = %doc.url(), %document, "automerge-repo document served");
        Ok(Self { repo, doc, acceptor, sockets_end: CancellationToken::new(), document, generation, heads })
    }

    /// Close its sockets and stop it, in the background (bounded).
    fn retire(self) {
        self.sockets_end.cancel();
        self.acceptor.close();
        let repo = self.repo;
        tokio::spawn(async move {
            if tokio::time::timeout(STOP_MAX, repo.stop()).await.is_err() {
                tracing::debug!("a retired automerge repo did not stop in time");
            }
        });
    }
}

impl AutomergeRepo {
    /// Start the repo with one document made of `published`'s changes (as
    /// they are: the view is republished on first use, not here). `peer` names
    /// the node in the handshake; `url` (for samod's logs) is where the
    /// WebSocket listens.
    pub async fn start(published: &mut PublishedView, peer: &str, url: &str) -> Result<Self> {
        let heads = published.heads();
        let served = Served::start(peer, url, published.changes_since(&[]), published.document_id(), published.generation(), heads).await?;
        let named = (served.doc.url().to_string(), served.doc.document_id().to_string(), 0);
        Ok(Self {
            peer: peer.to_string(),
            url: url.to_string(),
            connections: Arc::new(Semaphore::new(CONNECTIONS_MAX)),
            served: Mutex::new(served),
            named: std::sync::Mutex::new(named),
        })
    }

    fn named(&self) -> (String, String, u64) {
        self.named.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// WebSockets open now.
    pub fn connections(&self) -> usize {
        CONNECTIONS_MAX - self.connections.available_permits()
    }

    /// What `/v1/automerge/url` answers and the status shows. `remade`
    /// counts the documents served before this one in this run (each made
    /// again after a redaction, under a new id).
    pub fn describe(&self) -> serde_json::Value {
        let (url, document_id, remade) = self.named();
        serde_json::json!({
            "url": url,
            "document_id": document_id,
            "remade": remade,
            "websocket": WEBSOCKET_PATH,
            "connections": self.connections(),
        })
    }

    /// Bring the served document up to date with the store: republish the
    /// merged view if a write was committed since, then apply the changes
    /// the served document lacks. When the published document was made
    /// again (a redaction), the served one is replaced by a new document in
    /// a new repo, and the old repo's sockets are closed: a client learns
    /// the new URL from `/v1/automerge/url`. One at a time.
    pub async fn update(self: &Arc<Self>, state: &Arc<ControlState>) -> Result<()> {
        let mut served = self.served.lock().await;
        // A redaction is a commit: it moves the generation too.
        if served.generation == Some(state.generation.load(Ordering::Acquire)) {
            return Ok(());
        }
        let since = served.heads.clone();
        let (doc, document) = (served.doc.clone(), served.document.clone());
        let state = state.clone();
        let copied = tokio::task::spawn_blocking(move || -> Result<Copied> {
            let (generation, id, changes, heads) = {
                let mut published = state.published.lock().unwrap_or_else(|p| p.into_inner());
                // Read under the lock: the newest generation, so a sync
                // round that republished meanwhile is not redone for an
                // older one.
                let generation = state.generation.load(Ordering::Acquire);
                published.refresh(&state.merge, &state.store, generation)?;
                let id = published.document_id();
                let changes = if id == document { published.changes_since(&since) } else { published.changes_since(&[]) };
                (generation, id, changes, published.heads())
            };
            if id != document {
                return Ok(Copied::Remade { generation, document: id, changes, heads });
            }
            if !changes.is_empty() {
                let n = changes.len();
                doc.with_document(|doc| doc.apply_changes(changes)).context("applying the view's changes to the served document")?;
                tracing::debug!(changes = n, generation, "automerge-repo document updated");
            }
            Ok(Copied::Applied { generation, heads })
        })
        .await
        .context("the update stopped")??;
        match copied {
            Copied::Applied { generation, heads } => {
                served.generation = Some(generation);
                served.heads = heads;
            }
            Copied::Remade { generation, document, changes, heads } => {
                let new = Served::start(&self.peer, &self.url, changes, document, Some(generation), heads).await?;
                {
                    let mut named = self.named.lock().unwrap_or_else(|p| p.into_inner());
                    *named = (new.doc.url().to_string(), new.doc.document_id().to_string(), named.2 + 1);
                }
                tracing::info!(url = %new.doc.url(), "a payload was redacted: the automerge-repo document is served anew, without its history; the old one's sockets are closed");
                std::mem::replace(&mut *served, new).retire();
            }
        }
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
            let served = self.served.lock().await;
            served.sockets_end.cancel();
            served.acceptor.close();
            if tokio::time::timeout(STOP_MAX, served.repo.stop()).await.is_err() {
                tracing::debug!("the automerge repo did not stop in time");
            }
        })
    }
}

/// What an update did to the served document.
enum Copied {
    /// Changes applied to the same document.
    Applied { generation: u64, heads: Vec<ChangeHash> },
    /// The published document was made again: every change of the new one.
    Remade { generation: u64, document: String, changes: Vec<automerge::Change>, heads: Vec<ChangeHash> },
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
        // Never onto a document that may be out of date: after a redaction
        // the old one still holds the text in its history.
        if let Err(e) = repo.update(&state).await {
            tracing::warn!("updating the automerge-repo document, so the socket is closed: {e:#}");
            return;
        }
        let served = repo.served.lock().await;
        // The socket ends when the node stops, or when this document is
        // replaced (a redaction).
        let (node_end, document_end) = (state.streams_end.clone(), served.sockets_end.clone());
        let end = async move {
            tokio::select! {
                _ = node_end.cancelled() => {}
                _ = document_end.cancelled() => {}
            }
        };
        let (stream, sink) = bytes_of(socket, permit, end);
        if served.acceptor.accept(Transport::new(stream, sink)).is_err() {
            tracing::debug!("automerge-repo connection refused: the repo stopped");
        }
    })
}

type Received = Pin<Box<dyn Stream<Item = Result<Vec<u8>, axum::Error>> + Send>>;

/// The socket as samod's transport wants it: binary messages in and out
/// (text is an error, pings and closes are the socket's business). The
/// incoming stream ends at `end` (the node stops, the document is
/// replaced), which ends the connection; it holds the connection's permit
/// until samod drops it.
fn bytes_of(
    socket: WebSocket,
    permit: OwnedSemaphorePermit,
    end: impl std::future::Future<Output = ()> + Send + 'static,
) -> (Held, impl Sink<Vec<u8>, Error = axum::Error> + Send + Unpin + 'static) {
    let (sink, stream) = socket.split();
    let stream = stream.take_until(end).filter_map(|message| async move {
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
