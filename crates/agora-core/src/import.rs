//! The import rules: what a store does with entries offered from elsewhere (a
//! pack, a peer), written once for every store that keeps a log.
//!
//! The RocksDB store (`agora-store`) and the simulator's in-memory store both
//! plan an import here and then only write the plan, so a simulated node keeps
//! exactly the rules a real one does: entries already held are skipped (their
//! missing payload filled in), entries dated beyond [`FUTURE_SKEW_MAX_MS`] are
//! deferred with everything built on them, every link is checked against a
//! predecessor that is held or earlier in the same import, a forked position
//! gets exactly one fork proof (the first two entries seen there) and further
//! branches are stored unpaired, and every touched author's tips are
//! recomputed. All or nothing: a refused item refuses the whole import.
//!
//! Work per offered entry is a constant number of questions to the store
//! ([`Held`]), whatever the author has done before (thousands of branches at
//! one seq included).
//!
//! An import is planned in two steps, so that the caller can check signatures
//! its own way (in parallel batches, or not at all when the entries come
//! checked): [`screen`] sorts the offered entries, then [`Screened::plan`]
//! checks links and finds forks.

use crate::limits::FUTURE_SKEW_MAX_MS;
use crate::verify::{verify_link, verify_payload};
use crate::{AgentId, EntryId, EntryRef, ForkProof, SignedEntry, VerifyError};
use std::collections::{BTreeMap, HashMap, HashSet};

/// What the import rules ask of a store. Every question is a point read or
/// one seek; none scans.
pub trait Held {
    /// The store's own failure (a read error).
    type Error;
    /// Where the entry with this id is held: (author, seq).
    fn locate(&self, id: &EntryId) -> Result<Option<(AgentId, u64)>, Self::Error>;
    /// The held entry at (author, seq) with this id.
    fn load(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<Option<SignedEntry>, Self::Error>;
    /// Is this held entry's payload missing (never received), as opposed to
    /// held or redacted here? Only a missing payload is ever filled in: one
    /// redacted here is never restored.
    fn payload_missing(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<bool, Self::Error>;
    /// `author`'s tips in brief (its highest tip and how many it has), or
    /// `None` when nothing of `author` is held. One point read.
    fn tip_summary(&self, author: &AgentId) -> Result<Option<TipSummary>, Self::Error>;
    /// Is this held entry one of its author's tips? Asked only of an author
    /// with more than one tip (the summary answers for a single tip).
    fn is_tip(&self, entry: &EntryRef) -> Result<bool, Self::Error>;
    /// Does (author, seq) already hold its fork proof?
    fn proven(&self, author: &AgentId, seq: u64) -> Result<bool, Self::Error>;
    /// One held entry at (author, seq), the first by id, if any.
    fn first_at(&self, author: &AgentId, seq: u64) -> Result<Option<SignedEntry>, Self::Error>;
}

/// One entry offered for import, with its payload when the source holds it.
#[derive(Debug, Clone)]
pub struct Offered {
    /// The signed entry.
    pub entry: SignedEntry,
    /// Its payload, if the source holds it.
    pub payload: Option<Vec<u8>>,
}

/// Entries of an import that were not stored because they are dated too far
/// ahead of the clock (`FUTURE_SKEW_MAX_MS`), with everything in the input
/// that builds on them. Offered again from `until_ms`, they are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deferred {
    /// The first such entry, in input order.
    pub first: EntryRef,
    /// How many entries were held back.
    pub count: usize,
    /// The earliest clock reading at which `first` is stored.
    pub until_ms: u64,
}

/// What is wrong with an entry offered for import, typed so that a caller
/// (a replication driver) can act on it: fetch a missing predecessor, or
/// blame the peer that sent a broken entry.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ImportProblem {
    /// Its predecessor is neither stored nor earlier in the input: the caller
    /// may fetch it and offer the entry again.
    #[error("{entry}: its predecessor {backlink} (seq {}) is neither stored nor earlier in the input; list each chain in order", entry.seq.saturating_sub(1))]
    PredecessorMissing {
        /// The entry.
        entry: EntryRef,
        /// The predecessor it names.
        backlink: EntryId,
    },
    /// It does not follow its predecessor (author, seq, backlink or
    /// timestamp rule).
    #[error("{0}")]
    Link(VerifyError),
    /// Its payload does not match the header's length or hash.
    #[error("{0}")]
    Payload(VerifyError),
    /// Its signature does not verify.
    #[error("{0}")]
    Signature(VerifyError),
}

