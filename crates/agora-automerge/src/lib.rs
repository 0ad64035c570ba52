//! Agora's merged view as an Automerge document.
//!
//! [`publish`] writes an [`agora_merge::MergedView`] into an
//! [`automerge::AutoCommit`] document and, on later calls, changes only what
//! differs (puts of changed values, deletes of keys that went away), so that
//! Automerge's sync protocol sends outside clients (for example the
//! automerge-repo JS client) small diffs as the view evolves.
//!
//! A node that keeps the merged view live publishes with a [`Publisher`]
//! instead: it remembers what it wrote last (chain summaries, open disputes,
//! the merged graph's bucket digests) and finds what to write next by
//! comparing, so that after one new entry it reads and writes only the
//! chains, disputes and digest buckets of nodes that changed, not the whole
//! view ([`Publisher::changes`], then [`apply`]).
//!
//! The document is a *derived, shareable view*. The signed log stays the
//! source of truth: Automerge changes are unsigned and anyone can claim an
//! actor id, so a client that needs to trust a fact checks it against the log
//! (every key is an entry id or an agent id it can verify). Never use this for
//! the log itself. The layout is specified in `protocol-spec/merge.md`
//! ("The Automerge document").
//!
//! ```text
//! ROOT
//!   format        "agora-merged-view/2"
//!   view_hash     hex of Merge::view_hash
//!   graph_digest  hex of the merged graph's digest (Graph::digest)
//!   chains        { <author hex>: { view_len, head?, frozen_at?, resolved: { <fork seq>: <entry hex> },
//!                                   accepted_by: { <agent hex>: <seq> } } }
//!   nodes         { <entry hex>: { author, seq, kind, text, status,
//!                                  edges: { "<relation> <target hex>": true },
//!                                  disputed_by: { <agent hex>: <dispute entry hex> } } }
//!   disputes      { <dispute entry hex>: { by, target, reason, counter_claim? } }
//! ```
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

use agora_core::{AgentId, EntryId};
use agora_graph::Graph;
use agora_merge::{ChainSummary, DisputeMark, MergedView, ViewNode};
use automerge::transaction::Transactable;
use automerge::{AutoCommit, AutomergeError, ObjId, ObjType, ROOT, ReadDoc, ScalarValue, Value};
use std::collections::BTreeMap;

/// The value of the document's `format` key.
///
/// Version 2: `graph_hash` (SHA-256 of the whole graph snapshot, which a
/// live view could only get by writing every node again) became
/// `graph_digest`, the digest a live view keeps current.
pub const DOCUMENT_FORMAT: &str = "agora-merged-view/2";

/// A value of the document: a scalar or a map of values.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    /// A string.
    Str(String),
    /// An unsigned integer.
    Uint(u64),
    /// A boolean.
    Bool(bool),
    /// A map.
    Map(BTreeMap<String, Tree>),
}

impl Tree {
    fn scalar(&self) -> Option<ScalarValue> {
        match self {
            Tree::Str(s) => Some(ScalarValue::from(s.as_str())),
            Tree::Uint(n) => Some(ScalarValue::Uint(*n)),
            Tree::Bool(b) => Some(ScalarValue::Boolean(*b)),
            Tree::Map(_) => None,
        }
    }
}

/// Why a publish failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Automerge refused an operation.
    #[error("automerge: {0}")]
    Automerge(#[from] AutomergeError),
}

/// What one publish changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublishStats {
    /// Values and maps written.
    pub puts: usize,
    /// Keys deleted.
    pub deletes: usize,
}

impl PublishStats {
    /// Did the publish change anything?
    pub fn changed(&self) -> bool {
        self.puts + self.deletes > 0
    }
}

fn map(entries: impl IntoIterator<Item = (String, Tree)>) -> Tree {
    Tree::Map(entries.into_iter().collect())
}

fn str(s: impl Into<String>) -> Tree {
    Tree::Str(s.into())
}

