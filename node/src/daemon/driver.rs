//! The node's event loop: the libp2p swarm, the replication state machine
//! (`agora_sync::Replicator`) and the store, wired together.
//!
//! Like `quinn` around `quinn-proto`, this file only moves things between
//! the network, the clock and the store; every replication decision (what to
//! request, what is valid, whom to ban) is the replicator's. One task owns the
//! swarm and the replicator. The store is used from two threads, one serving
//! range reads and one importing verified entries, so a slow synced write never
//! stalls the network. Every queue between them is bounded.

use super::network::{build_swarm, Behaviour, BehaviourEvent, NetworkSettings};
use super::NodeContext;
use crate::graph_cache::GraphCache;
use agora_core::AgentId;
use agora_store::{CommitNotice, PayloadState, Store, StoreError};
use agora_sync::wire::{WireRequest, WireResponse};
use agora_sync::{Config, Gossip, GossipVerdict, Head, Message, Output, PeerId, Replicator, VerifiedEntry, WireEntry};
use anyhow::{Context, Result};
use futures::StreamExt;
use libp2p::swarm::SwarmEvent;
use libp2p::{gossipsub, identify, kad, mdns, request_response, Multiaddr, Swarm};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

/// Work for the store threads.
enum ReadJob {
    Serve { peer: PeerId, req: u64, author: AgentId, from_seq: u64, limit: u32 },
}

enum WriteJob {
    Import { from: PeerId, entries: Vec<VerifiedEntry>, relayed: bool },
}

/// A response to check (decode, payload hashes, signatures) off the loop.
struct CheckJob {
    peer: PeerId,
    req: u64,
    entries: Vec<WireEntry>,
    more: bool,
}

/// What the store threads report back.
enum Done {
    Served { peer: PeerId, req: u64, entries: Vec<(u64, WireEntry)>, more: bool },
    ServeFailed { peer: PeerId, req: u64, error: String },
    /// The first entries do not link to anything stored.
    Unlinked { from: PeerId, author: AgentId, seq: u64 },
    /// The peer's entries break a chain rule against what is stored.
    Invalid { from: PeerId, author: AgentId, seq: u64, reason: String, relayed: bool },
    Imported { count: usize },
    /// A response's entries, checked by a verify worker.
    Checked { peer: PeerId, req: u64, checked: Result<Vec<VerifiedEntry>, String>, more: bool },
    /// The store could not write (the entries are asked for again).
    ImportFailed { author: AgentId, seq: u64, error: String },
}

/// Queue lengths between the loop and the store threads.
const STORE_QUEUE_MAX: usize = 64;
/// Responses waiting for a verify worker (responses only answer our own
/// requests, of which at most `Config::in_flight_max` are in flight).
const CHECK_QUEUE_MAX: usize = 64;
/// Most verify worker threads.
const VERIFY_THREADS_MAX: usize = 4;
/// Inbound range requests waiting for the store, beyond which new ones are answered `Busy`.
const PENDING_RESPONSES_MAX: usize = 1024;
/// Bans remembered for `agora node status`.
const RECENT_BANS_MAX: usize = 32;

/// An inbound range request waiting for the store, and since when.
type PendingResponse = (request_response::ResponseChannel<Vec<u8>>, Instant);

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
    relayed_refused: u64,
}

struct Driver {
    ctx: NodeContext,
    swarm: Swarm<Behaviour>,
    rep: Replicator,
    topic: gossipsub::IdentTopic,
    started: Instant,
    ids: HashMap<libp2p::PeerId, PeerId>,
    peers_by_id: HashMap<PeerId, libp2p::PeerId>,
    next_peer: u64,
    /// Peers in another workspace: never replicated with.
    foreign: BTreeSet<libp2p::PeerId>,
    pending_responses: HashMap<(PeerId, u64), PendingResponse>,
    blocked_until: HashMap<libp2p::PeerId, Instant>,
    recent_bans: VecDeque<Value>,
    read_tx: std_mpsc::SyncSender<ReadJob>,
    write_tx: std_mpsc::SyncSender<WriteJob>,
    check_tx: std_mpsc::SyncSender<CheckJob>,
    counters: Counters,
    listen: Vec<Multiaddr>,
    progress: Option<indicatif::ProgressBar>,
    roster_members: usize,
}

