//! The merged state kept current as entries arrive: [`LiveMerge`].
//!
//! [`Merge::compute`] derives the merged state from the whole set of entries;
//! a node that takes in a few entries a second cannot redo that (about half a
//! second at a million entries) for every one. A [`LiveMerge`] holds the same
//! state (each chain's view, forks and gaps, every merge event's status, the
//! accept frontiers, the open disputes and the view hash) and updates only
//! what an arrival can change:
//!
//! - **The arriving entry's chain.** The common case, an entry that continues
//!   a chain with no fork, gap or broken link (the next seq, linked to the
//!   head, a known payload, not a fork resolution), extends its view chain in
//!   place. So does one more branch at the fork that freezes a chain (a
//!   child of the shared entry at the fork's seq, with a known payload that
//!   is not a merge event, in a chain without resolutions): it adds a
//!   candidate and an entry off the view, nothing else, so a fork flood
//!   costs each update what it adds. Anything else (a fork, an entry that arrives before its
//!   predecessor, a resolution, a payload filled in or redacted, a fork proof)
//!   re-derives that one chain from its entries, asked of the caller, with the
//!   same code as [`Merge::compute`] (steps 1 and 2 over one author).
//! - **The merge events that read it.** An accept's status and reach depend
//!   on the accepted chain only; a dispute's and a withdrawal's on whether
//!   their target is known. So when a chain is re-derived, the accepts of
//!   other agents whose head is on it are judged again (each signer keeps its
//!   accepts by accepted chain); when an id becomes known, the signers that
//!   waited for it are evaluated again; when an agent's own chain is
//!   re-derived, all its merge events are.
//! - **The view hash**, two-level (see `hash.rs`): only the digests of the
//!   chains whose state, events or frontiers changed are hashed again.
//!
//! The result equals [`Merge::compute`] over the same set after every step,
//! whatever the arrival order: the property test `live_equals_recompute`
//! checks the view hash, every status, frontier, chain and open dispute, and
//! the consensus, after each delivery.

use crate::hash::{ChainParts, chain_bytes, view_bytes};
use crate::input::{InputError, MergeEntry};
use crate::merge::{ForkOutcome, ForkPoint, Frontier, Merge, MergeRecord, NONE};
use crate::payload::MergeEvent;
use crate::rules::{MergeRuleError, MergeStatus};
use crate::views::{ChainConsensus, Consensus, ConsensusError, DisputeMark, DisputedEvent, accepted_prefix, counted_agents};
use agora_core::id_arena::IdArena;
use agora_core::{AgentId, EntryId, ForkProof};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

mod disagreements;
mod entry_index;
mod memory;

pub use memory::LiveMemory;

use entry_index::Loc;

type IdMap<V> = agora_core::idmap::IdMap<EntryId, V>;
/// One chain's open disputes: (target seq, target) -> (disputer, dispute entry).
type OpenMarks = BTreeMap<(u64, EntryId), Disputers>;

/// Who disputes one target, as (disputer, dispute entry) pairs, sorted and
/// without repeats. A sorted vector rather than a `BTreeSet`: most targets
/// have one or two disputers, and a B-tree's first leaf takes about 700
/// bytes for them, 14 MiB at the merge bench's 20,000 disputed targets (a
/// ninth of the live view); this takes 64 bytes a pair.
#[derive(Clone, Debug, Default)]
pub(crate) struct Disputers(Vec<(AgentId, EntryId)>);

impl Disputers {
    /// Add `pair`; false if it was there.
    fn insert(&mut self, pair: (AgentId, EntryId)) -> bool {
        let Err(at) = self.0.binary_search(&pair) else { return false };
        // Exactly as many as held while few (most targets), doubling beyond
        // (so many disputes of one target cost no more than linear time).
        if self.0.len() < 8 {
            self.0.reserve_exact(1);
        }
        self.0.insert(at, pair);
        true
    }

