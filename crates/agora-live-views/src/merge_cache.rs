//! The merged view kept in memory by a long-running node
//! ([`agora_merge::LiveMerge`]), updated as entries are committed, so that
//! `view-hash` and `consensus` answer from it instead of recomputing the
//! merge over every entry; with it, the perspectives in use
//! ([`agora_merge::LivePerspective`], at most [`PERSPECTIVES_LIVE_MAX`]),
//! refreshed in place after every update, so that `perspective` does not
//! replay (one that only a replay would bring up to date is dropped, and
//! built again when next asked for: not on the view thread, and not while
//! holding the view, [`MergeCache::prepare_perspective`]).
//!
//! The store's observer must not block (it runs with the store's write lock
//! held), so it only queues what was committed ([`MergeCache::observe`]); the
//! queue is applied by the node's view thread as soon as it is woken
//! ([`MergeCache::run_worker`]), and by any reader before it answers, so a
//! command sees its own write. Applying may read the store: a chain that
//! cannot be extended in place is derived again from its entries.
//!
//! Like the live graph, the view is rebuilt from the store (once) when the
//! roster may have changed (a roster event of the founder's, or a fork of the
//! founder's chain: the roster decides which entries count), when the queue
//! overflows (a bound on memory under any write rate), and at start.

use crate::fork_referrers::{ForkReferrers, references};
use agora_core::SignedEntry;
use agora_core::id_arena::IdArena;
use agora_core::{AgentId, EntryId};
use agora_graph::TextSource;
use agora_merge::{DisagreementMap, Feed, LiveMerge, LiveMergedGraph, LivePerspective, MergeEntry, MergedGraphPlan, PerspectivePlan};
use agora_roster::Roster;
use agora_store::{CommitNotice, Store, StoreError};
use prometheus_client::metrics::histogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Most committed entries queued before the view is dropped and rebuilt.
pub const PENDING_ENTRIES_MAX: usize = 200_000;
/// Most entries whose payload changed that are kept for the published
/// document ([`MergeCache::take_payloads_changed`]); past it the next
/// publish compares every node with the document instead.
pub const PAYLOADS_UNPUBLISHED_MAX: usize = 100_000;
/// Most perspectives kept current (those asked for most recently): each holds
/// a reasoning graph of what its agent sees, as large as the workspace's
/// graph when the agent accepts most chains.
pub const PERSPECTIVES_LIVE_MAX: usize = 2;
/// Times [`MergeCache::prepare_perspective`] builds a perspective (and
/// [`MergeCache::prepare_merged_graph`] the merged graph) without holding
/// the view before it leaves the build to the reader, who holds it: each
/// try fails only if a payload changed or the view was rebuilt while it
/// built, or what arrived meanwhile could not be taken in place.
pub const PERSPECTIVE_BUILD_TRIES: usize = 2;

#[derive(Default)]
struct Pending {
    entries: Vec<(SignedEntry, Option<Vec<u8>>)>,
    changed: Vec<EntryId>,
    forks: Vec<AgentId>,
    /// The view must be rebuilt (roster change, overflow).
    rebuild: bool,
    /// When the oldest queued write was committed.
    since: Option<Instant>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.changed.is_empty() && self.forks.is_empty() && !self.rebuild
    }
}

/// The live merged view of the workspace founded by `founder`, with the
/// roster it was built under.
pub struct MergeCache {
    founder: AgentId,
    pending: Mutex<Pending>,
    woken: Condvar,
    live: Mutex<Option<LiveState>>,
    /// How long each rebuild from the store took.
    rebuild_seconds: Histogram,
    /// How long after its commit a write was in the view.
    lag_seconds: Histogram,
    /// How long each perspective built by replay took (first asked, or
    /// asked again after it could not be kept current in place).
    perspective_build_seconds: Histogram,
    /// Where the graphs it builds (perspectives, the merged graph) read
    /// their texts, if they hold none ([`MergeCache::texts_from`]).
    texts: Option<Arc<dyn TextSource>>,
    /// Where the merged state and the graphs it plans hold their entry ids
    /// ([`MergeCache::sharing_ids`]).
    ids: Arc<IdArena>,
    /// Entries whose payload changed since the published document last
    /// took them (`None`: more than [`PAYLOADS_UNPUBLISHED_MAX`]).
    payloads_unpublished: Mutex<Option<Vec<EntryId>>>,
    /// Redactions observed: the published document is made again, without
    /// its history, when this moved since it was made.
    redactions: AtomicU64,
    /// Moved (under the view's lock) whenever the view is built from the
    /// store or an update changes a payload: what a perspective built from a
    /// plan without the view cannot follow in place.
    generation: AtomicU64,
}

