//! The replication state machine: [`Replicator`], its state and the driver's
//! entry points that dispatch (messages, timeouts, polling). Each concern
//! lives in a file of its own: `config` (limits), `outputs` (what the driver
//! is told), `membership` (the roster), `frontier` (local tips and peers'
//! claims), `peers` (records, bans, rate limits), `planning` (which range of
//! whom), `responses` (serving and checking ranges), `check` (a response's
//! entries checked off the loop), `imports` (handing entries to the store),
//! `payloads` (missing payloads), `gossip`. The state those keep (a request
//! in flight, a held response, a missing payload, a peer's record) is
//! declared in `state`, below this file: the concerns know the
//! `Replicator` and their state, and neither knows them.

use crate::limiter::TokenBucket;
use crate::tips::Tips;
use crate::wire::{Gossip, Head, Message, RangeStart, WireEntry};
use agora_core::verify::check_entries as check_signed_entries;
use agora_core::{AgentId, EntryId, EntryRef, ForkProof, SignedEntry};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

mod check;
mod commit;
mod config;
mod frontier;
mod gossip;
mod imports;
mod membership;
mod outputs;
mod payloads;
mod peers;
mod planning;
mod responses;
mod state;

pub use check::{RESPONSE_ENTRIES_MAX, check_entries};
pub use commit::Commit;
pub use config::Config;
pub use outputs::{CheckError, GossipVerdict, ImportOutcome, Lag, Output, PeerId, ServeRequest, Stats, VerifiedEntry};

use frontier::merge_head;
use state::{Held, Importing, InFlight, Missing, PeerState, Purpose};

/// Most peers a range is asked of at once after a request for it timed out:
/// one of them withholding cannot stall it a second time.
pub const RETRY_FANOUT_MAX: usize = 8;

/// Changed tips are announced at most this often: the first change at once,
/// later ones within the interval together, when it ends. A node that
/// imports thousands of entries a second (a relay under a burst) sends its
/// peers a few frontiers a second, not one per entry, and so never exceeds
/// their rate limits with honest traffic.
pub const ANNOUNCE_INTERVAL_MS: u64 = 200;

/// Most disconnected peers whose record is remembered.
const PAST_PEERS_MAX: usize = 4_096;

/// How long a peer that answered `Busy` is left alone, and the longest a
/// `Wait` answer keeps it so.
pub const BUSY_BACKOFF_MS: u64 = 1_000;

/// The shortest a `Wait` answer keeps a peer alone, whatever it says: a peer
/// that says 0 is asked at most `in_flight_per_peer` requests this often.
pub const WAIT_MIN_MS: u64 = 100;

/// Most ranges remembered as "timed out once", to be fanned out when asked again.
const RETRIED_MAX: usize = 1_024;

/// A payload reported unavailable is asked for again, `payload_tries_max`
/// more times, this many request timeouts later (and so on while it is
/// missing): a peer that holds it may connect, or its claims come back, later.
const PAYLOAD_RETRY_SLOW_TIMEOUTS: u64 = 10;

/// Most per-author gossip budgets kept while no roster bounds the authors.
const AUTHOR_BUCKETS_MAX: usize = 16_384;

/// Most branch heads remembered as already fetched.
const SOUGHT_MAX: usize = 100_000;

/// A branch head asked for and still not held may be asked for again after
/// this many request timeouts: its fetch can be lost without an answer
/// that says so (its range resumed from a peer that left, a backfill cut
/// short by another branch), and a claim of a connected peer must not stay
/// unfetched for ever. Rare enough that announcements cannot make a node
/// ask for one head more than once in a while.
const SOUGHT_RETRY_TIMEOUTS: u64 = 4;

/// Most entry ids remembered per peer as held by it (entries it sent us):
/// our new heads among them are not announced back to it.
const PEER_HOLDS_MAX: usize = 64;

/// Most ranges remembered to be asked for again once the entries below them
/// are stored (see `Replicator::resume`).
const RESUME_MAX: usize = 256;

/// `behind` (authors some peer may hold more of) is pruned of caught-up
/// authors once it reaches twice its size after the last pruning, and never
/// below this many.
const BEHIND_PRUNE_MIN: usize = 4_096;

/// A peer's measured rate (entries new to us per millisecond of its
/// requests' time) counts the recent past: once its time passes this, both
/// its entries and its time are halved.
const RATE_WINDOW_MS: u64 = 60_000;

