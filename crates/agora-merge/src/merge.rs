//! The merge computation: chains, forks, and what every merge event did.
//!
//! [`Merge::compute`] is a pure function of a *set* of entries and fork
//! proofs: it sorts them into canonical order first, so two nodes holding the
//! same set compute the same [`Merge`] (and the same [`Merge::view_hash`])
//! whatever order the entries arrived in.
//!
//! Steps, each over the result of the one before:
//! 1. index: every entry (held, or carried by a proof) once, by (author, seq, id);
//! 2. chains: per author, links to held predecessors, the rooted tree, every
//!    seq where two entries are known (a fork), fork resolutions, and the
//!    *view chain*: the path from seq 1 that views follow, frozen at the last
//!    entry both branches share when a fork is unresolved;
//! 3. merge events on each signer's view chain, in seq order: accepts
//!    (frontiers), disputes, withdrawals.

use crate::input::{InputError, MERGE_ENTRIES_MAX, MERGE_PROOFS_MAX, MergeEntry};
use crate::payload::MergeEvent;
use crate::rules::{MergeRuleError, MergeStatus};
use agora_core::{AgentId, EntryId, ForkProof, SignedEntry};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

pub(crate) const NONE: u32 = u32::MAX;
const ROOTED: u8 = 1;
const ON_VIEW: u8 = 2;
const BROKEN: u8 = 4;
/// The item's meaning is a residue (redacted here), not a checked payload.
const REDACTED: u8 = 8;
/// The item's payload never arrived: its meaning is unknown (pending).
const MISSING: u8 = 16;

/// Maps keyed by entry ids (hashed by their first bytes, see `agora_core::idmap`).
pub(crate) type IdMap<V> = agora_core::idmap::IdMap<EntryId, V>;

/// Chain indexes (small integers) hashed by one multiplication.
#[derive(Default)]
pub(crate) struct ChainHasher(u64);

impl Hasher for ChainHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type ChainMap<V> = HashMap<u32, V, BuildHasherDefault<ChainHasher>>;

fn id_hash(id: &EntryId) -> u64 {
    agora_core::idmap::id_hash(id.as_bytes())
}

/// Item positions by entry id. Only the `u32` position is stored (the id is
/// read from the entry), so the table of a million entries is about 5 MB
/// instead of 46 and mostly stays in cache while it is built.
#[derive(Default)]
pub(crate) struct IdIndex {
    table: hashbrown::HashTable<u32>,
}

/// One known entry, by position in [`Merge`]'s canonical order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'a> {
    pub(crate) signed: &'a SignedEntry,
    pub(crate) payload: Option<&'a [u8]>,
    /// The header's seq (read often; the header is behind a pointer).
    seq: u64,
    /// The header's timestamp (log order, for replays).
    pub(crate) timestamp_ms: u64,
    /// Index into [`Merge::chains`].
    pub(crate) author: u32,
    /// The held predecessor this entry links to, or [`NONE`].
    pub(crate) parent: u32,
    /// Index into the merge records, or [`NONE`] for other payloads.
    pub(crate) record: u32,
    flags: u8,
}

impl Item<'_> {
    pub(crate) fn id(&self) -> EntryId {
        self.signed.id()
    }
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }
    pub(crate) fn rooted(&self) -> bool {
        self.flags & ROOTED != 0
    }
    pub(crate) fn on_view(&self) -> bool {
        self.flags & ON_VIEW != 0
    }
    pub(crate) fn broken(&self) -> bool {
        self.flags & BROKEN != 0
    }
    /// Its payload never arrived.
    pub(crate) fn missing(&self) -> bool {
        self.flags & MISSING != 0
    }
    /// What the node knows of the payload, as the views read it.
    pub(crate) fn content(&self) -> agora_core::Content<'_> {
        match (self.flags & (REDACTED | MISSING), self.payload) {
            (MISSING, _) => agora_core::Content::Missing,
            (REDACTED, p) => agora_core::Content::Redacted(p),
            (_, Some(p)) => agora_core::Content::Held(p),
            (_, None) => agora_core::Content::Redacted(None),
        }
    }
    /// Among copies of one entry, the most informative first: held, then a
    /// residue, then a redaction without one, then missing.
    fn knowledge_rank(&self) -> u8 {
        match self.content() {
            agora_core::Content::Held(_) => 0,
            agora_core::Content::Redacted(Some(_)) => 1,
            agora_core::Content::Redacted(None) => 2,
            agora_core::Content::Missing => 3,
        }
    }
}

/// How a fork on a view chain was settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForkOutcome {
    /// No valid resolution: the chain is frozen at the shared entry.
    Frozen,
    /// The author's highest-numbered valid resolution names the branch.
    Resolved {
        /// The resolution entry (the first, by id, if several say the same).
        resolution: EntryId,
        /// Its fork number.
        fork_number: u64,
        /// The entry at the fork seq on the kept branch.
        continue_with: EntryId,
    },
    /// Resolutions with the same highest number name different branches: the
    /// author equivocated about the resolution too. Frozen.
    Conflicting {
        /// The conflicting resolution entries, by id.
        resolutions: Vec<EntryId>,
    },
}

