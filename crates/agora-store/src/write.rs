//! Appends, imports and redactions: each one atomic `WriteBatch`.
//!
//! Imports (and appends after a named tip) are planned by the import rules
//! in `agora_core::import`, the same rules the simulator's stores keep, and
//! the plan is written here as one batch. The rules see the store plus what
//! the import holds, so a pack can carry a chain (and its forks) whose
//! earlier entries are in the same batch.
//!
//! Work per entry is bounded by a constant number of reads, whatever an
//! author has done before: a forked position gets exactly one fork proof
//! (the first two entries seen there), and further branches are stored and
//! counted without being paired with anything.

use crate::error::{ImportFailure, ImportProblem, StoreError, db};
use crate::keys::*;
use crate::read::encode_redaction;
use crate::readers::RedactReport;
use crate::store::{CommitNotice, Store};
use agora_core::entry::next_header_after;
use agora_core::import::{self, Deferred, Held, ImportPlan, Offered, PlanError, TipChange, TipSummary};
use agora_core::limits::VERIFY_BATCH_LEN;
use agora_core::verify::{CheckedEntry, EntryRef, verify_signatures};
use agora_core::{AgentId, AgentKey, EntryId, Header, SignedEntry};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Longest a redaction waits for the long reads that could hold the
/// payload (a `verify` of a store of millions of entries reads for tens of
/// seconds; one that takes longer erases the payload when it ends).
pub const REDACT_WAIT_MAX: Duration = Duration::from_secs(60);

/// Largest number of entries one append batch may create.
pub const APPEND_BATCH_MAX: usize = 100_000;
/// Largest number of entries one import may carry. The whole import is verified
/// in memory before anything is written, so this bounds its memory.
pub const IMPORT_ITEMS_MAX: usize = 4_000_000;

/// One entry offered for import.
#[derive(Debug, Clone)]
pub struct ImportItem {
    /// The signed entry.
    pub entry: SignedEntry,
    /// Its payload, if the source holds it.
    pub payload: Option<Vec<u8>>,
    /// Where it came from, for error messages (e.g. "pack.jsonl line 7").
    pub origin: String,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Entries newly stored.
    pub imported: usize,
    /// Entries skipped because their id was already stored (or repeated).
    pub already_present: usize,
    /// Already stored entries whose payload was not held (redacted at the
    /// source) and arrived now: filled in, after checking it against the hash.
    /// A payload redacted *here* is never restored.
    pub payloads_filled: usize,
    /// Fork proofs created by this import: (author, seq), each at most once
    /// over a store's life (one proof per forked position).
    pub forks: Vec<(AgentId, u64)>,
    /// Entries held back because they are dated in the future.
    pub deferred: Option<Deferred>,
}

// What an import plan did, counted on the thread that wrote (tests check
// that a write costs a bounded number of point reads and seeks per entry,
// whatever the number of branches at a seq, and that the tips index rows it
// writes grow with what it adds, not with the tips held). Per thread, so
// that tests running at once do not count each other's writes.
#[cfg(test)]
thread_local! {
    pub(crate) static STAGING_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    pub(crate) static TIPS_BYTES_WRITTEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn count_tips_bytes(_bytes: usize) {
    #[cfg(test)]
    TIPS_BYTES_WRITTEN.with(|c| c.set(c.get() + _bytes));
}

fn count_read() {
    #[cfg(test)]
    STAGING_READS.with(|c| c.set(c.get() + 1));
}

/// The store answering the import rules' questions (`agora_core::import`).
struct HeldRows<'s>(&'s Store);

