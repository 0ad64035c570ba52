//! Memory measured per simulated node: a global allocator that charges
//! each allocation to the node whose work made it, until it is freed.
//!
//! A program that runs the simulator installs [`Metered`] around its
//! allocator (`agora` does, around jemalloc). While a run meters
//! ([`start`]), the network charges everything a node's replicator, store,
//! gossip and live view allocate to that node ([`charge`]), whichever node
//! later frees it; a message in flight is its sender's. Entries and
//! payloads that simulated nodes share ([`agora_sync::harness::Interner`]) are
//! charged to none of them: each node's store counts the bytes it holds
//! instead. A node's measured memory is what is charged to it and still
//! live, plus those bytes.
//!
//! The charge of an allocation is kept in a table of the thread that made
//! it (a run is one thread), keyed by address; the table's own memory is
//! charged to nobody. A program that never calls [`start`] pays one
//! relaxed load per allocation and free.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};

/// An allocator that charges allocations to simulated nodes.
pub struct Metered<A>(pub A);

/// Some thread has metered: frees must look up their charge.
static METERING: AtomicBool = AtomicBool::new(false);
/// [`Metered`] is the program's allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Hashes an address: the allocator's table needs no more.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}

/// One thread's charges.
struct Meter {
    /// The node being run, if any.
    charged_to: Option<u32>,
    /// Every live allocation charged to a node: its address, node and size.
    charges: HashMap<usize, (u32, usize), BuildHasherDefault<AddressHasher>>,
    /// Bytes live per node.
    held: Vec<u64>,
}

impl Meter {
    const fn new() -> Self {
        Self { charged_to: None, charges: HashMap::with_hasher(BuildHasherDefault::new()), held: Vec::new() }
    }

    fn charge(&mut self, address: usize, node: u32, size: usize) {
        let n = node as usize;
        if self.held.len() <= n {
            self.held.resize(n + 1, 0);
        }
        self.held[n] += size as u64;
        if let Some((old, old_size)) = self.charges.insert(address, (node, size)) {
            // An address freed on another thread came back: its old charge ends.
            self.held[old as usize] -= old_size as u64;
        }
    }

    /// The charge of `address`, ended.
    fn release(&mut self, address: usize) -> Option<u32> {
        let (node, size) = self.charges.remove(&address)?;
        self.held[node as usize] -= size as u64;
        Some(node)
    }
}

thread_local! {
    static METER: RefCell<Meter> = const { RefCell::new(Meter::new()) };
}

/// Run `f` on this thread's meter, unless the meter is in use (the table
/// growing allocates: that allocation is nobody's) or gone (the thread is
/// ending).
fn with_meter<R>(f: impl FnOnce(&mut Meter) -> R) -> Option<R> {
    METER.try_with(|m| m.try_borrow_mut().ok().map(|mut m| f(&mut m))).ok().flatten()
}

/// Record a new allocation at `p` of `size` bytes (to the node charged now,
/// or to `owner`).
fn record(p: *mut u8, size: usize, owner: Option<u32>) {
    if p.is_null() {
        return;
    }
    with_meter(|m| {
        if let Some(node) = owner.or(m.charged_to) {
            m.charge(p as usize, node, size);
        }
    });
}

/// End the charge of the allocation at `p`, and say whose it was.
fn forget(p: *mut u8) -> Option<u32> {
    with_meter(|m| m.release(p as usize)).flatten()
}

// SAFETY: every call is passed to the wrapped allocator unchanged; the
// bookkeeping around it reads only the pointer's address.
#[allow(unsafe_code)]
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc(layout) };
        self.after_alloc(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        self.after_alloc(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if METERING.load(Ordering::Relaxed) {
            forget(p);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(p, layout) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let owner = if METERING.load(Ordering::Relaxed) { forget(p) } else { None };
        // SAFETY: the caller's contract, passed on.
        let moved = unsafe { self.0.realloc(p, layout, new_size) };
        if METERING.load(Ordering::Relaxed) {
            // A failed reallocation leaves the old block where it was.
            if moved.is_null() {
                record(p, layout.size(), owner);
            } else {
                record(moved, new_size, owner);
            }
        }
        moved
    }
}

impl<A> Metered<A> {
    fn after_alloc(&self, p: *mut u8, size: usize) {
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        if METERING.load(Ordering::Relaxed) {
            record(p, size, None);
        }
    }
}

/// Does this program's allocator meter ([`Metered`] is installed)?
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Start metering on this thread, from nothing charged: `false` when the
/// program's allocator cannot meter.
pub fn start() -> bool {
    if !installed() {
        return false;
    }
    METERING.store(true, Ordering::Relaxed);
    with_meter(|m| {
        m.charged_to = None;
        m.charges.clear();
        m.held.clear();
    })
    .is_some()
}

/// Bytes charged to `node` and still live on this thread.
pub fn held(node: usize) -> u64 {
    with_meter(|m| m.held.get(node).copied().unwrap_or(0)).unwrap_or(0)
}

/// Charge this thread's allocations to `node` (none: to nobody) until the
/// guard is dropped; then to whom they were charged before.
pub fn charge(node: Option<usize>) -> Charge {
    let node = node.and_then(|n| u32::try_from(n).ok());
    Charge { before: with_meter(|m| std::mem::replace(&mut m.charged_to, node)).flatten() }
}

/// Restores the charge that was in force when it was made.
#[must_use = "the charge lasts while the guard lives"]
pub struct Charge {
    before: Option<u32>,
}

impl Drop for Charge {
    fn drop(&mut self) {
        let before = self.before;
        with_meter(|m| m.charged_to = before);
    }
}
