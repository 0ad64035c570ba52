//! Gives back to the system the memory glibc's allocator holds freed.
//!
//! The node's own allocations go to jemalloc (`main.rs`), which returns
//! freed pages within a second. RocksDB's C++ allocates with glibc's
//! `malloc` instead: its write batches, flushes and compactions allocate and
//! free on several threads, and glibc gives freed memory back only from the
//! top of its main heap. After a node received a million entries, glibc
//! held about 35 MiB it had freed (`node rss`: 164 MiB after the sync,
//! 129 MiB with this trim). `malloc_trim` returns the free pages of every
//! arena; on a heap that holds little, a call takes well under a
//! millisecond, so a thread makes it every [`TRIM_EVERY`].

use std::time::Duration;

/// How often the freed memory is given back.
pub const TRIM_EVERY: Duration = Duration::from_secs(2);

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    /// glibc: release free memory from the heap (every arena since glibc 2.8).
    fn malloc_trim(pad: usize) -> std::ffi::c_int;
}

/// Start the thread that trims glibc's heap every [`TRIM_EVERY`] for as long
/// as the process runs. Nothing to do with another C library.
pub fn start() -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    std::thread::Builder::new().name("heap-trim".into()).spawn(|| {
        loop {
            std::thread::sleep(TRIM_EVERY);
            let started = std::time::Instant::now();
            // SAFETY: malloc_trim takes no pointer and may be called from
            // any thread at any time; glibc locks each arena while it trims.
            unsafe { malloc_trim(0) };
            let took = started.elapsed();
            if took > Duration::from_millis(10) {
                tracing::debug!(ms = took.as_secs_f64() * 1e3, "trimming glibc's heap took long");
            }
        }
    })?;
    Ok(())
}
