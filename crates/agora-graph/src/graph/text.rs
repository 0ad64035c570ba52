//! Where a graph's node texts live: in the graph ([`Texts::Kept`], the
//! default), or in the store the graph was built from, read when asked
//! ([`TextSource`]).
//!
//! A node's text is a pure function of what is held of its entry's payload
//! ([`text_of_content`]), and nothing the graph decides depends on it (the
//! snapshot, the digest and every status leave it out), so a graph need not
//! hold it: a node that keeps a live graph of a million events reads the few
//! texts an answer shows from its store instead of keeping every one in
//! memory (about 90 bytes a node in the merge bench's swarm, and as much as
//! the agents write in a real one). A text read from the store is the one a
//! replay of the store would give now, redactions included.
//!
//! The invariant: for a graph built from the store a source reads, both
//! ways give the same text for every node.

use super::Body;
use super::node_state::Ix;
use crate::event::Event;
use agora_core::{Content, EntryId, LogPosition};
use std::borrow::Cow;
use std::sync::Arc;

/// Reads a node's text from what is held of its entry's payload (a store).
pub trait TextSource: Send + Sync {
    /// The text of the node made by the entry `id` at `pos`: what
    /// [`text_of_content`] makes of what is held of its payload now.
    fn node_text(&self, pos: &LogPosition, id: &EntryId) -> Result<String, TextUnavailable>;
}

impl std::fmt::Debug for dyn TextSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextSource")
    }
}

/// A node's text could not be read from its [`TextSource`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the text of {id} could not be read: {problem}")]
pub struct TextUnavailable {
    /// The node's entry id.
    pub id: EntryId,
    /// What went wrong (the store's error).
    pub problem: String,
}

/// The text a graph gives the node of an entry whose payload is `content`:
/// the event's text (its one text field, or the fields a trajectory or a
/// memory item combines); for a payload redacted with a residue, the
/// residue's (blank); for a raw note, an undecodable payload or a
/// redaction without residue, none.
/// (The payload is classified as the graph classifies it when it applies
/// the entry, [`Body`], so the two cannot differ.)
pub fn text_of_content(content: Content<'_>) -> String {
    match Body::of_content(content) {
        Some(Body::Event(mut ev)) => ev.take_text(),
        _ => String::new(),
    }
}

/// A graph's texts.
#[derive(Clone)]
pub(super) enum Texts {
    /// Held, by node position (parallel to the nodes).
    Kept(Vec<Box<str>>),
    /// Read from the store when asked.
    Elsewhere(Arc<dyn TextSource>),
}

impl Default for Texts {
    fn default() -> Self {
        Texts::Kept(Vec::new())
    }
}

impl std::fmt::Debug for Texts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Texts::Kept(t) => write!(f, "Kept({} texts)", t.len()),
            Texts::Elsewhere(_) => f.write_str("Elsewhere"),
        }
    }
}

impl Texts {
    /// A node was added at the end, without text yet.
    pub(super) fn added(&mut self) {
        if let Texts::Kept(t) = self {
            t.push(Box::default());
        }
    }

    /// Node `ix` (just added) is made by `ev`: keep its text if texts are kept.
    pub(super) fn set(&mut self, ix: Ix, ev: &mut Event) {
        if let Texts::Kept(t) = self {
            t[ix as usize] = ev.take_text().into_boxed_str();
        }
    }

    /// Nodes from `len` on were removed.
    pub(super) fn truncate(&mut self, len: usize) {
        if let Texts::Kept(t) = self {
            t.truncate(len);
        }
    }

    pub(super) fn reserve_exact(&mut self, additional: usize) {
        if let Texts::Kept(t) = self {
            t.reserve_exact(additional);
        }
    }

    pub(super) fn get(&self, ix: Ix, pos: &LogPosition, id: &EntryId) -> Result<Cow<'_, str>, TextUnavailable> {
        match self {
            Texts::Kept(t) => Ok(Cow::Borrowed(&t[ix as usize])),
            Texts::Elsewhere(source) => source.node_text(pos, id).map(Cow::Owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Graph, LogEvent};
    use std::collections::HashMap;

    /// Payloads by id, as a store holds them.
    struct Payloads(HashMap<EntryId, Vec<u8>>);

    impl TextSource for Payloads {
        fn node_text(&self, _pos: &LogPosition, id: &EntryId) -> Result<String, TextUnavailable> {
            let payload = self.0.get(id).ok_or_else(|| TextUnavailable { id: *id, problem: "not held".into() })?;
            Ok(text_of_content(Content::Held(payload)))
        }
    }

    /// A graph that reads its texts from the store gives every node the
    /// text a graph holding them gives it (composite texts, raw notes and
    /// invalid events included), and the same snapshot; a store that fails
    /// names the node.
    #[test]
    fn texts_read_from_the_store_are_the_texts_a_graph_holds() {
        let mut log = crate::workload::debate(2_000, 4);
        let pos = |i: u64| LogPosition { timestamp_ms: 10_000_000 + i, author: agora_core::AgentId([7; 32]), seq: i + 1 };
        let item = Event::MemoryItem { title: "t".into(), description: "d".into(), content: "c".into(), scope: "s".into(), source_trajectory: None };
        log.push((EntryId([0xa1; 32]), pos(0), item.encode()));
        log.push((EntryId([0xa2; 32]), pos(1), b"a raw note".to_vec()));
        log.push((EntryId([0xa3; 32]), pos(2), b"agev\xff not a known version".to_vec()));
        let events = || log.iter().map(|(id, pos, p)| LogEvent::from_payload(*id, *pos, Some(p))).collect::<Vec<_>>();
        let kept = Graph::replay(events());
        let payloads: HashMap<EntryId, Vec<u8>> = log.iter().map(|(id, _, p)| (*id, p.clone())).collect();
        let elsewhere = Graph::with_texts_from(Arc::new(Payloads(payloads))).replayed(events(), 0);
        assert!(kept.keeps_texts() && !elsewhere.keeps_texts());
        assert_eq!(kept.snapshot(), elsewhere.snapshot());
        let texts = |g: &Graph| g.nodes().map(|n| (n.id, n.kind(), g.text(n).unwrap().into_owned())).collect::<Vec<_>>();
        let want = texts(&kept);
        assert_eq!(texts(&elsewhere), want);
        assert!(want.iter().any(|(_, kind, text)| *kind == "memory_item" && text == "t\nd\nc"));
        assert!(want.iter().any(|(_, kind, text)| *kind == "raw" && text.is_empty()));
        assert!(want.iter().any(|(_, kind, _)| *kind == "invalid"));
        assert!(want.iter().filter(|(_, _, text)| !text.is_empty()).count() > 1_000);

        let failing = Graph::with_texts_from(Arc::new(Payloads(HashMap::new()))).replayed(events(), 0);
        let n = failing.node(&EntryId([0xa1; 32])).unwrap();
        assert_eq!(failing.text(n).unwrap_err(), TextUnavailable { id: EntryId([0xa1; 32]), problem: "not held".into() });
    }
}