/// The merged state, the roster it was built under, and the perspectives
/// in use (least recently asked for first).
struct LiveState {
    merge: LiveMerge,
    roster: Roster,
    perspectives: Vec<LivePerspective>,
    /// References into forked chains, for the disagreement map.
    referrers: ForkReferrers,
    /// The merged reasoning graph, once asked for (the Automerge document
    /// publishes it: [`LiveView::merged_graph`]).
    merged: Option<LiveMergedGraph>,
}

impl LiveState {
    /// Keep `p` as the most recently asked for perspective, in place of the
    /// least recently asked for if [`PERSPECTIVES_LIVE_MAX`] are kept.
    fn keep_perspective(&mut self, p: LivePerspective) {
        self.perspectives.retain(|kept| kept.agent() != p.agent());
        if self.perspectives.len() >= PERSPECTIVES_LIVE_MAX {
            self.perspectives.remove(0);
        }
        self.perspectives.push(p);
    }

    /// Bring every perspective kept up to date with the merged state, after
    /// an update in which the payloads of `payloads_changed` changed. One
    /// that would have to be replayed is dropped instead, and built again
    /// when it is next asked for: this runs on the view thread, which a
    /// replay (about a second at a million entries) would hold back.
    fn refresh_perspectives(&mut self, store: &Store, payloads_changed: &[EntryId]) -> Result<(), StoreError> {
        let (merge, roster) = (&self.merge, &self.roster);
        let mut kept = Vec::with_capacity(self.perspectives.len());
        for mut p in std::mem::take(&mut self.perspectives) {
            match p.refresh_in_place(merge, payloads_changed, |author, seqs| agora_view::load_chain_range(store, roster, author, seqs))? {
                Some(_) => kept.push(p),
                None => tracing::debug!(agent = %p.agent(), "perspective dropped: it is replayed when next asked for"),
            }
        }
        self.perspectives = kept;
        if let Some(graph) = &mut self.merged
            && graph.refresh_in_place(merge, payloads_changed, |author, seqs| agora_view::load_chain_range(store, roster, author, seqs))?.is_none()
        {
            tracing::debug!("merged graph dropped: it is replayed when next published");
            self.merged = None;
        }
        Ok(())
    }
}

/// The live view, current with every write committed before it was taken.
pub struct LiveView<'a> {
    guard: MutexGuard<'a, Option<LiveState>>,
    perspective_build_seconds: &'a Histogram,
    texts: Option<&'a Arc<dyn TextSource>>,
}

