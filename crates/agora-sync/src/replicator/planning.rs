//! Planning: which ranges to ask of which peer, within the in-flight limits,
//! with retries after timeouts and hedges around slow claimants.

use super::*;

impl Purpose {
    /// The purpose of the rest of a range whose response was cut short.
    pub(super) fn rest(self) -> Self {
        match self {
            Purpose::Forward => Purpose::Forward,
            Purpose::Branch(_) | Purpose::Backfill | Purpose::Payload => Purpose::Backfill,
        }
    }
}

impl Replicator {
    pub(super) fn plan_all(&mut self, now_ms: u64) {
        self.clock_ms = self.clock_ms.max(now_ms);
        self.starved = false;
        for p in self.peers_in_rank_order() {
            self.plan(p, now_ms);
        }
        self.plan_payloads(now_ms);
    }

    /// The first seq of `author` after `our_max` that is neither asked for
    /// (a forward range in flight), held back, nor being imported.
    pub(super) fn next_unasked(&self, author: &AgentId, our_max: u64) -> u64 {
        let mut cursor = our_max.max(self.importing.get(author).copied().unwrap_or(0)).saturating_add(1);
        let mut ranges: Vec<(u64, u64)> = self
            .in_flight
            .values()
            .filter(|f| f.author == *author && f.purpose == Purpose::Forward)
            .map(|f| (f.start.seq, f.start.seq.saturating_add(u64::from(f.limit))))
            .chain(
                self.held
                    .range((*author, RangeStart::at(0))..)
                    .take_while(|((a, _), _)| a == author)
                    .map(|((_, s), h)| (s.seq, s.seq.saturating_add(u64::from(h.limit)))),
            )
            .collect();
        ranges.sort_unstable();
        for (from, end) in ranges {
            if from > cursor {
                break;
            }
            cursor = cursor.max(end);
        }
        cursor
    }

    /// Forget the authors of `behind` that are caught up, once it has grown
    /// to twice what was left the last time (or [`BEHIND_PRUNE_MIN`]): it
    /// then never holds more than twice the authors claimed or held, however
    /// peers rotate their claims between planning passes, and pruning costs
    /// a constant per author marked.
    pub(super) fn prune_behind_if_large(&mut self) {
        if self.behind.len() < self.behind_prune_at {
            return;
        }
        let caught_up: Vec<AgentId> = self.behind.iter().filter(|a| !self.is_behind(a)).copied().collect();
        for a in caught_up {
            self.behind.remove(&a);
        }
        self.behind_prune_at = (2 * self.behind.len()).max(BEHIND_PRUNE_MIN);
    }

    /// Does some peer claim an entry of `author` that [`Replicator::want`]
    /// could ask for: a seq above our highest, or, at or below it, a head
    /// that is not one of our tips (a branch, or an entry we passed)? `want`
    /// adds only conditions of time, admission and requests in flight, so
    /// for an author where this is false it answers `None` for every peer.
    pub(super) fn is_behind(&self, author: &AgentId) -> bool {
        let ours = self.local.get(author);
        let our_max = ours.map_or(0, Tips::max_seq);
        self.peers
            .values()
            .filter_map(|s| s.frontier.get(author))
            .any(|theirs| max_seq(theirs) > our_max || theirs.iter().any(|h| h.seq <= our_max && !self.known_held(author, ours, h)))
    }

    /// Is `id` one of our tips of `author`, or a tip we held and passed
    /// lately (so an entry we hold, not a branch)?
    pub(super) fn known_held(&self, author: &AgentId, ours: Option<&Tips>, head: &Head) -> bool {
        ours.is_some_and(|o| o.contains(head)) || self.passed_tips.get(author).is_some_and(|p| p.contains(&head.id))
    }

    /// Was the branch head `tip` asked for less than
    /// [`SOUGHT_RETRY_TIMEOUTS`] request timeouts ago?
    pub(super) fn sought_recently(&self, tip: EntryId, now_ms: u64) -> bool {
        let wait = self.config.request_timeout_ms.saturating_mul(SOUGHT_RETRY_TIMEOUTS);
        self.sought.get(&tip).is_some_and(|&at| now_ms < at.saturating_add(wait))
    }

