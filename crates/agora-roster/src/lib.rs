//! Workspace membership.
//!
//! A workspace (a swarm) is named by its founder, an agent key, and a name.
//! Its roster is derived from the founder's own chain: entries whose payload
//! is a [`RosterEvent`] (magic `agrs`) admit or remove agents. Nothing else
//! counts: a roster event in anyone else's chain has no effect, so membership
//! needs no co-signatures and replicates like any chain. The roster is a pure
//! function of the founder's entries ([`Roster::derive`]); nothing about it is
//! stored. Byte layout and rules: `protocol-spec/roster.md`.
//!
//! A forked founder chain is ambiguous about membership, so the roster is
//! frozen at the last seq both branches share (the same rule the merge layer
//! applies to views of forked chains) and the fork is reported.
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

use agora_core::canonical::{FrameError, Framing};
use agora_core::key_bounds::{Binding, ChainLink, KeyBounds, key_bounds};
use agora_core::{AgentId, EntryId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The 4 bytes every roster payload starts with.
pub const ROSTER_MAGIC: &[u8; 4] = b"agrs";
/// The only roster format version.
pub const ROSTER_VERSION: u8 = 1;
/// Largest note or reason, in bytes.
pub const NOTE_BYTES_MAX: usize = 1024;

/// `"agrs" || version || postcard(RosterEvent)`. The payload limit bounds the
/// body; the note's own limit is checked after decoding. An unknown kind is
/// malformed (no newer kinds are defined).
pub const ROSTER_FRAMING: Framing =
    Framing { magic: ROSTER_MAGIC, version: ROSTER_VERSION, body_max: agora_core::limits::PAYLOAD_BYTES_MAX as usize, kinds: None };

/// One membership change, recorded in the founder's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RosterEvent {
    /// 0: `agent` may replicate into the workspace from now on.
    Admit {
        /// The admitted agent.
        agent: AgentId,
        /// Free text (who it is), at most [`NOTE_BYTES_MAX`] bytes.
        note: String,
    },
    /// 1 (written before removals named a cut-off): `agent` is no longer
    /// replicated. Entries already held stay and count; nothing new of its
    /// chain is accepted. Which entries a node holds then depends on what
    /// reached it first, so new removals are [`RosterEvent::RemoveAfter`].
    Remove {
        /// The removed agent.
        agent: AgentId,
        /// Why, at most [`NOTE_BYTES_MAX`] bytes.
        reason: String,
    },
    /// 2 (written before removals named a head): `agent` is removed; its
    /// entries up to and including `last_seq` stay admitted everywhere,
    /// later ones are admitted nowhere. The key can still sign other
    /// entries at those seqs (branches) that would count, so new removals of
    /// an agent that wrote anything are [`RosterEvent::RemoveAt`]; this
    /// kind is written only with `last_seq` 0 (nothing kept).
    RemoveAfter {
        /// The removed agent.
        agent: AgentId,
        /// Its last seq that stays admitted (0: none).
        last_seq: u64,
        /// Why, at most [`NOTE_BYTES_MAX`] bytes.
        reason: String,
    },
    /// 3: `agent` is removed, and its admitted history pinned: exactly the
    /// chain that ends at `head` (its entry at `last_seq`, as the founder
    /// held it) counts, seq 1 to `last_seq`, and nothing else the key signs,
    /// at any seq, before or after the removal (`Roster::admits_entry`).
    RemoveAt {
        /// The removed agent.
        agent: AgentId,
        /// The seq of `head`: the last seq that stays admitted.
        last_seq: u64,
        /// The removed agent's entry at `last_seq` whose chain stays admitted.
        head: EntryId,
        /// Why, at most [`NOTE_BYTES_MAX`] bytes.
        reason: String,
    },
    /// 4: both of `agent`'s keys are lost: the founder binds its identity
    /// to the new key `key` after `head` (its entry at `last_seq`, the last
    /// one its owner vouches for). `agent` becomes a member (as an
    /// admission), and a recover entry of its chain right after `head`
    /// signed by `key` carries the chain on (`protocol-spec/keys.md`).
    Recover {
        /// The agent whose keys are lost.
        agent: AgentId,
        /// The seq of `head`.
        last_seq: u64,
        /// The boundary: the agent's entry at `last_seq` its recovery follows.
        head: EntryId,
        /// The key granted: its public key, never the agent id.
        key: AgentId,
        /// Free text (what happened), at most [`NOTE_BYTES_MAX`] bytes.
        note: String,
    },
}

/// Why a payload is not a valid roster event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosterError {
    /// No `agrs` magic: not a roster payload.
    #[error("not a roster payload (no \"agrs\" magic)")]
    NotRoster,
    /// Another format version.
    #[error("unknown roster format version {0} (this implementation reads version {ROSTER_VERSION})")]
    Version(u8),
    /// Malformed, trailing or non-canonical bytes, or an unknown kind.
    #[error("malformed roster event: {0}")]
    Malformed(String),
    /// A text field is too long.
    #[error("roster event note of {0} bytes exceeds the limit of {NOTE_BYTES_MAX}")]
    NoteTooLong(usize),
    /// The founder cannot remove itself: the workspace would have no authority.
    #[error("the founder cannot be removed from its own workspace")]
    RemoveFounder,
    /// The founder cannot recover itself: the roster's authority is its key.
    #[error("the founder's keys cannot be recovered by its own roster")]
    RecoverFounder,
    /// A recovery granting the agent id itself (the inception key).
    #[error("a recovery grants a new key, not the agent id")]
    RecoverKeyIsAuthor,
}

