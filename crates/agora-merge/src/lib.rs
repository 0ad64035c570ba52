//! The merge layer: how agents take positions on each other's reasoning.
//!
//! Agents write *merge events* on their own chains (a payload format of its
//! own, [`payload`]): **accept** another agent's chain up to an event,
//! **dispute** exactly one event (and later **withdraw** the dispute), and, for
//! an author whose own chain forked, a **fork resolution** naming the branch
//! that continues. Nothing is co-signed: each event is unilateral and signed
//! like any other entry.
//!
//! [`Merge::compute`] derives from a *set* of entries (and standalone fork
//! proofs) everything the views need: each chain's tree, its forks, the view
//! chain (frozen at the last shared entry while a fork is unresolved), and the
//! status of every merge event. The views are functions of it:
//! [`Merge::perspective`], [`Merge::consensus`], [`Merge::disagreements`],
//! [`Merge::audit`], [`Merge::merged_view`], and [`Merge::view_hash`], which is
//! equal on every node holding the same set, whatever the arrival order.
//!
//! Local writes go through [`Merge::check`] (refuses with a typed
//! [`MergeRuleError`]); the same event from a peer is kept and reported with a
//! [`MergeStatus`] (pending, invalid, clipped), never silently applied.
//!
//! Pure: no store, no clock, no I/O, no randomness. It does not depend on
//! `agora-store`; the caller builds [`MergeEntry`]s from what it holds.
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![allow(clippy::result_large_err)]
#![forbid(unsafe_code)]

mod check;
mod disagreements;
mod feed;
mod hash;
pub mod input;
mod live;
mod live_merged_graph;
mod live_perspective;
mod merge;
pub mod payload;
mod published;
mod replay;
pub mod rules;
mod views;

pub use check::ResolutionPlan;
pub use feed::{Feed, key_bounds_may_change, plan_update, roster_may_change, roster_may_change_by};
pub use input::{InputError, MergeEntry, decode_fork_proof};
pub use live::{CONSENSUS_CACHED_MAX, ChainInput, LiveApplied, LiveMemory, LiveMerge, LiveUpdate, ViewChain};
pub use live_merged_graph::{LiveMergedGraph, MergedGraphPlan};
pub use live_perspective::{LivePerspective, PerspectivePlan, PerspectiveRefresh};
pub use merge::{Chain, ForkOutcome, ForkPoint, Frontier, Merge, MergeRecord};
pub use payload::{MergeDecodeError, MergeEvent, residue};
pub use published::{ChainSummary, MergedView, ViewNode, ViewNodes};
pub use rules::{MergeRuleError, MergeStatus};
pub use views::{
    AGENTS_MAX, ANCESTORS_MAX, Audit, Branch, ChainConsensus, Consensus, ConsensusError, DisagreementMap, DisputeMark, DisputedEvent, DisputedEventView,
    ForkBranches, Perspective,
};
