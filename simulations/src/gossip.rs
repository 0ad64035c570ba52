//! The node's gossip, modelled: libp2p gossipsub as the node configures it
//! ([`agora_sync::gossip`] holds the numbers, used by the node and here),
//! one topic (the workspace's), per simulated node.
//!
//! Each node keeps a mesh among its connected peers: a peer that subscribes
//! (connects) is grafted at once while the mesh is below `D_low`; at each
//! heartbeat peers with a negative score are pruned, a mesh below `D_low`
//! is grafted up to `D` (random peers, not in back-off, not negative), one
//! above `D_high` is pruned to `D` (the best scored kept, the rest random);
//! a GRAFT is taken while the mesh is below `D_high`, else answered with a
//! PRUNE; a pruned peer is in back-off for [`PRUNE_BACKOFF_MS`]. A message
//! the replicator accepted is forwarded to the mesh only (not to its
//! relay); the node's own messages go to every peer on the topic above the
//! publish threshold (flood publish). At each heartbeat the ids of the
//! messages of the last `HISTORY_GOSSIP` heartbeats go in IHAVE to
//! `max(D_lazy, 25 %)` random peers outside the mesh (above the gossip
//! threshold); an IHAVE is answered with IWANT for the ids not seen and not
//! already asked (a promise kept for 3 s), an IWANT with the messages still
//! in the cache (`HISTORY_LENGTH` heartbeats), each sent at most
//! `GOSSIP_RETRANSMISSION` times to one peer. The duplicate cache keeps an
//! id for [`DUPLICATE_CACHE_MS`]: a message seen again later is a new one.
//! Scores: first deliveries (P2) and messages the replicator rejected (P4,
//! squared), decayed every second; below the graylist threshold everything
//! from a peer is ignored. A banned peer is disconnected by the network (as
//! the node's block list does), which takes it out of the mesh.
//!
//! Not modelled: outbound-connection quotas in the mesh (`mesh_outbound_min`,
//! the simulator's connections have no direction), opportunistic grafting,
//! IDONTWANT (gossipsub 1.2, for messages over 1,000 bytes), the behaviour
//! penalty for broken IWANT promises and for grafts in back-off, the
//! signed envelope's bytes around each message, and peer exchange (off in
//! the node).
//!
//! Heartbeats keep their grid (`HEARTBEAT_INITIAL_DELAY_MS` after start,
//! then every `HEARTBEAT_MS`), but one with nothing to do is not run as an
//! event: [`Gossipsub::next_due`] names the next heartbeat that has work,
//! and [`Gossipsub::catch_up`] applies the idle ones (the history shifts,
//! per-heartbeat counters) before anything else happens. So a network with
//! nothing to say settles, as [`crate::Net::run`] needs.