    /// Remove `pair`; false if it was not there.
    fn remove(&mut self, pair: &(AgentId, EntryId)) -> bool {
        match self.0.binary_search(pair) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In (disputer, dispute) order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, (AgentId, EntryId)> {
        self.0.iter()
    }
}

/// What evaluation needs of an entry that is not on its chain's view.
#[derive(Clone, Copy, Debug)]
struct OffView {
    /// The held predecessor it links to.
    parent: Option<EntryId>,
    /// Its backlink (named predecessor).
    backlink: Option<EntryId>,
    rooted: bool,
}

/// A merge event of a chain's author.
#[derive(Clone, Debug)]
struct LiveRecord {
    /// Its entry's row in the entry index, which holds its id and seq
    /// (4 bytes here instead of 40), and in the top bit whether the entry
    /// is on its chain's view ([`ON_VIEW`]).
    row_on_view: u32,
    /// For a dispute withdrawn, the withdrawal's row ([`NOT_WITHDRAWN`]
    /// otherwise): the status [`MergeStatus::Withdrawn`] without a box. A
    /// boxed status is 128 bytes, and in the merge bench's swarm one merge
    /// event in six is a dispute since withdrawn (50,000 at a million
    /// entries, 6 MiB of boxes).
    withdrawn_by: u32,
    event: Option<MergeEvent>,
    /// Its base and status when either is not the common one, boxed: a
    /// status is 128 bytes and a million-entry swarm holds a record per
    /// merge event, of which a few hundred are clipped, invalid, pending
    /// or off their chain's view. `None` stands for the base
    /// [`MergeStatus::OffView`] and the status [`MergeStatus::Applied`]
    /// (or withdrawn, `withdrawn_by`).
    rare: Option<Box<RareStatus>>,
}

/// A record's base and status, kept when either is not the common one.
#[derive(Clone, Debug)]
struct RareStatus {
    /// The status the chain analysis gives it (off view, a decode failure,
    /// a fork resolution's): what evaluation starts from.
    base: MergeStatus,
    /// Its status now, unless withdrawn.
    status: MergeStatus,
}

/// A record per merge event (a quarter of the swarm's entries): the
/// withdrawal's row and the view bit fit beside the row, and one box holds
/// both rare statuses: 96 bytes a record, 104 before.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<LiveRecord>() <= 96);

/// The bit of [`LiveRecord::row_on_view`] that says the entry is on its
/// chain's view (rows stay below it: `EntryIndex::insert`).
const ON_VIEW: u32 = 1 << 31;
/// What [`LiveRecord::withdrawn_by`] holds for a record not withdrawn.
const NOT_WITHDRAWN: u32 = u32::MAX;

impl LiveRecord {
    fn new(row: u32, event: Option<MergeEvent>, base: MergeStatus, on_view: bool) -> Self {
        debug_assert!(row < ON_VIEW);
        let mut record = LiveRecord { row_on_view: row | if on_view { ON_VIEW } else { 0 }, withdrawn_by: NOT_WITHDRAWN, event, rare: None };
        // It starts at its base.
        record.set(base.clone(), base);
        record
    }
    /// Keep `base` and `status`, boxed only if either is not the common one.
    fn set(&mut self, base: MergeStatus, status: MergeStatus) {
        self.rare = (base != MergeStatus::OffView || status != MergeStatus::Applied).then(|| Box::new(RareStatus { base, status }));
    }
    /// Its entry's row in the entry index.
    fn row(&self) -> u32 {
        self.row_on_view & !ON_VIEW
    }
    fn on_view(&self) -> bool {
        self.row_on_view & ON_VIEW != 0
    }
    fn base(&self) -> MergeStatus {
        self.rare.as_ref().map_or(MergeStatus::OffView, |r| r.base.clone())
    }
    /// Its status now (a withdrawal's id read from `index`).
    fn status(&self, index: &entry_index::EntryIndex) -> MergeStatus {
        self.status_in(|r| index.id(r))
    }
    /// Its status now, a withdrawal's id read by `id_of` (from ids read
    /// under one lock, for many records).
    fn status_in(&self, id_of: impl Fn(u32) -> EntryId) -> MergeStatus {
        if self.withdrawn_by != NOT_WITHDRAWN {
            return MergeStatus::Withdrawn { by: id_of(self.withdrawn_by) };
        }
        self.rare.as_ref().map_or(MergeStatus::Applied, |r| r.status.clone())
    }
    /// Whether its status is `Clipped`, without building it.
    fn clipped(&self) -> bool {
        self.withdrawn_by == NOT_WITHDRAWN && self.rare.as_ref().is_some_and(|r| matches!(r.status, MergeStatus::Clipped { .. }))
    }
    fn set_status(&mut self, status: MergeStatus) {
        self.withdrawn_by = NOT_WITHDRAWN;
        self.set(self.base(), status);
    }
    /// Withdrawn by the entry in row `by` (its status
    /// [`MergeStatus::Withdrawn`]).
    fn set_withdrawn(&mut self, by: u32) {
        self.set(self.base(), MergeStatus::Applied);
        self.withdrawn_by = by;
    }
    fn applied(&self) -> bool {
        self.withdrawn_by == NOT_WITHDRAWN && self.rare.as_ref().is_none_or(|r| r.status == MergeStatus::Applied)
    }
}

/// One author's chain and, as a signer, what its merge events did.
#[derive(Debug, Default)]
struct LiveChain {
    author: AgentId,
    /// Entries known (held, or carried by a fork proof).
    len: u64,
    /// Distinct entries held (given as entries, not only by a proof).
    held: u64,
    max_seq: u64,
    /// The view, seq 1 first, as rows of the entry index (4 bytes an entry
    /// where a second copy of each 32-byte id took 32).
    view: Vec<u32>,
    head_timestamp_ms: u64,
    forks: Vec<ForkPoint>,
    fork_seqs: Vec<u64>,
    missing: Vec<(u64, EntryId)>,
    off_view: IdMap<OffView>,
    proofs: usize,
    /// In (seq, id) order. Which record is an entry's: the entry index
    /// (`EntryIndex::record_on`).
    records: Vec<LiveRecord>,
    /// Accepts on view whose head is held on another chain (by that
    /// chain's slot): judged again when that chain changes.
    accepts_on: HashMap<u32, Vec<u32>>,
    /// Furthest accept per accepted chain: (seq, record).
    reach: HashMap<u32, (u64, u32)>,
    digest: Option<[u8; 32]>,
    /// The [`LiveMerge`] epoch at which something this chain's consensus
    /// depends on last changed: its view, an agent's reach on it, an open
    /// dispute of one of its entries. A cached consensus result computed at
    /// this epoch is still right.
    changed_at: u64,
}

impl LiveChain {
    /// No fork, gap, broken link, unknown payload or proof: every entry on
    /// the view. Only such a chain is extended in place.
    fn simple(&self) -> bool {
        self.off_view.is_empty()
            && self.missing.is_empty()
            && self.fork_seqs.is_empty()
            && self.forks.is_empty()
            && self.proofs == 0
            && self.view.len() as u64 == self.max_seq
            && self.len == self.max_seq
    }
    fn on_view(&self, index: &entry_index::EntryIndex, id: &EntryId, seq: u64) -> bool {
        self.view_id(index, seq).as_ref() == Some(id)
    }
    /// The id on the view at `seq`, if the view reaches it.
    fn view_id(&self, index: &entry_index::EntryIndex, seq: u64) -> Option<EntryId> {
        let r = *self.view.get(seq.checked_sub(1)? as usize)?;
        Some(index.id(r))
    }
    /// The last id on the view.
    fn head(&self, index: &entry_index::EntryIndex) -> Option<EntryId> {
        self.view.last().map(|&r| index.id(r))
    }
    fn frozen(&self) -> Option<&ForkPoint> {
        self.forks.last().filter(|f| !matches!(f.outcome, ForkOutcome::Resolved { .. }))
    }
}

/// What one call to [`LiveMerge::apply`] did, for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveApplied {
    /// Entries that extended their chain in place.
    pub extended: usize,
    /// Entries that added a branch at a frozen chain's fork in place.
    pub branched: usize,
    /// Chains derived again from their entries.
    pub rederived: usize,
    /// Signers whose merge events were all evaluated again.
    pub reevaluated: usize,
    /// (signer, chain) pairs whose accepts were judged again.
    pub rejudged: usize,
}

/// An update: entries newly held, fork proofs newly held, and the authors of
/// entries whose payload changed (filled in, redacted).
#[derive(Default)]
pub struct LiveUpdate {
    /// Newly held entries, any order.
    pub entries: Vec<MergeEntry>,
    /// Newly held fork proofs (their authors' chains are derived again).
    pub proofs: Vec<ForkProof>,
    /// Authors whose entries' payloads changed.
    pub changed: Vec<AgentId>,
}

/// The merged state of a growing set of entries, kept current. See the
/// module docs.
#[derive(Debug, Default)]
pub struct LiveMerge {
    chains: Vec<LiveChain>,
    by_author: BTreeMap<AgentId, u32>,
    index: entry_index::EntryIndex,
    /// Chain slot -> signers with accepts on it.
    referrers: HashMap<u32, BTreeSet<u32>>,
    /// Id not known -> signers whose evaluation looked it up.
    waiting: IdMap<BTreeSet<u32>>,
    /// Open disputes by target chain: (target seq, target) -> (disputer, dispute entry).
    open: HashMap<u32, OpenMarks>,
    view_hash: Option<[u8; 32]>,
    /// Counts changes (see `LiveChain::changed_at`); never goes back.
    epoch: u64,
    /// The consensus of the quorums asked for most recently, at most
    /// [`CONSENSUS_CACHED_MAX`], least recently asked first.
    consensus_cache: Vec<QuorumCache>,
}

/// A chain's view, seq 1 first, as [`LiveMerge::view_chain`] gives it. The
/// live state keeps each view as rows of its entry index (4 bytes an entry;
/// a second copy of each 32-byte id took 27 MB at a million entries), so
/// each id is read from the index as it is asked for.
#[derive(Clone, Copy)]
pub struct ViewChain<'a> {
    rows: &'a [u32],
    index: &'a entry_index::EntryIndex,
}

impl ViewChain<'_> {
    /// Entries on the view.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the view is empty.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The id at position `i` (seq `i + 1`).
    pub fn get(&self, i: usize) -> Option<EntryId> {
        self.rows.get(i).map(|&r| self.index.id(r))
    }

    /// The last id (the view's head).
    pub fn last(&self) -> Option<EntryId> {
        self.rows.last().map(|&r| self.index.id(r))
    }

    /// The ids, seq 1 first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = EntryId> + '_ {
        self.rows.iter().map(|&r| self.index.id(r))
    }

    /// The ids, seq 1 first, copied out (under one read of the arena).
    pub fn to_vec(&self) -> Vec<EntryId> {
        let ids = self.index.arena().read();
        self.rows.iter().map(|&r| ids.id(r)).collect()
    }
}

impl std::fmt::Debug for ViewChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Most quorums (agent set and k) whose consensus a [`LiveMerge`] keeps.
pub const CONSENSUS_CACHED_MAX: usize = 4;

/// One quorum's consensus, per chain slot: the epoch it was computed at and
/// the result.
#[derive(Debug)]
struct QuorumCache {
    agents: Vec<AgentId>,
    k: usize,
    per_slot: Vec<Option<(u64, Arc<ChainConsensus>)>>,
}

/// The entries of one author and the fork proofs of its chain: what the
/// caller hands over when a chain must be derived again.
pub type ChainInput = (Vec<MergeEntry>, Vec<ForkProof>);

impl LiveMerge {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The arena its entry ids are held in, shared with the graphs it plans.
    pub fn ids(&self) -> &Arc<IdArena> {
        self.index.arena()
    }

