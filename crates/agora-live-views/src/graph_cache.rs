//! The reasoning graph kept in memory by a long-running node, updated
//! incrementally as entries are committed.
//!
//! The graph is a view of the log: it is built by replay on first use, then
//! every committed entry is applied in place: one that sorts after the last
//! one applied as usual, an earlier one (a peer's older entry arriving late,
//! common in a swarm whose agents write at once) by [`Graph::apply_all`]:
//! the graph keeps a journal of its last [`LIVE_GRAPH_JOURNAL`] applies and
//! rewinds them around the commit's late entries at once (undone, then
//! applied again after them), or, for an entry older than all of them,
//! takes it in place when nothing it names or writes was named or written
//! by a later event. An entry older than the
//! journal whose place matters, a payload that changed (redaction, fill-in)
//! or a roster event of the founder's chain, or a fork of it (the roster
//! decides which entries count) drops the graph, and the next read rebuilds
//! it by replay. Tests prove that incremental application and replay give
//! the same snapshot bytes and listings.

use agora_core::AgentId;
use agora_core::id_arena::IdArena;
use agora_graph::{Graph, LIVE_GRAPH_JOURNAL, Late, LogEvent, TextSource};
use agora_roster::Roster;
use agora_store::{CommitNotice, Store, StoreError};
use prometheus_client::metrics::histogram::Histogram;
use std::sync::{Arc, Mutex};

/// The graph of the workspace founded by `founder` (see
/// `agora_view::load_graph`), either current or absent (rebuilt on the next
/// read), with the roster it was built under.
pub struct GraphCache {
    founder: AgentId,
    graph: Mutex<Option<(Graph, Roster)>>,
    /// Applies the graph keeps to rewind around a late entry.
    journal: usize,
    /// How long each rebuild by replay took (the node's `/metrics`).
    recompute_seconds: Histogram,
    /// Where the graph reads its texts, if it holds none
    /// ([`GraphCache::texts_from`]).
    texts: Option<Arc<dyn TextSource>>,
    /// Where the graph holds its ids ([`GraphCache::sharing_ids`]).
    ids: Arc<IdArena>,
}

impl GraphCache {
    /// An empty cache for the workspace founded by `founder`.
    pub fn new(founder: AgentId) -> Self {
        Self::observed(founder, Histogram::new([1.0]))
    }

    /// An empty cache that records each rebuild's duration in `recompute_seconds`.
    pub fn observed(founder: AgentId, recompute_seconds: Histogram) -> Self {
        Self { founder, graph: Mutex::new(None), journal: LIVE_GRAPH_JOURNAL, recompute_seconds, texts: None, ids: Arc::default() }
    }

    /// The same cache, whose graph holds no texts but reads them from
    /// `store` (the one it is always asked with) when they are shown: about
    /// 90 bytes a node less at a million entries of the merge bench's swarm,
    /// and as much as the agents write in a real one.
    pub fn texts_from(self, store: &Arc<Store>) -> Self {
        Self { texts: Some(Arc::new(agora_view::StoreTexts::new(store))), ..self }
    }

    /// The same cache, whose graph holds its ids in `ids`, an arena the
    /// node's other views share (each id held once: 32 bytes a node less).
    pub fn sharing_ids(self, ids: Arc<IdArena>) -> Self {
        Self { ids, ..self }
    }

    /// The same cache with a journal of `records` applies instead of
    /// [`LIVE_GRAPH_JOURNAL`] (tests reach past a short one).
    pub fn with_journal(self, records: usize) -> Self {
        Self { journal: records, ..self }
    }

