//! Issue 39 item 6: membership applies to views. An entry of an author the
//! workspace's roster never admitted is stored but counts in no view (the
//! reasoning graph, the merged view and its hash), on the replay path
//! (`agora_view`, what a command run without a node computes) as on the
//! live path (`GraphCache`, `MergeCache`, what a running node keeps), until
//! the founder admits the author: from then on its stored entries count,
//! in the live views at once, exactly as a replay counts them.

use agora_core::entry::next_header;
use agora_core::{AgentKey, SignedEntry};
use agora_graph::{Event, Graph};
use agora_live_views::graph_cache::GraphCache;
use agora_live_views::merge_cache::MergeCache;
use agora_merge::{Merge, MergeEvent};
use agora_roster::RosterEvent;
use agora_store::{CommitNotice, ImportItem, Store, StoreOptions};
use std::sync::Arc;

/// A signed entry and its payload.
type Signed = (SignedEntry, Vec<u8>);

fn sign(key: &AgentKey, prev: Option<&Signed>, timestamp_ms: u64, payload: Vec<u8>) -> Signed {
    let header = next_header(key.agent_id(), prev.map(|(e, _)| e), timestamp_ms, &payload).unwrap();
    (SignedEntry::sign(header, key), payload)
}

fn open() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap());
    (dir, store)
}

fn import(store: &Store, entries: &[&Signed]) {
    let items = entries.iter().map(|(e, p)| ImportItem { entry: e.clone(), payload: Some(p.clone()), origin: "test".into() }).collect();
    store.import(items, 100_000).unwrap();
}

/// What the views show: the graph's snapshot bytes and its nodes with their
/// texts, and the merged view's hash.
type Views = (Vec<u8>, Vec<(agora_core::EntryId, String)>, [u8; 32]);

fn listing(g: &Graph) -> (Vec<u8>, Vec<(agora_core::EntryId, String)>) {
    (g.snapshot(), g.nodes().map(|n| (n.id, g.text(n).unwrap().into_owned())).collect())
}

/// The views of `store` recomputed by replay, as a command run without a
/// node computes them.
fn replayed(store: &Store, founder: agora_core::AgentId) -> Views {
    let (snapshot, nodes) = listing(&agora_view::load_graph(store, founder).unwrap());
    let (entries, proofs) = agora_view::load_merge_input(store, founder).unwrap();
    (snapshot, nodes, Merge::compute(&entries, &proofs).unwrap().view_hash())
}

/// The founder F admits the member B; B writes, contradicts X's proposition
/// and accepts X's chain; X, never admitted, writes a chain that forks at
/// seq 2 (a fork proof is stored too); then F admits X.
struct Workspace {
    founder: AgentKey,
    admit_b: Signed,
    admit_x: Signed,
    b: Vec<Signed>,
    x: Vec<Signed>,
}

impl Workspace {
    fn new() -> Self {
        let (founder, b, x) = (AgentKey::from_seed([1; 32]), AgentKey::from_seed([2; 32]), AgentKey::from_seed([3; 32]));
        let admit_b = sign(&founder, None, 100, RosterEvent::Admit { agent: b.agent_id(), note: "member".into() }.encode());
        let x1 = sign(&x, None, 200, Event::Proposition { text: "X: usage pricing".into() }.encode());
        let b1 = sign(&b, None, 210, Event::Proposition { text: "B: flat fee".into() }.encode());
        let x2 = sign(&x, Some(&x1), 220, Event::Support { target: b1.0.id(), text: "X agrees with B".into() }.encode());
        let x2_branch = sign(&x, Some(&x1), 221, Event::Contradiction { target: b1.0.id(), text: "X, the other branch".into() }.encode());
        let b2 = sign(&b, Some(&b1), 230, Event::Contradiction { target: x1.0.id(), text: "B: procurement wants predictability".into() }.encode());
        let b3 = sign(&b, Some(&b2), 240, MergeEvent::Accept { author: x.agent_id(), up_to_seq: 1, head: x1.0.id() }.encode());
        let admit_x = sign(&founder, Some(&admit_b), 300, RosterEvent::Admit { agent: x.agent_id(), note: "admitted late".into() }.encode());
        Self { founder, admit_b, admit_x, b: vec![b1, b2, b3], x: vec![x1, x2, x2_branch] }
    }

