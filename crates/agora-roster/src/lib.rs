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
//!
//! The founder may name admins and a threshold k ([`RosterEvent::Admins`]):
//! a removal pinning a head or a recovery that k of them write, each in its
//! own chain, takes effect as if the founder had written it, after the
//! founder's own events ([`Roster::derive_with_votes`]).
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
/// Most admins a roster names: a vote is counted per admin, and every admin's
/// chain is read whenever the roster is derived, so the set stays small.
pub const ADMINS_MAX: usize = 16;

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
    /// 5: the founder names the roster's admins and the threshold: a
    /// [`RosterEvent::RemoveAt`] or [`RosterEvent::Recover`] that `threshold`
    /// of them write, identical but for the text, takes effect. Replaces the
    /// admins named before; an empty list with threshold 0 names none.
    Admins {
        /// The admins, in strictly ascending order, each a member, at most
        /// [`ADMINS_MAX`], never the founder.
        admins: Vec<AgentId>,
        /// How many of them must write the same event: 1 to their number
        /// (0 with no admins).
        threshold: u64,
        /// Free text (why), at most [`NOTE_BYTES_MAX`] bytes.
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
    /// More admins than [`ADMINS_MAX`].
    #[error("{0} admins exceed the limit of {ADMINS_MAX}")]
    AdminsTooMany(usize),
    /// The admins are not in strictly ascending order (or one is named twice).
    #[error("the admins must be named once each, in ascending order")]
    AdminsOrder,
    /// The founder named among the admins: it is an authority on its own.
    #[error("the founder is the roster's authority on its own and is not named among its admins")]
    AdminsFounder,
    /// A threshold outside 1 to the number of admins (0 only with none).
    #[error("a threshold of {threshold} for {admins} admins (1 to {admins}, or 0 with no admins)")]
    AdminsThreshold {
        /// The threshold written.
        threshold: u64,
        /// The number of admins named.
        admins: usize,
    },
    /// An admin named that is not a member when the event is applied.
    #[error("admin {0} is not a member")]
    AdminNotMember(AgentId),
}

impl RosterError {
    /// The error's code, as roster.md names it.
    pub fn code(&self) -> &'static str {
        match self {
            RosterError::NotRoster => "not_roster",
            RosterError::Version(_) => "unsupported_version",
            RosterError::Malformed(_) => "malformed",
            RosterError::NoteTooLong(_) => "note_too_long",
            RosterError::RemoveFounder => "remove_founder",
            RosterError::RecoverFounder => "recover_founder",
            RosterError::RecoverKeyIsAuthor => "recover_key_is_author",
            RosterError::AdminsTooMany(_) => "admins_too_many",
            RosterError::AdminsOrder => "admins_order",
            RosterError::AdminsFounder => "admins_founder",
            RosterError::AdminsThreshold { .. } => "admins_threshold",
            RosterError::AdminNotMember(_) => "admin_not_member",
        }
    }
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
            RosterEvent::Admins { admins, .. } if admins.len() > ADMINS_MAX => Err(RosterError::AdminsTooMany(admins.len())),
            RosterEvent::Admins { admins, .. } if admins.windows(2).any(|w| w[0] >= w[1]) => Err(RosterError::AdminsOrder),
            RosterEvent::Admins { admins, .. } if admins.contains(founder) => Err(RosterError::AdminsFounder),
            RosterEvent::Admins { admins, threshold, .. } if !threshold_fits(*threshold, admins.len()) => {
                Err(RosterError::AdminsThreshold { threshold: *threshold, admins: admins.len() })
            }
            _ if self.note().len() > NOTE_BYTES_MAX => Err(RosterError::NoteTooLong(self.note().len())),
            _ => Ok(()),
        }
    }

    /// The free text: an admission's note or a removal's reason.
    pub fn note(&self) -> &str {
        match self {
            RosterEvent::Admit { note, .. } | RosterEvent::Recover { note, .. } | RosterEvent::Admins { note, .. } => note,
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
            RosterEvent::Admins { admins, threshold, note: _ } => RosterEvent::Admins { admins: admins.clone(), threshold: *threshold, note: String::new() },
        }
    }

    /// May a quorum of admins make this act? A removal pinning a head and
    /// a recovery: the authority's acts on a member's keys. Admissions,
    /// the older removals and the admin set stay the founder's.
    pub fn is_quorum_act(&self) -> bool {
        matches!(self, RosterEvent::RemoveAt { .. } | RosterEvent::Recover { .. })
    }
}

