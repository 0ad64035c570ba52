//! The commit contract: what a driver tells the replicator after each write
//! to its store, in one call, whoever wrote (an append here, an import, a
//! payload filled in, a redaction).

use super::Replicator;
use crate::wire::Head;
use agora_core::import::TipChange;
use agora_core::{AgentId, EntryId, EntryRef, ForkProof, SignedEntry};
use std::collections::BTreeMap;

/// What one commit to the local store changed, as the store reports it.
#[derive(Clone, Copy)]
pub struct Commit<'a> {
    /// Entries appended here (signed by this node's agents), with their
    /// payloads: published on gossip. Imported entries are not.
    pub appended: &'a [(SignedEntry, Option<Vec<u8>>)],
    /// Fork proofs the commit proved for the first time: published.
    pub proofs: &'a [ForkProof],
    /// Per author, the tips the commit passed and added.
    pub tips: &'a BTreeMap<AgentId, TipChange>,
    /// Entries whose payload arrived (or was redacted here): no longer sought.
    pub filled: &'a [EntryId],
    /// Entries stored without their payload: sought from peers.
    pub missing: &'a [EntryRef],
}

impl Commit<'_> {
    /// A commit that changed nothing.
    pub fn empty() -> Commit<'static> {
        static NO_TIPS: BTreeMap<AgentId, TipChange> = BTreeMap::new();
        Commit { appended: &[], proofs: &[], tips: &NO_TIPS, filled: &[], missing: &[] }
    }
}

fn head(t: &EntryRef) -> Head {
    Head { author: t.author, seq: t.seq, id: t.id }
}

impl Replicator {
    /// The local store committed `commit`: publish what was appended and
    /// proved here, take the tips it passed and added (a commit costs what
    /// it changed, however many tips an author has), stop seeking payloads
    /// that arrived and seek those that are missing. Every driver calls this
    /// after every commit, in commit order.
    pub fn committed(&mut self, commit: &Commit<'_>, now_ms: u64) {
        if !commit.appended.is_empty() || !commit.proofs.is_empty() {
            self.local_commit(commit.appended, commit.proofs);
        }
        for (author, change) in commit.tips {
            let passed: Vec<Head> = change.passed.iter().map(head).collect();
            let added: Vec<Head> = change.added.iter().map(head).collect();
            self.local_tips_changed(*author, &passed, &added, now_ms);
        }
        if !commit.filled.is_empty() {
            self.payloads_arrived(commit.filled);
        }
        if !commit.missing.is_empty() {
            self.payloads_missing(commit.missing, now_ms);
        }
    }
}