/// Everything the loop receives besides swarm events.
pub struct Inbox {
    pub commits: mpsc::Receiver<CommitNotice>,
    pub commits_missed: Arc<AtomicBool>,
    pub status: mpsc::Receiver<oneshot::Sender<Value>>,
    pub shutdown: oneshot::Receiver<()>,
}

/// The store observer: keeps the graph current (synchronously, so a command
/// that wrote sees its write in the next read) and hands the notice to the
/// loop. If the loop is behind, the notice is dropped and the loop resyncs
/// from the store instead (bounded memory under any write rate).
pub fn observer(
    graph: Arc<GraphCache>,
    tx: mpsc::Sender<CommitNotice>,
    missed: Arc<AtomicBool>,
    generation: Arc<std::sync::atomic::AtomicU64>,
) -> agora_store::Observer {
    Arc::new(move |notice: CommitNotice| {
        graph.observe(&notice);
        generation.fetch_add(1, Ordering::Release);
        if tx.try_send(notice).is_err() {
            missed.store(true, Ordering::Relaxed);
        }
    })
}

fn heads_of(store: &Store, author: &AgentId) -> Result<Vec<Head>, StoreError> {
    Ok(store.tips(author)?.into_iter().map(|t| Head { author: *author, seq: t.seq, id: t.id }).collect())
}

fn all_heads(store: &Store) -> Result<Vec<Head>, StoreError> {
    let mut out = Vec::new();
    for a in store.authors()? {
        out.extend(a.tips.into_iter().map(|t| Head { author: a.author, seq: t.seq, id: t.id }));
    }
    Ok(out)
}

/// Serve range reads until the loop goes away.
fn read_worker(store: Arc<Store>, jobs: std_mpsc::Receiver<ReadJob>, done: mpsc::Sender<Done>) {
    while let Ok(ReadJob::Serve { peer, req, author, from_seq, limit }) = jobs.recv() {
        // Up to 4 entries per seq on average (what a response may carry),
        // plus one that tells whether the sender holds more.
        let cap = 4 * limit as usize;
        let result = store.chain_raw(&author, from_seq, cap + 1);
        let msg = match result {
            Ok(mut stored) => {
                let end = from_seq.saturating_add(u64::from(limit));
                let mut more = stored.last().is_some_and(|e| e.seq >= end) || stored.len() > cap;
                stored.retain(|e| e.seq < end);
                if stored.len() > cap {
                    // Heavy forking: never split a seq (the next request
                    // resumes after the last seq sent), unless it is the only one.
                    let last = stored[cap].seq;
                    stored.truncate(cap);
                    let first = stored.first().map(|e| e.seq);
                    if first != Some(last) {
                        stored.retain(|e| e.seq < last);
                    }
                    more = true;
                }
                let entries = stored
                    .into_iter()
                    .map(|e| {
                        let payload = match e.payload {
                            PayloadState::Held(p) => Some(p),
                            _ => None,
                        };
                        (e.seq, WireEntry { entry: e.entry, payload })
                    })
                    .collect();
                Done::Served { peer, req, entries, more }
            }
            Err(e) => Done::ServeFailed { peer, req, error: e.to_string() },
        };
        if done.blocking_send(msg).is_err() {
            return;
        }
    }
}

/// Check responses (the CPU-heavy part of replication: signatures) until the
/// loop goes away. Several of these share one queue.
fn verify_worker(jobs: Arc<std::sync::Mutex<std_mpsc::Receiver<CheckJob>>>, done: mpsc::Sender<Done>) {
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(CheckJob { peer, req, entries, more }) = job else { return };
        let checked = agora_sync::check_entries(entries);
        if done.blocking_send(Done::Checked { peer, req, checked, more }).is_err() {
            return;
        }
    }
}

/// Import verified entries until the loop goes away (and then drain what is
/// queued: it was verified, losing it would only cost a re-fetch, but a clean
/// shutdown stores everything it accepted).
fn write_worker(store: Arc<Store>, jobs: std_mpsc::Receiver<WriteJob>, done: mpsc::Sender<Done>) {
    while let Ok(WriteJob::Import { from, entries, relayed }) = jobs.recv() {
        let msg = import(&store, from, entries, relayed);
        let _ = done.blocking_send(msg);
    }
}

