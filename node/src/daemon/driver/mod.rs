//! The node's event loop: the libp2p swarm, the replication state machine
//! (`agora_sync::Replicator`) and the store, wired together.
//!
//! Like `quinn` around `quinn-proto`, the driver only moves things between
//! the network, the clock and the store; every replication decision (what to
//! request, how to cut a response, what to publish, what is valid, whom to
//! ban, how far behind we are) is the replicator's, and the deterministic
//! simulator's network in `simulations/src/net.rs` executes the same outputs the
//! same way. One task owns the swarm and the replicator. Range reads for
//! peers and imports of verified entries run on two store threads of their
//! own, so a slow synced write never stalls the network; responses are
//! verified on worker threads. The loop itself reads the store only for
//! small bounded lookups (tips, one fork proof, the missing-payload list, the
//! roster when it may have changed). Every queue between them is bounded.
//!
//! - [`workers`]: the store and verify threads, and what they report;
//! - [`swarm`]: libp2p events turned into replicator input;
//! - [`commits`]: the store's commit notices fanned out (graph, replicator,
//!   roster);
//! - [`peer_book`]: peer numbering, bootstrap addresses, foreign peers and
//!   bans, bounded;
//! - [`peers`]: dialling, bans carried out;
//! - [`status`]: `agora node status` and the progress bar.

mod commits;
mod peer_book;
mod peers;
mod status;
mod swarm;
mod workers;

pub use commits::observer;

use super::network::{Behaviour, build_swarm};
use agora_core::{AgentId, EntryRef};
use agora_home::config::NodeConfig;
use agora_live_views::graph_cache::GraphCache;
use agora_store::{CommitNotice, Store, StoreError};
use agora_sync::wire::{WireRequest, WireResponse};
use agora_sync::{Config, Head, ImportOutcome, Message, Output, PeerId, Replicator, WorkspaceId};
use anyhow::{Context, Result};
use futures::StreamExt;
use libp2p::identity::Keypair;
use libp2p::swarm::SwarmEvent;
use libp2p::{Multiaddr, Swarm, gossipsub, request_response};
use peer_book::{Bootstrap, PeerBook};
use serde_json::Value;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc as std_mpsc};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};
use workers::{CHECK_QUEUE_MAX, CheckJob, Done, ReadJob, STORE_QUEUE_MAX, VERIFY_THREADS_MAX, WRITE_QUEUE_MAX, WriteJob};

/// How often the loop looks at its housekeeping (expired bans, notices
/// missed, missing payloads, the progress bar). The replicator's own timers
/// are run when `Replicator::poll_timeout` says, checked at the same pace.
const TICK: Duration = Duration::from_millis(100);
/// An inbound range request the store never answered is let go after this.
const PENDING_RESPONSE_MAX_AGE: Duration = Duration::from_secs(60);

/// An inbound range request waiting for the store, and since when.
type PendingResponse = (request_response::ResponseChannel<Vec<u8>>, Instant);

/// What the event loop and the control server share.
#[derive(Clone)]
pub struct NodeContext {
    pub config: NodeConfig,
    pub store: Arc<Store>,
    pub graph: Arc<GraphCache>,
    pub agent: AgentId,
    pub founder: AgentId,
    pub workspace: WorkspaceId,
    pub node_key: Keypair,
    /// The histograms of `/metrics` (gossip latency, view recomputes).
    pub histograms: crate::metrics::Histograms,
}

/// The replicator's limits: its defaults, with the rates `[replication]`
/// sets.
fn replicator_config(node: &NodeConfig) -> Config {
    let defaults = Config::default();
    Config {
        peer_messages_per_s: node.replication.peer_messages_per_s.unwrap_or(defaults.peer_messages_per_s),
        peer_messages_burst: node.replication.peer_messages_burst.unwrap_or(defaults.peer_messages_burst),
        ..defaults
    }
}

/// Every head the store holds: what the replicator is told at start and
/// after a resync.
pub fn all_heads(store: &Store) -> Result<Vec<Head>, StoreError> {
    let mut out = Vec::new();
    for a in store.authors()? {
        out.extend(a.tips.into_iter().map(|t| Head { author: a.author, seq: t.seq, id: t.id }));
    }
    Ok(out)
}