/// A fork met while following a chain from seq 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkPoint {
    /// The first seq with more than one known entry after `shared`.
    pub seq: u64,
    /// The last entry both branches share (`None`: they part at seq 1).
    pub shared: Option<EntryId>,
    /// Every entry known at `seq` that may continue `shared`: held children,
    /// and ids that later entries name as predecessor but that are not held.
    pub candidates: Vec<EntryId>,
    /// How it was settled.
    pub outcome: ForkOutcome,
}

/// One author's chain as the merge layer sees it.
#[derive(Clone, Debug)]
pub struct Chain {
    /// The author.
    pub author: AgentId,
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// Item positions of the view chain: `view[i]` is at seq `i + 1`.
    pub(crate) view: Vec<u32>,
    /// Forks met along the view chain, in seq order; the last one is the
    /// freeze point if its outcome is not `Resolved`.
    pub forks: Vec<ForkPoint>,
    /// Every seq at which two or more entries of this author are known
    /// (held, carried by a proof, or named as a predecessor), plus the seq of
    /// every fork proof given, anywhere in the tree.
    pub fork_seqs: Vec<u64>,
    /// Ids named as predecessors that are not held (the chain has gaps below
    /// the entries that name them).
    pub missing: Vec<(u64, EntryId)>,
}

impl Chain {
    /// Entries held of this author (including entries carried by fork proofs).
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }
    /// Never true for a chain in a [`Merge`] (authors appear with their entries).
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
    /// Length of the view chain (its head's seq; 0 when empty).
    pub fn view_len(&self) -> u64 {
        self.view.len() as u64
    }
    /// The fork that freezes this chain, if it is frozen.
    pub fn frozen(&self) -> Option<&ForkPoint> {
        self.forks.last().filter(|f| !matches!(f.outcome, ForkOutcome::Resolved { .. }))
    }
}

/// A merge event and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeRecord {
    /// The entry carrying it.
    pub entry: EntryId,
    /// Who signed it.
    pub signer: AgentId,
    /// Its seq on the signer's chain.
    pub seq: u64,
    /// The event, when the payload decodes.
    pub event: Option<MergeEvent>,
    /// Its status.
    pub status: MergeStatus,
    pub(crate) item: u32,
}

/// An agent's accept frontier on one chain: the last seq its accepts count for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frontier {
    /// Last seq accepted (≥ 1).
    pub seq: u64,
    /// The view chain's entry at that seq.
    pub head: EntryId,
    /// The accept that reaches furthest (the first, by seq, if several tie).
    pub accept: EntryId,
}

/// The merged state of a set of entries. See the module docs.
pub struct Merge<'a> {
    pub(crate) items: Vec<Item<'a>>,
    pub(crate) by_id: IdIndex,
    pub(crate) chains: Vec<Chain>,
    pub(crate) chain_index: HashMap<AgentId, u32>,
    pub(crate) records: Vec<MergeRecord>,
    pub(crate) proofs: Vec<&'a ForkProof>,
    /// (acceptor, author) -> frontier.
    pub(crate) frontiers: BTreeMap<(AgentId, AgentId), Frontier>,
    /// Open disputes: (target item, record), sorted by target item.
    pub(crate) open_disputes: Vec<(u32, u32)>,
    /// Accepts whose head is past a fork: (head item, record).
    pub(crate) branch_accepts: Vec<(u32, u32)>,
}

impl<'a> Merge<'a> {
    /// Compute the merged state of `entries` plus the entries carried by
    /// `proofs` (each already checked: see [`crate::decode_fork_proof`]).
    /// Duplicates (by id) count once. Order does not matter.
    pub fn compute(entries: &'a [MergeEntry], proofs: &'a [ForkProof]) -> Result<Self, InputError> {
        crate::input::check_reasoning_held(entries)?;
        let mut m = Self::chains_of(entries, proofs)?;
        let outcomes = m.evaluate_signers();
        m.settle(outcomes);
        Ok(m)
    }

    /// Steps 1 and 2: the entries indexed, each chain's tree, forks and view chain.
    pub(crate) fn chains_of(entries: &'a [MergeEntry], proofs: &'a [ForkProof]) -> Result<Self, InputError> {
        if entries.len() > MERGE_ENTRIES_MAX {
            return Err(InputError::TooMany { what: "entries", len: entries.len(), max: MERGE_ENTRIES_MAX });
        }
        if proofs.len() > MERGE_PROOFS_MAX {
            return Err(InputError::TooMany { what: "fork proofs", len: proofs.len(), max: MERGE_PROOFS_MAX });
        }
        let mut m = Merge {
            items: Vec::new(),
            by_id: IdIndex::default(),
            chains: Vec::new(),
            chain_index: HashMap::new(),
            records: Vec::new(),
            proofs: proofs.iter().collect(),
            frontiers: BTreeMap::new(),
            open_disputes: Vec::new(),
            branch_accepts: Vec::new(),
        };
        m.index(entries, proofs);
        let mut proof_seqs: Vec<(AgentId, u64)> = proofs.iter().map(|p| (p.author(), p.seq())).collect();
        proof_seqs.sort_unstable();
        proof_seqs.dedup();
        for c in 0..m.chains.len() {
            let author = m.chains[c].author;
            let lo = proof_seqs.partition_point(|(a, _)| *a < author);
            let hi = proof_seqs.partition_point(|(a, _)| *a <= author);
            let seqs: Vec<u64> = proof_seqs[lo..hi].iter().map(|(_, s)| *s).collect();
            m.analyse_chain(c, &seqs);
        }
        Ok(m)
    }

