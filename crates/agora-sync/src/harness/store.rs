//! An in-memory store planning every import with the import rules
//! agora-store plans its own with (`agora_core::import`: links checked
//! against what is held or earlier in the batch, all or nothing, one fork
//! proof per forked position, entries dated beyond the allowed skew and their
//! successors deferred, a payload that was missing filled in), translating
//! the result into the replicator's outcome the way the node's driver does
//! ([`ImportOutcome::accepted`], [`ImportOutcome::refused`]) and into the
//! [`Commit`] the replicator is told. It asserts the store's own invariants
//! as it writes (an entry stored once, a payload filled in once, one proof
//! per forked position, a passed tip held).
//!
//! Stores that hold the same entry can share one copy of it ([`Interner`]):
//! each node still decodes and verifies what it receives, but what it keeps
//! is a pointer to bytes another store may already hold. A swarm of N nodes
//! replicating E entries keeps E entries and N x E pointers.

use crate::{Commit, Head, ImportOutcome, ServeRequest, WireEntry};
use agora_core::entry::next_header;
use agora_core::idmap::IdMap;
use agora_core::import::{self, Held, ImportProblem, Offered, PlanError, TipChange, TipSummary};
use agora_core::verify::CheckedEntry;
use agora_core::{AgentId, AgentKey, EntryId, EntryRef, ForkProof, KeyEvent, Payload, Rule, SignedEntry};
use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};

/// A stored entry and its payload, when held: shared with every other
/// simulated node that holds them ([`Interner`]).
pub type Stored = (Rc<SignedEntry>, Option<Rc<[u8]>>);

/// One copy of each entry and payload for all the stores that hold it. The
/// id decides: an entry's id is the hash of its header, and a payload held
/// is one whose hash its header names, so two nodes holding the same id
/// hold the same bytes. Weak references: the table never keeps an entry
/// alive that no store holds (the simulator never deletes entries, so the
/// table's size is the number of distinct entries).
#[derive(Default, Clone)]
pub struct Interner(Rc<RefCell<Interned>>, Option<SharedScope>);

/// Called around every allocation of what stores share; its value is held
/// while they are made (a memory meter's guard charging them to no store).
pub type SharedScope = Rc<dyn Fn() -> Box<dyn Any>>;

/// The interner's table: by id, the shared entry and payload.
type Interned = IdMap<EntryId, (Weak<SignedEntry>, Weak<[u8]>)>;

impl Interner {
    /// An interner that holds `scope()`'s value while it makes shared copies.
    pub fn with_scope(scope: SharedScope) -> Self {
        Self(Rc::default(), Some(scope))
    }

    fn scope(&self) -> Option<Box<dyn Any>> {
        self.1.as_ref().map(|s| s())
    }

    /// The shared copy of `entry` (and of `payload`, when given).
    fn intern(&self, entry: SignedEntry, payload: Option<Vec<u8>>) -> Stored {
        let _scope = self.scope();
        let mut table = self.0.borrow_mut();
        let slot = table.entry(entry.id()).or_insert_with(|| (Weak::new(), Weak::<[u8; 0]>::new() as Weak<[u8]>));
        let e = slot.0.upgrade().unwrap_or_else(|| {
            // A copy made here, uncharged: the entry given was decoded by a
            // node, charged to it, and is freed here.
            let e = Rc::new(entry.clone());
            slot.0 = Rc::downgrade(&e);
            e
        });
        let p = payload.map(|p| {
            slot.1.upgrade().unwrap_or_else(|| {
                let p: Rc<[u8]> = p.into();
                slot.1 = Rc::downgrade(&p);
                p
            })
        });
        (e, p)
    }

    /// The shared copy of a payload filled in for an entry already held.
    fn intern_payload(&self, id: EntryId, payload: Vec<u8>) -> Rc<[u8]> {
        let _scope = self.scope();
        let mut table = self.0.borrow_mut();
        let slot = table.entry(id).or_insert_with(|| (Weak::new(), Weak::<[u8; 0]>::new() as Weak<[u8]>));
        slot.1.upgrade().unwrap_or_else(|| {
            let p: Rc<[u8]> = payload.into();
            slot.1 = Rc::downgrade(&p);
            p
        })
    }
}