    /// Keep the graph current with a committed write (called by the store's
    /// observer, in commit order).
    pub fn observe(&self, notice: &CommitNotice) {
        let mut slot = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        let Some((graph, roster)) = slot.as_mut() else { return };
        // A changed payload (filled in, redacted) changes an event's meaning
        // or makes it known; a founder entry may change the roster, whose
        // cut-offs decide which entries count: replay on the next read.
        // Only the founder's and its admins' roster events (or an entry of
        // theirs whose payload is not known, which may be one) and a fork of
        // their chains (which freezes the roster, or an admin's votes)
        // change the roster: their reasoning moves are applied in place
        // like anyone's.
        let roster_may_change = agora_merge::roster_may_change_by(|a| roster.is_authority(a), &notice.entries, notice.forks.iter().map(|(a, _)| a))
            // The head of a removed agent's pinned history: which of its
            // entries count changes (`Roster::resolve_pins`).
            || (roster.pins_waiting().next().is_some() && notice.entries.iter().any(|(e, _)| roster.pins_waiting().any(|h| *h == e.id())))
            // A rotation, or a fork one may resolve: which entries count
            // changes (`Roster::key_bounds`).
            || agora_merge::key_bounds_may_change(roster, &notice.entries, notice.forks.iter().map(|(author, _)| author));
        if !notice.payloads_changed.is_empty() || roster_may_change {
            *slot = None;
            return;
        }
        let events: Vec<LogEvent> = notice
            .entries
            .iter()
            .filter(|(e, _)| roster.admits_entry(&e.header().author, e.header().seq, &e.id()))
            .filter_map(|(e, payload)| {
                let content = payload.as_deref().map_or(agora_core::Content::Missing, agora_core::Content::Held);
                LogEvent::from_content(e.id(), e.header().log_position(), content)
            })
            .collect();
        // One rewind for those that sort before the last one applied
        // (`Graph::apply_all`); one older than the journal whose place
        // matters: replay on the next read.
        if graph.apply_all(events) != Late::Applied {
            *slot = None;
        }
    }

    /// Run `f` on the current graph, building it by replay first if needed.
    pub fn with<R>(&self, store: &Store, f: impl FnOnce(&Graph) -> R) -> Result<R, StoreError> {
        let mut slot = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        let (graph, _) = match slot.take() {
            Some(g) => slot.insert(g),
            None => {
                let started = std::time::Instant::now();
                let empty = match &self.texts {
                    Some(source) => Graph::with_texts_from(source.clone()),
                    None => Graph::new(),
                }
                .sharing_ids(self.ids.clone());
                let rebuilt = (agora_view::load_graph_onto(empty, store, self.founder, self.journal)?, agora_view::derive_roster(store, self.founder)?);
                self.recompute_seconds.observe(started.elapsed().as_secs_f64());
                slot.insert(rebuilt)
            }
        };
        Ok(f(graph))
    }