/// A sync progress bar on standard error, when it is a terminal.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template("sync {bar:40} {pos}/{len} entries ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}

/// Counters for status; monotonic.
#[derive(Default)]
struct Counters {
    entries_imported: u64,
    imports_shed: u64,
    invalid_wire: u64,
    wrong_workspace: u64,
    gossip_published: u64,
    gossip_received: u64,
    commits_missed: u64,
    payloads_unavailable: u64,
    /// Our range requests a peer answered `Busy`.
    declined_busy: u64,
    /// Our range requests a peer answered `Wait`.
    declined_wait: u64,
}

struct Driver {
    ctx: NodeContext,
    swarm: Swarm<Behaviour>,
    rep: Replicator,
    topic: gossipsub::IdentTopic,
    started: Instant,
    peers: PeerBook,
    /// Inbound range requests waiting for the store, by (peer, their id).
    pending_responses: HashMap<(PeerId, u64), PendingResponse>,
    /// Our range requests in flight, by libp2p's id: (peer, our id), so that
    /// a `Busy` or `Wait` answer (which carries no id) is told to the replicator.
    outbound: HashMap<request_response::OutboundRequestId, (PeerId, u64)>,
    read_tx: std_mpsc::SyncSender<ReadJob>,
    write_tx: std_mpsc::SyncSender<WriteJob>,
    check_tx: std_mpsc::SyncSender<CheckJob>,
    counters: Counters,
    listen: Vec<Multiaddr>,
    progress: Option<indicatif::ProgressBar>,
    roster_members: usize,
    /// The members' display names (their admissions' notes), for the status.
    display_names: std::collections::BTreeMap<agora_core::AgentId, String>,
    /// Heads of removed agents' pinned histories not held yet: storing one
    /// changes the admission (`Roster::admission`), so the roster is
    /// derived again.
    pins_waiting: Vec<agora_core::EntryId>,
    /// The admins in force: their roster events change the roster too.
    roster_admins: std::collections::BTreeSet<agora_core::AgentId>,
    /// How many of them make a quorum.
    roster_threshold: u64,
    /// The store's list of entries held without payload may hold more than
    /// the replicator took; read from `missing_cursor` when it has room.
    missing_more: bool,
    missing_cursor: Option<EntryRef>,
    /// The configured bootstrap addresses, dialled again while their peer
    /// is not connected.
    bootstrap: Vec<Bootstrap>,
}

/// Everything the loop receives besides swarm events.
pub struct Inbox {
    pub commits: mpsc::Receiver<CommitNotice>,
    pub commits_missed: Arc<AtomicBool>,
    pub status: mpsc::Receiver<oneshot::Sender<Value>>,
    pub shutdown: oneshot::Receiver<()>,
}

