//! Each view on its own: perspective exclusions, consensus arithmetic, the
//! disagreement map's limits and filters, and the audit's findings.

mod common;

use agora_core::entry::Header;
use agora_core::{EntryId, SignedEntry};
use agora_graph::{Event, Status};
use agora_merge::*;
use common::{Swarm, text};

fn prop(t: &str) -> Event {
    Event::Proposition { text: text(t) }
}

#[test]
fn perspective_leaves_out_what_the_agent_disputes() {
    let mut s = Swarm::new(2);
    let a1 = s.event(0, prop("a1"));
    let a2 = s.event(0, Event::Support { target: a1, text: text("a2") });
    let a3 = s.event(0, Event::Support { target: a2, text: text("a3 builds on a2") });
    let a4 = s.event(0, prop("a4"));
    s.merge(1, s.accept_of(&a4));
    s.merge(1, MergeEvent::Dispute { target: a2, reason: text("wrong"), counter_claim: None });
    let m = s.compute();
    let p = m.perspective(&s.agent(1));
    let mut included = vec![(s.agent(0), 4), (s.agent(1), 2)];
    included.sort();
    assert_eq!(p.included, included, "its own chain (two merge events) and the accepted prefix");
    assert_eq!(p.excluded, vec![a2]);
    assert_eq!(p.status(&a1), Some(Status::Active));
    assert_eq!(p.status(&a2), None);
    assert_eq!(p.status(&a3), None, "a3 refers to the disputed a2: held as pending");
    assert_eq!(p.graph.pending().len(), 1);
    assert_eq!(p.status(&a4), Some(Status::Active));
    // The author's own perspective has everything, and no merge events as nodes.
    let mut own = m.perspective(&s.agent(0));
    assert_eq!(own.graph.len(), 4);
    let mut bobs = m.perspective(&s.agent(1));
    assert!(bobs.graph.nodes().all(|n| n.kind() != "raw"), "merge events are not reasoning nodes");
    assert_ne!(own.hash(), bobs.hash());
}

#[test]
fn consensus_counts_frontiers_minus_disputes() {
    let mut s = Swarm::new(4);
    let a: Vec<EntryId> = (0..5).map(|i| s.event(0, prop(&format!("a{i}")))).collect();
    for agent in 1..4 {
        s.merge(agent, s.accept_of(&a[4]));
    }
    let d = s.merge(3, MergeEvent::Dispute { target: a[2], reason: text("no"), counter_claim: None });
    let m = s.compute();
    let all = m.agents();
    let on = |k: usize, agents: &[agora_core::AgentId]| m.consensus(agents, k).unwrap().chains.into_iter().find(|c| c.author == s.agent(0)).unwrap();
    // Four agents count each of a0..a4, except agent 3 for a2.
    assert_eq!(on(4, &all).accepted_seq, 2);
    assert_eq!(on(3, &all).accepted_seq, 5);
    let c = on(4, &all);
    assert_eq!(c.first_disputed, Some((3, a[2])));
    assert_eq!(c.disputed[0].by, vec![(s.agent(3), d)]);
    assert_eq!(c.frontiers.len(), 4);
    // Only agents 0 and 3 counted: 2 of 2 stops before the dispute.
    let two = [s.agent(0), s.agent(3)];
    assert_eq!(on(2, &two).accepted_seq, 2);
    assert_eq!(on(1, &two).accepted_seq, 5);
    // Agents outside n do not count, their disputes neither.
    let without_3 = [s.agent(0), s.agent(1)];
    let c = on(2, &without_3);
    assert_eq!((c.accepted_seq, c.first_disputed), (5, None));
    assert!(matches!(m.consensus(&[], 1), Err(ConsensusError::Quorum { .. })));
}

#[test]
fn disagreement_map_limits_ancestors_and_filters_agents() {
    let mut s = Swarm::new(3);
    let mut last = s.event(0, prop("root"));
    for i in 0..ANCESTORS_MAX + 5 {
        last = s.event(0, Event::Support { target: last, text: format!("s{i}") });
    }
    s.merge(1, MergeEvent::Dispute { target: last, reason: text("b"), counter_claim: Some(text("c")) });
    s.merge(2, MergeEvent::Dispute { target: last, reason: text("c"), counter_claim: None });
    s.merge(2, s.accept_of(&last));
    let m = s.compute();
    let d = m.disagreements(None);
    assert_eq!(d.disputed.len(), 1);
    let x = &d.disputed[0];
    assert_eq!(x.ancestors.len(), ANCESTORS_MAX);
    assert!(x.ancestors_truncated);
    assert_eq!(x.disputes.len(), 2);
    assert_eq!(x.kind, "support");
    assert!(x.accepted_by.contains(&s.agent(0)) && x.accepted_by.contains(&s.agent(2)));
    let only_1 = m.disagreements(Some(&[s.agent(1)]));
    assert_eq!(only_1.disputed[0].disputes.len(), 1);
    assert!(only_1.disputed[0].accepted_by.is_empty());
}

