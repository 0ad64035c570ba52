//! Ranges served and received: answering a peer's request, and checking a
//! response against what was asked before its entries go to the store.

use super::*;

impl Replicator {
    /// A response whose entries the driver already passed through
    /// [`check_entries`] (on a worker thread: signature checks are the
    /// CPU-heavy part of replication). Same as [`Replicator::handle`] with
    /// [`Message::Response`] otherwise.
    pub fn handle_checked_response(&mut self, peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, CheckError>, more: bool, now_ms: u64) {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return;
        }
        self.on_response(peer, req, checked, more, now_ms)
    }

    /// The driver read what a [`ServeRequest`] asked for: at most `read_max`
    /// entries of the author from `start` on, in (seq, id) order, each with
    /// its seq (as the store keys it: entries are sent as stored, not decoded
    /// here; the receiver verifies them). The response keeps those below the
    /// range's end, at most [`RESPONSE_ENTRIES_MAX`] of them and as many as
    /// fit in [`Config::response_bytes_max`] (the first always), and is
    /// marked `more` when the store held more: the requester resumes after
    /// the last entry sent, inside its seq if need be.
    pub fn respond(&mut self, serve: ServeRequest, served: Vec<(u64, WireEntry)>) {
        if !self.peers.contains_key(&serve.peer) {
            return;
        }
        let end = serve.start.seq.saturating_add(u64::from(serve.limit));
        // `more`: entries of the range remain unsent (the response was cut),
        // so the requester resumes after the last entry it got.
        let within = served.iter().take_while(|(seq, _)| *seq < end).count();
        let mut more = within >= serve.read_max;
        let mut entries = Vec::new();
        let mut bytes = 0usize;
        for (seq, w) in served {
            if seq >= end {
                break;
            }
            if entries.len() >= RESPONSE_ENTRIES_MAX || (!entries.is_empty() && bytes + w.wire_len() > self.config.response_bytes_max) {
                more = true;
                break;
            }
            bytes += w.wire_len();
            entries.push(w);
        }
        // Else the requester would refuse the response and ban this node
        // (only a single entry may exceed the byte budget).
        assert!(
            entries.len() <= RESPONSE_ENTRIES_MAX && (entries.len() <= 1 || bytes <= self.config.response_bytes_max),
            "a response of {} entries and {bytes} bytes",
            entries.len()
        );
        self.outputs.push_back(Output::Send(serve.peer, Message::Response { req: serve.req, entries, more }));
    }

    // ---------------------------------------------------------------------
    // Planning.

    /// The checks of a response that depend on what was asked: the author,
    /// the range and (seq, id) order. Links are the store's to check (once).
    pub(super) fn check_response(&self, asked: &InFlight, out: Vec<VerifiedEntry>) -> Result<Vec<VerifiedEntry>, CheckError> {
        if out.len() > RESPONSE_ENTRIES_MAX {
            return Err(CheckError::TooMany { count: out.len(), max: RESPONSE_ENTRIES_MAX });
        }
        let end = asked.start.seq.saturating_add(u64::from(asked.limit));
        for (index, e) in out.iter().enumerate() {
            let h = e.header();
            if h.author != asked.author {
                return Err(CheckError::WrongAuthor { index, author: h.author });
            }
            let before_start = (h.seq, Some(e.id())) <= (asked.start.seq, asked.start.after) && asked.start.after.is_some();
            if h.seq < asked.start.seq || h.seq >= end || before_start {
                return Err(CheckError::OutOfRange { index, seq: h.seq });
            }
            if index > 0 && (out[index - 1].header().seq, out[index - 1].id()) >= (h.seq, e.id()) {
                return Err(CheckError::Order { index });
            }
        }
        Ok(out)
    }

    pub(super) fn on_response(&mut self, peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, CheckError>, more: bool, now_ms: u64) {
        let Some(asked) = self.in_flight.get(&req).cloned() else {
            return; // late or unsolicited: ignore
        };
        if asked.peer != peer {
            return self.ban(peer, CheckError::NotAsked { req }.to_string(), now_ms);
        }
        let verified = match checked.and_then(|entries| self.check_response(&asked, entries)) {
            Ok(verified) => verified,
            Err(reason) => return self.ban(peer, format!("response to request {req}: {reason}"), now_ms),
        };
        self.in_flight.remove(&req);
        self.stats.entries_verified += verified.len() as u64;
        let author = asked.author;
        // The peer's record: entries new to us per millisecond it took (a
        // forward range's; other requests are asked of whoever claims them).
        let claimed = self.peers.get(&peer).and_then(|s| s.frontier.get(&author)).map_or(0, |t| max_seq(t));
        if asked.purpose == Purpose::Forward {
            let ours = self.local.get(&author).map_or(0, Tips::max_seq).max(self.importing.get(&author).copied().unwrap_or(0));
            // An entry sent without its payload is not useful yet: it costs
            // a payload request of its own (a stripper ranks below a peer
            // that sends whole entries, however fast it answers).
            let useful = verified.iter().filter(|e| e.header().seq > ours && e.payload().is_some()).count() as u64;
            let took = now_ms.saturating_sub(asked.sent_ms).saturating_sub(asked.charged_ms);
            if let Some(s) = self.peers.get_mut(&peer) {
                s.charge(useful, took);
            }
            self.reschedule_hedges();
        }
        let Some(last) = verified.last().map(|e| (e.header().seq, e.id())) else {
            // Nothing from where it claimed to have more: its claim is
            // dropped and it is struck, so it is asked last from now on. The
            // other peers asked for the range at once (a fan-out) may still
            // answer; if none do, the range is asked again as planned.
            self.strike(peer);
            if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                tips.retain(|h| h.seq < asked.start.seq);
            }
            if let Purpose::Branch(tip) = asked.purpose {
                self.sought.remove(&tip);
            }
            if asked.purpose == Purpose::Payload {
                self.payload_request_ended(author, asked.start.seq, now_ms);
            }
            if !self.in_flight.values().any(|f| f.group == asked.group) {
                self.mark_retried(author, asked.start);
            }
            return self.plan_all(now_ms);
        };
        let end = asked.start.seq.saturating_add(u64::from(asked.limit));
        // Short: fewer entries than asked and than the peer claims, and not
        // cut (`more`). It under-delivers: its claim is cut to what it sent
        // (it proved it holds that), the range's rest is planned again for
        // every claimant, and from the second short answer in a row on,
        // each is a strike. Other requests of its group stay in flight
        // (they may bring the whole range).
        let short = asked.purpose == Purpose::Forward && !more && last.0.saturating_add(1) < end && claimed > last.0;
        if short {
            self.stats.short_answers += 1;
            let struck = self.peers.get_mut(&peer).is_some_and(|s| {
                s.shorts = s.shorts.saturating_add(1);
                s.shorts >= 2
            });
            if struck {
                self.strike(peer);
            }
            if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                tips.retain(|h| h.seq <= last.0);
                if tips.is_empty() {
                    tips.push(Head { author, seq: last.0, id: last.1 });
                }
            }
            self.behind.insert(author);
        } else {
            // The first answer of a group settles it: the others are not waited for.
            self.in_flight.retain(|_, f| f.group != asked.group);
            if let Some(s) = self.peers.get_mut(&peer) {
                s.shorts = 0;
            }
        }
        self.retried.remove(&(author, asked.start.seq));
        if let Some(state) = self.peers.get_mut(&peer) {
            state.note_holds(last.1);
        }
        if asked.purpose == Purpose::Payload {
            // A peer that claims the entry but sends it without its payload
            // is stripping: it ranks lower.
            let awaited = |e: &VerifiedEntry| self.missing.contains_key(&e.entry_ref());
            let stripped: Vec<EntryRef> = verified.iter().filter(|e| e.payload().is_none() && awaited(e)).map(|e| e.entry_ref()).collect();
            let refetched = verified.iter().filter(|e| e.payload().is_some() && awaited(e)).count();
            self.stats.payloads_refetched += refetched as u64;
            if !stripped.is_empty() {
                self.strike(peer);
                if let Some(s) = self.peers.get_mut(&peer) {
                    s.stripped = s.stripped.saturating_add(1);
                }
            }
            // Asked of the next claimant of its round at once, not after a
            // timeout: an answer without the payload is as final as an
            // answer. (Stripped, or not sent at all.)
            let brought = verified.iter().any(|e| e.header().seq == asked.start.seq && e.payload().is_some());
            if !brought {
                self.payload_request_ended(author, asked.start.seq, now_ms);
            }
        }
        let mut rest_purpose = asked.purpose.rest();
        if let Purpose::Branch(tip) = asked.purpose
            && !verified.iter().any(|e| e.id() == tip)
        {
            if more {
                // The tip may be further on in its seq: the rest is for it too.
                rest_purpose = asked.purpose;
            } else {
                // The whole seq came without the tip it claimed: the claim is
                // dropped, and the tip may be asked of another claimant.
                self.sought.remove(&tip);
                if let Some(tips) = self.peers.get_mut(&peer).and_then(|s| s.frontier.get_mut(&author)) {
                    tips.retain(|h| h.id != tip);
                }
            }
        }
        if more {
            // Cut short: ask for the rest of the range, after the last entry
            // received (before this response is released, so it is imported
            // after it). The rest of a forward range goes to the best ranked
            // claimant, which is this peer unless a better one claims the
            // author beyond the last entry: a peer cutting every answer to
            // one entry is not asked for the rest again and again.
            let mut target = peer;
            if asked.purpose == Purpose::Forward && self.better_claimant(peer, &author, last.0.saturating_add(1), Purpose::Forward) {
                let next = last.0.saturating_add(1);
                let clock = self.clock_ms;
                if let Some(q) = self
                    .peers_in_rank_order()
                    .into_iter()
                    .find(|q| self.peers.get(q).is_some_and(|s| s.busy_until_ms <= clock && s.claims(&author, next, Purpose::Forward)))
                {
                    target = q;
                }
            }
            let rest = u32::try_from(end - last.0).unwrap_or(u32::MAX);
            let group = self.new_group();
            self.request(target, author, RangeStart { seq: last.0, after: Some(last.1) }, rest, rest_purpose, group, asked.planned, now_ms);
        }
        // What the held response covers: the range asked, or only up to its
        // last entry when the rest is planned anew.
        let held_limit = if short { u32::try_from(last.0 - asked.start.seq + 1).unwrap_or(asked.limit).min(asked.limit) } else { asked.limit };
        let admitted = self.admitted_entries(peer, author, verified);
        if !admitted.is_empty() {
            if asked.purpose == Purpose::Forward {
                let deadline_ms = now_ms.saturating_add(self.config.request_timeout_ms.saturating_mul(2));
                // A range asked again after its first part failed to import
                // may be cut at the same entry again: the newer answer to
                // that rest replaces the one still held.
                self.held.insert((author, asked.start), Held { peer, limit: held_limit, entries: admitted, deadline_ms });
                self.release_held(author);
            } else {
                self.import(peer, admitted, None);
            }
        }
        // Else a second answer would be accepted and the slot never come free.
        assert!(!self.in_flight.contains_key(&req), "request {req} still in flight after its answer");
        // A slot came free: this author first, then any other that waited
        // for one. The rest of a short range is planned for every claimant,
        // best first.
        if short {
            for p in self.peers_in_rank_order() {
                self.plan_author(p, author, now_ms);
            }
        } else {
            self.plan_author(peer, author, now_ms);
        }
        if self.starved {
            self.plan_all(now_ms);
        }
    }
}
