//! Appends, imports and redactions: each one atomic `WriteBatch`.
//!
//! Every write goes through [`Staging`], which sees the store plus what the
//! current batch has staged, so that a pack can carry a chain (and its forks)
//! whose earlier entries are in the same batch.
//!
//! Work per staged entry is bounded by a constant number of reads, whatever
//! an author has done before: a forked position gets exactly one fork proof
//! (the first two entries seen there), and further branches are stored and
//! counted without being paired with anything.

use crate::error::{db, ImportFailure, ImportProblem, StoreError};
use crate::keys::*;
use crate::read::encode_redaction;
use crate::store::{CommitNotice, Store};
use agora_core::entry::next_header_after;
use agora_core::limits::{FUTURE_SKEW_MAX_MS, VERIFY_BATCH_LEN};
use agora_core::verify::{verify_link, verify_payload, verify_signatures, CheckedEntry, EntryRef};
use agora_core::{AgentId, AgentKey, EntryId, ForkProof, SignedEntry};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// Point reads and seeks the staging made (tests check that a write costs a
/// bounded number per entry, whatever the number of branches at a seq).
#[cfg(test)]
pub(crate) static STAGING_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_read() {
    #[cfg(test)]
    STAGING_READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A write batch plus an overlay of the entries staged in it.
pub(crate) struct Staging<'s> {
    store: &'s Store,
    batch: rocksdb::WriteBatch,
    staged: HashMap<EntryId, SignedEntry>,
    /// The first entry staged at each (author, seq): the rival of a second.
    staged_first: HashMap<(AgentId, u64), EntryId>,
    /// Positions known to hold a fork proof (stored or staged).
    proven: HashSet<(AgentId, u64)>,
    /// Tips of every author touched by this batch, as they will be after it.
    heads: BTreeMap<AgentId, BTreeMap<(u64, EntryId), EntryRef>>,
    /// Highest seq stored (before this batch) per author touched.
    stored_max: HashMap<AgentId, u64>,
    forks: Vec<(AgentId, u64)>,
}

impl<'s> Staging<'s> {
    pub(crate) fn new(store: &'s Store) -> Self {
        Self {
            store,
            batch: rocksdb::WriteBatch::default(),
            staged: HashMap::new(),
            staged_first: HashMap::new(),
            proven: HashSet::new(),
            heads: BTreeMap::new(),
            stored_max: HashMap::new(),
            forks: Vec::new(),
        }
    }

    /// Is this id stored or staged?
    fn contains(&self, id: &EntryId) -> Result<bool, StoreError> {
        Ok(self.staged.contains_key(id) || self.store.locate(id)?.is_some())
    }

    /// The entry with this id, staged or stored.
    fn lookup(&self, id: &EntryId) -> Result<Option<SignedEntry>, StoreError> {
        if let Some(e) = self.staged.get(id) {
            return Ok(Some(e.clone()));
        }
        count_read();
        match self.store.locate(id)? {
            Some((author, seq)) => self.store.load_signed(&author, seq, id),
            None => Ok(None),
        }
    }

