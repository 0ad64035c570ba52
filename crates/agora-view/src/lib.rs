//! The bridge between the store and every view.
//!
//! `agora-store` knows nothing about reasoning, and `agora-graph`,
//! `agora-merge` and `agora-roster` know nothing about storage; this crate is
//! the one place that reads stored entries into what the views take: graph
//! events ([`load_events`], [`load_graph`]), the merge layer's input
//! ([`load_merge_input`]), the workspace roster ([`derive_roster`]); and it
//! verifies the events behind a node against their chains ([`trace`]).
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![allow(clippy::result_large_err)]
#![forbid(unsafe_code)]

use agora_core::verify::{VerifyError, verify_link, verify_payload, verify_signatures};
use agora_core::{AgentId, EntryId, ForkProof, Payload, SignedEntry};
use agora_graph::{Graph, LogEvent, LogPosition};
use agora_merge::MergeEntry;
use agora_roster::{AdminEntry, FounderEntry, Roster, RosterEvent};
use agora_store::{PayloadState, Store, StoreError};

pub mod scratch;

/// Why a view could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A traced event failed verification.
    #[error("trace: {0}")]
    Verify(#[from] VerifyError),
    /// An id is not in the graph or the store.
    #[error("no event {0}")]
    Missing(EntryId),
}

/// What a node knows of a stored payload, owned (see `agora_core::payload`).
fn known(state: PayloadState) -> Payload {
    match state {
        PayloadState::Held(p) => Payload::Held(p),
        PayloadState::Redacted { residue, .. } => Payload::Redacted(residue),
        PayloadState::NotHeld => Payload::Missing,
    }
}

/// Every stored entry that counts in the views of the workspace founded by
/// `founder` (those `Roster::admits_entry` lets count: no author never
/// admitted, nothing beyond a removal's cut-off), in store order, with what
/// is known of its payload.
fn for_each_counted(store: &Store, founder: AgentId, mut visit: impl FnMut(SignedEntry, Payload) -> Result<(), StoreError>) -> Result<(), StoreError> {
    let roster = derive_roster(store, founder)?;
    store.for_each_entry(None, |e| {
        let h = e.signed.header();
        if !roster.admits_entry(&h.author, h.seq, &e.signed.id()) {
            return Ok(());
        }
        visit(e.signed, known(e.payload))
    })
}

/// Every stored entry that counts (see [`load_graph`]) as the graph sees it,
/// in store order. Entries whose payload never arrived are no event yet.
pub fn load_events(store: &Store, founder: AgentId) -> Result<Vec<LogEvent>, StoreError> {
    let mut events = Vec::new();
    for_each_counted(store, founder, |signed, payload| {
        events.extend(LogEvent::from_content(signed.id(), signed.header().log_position(), payload.as_content()));
        Ok(())
    })?;
    Ok(events)
}

/// The reasoning graph of the workspace founded by `founder`: every stored
/// entry the roster lets count, none of an author it never admitted nor of
/// a removed agent's beyond the removal's cut-off (replication moves only
/// what the roster admits, so whether a node happened to hold others, by an
/// import by hand or before a removal reached it, must not change its
/// views), decoding each payload just before it is applied. A redacted
/// payload is read from its residue; a missing one is pending.
pub fn load_graph(store: &Store, founder: AgentId) -> Result<Graph, StoreError> {
    load_graph_journaled(store, founder, 0)
}

/// [`load_graph`] for a graph kept live: with a journal that holds its last
/// `records` applies (`Graph::replay_contents_journaled`), so that it can
/// rewind for a late entry at once.
pub fn load_graph_journaled(store: &Store, founder: AgentId, records: usize) -> Result<Graph, StoreError> {
    load_graph_onto(Graph::new(), store, founder, records)
}

