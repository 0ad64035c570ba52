//! The disagreement map off the live state: [`LiveMerge::disagreements`].
//!
//! What the live state holds answers most of the map: the open disputes by
//! target, where every known entry is and whether it is on its chain's
//! view, each chain's forks, every accept frontier and every accept clipped
//! at a fork. What it does not hold is read from the caller, and only what
//! the map shows: the disputed entries and their reasoning ancestors (at
//! most [`crate::ANCESTORS_MAX`] each), the entries of the authors whose
//! chain forked (for each side's members and tips), and the entries that
//! may refer into a side (for who builds on it). A node answers `disputes`
//! this way at a cost that grows with the disputes and forks, not with the
//! history.

use super::{ChainInput, LiveChain, LiveMerge};
use crate::disagreements::{ForkSides, add_builder, ancestors_by, kind_and_text_of, reasoning_event_of, set_builders, with_acceptors};
use crate::input::InputError;
use crate::merge::Merge;
use crate::payload::MergeEvent;
use crate::views::{DisagreementMap, DisputeMark, DisputedEventView};
use agora_core::{AgentId, EntryId, Payload};
use std::collections::{BTreeSet, HashMap, HashSet};

impl LiveMerge {
    /// The authors whose view chain met a fork, ascending: the chains
    /// [`LiveMerge::disagreements`] asks for.
    pub fn forked_authors(&self) -> Vec<AgentId> {
        self.chains_in_order().filter(|c| !c.forks.is_empty()).map(|c| c.author).collect()
    }

