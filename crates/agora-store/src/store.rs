//! Opening, creating and checking a store directory.

use crate::error::{StoreError, db};
use crate::keys::*;
use agora_core::import::{TipChange, TipSummary};
use agora_core::verify::verify_signature;
use agora_core::{AgentId, EntryId, SignedEntry};
use rocksdb::{ColumnFamily, ColumnFamilyDescriptor, DB, Options, WriteOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The value of `meta/format`: names the layout version of this store.
pub const STORE_FORMAT: &[u8] = b"agora-store/5";

/// The format of stores without the `key_events` family; opening one
/// migrates it (see [`Store::open`]).
pub const STORE_FORMAT_4: &[u8] = b"agora-store/4";

/// The format of stores whose `ids` rows did not name the key that signed
/// (every row author and seq); opening one migrates it (see [`Store::open`]).
pub const STORE_FORMAT_3: &[u8] = b"agora-store/3";

/// The format of stores whose `heads` row listed every tip of an author
/// (before `forked_tips` existed); opening one migrates it (see [`Store::open`]).
pub const STORE_FORMAT_2: &[u8] = b"agora-store/2";

/// The format of stores written before the `missing` family existed; opening
/// one migrates it (see [`Store::open`]).
pub const STORE_FORMAT_1: &[u8] = b"agora-store/1";

/// Every column family of a store of the current format, in the order they
/// are created.
pub const COLUMN_FAMILIES: [&str; 10] =
    [CF_META, CF_ENTRIES, CF_PAYLOADS, CF_REDACTIONS, CF_IDS, CF_HEADS, CF_FORKS, CF_MISSING, CF_FORKED_TIPS, CF_KEY_EVENTS];

/// The families of formats 3 and 4.
const FAMILIES_3: [&str; 9] = [CF_META, CF_ENTRIES, CF_PAYLOADS, CF_REDACTIONS, CF_IDS, CF_HEADS, CF_FORKS, CF_MISSING, CF_FORKED_TIPS];

/// The column families of each format, from 1: formats 2, 3 and 5 each
/// add one family, format 4 none (it changes the `ids` rows).
const FAMILIES_BY_FORMAT: [&[&str]; 5] = [
    &[CF_META, CF_ENTRIES, CF_PAYLOADS, CF_REDACTIONS, CF_IDS, CF_HEADS, CF_FORKS],
    &[CF_META, CF_ENTRIES, CF_PAYLOADS, CF_REDACTIONS, CF_IDS, CF_HEADS, CF_FORKS, CF_MISSING],
    &FAMILIES_3,
    &FAMILIES_3,
    &COLUMN_FAMILIES,
];

/// The `meta/format` value of each format, from 1.
const FORMATS: [&[u8]; 5] = [STORE_FORMAT_1, STORE_FORMAT_2, STORE_FORMAT_3, STORE_FORMAT_4, STORE_FORMAT];

/// How a store is opened.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Create the store if the directory is missing or empty.
    pub create: bool,
    /// Sync the write-ahead log on every write (the default). With `false`, a
    /// crash of the machine (not of the process) can lose the latest writes;
    /// RocksDB never loses or tears an acknowledged batch on a process crash.
    pub sync: bool,
    /// Most bytes all column families' memtables may hold together before
    /// RocksDB flushes them. With the block cache, this bounds the store's
    /// memory, whatever the number of entries held.
    pub memtable_bytes_max: usize,
    /// Size of the one block cache shared by every column family (data,
    /// index and filter blocks all count against it). 8 MiB by default:
    /// what is read again soon (the pinned top levels of the indexes and
    /// filters, their partitions, recent blocks) fits, and a block evicted
    /// from it is read back from the operating system's page cache, which
    /// is not the node's memory. At 32 MiB, a node holding a million
    /// entries kept 31 MiB of it resident for no measured gain in its reads.
    pub block_cache_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { create: false, sync: true, memtable_bytes_max: 48 << 20, block_cache_bytes: 8 << 20 }
    }
}

