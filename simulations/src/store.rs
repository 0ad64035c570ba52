//! The simulated node's store: an in-memory store with agora-store's import
//! rules (links checked against what is held or earlier in the batch, all or
//! nothing for the part that is stored, one fork proof per forked position,
//! entries dated beyond the allowed skew and their successors deferred, a
//! payload that was missing filled in), reported with the store's typed
//! outcome, so the replicator sees what the node's store would tell it.

use agora_core::entry::next_header;
use agora_core::limits::FUTURE_SKEW_MAX_MS;
use agora_core::verify::{verify_link, CheckedEntry};
use agora_core::{AgentId, AgentKey, EntryId, EntryRef, ForkProof, SignedEntry};
use agora_sync::{Head, ImportOutcome, ServeRequest, WireEntry};
use std::collections::{BTreeMap, BTreeSet};

/// A stored entry and its payload, when held.
pub type Stored = (SignedEntry, Option<Vec<u8>>);

/// An in-memory store with agora-store's rules.
#[derive(Default, Clone)]
pub struct MemStore {
    /// Every entry held, by (author, seq, id): the order ranges are served in.
    pub entries: BTreeMap<(AgentId, u64, EntryId), Stored>,
    /// Where each id is.
    pub ids: BTreeMap<EntryId, (AgentId, u64)>,
    /// One fork proof per forked position.
    pub proofs: BTreeMap<(AgentId, u64), ForkProof>,
    /// Tips by author, kept as entries are stored.
    tip_set: BTreeMap<AgentId, BTreeSet<(u64, EntryId)>>,
    /// XOR of every id held: two stores with the same entries have the same
    /// digest (and, with the same count, almost surely only they do).
    pub digest: [u8; 32],
    /// Bytes held: encoded entries and payloads.
    pub bytes: u64,
    /// Entries held without their payload.
    pub payloads_missing: usize,
}

/// What an import did, as agora-store reports it.
pub struct Imported {
    /// What the replicator is told.
    pub outcome: ImportOutcome,
    /// Proofs of positions found forked by this import.
    pub new_forks: Vec<ForkProof>,
    /// Authors whose tips changed.
    pub changed: BTreeSet<AgentId>,
    /// Entries stored without their payload.
    pub missing: Vec<EntryRef>,
    /// Entries whose missing payload this import brought.
    pub filled: Vec<EntryId>,
}

impl MemStore {
    /// The entry with this id, if held.
    pub fn get(&self, id: &EntryId) -> Option<&Stored> {
        self.ids.get(id).map(|(a, s)| &self.entries[&(*a, *s, *id)])
    }