use agora_core::xorshift::Xorshift64;
use agora_sync::gossip::{
    DECAY_INTERVAL_MS, DECAY_TO_ZERO, DUPLICATE_CACHE_MS, FIRST_MESSAGE_DELIVERIES_CAP, FIRST_MESSAGE_DELIVERIES_DECAY, FIRST_MESSAGE_DELIVERIES_WEIGHT,
    GOSSIP_FACTOR_PERCENT, GOSSIP_LAZY, GOSSIP_RETRANSMISSION, GOSSIP_THRESHOLD, GRAYLIST_THRESHOLD, HEARTBEAT_INITIAL_DELAY_MS, HEARTBEAT_MS, HISTORY_GOSSIP,
    HISTORY_LENGTH, INVALID_MESSAGE_DELIVERIES_DECAY, INVALID_MESSAGE_DELIVERIES_WEIGHT, MAX_IHAVE_LENGTH, MAX_IHAVE_MESSAGES, MESH_N, MESH_N_HIGH, MESH_N_LOW,
    PRUNE_BACKOFF_MS, PUBLISH_THRESHOLD, RETAIN_SCORES, TOPIC_WEIGHT,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A gossip message id (SHA-256 of its bytes, as the node's `message_id_fn`).
pub type MessageId = [u8; 32];

/// An IWANT is a promise the peer keeps within this long (gossipsub's
/// `iwant_followup_time`): until then the id is not asked of another.
const IWANT_FOLLOWUP_MS: u64 = 3_000;
/// Idle heartbeats applied at once, at most: past `HISTORY_LENGTH` of them
/// the history is empty, and the counters reset after one.
const CATCH_UP_MAX: u64 = HISTORY_LENGTH as u64 + 1;

/// A gossipsub control message, as it travels (in its own RPC frame).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// "I have these messages."
    IHave(Vec<MessageId>),
    /// "Send me these."
    IWant(Vec<MessageId>),
    /// "You are in my mesh."
    Graft,
    /// "You are out of my mesh; do not graft me for `backoff_s`."
    Prune {
        /// The back-off, seconds.
        backoff_s: u64,
    },
}

/// Bytes of a protobuf varint.
fn varint_len(n: usize) -> usize {
    let mut n = n;
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Bytes of a length-delimited protobuf field holding `n` bytes.
fn field_len(n: usize) -> usize {
    1 + varint_len(n) + n
}

impl Control {
    /// Its bytes on the wire: gossipsub's protobuf (`RPC { control {
    /// ihave | iwant | graft | prune } }`, the topic named as a string)
    /// behind the frame's varint length.
    pub fn wire_len(&self, topic_len: usize) -> usize {
        let ids = |ids: &[MessageId]| ids.len() * field_len(32);
        let inner = match self {
            Control::IHave(v) => field_len(field_len(topic_len) + ids(v)),
            Control::IWant(v) => field_len(ids(v)),
            Control::Graft => field_len(field_len(topic_len)),
            Control::Prune { backoff_s } => field_len(field_len(topic_len) + 1 + varint_len(*backoff_s as usize)),
        };
        let rpc = field_len(inner);
        varint_len(rpc) + rpc
    }
}

/// What a node's gossipsub wants sent: a control message or a message's
/// bytes (an IWANT's answer), to a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outbound {
    /// A control message.
    Control(u64, Control),
    /// A message, by its bytes.
    Message(u64, Vec<u8>),
}

/// A peer's score counters (the parts of gossipsub's score the node weighs).
#[derive(Clone, Copy, Debug, Default)]
struct PeerScore {
    /// First deliveries of valid messages (P2), capped.
    first: f64,
    /// Messages the replicator rejected (P4).
    invalid: f64,
}

impl PeerScore {
    fn score(&self) -> f64 {
        TOPIC_WEIGHT * (self.first * FIRST_MESSAGE_DELIVERIES_WEIGHT + self.invalid * self.invalid * INVALID_MESSAGE_DELIVERIES_WEIGHT)
    }

    fn decay(&mut self) {
        self.first *= FIRST_MESSAGE_DELIVERIES_DECAY;
        self.invalid *= INVALID_MESSAGE_DELIVERIES_DECAY;
        if self.first < DECAY_TO_ZERO {
            self.first = 0.0;
        }
        if self.invalid < DECAY_TO_ZERO {
            self.invalid = 0.0;
        }
    }
}

/// One node's gossipsub state on the workspace topic.
#[derive(Clone, Debug)]
pub struct Gossipsub {
    /// Connected peers (all subscribed to the one topic).
    peers: BTreeSet<u64>,
    /// The mesh: a subset of `peers`.
    mesh: BTreeSet<u64>,
    /// Peers not grafted (nor taken back) until then, ms.
    backoff: BTreeMap<u64, u64>,
    /// The duplicate cache: id → when first seen.
    seen: BTreeMap<MessageId, u64>,
    /// The same ids in the order they were seen, for expiry.
    seen_order: VecDeque<(u64, MessageId)>,
    /// Message ids by heartbeat, newest first (`HISTORY_LENGTH` windows).
    history: VecDeque<Vec<MessageId>>,
    /// The messages in `history`, with the IWANT answers sent per peer.
    cache: BTreeMap<MessageId, (Vec<u8>, BTreeMap<u64, u32>)>,
    /// Ids asked with IWANT, until the promise lapses.
    promises: BTreeMap<MessageId, u64>,
    /// Score counters (kept after a disconnection, as gossipsub retains them).
    scores: BTreeMap<u64, PeerScore>,
    /// When scores were last decayed.
    decayed_ms: u64,
    /// IHAVE messages taken from each peer this heartbeat.
    ihave_in: BTreeMap<u64, usize>,
    /// Ids asked of each peer this heartbeat.
    iwant_out: BTreeMap<u64, usize>,
    /// The next heartbeat on the grid.
    heartbeat_ms: u64,
}

impl Gossipsub {
    /// A node's gossipsub started at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self {
            peers: BTreeSet::new(),
            mesh: BTreeSet::new(),
            backoff: BTreeMap::new(),
            seen: BTreeMap::new(),
            seen_order: VecDeque::new(),
            history: VecDeque::from([Vec::new()]),
            cache: BTreeMap::new(),
            promises: BTreeMap::new(),
            scores: BTreeMap::new(),
            decayed_ms: now_ms,
            ihave_in: BTreeMap::new(),
            iwant_out: BTreeMap::new(),
            heartbeat_ms: now_ms + HEARTBEAT_INITIAL_DELAY_MS,
        }
    }

    /// The mesh peers.
    pub fn mesh(&self) -> &BTreeSet<u64> {
        &self.mesh
    }

    /// The connected peers.
    pub fn peers(&self) -> &BTreeSet<u64> {
        &self.peers
    }

    /// A peer's score.
    pub fn score(&self, p: u64) -> f64 {
        self.scores.get(&p).map_or(0.0, PeerScore::score)
    }

    /// Is everything from `p` ignored?
    pub fn graylisted(&self, p: u64) -> bool {
        self.score(p) < GRAYLIST_THRESHOLD
    }

    fn in_backoff(&self, p: u64, now_ms: u64) -> bool {
        self.backoff.get(&p).is_some_and(|&until| until > now_ms)
    }

    /// Apply the heartbeats that passed with nothing to do (the history
    /// shifts, the per-heartbeat counters reset) and the score decay, up
    /// to `now_ms`.
    pub fn catch_up(&mut self, now_ms: u64) {
        if self.heartbeat_ms <= now_ms {
            let idle = (now_ms - self.heartbeat_ms) / HEARTBEAT_MS + 1;
            for _ in 0..idle.min(CATCH_UP_MAX) {
                self.shift_history();
            }
            self.ihave_in.clear();
            self.iwant_out.clear();
            self.heartbeat_ms += idle * HEARTBEAT_MS;
        }
        self.decay(now_ms);
        self.expire(now_ms);
    }

    fn decay(&mut self, now_ms: u64) {
        let steps = now_ms.saturating_sub(self.decayed_ms) / DECAY_INTERVAL_MS;
        if steps == 0 {
            return;
        }
        self.decayed_ms += steps * DECAY_INTERVAL_MS;
        // 0.9^100 is far below the zero threshold of any counter's cap.
        for _ in 0..steps.min(100) {
            self.scores.values_mut().for_each(PeerScore::decay);
        }
        self.scores.retain(|p, s| self.peers.contains(p) || s.first > 0.0 || s.invalid > 0.0);
    }

    fn expire(&mut self, now_ms: u64) {
        while let Some(&(at, id)) = self.seen_order.front() {
            if at + DUPLICATE_CACHE_MS > now_ms {
                break;
            }
            self.seen_order.pop_front();
            if self.seen.get(&id) == Some(&at) {
                self.seen.remove(&id);
            }
        }
        self.promises.retain(|_, until| *until > now_ms);
        self.backoff.retain(|_, until| *until > now_ms);
    }

    fn shift_history(&mut self) {
        self.history.push_front(Vec::new());
        while self.history.len() > HISTORY_LENGTH {
            for id in self.history.pop_back().unwrap_or_default() {
                self.cache.remove(&id);
            }
        }
    }

    /// Note `id` in the duplicate cache: true if it is new (not seen within
    /// the cache's time), false for a duplicate.
    pub fn observe(&mut self, id: MessageId, now_ms: u64) -> bool {
        self.catch_up(now_ms);
        self.promises.remove(&id);
        if self.seen.contains_key(&id) {
            return false;
        }
        self.seen.insert(id, now_ms);
        self.seen_order.push_back((now_ms, id));
        true
    }

    /// A message the replicator accepted (or the node's own): kept for
    /// IWANT and told in IHAVE; its relay's first delivery counts.
    pub fn accepted(&mut self, id: MessageId, bytes: Vec<u8>, from: Option<u64>, now_ms: u64) {
        self.catch_up(now_ms);
        if let Some(p) = from {
            let s = self.scores.entry(p).or_default();
            s.first = (s.first + 1.0).min(FIRST_MESSAGE_DELIVERIES_CAP);
        }
        if let Some(w) = self.history.front_mut() {
            w.push(id);
        }
        self.cache.insert(id, (bytes, BTreeMap::new()));
    }

    /// A message the replicator rejected (or that did not decode): counted
    /// against its relay.
    pub fn rejected(&mut self, from: u64, now_ms: u64) {
        self.catch_up(now_ms);
        self.scores.entry(from).or_default().invalid += 1.0;
    }

    /// Where a message goes: the node's own to every peer above the publish
    /// threshold (flood publish); one it relays to its mesh, not back to
    /// `from`.
    pub fn targets(&self, from: Option<u64>) -> Vec<u64> {
        match from {
            None if agora_sync::gossip::FLOOD_PUBLISH => self.peers.iter().copied().filter(|&p| self.score(p) >= PUBLISH_THRESHOLD).collect(),
            None => self.mesh.iter().copied().collect(),
            Some(f) => self.mesh.iter().copied().filter(|&p| p != f).collect(),
        }
    }

    /// A peer connected and subscribed: grafted at once while the mesh is
    /// below `D_low` (and it is not in back-off, not negative).
    pub fn connected(&mut self, p: u64, now_ms: u64, out: &mut Vec<Outbound>) {
        self.catch_up(now_ms);
        self.peers.insert(p);
        if self.mesh.len() < MESH_N_LOW && !self.in_backoff(p, now_ms) && self.score(p) >= 0.0 && self.mesh.insert(p) {
            out.push(Outbound::Control(p, Control::Graft));
        }
    }

    /// A peer connected, with no mesh (the flooding model's neighbours).
    pub fn add_peer(&mut self, p: u64) {
        self.peers.insert(p);
    }

    /// A peer disconnected: out of the mesh.
    pub fn disconnected(&mut self, p: u64, now_ms: u64) {
        self.catch_up(now_ms);
        self.peers.remove(&p);
        self.mesh.remove(&p);
    }

    fn prune(&mut self, p: u64, now_ms: u64, out: &mut Vec<Outbound>) {
        self.mesh.remove(&p);
        self.backoff.insert(p, now_ms + PRUNE_BACKOFF_MS);
        out.push(Outbound::Control(p, Control::Prune { backoff_s: PRUNE_BACKOFF_MS / 1_000 }));
    }

    /// A control message from `p`.
    pub fn control(&mut self, p: u64, c: Control, now_ms: u64, out: &mut Vec<Outbound>) {
        self.catch_up(now_ms);
        if !self.peers.contains(&p) || self.graylisted(p) {
            return;
        }
        match c {
            Control::Graft => {
                if self.mesh.contains(&p) {
                    return;
                }
                if self.in_backoff(p, now_ms) || self.score(p) < 0.0 || self.mesh.len() >= MESH_N_HIGH {
                    self.prune(p, now_ms, out);
                } else {
                    self.mesh.insert(p);
                }
            }
            Control::Prune { backoff_s } => {
                self.mesh.remove(&p);
                let until = now_ms + backoff_s.saturating_mul(1_000);
                let b = self.backoff.entry(p).or_insert(until);
                *b = (*b).max(until);
            }
            Control::IHave(ids) => {
                if self.score(p) < GOSSIP_THRESHOLD {
                    return;
                }
                let taken = self.ihave_in.entry(p).or_insert(0);
                *taken += 1;
                if *taken > MAX_IHAVE_MESSAGES {
                    return;
                }
                let asked = self.iwant_out.get(&p).copied().unwrap_or(0);
                let room = MAX_IHAVE_LENGTH.saturating_sub(asked);
                let mut want: Vec<MessageId> = Vec::new();
                for id in ids {
                    if want.len() >= room {
                        break;
                    }
                    if !self.seen.contains_key(&id) && !self.promises.contains_key(&id) && !want.contains(&id) {
                        want.push(id);
                    }
                }
                if want.is_empty() {
                    return;
                }
                for id in &want {
                    self.promises.insert(*id, now_ms + IWANT_FOLLOWUP_MS);
                }
                *self.iwant_out.entry(p).or_insert(0) += want.len();
                out.push(Outbound::Control(p, Control::IWant(want)));
            }
            Control::IWant(ids) => {
                if self.score(p) < GOSSIP_THRESHOLD {
                    return;
                }
                for id in ids.into_iter().take(MAX_IHAVE_LENGTH) {
                    if let Some((bytes, sent)) = self.cache.get_mut(&id) {
                        let n = sent.entry(p).or_insert(0);
                        *n += 1;
                        if *n <= GOSSIP_RETRANSMISSION {
                            out.push(Outbound::Message(p, bytes.clone()));
                        }
                    }
                }
            }
        }
    }

    /// Gossip message ids of the last `HISTORY_GOSSIP` heartbeats.
    fn gossip_ids(&self) -> Vec<MessageId> {
        self.history.iter().take(HISTORY_GOSSIP).flatten().copied().collect()
    }

    fn graftable(&self, now_ms: u64) -> impl Iterator<Item = u64> + '_ {
        self.peers.iter().copied().filter(move |&p| !self.mesh.contains(&p) && !self.in_backoff(p, now_ms) && self.score(p) >= 0.0)
    }

    /// The next heartbeat that has something to do (`None`: none until
    /// something happens): ids to gossip, a mesh out of bounds it can mend,
    /// a negative peer in the mesh, or a back-off ending while the mesh is
    /// short.
    pub fn next_due(&self) -> Option<u64> {
        let at = self.heartbeat_ms;
        let work = self.history.iter().take(HISTORY_GOSSIP).any(|w| !w.is_empty())
            || self.mesh.len() > MESH_N_HIGH
            || self.mesh.iter().any(|&p| self.score(p) < 0.0)
            || (self.mesh.len() < MESH_N_LOW && self.graftable(at).next().is_some());
        if work {
            return Some(at);
        }
        if self.mesh.len() < MESH_N_LOW {
            // A peer in back-off becomes graftable: the first heartbeat after.
            let end = self.peers.iter().filter(|&&p| !self.mesh.contains(&p) && self.score(p) >= 0.0).filter_map(|p| self.backoff.get(p)).min()?;
            let steps = end.saturating_sub(at).div_ceil(HEARTBEAT_MS);
            return Some(at + steps * HEARTBEAT_MS);
        }
        None
    }

    /// Run the heartbeat due at `at` (≤ now): mend the mesh, emit IHAVE,
    /// shift the history.
    pub fn heartbeat(&mut self, at: u64, rng: &mut Xorshift64, out: &mut Vec<Outbound>) {
        assert!(at >= self.heartbeat_ms, "a heartbeat runs on its grid, never before it");
        // The idle heartbeats before this one.
        if at > self.heartbeat_ms {
            self.catch_up(at - 1);
        }
        self.decay(at);
        self.expire(at);
        // Negative peers leave the mesh.
        let negative: Vec<u64> = self.mesh.iter().copied().filter(|&p| self.score(p) < 0.0).collect();
        for p in negative {
            self.prune(p, at, out);
        }
        if self.mesh.len() < MESH_N_LOW {
            let mut candidates: Vec<u64> = self.graftable(at).collect();
            shuffle(&mut candidates, rng);
            for p in candidates.into_iter().take(MESH_N - self.mesh.len()) {
                self.mesh.insert(p);
                out.push(Outbound::Control(p, Control::Graft));
            }
        }
        if self.mesh.len() > MESH_N_HIGH {
            let mut members: Vec<u64> = self.mesh.iter().copied().collect();
            shuffle(&mut members, rng);
            // The best scored first (stable: ties keep the random order).
            members.sort_by(|a, b| self.score(*b).total_cmp(&self.score(*a)));
            let (best, rest) = members.split_at(RETAIN_SCORES.min(members.len()));
            let mut rest = rest.to_vec();
            shuffle(&mut rest, rng);
            let keep: BTreeSet<u64> = best.iter().chain(rest.iter()).copied().take(MESH_N).collect();
            let dropped: Vec<u64> = self.mesh.iter().copied().filter(|p| !keep.contains(p)).collect();
            for p in dropped {
                self.prune(p, at, out);
            }
        }
        let ids = self.gossip_ids();
        if !ids.is_empty() {
            let mut lazy: Vec<u64> = self.peers.iter().copied().filter(|&p| !self.mesh.contains(&p) && self.score(p) >= GOSSIP_THRESHOLD).collect();
            let n = GOSSIP_LAZY.max(lazy.len() * GOSSIP_FACTOR_PERCENT / 100);
            shuffle(&mut lazy, rng);
            for p in lazy.into_iter().take(n) {
                let mut ids = ids.clone();
                if ids.len() > MAX_IHAVE_LENGTH {
                    shuffle(&mut ids, rng);
                    ids.truncate(MAX_IHAVE_LENGTH);
                }
                out.push(Outbound::Control(p, Control::IHave(ids)));
            }
        }
        self.shift_history();
        self.ihave_in.clear();
        self.iwant_out.clear();
        self.heartbeat_ms = at + HEARTBEAT_MS;
    }
}

/// Fisher–Yates with the network's generator.
fn shuffle<T>(v: &mut [T], rng: &mut Xorshift64) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sizes_count_ids_and_topic() {
        // An id is a 34-byte field (tag, length, 32 bytes) ...
        let one = Control::IHave(vec![[0; 32]]).wire_len(8);
        let two = Control::IHave(vec![[0; 32]; 2]).wire_len(8);
        assert_eq!(two - one, 34);
        // ... and the three length prefixes around it grow a byte each once
        // what they count passes 127 bytes.
        let one = Control::IHave(vec![[0; 32]]).wire_len(73);
        let two = Control::IHave(vec![[0; 32]; 2]).wire_len(73);
        assert_eq!(two - one, 34 + 3);
        assert!(Control::Graft.wire_len(73) > 73);
    }

    #[test]
    fn a_duplicate_is_new_again_after_the_cache_time() {
        let mut g = Gossipsub::new(0);
        assert!(g.observe([1; 32], 10));
        assert!(!g.observe([1; 32], 10 + DUPLICATE_CACHE_MS - 1));
        assert!(g.observe([1; 32], 10 + DUPLICATE_CACHE_MS));
    }
}