    /// Step 3, the reading half: what each signer's merge events do, one
    /// signer per task.
    fn evaluate_signers(&self) -> Vec<SignerOutcome> {
        (0..self.chains.len()).into_par_iter().map(|c| self.evaluate_signer(c)).collect()
    }

    /// Step 3, the writing half: statuses, frontiers and open disputes.
    pub(crate) fn settle(&mut self, outcomes: Vec<SignerOutcome>) {
        self.apply(outcomes);
        self.open_disputes.retain(|&(_, r)| self.records[r as usize].status == MergeStatus::Applied);
        self.open_disputes.sort_unstable();
        self.branch_accepts.sort_unstable();
    }

    /// Step 1: every entry once, in (author, seq, id) order, indexed by id.
    fn index(&mut self, entries: &'a [MergeEntry], proofs: &'a [ForkProof]) {
        let item = |signed: &'a SignedEntry, content: agora_core::Content<'a>| Item {
            signed,
            payload: content.meaning(),
            seq: signed.header().seq,
            timestamp_ms: signed.header().timestamp_ms,
            author: 0,
            parent: NONE,
            record: NONE,
            flags: match content {
                agora_core::Content::Held(_) => 0,
                agora_core::Content::Redacted(r) => REDACTED * u8::from(r.is_some()),
                agora_core::Content::Missing => MISSING,
            },
        };
        // A store hands its entries over in canonical order, so first each
        // entry is checked against the one before, deduplicated and linked in
        // one pass, while its header is in cache. Only if the order breaks
        // (or there are fork proofs, whose entries go among the others) is
        // everything collected, sorted and linked after.
        let mut items: Vec<Item<'a>> = Vec::with_capacity(entries.len() + 2 * proofs.len());
        let mut linker = Linker::new(entries.len());
        let mut ordered = proofs.is_empty();
        if ordered {
            for e in entries {
                let it = item(e.signed(), e.content());
                if let Some(prev) = items.last() {
                    if !in_order(prev, &it) {
                        ordered = false;
                        break;
                    }
                    if is_duplicate(&it, prev) {
                        continue;
                    }
                }
                items.push(it);
                linker.step(self, &mut items);
            }
        }
        if !ordered {
            self.chains.clear();
            self.chain_index.clear();
            let mut unsorted = std::mem::take(&mut items);
            unsorted.clear();
            unsorted.extend(entries.iter().map(|e| item(e.signed(), e.content())));
            for p in proofs {
                // Known from the proof alone: their payloads are unknown.
                let (a, b) = p.entries();
                unsorted.push(item(a, agora_core::Content::Missing));
                unsorted.push(item(b, agora_core::Content::Missing));
            }
            let mut sorted = canonical_order(unsorted);
            sorted.dedup_by(|later, earlier| is_duplicate(later, earlier));
            linker = Linker::new(sorted.len());
            items = Vec::with_capacity(sorted.len());
            for it in sorted {
                items.push(it);
                linker.step(self, &mut items);
            }
        }
        let (by_id, merge_items) = linker.finish(self, &items);
        // Merge payloads decoded in parallel, kept in item order. (Decoding
        // them beside the pass above was measured no faster: both are bound
        // by memory, not by the processor.)
        self.records = merge_items
            .par_iter()
            .with_min_len(1024)
            .map(|&i| {
                let it = &items[i as usize];
                decode_record(it.signed, it.payload.unwrap_or_default(), i as usize)
            })
            .collect();
        self.items = items;
        self.by_id = by_id;
    }

    fn push_chain(&mut self, author: AgentId, start: usize, end: usize, missing: Vec<(u64, EntryId)>) {
        self.chain_index.insert(author, self.chains.len() as u32);
        self.chains.push(Chain { author, start: start as u32, end: end as u32, view: Vec::new(), forks: Vec::new(), fork_seqs: Vec::new(), missing });
    }

    /// Step 2 for one author. `proof_seqs`: seqs of the fork proofs given for it.
    fn analyse_chain(&mut self, c: usize, proof_seqs: &[u64]) {
        let (start, end) = (self.chains[c].start as usize, self.chains[c].end as usize);
        let author = self.chains[c].author;
        let mut missing = std::mem::take(&mut self.chains[c].missing);
        missing.sort_unstable();
        missing.dedup();
        // Seqs with two or more known entries: two held, or a held one and an
        // id named as predecessor (never the held one: that would have linked),
        // or two named ones.
        let mut fork_seqs: Vec<u64> = proof_seqs.to_vec();
        for i in start + 1..end {
            if self.items[i].seq() == self.items[i - 1].seq() {
                fork_seqs.push(self.items[i].seq());
            }
        }
        for (k, &(seq, _)) in missing.iter().enumerate() {
            let p = start + self.items[start..end].partition_point(|it| it.seq() < seq);
            let held = p < end && self.items[p].seq() == seq;
            if held || (k > 0 && missing[k - 1].0 == seq) {
                fork_seqs.push(seq);
            }
        }
        fork_seqs.sort_unstable();
        fork_seqs.dedup();

        let resolutions = self.check_resolutions(start, end, author);
        self.walk_view(c, &missing, &resolutions);
        let chain = &mut self.chains[c];
        chain.fork_seqs = fork_seqs;
        chain.missing = missing;
    }