/// Where a quorum act applies: its agent and seq. Acts are applied in this
/// order, fixed by what the quorum wrote (not by when or by whom).
fn act_place(event: &RosterEvent) -> (AgentId, u64) {
    match event {
        RosterEvent::RemoveAt { agent, last_seq, .. } | RosterEvent::Recover { agent, last_seq, .. } => (*agent, *last_seq),
        RosterEvent::Admit { agent, .. } | RosterEvent::Remove { agent, .. } => (*agent, 0),
        RosterEvent::RemoveAfter { agent, last_seq, .. } => (*agent, *last_seq),
        RosterEvent::Admins { .. } => (AgentId([0; 32]), 0),
    }
}

/// A threshold of `threshold` for `admins` admins: 1 to `admins`, or 0 with none.
fn threshold_fits(threshold: u64, admins: usize) -> bool {
    if admins == 0 { threshold == 0 } else { threshold >= 1 && threshold <= admins as u64 }
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
            // The checks' errors never come from decoding.
            Err(
                RosterError::Malformed(_)
                | RosterError::RemoveFounder
                | RosterError::RecoverFounder
                | RosterError::RecoverKeyIsAuthor
                | RosterError::AdminsTooMany(_)
                | RosterError::AdminsOrder
                | RosterError::AdminsFounder
                | RosterError::AdminsThreshold { .. }
                | RosterError::AdminNotMember(_),
            ) => ROSTER_FRAMING.frame_raw(ROSTER_VERSION, &[0xff]),
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

/// One entry of an admin's chain, as the roster reads it for votes
/// ([`Roster::derive_with_votes`]).
#[derive(Clone, Copy, Debug)]
pub struct AdminEntry<'a> {
    /// Its author.
    pub author: AgentId,
    /// Its seq.
    pub seq: u64,
    /// Its id.
    pub id: EntryId,
    /// What the node knows of its payload.
    pub content: agora_core::Content<'a>,
}

/// An act admins voted for: one [`RosterEvent::RemoveAt`] or
/// [`RosterEvent::Recover`], without its text (votes that differ only in
/// their note are the same vote), with the admins that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The act, its text emptied.
    pub event: RosterEvent,
    /// Each admin of the current set that wrote it, with its first entry
    /// (lowest seq) that did.
    pub voters: BTreeMap<AgentId, EntryId>,
    /// What came of it.
    pub outcome: VoteOutcome,
}

/// What came of a [`Vote`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteOutcome {
    /// Fewer voters than the threshold: no effect (yet).
    Short,
    /// A quorum: applied after the founder's events.
    Applied,
    /// A quorum, but another act with a quorum names the same agent and
    /// seq: neither is applied.
    Conflict,
}