impl LiveView<'_> {
    fn state(&mut self) -> &mut LiveState {
        match self.guard.as_mut() {
            Some(state) => state,
            None => unreachable!("a LiveView is only made over a built view"),
        }
    }

    /// The merged state.
    pub fn merge(&mut self) -> &mut LiveMerge {
        &mut self.state().merge
    }

    /// The roster the view was built under (which entries count).
    pub fn roster(&mut self) -> &Roster {
        &self.state().roster
    }

    /// The disagreement map, read off the live view
    /// ([`LiveMerge::disagreements`]): the store is asked for the payloads of
    /// the disputed entries and their ancestors, and the chains of the forked authors
    /// (returned beside the map); who builds on a fork's side comes from the
    /// index of references into forked chains, extended first to authors
    /// whose chain forked since it was last asked (one pass over the
    /// payloads held, while the view waits).
    pub fn disagreements(&mut self, store: &Store, agents: Option<&[AgentId]>) -> anyhow::Result<(DisagreementMap, Vec<MergeEntry>)> {
        let LiveState { merge, roster, referrers, .. } = self.state();
        referrers.cover(store, roster, merge, &merge.forked_authors())?;
        let mut forked: Vec<MergeEntry> = Vec::new();
        // The map and what it reads are the answer's, freed with it: scratch
        // memory (`agora_view::scratch`). The index of references above is
        // kept, so it is extended outside.
        let map = agora_view::scratch::run(|| {
            merge.disagreements(
                agents,
                |id, author, seq| -> anyhow::Result<agora_core::Payload> { Ok(agora_view::load_payload(store, author, seq, id)?) },
                |author| {
                    let input = agora_view::load_chain_merge_input(store, roster, author)?;
                    forked.extend(input.0.iter().cloned());
                    Ok(input)
                },
                |ids| Ok(referrers.referrers(ids)),
            )
        })?;
        Ok((map, forked))
    }

    /// The merged reasoning graph (every view chain's reasoning events),
    /// current: kept from an earlier ask (then refreshed in place with every
    /// update, or dropped on the view thread when only a replay would bring
    /// it up to date), or built now by replay and kept from then on.
    pub fn merged_graph(&mut self, store: &Store) -> Result<&mut LiveMergedGraph, StoreError> {
        let texts = self.texts;
        let state = self.state();
        if state.merged.is_none() {
            let (merge, roster) = (&state.merge, &state.roster);
            let plan = with_texts(LiveMergedGraph::plan(merge), texts, MergedGraphPlan::texts_from);
            state.merged = Some(plan.build(|author, seqs| agora_view::load_chain_range(store, roster, author, seqs))?);
        }
        match &mut state.merged {
            Some(graph) => Ok(graph),
            None => unreachable!("the merged graph was just built"),
        }
    }

    /// `agent`'s perspective, current: kept from an earlier ask (then
    /// refreshed with every update), or built now by replay and kept from
    /// then on, in place of the least recently asked for if
    /// [`PERSPECTIVES_LIVE_MAX`] are kept already. Built here only when
    /// [`MergeCache::prepare_perspective`] could not build it without
    /// holding the view (or was not asked first).
    pub fn perspective(&mut self, agent: AgentId, store: &Store) -> Result<&mut LivePerspective, StoreError> {
        let builds = self.perspective_build_seconds.clone();
        let texts = self.texts;
        let state = self.state();
        match state.perspectives.iter().position(|p| p.agent() == agent) {
            Some(i) => {
                let p = state.perspectives.remove(i);
                state.perspectives.push(p);
            }
            None => {
                let (merge, roster) = (&state.merge, &state.roster);
                let started = Instant::now();
                let plan = with_texts(LivePerspective::plan(merge, agent), texts, PerspectivePlan::texts_from);
                let p = plan.build(|author, seqs| agora_view::load_chain_range(store, roster, author, seqs))?;
                builds.observe(started.elapsed().as_secs_f64());
                state.keep_perspective(p);
            }
        }
        match state.perspectives.last_mut() {
            Some(p) => Ok(p),
            None => unreachable!("a perspective was just placed last"),
        }
    }
}

/// `plan`, reading texts from `texts` if given.
fn with_texts<P>(plan: P, texts: Option<&Arc<dyn TextSource>>, read_from: impl FnOnce(P, Arc<dyn TextSource>) -> P) -> P {
    match texts {
        Some(source) => read_from(plan, source.clone()),
        None => plan,
    }
}

impl MergeCache {
    /// An empty cache (built on first use) for the workspace founded by `founder`.
    pub fn new(founder: AgentId) -> Self {
        Self::observed(founder, Histogram::new([1.0]), Histogram::new([1.0]))
    }

