//! Lookups: by id or prefix, by chain, tips, authors, fork proofs, export order.

use crate::error::{StoreError, db};
use crate::keys::*;
use crate::store::{Store, decode_stored};
use agora_core::import::TipSummary;
use agora_core::verify::EntryRef;
use agora_core::{AgentId, EntryId, ForkProof, KeyEvent, SignedEntry};
use rocksdb::{Direction, IteratorMode};

/// What the store holds of an entry's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadState {
    /// The payload, checked against the header when it was stored.
    Held(Vec<u8>),
    /// Redacted here, at this time (ms since the Unix epoch).
    Redacted {
        /// When.
        at_ms: u64,
        /// What the payload meant, without its text, as the caller of
        /// [`Store::redact`] gave it (see `agora_core::payload`); `None` for a
        /// redaction made before residues were kept.
        residue: Option<Vec<u8>>,
    },
    /// Never received: the entry was imported without it (redacted at its
    /// source, or stripped on the way). Listed by [`Store::missing_payloads`].
    NotHeld,
}

impl PayloadState {
    /// What the views read: the payload, the residue of a redacted one, or
    /// nothing yet (see `agora_core::payload`).
    pub fn content(&self) -> agora_core::Content<'_> {
        match self {
            PayloadState::Held(p) => agora_core::Content::Held(p),
            PayloadState::Redacted { residue, .. } => agora_core::Content::Redacted(residue.as_deref()),
            PayloadState::NotHeld => agora_core::Content::Missing,
        }
    }
}

/// An entry as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// The signed header.
    pub signed: SignedEntry,
    /// The payload, or why it is absent.
    pub payload: PayloadState,
}

/// An entry as stored, undecoded (see [`Store::chain_raw`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawStoredEntry {
    /// Its seq, from the store's key.
    pub seq: u64,
    /// The signed entry's bytes (see protocol-spec/entry-format.md).
    pub entry: Vec<u8>,
    /// The payload, or why it is absent.
    pub payload: PayloadState,
}

/// One author's chain at a glance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorSummary {
    /// The author.
    pub author: AgentId,
    /// Highest seq stored.
    pub max_seq: u64,
    /// Entries with no stored successor; more than one means the chain is forked.
    pub tips: Vec<EntryRef>,
    /// Number of forked seqs of this author (one fork proof is stored for each).
    pub fork_proofs: usize,
}

impl Store {
    /// Where an entry is: (author, seq), if stored.
    pub fn locate(&self, id: &EntryId) -> Result<Option<(AgentId, u64)>, StoreError> {
        Ok(self.index_row(id)?.map(|(author, seq, _)| (author, seq)))
    }

    /// The `ids` row of an entry: (author, seq, the key that signed it).
    fn index_row(&self, id: &EntryId) -> Result<Option<(AgentId, u64, AgentId)>, StoreError> {
        let Some(v) = self.db.get_pinned_cf(self.cf(CF_IDS)?, id.as_bytes()).map_err(db("reading ids"))? else {
            return Ok(None);
        };
        decode_id_value(&v).map(Some).ok_or_else(|| StoreError::Corrupt { location: format!("ids/{id}"), problem: "malformed row".into() })
    }

    /// The entry with this id and what is held of its payload.
    pub fn get(&self, id: &EntryId) -> Result<Option<StoredEntry>, StoreError> {
        let Some((author, seq)) = self.locate(id)? else { return Ok(None) };
        let signed = self
            .load_signed(&author, seq, id)?
            .ok_or_else(|| StoreError::Corrupt { location: format!("ids/{id}"), problem: "id is indexed but the entry is not stored".into() })?;
        let payload = self.payload_state(&entry_key(&author, seq, id))?;
        Ok(Some(StoredEntry { signed, payload }))
    }

    /// The signed entry with this id, without its payload.
    pub fn get_signed(&self, id: &EntryId) -> Result<Option<SignedEntry>, StoreError> {
        match self.locate(id)? {
            Some((author, seq)) => self.load_signed(&author, seq, id),
            None => Ok(None),
        }
    }

    /// Which key signed the entry with this id: its header's signer, the
    /// author's id when its inception key signed (`protocol-spec/keys.md`).
    /// One point read: the `ids` row names the signer when it is not the
    /// author (`protocol-spec/storage.md`).
    pub fn signing_key_of(&self, id: &EntryId) -> Result<Option<AgentId>, StoreError> {
        Ok(self.index_row(id)?.map(|(_, _, signer)| signer))
    }

