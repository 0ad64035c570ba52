//! Peers: connections, each peer's record (score, strikes, rate budget),
//! bans and the rate limits of unsolicited messages.

use super::*;

impl PeerState {
    pub(super) fn note_holds(&mut self, id: EntryId) {
        if self.holds.len() >= PEER_HOLDS_MAX {
            self.holds.pop_front();
        }
        self.holds.push_back(id);
    }

    /// Who is asked first: the highest score (ties by peer number).
    pub(super) fn rank(&self) -> std::cmp::Reverse<u64> {
        std::cmp::Reverse(self.score())
    }

    /// Useful data per unit of time: entries new to us per millisecond of
    /// its requests' time (in millionths, one entry and one millisecond
    /// added so an unmeasured peer scores one entry per millisecond),
    /// divided by one plus its strikes.
    pub(super) fn score(&self) -> u64 {
        let rate = u128::from(self.useful.saturating_add(1)) * 1_000_000 / u128::from(self.spent_ms.saturating_add(1));
        u64::try_from(rate / u128::from(self.strikes.saturating_add(1))).unwrap_or(u64::MAX)
    }

    /// Milliseconds it would take for `n` entries at its measured rate, if
    /// it has delivered any.
    pub(super) fn expected_ms(&self, n: u64) -> Option<u64> {
        (self.useful > 0).then(|| u64::try_from(u128::from(n) * u128::from(self.spent_ms.saturating_add(1)) / u128::from(self.useful)).unwrap_or(u64::MAX))
    }

    /// Add an answer (or a wait) to its record.
    pub(super) fn charge(&mut self, useful: u64, ms: u64) {
        self.useful = self.useful.saturating_add(useful);
        self.spent_ms = self.spent_ms.saturating_add(ms);
        if self.spent_ms > RATE_WINDOW_MS {
            self.useful /= 2;
            self.spent_ms /= 2;
        }
    }

    /// Does this peer claim what a request of `purpose` for `author` from
    /// `seq` asks for?
    pub(super) fn claims(&self, author: &AgentId, seq: u64, purpose: Purpose) -> bool {
        self.frontier.get(author).is_some_and(|t| match purpose {
            Purpose::Branch(tip) => t.iter().any(|h| h.id == tip),
            _ => max_seq(t) >= seq,
        })
    }
}

impl Replicator {
    pub(super) fn is_banned(&self, peer: PeerId, now_ms: u64) -> bool {
        self.banned.get(&peer).is_some_and(|until| *until > now_ms)
    }

    /// Is this peer banned at `now_ms` (the driver refuses its connections)?
    pub fn banned_until(&self, peer: PeerId, now_ms: u64) -> Option<u64> {
        self.banned.get(&peer).copied().filter(|until| *until > now_ms)
    }

    /// A peer connected: send it our frontier.
    pub fn connected(&mut self, peer: PeerId, now_ms: u64) {
        if self.is_banned(peer, now_ms) {
            return;
        }
        let bucket = TokenBucket::new(self.config.peer_messages_per_s, self.config.peer_messages_burst, now_ms);
        // A reconnection does not wash a peer's record.
        let (strikes, useful, spent_ms) =
            self.peers.get(&peer).map(|s| (s.strikes, s.useful, s.spent_ms)).or_else(|| self.past.remove(&peer)).unwrap_or((0, 0, 0));
        self.peers.insert(
            peer,
            PeerState {
                frontier: BTreeMap::new(),
                non_member_heads: 0,
                bucket,
                dropped_in_window: 0,
                window_start_ms: now_ms,
                holds: VecDeque::new(),
                strikes,
                useful,
                spent_ms,
                shorts: 0,
                stripped: 0,
                busy_until_ms: 0,
                refresh_at_ms: self.next_refresh(now_ms),
            },
        );
        let frontier = self.local_heads();
        self.send_frontier(peer, frontier);
    }

    /// `peer` answered request `req` with `Busy` (over its rate, or
    /// overloaded): not withholding. The request is dropped without a
    /// strike and the peer is not asked anything for [`BUSY_BACKOFF_MS`];
    /// the range is asked again as planned.
    pub fn busy(&mut self, peer: PeerId, req: u64, now_ms: u64) {
        self.back_off(peer, req, BUSY_BACKOFF_MS, now_ms);
    }

    /// `peer` answered request `req` with `Wait { ms }`: as [`Replicator::busy`],
    /// but the peer is left alone for `ms`, bounded to [`WAIT_MIN_MS`] and
    /// [`BUSY_BACKOFF_MS`]: a peer that says 0 is not hammered, and one that
    /// says a year costs no more than a `Busy`.
    pub fn wait(&mut self, peer: PeerId, req: u64, ms: u32, now_ms: u64) {
        self.back_off(peer, req, u64::from(ms).clamp(WAIT_MIN_MS, BUSY_BACKOFF_MS), now_ms);
    }

