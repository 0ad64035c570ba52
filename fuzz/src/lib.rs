//! The checks behind Agora's fuzz targets, one public function per target
//! (`fuzz_targets/<name>.rs` calls `agora_fuzz::<name>`), each in a module
//! of its own (`src/<name>.rs`). Each takes the fuzzer's bytes as input from
//! outside (a peer, a pack file) and asserts what must hold for any bytes: no
//! panic, and where a decoder accepts, the canonical-decoding invariant
//! (re-encoding what was decoded gives back exactly the input;
//! `agora_core::canonical::encodes_to`). Some add a differential check (two
//! code paths that must agree) or a property of the format (a residue fails
//! with the same error code as its payload).
//!
//! Input layouts that are not one decoder's bytes (lists of entries, a log,
//! a sequence of peer events) are read with [`Reader`] (the layouts several
//! targets share are in [`layout`]), and the example `seed` writes the
//! checked-in corpus in those layouts.
#![allow(clippy::result_large_err)]

pub mod fixture;
pub mod layout;
pub mod reader;
pub mod replicator;

mod control_request;
mod fork_proof;
mod graph_event;
mod graph_replay;
mod merge_event;
mod merge_views;
mod pack_lines;
mod roster_derive;
mod roster_event;
mod signed_entry;
mod sync_wire;
mod verify_entries;

// The targets, by name.
pub use control_request::control_request;
pub use fork_proof::fork_proof;
pub use graph_event::graph_event;
pub use graph_replay::graph_replay;
pub use merge_event::merge_event;
pub use merge_views::merge_views;
pub use pack_lines::pack_lines;
pub use replicator::replicator;
pub use roster_derive::roster_derive;
pub use roster_event::roster_event;
pub use signed_entry::signed_entry;
pub use sync_wire::sync_wire;
pub use verify_entries::verify_entries;

// What the targets share with the seed example.
pub use layout::{read_entries, read_log, read_swarm, write_entries, write_log, write_swarm};
pub use merge_views::residue;
pub use reader::Reader;