impl ImportProblem {
    /// The entry at fault.
    pub fn entry(&self) -> EntryRef {
        match self {
            ImportProblem::PredecessorMissing { entry, .. } => *entry,
            ImportProblem::Link(e) | ImportProblem::Payload(e) | ImportProblem::Signature(e) => e.entry,
        }
    }
}

/// Why an import could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError<E> {
    /// The store could not answer.
    #[error("reading the store: {0}")]
    Held(E),
    /// The offered item at `index` (in input order) breaks a rule; nothing
    /// may be written.
    #[error("item {index}: {problem}")]
    Refused {
        /// Its place in the input.
        index: usize,
        /// What is wrong.
        problem: ImportProblem,
    },
    /// The store holds something the rules say it cannot (two entries at one
    /// position that do not form a fork proof).
    #[error("store inconsistent at {location}: {problem}")]
    Inconsistent {
        /// The entry concerned.
        location: String,
        /// What is wrong.
        problem: String,
    },
}

/// The offered entries sorted by [`screen`]: what is new (still to be
/// linked), what is held already, what waits for the clock.
#[derive(Debug, Default)]
pub struct Screened {
    /// New entries, in input order, with their place in the input.
    pub fresh: Vec<(usize, Offered)>,
    /// Held entries whose missing payload arrived (checked against the hash).
    pub fills: Vec<(EntryRef, Vec<u8>)>,
    /// Entries skipped because their id was already held (or repeated).
    pub already_present: usize,
    /// Entries held back because they are dated in the future.
    pub deferred: Option<Deferred>,
}

/// Sort `items` against what `held` holds. With `verify_payloads`, every
/// payload that would be stored is checked against its header's hash and
/// length (callers whose entries come checked pass `false`).
pub fn screen<H: Held>(held: &H, items: Vec<Offered>, verify_payloads: bool, now_ms: u64) -> Result<Screened, PlanError<H::Error>> {
    let mut out = Screened { fresh: Vec::with_capacity(items.len()), ..Screened::default() };
    let mut seen: HashSet<EntryId> = HashSet::with_capacity(items.len());
    let mut held_back: HashSet<EntryId> = HashSet::new();
    let latest_ms = now_ms.saturating_add(FUTURE_SKEW_MAX_MS);
    let refuse = |index, problem| PlanError::Refused { index, problem };
    for (index, item) in items.into_iter().enumerate() {
        let id = item.entry.id();
        if !seen.insert(id) {
            out.already_present += 1;
            continue;
        }
        if let Some((author, seq)) = held.locate(&id).map_err(PlanError::Held)? {
            out.already_present += 1;
            if let Some(p) = item.payload
                && held.payload_missing(&author, seq, &id).map_err(PlanError::Held)?
            {
                if verify_payloads {
                    verify_payload(&item.entry, &p).map_err(|e| refuse(index, ImportProblem::Payload(e)))?;
                }
                out.fills.push((item.entry.entry_ref(), p));
            }
            continue;
        }
        let h = item.entry.header();
        if h.timestamp_ms > latest_ms || h.backlink.is_some_and(|b| held_back.contains(&b)) {
            held_back.insert(id);
            let d =
                out.deferred.get_or_insert(Deferred { first: item.entry.entry_ref(), count: 0, until_ms: h.timestamp_ms.saturating_sub(FUTURE_SKEW_MAX_MS) });
            d.count += 1;
            continue;
        }
        if verify_payloads && let Some(p) = &item.payload {
            verify_payload(&item.entry, p).map_err(|e| refuse(index, ImportProblem::Payload(e)))?;
        }
        out.fresh.push((index, item));
    }
    Ok(out)
}