/// An in-memory store with agora-store's rules.
#[derive(Default, Clone)]
pub struct MemStore {
    /// Where entries and payloads are kept once for all stores sharing it.
    interner: Interner,
    /// Every entry held, by (author, seq, id): the order ranges are served in.
    pub entries: BTreeMap<(AgentId, u64, EntryId), Stored>,
    /// Where each id is.
    pub ids: IdMap<EntryId, (AgentId, u64)>,
    /// One fork proof per forked position.
    pub proofs: BTreeMap<(AgentId, u64), ForkProof>,
    /// Tips by author, kept as entries are stored.
    /// One set for all authors, not a set per author: almost every author
    /// has one tip, and a set of one still allocates a whole tree node.
    tip_set: BTreeSet<EntryRef>,
    /// Each author's head and tip count, as agora-store's `heads` row.
    summaries: BTreeMap<AgentId, TipSummary>,
    /// XOR of every id held: two stores with the same entries have the same
    /// digest (and, with the same count, almost surely only they do).
    pub digest: [u8; 32],
    /// XOR of the id of every entry held with its payload: with
    /// [`MemStore::digest`], what tells two stores' payloads apart.
    pub payload_digest: [u8; 32],
    /// Bytes held: encoded entries and payloads.
    pub bytes: u64,
    /// Entries held without their payload (not counting those redacted here).
    pub payloads_missing: usize,
    /// The residues of the payloads redacted here, by entry: what they meant
    /// without their text (made by the payload's format), read in their
    /// place. An import never fills a payload redacted here.
    pub redacted: BTreeMap<EntryId, Rc<[u8]>>,
    /// Entries an import refused by a key rule against what is held
    /// (`protocol-spec/keys.md`: `key_downgrade`, `signer`, `next_changed`,
    /// `rotation_key`), by id, with the rule's code: what a run reads to see
    /// a thief's rotation refused everywhere. At most one row per distinct
    /// entry offered; empty while no chain commits to a next key.
    pub refused: BTreeMap<EntryId, &'static str>,
}

/// What a store holds: see [`MemStore::contents`].
pub type Contents = (usize, [u8; 32], usize, usize, [u8; 32]);

/// What an import did, as agora-store reports it.
pub struct Imported {
    /// What the replicator is told.
    pub outcome: ImportOutcome,
    /// Proofs of positions found forked by this import.
    pub new_forks: Vec<ForkProof>,
    /// Per author whose tips changed, the tips passed and added.
    pub tips: BTreeMap<AgentId, TipChange>,
    /// Entries stored without their payload.
    pub missing: Vec<EntryRef>,
    /// Entries whose missing payload this import brought.
    pub filled: Vec<EntryId>,
    /// Entries newly stored.
    pub stored: Vec<EntryId>,
}

impl Imported {
    /// What the replicator is told of this write ([`crate::Replicator::committed`]),
    /// with the entries appended here when it was a local append.
    pub fn commit<'a>(&'a self, appended: &'a [(SignedEntry, Option<Vec<u8>>)]) -> Commit<'a> {
        Commit { appended, proofs: &self.new_forks, tips: &self.tips, filled: &self.filled, missing: &self.missing }
    }
}