    /// The state of `entries` and `proofs`, computed once with
    /// [`Merge::compute`] (a node's start-up), then kept current by
    /// [`LiveMerge::apply`].
    pub fn from_entries(entries: &[MergeEntry], proofs: &[ForkProof]) -> Result<Self, InputError> {
        Self::from_entries_sharing(entries, proofs, Arc::default())
    }

    /// [`LiveMerge::from_entries`], its entry ids held in `ids`, an arena
    /// the node's other views share (each id held once). The graphs it
    /// plans (perspectives, the merged graph) hold their ids there too.
    pub fn from_entries_sharing(entries: &[MergeEntry], proofs: &[ForkProof], ids: Arc<IdArena>) -> Result<Self, InputError> {
        let m = Merge::chains_of(entries, proofs)?;
        let mut live = LiveMerge { index: entry_index::EntryIndex::sharing(ids), ..LiveMerge::default() };
        let mut proofs_by_author: HashMap<AgentId, usize> = HashMap::new();
        for p in proofs {
            *proofs_by_author.entry(p.author()).or_default() += 1;
        }
        let mut held: HashMap<AgentId, HashSet<EntryId>> = HashMap::new();
        for e in entries {
            held.entry(e.author()).or_default().insert(e.id());
        }
        for c in 0..m.chains.len() {
            let author = m.chains[c].author;
            let slot = live.chains.len() as u32;
            let n_held = held.get(&author).map_or(0, |s| s.len() as u64);
            let rows = live.index_chain(slot, &m, c);
            let chain = extract(&m, c, &rows, &mut live.index, proofs_by_author.get(&author).copied().unwrap_or(0), n_held);
            live.by_author.insert(author, slot);
            live.chains.push(chain);
        }
        for s in 0..live.chains.len() as u32 {
            live.evaluate(s);
        }
        Ok(live)
    }

    /// Take in an update. `chain_input(author)` must return every entry held
    /// of `author` (with what is known of its payload) and the fork proofs of
    /// its chain, the update included; it is called only for chains that
    /// cannot be extended in place.
    pub fn apply<E>(&mut self, update: LiveUpdate, mut chain_input: impl FnMut(&AgentId) -> Result<ChainInput, E>) -> Result<LiveApplied, E> {
        let mut done = LiveApplied::default();
        let mut rederive: BTreeSet<AgentId> = update.changed.iter().copied().collect();
        rederive.extend(update.proofs.iter().map(ForkProof::author));
        let mut by_author: BTreeMap<AgentId, Vec<MergeEntry>> = BTreeMap::new();
        for e in update.entries {
            by_author.entry(e.author()).or_default().push(e);
        }
        let mut new_ids: Vec<EntryId> = Vec::new();
        // Signers with records appended in place: (slot, first new record).
        let mut appended: BTreeMap<u32, usize> = BTreeMap::new();
        for (author, mut entries) in by_author {
            if rederive.contains(&author) {
                continue;
            }
            entries.sort_by_key(|e| (e.seq(), e.id()));
            // Whether the chain holds a fork resolution (asked once): a new
            // branch may be the one it names, and then settles the fork.
            let resolving = self
                .by_author
                .get(&author)
                .is_some_and(|&s| self.chains[s as usize].records.iter().any(|r| matches!(r.event, Some(MergeEvent::ForkResolution { .. }))));
            // Candidates added in place go after those held, sorted once.
            let sorted = self.by_author.get(&author).and_then(|&s| self.chains[s as usize].forks.last()).map(|f| f.candidates.len());
            for e in &entries {
                // Held already (queued twice while the view was rebuilt): a
                // simple chain holds every entry with its payload known.
                if let Some(loc) = self.index.get(&e.id())
                    && self.chains[loc.chain as usize].simple()
                {
                    continue;
                }
                match self.extend(e) {
                    Some((slot, first_record)) => {
                        done.extended += 1;
                        new_ids.push(e.id());
                        if let Some(r) = first_record {
                            appended.entry(slot).or_insert(r);
                        }
                    }
                    None if !resolving && self.add_branch(e) => {
                        done.branched += 1;
                        new_ids.push(e.id());
                    }
                    None => {
                        rederive.insert(author);
                        break;
                    }
                }
            }
            if let (Some(sorted), Some(&slot)) = (sorted, self.by_author.get(&author)) {
                self.sort_candidates(slot, sorted);
            }
        }
        let mut evaluate: BTreeSet<u32> = BTreeSet::new();
        let mut rederived: Vec<u32> = Vec::new();
        for author in &rederive {
            let (entries, proofs) = chain_input(author)?;
            let slot = self.rederive(author, &entries, &proofs, &mut new_ids);
            done.rederived += 1;
            evaluate.insert(slot);
            rederived.push(slot);
        }
        for id in &new_ids {
            if let Some(signers) = self.waiting.remove(id) {
                evaluate.extend(signers);
            }
        }
        for &s in &evaluate {
            self.evaluate(s);
            done.reevaluated += 1;
        }
        for (s, first) in appended {
            if !evaluate.contains(&s) {
                self.evaluate_from(s, first);
            }
        }
        for t in rederived {
            let signers: Vec<u32> = self.referrers.get(&t).map(|s| s.iter().copied().collect()).unwrap_or_default();
            for s in signers {
                if !evaluate.contains(&s) {
                    self.rejudge(s, t);
                    done.rejudged += 1;
                }
            }
        }
        Ok(done)
    }

    /// Extend a simple chain by `e` in place (or start a chain at seq 1).
    /// Returns the slot and, for a merge event, its record's index; `None`
    /// when `e` needs the chain derived again.
    fn extend(&mut self, e: &MergeEntry) -> Option<(u32, Option<usize>)> {
        if self.index.contains_key(&e.id()) {
            return None;
        }
        // A payload that never arrived: the view waits for it; derive the chain.
        let payload = match e.content() {
            agora_core::Content::Missing => return None,
            content => content.meaning(),
        };
        let event = payload.filter(|p| MergeEvent::is_merge_payload(p)).map(MergeEvent::decode);
        if matches!(event, Some(Ok(MergeEvent::ForkResolution { .. }))) {
            return None;
        }
        let slot = match self.by_author.get(&e.author()) {
            Some(&slot) => {
                let chain = &self.chains[slot as usize];
                let linked =
                    chain.simple() && e.seq() == chain.max_seq + 1 && e.backlink() == chain.head(&self.index) && e.timestamp_ms() >= chain.head_timestamp_ms;
                if !linked {
                    return None;
                }
                slot
            }
            None => {
                if e.seq() != 1 {
                    return None;
                }
                let slot = self.chains.len() as u32;
                self.chains.push(LiveChain { author: e.author(), ..LiveChain::default() });
                self.by_author.insert(e.author(), slot);
                slot
            }
        };
        self.epoch += 1;
        let chain = &mut self.chains[slot as usize];
        chain.len += 1;
        chain.held += 1;
        chain.max_seq = e.seq();
        let row = self.index.insert(e.id(), Loc { chain: slot, seq: e.seq() });
        chain.view.push(row);
        chain.head_timestamp_ms = e.timestamp_ms();
        chain.digest = None;
        chain.changed_at = self.epoch;
        self.view_hash = None;
        let Some(event) = event else { return Some((slot, None)) };
        let (event, base) = match event {
            Ok(ev) => (Some(ev), MergeStatus::OffView),
            Err(err) => (None, MergeStatus::Invalid(MergeRuleError::Decode(err))),
        };
        let r = chain.records.len();
        self.index.set_record(row, r as u32);
        chain.records.push(LiveRecord::new(row, event, base, true));
        Some((slot, Some(r)))
    }