/// What a store writes for one import, all in one atomic write.
#[derive(Debug, Default)]
pub struct ImportPlan {
    /// New entries, in an order in which each one's predecessor comes first
    /// or is held.
    pub fresh: Vec<Offered>,
    /// Held entries whose missing payload arrived.
    pub fills: Vec<(EntryRef, Vec<u8>)>,
    /// Entries skipped because their id was already held (or repeated).
    pub already_present: usize,
    /// Entries held back because they are dated in the future.
    pub deferred: Option<Deferred>,
    /// Proofs of positions this import found forked: at most one per
    /// position over a store's life.
    pub proofs: Vec<ForkProof>,
    /// What this import changed of the tips of every author it adds to: a
    /// commit's notice carries it, so that the node's views of the tips
    /// cost what the import adds, however many tips the author has.
    pub tip_changes: BTreeMap<AgentId, TipChange>,
    /// The tip summary of every author this import adds to, before it
    /// (`None`: nothing of the author was held) and after it.
    pub tip_summaries: BTreeMap<AgentId, (Option<TipSummary>, TipSummary)>,
}

/// An author's tips in brief: its head (the tip at the highest seq held; of
/// several there, the first by id) and how many tips it has (more than one:
/// the chain is forked, and stays so, since branches never join).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TipSummary {
    /// The tip at the author's highest seq (of several there, the first by id).
    pub head: EntryRef,
    /// How many tips the author has.
    pub count: u64,
}

impl TipSummary {
    /// The summary after `change`, which names every tip passed and added
    /// (`None` if it would leave no tip, which no write does).
    pub fn after(before: Option<TipSummary>, change: &TipChange) -> Option<TipSummary> {
        let kept = before.filter(|b| !change.passed.contains(&b.head)).map(|b| b.head);
        let head = kept.into_iter().chain(change.added.iter().copied()).max_by_key(|t| (t.seq, std::cmp::Reverse(t.id)));
        let count = before.map_or(0, |b| b.count) + change.added.len() as u64 - change.passed.len() as u64;
        head.map(|head| TipSummary { head, count })
    }
}

/// How one author's tips changed in one write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TipChange {
    /// Tips before the write that are tips no more (an entry of the write
    /// builds on them), in (seq, id) order.
    pub passed: Vec<EntryRef>,
    /// Entries of the write that are tips after it, in (seq, id) order.
    pub added: Vec<EntryRef>,
}

/// One author while planning: its tips before the import in brief, the
/// highest seq held before, the held tips the import passed, and the
/// import's entries no later entry of it builds on (its new tips).
struct AuthorState {
    before: Option<TipSummary>,
    held_max: u64,
    passed: Vec<EntryRef>,
    passed_ids: HashSet<EntryId>,
    added: BTreeMap<(u64, EntryId), EntryRef>,
}

impl AuthorState {
    /// Is `parent` (at `seq`) a held tip that no entry of this import has
    /// passed yet? One point read at most, and none for an unforked author.
    fn held_tip<H: Held>(&self, held: &H, parent: EntryRef) -> Result<bool, H::Error> {
        if self.passed_ids.contains(&parent.id) {
            return Ok(false);
        }
        match self.before {
            None => Ok(false),
            Some(b) if b.count == 1 => Ok(b.head == parent),
            Some(_) => held.is_tip(&parent),
        }
    }
}

