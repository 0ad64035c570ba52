//! What the benchmarks measure with: a rate of operations, a quantile of
//! durations, and the bytes the program holds allocated.

use std::time::{Duration, Instant};

/// Bytes the program holds in live allocations now (jemalloc's
/// `stats.allocated`, refreshed first): the difference across a step is what
/// the structures it built hold.
pub(crate) fn allocated_bytes() -> u64 {
    use tikv_jemalloc_ctl::{epoch, stats};
    let _ = epoch::advance();
    stats::allocated::read().map_or(0, |b| b as u64)
}

/// Run `f` repeatedly for at least `min`; return operations per second, where
/// each call performs `ops` operations.
pub(crate) fn rate(min: Duration, ops: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < min {
        f();
        calls += 1;
    }
    (calls as f64 * ops as f64) / start.elapsed().as_secs_f64()
}

/// The `p` quantile (0 to 1) of durations sorted in ascending order.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
