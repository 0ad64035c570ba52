//! What the store committed, fanned out: the live graph (in the observer, so
//! a command sees its own write in its next read), and through the event
//! loop the replicator (new tips, entries appended here and fork proofs to
//! publish, payloads that arrived or are missing) and the roster.
//!
//! The work per notice is bounded by the notice: the tips it passed and
//! added (the store's `TipChange`s, never a read of an author's tips), one
//! proof read per fork it names, one lookup per changed payload; nothing
//! here reads all of an author's tips or proofs, so a peer that floods forks
//! (100,000 branches at one seq, spread over 100 packs) cannot make the
//! loop slower per entry. The one walk of a chain is the
//! roster's derivation from the founder's chain, and it runs only when a
//! notice may change the roster (a roster event, a founder entry without its
//! payload, a fork or a changed payload of the founder), which only the
//! founder and its admins (their votes) can cause.

use super::{Driver, all_heads};
use agora_core::EntryRef;
use agora_live_views::graph_cache::GraphCache;
use agora_live_views::merge_cache::MergeCache;
use agora_store::CommitNotice;
use agora_sync::Commit;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::mpsc;
use tracing::warn;

/// The store observer: keeps the graph current (synchronously, so a command
/// that wrote sees its write in the next read) and hands the notice to the
/// loop. If the loop is behind, the notice is dropped and the loop resyncs
/// from the store instead (bounded memory under any write rate).
pub fn observer(
    graph: Arc<GraphCache>,
    merge: Arc<MergeCache>,
    tx: mpsc::Sender<CommitNotice>,
    missed: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
) -> agora_store::Observer {
    Arc::new(move |notice: CommitNotice| {
        graph.observe(&notice);
        merge.observe(&notice);
        generation.fetch_add(1, Ordering::Release);
        if tx.try_send(notice).is_err() {
            missed.store(true, Ordering::Relaxed);
        }
    })
}

impl Driver {
    /// A write was committed (a local command, or an import).
    pub(super) fn on_commit(&mut self, notice: CommitNotice) {
        let now = self.now_ms();
        let store = self.ctx.store.clone();
        let founder = self.ctx.founder;
        // Fork proofs proven by this write (one per forked seq).
        let mut proofs = Vec::new();
        for (author, seq) in &notice.forks {
            match store.fork_proof(author, *seq) {
                Ok(Some(p)) => proofs.push(p),
                Ok(None) => warn!(%author, seq, "a fork was reported without a stored proof"),
                Err(e) => warn!(%author, seq, "reading a fork proof: {e}"),
            }
        }
        if !proofs.is_empty() {
            warn!(forks = proofs.len(), "fork proven; gossiping the proof");
        }
        // Entries appended here are published; imported ones are not.
        // Payloads that arrived (or were redacted here) are no longer
        // sought; entries stored without one are asked of peers.
        let appended: &[_] = if notice.appended { &notice.entries } else { &[] };
        let missing: Vec<EntryRef> = notice.entries.iter().filter(|(_, p)| p.is_none()).map(|(e, _)| e.entry_ref()).collect();
        if missing.len() > self.rep.missing_payload_room() {
            // The rest waits in the store's list; the tick reads it.
            self.missing_more = true;
        }
        let commit = Commit { appended, proofs: &proofs, tips: &notice.tip_changes, filled: &notice.payloads_changed, missing: &missing };
        self.rep.committed(&commit, now);
        // The roster is derived from the founder's chain: derive it again
        // when something there may change it (a roster event, an entry whose
        // payload is missing, a fork, a payload filled in or redacted), not
        // on every entry the founder writes.
        // The founder's admins vote in their chains (roster.md): theirs count too.
        let authority = |a: &agora_core::AgentId| *a == founder || self.roster_admins.contains(a);
        let founder_entry_matters =
            notice.entries.iter().any(|(e, p)| authority(&e.header().author) && p.as_deref().is_none_or(agora_roster::RosterEvent::is_roster_payload));
        let founder_forked = notice.forks.iter().any(|(a, _)| authority(a));
        let founder_payload_changed = notice.payloads_changed.iter().any(|id| matches!(store.locate(id), Ok(Some((a, _))) if authority(&a)));
        let pin_held = !self.pins_waiting.is_empty() && notice.entries.iter().any(|(e, _)| self.pins_waiting.contains(&e.id()));
        if founder_entry_matters || founder_forked || founder_payload_changed || pin_held {
            self.refresh_roster();
        }
    }

    /// Derive the roster from the store and give the replicator its admission.
    pub(super) fn refresh_roster(&mut self) {
        match agora_view::derive_roster(&self.ctx.store, self.ctx.founder) {
            Ok(roster) => {
                if let Some(seq) = roster.frozen_at_fork_seq {
                    warn!(founder = %self.ctx.founder, seq, "the founder's chain is forked: the roster is frozen before it");
                }
                if let Some(seq) = roster.pending_at_seq {
                    warn!(founder = %self.ctx.founder, seq, "a founder entry's payload has not arrived: the roster waits before it");
                }
                self.roster_members = roster.members.len();
                self.display_names = agora_view::display_names(&self.ctx.store, &roster).unwrap_or_else(|e| {
                    warn!("cannot read the members' display names: {e}");
                    Default::default()
                });
                self.pins_waiting = roster.pins_waiting().copied().collect();
                self.roster_admins = roster.admins.clone();
                self.roster_threshold = roster.threshold;
                let now = self.now_ms();
                self.rep.set_admitted(Some(roster.admission()), now);
                self.rep.set_recoveries(roster.recovery_bindings(), now);
            }
            Err(e) => warn!("cannot derive the roster: {e}"),
        }
    }

    /// Hand the replicator more entries held without their payload, from the
    /// store's list, while it has room (a bounded number at a time).
    pub(super) fn feed_missing_payloads(&mut self) {
        if !self.missing_more {
            return;
        }
        let room = self.rep.missing_payload_room();
        if room == 0 {
            return;
        }
        match self.ctx.store.missing_payloads(self.missing_cursor.as_ref(), room) {
            Ok(list) => {
                if list.len() < room {
                    // Read to the end: start over next time there is news.
                    self.missing_cursor = None;
                    self.missing_more = false;
                } else {
                    self.missing_cursor = list.last().copied();
                }
                let now = self.now_ms();
                self.rep.payloads_missing(&list, now);
            }
            Err(e) => warn!("reading the entries held without payload: {e}"),
        }
    }

    /// The loop missed notices (it was behind): read the tips again.
    pub(super) fn resync(&mut self) {
        self.counters.commits_missed += 1;
        let now = self.now_ms();
        match all_heads(&self.ctx.store) {
            Ok(heads) => self.rep.set_local_frontier(heads, now),
            Err(e) => warn!("reading tips: {e}"),
        }
        self.ctx.graph.invalidate();
        self.missing_more = true;
        self.refresh_roster();
    }
}
