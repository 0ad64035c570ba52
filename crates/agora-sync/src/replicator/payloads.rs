//! Missing payloads: entries held without their payload, asked of their
//! claimants in rounds (every claimant once before any twice).

use super::*;

impl Replicator {
    /// Entries the store holds without their payload (never received): ask
    /// peers for them, a bounded number at a time. The driver hands them over
    /// at start-up and as imports without payloads commit, from the store's
    /// list, while [`Replicator::missing_payload_room`] is positive.
    pub fn payloads_missing(&mut self, entries: &[EntryRef], now_ms: u64) {
        for e in entries {
            if self.missing.contains_key(e) {
                continue;
            }
            if self.missing.len() >= self.config.missing_payloads_max {
                // A payload already reported unavailable makes room (it stays
                // in the store's list, and is handed over again later).
                let Some(old) = self.missing.iter().find(|(_, m)| m.reported).map(|(e, _)| *e) else { break };
                self.missing.remove(&old);
            }
            self.missing.insert(*e, Missing { next_ms: now_ms, ..Missing::default() });
        }
        self.plan_all(now_ms);
    }

    /// How many more missing payloads the replicator takes now.
    pub fn missing_payload_room(&self) -> usize {
        self.config.missing_payloads_max.saturating_sub(self.missing.len())
    }

    /// The payloads of these entries arrived (or were redacted here): stop
    /// asking for them.
    pub fn payloads_arrived(&mut self, ids: &[EntryId]) {
        let ids: BTreeSet<&EntryId> = ids.iter().collect();
        self.missing.retain(|e, _| !ids.contains(&e.id));
    }

    /// Ask peers for payloads of entries held without one: the seq of each,
    /// in rounds; a round asks every claimant (a peer that claims the author
    /// that far) once, those that answered fewest payload requests without
    /// the payload first, and the next one as soon as one has not brought it
    /// (answered without it, answered nothing, declined or timed out).
    pub(super) fn plan_payloads(&mut self, now_ms: u64) {
        let due: Vec<EntryRef> = self.missing.iter().filter(|(_, m)| m.next_ms <= now_ms).map(|(e, _)| *e).take(64).collect();
        for e in due {
            if self.in_flight.len() + self.held.len() + self.imports.len() >= self.config.in_flight_max {
                self.starved = true;
                return;
            }
            let Some(m) = self.missing.get(&e) else { continue };
            if m.tries >= self.config.payload_tries_max {
                // Reported once; then asked again, slowly: a peer that holds
                // it may connect, or its claims come back, later.
                if !m.reported {
                    self.stats.payloads_unavailable += 1;
                    self.outputs.push_back(Output::PayloadUnavailable(e));
                }
                let slow = self.config.request_timeout_ms.saturating_mul(PAYLOAD_RETRY_SLOW_TIMEOUTS);
                self.missing.insert(e, Missing { next_ms: now_ms.saturating_add(slow), reported: true, ..Missing::default() });
                continue;
            }
            if let Some(deadline) =
                self.in_flight.values().filter(|f| f.author == e.author && f.start.seq == e.seq && f.purpose == Purpose::Payload).map(|f| f.deadline_ms).min()
            {
                // Asked already (its answer or its deadline makes it due again).
                if let Some(state) = self.missing.get_mut(&e) {
                    state.next_ms = deadline.max(now_ms.saturating_add(1));
                }
                continue;
            }
            let mut claimants: Vec<PeerId> = self
                .peers_in_rank_order()
                .into_iter()
                .filter(|p| !m.asked.contains(p) && self.peers.get(p).and_then(|s| s.frontier.get(&e.author)).is_some_and(|t| max_seq(t) >= e.seq))
                .collect();
            // Stable: rank order among peers that stripped as often.
            claimants.sort_by_key(|p| self.peers.get(p).map_or(u32::MAX, |s| s.stripped));
            let ready = claimants.iter().copied().find(|p| self.peers.get(p).is_some_and(|s| s.busy_until_ms <= now_ms));
            let busy_until = claimants.iter().filter_map(|p| self.peers.get(p)).map(|s| s.busy_until_ms).min();
            let deadline_ms = now_ms.saturating_add(self.timeout_for(1));
            let round_gap_ms = self.config.request_timeout_base_ms.min(self.config.request_timeout_ms);
            let Some(state) = self.missing.get_mut(&e) else { continue };
            match (ready, busy_until) {
                (Some(peer), _) => {
                    state.asked.push(peer);
                    // Due again at its deadline if not answered before.
                    state.next_ms = deadline_ms;
                    let group = self.new_group();
                    self.request(peer, e.author, RangeStart::at(e.seq), 1, Purpose::Payload, group, true, now_ms);
                }
                // Every claimant left declined a moment ago: asked once it may be.
                (None, Some(until)) => state.next_ms = until.max(now_ms.saturating_add(1)),
                // Every claimant asked (or none): the round ends without it.
                (None, None) => {
                    state.tries += 1;
                    state.asked.clear();
                    state.declined.clear();
                    state.next_ms = now_ms.saturating_add(round_gap_ms.max(1));
                }
            }
        }
    }

    /// A payload request for `author`'s `seq` ended without the payload
    /// (answered without it or with nothing, declined, timed out): the
    /// entry is due again at once, for the next claimant of its round.
    pub(super) fn payload_request_ended(&mut self, author: AgentId, seq: u64, now_ms: u64) {
        // Every branch's entry at that seq (a fork's entries share it).
        for (_, m) in self.missing.range_mut(EntryRef { author, seq, id: EntryId::default() }..).take_while(|(e, _)| e.author == author && e.seq == seq) {
            m.next_ms = m.next_ms.min(now_ms);
        }
    }

    // ---------------------------------------------------------------------
    // Responses.
}
