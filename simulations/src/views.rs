//! Each simulated node's live merged view, kept as the node keeps it: a
//! [`LiveMerge`] built from the node's store under the roster derived from
//! that store (at its start, after a restart, and whenever the roster may
//! have changed), and fed every write the node commits, in its own commit
//! order, through the node's own feed (`agora_merge::roster_may_change`,
//! `agora_merge::plan_update`, then [`LiveMerge::apply`], reading chains
//! derived again from the node's store). The runner compares these views
//! across nodes, and with the batch merge of the same entries, at every
//! checkpoint (`run.rs`).
//!
//! What reads the store here is the simulator's own (the node reads
//! RocksDB through `agora_view`): the roster from the founder's chain, what
//! key rotations leave out, the entries that count under it, and one
//! author's chain with its fork proofs.
// The merge's and the verifier's errors are theirs, as large as they are.
#![allow(clippy::result_large_err)]

use agora_core::id_arena::IdArena;
use agora_core::key_bounds::ChainLink;
use agora_core::{AgentId, EntryId, ForkProof, Payload, SignedEntry};
use agora_merge::{ChainInput, Feed, InputError, LiveMerge, LiveUpdate, MergeEntry};
use agora_roster::{FounderEntry, Roster};
use agora_sync::harness::{MemStore, Stored};
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::Arc;

/// The merge a simulated node keeps live: the node's own [`LiveMerge`]
/// ([`live_merge`]), or, in a test, one made to depend on the order entries
/// arrive in, to show that the runner's check of the views catches it.
pub trait NodeMerge {
    /// The merged state, as the feed reads it (authors of known entries).
    fn state(&self) -> &LiveMerge;
    /// Take in an update, as [`LiveMerge::apply`]: `chain_input(author)`
    /// reads one author's chain from the store.
    fn apply(&mut self, update: LiveUpdate, chain_input: &mut dyn FnMut(&AgentId) -> ChainInput);
    /// The view hash, as [`LiveMerge::view_hash`].
    fn view_hash(&mut self) -> [u8; 32];
}

impl NodeMerge for LiveMerge {
    fn state(&self) -> &LiveMerge {
        self
    }

    fn apply(&mut self, update: LiveUpdate, chain_input: &mut dyn FnMut(&AgentId) -> ChainInput) {
        let applied = LiveMerge::apply(self, update, |author| Ok::<_, Infallible>(chain_input(author)));
        match applied {
            Ok(_) => {}
            Err(never) => match never {},
        }
    }

    fn view_hash(&mut self) -> [u8; 32] {
        LiveMerge::view_hash(self)
    }
}

/// Builds a node's merge from the entries that count in its store and its
/// fork proofs, holding entry ids in the arena given (shared by every
/// simulated node, as a node's views share one).
pub type MergeBuilder = fn(&[MergeEntry], &[ForkProof], Arc<IdArena>) -> Result<Box<dyn NodeMerge>, InputError>;

/// The node's own: [`LiveMerge::from_entries_sharing`].
pub fn live_merge(entries: &[MergeEntry], proofs: &[ForkProof], ids: Arc<IdArena>) -> Result<Box<dyn NodeMerge>, InputError> {
    Ok(Box::new(LiveMerge::from_entries_sharing(entries, proofs, ids)?))
}

/// A node's live view: its merge and the roster it was built under.
pub struct NodeView {
    /// The merged state.
    pub merge: Box<dyn NodeMerge>,
    /// Which entries count.
    pub roster: Roster,
}

/// The roster of the workspace founded by `founder`, derived from the
/// founder's chain in `store`, its pinned histories and what key rotations
/// leave out found there ([`bound_keys`]), as the node derives it from its
/// store (`agora_view::derive_roster`), with the agents on the roster
/// `from_start` (`Net::members_from_start`) members unless the chain
/// removed them.
pub fn derive_roster(store: &MemStore, founder: AgentId, from_start: &BTreeSet<AgentId>) -> Roster {
    let chain: Vec<(u64, EntryId, Payload)> = store
        .entries
        .range((founder, 0, EntryId([0; 32]))..)
        .take_while(|((a, _, _), _)| *a == founder)
        .map(|((_, seq, id), (_, p))| (*seq, *id, store.content(id, p)))
        .collect();
    let mut roster = Roster::derive(founder, chain.iter().map(|(seq, id, p)| FounderEntry { seq: *seq, id: *id, content: p.as_content() }));
    for agent in from_start.iter().filter(|a| !roster.removed.contains_key(*a)) {
        roster.members.entry(*agent).or_insert(None);
    }
    let found = roster.resolve_pins(|id| Ok::<_, Infallible>(store.get(id).map(|(e, _)| (e.header().author, e.header().seq, e.header().backlink))));
    match found {
        Ok(()) => {}
        Err(never) => match never {},
    }
    bound_keys(store, &mut roster);
    roster
}

