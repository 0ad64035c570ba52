//! The merged view as an Automerge document, kept in sync with outside
//! clients through Automerge's own sync protocol.
//!
//! The node holds one document ([`PublishedView`]). Before answering a sync
//! message it republishes the merged view into the document if the store
//! changed since the last time. It reads the view off the node's live
//! merged view ([`MergeCache`]): the merge state, and the merged reasoning
//! graph kept current beside it ([`agora_merge::LiveMergedGraph`]). An
//! [`agora_automerge::Publisher`] finds what changed since it last wrote
//! (chains, disputes, the nodes of the graph's digest buckets that changed)
//! and only that is written, so a republish after one new entry costs what
//! the entry changed, and clients receive small diffs. Clients talk to
//! `POST /v1/automerge/sync` of the control channel: the body is one line
//! with the client's id, then the client's sync message (possibly empty); the
//! answer is the node's next sync message (empty when it has nothing to send).
//! `agora automerge pull --doc FILE` is such a client
//! (`agora_commands::automerge_pull`).
//!
//! The document is a view derived from the signed log and holds no authority:
//! Automerge changes are unsigned (see `protocol-spec/merge.md`).

use agora_automerge::{LiveViewParts, Publisher};
use agora_live_views::merge_cache::MergeCache;
use agora_store::Store;
use anyhow::{Context, Result};
use automerge::AutoCommit;
use automerge::sync::{Message, State, SyncDoc};
use std::collections::{HashMap, VecDeque};

/// Most clients whose sync state the node keeps; the oldest is forgotten
/// (it then syncs from scratch, which Automerge handles).
pub const CLIENTS_MAX: usize = 64;
/// The node's published document and its clients' sync states.
///
/// A redaction makes the document again from nothing: Automerge keeps every
/// value a document ever held in its history, so a client syncing from
/// scratch would otherwise receive the redacted text. The new document has
/// a new id ([`PublishedView::document_id`], sent with every sync reply),
/// every client's sync state is forgotten, and a client that sees a new id
/// drops its copy and syncs again from nothing
/// (`agora_commands::automerge_pull::pull`).
pub struct PublishedView {
    doc: AutoCommit,
    /// Random, new on each node run: the first part of the document's id.
    run: String,
    /// Times the document was made again in this run: its second part.
    remade: u64,
    /// The redactions the node had observed when the document was made.
    redactions: u64,
    /// The store generation the document was last published at.
    published_generation: Option<u64>,
    /// What was written, to tell what to write next.
    publisher: Publisher,
    states: HashMap<String, State>,
    order: VecDeque<String>,
}

impl Default for PublishedView {
    fn default() -> Self {
        let mut run = [0u8; 8];
        if getrandom::fill(&mut run).is_err() {
            // An id only needs to differ from the last run's.
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            run = (nanos ^ u64::from(std::process::id()).rotate_left(32)).to_be_bytes();
        }
        Self {
            doc: AutoCommit::new(),
            run: hex::encode(run),
            remade: 0,
            redactions: 0,
            published_generation: None,
            publisher: Publisher::new(),
            states: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl PublishedView {
    /// Republish if the store changed since (`generation` counts commits),
    /// from the live view of `merge`. What changed is found while the live
    /// view is held; the document is written after it is let go.
    ///
    /// After a redaction the document is made again from nothing (see the
    /// type's docs): a new id, no history, no client's sync state.
    pub fn refresh(&mut self, merge: &MergeCache, store: &Store, generation: u64) -> Result<()> {
        // Read before the view: a redaction counted after this is in the
        // view read below or in the next, and makes the document again then.
        let redactions = merge.redactions();
        if self.published_generation == Some(generation) && redactions == self.redactions {
            return Ok(());
        }
        if redactions != self.redactions {
            self.doc = AutoCommit::new();
            self.publisher = Publisher::new();
            self.states.clear();
            self.order.clear();
            self.remade += 1;
            self.redactions = redactions;
            tracing::debug!(document = %self.document_id(), "a payload was redacted: the published document is made again without its history");
        }
        // Taken before the view catches up, so that every one of them is in
        // the view read below (one committed meanwhile is in both this
        // publish and the next).
        let payloads_changed = merge.take_payloads_changed();
        // Not kept (first published, or dropped since): built without
        // holding the view.
        merge.prepare_merged_graph(store)?;
        let changes = {
            let mut live = merge.current(store)?;
            let m = live.merge();
            let (view_hash, chains, disputes) = (m.view_hash(), m.chain_summaries(), m.open_disputes());
            let graph = live.merged_graph(store)?;
            let graph_digest = graph.digest();
            let parts = LiveViewParts { view_hash, graph: graph.graph(), graph_digest, chains, disputes, payloads_changed: payloads_changed.as_deref() };
            self.publisher.changes(parts)?
        };
        let stats = match agora_automerge::apply(&mut self.doc, &changes) {
            Ok(stats) => stats,
            Err(e) => {
                self.publisher.forget();
                return Err(anyhow::anyhow!("publishing the merged view: {e:?}"));
            }
        };
        tracing::debug!(
            puts = stats.puts,
            deletes = stats.deletes,
            chains = changes.chains.len(),
            nodes = changes.nodes.len(),
            disputes = changes.disputes.len(),
            generation,
            "merged view republished"
        );
        self.published_generation = Some(generation);
        Ok(())
    }

    /// The document's id: `<run>-<n>`, random for each node run, `n` the
    /// times it was made again since (after redactions). A client that
    /// held another id drops its copy: the histories are unrelated.
    pub fn document_id(&self) -> String {
        format!("{}-{}", self.run, self.remade)
    }

    /// The store generation the document was last published at (none
    /// before the first `refresh`).
    pub fn generation(&self) -> Option<u64> {
        self.published_generation
    }

    /// The document's heads.
    pub fn heads(&mut self) -> Vec<automerge::ChangeHash> {
        self.doc.get_heads()
    }

    /// The document's changes that are not ancestors of `since` (every
    /// change for an empty `since`); `since` are heads this document had.
    /// The node's automerge-repo document is kept up to date with these
    /// (the node's `daemon/automerge_repo.rs`).
    pub fn changes_since(&mut self, since: &[automerge::ChangeHash]) -> Vec<automerge::Change> {
        self.doc.get_changes(since)
    }

    /// One round of the sync protocol with `client`.
    pub fn sync(&mut self, client: &str, message: &[u8]) -> Result<Vec<u8>> {
        if !self.states.contains_key(client) {
            if self.order.len() >= CLIENTS_MAX
                && let Some(old) = self.order.pop_front()
            {
                self.states.remove(&old);
            }
            self.order.push_back(client.to_string());
            self.states.insert(client.to_string(), State::new());
        }
        let state = self.states.get_mut(client).context("client state vanished")?;
        if !message.is_empty() {
            let mut msg = Message::decode(message).context("not an Automerge sync message")?;
            // Read only: the view is derived from the signed log, so a
            // client's own changes are dropped (its heads, needs and haves
            // are kept, which is all the node needs to send it what it lacks).
            if !msg.changes.is_empty() {
                tracing::debug!(client, "dropped the changes an automerge client sent: the published view is read only");
                msg.changes = automerge::sync::ChunkList::from(Vec::<Vec<u8>>::new());
            }
            self.doc.sync().receive_sync_message(state, msg).context("applying the client's sync message")?;
        }
        let reply = self.doc.sync().generate_sync_message(state).map(Message::encode).unwrap_or_default();
        tracing::debug!(client, received = message.len(), sent = reply.len(), "automerge sync round");
        Ok(reply)
    }
}
