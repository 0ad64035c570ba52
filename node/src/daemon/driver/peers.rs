//! The driver's dealings with peers: dialling the bootstrap addresses again
//! when they are lost, carrying out bans (the replicator decides them; the
//! swarm enforces them) and leaving peers of another workspace. Who the
//! peers are, by libp2p id and by the replicator's number, and what is
//! remembered of them, is the book's (`peer_book.rs`).

use super::Driver;
use super::peer_book::{BANS_MAX, REDIAL_FIRST, oldest};
use agora_sync::PeerId;
use serde_json::json;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Bans remembered for `agora node status`.
const RECENT_BANS_MAX: usize = 32;
/// The longest wait between two dials of one bootstrap address.
const REDIAL_MAX: Duration = Duration::from_secs(30);

impl Driver {
    /// Dial every bootstrap address whose peer is not connected (nor banned,
    /// nor in another workspace) and whose wait is over: at start, and on
    /// every tick after, so a lost bootstrap peer is joined again.
    pub(super) fn dial_bootstraps(&mut self) {
        let now = Instant::now();
        for i in 0..self.bootstrap.len() {
            let b = &self.bootstrap[i];
            let connected = b.peer.is_some_and(|p| self.swarm.is_connected(&p) || !self.peers.dialable(&p));
            if connected || b.dialing.is_some() || b.next_dial > now {
                continue;
            }
            let addr = b.addr.clone();
            let opts = libp2p::swarm::dial_opts::DialOpts::unknown_peer_id().address(addr.clone()).build();
            let id = opts.connection_id();
            let b = &mut self.bootstrap[i];
            b.next_dial = now + b.backoff;
            b.backoff = (b.backoff * 2).min(REDIAL_MAX);
            match self.swarm.dial(opts) {
                Ok(()) => b.dialing = Some(id),
                Err(e) => warn!(%addr, "cannot dial bootstrap peer: {e}"),
            }
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
        while self.peers.blocked_until.len() >= BANS_MAX && !self.peers.blocked_until.contains_key(&peer) {
            let Some(lifted) = oldest(&self.peers.blocked_until) else { break };
            self.peers.blocked_until.remove(&lifted);
            self.swarm.behaviour_mut().blocked.unblock_peer(lifted);
        }
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

    /// Lift the swarm's block of peers whose ban ended; forget what the
    /// book keeps past its time.
    pub(super) fn unblock_expired(&mut self) {
        let now = Instant::now();
        self.peers.prune(now);
        let expired: Vec<libp2p::PeerId> = self.peers.blocked_until.iter().filter(|(_, until)| **until <= now).map(|(p, _)| *p).collect();
        for peer in expired {
            self.peers.blocked_until.remove(&peer);
            self.swarm.behaviour_mut().blocked.unblock_peer(peer);
        }
    }

    /// The peer answered `WrongWorkspace`: stop replicating with it.
    pub(super) fn mark_foreign(&mut self, peer: libp2p::PeerId, p: PeerId) {
        info!(%peer, "peer is in another workspace; not replicating with it");
        let now = Instant::now();
        self.peers.foreign.insert(peer, now);
        self.peers.prune(now);
        self.rep.disconnected(p);
        let _ = self.swarm.disconnect_peer_id(peer);
    }
}