fn chain_tree(c: &ChainSummary) -> Tree {
    let mut m: BTreeMap<String, Tree> = BTreeMap::new();
    m.insert("view_len".into(), Tree::Uint(c.view_len));
    if let Some(h) = c.head {
        m.insert("head".into(), str(h.to_string()));
    }
    if let Some(f) = c.frozen_at {
        m.insert("frozen_at".into(), Tree::Uint(f));
    }
    m.insert("resolved".into(), map(c.resolved.iter().map(|(s, id)| (s.to_string(), str(id.to_string())))));
    m.insert("accepted_by".into(), map(c.accepted_by.iter().map(|(a, s)| (a.to_string(), Tree::Uint(*s)))));
    Tree::Map(m)
}

fn node_tree(n: &ViewNode<'_>) -> Tree {
    map([
        ("author".to_string(), str(n.author.to_string())),
        ("seq".into(), Tree::Uint(n.seq)),
        ("kind".into(), str(n.kind)),
        ("text".into(), str(&*n.text)),
        ("status".into(), str(n.status)),
        ("edges".into(), map(n.edges.iter().map(|(rel, to)| (format!("{rel} {to}"), Tree::Bool(true))))),
        ("disputed_by".into(), map(n.disputed_by.iter().map(|d| (d.by.to_string(), str(d.dispute.to_string()))))),
    ])
}

fn dispute_tree(d: &DisputeMark) -> Tree {
    let mut m: BTreeMap<String, Tree> = BTreeMap::new();
    m.insert("by".into(), str(d.by.to_string()));
    m.insert("target".into(), str(d.target.to_string()));
    m.insert("reason".into(), str(d.reason.clone()));
    if let Some(c) = &d.counter_claim {
        m.insert("counter_claim".into(), str(c.clone()));
    }
    Tree::Map(m)
}

/// The document's scalar keys, for a view with these hashes.
fn root_scalars(view_hash: &[u8; 32], graph_digest: &[u8; 32]) -> [(String, Tree); 3] {
    [("format".to_string(), str(DOCUMENT_FORMAT)), ("view_hash".into(), str(hex::encode(view_hash))), ("graph_digest".into(), str(hex::encode(graph_digest)))]
}

/// The document content for a view, as a tree (what [`publish`] writes).
pub fn view_tree(view: &MergedView) -> BTreeMap<String, Tree> {
    let chains = view.chains.iter().map(|c| (c.author.to_string(), chain_tree(c)));
    let nodes = view.nodes().map(|n| (n.id.to_string(), node_tree(&n)));
    let disputes = view.disputes.iter().map(|d| (d.dispute.to_string(), dispute_tree(d)));
    let mut out: BTreeMap<String, Tree> = root_scalars(&view.view_hash, &view.graph_digest).into_iter().collect();
    out.insert("chains".into(), map(chains));
    out.insert("nodes".into(), map(nodes));
    out.insert("disputes".into(), map(disputes));
    out
}

/// Publish `view` into `doc`: make the document's content equal to
/// [`view_tree`], writing only what differs, then commit (one change, or none
/// when nothing differs).
pub fn publish(doc: &mut AutoCommit, view: &MergedView) -> Result<PublishStats, PublishError> {
    let mut stats = PublishStats::default();
    sync_map(doc, &ROOT, &view_tree(view), &mut stats)?;
    if stats.changed() {
        doc.commit();
    }
    Ok(stats)
}

fn sync_map(doc: &mut AutoCommit, obj: &ObjId, want: &BTreeMap<String, Tree>, stats: &mut PublishStats) -> Result<(), AutomergeError> {
    let gone: Vec<String> = doc.keys(obj).filter(|k| !want.contains_key(k)).collect();
    for k in gone {
        doc.delete(obj, k.as_str())?;
        stats.deletes += 1;
    }
    for (k, v) in want {
        sync_entry(doc, obj, k, v, stats)?;
    }
    Ok(())
}

/// Make `obj[k]` equal to `v`, writing only what differs.
fn sync_entry(doc: &mut AutoCommit, obj: &ObjId, k: &str, v: &Tree, stats: &mut PublishStats) -> Result<(), AutomergeError> {
    match v {
        Tree::Map(m) => {
            let existing = match doc.get(obj, k)? {
                Some((Value::Object(ObjType::Map), id)) => Some(id),
                _ => None,
            };
            let child = match existing {
                Some(id) => id,
                None => {
                    stats.puts += 1;
                    doc.put_object(obj, k, ObjType::Map)?
                }
            };
            sync_map(doc, &child, m, stats)
        }
        scalar => {
            let Some(value) = scalar.scalar() else { return Ok(()) };
            let same = matches!(doc.get(obj, k)?, Some((Value::Scalar(cur), _)) if *cur == value);
            if !same {
                doc.put(obj, k, value)?;
                stats.puts += 1;
            }
            Ok(())
        }
    }
}

