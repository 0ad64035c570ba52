//! Who the node talks to: libp2p peer ids and the replicator's small peer
//! numbers, the bootstrap addresses, peers found to be in another
//! workspace, and the bans in force (carried out in `peers.rs`).
//!
//! The book is bounded whatever peers do: a connected peer's entry lives
//! while it is connected (the connection limits bound those); a peer that
//! left is remembered for [`LEFT_PEER_KEPT`], at most
//! [`LEFT_PEERS_MAX`] of them; foreign peers for [`FOREIGN_PEER_KEPT`], at
//! most [`FOREIGN_PEERS_MAX`]; bans until they end, at most [`BANS_MAX`].
//! Identities are free to make, so each of these would otherwise grow with
//! every identity that ever connected.

use agora_sync::PeerId;
use libp2p::Multiaddr;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// A lost bootstrap peer is dialled again after this, doubling on each
/// failure up to `REDIAL_MAX` (`peers.rs`): a partition longer than TCP
/// keeps its connections, or a peer restarted, is joined again without a
/// restart here.
pub(super) const REDIAL_FIRST: Duration = Duration::from_secs(2);
/// A peer that left keeps its number this long, so one that comes back
/// soon (a restart, a blip) is the same peer to the replicator, whose record
/// of past peers (strikes, entries delivered) is kept by number.
pub const LEFT_PEER_KEPT: Duration = Duration::from_secs(3600);
/// Peers that left remembered at once; past it the longest gone is
/// forgotten. As many as the replicator keeps records of.
pub const LEFT_PEERS_MAX: usize = 4096;
/// A peer found to be in another workspace is not dialled for this long
/// (it may have been reconfigured since).
pub const FOREIGN_PEER_KEPT: Duration = Duration::from_secs(3600);
/// Foreign peers remembered at once; past it the oldest is forgotten (and
/// would be found foreign again on its next connection).
pub const FOREIGN_PEERS_MAX: usize = 1024;
/// Bans in force at once; past it the one ending soonest is lifted early
/// (a banned identity is one made for nothing, most likely: another costs
/// the attacker as little).
pub const BANS_MAX: usize = 4096;

/// A bootstrap address, the peer found there, and when to dial it again.
pub struct Bootstrap {
    pub(super) addr: Multiaddr,
    /// The peer a dial of this address reached (from the address's `/p2p/`
    /// part, or learned from the first connection).
    pub(super) peer: Option<libp2p::PeerId>,
    /// The dial in flight, if any.
    pub(super) dialing: Option<libp2p::swarm::ConnectionId>,
    pub(super) next_dial: Instant,
    pub(super) backoff: Duration,
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
    /// Peers whose last connection closed, and when.
    left: HashMap<libp2p::PeerId, Instant>,
    /// Peers in another workspace, never replicated with, and since when.
    pub(super) foreign: HashMap<libp2p::PeerId, Instant>,
    /// Banned peers, blocked in the swarm until then.
    pub blocked_until: HashMap<libp2p::PeerId, Instant>,
    pub recent_bans: VecDeque<Value>,
}

/// The key of `map`'s smallest value.
pub(super) fn oldest<V: Ord + Copy>(map: &HashMap<libp2p::PeerId, V>) -> Option<libp2p::PeerId> {
    map.iter().min_by_key(|(_, v)| **v).map(|(k, _)| *k)
}

impl PeerBook {
    /// The replicator's number for a libp2p peer, given on first sight (or
    /// kept from its last connection, if it left recently).
    pub fn number(&mut self, id: libp2p::PeerId) -> PeerId {
        self.left.remove(&id);
        if let Some(p) = self.ids.get(&id) {
            return *p;
        }
        self.next += 1;
        let p = PeerId(self.next);
        self.ids.insert(id, p);
        self.by_number.insert(p, id);
        p
    }

    /// The peer's last connection closed: its number is kept for a while,
    /// and the book forgets the peers that left longest ago.
    pub fn left(&mut self, id: libp2p::PeerId, now: Instant) {
        if self.ids.contains_key(&id) {
            self.left.insert(id, now);
        }
        self.prune(now);
    }

    /// Forget what has expired, and the oldest past each bound.
    pub fn prune(&mut self, now: Instant) {
        let gone: Vec<libp2p::PeerId> = self.left.iter().filter(|(_, t)| now.duration_since(**t) >= LEFT_PEER_KEPT).map(|(p, _)| *p).collect();
        for p in gone {
            self.forget(p);
        }
        while self.left.len() > LEFT_PEERS_MAX {
            let Some(p) = oldest(&self.left) else { break };
            self.forget(p);
        }
        self.foreign.retain(|_, since| now.duration_since(*since) < FOREIGN_PEER_KEPT);
        while self.foreign.len() > FOREIGN_PEERS_MAX {
            let Some(p) = oldest(&self.foreign) else { break };
            self.foreign.remove(&p);
        }
    }

    fn forget(&mut self, id: libp2p::PeerId) {
        self.left.remove(&id);
        if let Some(p) = self.ids.remove(&id) {
            self.by_number.remove(&p);
        }
    }

    /// Peers the book holds a number for (connected, or left recently).
    pub fn numbered(&self) -> usize {
        self.ids.len()
    }

    /// Is this peer known to be in another workspace?
    pub fn is_foreign(&self, id: &libp2p::PeerId) -> bool {
        self.foreign.contains_key(id)
    }

    /// Peers known to be in another workspace.
    pub fn foreign_count(&self) -> usize {
        self.foreign.len()
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
        !self.blocked_until.contains_key(id) && !self.foreign.contains_key(id)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_book_forgets_peers_that_left_and_stays_bounded() {
        let mut book = PeerBook::default();
        let t0 = Instant::now();
        let stayed = libp2p::PeerId::random();
        let n = book.number(stayed);
        // One that comes back soon is the same peer.
        let back = libp2p::PeerId::random();
        let first = book.number(back);
        book.left(back, t0);
        assert_eq!(book.number(back), first);
        book.left(back, t0);
        // A flood of identities that connect once and leave.
        for i in 0..LEFT_PEERS_MAX + 100 {
            let sybil = libp2p::PeerId::random();
            book.number(sybil);
            book.left(sybil, t0 + Duration::from_millis(1 + i as u64));
        }
        assert_eq!(book.numbered(), LEFT_PEERS_MAX + 1, "the connected peer and the newest that left");
        assert_eq!(book.known(&stayed), Some(n), "a connected peer keeps its number");
        assert_eq!(book.known(&back), None, "the longest gone is forgotten first");
        // Gone long enough: forgotten.
        book.prune(t0 + LEFT_PEER_KEPT + Duration::from_secs(LEFT_PEERS_MAX as u64));
        assert_eq!(book.numbered(), 1, "only the connected peer");
    }

    #[test]
    fn foreign_peers_are_remembered_for_a_while_and_bounded() {
        let mut book = PeerBook::default();
        let t0 = Instant::now();
        let first = libp2p::PeerId::random();
        book.foreign.insert(first, t0);
        for i in 0..FOREIGN_PEERS_MAX {
            book.foreign.insert(libp2p::PeerId::random(), t0 + Duration::from_millis(1 + i as u64));
        }
        book.prune(t0);
        assert_eq!(book.foreign_count(), FOREIGN_PEERS_MAX);
        assert!(!book.is_foreign(&first) && book.dialable(&first), "the oldest forgotten first");
        book.prune(t0 + FOREIGN_PEER_KEPT + Duration::from_secs(10));
        assert_eq!(book.foreign_count(), 0);
    }
}