    /// Add `e` in place as one more branch at the fork that freezes its
    /// chain: an entry at the fork's seq that continues the shared entry,
    /// with a known payload that is not a merge event, not named by any
    /// entry held (not a candidate already). Derived again, the chain would
    /// differ only in that: one more entry held, off the view, one more
    /// candidate of the fork (the view, the other forks, the fork seqs, the
    /// gaps and every record are as they were). Costs the candidates' copy,
    /// not a derivation from every entry held. False, and nothing changed,
    /// for any other entry.
    fn add_branch(&mut self, e: &MergeEntry) -> bool {
        if self.index.contains_key(&e.id()) {
            return false;
        }
        let Some(&slot) = self.by_author.get(&e.author()) else { return false };
        match e.content() {
            agora_core::Content::Missing => return false,
            content => {
                if content.meaning().is_some_and(MergeEvent::is_merge_payload) {
                    return false;
                }
            }
        }
        let chain = &self.chains[slot as usize];
        let Some(fork) = chain.frozen() else { return false };
        if !matches!(fork.outcome, ForkOutcome::Frozen) || e.seq() != fork.seq || chain.view.len() as u64 + 1 != fork.seq {
            return false;
        }
        let shared = chain.head(&self.index);
        // A candidate already is held (indexed) or named by an entry held.
        if shared != fork.shared || chain.missing.binary_search(&(e.seq(), e.id())).is_ok() || chain.fork_seqs.binary_search(&fork.seq).is_err() {
            return false;
        }
        // A child of the shared entry (seq 1 has no parent): linked, and not
        // broken by a timestamp before its parent's.
        if shared.is_some() && (e.backlink() != shared || e.timestamp_ms() < chain.head_timestamp_ms) {
            return false;
        }
        self.epoch += 1;
        let row = self.index.insert(e.id(), Loc { chain: slot, seq: e.seq() });
        self.index.set_record(row, entry_index::NO_RECORD);
        let chain = &mut self.chains[slot as usize];
        chain.len += 1;
        chain.held += 1;
        chain.max_seq = chain.max_seq.max(e.seq());
        chain.off_view.insert(e.id(), OffView { parent: shared, backlink: e.backlink(), rooted: true });
        if let Some(fork) = chain.forks.last_mut() {
            // Sorted with the others after the update's entries (`sort_candidates`).
            fork.candidates.push(e.id());
        }
        chain.digest = None;
        chain.changed_at = self.epoch;
        self.view_hash = None;
        true
    }

    /// Merge the candidates [`Self::add_branch`] appended to the last fork
    /// of chain `slot` (those from `sorted` on) into the sorted ones before:
    /// what they add, sorted, and one pass over the rest.
    fn sort_candidates(&mut self, slot: u32, sorted: usize) {
        let Some(fork) = self.chains[slot as usize].forks.last_mut() else { return };
        if fork.candidates.len() <= sorted {
            return;
        }
        let mut added = fork.candidates.split_off(sorted);
        added.sort_unstable();
        let held = std::mem::take(&mut fork.candidates);
        let mut merged = Vec::with_capacity(held.len() + added.len());
        let (mut a, mut b) = (held.into_iter().peekable(), added.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x <= y => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            merged.extend(next);
        }
        fork.candidates = merged;
    }

    /// Derive `author`'s chain again from all its entries and proofs.
    fn rederive(&mut self, author: &AgentId, entries: &[MergeEntry], proofs: &[ForkProof], new_ids: &mut Vec<EntryId>) -> u32 {
        let slot = match self.by_author.get(author) {
            Some(&s) => s,
            None => {
                let s = self.chains.len() as u32;
                self.chains.push(LiveChain { author: *author, ..LiveChain::default() });
                self.by_author.insert(*author, s);
                s
            }
        };
        self.unregister(slot);
        let own: Vec<MergeEntry> = entries.iter().filter(|e| e.author() == *author).cloned().collect();
        let own_proofs: Vec<ForkProof> = proofs.iter().filter(|p| p.author() == *author).cloned().collect();
        let held = own.iter().map(MergeEntry::id).collect::<HashSet<_>>().len() as u64;
        // Bounded like any merge input; past the limits the chain is left as
        // it was (an author cannot hold 16 million entries in one store).
        let Ok(m) = Merge::chains_of(&own, &own_proofs) else { return slot };
        let chain = match m.chains.first() {
            Some(_) => {
                for k in 0..m.items.len() {
                    let id = m.items[k].id();
                    if !self.index.contains_key(&id) {
                        new_ids.push(id);
                    }
                }
                let rows = self.index_chain(slot, &m, 0);
                extract(&m, 0, &rows, &mut self.index, own_proofs.len(), held)
            }
            None => LiveChain { author: *author, ..LiveChain::default() },
        };
        self.chains[slot as usize] = chain;
        self.view_hash = None;
        self.touch(slot);
        slot
    }

    /// Something chain `t`'s consensus depends on changed.
    fn touch(&mut self, t: u32) {
        self.epoch += 1;
        self.chains[t as usize].changed_at = self.epoch;
    }

    /// Index chain `c` of `m` in `slot`: each item's row, from the chain's
    /// first item on.
    fn index_chain(&mut self, slot: u32, m: &Merge<'_>, c: usize) -> Vec<u32> {
        let chain = &m.chains[c];
        (chain.start..chain.end)
            .map(|k| {
                let it = &m.items[k as usize];
                self.index.insert(it.id(), Loc { chain: slot, seq: it.seq() })
            })
            .collect()
    }

    /// Drop what signer `s`'s evaluation registered: its accepts with the
    /// chains they read, its open disputes.
    fn unregister(&mut self, s: u32) {
        let chain = &mut self.chains[s as usize];
        for t in chain.accepts_on.keys() {
            if let Some(set) = self.referrers.get_mut(t) {
                set.remove(&s);
            }
        }
        chain.accepts_on.clear();
        let mut touched: Vec<u32> = chain.reach.drain().map(|(t, _)| t).collect();
        let author = chain.author;
        for r in &chain.records {
            if let (Some(MergeEvent::Dispute { target, .. }), true) = (&r.event, r.applied())
                && let Some(loc) = self.index.get(target)
                && let Some(marks) = self.open.get_mut(&loc.chain)
                && let Some(by) = marks.get_mut(&(loc.seq, *target))
            {
                by.remove(&(author, self.index.id(r.row())));
                if by.is_empty() {
                    marks.remove(&(loc.seq, *target));
                }
                touched.push(loc.chain);
            }
        }
        for t in touched {
            self.touch(t);
        }
    }

    /// Evaluate every merge event of signer `s` from the start.
    fn evaluate(&mut self, s: u32) {
        self.unregister(s);
        let author = self.chains[s as usize].author;
        for r in 0..self.chains[s as usize].records.len() {
            let rec = &self.chains[s as usize].records[r];
            let mut status = rec.base();
            // A resolution whose branch is unknown to its own chain: foreign
            // if another chain holds it (the chain analysis sees one chain).
            if let (Some(MergeEvent::ForkResolution { continue_with, .. }), MergeStatus::Pending { missing }) = (&rec.event, &status)
                && continue_with == missing
            {
                match self.index.get(continue_with) {
                    Some(loc) if loc.chain != s => {
                        status = MergeStatus::Invalid(MergeRuleError::ResolutionForeign {
                            signer: author,
                            continue_with: *continue_with,
                            author: self.chains[loc.chain as usize].author,
                        });
                    }
                    Some(_) => {}
                    None => {
                        self.waiting.entry(*continue_with).or_default().insert(s);
                    }
                }
            }
            self.chains[s as usize].records[r].set_status(status);
        }
        self.evaluate_from(s, 0);
    }