    fn f(&self) -> agora_core::AgentId {
        self.founder.agent_id()
    }

    /// A store holding F's admission of B and B's chain.
    fn member_only(&self) -> (tempfile::TempDir, Arc<Store>) {
        let (dir, store) = open();
        import(&store, &[&self.admit_b]);
        import(&store, &self.b.iter().collect::<Vec<_>>());
        (dir, store)
    }

    /// X's chain: its first entry, then both branches at seq 2.
    fn import_x(&self, store: &Store) {
        import(store, &[&self.x[0], &self.x[1]]);
        import(store, &[&self.x[2]]);
    }
}

/// The replay path: a store that holds a non-member's chain has the views
/// of one that does not; once F admits X, the views of a store where X was
/// admitted before any of its entries arrived.
#[test]
fn a_non_members_entries_count_in_no_replayed_view_until_admitted() {
    let w = Workspace::new();
    let f = w.f();
    let (_d0, without) = w.member_only();
    let (_d1, with_x) = w.member_only();
    w.import_x(&with_x);
    assert_eq!(with_x.fork_proofs(None).unwrap().len(), 1, "X's fork is proven and stored");
    assert!(with_x.get(&w.x[0].0.id()).unwrap().is_some(), "X's chain is stored");
    assert_eq!(replayed(&with_x, f), replayed(&without, f), "X's entries and fork count in no view");
    assert!(agora_view::load_graph(&with_x, f).unwrap().node(&w.x[0].0.id()).is_none());

    import(&with_x, &[&w.admit_x]);
    let (_d2, from_start) = open();
    import(&from_start, &[&w.admit_b, &w.admit_x]);
    w.import_x(&from_start);
    import(&from_start, &w.b.iter().collect::<Vec<_>>());
    let admitted = replayed(&with_x, f);
    assert_eq!(admitted, replayed(&from_start, f), "after the admission: the views of a store where X was admitted from the start");
    assert_ne!(admitted.2, replayed(&without, f).2, "the admission brings X's entries into the merged view");
    assert!(agora_view::load_graph(&with_x, f).unwrap().node(&w.x[0].0.id()).is_some(), "X's stored entries count");
}

/// The live path: a node's live graph and live merged view, built before
/// anything arrives and fed the same commits (X's entries arrive while X is
/// no member, then F's admission), equal the replays of the stores above at
/// every step, bit for bit.
#[test]
fn a_non_members_entries_count_in_no_live_view_until_admitted() {
    let w = Workspace::new();
    let f = w.f();
    let (_d, store) = open();
    let graph = Arc::new(GraphCache::new(f).texts_from(&store));
    let merge = Arc::new(MergeCache::new(f));
    let (g, m) = (graph.clone(), merge.clone());
    store.set_observer(Some(Arc::new(move |n: CommitNotice| {
        g.observe(&n);
        m.observe(&n);
    })));
    let live = || -> Views {
        let (snapshot, nodes) = graph.with(&store, listing).unwrap();
        (snapshot, nodes, merge.current(&store).unwrap().merge().view_hash())
    };
    // Built now, empty: what follows is applied as it commits.
    live();
    import(&store, &[&w.admit_b]);
    import(&store, &w.b.iter().collect::<Vec<_>>());
    let (_d0, without) = w.member_only();
    assert_eq!(live(), replayed(&without, f), "the member's chain");
    w.import_x(&store);
    assert_eq!(live(), replayed(&without, f), "X's entries and fork arrived: no live view counts them");
    assert_eq!(live(), replayed(&store, f), "and the replay of this store agrees");

    import(&store, &[&w.admit_x]);
    let (_d2, from_start) = open();
    import(&from_start, &[&w.admit_b, &w.admit_x]);
    w.import_x(&from_start);
    import(&from_start, &w.b.iter().collect::<Vec<_>>());
    let after = live();
    assert_eq!(after, replayed(&from_start, f), "admitted: the live views take X's stored entries in, as a replay does");
    assert_eq!(after, replayed(&store, f));
    assert!(after.1.iter().any(|(id, _)| *id == w.x[0].0.id()), "X's proposition is in the live graph");
}