fn import(store: &Store, from: PeerId, entries: Vec<VerifiedEntry>, relayed: bool) -> Done {
    let Some((first, _)) = entries.first() else { return Done::Imported { count: 0 } };
    let (author, first_seq) = (first.header().author, first.header().seq);
    // The replicator checked links inside the batch; only the first seq's
    // entries can link to something missing here.
    for (e, _) in entries.iter().take_while(|(e, _)| e.header().seq == first_seq) {
        if let Some(back) = e.header().backlink {
            match store.locate(&back) {
                Ok(Some(_)) => {}
                Ok(None) => return Done::Unlinked { from, author, seq: first_seq },
                Err(err) => return Done::ImportFailed { author, seq: first_seq, error: err.to_string() },
            }
        }
    }
    let count = entries.len();
    match store.import_checked(entries, &format!("peer {}", from.0)) {
        Ok(report) => Done::Imported { count: report.imported.min(count) },
        Err(StoreError::Import(failure)) => Done::Invalid { from, author, seq: first_seq, reason: failure.to_string(), relayed },
        Err(StoreError::Verify(e)) => Done::Invalid { from, author, seq: first_seq, reason: e.to_string(), relayed },
        Err(e) => Done::ImportFailed { author, seq: first_seq, error: e.to_string() },
    }
}

/// Run the node until `inbox.shutdown` fires.
pub async fn run(ctx: NodeContext, settings: NetworkSettings, mut inbox: Inbox, ready: oneshot::Sender<Vec<Multiaddr>>) -> Result<()> {
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
    let (write_tx, write_rx) = std_mpsc::sync_channel(STORE_QUEUE_MAX);
    let (done_tx, mut done_rx) = mpsc::channel::<Done>(4 * STORE_QUEUE_MAX);
    let reader = {
        let (store, done) = (ctx.store.clone(), done_tx.clone());
        std::thread::Builder::new().name("store-read".into()).spawn(move || read_worker(store, read_rx, done))?
    };
    let writer = {
        let (store, done) = (ctx.store.clone(), done_tx.clone());
        std::thread::Builder::new().name("store-write".into()).spawn(move || write_worker(store, write_rx, done))?
    };
    let (check_tx, check_rx) = std_mpsc::sync_channel::<CheckJob>(CHECK_QUEUE_MAX);
    let check_rx = Arc::new(std::sync::Mutex::new(check_rx));
    let verify_threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, VERIFY_THREADS_MAX);
    for i in 0..verify_threads {
        let (jobs, done) = (check_rx.clone(), done_tx.clone());
        std::thread::Builder::new().name(format!("verify-{i}")).spawn(move || verify_worker(jobs, done))?;
    }
    drop(done_tx);

    let mut rep = Replicator::new(Config::default());
    let mut driver = Driver {
        topic,
        started: Instant::now(),
        ids: HashMap::new(),
        peers_by_id: HashMap::new(),
        next_peer: 1,
        foreign: BTreeSet::new(),
        pending_responses: HashMap::new(),
        blocked_until: HashMap::new(),
        recent_bans: VecDeque::new(),
        read_tx,
        write_tx,
        check_tx,
        counters: Counters::default(),
        listen: listen.clone(),
        progress: None,
        roster_members: 0,
        rep: {
            rep.set_local_frontier(all_heads(&ctx.store)?, 0);
            rep
        },
        swarm,
        ctx,
    };
    driver.refresh_roster();
    driver.progress = super::progress_bar();
    for addr in driver.ctx.config.bootstrap.clone() {
        driver.dial_bootstrap(addr);
    }
    let _ = ready.send(listen);

    let mut tick = tokio::time::interval(Duration::from_millis(100));
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
    // The workers finish their queues (imports already verified) and exit.
    let _ = tokio::task::spawn_blocking(move || {
        let _ = writer.join();
        let _ = reader.join();
    })
    .await;
    Ok(())
}

