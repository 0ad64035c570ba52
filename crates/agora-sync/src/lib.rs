//! Sans-IO chain replication.
//!
//! [`Replicator`] holds the replication logic of one node as a state machine,
//! in the style of `quinn-proto`: the driver feeds it events (a peer connected,
//! a message arrived, time passed, the store changed) and drains its outputs
//! (messages to send, verified entries to store, requests to serve from the
//! store, peers to ban). It owns no sockets, no clock, no store and no threads;
//! time is an argument. The libp2p node and the simulator's deterministic
//! network (`simulations/src/net.rs`) drive the same code, and only execute what it decides: the
//! range cuts, what to gossip, whom to ask, whom to ban.
//!
//! The protocol, per pair of connected peers:
//! 1. both send their [`Message::Frontier`]: for every author, each tip
//!    (seq, id) they hold;
//! 2. for each author where the peer holds more, a node sends
//!    [`Message::Request`] for a range of seqs, and verifies the
//!    [`Message::Response`] (decoding, authors, seqs, signatures in batches,
//!    payload hashes, links inside the range) before emitting
//!    [`Output::Import`]; a response marked `more` is followed by the next
//!    request from where it stopped, so long syncs resume where they stopped;
//! 3. new entries also arrive by gossip ([`Replicator::gossip`]): verified
//!    one by one, offered to the store, and when they do not link to what we
//!    hold, the missing range is requested from the peer that relayed them,
//!    within the request limits (gossip itself takes no request slot);
//! 4. a peer that sends a bad entry is banned for [`Config::ban_ms`]; a peer
//!    over its message rate has its messages dropped, and a flooder is banned;
//! 5. only entries of authors admitted to the workspace roster are requested
//!    or accepted ([`Replicator::set_admitted`]); reads are open to any
//!    peer of the workspace (the store serves what it holds, all of it
//!    checked when it came in).
//!
//! The bytes of these messages are in [`wire`] (`protocol-spec/replication.md`).
//!
//! Call order for a driver: `connected` / `disconnected` / `handle` (or
//! `handle_checked_response` after [`check_entries`] on a worker) / `gossip`
//! / `respond` / `import_result` / `committed` (after every write to the store) /
//! `handle_timeout` as things happen, then drain `poll` until it returns
//! `None`, and wake up at `poll_timeout`. Every [`Output::Import`] gets
//! exactly one `import_result`.
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![allow(clippy::result_large_err)]
#![forbid(unsafe_code)]

pub mod gossip;
#[cfg(feature = "harness")]
pub mod harness;
mod limiter;
pub mod queues;
mod replicator;
mod tips;
pub mod wire;

pub use replicator::{
    ANNOUNCE_INTERVAL_MS, BUSY_BACKOFF_MS, CheckError, Commit, Config, GossipVerdict, ImportOutcome, Lag, Output, PeerId, RESPONSE_ENTRIES_MAX,
    RETRY_FANOUT_MAX, Replicator, ServeRequest, Stats, VerifiedEntry, WAIT_MIN_MS, check_entries,
};
pub use wire::{Gossip, Head, Message, RangeStart, WireEntry, WireError, WireRequest, WireResponse, WorkspaceId};
