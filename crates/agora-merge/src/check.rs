//! Local writes: refuse a merge event that breaks a rule before it is signed,
//! and plan a fork resolution.

use crate::merge::{Merge, NONE};
use crate::payload::MergeEvent;
use crate::rules::{MergeRuleError, MergeStatus};
use agora_core::{AgentId, EntryId};

/// What to write to resolve a fork of one's own chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolutionPlan {
    /// The resolution to sign (fork number one above the highest so far).
    pub event: MergeEvent,
    /// The tip of the kept branch to append it after
    /// (`agora_store::Store::append_after`).
    pub append_after: EntryId,
}

impl Merge<'_> {
    /// Check a merge event that `signer` is about to write, against everything
    /// known here. `Ok` means the event will be [`MergeStatus::Applied`] (or,
    /// for a resolution, decide its fork) on every node that holds what this
    /// one holds. Each refusal names the rule and the entries concerned.
    pub fn check(&self, signer: &AgentId, event: &MergeEvent) -> Result<(), MergeRuleError> {
        event.check_limits().map_err(MergeRuleError::Decode)?;
        if !matches!(event, MergeEvent::ForkResolution { .. })
            && let Some(f) = self.chain(signer).and_then(|c| c.frozen())
        {
            return Err(MergeRuleError::SignerForked { author: *signer, fork_seq: f.seq });
        }
        match event {
            MergeEvent::Accept { author, up_to_seq, head } => match self.judge_accept(*signer, *author, *up_to_seq, *head) {
                Ok(_) => Ok(()),
                Err(MergeStatus::Clipped { rule, .. } | MergeStatus::Invalid(rule)) => Err(rule),
                Err(_) => Err(MergeRuleError::BeyondHead { author: *author, up_to_seq: *up_to_seq, head_seq: self.chain(author).map_or(0, |c| c.view_len()) }),
            },
            MergeEvent::Dispute { target, .. } => {
                let t = self.known(target, "dispute target")?;
                if self.items[t as usize].signed.header().author == *signer {
                    return Err(MergeRuleError::SelfDispute(*target));
                }
                let open =
                    self.open_disputes.iter().map(|&(_, r)| &self.records[r as usize]).find(|r| r.signer == *signer && self.target_of(r) == Some(*target));
                match open {
                    Some(r) => Err(MergeRuleError::AlreadyDisputed { target: *target, dispute: r.entry }),
                    None => Ok(()),
                }
            }
            MergeEvent::Withdraw { dispute } => {
                let d = self.items[self.known(dispute, "dispute")? as usize];
                let author = d.signed.header().author;
                if author != *signer {
                    return Err(MergeRuleError::NotOwnDispute { dispute: *dispute, author });
                }
                let record = (d.record != NONE).then(|| &self.records[d.record as usize]);
                match record {
                    Some(r) if matches!(r.event, Some(MergeEvent::Dispute { .. })) && d.on_view() => match r.status {
                        MergeStatus::Withdrawn { by } => Err(MergeRuleError::AlreadyWithdrawn { dispute: *dispute, by }),
                        _ => Ok(()),
                    },
                    _ => Err(MergeRuleError::NotADispute(*dispute)),
                }
            }
            MergeEvent::ForkResolution { fork_number, fork_seq, continue_with } => {
                let c = self.items[self.known(continue_with, "branch to continue")? as usize];
                let h = c.signed.header();
                if h.author != *signer {
                    return Err(MergeRuleError::ResolutionForeign { signer: *signer, continue_with: *continue_with, author: h.author });
                }
                if h.seq != *fork_seq {
                    return Err(MergeRuleError::ResolutionSeq { continue_with: *continue_with, fork_seq: *fork_seq, found_seq: h.seq });
                }
                let previous = self.highest_fork_number(signer);
                if *fork_number <= previous {
                    return Err(MergeRuleError::ForkNumberNotIncreasing { fork_number: *fork_number, previous });
                }
                // The fork must be one the view meets (the freezing one, or one
                // already resolved, to change the branch), and the entry one
                // of its sides; otherwise the resolution would decide nothing.
                let decides =
                    self.chain(signer).and_then(|c| c.forks.iter().find(|f| f.seq == *fork_seq)).is_some_and(|f| f.candidates.contains(continue_with));
                if !decides {
                    return Err(MergeRuleError::NoFork { author: *signer, fork_seq: *fork_seq });
                }
                Ok(())
            }
        }
    }

    /// The highest fork number `author` has signed in any resolution held
    /// here (0 for none).
    pub fn highest_fork_number(&self, author: &AgentId) -> u64 {
        self.records
            .iter()
            .filter(|r| r.signer == *author)
            .filter_map(|r| match r.event {
                Some(MergeEvent::ForkResolution { fork_number, .. }) => Some(fork_number),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// What `author` should sign to keep the branch that starts at
    /// `continue_with`: the resolution event (checked) and the tip to append
    /// it after (the kept branch's only tip).
    pub fn plan_resolution(&self, author: &AgentId, continue_with: &EntryId) -> Result<ResolutionPlan, MergeRuleError> {
        let c = self.known(continue_with, "branch to continue")?;
        let fork_seq = self.items[c as usize].seq();
        let event = MergeEvent::ForkResolution { fork_number: self.highest_fork_number(author).saturating_add(1), fork_seq, continue_with: *continue_with };
        self.check(author, &event)?;
        let tips = self.subtree_tips(c);
        match tips.as_slice() {
            [tip] => Ok(ResolutionPlan { event, append_after: self.items[*tip as usize].id() }),
            _ => Err(MergeRuleError::AmbiguousTip { continue_with: *continue_with, tips: tips.len() }),
        }
    }

    /// Position of a known entry, or the local refusal naming it.
    fn known(&self, id: &EntryId, what: &'static str) -> Result<u32, MergeRuleError> {
        self.lookup(id).ok_or(MergeRuleError::UnknownEntry { what, id: *id })
    }

    pub(crate) fn target_of(&self, r: &crate::merge::MergeRecord) -> Option<EntryId> {
        match &r.event {
            Some(MergeEvent::Dispute { target, .. }) => Some(*target),
            _ => None,
        }
    }

    /// Entries of `root`'s author that descend from `root` (itself included),
    /// as item positions in seq order.
    pub(crate) fn subtree(&self, root: u32) -> Vec<u32> {
        let chain = &self.chains[self.items[root as usize].author as usize];
        let (start, end) = (chain.start as usize, chain.end as usize);
        let mut inside = vec![false; end - start];
        let mut out = Vec::new();
        for i in root as usize..end {
            let p = self.items[i].parent;
            if i == root as usize || (p != NONE && p as usize >= start && inside[p as usize - start]) {
                inside[i - start] = true;
                out.push(i as u32);
            }
        }
        out
    }

    /// The entries of `root`'s subtree that nothing in it extends.
    pub(crate) fn subtree_tips(&self, root: u32) -> Vec<u32> {
        let sub = self.subtree(root);
        let parents: std::collections::HashSet<u32> = sub.iter().map(|&k| self.items[k as usize].parent).collect();
        sub.into_iter().filter(|k| !parents.contains(k)).collect()
    }
}
