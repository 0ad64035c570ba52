//! Which entries refer into the chains of forked authors: what the
//! disagreement map needs to say who builds on each side of a fork
//! (`agora_merge::LiveMerge::disagreements`), without reading every payload
//! held each time it is asked for.
//!
//! The live merged view knows where every entry is, not what reasoning
//! events refer to: that would be a reference per edge of the whole history
//! in memory. The map needs only the references into the chains of authors
//! whose chain forked, and those are few (a fork is an author's misconduct,
//! kept as evidence). So [`ForkReferrers`] holds only those, and the
//! references to entries not held yet (one may arrive on a forked chain).
//! The first time the map is asked for after an author's chain forked, one
//! pass over the meanings held adds that author; from then on every
//! committed entry and every payload filled in is looked at as it is applied.
//!
//! It may list more than the map counts (a referrer since redacted, one off
//! its chain's view): the map checks every candidate against the live view
//! and the entry's current meaning. It must never list fewer: the test
//! `an_honest_fork_is_resolved_by_its_author` (tests/merge.rs) builds on one
//! side before the fork is known and on the other after the index was made,
//! and compares the node's map with a recompute.

use agora_core::idmap::IdMap;
use agora_core::{AgentId, EntryId};
use agora_graph::Event;
use agora_merge::LiveMerge;
use agora_roster::Roster;
use agora_store::{Store, StoreError};
use std::collections::BTreeSet;

/// Referenced entry → the entries that refer to it, for references into the
/// chains of [`ForkReferrers::authors`] and to entries not held when seen.
#[derive(Default)]
pub struct ForkReferrers {
    authors: BTreeSet<AgentId>,
    by_target: IdMap<EntryId, Vec<EntryId>>,
}

/// The entries a reasoning event in `meaning` refers to (none when it is no
/// reasoning event).
pub fn references(meaning: Option<&[u8]>) -> Vec<EntryId> {
    meaning.filter(|p| Event::is_event_payload(p)).and_then(|p| Event::decode(p).ok()).map_or_else(Vec::new, |ev| ev.ref_list().iter().copied().collect())
}

impl ForkReferrers {
    /// Does it follow any author yet? Until then, nothing is decoded.
    pub fn is_active(&self) -> bool {
        !self.authors.is_empty()
    }

    /// Cover the chains of `authors` too: one pass over every meaning held
    /// for those not covered yet.
    pub fn cover(&mut self, store: &Store, roster: &Roster, live: &LiveMerge, authors: &[AgentId]) -> Result<(), StoreError> {
        let new: BTreeSet<AgentId> = authors.iter().filter(|a| !self.authors.contains(a)).copied().collect();
        if new.is_empty() {
            return Ok(());
        }
        // References to entries not held are followed from the first cover on.
        let first = self.authors.is_empty();
        let started = std::time::Instant::now();
        agora_view::for_each_meaning(store, roster, |id, meaning| {
            for r in references(meaning) {
                let follow = match live.author_of(&r) {
                    Some(a) => new.contains(&a),
                    None => first,
                };
                if follow {
                    self.note(r, id);
                }
            }
        })?;
        tracing::info!(authors = new.len(), seconds = started.elapsed().as_secs_f64(), "references into forked chains indexed");
        self.authors.extend(new);
        Ok(())
    }

    /// Note the references `refs` of an entry whose meaning is now known
    /// (committed, or its payload filled in: see [`references`]), after
    /// `live` took it in.
    pub fn observe(&mut self, live: &LiveMerge, id: EntryId, refs: &[EntryId]) {
        if !self.is_active() {
            return;
        }
        for &r in refs {
            if live.author_of(&r).is_none_or(|a| self.authors.contains(&a)) {
                self.note(r, id);
            }
        }
    }

    /// An entry is held now: references to it are kept only if it is on a
    /// covered chain.
    pub fn held(&mut self, live: &LiveMerge, id: &EntryId) {
        if self.by_target.contains_key(id) && live.author_of(id).is_some_and(|a| !self.authors.contains(&a)) {
            self.by_target.remove(id);
        }
    }

    /// The entries noted as referring to one of `ids`.
    pub fn referrers(&self, ids: &[EntryId]) -> Vec<EntryId> {
        ids.iter().filter_map(|id| self.by_target.get(id)).flatten().copied().collect()
    }

    /// Note a reference (the same one noted twice, after a payload changed,
    /// is listed twice: the map takes each candidate once).
    fn note(&mut self, target: EntryId, by: EntryId) {
        self.by_target.entry(target).or_default().push(by);
    }
}