/// [`load_graph_journaled`] onto `graph`, which must be empty: one that
/// reads its texts from the store ([`StoreTexts`]) rather than holding them.
pub fn load_graph_onto(graph: Graph, store: &Store, founder: AgentId, records: usize) -> Result<Graph, StoreError> {
    let mut items: Vec<(EntryId, LogPosition, Payload)> = Vec::new();
    for_each_counted(store, founder, |signed, payload| {
        items.push((signed.id(), signed.header().log_position(), payload));
        Ok(())
    })?;
    let borrowed: Vec<_> = items.iter().map(|(id, pos, p)| (*id, *pos, p.as_content())).collect();
    Ok(graph.replayed_contents(&borrowed, records))
}

/// Node texts read from the store when they are shown, for graphs that do
/// not hold them (`Graph::with_texts_from`): one read of the payload, then
/// the text a replay would give its node now (`agora_graph::graph::text_of_content`).
///
/// It holds the store weakly: the store's observer keeps the graphs that
/// read through it, and a strong reference back would keep the store (and
/// RocksDB's lock on its directory) open for ever.
pub struct StoreTexts {
    store: std::sync::Weak<Store>,
}

impl StoreTexts {
    /// Texts from `store`, which the graph's events must come from.
    pub fn new(store: &std::sync::Arc<Store>) -> Self {
        Self { store: std::sync::Arc::downgrade(store) }
    }
}

impl agora_graph::TextSource for StoreTexts {
    fn node_text(&self, pos: &LogPosition, id: &EntryId) -> Result<String, agora_graph::TextUnavailable> {
        let unavailable = |problem: String| agora_graph::TextUnavailable { id: *id, problem };
        let store = self.store.upgrade().ok_or_else(|| unavailable("the store is closed".into()))?;
        let state = store.payload_at(&pos.author, pos.seq, id).map_err(|e| unavailable(e.to_string()))?;
        Ok(agora_graph::graph::text_of_content(state.content()))
    }
}

/// Everything the merge layer reads for the workspace founded by `founder`:
/// every stored entry that counts (see [`load_graph`]) with what is known of
/// its payload, and the stored fork proofs of positions that count.
pub fn load_merge_input(store: &Store, founder: AgentId) -> Result<(Vec<MergeEntry>, Vec<ForkProof>), StoreError> {
    load_merge_input_as(store, founder, MergeEntry::with_content)
}

/// [`load_merge_input`] for a live merged view's state
/// (`agora_merge::LiveMerge::from_entries`), which reads of a payload only
/// whether it is a merge event: every other payload is checked and dropped
/// as it is read ([`MergeEntry::for_merge_state`]), so a node's start does
/// not hold every reasoning payload in memory at once.
pub fn load_merge_state_input(store: &Store, founder: AgentId) -> Result<(Vec<MergeEntry>, Vec<ForkProof>), StoreError> {
    load_merge_input_as(store, founder, MergeEntry::for_merge_state)
}

fn load_merge_input_as(
    store: &Store,
    founder: AgentId,
    entry: impl Fn(SignedEntry, Payload) -> Result<MergeEntry, VerifyError>,
) -> Result<(Vec<MergeEntry>, Vec<ForkProof>), StoreError> {
    let mut entries = Vec::new();
    for_each_counted(store, founder, |signed, payload| {
        // The store verified the payload against its hash when it stored it;
        // it is checked again here, which also guards against damaged data.
        entries.push(entry(signed, payload).map_err(StoreError::Verify)?);
        Ok(())
    })?;
    let roster = derive_roster(store, founder)?;
    let proofs = store.fork_proofs(None)?.into_iter().filter(|p| roster.admits_fork(&p.author(), p.seq())).collect();
    Ok((entries, proofs))
}

/// One author's part of [`load_merge_input`] under `roster`: its entries that
/// count, with what is known of their payloads, and the fork proofs of its
/// chain at positions that count. A live merged view (`agora_merge::LiveMerge`)
/// asks for this when a chain must be derived again.
pub fn load_chain_merge_input(store: &Store, roster: &Roster, author: &AgentId) -> Result<(Vec<MergeEntry>, Vec<ForkProof>), StoreError> {
    let mut entries = Vec::new();
    store.for_each_entry(Some(author), |e| {
        let h = e.signed.header();
        if roster.admits_entry(&h.author, h.seq, &e.signed.id()) {
            entries.push(MergeEntry::with_content(e.signed, known(e.payload)).map_err(StoreError::Verify)?);
        }
        Ok(())
    })?;
    let proofs = store.fork_proofs(Some(author))?.into_iter().filter(|p| roster.admits_fork(&p.author(), p.seq())).collect();
    Ok((entries, proofs))
}