impl Screened {
    /// Check every new entry's link to a predecessor held or earlier in the
    /// import, and find forks: the plan the store writes.
    pub fn plan<H: Held>(self, held: &H) -> Result<ImportPlan, PlanError<H::Error>> {
        let mut staged: HashMap<EntryId, usize> = HashMap::with_capacity(self.fresh.len());
        let mut staged_first: HashMap<(AgentId, u64), EntryId> = HashMap::new();
        let mut proven: HashSet<(AgentId, u64)> = HashSet::new();
        let mut authors: BTreeMap<AgentId, AuthorState> = BTreeMap::new();
        let mut fresh: Vec<Offered> = Vec::with_capacity(self.fresh.len());
        let mut proofs = Vec::new();
        let inconsistent = |entry: &SignedEntry, problem: String| PlanError::Inconsistent { location: entry.entry_ref().to_string(), problem };
        for (index, item) in self.fresh {
            let entry = &item.entry;
            let h = entry.header();
            let (author, seq, id) = (h.author, h.seq, entry.id());
            // The header's rule: a first entry has no predecessor, every other one has one.
            assert!(h.backlink.is_some() == (seq > 1), "{} breaks the backlink rule", entry.entry_ref());
            if let Some(backlink) = h.backlink {
                let prev = match staged.get(&backlink) {
                    Some(&i) => Some(fresh[i].entry.clone()),
                    None => match held.locate(&backlink).map_err(PlanError::Held)? {
                        Some((a, s)) => held.load(&a, s, &backlink).map_err(PlanError::Held)?,
                        None => None,
                    },
                };
                let prev = prev.ok_or(PlanError::Refused { index, problem: ImportProblem::PredecessorMissing { entry: entry.entry_ref(), backlink } })?;
                verify_link(&prev, entry).map_err(|e| PlanError::Refused { index, problem: ImportProblem::Link(e) })?;
            }
            let state = match authors.entry(author) {
                std::collections::btree_map::Entry::Occupied(s) => s.into_mut(),
                std::collections::btree_map::Entry::Vacant(slot) => {
                    let before = held.tip_summary(&author).map_err(PlanError::Held)?;
                    let held_max = before.map_or(0, |b| b.head.seq);
                    slot.insert(AuthorState { before, held_max, passed: Vec::new(), passed_ids: HashSet::new(), added: BTreeMap::new() })
                }
            };
            if let Some(parent) = h.backlink {
                let parent = EntryRef { author, seq: seq - 1, id: parent };
                if staged.contains_key(&parent.id) {
                    // An entry of this import: a tip no more.
                    state.added.remove(&(parent.seq, parent.id));
                } else if state.held_tip(held, parent).map_err(PlanError::Held)? {
                    // A tip held before this import: passed now.
                    state.passed_ids.insert(parent.id);
                    state.passed.push(parent);
                }
            }
            state.added.insert((seq, id), entry.entry_ref());
            // Nothing held sits above the author's highest held seq, so a chain
            // that only grows (the common case of sync) asks nothing here.
            let held_max = state.held_max;
            if !proven.contains(&(author, seq)) {
                let rival = if seq <= held_max && held.proven(&author, seq).map_err(PlanError::Held)? {
                    proven.insert((author, seq));
                    None
                } else if let Some(first) = staged_first.get(&(author, seq)).filter(|f| **f != id) {
                    Some(fresh[staged[first]].entry.clone())
                } else if seq <= held_max {
                    held.first_at(&author, seq).map_err(PlanError::Held)?
                } else {
                    None
                };
                if let Some(rival) = rival {
                    // Else the proof would pair entries of another position.
                    if rival.header().author != author || rival.header().seq != seq || rival.id() == id {
                        return Err(inconsistent(entry, format!("the entry found at its position is {}", rival.entry_ref())));
                    }
                    // A second entry at this position is a fork: keep both, one
                    // proof; later branches are stored without a proof.
                    let proof = ForkProof::new(rival, entry.clone())
                        .map_err(|e| inconsistent(entry, format!("conflicting entries failed to form a fork proof: {e}")))?;
                    proven.insert((author, seq));
                    proofs.push(proof);
                }
            }
            staged_first.entry((author, seq)).or_insert(id);
            staged.insert(id, fresh.len());
            fresh.push(item);
        }
        let mut tip_changes = BTreeMap::new();
        let mut tip_summaries = BTreeMap::new();
        for (author, mut state) in authors {
            // Else the author would be left with no tip: its chain lost to readers.
            assert!(!state.added.is_empty(), "author {author} planned with no new tip");
            state.passed.sort_unstable_by_key(|t| (t.seq, t.id));
            let change = TipChange { passed: state.passed, added: state.added.into_values().collect() };
            let after = TipSummary::after(state.before, &change)
                .ok_or_else(|| PlanError::Inconsistent { location: author.to_string(), problem: "the import would leave the author no tip".into() })?;
            tip_summaries.insert(author, (state.before, after));
            tip_changes.insert(author, change);
        }
        Ok(ImportPlan { fresh, fills: self.fills, already_present: self.already_present, deferred: self.deferred, proofs, tip_changes, tip_summaries })
    }
}

