//! The swarm simulator.
//!
//! A seeded discrete-event simulation on virtual time: simulated nodes, each
//! a [`agora_sync::Replicator`] over an in-memory store with the node's store
//! rules ([`agora_sync::harness::MemStore`]), joined by a modelled network ([`net`], [`model`]) that
//! carries the wire bytes the node would send and executes the replicator's
//! outputs as the node's driver does, with the node's gossipsub
//! ([`gossip`]) and, when a scenario sets one, the cost of its checks and
//! writes in its bounded queues ([`cost`]). Nothing here decides what to ask,
//! serve, gossip or ban: the replicator does, as in the node. A scenario
//! file ([`scenario`]) says who records what, when, over which network, with
//! which adversaries; the runner ([`run`](mod@run)) plays it and checks the
//! invariants; the report ([`report`]) is the same bytes for the same seed.
//! A sweep ([`sweep`](mod@sweep)) plays a scenario over a range of swarm sizes or seeds;
//! a search ([`search`](mod@search)) samples adversary strategies from a
//! seed and holds each to every invariant and the liveness bound;
//! [`heap`] measures each simulated node's memory through the allocator;
//! [`plot`] draws a sweep's curves and a run's timeline as SVG and PNG.
#![deny(missing_docs)]
// Only the allocator that measures each node's memory ([`heap`]) is unsafe.
#![deny(unsafe_code)]

pub mod cost;
pub mod gossip;
pub mod heap;
pub mod model;
pub mod net;
pub mod plot;
pub mod report;
pub mod results;
pub mod run;
pub mod scenario;
pub mod search;
pub mod sweep;
pub mod views;

pub use agora_sync::harness::{Imported, Interner, MemStore, Stored};
pub use cost::Cost;
pub use model::{Latency, LinkModel};
pub use net::{Answer, Behaviour, GossipTraffic, Net, Node, Packet, Traffic};
pub use plot::{PlotError, draw_run, draw_sweep};
pub use report::{EventMark, Report, RunEvent, RunEventKind, scenario_path_shown};
pub use run::run;
pub use scenario::Scenario;
pub use search::{Family, SearchError, SearchOptions, SearchReport, Trial, search};
pub use sweep::{SweepAxis, SweepError, SweepPoint, SweepReport, sweep, sweep_with};
pub use views::{MergeBuilder, NodeMerge, NodeView};