    /// Evaluate signer `s`'s merge events from record `first` on, in seq
    /// order, over what the earlier ones did (as `Merge::evaluate_signer`).
    fn evaluate_from(&mut self, s: u32, first: usize) {
        let signer = self.chains[s as usize].author;
        for r in first..self.chains[s as usize].records.len() {
            let rec = &self.chains[s as usize].records[r];
            if !rec.on_view() {
                continue;
            }
            let status = match rec.event.clone() {
                Some(MergeEvent::Accept { author, up_to_seq, head }) => self.eval_accept(s, r as u32, signer, author, up_to_seq, head),
                Some(MergeEvent::Dispute { target, .. }) => self.eval_dispute(s, signer, target),
                Some(MergeEvent::Withdraw { dispute }) => self.eval_withdraw(s, r, signer, dispute),
                Some(MergeEvent::ForkResolution { .. }) | None => continue,
            };
            self.chains[s as usize].records[r].set_status(status);
        }
        // Open disputes: what is applied once every withdrawal is.
        for r in first..self.chains[s as usize].records.len() {
            let rec = &self.chains[s as usize].records[r];
            if let (Some(MergeEvent::Dispute { target, .. }), true) = (&rec.event, rec.applied())
                && let Some(loc) = self.index.get(target)
            {
                let t = loc.chain;
                self.open.entry(t).or_default().entry((loc.seq, *target)).or_default().insert((signer, self.index.id(rec.row())));
                self.touch(t);
            }
        }
        // A withdrawal may close a dispute recorded before `first`.
        if first > 0 {
            let mut touched: Vec<u32> = Vec::new();
            for r in first..self.chains[s as usize].records.len() {
                if let Some(MergeEvent::Withdraw { dispute }) = self.chains[s as usize].records[r].event
                    && self.chains[s as usize].records[r].applied()
                {
                    let d = &self.chains[s as usize];
                    if let Some(dr) = self.index.record_on(s, &dispute)
                        && let Some(MergeEvent::Dispute { target, .. }) = &d.records[dr as usize].event
                        && let Some(tloc) = self.index.get(target)
                        && let Some(marks) = self.open.get_mut(&tloc.chain)
                        && let Some(by) = marks.get_mut(&(tloc.seq, *target))
                    {
                        by.remove(&(signer, dispute));
                        if by.is_empty() {
                            marks.remove(&(tloc.seq, *target));
                        }
                        touched.push(tloc.chain);
                    }
                }
            }
            for t in touched {
                self.touch(t);
            }
        }
        self.chains[s as usize].digest = None;
        self.view_hash = None;
    }

    /// Judge the accepts of signer `s` on chain `t` again (`t` changed).
    fn rejudge(&mut self, s: u32, t: u32) {
        let signer = self.chains[s as usize].author;
        let records = self.chains[s as usize].accepts_on.get(&t).cloned().unwrap_or_default();
        self.chains[s as usize].reach.remove(&t);
        self.touch(t);
        for r in records {
            let Some(MergeEvent::Accept { author, up_to_seq, head }) = self.chains[s as usize].records[r as usize].event else { continue };
            let status = self.judge_and_reach(s, r, signer, author, up_to_seq, head, false);
            self.chains[s as usize].records[r as usize].set_status(status);
        }
        self.chains[s as usize].digest = None;
        self.view_hash = None;
    }

    fn eval_accept(&mut self, s: u32, r: u32, signer: AgentId, author: AgentId, up_to_seq: u64, head: EntryId) -> MergeStatus {
        self.judge_and_reach(s, r, signer, author, up_to_seq, head, true)
    }

    /// Judge one accept, count its reach, and (when `register`) note the
    /// chain it reads or the id it waits for.
    #[allow(clippy::too_many_arguments)]
    fn judge_and_reach(&mut self, s: u32, r: u32, signer: AgentId, author: AgentId, up_to_seq: u64, head: EntryId, register: bool) -> MergeStatus {
        let judged = self.judge_accept(signer, author, up_to_seq, head);
        let Some(t) = self.index.get(&head).map(|l| l.chain) else {
            // Not held: judged again when it arrives.
            if register {
                self.waiting.entry(head).or_default().insert(s);
            }
            return judged.err().unwrap_or(MergeStatus::Applied);
        };
        let counts = match &judged {
            Ok(seq) => Some(*seq),
            Err(MergeStatus::Clipped { effective_seq, .. }) => Some(*effective_seq),
            // A gap below the head, on chain `t`.
            Err(MergeStatus::Pending { .. }) => None,
            // A rule broken for good (the head's author and seq never change).
            Err(status) => return status.clone(),
        };
        // Held on chain `t` with the named author and seq: its judgment
        // follows `t`.
        if register {
            self.chains[s as usize].accepts_on.entry(t).or_default().push(r);
            self.referrers.entry(t).or_default().insert(s);
        }
        if let Some(effective) = counts
            && effective > 0
        {
            let f = self.chains[s as usize].reach.entry(t).or_insert((0, r));
            if effective > f.0 {
                *f = (effective, r);
            }
            self.touch(t);
        }
        match judged {
            Ok(_) => MergeStatus::Applied,
            Err(status) => status,
        }
    }

    /// As `Merge::judge_accept`: Ok(the seq it counts for).
    fn judge_accept(&self, signer: AgentId, author: AgentId, up_to_seq: u64, head: EntryId) -> Result<u64, MergeStatus> {
        if author == signer {
            return Err(MergeStatus::Invalid(MergeRuleError::SelfAccept(author)));
        }
        if up_to_seq == 0 {
            return Err(MergeStatus::Invalid(MergeRuleError::ZeroSeq));
        }
        let Some(loc) = self.index.get(&head) else { return Err(MergeStatus::Pending { missing: head }) };
        let chain = &self.chains[loc.chain as usize];
        if chain.author != author || loc.seq != up_to_seq {
            return Err(MergeStatus::Invalid(MergeRuleError::HeadMismatch { head, author, up_to_seq, found_author: chain.author, found_seq: loc.seq }));
        }
        if chain.on_view(&self.index, &head, loc.seq) {
            return Ok(up_to_seq);
        }
        let rooted = chain.off_view.get(&head).is_some_and(|o| o.rooted);
        if !rooted {
            return Err(MergeStatus::Pending { missing: missing_below(chain, head) });
        }
        let effective_seq = view_ancestor(&self.index, chain, head, loc.seq).unwrap_or(0);
        let fork_seq = effective_seq + 1;
        let rule = if effective_seq == chain.view.len() as u64 && chain.frozen().is_some() {
            MergeRuleError::CrossesFork { author, up_to_seq, fork_seq }
        } else {
            MergeRuleError::DroppedBranch { author, up_to_seq, fork_seq }
        };
        Err(MergeStatus::Clipped { effective_seq, rule })
    }

    fn eval_dispute(&mut self, s: u32, signer: AgentId, target: EntryId) -> MergeStatus {
        let Some(loc) = self.index.get(&target) else {
            self.waiting.entry(target).or_default().insert(s);
            return MergeStatus::Pending { missing: target };
        };
        if self.chains[loc.chain as usize].author == signer {
            return MergeStatus::Invalid(MergeRuleError::SelfDispute(target));
        }
        MergeStatus::Applied
    }

    fn eval_withdraw(&mut self, s: u32, r: usize, signer: AgentId, dispute: EntryId) -> MergeStatus {
        let Some(loc) = self.index.get(&dispute) else {
            self.waiting.entry(dispute).or_default().insert(s);
            return MergeStatus::Pending { missing: dispute };
        };
        let d_author = self.chains[loc.chain as usize].author;
        if d_author != signer {
            return MergeStatus::Invalid(MergeRuleError::NotOwnDispute { dispute, author: d_author });
        }
        let chain = &mut self.chains[s as usize];
        let withdraw_row = chain.records[r].row();
        let withdraw = (self.index.id(withdraw_row), self.index.seq(withdraw_row));
        let dr = self.index.record_on(s, &dispute).filter(|&dr| matches!(chain.records[dr as usize].event, Some(MergeEvent::Dispute { .. })));
        let Some(dr) = dr.filter(|_| chain.on_view(&self.index, &dispute, loc.seq) && loc.seq < withdraw.1) else {
            return MergeStatus::Invalid(MergeRuleError::NotADispute(dispute));
        };
        if let MergeStatus::Withdrawn { by } = chain.records[dr as usize].status(&self.index) {
            return MergeStatus::Invalid(MergeRuleError::AlreadyWithdrawn { dispute, by });
        }
        chain.records[dr as usize].set_withdrawn(withdraw_row);
        MergeStatus::Applied
    }
}

