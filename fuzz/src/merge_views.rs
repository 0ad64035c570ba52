//! The `merge_views` target: the merge layer over a swarm whose payloads come
//! from peers.

use crate::fixture;
use crate::layout::read_swarm;
use agora_core::SignedEntry;
use agora_merge::MergeEvent;

pub use agora_merge::residue;

/// `agora_merge::Merge` over a swarm whose payloads come from peers
/// ([`read_swarm`]: chains with forks, merge and reasoning events naming
/// each other, payloads held, redacted or missing). A peer's event that breaks
/// a rule is reported, never a panic; the view is a function of the set of
/// entries (another order, or every entry given again with its payload
/// missing, gives the same view hash and statuses); redacting every held
/// payload to its residue changes no view hash (merge.md, "Chains as the
/// views see them"); `compute_with_view` agrees with `compute` then
/// `merged_view`; the local-write check and the views never panic.
pub fn merge_views(data: &[u8]) {
    use agora_core::Payload;
    use agora_merge::{Merge, MergeEntry};
    let swarm = read_swarm(data);
    let entry = |e: &SignedEntry, what: u8, p: &[u8]| {
        let content = match what {
            0 => Payload::Held(p.to_vec()),
            1 => Payload::Redacted(Some(residue(p))),
            2 => Payload::Redacted(None),
            _ => Payload::Missing,
        };
        MergeEntry::with_content(e.clone(), content).expect("a payload signed with its entry")
    };
    let entries: Vec<MergeEntry> = swarm.iter().map(|(e, what, p)| entry(e, *what, p)).collect();
    let m = Merge::compute(&entries, &[]).expect("within the limits");
    let hash = m.view_hash();
    let statuses = |m: &Merge<'_>| m.records().iter().map(|r| (r.entry, r.status.clone())).collect::<Vec<_>>();
    let expected = statuses(&m);
    let reversed: Vec<MergeEntry> = entries.iter().rev().cloned().collect();
    let again = Merge::compute(&reversed, &[]).expect("within the limits");
    assert_eq!((again.view_hash(), statuses(&again)), (hash, expected.clone()), "the view depends on the order");
    let doubled: Vec<MergeEntry> = entries.iter().cloned().chain(swarm.iter().map(|(e, _, p)| entry(e, 3, p))).collect();
    let again = Merge::compute(&doubled, &[]).expect("within the limits");
    assert_eq!((again.view_hash(), statuses(&again)), (hash, expected.clone()), "an entry given again without its payload changed the view");
    let redacted: Vec<MergeEntry> = swarm.iter().map(|(e, what, p)| entry(e, if *what == 0 { 1 } else { *what }, p)).collect();
    let again = Merge::compute(&redacted, &[]).expect("within the limits");
    assert_eq!(again.view_hash(), hash, "redaction changed the view hash");
    let (with_view, view) = Merge::compute_with_view(&entries, &[]).expect("within the limits");
    assert_eq!(with_view.view_hash(), hash);
    let plain = m.merged_view();
    assert_eq!((view.view_hash, view.graph_digest), (plain.view_hash, plain.graph_digest), "compute_with_view differs");
    let agents: Vec<agora_core::AgentId> = (0..4).map(fixture::agent).collect();
    for a in &agents {
        let _ = m.perspective(a);
        for (_, _, p) in &swarm {
            if let Ok(ev) = MergeEvent::decode(p) {
                let _ = m.check(a, &ev);
            }
        }
    }
    let _ = (m.disagreements(None), m.consensus(&agents, 2), m.open_disputes());
}
