//! The simulated node's store: in memory, planning every import with the
//! import rules agora-store plans its own with (`agora_core::import`: links
//! checked against what is held or earlier in the batch, all or nothing, one
//! fork proof per forked position, entries dated beyond the allowed skew and
//! their successors deferred, a payload that was missing filled in), and
//! translating the result into the replicator's outcome the way the node's
//! driver does ([`ImportOutcome::accepted`], [`ImportOutcome::refused`]).

use agora_core::entry::next_header;
use agora_core::import::{self, Held, Offered, PlanError};
use agora_core::verify::CheckedEntry;
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
    /// Entries newly stored.
    pub stored: Vec<EntryId>,
}

impl MemStore {
    /// The entry with this id, if held.
    pub fn get(&self, id: &EntryId) -> Option<&Stored> {
        self.ids.get(id).map(|(a, s)| &self.entries[&(*a, *s, *id)])
    }

    /// Import through the store rules of `agora_core::import`, the very
    /// rules agora-store plans its writes with, and write the plan here.
    pub fn import(&mut self, entries: Vec<CheckedEntry>, now_ms: u64) -> Imported {
        let offered = entries
            .into_iter()
            .map(|c| {
                let (e, payload) = c.into_parts();
                Offered { entry: e.into_entry(), payload }
            })
            .collect();
        self.write(offered, now_ms)
    }

    /// Plan and write entries whose signatures and payloads are known good
    /// (checked by the replicator, or signed here).
    fn write(&mut self, offered: Vec<Offered>, now_ms: u64) -> Imported {
        let mut out = Imported { outcome: ImportOutcome::Stored, new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), filled: Vec::new(), stored: Vec::new() };
        // Signatures and payloads come checked (the type says so).
        let plan = match import::plan_import(&*self, offered, false, now_ms) {
            Ok(plan) => plan,
            Err(PlanError::Refused { problem, .. }) => {
                out.outcome = ImportOutcome::refused(&problem);
                return out;
            }
            Err(PlanError::Held(never)) => match never {},
            Err(e @ PlanError::Inconsistent { .. }) => panic!("the simulated store broke its own rules: {e}"),
        };
        out.outcome = ImportOutcome::accepted(plan.deferred.as_ref());
        for (at, payload) in plan.fills {
            let held = self.entries.get_mut(&(at.author, at.seq, at.id)).expect("a filled entry is held");
            self.payloads_missing = self.payloads_missing.saturating_sub(1);
            self.bytes += payload.len() as u64;
            held.1 = Some(payload);
            out.filled.push(at.id);
        }
        for proof in plan.proofs {
            self.proofs.insert((proof.author(), proof.seq()), proof.clone());
            out.new_forks.push(proof);
        }
        for Offered { entry, payload } in plan.fresh {
            let (a, s, id) = (entry.header().author, entry.header().seq, entry.id());
            if payload.is_none() {
                out.missing.push(entry.entry_ref());
                self.payloads_missing += 1;
            }
            self.ids.insert(id, (a, s));
            out.stored.push(id);
            self.digest.iter_mut().zip(id.0).for_each(|(d, b)| *d ^= b);
            self.bytes += (entry.encode().len() + payload.as_ref().map_or(0, Vec::len)) as u64;
            self.entries.insert((a, s, id), (entry, payload));
        }
        for (author, tips) in plan.tips {
            self.tip_set.insert(author, tips.into_iter().map(|t| (t.seq, t.id)).collect());
            out.changed.insert(author);
        }
        out
    }

    /// Sign and store the next entry of `key`'s chain (its highest tip).
    pub fn append(&mut self, key: &AgentKey, payload: &[u8], now_ms: u64) -> SignedEntry {
        let prev = self.tips(&key.agent_id()).into_iter().max().map(|h| self.entries[&(h.author, h.seq, h.id)].0.clone());
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), now_ms, payload).expect("header"), key);
        // Signed here, as agora-store's append does: not verified again.
        let r = self.write(vec![Offered { entry: e.clone(), payload: Some(payload.to_vec()) }], e.header().timestamp_ms);
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

impl Held for MemStore {
    type Error = std::convert::Infallible;

    fn locate(&self, id: &EntryId) -> Result<Option<(AgentId, u64)>, Self::Error> {
        Ok(self.ids.get(id).copied())
    }

    fn load(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<Option<SignedEntry>, Self::Error> {
        Ok(self.entries.get(&(*author, seq, *id)).map(|(e, _)| e.clone()))
    }

    fn payload_missing(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<bool, Self::Error> {
        Ok(self.entries.get(&(*author, seq, *id)).is_some_and(|(_, p)| p.is_none()))
    }

    fn tips(&self, author: &AgentId) -> Result<Vec<EntryRef>, Self::Error> {
        Ok(self.tip_set.get(author).map(|t| t.iter().map(|(seq, id)| EntryRef { author: *author, seq: *seq, id: *id }).collect()).unwrap_or_default())
    }

    fn proven(&self, author: &AgentId, seq: u64) -> Result<bool, Self::Error> {
        Ok(self.proofs.contains_key(&(*author, seq)))
    }

    fn first_at(&self, author: &AgentId, seq: u64) -> Result<Option<SignedEntry>, Self::Error> {
        Ok(self.entries.range((*author, seq, EntryId([0; 32]))..).next().filter(|((a, s, _), _)| a == author && *s == seq).map(|(_, (e, _))| e.clone()))
    }
}
