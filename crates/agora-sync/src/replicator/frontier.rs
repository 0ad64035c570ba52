//! Frontiers: the local tips and their announcement to peers, and each
//! peer's claims (its frontier) as learnt from frontiers and gossip.

use super::*;

impl Replicator {
    /// Replace everything known about the local store's tips (at start-up).
    /// Announces changed authors and plans requests.
    pub fn set_local_frontier(&mut self, heads: Vec<Head>, now_ms: u64) {
        let next: BTreeMap<AgentId, Tips> = group(heads).into_iter().map(|(a, tips)| (a, Tips::from_sorted(tips))).collect();
        self.tips_handled += next.values().map(|t| t.len() as u64).sum::<u64>();
        let changed: Vec<Head> = next.iter().filter(|(a, tips)| self.local.get(*a) != Some(*tips)).flat_map(|(_, tips)| self.capped(tips)).collect();
        self.behind.extend(self.local.keys().chain(next.keys()).copied());
        self.local = next;
        self.announce(changed);
        self.plan_all(now_ms);
    }

    /// One author's tips in the local store are now `tips` (all of them):
    /// [`Replicator::local_tips_changed`] with what differs, found in one
    /// pass over both. A driver that knows what a commit changed gives that
    /// instead, so that a commit costs what it adds.
    pub fn set_local_heads(&mut self, author: AgentId, mut tips: Vec<Head>, now_ms: u64) {
        // Else another author's tips would be filed, and announced, as this one's.
        assert!(tips.iter().all(|h| h.author == author), "tips of another author");
        tips.sort();
        tips.dedup();
        let old: Vec<Head> = self.local.get(&author).map(|t| t.iter().copied().collect()).unwrap_or_default();
        self.tips_handled += (old.len() + tips.len()) as u64;
        let new: BTreeSet<Head> = tips.iter().copied().collect();
        let kept: BTreeSet<Head> = old.iter().copied().collect();
        let passed: Vec<Head> = old.into_iter().filter(|h| !new.contains(h)).collect();
        let added: Vec<Head> = tips.into_iter().filter(|h| !kept.contains(h)).collect();
        self.local_tips_changed(author, &passed, &added, now_ms);
    }

    /// One author's tips in the local store changed (after an import or a
    /// local append): `passed` are tips no longer (an entry built on them),
    /// `added` new tips. Costs what they hold, whatever the author's other
    /// tips (a fork flood's thousands): the tips are kept incrementally and
    /// only the highest `heads_per_author_max` are announced. Announces
    /// them to every peer and plans further requests for that author only.
    pub fn local_tips_changed(&mut self, author: AgentId, passed: &[Head], added: &[Head], now_ms: u64) {
        // Else another author's tips would be filed, and announced, as this one's.
        assert!(passed.iter().chain(added).all(|h| h.author == author), "tips of another author");
        self.tips_handled += (passed.len() + added.len()) as u64;
        let our_max = self.local.get(&author).map_or(0, Tips::max_seq).max(added.iter().map(|h| h.seq).max().unwrap_or(0));
        if self.importing.get(&author).is_some_and(|&s| s <= our_max) {
            self.importing.remove(&author);
        }
        let tips = self.local.entry(author).or_insert_with(|| Tips::from_sorted(Vec::new()));
        let before = tips.len();
        let gone = tips.apply(passed, added);
        let changed = !gone.is_empty() || tips.len() != before;
        if tips.is_empty() {
            self.local.remove(&author);
            self.passed_tips.remove(&author);
        } else {
            // Tips passed are held (entries are never deleted): a peer that
            // still claims one lags, it holds no branch of ours to probe.
            let recent = self.passed_tips.entry(author).or_default();
            for h in gone.iter().skip(gone.len().saturating_sub(PASSED_TIPS_MAX)) {
                if recent.len() == PASSED_TIPS_MAX {
                    recent.pop_front();
                }
                recent.push_back(h.id);
            }
        }
        if !changed {
            return;
        }
        // A tip we passed may now be an interior entry some peer still
        // claims: a branch to probe, as `want` sees it, unless it is one of
        // the recent tips we passed.
        self.behind.insert(author);
        self.prune_behind_if_large();
        self.pending_announce.insert(author);
        if now_ms >= self.last_announce_ms.saturating_add(ANNOUNCE_INTERVAL_MS) {
            self.flush_announcements(now_ms);
        }
        self.release_held(author);
        self.resume(author, now_ms);
        let peers = self.peers_in_rank_order();
        for p in peers {
            self.plan_author(p, author, now_ms);
        }
    }