    /// The disagreement map, equal to [`Merge::disagreements`] over every
    /// entry held. With `agents`, only their disputes, accepts and reasoning
    /// are counted.
    ///
    /// It asks the caller for:
    /// - `payload(id, author, seq)`: what is known of a known entry's
    ///   payload (missing when only a fork proof carries it);
    /// - `chain(author)`: what [`LiveMerge::apply`] asks for, for each of
    ///   [`LiveMerge::forked_authors`];
    /// - `referrers(ids)`: every held entry whose reasoning event refers to
    ///   one of `ids` (the members of the forks' sides); more may be given,
    ///   each is checked.
    pub fn disagreements<E: From<InputError>>(
        &self,
        agents: Option<&[AgentId]>,
        mut payload: impl FnMut(&EntryId, &AgentId, u64) -> Result<Payload, E>,
        mut chain: impl FnMut(&AgentId) -> Result<ChainInput, E>,
        mut referrers: impl FnMut(&[EntryId]) -> Result<Vec<EntryId>, E>,
    ) -> Result<DisagreementMap, E> {
        let counted: Option<HashSet<AgentId>> = agents.map(|a| a.iter().copied().collect());
        let counts = |a: &AgentId| counted.as_ref().is_none_or(|c| c.contains(a));

        // The disputed events, by (author, seq, id): the open disputes are
        // kept by target chain and (seq, target).
        let mut failed: Option<E> = None;
        let mut memo: HashMap<EntryId, Vec<EntryId>> = HashMap::new();
        let mut disputed = Vec::new();
        for (&author, &slot) in &self.by_author {
            let Some(open) = self.open.get(&slot) else { continue };
            let c = &self.chains[slot as usize];
            // Who accepts what on this chain, read once for all its targets.
            let acceptors = self.acceptors_on(slot);
            let off_view = if open.iter().any(|(&(seq, target), _)| !c.on_view(&self.index, &target, seq)) {
                self.off_view_acceptors(c, &self.clipped_accepts_on(slot))
            } else {
                HashMap::new()
            };
            for (&(seq, target), by) in open {
                let marks: Vec<DisputeMark> = by.iter().filter(|(a, _)| counts(a)).filter_map(|&(a, d)| self.dispute_mark(a, d)).collect();
                if marks.is_empty() {
                    continue;
                }
                let on_view = c.on_view(&self.index, &target, seq);
                let record = self.index.record_on(slot, &target).map(|r| c.records[r as usize].event.as_ref());
                let held = payload(&target, &author, seq)?;
                let (kind, text) = kind_and_text_of(record, matches!(held, Payload::Missing), held.meaning());
                let (ancestors, ancestors_truncated) = ancestors_by(target, |id| self.known_refs(id, &mut memo, &mut payload, &mut failed));
                let mut accepted_by: BTreeSet<AgentId> = BTreeSet::new();
                if on_view {
                    accepted_by.insert(author);
                    accepted_by.extend(acceptors.iter().filter(|(_, f)| *f >= seq).map(|(a, _)| *a));
                } else {
                    accepted_by.extend(off_view.get(&target).into_iter().flatten().copied());
                }
                disputed.push(DisputedEventView {
                    target,
                    author,
                    seq,
                    on_view,
                    kind,
                    text,
                    ancestors,
                    ancestors_truncated,
                    accepted_by: accepted_by.into_iter().filter(|a| counts(a)).collect(),
                    disputes: marks,
                });
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }

        // The forks: each forked chain derived alone (a chain's view depends
        // on its own entries only), its sides' acceptors from the live state.
        let mut sides: Vec<ForkSides> = Vec::new();
        for author in self.forked_authors() {
            let (entries, proofs) = chain(&author)?;
            let m = Merge::chains_of(&entries, &proofs)?;
            if let Some(&c) = m.chain_index.get(&author) {
                sides.extend(m.fork_sides(c as usize));
            }
        }
        let slot_of = |a: &AgentId| self.by_author.get(a).copied();
        let clipped = |a: &AgentId| slot_of(a).map_or_else(Vec::new, |s| self.clipped_accepts_on(s));
        let frontiers = |a: &AgentId| slot_of(a).map_or_else(Vec::new, |s| self.acceptors_on(s));
        let (mut forks, member) = with_acceptors(sides, &counts, clipped, frontiers);
        if !member.is_empty() {
            let ids: Vec<EntryId> = member.keys().copied().collect();
            let mut candidates = referrers(&ids)?;
            candidates.sort_unstable();
            candidates.dedup();
            let mut built = BTreeSet::new();
            for id in candidates {
                let Some(loc) = self.index.get(&id) else { continue };
                let c = &self.chains[loc.chain as usize];
                if !counts(&c.author) || !c.on_view(&self.index, &id, loc.seq) {
                    continue;
                }
                if let Some(ev) = reasoning_event_of(payload(&id, &c.author, loc.seq)?.meaning()) {
                    add_builder(&mut built, &forks, &member, c.author, &ev);
                }
            }
            set_builders(&mut forks, built);
        }
        Ok(DisagreementMap { disputed, forks })
    }

    /// The known entries `id`'s reasoning event refers to, read once per
    /// query (`memo`); a failed read is kept in `failed`.
    fn known_refs<E>(
        &self,
        id: &EntryId,
        memo: &mut HashMap<EntryId, Vec<EntryId>>,
        payload: &mut impl FnMut(&EntryId, &AgentId, u64) -> Result<Payload, E>,
        failed: &mut Option<E>,
    ) -> Vec<EntryId> {
        if let Some(known) = memo.get(id) {
            return known.clone();
        }
        let Some(loc) = self.index.get(id) else { return Vec::new() };
        let found = match payload(id, &self.chains[loc.chain as usize].author, loc.seq) {
            Ok(p) => reasoning_event_of(p.meaning()).map_or_else(Vec::new, |ev| ev.ref_list().iter().filter(|r| self.index.contains_key(r)).copied().collect()),
            Err(e) => {
                failed.get_or_insert(e);
                Vec::new()
            }
        };
        memo.insert(*id, found.clone());
        found
    }

    /// The open dispute `dispute` of `by`, as a mark.
    fn dispute_mark(&self, by: AgentId, dispute: EntryId) -> Option<DisputeMark> {
        let s = *self.by_author.get(&by)?;
        let c = &self.chains[s as usize];
        match &c.records[self.index.record_on(s, &dispute)? as usize].event {
            Some(MergeEvent::Dispute { target, reason, counter_claim }) => {
                Some(DisputeMark { dispute, by, target: *target, reason: reason.clone(), counter_claim: counter_claim.clone() })
            }
            _ => None,
        }
    }

    /// Every accept frontier on chain `t`: (acceptor, seq).
    fn acceptors_on(&self, t: u32) -> Vec<(AgentId, u64)> {
        let view_len = self.chains[t as usize].view.len() as u64;
        self.referrers
            .get(&t)
            .into_iter()
            .flatten()
            .filter_map(|&s| {
                let &(seq, _) = self.chains[s as usize].reach.get(&t)?;
                (seq <= view_len).then_some((self.chains[s as usize].author, seq))
            })
            .collect()
    }

    /// For the entries of chain `c` off its view: the signers of the clipped
    /// accepts (`clipped`: head, signer) whose head is the entry or links
    /// down to it. Each head is walked up to the view (an entry on the view
    /// links down only to entries on it), stopping where its signer was
    /// already noted, so the cost is the pairs noted, not accepts times
    /// targets times branch length.
    fn off_view_acceptors(&self, c: &LiveChain, clipped: &[(EntryId, AgentId)]) -> HashMap<EntryId, BTreeSet<AgentId>> {
        let mut out: HashMap<EntryId, BTreeSet<AgentId>> = HashMap::new();
        for &(head, signer) in clipped {
            let mut k = head;
            while let Some(seq) = self.index.get(&k).map(|l| l.seq) {
                if c.on_view(&self.index, &k, seq) || !out.entry(k).or_default().insert(signer) {
                    break;
                }
                match c.off_view.get(&k).and_then(|o| o.parent) {
                    Some(p) => k = p,
                    None => break,
                }
            }
        }
        out
    }

    /// Every accept whose head is held on chain `t` off its view (clipped at
    /// a fork): (head, signer).
    fn clipped_accepts_on(&self, t: u32) -> Vec<(EntryId, AgentId)> {
        let mut out = Vec::new();
        for &s in self.referrers.get(&t).into_iter().flatten() {
            let c = &self.chains[s as usize];
            for &r in c.accepts_on.get(&t).into_iter().flatten() {
                let rec = &c.records[r as usize];
                if let (Some(MergeEvent::Accept { head, .. }), true) = (&rec.event, rec.clipped()) {
                    out.push((*head, c.author));
                }
            }
        }
        out
    }
}