/// Run the node until `inbox.shutdown` fires.
pub async fn run(ctx: NodeContext, settings: super::network::NetworkSettings, mut inbox: Inbox, ready: oneshot::Sender<Vec<Multiaddr>>) -> Result<()> {
    let topic = gossipsub::IdentTopic::new(ctx.workspace.topic());
    let mut swarm = build_swarm(ctx.node_key.clone(), &topic, &settings)?;
    for addr in &ctx.config.listen {
        swarm.listen_on(addr.clone()).with_context(|| format!("listening on {addr}"))?;
    }
    // Wait for every listener to report its address (port 0 resolves here).
    let mut listen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while listen.len() < ctx.config.listen.len() {
        match tokio::time::timeout_at(deadline, swarm.select_next_some()).await {
            Ok(SwarmEvent::NewListenAddr { address, .. }) => listen.push(address),
            Ok(SwarmEvent::ListenerError { error, .. }) => return Err(anyhow::anyhow!("listener failed: {error}")),
            Ok(SwarmEvent::ListenerClosed { reason, addresses, .. }) => {
                return Err(anyhow::anyhow!("listener on {addresses:?} closed: {reason:?}"));
            }
            Ok(_) => {}
            Err(_) => anyhow::bail!("listeners did not come up within 10 s"),
        }
    }

    let (read_tx, read_rx) = std_mpsc::sync_channel(STORE_QUEUE_MAX);
    let (write_tx, write_rx) = std_mpsc::sync_channel(WRITE_QUEUE_MAX);
    let (done_tx, mut done_rx) = mpsc::channel::<Done>(4 * STORE_QUEUE_MAX);
    {
        let (store, done) = (ctx.store.clone(), done_tx.clone());
        std::thread::Builder::new().name("store-read".into()).spawn(move || workers::read_worker(store, read_rx, done))?;
    }
    let writer = {
        let (store, done) = (ctx.store.clone(), done_tx.clone());
        std::thread::Builder::new().name("store-write".into()).spawn(move || workers::write_worker(store, write_rx, done))?
    };
    let (check_tx, check_rx) = std_mpsc::sync_channel::<CheckJob>(CHECK_QUEUE_MAX);
    let check_rx = Arc::new(std::sync::Mutex::new(check_rx));
    let verify_threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, VERIFY_THREADS_MAX);
    for i in 0..verify_threads {
        let (jobs, done) = (check_rx.clone(), done_tx.clone());
        std::thread::Builder::new().name(format!("verify-{i}")).spawn(move || workers::verify_worker(jobs, done))?;
    }
    drop(done_tx);

    let mut driver = Driver {
        topic,
        started: Instant::now(),
        peers: PeerBook::default(),
        pending_responses: HashMap::new(),
        outbound: HashMap::new(),
        read_tx,
        write_tx,
        check_tx,
        counters: Counters::default(),
        listen: listen.clone(),
        progress: None,
        roster_members: 0,
        display_names: Default::default(),
        pins_waiting: Vec::new(),
        roster_admins: Default::default(),
        roster_threshold: 0,
        missing_more: true,
        missing_cursor: None,
        rep: Replicator::new(replicator_config(&ctx.config)),
        bootstrap: ctx.config.bootstrap.iter().cloned().map(Bootstrap::new).collect(),
        swarm,
        ctx,
    };
    let heads = all_heads(&driver.ctx.store)?;
    driver.rep.set_local_frontier(heads, 0);
    driver.refresh_roster();
    driver.feed_missing_payloads();
    driver.progress = progress_bar();
    driver.dial_bootstraps();
    let _ = ready.send(listen);

    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = driver.swarm.select_next_some() => driver.on_swarm(event),
            Some(notice) = inbox.commits.recv() => driver.on_commit(notice),
            Some(done) = done_rx.recv() => driver.on_done(done),
            Some(reply) = inbox.status.recv() => { let _ = reply.send(driver.status()); }
            _ = tick.tick() => driver.on_tick(&inbox.commits_missed),
            _ = &mut inbox.shutdown => break,
        }
        driver.drain();
    }
    info!("shutting down: storing what was accepted");
    if let Some(p) = &driver.progress {
        p.finish_and_clear();
    }
    let Driver { read_tx, write_tx, swarm, .. } = driver;
    drop(swarm);
    drop(read_tx);
    drop(write_tx);
    // The writer finishes its queue (imports already verified) and exits;
    // the caller bounds how long it waits for that.
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    Ok(())
}

