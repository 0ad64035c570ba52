//! Who the node talks to: libp2p peer ids and the replicator's small peer
//! numbers, peers found to be in another workspace, dialling, and carrying
//! out bans (the replicator decides them; the swarm enforces them).

use super::Driver;
use agora_sync::PeerId;
use libp2p::Multiaddr;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Bans remembered for `agora node status`.
const RECENT_BANS_MAX: usize = 32;
/// A lost bootstrap peer is dialled again after this, doubling on each
/// failure up to [`REDIAL_MAX`]: a partition longer than TCP keeps its
/// connections, or a peer restarted, is joined again without a restart here.
const REDIAL_FIRST: Duration = Duration::from_secs(2);
/// The longest wait between two dials of one bootstrap address.
const REDIAL_MAX: Duration = Duration::from_secs(30);

/// A bootstrap address, the peer found there, and when to dial it again.
pub struct Bootstrap {
    addr: Multiaddr,
    /// The peer a dial of this address reached (from the address's `/p2p/`
    /// part, or learned from the first connection).
    peer: Option<libp2p::PeerId>,
    /// The dial in flight, if any.
    dialing: Option<libp2p::swarm::ConnectionId>,
    next_dial: Instant,
    backoff: Duration,
}

impl Bootstrap {
    pub fn new(addr: Multiaddr) -> Self {
        let peer = match addr.iter().last() {
            Some(libp2p::multiaddr::Protocol::P2p(peer)) => Some(peer),
            _ => None,
        };
        Self { addr, peer, dialing: None, next_dial: Instant::now(), backoff: REDIAL_FIRST }
    }
}

/// The node's peers as libp2p and the replicator name them.
#[derive(Default)]
pub struct PeerBook {
    ids: HashMap<libp2p::PeerId, PeerId>,
    by_number: HashMap<PeerId, libp2p::PeerId>,
    next: u64,
    /// Peers in another workspace: never replicated with.
    pub foreign: BTreeSet<libp2p::PeerId>,
    /// Banned peers, blocked in the swarm until then.
    pub blocked_until: HashMap<libp2p::PeerId, Instant>,
    pub recent_bans: VecDeque<Value>,
}

impl PeerBook {
    /// The replicator's number for a libp2p peer, given on first sight.
    pub fn number(&mut self, id: libp2p::PeerId) -> PeerId {
        if let Some(p) = self.ids.get(&id) {
            return *p;
        }
        self.next += 1;
        let p = PeerId(self.next);
        self.ids.insert(id, p);
        self.by_number.insert(p, id);
        p
    }

    /// The number of a peer seen before.
    pub fn known(&self, id: &libp2p::PeerId) -> Option<PeerId> {
        self.ids.get(id).copied()
    }

    /// The libp2p id behind a number.
    pub fn libp2p(&self, p: PeerId) -> Option<libp2p::PeerId> {
        self.by_number.get(&p).copied()
    }

    /// May the node dial this peer (not banned, not in another workspace)?
    pub fn dialable(&self, id: &libp2p::PeerId) -> bool {
        !self.blocked_until.contains_key(id) && !self.foreign.contains(id)
    }
}

impl Driver {
    /// Dial every bootstrap address whose peer is not connected (nor banned,
    /// nor in another workspace) and whose wait is over: at start, and on
    /// every tick after, so a lost bootstrap peer is joined again.
    pub(super) fn dial_bootstraps(&mut self) {
        let now = Instant::now();
        let mut dialled = false;
        for i in 0..self.bootstrap.len() {
            let b = &self.bootstrap[i];
            let connected = b.peer.is_some_and(|p| self.swarm.is_connected(&p) || !self.peers.dialable(&p));
            if connected || b.dialing.is_some() || b.next_dial > now {
                continue;
            }
            let addr = b.addr.clone();
            if let Some(peer) = b.peer {
                self.swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
            }
            let opts = libp2p::swarm::dial_opts::DialOpts::unknown_peer_id().address(addr.clone()).build();
            let id = opts.connection_id();
            let b = &mut self.bootstrap[i];
            b.next_dial = now + b.backoff;
            b.backoff = (b.backoff * 2).min(REDIAL_MAX);
            match self.swarm.dial(opts) {
                Ok(()) => {
                    b.dialing = Some(id);
                    dialled = true;
                }
                Err(e) => warn!(%addr, "cannot dial bootstrap peer: {e}"),
            }
        }
        if dialled {
            let _ = self.swarm.behaviour_mut().kad.bootstrap();
        }
    }

    /// A connection came up: if it is a bootstrap dial's, remember the peer
    /// and start the next wait afresh.
    pub(super) fn bootstrap_connected(&mut self, id: libp2p::swarm::ConnectionId, peer: libp2p::PeerId) {
        for b in self.bootstrap.iter_mut().filter(|b| b.dialing == Some(id) || b.peer == Some(peer)) {
            if b.dialing == Some(id) {
                b.dialing = None;
                b.peer.get_or_insert(peer);
            }
            b.backoff = REDIAL_FIRST;
        }
    }

    /// A dial failed: if it was a bootstrap dial, its wait (already set
    /// when it was dialled) runs before the next.
    pub(super) fn bootstrap_failed(&mut self, id: libp2p::swarm::ConnectionId) {
        for b in self.bootstrap.iter_mut().filter(|b| b.dialing == Some(id)) {
            b.dialing = None;
        }
    }

    /// Carry out a ban the replicator decided.
    pub(super) fn ban(&mut self, p: PeerId, reason: String, until_ms: u64) {
        let Some(peer) = self.peers.libp2p(p) else { return };
        warn!(%peer, %reason, "banning peer");
        let until = self.started + Duration::from_millis(until_ms);
        self.peers.blocked_until.insert(peer, until);
        self.swarm.behaviour_mut().blocked.block_peer(peer);
        self.swarm.behaviour_mut().gossip.blacklist_peer(&peer);
        let _ = self.swarm.disconnect_peer_id(peer);
        self.pending_responses.retain(|(q, _), _| *q != p);
        if self.peers.recent_bans.len() >= RECENT_BANS_MAX {
            self.peers.recent_bans.pop_front();
        }
        let for_ms = until_ms.saturating_sub(self.now_ms());
        self.peers.recent_bans.push_back(json!({ "peer_id": peer.to_string(), "reason": reason, "for_ms": for_ms }));
    }

    /// Lift the swarm's block of peers whose ban ended.
    pub(super) fn unblock_expired(&mut self) {
        let now = Instant::now();
        let expired: Vec<libp2p::PeerId> = self.peers.blocked_until.iter().filter(|(_, until)| **until <= now).map(|(p, _)| *p).collect();
        for peer in expired {
            self.peers.blocked_until.remove(&peer);
            self.swarm.behaviour_mut().blocked.unblock_peer(peer);
        }
    }

    /// The peer answered `WrongWorkspace`: stop replicating with it.
    pub(super) fn mark_foreign(&mut self, peer: libp2p::PeerId, p: PeerId) {
        info!(%peer, "peer is in another workspace; not replicating with it");
        self.peers.foreign.insert(peer);
        self.rep.disconnected(p);
        let _ = self.swarm.disconnect_peer_id(peer);
    }
}