impl RosterEvent {
    /// The payload bytes.
    pub fn encode(&self) -> Vec<u8> {
        ROSTER_FRAMING.encode(self)
    }

    /// Is this payload meant to be a roster event (starts with the magic)?
    pub fn is_roster_payload(payload: &[u8]) -> bool {
        ROSTER_FRAMING.claims(payload)
    }

    /// Decode canonically.
    pub fn decode(payload: &[u8]) -> Result<Self, RosterError> {
        let event: RosterEvent = ROSTER_FRAMING.decode(payload).map_err(|e| match e {
            FrameError::NoMagic => RosterError::NotRoster,
            FrameError::Version(v) => RosterError::Version(v),
            other => RosterError::Malformed(other.to_string()),
        })?;
        let note = event.note();
        if note.len() > NOTE_BYTES_MAX {
            return Err(RosterError::NoteTooLong(note.len()));
        }
        Ok(event)
    }

    /// Check an event the founder is about to write.
    pub fn check_local(&self, founder: &AgentId) -> Result<(), RosterError> {
        match self {
            RosterEvent::Remove { agent, .. } | RosterEvent::RemoveAfter { agent, .. } | RosterEvent::RemoveAt { agent, .. } if agent == founder => {
                Err(RosterError::RemoveFounder)
            }
            RosterEvent::Recover { agent, .. } if agent == founder => Err(RosterError::RecoverFounder),
            RosterEvent::Recover { agent, key, .. } if agent == key => Err(RosterError::RecoverKeyIsAuthor),
            _ if self.note().len() > NOTE_BYTES_MAX => Err(RosterError::NoteTooLong(self.note().len())),
            _ => Ok(()),
        }
    }

    /// The free text: an admission's note or a removal's reason.
    pub fn note(&self) -> &str {
        match self {
            RosterEvent::Admit { note, .. } | RosterEvent::Recover { note, .. } => note,
            RosterEvent::Remove { reason, .. } | RosterEvent::RemoveAfter { reason, .. } | RosterEvent::RemoveAt { reason, .. } => reason,
        }
    }

    /// The same event without its free text.
    pub fn without_text(&self) -> Self {
        match self {
            // Every field named: a new one does not compile until it is
            // sorted into text (emptied) or structure (kept).
            RosterEvent::Admit { agent, note: _ } => RosterEvent::Admit { agent: *agent, note: String::new() },
            RosterEvent::Remove { agent, reason: _ } => RosterEvent::Remove { agent: *agent, reason: String::new() },
            RosterEvent::RemoveAfter { agent, last_seq, reason: _ } => RosterEvent::RemoveAfter { agent: *agent, last_seq: *last_seq, reason: String::new() },
            RosterEvent::RemoveAt { agent, last_seq, head, reason: _ } => {
                RosterEvent::RemoveAt { agent: *agent, last_seq: *last_seq, head: *head, reason: String::new() }
            }
            RosterEvent::Recover { agent, last_seq, head, key, note: _ } => {
                RosterEvent::Recover { agent: *agent, last_seq: *last_seq, head: *head, key: *key, note: String::new() }
            }
        }
    }
}

impl RosterEvent {
    /// The residue of a roster payload: what it meant without its note, kept
    /// by a node that redacts it (`agora_core::payload`, roster.md), so a
    /// redacted removal still removes. A payload that does not decode gets a
    /// residue that fails with the same error code.
    pub fn residue(payload: &[u8]) -> Vec<u8> {
        match RosterEvent::decode(payload) {
            Ok(ev) => ev.without_text().encode(),
            Err(RosterError::NotRoster) => Vec::new(),
            Err(RosterError::Version(v)) => ROSTER_FRAMING.frame_raw(v, &[]),
            Err(RosterError::NoteTooLong(_)) => RosterEvent::Admit { agent: AgentId([0; 32]), note: "\0".repeat(NOTE_BYTES_MAX + 1) }.encode(),
            Err(RosterError::Malformed(_) | RosterError::RemoveFounder | RosterError::RecoverFounder | RosterError::RecoverKeyIsAuthor) => {
                ROSTER_FRAMING.frame_raw(ROSTER_VERSION, &[0xff])
            }
        }
    }
}

/// One entry of the founder's chain, as the roster needs it.
#[derive(Clone, Copy, Debug)]
pub struct FounderEntry<'a> {
    /// Its seq.
    pub seq: u64,
    /// Its id.
    pub id: EntryId,
    /// What the node knows of its payload.
    pub content: agora_core::Content<'a>,
}

/// A roster entry that could not be applied, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The entry.
    pub id: EntryId,
    /// Why it had no effect.
    pub reason: String,
}