    /// Validate the author's fork resolutions that are in its rooted tree.
    /// Returns the valid ones as (record, fork number, fork seq, continue_with item).
    fn check_resolutions(&mut self, start: usize, end: usize, author: AgentId) -> Vec<(u32, u64, u64, u32)> {
        let is_resolution = |r: u32, records: &[MergeRecord]| r != NONE && matches!(records[r as usize].event, Some(MergeEvent::ForkResolution { .. }));
        if !(start..end).any(|i| is_resolution(self.items[i].record, &self.records)) {
            return Vec::new();
        }
        // Highest fork number signed on each entry's ancestry, excluding itself.
        let mut before = vec![0u64; end - start];
        let own_number = |it: &Item<'_>, records: &[MergeRecord]| match it.record {
            NONE => 0,
            r => match records[r as usize].event {
                Some(MergeEvent::ForkResolution { fork_number, .. }) => fork_number,
                _ => 0,
            },
        };
        // The first ancestor whose payload never arrived: it may be a
        // resolution with a higher number, so nothing after it can be judged.
        let mut unknown_before: Vec<Option<EntryId>> = vec![None; end - start];
        let mut valid = Vec::new();
        for i in start..end {
            let it = self.items[i];
            if it.parent != NONE {
                let p = it.parent as usize;
                before[i - start] = before[p - start].max(own_number(&self.items[p], &self.records));
                let parent = &self.items[p];
                unknown_before[i - start] = unknown_before[p - start].or_else(|| parent.missing().then(|| parent.id()));
            }
            if !is_resolution(it.record, &self.records) || !it.rooted() {
                continue;
            }
            let r = it.record as usize;
            let Some(MergeEvent::ForkResolution { fork_number, fork_seq, continue_with }) = self.records[r].event.clone() else { continue };
            let status = match self.lookup(&continue_with) {
                _ if unknown_before[i - start].is_some() => MergeStatus::Pending { missing: unknown_before[i - start].unwrap_or(continue_with) },
                None => MergeStatus::Pending { missing: continue_with },
                Some(t) => {
                    let h = self.items[t as usize].signed.header();
                    if h.author != author {
                        MergeStatus::Invalid(MergeRuleError::ResolutionForeign { signer: author, continue_with, author: h.author })
                    } else if h.seq != fork_seq {
                        MergeStatus::Invalid(MergeRuleError::ResolutionSeq { continue_with, fork_seq, found_seq: h.seq })
                    } else if fork_number <= before[i - start] {
                        MergeStatus::Invalid(MergeRuleError::ForkNumberNotIncreasing { fork_number, previous: before[i - start] })
                    } else {
                        valid.push((r as u32, fork_number, fork_seq, t));
                        MergeStatus::Idle
                    }
                }
            };
            self.records[r].status = status;
        }
        valid
    }

    /// Follow the chain from seq 1; stop at its head, or freeze at an
    /// unresolved fork.
    fn walk_view(&mut self, c: usize, missing: &[(u64, EntryId)], resolutions: &[(u32, u64, u64, u32)]) {
        let (start, end) = (self.chains[c].start as usize, self.chains[c].end as usize);
        let mut view: Vec<u32> = Vec::new();
        let mut forks: Vec<ForkPoint> = Vec::new();
        // The highest seq of an entry whose payload never arrived: any of
        // them may be a fork resolution (on any branch), so a fork at or
        // below its seq is not settled until it arrives. At its own seq too:
        // an entry at a fork's seq (one of the fork's candidates) can be a
        // resolution of that very fork, naming a sibling signed before it,
        // and with a higher number than the resolutions held it decides the
        // fork. Settling without it could put on the view a branch that the
        // full view drops.
        let unknown_up_to = (start..end).filter(|&k| self.items[k].missing()).map(|k| self.items[k].seq()).max().unwrap_or(0);
        let mut cur: u32 = NONE;
        let mut seq = 1u64;
        let mut i = start;
        let mut m = 0usize;
        loop {
            while i < end && self.items[i].seq() < seq {
                i += 1;
            }
            while m < missing.len() && missing[m].0 < seq {
                m += 1;
            }
            // Count first: allocate only at a fork.
            let is_child = |it: &Item<'_>| !it.broken() && (it.parent == cur || (seq == 1 && cur == NONE));
            let mut end_of_seq = i;
            let mut count = 0usize;
            let mut only = NONE;
            while end_of_seq < end && self.items[end_of_seq].seq() == seq {
                if is_child(&self.items[end_of_seq]) {
                    count += 1;
                    only = end_of_seq as u32;
                }
                end_of_seq += 1;
            }
            if count == 0 {
                break;
            }
            let named_len = missing[m..].iter().take_while(|(s, _)| *s == seq).count();
            if count + named_len < 2 {
                if self.items[only as usize].missing() {
                    break; // its meaning is unknown: the view waits for it
                }
                cur = only;
                view.push(cur);
                seq += 1;
                continue;
            }
            let children: Vec<u32> = (i..end_of_seq).filter(|&k| is_child(&self.items[k])).map(|k| k as u32).collect();
            let named = missing[m..m + named_len].iter().map(|(_, id)| *id);
            let mut candidates: Vec<EntryId> = children.iter().map(|&k| self.items[k as usize].id()).chain(named).collect();
            candidates.sort_unstable();
            let shared = (cur != NONE).then(|| self.items[cur as usize].id());
            let outcome = if unknown_up_to >= seq { ForkOutcome::Frozen } else { self.settle_fork(seq, &children, resolutions) };
            let next = match &outcome {
                ForkOutcome::Resolved { continue_with, .. } => self.lookup(continue_with),
                _ => None,
            };
            forks.push(ForkPoint { seq, shared, candidates, outcome });
            match next.filter(|&n| !self.items[n as usize].missing()) {
                Some(n) => {
                    cur = n;
                    view.push(cur);
                    seq += 1;
                }
                None => break,
            }
        }
        for &k in &view {
            self.items[k as usize].flags |= ON_VIEW;
        }
        let chain = &mut self.chains[c];
        chain.view = view;
        chain.forks = forks;
    }

    /// The outcome of a fork at `seq` among `children`, by the author's valid
    /// resolutions for that seq: the highest fork number wins.
    fn settle_fork(&mut self, seq: u64, children: &[u32], resolutions: &[(u32, u64, u64, u32)]) -> ForkOutcome {
        let at_seq: Vec<&(u32, u64, u64, u32)> = resolutions.iter().filter(|r| r.2 == seq).collect();
        let Some(top) = at_seq.iter().map(|r| r.1).max() else { return ForkOutcome::Frozen };
        let winners: Vec<&(u32, u64, u64, u32)> = at_seq.into_iter().filter(|r| r.1 == top).collect();
        let mut choices: Vec<u32> = winners.iter().map(|r| r.3).collect();
        choices.sort_unstable();
        choices.dedup();
        if choices.len() > 1 {
            let mut ids: Vec<EntryId> = winners.iter().map(|r| self.records[r.0 as usize].entry).collect();
            ids.sort_unstable();
            return ForkOutcome::Conflicting { resolutions: ids };
        }
        let chosen = choices[0];
        if !children.contains(&chosen) {
            return ForkOutcome::Frozen;
        }
        let mut ids: Vec<EntryId> = Vec::new();
        for r in &winners {
            self.records[r.0 as usize].status = MergeStatus::Applied;
            ids.push(self.records[r.0 as usize].entry);
        }
        ids.sort_unstable();
        ForkOutcome::Resolved { resolution: ids[0], fork_number: top, continue_with: self.items[chosen as usize].id() }
    }

    /// Step 3 for one signer: its merge events on its view chain, in seq
    /// order. Reads the finished chains only, so signers are evaluated in
    /// parallel; the outcomes are applied in signer order.
    pub(crate) fn evaluate_signer(&self, c: usize) -> SignerOutcome {
        let mut out = SignerOutcome::default();
        let mut reach: ChainMap<(u64, u32)> = ChainMap::default();
        // In record order: the view chain is in seq order, and so are a
        // signer's records.
        let mut statuses: Vec<(u32, MergeStatus)> = Vec::new();
        for &k in &self.chains[c].view {
            let r = self.items[k as usize].record;
            if r == NONE {
                continue;
            }
            let status = match self.records[r as usize].event {
                Some(MergeEvent::Accept { author, up_to_seq, head }) => self.eval_accept(r, author, up_to_seq, head, &mut reach, &mut out),
                Some(MergeEvent::Dispute { target, .. }) => self.eval_dispute(r, target, &mut out),
                Some(MergeEvent::Withdraw { dispute }) => self.eval_withdraw(r, dispute, &mut statuses),
                // Decided by the chain analysis of the signer.
                Some(MergeEvent::ForkResolution { .. }) | None => continue,
            };
            debug_assert!(statuses.last().is_none_or(|(last, _)| *last < r));
            statuses.push((r, status));
        }
        // Entries of this signer not on its view chain keep `OffView`; fork
        // resolutions keep what the chain analysis decided.
        out.statuses = statuses;
        out.reach = reach.into_iter().map(|(a, v)| ((c as u32, a), v)).collect();
        out
    }

    /// Apply every signer's outcome, in signer order.
    fn apply(&mut self, outcomes: Vec<SignerOutcome>) {
        let mut reach = Vec::new();
        for o in outcomes {
            for (r, status) in o.statuses {
                self.records[r as usize].status = status;
            }
            reach.extend(o.reach);
            self.open_disputes.extend(o.open);
            self.branch_accepts.extend(o.branch);
        }
        for ((s, a), (seq, r)) in reach {
            let chain = &self.chains[a as usize];
            let head = self.items[chain.view[(seq - 1) as usize] as usize].id();
            let f = Frontier { seq, head, accept: self.records[r as usize].entry };
            self.frontiers.insert((self.chains[s as usize].author, chain.author), f);
        }
    }

    /// The first id missing below `item` (it is held but not rooted).
    pub(crate) fn missing_below(&self, item: u32) -> EntryId {
        let mut k = item as usize;
        while self.items[k].parent != NONE {
            k = self.items[k].parent as usize;
        }
        self.items[k].signed.header().backlink.unwrap_or_else(|| self.items[k].id())
    }

    /// The deepest view-chain entry that is `item` or one of its ancestors.
    pub(crate) fn view_ancestor(&self, item: u32) -> Option<u32> {
        let mut k = item;
        loop {
            let it = &self.items[k as usize];
            if it.on_view() {
                return Some(k);
            }
            if it.parent == NONE {
                return None;
            }
            k = it.parent;
        }
    }

    /// Is `ancestor` the item `item` or one of its ancestors?
    pub(crate) fn descends_from(&self, item: u32, ancestor: u32) -> bool {
        let target_seq = self.items[ancestor as usize].seq();
        let mut k = item;
        loop {
            if k == ancestor {
                return true;
            }
            let it = &self.items[k as usize];
            if it.parent == NONE || it.seq() <= target_seq {
                return false;
            }
            k = it.parent;
        }
    }

    /// The status an accept has, and (for a peer's) its effective seq.
    /// Shared by evaluation and the local check.
    pub(crate) fn judge_accept(&self, signer: AgentId, author: AgentId, up_to_seq: u64, head: EntryId) -> Result<(u64, u32), MergeStatus> {
        if author == signer {
            return Err(MergeStatus::Invalid(MergeRuleError::SelfAccept(author)));
        }
        if up_to_seq == 0 {
            return Err(MergeStatus::Invalid(MergeRuleError::ZeroSeq));
        }
        let Some(h) = self.lookup(&head) else { return Err(MergeStatus::Pending { missing: head }) };
        let it = self.items[h as usize];
        let found_author = self.chains[it.author as usize].author;
        if found_author != author || it.seq() != up_to_seq {
            return Err(MergeStatus::Invalid(MergeRuleError::HeadMismatch { head, author, up_to_seq, found_author, found_seq: it.seq() }));
        }
        if !it.rooted() {
            return Err(MergeStatus::Pending { missing: self.missing_below(h) });
        }
        if it.on_view() {
            return Ok((up_to_seq, h));
        }
        let chain = &self.chains[it.author as usize];
        let shared = self.view_ancestor(h);
        let effective_seq = shared.map_or(0, |s| self.items[s as usize].seq());
        let fork_seq = effective_seq + 1;
        let rule = if effective_seq == chain.view_len() && chain.frozen().is_some() {
            MergeRuleError::CrossesFork { author, up_to_seq, fork_seq }
        } else {
            MergeRuleError::DroppedBranch { author, up_to_seq, fork_seq }
        };
        Err(MergeStatus::Clipped { effective_seq, rule })
    }

    fn eval_accept(&self, r: u32, author: AgentId, up_to_seq: u64, head: EntryId, reach: &mut ChainMap<(u64, u32)>, out: &mut SignerOutcome) -> MergeStatus {
        let signer = self.records[r as usize].signer;
        let (effective, h, status) = match self.judge_accept(signer, author, up_to_seq, head) {
            Ok((seq, h)) => (seq, h, MergeStatus::Applied),
            Err(status @ MergeStatus::Clipped { effective_seq, .. }) => {
                let Some(h) = self.lookup(&head) else { return status };
                out.branch.push((h, r));
                (effective_seq, h, status)
            }
            Err(status) => return status,
        };
        if effective > 0 {
            // Strictly greater only: among equal reaches, the first (by seq) stays.
            let f = reach.entry(self.items[h as usize].author).or_insert((0, r));
            if effective > f.0 {
                *f = (effective, r);
            }
        }
        status
    }

    fn eval_dispute(&self, r: u32, target: EntryId, out: &mut SignerOutcome) -> MergeStatus {
        let signer = self.records[r as usize].signer;
        let Some(t) = self.lookup(&target) else { return MergeStatus::Pending { missing: target } };
        if self.chains[self.items[t as usize].author as usize].author == signer {
            return MergeStatus::Invalid(MergeRuleError::SelfDispute(target));
        }
        out.open.push((t, r));
        MergeStatus::Applied
    }

    /// `statuses`: what this signer's earlier events became in this pass.
    fn eval_withdraw(&self, r: u32, dispute: EntryId, statuses: &mut Vec<(u32, MergeStatus)>) -> MergeStatus {
        let signer = self.records[r as usize].signer;
        let withdraw_id = self.records[r as usize].entry;
        let Some(d) = self.lookup(&dispute) else { return MergeStatus::Pending { missing: dispute } };
        let di = self.items[d as usize];
        let d_author = self.chains[di.author as usize].author;
        if d_author != signer {
            return MergeStatus::Invalid(MergeRuleError::NotOwnDispute { dispute, author: d_author });
        }
        let is_dispute = di.record != NONE && matches!(self.records[di.record as usize].event, Some(MergeEvent::Dispute { .. }));
        if !is_dispute || !di.on_view() || di.seq() >= self.records[r as usize].seq {
            return MergeStatus::Invalid(MergeRuleError::NotADispute(dispute));
        }
        let slot = statuses.binary_search_by_key(&di.record, |(r, _)| *r);
        if let Ok(i) = slot
            && let MergeStatus::Withdrawn { by } = statuses[i].1
        {
            return MergeStatus::Invalid(MergeRuleError::AlreadyWithdrawn { dispute, by });
        }
        // `open_disputes` drops withdrawn ones once every signer is applied.
        let withdrawn = MergeStatus::Withdrawn { by: withdraw_id };
        match slot {
            Ok(i) => statuses[i].1 = withdrawn,
            Err(i) => statuses.insert(i, (di.record, withdrawn)),
        }
        MergeStatus::Applied
    }
}