/// What key events leave out (`Roster::bound_keys`, `protocol-spec/keys.md`),
/// found as the node finds it (`agora_view::bound_keys`): the admitted
/// authors with a tip signed by a key other than their own (they rotated or
/// recovered), and those the roster binds a recovery of, each chain read
/// once.
pub fn bound_keys(store: &MemStore, roster: &mut Roster) {
    let changed_key: Vec<AgentId> = roster
        .members
        .keys()
        .chain(roster.removed.keys())
        .filter(|a| store.tips(a).iter().any(|t| store.get(&t.id).is_some_and(|(e, _)| e.header().signing_key() != **a)))
        .copied()
        .collect();
    let bounded = roster.bound_keys(changed_key, |author| {
        let links = store
            .entries
            .range((*author, 0, EntryId([0; 32]))..)
            .take_while(|((a, _, _), _)| a == author)
            .map(|((_, seq, id), (e, _))| ChainLink {
                id: *id,
                seq: *seq,
                backlink: e.header().backlink,
                event: e.header().key_event(),
                key: e.header().signing_key(),
            })
            .collect();
        Ok::<_, Infallible>(links)
    });
    match bounded {
        Ok(()) => {}
        Err(never) => match never {},
    }
}

/// `author`'s entries that count under `roster` in `store`, with what is
/// known of their payloads, and the fork proofs of its chain that count:
/// what the merge asks for when a chain must be derived again
/// (`agora_view::load_chain_merge_input`).
pub fn chain_input(store: &MemStore, roster: &Roster, author: &AgentId) -> ChainInput {
    let entries = store
        .entries
        .range((*author, 0, EntryId([0; 32]))..)
        .take_while(|((a, _, _), _)| a == author)
        .filter(|((a, seq, id), _)| roster.admits_entry(a, *seq, id))
        .map(|((_, _, id), (e, p))| MergeEntry::with_content(SignedEntry::clone(e), store.content(id, p)).expect("a stored payload matches its header"))
        .collect();
    let proofs = store
        .proofs
        .range((*author, 0)..)
        .take_while(|((a, _), _)| a == author)
        .filter(|((a, seq), _)| roster.admits_fork(a, *seq))
        .map(|(_, p)| p.clone())
        .collect();
    (entries, proofs)
}

impl NodeView {
    /// Built from `store`, as the node's view thread builds it at start and
    /// after the roster may have changed (`MergeCache::catch_up`): the
    /// roster first, then every entry that counts under it, kept as the
    /// merge state keeps them ([`MergeEntry::for_merge_state`]).
    pub fn build(store: &MemStore, founder: AgentId, from_start: &BTreeSet<AgentId>, builder: MergeBuilder, ids: Arc<IdArena>) -> Result<Self, String> {
        let roster = derive_roster(store, founder, from_start);
        let counts = |((a, seq, id), _): &(&(AgentId, u64, EntryId), &Stored)| roster.admits_entry(a, *seq, id);
        let entries = store
            .entries
            .iter()
            .filter(counts)
            .map(|((_, _, id), (e, p))| MergeEntry::for_merge_state(SignedEntry::clone(e), store.content(id, p)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("a stored entry does not verify: {e}"))?;
        let proofs: Vec<ForkProof> = store.proofs.iter().filter(|((a, seq), _)| roster.admits_fork(a, *seq)).map(|(_, p)| p.clone()).collect();
        let merge = builder(&entries, &proofs, ids).map_err(|e| format!("the live view could not be built: {e}"))?;
        Ok(Self { merge, roster })
    }

    /// Take in a committed write (its new entries in the order they were
    /// written, with their payloads when held; the entries whose payloads
    /// changed; the authors whose chains forked), already in `store`, as the
    /// node's view thread does: planned by the node's feed
    /// ([`agora_merge::plan_update`]) and applied. `Ok(false)`: the view
    /// must be built again from the store.
    pub fn commit(
        &mut self,
        store: &MemStore,
        founder: &AgentId,
        entries: Vec<(SignedEntry, Option<Vec<u8>>)>,
        payloads_changed: &[EntryId],
        forks: Vec<AgentId>,
    ) -> Result<bool, String> {
        let author_held = |id: &EntryId| Ok::<_, agora_core::verify::VerifyError>(store.ids.get(id).map(|(a, _)| *a));
        let planned = agora_merge::plan_update(self.merge.state(), &self.roster, founder, entries, payloads_changed, forks, author_held)
            .map_err(|e| format!("a committed entry does not verify: {e}"))?;
        match planned {
            Feed::Rebuild => Ok(false),
            Feed::Apply(update) => {
                let roster = &self.roster;
                self.merge.apply(update, &mut |author| chain_input(store, roster, author));
                Ok(true)
            }
        }
    }
}