impl Driver {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn peer_of(&mut self, id: libp2p::PeerId) -> PeerId {
        if let Some(p) = self.ids.get(&id) {
            return *p;
        }
        let p = PeerId(self.next_peer);
        self.next_peer += 1;
        self.ids.insert(id, p);
        self.peers_by_id.insert(p, id);
        p
    }

    fn dial_bootstrap(&mut self, addr: Multiaddr) {
        if let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() {
            self.swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
        }
        if let Err(e) = self.swarm.dial(addr.clone()) {
            warn!(%addr, "cannot dial bootstrap peer: {e}");
        }
        let _ = self.swarm.behaviour_mut().kad.bootstrap();
    }

    fn refresh_roster(&mut self) {
        match crate::membership::derive(&self.ctx.store, self.ctx.founder) {
            Ok(roster) => {
                if let Some(seq) = roster.frozen_at_fork_seq {
                    warn!(founder = %self.ctx.founder, seq, "the founder's chain is forked: the roster is frozen before it");
                }
                self.roster_members = roster.members.len();
                let now = self.now_ms();
                self.rep.set_admitted(Some(roster.member_set()), now);
            }
            Err(e) => warn!("cannot derive the roster: {e}"),
        }
    }

    fn on_swarm(&mut self, event: SwarmEvent<BehaviourEvent>) {
        let now = self.now_ms();
        match event {
            SwarmEvent::ConnectionEstablished { peer_id, num_established, endpoint, .. } => {
                debug!(%peer_id, addr = %endpoint.get_remote_address(), "connected");
                if num_established.get() == 1 && !self.foreign.contains(&peer_id) {
                    let p = self.peer_of(peer_id);
                    self.rep.connected(p, now);
                }
            }
            SwarmEvent::ConnectionClosed { peer_id, num_established, .. } => {
                if num_established == 0
                    && let Some(p) = self.ids.get(&peer_id).copied()
                {
                    debug!(%peer_id, "disconnected");
                    self.rep.disconnected(p);
                    self.pending_responses.retain(|(q, _), _| *q != p);
                }
            }
            SwarmEvent::NewListenAddr { address, .. } => {
                info!(%address, "listening");
                self.listen.push(address);
            }
            SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => debug!(?peer_id, "dial failed: {error}"),
            SwarmEvent::Behaviour(b) => self.on_behaviour(b, now),
            _ => {}
        }
    }