/// What to write into one map of the document (`chains`, `nodes` or
/// `disputes`).
#[derive(Clone, Debug, PartialEq)]
pub enum Section {
    /// The whole map: keys not in it are deleted.
    Whole(BTreeMap<String, Tree>),
    /// Part of the map; the rest is left as it is.
    Part {
        /// Key ranges each made equal to its entries (keys in the range but
        /// not among them are deleted).
        ranges: Vec<KeyRange>,
        /// Keys each set to its tree, or deleted (`None`).
        keys: Vec<(String, Option<Tree>)>,
    },
}

/// The keys of a map from `start` (inclusive) to `end` (exclusive), and
/// what they must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRange {
    /// First key of the range.
    pub start: String,
    /// First key past it.
    pub end: String,
    /// Every key the range holds, with its tree.
    pub entries: BTreeMap<String, Tree>,
}

impl Section {
    /// Keys it writes or deletes (a range counts its entries).
    pub fn len(&self) -> usize {
        match self {
            Section::Whole(m) => m.len(),
            Section::Part { ranges, keys } => ranges.iter().map(|r| r.entries.len()).sum::<usize>() + keys.len(),
        }
    }

    /// True when it writes nothing.
    pub fn is_empty(&self) -> bool {
        matches!(self, Section::Part { ranges, keys } if ranges.is_empty() && keys.is_empty())
    }

    /// A part that sets or deletes `keys` only.
    fn keys(keys: Vec<(String, Option<Tree>)>) -> Self {
        Section::Part { ranges: Vec::new(), keys }
    }
}

/// What to write into a document to bring it up to a view
/// ([`Publisher::changes`]), made while the view is read and written by
/// [`apply`] after (a node reads its live view under a lock, and writes the
/// document after letting go of it).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewChanges {
    /// `format`, `view_hash`, `graph_digest`.
    scalars: [(String, Tree); 3],
    /// The `chains` map.
    pub chains: Section,
    /// The `nodes` map.
    pub nodes: Section,
    /// The `disputes` map.
    pub disputes: Section,
}

/// A live merged view, as a [`Publisher`] reads it.
pub struct LiveViewParts<'v> {
    /// The view hash.
    pub view_hash: [u8; 32],
    /// The merged reasoning graph, its digest computed
    /// ([`Graph::digest`]) since its last change.
    pub graph: &'v Graph,
    /// That digest.
    pub graph_digest: [u8; 32],
    /// Every chain's summary, ascending by author.
    pub chains: Vec<ChainSummary>,
    /// Open disputes, ascending by (target, disputer, dispute).
    pub disputes: Vec<DisputeMark>,
    /// Every entry whose payload was filled in or redacted since the last
    /// publish, or `None` if that is not known (every node is then compared
    /// with the document). Text is not in the graph's digest: a redaction
    /// that keeps the event's meaning changes a node's text alone.
    pub payloads_changed: Option<&'v [EntryId]>,
}

/// What a publisher wrote last.
#[derive(Debug)]
struct Written {
    chains: BTreeMap<AgentId, ChainSummary>,
    disputes: BTreeMap<EntryId, DisputeMark>,
    buckets: Vec<[u8; 32]>,
}

/// The keys of digest bucket `b` in the document's `nodes` map: ids (lowercase
/// hex) whose first 12 bits are `b`, i.e. whose first three hex digits
/// spell it.
fn bucket_keys(b: usize) -> (String, String) {
    let start = format!("{b:03x}");
    let end = format!("{start}g");
    (start, end)
}

/// Publishes a live merged view into one document, writing after each
/// change only what changed (see the crate docs). It remembers what it
/// wrote: the chain summaries and open disputes (compared with the next
/// ones in memory, a few MB at most), and the merged graph's bucket
/// digests (128 KiB). The nodes it writes again are those of the buckets
/// whose digest changed (a bucket's key range in the document is made equal
/// to its nodes, so nodes that left the graph, when a fork froze a chain,
/// are deleted), the targets of disputes opened or withdrawn, and the nodes
/// whose payload changed.
#[derive(Debug, Default)]
pub struct Publisher {
    written: Option<Written>,
}

