//! The node's gossipsub numbers, in one place: the node builds its
//! `libp2p::gossipsub` configuration and peer scoring from them, and the
//! simulator's gossip model (`simulations/src/gossip.rs`) runs with them, so
//! the two cannot drift. Where a number is libp2p-gossipsub 0.50's default,
//! the node still sets it from here explicitly.
//!
//! What they do: each node keeps a mesh of [`MESH_N`] peers on the
//! workspace topic (grafting below [`MESH_N_LOW`], pruning above
//! [`MESH_N_HIGH`] at each heartbeat); a message it receives is forwarded to
//! its mesh only, once the replicator accepted it; its own messages go to
//! every peer on the topic ([`FLOOD_PUBLISH`]); at each heartbeat it tells
//! [`GOSSIP_LAZY`] peers outside its mesh (or [`GOSSIP_FACTOR_PERCENT`] of
//! them, if more) the ids of the messages of the last [`HISTORY_GOSSIP`]
//! heartbeats (IHAVE), and sends what they ask for (IWANT) from the last
//! [`HISTORY_LENGTH`]; a message id seen within [`DUPLICATE_CACHE_MS`] is a
//! duplicate. Peers are scored: a message the replicator rejects counts
//! against its relay (squared, weight [`INVALID_MESSAGE_DELIVERIES_WEIGHT`]),
//! first deliveries count for it; a negative score leaves the mesh, below
//! [`GOSSIP_THRESHOLD`] no gossip is exchanged, below [`PUBLISH_THRESHOLD`]
//! nothing is published to it, below [`GRAYLIST_THRESHOLD`] everything from
//! it is ignored. A peer the replicator bans is blocked (its connection
//! closed) and blacklisted in gossipsub.

/// Mesh degree D: peers a node keeps in its mesh.
pub const MESH_N: usize = 6;
/// D_low: below this many mesh peers, a heartbeat grafts up to [`MESH_N`].
pub const MESH_N_LOW: usize = 5;
/// D_high: above this many, a heartbeat prunes down to [`MESH_N`].
pub const MESH_N_HIGH: usize = 12;
/// Of the mesh peers kept when pruning, this many are the best scored (the
/// rest are chosen at random).
pub const RETAIN_SCORES: usize = 4;
/// D_lazy: peers outside the mesh told the recent message ids (IHAVE) at
/// each heartbeat, at least.
pub const GOSSIP_LAZY: usize = 6;
/// ... or this share (percent) of the peers outside the mesh, if more.
pub const GOSSIP_FACTOR_PERCENT: usize = 25;
/// Heartbeats of messages kept to answer IWANT.
pub const HISTORY_LENGTH: usize = 5;
/// Heartbeats of messages whose ids are told in IHAVE.
pub const HISTORY_GOSSIP: usize = 3;
/// Most message ids in IHAVE messages to (and asked of) one peer per heartbeat.
pub const MAX_IHAVE_LENGTH: usize = 5_000;
/// Most IHAVE messages taken from one peer per heartbeat.
pub const MAX_IHAVE_MESSAGES: usize = 10;
/// Times a message is sent to one peer in answer to IWANT, at most.
pub const GOSSIP_RETRANSMISSION: u32 = 3;
/// Heartbeat interval (the libp2p default of 1 s delays the mesh; tests of
/// the node lower it).
pub const HEARTBEAT_MS: u64 = 700;
/// The first heartbeat comes this long after start.
pub const HEARTBEAT_INITIAL_DELAY_MS: u64 = 100;
/// A message id seen within this long is a duplicate (dropped before
/// validation); seen again later, it is a new message.
pub const DUPLICATE_CACHE_MS: u64 = 120_000;
/// A pruned peer is not grafted again (nor accepted back) for this long.
pub const PRUNE_BACKOFF_MS: u64 = 60_000;
/// A node's own messages go to every peer on the topic (above
/// [`PUBLISH_THRESHOLD`]), not only its mesh: small swarms.
pub const FLOOD_PUBLISH: bool = true;
/// Largest gossip message in bytes ([`crate::wire::GOSSIP_BYTES_MAX`]).
pub const MAX_TRANSMIT_BYTES: usize = crate::wire::GOSSIP_BYTES_MAX;

/// Scores decay this often.
pub const DECAY_INTERVAL_MS: u64 = 1_000;
/// A counter decayed below this is zero.
pub const DECAY_TO_ZERO: f64 = 0.1;
/// The workspace topic's weight in a peer's score.
pub const TOPIC_WEIGHT: f64 = 1.0;
/// Weight of the squared count of messages the replicator rejected (P4).
pub const INVALID_MESSAGE_DELIVERIES_WEIGHT: f64 = -100.0;
/// Decay of that count per [`DECAY_INTERVAL_MS`].
pub const INVALID_MESSAGE_DELIVERIES_DECAY: f64 = 0.9;
/// Weight of first deliveries of valid messages (P2): timely relays are
/// rewarded a little.
pub const FIRST_MESSAGE_DELIVERIES_WEIGHT: f64 = 1.0;
/// Decay of that count per [`DECAY_INTERVAL_MS`].
pub const FIRST_MESSAGE_DELIVERIES_DECAY: f64 = 0.9;
/// Most first deliveries counted.
pub const FIRST_MESSAGE_DELIVERIES_CAP: f64 = 100.0;
/// Below this score, no IHAVE / IWANT is sent to or taken from a peer.
pub const GOSSIP_THRESHOLD: f64 = -100.0;
/// Below this score, a node's own messages are not published to a peer.
pub const PUBLISH_THRESHOLD: f64 = -500.0;
/// Below this score, everything a peer sends is ignored.
pub const GRAYLIST_THRESHOLD: f64 = -1_000.0;

const _: () = assert!(MESH_N_LOW <= MESH_N && MESH_N <= MESH_N_HIGH && RETAIN_SCORES <= MESH_N);
const _: () = assert!(HISTORY_GOSSIP <= HISTORY_LENGTH && HEARTBEAT_MS > 0);