    /// What we want of `author` from a peer whose tips are `theirs`: the
    /// range to request next (its start, most seqs, and for a branch the head
    /// it is for), if any.
    pub(super) fn want(&self, author: &AgentId, theirs: &[Head], now_ms: u64) -> Option<(RangeStart, u32, Purpose)> {
        let up_to = self.admitted_up_to(author)?;
        if self.deferred.get(author).is_some_and(|until| *until > now_ms) {
            return None;
        }
        let ours = self.local.get(author);
        let our_max = ours.map_or(0, Tips::max_seq);
        // `next` is above our highest seq: a peer claiming no more than that
        // has nothing forward for us, and the scan of requests is skipped.
        let next = if max_seq(theirs) > our_max { self.next_unasked(author, our_max) } else { u64::MAX };
        if max_seq(theirs) >= next && next <= up_to {
            let limit = u64::from(self.config.range_limit).min(up_to - next + 1);
            return Some((RangeStart::at(next), u32::try_from(limit).unwrap_or(self.config.range_limit), Purpose::Forward));
        }
        // A head below our highest seq that is not one of our tips: another
        // branch (a fork), or an entry we hold that has successors. Ask for
        // its seq alone, once in a while (`sought`): the store skips what it holds, and
        // an entry of a branch we lack fails to link, which asks for the
        // range before it ([`Replicator::import_result`]). A claimed head at
        // seq 0 names no entry (seqs start at 1): never asked about, or we
        // would send a request that peers ban for.
        let tip = theirs
            .iter()
            .filter(|h| h.seq >= 1 && h.seq <= our_max && h.seq <= up_to && !self.known_held(author, ours, h) && !self.sought_recently(h.id, now_ms))
            .min()?;
        Some((RangeStart::at(tip.seq), 1, Purpose::Branch(tip.id)))
    }

    /// For each author where `peer` holds what we lack, ask for it, within
    /// the in-flight limits: several ranges of one author at a time
    /// (pipelined), each range asked of one peer only (at first).
    pub(super) fn plan(&mut self, peer: PeerId, now_ms: u64) {
        // Only authors in `behind`: the others are caught up with every
        // claim, and `want` is `None` for them. Walked lazily, so a pass
        // that finds the limits reached stops at once.
        let mut after: Option<AgentId> = None;
        loop {
            if !self.may_request(peer) {
                self.starved = true;
                return;
            }
            let Some(state) = self.peers.get(&peer) else { return };
            let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
            let Some(author) = self.behind.range((from, std::ops::Bound::Unbounded)).find(|a| state.frontier.contains_key(*a)).copied() else { return };
            after = Some(author);
            self.plan_author(peer, author, now_ms);
            // Found caught up with every claim: out of `behind` until the
            // next change marks it again.
            if !self.is_behind(&author) {
                self.behind.remove(&author);
            }
        }
    }

    /// Is there a peer to prefer over `peer` for `author` from `seq` on: one
    /// that ranks better and claims it too? Then `peer` is not asked: the
    /// better one is, when it has a free slot.
    /// For a branch, only a peer that claims that very tip counts (another
    /// peer may hold the author that far on other branches only), and a
    /// peer in back-off (`Busy`) never does: it will not be asked soon.
    pub(super) fn better_claimant(&self, peer: PeerId, author: &AgentId, seq: u64, purpose: Purpose) -> bool {
        let Some(mine) = self.peers.get(&peer).map(PeerState::rank) else { return false };
        self.peers.iter().any(|(q, s)| *q != peer && s.rank() < mine && s.busy_until_ms <= self.clock_ms && s.claims(author, seq, purpose))
    }

    pub(super) fn plan_author(&mut self, peer: PeerId, author: AgentId, now_ms: u64) {
        loop {
            let Some(theirs) = self.peers.get(&peer).and_then(|s| s.frontier.get(&author)) else { return };
            let Some((start, limit, purpose)) = self.want(&author, theirs, now_ms) else { return };
            if purpose != Purpose::Forward && self.in_flight.values().any(|f| f.author == author && f.start.seq == start.seq) {
                return;
            }
            // While the range below this peer's branch is backfilled, its
            // forward range waits: the range that failed to link is resumed
            // once the backfill is stored, and asking it again now would
            // only fail again, and again with every answer.
            if purpose == Purpose::Forward && self.in_flight.values().any(|f| f.peer == peer && f.author == author && f.purpose == Purpose::Backfill) {
                return;
            }
            if self.better_claimant(peer, &author, start.seq, purpose) {
                return;
            }
            // A gap below a held response is asked for even when the limits
            // are reached: the held responses wait for it, and they occupy
            // the slots (there are never more gaps than held responses).
            let fills_gap = purpose == Purpose::Forward
                && self.in_flight.len() < self.config.in_flight_max
                && self.held.range((author, start)..).next().is_some_and(|((a, _), _)| *a == author);
            if !fills_gap && !self.may_request(peer) {
                self.starved = true;
                return;
            }
            // Planned requests go out only below the limit of requests in
            // flight (else responses could occupy more than
            // `in_flight_max * response_bytes_max`).
            assert!(self.in_flight.len() < self.config.in_flight_max, "planning {author} past the in-flight limit");
            if self.retried.remove(&(author, start.seq)) {
                self.fan_out(author, start, limit, purpose, now_ms);
            } else {
                let group = self.new_group();
                self.request(peer, author, start, limit, purpose, group, true, now_ms);
                // A planned request keeps its peer's share too, except a gap
                // fill (bounded by the total alone, as asserted above); else
                // one peer could hold every slot and the pipelining stall on it.
                assert!(fills_gap || self.peer_load(peer) <= self.config.in_flight_per_peer, "{peer:?} asked past its share");
            }
        }
    }