    /// Stage a verified entry: the caller has checked its signature, its payload
    /// and its link to a stored or staged predecessor. Detects forks against
    /// both the store and the batch.
    fn stage(&mut self, entry: SignedEntry, payload: Option<&[u8]>) -> Result<(), StoreError> {
        let h = entry.header();
        let (author, seq, id) = (h.author, h.seq, entry.id());
        let s = self.store;
        // Else its rows and tip would be written twice and a fork with itself proven.
        assert!(!self.staged.contains_key(&id), "{} staged twice", entry.entry_ref());
        // A first entry has no predecessor, every other one has one (the
        // header's rule); else the tip at seq - 1 would be kept or a wrong one dropped.
        assert!(h.backlink.is_some() == (seq > 1), "{} breaks the backlink rule", entry.entry_ref());
        // Else the store would hold a gap: an entry whose predecessor is not stored.
        if let Some(parent) = h.backlink {
            assert!(
                self.staged.contains_key(&parent) || s.locate(&parent)?.is_some(),
                "{} staged before its predecessor",
                entry.entry_ref()
            );
        }
        put_entry_rows(s, &mut self.batch, &entry, payload)?;
        if payload.is_none() {
            // Never received: listed for replication to ask peers again.
            self.batch.put_cf(s.cf(CF_MISSING)?, entry_key(&author, seq, &id), []);
        }
        let tips = match self.heads.entry(author) {
            std::collections::btree_map::Entry::Occupied(tips) => tips.into_mut(),
            std::collections::btree_map::Entry::Vacant(slot) => {
                count_read();
                slot.insert(s.tips(&author)?.into_iter().map(|t| ((t.seq, t.id), t)).collect())
            }
        };
        if let Some(parent) = h.backlink {
            tips.remove(&(seq - 1, parent));
        }
        tips.insert((seq, id), entry.entry_ref());
        // Nothing stored can sit above the author's highest stored seq, so a
        // chain that only grows (the common case of sync) costs no seek here.
        let stored_max = match self.stored_max.get(&author) {
            Some(m) => *m,
            None => {
                count_read();
                let m = s.tips(&author)?.iter().map(|t| t.seq).max().unwrap_or(0);
                self.stored_max.insert(author, m);
                m
            }
        };
        if !self.proven.contains(&(author, seq)) {
            let rival = self.rival(&author, seq, &id, stored_max)?;
            if let Some(rival) = rival {
                // Else the proof would pair entries of another position.
                assert!(
                    rival.header().author == author && rival.header().seq == seq && rival.id() != id,
                    "the rival of {} is {}",
                    entry.entry_ref(),
                    rival.entry_ref()
                );
                // A second entry at this position is a fork: keep both, store
                // one proof; later branches are stored without a proof.
                let proof = ForkProof::new(rival, entry.clone()).map_err(|e| StoreError::Corrupt {
                    location: format!("{}", entry.entry_ref()),
                    problem: format!("conflicting entries failed to form a fork proof: {e}"),
                })?;
                // Else the proof written under fork_key(author, seq) would prove another position.
                assert!(proof.author() == author && proof.seq() == seq, "the proof for {} is of another position", entry.entry_ref());
                self.batch.put_cf(s.cf(CF_FORKS)?, fork_key(&author, seq), proof.encode());
                self.forks.push((author, seq));
                // One proof per forked position: else a second would overwrite the first.
                assert!(self.proven.insert((author, seq)), "a second proof at {author} seq {seq}");
            }
        }
        self.staged_first.entry((author, seq)).or_insert(id);
        self.staged.insert(id, entry);
        Ok(())
    }

    /// Another entry already at (author, seq), staged or stored, unless that
    /// position already has its proof (then `proven` is updated and `None`
    /// returned). At most two seeks.
    fn rival(&mut self, author: &AgentId, seq: u64, id: &EntryId, stored_max: u64) -> Result<Option<SignedEntry>, StoreError> {
        let s = self.store;
        if seq <= stored_max {
            count_read();
            let prefix = seq_prefix(author, seq);
            let mut forks = s.db.raw_iterator_cf(s.cf(CF_FORKS)?);
            forks.seek(prefix);
            if forks.key().is_some_and(|k| k.starts_with(&prefix)) {
                self.proven.insert((*author, seq));
                return Ok(None);
            }
            forks.status().map_err(db("reading fork proofs"))?;
        }
        if let Some(first) = self.staged_first.get(&(*author, seq))
            && first != id
        {
            let rival = self.staged.get(first).cloned();
            // Else a fork inside one batch would be stored without its proof.
            assert!(rival.is_some(), "{author} seq {seq}: the first entry staged there is not staged");
            return Ok(rival);
        }
        if seq <= stored_max {
            count_read();
            let prefix = seq_prefix(author, seq);
            let mut entries = s.db.raw_iterator_cf(s.cf(CF_ENTRIES)?);
            entries.seek(prefix);
            if let (Some(k), Some(v)) = (entries.key(), entries.value())
                && k.starts_with(&prefix)
            {
                return Ok(Some(crate::store::decode_stored(k, v)?));
            }
            entries.status().map_err(db("reading entries"))?;
        }
        Ok(None)
    }

    fn commit(mut self) -> Result<Vec<(AgentId, u64)>, StoreError> {
        for (author, tips) in &self.heads {
            // Else the author's heads row would be written empty: its chain lost to readers.
            assert!(!tips.is_empty(), "author {author} staged with no tip");
            // Nothing stored lies above the author's highest stored seq, so a
            // tip there is written by this batch; else the heads row would
            // name an entry that is neither stored nor written.
            let stored_max = self.stored_max.get(author).copied().unwrap_or(0);
            assert!(
                tips.values().all(|t| t.seq <= stored_max || self.staged.contains_key(&t.id)),
                "a tip of {author} above its stored entries is not staged"
            );
            let tips: Vec<EntryRef> = tips.values().copied().collect();
            self.batch.put_cf(self.store.cf(CF_HEADS)?, author.as_bytes(), encode_heads(&tips));
        }
        self.store.write(self.batch)?;
        Ok(self.forks)
    }
}