/// What is known here of the payload of the entry of `author` at `seq` with
/// id `id` (missing when it is not stored): what a live merged view's
/// disagreement map asks for of a disputed entry, of the reasoning that led
/// to it and of the entries that refer into a fork. The caller knows the
/// entry counts.
pub fn load_payload(store: &Store, author: &AgentId, seq: u64, id: &EntryId) -> Result<Payload, StoreError> {
    Ok(known(store.payload_at(author, seq, id)?))
}

/// Every stored entry that counts under `roster`, in store order: its id and
/// its meaning (the payload held, or the residue of a redacted one; `None`
/// when unknown). For an index of what entries refer to.
pub fn for_each_meaning(store: &Store, roster: &Roster, mut visit: impl FnMut(EntryId, Option<&[u8]>)) -> Result<(), StoreError> {
    store.for_each_entry(None, |e| {
        let h = e.signed.header();
        if roster.admits_entry(&h.author, h.seq, &e.signed.id()) {
            visit(e.signed.id(), known(e.payload).meaning());
        }
        Ok(())
    })
}

/// The entries of `author` with a seq in `seqs` that count under `roster`
/// (every branch of a forked seq), with what is known of their payloads: what
/// a live perspective (`agora_merge::LivePerspective`) asks for, the part
/// of a chain it has not seen yet, or a prefix when it is rebuilt.
pub fn load_chain_range(store: &Store, roster: &Roster, author: &AgentId, seqs: std::ops::RangeInclusive<u64>) -> Result<Vec<MergeEntry>, StoreError> {
    /// Entries read from the store at a time.
    const PAGE: usize = 4096;
    let mut out = Vec::new();
    let mut from = *seqs.start();
    while from <= *seqs.end() {
        let page = store.chain(author, from, PAGE)?;
        let full = page.len() == PAGE;
        // A full page may end inside a forked seq: its last seq is read
        // again with the next page, unless the whole page is that one seq.
        let last = page.last().map_or(from, |e| e.signed.header().seq);
        let upto = if full && last > from { last - 1 } else { last };
        for e in page {
            let seq = e.signed.header().seq;
            if seq > upto || seq > *seqs.end() {
                break;
            }
            if roster.admits_entry(author, seq, &e.signed.id()) {
                out.push(MergeEntry::with_content(e.signed, known(e.payload)).map_err(StoreError::Verify)?);
            }
        }
        if !full {
            break;
        }
        from = upto + 1;
    }
    Ok(out)
}

pub use agora_merge::residue;

/// Each admitted member's display name: the first line of the note of the
/// admission that admits it (trimmed, at most [`DISPLAY_NAME_MAX`] bytes cut
/// at a character boundary), for the members whose note has one. A
/// redacted admission keeps its meaning but not its note: no name.
pub fn display_names(store: &Store, roster: &Roster) -> Result<std::collections::BTreeMap<AgentId, String>, StoreError> {
    let mut out = std::collections::BTreeMap::new();
    for agent in roster.members.keys() {
        if let Some(name) = display_name(store, roster, agent)? {
            out.insert(*agent, name);
        }
    }
    Ok(out)
}

/// One member's display name ([`display_names`]): one read of its admission.
pub fn display_name(store: &Store, roster: &Roster, agent: &AgentId) -> Result<Option<String>, StoreError> {
    let Some(Some(id)) = roster.members.get(agent) else { return Ok(None) };
    let Some(entry) = store.get(id)? else { return Ok(None) };
    let Some(event) = entry.payload.content().meaning().and_then(|p| RosterEvent::decode(p).ok()) else { return Ok(None) };
    let name = event.note().lines().next().unwrap_or("").trim();
    if name.is_empty() {
        return Ok(None);
    }
    let mut end = name.len().min(DISPLAY_NAME_MAX);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    Ok(Some(name[..end].to_string()))
}