impl Driver {
    /// The replicator's clock: milliseconds since the node started (monotonic).
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Carry out what the replicator decided.
    fn drain(&mut self) {
        while let Some(out) = self.rep.poll() {
            match out {
                Output::Send(p, Message::Response { req, entries, more }) => {
                    if let Some((channel, _)) = self.pending_responses.remove(&(p, req)) {
                        let bytes = WireResponse::Entries { req, entries, more }.encode();
                        let _ = self.swarm.behaviour_mut().sync.send_response(channel, bytes);
                    }
                }
                Output::Send(p, message) => {
                    let Some(peer) = self.peers.libp2p(p) else { continue };
                    let range = match &message {
                        Message::Request { req, author, start, .. } => {
                            debug!(%peer, req, %author, seq = start.seq, "requesting a range");
                            Some(*req)
                        }
                        _ => None,
                    };
                    if let Ok(request) = WireRequest::from_message(self.ctx.workspace, message) {
                        let id = self.swarm.behaviour_mut().sync.send_request(&peer, request.encode());
                        if let Some(req) = range {
                            self.outbound.insert(id, (p, req));
                        }
                    }
                }
                Output::Publish(g) => {
                    let topic = self.topic.clone();
                    match self.swarm.behaviour_mut().gossip.publish(topic, g.encode()) {
                        Ok(_) => self.counters.gossip_published += 1,
                        // Alone, or no subscription seen yet: peers catch up
                        // through frontiers on connect.
                        Err(e) => debug!("gossip publish: {e}"),
                    }
                }
                Output::Import { id, from, entries } => {
                    let count = entries.len();
                    if let Err(std_mpsc::TrySendError::Full(_) | std_mpsc::TrySendError::Disconnected(_)) =
                        self.write_tx.try_send(WriteJob { id, from, entries })
                    {
                        // Verified but not stored: asked for again.
                        self.counters.imports_shed += count as u64;
                        let now = self.now_ms();
                        self.rep.import_result(id, ImportOutcome::Lost, now);
                    }
                }
                Output::Serve(serve) => {
                    if let Err(std_mpsc::TrySendError::Full(ReadJob(s)) | std_mpsc::TrySendError::Disconnected(ReadJob(s))) =
                        self.read_tx.try_send(ReadJob(serve))
                    {
                        self.decline(s.peer, s.req, None);
                    }
                }
                Output::Decline { peer, req, wait_ms } => self.decline(peer, req, wait_ms),
                Output::Ban { peer, reason, until_ms } => self.ban(peer, reason, until_ms),
                Output::Refused { peer, author, what } => {
                    debug!(peer = peer.0, %author, what, "refused: author not admitted to the workspace");
                }
                Output::PayloadUnavailable(e) => {
                    self.counters.payloads_unavailable += 1;
                    warn!(entry = %e, "no peer had this entry's payload; views wait for it until a peer offers it");
                }
            }
        }
    }

    /// Tell a peer that its range request is not served now: `Wait` when
    /// the replicator knows for how long, else `Busy`.
    fn decline(&mut self, peer: PeerId, req: u64, wait_ms: Option<u32>) {
        if let Some((channel, _)) = self.pending_responses.remove(&(peer, req)) {
            let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::declined(wait_ms).encode());
        }
    }

    fn on_done(&mut self, done: Done) {
        let now = self.now_ms();
        match done {
            Done::Served { serve, entries } => self.rep.respond(serve, entries),
            Done::ServeFailed { serve, error } => {
                warn!(peer = serve.peer.0, req = serve.req, "serving a range failed: {error}");
                self.decline(serve.peer, serve.req, None);
            }
            Done::Checked { peer, req, checked, more } => self.rep.handle_checked_response(peer, req, checked, more, now),
            Done::Imported { id, outcome, stored, wall_now_ms, error } => {
                self.counters.entries_imported += stored as u64;
                if let Some(e) = error {
                    warn!("storing entries failed: {e}");
                }
                // The store judged entries' dates on the wall clock; the
                // replicator waits on its own.
                let outcome = match outcome {
                    ImportOutcome::Deferred { seq, until_ms } => {
                        ImportOutcome::Deferred { seq, until_ms: now.saturating_add(until_ms.saturating_sub(wall_now_ms)) }
                    }
                    other => other,
                };
                debug!(id, ?outcome, stored, "import done");
                self.rep.import_result(id, outcome, now);
            }
        }
    }

    fn on_tick(&mut self, missed: &AtomicBool) {
        let now = self.now_ms();
        if missed.swap(false, Ordering::Relaxed) {
            // Notices were dropped while the loop was busy: resync.
            self.resync();
        }
        if self.rep.poll_timeout().is_some_and(|t| t <= now) {
            self.rep.handle_timeout(now);
        }
        self.unblock_expired();
        self.dial_bootstraps();
        self.feed_missing_payloads();
        self.pending_responses.retain(|_, (_, at)| at.elapsed() < PENDING_RESPONSE_MAX_AGE);
        self.update_progress();
    }
}