/// Tips passed remembered per author held (a peer that lags claims one of
/// them until it announces its own new tips; it is not probed as a branch).
const PASSED_TIPS_MAX: usize = 8;

/// The replication state of one node.
#[derive(Debug)]
pub struct Replicator {
    config: Config,
    /// What the local store holds: tips by author.
    local: BTreeMap<AgentId, Tips>,
    /// Local tips looked at by tip updates, over the replicator's life: a
    /// commit's share follows what it changed (tests read it).
    tips_handled: u64,
    /// Authors whose entries are replicated, each up to a seq (`None`: all);
    /// `None` for the whole map: everyone.
    admitted: Option<BTreeMap<AgentId, Option<u64>>>,
    /// The recoveries the roster binds (agent, boundary, key): a recover
    /// entry none names is refused (`membership.rs`). Given by the driver
    /// from the roster, like `admitted`.
    recoveries: BTreeSet<(AgentId, EntryId, AgentId)>,
    peers: BTreeMap<PeerId, PeerState>,
    banned: BTreeMap<PeerId, u64>,
    in_flight: BTreeMap<u64, InFlight>,
    /// Verified responses held back until the earlier ranges of their author
    /// arrive, by (author, start). Counted against the in-flight limits, so
    /// they bound memory the same way.
    held: BTreeMap<(AgentId, RangeStart), Held>,
    /// Per author, the highest seq handed to the store in an import (of a
    /// response or a gossiped entry) and not yet reported back through
    /// [`Replicator::set_local_heads`]: not asked for again meanwhile.
    importing: BTreeMap<AgentId, u64>,
    /// Ranges whose import failed to link, to be asked for again (from the
    /// same peer) once the backfill below them is stored: (peer, author,
    /// first seq).
    resume: VecDeque<(PeerId, AgentId, u64)>,
    /// Imports handed out and not yet reported. They count against
    /// [`Config::in_flight_max`]: a store slower than the network slows the
    /// requests instead of queueing verified entries without bound.
    imports: BTreeMap<u64, Importing>,
    /// Branch heads (below our highest seq) asked for, with the time they
    /// were: not asked again however often peers announce them, until
    /// [`SOUGHT_RETRY_TIMEOUTS`] request timeouts have passed.
    sought: BTreeMap<EntryId, u64>,
    /// Ranges whose request timed out: the next ask goes to every claimant.
    retried: BTreeSet<(AgentId, u64)>,
    /// Authors whose entries from some seq are dated in the future: not
    /// asked for before the time given.
    deferred: BTreeMap<AgentId, u64>,
    /// Entries held without their payload, being asked of peers.
    missing: BTreeMap<EntryRef, Missing>,
    /// Gossip budgets of authors (admitted authors only).
    author_buckets: BTreeMap<AgentId, TokenBucket>,
    /// Per author, the highest seq accepted from gossip: gossip at or below
    /// it (or below what is held or being imported) is no new tip. Bounded
    /// like `author_buckets`.
    gossiped: BTreeMap<AgentId, u64>,
    /// Fork proofs already published, by (author, seq).
    published_forks: BTreeSet<(AgentId, u64)>,
    /// The record (strikes, entries delivered, time spent) of peers that
    /// disconnected, so that reconnecting does not wash it.
    past: BTreeMap<PeerId, (u32, u64, u64)>,
    /// Authors whose tips changed and are not announced yet.
    pending_announce: BTreeSet<AgentId>,
    /// Authors some peer may hold more of than we do: every author whose
    /// claims (a peer's frontier) or local tips changed since planning last
    /// found it caught up with every claim. Planning looks at these only, so
    /// its cost follows what changed, not how many authors the swarm has
    /// (an author outside it is one [`Replicator::want`] answers `None` for,
    /// whatever the peer). At most the authors claimed by peers or held.
    behind: BTreeSet<AgentId>,
    /// `behind` is pruned when it reaches this size.
    behind_prune_at: usize,
    /// Per author held, the last [`PASSED_TIPS_MAX`] tips we passed: held
    /// entries, so a peer's claim of one is not a branch to probe.
    passed_tips: BTreeMap<AgentId, VecDeque<EntryId>>,
    /// A planning step stopped at a limit (requests in flight, a peer's
    /// share, the output queue) since the last full pass: a slot coming free
    /// then plans everything again. Otherwise every change has planned what
    /// it affects, and a free slot plans only its own author, so that the
    /// cost of an import or a response does not grow with the authors.
    starved: bool,
    /// When tips were last announced.
    last_announce_ms: u64,
    /// The latest time passed in (for decisions made without one).
    clock_ms: u64,
    next_req: u64,
    next_group: u64,
    next_import: u64,
    outputs: VecDeque<Output>,
    stats: Stats,
}