/// What evaluating one signer produced.
#[derive(Default)]
pub(crate) struct SignerOutcome {
    /// (record, status) of its merge events on its view chain.
    statuses: Vec<(u32, MergeStatus)>,
    /// ((signer chain, author chain), (furthest seq, accept record)).
    reach: Vec<((u32, u32), (u64, u32))>,
    /// Open disputes: (target item, record).
    open: Vec<(u32, u32)>,
    /// Accepts past a fork: (head item, record).
    branch: Vec<(u32, u32)>,
}

/// The record of an entry whose payload carries the merge magic.
/// The pass of step 1 over the items in canonical order, one item at a
/// time: chains, the id index, and links to held predecessors. Numbers the
/// merge payloads (their records are decoded after) and keeps their positions.
struct Linker {
    by_id: IdIndex,
    merge_items: Vec<u32>,
    /// First item of the current author's chain.
    start: usize,
    missing: Vec<(u64, EntryId)>,
    /// Items of the previous and the current seq: (lo, hi, seq).
    prev_group: (usize, usize, u64),
    group: (usize, usize, u64),
}

impl Linker {
    fn new(capacity: usize) -> Self {
        Linker {
            by_id: IdIndex { table: hashbrown::HashTable::with_capacity(capacity) },
            merge_items: Vec::new(),
            start: 0,
            missing: Vec::new(),
            prev_group: (0, 0, 0),
            group: (0, 0, 0),
        }
    }

