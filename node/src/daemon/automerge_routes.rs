//! The automerge-repo document on the control channel: its routes
//! (`GET /v1/automerge/repo`, the WebSocket, and `GET /v1/automerge/url`)
//! and the task that keeps it current while a socket is open, both reading
//! the control state ([`ControlState`]). The repo that serves the document,
//! and what it does, bounds and locks, is `automerge_repo.rs`.

use super::automerge_repo::{AutomergeRepo, CONNECTIONS_MAX, MESSAGE_BYTES_MAX, POLL, STOP_MAX, Served, bytes_of};
use super::control_state::{ControlState, TOKEN_PROTOCOL_PREFIX};
use anyhow::{Context, Result};
use automerge::ChangeHash;
use axum::Json;
use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::response::{IntoResponse, Response};
use samod::Transport;
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl AutomergeRepo {
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
    let offered = format!("{}{}", TOKEN_PROTOCOL_PREFIX, state.token.current());
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