    /// Local tips looked at by tip updates so far: each commit adds what it
    /// passed and added (a full list given to [`Replicator::set_local_heads`]
    /// adds the old and new lists' lengths).
    pub fn tips_handled(&self) -> u64 {
        self.tips_handled
    }

    /// Announce the current tips of every author whose tips changed since
    /// the last announcement, in one frontier per peer.
    pub(super) fn flush_announcements(&mut self, now_ms: u64) {
        if self.pending_announce.is_empty() {
            return;
        }
        let authors = std::mem::take(&mut self.pending_announce);
        let heads: Vec<Head> = authors.iter().filter_map(|a| self.local.get(a)).flat_map(|t| self.capped(t)).collect();
        self.last_announce_ms = now_ms;
        self.announce(heads);
    }

    /// The tips of an author as announced: at most `heads_per_author_max`,
    /// the highest first.
    pub(super) fn capped(&self, tips: &Tips) -> Vec<Head> {
        tips.highest(self.config.heads_per_author_max)
    }

    /// What the local store committed: entries appended here (signed by this
    /// node's agent, with their payloads) and fork proofs it proved for the
    /// first time. Each is published on gossip: an entry inline when its
    /// payload is small, announced otherwise; a proof once per position.
    pub fn local_commit(&mut self, appended: &[(SignedEntry, Option<Vec<u8>>)], new_proofs: &[ForkProof]) {
        for (e, payload) in appended {
            self.outputs.push_back(Output::Publish(Gossip::for_entry(e, payload.as_deref())));
        }
        for p in new_proofs {
            if self.published_forks.insert((p.author(), p.seq())) {
                self.outputs.push_back(Output::Publish(Gossip::ForkProof(p.encode())));
            }
        }
    }

    /// Announce changed tips to every peer, except tips a peer is known to
    /// hold (it sent them to us): that would only make it ask for them.
    pub(super) fn announce(&mut self, changed: Vec<Head>) {
        if changed.is_empty() {
            return;
        }
        let sends: Vec<(PeerId, Vec<Head>)> = self
            .peers
            .iter()
            .map(|(p, s)| (*p, changed.iter().filter(|h| !s.holds.contains(&h.id)).copied().collect::<Vec<Head>>()))
            .filter(|(_, heads)| !heads.is_empty())
            .collect();
        for (p, heads) in sends {
            self.send_frontier(p, heads);
        }
    }

    /// A frontier, in messages of at most [`Config::frontier_heads_max`] heads.
    pub(super) fn send_frontier(&mut self, peer: PeerId, heads: Vec<Head>) {
        if heads.is_empty() {
            return self.outputs.push_back(Output::Send(peer, Message::Frontier(heads)));
        }
        for chunk in heads.chunks(self.config.frontier_heads_max.max(1)) {
            self.outputs.push_back(Output::Send(peer, Message::Frontier(chunk.to_vec())));
        }
    }

    /// When a frontier sent at `now_ms` is due to be sent again.
    pub(super) fn next_refresh(&self, now_ms: u64) -> u64 {
        match self.config.frontier_refresh_ms {
            0 => u64::MAX,
            every => now_ms.saturating_add(every),
        }
    }

    /// Send our whole frontier to every peer whose refresh is due.
    pub(super) fn refresh_frontiers(&mut self, now_ms: u64) {
        let due: Vec<PeerId> = self.peers.iter().filter(|(_, s)| s.refresh_at_ms <= now_ms).map(|(p, _)| *p).collect();
        if due.is_empty() {
            return;
        }
        let frontier = self.local_heads();
        let next = self.next_refresh(now_ms);
        for peer in due {
            if let Some(s) = self.peers.get_mut(&peer) {
                s.refresh_at_ms = next;
            }
            self.send_frontier(peer, frontier.clone());
        }
    }

    /// Every local tip, at most `heads_per_author_max` per author.
    pub fn local_heads(&self) -> Vec<Head> {
        self.local.values().flat_map(|tips| self.capped(tips)).collect()
    }

    // ---------------------------------------------------------------------
    // Peers.