    /// An empty cache that records rebuild times and the view's lag behind commits.
    pub fn observed(founder: AgentId, rebuild_seconds: Histogram, lag_seconds: Histogram) -> Self {
        Self {
            founder,
            pending: Mutex::new(Pending::default()),
            woken: Condvar::new(),
            live: Mutex::new(None),
            rebuild_seconds,
            lag_seconds,
            payloads_unpublished: Mutex::new(Some(Vec::new())),
            redactions: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            perspective_build_seconds: Histogram::new([1.0]),
            texts: None,
            ids: Arc::default(),
        }
    }

    /// The same cache, whose perspectives and merged graph hold no texts
    /// but read them from `store` (the one it is always asked with) when
    /// they are shown: a perspective of a million entries is about 90 bytes
    /// a node smaller (see `agora_graph::TextSource`).
    pub fn texts_from(self, store: &Arc<Store>) -> Self {
        Self { texts: Some(Arc::new(agora_view::StoreTexts::new(store))), ..self }
    }

    /// The same cache, whose merged state, perspectives and merged graph
    /// hold their entry ids in `ids`, an arena the node's other views share
    /// (each id held once).
    pub fn sharing_ids(self, ids: Arc<IdArena>) -> Self {
        Self { ids, ..self }
    }

    fn perspective_plan(&self, merge: &LiveMerge, agent: AgentId) -> PerspectivePlan {
        with_texts(LivePerspective::plan(merge, agent), self.texts.as_ref(), PerspectivePlan::texts_from)
    }

    fn merged_graph_plan(&self, merge: &LiveMerge) -> MergedGraphPlan {
        with_texts(LiveMergedGraph::plan(merge), self.texts.as_ref(), MergedGraphPlan::texts_from)
    }

    /// The same cache, recording how long each perspective built by replay
    /// took in `perspective_build_seconds`.
    pub fn with_perspective_builds(self, perspective_build_seconds: Histogram) -> Self {
        Self { perspective_build_seconds, ..self }
    }

    /// Make sure the merged reasoning graph is kept, building it, if it is
    /// not, without holding the view, as [`MergeCache::prepare_perspective`]
    /// builds a perspective: what the Automerge document publishes, about a
    /// second to build at a million entries.
    pub fn prepare_merged_graph(&self, store: &Store) -> Result<(), StoreError> {
        self.build_without_view(
            store,
            |state| state.merged.is_some(),
            |state| self.merged_graph_plan(&state.merge),
            |plan, roster| plan.build(|author, seqs| agora_view::load_chain_range(store, roster, author, seqs)),
            || {},
            |state, mut built| {
                let (merge, roster) = (&state.merge, &state.roster);
                let current = built.refresh_in_place(merge, &[], |author, seqs| agora_view::load_chain_range(store, roster, author, seqs))?.is_some();
                if current {
                    state.merged = Some(built);
                }
                Ok(current)
            },
        )
    }

    /// Make sure `agent`'s perspective is kept, building it, if it is not,
    /// without holding the view: its plan is taken off the view
    /// ([`LivePerspective::plan`]: each included prefix by its head, the
    /// events left out), the view is let go while the graph is replayed
    /// from the store (about a second at a million entries, during which
    /// the view thread and every other reader go on), then the perspective
    /// is brought up to date in place with what arrived meanwhile and kept.
    /// If a payload changed or the view was rebuilt meanwhile, or what
    /// arrived cannot be taken in place, it tries again, at most
    /// [`PERSPECTIVE_BUILD_TRIES`] times, then leaves the build to
    /// [`LiveView::perspective`].
    pub fn prepare_perspective(&self, store: &Store, agent: AgentId) -> Result<(), StoreError> {
        self.prepare_perspective_with(store, agent, || {})
    }