    /// What the graph holds in memory, by part, with its node count
    /// (`GET /v1/memory`); `null` while it is not built. Reads every node:
    /// for an operator's report, not for every answer.
    pub fn memory(&self) -> serde_json::Value {
        let slot = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some((graph, _)) => serde_json::json!({ "nodes": graph.len(), "bytes": graph.memory() }),
            None => serde_json::Value::Null,
        }
    }

    /// Drop the graph (a write path the cache could not follow).
    pub fn invalidate(&self) {
        *self.graph.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::GraphCache;
    use agora_core::AgentKey;
    use agora_graph::Event;
    use agora_store::{CommitNotice, Store, StoreOptions};
    use prometheus_client::metrics::histogram::Histogram;
    use std::sync::Arc;

    /// The live graph, kept current from commit notices (in order, out of
    /// order, with a redaction), always equals a full replay of the store,
    /// byte for byte.
    #[test]
    fn the_live_graph_equals_a_full_replay() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap());
        let founder = AgentKey::from_seed([9; 32]).agent_id();
        let rebuilds = Histogram::new([1.0]);
        // A journal of two applies: enough to rewind for an entry one apply
        // late, too short for one that is older.
        // Its graph reads texts from the store, as a node's does; the replays
        // it is compared with hold theirs.
        let cache = Arc::new(GraphCache::observed(founder, rebuilds.clone()).with_journal(2).texts_from(&store));
        let rebuilt = || {
            let mut text = String::new();
            let mut registry = prometheus_client::registry::Registry::default();
            registry.register("rebuilds", "", rebuilds.clone());
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text.lines().find_map(|l| l.strip_prefix("rebuilds_count ")).unwrap().trim().parse::<u64>().unwrap()
        };
        let observer_cache = cache.clone();
        store.set_observer(Some(Arc::new(move |n: CommitNotice| observer_cache.observe(&n))));
        let (alice, bob) = (AgentKey::from_seed([1; 32]), AgentKey::from_seed([2; 32]));
        // The founder admits every agent below (a non-member's entries count
        // in no view, tests/membership.rs).
        let founder_key = AgentKey::from_seed([9; 32]);
        for (i, agent) in [1u8, 2, 3, 4].into_iter().enumerate() {
            let admit = agora_roster::RosterEvent::Admit { agent: AgentKey::from_seed([agent; 32]).agent_id(), note: String::new() };
            store.append(&founder_key, &admit.encode(), 10 + i as u64).unwrap();
        }
        // Built once, then updated incrementally from here on.
        let empty = cache.with(&store, |g| g.snapshot()).unwrap();
        assert_eq!(empty, agora_view::load_graph(&store, founder).unwrap().snapshot());
        let p = store.append(&alice, &Event::Proposition { text: "usage pricing".into() }.encode(), 1_000).unwrap();
        let c = store.append(&bob, &Event::Contradiction { target: p.id(), text: "predictability".into() }.encode(), 2_000).unwrap();
        let check = |what: &str| {
            let listing = |g: &agora_graph::Graph| (g.snapshot(), g.nodes().map(|n| (n.id, g.text(n).unwrap().into_owned())).collect::<Vec<_>>());
            let live = cache.with(&store, listing).unwrap();
            assert!(!cache.with(&store, |g| g.keeps_texts()).unwrap());
            assert_eq!(live, listing(&agora_view::load_graph(&store, founder).unwrap()), "{what}");
        };
        check("after two appends in order");
        assert_eq!(cache.with(&store, |g| g.node(&p.id()).unwrap().status().name()).unwrap(), "contested");
        // An entry from the past (an older timestamp from another agent)
        // that names nothing a later event named is taken in place, and
        // listed where a replay puts it.
        let before = rebuilt();
        let other_dir = tempfile::tempdir().unwrap();
        let other = Store::open(other_dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap();
        let carol = AgentKey::from_seed([3; 32]);
        let import = |payload: Vec<u8>, at: u64| {
            let entry = other.append(&carol, &payload, at).unwrap();
            store.import(vec![agora_store::ImportItem { entry, payload: Some(payload), origin: "test".into() }], 10_000).unwrap();
        };
        import(Event::Proposition { text: "flat fee".into() }.encode(), 1_200);
        check("after an older entry arrived");
        assert_eq!(rebuilt(), before, "a late entry apart from later ones is taken in place");
        // One whose place matters (it supports p, which c, later, named):
        // the journal's applies after it (c, and the one before) are undone
        // and applied again after it.
        import(Event::Support { target: p.id(), text: "earlier evidence".into() }.encode(), 1_500);
        check("after an older entry whose place matters arrived");
        assert_eq!(rebuilt(), before, "rewound, not replayed");
        // Older than the journal (two applies back: only c and the support
        // are in it) and its place matters (it names p, which c named):
        // replayed on the next read.
        let dave = AgentKey::from_seed([4; 32]);
        let entry = other.append(&dave, &Event::Contradiction { target: p.id(), text: "earliest".into() }.encode(), 1_100).unwrap();
        store
            .import(
                vec![agora_store::ImportItem {
                    entry,
                    payload: Some(Event::Contradiction { target: p.id(), text: "earliest".into() }.encode()),
                    origin: "test".into(),
                }],
                10_000,
            )
            .unwrap();
        check("after an entry older than the journal whose place matters arrived");
        assert_eq!(rebuilt(), before + 1, "beyond the journal: replayed");
        store.append(&alice, &Event::Refinement { target: p.id(), resolves: vec![c.id()], text: "two-track".into() }.encode(), 3_000).unwrap();
        check("after a refinement");
        let residue = agora_view::residue(&Event::Contradiction { target: p.id(), text: "predictability".into() }.encode());
        store.redact(&c.id(), 4_000, Some(&residue)).unwrap();
        check("after a redaction");
        assert_eq!(cache.with(&store, |g| g.node(&p.id()).unwrap().status().name()).unwrap(), "superseded", "the redacted contradiction keeps its effect");
        // The founder's own reasoning moves are applied in place (no
        // replay); a roster event of the founder's drops the graph.
        let before = rebuilt();
        store.append(&founder_key, &Event::Proposition { text: "the founder reasons too".into() }.encode(), 5_000).unwrap();
        check("after the founder's proposition");
        assert_eq!(rebuilt(), before, "a founder's reasoning move is applied in place");
        let admit = agora_roster::RosterEvent::Admit { agent: carol.agent_id(), note: String::new() };
        store.append(&founder_key, &admit.encode(), 6_000).unwrap();
        check("after the founder admitted an agent");
        assert_eq!(rebuilt(), before + 1, "a roster event replays");
    }
}
