//! How a node feeds its live merged view ([`LiveMerge`]) with what its store
//! commits: which writes call for the view to be built again from the store
//! ([`roster_may_change`], and [`plan_update`] answering [`Feed::Rebuild`]),
//! and, for the others, the [`LiveUpdate`] they make under the roster the
//! view was built with ([`Feed::Apply`]).
//!
//! Pure: the node's view thread (`agora_live_views::merge_cache`) and the
//! swarm simulator's nodes both feed their views through it, so what the
//! simulator checks of a node's live view is what the node computes. The
//! caller reads its own store: for the author of an entry whose payload
//! changed and the merge does not know, and, when the update is applied,
//! for a chain derived again ([`LiveMerge::apply`]).

use crate::input::MergeEntry;
use crate::live::{LiveMerge, LiveUpdate};
use agora_core::verify::VerifyError;
use agora_core::{AgentId, EntryId, SignedEntry};
use agora_roster::{Roster, RosterEvent};

/// What a batch of committed writes does to a live merged view.
pub enum Feed {
    /// Apply this update: the entries the roster lets count, and the authors
    /// whose payloads changed or whose chains forked.
    Apply(LiveUpdate),
    /// Build the view again from the store: which entries count may have
    /// changed (the head of a removed agent's pinned history arrived, or a
    /// payload of the founder's changed and may be a roster event).
    Rebuild,
}

/// May a committed write (its new `entries`, with their payloads when held,
/// and the authors of the forks it found) change the roster of the
/// workspace founded by `founder`? An entry of the founder's that is a
/// roster event, or whose payload is not held (its meaning is unknown), or
/// a fork of the founder's chain: then the view is built again from the
/// store rather than updated.
pub fn roster_may_change<'a>(
    founder: &AgentId,
    entries: impl IntoIterator<Item = &'a (SignedEntry, Option<Vec<u8>>)>,
    fork_authors: impl IntoIterator<Item = &'a AgentId>,
) -> bool {
    roster_may_change_by(|a| a == founder, entries, fork_authors)
}

/// [`roster_may_change`] for the chains whose roster events count: the
/// founder's and its admins' (`Roster::is_authority`).
pub fn roster_may_change_by<'a>(
    authority: impl Fn(&AgentId) -> bool,
    entries: impl IntoIterator<Item = &'a (SignedEntry, Option<Vec<u8>>)>,
    fork_authors: impl IntoIterator<Item = &'a AgentId>,
) -> bool {
    entries.into_iter().any(|(e, payload)| authority(&e.header().author) && payload.as_deref().is_none_or(RosterEvent::is_roster_payload))
        || fork_authors.into_iter().any(authority)
}

/// May a committed write change what an author's key events leave out
/// (`Roster::key_bounds`, `protocol-spec/keys.md`)? A rotation or a
/// recovery; a fork of a chain that commits to next keys (its entries are
/// version 2), which a rotation may resolve; any entry of an author some of
/// whose entries are left out already (a descendant of one is left out
/// too); or an entry of an author the roster binds a recovery of, at a seq
/// up to just after the last binding's boundary (the boundary itself, or an
/// entry after it that is not the bound recovery). Then the view is built
/// again from the store rather than updated.
pub fn key_bounds_may_change<'a>(
    roster: &Roster,
    entries: impl IntoIterator<Item = &'a (SignedEntry, Option<Vec<u8>>)>,
    fork_authors: impl IntoIterator<Item = &'a AgentId>,
) -> bool {
    let forked: Vec<&AgentId> = fork_authors.into_iter().collect();
    entries.into_iter().any(|(e, _)| {
        let h = e.header();
        h.key_event() != agora_core::KeyEvent::None
            || roster.key_bounds.contains_key(&h.author)
            || (h.keys.is_some() && forked.contains(&&h.author))
            || roster.recoveries.get(&h.author).and_then(|r| r.last()).is_some_and(|r| h.seq <= r.last_seq.saturating_add(1))
    })
}

/// What a batch of committed writes (in commit order: the new `entries`
/// with their payloads when held, the entries whose payloads changed, the
/// authors whose chains forked) makes of `merge`, built under `roster` for
/// the workspace founded by `founder`. `author_held(id)` reads the author
/// of a stored entry the merge does not know (one the roster does not let
/// count, or that arrived since).
pub fn plan_update<E: From<VerifyError>>(
    merge: &LiveMerge,
    roster: &Roster,
    founder: &AgentId,
    entries: Vec<(SignedEntry, Option<Vec<u8>>)>,
    payloads_changed: &[EntryId],
    forks: Vec<AgentId>,
    mut author_held: impl FnMut(&EntryId) -> Result<Option<AgentId>, E>,
) -> Result<Feed, E> {
    // The head of a removed agent's pinned history arrived: which of its
    // entries count changes (`Roster::resolve_pins`).
    if roster.pins_waiting().next().is_some() && entries.iter().any(|(e, _)| roster.pins_waiting().any(|h| *h == e.id())) {
        return Ok(Feed::Rebuild);
    }
    // A rotation, or a fork one may resolve: which entries count changes
    // (`Roster::key_bounds`).
    if key_bounds_may_change(roster, &entries, &forks) {
        return Ok(Feed::Rebuild);
    }
    // An admin's vote, or a fork of its chain (the founder's are found by
    // the caller before queueing): the roster may change.
    if !roster.admins.is_empty() && roster_may_change_by(|a| roster.admins.contains(a), &entries, &forks) {
        return Ok(Feed::Rebuild);
    }
    let mut update = LiveUpdate::default();
    for (signed, payload) in entries {
        let h = signed.header();
        if !roster.admits_entry(&h.author, h.seq, &signed.id()) {
            continue;
        }
        update.entries.push(MergeEntry::from_owned(signed, payload)?);
    }
    for id in payloads_changed {
        let author = match merge.author_of(id) {
            Some(a) => Some(a),
            None => author_held(id)?,
        };
        update.changed.extend(author);
    }
    update.changed.extend(forks);
    if update.changed.contains(founder) || update.changed.iter().any(|a| roster.admins.contains(a)) {
        // A payload of the founder's or an admin's changed: it may be a roster event.
        return Ok(Feed::Rebuild);
    }
    Ok(Feed::Apply(update))
}
