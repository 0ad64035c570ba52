//! The roster as the replicator applies it: which authors, up to which seq,
//! are requested or accepted.

use super::*;

impl Replicator {
    /// Replicate only these authors, each up to a seq (`None`: all of its
    /// chain): the workspace roster's admission (`Roster::admission`). `None`
    /// replicates everyone. Entries and heads of anyone else are refused and
    /// reported. Newly admitted authors are requested from peers that hold them.
    pub fn set_admitted(&mut self, admitted: Option<BTreeMap<AgentId, Option<u64>>>, now_ms: u64) {
        if let Some(a) = &admitted {
            self.author_buckets.retain(|author, _| a.contains_key(author));
            self.gossiped.retain(|author, _| a.contains_key(author));
        }
        self.admitted = admitted;
        // Authors admitted now may be claimed already.
        let claimed: Vec<AgentId> = self.peers.values().flat_map(|s| s.frontier.keys().copied()).collect();
        self.behind.extend(claimed);
        // Who is outside the roster changed: count each peer's claims of
        // non-members again, keeping them within their bound.
        let (admitted, max) = (&self.admitted, self.config.non_member_heads_per_peer);
        for state in self.peers.values_mut() {
            let outside: Vec<(AgentId, usize)> =
                state.frontier.iter().filter(|(a, _)| admitted.as_ref().is_some_and(|m| !m.contains_key(*a))).map(|(a, t)| (*a, t.len())).collect();
            state.non_member_heads = 0;
            for (author, n) in outside {
                if state.non_member_heads + n <= max {
                    state.non_member_heads += n;
                } else {
                    state.frontier.remove(&author);
                }
            }
        }
        self.plan_all(now_ms);
    }

    pub(super) fn is_member(&self, author: &AgentId) -> bool {
        self.admitted.as_ref().is_none_or(|a| a.contains_key(author))
    }

    /// Is this entry of `author` admitted (its author a member, and the seq
    /// not beyond a removal's cut-off)?
    pub(super) fn admits(&self, author: &AgentId, seq: u64) -> bool {
        match &self.admitted {
            None => true,
            Some(a) => a.get(author).is_some_and(|cut| cut.is_none_or(|last| seq <= last)),
        }
    }

    /// The highest seq of `author` that may be asked for.
    pub(super) fn admitted_up_to(&self, author: &AgentId) -> Option<u64> {
        match &self.admitted {
            None => Some(u64::MAX),
            Some(a) => a.get(author).map(|cut| cut.unwrap_or(u64::MAX)),
        }
    }

    // ---------------------------------------------------------------------
    // The local store.
}