/// Longest display name kept, in bytes.
pub const DISPLAY_NAME_MAX: usize = 64;

/// The roster of the workspace whose founder is `founder`, from the store:
/// the founder's chain, then the chains of the admins it names (their votes,
/// `protocol-spec/roster.md`).
pub fn derive_roster(store: &Store, founder: AgentId) -> Result<Roster, StoreError> {
    let mut roster = derive_membership(store, founder)?;
    bound_keys(store, &mut roster)?;
    Ok(roster)
}

/// [`derive_roster`] without the key bounds (`Roster::key_bounds` empty):
/// who is admitted, removed, pinned and recovered, and by whom. The key
/// bounds read the chains of the admitted agents that changed key
/// ([`bound_keys`]); a read about one agent judges that agent's chain alone.
pub fn derive_membership(store: &Store, founder: AgentId) -> Result<Roster, StoreError> {
    let kept = roster_entries(store, &founder)?;
    let founder_entries = || kept.iter().map(|(seq, id, p)| FounderEntry { seq: *seq, id: *id, content: p.as_content() });
    let admins = Roster::derive(founder, founder_entries()).admins;
    let mut votes = Vec::new();
    for admin in &admins {
        votes.extend(roster_entries(store, admin)?.into_iter().map(|(seq, id, p)| (*admin, seq, id, p)));
    }
    let mut roster = Roster::derive_with_votes(
        founder,
        founder_entries(),
        votes.iter().map(|(author, seq, id, p)| AdminEntry { author: *author, seq: *seq, id: *id, content: p.as_content() }),
    );
    resolve_pins(store, &mut roster)?;
    Ok(roster)
}

/// What of `author`'s chain can change the roster, in (seq, id) order.
///
/// Only what can change the roster is kept while the chain is read (roster
/// payloads and residues, entries whose meaning is unknown, and the entries
/// of a forked seq), so memory stays small however long the chain is;
/// other entries are passed on as raw only where needed to show a fork.
fn roster_entries(store: &Store, author: &AgentId) -> Result<Vec<(u64, EntryId, Payload)>, StoreError> {
    // Whether an entry can matter to the roster by itself.
    fn can_matter(p: &Payload) -> bool {
        p.meaning().is_none_or(|b| !b.is_empty())
    }
    let mut kept: Vec<(u64, EntryId, Payload)> = Vec::new();
    // The previous entry (entries come in (seq, id) order), kept aside until
    // it is known whether a second entry shares its seq.
    let mut prev: Option<(u64, EntryId, Payload)> = None;
    store.for_each_entry(Some(author), |e| {
        let (seq, id) = (e.signed.header().seq, e.signed.id());
        // Anything that is not a roster event reads as an empty (raw) payload.
        let payload = match known(e.payload) {
            Payload::Held(p) => Payload::Held(if RosterEvent::is_roster_payload(&p) { p } else { Vec::new() }),
            Payload::Redacted(Some(r)) => Payload::Redacted(Some(if RosterEvent::is_roster_payload(&r) { r } else { Vec::new() })),
            other => other,
        };
        if let Some(p) = prev.take()
            && (p.0 == seq || kept.last().is_some_and(|k| k.0 == p.0) || can_matter(&p.2))
        {
            kept.push(p);
        }
        prev = Some((seq, id, payload));
        Ok(())
    })?;
    if let Some(p) = prev.take()
        && (kept.last().is_some_and(|k| k.0 == p.0) || can_matter(&p.2))
    {
        kept.push(p);
    }
    Ok(kept)
}

