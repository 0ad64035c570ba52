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
//! This file is the repo and its sockets; the two routes and the task that
//! keeps the document current from the control state are in
//! `automerge_routes.rs`, which knows both, while neither knows it.
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
use anyhow::{Context, Result, anyhow};
use automerge::{Automerge, ChangeHash};
use axum::extract::ws::{Message, WebSocket};
use futures::{Sink, SinkExt, Stream, StreamExt};
use samod::{AcceptorHandle, DocHandle, PeerId, Repo, ShareConfig};
use std::pin::Pin;
use std::sync::Arc;
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
pub(super) const STOP_MAX: Duration = Duration::from_millis(500);

/// The samod repo of the document served now, and what the sockets share.
pub struct AutomergeRepo {
    /// The node's peer id, and the WebSocket's URL, for each repo made.
    pub(super) peer: String,
    pub(super) url: String,
    pub(super) connections: Arc<Semaphore>,
    pub(super) served: Mutex<Served>,
    /// What `describe` answers: the served document's URL and id, and
    /// which one it is (read without waiting for `served`).
    pub(super) named: std::sync::Mutex<(String, String, u64)>,
}

/// One samod repo holding one document: a copy of one published document.
/// Replaced by a new one when the published document is made again (after
/// a redaction): the old repo, its document and its in-memory storage hold
/// the redacted text in their history, so they are stopped and dropped,
/// and their sockets closed.
pub(super) struct Served {
    pub(super) repo: Repo,
    pub(super) doc: DocHandle,
    pub(super) acceptor: AcceptorHandle,
    /// Ends this repo's sockets.
    pub(super) sockets_end: CancellationToken,
    /// The published document it copies (`PublishedView::document_id`).
    pub(super) document: String,
    /// The store generation it was last brought up to date at.
    pub(super) generation: Option<u64>,
    /// The published document's heads then: every change up to them is in
    /// the served document.
    pub(super) heads: Vec<ChangeHash>,
}

impl Served {
    /// A repo with one document made of `changes` (the published
    /// document's, all of them).
    pub(super) async fn start(
        peer: &str,
        url: &str,
        changes: Vec<automerge::Change>,
        document: String,
        generation: Option<u64>,
        heads: Vec<ChangeHash>,
    ) -> Result<Self> {
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
    pub(super) fn retire(self) {
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
}

type Received = Pin<Box<dyn Stream<Item = Result<Vec<u8>, axum::Error>> + Send>>;

/// The socket as samod's transport wants it: binary messages in and out
/// (text is an error, pings and closes are the socket's business). The
/// incoming stream ends at `end` (the node stops, the document is
/// replaced), which ends the connection; it holds the connection's permit
/// until samod drops it.
pub(super) fn bytes_of(
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
pub(super) struct Held {
    inner: Received,
    _permit: OwnedSemaphorePermit,
}

impl Stream for Held {
    type Item = Result<Vec<u8>, axum::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