    /// Link the last of `items`.
    fn step<'a>(&mut self, m: &mut Merge<'a>, items: &mut [Item<'a>]) {
        let i = items.len() - 1;
        let h = items[i].signed.header();
        if i > 0 && h.author != items[i - 1].signed.header().author {
            m.push_chain(items[self.start].signed.header().author, self.start, i, std::mem::take(&mut self.missing));
            self.start = i;
            self.prev_group = (i, i, 0);
            self.group = (i, i, 0);
        }
        items[i].author = m.chains.len() as u32;
        let hash = id_hash(&items[i].signed.id());
        self.by_id.table.insert_unique(hash, i as u32, |&j| id_hash(&items[j as usize].signed.id()));
        if items[i].payload.is_some_and(MergeEvent::is_merge_payload) {
            items[i].record = self.merge_items.len() as u32;
            self.merge_items.push(i as u32);
        }
        let seq = items[i].seq;
        if seq != self.group.2 {
            self.prev_group = self.group;
            self.group = (i, i, seq);
        }
        self.group.1 = i + 1;
        if seq == 1 {
            items[i].flags |= ROOTED;
            return;
        }
        let Some(back) = h.backlink else { return };
        let (lo, hi, prev_seq) = self.prev_group;
        let parent = if prev_seq + 1 == seq { (lo..hi).find(|&p| items[p].signed.id() == back) } else { None };
        match parent {
            Some(p) if h.timestamp_ms < items[p].timestamp_ms => items[i].flags |= BROKEN,
            Some(p) => {
                items[i].parent = p as u32;
                if items[p].rooted() {
                    items[i].flags |= ROOTED;
                }
            }
            None => self.missing.push((seq - 1, back)),
        }
    }

