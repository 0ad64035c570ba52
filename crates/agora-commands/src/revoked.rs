//! What key rotations leave out, said where a read meets it
//! (`protocol-spec/keys.md`, "Which entries count"). The views only drop an
//! entry no rotation of its author is comparable with
//! (`Roster::key_bounds`); the reads say which rotation left it out and
//! after which boundary, which ranges of a chain are out, and which merge
//! events name an entry that is out. And which key signed an entry, when it
//! is not its author's inception key.

use agora_core::key_bounds::{ChainLink, Judged};
use agora_core::{AgentId, EntryId, KeyEvent};
use agora_merge::MergeStatus;
use agora_roster::Roster;
use agora_store::Store;
use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Why an entry counts in no view: a key event of its author leaves it out:
/// a rotation (a revocation, `agora key revoke`), a recovery the roster
/// binds (`agora key recover`), or a recover entry it does not bind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExcludedBy {
    /// The key event leaving it out (for a recovery not held yet, the founder's entry binding it).
    pub rotation: String,
    /// Its trust boundary: the last entry its owner vouches for; entries after it on any other branch count in no view.
    pub boundary: String,
    /// `rotate`, `recover` or `unbound_recover` (a recovery the roster does not bind).
    pub event: String,
    /// A recovery's binding: the founder's entry.
    pub bound_by: Option<String>,
}