/// A removed agent's admitted history, pinned by its removal
/// ([`RosterEvent::RemoveAt`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The entry the removal names: the agent's head at the cut-off.
    pub head: EntryId,
    /// The pinned chain's ids, seq 1 first (`history[n - 1]` is its entry
    /// at seq n), once found in a store that holds `head`
    /// ([`Roster::resolve_pins`]); `None` until then, and then none of the
    /// agent's entries counts. Empty when the head named is not the agent's
    /// entry at the cut-off: then nothing of it counts.
    pub history: Option<Vec<EntryId>>,
}

/// A recovery the founder bound ([`RosterEvent::Recover`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The boundary: the agent's entry its recovery follows.
    pub head: EntryId,
    /// The boundary's seq.
    pub last_seq: u64,
    /// The key granted.
    pub key: AgentId,
    /// The founder's entry that bound it.
    pub by: EntryId,
}

/// The membership of a workspace, derived from its founder's chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roster {
    /// The founding agent, always a member.
    pub founder: AgentId,
    /// Members, the founder included, with the entry that admitted each
    /// (`None` for the founder).
    pub members: BTreeMap<AgentId, Option<EntryId>>,
    /// Agents removed, with the entry that removed them.
    pub removed: BTreeMap<AgentId, EntryId>,
    /// Of the removed agents, those removed with a cut-off: their last seq
    /// that stays admitted.
    pub cut_off: BTreeMap<AgentId, u64>,
    /// Of the agents with a cut-off, those whose removal pinned their
    /// history by its head.
    pub pinned: BTreeMap<AgentId, Pin>,
    /// Set when the payload of a founder entry never arrived: the roster is
    /// derived from the entries before this seq only, until it arrives (a
    /// stripped removal must not leave the removed agent admitted).
    pub pending_at_seq: Option<u64>,
    /// Set when the founder's chain is forked: the roster is frozen before
    /// this seq.
    pub frozen_at_fork_seq: Option<u64>,
    /// Roster payloads that had no effect (redacted, malformed, removing the
    /// founder), for reports.
    pub skipped: Vec<Skipped>,
    /// Of the agents whose chain is forked and who rotated their key, what
    /// their rotations leave out (`protocol-spec/keys.md`), found in a
    /// store by [`Roster::bound_keys`]; agents whose rotations leave nothing
    /// out are absent.
    pub key_bounds: BTreeMap<AgentId, KeyBounds>,
    /// Recoveries the founder bound, per agent in the roster's order (every
    /// one kept: the last decides, `protocol-spec/keys.md`).
    pub recoveries: BTreeMap<AgentId, Vec<Recovery>>,
}

impl Roster {
    /// The roster of a workspace whose founder has written nothing yet.
    pub fn founder_only(founder: AgentId) -> Self {
        Self {
            founder,
            members: BTreeMap::from([(founder, None)]),
            removed: BTreeMap::new(),
            cut_off: BTreeMap::new(),
            pinned: BTreeMap::new(),
            pending_at_seq: None,
            frozen_at_fork_seq: None,
            skipped: Vec::new(),
            key_bounds: BTreeMap::new(),
            recoveries: BTreeMap::new(),
        }
    }

