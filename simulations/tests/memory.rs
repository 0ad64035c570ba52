//! Each simulated node's memory is measured by the allocator
//! (`agora_sim::heap`), not estimated: this test program installs the
//! metering allocator, as `agora` does.

use agora_sim::heap::{self, Metered};
use agora_sim::run::Run;
use agora_sim::{Report, Scenario};

#[global_allocator]
static ALLOCATOR: Metered<std::alloc::System> = Metered(std::alloc::System);

/// An allocation is charged to the node that made it until it is freed,
/// whoever frees it (a message freed by its receiver), and a reallocation
/// keeps its charge.
#[test]
fn an_allocation_is_its_makers_until_freed_by_anyone() {
    assert!(heap::start(), "the metering allocator is installed");
    let mut block = {
        let _charge = heap::charge(Some(1));
        Vec::<u8>::with_capacity(10_000)
    };
    assert_eq!((heap::held(1), heap::held(2)), (10_000, 0));
    {
        let _charge = heap::charge(Some(2));
        block.reserve_exact(30_000);
        assert_eq!((heap::held(1), heap::held(2)), (30_000, 0), "grown, still node 1's");
        drop(block);
    }
    assert_eq!((heap::held(1), heap::held(2)), (0, 0));
    // Nobody's: made with no node charged.
    let nobodys = vec![0u8; 5_000];
    assert_eq!((heap::held(1), heap::held(2)), (0, 0));
    drop(nobodys);
    // Charges nest and come back.
    let _outer = heap::charge(Some(3));
    {
        let _inner = heap::charge(None);
        let _free = Vec::<u8>::with_capacity(100);
    }
    let kept = vec![0u8; 100];
    assert_eq!(heap::held(3), 100);
    drop(kept);
}

fn swarm(agents_per_node: usize) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
name = "memory"
nodes = 4
agents_per_node = {agents_per_node}
duration_ms = 10_000
settle_ms = 60_000
network = {{ latency = {{ kind = "uniform", min_ms = 5, max_ms = 40 }} }}

[generated]
events_per_agent = 20
topics = 4
interval = {{ kind = "uniform", min_ms = 100, max_ms = 400 }}
"#
    ))
    .expect("the scenario")
}

fn peaks(report: &Report) -> Vec<u64> {
    report.nodes.iter().map(|n| n.memory_bytes).collect()
}

/// A run measures each node's peak: more than the bytes its store holds
/// (its maps, replicator and live view are on top), growing with what it
/// holds, and the same bytes for the same seed.
#[test]
fn a_run_measures_each_nodes_memory() {
    let small = swarm(2);
    let (report, net) = Run::new(&small, 1).play_and_keep(String::new());
    assert!(report.ok && report.memory_measured, "{:?}", report.invariants);
    for (n, peak) in peaks(&report).into_iter().enumerate() {
        let stored = net.nodes[n].store.bytes;
        assert!(peak > stored + 100 * net.nodes[n].store.entries.len() as u64, "node {n}: {peak} bytes at its peak, {stored} stored");
    }
    drop(net);
    // The first run in a process also pays for what is made once and kept
    // (lazily built statics): from the second on, a seed measures the same.
    let again = Run::new(&small, 1).play(String::new());
    let third = Run::new(&small, 1).play(String::new());
    assert_eq!(peaks(&third), peaks(&again), "the same seed, the same measurement");
    for (first, later) in peaks(&report).into_iter().zip(peaks(&again)) {
        assert!(first >= later && first - later < 64 * 1024, "{first} then {later}");
    }
    let large = Run::new(&swarm(8), 1).play(String::new());
    assert!(large.memory_measured);
    for (s, l) in peaks(&report).into_iter().zip(peaks(&large)) {
        assert!(l > 2 * s, "four times the entries: {l} bytes against {s}");
    }
}