impl ExcludedBy {
    /// In words, for the text forms.
    pub fn text(&self) -> String {
        match self.event.as_str() {
            "recover" => format!("left out by the key recovery {} after {}", short(&self.rotation), short(&self.boundary)),
            "unbound_recover" => {
                format!("after the recover entry {} (after {}), which the roster does not bind", short(&self.rotation), short(&self.boundary))
            }
            _ => format!("left out by the key rotation {} after {}", short(&self.rotation), short(&self.boundary)),
        }
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

/// One author's chain as its key events judge it: every entry held (every
/// branch), what its recoveries leave out, and for each boundary (a
/// rotation, a bound recovery) the entries comparable with it (an ancestor,
/// itself, a descendant). An entry counts iff no recovery leaves it out and
/// it is comparable with every boundary; the first boundary (by seq) it is
/// not comparable with is the one that left it out
/// (`agora_core::key_bounds`, whose rules these are, said per entry).
pub struct Rotations {
    /// Entries in (seq, id) order.
    ids: Vec<EntryId>,
    seqs: Vec<u64>,
    index: HashMap<EntryId, usize>,
    /// Per entry, why a recovery leaves it out, if one does.
    recovery: Vec<Option<ExcludedBy>>,
    /// Each boundary in seq order: why it leaves an entry out, and per
    /// entry whether it is comparable with it.
    rotations: Vec<(ExcludedBy, Vec<bool>)>,
}

impl Rotations {
    /// `author`'s chain, read once from `store`, judged with the roster's
    /// recoveries of it; `None` when nothing can be left out (a chain not
    /// forked, not bound by a recovery, whose tips its own key signs).
    pub fn of(store: &Store, roster: &Roster, author: &AgentId) -> Result<Option<Self>> {
        let recoveries = roster.recoveries.get(author).map_or(&[][..], Vec::as_slice);
        if recoveries.is_empty() && store.forked_seqs(author)?.is_empty() {
            let mut changed_key = false;
            for tip in store.tips(author)? {
                changed_key |= store.get_signed(&tip.id)?.is_some_and(|e| e.header().signing_key() != *author);
            }
            if !changed_key {
                return Ok(None);
            }
        }
        let mut links: Vec<ChainLink> = Vec::new();
        store.for_each_entry(Some(author), |e| {
            let h = e.signed.header();
            links.push(ChainLink { id: e.signed.id(), seq: h.seq, backlink: h.backlink, event: h.key_event(), key: h.signing_key() });
            Ok(())
        })?;
        let bindings = roster.bindings(author);
        let judged = Judged::new(&links, &bindings);
        let order = &judged.order;
        let ids: Vec<EntryId> = order.iter().map(|l| l.id).collect();
        let seqs: Vec<u64> = order.iter().map(|l| l.seq).collect();
        let index: HashMap<EntryId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let parent = &judged.parent;
        let bound_by = |l: &ChainLink| recoveries.iter().rev().find(|r| Some(r.head) == l.backlink && r.key == l.key).map(|r| r.by.to_string());
        let why_of = |i: usize| {
            let l = order[i];
            let event = if l.event == KeyEvent::Recover { "recover" } else { "rotate" };
            ExcludedBy {
                rotation: l.id.to_string(),
                boundary: l.backlink.map(|b| b.to_string()).unwrap_or_default(),
                event: event.to_string(),
                bound_by: if l.event == KeyEvent::Recover { bound_by(l) } else { None },
            }
        };
        // Outside the last binding: its recover entry (the first held), or
        // the founder's entry that bound it.
        let last = recoveries.last();
        let outside = last.map(|b| {
            let held = (0..order.len()).find(|&j| order[j].event == KeyEvent::Recover && order[j].backlink == Some(b.head) && order[j].key == b.key);
            ExcludedBy {
                rotation: held.map_or_else(|| b.by.to_string(), |j| ids[j].to_string()),
                boundary: b.head.to_string(),
                event: "recover".to_string(),
                bound_by: Some(b.by.to_string()),
            }
        });
        let recovery: Vec<Option<ExcludedBy>> = (0..order.len())
            .map(|i| match judged.unbound[i] {
                Some(u) => Some(ExcludedBy { event: "unbound_recover".to_string(), bound_by: None, ..why_of(u) }),
                None if !judged.within[i] => outside.clone(),
                None => None,
            })
            .collect();
        let mut rotations = Vec::new();
        for r in (0..order.len()).filter(|r| judged.boundary[*r]) {
            if order[r].backlink.is_none() {
                continue;
            }
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
            rotations.push((why_of(r), comparable));
        }
        let anything = !rotations.is_empty() || recovery.iter().any(Option::is_some);
        Ok(anything.then_some(Self { ids, seqs, index, recovery, rotations }))
    }

    /// Why `id` counts in no view (`None`: it counts, or is not held).
    pub fn why(&self, id: &EntryId) -> Option<ExcludedBy> {
        let i = *self.index.get(id)?;
        self.why_at(i)
    }

    fn why_at(&self, i: usize) -> Option<ExcludedBy> {
        if let Some(why) = &self.recovery[i] {
            return Some(why.clone());
        }
        let (why, _) = self.rotations.iter().find(|(_, comparable)| !comparable[i])?;
        Some(why.clone())
    }

    /// The entries left out, by the key event that left them out, in the
    /// order first met in seq order: (why, how many, lowest seq, highest seq).
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

/// Why `id`, held in `store` but in no view, counts in none, if a key
/// event of its author left it out, by the roster of the workspace
/// `founder` founded. The membership (the founder's chain) says whether its
/// author is admitted and which recoveries bind it; the author's chain is
/// read, once, only when something of it can be left out, and no other
/// agent's (the key bounds of the whole roster would read the chain of
/// every agent that changed key).
pub fn why_excluded(store: &Store, founder: AgentId, id: &EntryId) -> Result<Option<ExcludedBy>> {
    let Some((author, _)) = store.locate(id)? else { return Ok(None) };
    let roster = agora_view::derive_membership(store, founder)?;
    // Key bounds are found for admitted agents only (`agora_view::bound_keys`).
    if !(roster.members.contains_key(&author) || roster.removed.contains_key(&author) || roster.recoveries.contains_key(&author)) {
        return Ok(None);
    }
    Ok(Rotations::of(store, &roster, &author)?.and_then(|r| r.why(id)))
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

/// The key events of the authors named, judged by one roster, each chain
/// read once.
pub struct ChainsRead<'r> {
    roster: &'r Roster,
    chains: BTreeMap<AgentId, Option<Rotations>>,
}

impl<'r> ChainsRead<'r> {
    /// Chains judged with `roster`'s recoveries.
    pub fn new(roster: &'r Roster) -> Self {
        Self { roster, chains: BTreeMap::new() }
    }

    /// Why `id` of `author` counts in no view.
    pub fn why(&mut self, store: &Store, author: &AgentId, id: &EntryId) -> Result<Option<ExcludedBy>> {
        Ok(self.of(store, author)?.and_then(|r| r.why(id)))
    }

    /// `author`'s key events, read once.
    pub fn of(&mut self, store: &Store, author: &AgentId) -> Result<Option<&Rotations>> {
        if !self.chains.contains_key(author) {
            self.chains.insert(*author, Rotations::of(store, self.roster, author)?);
        }
        Ok(self.chains.get(author).and_then(Option::as_ref))
    }
}

/// An agent's current key and how many times it rotated: the key that
/// signs its highest entry that counts (its id when it never changed key),
/// and its rotations that count. One read of its head when it counts and
/// its own key signs it; otherwise its chain is read once.
pub fn current_key(store: &Store, roster: &Roster, agent: &AgentId) -> Result<(AgentId, u64)> {
    let Some(summary) = store.tip_summary(agent)? else { return Ok((*agent, 0)) };
    let counts = |id: &EntryId| roster.key_bounds.get(agent).is_none_or(|b| b.counts(id));
    if counts(&summary.head.id) && store.get_signed(&summary.head.id)?.is_some_and(|e| e.header().signing_key() == *agent) {
        return Ok((*agent, 0));
    }
    let mut rotations = 0;
    let mut highest: Option<(u64, AgentId)> = None;
    store.for_each_entry(Some(agent), |e| {
        let h = e.signed.header();
        if counts(&e.signed.id()) {
            rotations += u64::from(h.key_event() == KeyEvent::Rotate);
            if highest.is_none_or(|(seq, _)| h.seq > seq) {
                highest = Some((h.seq, h.signing_key()));
            }
        }
        Ok(())
    })?;
    Ok((highest.map_or(*agent, |(_, key)| key), rotations))
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
        let why = ExcludedBy { rotation: "ab".repeat(32), boundary: "cd".repeat(32), event: "rotate".into(), bound_by: None };
        assert_eq!(why.text(), "left out by the key rotation abababab after cdcdcdcd");
        let recovered = ExcludedBy { event: "recover".into(), bound_by: Some("ef".repeat(32)), ..why.clone() };
        assert_eq!(recovered.text(), "left out by the key recovery abababab after cdcdcdcd");
        let unbound = ExcludedBy { event: "unbound_recover".into(), ..why };
        assert_eq!(unbound.text(), "after the recover entry abababab (after cdcdcdcd), which the roster does not bind");
    }
}