    /// Derive the roster from every stored entry of the founder's chain, in
    /// any order. Entries are applied in seq order; other payloads (reasoning
    /// events, raw notes) are ignored. If two entries share a seq the chain is
    /// forked and only entries before that seq count.
    pub fn derive<'a>(founder: AgentId, entries: impl IntoIterator<Item = FounderEntry<'a>>) -> Self {
        let mut roster = Self::founder_only(founder);
        let mut by_seq: BTreeMap<u64, Vec<FounderEntry<'a>>> = BTreeMap::new();
        for e in entries {
            by_seq.entry(e.seq).or_default().push(e);
        }
        roster.frozen_at_fork_seq = by_seq.iter().find(|(_, v)| v.len() > 1).map(|(s, _)| *s);
        for (seq, at) in &by_seq {
            if roster.frozen_at_fork_seq.is_some_and(|f| *seq >= f) {
                break;
            }
            let Some(e) = at.first() else { continue };
            let payload = match e.content {
                agora_core::Content::Missing => {
                    // Its meaning is unknown until it arrives: stop here.
                    roster.pending_at_seq = Some(*seq);
                    break;
                }
                // A redacted payload's residue keeps its meaning.
                agora_core::Content::Held(p) | agora_core::Content::Redacted(Some(p)) => p,
                agora_core::Content::Redacted(None) => {
                    // Redacted before residues were kept: its effect is unknown.
                    roster.skipped.push(Skipped { id: e.id, reason: "redacted without a residue".into() });
                    continue;
                }
            };
            if !RosterEvent::is_roster_payload(payload) {
                continue;
            }
            match RosterEvent::decode(payload).and_then(|ev| ev.check_local(&founder).map(|()| ev)) {
                Ok(RosterEvent::Admit { agent, .. }) => roster.admit(agent, e.id),
                Ok(RosterEvent::Recover { agent, last_seq, head, key, .. }) => {
                    roster.admit(agent, e.id);
                    roster.recoveries.entry(agent).or_default().push(Recovery { head, last_seq, key, by: e.id });
                }
                Ok(RosterEvent::Remove { agent, .. }) => {
                    if roster.members.remove(&agent).is_some() {
                        roster.removed.insert(agent, e.id);
                    }
                }
                Ok(RosterEvent::RemoveAfter { agent, last_seq, .. }) => {
                    if roster.members.remove(&agent).is_some() {
                        roster.removed.insert(agent, e.id);
                        roster.cut_off.insert(agent, last_seq);
                    }
                }
                Ok(RosterEvent::RemoveAt { agent, last_seq, head, .. }) => {
                    if roster.members.remove(&agent).is_some() {
                        roster.removed.insert(agent, e.id);
                        roster.cut_off.insert(agent, last_seq);
                        roster.pinned.insert(agent, Pin { head, history: None });
                    }
                }
                Err(err) => roster.skipped.push(Skipped { id: e.id, reason: err.to_string() }),
            }
        }
        roster
    }

    /// `agent` becomes a member, admitted by `by`: its removal, cut-off
    /// and pin are lifted.
    fn admit(&mut self, agent: AgentId, by: EntryId) {
        self.removed.remove(&agent);
        self.cut_off.remove(&agent);
        self.pinned.remove(&agent);
        self.members.insert(agent, Some(by));
    }

    /// `agent`'s recoveries as the key bounds take them, in the roster's order.
    pub fn bindings(&self, agent: &AgentId) -> Vec<Binding> {
        self.recoveries.get(agent).map_or_else(Vec::new, |r| r.iter().map(|r| Binding { boundary: r.head, key: r.key }).collect())
    }

    /// Every recovery bound, as replication takes them (`Replicator::set_recoveries`
    /// in `agora-sync`): (agent, boundary, key granted).
    pub fn recovery_bindings(&self) -> BTreeSet<(AgentId, EntryId, AgentId)> {
        self.recoveries.iter().flat_map(|(a, list)| list.iter().map(move |r| (*a, r.head, r.key))).collect()
    }

    /// Is `agent` a member?
    pub fn admits(&self, agent: &AgentId) -> bool {
        self.members.contains_key(agent)
    }

    /// The members.
    pub fn member_set(&self) -> BTreeSet<AgentId> {
        self.members.keys().copied().collect()
    }

    /// What replication admits: every member with `None` (all its seqs), every
    /// agent removed with a cut-off with `Some(last_seq)` (its entries up to
    /// that seq are still fetched and served). Agents removed without a
    /// cut-off are absent.
    ///
    /// An agent whose pinned history is held whole (its head found, see
    /// [`Roster::resolve_pins`]) is absent too: nothing more of it can
    /// count, so nothing more is fetched or accepted, whatever its key signs
    /// (branches at any seq cost a node nothing once it holds the head).
    pub fn admission(&self) -> BTreeMap<AgentId, Option<u64>> {
        let open = |a: &AgentId| self.pinned.get(a).is_none_or(|p| p.history.is_none());
        self.members.keys().map(|a| (*a, None)).chain(self.cut_off.iter().filter(|(a, _)| open(a)).map(|(a, s)| (*a, Some(*s)))).collect()
    }

    /// Does the roster let this entry count in views? Every entry of a
    /// member (the founder included); of an agent removed with a pinned
    /// history, exactly the entries of that history (none while its head is
    /// not held); of one removed with a cut-off alone, its entries up to the
    /// cut-off; the entries held of an agent removed the old way (no
    /// cut-off). Nothing of an author never admitted: replication moves only
    /// admitted chains, so an entry a node holds of anyone else (imported by
    /// hand) would count on that node alone. It is stored, and counts from
    /// the admission on.
    ///
    /// And nothing an author's rotations leave out (`protocol-spec/keys.md`):
    /// an entry not comparable with every rotation of its author.
    pub fn admits_entry(&self, author: &AgentId, seq: u64, id: &EntryId) -> bool {
        if self.key_bounds.get(author).is_some_and(|b| !b.counts(id)) {
            return false;
        }
        match self.pinned.get(author) {
            Some(pin) => pin.history.as_ref().is_some_and(|h| seq >= 1 && usize::try_from(seq - 1).ok().and_then(|i| h.get(i)) == Some(id)),
            None => self.admits_seq(author, seq),
        }
    }

    /// Does a fork proof of `author` at `seq` count in views? None of an
    /// agent with a pinned history does (its history is one chain, so any
    /// fork pairs an entry off it), nor of an author never admitted;
    /// otherwise as [`Roster::admits_entry`] by seq. Of an author whose
    /// rotations leave entries out, only a seq where two entries that count
    /// sit: a rotation resolves the fork a thief made.
    pub fn admits_fork(&self, author: &AgentId, seq: u64) -> bool {
        !self.pinned.contains_key(author) && self.admits_seq(author, seq) && self.key_bounds.get(author).is_none_or(|b| b.forks.contains(&seq))
    }

    /// Find what key events leave out: `examine` are the authors whose
    /// chain may lose entries to them (a forked chain that rotated, a chain
    /// with a recover entry), `chain(author)` their entries' links (every
    /// branch); the authors this roster binds a recovery of are examined
    /// too. Work is linear in those chains.
    pub fn bound_keys<E>(&mut self, examine: impl IntoIterator<Item = AgentId>, mut chain: impl FnMut(&AgentId) -> Result<Vec<ChainLink>, E>) -> Result<(), E> {
        self.key_bounds.clear();
        let authors: BTreeSet<AgentId> = examine.into_iter().chain(self.recoveries.keys().copied()).collect();
        for author in authors {
            if let Some(bounds) = key_bounds(&chain(&author)?, &self.bindings(&author)) {
                self.key_bounds.insert(author, bounds);
            }
        }
        Ok(())
    }

    /// An author's seq counts (pins aside): up to its cut-off if it has
    /// one, else if it is a member or was removed the old way; never if it
    /// was never admitted.
    fn admits_seq(&self, author: &AgentId, seq: u64) -> bool {
        match self.cut_off.get(author) {
            Some(last) => seq <= *last,
            None => self.members.contains_key(author) || self.removed.contains_key(author),
        }
    }

    /// The heads of pinned histories not found yet: a write that stores one
    /// changes which entries count ([`Roster::resolve_pins`] again).
    pub fn pins_waiting(&self) -> impl Iterator<Item = &EntryId> + '_ {
        self.pinned.values().filter(|p| p.history.is_none()).map(|p| &p.head)
    }

    /// Find each pinned history not found yet, walking back from its head:
    /// `entry(id)` gives the held entry's (author, seq, backlink). A head not
    /// held leaves the history unknown (nothing of the agent counts yet); a
    /// head that is not the agent's entry at its cut-off pins nothing. Costs
    /// one lookup per pinned entry.
    pub fn resolve_pins<E>(&mut self, mut entry: impl FnMut(&EntryId) -> Result<Option<(AgentId, u64, Option<EntryId>)>, E>) -> Result<(), E> {
        for (agent, pin) in self.pinned.iter_mut().filter(|(_, p)| p.history.is_none()) {
            let last_seq = self.cut_off.get(agent).copied().unwrap_or(0);
            let Some((author, seq, mut back)) = entry(&pin.head)? else { continue };
            if author != *agent || seq != last_seq {
                pin.history = Some(Vec::new());
                continue;
            }
            let mut ids = vec![pin.head];
            let mut complete = true;
            while let Some(id) = back {
                match entry(&id)? {
                    Some((a, s, b)) if a == *agent && s + 1 == seq.saturating_sub(ids.len() as u64 - 1) => {
                        ids.push(id);
                        back = b;
                    }
                    // Stores hold complete prefixes: not reached by a store.
                    _ => {
                        complete = false;
                        break;
                    }
                }
            }
            if complete {
                ids.reverse();
                pin.history = Some(ids);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::Content;

    fn agent(n: u8) -> AgentId {
        AgentId([n; 32])
    }
    fn id(n: u8) -> EntryId {
        EntryId([n; 32])
    }

    /// Every kind with its text set to a marker: the residue keeps no byte
    /// of it. The match names every field, so a new kind or field breaks
    /// this test's compilation until it is listed.
    #[test]
    fn a_residue_keeps_no_byte_of_any_text_field() {
        let events = [
            RosterEvent::Admit { agent: agent(1), note: "MARK-note-51c2".into() },
            RosterEvent::Remove { agent: agent(2), reason: "MARK-reason-0d7e".into() },
            RosterEvent::RemoveAfter { agent: agent(3), last_seq: 4, reason: "MARK-reason-a3b9".into() },
            RosterEvent::RemoveAt { agent: agent(4), last_seq: 5, head: EntryId([9; 32]), reason: "MARK-reason-6f14".into() },
            RosterEvent::Recover { agent: agent(5), last_seq: 6, head: EntryId([8; 32]), key: agent(6), note: "MARK-note-2be0".into() },
        ];
        for e in &events {
            let text = match e {
                RosterEvent::Admit { agent: _, note } | RosterEvent::Recover { agent: _, last_seq: _, head: _, key: _, note } => note,
                RosterEvent::Remove { agent: _, reason }
                | RosterEvent::RemoveAfter { agent: _, last_seq: _, reason }
                | RosterEvent::RemoveAt { agent: _, last_seq: _, head: _, reason } => reason,
            };
            let residue = RosterEvent::residue(&e.encode());
            assert!(RosterEvent::decode(&residue).is_ok());
            assert!(!residue.windows(text.len()).any(|w| w == text.as_bytes()), "the residue keeps {text:?}");
        }
    }

    #[test]
    fn round_trip_and_canonical_only() {
        let ev = RosterEvent::Admit { agent: agent(7), note: "bob".into() };
        let bytes = ev.encode();
        assert_eq!(RosterEvent::decode(&bytes), Ok(ev));
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(matches!(RosterEvent::decode(&trailing), Err(RosterError::Malformed(_))));
        let mut version = bytes.clone();
        version[4] = 2;
        assert_eq!(RosterEvent::decode(&version), Err(RosterError::Version(2)));
        assert_eq!(RosterEvent::decode(b"agev\x01"), Err(RosterError::NotRoster));
        // Kind 2 does not exist.
        assert!(matches!(RosterEvent::decode(b"agrs\x01\x02"), Err(RosterError::Malformed(_))));
        // An overlong varint for the note length is not canonical.
        let mut overlong = b"agrs\x01\x00".to_vec();
        overlong.extend([7u8; 32]);
        overlong.extend([0x80, 0x00]);
        assert!(matches!(RosterEvent::decode(&overlong), Err(RosterError::Malformed(_))));
    }

    #[test]
    fn admits_and_removes_in_seq_order_whatever_the_input_order() {
        let f = agent(1);
        let admit_b = RosterEvent::Admit { agent: agent(2), note: String::new() }.encode();
        let admit_c = RosterEvent::Admit { agent: agent(3), note: String::new() }.encode();
        let remove_b = RosterEvent::Remove { agent: agent(2), reason: "left".into() }.encode();
        let entries = [
            FounderEntry { seq: 3, id: id(3), content: Content::Held(&remove_b) },
            FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit_b) },
            FounderEntry { seq: 2, id: id(2), content: Content::Held(b"agev\x01\x00\x00") },
            FounderEntry { seq: 4, id: id(4), content: Content::Held(&admit_c) },
        ];
        let r = Roster::derive(f, entries);
        assert!(r.admits(&f) && r.admits(&agent(3)) && !r.admits(&agent(2)));
        assert_eq!(r.removed.get(&agent(2)), Some(&id(3)));
        assert_eq!(r.members.get(&agent(3)), Some(&Some(id(4))));
        assert!(r.skipped.is_empty());
    }

    #[test]
    fn a_forked_founder_chain_freezes_the_roster_before_the_fork() {
        let f = agent(1);
        let admit_b = RosterEvent::Admit { agent: agent(2), note: String::new() }.encode();
        let admit_c = RosterEvent::Admit { agent: agent(3), note: String::new() }.encode();
        let admit_d = RosterEvent::Admit { agent: agent(4), note: String::new() }.encode();
        let r = Roster::derive(
            f,
            [
                FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit_b) },
                FounderEntry { seq: 2, id: id(2), content: Content::Held(&admit_c) },
                FounderEntry { seq: 2, id: id(9), content: Content::Held(&admit_d) },
            ],
        );
        assert_eq!(r.frozen_at_fork_seq, Some(2));
        assert_eq!(r.member_set(), BTreeSet::from([f, agent(2)]));
    }

    #[test]
    fn the_founder_cannot_be_removed_and_redacted_roster_entries_are_reported() {
        let f = agent(1);
        let remove_f = RosterEvent::Remove { agent: f, reason: String::new() }.encode();
        assert_eq!(RosterEvent::decode(&remove_f).unwrap().check_local(&f), Err(RosterError::RemoveFounder));
        let r = Roster::derive(
            f,
            [FounderEntry { seq: 1, id: id(1), content: Content::Held(&remove_f) }, FounderEntry { seq: 2, id: id(2), content: Content::Redacted(None) }],
        );
        assert!(r.admits(&f));
        assert_eq!(r.skipped.len(), 2);
    }

    /// Hardening item 9: a removal with a cut-off keeps the agent's entries
    /// up to it and only those; readmission lifts it.
    #[test]
    fn a_removal_with_a_cut_off_admits_exactly_the_entries_up_to_it() {
        let f = agent(1);
        let m = agent(5);
        let admit = RosterEvent::Admit { agent: m, note: String::new() }.encode();
        let remove = RosterEvent::RemoveAfter { agent: m, last_seq: 4, reason: "left".into() }.encode();
        let r = Roster::derive(
            f,
            [FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) }, FounderEntry { seq: 2, id: id(2), content: Content::Held(&remove) }],
        );
        assert!(!r.admits(&m));
        assert_eq!(r.admission().get(&m), Some(&Some(4)));
        assert_eq!(r.admission().get(&f), Some(&None));
        assert!(r.admits_entry(&m, 4, &id(4)) && !r.admits_entry(&m, 5, &id(5)));
        assert!(r.admits_entry(&f, 1_000, &id(9)), "the founder is a member");
        let again = Roster::derive(
            f,
            [
                FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) },
                FounderEntry { seq: 2, id: id(2), content: Content::Held(&remove) },
                FounderEntry { seq: 3, id: id(3), content: Content::Held(&admit) },
            ],
        );
        assert!(again.admits(&m) && again.admits_entry(&m, 99, &id(99)));
    }

    /// Issue 39 item 6: an author never admitted counts in no view (its
    /// entries and fork proofs), whatever a node holds of it; an admission
    /// makes every seq of it count; an agent removed the old way (no
    /// cut-off) keeps the entries held.
    #[test]
    fn an_author_never_admitted_counts_nowhere_until_admitted() {
        let (f, x, old) = (agent(1), agent(7), agent(8));
        assert!(Roster::founder_only(f).admits_entry(&f, 3, &id(3)) && Roster::founder_only(f).admits_fork(&f, 3));
        let admit_old = RosterEvent::Admit { agent: old, note: String::new() }.encode();
        let remove_old = RosterEvent::Remove { agent: old, reason: String::new() }.encode();
        let before = Roster::derive(
            f,
            [FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit_old) }, FounderEntry { seq: 2, id: id(2), content: Content::Held(&remove_old) }],
        );
        assert!(!before.admits_entry(&x, 1, &id(11)) && !before.admits_fork(&x, 1), "never admitted: stored, counted nowhere");
        assert!(before.admits_entry(&old, 9, &id(19)) && before.admits_fork(&old, 9), "removed without a cut-off: what is held stays");
        let admit_x = RosterEvent::Admit { agent: x, note: String::new() }.encode();
        let after = Roster::derive(
            f,
            [
                FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit_old) },
                FounderEntry { seq: 2, id: id(2), content: Content::Held(&remove_old) },
                FounderEntry { seq: 3, id: id(3), content: Content::Held(&admit_x) },
            ],
        );
        assert!(after.admits_entry(&x, 1, &id(11)) && after.admits_entry(&x, 1_000, &id(12)) && after.admits_fork(&x, 2), "admitted: every seq counts");
    }

    /// A removal that pins the agent's history by its head: exactly that
    /// chain counts once it is held; branches its key signs at any seq
    /// count nowhere, nor do forks of it; once the head is held, nothing of
    /// the agent is admitted for replication.
    #[test]
    fn a_pinned_removal_counts_exactly_the_history_ending_at_its_head() {
        let (f, m) = (agent(1), agent(5));
        let admit = RosterEvent::Admit { agent: m, note: String::new() }.encode();
        let remove = RosterEvent::RemoveAt { agent: m, last_seq: 3, head: id(13), reason: "left".into() }.encode();
        let derive = || {
            Roster::derive(
                f,
                [FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) }, FounderEntry { seq: 2, id: id(2), content: Content::Held(&remove) }],
            )
        };
        // M's chain 11 <- 12 <- 13 <- 14, and a branch 22 at seq 2 on 11.
        let held = |id_: &EntryId| -> Result<Option<(AgentId, u64, Option<EntryId>)>, ()> {
            Ok(match id_.0[0] {
                11 => Some((m, 1, None)),
                12 => Some((m, 2, Some(id(11)))),
                13 => Some((m, 3, Some(id(12)))),
                14 => Some((m, 4, Some(id(13)))),
                22 => Some((m, 2, Some(id(11)))),
                _ => None,
            })
        };
        let mut r = derive();
        assert_eq!(r.admission().get(&m), Some(&Some(3)), "fetched up to its cut-off until the head is held");
        assert!(!r.admits_entry(&m, 1, &id(11)), "nothing counts before the head is held");
        assert_eq!(r.pins_waiting().collect::<Vec<_>>(), vec![&id(13)]);
        r.resolve_pins(held).unwrap();
        assert_eq!(r.pinned[&m].history, Some(vec![id(11), id(12), id(13)]));
        assert!(r.admits_entry(&m, 1, &id(11)) && r.admits_entry(&m, 3, &id(13)));
        assert!(!r.admits_entry(&m, 2, &id(22)) && !r.admits_entry(&m, 4, &id(14)), "a branch below or an entry above counts nowhere");
        assert!(!r.admits_fork(&m, 2), "a fork of a pinned history counts nowhere");
        assert_eq!(r.admission().get(&m), None, "the history is held whole: nothing more is fetched");
        assert_eq!(r.pins_waiting().count(), 0);
        // A head that is not the agent's entry at the cut-off pins nothing.
        let wrong = RosterEvent::RemoveAt { agent: m, last_seq: 2, head: id(13), reason: String::new() }.encode();
        let mut w = Roster::derive(
            f,
            [FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) }, FounderEntry { seq: 2, id: id(2), content: Content::Held(&wrong) }],
        );
        w.resolve_pins(held).unwrap();
        assert_eq!(w.pinned[&m].history, Some(Vec::new()));
        assert!(!w.admits_entry(&m, 1, &id(11)));
    }

    /// Hardening items 6 and 7: a founder entry whose payload never arrived
    /// holds the roster before it (a stripped removal cannot leave the agent
    /// admitted); a redacted one keeps its effect through its residue.
    #[test]
    fn missing_payloads_hold_the_roster_and_residues_keep_their_effect() {
        let f = agent(1);
        let m = agent(5);
        let admit = RosterEvent::Admit { agent: m, note: "bob".into() }.encode();
        let remove = RosterEvent::RemoveAfter { agent: m, last_seq: 0, reason: "spam".into() }.encode();
        let held = Roster::derive(
            f,
            [FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) }, FounderEntry { seq: 2, id: id(2), content: Content::Held(&remove) }],
        );
        let residue = RosterEvent::residue(&remove);
        assert!(!residue.windows(4).any(|w| w == b"spam"));
        let redacted = Roster::derive(
            f,
            [
                FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) },
                FounderEntry { seq: 2, id: id(2), content: Content::Redacted(Some(&residue)) },
            ],
        );
        assert_eq!(redacted.admission(), held.admission(), "a residue removes as the payload did");
        let pending = Roster::derive(
            f,
            [
                FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) },
                FounderEntry { seq: 2, id: id(2), content: Content::Missing },
                FounderEntry { seq: 3, id: id(3), content: Content::Held(&admit) },
            ],
        );
        assert_eq!(pending.pending_at_seq, Some(2));
        assert!(pending.admits(&m), "the roster as of seq 1, nothing later applied");
        assert_eq!(pending.members.get(&m), Some(&Some(id(1))));
        // Residues of undecodable payloads fail with the same code.
        for bad in [b"agrs\x02".to_vec(), b"agrs\x01\x07".to_vec(), RosterEvent::Admit { agent: m, note: "x".repeat(NOTE_BYTES_MAX + 1) }.encode()] {
            let code = |p: &[u8]| std::mem::discriminant(&RosterEvent::decode(p).unwrap_err());
            assert_eq!(code(&RosterEvent::residue(&bad)), code(&bad));
        }
    }

    /// A recovery: refused for the founder and for a key equal to the agent
    /// id; it admits the agent (lifting a removal's cut-off and pin) and
    /// records the binding; a second one is kept after the first; its
    /// residue binds the same.
    #[test]
    fn a_recovery_admits_the_agent_and_keeps_every_binding_in_order() {
        let (f, m, k1, k2) = (agent(1), agent(5), agent(8), agent(9));
        let recover = |head: u8, last_seq: u64, key: AgentId| RosterEvent::Recover { agent: m, last_seq, head: id(head), key, note: "lost both".into() };
        assert_eq!(RosterEvent::Recover { agent: f, last_seq: 1, head: id(1), key: k1, note: String::new() }.check_local(&f), Err(RosterError::RecoverFounder));
        assert_eq!(recover(11, 1, m).check_local(&f), Err(RosterError::RecoverKeyIsAuthor));
        let long = RosterEvent::Recover { agent: m, last_seq: 1, head: id(11), key: k1, note: "x".repeat(NOTE_BYTES_MAX + 1) };
        assert_eq!(long.check_local(&f), Err(RosterError::NoteTooLong(NOTE_BYTES_MAX + 1)));
        let remove = RosterEvent::RemoveAt { agent: m, last_seq: 1, head: id(11), reason: String::new() }.encode();
        let (first, second) = (recover(12, 2, k1).encode(), recover(14, 4, k2).encode());
        let residue = RosterEvent::residue(&second);
        let by_self = recover(12, 2, m).encode();
        let r = Roster::derive(
            f,
            [
                FounderEntry { seq: 1, id: id(1), content: Content::Held(&remove) },
                FounderEntry { seq: 2, id: id(2), content: Content::Held(&first) },
                FounderEntry { seq: 3, id: id(3), content: Content::Redacted(Some(&residue)) },
                FounderEntry { seq: 4, id: id(4), content: Content::Held(&by_self) },
            ],
        );
        assert!(r.admits(&m) && r.cut_off.is_empty() && r.pinned.is_empty(), "admitted again, its pin lifted");
        assert_eq!(r.members[&m], Some(id(3)));
        assert_eq!(
            r.recoveries[&m],
            vec![Recovery { head: id(12), last_seq: 2, key: k1, by: id(2) }, Recovery { head: id(14), last_seq: 4, key: k2, by: id(3) }]
        );
        assert_eq!(r.bindings(&m), vec![Binding { boundary: id(12), key: k1 }, Binding { boundary: id(14), key: k2 }]);
        assert_eq!(r.skipped.len(), 1, "a recovery granting the agent id is skipped");
    }

    /// The bindings reach the key bounds: an author the roster binds is
    /// examined without being named, and its thief's entries after the
    /// boundary count nowhere.
    #[test]
    fn the_roster_examines_the_authors_it_binds() {
        let (f, m, k) = (agent(1), agent(5), agent(8));
        let admit = RosterEvent::Admit { agent: m, note: String::new() }.encode();
        let bind = RosterEvent::Recover { agent: m, last_seq: 1, head: id(11), key: k, note: String::new() }.encode();
        let mut r = Roster::derive(
            f,
            [FounderEntry { seq: 1, id: id(1), content: Content::Held(&admit) }, FounderEntry { seq: 2, id: id(2), content: Content::Held(&bind) }],
        );
        let links = vec![
            ChainLink { id: id(11), seq: 1, backlink: None, event: agora_core::KeyEvent::None, key: m },
            ChainLink { id: id(12), seq: 2, backlink: Some(id(11)), event: agora_core::KeyEvent::None, key: m },
        ];
        r.bound_keys(std::iter::empty(), |_| Ok::<_, ()>(links.clone())).unwrap();
        assert!(r.admits_entry(&m, 1, &id(11)) && !r.admits_entry(&m, 2, &id(12)), "the thief's entry after the boundary counts nowhere");
    }
}