/// What a committed write changed, as told to the [`Store::set_observer`]
/// observer (the node daemon gossips new entries and keeps its in-memory
/// views current with it).
#[derive(Clone, Debug, Default)]
pub struct CommitNotice {
    /// The entries were appended here (signed by a local key), not imported.
    pub appended: bool,
    /// Entries newly stored, in the order they were written (a chain's
    /// entries in seq order), with their payloads when held.
    pub entries: Vec<(SignedEntry, Option<Vec<u8>>)>,
    /// Entries whose payload changed (redacted here, or filled in by an
    /// import): views built from payloads must re-read them.
    pub payloads_changed: Vec<EntryId>,
    /// Forks found: (author, seq), with their proofs stored.
    pub forks: Vec<(AgentId, u64)>,
    /// What the write changed of each author's tips (tips passed, tips
    /// added): what a reader of the tips needs to stay current, costing
    /// what the write added however many tips the author has.
    pub tip_changes: BTreeMap<AgentId, TipChange>,
    /// A payload was redacted: a view that kept its text anywhere (a
    /// published document's history) must be made again without it.
    pub redacted: bool,
}

/// Called after every committed write, with the write lock held, so notices
/// arrive in commit order. It must not block (send to a channel).
pub type Observer = std::sync::Arc<dyn Fn(CommitNotice) + Send + Sync>;

/// An open store. One process at a time: RocksDB's lock file refuses a second
/// opener, and within the process, writes are serialised by a mutex so that
/// two appends can never both extend the same tip.
pub struct Store {
    pub(crate) db: DB,
    pub(crate) path: PathBuf,
    pub(crate) sync: bool,
    pub(crate) write_lock: Mutex<()>,
    pub(crate) observer: Mutex<Option<Observer>>,
    /// Long reads open, and erasures waiting for them (`readers.rs`).
    pub(crate) readers: crate::readers::Readers,
}

impl Drop for Store {
    /// No read is open any more: erase what redactions left for them.
    fn drop(&mut self) {
        self.erase_due();
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).field("sync", &self.sync).finish()
    }
}

/// Memory RocksDB holds, by kind (see [`Store::memory_usage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryUsage {
    /// Memtables, active and waiting to be flushed.
    pub memtables_bytes: u64,
    /// The block cache (data, index and filter blocks).
    pub block_cache_bytes: u64,
    /// Of which pinned (in use, or pinned index and filter blocks).
    pub block_cache_pinned_bytes: u64,
    /// Open table readers outside the cache.
    pub table_readers_bytes: u64,
}

fn db_options(options: &StoreOptions) -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(false);
    opts.create_missing_column_families(false);
    opts.set_paranoid_checks(true);
    opts.increase_parallelism(2);
    opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    // One memtable budget across all column families: the busiest (entries,
    // payloads) may use most of it, and the total stays bounded.
    opts.set_db_write_buffer_size(options.memtable_bytes_max);
    opts.set_write_buffer_size((options.memtable_bytes_max / 3).max(1 << 20));
    opts.set_max_write_buffer_number(2);
    // Column families flush at different rates; without a cap, the log is
    // kept for the slowest, and reopening replays all of it into memory.
    opts.set_max_total_wal_size((2 * options.memtable_bytes_max) as u64);
    opts.set_max_open_files(512);
    opts.set_keep_log_file_num(4);
    opts
}

/// Options of one column family; every family shares one block cache.
fn cf_options(options: &StoreOptions, name: &str, cache: &rocksdb::Cache) -> Options {
    let mut cf_opts = db_options(options);
    let mut block = rocksdb::BlockBasedOptions::default();
    block.set_block_cache(cache);
    // Index and filter blocks count against the cache too, so their
    // memory does not grow with the number of entries held.
    block.set_cache_index_and_filter_blocks(true);
    block.set_cache_index_and_filter_blocks_with_high_priority(true);
    block.set_pin_l0_filter_and_index_blocks_in_cache(true);
    // Indexes and filters in small partitions behind a pinned top
    // level: a point lookup loads one 4 KiB partition, not a whole
    // file's filter (megabytes once a level holds millions of ids,
    // read and checksummed again whenever the cache evicted it).
    block.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
    block.set_partition_filters(true);
    block.set_metadata_block_size(4096);
    block.set_pin_top_level_index_and_filter(true);
    if name == CF_ENTRIES || name == CF_IDS || name == CF_HEADS || name == CF_FORKED_TIPS {
        // Small, hot values: bloom filters make point lookups cheap.
        block.set_bloom_filter(10.0, false);
    }
    cf_opts.set_block_based_table_factory(&block);
    cf_opts
}

