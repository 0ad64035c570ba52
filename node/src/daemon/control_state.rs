//! What the control channel's handlers share ([`ControlState`]): the open
//! store and views, the home, the token, the published document and its
//! automerge-repo copy, the page's access, the listener's bounds. Below the
//! server (`server.rs`) and the automerge-repo routes
//! (`automerge_routes.rs`), which take it; it knows what it holds and
//! nothing that takes it.

use super::automerge_repo::AutomergeRepo;
use super::control_listener::{ControlCounters, ControlLimits};
use super::control_token::ControlToken;
use super::page_access::PageAccess;
use super::published_view::PublishedView;
use agora_core::AgentId;
use agora_home::home::Home;
use agora_live_views::graph_cache::GraphCache;
use agora_store::Store;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// What the handlers share.
pub struct ControlState {
    pub store: Arc<Store>,
    pub graph: Arc<GraphCache>,
    /// The live merged view (kept current by its own thread).
    pub merge: Arc<agora_live_views::merge_cache::MergeCache>,
    pub home: Home,
    pub founder: AgentId,
    /// The bearer token, read again when its file changes.
    pub token: ControlToken,
    /// Asks the event loop for a status snapshot.
    pub status: mpsc::Sender<oneshot::Sender<serde_json::Value>>,
    /// The merged view published as an Automerge document.
    pub published: std::sync::Mutex<PublishedView>,
    /// Counts committed writes (set by the store observer), so the document
    /// is republished only when something changed.
    pub generation: Arc<std::sync::atomic::AtomicU64>,
    /// The histograms `/metrics` reports beside the status snapshot.
    pub histograms: crate::metrics::Histograms,
    /// Cancelled when the node stops: long-lived streams end.
    pub streams_end: tokio_util::sync::CancellationToken,
    /// The published document served over the automerge-repo protocol
    /// (`/v1/automerge/repo`, `/v1/automerge/url`).
    pub automerge_repo: Arc<AutomergeRepo>,
    /// The live page's login codes, sessions and path.
    pub page: PageAccess,
    /// The control listener's bounds and what it did, for `node status`.
    pub control_limits: ControlLimits,
    pub control_counters: Arc<ControlCounters>,
    /// `[otlp]`: how spans received at `/v1/traces` are attributed and kept.
    pub otlp: agora_otlp::Mapping,
    /// The node's own spans, when an OTLP endpoint is configured
    /// (`telemetry.rs`); `None` costs nothing.
    pub telemetry: Option<Arc<super::telemetry::Telemetry>>,
}

/// A WebSocket client that can name subprotocols but not headers offers
/// `agora-token.<token>`; the handshake selects it. (A browser page never
/// holds the token: it opens the page's socket with its session.)
pub const TOKEN_PROTOCOL_PREFIX: &str = "agora-token.";
