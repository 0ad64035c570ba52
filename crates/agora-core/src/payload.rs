//! What a node knows of an entry's payload, as every view reads it.
//!
//! A header binds its payload by hash, so a payload can be absent while the
//! chain still verifies. Views must not read an absent payload as "no event":
//! an entry whose payload never arrived may be a roster removal or a dispute.
//! And a local redaction must not change what the entry meant, only remove
//! its text. Three states, then:
//! - **held**: the payload, checked against the header's hash;
//! - **redacted** here: what the payload meant survives as its *residue* (the
//!   payload re-encoded with its free text emptied, made by the format that
//!   owns the payload before the bytes were deleted; see
//!   `protocol-spec/storage.md`). A residue is local knowledge: it cannot be
//!   checked against the header's hash, so it is never sent to a peer. A
//!   redaction made before residues were kept has none: its meaning is lost;
//! - **missing**: never received. Its meaning is unknown, so whatever depends
//!   on it waits (pending) until a peer supplies it.

/// First bytes of every merge-event payload (`protocol-spec/merge.md`).
/// Declared here, below both the merge layer that owns the format and the
/// reasoning graph, because the graph must tell these payloads apart too:
/// merge events are never nodes of the reasoning graph.
pub const MERGE_MAGIC: &[u8; 4] = b"agmg";

/// A payload as a view reads it (borrowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content<'a> {
    /// The payload, checked against its header.
    Held(&'a [u8]),
    /// Redacted here: the residue that keeps its meaning, or `None` for a
    /// redaction that predates residues.
    Redacted(Option<&'a [u8]>),
    /// Never received: pending until a peer supplies it.
    Missing,
}

/// A payload as a view reads it (owned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// The payload, checked against its header.
    Held(Vec<u8>),
    /// Redacted here: the residue, if one was kept.
    Redacted(Option<Vec<u8>>),
    /// Never received.
    Missing,
}

impl Payload {
    /// Borrow it.
    pub fn as_content(&self) -> Content<'_> {
        match self {
            Payload::Held(p) => Content::Held(p),
            Payload::Redacted(r) => Content::Redacted(r.as_deref()),
            Payload::Missing => Content::Missing,
        }
    }

    /// The bytes that carry the entry's meaning: the payload, or the residue
    /// of a redacted one. `None` when the meaning is unknown here.
    pub fn meaning(&self) -> Option<&[u8]> {
        self.as_content().meaning()
    }
}

impl<'a> Content<'a> {
    /// The bytes that carry the entry's meaning: the payload, or the residue
    /// of a redacted one. `None` when the meaning is unknown here.
    pub fn meaning(&self) -> Option<&'a [u8]> {
        match *self {
            Content::Held(p) => Some(p),
            Content::Redacted(r) => r,
            Content::Missing => None,
        }
    }

    /// Never received (not redacted here): pending.
    pub fn is_missing(&self) -> bool {
        matches!(self, Content::Missing)
    }

    /// A merge event, held or redacted with its residue (the residue keeps
    /// the magic): what the reasoning graph leaves out.
    pub fn is_merge_event(&self) -> bool {
        self.meaning().is_some_and(|p| p.starts_with(MERGE_MAGIC))
    }

    /// Own it.
    pub fn to_owned_payload(&self) -> Payload {
        match *self {
            Content::Held(p) => Payload::Held(p.to_vec()),
            Content::Redacted(r) => Payload::Redacted(r.map(<[u8]>::to_vec)),
            Content::Missing => Payload::Missing,
        }
    }
}