    /// [`MergeCache::prepare_perspective`], calling `meanwhile` while it
    /// builds without the view (tests write there).
    fn prepare_perspective_with(&self, store: &Store, agent: AgentId, meanwhile: impl FnMut()) -> Result<(), StoreError> {
        self.build_without_view(
            store,
            |state| state.perspectives.iter().any(|p| p.agent() == agent),
            |state| self.perspective_plan(&state.merge, agent),
            |plan, roster| {
                let started = Instant::now();
                let built = plan.build(|author, seqs| agora_view::load_chain_range(store, roster, author, seqs));
                self.perspective_build_seconds.observe(started.elapsed().as_secs_f64());
                built
            },
            meanwhile,
            |state, mut built| {
                let (merge, roster) = (&state.merge, &state.roster);
                let current = built.refresh_in_place(merge, &[], |author, seqs| agora_view::load_chain_range(store, roster, author, seqs))?.is_some();
                if current {
                    state.keep_perspective(built);
                }
                Ok(current)
            },
        )
    }

    /// Build what is kept beside the view (a perspective, the merged graph)
    /// unless `kept` says it is: `plan` taken under the view, `build` (the
    /// replay) without it, `meanwhile` called after, then under the view
    /// again `keep` brings it up to date in place and keeps it (false if it
    /// could not). Tried again if a payload changed or the view was rebuilt
    /// in between, at most [`PERSPECTIVE_BUILD_TRIES`] times.
    fn build_without_view<P, B>(
        &self,
        store: &Store,
        kept: impl Fn(&LiveState) -> bool,
        plan: impl Fn(&LiveState) -> P,
        build: impl Fn(P, &Roster) -> Result<B, StoreError>,
        mut meanwhile: impl FnMut(),
        mut keep: impl FnMut(&mut LiveState, B) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        for _ in 0..PERSPECTIVE_BUILD_TRIES {
            let (plan, roster, generation) = {
                let mut view = self.current(store)?;
                let state = view.state();
                if kept(state) {
                    return Ok(());
                }
                (plan(state), state.roster.clone(), self.generation.load(Ordering::Acquire))
            };
            let built = build(plan, &roster)?;
            meanwhile();
            let mut view = self.current(store)?;
            if self.generation.load(Ordering::Acquire) != generation {
                continue;
            }
            let state = view.state();
            if kept(state) || keep(state, built)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The entries whose payload changed (filled in or redacted) since the
    /// last call, for the published document: a redaction that keeps the
    /// event's meaning changes a node's text and nothing its graph digest
    /// covers. `None` when more than [`PAYLOADS_UNPUBLISHED_MAX`] changed
    /// (or nothing took them before): the publisher then compares every
    /// node. Take them before reading the view, so that each is in it.
    pub fn take_payloads_changed(&self) -> Option<Vec<EntryId>> {
        self.payloads_unpublished.lock().unwrap_or_else(|e| e.into_inner()).replace(Vec::new())
    }

    /// Redactions observed so far. Read it before the view: a redaction
    /// counted after is published again at the next look.
    pub fn redactions(&self) -> u64 {
        self.redactions.load(Ordering::Acquire)
    }

    /// Queue a committed write (called by the store's observer, in commit
    /// order; never blocks on the view).
    pub fn observe(&self, notice: &CommitNotice) {
        if notice.redacted {
            self.redactions.fetch_add(1, Ordering::AcqRel);
        }
        if !notice.payloads_changed.is_empty() {
            let mut unpublished = self.payloads_unpublished.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(ids) = unpublished.as_mut() {
                ids.extend_from_slice(&notice.payloads_changed);
                if ids.len() > PAYLOADS_UNPUBLISHED_MAX {
                    *unpublished = None;
                }
            }
        }
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let roster_may_change = agora_merge::roster_may_change(&self.founder, &notice.entries, notice.forks.iter().map(|(author, _)| author));
        if roster_may_change || p.entries.len() + notice.entries.len() > PENDING_ENTRIES_MAX {
            *p = Pending { rebuild: true, since: p.since.or(Some(Instant::now())), ..Pending::default() };
        } else if !p.rebuild {
            p.entries.extend(notice.entries.iter().cloned());
            p.changed.extend(notice.payloads_changed.iter().copied());
            p.forks.extend(notice.forks.iter().map(|(a, _)| *a));
            p.since.get_or_insert_with(Instant::now);
        }
        drop(p);
        self.woken.notify_one();
    }

    /// The live view, brought up to date first (built from the store if it
    /// is not yet, or must be again).
    pub fn current<'a>(&'a self, store: &Store) -> Result<LiveView<'a>, StoreError> {
        let mut guard = self.live.lock().unwrap_or_else(|e| e.into_inner());
        self.catch_up(store, &mut guard)?;
        Ok(LiveView { guard, perspective_build_seconds: &self.perspective_build_seconds, texts: self.texts.as_ref() })
    }

