//! Each honest node's live merged view, fed in the node's own arrival order
//! through the node's feed, is compared at every checkpoint of a run with
//! the views of the nodes holding the same entries and with the batch
//! merge of those entries: the shipped scenarios hold it, and a merge made
//! to depend on arrival order is caught, naming the nodes, the checkpoint's
//! time and the hashes.

use agora_core::ForkProof;
use agora_core::id_arena::IdArena;
use agora_merge::{ChainInput, InputError, LiveMerge, LiveUpdate, MergeEntry};
use agora_sim::run::Run;
use agora_sim::{NodeMerge, Scenario};
use std::path::Path;
use std::sync::Arc;

const INVARIANT: &str = "every honest node's live view is the batch view of what it holds, at every checkpoint";

fn load(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The live-view invariant of a run of `s` whose nodes build their views
/// with `builder`: `None` when it held.
fn live_view_violation(s: &Scenario, builder: agora_sim::MergeBuilder) -> Option<String> {
    let mut run = Run::new(s, s.seed);
    run.net.merge_builder = builder;
    let report = run.play(String::new());
    let check = report.invariants.iter().find(|i| i.name == INVARIANT).expect("the live views are checked");
    assert!(check.held || check.violation.is_some());
    check.violation.clone()
}

/// The node's merge with one departure: an entry that arrives after a later
/// dated one (a late arrival) changes its view hash, as a merge that
/// assumed entries arrive in the order they were written would. Equal to
/// the node's merge on a node that received everything in that order.
struct ArrivalOrdered {
    live: LiveMerge,
    latest_ms: u64,
    late: u64,
}

// The builder's signature: the merge's error is as large as it is.
#[allow(clippy::result_large_err)]
fn arrival_ordered(entries: &[MergeEntry], proofs: &[ForkProof], ids: Arc<IdArena>) -> Result<Box<dyn NodeMerge>, InputError> {
    let latest_ms = entries.iter().map(MergeEntry::timestamp_ms).max().unwrap_or(0);
    Ok(Box::new(ArrivalOrdered { live: LiveMerge::from_entries_sharing(entries, proofs, ids)?, latest_ms, late: 0 }))
}

impl NodeMerge for ArrivalOrdered {
    fn state(&self) -> &LiveMerge {
        &self.live
    }

    fn apply(&mut self, update: LiveUpdate, chain_input: &mut dyn FnMut(&agora_core::AgentId) -> ChainInput) {
        for e in &update.entries {
            if e.timestamp_ms() < self.latest_ms {
                self.late += 1;
            }
            self.latest_ms = self.latest_ms.max(e.timestamp_ms());
        }
        NodeMerge::apply(&mut self.live, update, chain_input);
    }

    fn view_hash(&mut self) -> [u8; 32] {
        let h = self.live.view_hash();
        if self.late == 0 {
            return h;
        }
        let mut bytes = h.to_vec();
        bytes.extend_from_slice(&self.late.to_le_bytes());
        agora_core::sha256(&bytes)
    }
}

/// The shipped scenarios with the node's own merge: every honest node's
/// live view equals the others' and the batch view at every checkpoint.
#[test]
fn the_live_views_of_shipped_scenarios_are_the_batch_views_at_every_checkpoint() {
    for name in ["debate-partition.toml", "fanout.toml", "adversarial.toml"] {
        let s = load(name);
        let violation = live_view_violation(&s, agora_sim::views::live_merge);
        assert_eq!(violation, None, "{name}");
    }
}

/// A merge whose view depends on the order entries arrive in is caught:
/// across the partition, entries reach the other side after later ones,
/// and the report names the checkpoint, the nodes and both hashes.
#[test]
fn a_merge_that_depends_on_arrival_order_is_caught() {
    let s = load("debate-partition.toml");
    let violation = live_view_violation(&s, arrival_ordered).expect("the order-dependent merge is caught");
    assert!(violation.starts_with("at ") && violation.contains(" ms "), "names the checkpoint's time: {violation}");
    assert!(violation.contains("node"), "names the nodes: {violation}");
    let hashes = violation.split(|c: char| !c.is_ascii_hexdigit()).filter(|w| w.len() == 64).count();
    assert_eq!(hashes, 2, "gives both hashes: {violation}");
}