/// [`screen`] then [`Screened::plan`], for entries whose signatures are
/// checked (or are checked by the caller between the two).
pub fn plan_import<H: Held>(held: &H, items: Vec<Offered>, verify_payloads: bool, now_ms: u64) -> Result<ImportPlan, PlanError<H::Error>> {
    screen(held, items, verify_payloads, now_ms)?.plan(held)
}

#[cfg(test)]
mod tests {
    //! The rules on their own, against the simplest store there is: a map.
    //! agora-store's tests check the same rules through RocksDB, and the
    //! simulator's through its in-memory store.
    use super::*;
    use crate::AgentKey;
    use crate::entry::next_header;
    use std::collections::BTreeSet;
    use std::convert::Infallible;

    const NOW: u64 = 1_700_000_000_000;

    /// An entry and its payload, by (author, seq, id).
    type Entries = BTreeMap<(AgentId, u64, EntryId), (SignedEntry, Option<Vec<u8>>)>;

    #[derive(Default)]
    struct Map {
        entries: Entries,
        proofs: HashSet<(AgentId, u64)>,
        tips: BTreeMap<AgentId, BTreeSet<(u64, EntryId)>>,
    }

    impl Held for Map {
        type Error = Infallible;
        fn locate(&self, id: &EntryId) -> Result<Option<(AgentId, u64)>, Infallible> {
            Ok(self.entries.keys().find(|k| k.2 == *id).map(|k| (k.0, k.1)))
        }
        fn load(&self, a: &AgentId, s: u64, id: &EntryId) -> Result<Option<SignedEntry>, Infallible> {
            Ok(self.entries.get(&(*a, s, *id)).map(|v| v.0.clone()))
        }
        fn payload_missing(&self, a: &AgentId, s: u64, id: &EntryId) -> Result<bool, Infallible> {
            Ok(self.entries.get(&(*a, s, *id)).is_some_and(|v| v.1.is_none()))
        }
        fn tip_summary(&self, a: &AgentId) -> Result<Option<TipSummary>, Infallible> {
            let Some(tips) = self.tips.get(a) else { return Ok(None) };
            let &(seq, id) = tips.iter().find(|t| Some(t.0) == tips.last().map(|l| l.0)).expect("a held author has a tip");
            Ok(Some(TipSummary { head: EntryRef { author: *a, seq, id }, count: tips.len() as u64 }))
        }
        fn is_tip(&self, e: &EntryRef) -> Result<bool, Infallible> {
            Ok(self.tips.get(&e.author).is_some_and(|t| t.contains(&(e.seq, e.id))))
        }
        fn proven(&self, a: &AgentId, s: u64) -> Result<bool, Infallible> {
            Ok(self.proofs.contains(&(*a, s)))
        }
        fn first_at(&self, a: &AgentId, s: u64) -> Result<Option<SignedEntry>, Infallible> {
            Ok(self.entries.iter().find(|(k, _)| k.0 == *a && k.1 == s).map(|(_, v)| v.0.clone()))
        }
    }

    impl Map {
        fn write(&mut self, plan: ImportPlan) {
            for o in plan.fresh {
                let h = o.entry.header().clone();
                self.entries.insert((h.author, h.seq, o.entry.id()), (o.entry, o.payload));
            }
            for (at, p) in plan.fills {
                self.entries.get_mut(&(at.author, at.seq, at.id)).unwrap().1 = Some(p);
            }
            self.proofs.extend(plan.proofs.iter().map(|p| (p.author(), p.seq())));
            for (author, change) in plan.tip_changes {
                let tips = self.tips.entry(author).or_default();
                change.passed.iter().for_each(|t| assert!(tips.remove(&(t.seq, t.id)), "a passed tip was held"));
                tips.extend(change.added.iter().map(|t| (t.seq, t.id)));
                assert_eq!(plan.tip_summaries[&author].1.count, tips.len() as u64, "the summary counts the tips");
            }
        }
    }

