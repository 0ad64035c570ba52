//! The client side of the published Automerge document: `agora automerge
//! pull --doc FILE` brings a local copy up to date with the node's
//! document over `POST /v1/automerge/sync` (the node's side is
//! `node/src/daemon/published_view.rs`), and drops the copy when the node
//! made the document again (after a redaction, or a new node run).

use anyhow::{Context, Result};
use automerge::AutoCommit;
use automerge::sync::{Message, State, SyncDoc};

/// Longest client id.
pub const CLIENT_ID_MAX: usize = 64;

/// The response header that names the document a sync reply is about (the
/// node's document id, new whenever the document is made again).
pub const DOCUMENT_HEADER: &str = "agora-automerge-document";

/// Client side: bring the document in `doc_path` up to date with the node.
/// Returns (bytes sent, bytes received, rounds).
pub fn pull(node: &crate::control::NodeFile, doc_path: &std::path::Path, client: &str) -> Result<(usize, usize, usize, AutoCommit)> {
    let mut doc = match std::fs::read(doc_path) {
        Ok(bytes) => AutoCommit::load(&bytes).with_context(|| format!("{} is not an Automerge document", doc_path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => AutoCommit::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", doc_path.display())),
    };
    // The sync state (the heads both sides are known to share) is kept
    // beside the document, so the next pull sends only what changed.
    let state_path = doc_path.with_extension("syncstate");
    let mut state = match std::fs::read(&state_path) {
        Ok(bytes) => State::decode(&bytes).unwrap_or_else(|_| State::new()),
        Err(_) => State::new(),
    };
    // The id of the document the copy was synced with.
    let document_path = doc_path.with_extension("document");
    let mut known = std::fs::read_to_string(&document_path).ok();
    let (mut sent, mut received, mut rounds) = (0usize, 0usize, 0usize);
    // Bounded: each round either moves data or ends the exchange.
    for _ in 0..64 {
        let outgoing = doc.sync().generate_sync_message(&mut state).map(Message::encode).unwrap_or_default();
        let (reply, document) = crate::control::automerge_sync(node, client, &outgoing)?;
        rounds += 1;
        sent += outgoing.len();
        received += reply.len();
        if document.is_some() && document != known {
            let had = known.is_some() || !doc.get_heads().is_empty();
            known = document;
            if had {
                // Another document (made again after a redaction, or a new
                // node run): its history is unrelated to the copy's, which
                // may hold redacted text. Dropped; synced again from nothing
                // (empty heads make the node send everything again).
                doc = AutoCommit::new();
                state = State::new();
                continue;
            }
        }
        if !reply.is_empty() {
            let msg = Message::decode(&reply).context("the node's sync message")?;
            doc.sync().receive_sync_message(&mut state, msg)?;
        }
        if outgoing.is_empty() && reply.is_empty() {
            break;
        }
    }
    let bytes = doc.save();
    let tmp = doc_path.with_extension("tmp");
    std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, doc_path).with_context(|| format!("writing {}", doc_path.display()))?;
    std::fs::write(&state_path, state.encode()).with_context(|| format!("writing {}", state_path.display()))?;
    if let Some(id) = &known {
        std::fs::write(&document_path, id).with_context(|| format!("writing {}", document_path.display()))?;
    }
    Ok((sent, received, rounds, doc))
}
