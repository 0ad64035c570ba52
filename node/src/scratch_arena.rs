//! Scratch memory for large answers (`agora_view::scratch`), as a jemalloc
//! arena of its own: while such an answer is built, the thread allocates
//! from that arena, so once the answer is dropped every page it used is
//! free and goes back to the system, instead of staying pinned by the
//! views' own small allocations made meanwhile.
//!
//! Objects move between the arenas only through the thread's cache of
//! freed objects (a few hundred per size class), which jemalloc does not
//! flush on a change of arena: a bound of well under a megabyte placed in
//! the wrong arena, against the hundreds of megabytes an answer allocates.

use std::sync::OnceLock;
use tikv_jemalloc_ctl::raw;

/// The scratch arena's index, created on first use (`None`: jemalloc
/// refused, and scratch work allocates as everything else does).
static ARENA: OnceLock<Option<u32>> = OnceLock::new();

/// Send the calling thread's allocations to the scratch arena; the arena it
/// used before.
fn enter() -> Option<u32> {
    // SAFETY: `arenas.create` reads an `unsigned` (u32) and `thread.arena`
    // reads and writes one, as jemalloc's manual documents; names are
    // NUL-terminated.
    let arena = (*ARENA.get_or_init(|| unsafe { raw::read::<u32>(b"arenas.create\0") }.ok()))?;
    unsafe { raw::update::<u32>(b"thread.arena\0", arena) }.ok()
}

/// Send the calling thread's allocations back to `arena`.
fn leave(arena: u32) {
    // SAFETY: as in `enter`.
    if let Err(e) = unsafe { raw::write::<u32>(b"thread.arena\0", arena) } {
        tracing::warn!("returning a thread to its allocator arena: {e}");
    }
}

/// Make `agora_view::scratch::run` use the scratch arena in this process.
pub fn install() {
    agora_view::scratch::install(agora_view::scratch::ScratchMemory { enter, leave });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arena() -> u32 {
        // SAFETY: as in `enter`.
        unsafe { raw::read::<u32>(b"thread.arena\0") }.expect("reading the thread's arena")
    }

    /// Inside scratch work the thread allocates from the scratch arena, and
    /// from its own again after it.
    #[test]
    fn scratch_work_allocates_from_an_arena_of_its_own() {
        install();
        let before = arena();
        let (inside, held) = agora_view::scratch::run(|| (arena(), vec![7u8; 1 << 20]));
        assert_ne!(inside, before);
        assert_eq!(arena(), before);
        assert_eq!(held.len(), 1 << 20, "what the work returns outlives it");
        assert_eq!(agora_view::scratch::run(arena), inside, "one scratch arena, reused");
    }
}
