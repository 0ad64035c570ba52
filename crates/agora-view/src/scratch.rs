//! Scratch memory: where a large answer's allocations go when they all die
//! together.
//!
//! The disagreement map of a million-entry swarm lists 1.86 million
//! acceptors: each ask builds it (78,000 payloads read, the map, 139 MB of
//! JSON), prints it and frees it all. Built from the same pages as the
//! views a node keeps current meanwhile, it left them pinned by a few live
//! objects each: a node that had answered it grew by 43 MiB of resident
//! memory it no longer used (`./scripts/bench.sh node views`: 495 MiB at the
//! end of the reads, 452 MiB with the answer in scratch memory). If the
//! answer's allocations come from memory of their own, all of it is free
//! once the answer is sent and goes back to the system.
//!
//! (Loading every entry to build a view at start-up was tried in scratch
//! memory too and made no measurable difference, 219 against 220 MiB right
//! after start-up and 455 against 452 at the end, so loads allocate as
//! everything else does.)
//!
//! Where that memory comes from is the process's business (its allocator):
//! the node binary installs a way ([`install`]) that moves the calling
//! thread to an allocator arena of its own while the work runs. Without one
//! (a test, a one-shot command), [`run`] just runs it. Either way the result
//! is the same; only where its bytes sit differs.

use std::sync::OnceLock;

/// How the process puts a thread's allocations in scratch memory and back.
#[derive(Clone, Copy, Debug)]
pub struct ScratchMemory {
    /// Send the calling thread's allocations to scratch memory; returns
    /// what `leave` needs to undo it (`None`: it could not, and nothing
    /// changed).
    pub enter: fn() -> Option<u32>,
    /// Undo `enter` on the calling thread, with what it returned.
    pub leave: fn(u32),
}

static SCRATCH: OnceLock<ScratchMemory> = OnceLock::new();

/// Use `memory` for every [`run`] in this process from now on (the first
/// call wins).
pub fn install(memory: ScratchMemory) {
    let _ = SCRATCH.set(memory);
}

/// Run `work`, whose allocations (what it returns included) are all freed
/// together later, with its allocations in scratch memory when the process
/// installed some. Allocations that outlive the rest are still correct,
/// only less well placed: `work` must not build what a view keeps.
pub fn run<T>(work: impl FnOnce() -> T) -> T {
    let entered = SCRATCH.get().and_then(|m| (m.enter)().map(|token| (m.leave, token)));
    // Left on unwind too, so a panic in the work does not leave the thread
    // allocating from scratch memory.
    struct Leave(Option<(fn(u32), u32)>);
    impl Drop for Leave {
        fn drop(&mut self) {
            if let Some((leave, token)) = self.0 {
                leave(token);
            }
        }
    }
    let _leave = Leave(entered);
    work()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static INSIDE: Cell<u32> = const { Cell::new(0) };
        static ENTERED: Cell<u32> = const { Cell::new(0) };
    }
    fn enter() -> Option<u32> {
        ENTERED.with(|e| e.set(e.get() + 1));
        INSIDE.with(|i| {
            let was = i.get();
            i.set(was + 1);
            Some(was)
        })
    }
    fn leave(was: u32) {
        INSIDE.with(|i| i.set(was));
    }

    /// Work runs inside scratch memory, nested work too, and the thread is
    /// back where it was afterwards, also when the work panicked.
    #[test]
    fn work_enters_and_leaves_scratch_memory() {
        install(ScratchMemory { enter, leave });
        let inside = || INSIDE.with(Cell::get);
        assert_eq!(run(|| (inside(), run(inside), inside())), (1, 2, 1));
        assert_eq!(inside(), 0);
        assert!(std::panic::catch_unwind(|| run(|| panic!("the work failed"))).is_err());
        assert_eq!(inside(), 0, "left on unwind");
        assert_eq!(ENTERED.with(Cell::get), 3);
    }
}
