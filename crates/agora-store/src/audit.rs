//! Full verification of stored chains: every signature (batched, in parallel),
//! every payload hash, every link, and the tips index.
//!
//! Reading and verifying overlap: while the rayon pool verifies one block of
//! entries, the next block is read from RocksDB (`rayon::join`).

use crate::error::{StoreError, db};
use crate::keys::*;
use crate::store::{Store, decode_stored};
use agora_core::limits::VERIFY_BATCH_LEN;
use agora_core::verify::{EntryRef, verify_link, verify_payload, verify_signatures};
use agora_core::{AgentId, EntryId, SignedEntry};
use rayon::prelude::*;
use std::collections::BTreeSet;

/// Entries read per block: large enough to keep every core busy, small enough
/// to bound memory (a block of 1 MiB payloads is capped by `BLOCK_BYTES_MAX`).
const BLOCK_ENTRIES_MAX: usize = 8192;
const BLOCK_BYTES_MAX: usize = 64 << 20;
/// Problems listed per author before the rest are only counted.
const PROBLEMS_LISTED_MAX: usize = 100;

/// The result of verifying one author's stored chain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorAudit {
    /// The author.
    pub author: AgentId,
    /// Entries stored (all branches).
    pub entries: u64,
    /// Highest seq.
    pub max_seq: u64,
    /// Number of tips (more than one: forked).
    pub tips: usize,
    /// Seqs at which more than one entry is stored.
    pub fork_seqs: Vec<u64>,
    /// Payloads held and checked against their hash.
    pub payloads_held: u64,
    /// Payloads redacted here.
    pub payloads_redacted: u64,
    /// Payloads never received.
    pub payloads_not_held: u64,
    /// Every problem found (at most [`PROBLEMS_LISTED_MAX`] listed).
    pub problems: Vec<String>,
    /// Total problems, including those not listed.
    pub problem_count: usize,
}

/// The result of verifying a store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// One audit per author, in author order.
    pub authors: Vec<AuthorAudit>,
}

impl AuditReport {
    /// True if no problem was found. Forks are evidence, not problems.
    pub fn is_clean(&self) -> bool {
        self.authors.iter().all(|a| a.problem_count == 0)
    }
    /// Entries verified.
    pub fn entries(&self) -> u64 {
        self.authors.iter().map(|a| a.entries).sum()
    }
}

struct Raw {
    key: Vec<u8>,
    value: Vec<u8>,
    payload: Option<Vec<u8>>,
}

struct Checked {
    entry: Option<SignedEntry>,
    payload_held: bool,
    problem: Option<String>,
}

impl AuthorAudit {
    fn problem(&mut self, text: String) {
        self.problem_count += 1;
        if self.problems.len() < PROBLEMS_LISTED_MAX {
            self.problems.push(text);
        }
    }
}

impl Store {
    /// Verify the stored chain of `author`, or of every author, using a rayon
    /// pool of `threads` threads (0: one per core). Problems in stored data are
    /// reported, not returned as errors; an `Err` means the store could not be read.
    pub fn audit(&self, author: Option<&AgentId>, threads: usize) -> Result<AuditReport, StoreError> {
        self.audit_observed(author, threads, &|_| {})
    }