impl MemStore {
    /// An empty store keeping its entries in `interner`, shared with others.
    pub fn sharing(interner: &Interner) -> Self {
        Self { interner: interner.clone(), ..Self::default() }
    }

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
        let mut out = Imported {
            outcome: ImportOutcome::Stored,
            new_forks: Vec::new(),
            tips: BTreeMap::new(),
            missing: Vec::new(),
            filled: Vec::new(),
            stored: Vec::new(),
        };
        // Signatures and payloads come checked (the type says so).
        let plan = match import::plan_import(&*self, offered, false, now_ms) {
            Ok(plan) => plan,
            Err(PlanError::Refused { problem, .. }) => {
                if let ImportProblem::Link(e) = &problem
                    && matches!(e.rule, Rule::KeyDowngrade | Rule::Signer { .. } | Rule::NextChanged | Rule::RotationKey(_))
                {
                    self.refused.insert(e.entry.id, e.rule.code());
                }
                out.outcome = ImportOutcome::refused(&problem);
                return out;
            }
            Err(PlanError::Held(never)) => match never {},
            Err(e @ PlanError::Inconsistent { .. }) => panic!("the in-memory store broke its own rules: {e}"),
        };
        out.outcome = ImportOutcome::accepted(plan.deferred.as_ref());
        for (at, payload) in plan.fills {
            let held = self.entries.get_mut(&(at.author, at.seq, at.id)).expect("a filled entry is held");
            assert!(held.1.is_none(), "a payload filled in twice");
            self.payloads_missing = self.payloads_missing.saturating_sub(1);
            self.bytes += payload.len() as u64;
            held.1 = Some(self.interner.intern_payload(at.id, payload));
            self.payload_digest.iter_mut().zip(at.id.0).for_each(|(d, b)| *d ^= b);
            out.filled.push(at.id);
        }
        for proof in plan.proofs {
            let previous = self.proofs.insert((proof.author(), proof.seq()), proof.clone());
            assert!(previous.is_none(), "a second proof for one forked position");
            out.new_forks.push(proof);
        }
        for Offered { entry, payload } in plan.fresh {
            let (a, s, id) = (entry.header().author, entry.header().seq, entry.id());
            if payload.is_none() {
                out.missing.push(entry.entry_ref());
                self.payloads_missing += 1;
            } else {
                self.payload_digest.iter_mut().zip(id.0).for_each(|(d, b)| *d ^= b);
            }
            assert!(self.ids.insert(id, (a, s)).is_none(), "an entry stored twice");
            out.stored.push(id);
            self.digest.iter_mut().zip(id.0).for_each(|(d, b)| *d ^= b);
            self.bytes += (entry.encode().len() + payload.as_ref().map_or(0, Vec::len)) as u64;
            self.entries.insert((a, s, id), self.interner.intern(entry, payload));
        }
        for (author, change) in plan.tip_changes {
            for t in &change.passed {
                assert!(self.tip_set.remove(t), "a passed tip was held");
            }
            self.tip_set.extend(change.added.iter().copied());
            self.summaries.insert(author, plan.tip_summaries[&author].1);
            out.tips.insert(author, change);
        }
        out
    }

    /// Sign and store the next entry of `key`'s chain (after its highest tip).
    pub fn append(&mut self, key: &AgentKey, payload: &[u8], now_ms: u64) -> SignedEntry {
        self.append_reporting(key, payload, now_ms).0
    }

    /// [`MemStore::append`], and what the write did. The entry follows the
    /// highest tip `key` signs now (a chain forked by another holder of an
    /// old key is extended on its owner's branch), else the highest tip; it
    /// commits to `key`'s next key when the chain commits to none yet
    /// ([`AgentKey::committing_to`]), as agora-store's append does.
    pub fn append_reporting(&mut self, key: &AgentKey, payload: &[u8], now_ms: u64) -> (SignedEntry, Imported) {
        let tips = self.tips(&key.agent_id());
        let held = |h: &Head| &self.entries[&(h.author, h.seq, h.id)].0;
        let own = tips.iter().filter(|h| held(h).header().signing_key() == key.public_key()).max_by_key(|h| (h.seq, h.id));
        let prev = own.or_else(|| tips.iter().max()).map(|h| SignedEntry::clone(held(h)));
        let header = next_header(key.agent_id(), prev.as_ref(), now_ms, payload).expect("header").commit_if_none(key.commitment());
        let e = SignedEntry::sign(header, key);
        // Signed here, as agora-store's append does: not verified again.
        let r = self.write(vec![Offered { entry: e.clone(), payload: Some(payload.to_vec()) }], e.header().timestamp_ms);
        assert_eq!(r.outcome, ImportOutcome::Stored, "a local append");
        (e, r)
    }

    /// Sign and store a key event (`protocol-spec/keys.md`) of `key`'s
    /// agent directly after `after`, any held entry of its chain, as
    /// agora-store's `Store::append_key_event` does: signed by `key` (the
    /// pre-committed next key, for a rotation), committing to `next`. A
    /// revocation follows the last entry its owner vouches for, below the
    /// tip, and forks the chain there. Planned by the import rules as any
    /// entry: a key event they refuse (a rotation by a key the predecessor
    /// did not commit to) is not stored, and the outcome says why.
    pub fn append_key_event(
        &mut self,
        key: &AgentKey,
        after: &EntryId,
        event: KeyEvent,
        next: [u8; 32],
        payload: &[u8],
        now_ms: u64,
    ) -> (SignedEntry, Imported) {
        let (prev, _) = self.get(after).expect("a key event follows a held entry");
        let prev = SignedEntry::clone(prev);
        assert_eq!(prev.header().author, key.agent_id(), "a key event follows an entry of its own agent");
        let header = next_header(key.agent_id(), Some(&prev), now_ms, payload).expect("header").key_event_by(event, key.public_key(), next);
        let e = SignedEntry::sign(header, key);
        let r = self.write(vec![Offered { entry: e.clone(), payload: Some(payload.to_vec()) }], e.header().timestamp_ms);
        (e, r)
    }

    /// Store an entry signed elsewhere (a fork, a test's own chain).
    pub fn put(&mut self, e: &SignedEntry, payload: Option<&[u8]>, now_ms: u64) -> Imported {
        let c = agora_core::verify::check_entries(vec![(e.clone(), payload.map(<[u8]>::to_vec))]).expect("valid entry");
        self.import(c, now_ms)
    }

    /// The tips of `author`'s chain (several when it is forked).
    pub fn tips(&self, author: &AgentId) -> Vec<Head> {
        self.author_tips(author).map(|t| Head { author: t.author, seq: t.seq, id: t.id }).collect()
    }

    /// `author`'s tips, lowest seq first.
    fn author_tips(&self, author: &AgentId) -> impl Iterator<Item = EntryRef> + '_ {
        let author = *author;
        self.tip_set.range(EntryRef { author, seq: 0, id: EntryId([0; 32]) }..).take_while(move |t| t.author == author).copied()
    }

    /// The tips of every author.
    pub fn heads(&self) -> Vec<Head> {
        self.tip_set.iter().map(|t| Head { author: t.author, seq: t.seq, id: t.id }).collect()
    }

    /// The highest seq held of `author` (0: none).
    pub fn max_seq(&self, author: &AgentId) -> u64 {
        self.summaries.get(author).map_or(0, |s| s.head.seq)
    }

    /// What the driver reads for a `Serve`.
    pub fn serve(&self, s: &ServeRequest) -> Vec<(u64, WireEntry)> {
        let first = s.start.after.map_or(EntryId([0; 32]), |id| id);
        self.entries
            .range((s.author, s.start.seq, first)..)
            .take_while(|((a, _, _), _)| *a == s.author)
            .filter(|((_, seq, id), _)| s.start.after.is_none() || *seq > s.start.seq || Some(*id) > s.start.after)
            .take(s.read_max)
            .map(|((_, seq, _), (e, p))| (*seq, WireEntry { entry: e.encode(), payload: p.as_deref().map(<[u8]>::to_vec) }))
            .collect()
    }

    /// What the store holds, as far as its views go: its entries, fork
    /// proofs and payloads (counts and digests). Two stores with the same
    /// hold the same (but for a collision of XORed ids).
    pub fn contents(&self) -> Contents {
        (self.entries.len(), self.digest, self.proofs.len(), self.payloads_missing, self.payload_digest)
    }

    /// Entries held without their payload.
    pub fn missing_payloads(&self) -> Vec<EntryRef> {
        self.entries.iter().filter(|((_, _, id), (_, p))| p.is_none() && !self.redacted.contains_key(id)).map(|(_, (e, _))| e.entry_ref()).collect()
    }

    /// What is known of entry `id`'s payload, `payload` as held: held,
    /// redacted here (its residue), or missing.
    pub fn content(&self, id: &EntryId, payload: &Option<Rc<[u8]>>) -> Payload {
        match (payload, self.redacted.get(id)) {
            (Some(p), _) => Payload::Held(p.to_vec()),
            (None, Some(residue)) => Payload::Redacted(Some(residue.to_vec())),
            (None, None) => Payload::Missing,
        }
    }

    /// Is entry `id`'s payload here, or redacted here (as complete as this
    /// store will hold it)?
    pub fn payload_settled(&self, id: &EntryId) -> bool {
        self.get(id).is_some_and(|(_, p)| p.is_some()) || self.redacted.contains_key(id)
    }

    /// Redact entry `id`'s payload, as `agora redact` does: the payload is
    /// dropped and its residue kept (`residue`: what it meant without its
    /// text, made by the payload's format), and no import brings it back. The payload digest is left as it was: the
    /// store holds what it will ever hold of this payload, as one that has
    /// it does. `false` when the payload is not held here (never received,
    /// or redacted already).
    pub fn redact(&mut self, id: &EntryId, residue: impl FnOnce(&[u8]) -> Vec<u8>) -> bool {
        let Some((author, seq)) = self.ids.get(id).copied() else { return false };
        let Some(held) = self.entries.get_mut(&(author, seq, *id)) else { return false };
        let Some(payload) = held.1.take() else { return false };
        let residue: Rc<[u8]> = residue(&payload).into();
        self.bytes = self.bytes - payload.len() as u64 + residue.len() as u64;
        self.redacted.insert(*id, residue);
        true
    }
}

