//! The canonical bytes of a [`Merge`] and its view hash. The layout is
//! normative (`protocol-spec/merge.md`, "View hash"): two implementations
//! holding the same set of entries must produce the same bytes.


use crate::merge::{ForkOutcome, Merge};
use crate::rules::MergeStatus;

const ZERO: [u8; 32] = [0; 32];

impl Merge<'_> {
    /// The canonical bytes of the merged state: chains (view heads, forks and
    /// how they were settled, gaps), every merge event's status, and every
    /// accept frontier, each in ascending order.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.chains.len() * 128 + self.records.len() * 40 + self.frontiers.len() * 112);
        out.extend_from_slice(b"agora-merge-view/1");
        out.extend_from_slice(&(self.chains.len() as u32).to_be_bytes());
        for chain in &self.chains {
            out.extend_from_slice(chain.author.as_bytes());
            out.extend_from_slice(&(chain.len() as u64).to_be_bytes());
            out.extend_from_slice(&chain.view_len().to_be_bytes());
            let head = chain.view.last().map_or(ZERO, |&k| *self.items[k as usize].id().as_bytes());
            out.extend_from_slice(&head);
            out.extend_from_slice(&(chain.forks.len() as u32).to_be_bytes());
            for f in &chain.forks {
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
            out.extend_from_slice(&(chain.fork_seqs.len() as u32).to_be_bytes());
            for s in &chain.fork_seqs {
                out.extend_from_slice(&s.to_be_bytes());
            }
            out.extend_from_slice(&(chain.missing.len() as u32).to_be_bytes());
            for (s, id) in &chain.missing {
                out.extend_from_slice(&s.to_be_bytes());
                out.extend_from_slice(id.as_bytes());
            }
        }
        // Records are in (signer, seq, id) order already.
        out.extend_from_slice(&(self.records.len() as u32).to_be_bytes());
        for r in &self.records {
            out.extend_from_slice(r.entry.as_bytes());
            out.push(r.status.code_byte());
            match &r.status {
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
        out.extend_from_slice(&(self.frontiers.len() as u32).to_be_bytes());
        for ((acceptor, author), f) in &self.frontiers {
            out.extend_from_slice(acceptor.as_bytes());
            out.extend_from_slice(author.as_bytes());
            out.extend_from_slice(&f.seq.to_be_bytes());
            out.extend_from_slice(f.head.as_bytes());
        }
        out
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
