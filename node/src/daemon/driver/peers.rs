//! Who the node talks to: libp2p peer ids and the replicator's small peer
//! numbers, peers found to be in another workspace, dialling, and carrying
//! out bans (the replicator decides them; the swarm enforces them).

use super::Driver;
use agora_sync::PeerId;
use libp2p::Multiaddr;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Bans remembered for `agora node status`.
const RECENT_BANS_MAX: usize = 32;

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
    pub(super) fn dial_bootstrap(&mut self, addr: Multiaddr) {
        if let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() {
            self.swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
        }
        if let Err(e) = self.swarm.dial(addr.clone()) {
            warn!(%addr, "cannot dial bootstrap peer: {e}");
        }
        let _ = self.swarm.behaviour_mut().kad.bootstrap();
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