/// What key events leave out (`Roster::bound_keys`, `protocol-spec/keys.md`).
/// Only a chain that changed key can lose entries, and a rotation alone
/// leaves nothing out of a chain that is not forked: the admitted authors
/// whose chain holds a key event (the store lists them,
/// `Store::key_events`) and is forked or holds a recover entry (which the
/// roster's binding decides), and those the roster binds a recovery of,
/// each chain read once. An agent that never changed key, or rotated along
/// one unforked chain, costs a scan of its key events and its tips' row.
pub fn bound_keys(store: &Store, roster: &mut Roster) -> Result<(), StoreError> {
    let mut changed_key = std::collections::BTreeSet::new();
    for author in roster.members.keys().chain(roster.removed.keys()) {
        let events = store.key_events(author)?;
        if events.is_empty() {
            continue;
        }
        let forked = store.tip_summary(author)?.is_some_and(|t| t.count > 1);
        if forked || events.iter().any(|(_, _, e)| *e == agora_core::KeyEvent::Recover) {
            changed_key.insert(*author);
        }
    }
    roster.bound_keys(changed_key, |author| {
        let mut links = Vec::new();
        store.for_each_entry(Some(author), |e| {
            let h = e.signed.header();
            links.push(agora_core::key_bounds::ChainLink { id: e.signed.id(), seq: h.seq, backlink: h.backlink, event: h.key_event(), key: h.signing_key() });
            Ok(())
        })?;
        Ok(links)
    })
}

/// Find the pinned histories of agents removed by their head
/// (`Roster::resolve_pins`) in `store`: one read per pinned entry, for the
/// pins whose head is held and not found yet.
pub fn resolve_pins(store: &Store, roster: &mut Roster) -> Result<(), StoreError> {
    roster.resolve_pins(|id| Ok(store.get_signed(id)?.map(|e| (e.header().author, e.header().seq, e.header().backlink))))
}

/// One verified event of a trace.
#[derive(Debug, Clone)]
pub struct TracedEvent {
    /// The signed entry.
    pub entry: SignedEntry,
    /// Whether its payload is held (and was checked against its hash).
    pub payload_held: bool,
}

