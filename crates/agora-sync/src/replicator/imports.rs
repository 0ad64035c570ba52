//! Imports: verified entries handed to the store in order, their outcomes,
//! and the backfill of a range that did not link.

use super::*;

impl Replicator {
    /// Hand the held responses of `author` that now continue what the store
    /// holds (or is importing) to the store, strictly in order: only the
    /// earliest held one, only when nothing earlier is still in flight.
    pub(super) fn release_held(&mut self, author: AgentId) {
        loop {
            let Some((&key, _)) = self.held.range((author, RangeStart::at(0))..).next().filter(|((a, _), _)| *a == author) else { return };
            let our_max = self.local.get(&author).map_or(0, Tips::max_seq);
            let stored_or_importing = our_max.max(self.importing.get(&author).copied().unwrap_or(0));
            if key.1.seq > stored_or_importing.saturating_add(1) {
                return;
            }
            let earlier_in_flight = self.in_flight.values().any(|f| f.author == author && f.purpose == Purpose::Forward && f.start < key.1);
            if earlier_in_flight {
                return;
            }
            let Some(held) = self.held.remove(&key) else { return };
            // Held responses are keyed by where they start; else the order
            // they are released in would not be the chain's.
            assert!(held.entries.first().is_some_and(|e| e.header().seq >= key.1.seq), "a held response of {author} starts before its key");
            self.import(held.peer, held.entries, None);
        }
    }

    /// Ask again for the lowest range of `author` whose import failed to
    /// link, now that more of the author's entries are stored.
    pub(super) fn resume(&mut self, author: AgentId, now_ms: u64) {
        let Some(i) = self.resume.iter().enumerate().filter(|(_, r)| r.1 == author).min_by_key(|(_, r)| r.2).map(|(i, _)| i) else {
            return;
        };
        let Some((peer, author, from_seq)) = self.resume.remove(i) else { return };
        // Only a request from the very start covers it: the rest of a cut
        // response (same seq, after some entry) misses what came before.
        if self.peers.contains_key(&peer) && !self.in_flight.values().any(|f| f.author == author && f.start == RangeStart::at(from_seq)) {
            let group = self.new_group();
            self.request(peer, author, RangeStart::at(from_seq), self.config.range_limit, Purpose::Backfill, group, false, now_ms);
        }
    }

    /// Hand entries to the store. `gossiped`: the head of a gossiped entry
    /// (then the only one), relayed rather than served by `from`.
    pub(super) fn import(&mut self, from: PeerId, entries: Vec<VerifiedEntry>, gossiped: Option<Head>) {
        let Some(first) = entries.first() else { return };
        let author = first.header().author;
        // One author's chain in (seq, id) order, as every response was
        // checked to be; else the store would get a chain out of order, and
        // `importing` and a failed import's `lost` would track the wrong chain.
        assert!(
            entries.windows(2).all(|w| w[1].header().author == author && (w[0].header().seq, w[0].id()) < (w[1].header().seq, w[1].id())),
            "an import of {author} out of (seq, id) order or of two authors"
        );
        if let Some(last) = entries.last() {
            // Not asked for again while the store takes them (the store's new
            // tips arrive through `set_local_heads`, maybe after the result).
            let importing = self.importing.entry(author).or_insert(0);
            *importing = (*importing).max(last.header().seq);
        }
        let id = self.next_import;
        self.next_import += 1;
        let reused = self.imports.insert(id, Importing { from, author, first_seq: first.header().seq, gossiped });
        // Else one report would settle two imports, and the other's slot never come free.
        assert!(reused.is_none(), "import id {id} used twice");
        self.outputs.push_back(Output::Import { id, from, entries });
    }

