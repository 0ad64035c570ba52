//! What the graph is fed: one entry of the log as the graph sees it
//! ([`LogEvent`]), its payload classified ([`Body`]).
//!
//! This is where an entry's payload, as a node knows it (held, redacted
//! with or without a residue, or missing), becomes something the graph can
//! apply. The invariant: every payload gets exactly one classification, and
//! the same bytes always the same one, so a node's kind never depends on who
//! built the graph; a missing payload is no event at all, not an empty one.
//! It is separate because it is the graph's input format, which callers
//! (the node, the merge layer, benchmarks) build knowing nothing else of the
//! graph.

use crate::event::{Event, EventDecodeError};
use agora_core::{EntryId, LogPosition};

/// What an entry's payload is, as far as the graph is concerned.
// An event is held whole: an action (six strings, three 32-byte options)
// makes `Event` 248 bytes (about 136 before it), kept only by events in
// flight, held as pending or journaled, never by the graph's nodes; a box
// would cost every event an allocation to save that.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// A decoded event.
    Event(Event),
    /// A payload that is not an event (a raw note). No effect.
    Raw,
    /// The payload is not held (redacted). The node exists without content.
    Redacted,
    /// An event payload that failed to decode (e.g. a newer kind).
    Undecodable(EventDecodeError),
}

/// One entry of the log as the graph sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEvent {
    /// The entry id.
    pub id: EntryId,
    /// Position in the log.
    pub pos: LogPosition,
    /// Its payload.
    pub body: Body,
    /// Read from the residue of a payload redacted here (see
    /// `agora_core::payload`): the event's meaning without its text.
    pub redacted: bool,
}

impl LogEvent {
    /// What the graph makes of an entry, from what the node knows of its
    /// payload: the event itself (held), its meaning without text (redacted
    /// with a residue), a node of unknown meaning (a redaction that kept no
    /// residue), or nothing (`None`): not yet for a payload never received,
    /// whose arrival makes it an event; never for a merge event
    /// (`protocol-spec/merge.md`: merge payloads never become nodes of the
    /// reasoning graph). Events that refer to an entry with no node wait,
    /// pending, as they would for an unknown id.
    pub fn from_content(id: EntryId, pos: LogPosition, content: agora_core::Content<'_>) -> Option<Self> {
        let redacted = matches!(content, agora_core::Content::Redacted(Some(_)));
        Body::of_content(content).map(|body| Self { id, pos, body, redacted })
    }

    /// Classify a payload (`None`: redacted with no residue, meaning unknown).
    pub fn from_payload(id: EntryId, pos: LogPosition, payload: Option<&[u8]>) -> Self {
        Self { id, pos, body: Body::of_payload(payload), redacted: false }
    }
}

impl Body {
    /// Classify a payload (`None`: redacted with no residue, meaning unknown).
    pub(crate) fn of_payload(payload: Option<&[u8]>) -> Self {
        match payload {
            None => Body::Redacted,
            Some(p) if !Event::is_event_payload(p) => Body::Raw,
            Some(p) => match Event::decode(p) {
                Ok(e) => Body::Event(e),
                Err(e) => Body::Undecodable(e),
            },
        }
    }

    /// Whether [`Body::of_content`] gives `Some` for this content, without
    /// decoding it.
    pub(crate) fn is_event_content(content: agora_core::Content<'_>) -> bool {
        !content.is_missing() && !content.is_merge_event()
    }

    /// What an entry's payload is as a node knows it (see
    /// [`LogEvent::from_content`]); `None` for a payload not received and
    /// for a merge event.
    pub(crate) fn of_content(content: agora_core::Content<'_>) -> Option<Self> {
        if !Self::is_event_content(content) {
            return None;
        }
        match content {
            agora_core::Content::Held(p) | agora_core::Content::Redacted(Some(p)) => Some(Self::of_payload(Some(p))),
            agora_core::Content::Redacted(None) => Some(Self::of_payload(None)),
            agora_core::Content::Missing => None,
        }
    }
}

/// Log order: an event's position, then its id (two entries of a forked
/// chain share a position).
pub(super) type Key = (LogPosition, EntryId);

/// `event`'s place in log order.
pub(super) fn key_of(event: &LogEvent) -> Key {
    (event.pos, event.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;
    use agora_core::{AgentId, Content};

    fn pos(seq: u64) -> LogPosition {
        LogPosition { timestamp_ms: 1_000 + seq, author: AgentId([7; 32]), seq }
    }

    /// `protocol-spec/merge.md`: merge payloads never become nodes of the
    /// reasoning graph, held or redacted to their residue; a reasoning event
    /// that names one waits as it would for an id never seen. A raw note is
    /// still a node.
    #[test]
    fn a_merge_event_is_no_node() {
        // Any bytes after the magic: the graph does not decode merge events.
        let merge = b"agmg\x01\x02\x05\x05";
        for content in [Content::Held(merge), Content::Redacted(Some(merge))] {
            assert!(LogEvent::from_content(EntryId([1; 32]), pos(1), content).is_none());
            assert!(!Body::is_event_content(content));
        }
        let raw = LogEvent::from_content(EntryId([1; 32]), pos(1), Content::Held(b"a note")).expect("a raw note is an event");
        assert_eq!(raw.body, Body::Raw);

        let support = Event::Support { target: EntryId([1; 32]), text: "agreed".into() }.encode();
        let items = [(EntryId([1; 32]), pos(1), Content::Held(&merge[..])), (EntryId([2; 32]), pos(2), Content::Held(&support[..]))];
        let g = Graph::replay_contents(&items);
        assert_eq!(g.len(), 0);
        assert!(g.node(&EntryId([1; 32])).is_none());
        assert_eq!(g.pending().len(), 1);
        assert_eq!(g.pending()[0].missing, vec![EntryId([1; 32])]);
    }
}