impl Publisher {
    /// A publisher that has written nothing: its first changes are whole.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to write to bring the document this publisher wrote last up to
    /// `view`; whole sections the first time, after [`Publisher::forget`],
    /// and when `view.payloads_changed` is not known. It then takes `view`
    /// as written: hand the changes to [`apply`], and call `forget` if that
    /// fails.
    ///
    /// Fails only if a node's text cannot be read from the store its graph
    /// reads texts from; the next changes are then whole.
    pub fn changes(&mut self, view: LiveViewParts<'_>) -> Result<ViewChanges, agora_graph::TextUnavailable> {
        let scalars = root_scalars(&view.view_hash, &view.graph_digest);
        let buckets = view.graph.bucket_digests().map(<[_]>::to_vec);
        let whole = view.payloads_changed.is_none() || buckets.is_none();
        let now = Written {
            chains: view.chains.into_iter().map(|c| (c.author, c)).collect(),
            disputes: view.disputes.iter().map(|d| (d.dispute, d.clone())).collect(),
            buckets: buckets.unwrap_or_default(),
        };
        let disputes_of = |id: &EntryId| {
            let lo = view.disputes.partition_point(|d| d.target < *id);
            let hi = lo + view.disputes[lo..].partition_point(|d| d.target == *id);
            &view.disputes[lo..hi]
        };
        let node = |n: agora_graph::NodeRef<'_>| {
            Ok::<_, agora_graph::TextUnavailable>((n.id.to_string(), node_tree(&ViewNode::read(view.graph, n, disputes_of(&n.id))?)))
        };
        let changes = match self.written.take().filter(|w| !whole && w.buckets.len() == now.buckets.len()) {
            None => ViewChanges {
                scalars,
                chains: Section::Whole(now.chains.values().map(|c| (c.author.to_string(), chain_tree(c))).collect()),
                nodes: Section::Whole(view.graph.by_id().nodes().map(node).collect::<Result<_, _>>()?),
                disputes: Section::Whole(now.disputes.values().map(|d| (d.dispute.to_string(), dispute_tree(d))).collect()),
            },
            Some(was) => {
                let chains = changed_keys(&was.chains, &now.chains, chain_tree);
                let disputes = changed_keys(&was.disputes, &now.disputes, dispute_tree);
                // The buckets whose digest changed: their nodes' status,
                // edges or touches changed, or nodes came or went.
                let mut ranges = Vec::new();
                let mut changed = vec![false; now.buckets.len()];
                for (b, (old, new)) in was.buckets.iter().zip(&now.buckets).enumerate() {
                    if old != new {
                        changed[b] = true;
                        let (start, end) = bucket_keys(b);
                        ranges.push(KeyRange { start, end, entries: view.graph.bucket_nodes(b).map(node).collect::<Result<_, _>>()? });
                    }
                }
                // Outside those: the targets of disputes opened, withdrawn
                // or changed, and the nodes whose payload changed (text).
                let touched = was.disputes.iter().filter(|(k, d)| now.disputes.get(*k) != Some(*d)).map(|(_, d)| d.target);
                let touched = touched.chain(now.disputes.iter().filter(|(k, _)| !was.disputes.contains_key(*k)).map(|(_, d)| d.target));
                let touched = touched.chain(view.payloads_changed.unwrap_or_default().iter().copied());
                let mut keys: BTreeMap<String, Tree> = BTreeMap::new();
                for id in touched.filter(|id| !changed[Graph::bucket_of(id)]) {
                    if let Some(n) = view.graph.node(&id) {
                        keys.extend([node(n)?]);
                    }
                }
                let nodes = Section::Part { ranges, keys: keys.into_iter().map(|(k, t)| (k, Some(t))).collect() };
                ViewChanges { scalars, chains, nodes, disputes }
            }
        };
        self.written = Some(now);
        Ok(changes)
    }

    /// Forget what was written (a write failed): the next changes are whole.
    pub fn forget(&mut self) {
        self.written = None;
    }
}