    /// What is held of the payload of the entry of `author` at `seq` with id
    /// `id`, read without the entry itself (one read when it is held; an
    /// entry not stored reads as not held): for views that know where an
    /// entry is and need only its meaning.
    pub fn payload_at(&self, author: &AgentId, seq: u64, id: &EntryId) -> Result<PayloadState, StoreError> {
        self.payload_state(&entry_key(author, seq, id))
    }

    pub(crate) fn payload_state(&self, key: &[u8]) -> Result<PayloadState, StoreError> {
        if let Some(p) = self.db.get_cf(self.cf(CF_PAYLOADS)?, key).map_err(db("reading a payload"))? {
            return Ok(PayloadState::Held(p));
        }
        match self.db.get_pinned_cf(self.cf(CF_REDACTIONS)?, key).map_err(db("reading redactions"))? {
            Some(v) => decode_redaction(&v)
                .ok_or_else(|| StoreError::Corrupt { location: format!("redactions/{}", crate::store::hex_short(key)), problem: "malformed row".into() }),
            None => Ok(PayloadState::NotHeld),
        }
    }

    /// Resolve a full id or a unique hex prefix of one.
    pub fn resolve(&self, text: &str) -> Result<EntryId, StoreError> {
        let prefix = text.trim().to_ascii_lowercase();
        if prefix.is_empty() || prefix.len() > 64 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::BadPrefix(text.to_string()));
        }
        // Lower bound: the prefix padded with zeros.
        let mut padded = prefix.clone();
        padded.extend(std::iter::repeat_n('0', 64 - prefix.len()));
        let mut start = [0u8; 32];
        hex::decode_to_slice(&padded, &mut start).map_err(|_| StoreError::BadPrefix(text.to_string()))?;
        let mut found = Vec::new();
        for item in self.db.iterator_cf(self.cf(CF_IDS)?, IteratorMode::From(&start, Direction::Forward)) {
            let (key, _) = item.map_err(db("reading ids"))?;
            if !hex::encode(&key).starts_with(&prefix) {
                break;
            }
            found.push(key);
            if found.len() > 1 {
                return Err(StoreError::Ambiguous { prefix, count: found.len() });
            }
        }
        let key = found.pop().ok_or(StoreError::NotFound(prefix))?;
        let bytes: [u8; 32] = key[..].try_into().map_err(|_| StoreError::Corrupt { location: "ids".into(), problem: "malformed key".into() })?;
        Ok(EntryId(bytes))
    }

    /// Entries of `author` with seq ≥ `from_seq`, in (seq, id) order, at most
    /// `limit` of them. Forked positions yield every branch's entry.
    pub fn chain(&self, author: &AgentId, from_seq: u64, limit: usize) -> Result<Vec<StoredEntry>, StoreError> {
        let mut out = Vec::new();
        self.walk_chain(author, from_seq, limit, |key, value, payload| {
            out.push(StoredEntry { signed: decode_stored(key, value)?, payload });
            Ok(())
        })?;
        Ok(out)
    }

    /// Like [`Store::chain`], but the signed entries as stored bytes, not
    /// decoded: for serving them to a peer, which verifies them itself. Only
    /// the key is checked (it names the seq). With `after`, the entries of
    /// `from_seq` up to and including that id are skipped: a range cut inside
    /// a seq with many branches resumes after the last entry sent.
    pub fn chain_raw(&self, author: &AgentId, from_seq: u64, after: Option<&EntryId>, limit: usize) -> Result<Vec<RawStoredEntry>, StoreError> {
        let mut out = Vec::new();
        let start = match after {
            // The key just after (author, from_seq, id): the id with a zero byte appended.
            Some(id) => {
                let mut k = entry_key(author, from_seq, id).to_vec();
                k.push(0);
                k
            }
            None => seq_prefix(author, from_seq).to_vec(),
        };
        self.walk_chain_from(author, &start, limit, |key, value, payload| {
            let (_, seq, _) = split_entry_key(key)
                .ok_or_else(|| StoreError::Corrupt { location: format!("entries/{}", crate::store::hex_short(key)), problem: "malformed key".into() })?;
            out.push(RawStoredEntry { seq, entry: value.to_vec(), payload });
            Ok(())
        })?;
        Ok(out)
    }

    /// Visit `author`'s stored entries from `from_seq` in key order with
    /// their payload state, at most `limit` of them.
    fn walk_chain(
        &self,
        author: &AgentId,
        from_seq: u64,
        limit: usize,
        visit: impl FnMut(&[u8], &[u8], PayloadState) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.walk_chain_from(author, &seq_prefix(author, from_seq), limit, visit)
    }

    /// [`Store::walk_chain`] from any key of `author`'s range.
    fn walk_chain_from(
        &self,
        author: &AgentId,
        start: &[u8],
        limit: usize,
        mut visit: impl FnMut(&[u8], &[u8], PayloadState) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        // Payloads are keyed like entries: walk both in step (one seek each)
        // instead of a point lookup per entry. Only an entry whose payload is
        // absent costs a lookup (of its redaction). The iterator pins the
        // payloads' files while `visit` runs: registered first, released
        // last, so that a redaction waits for it (`readers.rs`).
        let _read = self.long_read();
        let mut payloads = self.db.raw_iterator_cf(self.cf(CF_PAYLOADS)?);
        payloads.seek(start);
        let mut entries = self.db.raw_iterator_cf(self.cf(CF_ENTRIES)?);
        entries.seek(start);
        let mut n = 0;
        while n < limit {
            let (Some(key), Some(value)) = (entries.key(), entries.value()) else { break };
            if !key.starts_with(author.as_bytes()) {
                break;
            }
            while payloads.key().is_some_and(|k| k < key) {
                payloads.next();
            }
            let payload = match (payloads.key(), payloads.value()) {
                (Some(k), Some(v)) if k == key => PayloadState::Held(v.to_vec()),
                _ => {
                    payloads.status().map_err(db("reading payloads"))?;
                    self.payload_state(key)?
                }
            };
            visit(key, value, payload)?;
            n += 1;
            entries.next();
        }
        entries.status().map_err(db("reading entries"))?;
        payloads.status().map_err(db("reading payloads"))?;
        Ok(())
    }

    /// Tips of `author`'s chain (entries with no stored successor), in
    /// (seq, id) order. More than one means the chain is forked.
    pub fn tips(&self, author: &AgentId) -> Result<Vec<EntryRef>, StoreError> {
        match self.tip_summary(author)? {
            None => Ok(Vec::new()),
            Some(summary) => self.tips_of(&summary),
        }
    }

    /// `author`'s head (its tip at the highest seq; of several there, the
    /// first by id) and number of tips, or `None` when nothing of it is
    /// held. One point read, however many tips the author has.
    pub fn tip_summary(&self, author: &AgentId) -> Result<Option<TipSummary>, StoreError> {
        match self.db.get_pinned_cf(self.cf(CF_HEADS)?, author.as_bytes()).map_err(db("reading heads"))? {
            None => Ok(None),
            Some(v) => decode_heads(author, &v)
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt { location: format!("heads/{author}"), problem: "malformed head and tip count".into() }),
        }
    }

    /// Is `entry` one of its author's tips? One point read at most.
    pub fn is_tip(&self, entry: &EntryRef) -> Result<bool, StoreError> {
        match self.tip_summary(&entry.author)? {
            None => Ok(false),
            Some(s) if s.count == 1 => Ok(s.head == *entry),
            Some(_) => self.is_forked_tip(entry),
        }
    }

    /// Does `forked_tips` list `entry` (an author with several tips)?
    pub(crate) fn is_forked_tip(&self, entry: &EntryRef) -> Result<bool, StoreError> {
        let key = entry_key(&entry.author, entry.seq, &entry.id);
        Ok(self.db.get_pinned_cf(self.cf(CF_FORKED_TIPS)?, key).map_err(db("reading forked tips"))?.is_some())
    }

    /// Every tip of the author `summary` describes, in (seq, id) order: its
    /// head alone, or the author's `forked_tips` rows.
    pub(crate) fn tips_of(&self, summary: &TipSummary) -> Result<Vec<EntryRef>, StoreError> {
        if summary.count == 1 {
            return Ok(vec![summary.head]);
        }
        let author = summary.head.author;
        let mut out = Vec::with_capacity(summary.count.min(1 << 20) as usize);
        let mut it = self.db.raw_iterator_cf(self.cf(CF_FORKED_TIPS)?);
        it.seek(author.as_bytes());
        while let Some(key) = it.key() {
            if !key.starts_with(author.as_bytes()) {
                break;
            }
            let (_, seq, id) =
                split_entry_key(key).ok_or_else(|| StoreError::Corrupt { location: format!("forked_tips/{author}"), problem: "malformed key".into() })?;
            out.push(EntryRef { author, seq, id });
            it.next();
        }
        it.status().map_err(db("reading forked tips"))?;
        Ok(out)
    }

    /// Every author with at least one stored entry. Costs one seek per author,
    /// not one read per entry.
    pub fn authors(&self) -> Result<Vec<AuthorSummary>, StoreError> {
        let mut out = Vec::new();
        let mut it = self.db.raw_iterator_cf(self.cf(CF_ENTRIES)?);
        it.seek_to_first();
        while let Some(key) = it.key() {
            let (author, _, _) = split_entry_key(key).ok_or_else(|| StoreError::Corrupt { location: "entries".into(), problem: "malformed key".into() })?;
            let mut last = [0xffu8; ENTRY_KEY_LEN];
            last[..32].copy_from_slice(author.as_bytes());
            it.seek_for_prev(last);
            let max_seq = it.key().and_then(split_entry_key).map(|(_, seq, _)| seq).unwrap_or(0);
            out.push(AuthorSummary { author, max_seq, tips: self.tips(&author)?, fork_proofs: self.forked_seqs(&author)?.len() });
            match prefix_end(author.as_bytes()) {
                Some(next) => it.seek(next),
                None => break,
            }
        }
        it.status().map_err(db("scanning authors"))?;
        Ok(out)
    }

    /// The entries of `author` with a key event (a rotation, a recovery),
    /// in (seq, id) order, every branch: one scan of the `key_events`
    /// rows, none for a chain that never changed key.
    pub fn key_events(&self, author: &AgentId) -> Result<Vec<(u64, EntryId, KeyEvent)>, StoreError> {
        let mut out = Vec::new();
        let mut it = self.db.raw_iterator_cf(self.cf(CF_KEY_EVENTS)?);
        it.seek(author.as_bytes());
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(author.as_bytes()) {
                break;
            }
            let corrupt = || StoreError::Corrupt { location: format!("key_events/{}", crate::store::hex_short(key)), problem: "malformed row".into() };
            let (_, seq, id) = split_entry_key(key).ok_or_else(corrupt)?;
            out.push((seq, id, decode_key_event(value).ok_or_else(corrupt)?));
            it.next();
        }
        it.status().map_err(db("reading key events"))?;
        Ok(out)
    }

    /// The seqs of `author` that hold a fork proof, ascending. Reads keys
    /// only: no proof is decoded or checked.
    pub fn forked_seqs(&self, author: &AgentId) -> Result<Vec<u64>, StoreError> {
        let mut out: Vec<u64> = Vec::new();
        let mut it = self.db.raw_iterator_cf(self.cf(CF_FORKS)?);
        it.seek(author.as_bytes());
        while let Some(key) = it.key() {
            if !key.starts_with(author.as_bytes()) || key.len() < 40 {
                break;
            }
            let mut seq_bytes = [0u8; 8];
            seq_bytes.copy_from_slice(&key[32..40]);
            let seq = u64::from_be_bytes(seq_bytes);
            out.push(seq);
            // Skip any further (format 1, pairwise) proofs of this seq.
            match seq.checked_add(1) {
                Some(next) => it.seek(seq_prefix(author, next)),
                None => break,
            }
        }
        it.status().map_err(db("reading fork proofs"))?;
        Ok(out)
    }

    /// Stored fork proofs, of one author or of all: one per forked (author,
    /// seq), in (author, seq) order.
    pub fn fork_proofs(&self, author: Option<&AgentId>) -> Result<Vec<ForkProof>, StoreError> {
        let prefix: &[u8] = author.map_or(&[], |a| a.as_bytes());
        let mut out: Vec<ForkProof> = Vec::new();
        let mut last: Option<[u8; 40]> = None;
        for item in self.db.iterator_cf(self.cf(CF_FORKS)?, IteratorMode::From(prefix, Direction::Forward)) {
            let (key, value) = item.map_err(db("reading fork proofs"))?;
            if !key.starts_with(prefix) {
                break;
            }
            let position: Option<[u8; 40]> = key.get(..40).and_then(|k| k.try_into().ok());
            if position.is_some() && position == last {
                continue; // a second, pairwise proof of the same seq (format 1)
            }
            last = position;
            out.push(decode_proof(&key, &value)?);
        }
        Ok(out)
    }

    /// The fork proof of `author` at `seq`, if that seq is forked.
    pub fn fork_proof(&self, author: &AgentId, seq: u64) -> Result<Option<ForkProof>, StoreError> {
        let prefix = seq_prefix(author, seq);
        let mut it = self.db.raw_iterator_cf(self.cf(CF_FORKS)?);
        it.seek(prefix);
        match (it.key(), it.value()) {
            (Some(k), Some(v)) if k.starts_with(&prefix) => Ok(Some(decode_proof(k, v)?)),
            _ => {
                it.status().map_err(db("reading fork proofs"))?;
                Ok(None)
            }
        }
    }

    /// How many entries are stored at (author, seq): more than one is a fork.
    /// Counts keys; decodes nothing.
    pub fn branches_at(&self, author: &AgentId, seq: u64) -> Result<usize, StoreError> {
        let prefix = seq_prefix(author, seq);
        let mut it = self.db.raw_iterator_cf(self.cf(CF_ENTRIES)?);
        it.seek(prefix);
        let mut n = 0;
        while it.key().is_some_and(|k| k.starts_with(&prefix)) {
            n += 1;
            it.next();
        }
        it.status().map_err(db("reading entries"))?;
        Ok(n)
    }

    /// Entries held without their payload because it never arrived (not
    /// redacted here), in (author, seq, id) order, strictly after `after`,
    /// at most `limit`: what replication asks peers for again.
    pub fn missing_payloads(&self, after: Option<&EntryRef>, limit: usize) -> Result<Vec<EntryRef>, StoreError> {
        let mut it = self.db.raw_iterator_cf(self.cf(CF_MISSING)?);
        match after {
            Some(r) => {
                let key = entry_key(&r.author, r.seq, &r.id);
                it.seek(key);
                if it.key() == Some(&key[..]) {
                    it.next();
                }
            }
            None => it.seek_to_first(),
        }
        let mut out = Vec::new();
        while out.len() < limit {
            let Some(key) = it.key() else { break };
            let (author, seq, id) = split_entry_key(key).ok_or_else(|| StoreError::Corrupt { location: "missing".into(), problem: "malformed key".into() })?;
            out.push(EntryRef { author, seq, id });
            it.next();
        }
        it.status().map_err(db("reading missing payloads"))?;
        Ok(out)
    }

    /// Visit every entry (of one author, or all) in export order: by author,
    /// then seq, then id. Each entry's predecessor is visited before it.
    pub fn for_each_entry(&self, author: Option<&AgentId>, mut visit: impl FnMut(StoredEntry) -> Result<(), StoreError>) -> Result<(), StoreError> {
        let prefix: &[u8] = author.map_or(&[], |a| a.as_bytes());
        for item in self.db.iterator_cf(self.cf(CF_ENTRIES)?, IteratorMode::From(prefix, Direction::Forward)) {
            let (key, value) = item.map_err(db("reading entries"))?;
            if !key.starts_with(prefix) {
                break;
            }
            let signed = decode_stored(&key, &value)?;
            let payload = self.payload_state(&key)?;
            visit(StoredEntry { signed, payload })?;
        }
        Ok(())
    }
}

fn decode_proof(key: &[u8], value: &[u8]) -> Result<ForkProof, StoreError> {
    ForkProof::decode(value)
        .map_err(|e| StoreError::Corrupt { location: format!("forks/{}", crate::store::hex_short(key)), problem: format!("stored fork proof is invalid: {e}") })
}

/// A `redactions` value: `at_ms (8, BE)`, then `01 ‖ residue` when a residue
/// was kept (format 2); exactly 8 bytes for a redaction without one.
pub(crate) fn encode_redaction(at_ms: u64, residue: Option<&[u8]>) -> Vec<u8> {
    let mut v = at_ms.to_be_bytes().to_vec();
    if let Some(r) = residue {
        v.push(1);
        v.extend_from_slice(r);
    }
    v
}

fn decode_redaction(v: &[u8]) -> Option<PayloadState> {
    let at_ms = u64::from_be_bytes(v.get(..8)?.try_into().ok()?);
    let residue = match v.get(8..)? {
        [] => None,
        [1, rest @ ..] => Some(rest.to_vec()),
        _ => return None,
    };
    Some(PayloadState::Redacted { at_ms, residue })
}