    /// What the store made of import `id`: every [`Output::Import`] is
    /// reported here exactly once; until then it holds a request slot.
    pub fn import_result(&mut self, id: u64, outcome: ImportOutcome, now_ms: u64) {
        let imp = self.imports.remove(&id);
        // Else a slot would be freed twice, or never: the driver broke the exactly-once rule.
        assert!(imp.is_some(), "import {id} reported twice or never handed out");
        let Some(Importing { from, author, first_seq, gossiped }) = imp else { return };
        match outcome {
            // The new tips arrive through `set_local_heads`, which plans the
            // author; the slot that came free matters only to what waited.
            ImportOutcome::Stored => {
                if self.starved {
                    self.plan_all(now_ms);
                }
                return;
            }
            ImportOutcome::PredecessorMissing { seq } => self.predecessor_missing(from, author, seq, gossiped, now_ms),
            ImportOutcome::Invalid { reason } => {
                if gossiped.is_some() {
                    // A relay checked the signature, not the link: the
                    // author is at fault, not the relay.
                } else if self.peers.contains_key(&from) {
                    self.ban(from, reason, now_ms);
                }
                self.lost(author, first_seq);
            }
            ImportOutcome::Deferred { seq, until_ms } => {
                self.stats.deferred += 1;
                self.deferred.insert(author, until_ms);
                self.lost(author, seq);
            }
            ImportOutcome::Lost => self.lost(author, first_seq),
        }
        self.plan_all(now_ms);
    }

    /// Entries of `author` from `first_seq` were not stored: those, and
    /// anything imported after them, count as not asked for.
    pub(super) fn lost(&mut self, author: AgentId, first_seq: u64) {
        if self.importing.get(&author).is_some_and(|&s| first_seq <= s) {
            self.importing.remove(&author);
        }
    }

    /// The store refused an import from `from` because the entry at
    /// `missing_seq` links to something it does not hold: the sender's branch
    /// diverges from ours further back (or, for gossip, we are behind). Ask
    /// for the range before it; entries already held are skipped by the
    /// store. A peer whose chain cannot be linked even from seq 1 sent
    /// entries that cannot be valid: banned. A gossiped entry (`gossiped`,
    /// its head) of a diverging branch is claimed for its relay and asked
    /// for as planned.
    pub(super) fn predecessor_missing(&mut self, from: PeerId, author: AgentId, missing_seq: u64, gossiped: Option<Head>, now_ms: u64) {
        if !self.peers.contains_key(&from) {
            return;
        }
        if missing_seq <= 1 {
            return self.ban(from, format!("entries of {author} do not link to any chain start"), now_ms);
        }
        let our_max = self.local.get(&author).map_or(0, Tips::max_seq);
        let importing = self.importing.get(&author).copied().unwrap_or(0);
        if missing_seq > our_max + 1 {
            if missing_seq <= importing.saturating_add(1) {
                // An import it was meant to follow was lost: ask again for
                // everything above what is stored.
                self.importing.remove(&author);
            }
            // Otherwise gossip ran ahead of us: what lies between is asked
            // for as planned.
            return self.plan_author(from, author, now_ms);
        }
        // The sender's branch diverges from ours further back: ask for the
        // range before it, and for this one again once that is stored.
        self.importing.remove(&author);
        if let Some(head) = gossiped {
            // Gossip takes no request slot, so asking for the range at once
            // would let a burst of an author's branch entries put any number
            // of requests in flight: the relay holds the entry, so its head
            // becomes one of the relay's claims, probed within the limits
            // (whose answer, a response, asks for the range below).
            let cap = self.config.heads_per_author_max;
            let member = self.is_member(&author);
            if let Some(state) = self.peers.get_mut(&from).filter(|_| member) {
                merge_head(&mut state.frontier, head, true);
                self.behind.insert(author);
                if let Some(tips) = state.frontier.get_mut(&author) {
                    cap_tips(tips, cap);
                }
            }
            self.prune_behind_if_large();
            return self.plan_author(from, author, now_ms);
        }
        if !self.resume.iter().any(|r| r.1 == author && r.2 == missing_seq) {
            if self.resume.len() >= RESUME_MAX {
                self.resume.pop_front();
            }
            self.resume.push_back((from, author, missing_seq));
            // Else imports that fail to link could grow the list without bound.
            assert!(self.resume.len() <= RESUME_MAX, "{} ranges to resume", self.resume.len());
        }
        let from_seq = missing_seq.saturating_sub(u64::from(self.config.range_limit)).max(1);
        let limit = u32::try_from(missing_seq - from_seq).unwrap_or(self.config.range_limit);
        if !self.in_flight.values().any(|f| f.author == author && f.start == RangeStart::at(from_seq)) {
            let group = self.new_group();
            self.request(from, author, RangeStart::at(from_seq), limit, Purpose::Backfill, group, false, now_ms);
        }
    }

    // ---------------------------------------------------------------------
    // Gossip.
}
