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

    /// The recoveries the roster binds (`Roster::recoveries`,
    /// `protocol-spec/keys.md`): (agent, boundary, key granted). A recover
    /// entry no binding names is refused like an entry of an author not
    /// admitted, in responses and gossip, and the peer is not penalised (our
    /// roster may only lag). When the bindings change, every author a peer
    /// claims is looked at again: a recover entry refused before is
    /// fetched once it is bound.
    pub fn set_recoveries(&mut self, bound: BTreeSet<(AgentId, EntryId, AgentId)>, now_ms: u64) {
        if bound == self.recoveries {
            return;
        }
        self.recoveries = bound;
        let claimed: Vec<AgentId> = self.peers.values().flat_map(|s| s.frontier.keys().copied()).collect();
        self.behind.extend(claimed);
        self.plan_all(now_ms);
    }

    /// Does the roster bind this entry's key event? Every entry that is no
    /// recovery; a recovery only where the roster binds its author, its
    /// predecessor (the boundary) and its key. Without a roster (everyone
    /// replicated) there is no authority to bind one, and none is refused.
    pub(super) fn binds(&self, h: &agora_core::Header) -> bool {
        h.key_event() != agora_core::KeyEvent::Recover
            || self.admitted.is_none()
            || h.backlink.is_some_and(|b| self.recoveries.contains(&(h.author, b, h.signing_key())))
    }

    /// Of a response's entries of `author` (in chain order), those the roster
    /// admits: within the admission, and neither a recover entry the roster
    /// does not bind nor an entry after one. Those refused for a recovery
    /// are counted as not admitted, and the peer's claims of the author from
    /// the first of them on are dropped: its next announcement claims them
    /// again, and they are fetched once the roster binds them.
    pub(super) fn admitted_entries(&mut self, peer: PeerId, author: AgentId, entries: Vec<VerifiedEntry>) -> Vec<VerifiedEntry> {
        let mut unbound: BTreeSet<EntryId> = BTreeSet::new();
        let mut first_unbound = u64::MAX;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let h = e.header();
            if !self.admits(&author, h.seq) {
                continue;
            }
            if h.backlink.is_some_and(|b| unbound.contains(&b)) || !self.binds(h) {
                first_unbound = first_unbound.min(h.seq);
                unbound.insert(e.id());
                continue;
            }
            out.push(e);
        }
        if !unbound.is_empty() {
            self.stats.refused_not_admitted += unbound.len() as u64;
            if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                tips.retain(|t| t.seq < first_unbound);
            }
            if self.outputs.len() < self.config.outputs_max {
                self.outputs.push_back(Output::Refused { peer, author, what: "unbound recovery" });
            }
        }
        out
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