/// The first id missing below `id` (held, not rooted), as `Merge::missing_below`.
fn missing_below(chain: &LiveChain, id: EntryId) -> EntryId {
    let mut k = id;
    loop {
        let Some(o) = chain.off_view.get(&k) else { return k };
        match o.parent {
            Some(p) => k = p,
            None => return o.backlink.unwrap_or(k),
        }
    }
}

/// The seq of the deepest view entry that is `id` or an ancestor of it.
fn view_ancestor(index: &entry_index::EntryIndex, chain: &LiveChain, id: EntryId, seq: u64) -> Option<u64> {
    let (mut k, mut seq) = (id, seq);
    loop {
        if chain.on_view(index, &k, seq) {
            return Some(seq);
        }
        let o = chain.off_view.get(&k)?;
        k = o.parent?;
        seq -= 1;
    }
}

/// One chain of `m` as a [`LiveChain`], with its records' statuses from the
/// chain analysis (step 2); merge events are evaluated after.
fn extract(m: &Merge<'_>, c: usize, rows: &[u32], index: &mut entry_index::EntryIndex, proofs: usize, held: u64) -> LiveChain {
    let chain = &m.chains[c];
    let mut live = LiveChain {
        author: chain.author,
        len: chain.len() as u64,
        held,
        view: chain.view.iter().map(|&k| rows[(k - chain.start) as usize]).collect(),
        head_timestamp_ms: chain.view.last().map_or(0, |&k| m.items[k as usize].timestamp_ms),
        forks: chain.forks.clone(),
        fork_seqs: chain.fork_seqs.clone(),
        missing: chain.missing.clone(),
        proofs,
        ..LiveChain::default()
    };
    for k in chain.start..chain.end {
        let it = &m.items[k as usize];
        live.max_seq = live.max_seq.max(it.seq());
        if !it.on_view() {
            let parent = (it.parent != NONE).then(|| m.items[it.parent as usize].id());
            live.off_view.insert(it.id(), OffView { parent, backlink: it.signed.header().backlink, rooted: it.rooted() });
        }
        let row = rows[(k - chain.start) as usize];
        if it.record != NONE {
            let r = &m.records[it.record as usize];
            let base = match &r.event {
                Some(MergeEvent::Accept { .. } | MergeEvent::Dispute { .. } | MergeEvent::Withdraw { .. }) => MergeStatus::OffView,
                _ => r.status.clone(),
            };
            index.set_record(row, live.records.len() as u32);
            live.records.push(LiveRecord::new(row, r.event.clone(), base, it.on_view()));
        } else {
            // Derived again, an entry may have stopped being one (a residue
            // that is not a merge event).
            index.set_record(row, entry_index::NO_RECORD);
        }
    }
    // Built once, then extended one entry at a time: no room held for growth.
    live.records.shrink_to_fit();
    live
}

// Reads.
impl LiveMerge {
    fn chains_in_order(&self) -> impl Iterator<Item = &LiveChain> {
        self.by_author.values().map(|&s| &self.chains[s as usize]).filter(|c| c.len > 0)
    }

    /// The view hash, equal to [`Merge::view_hash`] over the same set.
    pub fn view_hash(&mut self) -> [u8; 32] {
        if let Some(h) = self.view_hash {
            return h;
        }
        let slots: Vec<u32> = self.by_author.values().copied().filter(|&s| self.chains[s as usize].len > 0).collect();
        for &s in &slots {
            if self.chains[s as usize].digest.is_none() {
                let d = agora_core::sha256(&self.chain_bytes(s));
                self.chains[s as usize].digest = Some(d);
            }
        }
        let digests = slots.iter().map(|&s| (self.chains[s as usize].author, self.chains[s as usize].digest.unwrap_or_default()));
        let h = agora_core::sha256(&view_bytes(digests.collect::<Vec<_>>().into_iter()));
        self.view_hash = Some(h);
        h
    }

    fn chain_bytes(&self, s: u32) -> Vec<u8> {
        let c = &self.chains[s as usize];
        let parts = ChainParts {
            author: &c.author,
            len: c.len,
            view_len: c.view.len() as u64,
            head: c.head(&self.index),
            forks: &c.forks,
            fork_seqs: &c.fork_seqs,
            missing: &c.missing,
        };
        let frontiers = self.frontiers_of(s);
        // Every record's id under one read of the arena: a chain holds
        // thousands, and the arena is shared with the node's other threads.
        let ids = self.index.arena().read();
        let id_of = |r: u32| ids.id(r);
        chain_bytes(
            &parts,
            c.records.iter().map(|r| (id_of(r.row()), r.status_in(id_of))),
            frontiers.iter().map(|(b, f)| (*b, f.seq, f.head)).collect::<Vec<_>>().into_iter(),
        )
    }

    /// Signer `s`'s frontiers, ascending by accepted author.
    fn frontiers_of(&self, s: u32) -> BTreeMap<AgentId, Frontier> {
        let c = &self.chains[s as usize];
        c.reach
            .iter()
            .filter_map(|(&t, &(seq, r))| {
                let target = &self.chains[t as usize];
                let head = target.view_id(&self.index, seq)?;
                Some((target.author, Frontier { seq, head, accept: self.index.id(c.records[r as usize].row()) }))
            })
            .collect()
    }

    /// Every accept frontier: (acceptor, author) → frontier, ascending.
    pub fn frontiers(&self) -> BTreeMap<(AgentId, AgentId), Frontier> {
        let mut out = BTreeMap::new();
        for (&a, &s) in &self.by_author {
            for (b, f) in self.frontiers_of(s) {
                out.insert((a, b), f);
            }
        }
        out
    }

    /// Every chain's summary in the published view (view length and head,
    /// fork state, who accepts how far), ascending by author: what
    /// [`Merge::merged_view`] holds in `chains`.
    pub fn chain_summaries(&self) -> Vec<crate::ChainSummary> {
        let mut accepted: BTreeMap<AgentId, Vec<(AgentId, u64)>> = BTreeMap::new();
        for ((acceptor, author), f) in self.frontiers() {
            accepted.entry(author).or_default().push((acceptor, f.seq));
        }
        self.chains_in_order()
            .map(|c| crate::ChainSummary {
                author: c.author,
                view_len: c.view.len() as u64,
                head: c.head(&self.index),
                frozen_at: c.frozen().map(|f| f.seq),
                resolved: c
                    .forks
                    .iter()
                    .filter_map(|f| match &f.outcome {
                        crate::ForkOutcome::Resolved { continue_with, .. } => Some((f.seq, *continue_with)),
                        _ => None,
                    })
                    .collect(),
                accepted_by: accepted.remove(&c.author).unwrap_or_default(),
            })
            .collect()
    }

    /// `agent`'s audit, equal to [`Merge::audit`] over every entry held.
    ///
    /// `chain` is what [`LiveMerge::apply`] asks for of `agent` (every entry
    /// held of it, with what is known of its payloads, and its chain's fork
    /// proofs). Its part of the audit (signatures, payload bindings and links
    /// checked again, gaps, detached entries, forks, proofs, its view's
    /// length) is computed from those alone: a chain's view depends on its
    /// own entries only. The merge events about it are read off the live
    /// state ([`LiveMerge::complete_audit`]). So an audit in a node costs the
    /// chain's length and a pass over the merge events held, not a
    /// recompute of every entry. (Entries of other authors in `chain` change
    /// nothing but the cost.)
    pub fn audit(&self, agent: &AgentId, chain: &ChainInput) -> Result<crate::views::Audit, InputError> {
        let (entries, proofs) = chain;
        let mut audit = Merge::compute(entries, proofs)?.audit(agent);
        self.complete_audit(&mut audit);
        Ok(audit)
    }