    /// Close the last chain; the id index and the merge items' positions.
    fn finish<'a>(self, m: &mut Merge<'a>, items: &[Item<'a>]) -> (IdIndex, Vec<u32>) {
        if !items.is_empty() {
            m.push_chain(items[self.start].signed.header().author, self.start, items.len(), self.missing);
        }
        (self.by_id, self.merge_items)
    }
}

/// The same entry twice (adjacent in canonical order): the later one goes.
fn is_duplicate(later: &Item<'_>, earlier: &Item<'_>) -> bool {
    later.seq == earlier.seq && later.signed.id() == earlier.signed.id()
}

fn decode_record(signed: &SignedEntry, payload: &[u8], i: usize) -> MergeRecord {
    let (event, status) = match MergeEvent::decode(payload) {
        Ok(e) => (Some(e), MergeStatus::OffView),
        Err(e) => (None, MergeStatus::Invalid(MergeRuleError::Decode(e))),
    };
    let h = signed.header();
    MergeRecord { entry: signed.id(), signer: h.author, seq: h.seq, event, status, item: i as u32 }
}

/// Are two items in (author, seq, id) order, held payloads first among equal
/// ids? A store hands its entries over in this order, so the sort is usually
/// skipped.
fn in_order(a: &Item<'_>, b: &Item<'_>) -> bool {
    match a.signed.header().author.cmp(&b.signed.header().author).then(a.seq.cmp(&b.seq)) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => (a.signed.id(), a.knowledge_rank()) <= (b.signed.id(), b.knowledge_rank()),
    }
}