/// Why an admin's votes stop before the end of its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminHold {
    /// Its chain is forked at this seq: no entry from it on counts as a vote.
    FrozenAtForkSeq(u64),
    /// The payload of its entry at this seq has not arrived: its votes from
    /// it on wait.
    PendingAtSeq(u64),
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
    /// Recoveries the founder or a quorum bound, per agent in the roster's
    /// order (every one kept: the last decides, `protocol-spec/keys.md`).
    pub recoveries: BTreeMap<AgentId, Vec<Recovery>>,
    /// The admins in force: those the founder's last applied
    /// [`RosterEvent::Admins`] named that are members at the end of the
    /// founder's events.
    pub admins: BTreeSet<AgentId>,
    /// How many admins make a quorum (0: no admins).
    pub threshold: u64,
    /// The founder's entry that named the admins.
    pub admins_by: Option<EntryId>,
    /// Every act the admins in force voted for, in the order of their
    /// events' bytes, with what came of it.
    pub votes: Vec<Vote>,
    /// Admins whose votes stop before the end of their chain, and where.
    pub admin_holds: BTreeMap<AgentId, AdminHold>,
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
            admins: BTreeSet::new(),
            threshold: 0,
            admins_by: None,
            votes: Vec::new(),
            admin_holds: BTreeMap::new(),
        }
    }

    /// Derive the roster from the founder's entries and the admins' (any
    /// author's may be given: only the entries of the admins in force are
    /// read), each in any order. The founder's events are applied first
    /// ([`Roster::derive`]); then every act with a quorum of the admins in
    /// force, ordered by agent and seq, as if the founder had written it
    /// after its last entry. Votes of an admin stop at the first fork of its
    /// chain and at the first entry of it whose payload has not arrived.
    pub fn derive_with_votes<'a>(
        founder: AgentId,
        entries: impl IntoIterator<Item = FounderEntry<'a>>,
        votes: impl IntoIterator<Item = AdminEntry<'a>>,
    ) -> Self {
        let mut roster = Self::derive(founder, entries);
        roster.apply_votes(votes);
        roster
    }

    /// Count the admins' votes and apply the acts with a quorum.
    fn apply_votes<'a>(&mut self, entries: impl IntoIterator<Item = AdminEntry<'a>>) {
        if self.admins.is_empty() {
            return;
        }
        let mut chains: BTreeMap<AgentId, BTreeMap<u64, Vec<AdminEntry<'a>>>> = BTreeMap::new();
        for e in entries.into_iter().filter(|e| self.admins.contains(&e.author)) {
            chains.entry(e.author).or_default().entry(e.seq).or_default().push(e);
        }
        // Acts by their bytes without text: the order of the report, and
        // one vote per admin however often it wrote the act.
        let mut acts: BTreeMap<Vec<u8>, (RosterEvent, BTreeMap<AgentId, EntryId>)> = BTreeMap::new();
        for (admin, by_seq) in &chains {
            let fork = by_seq.iter().find(|(_, v)| v.len() > 1).map(|(s, _)| *s);
            if let Some(f) = fork {
                self.admin_holds.insert(*admin, AdminHold::FrozenAtForkSeq(f));
            }
            for (seq, at) in by_seq.range(..fork.unwrap_or(u64::MAX)) {
                let Some(e) = at.first() else { continue };
                let payload = match e.content {
                    agora_core::Content::Missing => {
                        self.admin_holds.insert(*admin, AdminHold::PendingAtSeq(*seq));
                        break;
                    }
                    agora_core::Content::Held(p) | agora_core::Content::Redacted(Some(p)) => p,
                    agora_core::Content::Redacted(None) => {
                        self.skipped.push(Skipped { id: e.id, reason: "redacted without a residue".into() });
                        continue;
                    }
                };
                if !RosterEvent::is_roster_payload(payload) {
                    continue;
                }
                match RosterEvent::decode(payload).and_then(|ev| ev.check_local(&self.founder).map(|()| ev)) {
                    Ok(ev) if ev.is_quorum_act() => {
                        let ev = ev.without_text();
                        let slot = acts.entry(ev.encode()).or_insert_with(|| (ev, BTreeMap::new()));
                        slot.1.entry(*admin).or_insert(e.id);
                    }
                    // Admissions and the admin set are the founder's alone.
                    Ok(_) => {}
                    Err(err) => self.skipped.push(Skipped { id: e.id, reason: err.to_string() }),
                }
            }
        }
        let quorum = |voters: &BTreeMap<AgentId, EntryId>| voters.len() as u64 >= self.threshold;
        // Acts with a quorum, by (agent, seq): two different ones there conflict.
        let mut at: BTreeMap<(AgentId, u64), usize> = BTreeMap::new();
        for (event, voters) in acts.values() {
            if quorum(voters) {
                *at.entry(act_place(event)).or_default() += 1;
            }
        }
        self.votes = acts
            .into_values()
            .map(|(event, voters)| {
                let outcome = match quorum(&voters) {
                    false => VoteOutcome::Short,
                    true if at.get(&act_place(&event)).is_some_and(|n| *n > 1) => VoteOutcome::Conflict,
                    true => VoteOutcome::Applied,
                };
                Vote { event, voters, outcome }
            })
            .collect();
        let mut applied: Vec<(RosterEvent, EntryId)> =
            self.votes.iter().filter(|v| v.outcome == VoteOutcome::Applied).filter_map(|v| v.voters.values().min().map(|by| (v.event.clone(), *by))).collect();
        applied.sort_by_key(|(ev, _)| act_place(ev));
        for (event, by) in applied {
            self.apply(event, by);
        }
    }

    /// The admins in force, with whether each is the founder: the authors
    /// whose roster events change the roster.
    pub fn is_authority(&self, author: &AgentId) -> bool {
        *author == self.founder || self.admins.contains(author)
    }

    /// Check an event before it is written by the founder: the checks of
    /// [`RosterEvent::check_local`], and the admins named are members.
    pub fn check(&self, event: &RosterEvent) -> Result<(), RosterError> {
        event.check_local(&self.founder)?;
        if let RosterEvent::Admins { admins, .. } = event
            && let Some(a) = admins.iter().find(|a| !self.members.contains_key(a))
        {
            return Err(RosterError::AdminNotMember(*a));
        }
        Ok(())
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
            match RosterEvent::decode(payload).and_then(|ev| roster.check(&ev).map(|()| ev)) {
                Ok(ev) => roster.apply(ev, e.id),
                Err(err) => roster.skipped.push(Skipped { id: e.id, reason: err.to_string() }),
            }
        }
        // An admin the founder removed since naming it is an admin no more.
        let members = &roster.members;
        roster.admins.retain(|a| members.contains_key(a));
        roster
    }

    /// Apply one event that passed the checks, written by `by` (the
    /// founder's entry, or an admin's vote).
    fn apply(&mut self, event: RosterEvent, by: EntryId) {
        match event {
            RosterEvent::Admit { agent, .. } => self.admit(agent, by),
            RosterEvent::Recover { agent, last_seq, head, key, .. } => {
                self.admit(agent, by);
                self.recoveries.entry(agent).or_default().push(Recovery { head, last_seq, key, by });
            }
            RosterEvent::Remove { agent, .. } => {
                if self.members.remove(&agent).is_some() {
                    self.removed.insert(agent, by);
                }
            }
            RosterEvent::RemoveAfter { agent, last_seq, .. } => {
                if self.members.remove(&agent).is_some() {
                    self.removed.insert(agent, by);
                    self.cut_off.insert(agent, last_seq);
                }
            }
            RosterEvent::RemoveAt { agent, last_seq, head, .. } => {
                if self.members.remove(&agent).is_some() {
                    self.removed.insert(agent, by);
                    self.cut_off.insert(agent, last_seq);
                    self.pinned.insert(agent, Pin { head, history: None });
                }
            }
            RosterEvent::Admins { admins, threshold, .. } => {
                self.admins = admins.into_iter().collect();
                self.threshold = threshold;
                self.admins_by = Some(by);
            }
        }
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
            RosterEvent::Admins { admins: vec![agent(2), agent(3)], threshold: 2, note: "MARK-note-77a1".into() },
        ];
        for e in &events {
            let text = match e {
                RosterEvent::Admit { agent: _, note }
                | RosterEvent::Recover { agent: _, last_seq: _, head: _, key: _, note }
                | RosterEvent::Admins { admins: _, threshold: _, note } => note,
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

    fn founder_chain(payloads: &[Vec<u8>]) -> Vec<FounderEntry<'_>> {
        payloads.iter().enumerate().map(|(i, p)| FounderEntry { seq: i as u64 + 1, id: id(i as u8 + 1), content: Content::Held(p) }).collect()
    }

    fn vote<'a>(author: AgentId, seq: u64, id_: u8, payload: &'a [u8]) -> AdminEntry<'a> {
        AdminEntry { author, seq, id: id(id_), content: Content::Held(payload) }
    }

    /// The founder admits a, b, c and x and names a, b, c admins with
    /// threshold 2; returns its payloads.
    fn with_admins() -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = [2, 3, 4, 5].iter().map(|n| RosterEvent::Admit { agent: agent(*n), note: String::new() }.encode()).collect();
        out.push(RosterEvent::Admins { admins: vec![agent(2), agent(3), agent(4)], threshold: 2, note: "ops".into() }.encode());
        out
    }

    fn recover_x(note: &str) -> Vec<u8> {
        RosterEvent::Recover { agent: agent(5), last_seq: 3, head: id(53), key: agent(9), note: note.into() }.encode()
    }

    /// The checks of an admin set: order, bound, the founder, the
    /// threshold, membership.
    #[test]
    fn an_admin_set_is_checked_before_it_is_written_and_when_derived() {
        let f = agent(1);
        let set = |admins: Vec<AgentId>, threshold: u64| RosterEvent::Admins { admins, threshold, note: String::new() };
        assert_eq!(set(vec![agent(2), agent(3)], 2).check_local(&f), Ok(()));
        assert_eq!(set(vec![], 0).check_local(&f), Ok(()));
        assert_eq!(set(vec![agent(3), agent(2)], 1).check_local(&f), Err(RosterError::AdminsOrder));
        assert_eq!(set(vec![agent(2), agent(2)], 1).check_local(&f), Err(RosterError::AdminsOrder));
        assert_eq!(set(vec![f, agent(2)], 1).check_local(&f), Err(RosterError::AdminsFounder));
        assert_eq!(set((2..=18).map(agent).collect(), 2).check_local(&f), Err(RosterError::AdminsTooMany(17)));
        assert!(set((2..=17).map(agent).collect(), 16).check_local(&f).is_ok());
        for (n, k) in [(2, 0), (2, 3), (0, 1)] {
            assert_eq!(set((2..2 + n).map(agent).collect(), k).check_local(&f), Err(RosterError::AdminsThreshold { threshold: k, admins: n as usize }));
        }
        let not_member = set(vec![agent(2)], 1);
        assert_eq!(Roster::founder_only(f).check(&not_member), Err(RosterError::AdminNotMember(agent(2))));
        let payloads = [not_member.encode()];
        let r = Roster::derive(f, founder_chain(&payloads));
        assert!(r.admins.is_empty() && r.skipped.len() == 1, "an admin set naming a non-member is skipped");
        let r = Roster::derive(f, founder_chain(&with_admins()));
        assert_eq!((r.admins.len(), r.threshold, r.admins_by), (3, 2, Some(id(5))));
    }

    /// Two of three admins recover x: one alone changes nothing, a vote of
    /// a non-admin counts for nothing, an admin voting twice counts once,
    /// and notes may differ.
    #[test]
    fn a_quorum_of_admins_recovers_and_one_admin_alone_does_not() {
        let f = agent(1);
        let founder = with_admins();
        let (a, b, d) = (agent(2), agent(3), agent(6));
        let (va, va2, vb) = (recover_x("lost"), recover_x("lost, said again"), recover_x("confirmed by phone"));
        let derive = |votes: Vec<AdminEntry<'_>>| Roster::derive_with_votes(f, founder_chain(&founder), votes);
        let alone = derive(vec![vote(a, 1, 21, &va), vote(a, 2, 22, &va2), vote(d, 1, 61, &vb)]);
        assert!(alone.recoveries.is_empty(), "one admin (twice) and a non-admin are no quorum");
        assert_eq!(alone.votes.len(), 1);
        assert_eq!(alone.votes[0].voters, BTreeMap::from([(a, id(21))]));
        assert_eq!(alone.votes[0].outcome, VoteOutcome::Short);
        let two = derive(vec![vote(b, 1, 31, &vb), vote(a, 1, 21, &va), vote(a, 2, 22, &va2)]);
        assert_eq!(two.recoveries[&agent(5)], vec![Recovery { head: id(53), last_seq: 3, key: agent(9), by: id(21) }]);
        assert_eq!(two.votes[0].outcome, VoteOutcome::Applied);
        assert_eq!(two.recovery_bindings(), BTreeSet::from([(agent(5), id(53), agent(9))]));
        // Admissions and the admin set are the founder's alone.
        let admit = RosterEvent::Admit { agent: agent(7), note: String::new() }.encode();
        let r = derive(vec![vote(a, 1, 21, &admit), vote(b, 1, 31, &admit)]);
        assert!(!r.admits(&agent(7)) && r.votes.is_empty());
    }

    /// A quorum's removal pins the head like the founder's; quorum acts
    /// apply after the founder's events, so a founder admission written in
    /// its chain does not undo it; an admin the founder removed votes no
    /// more; a refused act (the founder's removal) is reported.
    #[test]
    fn quorum_acts_apply_after_the_founder_and_only_admins_in_force_count() {
        let f = agent(1);
        let (a, b, c) = (agent(2), agent(3), agent(4));
        let remove_x = RosterEvent::RemoveAt { agent: agent(5), last_seq: 2, head: id(52), reason: String::new() }.encode();
        let mut founder = with_admins();
        founder.push(RosterEvent::Admit { agent: agent(5), note: "again".into() }.encode());
        let r = Roster::derive_with_votes(f, founder_chain(&founder), [vote(a, 1, 21, &remove_x), vote(c, 1, 41, &remove_x)]);
        assert!(!r.admits(&agent(5)) && r.pinned[&agent(5)].head == id(52) && r.removed[&agent(5)] == id(21));
        // The founder removes admin c: its vote no longer counts.
        founder.push(RosterEvent::RemoveAt { agent: c, last_seq: 1, head: id(41), reason: String::new() }.encode());
        let r = Roster::derive_with_votes(f, founder_chain(&founder), [vote(a, 1, 21, &remove_x), vote(c, 1, 41, &remove_x)]);
        assert_eq!(r.admins, BTreeSet::from([a, b]));
        assert!(r.admits(&agent(5)), "a removed admin's vote counts for nothing");
        let remove_f = RosterEvent::RemoveAt { agent: f, last_seq: 1, head: id(1), reason: String::new() }.encode();
        let r = Roster::derive_with_votes(f, founder_chain(&founder), [vote(a, 1, 21, &remove_f), vote(b, 1, 31, &remove_f)]);
        assert!(r.admits(&f) && r.skipped.iter().map(|k| k.id).eq([id(21), id(31)]));
    }

    /// An admin's votes stop at its chain's first fork and at its first
    /// entry without payload; two acts with a quorum at one agent and seq
    /// conflict and neither applies.
    #[test]
    fn forks_missing_payloads_and_conflicts_hold_votes() {
        let f = agent(1);
        let founder = with_admins();
        let (a, b, c) = (agent(2), agent(3), agent(4));
        let (v, other) = (recover_x(""), RosterEvent::Recover { agent: agent(5), last_seq: 3, head: id(53), key: agent(8), note: String::new() }.encode());
        let derive = |votes: Vec<AdminEntry<'_>>| Roster::derive_with_votes(f, founder_chain(&founder), votes);
        let forked = derive(vec![vote(a, 1, 21, b"note"), vote(a, 2, 22, &v), vote(a, 2, 23, b"other"), vote(b, 1, 31, &v)]);
        assert!(forked.recoveries.is_empty(), "a's vote sits at its fork");
        assert_eq!(forked.admin_holds[&a], AdminHold::FrozenAtForkSeq(2));
        let before_fork = derive(vec![vote(a, 1, 21, &v), vote(a, 2, 22, b"x"), vote(a, 2, 23, b"y"), vote(b, 1, 31, &v)]);
        assert_eq!(before_fork.recoveries[&agent(5)].len(), 1, "a vote below the fork counts");
        let pending = derive(vec![AdminEntry { author: a, seq: 1, id: id(21), content: Content::Missing }, vote(a, 2, 22, &v), vote(b, 1, 31, &v)]);
        assert!(pending.recoveries.is_empty());
        assert_eq!(pending.admin_holds[&a], AdminHold::PendingAtSeq(1));
        let conflict = derive(vec![vote(a, 1, 21, &v), vote(b, 1, 31, &v), vote(b, 2, 32, &other), vote(c, 1, 41, &other)]);
        assert!(conflict.recoveries.is_empty() && conflict.votes.iter().all(|x| x.outcome == VoteOutcome::Conflict));
    }
}
