//! The canonical bytes of a [`Merge`] and its view hash. The layout is
//! normative (`protocol-spec/merge.md`, "View hash"): two implementations
//! holding the same set of entries must produce the same bytes.
//!
//! The hash is two-level so that it can be kept up to date: each author has a
//! *chain digest* over its chain's state, the statuses of the merge events it
//! signed and its accept frontiers; the view hash covers the digests in author
//! order. A new entry changes the digests of its author and of the agents
//! whose events it settles, not the others, so [`crate::LiveMerge`] hashes
//! again only those (and the short list of digests).

use crate::merge::{ForkOutcome, ForkPoint, Merge};
use crate::rules::MergeStatus;
use agora_core::{AgentId, EntryId};
use rayon::prelude::*;

const ZERO: [u8; 32] = [0; 32];
const VIEW_TAG: &[u8] = b"agora-merge-view/2";
const CHAIN_TAG: &[u8] = b"agora-merge-chain/2";

/// One author's chain as the view hash sees it.
pub(crate) struct ChainParts<'x> {
    pub(crate) author: &'x AgentId,
    /// Entries known of the author (held or carried by a proof).
    pub(crate) len: u64,
    pub(crate) view_len: u64,
    pub(crate) head: Option<EntryId>,
    pub(crate) forks: &'x [ForkPoint],
    pub(crate) fork_seqs: &'x [u64],
    pub(crate) missing: &'x [(u64, EntryId)],
}

/// The canonical bytes of one author's chain digest: the chain, then every
/// merge event the author signed (in (seq, id) order) with its status, then
/// the author's accept frontiers (ascending by the accepted author).
pub(crate) fn chain_bytes<S: std::borrow::Borrow<MergeStatus>>(
    parts: &ChainParts<'_>,
    records: impl ExactSizeIterator<Item = (EntryId, S)>,
    frontiers: impl ExactSizeIterator<Item = (AgentId, u64, EntryId)>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + records.len() * 40 + frontiers.len() * 72);
    out.extend_from_slice(CHAIN_TAG);
    out.extend_from_slice(parts.author.as_bytes());
    out.extend_from_slice(&parts.len.to_be_bytes());
    out.extend_from_slice(&parts.view_len.to_be_bytes());
    out.extend_from_slice(parts.head.as_ref().map_or(&ZERO, |h| h.as_bytes()));
    out.extend_from_slice(&(parts.forks.len() as u32).to_be_bytes());
    for f in parts.forks {
        out.extend_from_slice(&f.seq.to_be_bytes());
        let (state, chosen) = match &f.outcome {
            ForkOutcome::Frozen => (0u8, ZERO),
            ForkOutcome::Resolved { continue_with, .. } => (1, *continue_with.as_bytes()),
            ForkOutcome::Conflicting { .. } => (2, ZERO),
        };
        out.push(state);
        out.extend_from_slice(&chosen);
        out.extend_from_slice(&(f.candidates.len() as u32).to_be_bytes());
        for c in &f.candidates {
            out.extend_from_slice(c.as_bytes());
        }
    }
    out.extend_from_slice(&(parts.fork_seqs.len() as u32).to_be_bytes());
    for s in parts.fork_seqs {
        out.extend_from_slice(&s.to_be_bytes());
    }
    out.extend_from_slice(&(parts.missing.len() as u32).to_be_bytes());
    for (s, id) in parts.missing {
        out.extend_from_slice(&s.to_be_bytes());
        out.extend_from_slice(id.as_bytes());
    }
    out.extend_from_slice(&(records.len() as u32).to_be_bytes());
    for (entry, status) in records {
        let status = status.borrow();
        out.extend_from_slice(entry.as_bytes());
        out.push(status.code_byte());
        match status {
            MergeStatus::Clipped { effective_seq, rule } => {
                out.extend_from_slice(&effective_seq.to_be_bytes());
                push_code(&mut out, rule.code());
            }
            MergeStatus::Withdrawn { by } => out.extend_from_slice(by.as_bytes()),
            MergeStatus::Pending { missing } => out.extend_from_slice(missing.as_bytes()),
            MergeStatus::Invalid(rule) => push_code(&mut out, rule.code()),
            MergeStatus::Applied | MergeStatus::Idle | MergeStatus::OffView => {}
        }
    }
    out.extend_from_slice(&(frontiers.len() as u32).to_be_bytes());
    for (author, seq, head) in frontiers {
        out.extend_from_slice(author.as_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(head.as_bytes());
    }
    out
}

/// The canonical bytes of the view: every author (ascending) with its chain digest.
pub(crate) fn view_bytes(digests: impl ExactSizeIterator<Item = (AgentId, [u8; 32])>) -> Vec<u8> {
    let mut out = Vec::with_capacity(VIEW_TAG.len() + 4 + digests.len() * 64);
    out.extend_from_slice(VIEW_TAG);
    out.extend_from_slice(&(digests.len() as u32).to_be_bytes());
    for (author, digest) in digests {
        out.extend_from_slice(author.as_bytes());
        out.extend_from_slice(&digest);
    }
    out
}

impl Merge<'_> {
    /// The canonical bytes of one chain's digest (see [`Merge::canonical_bytes`]).
    pub fn chain_canonical_bytes(&self, author: &AgentId) -> Option<Vec<u8>> {
        self.chain_index.get(author).map(|&c| self.chain_bytes_of(c as usize))
    }

    fn chain_bytes_of(&self, c: usize) -> Vec<u8> {
        let chain = &self.chains[c];
        let parts = ChainParts {
            author: &chain.author,
            len: chain.len() as u64,
            view_len: chain.view_len(),
            head: chain.view.last().map(|&k| self.items[k as usize].id()),
            forks: &chain.forks,
            fork_seqs: &chain.fork_seqs,
            missing: &chain.missing,
        };
        // Records are in (signer, seq, id) order: the author's are one run.
        let lo = self.records.partition_point(|r| r.signer < chain.author);
        let hi = lo + self.records[lo..].partition_point(|r| r.signer == chain.author);
        let frontiers: Vec<(AgentId, u64, EntryId)> = self
            .frontiers
            .range((chain.author, AgentId([0; 32]))..)
            .take_while(|((a, _), _)| *a == chain.author)
            .map(|((_, b), f)| (*b, f.seq, f.head))
            .collect();
        chain_bytes(&parts, self.records[lo..hi].iter().map(|r| (r.entry, &r.status)), frontiers.into_iter())
    }

    /// Every author's chain digest, ascending by author.
    pub fn chain_digests(&self) -> Vec<(AgentId, [u8; 32])> {
        (0..self.chains.len()).into_par_iter().with_min_len(16).map(|c| (self.chains[c].author, agora_core::sha256(&self.chain_bytes_of(c)))).collect()
    }

    /// The canonical bytes of the merged state: every author, ascending,
    /// with the SHA-256 of its chain bytes (its chain's view head, forks and
    /// how they were settled, gaps; the status of every merge event it
    /// signed; its accept frontiers).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        view_bytes(self.chain_digests().into_iter())
    }

    /// SHA-256 of [`Merge::canonical_bytes`]: equal on every node that holds
    /// the same set of entries and proofs.
    pub fn view_hash(&self) -> [u8; 32] {
        agora_core::sha256(&self.canonical_bytes())
    }
}

fn push_code(out: &mut Vec<u8>, code: &str) {
    out.push(code.len() as u8);
    out.extend_from_slice(code.as_bytes());
}