    /// [`Store::audit`], calling `progress` with the number of entries
    /// checked so far after each block (a progress bar's position).
    pub fn audit_observed(&self, author: Option<&AgentId>, threads: usize, progress: &(dyn Fn(u64) + Sync)) -> Result<AuditReport, StoreError> {
        let pool =
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| StoreError::Limit(format!("cannot start verification threads: {e}")))?;
        let authors: Vec<AgentId> = match author {
            Some(a) => vec![*a],
            None => self.authors()?.into_iter().map(|s| s.author).collect(),
        };
        let mut report = AuditReport::default();
        let mut done = 0u64;
        for a in authors {
            let audit = pool.install(|| self.audit_author(&a, &|n| progress(done + n)))?;
            done += audit.entries;
            report.authors.push(audit);
        }
        Ok(report)
    }

    fn audit_author(&self, author: &AgentId, progress: &(dyn Fn(u64) + Sync)) -> Result<AuthorAudit, StoreError> {
        let mut audit = AuthorAudit { author: *author, ..Default::default() };
        // One snapshot for the entries, payloads, redactions and the tips
        // index: a node storing meanwhile (a sync) would otherwise show a
        // tips index ahead of the entries read, a problem that is not there.
        // Registered first, so released after the snapshot and iterators: a
        // redaction meanwhile waits for it (`readers.rs`).
        let _read = self.long_read();
        let snapshot = self.db.snapshot();
        let mut entries = snapshot.raw_iterator_cf(self.cf(CF_ENTRIES)?);
        let mut payloads = snapshot.raw_iterator_cf(self.cf(CF_PAYLOADS)?);
        entries.seek(author.as_bytes());
        payloads.seek(author.as_bytes());
        let mut links = LinkState::default();

        let mut block = read_block(&mut entries, &mut payloads, author)?;
        while !block.is_empty() {
            let (checked, next) = rayon::join(|| check_block(&block), || read_block(&mut entries, &mut payloads, author));
            for (raw, c) in block.iter().zip(checked) {
                audit.entries += 1;
                if let Some(p) = c.problem {
                    audit.problem(p);
                }
                let Some(entry) = c.entry else { continue };
                if c.payload_held {
                    audit.payloads_held += 1;
                } else if snapshot.get_pinned_cf(self.cf(CF_REDACTIONS)?, &raw.key).map_err(db("reading redactions"))?.is_some() {
                    audit.payloads_redacted += 1;
                } else {
                    audit.payloads_not_held += 1;
                }
                if let Some(p) = links.visit(entry) {
                    audit.problem(p);
                }
            }
            progress(audit.entries);
            block = next?;
        }
        entries.status().map_err(db("reading entries"))?;
        links.finish();
        audit.max_seq = links.level_seq;
        audit.fork_seqs = links.fork_seqs;
        let corrupt = |problem: &str| StoreError::Corrupt { location: format!("heads/{author}"), problem: problem.into() };
        let stored_tips: BTreeSet<EntryRef> = match snapshot.get_pinned_cf(self.cf(CF_HEADS)?, author.as_bytes()).map_err(db("reading heads"))? {
            None => BTreeSet::new(),
            Some(v) => {
                let summary = decode_heads(author, &v).ok_or_else(|| corrupt("malformed head and tip count"))?;
                let mut tips = BTreeSet::from([summary.head]);
                let mut rows = snapshot.raw_iterator_cf(self.cf(CF_FORKED_TIPS)?);
                rows.seek(author.as_bytes());
                while let Some(key) = rows.key().filter(|k| k.starts_with(author.as_bytes())) {
                    let (_, seq, id) = split_entry_key(key).ok_or_else(|| corrupt("malformed forked tip key"))?;
                    tips.insert(EntryRef { author: *author, seq, id });
                    rows.next();
                }
                rows.status().map_err(db("reading forked tips"))?;
                if tips.len() as u64 != summary.count {
                    audit.problem(format!("tips index of {author} counts {} tips but lists {}", summary.count, tips.len()));
                }
                tips
            }
        };
        audit.tips = stored_tips.len();
        if stored_tips != links.leaves {
            audit.problem(format!(
                "tips index of {author} lists {} tips but the chain has {} entries without successors",
                stored_tips.len(),
                links.leaves.len()
            ));
        }
        Ok(audit)
    }
}