    /// Ask every connected peer that claims `author` at `start.seq` (at most
    /// [`RETRY_FANOUT_MAX`], best ranked first) for the range at once: it
    /// timed out before, so one withholder must not stall it again.
    pub(super) fn fan_out(&mut self, author: AgentId, start: RangeStart, limit: u32, purpose: Purpose, now_ms: u64) {
        let claimants: Vec<PeerId> = self
            .peers_in_rank_order()
            .into_iter()
            .filter(|p| self.peers.get(p).and_then(|s| s.frontier.get(&author)).is_some_and(|t| max_seq(t) >= start.seq))
            .take(RETRY_FANOUT_MAX)
            .collect();
        let group = self.new_group();
        for p in claimants {
            self.request(p, author, start, limit, purpose, group, true, now_ms);
        }
    }

    /// Remember that a range went unanswered, so that its next ask is fanned
    /// out; at most [`RETRIED_MAX`] marks (beyond that they are forgotten).
    /// Keyed by the range's first seq: the rest of a cut response (which
    /// starts after an entry) is asked again from its seq, as planned.
    pub(super) fn mark_retried(&mut self, author: AgentId, start: RangeStart) {
        if self.retried.len() >= RETRIED_MAX {
            self.retried.clear();
        }
        self.retried.insert((author, start.seq));
        // Else empty answers could grow the marks without bound.
        assert!(self.retried.len() <= RETRIED_MAX, "{} ranges marked retried", self.retried.len());
    }

    pub(super) fn new_group(&mut self) -> u64 {
        let g = self.next_group;
        self.next_group += 1;
        g
    }

    /// Requests in flight to `peer` plus responses held back from it: what
    /// counts against [`Config::in_flight_per_peer`].
    pub(super) fn peer_load(&self, peer: PeerId) -> usize {
        self.in_flight.values().filter(|f| f.peer == peer).count() + self.held.values().filter(|h| h.peer == peer).count()
    }

    pub(super) fn may_request(&self, peer: PeerId) -> bool {
        if self.peers.get(&peer).is_some_and(|s| s.busy_until_ms > self.clock_ms) {
            return false;
        }
        self.peer_load(peer) < self.config.in_flight_per_peer
            && self.in_flight.len() + self.held.len() + self.imports.len() < self.config.in_flight_max
            && self.outputs.len() < self.config.outputs_max
    }

