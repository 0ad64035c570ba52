//! The node driver's queue limits, in one place: the node's event loop and
//! worker threads use them, and the simulator's cost model
//! (`simulations/src/cost.rs`) bounds its queues with them, so that `Busy`
//! answers and lost writes happen in simulation where they happen on a node.

/// Range reads waiting for the store's read thread; a range request that
/// finds it full is answered `Busy`.
pub const STORE_QUEUE_MAX: usize = 64;
/// Imports (verified entries) waiting for the store's write thread; an
/// import that finds it full is dropped and reported `Lost` to the
/// replicator, which asks for the entries again.
pub const WRITE_QUEUE_MAX: usize = STORE_QUEUE_MAX;
/// Responses waiting for a verify worker (responses only answer our own
/// requests, of which at most `Config::in_flight_max` are in flight); past
/// it a response is checked on the event loop.
pub const CHECK_QUEUE_MAX: usize = 64;
/// Most verify worker threads (fewer on a machine with fewer cores).
pub const VERIFY_THREADS_MAX: usize = 4;
/// Inbound range requests waiting for the store, beyond which new ones are
/// answered `Busy`.
pub const PENDING_RESPONSES_MAX: usize = 1024;
