//! Golden multi-agent scenarios, in process, with real keys and signed
//! entries: the pricing debate, an honest fork its author resolves, and a
//! malicious equivocation that every honest node detects and proves.

mod common;

use agora_core::{EntryId, ForkProof};
use agora_graph::{Event, Status};
use agora_merge::*;
use common::{Swarm, text};

const ALICE: usize = 0;
const BOB: usize = 1;
const CAROL: usize = 2;

/// 000's pricing debate between three agents: alice proposes and refines,
/// bob contradicts and then disputes the refinement (with a counter-claim),
/// carol accepts alice's reasoning and later writes the synthesis.
#[test]
fn pricing_debate() {
    let mut s = Swarm::new(3);
    let (alice, bob, carol) = (s.agent(ALICE), s.agent(BOB), s.agent(CAROL));
    let p1 = s.event(ALICE, Event::Proposition { text: text("Usage-based pricing aligns incentives and reduces low-end friction") });
    let c2 = s.event(BOB, Event::Contradiction { target: p1, text: text("Enterprise procurement requires predictable costs; usage-based is a blocker") });
    let r3 = s.event(
        ALICE,
        Event::Refinement { target: p1, resolves: vec![c2], text: text("Two-track model: seat-based for enterprise, usage-based for self-serve") },
    );
    let carol_accepts_alice = s.merge(CAROL, s.accept_of(&r3));
    let bob_accepts_p1 = s.merge(BOB, s.accept_of(&p1));
    let dispute = s.merge(
        BOB,
        MergeEvent::Dispute {
            target: r3,
            reason: text("two tracks double the billing system"),
            counter_claim: Some(text("one usage-based plan with a spend cap")),
        },
    );
    s.merge(CAROL, s.accept_of(&c2));
    s.merge(ALICE, s.accept_of(&c2));
    let synthesis = s
        .event(CAROL, Event::Synthesis { sources: vec![p1, r3], text: text("Pricing should track how value is realized; the two-track model is an instance") });
    let m = s.compute();

    // Every merge event applied.
    for r in m.records() {
        assert_eq!(r.status, MergeStatus::Applied, "{:?}", r.event);
    }
    assert_eq!(m.frontier(&carol, &alice).unwrap().seq, 2);
    assert_eq!(m.frontier(&carol, &alice).unwrap().accept, carol_accepts_alice);
    assert_eq!(m.frontier(&bob, &alice).unwrap().seq, 1);
    assert_eq!(m.frontier(&bob, &alice).unwrap().accept, bob_accepts_p1);
    assert_eq!(m.frontier(&alice, &bob).unwrap().seq, 1);

    // Perspectives: each agent's statuses over what it accepted.
    let pa = m.perspective(&alice);
    assert_eq!(pa.included, vec![(alice, 3), (bob, 1)].into_iter().collect::<std::collections::BTreeMap<_, _>>().into_iter().collect::<Vec<_>>());
    assert_eq!(pa.status(&p1), Some(Status::Superseded));
    assert_eq!(pa.status(&c2), Some(Status::Resolved));
    assert_eq!(pa.status(&r3), Some(Status::Resolved));
    assert_eq!(pa.status(&synthesis), None, "alice has not accepted carol's chain");
    let pb = m.perspective(&bob);
    assert_eq!(pb.status(&p1), Some(Status::Contested), "bob accepted the proposition, not the refinement");
    assert_eq!(pb.status(&c2), Some(Status::Active));
    assert_eq!(pb.status(&r3), None);
    assert!(pb.disputed(&r3));
    assert_eq!(pb.disputes.len(), 1);
    assert_eq!(pb.disputes[0].counter_claim.as_deref(), Some("one usage-based plan with a spend cap"));
    let pc = m.perspective(&carol);
    assert_eq!(pc.status(&p1), Some(Status::Superseded));
    assert_eq!(pc.status(&r3), Some(Status::Resolved));
    assert_eq!(pc.status(&synthesis), Some(Status::Active));
    assert!(pc.disputes.is_empty());

    // Consensus 2 of 3: alice's chain through the refinement (alice and carol),
    // and the refinement is where the provenance forks.
    let all = m.agents();
    let k2 = m.consensus(&all, 2).unwrap();
    let chain = |c: &Consensus, a| c.chains.iter().find(|x| x.author == a).unwrap().clone();
    let ca = chain(&k2, alice);
    assert_eq!((ca.accepted_seq, ca.accepted_head), (2, Some(r3)));
    assert_eq!(ca.first_disputed, Some((2, r3)));
    assert_eq!(ca.disputed.len(), 1);
    assert_eq!(ca.disputed[0].by, vec![(bob, dispute)]);
    assert_eq!(chain(&k2, bob).accepted_seq, 1, "bob's contradiction is accepted by alice and carol");
    assert_eq!(chain(&k2, carol).accepted_seq, 0);
    // 3 of 3: only the proposition.
    let k3 = m.consensus(&all, 3).unwrap();
    assert_eq!(chain(&k3, alice).accepted_seq, 1);
    assert!(matches!(m.consensus(&all, 4), Err(ConsensusError::Quorum { quorum: 4, agents: 3 })));
    assert!(matches!(m.consensus(&all, 0), Err(ConsensusError::Quorum { .. })));

    // Disagreement map: the refinement, the reasoning that led to it, who
    // accepts and who disputes it.
    let d = m.disagreements(None);
    assert_eq!(d.disputed.len(), 1);
    let r = &d.disputed[0];
    assert_eq!((r.target, r.author, r.seq, r.kind.as_str()), (r3, alice, 2, "refinement"));
    assert_eq!(r.ancestors, vec![p1, c2]);
    assert!(!r.ancestors_truncated);
    let mut acceptors = vec![alice, carol];
    acceptors.sort();
    assert_eq!(r.accepted_by, acceptors);
    assert_eq!(r.disputes.len(), 1);
    assert_eq!((r.disputes[0].by, r.disputes[0].dispute), (bob, dispute));
    assert!(d.forks.is_empty());
    // Only carol's marks: no dispute of hers.
    assert!(m.disagreements(Some(&[carol])).disputed.is_empty());

    // Audit of bob.
    let audit = m.audit(&bob);
    assert!(audit.is_clean(), "{audit:?}");
    assert_eq!(audit.disputes_made.len(), 1);
    assert_eq!(audit.accepts_made.len(), 1);
    assert_eq!(audit.frontiers.len(), 1);
    let audit_alice = m.audit(&alice);
    assert_eq!(audit_alice.disputes_against.len(), 1);
    assert_eq!(audit_alice.accepted_by.len(), 2);

    // The merged view: every reasoning event, with the dispute mark.
    let view = m.merged_view();
    assert_eq!(view.len(), 4);
    let node = view.nodes().find(|n| n.id == r3).unwrap();
    assert_eq!(node.disputed_by.iter().map(|d| (d.by, d.dispute)).collect::<Vec<_>>(), vec![(bob, dispute)]);
    assert_eq!(view.node(&r3).as_ref(), Some(&node));
    assert_eq!(node.status, "resolved");
    let before = m.view_hash();

    // Bob withdraws after the synthesis: no open disagreement is left.
    let withdraw = s.merge(BOB, MergeEvent::Withdraw { dispute });
    let m = s.compute();
    assert_eq!(m.record(&dispute).unwrap().status, MergeStatus::Withdrawn { by: withdraw });
    assert_eq!(m.record(&withdraw).unwrap().status, MergeStatus::Applied);
    assert!(m.disagreements(None).disputed.is_empty());
    assert_eq!(chain(&m.consensus(&all, 2).unwrap(), alice).first_disputed, None);
    assert!(!m.perspective(&bob).disputed(&r3));
    assert_ne!(m.view_hash(), before);
}