/// The keys of a map section whose values differ between `was` and `now`:
/// set (new or changed) or deleted.
fn changed_keys<K: Ord + std::fmt::Display, V: PartialEq>(was: &BTreeMap<K, V>, now: &BTreeMap<K, V>, tree: impl Fn(&V) -> Tree) -> Section {
    let mut keys: Vec<(String, Option<Tree>)> = was.keys().filter(|k| !now.contains_key(*k)).map(|k| (k.to_string(), None)).collect();
    keys.extend(now.iter().filter(|(k, v)| was.get(*k) != Some(*v)).map(|(k, v)| (k.to_string(), Some(tree(v)))));
    Section::keys(keys)
}

/// Write `changes` into `doc` (each value only where it differs), then
/// commit (one change, or none when nothing differs).
pub fn apply(doc: &mut AutoCommit, changes: &ViewChanges) -> Result<PublishStats, PublishError> {
    let mut stats = PublishStats::default();
    for (k, v) in &changes.scalars {
        sync_entry(doc, &ROOT, k, v, &mut stats)?;
    }
    for (name, section) in [("chains", &changes.chains), ("nodes", &changes.nodes), ("disputes", &changes.disputes)] {
        let obj = match doc.get(&ROOT, name)? {
            Some((Value::Object(ObjType::Map), id)) => id,
            _ => {
                stats.puts += 1;
                doc.put_object(&ROOT, name, ObjType::Map)?
            }
        };
        match section {
            // Into an empty map (a new document), nothing to compare with:
            // written without reading (each read of a large map costs a
            // seek, a node's ten of them most of a first publish).
            Section::Whole(want) if doc.length(&obj) == 0 => write_fresh(doc, &obj, want, &mut stats)?,
            Section::Whole(want) => sync_map(doc, &obj, want, &mut stats)?,
            Section::Part { ranges, keys } => {
                for r in ranges {
                    let gone: Vec<String> =
                        doc.map_range(&obj, r.start.clone()..r.end.clone()).map(|item| item.key.into_owned()).filter(|k| !r.entries.contains_key(k)).collect();
                    for k in gone {
                        doc.delete(&obj, k.as_str())?;
                        stats.deletes += 1;
                    }
                    for (k, v) in &r.entries {
                        sync_entry(doc, &obj, k, v, &mut stats)?;
                    }
                }
                for (k, v) in keys {
                    match v {
                        Some(v) => sync_entry(doc, &obj, k, v, &mut stats)?,
                        None => {
                            if doc.get(&obj, k.as_str())?.is_some() {
                                doc.delete(&obj, k.as_str())?;
                                stats.deletes += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    if stats.changed() {
        doc.commit();
    }
    Ok(stats)
}

/// Write `want` into the empty map `obj`, reading nothing.
fn write_fresh(doc: &mut AutoCommit, obj: &ObjId, want: &BTreeMap<String, Tree>, stats: &mut PublishStats) -> Result<(), AutomergeError> {
    for (k, v) in want {
        match v {
            Tree::Map(m) => {
                let child = doc.put_object(obj, k.as_str(), ObjType::Map)?;
                stats.puts += 1;
                write_fresh(doc, &child, m, stats)?;
            }
            scalar => {
                if let Some(value) = scalar.scalar() {
                    doc.put(obj, k.as_str(), value)?;
                    stats.puts += 1;
                }
            }
        }
    }
    Ok(())
}

/// Read a document's content back as a tree (maps, strings, unsigned
/// integers and booleans; other values are skipped).
pub fn read_tree(doc: &AutoCommit) -> Result<BTreeMap<String, Tree>, PublishError> {
    Ok(read_map(doc, &ROOT)?)
}

fn read_map(doc: &AutoCommit, obj: &ObjId) -> Result<BTreeMap<String, Tree>, AutomergeError> {
    let mut out = BTreeMap::new();
    for k in doc.keys(obj) {
        let value = match doc.get(obj, k.as_str())? {
            Some((Value::Object(ObjType::Map), id)) => Tree::Map(read_map(doc, &id)?),
            Some((Value::Scalar(s), _)) => match s.as_ref() {
                ScalarValue::Str(s) => Tree::Str(s.to_string()),
                ScalarValue::Uint(n) => Tree::Uint(*n),
                ScalarValue::Boolean(b) => Tree::Bool(*b),
                _ => continue,
            },
            _ => continue,
        };
        out.insert(k, value);
    }
    Ok(out)
}