    fn back_off(&mut self, peer: PeerId, req: u64, ms: u64, now_ms: u64) {
        if self.in_flight.get(&req).is_some_and(|f| f.peer == peer)
            && let Some(f) = self.in_flight.remove(&req)
            && f.purpose == Purpose::Payload
        {
            // A first decline is not an answer: the peer stays in the round,
            // asked again once it may be. A second one is its answer.
            let at = EntryRef { author: f.author, seq: f.start.seq, id: EntryId::default() };
            for (_, m) in self.missing.range_mut(at..).take_while(|(e, _)| e.author == f.author && e.seq == f.start.seq) {
                if !m.declined.contains(&peer) {
                    m.declined.push(peer);
                    m.asked.retain(|p| *p != peer);
                }
            }
            self.payload_request_ended(f.author, f.start.seq, now_ms);
        }
        if let Some(s) = self.peers.get_mut(&peer) {
            s.busy_until_ms = now_ms.saturating_add(ms);
        }
        self.plan_all(now_ms);
    }

    /// A peer went away: its in-flight requests are re-planned on timeout.
    pub fn disconnected(&mut self, peer: PeerId) {
        self.forget_peer(peer);
        for f in self.in_flight.values_mut().filter(|f| f.peer == peer) {
            f.deadline_ms = 0;
        }
    }

    /// Drop a peer's state, keeping its record (strikes, entries delivered)
    /// among the bounded past ones.
    pub(super) fn forget_peer(&mut self, peer: PeerId) {
        if let Some(s) = self.peers.remove(&peer)
            && (s.strikes, s.useful, s.spent_ms) != (0, 0, 0)
        {
            if self.past.len() >= PAST_PEERS_MAX {
                self.past.pop_first();
            }
            self.past.insert(peer, (s.strikes, s.useful, s.spent_ms));
        }
    }

    /// Peers currently connected (and not banned).
    pub fn peers(&self) -> Vec<PeerId> {
        self.peers.keys().copied().collect()
    }

    /// Connected peers, the ones to ask first first.
    pub(super) fn peers_in_rank_order(&self) -> Vec<PeerId> {
        let mut v: Vec<(_, PeerId)> = self.peers.iter().map(|(p, s)| (s.rank(), *p)).collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// A peer's strikes (timeouts, empty answers to its claims), for tests
    /// and status displays.
    pub fn strikes(&self, peer: PeerId) -> Option<u32> {
        self.peers.get(&peer).map(|s| s.strikes)
    }

    pub(super) fn ban(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        let until_ms = now_ms.saturating_add(self.config.ban_ms);
        self.banned.insert(peer, until_ms);
        // Its record outlives the ban: back, it starts where it left off.
        self.forget_peer(peer);
        self.stats.bans += 1;
        self.outputs.push_back(Output::Ban { peer, reason, until_ms });
        // Requests to the banned peer are asked again of others at once.
        self.in_flight.retain(|_, f| f.peer != peer);
        self.plan_all(now_ms);
    }

    /// The driver found `peer`'s input invalid where the replicator could not
    /// see it (undecodable wire bytes): ban it like any other bad input.
    pub fn report_invalid(&mut self, peer: PeerId, reason: String, now_ms: u64) {
        if self.peers.contains_key(&peer) && !self.is_banned(peer, now_ms) {
            self.ban(peer, reason, now_ms);
        }
    }

    /// Charge one of `peer`'s own unsolicited messages to its budget. `false`: drop it.
    pub(super) fn admit_message(&mut self, peer: PeerId, now_ms: u64) -> bool {
        let Some(state) = self.peers.get_mut(&peer) else { return false };
        if state.bucket.take(now_ms) {
            return true;
        }
        if now_ms.saturating_sub(state.window_start_ms) >= 1_000 {
            state.window_start_ms = now_ms;
            state.dropped_in_window = 0;
        }
        state.dropped_in_window = state.dropped_in_window.saturating_add(1);
        self.stats.rate_limited += 1;
        if state.dropped_in_window > self.config.peer_flood_ban_after {
            let n = state.dropped_in_window;
            self.ban(peer, format!("flooding: {n} messages beyond its rate limit within one second"), now_ms);
        }
        false
    }

    /// Charge one gossiped entry to its author's budget. `false`: drop it
    /// silently (it arrives by range sync later).
    pub(super) fn admit_author(&mut self, author: AgentId, now_ms: u64) -> bool {
        let (per_s, burst) = (self.config.author_gossip_per_s, self.config.author_gossip_burst);
        if !self.author_buckets.contains_key(&author) && self.admitted.is_none() && self.author_buckets.len() >= AUTHOR_BUCKETS_MAX {
            // No roster to bound the authors by: forget the budgets rather
            // than grow without bound (a fresh budget is a full one).
            self.author_buckets.clear();
            self.gossiped.clear();
        }
        let ok = self.author_buckets.entry(author).or_insert_with(|| TokenBucket::new(per_s, burst, now_ms)).take(now_ms);
        if !ok {
            self.stats.author_rate_limited += 1;
        }
        ok
    }

    pub(super) fn strike(&mut self, peer: PeerId) {
        self.stats.withheld += 1;
        if let Some(s) = self.peers.get_mut(&peer) {
            s.strikes = s.strikes.saturating_add(1);
        }
    }

    // ---------------------------------------------------------------------
    // Messages.
}
