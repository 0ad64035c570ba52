//! The bridge between the store and the reasoning graph.
//!
//! `agora-store` knows nothing about reasoning and `agora-graph` knows nothing
//! about storage; this crate reads stored entries into graph events
//! ([`load_events`]) and verifies the events behind a node against their
//! chains ([`trace`]).
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![allow(clippy::result_large_err)]

use agora_core::verify::{verify_link, verify_payload, verify_signatures, VerifyError};
use agora_core::{EntryId, SignedEntry};
use agora_graph::{Graph, LogEvent, LogPosition};
use agora_store::{PayloadState, Store, StoreError};

/// Why a view could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A traced event failed verification.
    #[error("trace: {0}")]
    Verify(#[from] VerifyError),
    /// An id is not in the graph or the store.
    #[error("no event {0}")]
    Missing(EntryId),
}

/// Every stored entry as the graph sees it, in store order.
pub fn load_events(store: &Store) -> Result<Vec<LogEvent>, StoreError> {
    let mut events = Vec::new();
    store.for_each_entry(None, |e| {
        let h = e.signed.header();
        let pos = LogPosition { timestamp_ms: h.timestamp_ms, author: h.author, seq: h.seq };
        let payload = match &e.payload {
            PayloadState::Held(p) => Some(p.as_slice()),
            _ => None,
        };
        events.push(LogEvent::from_payload(e.signed.id(), pos, payload));
        Ok(())
    })?;
    Ok(events)
}

/// The reasoning graph of everything in the store, decoding each payload just
/// before it is applied.
pub fn load_graph(store: &Store) -> Result<Graph, StoreError> {
    let mut items: Vec<(agora_core::EntryId, LogPosition, Option<Vec<u8>>)> = Vec::new();
    store.for_each_entry(None, |e| {
        let h = e.signed.header();
        let pos = LogPosition { timestamp_ms: h.timestamp_ms, author: h.author, seq: h.seq };
        let payload = match e.payload {
            PayloadState::Held(p) => Some(p),
            _ => None,
        };
        items.push((e.signed.id(), pos, payload));
        Ok(())
    })?;
    let borrowed: Vec<_> = items.iter().map(|(id, pos, p)| (*id, *pos, p.as_deref())).collect();
    Ok(Graph::replay_encoded(&borrowed))
}

/// One verified event of a trace.
#[derive(Debug, Clone)]
pub struct TracedEvent {
    /// The signed entry.
    pub entry: SignedEntry,
    /// Whether its payload is held (and was checked against its hash).
    pub payload_held: bool,
}

/// Every event that touched `id`, in log order, each verified: signatures in
/// one batch, payloads against their hashes, and each entry's link to its
/// predecessor in its author's chain.
pub fn trace(store: &Store, graph: &Graph, id: &EntryId) -> Result<Vec<TracedEvent>, ViewError> {
    let node = graph.node(id).ok_or(ViewError::Missing(*id))?;
    let touched = node.touched_by();
    let mut stored = Vec::with_capacity(touched.len());
    for t in &touched {
        stored.push(store.get(t)?.ok_or(ViewError::Missing(*t))?);
    }
    let signed: Vec<&SignedEntry> = stored.iter().map(|s| &s.signed).collect();
    verify_signatures(&signed)?;
    let mut out = Vec::with_capacity(stored.len());
    for s in stored {
        let payload_held = match &s.payload {
            PayloadState::Held(p) => {
                verify_payload(&s.signed, p)?;
                true
            }
            _ => false,
        };
        if let Some(back) = s.signed.header().backlink {
            let prev = store.get_signed(&back)?.ok_or(ViewError::Missing(back))?;
            verify_link(&prev, &s.signed)?;
        }
        out.push(TracedEvent { entry: s.signed, payload_held });
    }
    Ok(out)
}