fn resign(s: &mut Swarm, h: Header) -> SignedEntry {
    SignedEntry::sign(h, &s.keys[0])
}

#[test]
fn audit_reports_gaps_detached_entries_bad_signatures_and_links() {
    let mut s = Swarm::new(2);
    let a: Vec<EntryId> = (0..5).map(|i| s.event(0, prop(&format!("a{i}")))).collect();
    let held = s.without(&[a[2]]);
    let m = Merge::compute(&held, &[]).unwrap();
    let audit = m.audit(&s.agent(0));
    assert_eq!(audit.gaps, vec![(3, 3)]);
    assert_eq!(audit.detached, vec![a[3], a[4]]);
    assert_eq!(audit.missing, vec![(3, a[2])]);
    assert_eq!((audit.view_len, audit.max_seq, audit.held), (2, 5, 4));
    assert!(audit.problems.is_empty());
    assert!(!audit.is_clean());
    assert!(s.compute().audit(&s.agent(0)).is_clean());

    // A corrupted signature and a timestamp that goes backwards.
    let mut bytes = s.signed(&a[4]).encode();
    let n = bytes.len();
    bytes[n - 7] ^= 0x04;
    let bad_sig = SignedEntry::decode(&bytes).unwrap();
    let mut h = s.signed(&a[4]).header().clone();
    h.backlink = Some(a[3]);
    h.timestamp_ms = 1;
    h.payload_hash = agora_core::sha256(b"");
    h.payload_len = 0;
    let backwards = resign(&mut s, h);
    let mut entries = s.without(&[a[4]]);
    entries.push(MergeEntry::new(bad_sig, None).unwrap());
    entries.push(MergeEntry::new(backwards.clone(), Some(b"")).unwrap());
    let m = Merge::compute(&entries, &[]).unwrap();
    let audit = m.audit(&s.agent(0));
    let codes: Vec<&str> = audit.problems.iter().map(|p| p.rule.code()).collect();
    assert!(codes.contains(&"bad_signature") || codes.iter().any(|c| c.contains("sig") || *c == "r_encoding" || *c == "s_non_canonical"), "{codes:?}");
    assert!(codes.contains(&"timestamp_backwards"), "{codes:?}");
    // The backwards entry never joins the view; the other seq-5 entry does,
    // and two entries at seq 5 are a fork.
    assert!(!m.on_view(&backwards.id()));
    assert_eq!(audit.fork_seqs, vec![5]);
    // A payload that does not match its header is refused before the merge layer.
    assert!(MergeEntry::new(s.signed(&a[0]), Some(b"tampered")).is_err());
}

#[test]
fn resolution_plan_needs_a_single_tip() {
    let mut s = Swarm::new(1);
    let a1 = s.event(0, prop("a1"));
    let l = s.event(0, prop("l"));
    let r = s.append_after(0, Some(a1), prop("r").encode());
    s.append_after(0, Some(r), prop("r3").encode());
    s.append_after(0, Some(r), prop("r3'").encode());
    let m = s.compute();
    assert!(matches!(m.plan_resolution(&s.agent(0), &r), Err(MergeRuleError::AmbiguousTip { tips: 2, .. })));
    assert_eq!(m.plan_resolution(&s.agent(0), &l).unwrap().append_after, l);
    assert!(matches!(m.plan_resolution(&s.agent(0), &EntryId([9; 32])), Err(MergeRuleError::UnknownEntry { .. })));
}

/// The live view's memory report counts what it holds: a row of the entry
/// index for every entry (id and location at least), a view slot for each
/// entry on a view, a record for each merge event, with a withdrawn
/// dispute's boxed status and its reason's text; and its parts add up to
/// its total.
#[test]
fn the_live_view_reports_its_memory_by_part() {
    let mut s = Swarm::new(3);
    let ids: Vec<EntryId> = (0..20).map(|i| s.event(i % 3, prop(&format!("p{i}")))).collect();
    let accept = s.accept_of(&ids[18]);
    s.merge(1, accept);
    let dispute = s.merge(2, MergeEvent::Dispute { target: ids[0], reason: text("a reason of some length"), counter_claim: None });
    s.merge(2, MergeEvent::Withdraw { dispute });
    let held = s.without(&[]);
    let live = LiveMerge::from_entries(&held, &[]).unwrap();
    let m = live.memory();
    assert!(m.ids >= held.len() * 32, "every id, in the arena: {m:?}");
    assert!(m.entry_index >= held.len() * 12, "a location and a record number an entry: {m:?}");
    assert!(m.views >= held.len() * 4, "{m:?}");
    assert!(m.records >= 3 * 80 + "a reason of some length".len(), "three records, a reason: {m:?}");
    assert_eq!(m.total(), m.parts().iter().map(|(_, b)| b).sum::<usize>());
}