    /// All or nothing for the part that is stored, like agora-store: links
    /// checked, one proof per forked position, entries dated beyond the
    /// skew (and their successors) deferred.
    pub fn import(&mut self, entries: Vec<CheckedEntry>, now_ms: u64) -> Imported {
        let mut out = Imported { outcome: ImportOutcome::Stored, new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), filled: Vec::new() };
        let mut batch: BTreeMap<EntryId, SignedEntry> = BTreeMap::new();
        let mut fresh = Vec::new();
        let mut held_back: BTreeSet<EntryId> = BTreeSet::new();
        let mut fills = Vec::new();
        for c in entries {
            let (e, payload) = c.into_parts();
            let e = e.into_entry();
            let h = e.header().clone();
            if let Some(&(a, s)) = self.ids.get(&e.id()) {
                if self.entries[&(a, s, e.id())].1.is_none() && payload.is_some() {
                    fills.push(((a, s, e.id()), payload));
                }
                continue;
            }
            if h.timestamp_ms > now_ms + FUTURE_SKEW_MAX_MS || h.backlink.is_some_and(|b| held_back.contains(&b)) {
                if held_back.is_empty() {
                    out.outcome = ImportOutcome::Deferred { seq: h.seq, until_ms: h.timestamp_ms - FUTURE_SKEW_MAX_MS };
                }
                held_back.insert(e.id());
                continue;
            }
            if let Some(back) = h.backlink {
                let prev = batch.get(&back).cloned().or_else(|| self.get(&back).map(|(p, _)| p.clone()));
                let Some(prev) = prev else {
                    out.outcome = ImportOutcome::PredecessorMissing { seq: h.seq };
                    return Imported { new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), ..out };
                };
                if let Err(err) = verify_link(&prev, &e) {
                    out.outcome = ImportOutcome::Invalid { reason: err.to_string() };
                    return Imported { new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), ..out };
                }
            }
            batch.insert(e.id(), e.clone());
            fresh.push((e, payload));
        }
        for (key, payload) in fills {
            out.filled.push(key.2);
            self.payloads_missing = self.payloads_missing.saturating_sub(1);
            self.bytes += payload.as_ref().map_or(0, Vec::len) as u64;
            self.entries.get_mut(&key).expect("held").1 = payload;
        }
        for (e, payload) in fresh {
            let (a, s, id) = (e.header().author, e.header().seq, e.id());
            if !self.proofs.contains_key(&(a, s))
                && let Some(((_, _, rival), (r, _))) = self.entries.range((a, s, EntryId([0; 32]))..).next().filter(|((ra, rs, _), _)| *ra == a && *rs == s)
            {
                let _ = rival;
                let proof = ForkProof::new(r.clone(), e.clone()).expect("two entries at one seq");
                self.proofs.insert((a, s), proof.clone());
                out.new_forks.push(proof);
            }
            if payload.is_none() {
                out.missing.push(e.entry_ref());
                self.payloads_missing += 1;
            }
            let tips = self.tip_set.entry(a).or_default();
            if let Some(back) = e.header().backlink {
                tips.remove(&(s - 1, back));
            }
            tips.insert((s, id));
            self.ids.insert(id, (a, s));
            self.digest.iter_mut().zip(id.0).for_each(|(d, b)| *d ^= b);
            self.bytes += (e.encode().len() + payload.as_ref().map_or(0, Vec::len)) as u64;
            self.entries.insert((a, s, id), (e, payload));
            out.changed.insert(a);
        }
        out
    }

    /// Sign and store the next entry of `key`'s chain (its highest tip).
    pub fn append(&mut self, key: &AgentKey, payload: &[u8], now_ms: u64) -> SignedEntry {
        let prev = self.tips(&key.agent_id()).into_iter().max().map(|h| self.entries[&(h.author, h.seq, h.id)].0.clone());
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), now_ms, payload).expect("header"), key);
        let c = agora_core::verify::check_entries(vec![(e.clone(), Some(payload.to_vec()))]).expect("own entry");
        let r = self.import(c, now_ms);
        assert_eq!(r.outcome, ImportOutcome::Stored);
        e
    }

    /// Store an entry signed elsewhere (a fork, a test's own chain).
    pub fn put(&mut self, e: &SignedEntry, payload: Option<&[u8]>, now_ms: u64) -> Imported {
        let c = agora_core::verify::check_entries(vec![(e.clone(), payload.map(<[u8]>::to_vec))]).expect("valid entry");
        self.import(c, now_ms)
    }

    /// The tips of `author`'s chain (several when it is forked).
    pub fn tips(&self, author: &AgentId) -> Vec<Head> {
        self.tip_set.get(author).map(|t| t.iter().map(|(seq, id)| Head { author: *author, seq: *seq, id: *id }).collect()).unwrap_or_default()
    }

    /// The tips of every author.
    pub fn heads(&self) -> Vec<Head> {
        self.tip_set.keys().flat_map(|a| self.tips(a)).collect()
    }

    /// The highest seq held of `author` (0: none).
    pub fn max_seq(&self, author: &AgentId) -> u64 {
        self.tips(author).iter().map(|h| h.seq).max().unwrap_or(0)
    }

    /// What the driver reads for a `Serve`.
    pub fn serve(&self, s: &ServeRequest) -> Vec<(u64, WireEntry)> {
        let first = s.start.after.map_or(EntryId([0; 32]), |id| id);
        self.entries
            .range((s.author, s.start.seq, first)..)
            .take_while(|((a, _, _), _)| *a == s.author)
            .filter(|((_, seq, id), _)| s.start.after.is_none() || *seq > s.start.seq || Some(*id) > s.start.after)
            .take(s.read_max)
            .map(|((_, seq, _), (e, p))| (*seq, WireEntry { entry: e.encode(), payload: p.clone() }))
            .collect()
    }

    /// Entries held without their payload.
    pub fn missing_payloads(&self) -> Vec<EntryRef> {
        self.entries.values().filter(|(_, p)| p.is_none()).map(|(e, _)| e.entry_ref()).collect()
    }
}
