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

/// No merge rule and no perspective is decided by a clock between agents
/// (merge.md, "Order between agents"): a rival agent whose memory item copy,
/// failure judgment, accept, dispute and withdrawal are all dated just
/// before the honest agents' events reads exactly as one dating them just
/// after: the same merge statuses, frontiers, consensus, and statuses in
/// the perspective of an agent that accepts everyone.
#[test]
fn a_backdated_agent_decides_no_merge_rule_and_no_perspective() {
    let base = 1_700_000_000_000u64;
    let run = |rival_offset: i64| {
        let mut s = Swarm::new(3);
        let at = |s: &mut Swarm, t: u64| s.clock = t - 1_000;
        let shifted = |t: u64| t.checked_add_signed(rival_offset).unwrap();
        let lesson = || Event::MemoryItem {
            title: text("Check filings first"),
            description: text("research"),
            content: text("Read the latest 10-K before the news"),
            scope: text("research"),
            source_trajectory: None,
        };
        at(&mut s, base + 1_000);
        let item = s.event(0, lesson());
        at(&mut s, base + 2_000);
        let traj = s.event(0, Event::Trajectory { task_query: text("ACME"), final_answer: text("done"), iterations: 1, converged: true });
        at(&mut s, base + 3_000);
        let usage = s.event(0, Event::Usage { trajectory: traj, item, rank: 1, score_bp: 9_000 });
        at(&mut s, base + 5_000);
        let honest =
            s.event(1, Event::Judgment { trajectory: traj, success: true, reason: text("found it"), confidence: agora_graph::event::Confidence::High });
        // The rival's chain, each entry one millisecond before or after the honest one it races.
        at(&mut s, shifted(base + 1_000));
        let copy = s.event(2, lesson());
        at(&mut s, shifted(base + 5_000));
        s.event(2, Event::Judgment { trajectory: traj, success: false, reason: text("no"), confidence: agora_graph::event::Confidence::High });
        at(&mut s, shifted(base + 5_000));
        s.merge(2, s.accept_of(&usage));
        at(&mut s, shifted(base + 5_000));
        let dispute = s.merge(2, MergeEvent::Dispute { target: honest, reason: text("wrong"), counter_claim: None });
        at(&mut s, shifted(base + 5_000));
        s.merge(2, MergeEvent::Withdraw { dispute });
        let rival_head = s.entries.last().unwrap().id();
        at(&mut s, base + 10_000);
        s.merge(0, s.accept_of(&honest));
        at(&mut s, base + 10_001);
        s.merge(0, s.accept_of(&rival_head));
        at(&mut s, base + 10_002);
        s.merge(1, s.accept_of(&usage));
        let m = s.compute();
        let agents: Vec<_> = (0..3).map(|i| s.agent(i)).collect();
        let statuses: Vec<Vec<&'static str>> = agents.iter().map(|a| m.statuses_of(a).iter().map(|(_, st)| st.name()).collect()).collect();
        let consensus = m.consensus(&agents, 2).unwrap();
        let accepted: Vec<u64> = agents.iter().map(|a| consensus.chains.iter().find(|c| c.author == *a).unwrap().accepted_seq).collect();
        let p = m.perspective(&agents[0]);
        let t = p.graph.node(&traj).unwrap();
        let graph = (p.status(&item), p.status(&copy), t.status(), t.judged(), p.graph.node(&item).unwrap().outcomes());
        (statuses, accepted, graph)
    };
    let before = run(-1);
    let after = run(1);
    assert_eq!(before, after, "a rival dating its events before the honest ones reads as one dating them after");
    let (statuses, _, graph) = after;
    assert_eq!(statuses[2], vec!["applied", "withdrawn", "applied"], "the rival's accept, dispute and withdrawal");
    assert_eq!(graph, (Some(Status::Contested), Some(Status::Contested), Status::Contested, None, (0, 0, 1)));
}