fn max_seq(heads: &[Head]) -> u64 {
    heads.iter().map(|h| h.seq).max().unwrap_or(0)
}

/// Group heads by author, each author's tips sorted and deduplicated.
///
/// Each author's tips are an exact-size vector: the groups are kept (a
/// peer's frontier is held per author for as long as it is connected), and
/// a vector grown by pushing holds room for four heads where almost every
/// author has one: 288 bytes instead of 72, per author per peer.
fn group(mut heads: Vec<Head>) -> BTreeMap<AgentId, Vec<Head>> {
    // Head orders by author, then seq, then id.
    heads.sort_unstable();
    heads.dedup();
    heads.chunk_by(|a, b| a.author == b.author).map(|tips| (tips[0].author, tips.to_vec())).collect()
}

/// Keep the `max` highest-seq tips (ties by id), in (seq, id) order.
fn cap_tips(tips: &mut Vec<Head>, max: usize) -> usize {
    if tips.len() <= max {
        return 0;
    }
    let dropped = tips.len() - max;
    tips.sort_by_key(|h| std::cmp::Reverse((h.seq, h.id)));
    tips.truncate(max);
    tips.sort();
    dropped
}

impl Replicator {
    /// A replicator with nothing known.
    pub fn new(config: Config) -> Self {
        assert!(
            config.range_limit > 0 && config.in_flight_per_peer > 0 && config.in_flight_max > 0 && config.heads_per_author_max > 0,
            "config limits must be positive"
        );
        Self {
            config,
            local: BTreeMap::new(),
            tips_handled: 0,
            admitted: None,
            recoveries: BTreeSet::new(),
            peers: BTreeMap::new(),
            banned: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            held: BTreeMap::new(),
            importing: BTreeMap::new(),
            resume: VecDeque::new(),
            imports: BTreeMap::new(),
            sought: BTreeMap::new(),
            retried: BTreeSet::new(),
            deferred: BTreeMap::new(),
            missing: BTreeMap::new(),
            author_buckets: BTreeMap::new(),
            gossiped: BTreeMap::new(),
            published_forks: BTreeSet::new(),
            past: BTreeMap::new(),
            pending_announce: BTreeSet::new(),
            behind: BTreeSet::new(),
            behind_prune_at: BEHIND_PRUNE_MIN,
            passed_tips: BTreeMap::new(),
            starved: false,
            last_announce_ms: 0,
            clock_ms: 0,
            next_req: 1,
            next_group: 1,
            next_import: 1,
            outputs: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    // ---------------------------------------------------------------------
    // The roster.

    /// A message arrived from `peer`.
    pub fn handle(&mut self, peer: PeerId, message: Message, now_ms: u64) {
        if self.is_banned(peer, now_ms) || !self.peers.contains_key(&peer) {
            return;
        }
        match message {
            Message::Frontier(heads) => {
                if !self.admit_message(peer, now_ms) {
                    return;
                }
                if heads.len() > self.config.frontier_heads_max {
                    return self.ban(peer, format!("frontier of {} heads exceeds the limit", heads.len()), now_ms);
                }
                self.learn_frontier(peer, heads, now_ms);
            }
            Message::Request { req, author, start, limit } => {
                if !self.admit_message(peer, now_ms) {
                    if let Some(s) = self.peers.get(&peer) {
                        // Over its rate: it is told when its window will be served.
                        let window = u32::try_from(self.config.in_flight_per_peer).unwrap_or(u32::MAX);
                        let wait_ms = s.bucket.wait_ms(now_ms, window).map(|ms| u32::try_from(ms).unwrap_or(u32::MAX));
                        self.outputs.push_back(Output::Decline { peer, req, wait_ms });
                    }
                    return;
                }
                if limit == 0 || limit > self.config.range_limit || start.seq == 0 {
                    return self.ban(peer, format!("request {req}: limit {limit} from seq {} out of bounds", start.seq), now_ms);
                }
                if self.outputs.len() >= self.config.outputs_max {
                    // Overloaded: the peer asks again later.
                    self.stats.requests_shed += 1;
                    self.outputs.push_back(Output::Decline { peer, req, wait_ms: None });
                    return;
                }
                // Reads are open to any peer of the workspace, whatever our
                // roster says: ours may lag the peer's (it is itself
                // replicated), and the peer filters what it receives by its own.
                let read_max = RESPONSE_ENTRIES_MAX + 1;
                self.outputs.push_back(Output::Serve(ServeRequest { peer, req, author, start, limit, read_max }));
            }
            Message::Response { req, entries, more } => {
                if !self.in_flight.contains_key(&req) {
                    return; // late or unsolicited: not worth checking
                }
                let checked = check_entries(entries);
                self.on_response(peer, req, checked, more, now_ms)
            }
        }
    }

    /// Time passed: requests slower than their claimants' rates allow are
    /// hedged (asked of another claimant too); requests past their deadline
    /// are struck against the peer they were sent to (its claim of the range
    /// dropped) and asked again of every other peer that claims the range;
    /// expired bans are lifted.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        self.clock_ms = self.clock_ms.max(now_ms);
        let slow: Vec<u64> = self.in_flight.iter().filter(|(_, f)| f.hedge_at_ms <= now_ms && f.deadline_ms > now_ms).map(|(r, _)| *r).collect();
        for req in slow {
            self.hedge(req, now_ms);
        }
        let expired: Vec<(u64, InFlight)> = self.in_flight.iter().filter(|(_, f)| f.deadline_ms <= now_ms).map(|(r, f)| (*r, f.clone())).collect();
        for (req, f) in expired {
            self.in_flight.remove(&req);
            if f.purpose == Purpose::Forward
                && let Some(s) = self.peers.get_mut(&f.peer)
            {
                s.charge(0, now_ms.saturating_sub(f.sent_ms).saturating_sub(f.charged_ms));
            }
            if let Purpose::Branch(tip) = f.purpose {
                // Unanswered: the branch may be fetched again.
                self.sought.remove(&tip);
            }
            if self.peers.contains_key(&f.peer) {
                self.strike(f.peer);
                if let Some(tips) = self.peers.get_mut(&f.peer).and_then(|s| s.frontier.get_mut(&f.author)) {
                    tips.retain(|h| h.seq < f.start.seq);
                }
            }
            if f.purpose == Purpose::Payload {
                self.payload_request_ended(f.author, f.start.seq, now_ms);
            }
            let group_alive = self.in_flight.values().any(|g| g.group == f.group);
            if !group_alive && f.purpose != Purpose::Payload {
                self.mark_retried(f.author, f.start);
            }
        }
        // Held responses whose earlier ranges never came: dropped, asked for
        // again as planned (their slots are needed for the earlier ranges).
        self.held.retain(|_, h| h.deadline_ms > now_ms);
        self.banned.retain(|_, until| *until > now_ms);
        self.deferred.retain(|_, until| *until > now_ms);
        if now_ms >= self.last_announce_ms.saturating_add(ANNOUNCE_INTERVAL_MS) {
            self.flush_announcements(now_ms);
        }
        self.refresh_frontiers(now_ms);
        self.plan_all(now_ms);
    }

    /// When the driver should call [`Replicator::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<u64> {
        let requests = self.in_flight.values().map(|f| f.deadline_ms.min(f.hedge_at_ms)).min();
        let held = self.held.values().map(|h| h.deadline_ms).min();
        let bans = self.banned.values().copied().min();
        let deferred = self.deferred.values().copied().min();
        let payloads = self.missing.values().map(|m| m.next_ms).min();
        let busy = self.peers.values().map(|s| s.busy_until_ms).filter(|t| *t > self.clock_ms).min();
        let announce = (!self.pending_announce.is_empty()).then(|| self.last_announce_ms.saturating_add(ANNOUNCE_INTERVAL_MS));
        let refresh = self.peers.values().map(|s| s.refresh_at_ms).filter(|t| *t != u64::MAX).min();
        [requests, held, bans, deferred, payloads, busy, announce, refresh].into_iter().flatten().min()
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// Requests in flight (for status displays).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Verified responses held back until the ranges before them arrive
    /// (for status displays).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Imports handed out and not yet reported (for status displays).
    pub fn pending_imports(&self) -> usize {
        self.imports.len()
    }

    /// Entries whose payload is being asked of peers.
    pub fn payloads_sought(&self) -> usize {
        self.missing.len()
    }

    /// Counters of refused input.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}
