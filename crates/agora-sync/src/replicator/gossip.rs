//! Gossip: entries, stripped entries and announcements relayed by peers,
//! checked one by one and offered to the store.

use super::*;

impl Replicator {
    /// A gossip message arrived, relayed by `peer` (the propagation source).
    /// A valid entry is offered to the store at once (the store checks its
    /// link; if its predecessor is missing, the range is asked of `peer`).
    /// The verdict tells the gossip layer whether to forward it. Gossip is
    /// charged to the entry's author, never to the relay.
    pub fn gossip(&mut self, peer: PeerId, message: Gossip, now_ms: u64) -> GossipVerdict {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return GossipVerdict::Ignore;
        }
        let checked = match message {
            Gossip::Entry(w) => self.gossip_entry(peer, w, now_ms),
            Gossip::Announce(bytes) => self.gossip_announce(peer, &bytes, now_ms),
            Gossip::ForkProof(bytes) => match ForkProof::decode(&bytes) {
                Ok(proof) => {
                    if !self.admits(&proof.author(), proof.seq()) {
                        self.refuse(peer, proof.author(), "fork proof");
                        return GossipVerdict::Ignore;
                    }
                    // Fetch both branches; the store proves the fork itself.
                    let (a, b) = proof.entries();
                    let heads: Vec<Head> = [a, b].iter().map(|e| Head { author: e.header().author, seq: e.header().seq, id: e.id() }).collect();
                    self.learn_heads(peer, &heads, now_ms);
                    Ok(GossipVerdict::Accept)
                }
                Err(e) => Err(CheckError::ForkProof(e)),
            },
        };
        match checked {
            Ok(v) => v,
            Err(reason) => {
                self.stats.gossip_rejected += 1;
                self.ban(peer, format!("gossip: {reason}"), now_ms);
                GossipVerdict::Reject(reason)
            }
        }
    }

    pub(super) fn gossip_entry(&mut self, peer: PeerId, w: WireEntry, now_ms: u64) -> Result<GossipVerdict, CheckError> {
        let e = SignedEntry::decode(&w.entry).map_err(|error| CheckError::Entry { index: 0, error })?;
        let h = e.header().clone();
        if !self.admits(&h.author, h.seq) {
            self.refuse(peer, h.author, "gossiped entry");
            return Ok(GossipVerdict::Ignore);
        }
        if !self.binds(&h) {
            self.refuse(peer, h.author, "gossiped unbound recovery");
            return Ok(GossipVerdict::Ignore);
        }
        let head = Head { author: h.author, seq: h.seq, id: e.id() };
        if !self.gossip_is_new(&head) {
            return Ok(self.gossip_not_new(peer, head, now_ms));
        }
        if !self.admit_author(h.author, now_ms) {
            return Ok(GossipVerdict::Ignore);
        }
        let mut checked = check_signed_entries(vec![(e, w.payload)])?;
        let Some(entry) = checked.pop() else { return Ok(GossipVerdict::Ignore) };
        self.stats.entries_verified += 1;
        let cap = self.config.heads_per_author_max;
        if let Some(state) = self.peers.get_mut(&peer) {
            merge_head(&mut state.frontier, head, false);
            self.behind.insert(head.author);
            // A forked author's tips grow with every higher entry relayed.
            if let Some(tips) = state.frontier.get_mut(&head.author) {
                cap_tips(tips, cap);
            }
            state.note_holds(head.id);
        }
        self.prune_behind_if_large();
        self.gossiped.insert(head.author, head.seq);
        self.import(peer, vec![entry], Some(head));
        Ok(GossipVerdict::Accept)
    }

    /// Is gossip of `head` a new tip: above the highest seq of its author
    /// held, handed to the store, or accepted from gossip before? Needs no
    /// store read. Anything else (a replay of an entry held, its stripped or
    /// announced variant, an entry of another branch below our tip) is
    /// dropped before its author is charged or its signature checked.
    pub(super) fn gossip_is_new(&self, head: &Head) -> bool {
        let held = self.local.get(&head.author).map_or(0, Tips::max_seq);
        let importing = self.importing.get(&head.author).copied().unwrap_or(0);
        let gossiped = self.gossiped.get(&head.author).copied().unwrap_or(0);
        head.seq > held.max(importing).max(gossiped)
    }

    /// Gossip that is no new tip: `Ignore` (not forwarded), charged to the
    /// relay's own message budget instead of the author's, unverified. It is
    /// taken as the relay's claim of that head, as a frontier would be: a
    /// head below our tip that is not one we hold (another branch) is probed
    /// within the request limits, once per `sought` mark.
    pub(super) fn gossip_not_new(&mut self, peer: PeerId, head: Head, now_ms: u64) -> GossipVerdict {
        self.stats.gossip_not_new += 1;
        if !self.admit_message(peer, now_ms) {
            return GossipVerdict::Ignore;
        }
        let ours = self.local.get(&head.author);
        let branch = head.seq <= ours.map_or(0, Tips::max_seq) && !self.known_held(&head.author, ours, &head);
        let cap = self.config.heads_per_author_max;
        if let Some(state) = self.peers.get_mut(&peer) {
            state.note_holds(head.id);
            merge_head(&mut state.frontier, head, branch);
            if let Some(tips) = state.frontier.get_mut(&head.author) {
                cap_tips(tips, cap);
            }
            self.behind.insert(head.author);
        }
        self.prune_behind_if_large();
        self.plan_author(peer, head.author, now_ms);
        GossipVerdict::Ignore
    }

    pub(super) fn gossip_announce(&mut self, peer: PeerId, bytes: &[u8], now_ms: u64) -> Result<GossipVerdict, CheckError> {
        let e = SignedEntry::decode(bytes).map_err(|error| CheckError::Entry { index: 0, error })?;
        let head = Head { author: e.header().author, seq: e.header().seq, id: e.id() };
        if !self.admits(&head.author, head.seq) {
            self.refuse(peer, head.author, "announced entry");
            return Ok(GossipVerdict::Ignore);
        }
        if !self.gossip_is_new(&head) {
            return Ok(self.gossip_not_new(peer, head, now_ms));
        }
        if !self.admit_author(head.author, now_ms) {
            return Ok(GossipVerdict::Ignore);
        }
        // Signed by its author, so the head is real (not that `peer` holds it).
        check_signed_entries(vec![(e, None)])?;
        self.stats.entries_verified += 1;
        self.gossiped.insert(head.author, head.seq);
        self.learn_heads(peer, &[head], now_ms);
        Ok(GossipVerdict::Accept)
    }

    /// `peer` holds these heads: remember them and plan requests.
    pub(super) fn learn_heads(&mut self, peer: PeerId, heads: &[Head], now_ms: u64) {
        let fork = heads.len() > 1;
        let cap = self.config.heads_per_author_max;
        if let Some(state) = self.peers.get_mut(&peer) {
            for h in heads {
                merge_head(&mut state.frontier, *h, fork);
                self.behind.insert(h.author);
                if let Some(tips) = state.frontier.get_mut(&h.author) {
                    cap_tips(tips, cap);
                }
            }
        }
        self.prune_behind_if_large();
        let authors: BTreeSet<AgentId> = heads.iter().map(|h| h.author).collect();
        for a in authors {
            self.plan_author(peer, a, now_ms);
        }
    }

    pub(super) fn refuse(&mut self, peer: PeerId, author: AgentId, what: &'static str) {
        self.stats.refused_not_admitted += 1;
        if self.outputs.len() < self.config.outputs_max {
            self.outputs.push_back(Output::Refused { peer, author, what });
        }
    }

    // ---------------------------------------------------------------------
    // Time.
}