    /// Fill in the parts of `audit` (of its agent's chain alone, as
    /// `Merge::compute(chain).audit(agent)` gives it) that other chains
    /// decide: its resolutions, disputes and accepts with their status, the
    /// disputes of its events, the frontiers both ways. A node checks the
    /// chain without holding its live view, then completes the audit here.
    pub fn complete_audit(&self, audit: &mut crate::views::Audit) {
        let agent = &audit.agent;
        let record = |c: &LiveChain, r: &LiveRecord| MergeRecord {
            entry: self.index.id(r.row()),
            signer: c.author,
            seq: self.index.seq(r.row()),
            event: r.event.clone(),
            status: r.status(&self.index),
            item: NONE,
        };
        let own = self.by_author.get(agent).map(|&s| &self.chains[s as usize]).filter(|c| c.len > 0);
        let mine = |kind: fn(&MergeEvent) -> bool| -> Vec<MergeRecord> {
            own.map_or_else(Vec::new, |c| c.records.iter().filter(|r| r.event.as_ref().is_some_and(kind)).map(|r| record(c, r)).collect())
        };
        audit.resolutions = mine(|e| matches!(e, MergeEvent::ForkResolution { .. }));
        audit.disputes_made = mine(|e| matches!(e, MergeEvent::Dispute { .. }));
        audit.accepts_made = mine(|e| matches!(e, MergeEvent::Accept { .. }));
        let slot = self.by_author.get(agent).copied();
        audit.disputes_against = self
            .chains_in_order()
            .flat_map(|c| c.records.iter().map(move |r| (c, r)))
            .filter(|(_, r)| match &r.event {
                Some(MergeEvent::Dispute { target, .. }) => self.index.get(target).is_some_and(|l| Some(l.chain) == slot),
                _ => false,
            })
            .map(|(c, r)| record(c, r))
            .collect();
        audit.frontiers = slot.map_or_else(Vec::new, |s| self.frontiers_of(s).into_iter().collect());
        audit.accepted_by = self.chains_in_order().filter_map(|c| Some((c.author, self.frontier(&c.author, agent)?))).collect();
    }

    /// `acceptor`'s frontier on `author`'s chain.
    pub fn frontier(&self, acceptor: &AgentId, author: &AgentId) -> Option<Frontier> {
        let s = *self.by_author.get(acceptor)?;
        let t = *self.by_author.get(author)?;
        let &(seq, r) = self.chains[s as usize].reach.get(&t)?;
        let head = self.chains[t as usize].view_id(&self.index, seq)?;
        Some(Frontier { seq, head, accept: self.index.id(self.chains[s as usize].records[r as usize].row()) })
    }

    /// Every merge event held with its status, in (signer, seq, id) order:
    /// (entry, signer, seq, status).
    pub fn statuses(&self) -> Vec<(EntryId, AgentId, u64, MergeStatus)> {
        let ids = self.index.arena().read();
        let id_of = |r: u32| ids.id(r);
        self.chains_in_order().flat_map(|c| c.records.iter().map(move |r| (id_of(r.row()), c.author, self.index.seq(r.row()), r.status_in(id_of)))).collect()
    }

    /// Every author with a chain, ascending (the default n for a consensus).
    pub fn agents(&self) -> Vec<AgentId> {
        self.chains_in_order().map(|c| c.author).collect()
    }

