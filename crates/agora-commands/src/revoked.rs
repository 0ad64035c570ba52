//! What key rotations leave out, said where a read meets it
//! (`protocol-spec/keys.md`, "Which entries count"). The views only drop an
//! entry no rotation of its author is comparable with
//! (`Roster::key_bounds`); the reads say which rotation left it out and
//! after which boundary, which ranges of a chain are out, and which merge
//! events name an entry that is out. And which key signed an entry, when it
//! is not its author's inception key.

use agora_core::{AgentId, EntryId, KeyEvent};
use agora_merge::MergeStatus;
use agora_roster::Roster;
use agora_store::Store;
use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Why an entry counts in no view: a key rotation of its author (a
/// revocation, `agora key revoke`) leaves it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExcludedBy {
    /// The rotation that leaves it out: the entry signed by the author's new key.
    pub rotation: String,
    /// The rotation's trust boundary: the last entry its owner vouches for; entries after it on any other branch count in no view.
    pub boundary: String,
}

impl ExcludedBy {
    /// In words, for the text forms.
    pub fn text(&self) -> String {
        format!("left out by the key rotation {} after {}", short(&self.rotation), short(&self.boundary))
    }
}

/// The first 8 characters of an id.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// The key that signed `id`, when it is not its author's inception key
/// (the author id): one point read.
pub fn signed_by(store: &Store, id: &EntryId) -> Result<Option<String>> {
    Ok(store.get_signed(id)?.and_then(|e| e.header().keys.and_then(|k| k.signer)).map(|k| k.to_string()))
}

/// One author's chain as its rotations judge it: every entry held (every
/// branch), and for each rotation the entries comparable with it (an
/// ancestor, itself, a descendant). An entry counts iff it is comparable
/// with every rotation; the first rotation (by seq) it is not comparable
/// with is the one that left it out.
pub struct Rotations {
    /// Entries in (seq, id) order.
    ids: Vec<EntryId>,
    seqs: Vec<u64>,
    index: HashMap<EntryId, usize>,
    /// Each rotation in seq order: its index, its boundary, and per entry
    /// whether it is comparable with it.
    rotations: Vec<(usize, EntryId, Vec<bool>)>,
}

impl Rotations {
    /// `author`'s chain, read once from `store`; `None` when it is not
    /// forked (a chain that is not forked loses nothing) or never rotated.
    pub fn of(store: &Store, author: &AgentId) -> Result<Option<Self>> {
        if store.forked_seqs(author)?.is_empty() {
            return Ok(None);
        }
        let mut links: Vec<(u64, EntryId, Option<EntryId>, KeyEvent)> = Vec::new();
        store.for_each_entry(Some(author), |e| {
            let h = e.signed.header();
            links.push((h.seq, e.signed.id(), h.backlink, h.key_event()));
            Ok(())
        })?;
        links.sort_by_key(|l| (l.0, l.1));
        let ids: Vec<EntryId> = links.iter().map(|l| l.1).collect();
        let seqs: Vec<u64> = links.iter().map(|l| l.0).collect();
        let index: HashMap<EntryId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let parent: Vec<Option<usize>> = links.iter().map(|l| l.2.and_then(|b| index.get(&b).copied()).filter(|p| seqs[*p] < l.0)).collect();
        let mut rotations = Vec::new();
        for (r, link) in links.iter().enumerate().filter(|(_, l)| l.3 == KeyEvent::Rotate) {
            let Some(boundary) = link.2 else { continue };
            let mut comparable = vec![false; ids.len()];
            let mut at = Some(r);
            while let Some(i) = at {
                comparable[i] = true;
                at = parent[i];
            }
            // Descendants: seq order puts every parent before its children.
            let mut below = vec![false; ids.len()];
            below[r] = true;
            for i in r + 1..ids.len() {
                if parent[i].is_some_and(|p| below[p]) {
                    below[i] = true;
                    comparable[i] = true;
                }
            }
            rotations.push((r, boundary, comparable));
        }
        Ok((!rotations.is_empty()).then_some(Self { ids, seqs, index, rotations }))
    }

    /// Why `id` counts in no view (`None`: it counts, or is not held).
    pub fn why(&self, id: &EntryId) -> Option<ExcludedBy> {
        let i = *self.index.get(id)?;
        self.why_at(i)
    }

    fn why_at(&self, i: usize) -> Option<ExcludedBy> {
        let (r, boundary, _) = self.rotations.iter().find(|(_, _, comparable)| !comparable[i])?;
        Some(ExcludedBy { rotation: self.ids[*r].to_string(), boundary: boundary.to_string() })
    }

    /// The entries left out, by the rotation that left them out, in the
    /// rotations' seq order: (why, how many, lowest seq, highest seq).
    pub fn ranges(&self) -> Vec<(ExcludedBy, usize, u64, u64)> {
        let mut out: Vec<(ExcludedBy, usize, u64, u64)> = Vec::new();
        for i in 0..self.ids.len() {
            let Some(why) = self.why_at(i) else { continue };
            match out.iter_mut().find(|(w, ..)| *w == why) {
                Some(range) => {
                    range.1 += 1;
                    range.2 = range.2.min(self.seqs[i]);
                    range.3 = range.3.max(self.seqs[i]);
                }
                None => out.push((why, 1, self.seqs[i], self.seqs[i])),
            }
        }
        out
    }
}