/// Sort into (author, seq, id) order, held payloads first among equal ids (so
/// dedup keeps them). Sorts compact keys (author rank, seq, position) rather
/// than chasing pointers to headers in every comparison.
fn canonical_order(unsorted: Vec<Item<'_>>) -> Vec<Item<'_>> {
    let mut ranks: HashMap<AgentId, u32> = HashMap::new();
    let mut last: Option<(AgentId, u32)> = None;
    let mut keys: Vec<(u32, u64, u32)> = Vec::with_capacity(unsorted.len());
    for (i, it) in unsorted.iter().enumerate() {
        let author = it.signed.header().author;
        let rank = match last {
            Some((a, r)) if a == author => r,
            _ => {
                let next = ranks.len() as u32;
                let r = *ranks.entry(author).or_insert(next);
                last = Some((author, r));
                r
            }
        };
        keys.push((rank, it.seq, i as u32));
    }
    let mut by_rank: Vec<(AgentId, u32)> = ranks.into_iter().collect();
    by_rank.sort_unstable();
    let mut order = vec![0u32; by_rank.len()];
    for (pos, (_, r)) in by_rank.iter().enumerate() {
        order[*r as usize] = pos as u32;
    }
    for k in &mut keys {
        k.0 = order[k.0 as usize];
    }
    keys.sort_unstable_by(|x, y| {
        (x.0, x.1).cmp(&(y.0, y.1)).then_with(|| {
            let (a, b) = (&unsorted[x.2 as usize], &unsorted[y.2 as usize]);
            a.signed.id().cmp(&b.signed.id()).then(a.knowledge_rank().cmp(&b.knowledge_rank()))
        })
    });
    keys.iter().map(|k| unsorted[k.2 as usize]).collect()
}

// Read access.
impl<'a> Merge<'a> {
    /// Position of a known entry.
    pub(crate) fn lookup(&self, id: &EntryId) -> Option<u32> {
        self.by_id.table.find(id_hash(id), |&i| self.items[i as usize].signed.id() == *id).copied()
    }

    /// Every chain, in ascending author order.
    pub fn chains(&self) -> &[Chain] {
        &self.chains
    }
    /// One author's chain.
    pub fn chain(&self, author: &AgentId) -> Option<&Chain> {
        self.chain_index.get(author).map(|&c| &self.chains[c as usize])
    }
    /// Every merge event held, in (signer, seq, id) order, with its status.
    pub fn records(&self) -> &[MergeRecord] {
        &self.records
    }
    /// The merge event carried by this entry, if it is one.
    pub fn record(&self, entry: &EntryId) -> Option<&MergeRecord> {
        let it = self.items[self.lookup(entry)? as usize];
        (it.record != NONE).then(|| &self.records[it.record as usize])
    }
    /// Accept frontiers: (acceptor, author) → frontier, ascending.
    pub fn frontiers(&self) -> &BTreeMap<(AgentId, AgentId), Frontier> {
        &self.frontiers
    }
    /// `acceptor`'s frontier on `author`'s chain.
    pub fn frontier(&self, acceptor: &AgentId, author: &AgentId) -> Option<Frontier> {
        self.frontiers.get(&(*acceptor, *author)).copied()
    }
    /// The fork proofs given as input.
    pub fn fork_proofs(&self) -> &[&'a ForkProof] {
        &self.proofs
    }
    /// Is this entry known (held, or carried by a proof)?
    pub fn contains(&self, id: &EntryId) -> bool {
        self.lookup(id).is_some()
    }
    /// The signed header of a known entry.
    pub fn entry(&self, id: &EntryId) -> Option<&'a SignedEntry> {
        self.lookup(id).map(|i| self.items[i as usize].signed)
    }
    /// Is this entry on its author's view chain?
    pub fn on_view(&self, id: &EntryId) -> bool {
        self.lookup(id).is_some_and(|i| self.items[i as usize].on_view())
    }
    /// The view chain of `author`, seq 1 first (empty when unknown).
    pub fn view_chain(&self, author: &AgentId) -> Vec<EntryId> {
        self.chain(author).map_or_else(Vec::new, |c| c.view.iter().map(|&k| self.items[k as usize].id()).collect())
    }
    /// The head of `author`'s view chain: (seq, id).
    pub fn view_head(&self, author: &AgentId) -> Option<(u64, EntryId)> {
        let c = self.chain(author)?;
        c.view.last().map(|&k| (c.view_len(), self.items[k as usize].id()))
    }
    /// Number of distinct entries known.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// True when no entry is known.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