/// The rows one entry adds: the entry, its id index row and its payload. The
/// caller updates the author's `heads` row.
fn put_entry_rows(s: &Store, batch: &mut rocksdb::WriteBatch, entry: &SignedEntry, payload: Option<&[u8]>) -> Result<(), StoreError> {
    let h = entry.header();
    let (author, seq, id) = (h.author, h.seq, entry.id());
    let key = entry_key(&author, seq, &id);
    batch.put_cf(s.cf(CF_ENTRIES)?, key, entry.encode());
    batch.put_cf(s.cf(CF_IDS)?, id.as_bytes(), id_value(&author, seq));
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
        let tips = self.tips(author)?;
        match tips.as_slice() {
            [] => Ok(None),
            [tip] => self.load_signed(author, tip.seq, &tip.id)?.map(Some).ok_or_else(|| StoreError::Corrupt {
                location: format!("tip {}", tip.id),
                problem: "tip names an entry that is not stored".into(),
            }),
            many => Err(StoreError::Forked { author: *author, tips: many.len() }),
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
        if payloads.len() > APPEND_BATCH_MAX {
            return Err(StoreError::Limit(format!("{} entries in one append batch (max {APPEND_BATCH_MAX})", payloads.len())));
        }
        let _guard = self.lock();
        let author = key.agent_id();
        let tip = self.extendable_tip(&author)?;
        let mut prev = tip.map(|t| (t.header().clone(), t.id()));
        let mut headers = Vec::with_capacity(payloads.len());
        for payload in payloads {
            let h = next_header_after(author, prev.as_ref().map(|(h, id)| (h, *id)), now_ms, payload)?;
            prev = Some((h.clone(), h.id()));
            headers.push(h);
        }
        let signed: Vec<SignedEntry> = if headers.len() >= 2 * VERIFY_BATCH_LEN {
            headers.into_par_iter().with_min_len(VERIFY_BATCH_LEN).map(|h| SignedEntry::sign(h, key)).collect()
        } else {
            headers.into_iter().map(|h| SignedEntry::sign(h, key)).collect()
        };
        // No fork check: the chain has one tip, which holds its highest seq, so
        // nothing stored can sit at the new seqs.
        let mut batch = rocksdb::WriteBatch::default();
        for (entry, payload) in signed.iter().zip(payloads) {
            put_entry_rows(self, &mut batch, entry, Some(payload))?;
        }
        if let Some(last) = signed.last() {
            batch.put_cf(self.cf(CF_HEADS)?, author.as_bytes(), encode_heads(&[last.entry_ref()]));
        }
        self.write(batch)?;
        if self.observed() {
            let entries = signed.iter().cloned().zip(payloads.iter().map(|p| Some(p.to_vec()))).collect();
            self.notify(CommitNotice { appended: true, entries, ..CommitNotice::default() });
        }
        Ok(signed)
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
        let fail = |item: &ImportItem, problem: ImportProblem| StoreError::Import(ImportFailure { origin: item.origin.clone(), problem });
        let mut report = ImportReport::default();
        let mut fresh: Vec<ImportItem> = Vec::with_capacity(items.len());
        let mut seen: HashSet<EntryId> = HashSet::new();
        let mut held_back: HashSet<EntryId> = HashSet::new();
        let mut fills: Vec<([u8; ENTRY_KEY_LEN], Vec<u8>)> = Vec::new();
        let latest_ms = now_ms.saturating_add(FUTURE_SKEW_MAX_MS);
        for item in items {
            let id = item.entry.id();
            if !seen.insert(id) {
                report.already_present += 1;
                continue;
            }
            if let Some((author, seq)) = self.locate(&id)? {
                report.already_present += 1;
                let key = entry_key(&author, seq, &id);
                if let Some(p) = &item.payload
                    && self.payload_state(&key)? == crate::PayloadState::NotHeld
                {
                    if !checked {
                        verify_payload(&item.entry, p).map_err(|e| fail(&item, ImportProblem::Payload(e)))?;
                    }
                    fills.push((key, p.clone()));
                }
                continue;
            }
            let h = item.entry.header();
            if h.timestamp_ms > latest_ms || h.backlink.is_some_and(|b| held_back.contains(&b)) {
                held_back.insert(id);
                let d = report.deferred.get_or_insert(Deferred {
                    first: item.entry.entry_ref(),
                    count: 0,
                    until_ms: h.timestamp_ms.saturating_sub(FUTURE_SKEW_MAX_MS),
                });
                d.count += 1;
                continue;
            }
            if let Some(p) = &item.payload
                && !checked
            {
                verify_payload(&item.entry, p).map_err(|e| fail(&item, ImportProblem::Payload(e)))?;
            }
            fresh.push(item);
        }
        // Signatures, batched and in parallel. Report the first bad one in input order.
        let unchecked: &[ImportItem] = if checked { &[] } else { &fresh };
        let bad = unchecked
            .par_chunks(VERIFY_BATCH_LEN)
            .enumerate()
            .filter_map(|(i, chunk)| {
                let refs: Vec<&SignedEntry> = chunk.iter().map(|it| &it.entry).collect();
                verify_signatures(&refs).err().map(|e| (i, e))
            })
            .min_by_key(|(i, _)| *i);
        if let Some((_, e)) = bad {
            let item = fresh.iter().find(|it| it.entry.id() == e.entry.id).unwrap_or(&fresh[0]);
            return Err(fail(item, ImportProblem::Signature(e)));
        }
        let mut staging = Staging::new(self);
        for item in &fresh {
            let h = item.entry.header();
            if let Some(backlink) = h.backlink {
                let prev = staging
                    .lookup(&backlink)?
                    .ok_or_else(|| fail(item, ImportProblem::PredecessorMissing { entry: item.entry.entry_ref(), backlink }))?;
                verify_link(&prev, &item.entry).map_err(|e| fail(item, ImportProblem::Link(e)))?;
            }
            debug_assert!(!staging.contains(&item.entry.id())?);
            staging.stage(item.entry.clone(), item.payload.as_deref())?;
            report.imported += 1;
        }
        for (key, payload) in &fills {
            staging.batch.put_cf(self.cf(CF_PAYLOADS)?, key, payload);
            staging.batch.delete_cf(self.cf(CF_MISSING)?, key);
        }
        report.payloads_filled = fills.len();
        report.forks = staging.commit()?;
        if self.observed() && (report.imported > 0 || !fills.is_empty()) {
            let payloads_changed = fills.iter().filter_map(|(key, _)| crate::keys::split_entry_key(key).map(|(_, _, id)| id)).collect();
            let entries = fresh.into_iter().map(|it| (it.entry, it.payload)).collect();
            self.notify(CommitNotice { appended: false, entries, payloads_changed, forks: report.forks.clone() });
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
    pub fn redact(&self, id: &EntryId, now_ms: u64, residue: Option<&[u8]>) -> Result<(), StoreError> {
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
            self.notify(CommitNotice { payloads_changed: vec![*id], ..CommitNotice::default() });
        }
        self.erase_deleted(&key)
    }

    /// Make sure the bytes of a deleted payload are in no live file: flush
    /// every memtable (the log segments that held them are then obsolete and
    /// deleted), then rewrite the files holding the key down to the bottom
    /// level, which drops the deleted value and its tombstone.
    fn erase_deleted(&self, key: &[u8]) -> Result<(), StoreError> {
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
        let _guard = self.lock();
        let author = key.agent_id();
        let tips = self.tips(&author)?;
        let Some(named) = tips.iter().find(|t| t.id == *tip) else {
            return Err(StoreError::NotATip { author, tip: *tip, tips: tips.len() });
        };
        let prev = self.load_signed(&author, named.seq, &named.id)?.ok_or_else(|| StoreError::Corrupt {
            location: format!("tip {}", named.id),
            problem: "tip names an entry that is not stored".into(),
        })?;
        let header = next_header_after(author, Some((prev.header(), prev.id())), now_ms, payload)?;
        let entry = SignedEntry::sign(header, key);
        let mut staging = Staging::new(self);
        staging.stage(entry.clone(), Some(payload))?;
        let forks = staging.commit()?;
        if self.observed() {
            self.notify(CommitNotice { appended: true, entries: vec![(entry.clone(), Some(payload.to_vec()))], payloads_changed: Vec::new(), forks });
        }
        Ok(entry)
    }
}