    /// Send a range request. `planned`: see [`InFlight::planned`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn request(&mut self, peer: PeerId, author: AgentId, start: RangeStart, limit: u32, purpose: Purpose, group: u64, planned: bool, now_ms: u64) {
        let req = self.next_req;
        self.next_req += 1;
        if let Purpose::Branch(tip) = purpose {
            if self.sought.len() >= SOUGHT_MAX {
                // Forget the oldest marks; at worst a branch is fetched twice.
                self.sought.clear();
            }
            self.sought.insert(tip, now_ms);
            // Else announcements of branch heads could grow the marks without bound.
            assert!(self.sought.len() <= SOUGHT_MAX, "{} branch heads sought", self.sought.len());
        }
        let deadline_ms = now_ms.saturating_add(self.timeout_for(limit));
        let hedge_at_ms = self.hedge_wait(peer, author, start.seq, limit, purpose).map_or(u64::MAX, |w| now_ms.saturating_add(w));
        let f = InFlight { peer, author, start, limit, purpose, sent_ms: now_ms, deadline_ms, charged_ms: 0, hedge_at_ms, hedge: false, group, planned };
        let reused = self.in_flight.insert(req, f);
        // Else one answer would settle two requests, and the other's slot never come free.
        assert!(reused.is_none(), "request id {req} used twice");
        // Planned requests go out only while fewer than `in_flight_max` are in
        // flight, a fan-out adding at most RETRY_FANOUT_MAX at once, and the
        // rest of a cut response takes over the slot of the request it
        // continues; else responses could occupy more memory than the limit
        // says. (Follow-ups of imports are not counted: they take over the
        // import's slot, or come from the bounded list of ranges to resume.)
        if planned {
            let planned_in_flight = self.in_flight.values().filter(|f| f.planned).count();
            assert!(planned_in_flight < self.config.in_flight_max + RETRY_FANOUT_MAX, "{planned_in_flight} planned requests in flight, over the limit");
        }
        self.outputs.push_back(Output::Send(peer, Message::Request { req, author, start, limit }));
    }

    /// The deadline of a request for `limit` seqs: `request_timeout_base_ms`
    /// plus the rest of `request_timeout_ms` in proportion to the seqs
    /// asked, so a whole range gets `request_timeout_ms`.
    pub(super) fn timeout_for(&self, limit: u32) -> u64 {
        let full = self.config.request_timeout_ms;
        let base = self.config.request_timeout_base_ms.min(full);
        let n = u64::from(limit.min(self.config.range_limit));
        base.saturating_add((full - base).saturating_mul(n) / u64::from(self.config.range_limit))
    }

    /// How long a request to `peer` may go unanswered before it is hedged:
    /// `hedge_slowdown` times what the fastest measured other claimant
    /// would take for it (at least `hedge_min_ms`), or half its deadline if
    /// no other claimant is measured. `None`: not before its deadline (or a
    /// payload request, asked of claimants in turn instead).
    pub(super) fn hedge_wait(&self, peer: PeerId, author: AgentId, seq: u64, limit: u32, purpose: Purpose) -> Option<u64> {
        if purpose == Purpose::Payload {
            return None;
        }
        let timeout = self.timeout_for(limit);
        let best = self.peers.iter().filter(|(q, s)| **q != peer && s.claims(&author, seq, purpose)).filter_map(|(_, s)| s.expected_ms(u64::from(limit))).min();
        let wait = match best {
            Some(ms) => ms.saturating_mul(u64::from(self.config.hedge_slowdown.max(1))).max(self.config.hedge_min_ms),
            None => timeout / 2,
        };
        (wait < timeout).then_some(wait)
    }

    /// A peer's measured rate changed: when each request not yet hedged is
    /// due to be.
    pub(super) fn reschedule_hedges(&mut self) {
        let due: Vec<(u64, u64)> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.hedge_at_ms != u64::MAX)
            .map(|(r, f)| (*r, self.hedge_wait(f.peer, f.author, f.start.seq, f.limit, f.purpose).map_or(u64::MAX, |w| f.sent_ms.saturating_add(w))))
            .collect();
        for (req, at) in due {
            if let Some(f) = self.in_flight.get_mut(&req) {
                f.hedge_at_ms = at;
            }
        }
    }

    /// Ask the range of request `req`, slow to come, of the best other
    /// claimant too (same group: the first answer settles both). The slow
    /// peer is charged the time waited so far. At most `in_flight_max`
    /// hedges are in flight, and a group holds at most [`RETRY_FANOUT_MAX`]
    /// requests.
    pub(super) fn hedge(&mut self, req: u64, now_ms: u64) {
        let Some(f) = self.in_flight.get_mut(&req) else { return };
        f.hedge_at_ms = u64::MAX;
        let waited = now_ms.saturating_sub(f.sent_ms);
        let charge = waited.saturating_sub(f.charged_ms);
        f.charged_ms = waited;
        let f = f.clone();
        if matches!(f.purpose, Purpose::Forward)
            && let Some(s) = self.peers.get_mut(&f.peer)
        {
            s.charge(0, charge);
        }
        let hedges = self.in_flight.values().filter(|g| g.hedge).count();
        let group: Vec<PeerId> = self.in_flight.values().filter(|g| g.group == f.group).map(|g| g.peer).collect();
        if hedges >= self.config.in_flight_max || group.len() >= RETRY_FANOUT_MAX {
            return;
        }
        // The fastest measured claimant; else the best ranked.
        let candidates: Vec<PeerId> = self
            .peers_in_rank_order()
            .into_iter()
            .filter(|q| !group.contains(q))
            .filter(|q| self.peers.get(q).is_some_and(|s| s.busy_until_ms <= now_ms && s.claims(&f.author, f.start.seq, f.purpose)))
            .collect();
        let fastest =
            candidates.iter().filter_map(|q| self.peers.get(q).and_then(|s| s.expected_ms(u64::from(f.limit))).map(|ms| (ms, *q))).min().map(|(_, q)| q);
        let Some(target) = fastest.or_else(|| candidates.first().copied()) else { return };
        self.stats.hedged += 1;
        let hedge_req = self.next_req;
        self.request(target, f.author, f.start, f.limit, f.purpose, f.group, false, now_ms);
        if let Some(h) = self.in_flight.get_mut(&hedge_req) {
            h.hedge = true;
        }
    }
}