    /// Is every committed write in the view?
    pub fn is_current(&self) -> bool {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    fn catch_up(&self, store: &Store, live: &mut Option<LiveState>) -> Result<(), StoreError> {
        loop {
            let batch = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
            // A rebuild asked for without a write (`invalidate`, or a
            // founder's payload changed, below) is work too: it was lost
            // here once, and a redaction of the founder's reasoning stayed
            // in the perspectives and the published document.
            let Some(since) = batch.since.or((live.is_none() || batch.rebuild).then(Instant::now)) else { return Ok(()) };
            if batch.rebuild || live.is_none() {
                let started = Instant::now();
                let roster = agora_view::derive_roster(store, self.founder)?;
                let (entries, proofs) = agora_view::load_merge_state_input(store, self.founder)?;
                let merge = LiveMerge::from_entries_sharing(&entries, &proofs, self.ids.clone())
                    .map_err(|e| StoreError::Corrupt { location: "merge input".into(), problem: e.to_string() })?;
                *live = Some(LiveState { merge, roster, perspectives: Vec::new(), referrers: ForkReferrers::default(), merged: None });
                self.generation.fetch_add(1, Ordering::AcqRel);
                self.rebuild_seconds.observe(started.elapsed().as_secs_f64());
                tracing::info!(entries = entries.len(), seconds = started.elapsed().as_secs_f64(), "merged view built from the store");
                // What was queued meanwhile is in the store already; applying
                // it again is harmless (known entries are skipped).
                continue;
            }
            let Some(LiveState { merge, roster, referrers, .. }) = live.as_mut() else { continue };
            // What the batch makes of the view (`agora_merge::plan_update`,
            // the feed the simulator's nodes use too).
            let planned = agora_merge::plan_update(merge, roster, &self.founder, batch.entries, &batch.changed, batch.forks, |id| {
                Ok::<_, StoreError>(store.get(id)?.map(|e| e.signed.header().author))
            })?;
            let update = match planned {
                Feed::Apply(update) => update,
                Feed::Rebuild => {
                    let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                    p.rebuild = true;
                    p.since = Some(p.since.map_or(since, |s| s.min(since)));
                    continue;
                }
            };
            // What each entry refers to, for the index of references into
            // forked chains (once it follows one).
            let refs: Vec<(EntryId, Vec<EntryId>)> =
                if referrers.is_active() { update.entries.iter().map(|e| (e.id(), references(e.payload()))).collect() } else { Vec::new() };
            let roster: &Roster = roster;
            if !batch.changed.is_empty() {
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
            merge.apply(update, |author| agora_view::load_chain_merge_input(store, roster, author))?;
            if referrers.is_active() {
                for (id, to) in &refs {
                    referrers.held(merge, id);
                    referrers.observe(merge, *id, to);
                }
                for id in &batch.changed {
                    if let Some((author, seq)) = merge.locate(id) {
                        referrers.observe(merge, *id, &references(agora_view::load_payload(store, &author, seq, id)?.meaning()));
                    }
                }
            }
            if let Some(state) = live.as_mut() {
                state.refresh_perspectives(store, &batch.changed)?;
            }
            self.lag_seconds.observe(since.elapsed().as_secs_f64());
        }
    }

    /// The node's view thread: apply what is committed as soon as it is
    /// (building the view first), until `stop` returns true.
    pub fn run_worker(&self, store: &Store, stop: impl Fn() -> bool) {
        let mut failures = 0u32;
        while !stop() {
            {
                let mut guard = self.live.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = self.catch_up(store, &mut guard) {
                    failures += 1;
                    tracing::warn!("keeping the merged view current: {e}");
                    *guard = None;
                    if failures > 3 {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                } else {
                    failures = 0;
                }
            }
            let p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if p.is_empty() {
                let _ = self.woken.wait_timeout(p, Duration::from_millis(500));
            }
        }
    }

    /// Wake the view thread (to see its stop condition).
    pub fn wake(&self) {
        self.woken.notify_all();
    }

    /// What the views kept here hold in memory, by part (`GET /v1/memory`):
    /// the live merged view, each perspective kept, the merged graph once
    /// built; `null` while no view is built. Holds the view while it reads
    /// every node of every graph kept (a few milliseconds at a million): for
    /// an operator's report, not for every answer.
    pub fn memory(&self) -> serde_json::Value {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let Some(state) = live.as_ref() else { return serde_json::Value::Null };
        serde_json::json!({
            "live_view": state.merge.memory(),
            "perspectives": state.perspectives.iter().map(|p| {
                let graph = &p.view().graph;
                serde_json::json!({ "agent": p.agent().to_string(), "nodes": graph.len(), "bytes": graph.memory() })
            }).collect::<Vec<_>>(),
            "merged_graph": state.merged.as_ref().map(|g| serde_json::json!({ "nodes": g.graph().len(), "bytes": g.graph().memory() })),
        })
    }

    /// Drop the view (a write path the cache could not follow): rebuilt on the next read.
    pub fn invalidate(&self) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).rebuild = true;
        self.woken.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::AgentKey;
    use agora_graph::Event;
    use agora_merge::{Merge, MergeEvent};
    use agora_store::StoreOptions;
    use std::sync::Arc;

    /// A perspective built without holding the view takes in what was
    /// committed while it was built (in place, late events included) and is
    /// kept, equal to the recompute's; one during whose build a payload
    /// changed is built again.
    #[test]
    fn a_perspective_built_without_the_view_takes_what_arrived_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), &StoreOptions { create: true, sync: false, ..Default::default() }).unwrap());
        let founder = AgentKey::from_seed([9; 32]);
        let (alice, bob) = (AgentKey::from_seed([1; 32]), AgentKey::from_seed([2; 32]));
        for (t, agent) in [(10, &alice), (11, &bob)] {
            store.append(&founder, &agora_roster::RosterEvent::Admit { agent: agent.agent_id(), note: String::new() }.encode(), t).unwrap();
        }
        // Its graphs read their texts from the store, as a node's do; the
        // recompute's hold theirs.
        let cache = Arc::new(MergeCache::new(founder.agent_id()).texts_from(&store));
        let observer = cache.clone();
        store.set_observer(Some(Arc::new(move |n: CommitNotice| observer.observe(&n))));
        let b1 = store.append(&bob, &Event::Proposition { text: "b1".into() }.encode(), 1_000).unwrap();
        let b2 = store.append(&bob, &Event::Contradiction { target: b1.id(), text: "b2".into() }.encode(), 2_000).unwrap();
        let accept = |head: &SignedEntry| MergeEvent::Accept { author: bob.agent_id(), up_to_seq: head.header().seq, head: head.id() }.encode();
        store.append(&alice, &accept(&b1), 3_000).unwrap();
        store.append(&alice, &Event::Proposition { text: "a2".into() }.encode(), 4_000).unwrap();
        let agent = alice.agent_id();
        let kept = |cache: &MergeCache| cache.current(&store).unwrap().state().perspectives.iter().any(|p| p.agent() == agent);
        let equals_recompute = |cache: &MergeCache, what: &str| {
            let mut view = cache.current(&store).unwrap();
            let live = view.perspective(agent, &store).unwrap();
            let listing = |g: &agora_graph::Graph| g.nodes().map(|n| (n.id, g.text(n).unwrap().into_owned())).collect::<Vec<_>>();
            assert!(!live.view().graph.keeps_texts());
            let (hash, nodes) = (live.hash(), listing(&live.view().graph));
            drop(view);
            let (entries, proofs) = agora_view::load_merge_input(&store, founder.agent_id()).unwrap();
            let mut want = Merge::compute(&entries, &proofs).unwrap().perspective(&agent);
            assert_eq!((hash, nodes), (want.hash(), listing(&want.graph)), "{what}");
        };

        // While it builds: alice accepts b2 (older than her last event: a
        // late event for her graph) and writes on.
        let mut tries = 0;
        cache
            .prepare_perspective_with(&store, agent, || {
                tries += 1;
                if tries == 1 {
                    store.append(&alice, &accept(&b2), 5_000).unwrap();
                    store.append(&alice, &Event::Support { target: b2.id(), text: "a4".into() }.encode(), 6_000).unwrap();
                }
            })
            .unwrap();
        assert_eq!(tries, 1, "built once");
        assert!(kept(&cache), "kept after one build");
        equals_recompute(&cache, "after writes during the build");

        // A payload redacted while it builds: built again.
        cache.current(&store).unwrap().state().perspectives.clear();
        let mut tries = 0;
        cache
            .prepare_perspective_with(&store, agent, || {
                tries += 1;
                if tries == 1 {
                    let residue = agora_view::residue(&Event::Proposition { text: "b1".into() }.encode());
                    store.redact(&b1.id(), 7_000, Some(&residue)).unwrap();
                }
            })
            .unwrap();
        assert_eq!(tries, 2, "built again after a payload changed meanwhile");
        assert!(kept(&cache));
        equals_recompute(&cache, "after a redaction during the build");
        let mut view = cache.current(&store).unwrap();
        let graph = &view.perspective(agent, &store).unwrap().view().graph;
        assert!(graph.text(graph.node(&b1.id()).unwrap()).unwrap().is_empty(), "the redaction reached it");
        drop(view);

        // The merged graph, built the same way, equals the recompute's.
        cache.prepare_merged_graph(&store).unwrap();
        assert!(cache.current(&store).unwrap().state().merged.is_some(), "kept");
        let (entries, proofs) = agora_view::load_merge_input(&store, founder.agent_id()).unwrap();
        let recomputed = Merge::compute(&entries, &proofs).unwrap();
        let texts = |g: &agora_graph::Graph| g.nodes().map(|n| (n.id, g.text(n).unwrap().into_owned())).collect::<Vec<_>>();
        let recomputed = recomputed.merged_graph();
        let want = (recomputed.snapshot(), texts(&recomputed));
        let mut view = cache.current(&store).unwrap();
        let merged = view.merged_graph(&store).unwrap().graph();
        assert!(!merged.keeps_texts());
        assert_eq!((merged.snapshot(), texts(merged)), want);
    }

    /// The entries kept for the published document are bounded: past
    /// [`PAYLOADS_UNPUBLISHED_MAX`] (a peer filling in or a node redacting
    /// payloads while nobody publishes) they are dropped and the next
    /// publish is told to compare every node; after it, they are kept again.
    #[test]
    fn payloads_kept_for_the_published_document_are_bounded() {
        let cache = MergeCache::new(AgentId([1; 32]));
        let notice = |n: usize| CommitNotice { payloads_changed: (0..n).map(|i| EntryId([(i % 251) as u8; 32])).collect(), ..CommitNotice::default() };
        cache.observe(&notice(3));
        assert_eq!(cache.take_payloads_changed().map(|ids| ids.len()), Some(3));
        assert_eq!(cache.take_payloads_changed(), Some(Vec::new()), "taken");
        for _ in 0..=PAYLOADS_UNPUBLISHED_MAX / 1_000 {
            cache.observe(&notice(1_000));
        }
        assert_eq!(cache.take_payloads_changed(), None, "too many to list: compare every node");
        cache.observe(&notice(2));
        assert_eq!(cache.take_payloads_changed().map(|ids| ids.len()), Some(2));
    }
}