    fn on_behaviour(&mut self, event: BehaviourEvent, now: u64) {
        match event {
            BehaviourEvent::Sync(e) => self.on_sync(e, now),
            BehaviourEvent::Gossip(gossipsub::Event::Message { propagation_source, message_id, message }) => {
                self.counters.gossip_received += 1;
                let p = self.peer_of(propagation_source);
                let verdict = if message.topic != self.topic.hash() {
                    GossipVerdict::Ignore
                } else {
                    match Gossip::decode(&message.data) {
                        Ok(g) => {
                            let v = self.rep.gossip(p, g, now);
                            debug!(%propagation_source, verdict = ?v, "gossip");
                            v
                        }
                        Err(e) => {
                            self.counters.invalid_wire += 1;
                            self.rep.report_invalid(p, format!("gossip: {e}"), now);
                            GossipVerdict::Reject(e.to_string())
                        }
                    }
                };
                let acceptance = match verdict {
                    GossipVerdict::Accept => gossipsub::MessageAcceptance::Accept,
                    GossipVerdict::Ignore => gossipsub::MessageAcceptance::Ignore,
                    GossipVerdict::Reject(_) => gossipsub::MessageAcceptance::Reject,
                };
                self.swarm.behaviour_mut().gossip.report_message_validation_result(&message_id, &propagation_source, acceptance);
            }
            BehaviourEvent::Gossip(gossipsub::Event::Subscribed { peer_id, topic }) => debug!(%peer_id, %topic, "subscribed"),
            BehaviourEvent::Gossip(_) => {}
            BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. }) => {
                for addr in info.listen_addrs {
                    let unspecified = addr.iter().any(|p| {
                        matches!(p, libp2p::multiaddr::Protocol::Ip4(ip) if ip.is_unspecified())
                            || matches!(p, libp2p::multiaddr::Protocol::Ip6(ip) if ip.is_unspecified())
                    });
                    if !unspecified {
                        self.swarm.behaviour_mut().kad.add_address(&peer_id, addr);
                    }
                }
            }
            BehaviourEvent::Identify(_) => {}
            BehaviourEvent::Mdns(mdns::Event::Discovered(list)) => {
                for (peer, addr) in list {
                    if !self.blocked_until.contains_key(&peer) && !self.foreign.contains(&peer) {
                        self.swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
                        let _ = self.swarm.dial(addr);
                    }
                }
            }
            BehaviourEvent::Mdns(_) => {}
            BehaviourEvent::Kad(kad::Event::RoutingUpdated { peer, .. }) => {
                if !self.swarm.is_connected(&peer) && !self.blocked_until.contains_key(&peer) && !self.foreign.contains(&peer) {
                    let _ = self.swarm.dial(peer);
                }
            }
            BehaviourEvent::Kad(_) | BehaviourEvent::Ping(_) => {}
            BehaviourEvent::Blocked(never) | BehaviourEvent::Limits(never) => match never {},
        }
    }

    fn on_sync(&mut self, event: request_response::Event<Vec<u8>, Vec<u8>>, now: u64) {
        match event {
            request_response::Event::Message { peer, message, .. } => {
                let p = self.peer_of(peer);
                match message {
                    request_response::Message::Request { request, channel, .. } => self.on_request(peer, p, request, channel, now),
                    request_response::Message::Response { response, .. } => match WireResponse::decode(&response) {
                        Ok(WireResponse::Entries { req, entries, more }) => {
                            debug!(%peer, req, entries = entries.len(), more, "range received");
                            match self.check_tx.try_send(CheckJob { peer: p, req, entries, more }) {
                                Ok(()) => {}
                                // The workers are behind (never more than the
                                // requests in flight, normally): check here.
                                Err(std_mpsc::TrySendError::Full(job) | std_mpsc::TrySendError::Disconnected(job)) => {
                                    self.rep.handle(p, Message::Response { req: job.req, entries: job.entries, more: job.more }, now)
                                }
                            }
                        }
                        Ok(WireResponse::Ack | WireResponse::Busy) => {}
                        Ok(WireResponse::WrongWorkspace) => self.mark_foreign(peer, p),
                        Err(e) => {
                            self.counters.invalid_wire += 1;
                            self.rep.report_invalid(p, format!("response: {e}"), now);
                        }
                    },
                }
            }
            request_response::Event::OutboundFailure { peer, error, .. } => debug!(%peer, "sync request failed: {error}"),
            request_response::Event::InboundFailure { peer, error, .. } => debug!(%peer, "sync response failed: {error}"),
            request_response::Event::ResponseSent { .. } => {}
        }
    }

    fn on_request(
        &mut self,
        peer: libp2p::PeerId,
        p: PeerId,
        bytes: Vec<u8>,
        channel: request_response::ResponseChannel<Vec<u8>>,
        now: u64,
    ) {
        let request = match WireRequest::decode(&bytes) {
            Ok(r) => r,
            Err(e) => {
                self.counters.invalid_wire += 1;
                self.rep.report_invalid(p, format!("request: {e}"), now);
                return;
            }
        };
        if request.workspace() != self.ctx.workspace {
            self.counters.wrong_workspace += 1;
            let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::WrongWorkspace.encode());
            return;
        }
        match request.into_message() {
            Message::Request { req, author, from_seq, limit } => {
                if self.pending_responses.len() >= PENDING_RESPONSES_MAX {
                    let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Busy.encode());
                    return;
                }
                self.pending_responses.insert((p, req), (channel, Instant::now()));
                self.rep.handle(p, Message::Request { req, author, from_seq, limit }, now);
            }
            frontier => {
                let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Ack.encode());
                self.rep.handle(p, frontier, now);
            }
        }
        let _ = peer;
    }

    fn mark_foreign(&mut self, peer: libp2p::PeerId, p: PeerId) {
        info!(%peer, "peer is in another workspace; not replicating with it");
        self.foreign.insert(peer);
        self.rep.disconnected(p);
        let _ = self.swarm.disconnect_peer_id(peer);
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
                    let Some(peer) = self.peers_by_id.get(&p).copied() else { continue };
                    if let Message::Request { req, author, from_seq, .. } = &message {
                        debug!(%peer, req, %author, from_seq, "requesting a range");
                    }
                    if let Ok(request) = WireRequest::from_message(self.ctx.workspace, message) {
                        self.swarm.behaviour_mut().sync.send_request(&peer, request.encode());
                    }
                }
                Output::Import { from, entries, relayed } => {
                    let first = entries.first().map(|(e, _)| (e.header().author, e.header().seq));
                    if let Err(std_mpsc::TrySendError::Full(_)) = self.write_tx.try_send(WriteJob::Import { from, entries, relayed }) {
                        // Verified but not stored: asked for again.
                        self.counters.imports_shed += 1;
                        let now = self.now_ms();
                        self.rep.import_done(now);
                        if let Some((author, seq)) = first {
                            self.rep.import_lost(author, seq, now);
                        }
                    }
                }
                Output::Serve { peer, req, author, from_seq, limit } => {
                    if let Err(std_mpsc::TrySendError::Full(_)) = self.read_tx.try_send(ReadJob::Serve { peer, req, author, from_seq, limit })
                        && let Some((channel, _)) = self.pending_responses.remove(&(peer, req))
                    {
                        let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Busy.encode());
                    }
                }
                Output::Decline { peer, req } => {
                    if let Some((channel, _)) = self.pending_responses.remove(&(peer, req)) {
                        let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Busy.encode());
                    }
                }
                Output::Ban { peer, reason, until_ms } => self.ban(peer, reason, until_ms),
                Output::Refused { peer, author, what } => {
                    debug!(peer = peer.0, %author, what, "refused: author not admitted to the workspace");
                }
            }
        }
    }

    fn ban(&mut self, p: PeerId, reason: String, until_ms: u64) {
        let Some(peer) = self.peers_by_id.get(&p).copied() else { return };
        warn!(%peer, %reason, "banning peer");
        let until = self.started + Duration::from_millis(until_ms);
        self.blocked_until.insert(peer, until);
        self.swarm.behaviour_mut().blocked.block_peer(peer);
        self.swarm.behaviour_mut().gossip.blacklist_peer(&peer);
        let _ = self.swarm.disconnect_peer_id(peer);
        self.pending_responses.retain(|(q, _), _| *q != p);
        if self.recent_bans.len() >= RECENT_BANS_MAX {
            self.recent_bans.pop_front();
        }
        self.recent_bans.push_back(json!({ "peer_id": peer.to_string(), "reason": reason, "for_ms": until_ms.saturating_sub(self.now_ms()) }));
    }

    fn on_done(&mut self, done: Done) {
        let now = self.now_ms();
        if matches!(done, Done::Unlinked { .. } | Done::Invalid { .. } | Done::Imported { .. } | Done::ImportFailed { .. }) {
            // The store finished an import: its slot is free.
            self.rep.import_done(now);
        }
        match done {
            Done::Served { peer, req, entries, more } => self.rep.respond(peer, req, entries, more),
            Done::ServeFailed { peer, req, error } => {
                warn!(peer = peer.0, req, "serving a range failed: {error}");
                if let Some((channel, _)) = self.pending_responses.remove(&(peer, req)) {
                    let _ = self.swarm.behaviour_mut().sync.send_response(channel, WireResponse::Busy.encode());
                }
            }
            Done::Unlinked { from, author, seq } => {
                debug!(peer = from.0, %author, seq, "entries do not link to what is stored");
                self.rep.import_failed(from, author, seq, now)
            }
            // A relay checked the signature, not the link: the author is at fault.
            Done::Invalid { from, author, seq, reason, relayed: true } => {
                self.counters.relayed_refused += 1;
                debug!(peer = from.0, "refused a relayed entry: {reason}");
                self.rep.import_lost(author, seq, now);
            }
            Done::Invalid { from, author, seq, reason, relayed: false } => {
                self.rep.report_invalid(from, reason, now);
                self.rep.import_lost(author, seq, now);
            }
            Done::Checked { peer, req, checked, more } => self.rep.handle_checked_response(peer, req, checked, more, now),
            Done::Imported { count } => {
                debug!(count, "imported");
                self.counters.entries_imported += count as u64
            }
            Done::ImportFailed { author, seq, error } => {
                warn!("storing entries failed: {error}");
                self.rep.import_lost(author, seq, now);
            }
        }
    }

    /// A write was committed (a local command, or an import).
    fn on_commit(&mut self, notice: CommitNotice) {
        let now = self.now_ms();
        let local = self.ctx.agent;
        let mut authors: BTreeSet<AgentId> = notice.entries.iter().map(|(e, _)| e.header().author).collect();
        authors.extend(notice.forks.iter().map(|(a, _)| *a));
        if notice.appended {
            for (e, payload) in &notice.entries {
                if e.header().author == local {
                    self.publish(Gossip::for_entry(e, payload.as_deref()));
                }
            }
        }
        for (author, seq) in &notice.forks {
            self.publish_fork_proof(author, *seq);
        }
        let roster_changed = notice.entries.iter().any(|(e, p)| {
            e.header().author == self.ctx.founder && p.as_deref().is_some_and(agora_roster::RosterEvent::is_roster_payload)
        }) || notice.forks.iter().any(|(a, _)| *a == self.ctx.founder)
            // A payload filled in or redacted may be a roster entry's.
            || !notice.payloads_changed.is_empty();
        for author in authors {
            match heads_of(&self.ctx.store, &author) {
                Ok(heads) => self.rep.set_local_heads(author, heads, now),
                Err(e) => warn!(%author, "reading tips: {e}"),
            }
        }
        if roster_changed {
            self.refresh_roster();
        }
    }

    fn publish(&mut self, g: Gossip) {
        let topic = self.topic.clone();
        match self.swarm.behaviour_mut().gossip.publish(topic, g.encode()) {
            Ok(_) => self.counters.gossip_published += 1,
            // Alone, or no subscription seen yet: peers catch up through
            // frontiers on connect.
            Err(e) => debug!("gossip publish: {e}"),
        }
    }

    fn publish_fork_proof(&mut self, author: &AgentId, seq: u64) {
        match self.ctx.store.fork_proofs(Some(author)) {
            Ok(proofs) => {
                for proof in proofs.into_iter().filter(|p| p.seq() == seq) {
                    warn!(%author, seq, "fork proven; gossiping the proof");
                    self.publish(Gossip::ForkProof(proof.encode()));
                }
            }
            Err(e) => warn!(%author, "reading fork proofs: {e}"),
        }
    }

    fn on_tick(&mut self, missed: &AtomicBool) {
        let now = self.now_ms();
        if missed.swap(false, Ordering::Relaxed) {
            // Notices were dropped while the loop was busy: resync.
            self.counters.commits_missed += 1;
            match all_heads(&self.ctx.store) {
                Ok(heads) => self.rep.set_local_frontier(heads, now),
                Err(e) => warn!("reading tips: {e}"),
            }
            self.ctx.graph.invalidate();
            self.refresh_roster();
        }
        self.rep.handle_timeout(now);
        let expired: Vec<libp2p::PeerId> =
            self.blocked_until.iter().filter(|(_, until)| **until <= Instant::now()).map(|(p, _)| *p).collect();
        for peer in expired {
            self.blocked_until.remove(&peer);
            self.swarm.behaviour_mut().blocked.unblock_peer(peer);
        }
        // Inbound requests the store never answered (a shed job): let them go.
        self.pending_responses.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(60));
        if let Some(bar) = &self.progress {
            let (lag, _) = self.lag();
            if lag > 0 {
                bar.set_length(self.counters.entries_imported + lag);
                bar.set_position(self.counters.entries_imported);
            } else {
                bar.set_length(self.counters.entries_imported.max(1));
                bar.set_position(self.counters.entries_imported.max(1));
            }
        }
    }

    /// Entries connected peers announced that we do not hold, in all and by peer.
    fn lag(&self) -> (u64, BTreeMap<PeerId, u64>) {
        let ours: BTreeMap<AgentId, u64> = {
            let mut m = BTreeMap::new();
            for h in self.rep.local_heads() {
                let e = m.entry(h.author).or_insert(0);
                *e = (*e).max(h.seq);
            }
            m
        };
        let mut best: BTreeMap<AgentId, u64> = BTreeMap::new();
        let mut per_peer = BTreeMap::new();
        for p in self.rep.peers() {
            let mut lag = 0u64;
            let mut theirs: BTreeMap<AgentId, u64> = BTreeMap::new();
            for h in self.rep.peer_frontier(p) {
                let e = theirs.entry(h.author).or_insert(0);
                *e = (*e).max(h.seq);
            }
            for (a, s) in theirs {
                let mine = ours.get(&a).copied().unwrap_or(0);
                lag += s.saturating_sub(mine);
                let b = best.entry(a).or_insert(0);
                *b = (*b).max(s);
            }
            per_peer.insert(p, lag);
        }
        let total = best.iter().map(|(a, s)| s.saturating_sub(ours.get(a).copied().unwrap_or(0))).sum();
        (total, per_peer)
    }

    fn status(&mut self) -> Value {
        let (lag, per_peer) = self.lag();
        let peers: Vec<Value> = self
            .rep
            .peers()
            .into_iter()
            .filter_map(|p| self.peers_by_id.get(&p).map(|id| (p, *id)))
            .map(|(p, id)| json!({ "peer_id": id.to_string(), "lag_entries": per_peer.get(&p).copied().unwrap_or(0) }))
            .collect();
        let mut frontier: BTreeMap<AgentId, Vec<Head>> = BTreeMap::new();
        for h in self.rep.local_heads() {
            frontier.entry(h.author).or_default().push(h);
        }
        let frontier: Vec<Value> = frontier
            .iter()
            .map(|(a, tips)| {
                json!({
                    "author": a.to_string(),
                    "max_seq": tips.iter().map(|t| t.seq).max().unwrap_or(0),
                    "forked": tips.len() > 1,
                    "tips": tips.iter().map(|t| json!({ "seq": t.seq, "id": t.id.to_string() })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let stats = self.rep.stats().clone();
        let gossip = &self.swarm.behaviour().gossip;
        let mesh = gossip.mesh_peers(&self.topic.hash()).count();
        let topic_peers = gossip.all_peers().filter(|(_, topics)| topics.contains(&&self.topic.hash())).count();
        let local = *self.swarm.local_peer_id();
        json!({
            "peer_id": local.to_string(),
            "agent": self.ctx.agent.to_string(),
            "listen": self.listen.iter().map(|a| format!("{a}/p2p/{local}")).collect::<Vec<_>>(),
            "workspace": { "name": self.ctx.config.workspace, "id": self.ctx.workspace.to_string(), "founder": self.ctx.founder.to_string(), "members": self.roster_members },
            "uptime_ms": self.now_ms(),
            "store_memory": self.ctx.store.memory_usage().ok(),
            "peers": peers,
            "frontier": frontier,
            "sync": {
                "lag_entries": lag,
                "in_flight": self.rep.in_flight(),
                "held_responses": self.rep.held(),
                "pending_imports": self.rep.pending_imports(),
                "entries_imported": self.counters.entries_imported,
                "entries_verified": stats.entries_verified,
                "imports_shed": self.counters.imports_shed,
            },
            "rejected": {
                "bans": stats.bans,
                "refused_not_admitted": stats.refused_not_admitted,
                "rate_limited": stats.rate_limited,
                "gossip_rejected": stats.gossip_rejected,
                "requests_shed": stats.requests_shed,
                "malformed_messages": self.counters.invalid_wire,
                "relayed_entries_refused": self.counters.relayed_refused,
                "wrong_workspace": self.counters.wrong_workspace,
                "recent_bans": self.recent_bans.iter().cloned().collect::<Vec<_>>(),
            },
            "gossip": { "mesh_peers": mesh, "topic_peers": topic_peers, "published": self.counters.gossip_published, "received": self.counters.gossip_received },
            "commit_notices_missed": self.counters.commits_missed,
        })
    }
}