    fn entry(key: &AgentKey, prev: Option<&SignedEntry>, at_ms: u64, text: &str) -> Offered {
        let e = SignedEntry::sign(next_header(key.agent_id(), prev, at_ms, text.as_bytes()).unwrap(), key);
        Offered { entry: e, payload: Some(text.as_bytes().to_vec()) }
    }

    #[test]
    fn branches_at_one_seq_get_one_proof_and_every_branch_is_a_tip() {
        let key = AgentKey::from_seed([1; 32]);
        let root = entry(&key, None, NOW, "root");
        let branches: Vec<Offered> = (0..5).map(|i| entry(&key, Some(&root.entry), NOW, &format!("branch {i}"))).collect();
        let mut map = Map::default();
        map.write(plan_import(&map, vec![root.clone(), branches[0].clone()], true, NOW).unwrap());
        // The rest in a second import: rivals found both held and in the batch.
        let plan = plan_import(&map, branches[1..].to_vec(), true, NOW).unwrap();
        assert_eq!(plan.proofs.len(), 1, "one proof per forked position");
        assert_eq!(plan.fresh.len(), 4);
        assert_eq!(plan.tip_summaries[&key.agent_id()].1.count, 5, "every branch is a tip");
        let change = &plan.tip_changes[&key.agent_id()];
        assert_eq!((change.passed.len(), change.added.len()), (0, 4), "the held root was passed before; four tips added");
        map.write(plan);
        let again = plan_import(&map, vec![entry(&key, Some(&root.entry), NOW, "branch 6")], true, NOW).unwrap();
        assert!(again.proofs.is_empty(), "a proven position gets no second proof");
    }

    #[test]
    fn a_missing_predecessor_refuses_the_whole_import_naming_the_item() {
        let key = AgentKey::from_seed([2; 32]);
        let one = entry(&key, None, NOW, "one");
        let two = entry(&key, Some(&one.entry), NOW, "two");
        let other = entry(&AgentKey::from_seed([3; 32]), None, NOW, "other");
        let map = Map::default();
        match plan_import(&map, vec![other, two], true, NOW) {
            Err(PlanError::Refused { index: 1, problem: ImportProblem::PredecessorMissing { entry, .. } }) => assert_eq!(entry.seq, 2),
            other => panic!("expected a refusal of item 1, got {other:?}"),
        }
    }

    #[test]
    fn entries_dated_ahead_are_deferred_with_their_successors() {
        let key = AgentKey::from_seed([4; 32]);
        let one = entry(&key, None, NOW, "one");
        let ahead = entry(&key, Some(&one.entry), NOW + FUTURE_SKEW_MAX_MS + 1, "ahead");
        let after = entry(&key, Some(&ahead.entry), NOW + FUTURE_SKEW_MAX_MS + 2, "after");
        let map = Map::default();
        let plan = plan_import(&map, vec![one, ahead.clone(), after], true, NOW).unwrap();
        assert_eq!(plan.fresh.len(), 1);
        let d = plan.deferred.unwrap();
        assert_eq!((d.first, d.count, d.until_ms), (ahead.entry.entry_ref(), 2, NOW + 1));
    }

    #[test]
    fn a_missing_payload_is_filled_and_a_wrong_one_refused() {
        let key = AgentKey::from_seed([5; 32]);
        let one = entry(&key, None, NOW, "one");
        let mut map = Map::default();
        map.write(plan_import(&map, vec![Offered { payload: None, ..one.clone() }], true, NOW).unwrap());
        let wrong = Offered { payload: Some(b"not one".to_vec()), ..one.clone() };
        assert!(matches!(plan_import(&map, vec![wrong], true, NOW), Err(PlanError::Refused { problem: ImportProblem::Payload(_), .. })));
        let plan = plan_import(&map, vec![one.clone(), one], true, NOW).unwrap();
        assert_eq!((plan.fills.len(), plan.already_present, plan.fresh.len()), (1, 2, 0));
    }
}