/// An honest fork: alice restores an old backup and continues from it; the
/// views freeze her chain at the last shared entry until she signs which branch
/// continues, then follow it. Both branches stay inspectable.
#[test]
fn honest_fork_resolved_by_its_author() {
    let mut s = Swarm::new(3);
    let (alice, bob, carol) = (s.agent(ALICE), s.agent(BOB), s.agent(CAROL));
    let base: Vec<EntryId> = (0..5).map(|i| s.event(ALICE, Event::Proposition { text: format!("step {i}") })).collect();
    let l6 = s.event(ALICE, Event::Proposition { text: text("left 6") });
    let l7 = s.event(ALICE, Event::Support { target: l6, text: text("left 7") });
    // Carol accepted the old machine's chain before the fork was known.
    let carol_accept = s.merge(CAROL, s.accept_of(&l7));
    // Restored from the backup at seq 5: a second seq 6 and 7.
    let r6 = s.append_after(ALICE, Some(base[4]), Event::Proposition { text: text("right 6") }.encode());
    let r7 = s.event(ALICE, Event::Support { target: r6, text: text("right 7") });
    let bob_accept = s.merge(BOB, s.accept_of(&base[3]));
    let bob_builds = s.event(BOB, Event::Support { target: r6, text: text("bob builds on the restored branch") });

    let m = s.compute();
    let chain = m.chain(&alice).unwrap();
    let fork = chain.frozen().expect("frozen");
    assert_eq!((fork.seq, fork.shared), (6, Some(base[4])));
    let mut both = vec![l6, r6];
    both.sort();
    assert_eq!(fork.candidates, both);
    assert_eq!(chain.view_len(), 5);
    assert_eq!(chain.fork_seqs, vec![6, 7]);
    assert_eq!(m.view_head(&alice), Some((5, base[4])));
    // Carol's accept crosses the fork: counted only up to the shared entry.
    match &m.record(&carol_accept).unwrap().status {
        MergeStatus::Clipped { effective_seq: 5, rule: MergeRuleError::CrossesFork { fork_seq: 6, .. } } => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(m.frontier(&carol, &alice).unwrap().seq, 5);
    assert_eq!(m.record(&bob_accept).unwrap().status, MergeStatus::Applied);
    // Consensus cannot pass the freeze point.
    let k = m.consensus(&m.agents(), 2).unwrap();
    let ca = k.chains.iter().find(|c| c.author == alice).unwrap();
    assert_eq!((ca.accepted_seq, ca.frozen_at), (5, Some(6)));
    // Branch view: who accepts and who builds on which side.
    let d = m.disagreements(None);
    assert_eq!(d.forks.len(), 1);
    let side = |first| d.forks[0].branches.iter().find(|b| b.first == first).unwrap().clone();
    assert_eq!(side(l6).accepted_by, vec![carol]);
    assert_eq!(side(l6).tips, vec![(7, l7)]);
    assert_eq!(side(r6).built_on_by, vec![bob]);
    assert_eq!(side(r6).tips, vec![(7, r7)]);
    assert!(!side(r6).kept && !side(l6).kept);
    // The fork is proven; alice may write nothing but a resolution.
    let audit = m.audit(&alice);
    assert_eq!(audit.proofs.len(), 2, "one proof per forked seq (6 and 7)");
    for p in &audit.proofs {
        p.check().unwrap();
    }
    assert!(matches!(
        m.check(&alice, &MergeEvent::Dispute { target: bob_builds, reason: text("x"), counter_claim: None }),
        Err(MergeRuleError::SignerForked { fork_seq: 6, .. })
    ));
    let frozen_hash = m.view_hash();

    // Alice resolves: keep the restored branch.
    let plan = m.plan_resolution(&alice, &r6).unwrap();
    assert_eq!(plan.event, MergeEvent::ForkResolution { fork_number: 1, fork_seq: 6, continue_with: r6 });
    assert_eq!(plan.append_after, r7);
    m.check(&alice, &plan.event).unwrap();
    let resolution = s.append_after(ALICE, Some(plan.append_after), plan.event.encode());
    let m = s.compute();
    let chain = m.chain(&alice).unwrap();
    assert!(chain.frozen().is_none());
    assert_eq!(m.view_chain(&alice), [&base[..], &[r6, r7, resolution]].concat());
    assert_eq!(m.record(&resolution).unwrap().status, MergeStatus::Applied);
    assert!(matches!(chain.forks[0].outcome, ForkOutcome::Resolved { continue_with, fork_number: 1, .. } if continue_with == r6));
    match &m.record(&carol_accept).unwrap().status {
        MergeStatus::Clipped { effective_seq: 5, rule: MergeRuleError::DroppedBranch { fork_seq: 6, .. } } => {}
        other => panic!("{other:?}"),
    }
    // Both branches stay inspectable.
    assert!(m.entry(&l6).is_some() && m.entry(&l7).is_some());
    assert!(!m.on_view(&l6) && m.on_view(&r6));
    let d = m.disagreements(None);
    assert!(d.forks[0].branches.iter().any(|b| b.first == r6 && b.kept));
    // The merged graph follows the kept branch.
    let view = m.merged_view();
    assert!(view.nodes().any(|n| n.id == r7) && !view.nodes().any(|n| n.id == l7));
    assert_ne!(m.view_hash(), frozen_hash);
    // Alice writes again; a second resolution with the same number is refused.
    m.check(&alice, &MergeEvent::Accept { author: bob, up_to_seq: 2, head: bob_builds }).unwrap();
    let again = MergeEvent::ForkResolution { fork_number: 1, fork_seq: 6, continue_with: l6 };
    assert!(matches!(m.check(&alice, &again), Err(MergeRuleError::ForkNumberNotIncreasing { fork_number: 1, previous: 1 })));
    // Changing her mind needs a higher number; then the view follows the other branch.
    let flip = s.append_after(ALICE, Some(l7), MergeEvent::ForkResolution { fork_number: 2, fork_seq: 6, continue_with: l6 }.encode());
    let m = s.compute();
    assert_eq!(m.view_chain(&alice), [&base[..], &[l6, l7, flip]].concat());
    assert_eq!(m.record(&resolution).unwrap().status, MergeStatus::Idle);
    assert_eq!(m.record(&carol_accept).unwrap().status, MergeStatus::Applied, "carol's accept is on the kept branch now");
}

/// Mallory signs two different seq-4 entries and shows each to a different
/// peer. Every honest node, whatever part it holds, detects the equivocation,
/// proves it, freezes mallory's chain at seq 3, and computes the same view.
#[test]
fn malicious_equivocation_is_detected_and_proven_by_every_honest_node() {
    let mut s = Swarm::new(4);
    const MALLORY: usize = 3;
    let mallory = s.agent(MALLORY);
    let m1 = s.event(MALLORY, Event::Proposition { text: text("ship on friday") });
    s.event(MALLORY, Event::Support { target: m1, text: text("the tests pass") });
    let m3 = s.event(MALLORY, Event::Support { target: m1, text: text("the client agreed") });
    let a1 = s.event(ALICE, Event::Contradiction { target: m1, text: text("the migration is not done") });
    s.merge(BOB, s.accept_of(&m3));
    s.merge(CAROL, s.accept_of(&a1));
    // Two seq-4 entries: one for bob, one for carol.
    let to_bob = s.sign_after(MALLORY, Some(m3), &Event::Proposition { text: text("alice agreed to friday") }.encode());
    let to_carol = s.sign_after(MALLORY, Some(m3), &Event::Proposition { text: text("bob agreed to friday") }.encode());
    let proof = ForkProof::new(to_bob.clone(), to_carol.clone()).unwrap();
    let proof_bytes = proof.encode();

    let common = s.entries.clone();
    let with = |e: &agora_core::SignedEntry| {
        let mut v = common.clone();
        let payload = match e.id() == to_bob.id() {
            true => Event::Proposition { text: text("alice agreed to friday") }.encode(),
            false => Event::Proposition { text: text("bob agreed to friday") }.encode(),
        };
        v.push(MergeEntry::new(e.clone(), Some(&payload)).unwrap());
        v
    };
    // Before gossip: bob and carol each see a clean chain, of different heads.
    let bob_alone = with(&to_bob);
    let carol_alone = with(&to_carol);
    let mb = Merge::compute(&bob_alone, &[]).unwrap();
    let mc = Merge::compute(&carol_alone, &[]).unwrap();
    assert_eq!(mb.chain(&mallory).unwrap().view_len(), 4);
    assert_eq!(mc.chain(&mallory).unwrap().view_len(), 4);
    assert_ne!(mb.view_hash(), mc.view_hash());

    // After gossip of the proof (bob and carol), or of both entries (alice).
    let received = decode_fork_proof(&proof_bytes).unwrap();
    let proofs = vec![received];
    let mut both = with(&to_bob);
    both.push(MergeEntry::new(to_carol.clone(), Some(&Event::Proposition { text: text("bob agreed to friday") }.encode())).unwrap());
    let nodes = [Merge::compute(&bob_alone, &proofs).unwrap(), Merge::compute(&carol_alone, &proofs).unwrap(), Merge::compute(&both, &[]).unwrap()];
    let hash = nodes[0].view_hash();
    for m in &nodes {
        let chain = m.chain(&mallory).unwrap();
        let fork = chain.frozen().expect("every honest node freezes mallory's chain");
        assert_eq!((fork.seq, fork.shared, chain.view_len()), (4, Some(m3), 3));
        let audit = m.audit(&mallory);
        assert_eq!(audit.fork_seqs, vec![4]);
        assert_eq!(audit.proofs.len(), 1);
        assert_eq!(audit.proofs[0].encode(), proof_bytes, "the same standalone proof everywhere");
        assert_eq!(m.view_hash(), hash, "same view on every honest node");
        // Bob's accept of seq 3 stands; nothing of mallory's past seq 3 counts.
        assert_eq!(m.frontier(&s.agent(BOB), &mallory).unwrap().seq, 3);
        assert!(m.merged_view().nodes().all(|n| n.id != to_bob.id() && n.id != to_carol.id()));
    }

    // Nobody else can resolve mallory's fork: carol's "resolution" naming
    // mallory's entry is refused locally and invalid from a peer.
    let forged_resolution = MergeEvent::ForkResolution { fork_number: 1, fork_seq: 4, continue_with: to_bob.id() };
    assert!(matches!(nodes[2].check(&s.agent(CAROL), &forged_resolution), Err(MergeRuleError::ResolutionForeign { .. })));
    let mut s2 = s;
    let r = s2.merge(CAROL, forged_resolution);
    let mut all = s2.entries.clone();
    all.push(MergeEntry::new(to_bob.clone(), Some(&Event::Proposition { text: text("alice agreed to friday") }.encode())).unwrap());
    all.push(MergeEntry::new(to_carol, Some(&Event::Proposition { text: text("bob agreed to friday") }.encode())).unwrap());
    let m = Merge::compute(&all, &[]).unwrap();
    assert!(matches!(m.record(&r).unwrap().status, MergeStatus::Invalid(MergeRuleError::ResolutionForeign { .. })));
    assert!(m.chain(&mallory).unwrap().frozen().is_some());
}