/// Read the next block of one author's entries with their payloads (the two
/// column families share keys, so the iterators advance in step).
fn read_block(entries: &mut rocksdb::DBRawIterator<'_>, payloads: &mut rocksdb::DBRawIterator<'_>, author: &AgentId) -> Result<Vec<Raw>, StoreError> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < BLOCK_ENTRIES_MAX && bytes < BLOCK_BYTES_MAX {
        let (Some(key), Some(value)) = (entries.key(), entries.value()) else { break };
        if !key.starts_with(author.as_bytes()) {
            break;
        }
        while payloads.key().is_some_and(|pk| pk < key) {
            payloads.next();
        }
        let payload = match (payloads.key(), payloads.value()) {
            (Some(pk), Some(pv)) if pk == key => Some(pv.to_vec()),
            _ => None,
        };
        bytes += value.len() + payload.as_ref().map_or(0, Vec::len);
        out.push(Raw { key: key.to_vec(), value: value.to_vec(), payload });
        entries.next();
    }
    entries.status().map_err(db("reading entries"))?;
    payloads.status().map_err(db("reading payloads"))?;
    Ok(out)
}

/// Decode, check against the key, verify signatures (batched) and payloads.
fn check_block(block: &[Raw]) -> Vec<Checked> {
    block
        .par_chunks(VERIFY_BATCH_LEN)
        .flat_map_iter(|chunk| {
            let mut out: Vec<Checked> = chunk
                .iter()
                .map(|raw| match decode_stored(&raw.key, &raw.value) {
                    Ok(entry) => {
                        let problem = raw.payload.as_ref().and_then(|p| verify_payload(&entry, p).err()).map(|e| e.to_string());
                        Checked { payload_held: raw.payload.is_some(), entry: Some(entry), problem }
                    }
                    Err(e) => Checked { entry: None, payload_held: false, problem: Some(e.to_string()) },
                })
                .collect();
            let signed: Vec<&SignedEntry> = out.iter().filter_map(|c| c.entry.as_ref()).collect();
            if let Err(first) = verify_signatures(&signed) {
                // Name every bad signature in the chunk, not just the first.
                for c in out.iter_mut() {
                    if let Some(Err(err)) = c.entry.as_ref().map(agora_core::verify::verify_signature) {
                        c.problem = Some(err.to_string());
                    }
                }
                debug_assert!(out.iter().any(|c| c.problem.is_some()), "{first}");
            }
            out
        })
        .collect()
}

/// Link checking across a chain that may fork: the entries of the previous seq
/// are kept, and each entry must link to one of them.
#[derive(Default)]
struct LinkState {
    level_seq: u64,
    level: Vec<SignedEntry>,
    prev_level: Vec<SignedEntry>,
    has_child: BTreeSet<EntryId>,
    leaves: BTreeSet<EntryRef>,
    fork_seqs: Vec<u64>,
}

impl LinkState {
    fn visit(&mut self, entry: SignedEntry) -> Option<String> {
        let seq = entry.header().seq;
        if seq != self.level_seq {
            self.close_level();
            if seq != self.level_seq + 1 {
                let gap = format!("gap in the chain: seq {} follows seq {}", seq, self.level_seq);
                self.prev_level.clear();
                self.level_seq = seq;
                self.level.push(entry);
                return Some(gap);
            }
            self.level_seq = seq;
        } else if self.level.len() == 1 {
            self.fork_seqs.push(seq);
        }
        let problem = match entry.header().backlink {
            None => None,
            Some(back) => match self.prev_level.iter().find(|p| p.id() == back) {
                Some(prev) => {
                    self.has_child.insert(prev.id());
                    verify_link(prev, &entry).err().map(|e| e.to_string())
                }
                None => Some(format!("{}: its backlink {back} names no stored entry at seq {}", entry.entry_ref(), seq - 1)),
            },
        };
        self.level.push(entry);
        problem
    }

    /// Move the current level to `prev_level`, recording the previous level's
    /// entries that nothing extended as leaves.
    fn close_level(&mut self) {
        for e in self.prev_level.drain(..) {
            if !self.has_child.contains(&e.id()) {
                self.leaves.insert(e.entry_ref());
            }
        }
        self.has_child.clear();
        self.prev_level = std::mem::take(&mut self.level);
    }

    fn finish(&mut self) {
        self.close_level();
        self.close_level();
    }
}