/// Every event that touched `id`, in log order, each verified: signatures in
/// one batch, payloads against their hashes, and each entry's link to its
/// predecessor in its author's chain.
pub fn trace(store: &Store, graph: &Graph, id: &EntryId) -> Result<Vec<TracedEvent>, ViewError> {
    let node = graph.node(id).ok_or(ViewError::Missing(*id))?;
    let touched = graph.touched_by(node);
    let mut stored = Vec::with_capacity(touched.len());
    for t in &touched {
        stored.push(store.get(t)?.ok_or(ViewError::Missing(*t))?);
    }
    let signed: Vec<&SignedEntry> = stored.iter().map(|s| &s.signed).collect();
    verify_signatures(&signed)?;
    let mut out = Vec::with_capacity(stored.len());
    for s in stored {
        let payload_held = match &s.payload {
            PayloadState::Held(p) => {
                verify_payload(&s.signed, p)?;
                true
            }
            _ => false,
        };
        if let Some(back) = s.signed.header().backlink {
            let prev = store.get_signed(&back)?.ok_or(ViewError::Missing(back))?;
            verify_link(&prev, &s.signed)?;
        }
        out.push(TracedEvent { entry: s.signed, payload_held });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::derive_roster as derive;
    use agora_core::entry::next_header;
    use agora_core::{AgentKey, SignedEntry};
    use agora_roster::{FounderEntry, Roster, RosterEvent};
    use agora_store::{ImportItem, Store, StoreOptions};

    /// The roster as `Roster::derive` reads it from every entry of the chain.
    fn derive_from_everything(store: &Store, founder: agora_core::AgentId) -> Roster {
        let mut all = Vec::new();
        store
            .for_each_entry(Some(&founder), |e| {
                all.push((e.signed.header().seq, e.signed.id(), e.payload));
                Ok(())
            })
            .unwrap();
        Roster::derive(founder, all.iter().map(|(seq, id, p)| FounderEntry { seq: *seq, id: *id, content: p.content() }))
    }

    /// Keeping only what can change the roster gives the same roster as
    /// reading every entry: with roster events among other payloads, a
    /// redacted roster event, and a fork after them.
    #[test]
    fn the_lean_roster_derivation_equals_the_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap();
        let founder = AgentKey::from_seed([1; 32]);
        let f = founder.agent_id();
        let (b, c) = (AgentKey::from_seed([2; 32]).agent_id(), AgentKey::from_seed([3; 32]).agent_id());
        let mut t = 1_000;
        let mut append = |payload: Vec<u8>| {
            t += 1;
            store.append(&founder, &payload, t).unwrap()
        };
        append(b"a note".to_vec());
        append(RosterEvent::Admit { agent: b, note: String::new() }.encode());
        append(b"another note".to_vec());
        let admit_c = append(RosterEvent::Admit { agent: c, note: String::new() }.encode());
        let before_fork = append(RosterEvent::RemoveAfter { agent: b, last_seq: 0, reason: "left".into() }.encode());
        append(b"after".to_vec());
        store.redact(&admit_c.id(), 5_000, Some(&super::residue(&RosterEvent::Admit { agent: c, note: String::new() }.encode()))).unwrap();
        assert_eq!(derive(&store, f).unwrap(), derive_from_everything(&store, f));
        assert!(derive(&store, f).unwrap().admits(&c), "a redacted admission still admits");
        // A second entry at seq 6: the chain is forked there.
        let rival_payload = b"rival".to_vec();
        let rival = SignedEntry::sign(next_header(f, Some(&before_fork), 9_000, &rival_payload).unwrap(), &founder);
        store.import(vec![ImportItem { entry: rival, payload: Some(rival_payload), origin: "test".into() }], 10_000).unwrap();
        let lean = derive(&store, f).unwrap();
        assert_eq!(lean.frozen_at_fork_seq, Some(6));
        assert_eq!(lean, derive_from_everything(&store, f));
    }

    /// Hardening item 9: two stores, one holding a removed agent's entries
    /// beyond the removal's cut-off and one not, derive the same views.
    #[test]
    fn entries_beyond_a_removal_cut_off_count_in_no_view() {
        use agora_graph::Event;
        let founder = AgentKey::from_seed([1; 32]);
        let m = AgentKey::from_seed([5; 32]);
        let src_dir = tempfile::tempdir().unwrap();
        let src = Store::open(src_dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap();
        let chain: Vec<SignedEntry> = (0..7).map(|i| src.append(&m, &Event::Proposition { text: format!("M says {i}") }.encode(), 100 + i).unwrap()).collect();
        let payload = |i: usize| Event::Proposition { text: format!("M says {i}") }.encode();
        let stores: Vec<(tempfile::TempDir, Store)> = [5usize, 7]
            .iter()
            .map(|&held| {
                let dir = tempfile::tempdir().unwrap();
                let store = Store::open(dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap();
                store.append(&founder, &RosterEvent::Admit { agent: m.agent_id(), note: String::new() }.encode(), 50).unwrap();
                let items = (0..held).map(|i| ImportItem { entry: chain[i].clone(), payload: Some(payload(i)), origin: "m".into() }).collect();
                store.import(items, 10_000).unwrap();
                store.append(&founder, &RosterEvent::RemoveAfter { agent: m.agent_id(), last_seq: 5, reason: "left".into() }.encode(), 200).unwrap();
                (dir, store)
            })
            .collect();
        let f = founder.agent_id();
        let graphs: Vec<Vec<u8>> = stores.iter().map(|(_, s)| super::load_graph(s, f).unwrap().snapshot()).collect();
        assert_eq!(graphs[0], graphs[1]);
        let hashes: Vec<[u8; 32]> = stores
            .iter()
            .map(|(_, s)| {
                let (entries, proofs) = super::load_merge_input(s, f).unwrap();
                agora_merge::Merge::compute(&entries, &proofs).unwrap().view_hash()
            })
            .collect();
        assert_eq!(hashes[0], hashes[1]);
        assert!(super::load_graph(&stores[1].1, f).unwrap().node(&chain[6].id()).is_none(), "beyond the cut-off");
        assert!(super::load_graph(&stores[1].1, f).unwrap().node(&chain[4].id()).is_some(), "up to the cut-off");
    }
}
