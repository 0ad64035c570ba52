//! Typed reasoning events and the reasoning graph derived from them.
//!
//! Events ([`event::Event`]) travel in entry payloads; the graph
//! ([`graph::Graph`]) is a pure, deterministic function of the events, rebuilt
//! by replay and updated incrementally as events arrive in log order. The log
//! is the truth and the graph is a view: statuses are computed, never stored.
//!
//! This crate knows nothing about RocksDB, the network, files or clocks (a
//! caller that asks about expiry passes `now_ms`).
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![allow(clippy::result_large_err)]

mod canonical;
pub mod event;
pub mod export;
pub mod graph;
mod inline;
pub mod query;
pub mod workload;

pub use event::{Event, EventDecodeError, MemoryKind, Relation, TaskState};
pub use graph::{
    AsNode, Body, ById, CAUSAL_WALK_MAX, DIGEST_BUCKETS, FrameState, Graph, GraphMemory, LIVE_GRAPH_JOURNAL, Late, LogEvent, LogPosition, Node, NodeRef,
    NotInLogOrder, OrderedReplay, RuleError, Status, TextSource, TextUnavailable,
};
