//! An in-memory store with agora-store's import rules (`agora_core::import`),
//! as the simulator's `MemStore` keeps them (simulations/src/store.rs), for
//! the replicator target to execute `Import` and `Serve` against.

use agora_core::entry::next_header;
use agora_core::import::{self, Held, Offered, PlanError, TipSummary};
use agora_core::verify::CheckedEntry;
use agora_core::{AgentId, AgentKey, EntryId, EntryRef, ForkProof, SignedEntry};
use agora_sync::{Head, ImportOutcome, ServeRequest, WireEntry};
use std::collections::{BTreeMap, BTreeSet};

/// Entries by (author, seq, id), with their payloads when held.
#[derive(Default)]
pub struct MemStore {
    /// Every entry held.
    pub entries: BTreeMap<(AgentId, u64, EntryId), (SignedEntry, Option<Vec<u8>>)>,
    ids: BTreeMap<EntryId, (AgentId, u64)>,
    /// One fork proof per forked position.
    pub proofs: BTreeMap<(AgentId, u64), ForkProof>,
    tips: BTreeSet<EntryRef>,
    summaries: BTreeMap<AgentId, TipSummary>,
}

/// What an import did, as agora-store reports it.
pub struct Imported {
    /// What the replicator is told.
    pub outcome: ImportOutcome,
    /// Proofs of positions this import found forked.
    pub new_forks: Vec<ForkProof>,
    /// Authors whose tips changed.
    pub changed: BTreeSet<AgentId>,
    /// Entries stored without their payload.
    pub missing: Vec<EntryRef>,
    /// Entries whose missing payload this import brought.
    pub filled: Vec<EntryId>,
}

impl MemStore {
    /// Import entries the replicator verified.
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

    fn write(&mut self, offered: Vec<Offered>, now_ms: u64) -> Imported {
        let mut out = Imported { outcome: ImportOutcome::Stored, new_forks: Vec::new(), changed: BTreeSet::new(), missing: Vec::new(), filled: Vec::new() };
        let plan = match import::plan_import(&*self, offered, false, now_ms) {
            Ok(plan) => plan,
            Err(PlanError::Refused { problem, .. }) => {
                out.outcome = ImportOutcome::refused(&problem);
                return out;
            }
            Err(PlanError::Held(never)) => match never {},
            Err(e @ PlanError::Inconsistent { .. }) => panic!("the import rules found a consistent store inconsistent: {e}"),
        };
        out.outcome = ImportOutcome::accepted(plan.deferred.as_ref());
        for (at, payload) in plan.fills {
            let held = self.entries.get_mut(&(at.author, at.seq, at.id)).expect("a filled entry is held");
            assert!(held.1.is_none(), "a payload filled in twice");
            held.1 = Some(payload);
            out.filled.push(at.id);
        }
        for proof in plan.proofs {
            let key = (proof.author(), proof.seq());
            assert!(!self.proofs.contains_key(&key), "a second proof for one forked position");
            self.proofs.insert(key, proof.clone());
            out.new_forks.push(proof);
        }
        for Offered { entry, payload } in plan.fresh {
            let (a, s, id) = (entry.header().author, entry.header().seq, entry.id());
            assert!(!self.ids.contains_key(&id), "an entry stored twice");
            if payload.is_none() {
                out.missing.push(entry.entry_ref());
            }
            self.ids.insert(id, (a, s));
            self.entries.insert((a, s, id), (entry, payload));
        }
        for (author, change) in plan.tip_changes {
            for t in &change.passed {
                assert!(self.tips.remove(t), "a passed tip was held");
            }
            self.tips.extend(change.added);
            self.summaries.insert(author, plan.tip_summaries[&author].1);
            out.changed.insert(author);
        }
        out
    }

    /// Sign and store the next entry of `key`'s chain (after its highest tip).
    pub fn append(&mut self, key: &AgentKey, payload: &[u8], now_ms: u64) -> (SignedEntry, Imported) {
        let prev = self.tips(&key.agent_id()).into_iter().max().map(|h| self.entries[&(h.author, h.seq, h.id)].0.clone());
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), now_ms, payload).expect("a header"), key);
        let r = self.write(vec![Offered { entry: e.clone(), payload: Some(payload.to_vec()) }], e.header().timestamp_ms);
        assert_eq!(r.outcome, ImportOutcome::Stored, "a local append");
        (e, r)
    }

    fn author_tips(&self, author: &AgentId) -> impl Iterator<Item = EntryRef> + '_ {
        let author = *author;
        self.tips.range(EntryRef { author, seq: 0, id: EntryId([0; 32]) }..).take_while(move |t| t.author == author).copied()
    }

    /// `author`'s tips.
    pub fn tips(&self, author: &AgentId) -> Vec<Head> {
        self.author_tips(author).map(|t| Head { author: t.author, seq: t.seq, id: t.id }).collect()
    }

    /// Every author's tips.
    pub fn heads(&self) -> Vec<Head> {
        self.tips.iter().map(|t| Head { author: t.author, seq: t.seq, id: t.id }).collect()
    }

    /// What the driver reads for a `Serve`.
    pub fn serve(&self, s: &ServeRequest) -> Vec<(u64, WireEntry)> {
        let first = s.start.after.unwrap_or(EntryId([0; 32]));
        self.entries
            .range((s.author, s.start.seq, first)..)
            .take_while(|((a, _, _), _)| *a == s.author)
            .filter(|((_, seq, id), _)| s.start.after.is_none() || *seq > s.start.seq || Some(*id) > s.start.after)
            .take(s.read_max)
            .map(|((_, seq, _), (e, p))| (*seq, WireEntry { entry: e.encode(), payload: p.clone() }))
            .collect()
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

    fn tip_summary(&self, author: &AgentId) -> Result<Option<TipSummary>, Self::Error> {
        Ok(self.summaries.get(author).copied())
    }

    fn is_tip(&self, entry: &EntryRef) -> Result<bool, Self::Error> {
        Ok(self.tips.contains(entry))
    }

    fn proven(&self, author: &AgentId, seq: u64) -> Result<bool, Self::Error> {
        Ok(self.proofs.contains_key(&(*author, seq)))
    }

    fn first_at(&self, author: &AgentId, seq: u64) -> Result<Option<SignedEntry>, Self::Error> {
        Ok(self.entries.range((*author, seq, EntryId([0; 32]))..).next().filter(|((a, s, _), _)| a == author && *s == seq).map(|(_, (e, _))| e.clone()))
    }
}