impl Held for HeldRows<'_> {
    type Error = StoreError;

    fn locate(&self, id: &EntryId) -> Result<Option<(AgentId, u64)>, StoreError> {
        self.0.locate(id)
    }

    fn load(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<Option<SignedEntry>, StoreError> {
        count_read();
        self.0.load_signed(author, seq, id)
    }

    fn payload_missing(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<bool, StoreError> {
        Ok(self.0.payload_state(&entry_key(author, seq, id))? == crate::PayloadState::NotHeld)
    }

    fn tip_summary(&self, author: &AgentId) -> Result<Option<TipSummary>, StoreError> {
        count_read();
        self.0.tip_summary(author)
    }

    fn is_tip(&self, entry: &EntryRef) -> Result<bool, StoreError> {
        count_read();
        self.0.is_forked_tip(entry)
    }

    fn proven(&self, author: &AgentId, seq: u64) -> Result<bool, StoreError> {
        count_read();
        let s = self.0;
        let prefix = seq_prefix(author, seq);
        let mut forks = s.db.raw_iterator_cf(s.cf(CF_FORKS)?);
        forks.seek(prefix);
        let found = forks.key().is_some_and(|k| k.starts_with(&prefix));
        forks.status().map_err(db("reading fork proofs"))?;
        Ok(found)
    }

    fn first_at(&self, author: &AgentId, seq: u64) -> Result<Option<SignedEntry>, StoreError> {
        count_read();
        let s = self.0;
        let prefix = seq_prefix(author, seq);
        let mut entries = s.db.raw_iterator_cf(s.cf(CF_ENTRIES)?);
        entries.seek(prefix);
        if let (Some(k), Some(v)) = (entries.key(), entries.value())
            && k.starts_with(&prefix)
        {
            return Ok(Some(crate::store::decode_stored(k, v)?));
        }
        entries.status().map_err(db("reading entries"))?;
        Ok(None)
    }
}

impl Store {
    /// Write an import plan in one atomic batch: the new entries (and their
    /// missing-payload marks), the filled payloads, the fork proofs and the
    /// tips of every author touched. Returns the forked positions.
    fn write_plan(&self, plan: &ImportPlan) -> Result<Vec<(AgentId, u64)>, StoreError> {
        let mut batch = rocksdb::WriteBatch::default();
        for item in &plan.fresh {
            let (entry, payload) = (&item.entry, item.payload.as_deref());
            put_entry_rows(self, &mut batch, entry, payload)?;
            if payload.is_none() {
                // Never received: listed for replication to ask peers again.
                let h = entry.header();
                batch.put_cf(self.cf(CF_MISSING)?, entry_key(&h.author, h.seq, &entry.id()), []);
            }
        }
        for (at, payload) in &plan.fills {
            let key = entry_key(&at.author, at.seq, &at.id);
            batch.put_cf(self.cf(CF_PAYLOADS)?, key, payload);
            batch.delete_cf(self.cf(CF_MISSING)?, key);
        }
        let mut forks = Vec::with_capacity(plan.proofs.len());
        for proof in &plan.proofs {
            batch.put_cf(self.cf(CF_FORKS)?, fork_key(&proof.author(), proof.seq()), proof.encode());
            forks.push((proof.author(), proof.seq()));
        }
        let before_tips = batch.size_in_bytes();
        for (author, change) in &plan.tip_changes {
            let (before, after) = plan.tip_summaries[author];
            batch.put_cf(self.cf(CF_HEADS)?, author.as_bytes(), encode_heads(&after));
            let was_forked = before.is_some_and(|b| b.count > 1);
            // Branches never join: a forked author stays forked.
            assert!(after.count > 1 || !was_forked, "author {author} planned from {before:?} to one tip");
            if after.count == 1 {
                continue;
            }
            let tips = self.cf(CF_FORKED_TIPS)?;
            match before {
                // Forked now: its one tip before, unless passed, is listed too.
                Some(b) if !was_forked && !change.passed.contains(&b.head) => batch.put_cf(tips, entry_key(author, b.head.seq, &b.head.id), []),
                // Each row is put once and deleted once: a single delete.
                _ if was_forked => change.passed.iter().for_each(|t| batch.single_delete_cf(tips, entry_key(author, t.seq, &t.id))),
                _ => {}
            }
            for t in &change.added {
                batch.put_cf(tips, entry_key(author, t.seq, &t.id), []);
            }
        }
        count_tips_bytes(batch.size_in_bytes() - before_tips);
        self.write(batch)?;
        Ok(forks)
    }
}

/// A plan failure as the store reports it, naming the offending item's origin.
fn plan_failure(e: PlanError<StoreError>, origin: impl Fn(usize) -> String) -> StoreError {
    match e {
        PlanError::Held(e) => e,
        PlanError::Refused { index, problem } => StoreError::Import(ImportFailure { origin: origin(index), problem }),
        PlanError::Inconsistent { location, problem } => StoreError::Corrupt { location, problem },
    }
}

/// Entries of one append batch from which they are signed on every core
/// (below it, one thread signs faster than the pool starts).
const SIGN_PARALLEL_MIN: usize = 64;

/// The rows one entry adds: the entry, its id index row, its key event's
/// row if it has one, and its payload. The
/// caller updates the author's `heads` row.
fn put_entry_rows(s: &Store, batch: &mut rocksdb::WriteBatch, entry: &SignedEntry, payload: Option<&[u8]>) -> Result<(), StoreError> {
    let h = entry.header();
    let (author, seq, id) = (h.author, h.seq, entry.id());
    let key = entry_key(&author, seq, &id);
    batch.put_cf(s.cf(CF_ENTRIES)?, key, entry.encode());
    batch.put_cf(s.cf(CF_IDS)?, id.as_bytes(), id_value(&author, seq, &h.signing_key()));
    if let Some(event) = key_event_value(h.key_event()) {
        batch.put_cf(s.cf(CF_KEY_EVENTS)?, key, event);
    }
    if let Some(p) = payload {
        batch.put_cf(s.cf(CF_PAYLOADS)?, key, p);
    }
    Ok(())
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        // A poisoned lock means a writer panicked before writing its batch;
        // RocksDB is unaffected, so continuing is safe.
        self.write_lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tip of `author`'s chain for extending it: `None` for an empty chain,
    /// an error if the chain is forked.
    fn extendable_tip(&self, author: &AgentId) -> Result<Option<SignedEntry>, StoreError> {
        match self.tip_summary(author)? {
            None => Ok(None),
            Some(TipSummary { head: tip, count: 1 }) => self
                .load_signed(author, tip.seq, &tip.id)?
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt { location: format!("tip {}", tip.id), problem: "tip names an entry that is not stored".into() }),
            Some(many) => Err(StoreError::Forked { author: *author, tips: many.count as usize }),
        }
    }

    /// Sign and durably append one entry to `key`'s chain.
    pub fn append(&self, key: &AgentKey, payload: &[u8], now_ms: u64) -> Result<SignedEntry, StoreError> {
        let mut out = self.append_batch(key, &[payload], now_ms)?;
        out.pop().ok_or_else(|| StoreError::Limit("empty append".into()))
    }

    /// Append several entries in one atomic, synced write (group commit).
    /// Headers are chained first (ids do not depend on signatures), then signed
    /// in parallel on the rayon pool.
    pub fn append_batch(&self, key: &AgentKey, payloads: &[&[u8]], now_ms: u64) -> Result<Vec<SignedEntry>, StoreError> {
        let mut out = self.append_chains(&[(key, payloads)], now_ms)?;
        Ok(out.pop().unwrap_or_default())
    }

    /// Append to several agents' chains in one atomic, synced write: each
    /// `(key, payloads)` extends that key's chain in order, and either every
    /// entry is stored or none is. Each chain must have one tip (a forked
    /// chain is extended with [`Store::append_after`]); a key may appear once.
    /// Returns the entries signed, chain by chain.
    pub fn append_chains(&self, chains: &[(&AgentKey, &[&[u8]])], now_ms: u64) -> Result<Vec<Vec<SignedEntry>>, StoreError> {
        let lens: Vec<(&AgentKey, usize)> = chains.iter().map(|(k, p)| (*k, p.len())).collect();
        self.append_chains_with(&lens, now_ms, |chain, before| chains[chain].1[before.len()].to_vec())
    }

    /// [`Store::append_chains`] with payloads built in turn: `(key, n)`
    /// appends `n` entries to that key's chain, and `payload(chain, before)`
    /// makes the payload of the next entry of chain `chain` (its index in
    /// `chains`) given the ids of the entries `before` it in that chain in
    /// this batch, so an entry may name entries written in the same atomic
    /// write (an id is the hash of a header, known before anything is
    /// signed or stored).
    pub fn append_chains_with(
        &self,
        chains: &[(&AgentKey, usize)],
        now_ms: u64,
        mut payload: impl FnMut(usize, &[EntryId]) -> Vec<u8>,
    ) -> Result<Vec<Vec<SignedEntry>>, StoreError> {
        let total: usize = chains.iter().map(|(_, n)| n).sum();
        if total > APPEND_BATCH_MAX {
            return Err(StoreError::Limit(format!("{total} entries in one append batch (max {APPEND_BATCH_MAX})")));
        }
        let _guard = self.lock();
        let mut chain_headers = Vec::with_capacity(chains.len());
        let mut chain_payloads: Vec<Vec<Vec<u8>>> = Vec::with_capacity(chains.len());
        let mut prev_tips = Vec::with_capacity(chains.len());
        let mut authors = std::collections::BTreeSet::new();
        for (c, (key, len)) in chains.iter().enumerate() {
            let author = key.agent_id();
            if !authors.insert(author) {
                return Err(StoreError::Limit(format!("agent {author} appears twice in one append batch")));
            }
            let tip = self.extendable_tip(&author)?;
            prev_tips.push(tip.as_ref().map(SignedEntry::entry_ref));
            let mut prev = tip.map(|t| (t.header().clone(), t.id()));
            let (mut headers, mut ids, mut payloads) = (Vec::with_capacity(*len), Vec::with_capacity(*len), Vec::with_capacity(*len));
            for _ in 0..*len {
                let p = payload(c, &ids);
                let h = next_header_after(author, prev.as_ref().map(|(h, id)| (h, *id)), now_ms, &p)?.commit_if_none(key.commitment());
                if h.signing_key() != key.public_key() {
                    return Err(StoreError::Limit(format!(
                        "the key {} does not sign {author}'s chain now (its current key is {})",
                        key.public_key(),
                        h.signing_key()
                    )));
                }
                let id = h.id();
                prev = Some((h.clone(), id));
                ids.push(id);
                headers.push(h);
                payloads.push(p);
            }
            chain_headers.push(headers);
            chain_payloads.push(payloads);
        }
        // Every chain's headers signed together, on both cores once there
        // are enough of them: a batch spread over many agents signs as fast
        // as one long chain.
        let lens: Vec<usize> = chain_headers.iter().map(Vec::len).collect();
        let all: Vec<(usize, Header)> = chain_headers.into_iter().enumerate().flat_map(|(c, hs)| hs.into_iter().map(move |h| (c, h))).collect();
        let mut signed = if all.len() >= SIGN_PARALLEL_MIN {
            all.into_par_iter().with_min_len(SIGN_PARALLEL_MIN / 2).map(|(c, h)| SignedEntry::sign(h, chains[c].0)).collect::<Vec<_>>()
        } else {
            all.into_iter().map(|(c, h)| SignedEntry::sign(h, chains[c].0)).collect()
        }
        .into_iter();
        let signed_chains: Vec<Vec<SignedEntry>> = lens.iter().map(|n| signed.by_ref().take(*n).collect()).collect();
        let mut tip_changes = BTreeMap::new();
        for (((key, _), signed), prev_tip) in chains.iter().zip(&signed_chains).zip(prev_tips) {
            if let Some(last) = signed.last() {
                tip_changes.insert(key.agent_id(), TipChange { passed: prev_tip.into_iter().collect(), added: vec![last.entry_ref()] });
            }
        }
        // No fork check: each chain has one tip, which holds its highest seq,
        // so nothing stored can sit at the new seqs.
        let mut batch = rocksdb::WriteBatch::default();
        for (((key, _), payloads), signed) in chains.iter().zip(&chain_payloads).zip(&signed_chains) {
            for (entry, payload) in signed.iter().zip(payloads.iter()) {
                put_entry_rows(self, &mut batch, entry, Some(payload))?;
            }
            if let Some(last) = signed.last() {
                batch.put_cf(self.cf(CF_HEADS)?, key.agent_id().as_bytes(), encode_heads(&TipSummary { head: last.entry_ref(), count: 1 }));
            }
        }
        self.write(batch)?;
        if self.observed() && !tip_changes.is_empty() {
            let entries = chain_payloads
                .into_iter()
                .zip(&signed_chains)
                .flat_map(|(payloads, signed)| signed.iter().cloned().zip(payloads.into_iter().map(Some)))
                .collect();
            self.notify(CommitNotice { appended: true, entries, tip_changes, ..CommitNotice::default() });
        }
        Ok(signed_chains)
    }

    /// Import entries from elsewhere (a pack, a peer). The whole set is verified
    /// first: payload bindings, signatures (batched, in parallel), and each
    /// entry's link to a predecessor that is stored or earlier in `items`. If
    /// anything fails, nothing is written and the error names the item's origin.
    /// Entries already stored are skipped, so importing twice is a no-op.
    /// Entries dated more than `FUTURE_SKEW_MAX_MS` after `now_ms` are not
    /// stored yet, nor is anything in `items` that builds on them: they are
    /// reported in [`ImportReport::deferred`].
    pub fn import(&self, items: Vec<ImportItem>, now_ms: u64) -> Result<ImportReport, StoreError> {
        self.import_items(items, false, now_ms)
    }

    /// [`Store::import`] for entries whose signatures and payload bindings were
    /// already checked (by the replicator, in batches, as they arrived): the
    /// proof is in the type, so neither is checked again. Links are checked
    /// here, against what is stored.
    pub fn import_checked(&self, items: Vec<CheckedEntry>, origin: &str, now_ms: u64) -> Result<ImportReport, StoreError> {
        let items = items
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let (entry, payload) = c.into_parts();
                ImportItem { entry: entry.into_entry(), payload, origin: format!("{origin} item {i}") }
            })
            .collect();
        self.import_items(items, true, now_ms)
    }

    fn import_items(&self, items: Vec<ImportItem>, checked: bool, now_ms: u64) -> Result<ImportReport, StoreError> {
        if items.len() > IMPORT_ITEMS_MAX {
            return Err(StoreError::Limit(format!("{} entries in one import (max {IMPORT_ITEMS_MAX})", items.len())));
        }
        let _guard = self.lock();
        let (offered, origins): (Vec<Offered>, Vec<String>) = items.into_iter().map(|it| (Offered { entry: it.entry, payload: it.payload }, it.origin)).unzip();
        let origin = |index: usize| origins[index].clone();
        let held = HeldRows(self);
        let screened = import::screen(&held, offered, !checked, now_ms).map_err(|e| plan_failure(e, origin))?;
        if !checked {
            // Signatures, batched and in parallel. Report the first bad one in input order.
            let bad = screened
                .fresh
                .par_chunks(VERIFY_BATCH_LEN)
                .filter_map(|chunk| {
                    let refs: Vec<&SignedEntry> = chunk.iter().map(|(_, it)| &it.entry).collect();
                    verify_signatures(&refs).err().map(|e| {
                        let index = chunk.iter().find(|(_, it)| it.entry.id() == e.entry.id).map_or(chunk[0].0, |(i, _)| *i);
                        (index, e)
                    })
                })
                .min_by_key(|(index, _)| *index);
            if let Some((index, e)) = bad {
                return Err(StoreError::Import(ImportFailure { origin: origin(index), problem: ImportProblem::Signature(e) }));
            }
        }
        let plan = screened.plan(&held).map_err(|e| plan_failure(e, origin))?;
        let forks = self.write_plan(&plan)?;
        let report = ImportReport {
            imported: plan.fresh.len(),
            already_present: plan.already_present,
            payloads_filled: plan.fills.len(),
            forks,
            deferred: plan.deferred,
        };
        if self.observed() && (report.imported > 0 || report.payloads_filled > 0) {
            let payloads_changed = plan.fills.iter().map(|(at, _)| at.id).collect();
            let entries = plan.fresh.into_iter().map(|it| (it.entry, it.payload)).collect();
            self.notify(CommitNotice {
                appended: false,
                entries,
                payloads_changed,
                forks: report.forks.clone(),
                tip_changes: plan.tip_changes,
                redacted: false,
            });
        }
        Ok(report)
    }

    /// Delete an entry's payload and record when, with `residue`: what the
    /// payload meant without its text, made by the caller, which knows the
    /// payload's format (this store does not; see `agora_core::payload`). The
    /// header stays, so the chain still verifies, and views keep the entry's
    /// meaning.
    ///
    /// When this returns, no live file of the store holds the payload's bytes:
    /// the memtables are flushed (so the write-ahead log segments that held the
    /// payload become obsolete and are deleted), and the files that hold the
    /// payload's key are rewritten by a compaction forced down to the bottom
    /// level (a compaction that merely moves files would keep the bytes). See
    /// `protocol-spec/storage.md` for what remains outside the store's files.
    pub fn redact(&self, id: &EntryId, now_ms: u64, residue: Option<&[u8]>) -> Result<RedactReport, StoreError> {
        self.redact_waiting(id, now_ms, residue, REDACT_WAIT_MAX)
    }

    /// [`Store::redact`], waiting at most `wait_max` for the long reads that
    /// could still hold the payload (`readers.rs`): those that began before
    /// the deletion (a snapshot that sees it keeps it through compaction),
    /// then those that began while it was erased (they pin the files it
    /// replaced). The report says what was left: a read still open then
    /// erases the payload again when it ends (the last of them), or the
    /// store when it closes.
    pub fn redact_waiting(&self, id: &EntryId, now_ms: u64, residue: Option<&[u8]>, wait_max: Duration) -> Result<RedactReport, StoreError> {
        let key = {
            let _guard = self.lock();
            let (author, seq) = self.locate(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))?;
            let key = entry_key(&author, seq, id);
            let payloads = self.cf(CF_PAYLOADS)?;
            if self.db.get_pinned_cf(payloads, key).map_err(db("reading a payload"))?.is_none() {
                let redacted = self.db.get_pinned_cf(self.cf(CF_REDACTIONS)?, key).map_err(db("reading redactions"))?;
                return Err(if redacted.is_some() { StoreError::AlreadyRedacted(*id) } else { StoreError::PayloadNotHeld(*id) });
            }
            let mut batch = rocksdb::WriteBatch::default();
            batch.delete_cf(payloads, key);
            batch.put_cf(self.cf(CF_REDACTIONS)?, key, encode_redaction(now_ms, residue));
            self.write(batch)?;
            if self.observed() {
                self.notify(CommitNotice { payloads_changed: vec![*id], redacted: true, ..CommitNotice::default() });
            }
            key
        };
        // Outside the write lock: writers do not wait for the long reads.
        let started = Instant::now();
        let until = started + wait_max;
        self.readers.wait_older(self.readers.mark(), until);
        self.erase_deleted(&key)?;
        let mark = self.readers.mark();
        let (reads_left, oldest_read_age) = self.readers.wait_older(mark, until);
        if reads_left > 0 {
            self.readers.defer(mark, key.to_vec());
            // The reads may have ended since the wait did.
            self.erase_due();
        }
        Ok(RedactReport { waited: started.elapsed(), reads_left, oldest_read_age })
    }

    /// Make sure the bytes of a deleted payload are in no live file: flush
    /// every memtable (the log segments that held them are then obsolete and
    /// deleted), then rewrite the files holding the key down to the bottom
    /// level, which drops the deleted value and its tombstone.
    pub(crate) fn erase_deleted(&self, key: &[u8]) -> Result<(), StoreError> {
        self.flush()?;
        self.db.flush_wal(true).map_err(db("syncing the log"))?;
        let mut end = key.to_vec();
        end.push(0);
        let mut opts = rocksdb::CompactOptions::default();
        opts.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        opts.set_exclusive_manual_compaction(true);
        self.db.compact_range_cf_opt(self.cf(CF_PAYLOADS)?, Some(key), Some(&end[..]), &opts);
        Ok(())
    }

    /// Sign and durably append one entry to `key`'s own chain directly after
    /// `tip`, which must be one of that chain's current tips. Unlike
    /// [`Store::append`] this works on a forked chain: the caller names the
    /// branch, so nothing is picked silently. It is how an author extends the
    /// branch it keeps (for example with a signed fork resolution); what the
    /// payload means is not the store's business.
    ///
    /// The write is one atomic batch on the same path as an import: if the new
    /// seq is already taken on another branch, the new entry is kept beside it
    /// with a fork proof, exactly as for any other second entry at a position.
    pub fn append_after(&self, key: &AgentKey, tip: &EntryId, payload: &[u8], now_ms: u64) -> Result<SignedEntry, StoreError> {
        self.append_shaped(key, tip, true, payload, now_ms, |h| h.commit_if_none(key.commitment()))
    }

    /// Sign and durably append a key event (`protocol-spec/keys.md`) to
    /// `key`'s agent's chain directly after `after`, which may be any held
    /// entry of that chain: a revocation follows the last entry its owner
    /// vouches for, below the tip, and forks the chain there. `key` is the
    /// key that signs the event (the pre-committed next key for a rotation,
    /// the granted key for a recovery), and `next` the commitment to the key
    /// after it. The import rules check it as any entry: a rotation by a key
    /// the predecessor did not commit to is refused with the rule named.
    pub fn append_key_event(
        &self,
        key: &AgentKey,
        after: &EntryId,
        event: agora_core::KeyEvent,
        next: [u8; 32],
        payload: &[u8],
        now_ms: u64,
    ) -> Result<SignedEntry, StoreError> {
        self.append_shaped(key, after, false, payload, now_ms, |h| h.key_event_by(event, key.public_key(), next))
    }

    fn append_shaped(
        &self,
        key: &AgentKey,
        tip: &EntryId,
        tip_only: bool,
        payload: &[u8],
        now_ms: u64,
        shape: impl FnOnce(agora_core::Header) -> agora_core::Header,
    ) -> Result<SignedEntry, StoreError> {
        let _guard = self.lock();
        let author = key.agent_id();
        let count = self.tip_summary(&author)?.map_or(0, |s| s.count as usize);
        let named = match self.locate(tip)? {
            Some((a, seq)) if a == author => EntryRef { author, seq, id: *tip },
            _ => return Err(StoreError::NotATip { author, tip: *tip, tips: count }),
        };
        if tip_only && !self.is_tip(&named)? {
            return Err(StoreError::NotATip { author, tip: *tip, tips: count });
        }
        let prev = self
            .load_signed(&author, named.seq, &named.id)?
            .ok_or_else(|| StoreError::Corrupt { location: format!("tip {}", named.id), problem: "tip names an entry that is not stored".into() })?;
        let header = shape(next_header_after(author, Some((prev.header(), prev.id())), now_ms, payload)?);
        if header.signing_key() != key.public_key() {
            return Err(StoreError::Limit(format!("the key {} does not sign this chain now (its current key is {})", key.public_key(), header.signing_key())));
        }
        let entry = SignedEntry::sign(header, key);
        // Planned at the entry's own date: an author's own entry is never
        // deferred (its date is the later of the clock and its predecessor's).
        let dated = entry.header().timestamp_ms;
        let offered = vec![Offered { entry: entry.clone(), payload: Some(payload.to_vec()) }];
        let plan = import::plan_import(&HeldRows(self), offered, false, dated).map_err(|e| plan_failure(e, |_| "the appended entry".to_string()))?;
        // It is new, dated no later than the plan's clock and links to a held tip.
        assert!(plan.fresh.len() == 1 && plan.deferred.is_none(), "an entry appended after a tip was not planned for storing");
        let forks = self.write_plan(&plan)?;
        if self.observed() {
            self.notify(CommitNotice {
                appended: true,
                entries: vec![(entry.clone(), Some(payload.to_vec()))],
                payloads_changed: Vec::new(),
                forks,
                tip_changes: plan.tip_changes,
                redacted: false,
            });
        }
        Ok(entry)
    }
}
