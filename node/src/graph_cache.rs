//! The reasoning graph kept in memory by a long-running node, updated
//! incrementally as entries are committed.
//!
//! The graph is a view of the log: it is built by replay on first use, then
//! every committed entry that sorts after the last one applied is applied
//! in place ([`Graph::apply`]). An entry that sorts earlier (a peer's older
//! entry arriving late) or a payload that changed (redaction, fill-in) drops
//! the graph, and the next read rebuilds it by replay. Tests prove that
//! incremental application and replay give the same snapshot bytes.

use agora_graph::{Graph, LogEvent, LogPosition};
use agora_store::{CommitNotice, Store, StoreError};
use std::sync::Mutex;

/// A graph that is either current or absent (rebuilt on the next read).
#[derive(Default)]
pub struct GraphCache {
    graph: Mutex<Option<Graph>>,
}

impl GraphCache {
    /// Keep the graph current with a committed write (called by the store's
    /// observer, in commit order).
    pub fn observe(&self, notice: &CommitNotice) {
        let mut slot = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        let Some(graph) = slot.as_mut() else { return };
        if !notice.payloads_changed.is_empty() {
            *slot = None;
            return;
        }
        let mut events: Vec<LogEvent> = notice
            .entries
            .iter()
            .map(|(e, payload)| {
                let h = e.header();
                let pos = LogPosition { timestamp_ms: h.timestamp_ms, author: h.author, seq: h.seq };
                LogEvent::from_payload(e.id(), pos, payload.as_deref())
            })
            .collect();
        events.sort_by_key(|e| (e.pos, e.id));
        for event in events {
            if !graph.apply(event) {
                // Older than what was applied: replay on the next read.
                *slot = None;
                return;
            }
        }
    }

    /// Run `f` on the current graph, building it by replay first if needed.
    pub fn with<R>(&self, store: &Store, f: impl FnOnce(&Graph) -> R) -> Result<R, StoreError> {
        let mut slot = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        let graph = match slot.take() {
            Some(g) => slot.insert(g),
            None => slot.insert(agora_view::load_graph(store)?),
        };
        Ok(f(graph))
    }

    /// Drop the graph (a write path the cache could not follow).
    pub fn invalidate(&self) {
        *self.graph.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}
