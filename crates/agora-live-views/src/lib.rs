//! The views a running node keeps in memory and current as entries commit:
//! the live reasoning graph ([`graph_cache`]), the live merged view with the
//! perspectives in use ([`merge_cache`]) and, beside it, the index of
//! references into forked chains ([`fork_referrers`]). Each is fed by the
//! store's commit notices and equals a recompute from the store (tests in
//! each module). The node holds them; commands read them through a
//! session; nothing here knows commands, the network or the daemon.
#![forbid(unsafe_code)]
// Store errors name the entry they concern and are built only on failure.
#![allow(clippy::result_large_err)]

pub mod fork_referrers;
pub mod graph_cache;
pub mod merge_cache;