impl Held for MemStore {
    type Error = std::convert::Infallible;

    fn locate(&self, id: &EntryId) -> Result<Option<(AgentId, u64)>, Self::Error> {
        Ok(self.ids.get(id).copied())
    }

    fn load(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<Option<SignedEntry>, Self::Error> {
        Ok(self.entries.get(&(*author, seq, *id)).map(|(e, _)| SignedEntry::clone(e)))
    }

    fn payload_missing(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<bool, Self::Error> {
        Ok(self.entries.get(&(*author, seq, *id)).is_some_and(|(_, p)| p.is_none()) && !self.redacted.contains_key(id))
    }

    fn tip_summary(&self, author: &AgentId) -> Result<Option<TipSummary>, Self::Error> {
        Ok(self.summaries.get(author).copied())
    }

    fn is_tip(&self, entry: &EntryRef) -> Result<bool, Self::Error> {
        Ok(self.tip_set.contains(entry))
    }

    fn proven(&self, author: &AgentId, seq: u64) -> Result<bool, Self::Error> {
        Ok(self.proofs.contains_key(&(*author, seq)))
    }

    fn first_at(&self, author: &AgentId, seq: u64) -> Result<Option<SignedEntry>, Self::Error> {
        Ok(self
            .entries
            .range((*author, seq, EntryId([0; 32]))..)
            .next()
            .filter(|((a, s, _), _)| a == author && *s == seq)
            .map(|(_, (e, _))| SignedEntry::clone(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::verify::check_entries;

    /// A payload redacted here never comes back: the same entry imported
    /// again with its payload leaves the residue in its place, the store
    /// does not list it as missing (so nothing seeks it), and a second
    /// redaction finds nothing to redact.
    #[test]
    fn a_redacted_payload_never_comes_back() {
        let key = AgentKey::from_seed([7; 32]);
        let mut store = MemStore::default();
        let e = store.append(&key, b"the secret", 1);
        assert!(store.redact(&e.id(), |_| b"residue".to_vec()));
        assert!(!store.redact(&e.id(), |_| b"residue".to_vec()), "redacted once");
        let again = check_entries(vec![(e.clone(), Some(b"the secret".to_vec()))]).expect("valid");
        let r = store.import(again, 2);
        assert_eq!(r.outcome, ImportOutcome::Stored);
        assert!(r.filled.is_empty() && r.stored.is_empty(), "nothing filled, nothing new");
        assert!(store.get(&e.id()).expect("held").1.is_none(), "the payload stays away");
        assert!(store.missing_payloads().is_empty() && store.payload_settled(&e.id()));
        assert!(matches!(store.content(&e.id(), &None), Payload::Redacted(Some(r)) if r == b"residue"));
    }
}