/// Mode 0700 on the store's directory (and any directory in it), 0600 on
/// every file in it, whatever they had: RocksDB creates its files with the
/// process's umask (the `agora-node` program sets 077 for the files made
/// from now on), and a store, or a directory made before `agora init`, may
/// have been left readable by others.
/// Mode 0700 on `dir` and every directory under it, 0600 on every file.
///
/// Runs on an open store, so RocksDB's background threads may delete a file
/// (an obsolete log, a compacted table) while the walk reads the directory: a
/// file that is gone has nothing to protect, and is skipped.
pub(crate) fn make_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    for item in std::fs::read_dir(dir)? {
        let item = item?;
        let result = (|| {
            let kind = item.file_type()?;
            if kind.is_dir() {
                make_private(&item.path())
            } else if kind.is_file() && item.metadata()?.permissions().mode() & 0o777 != 0o600 {
                std::fs::set_permissions(item.path(), std::fs::Permissions::from_mode(0o600))
            } else {
                Ok(())
            }
        })();
        match result {
            Err(e) if gone(&e) => {}
            other => other?,
        }
    }
    Ok(())
}

fn not_a_store(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::NotAStore { path: path.to_path_buf(), reason: reason.into() }
}

impl Store {
    /// Open (or, with `options.create`, create) the store in `path`.
    ///
    /// A directory that exists and is not empty must already be an Agora store:
    /// a RocksDB database with exactly [`COLUMN_FAMILIES`] and the right
    /// `meta/format`. Anything else is refused with [`StoreError::NotAStore`]
    /// before RocksDB may create a file in it. Reopening then checks every tip
    /// (see [`Store::check_tips`]).
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let fresh = match std::fs::read_dir(path) {
            Ok(mut dir) => dir.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(not_a_store(path, format!("cannot read directory: {e}"))),
        };
        if fresh && !options.create {
            return Err(not_a_store(path, "directory is missing or empty (run `agora init`)"));
        }
        let store = if fresh { Self::create(path, options)? } else { Self::open_existing(path, options)? };
        make_private(path).map_err(|e| not_a_store(path, format!("cannot make the store private (mode 0700, its files 0600): {e}")))?;
        store.check_tips()?;
        Ok(store)
    }

    fn create(path: &Path, options: &StoreOptions) -> Result<Self, StoreError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(|e| not_a_store(path, format!("cannot create directory: {e}")))?;
        let mut opts = db_options(options);
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = Self::open_db(path, &opts, options, &COLUMN_FAMILIES)?;
        let store = Self::wrap(db, path, options);
        let mut batch = rocksdb::WriteBatch::default();
        batch.put_cf(store.cf(CF_META)?, META_FORMAT_KEY, STORE_FORMAT);
        store.write(batch)?;
        Ok(store)
    }

    fn open_existing(path: &Path, options: &StoreOptions) -> Result<Self, StoreError> {
        if !path.join("CURRENT").is_file() {
            return Err(not_a_store(path, "no RocksDB CURRENT file: the directory was made by something else"));
        }
        let mut found = DB::list_cf(&Options::default(), path).map_err(|e| StoreError::Corrupt {
            location: path.display().to_string(),
            problem: format!("cannot read the RocksDB manifest, so the directory is damaged or not a RocksDB database: {e}"),
        })?;
        found.retain(|cf| cf != "default");
        found.sort();
        let sorted = |cfs: &[&str]| {
            let mut v: Vec<String> = cfs.iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        };
        // The format the families are those of (a migration that stopped
        // between creating a family and its batch leaves the next format's).
        let Some(families) = FAMILIES_BY_FORMAT.iter().position(|f| sorted(f) == found) else {
            return Err(not_a_store(path, format!("a RocksDB database with column families {found:?}, expected {:?}", sorted(&COLUMN_FAMILIES))));
        };
        let database = Self::open_db(path, &db_options(options), options, FAMILIES_BY_FORMAT[families])?;
        let mut store = Self::wrap(database, path, options);
        let format = store.db.get_cf(store.cf(CF_META)?, META_FORMAT_KEY).map_err(db("reading meta/format"))?;
        let Some(format) = format else { return Err(not_a_store(path, "meta/format is missing")) };
        // A format's own families, or the next format's.
        let fits = |v: usize| [v, v + 1].iter().any(|f| FAMILIES_BY_FORMAT.get(*f).is_some_and(|f| sorted(f) == found));
        let version = match FORMATS.iter().position(|f| *f == &format[..]) {
            Some(v) if fits(v) => v,
            Some(v) => return Err(not_a_store(path, format!("store format {} with the column families of format {}", v + 1, families + 1))),
            None => return Err(not_a_store(path, format!("unknown store format {:?}", String::from_utf8_lossy(&format)))),
        };
        if version == 0 {
            store.migrate_from_1(options)?;
        }
        if version <= 1 {
            store.migrate_from_2(options)?;
        }
        if version <= 2 {
            store.migrate_from_3()?;
        }
        if version <= 3 {
            store.migrate_from_4(options)?;
        }
        Ok(store)
    }

    /// Create the column family `name` unless a migration that stopped
    /// before its batch already did.
    fn create_family(&mut self, options: &StoreOptions, name: &'static str) -> Result<(), StoreError> {
        if self.db.cf_handle(name).is_none() {
            self.db
                .create_cf(name, &cf_options(options, name, &rocksdb::Cache::new_lru_cache(options.block_cache_bytes)))
                .map_err(db("creating a column family"))?;
        }
        Ok(())
    }

    /// Format 4 → 5: add the `key_events` family and fill it with a row
    /// per entry with a key event (a rotation, a recovery), found by one
    /// pass over the entries, then set the format, in one batch. A crash
    /// before the batch leaves a format-4 store with an empty extra family,
    /// which the next open migrates again.
    fn migrate_from_4(&mut self, options: &StoreOptions) -> Result<(), StoreError> {
        self.create_family(options, CF_KEY_EVENTS)?;
        let mut batch = rocksdb::WriteBatch::default();
        for row in self.db.iterator_cf(self.cf(CF_ENTRIES)?, rocksdb::IteratorMode::Start) {
            let (key, bytes) = row.map_err(db("reading entries"))?;
            let entry = decode_stored(&key, &bytes)?;
            if let Some(event) = key_event_value(entry.header().key_event()) {
                batch.put_cf(self.cf(CF_KEY_EVENTS)?, &key, event);
            }
        }
        batch.put_cf(self.cf(CF_META)?, META_FORMAT_KEY, STORE_FORMAT);
        self.write(batch)
    }

    /// Format 3 → 4: the `ids` row of every entry signed by a key other
    /// than its author id (after a rotation or a recovery) names that key,
    /// found by one pass over the entries; the format is set in the same
    /// batch, so a crash before it leaves a format-3 store, migrated again
    /// on the next open.
    fn migrate_from_3(&mut self) -> Result<(), StoreError> {
        let mut batch = rocksdb::WriteBatch::default();
        for row in self.db.iterator_cf(self.cf(CF_ENTRIES)?, rocksdb::IteratorMode::Start) {
            let (key, bytes) = row.map_err(db("reading entries"))?;
            let entry = decode_stored(&key, &bytes)?;
            let h = entry.header();
            if h.signing_key() != h.author {
                batch.put_cf(self.cf(CF_IDS)?, entry.id().as_bytes(), id_value(&h.author, h.seq, &h.signing_key()));
            }
        }
        batch.put_cf(self.cf(CF_META)?, META_FORMAT_KEY, STORE_FORMAT_4);
        self.write(batch)
    }

    /// Format 2 → 3: each author's `heads` row, which listed every tip,
    /// becomes its head and tip count, and the tips of every author with
    /// more than one get a `forked_tips` row each; the format is set in the
    /// same batch. A crash before the batch leaves a format-2 store with an
    /// empty extra family, which the next open migrates again.
    fn migrate_from_2(&mut self, options: &StoreOptions) -> Result<(), StoreError> {
        self.create_family(options, CF_FORKED_TIPS)?;
        let mut batch = rocksdb::WriteBatch::default();
        for row in self.db.iterator_cf(self.cf(CF_HEADS)?, rocksdb::IteratorMode::Start) {
            let (key, value) = row.map_err(db("reading heads"))?;
            let location = format!("heads/{}", hex_short(&key));
            let author =
                <[u8; 32]>::try_from(&key[..]).map(AgentId).map_err(|_| StoreError::Corrupt { location: location.clone(), problem: "malformed key".into() })?;
            let malformed = || StoreError::Corrupt { location: location.clone(), problem: "malformed tips list (format 2)".into() };
            let tips = decode_heads_2(&author, &value).ok_or_else(malformed)?;
            let top = tips.iter().map(|t| t.seq).max().unwrap_or(0);
            let head = *tips.iter().find(|t| t.seq == top).ok_or_else(malformed)?;
            batch.put_cf(self.cf(CF_HEADS)?, author.as_bytes(), encode_heads(&TipSummary { head, count: tips.len() as u64 }));
            if tips.len() > 1 {
                for t in &tips {
                    batch.put_cf(self.cf(CF_FORKED_TIPS)?, entry_key(&author, t.seq, &t.id), []);
                }
            }
        }
        batch.put_cf(self.cf(CF_META)?, META_FORMAT_KEY, STORE_FORMAT_3);
        self.write(batch)
    }

    /// Format 1 → 2: add the `missing` family and fill it with every entry
    /// held with neither its payload nor a redaction row, then set the format,
    /// in one batch. A crash before the batch leaves a version-1 store with an
    /// empty extra family, which the next open migrates again.
    fn migrate_from_1(&mut self, options: &StoreOptions) -> Result<(), StoreError> {
        self.create_family(options, CF_MISSING)?;
        let mut batch = rocksdb::WriteBatch::default();
        let mut payloads = self.db.raw_iterator_cf(self.cf(CF_PAYLOADS)?);
        payloads.seek_to_first();
        let mut entries = self.db.raw_iterator_cf(self.cf(CF_ENTRIES)?);
        entries.seek_to_first();
        while let Some(key) = entries.key() {
            while payloads.key().is_some_and(|k| k < key) {
                payloads.next();
            }
            if payloads.key() != Some(key) && self.db.get_pinned_cf(self.cf(CF_REDACTIONS)?, key).map_err(db("reading redactions"))?.is_none() {
                batch.put_cf(self.cf(CF_MISSING)?, key, []);
            }
            entries.next();
        }
        entries.status().map_err(db("reading entries"))?;
        payloads.status().map_err(db("reading payloads"))?;
        batch.put_cf(self.cf(CF_META)?, META_FORMAT_KEY, STORE_FORMAT_2);
        self.write(batch)
    }

    fn open_db(path: &Path, opts: &Options, options: &StoreOptions, families: &[&str]) -> Result<DB, StoreError> {
        let cache = rocksdb::Cache::new_lru_cache(options.block_cache_bytes);
        let cfs = families.iter().map(|name| ColumnFamilyDescriptor::new(*name, cf_options(options, name, &cache)));
        DB::open_cf_descriptors(opts, path, cfs).map_err(|e| {
            let text = e.to_string();
            if text.contains("lock") || text.contains("LOCK") {
                StoreError::Locked { path: path.to_path_buf(), detail: text }
            } else if e.kind() == rocksdb::ErrorKind::Corruption {
                StoreError::Corrupt { location: path.display().to_string(), problem: text }
            } else {
                StoreError::Db { during: "open", source: e }
            }
        })
    }

    fn wrap(db: DB, path: &Path, options: &StoreOptions) -> Self {
        Self { db, path: path.to_path_buf(), sync: options.sync, write_lock: Mutex::new(()), observer: Mutex::new(None), readers: Default::default() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Be told of every committed write from now on (replaces any earlier
    /// observer). See [`CommitNotice`].
    pub fn set_observer(&self, observer: Option<Observer>) {
        *self.observer.lock().unwrap_or_else(|p| p.into_inner()) = observer;
    }

    /// Is anyone observing? Writers build a [`CommitNotice`] only then.
    pub(crate) fn observed(&self) -> bool {
        self.observer.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Tell the observer; called by writers after their batch is committed,
    /// with the write lock held.
    pub(crate) fn notify(&self, notice: CommitNotice) {
        let observer = self.observer.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(f) = observer {
            f(notice);
        }
    }

    /// What RocksDB holds in memory now, summed over column families (for
    /// status displays and memory benchmarks).
    pub fn memory_usage(&self) -> Result<MemoryUsage, StoreError> {
        let mut usage = MemoryUsage::default();
        for name in COLUMN_FAMILIES {
            let cf = self.cf(name)?;
            let prop = |p: &str| -> Result<u64, StoreError> { Ok(self.db.property_int_value_cf(cf, p).map_err(db("reading memory properties"))?.unwrap_or(0)) };
            usage.memtables_bytes += prop("rocksdb.size-all-mem-tables")?;
            usage.table_readers_bytes += prop("rocksdb.estimate-table-readers-mem")?;
            // One cache is shared by every column family.
            usage.block_cache_bytes = prop("rocksdb.block-cache-usage")?;
            usage.block_cache_pinned_bytes = prop("rocksdb.block-cache-pinned-usage")?;
        }
        Ok(usage)
    }

    /// Write every memtable to disk and wait. Nothing is lost without it
    /// (the write-ahead log holds what the memtables hold), but a store
    /// flushed before it closes reopens without replaying its log into memory.
    pub fn flush(&self) -> Result<(), StoreError> {
        let cfs: Vec<&ColumnFamily> = COLUMN_FAMILIES.iter().map(|name| self.cf(name)).collect::<Result<_, _>>()?;
        self.db.flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default()).map_err(db("flushing memtables"))
    }

    pub(crate) fn cf(&self, name: &'static str) -> Result<&ColumnFamily, StoreError> {
        self.db.cf_handle(name).ok_or_else(|| StoreError::Corrupt { location: format!("column family {name}"), problem: "missing".into() })
    }

    pub(crate) fn write(&self, batch: rocksdb::WriteBatch) -> Result<(), StoreError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync);
        self.db.write_opt(batch, &wo).map_err(db("write"))
    }

    /// Load and decode the entry stored under (author, seq, id), checking that
    /// the stored bytes hash to the id in the key.
    pub(crate) fn load_signed(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<Option<SignedEntry>, StoreError> {
        let key = entry_key(author, seq, id);
        let Some(bytes) = self.db.get_pinned_cf(self.cf(CF_ENTRIES)?, key).map_err(db("reading an entry"))? else {
            return Ok(None);
        };
        decode_stored(&key, &bytes).map(Some)
    }

    /// Check every tip: it exists, decodes, hashes to its id, is correctly
    /// signed, is at the recorded seq, and nothing stored extends it; and every
    /// author's highest entry is a tip. Run on every open. Reads only.
    pub fn check_tips(&self) -> Result<(), StoreError> {
        let corrupt = |location: String, problem: &str| StoreError::Corrupt { location, problem: problem.into() };
        for item in self.db.iterator_cf(self.cf(CF_HEADS)?, rocksdb::IteratorMode::Start) {
            let (key, value) = item.map_err(db("reading heads"))?;
            let location = format!("heads/{}", hex_short(&key));
            let author = <[u8; 32]>::try_from(&key[..]).map(AgentId).map_err(|_| corrupt(location.clone(), "malformed key"))?;
            let summary = decode_heads(&author, &value).ok_or_else(|| corrupt(location.clone(), "malformed head and tip count"))?;
            let tips = self.tips_of(&summary)?;
            if tips.len() as u64 != summary.count {
                return Err(corrupt(location, &format!("the tip count says {} but {} tips are listed", summary.count, tips.len())));
            }
            let top = tips.iter().map(|t| t.seq).max().unwrap_or(0);
            if tips.iter().find(|t| t.seq == top) != Some(&summary.head) {
                return Err(corrupt(location, "the head is not the first tip at the highest seq"));
            }
            for tip in tips {
                let location = format!("{location} tip {}", tip.id);
                let entry = self.load_signed(&author, tip.seq, &tip.id)?.ok_or_else(|| corrupt(location.clone(), "tip names an entry that is not stored"))?;
                verify_signature(&entry).map_err(|e| corrupt(location.clone(), &e.to_string()))?;
                if self.children(&author, tip.seq, &tip.id)?.next().is_some() {
                    return Err(corrupt(location, "tip has a stored successor"));
                }
            }
        }
        for summary in self.authors()? {
            let last = summary.max_seq;
            if !summary.tips.iter().any(|t| t.seq == last) {
                return Err(corrupt(format!("author {}", summary.author), "highest entry is not a tip"));
            }
        }
        Ok(())
    }

    /// Entries at (author, seq + 1) whose backlink is `id`.
    pub(crate) fn children<'a>(&'a self, author: &AgentId, seq: u64, id: &EntryId) -> Result<impl Iterator<Item = SignedEntry> + 'a, StoreError> {
        let id = *id;
        let mut out = Vec::new();
        if let Some(next) = seq.checked_add(1) {
            for entry in self.entries_at(author, next)? {
                if entry.header().backlink == Some(id) {
                    out.push(entry);
                }
            }
        }
        Ok(out.into_iter())
    }

    /// Every stored entry at (author, seq): more than one means a fork.
    pub(crate) fn entries_at(&self, author: &AgentId, seq: u64) -> Result<Vec<SignedEntry>, StoreError> {
        let prefix = seq_prefix(author, seq);
        let mut out = Vec::new();
        let iter = self.db.iterator_cf(self.cf(CF_ENTRIES)?, rocksdb::IteratorMode::From(&prefix, rocksdb::Direction::Forward));
        for item in iter {
            let (key, value) = item.map_err(db("reading entries"))?;
            if !key.starts_with(&prefix) {
                break;
            }
            out.push(decode_stored(&key, &value)?);
        }
        Ok(out)
    }
}

/// Decode a stored entry and check it against its key.
pub(crate) fn decode_stored(key: &[u8], bytes: &[u8]) -> Result<SignedEntry, StoreError> {
    let location = || format!("entries/{}", hex_short(key));
    let (author, seq, id) = split_entry_key(key).ok_or_else(|| StoreError::Corrupt { location: location(), problem: "malformed key".into() })?;
    let entry = SignedEntry::decode(bytes).map_err(|e| StoreError::Corrupt { location: location(), problem: format!("stored entry does not decode: {e}") })?;
    let h = entry.header();
    if entry.id() != id || h.author != author || h.seq != seq {
        return Err(StoreError::Corrupt {
            location: location(),
            problem: format!("stored entry is {} but its key says author {author}, seq {seq}, id {id}", entry.entry_ref()),
        });
    }
    Ok(entry)
}

pub(crate) fn hex_short(bytes: &[u8]) -> String {
    let n = bytes.len().min(48);
    let mut s = String::with_capacity(2 * n + 3);
    for b in &bytes[..n] {
        s.push_str(&format!("{b:02x}"));
    }
    if bytes.len() > n {
        s.push_str("...");
    }
    s
}