    /// The view chain of `author`, seq 1 first (empty when unknown).
    pub fn view_chain(&self, author: &AgentId) -> ViewChain<'_> {
        let rows = self.by_author.get(author).map_or(&[][..], |&s| &self.chains[s as usize].view[..]);
        ViewChain { rows, index: &self.index }
    }

    /// Forks met along `author`'s view chain, in seq order.
    pub fn forks(&self, author: &AgentId) -> &[ForkPoint] {
        self.by_author.get(author).map_or(&[], |&s| &self.chains[s as usize].forks)
    }

    /// Distinct entries held (not counting those known only from a proof).
    pub fn entries_held(&self) -> u64 {
        self.chains.iter().map(|c| c.held).sum()
    }

    /// The author of a known entry.
    pub fn author_of(&self, id: &EntryId) -> Option<AgentId> {
        self.index.get(id).map(|l| self.chains[l.chain as usize].author)
    }

    /// Is this entry known (held, or carried by a proof)?
    pub fn contains(&self, id: &EntryId) -> bool {
        self.index.contains_key(id)
    }

    /// [`Merge::check`] on the live state: the same answer for a merge event
    /// `signer` is about to write, without recomputing the merge (a node
    /// checks `accept`, `dispute`, `withdraw` and `resolve-fork` this way).
    pub fn check(&self, signer: &AgentId, event: &MergeEvent) -> Result<(), MergeRuleError> {
        event.check_limits().map_err(MergeRuleError::Decode)?;
        let own = self.by_author.get(signer).map(|&s| &self.chains[s as usize]);
        if !matches!(event, MergeEvent::ForkResolution { .. })
            && let Some(f) = own.and_then(LiveChain::frozen)
        {
            return Err(MergeRuleError::SignerForked { author: *signer, fork_seq: f.seq });
        }
        let known = |id: &EntryId, what: &'static str| self.index.get(id).ok_or(MergeRuleError::UnknownEntry { what, id: *id });
        match event {
            MergeEvent::Accept { author, up_to_seq, head } => match self.judge_accept(*signer, *author, *up_to_seq, *head) {
                Ok(_) => Ok(()),
                Err(MergeStatus::Clipped { rule, .. } | MergeStatus::Invalid(rule)) => Err(rule),
                Err(_) => Err(MergeRuleError::BeyondHead { author: *author, up_to_seq: *up_to_seq, head_seq: self.view_chain(author).len() as u64 }),
            },
            MergeEvent::Dispute { target, .. } => {
                let loc = known(target, "dispute target")?;
                if self.chains[loc.chain as usize].author == *signer {
                    return Err(MergeRuleError::SelfDispute(*target));
                }
                let open =
                    own.and_then(|c| c.records.iter().find(|r| r.applied() && matches!(&r.event, Some(MergeEvent::Dispute { target: t, .. }) if t == target)));
                match open {
                    Some(r) => Err(MergeRuleError::AlreadyDisputed { target: *target, dispute: self.index.id(r.row()) }),
                    None => Ok(()),
                }
            }
            MergeEvent::Withdraw { dispute } => {
                let loc = known(dispute, "dispute")?;
                let chain = &self.chains[loc.chain as usize];
                if chain.author != *signer {
                    return Err(MergeRuleError::NotOwnDispute { dispute: *dispute, author: chain.author });
                }
                let record = self.index.record_on(loc.chain, dispute).map(|r| &chain.records[r as usize]);
                match record {
                    Some(r) if matches!(r.event, Some(MergeEvent::Dispute { .. })) && chain.on_view(&self.index, dispute, loc.seq) => {
                        match r.status(&self.index) {
                            MergeStatus::Withdrawn { by } => Err(MergeRuleError::AlreadyWithdrawn { dispute: *dispute, by }),
                            _ => Ok(()),
                        }
                    }
                    _ => Err(MergeRuleError::NotADispute(*dispute)),
                }
            }
            MergeEvent::ForkResolution { fork_number, fork_seq, continue_with } => {
                let loc = known(continue_with, "branch to continue")?;
                let author = self.chains[loc.chain as usize].author;
                if author != *signer {
                    return Err(MergeRuleError::ResolutionForeign { signer: *signer, continue_with: *continue_with, author });
                }
                if loc.seq != *fork_seq {
                    return Err(MergeRuleError::ResolutionSeq { continue_with: *continue_with, fork_seq: *fork_seq, found_seq: loc.seq });
                }
                let previous = own
                    .map(|c| {
                        c.records
                            .iter()
                            .filter_map(|r| match r.event {
                                Some(MergeEvent::ForkResolution { fork_number, .. }) => Some(fork_number),
                                _ => None,
                            })
                            .max()
                            .unwrap_or(0)
                    })
                    .unwrap_or(0);
                if *fork_number <= previous {
                    return Err(MergeRuleError::ForkNumberNotIncreasing { fork_number: *fork_number, previous });
                }
                let decides = own.and_then(|c| c.forks.iter().find(|f| f.seq == *fork_seq)).is_some_and(|f| f.candidates.contains(continue_with));
                if !decides {
                    return Err(MergeRuleError::NoFork { author: *signer, fork_seq: *fork_seq });
                }
                Ok(())
            }
        }
    }

    /// Where a known entry is: its author and seq.
    pub fn locate(&self, id: &EntryId) -> Option<(AgentId, u64)> {
        self.index.get(id).map(|l| (self.chains[l.chain as usize].author, l.seq))
    }

    /// Is this known entry a merge event (its payload, or residue, one)?
    pub fn is_merge_event(&self, id: &EntryId) -> bool {
        self.index.get(id).is_some_and(|l| self.index.record_on(l.chain, id).is_some())
    }

    /// `agent`'s open disputes (status applied), as marks, in (target,
    /// dispute) order: what [`LiveMerge::open_disputes`] holds of one
    /// disputer, reading only its own merge events.
    pub fn open_disputes_by(&self, agent: &AgentId) -> Vec<DisputeMark> {
        let Some(&s) = self.by_author.get(agent) else { return Vec::new() };
        let c = &self.chains[s as usize];
        let mut out: Vec<DisputeMark> = c
            .records
            .iter()
            .filter_map(|r| match (&r.event, r.applied()) {
                (Some(MergeEvent::Dispute { target, reason, counter_claim }), true) => Some(DisputeMark {
                    dispute: self.index.id(r.row()),
                    by: c.author,
                    target: *target,
                    reason: reason.clone(),
                    counter_claim: counter_claim.clone(),
                }),
                _ => None,
            })
            .collect();
        out.sort_by_key(|a| (a.target, a.by, a.dispute));
        out
    }

    /// The open disputes of one event, as marks, in (disputer, dispute)
    /// order: its chain's index of open disputes, then each disputer's
    /// record; no walk over the other disputes held.
    pub fn open_disputes_of(&self, target: &EntryId) -> Vec<DisputeMark> {
        let Some(loc) = self.index.get(target) else { return Vec::new() };
        let Some(by) = self.open.get(&loc.chain).and_then(|marks| marks.get(&(loc.seq, *target))) else { return Vec::new() };
        by.iter()
            .filter_map(|&(disputer, dispute)| {
                let chain = &self.chains[*self.by_author.get(&disputer)? as usize];
                chain.records.iter().find(|r| self.index.id(r.row()) == dispute).and_then(|r| match &r.event {
                    Some(MergeEvent::Dispute { reason, counter_claim, .. }) => {
                        Some(DisputeMark { dispute, by: disputer, target: *target, reason: reason.clone(), counter_claim: counter_claim.clone() })
                    }
                    _ => None,
                })
            })
            .collect()
    }

    /// Open disputes (status applied), as marks, in (target, disputer, dispute) order.
    pub fn open_disputes(&self) -> Vec<DisputeMark> {
        let mut out = Vec::new();
        for c in self.chains_in_order() {
            for r in &c.records {
                if let (Some(MergeEvent::Dispute { target, reason, counter_claim }), true) = (&r.event, r.applied()) {
                    out.push(DisputeMark {
                        dispute: self.index.id(r.row()),
                        by: c.author,
                        target: *target,
                        reason: reason.clone(),
                        counter_claim: counter_claim.clone(),
                    });
                }
            }
        }
        out.sort_by_key(|a| (a.target, a.by, a.dispute));
        out
    }

    /// Consensus with quorum `k` of `agents`, as [`Merge::consensus`].
    ///
    /// Each chain's result is kept for the last [`CONSENSUS_CACHED_MAX`]
    /// quorums asked for and computed again only when something it depends
    /// on changed (`LiveChain::changed_at`): after one arrival, asking again
    /// costs the chains it touched, not the disputes of the whole history.
    pub fn consensus(&mut self, agents: &[AgentId], k: usize) -> Result<Consensus, ConsensusError> {
        let agents = counted_agents(agents, k)?;
        let at = self.consensus_cache.iter().position(|q| q.k == k && q.agents == agents);
        let mut cache = match at {
            Some(i) => self.consensus_cache.remove(i),
            None => QuorumCache { agents: agents.clone(), k, per_slot: Vec::new() },
        };
        cache.per_slot.resize(self.chains.len(), None);
        let counted_ids: HashSet<AgentId> = agents.iter().copied().collect();
        let mut chains = Vec::with_capacity(self.chains.len());
        for (&author, &t) in &self.by_author {
            let chain = &self.chains[t as usize];
            if chain.len == 0 {
                continue;
            }
            let result = match &cache.per_slot[t as usize] {
                Some((at, result)) if *at == chain.changed_at => result.clone(),
                _ => {
                    let result = Arc::new(self.chain_consensus(author, t, &agents, &counted_ids, k));
                    cache.per_slot[t as usize] = Some((chain.changed_at, result.clone()));
                    result
                }
            };
            chains.push(result);
        }
        self.consensus_cache.push(cache);
        if self.consensus_cache.len() > CONSENSUS_CACHED_MAX {
            self.consensus_cache.remove(0);
        }
        Ok(Consensus { quorum: k, agents, chains })
    }

    /// Consensus on the chain in slot `t` (of `author`).
    fn chain_consensus(&self, author: AgentId, t: u32, agents: &[AgentId], counted_ids: &HashSet<AgentId>, k: usize) -> ChainConsensus {
        let chain = &self.chains[t as usize];
        let view_len = chain.view.len() as u64;
        let mut frontiers: Vec<(AgentId, u64)> = Vec::new();
        for a in agents {
            let f = if *a == author { view_len } else { self.by_author.get(a).and_then(|&s| self.chains[s as usize].reach.get(&t)).map_or(0, |&(seq, _)| seq) };
            if f > 0 {
                frontiers.push((*a, f));
            }
        }
        let mut disputed: Vec<DisputedEvent> = self
            .open
            .get(&t)
            .map(|marks| {
                marks
                    .iter()
                    .filter_map(|(&(seq, target), by)| {
                        let mut by: Vec<(AgentId, EntryId)> = by.iter().filter(|(a, _)| counted_ids.contains(a)).copied().collect();
                        // Kept while the chain does not change, for every
                        // quorum cached: exactly as long as it is (a
                        // collected filter starts at room for four 64-byte
                        // pairs, and most targets have one disputer).
                        by.shrink_to_fit();
                        (!by.is_empty()).then(|| DisputedEvent { target, seq, on_view: chain.on_view(&self.index, &target, seq), by })
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        disputed.shrink_to_fit();
        frontiers.shrink_to_fit();
        let accepted = accepted_prefix(&frontiers, &disputed, k);
        let first_disputed = disputed.iter().find(|d| d.on_view).map(|d| (d.seq, d.target));
        ChainConsensus {
            author,
            view_len,
            frozen_at: chain.frozen().map(|f| f.seq),
            accepted_seq: accepted,
            accepted_head: chain.view_id(&self.index, accepted),
            frontiers,
            disputed,
            first_disputed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Disputers;
    use agora_core::{AgentId, EntryId};

    /// A target's disputers stay a sorted set whatever the order of
    /// inserts and removals, as the `BTreeSet` they replace did.
    #[test]
    fn disputers_are_a_sorted_set() {
        let pair = |a: u8, d: u8| (AgentId([a; 32]), EntryId([d; 32]));
        let mut set = Disputers::default();
        let mut model = std::collections::BTreeSet::new();
        let mut x: u32 = 7;
        for _ in 0..2_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let p = pair((x >> 8) as u8 % 5, (x >> 16) as u8 % 7);
            if x & 1 == 0 {
                assert_eq!(set.insert(p), model.insert(p));
            } else {
                assert_eq!(set.remove(&p), model.remove(&p));
            }
            assert_eq!(set.iter().copied().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            assert_eq!(set.is_empty(), model.is_empty());
        }
    }
}