/// Why `id`, held in `store` but in no view, counts in none, if a rotation
/// of its author left it out. Reads its author's chain, only when it is
/// forked.
pub fn why_excluded(store: &Store, id: &EntryId) -> Result<Option<ExcludedBy>> {
    let Some((author, _)) = store.locate(id)? else { return Ok(None) };
    Ok(Rotations::of(store, &author)?.and_then(|r| r.why(id)))
}

/// A merge event that names an entry a rotation left out (a dispute's
/// target, an accept's head): it waits for it, and never takes effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnExcluded {
    /// The merge event's entry.
    pub entry: EntryId,
    /// Who signed it (its author).
    pub by: AgentId,
    /// Its seq.
    pub seq: u64,
    /// The entry it names.
    pub target: EntryId,
    /// The target's author.
    pub target_author: AgentId,
}

/// The merge events among `statuses` (entry, signer, seq, status) that wait
/// for an entry `roster`'s key bounds leave out, in the order given.
/// Nothing to look at when no rotation leaves anything out.
pub fn on_excluded<'a>(roster: &Roster, statuses: impl IntoIterator<Item = (EntryId, AgentId, u64, &'a MergeStatus)>) -> Vec<OnExcluded> {
    if roster.key_bounds.is_empty() {
        return Vec::new();
    }
    statuses
        .into_iter()
        .filter_map(|(entry, by, seq, status)| {
            let MergeStatus::Pending { missing } = status else { return None };
            let (target_author, _) = roster.key_bounds.iter().find(|(_, b)| !b.counts(missing))?;
            Some(OnExcluded { entry, by, seq, target: *missing, target_author: *target_author })
        })
        .collect()
}

/// The rotations of the authors named, each chain read once.
#[derive(Default)]
pub struct ChainsRead {
    chains: BTreeMap<AgentId, Option<Rotations>>,
}

impl ChainsRead {
    /// Why `id` of `author` counts in no view.
    pub fn why(&mut self, store: &Store, author: &AgentId, id: &EntryId) -> Result<Option<ExcludedBy>> {
        if !self.chains.contains_key(author) {
            self.chains.insert(*author, Rotations::of(store, author)?);
        }
        Ok(self.chains.get(author).and_then(Option::as_ref).and_then(|r| r.why(id)))
    }

    /// `author`'s rotations, read once.
    pub fn of(&mut self, store: &Store, author: &AgentId) -> Result<Option<&Rotations>> {
        if !self.chains.contains_key(author) {
            self.chains.insert(*author, Rotations::of(store, author)?);
        }
        Ok(self.chains.get(author).and_then(Option::as_ref))
    }
}

/// An agent's current key and how many times it rotated: the key that
/// signs its highest entry that counts (its id when it never rotated), and
/// its rotations that count. One read of its head; the chain of an agent
/// that rotated is read to count its rotations.
pub fn current_key(store: &Store, roster: &Roster, agent: &AgentId) -> Result<(AgentId, u64)> {
    let Some(summary) = store.tip_summary(agent)? else { return Ok((*agent, 0)) };
    let counts = |id: &EntryId| roster.key_bounds.get(agent).is_none_or(|b| b.counts(id));
    let head = if summary.count <= 1 || counts(&summary.head.id) {
        Some(summary.head.id)
    } else {
        store.tips(agent)?.into_iter().rev().find(|t| counts(&t.id)).map(|t| t.id)
    };
    let Some(key) = head.map(|h| store.get_signed(&h)).transpose()?.flatten().map(|e| e.header().signing_key()) else { return Ok((*agent, 0)) };
    if key == *agent {
        return Ok((key, 0));
    }
    let mut rotations = 0;
    store.for_each_entry(Some(agent), |e| {
        if e.signed.header().key_event() == KeyEvent::Rotate && counts(&e.signed.id()) {
            rotations += 1;
        }
        Ok(())
    })?;
    Ok((key, rotations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::key_bounds::KeyBounds;

    /// Only a merge event waiting for an entry the key bounds leave out is
    /// listed, with that entry's author; none when nothing is left out.
    #[test]
    fn only_merge_events_waiting_for_an_excluded_entry_are_listed() {
        let (author, signer) = (AgentId([1; 32]), AgentId([2; 32]));
        let (out, elsewhere) = (EntryId([9; 32]), EntryId([8; 32]));
        let statuses = [
            (EntryId([3; 32]), signer, 4, MergeStatus::Pending { missing: out }),
            (EntryId([4; 32]), signer, 5, MergeStatus::Pending { missing: elsewhere }),
            (EntryId([5; 32]), signer, 6, MergeStatus::Applied),
        ];
        let mut roster = Roster::founder_only(signer);
        assert!(on_excluded(&roster, statuses.iter().map(|(e, by, seq, st)| (*e, *by, *seq, st))).is_empty());
        roster.key_bounds.insert(author, KeyBounds { excluded: [out].into(), forks: Default::default() });
        let found = on_excluded(&roster, statuses.iter().map(|(e, by, seq, st)| (*e, *by, *seq, st)));
        assert_eq!(found, vec![OnExcluded { entry: EntryId([3; 32]), by: signer, seq: 4, target: out, target_author: author }]);
        let why = ExcludedBy { rotation: "ab".repeat(32), boundary: "cd".repeat(32) };
        assert_eq!(why.text(), "left out by the key rotation abababab after cdcdcdcd");
    }
}
