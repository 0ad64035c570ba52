//! Agora's merged view as an Automerge document.
//!
//! [`publish`] writes an [`agora_merge::MergedView`] into an
//! [`automerge::AutoCommit`] document and, on later calls, changes only what
//! differs (puts of changed values, deletes of keys that went away), so that
//! Automerge's sync protocol sends outside clients (for example the
//! automerge-repo JS client) small diffs as the view evolves.
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
//!   format      "agora-merged-view/1"
//!   view_hash   hex of Merge::view_hash
//!   graph_hash  hex of the merged graph's snapshot hash
//!   chains      { <author hex>: { view_len, head?, frozen_at?, resolved: { <fork seq>: <entry hex> },
//!                                 accepted_by: { <agent hex>: <seq> } } }
//!   nodes       { <entry hex>: { author, seq, kind, text, status,
//!                                edges: { "<relation> <target hex>": true },
//!                                disputed_by: { <agent hex>: <dispute entry hex> } } }
//!   disputes    { <dispute entry hex>: { by, target, reason, counter_claim? } }
//! ```
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use agora_merge::MergedView;
use automerge::transaction::Transactable;
use automerge::{AutoCommit, AutomergeError, ObjId, ObjType, ReadDoc, ScalarValue, Value, ROOT};
use std::collections::BTreeMap;

/// The value of the document's `format` key.
pub const DOCUMENT_FORMAT: &str = "agora-merged-view/1";

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

/// The document content for a view, as a tree (what [`publish`] writes).
pub fn view_tree(view: &MergedView) -> BTreeMap<String, Tree> {
    let chains = view.chains.iter().map(|c| {
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
        (c.author.to_string(), Tree::Map(m))
    });
    let nodes = view.nodes().map(|n| {
        let m = [
            ("author".to_string(), str(n.author.to_string())),
            ("seq".into(), Tree::Uint(n.seq)),
            ("kind".into(), str(n.kind)),
            ("text".into(), str(n.text)),
            ("status".into(), str(n.status)),
            ("edges".into(), map(n.edges.iter().map(|(rel, to)| (format!("{rel} {to}"), Tree::Bool(true))))),
            ("disputed_by".into(), map(n.disputed_by.iter().map(|d| (d.by.to_string(), str(d.dispute.to_string()))))),
        ];
        (n.id.to_string(), map(m))
    });
    let disputes = view.disputes.iter().map(|d| {
        let mut m: BTreeMap<String, Tree> = BTreeMap::new();
        m.insert("by".into(), str(d.by.to_string()));
        m.insert("target".into(), str(d.target.to_string()));
        m.insert("reason".into(), str(d.reason.clone()));
        if let Some(c) = &d.counter_claim {
            m.insert("counter_claim".into(), str(c.clone()));
        }
        (d.dispute.to_string(), Tree::Map(m))
    });
    BTreeMap::from([
        ("format".to_string(), str(DOCUMENT_FORMAT)),
        ("view_hash".into(), str(hex::encode(view.view_hash))),
        ("graph_hash".into(), str(hex::encode(view.graph_hash))),
        ("chains".into(), map(chains)),
        ("nodes".into(), map(nodes)),
        ("disputes".into(), map(disputes)),
    ])
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
        match v {
            Tree::Map(m) => {
                let existing = match doc.get(obj, k.as_str())? {
                    Some((Value::Object(ObjType::Map), id)) => Some(id),
                    _ => None,
                };
                let child = match existing {
                    Some(id) => id,
                    None => {
                        stats.puts += 1;
                        doc.put_object(obj, k.as_str(), ObjType::Map)?
                    }
                };
                sync_map(doc, &child, m, stats)?;
            }
            scalar => {
                let Some(value) = scalar.scalar() else { continue };
                let same = matches!(doc.get(obj, k.as_str())?, Some((Value::Scalar(cur), _)) if *cur == value);
                if !same {
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