    /// The frontier a peer announced, for status displays.
    pub fn peer_frontier(&self, peer: PeerId) -> Vec<Head> {
        self.peers.get(&peer).map(|s| s.frontier.values().flatten().copied().collect()).unwrap_or_default()
    }

    /// Heads remembered of all peers' claims: bounded by the roster size
    /// times `heads_per_author_max` per peer, plus `non_member_heads_per_peer`.
    pub fn claims_held(&self) -> usize {
        self.peers.values().map(|s| s.frontier.values().map(Vec::len).sum::<usize>()).sum()
    }

    /// Entries connected peers announced that this node does not hold.
    pub fn lag(&self) -> Lag {
        let ours = |a: &AgentId| self.local.get(a).map_or(0, Tips::max_seq);
        let mut best: BTreeMap<AgentId, u64> = BTreeMap::new();
        let mut per_peer = BTreeMap::new();
        for (p, s) in &self.peers {
            let mut lag = 0u64;
            // Claims of authors outside the roster are kept (bounded) while
            // the roster may be incomplete, but are not ours to fetch.
            for (a, tips) in s.frontier.iter().filter(|(a, _)| self.is_member(a)) {
                let theirs = max_seq(tips);
                lag += theirs.saturating_sub(ours(a));
                let b = best.entry(*a).or_insert(0);
                *b = (*b).max(theirs);
            }
            per_peer.insert(*p, lag);
        }
        let per_author: BTreeMap<AgentId, u64> = best.iter().map(|(a, s)| (*a, s.saturating_sub(ours(a)))).filter(|(_, l)| *l > 0).collect();
        let total = per_author.values().sum();
        Lag { total, per_peer, per_author }
    }

    /// A frontier from `peer`: its claims replace its view of each author
    /// listed, within the bounds; then plan.
    pub(super) fn learn_frontier(&mut self, peer: PeerId, heads: Vec<Head>, now_ms: u64) {
        let update = group(heads);
        let (cap, non_member_max) = (self.config.heads_per_author_max, self.config.non_member_heads_per_peer);
        let mut refused = 0u64;
        let mut dropped = 0u64;
        let mut planned = Vec::new();
        let members: Vec<bool> = update.keys().map(|a| self.is_member(a)).collect();
        let Some(state) = self.peers.get_mut(&peer) else { return };
        for ((author, mut tips), member) in update.into_iter().zip(members) {
            dropped += cap_tips(&mut tips, cap) as u64;
            if member {
                self.behind.insert(author);
                state.frontier.insert(author, tips);
                planned.push(author);
                continue;
            }
            // Outside the roster: remembered (fetched if the author is
            // admitted later) only up to a small bound, never planned.
            refused += 1;
            // The author's earlier claims are replaced, so they leave the count.
            let others = state.non_member_heads.saturating_sub(state.frontier.get(&author).map_or(0, Vec::len));
            if others + tips.len() <= non_member_max {
                state.non_member_heads = others + tips.len();
                // Planned only if admitted later (`set_admitted` marks it then).
                state.frontier.insert(author, tips);
            } else {
                dropped += tips.len() as u64;
            }
            // Else a peer could hold `heads_per_author_max` times the bound,
            // by claiming an author with one head and then with many.
            assert!(state.non_member_heads <= non_member_max, "{} claims of non-members held", state.non_member_heads);
        }
        if dropped > 0 {
            state.strikes = state.strikes.saturating_add(1);
        }
        self.stats.refused_not_admitted += refused;
        self.stats.claims_dropped += dropped;
        self.prune_behind_if_large();
        for author in planned {
            self.plan_author(peer, author, now_ms);
        }
    }
}

/// Add a head learnt from gossip to a peer's view of an author. A head above
/// everything known replaces a single-branch view (it extends it, as far as
/// we can tell without the backlink); a head at or below it is old news and
/// is ignored unless `fork` says it is a proven branch.
pub(super) fn merge_head(frontier: &mut BTreeMap<AgentId, Vec<Head>>, head: Head, fork: bool) {
    let tips = frontier.entry(head.author).or_default();
    if tips.iter().any(|t| t.id == head.id) {
        return;
    }
    let max = max_seq(tips);
    if head.seq <= max && !fork {
        return;
    }
    if tips.len() <= 1 && head.seq > max {
        tips.clear();
    }
    tips.push(head);
    tips.sort();
}
