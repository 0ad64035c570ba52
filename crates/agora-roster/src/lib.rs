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

use agora_core::{AgentId, EntryId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The 4 bytes every roster payload starts with.
pub const ROSTER_MAGIC: &[u8; 4] = b"agrs";
/// The only roster format version.
pub const ROSTER_VERSION: u8 = 1;
/// Largest note or reason, in bytes.
pub const NOTE_BYTES_MAX: usize = 1024;

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
    /// 1: `agent` is no longer replicated. Entries already held stay (the log
    /// is never rewritten); nothing new of its chain is accepted.
    Remove {
        /// The removed agent.
        agent: AgentId,
        /// Why, at most [`NOTE_BYTES_MAX`] bytes.
        reason: String,
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
}

impl RosterEvent {
    /// The payload bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = ROSTER_MAGIC.to_vec();
        out.push(ROSTER_VERSION);
        out.extend(postcard::to_allocvec(self).unwrap_or_default());
        out
    }

    /// Is this payload meant to be a roster event (starts with the magic)?
    pub fn is_roster_payload(payload: &[u8]) -> bool {
        payload.starts_with(ROSTER_MAGIC)
    }

    /// Decode canonically.
    pub fn decode(payload: &[u8]) -> Result<Self, RosterError> {
        let rest = payload.strip_prefix(ROSTER_MAGIC).ok_or(RosterError::NotRoster)?;
        let (&version, body) = rest.split_first().ok_or_else(|| RosterError::Malformed("no version byte".into()))?;
        if version != ROSTER_VERSION {
            return Err(RosterError::Version(version));
        }
        let (event, trailing): (RosterEvent, &[u8]) =
            postcard::take_from_bytes(body).map_err(|e| RosterError::Malformed(e.to_string()))?;
        if !trailing.is_empty() {
            return Err(RosterError::Malformed(format!("{} trailing bytes", trailing.len())));
        }
        if postcard::to_allocvec(&event).ok().as_deref() != Some(body) {
            return Err(RosterError::Malformed("non-canonical encoding".into()));
        }
        let note = match &event {
            RosterEvent::Admit { note, .. } => note,
            RosterEvent::Remove { reason, .. } => reason,
        };
        if note.len() > NOTE_BYTES_MAX {
            return Err(RosterError::NoteTooLong(note.len()));
        }
        Ok(event)
    }

    /// Check an event the founder is about to write.
    pub fn check_local(&self, founder: &AgentId) -> Result<(), RosterError> {
        match self {
            RosterEvent::Remove { agent, .. } if agent == founder => Err(RosterError::RemoveFounder),
            RosterEvent::Admit { note: t, .. } | RosterEvent::Remove { reason: t, .. } if t.len() > NOTE_BYTES_MAX => {
                Err(RosterError::NoteTooLong(t.len()))
            }
            _ => Ok(()),
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
    /// Its payload, when held.
    pub payload: Option<&'a [u8]>,
}

/// A roster entry that could not be applied, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The entry.
    pub id: EntryId,
    /// Why it had no effect.
    pub reason: String,
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
    /// Set when the founder's chain is forked: the roster is frozen before
    /// this seq.
    pub frozen_at_fork_seq: Option<u64>,
    /// Roster payloads that had no effect (redacted, malformed, removing the
    /// founder), for reports.
    pub skipped: Vec<Skipped>,
}

impl Roster {
    /// The roster of a workspace whose founder has written nothing yet.
    pub fn founder_only(founder: AgentId) -> Self {
        Self {
            founder,
            members: BTreeMap::from([(founder, None)]),
            removed: BTreeMap::new(),
            frozen_at_fork_seq: None,
            skipped: Vec::new(),
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
            let Some(payload) = e.payload else {
                // Redacted: if it was a roster event, its effect is unknown.
                roster.skipped.push(Skipped { id: e.id, reason: "payload not held".into() });
                continue;
            };
            if !RosterEvent::is_roster_payload(payload) {
                continue;
            }
            match RosterEvent::decode(payload).and_then(|ev| ev.check_local(&founder).map(|()| ev)) {
                Ok(RosterEvent::Admit { agent, .. }) => {
                    roster.removed.remove(&agent);
                    roster.members.insert(agent, Some(e.id));
                }
                Ok(RosterEvent::Remove { agent, .. }) => {
                    if roster.members.remove(&agent).is_some() {
                        roster.removed.insert(agent, e.id);
                    }
                }
                Err(err) => roster.skipped.push(Skipped { id: e.id, reason: err.to_string() }),
            }
        }
        roster
    }

    /// Is `agent` a member?
    pub fn admits(&self, agent: &AgentId) -> bool {
        self.members.contains_key(agent)
    }

    /// The members.
    pub fn member_set(&self) -> BTreeSet<AgentId> {
        self.members.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(n: u8) -> AgentId {
        AgentId([n; 32])
    }
    fn id(n: u8) -> EntryId {
        EntryId([n; 32])
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
            FounderEntry { seq: 3, id: id(3), payload: Some(&remove_b) },
            FounderEntry { seq: 1, id: id(1), payload: Some(&admit_b) },
            FounderEntry { seq: 2, id: id(2), payload: Some(b"agev\x01\x00\x00") },
            FounderEntry { seq: 4, id: id(4), payload: Some(&admit_c) },
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
                FounderEntry { seq: 1, id: id(1), payload: Some(&admit_b) },
                FounderEntry { seq: 2, id: id(2), payload: Some(&admit_c) },
                FounderEntry { seq: 2, id: id(9), payload: Some(&admit_d) },
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
            [FounderEntry { seq: 1, id: id(1), payload: Some(&remove_f) }, FounderEntry { seq: 2, id: id(2), payload: None }],
        );
        assert!(r.admits(&f));
        assert_eq!(r.skipped.len(), 2);
    }
}
