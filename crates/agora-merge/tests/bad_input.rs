//! Every bad input of issue 5: refused when written locally (a typed error
//! naming what and where), kept and reported when it comes from a peer, never
//! silently applied, never a panic.

mod common;

use agora_core::{AgentId, EntryId, ForkProof, ForkProofError};
use agora_graph::Event;
use agora_merge::*;
use common::{Swarm, text};

fn prop(t: &str) -> Event {
    Event::Proposition { text: text(t) }
}

#[test]
fn dispute_of_an_unknown_event_is_pending_until_it_arrives() {
    let mut s = Swarm::new(2);
    let a1 = s.event(0, prop("a1"));
    let a2 = s.event(0, prop("a2"));
    let held = s.without(&[a2]);
    let m = Merge::compute(&held, &[]).unwrap();
    let dispute = MergeEvent::Dispute { target: a2, reason: text("no"), counter_claim: None };
    assert_eq!(m.check(&s.agent(1), &dispute), Err(MergeRuleError::UnknownEntry { what: "dispute target", id: a2 }));
    // From a peer: held as pending.
    let d = s.merge(1, dispute);
    let held = s.without(&[a2]);
    let m = Merge::compute(&held, &[]).unwrap();
    assert_eq!(m.record(&d).unwrap().status, MergeStatus::Pending { missing: a2 });
    assert!(m.disagreements(None).disputed.is_empty(), "a pending dispute marks nothing");
    // It arrives.
    let m = s.compute();
    assert_eq!(m.record(&d).unwrap().status, MergeStatus::Applied);
    assert_eq!(m.disagreements(None).disputed[0].target, a2);
    let _ = a1;
}

#[test]
fn accept_beyond_the_known_head_is_pending_until_the_chain_reaches_it() {
    let mut s = Swarm::new(2);
    let a: Vec<EntryId> = (0..4).map(|i| s.event(0, prop(&format!("a{i}")))).collect();
    let accept = s.accept_of(&a[3]);
    // This node holds only seq 1..2 of agent 0.
    let partial = s.without(&a[2..]);
    let m = Merge::compute(&partial, &[]).unwrap();
    assert_eq!(m.check(&s.agent(1), &accept), Err(MergeRuleError::BeyondHead { author: s.agent(0), up_to_seq: 4, head_seq: 2 }));
    let acc = s.merge(1, accept.clone());
    let partial = s.without(&a[2..]);
    let m = Merge::compute(&partial, &[]).unwrap();
    assert_eq!(m.record(&acc).unwrap().status, MergeStatus::Pending { missing: a[3] });
    assert_eq!(m.frontier(&s.agent(1), &s.agent(0)), None);
    // Seq 4 arrives but seq 3 does not: still pending, waiting for seq 3.
    let gap = s.without(&[a[2]]);
    let m = Merge::compute(&gap, &[]).unwrap();
    assert_eq!(m.record(&acc).unwrap().status, MergeStatus::Pending { missing: a[2] });
    assert_eq!(m.chain(&s.agent(0)).unwrap().view_len(), 2);
    // The chain reaches it.
    let m = s.compute();
    assert_eq!(m.record(&acc).unwrap().status, MergeStatus::Applied);
    assert_eq!(m.frontier(&s.agent(1), &s.agent(0)).unwrap().seq, 4);
}

#[test]
fn accept_crossing_a_fork_point_is_refused_and_clipped() {
    let mut s = Swarm::new(2);
    let a1 = s.event(0, prop("a1"));
    let a2 = s.event(0, prop("a2"));
    let a3 = s.event(0, prop("a3"));
    let b2 = s.append_after(0, Some(a1), prop("b2").encode());
    let m = s.compute();
    let across = s.accept_of(&a3);
    assert_eq!(m.check(&s.agent(1), &across), Err(MergeRuleError::CrossesFork { author: s.agent(0), up_to_seq: 3, fork_seq: 2 }));
    assert!(m.check(&s.agent(1), &s.accept_of(&a1)).is_ok(), "the shared prefix can be accepted");
    let acc = s.merge(1, across);
    let m = s.compute();
    match &m.record(&acc).unwrap().status {
        MergeStatus::Clipped { effective_seq: 1, rule } => assert_eq!(rule.code(), "crosses_fork"),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.frontier(&s.agent(1), &s.agent(0)).unwrap().seq, 1);
    let p = m.perspective(&s.agent(1));
    assert!(p.status(&a1).is_some() && p.status(&a2).is_none() && p.status(&b2).is_none());
    // A fork at seq 1: nothing is shared, so nothing is counted.
    let mut t = Swarm::new(2);
    let x = t.event(0, prop("x"));
    let y = t.append_after(0, None, prop("y").encode());
    let acc = t.merge(1, t.accept_of(&x));
    let m = t.compute();
    assert!(matches!(m.record(&acc).unwrap().status, MergeStatus::Clipped { effective_seq: 0, .. }));
    assert_eq!(m.frontier(&t.agent(1), &t.agent(0)), None);
    assert_eq!(m.chain(&t.agent(0)).unwrap().frozen().unwrap().shared, None);
    let _ = y;
}

#[test]
fn forged_fork_proofs_are_refused() {
    let mut s = Swarm::new(2);
    let a1 = s.event(0, prop("a1"));
    let x = s.sign_after(0, Some(a1), b"x");
    let y = s.sign_after(0, Some(a1), b"y");
    let good = ForkProof::new(x.clone(), y.clone()).unwrap().encode();
    assert!(decode_fork_proof(&good).is_ok());
    // A flipped bit in one signature.
    let mut forged = good.clone();
    let n = forged.len();
    forged[n - 5] ^= 0x01;
    assert!(matches!(decode_fork_proof(&forged), Err(InputError::ForkProof(ForkProofError::EntrySignature { .. }))));
    // Another author's key signing a "fork" of agent 0: the header names agent 0
    // but the signature is agent 1's.
    let mut s1 = s.sign_after(1, None, b"z").encode();
    s1[1..33].copy_from_slice(s.agent(0).as_bytes());
    let relabeled = agora_core::SignedEntry::decode(&s1).unwrap();
    assert!(matches!(
        ForkProof::new(x.clone(), relabeled),
        Err(ForkProofError::DifferentAuthors(..) | ForkProofError::NotConflicting(..) | ForkProofError::EntrySignature { .. })
    ));
    // Truncated and oversized bytes.
    assert!(decode_fork_proof(&good[..good.len() - 1]).is_err());
    assert!(matches!(decode_fork_proof(&vec![1u8; 600]), Err(InputError::ForkProof(ForkProofError::TooLong(600)))));
    // A refused proof changes nothing: without it the chain is not forked.
    let m = s.compute();
    assert!(m.chain(&s.agent(0)).unwrap().frozen().is_none());
    // With the good proof, and nothing else, the chain is frozen at seq 1.
    let proofs = vec![decode_fork_proof(&good).unwrap()];
    let m = Merge::compute(&s.entries, &proofs).unwrap();
    assert_eq!(m.chain(&s.agent(0)).unwrap().frozen().unwrap().seq, 2);
}

#[test]
fn fork_resolution_by_another_agent_or_without_increase_is_refused_and_invalid() {
    let mut s = Swarm::new(2);
    let a1 = s.event(0, prop("a1"));
    let a2 = s.event(0, prop("a2"));
    let b2 = s.append_after(0, Some(a1), prop("b2").encode());
    let m = s.compute();
    let foreign = MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: a2 };
    assert!(matches!(m.check(&s.agent(1), &foreign), Err(MergeRuleError::ResolutionForeign { .. })));
    let wrong_seq = MergeEvent::ForkResolution { fork_number: 1, fork_seq: 3, continue_with: a2 };
    assert!(matches!(m.check(&s.agent(0), &wrong_seq), Err(MergeRuleError::ResolutionSeq { fork_seq: 3, found_seq: 2, .. })));
    let zero = MergeEvent::ForkResolution { fork_number: 0, fork_seq: 2, continue_with: a2 };
    assert_eq!(m.check(&s.agent(0), &zero), Err(MergeRuleError::ForkNumberNotIncreasing { fork_number: 0, previous: 0 }));
    let no_fork = MergeEvent::ForkResolution { fork_number: 1, fork_seq: 1, continue_with: a1 };
    assert_eq!(m.check(&s.agent(0), &no_fork), Err(MergeRuleError::NoFork { author: s.agent(0), fork_seq: 1 }));
    // From peers: kept, invalid, no effect.
    let f = s.merge(1, foreign);
    let z = s.append_after(0, Some(a2), zero.encode());
    let m = s.compute();
    assert!(matches!(m.record(&f).unwrap().status, MergeStatus::Invalid(MergeRuleError::ResolutionForeign { .. })));
    assert!(matches!(m.record(&z).unwrap().status, MergeStatus::Invalid(MergeRuleError::ForkNumberNotIncreasing { .. })));
    assert!(m.chain(&s.agent(0)).unwrap().frozen().is_some());
    // A valid resolution (number 1), then one that does not increase (1 again) on top.
    let r1 = s.append_after(0, Some(b2), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: b2 }.encode());
    let r1b = s.append_after(0, Some(r1), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: a2 }.encode());
    let m = s.compute();
    assert_eq!(m.record(&r1).unwrap().status, MergeStatus::Applied);
    assert_eq!(m.record(&r1b).unwrap().status, MergeStatus::Invalid(MergeRuleError::ForkNumberNotIncreasing { fork_number: 1, previous: 1 }));
    assert_eq!(m.view_chain(&s.agent(0)), vec![a1, b2, r1, r1b]);
    // Equal highest numbers naming different branches: conflicting, frozen.
    let mut t = Swarm::new(1);
    let x1 = t.event(0, prop("x1"));
    let l = t.event(0, prop("l"));
    let r = t.append_after(0, Some(x1), prop("r").encode());
    t.append_after(0, Some(l), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: l }.encode());
    t.append_after(0, Some(r), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: r }.encode());
    let m = t.compute();
    let fork = m.chain(&t.agent(0)).unwrap().frozen().unwrap().clone();
    assert!(matches!(fork.outcome, ForkOutcome::Conflicting { ref resolutions } if resolutions.len() == 2));
}

#[test]
fn other_rule_breaks_are_refused_locally_and_invalid_from_peers() {
    let mut s = Swarm::new(3);
    let a1 = s.event(0, prop("a1"));
    let b1 = s.event(1, prop("b1"));
    let (a, b, c) = (s.agent(0), s.agent(1), s.agent(2));
    let m = s.compute();
    // Accepting oneself, seq 0, a head that is not the named position.
    assert_eq!(m.check(&a, &s.accept_of(&a1)), Err(MergeRuleError::SelfAccept(a)));
    assert_eq!(m.check(&b, &MergeEvent::Accept { author: a, up_to_seq: 0, head: a1 }), Err(MergeRuleError::ZeroSeq));
    assert!(matches!(m.check(&c, &MergeEvent::Accept { author: a, up_to_seq: 1, head: b1 }), Err(MergeRuleError::HeadMismatch { .. })));
    assert!(matches!(m.check(&c, &MergeEvent::Accept { author: a, up_to_seq: 2, head: a1 }), Err(MergeRuleError::HeadMismatch { found_seq: 1, .. })));
    // Disputing oneself; disputing twice.
    assert_eq!(m.check(&a, &MergeEvent::Dispute { target: a1, reason: text("x"), counter_claim: None }), Err(MergeRuleError::SelfDispute(a1)));
    // Text over the limit.
    let long = MergeEvent::Dispute { target: b1, reason: "x".repeat(payload::TEXT_BYTES_MAX + 1), counter_claim: None };
    assert!(matches!(m.check(&a, &long), Err(MergeRuleError::Decode(MergeDecodeError::Limit(_)))));

    let self_accept = s.merge(0, s.accept_of(&a1));
    let mismatch = s.merge(2, MergeEvent::Accept { author: a, up_to_seq: 1, head: b1 });
    let self_dispute = s.merge(0, MergeEvent::Dispute { target: a1, reason: text("x"), counter_claim: None });
    let d = s.merge(2, MergeEvent::Dispute { target: a1, reason: text("no"), counter_claim: None });
    let m = s.compute();
    assert_eq!(
        m.check(&c, &MergeEvent::Dispute { target: a1, reason: text("again"), counter_claim: None }),
        Err(MergeRuleError::AlreadyDisputed { target: a1, dispute: d })
    );
    // Withdrawing someone else's dispute, a non-dispute, twice.
    assert!(matches!(m.check(&b, &MergeEvent::Withdraw { dispute: d }), Err(MergeRuleError::NotOwnDispute { .. })));
    assert_eq!(m.check(&c, &MergeEvent::Withdraw { dispute: mismatch }), Err(MergeRuleError::NotADispute(mismatch)));
    let not_own = s.merge(1, MergeEvent::Withdraw { dispute: d });
    let w1 = s.merge(2, MergeEvent::Withdraw { dispute: d });
    let w2 = s.merge(2, MergeEvent::Withdraw { dispute: d });
    // A newer kind and a garbled payload from a peer.
    let newer = s.append(1, b"agmg\x01\x09".to_vec());
    let garbled = s.append(1, b"agmg\x01\x00\x01".to_vec());
    let m = s.compute();
    let status = |id: &EntryId| m.record(id).unwrap().status.clone();
    assert_eq!(status(&self_accept), MergeStatus::Invalid(MergeRuleError::SelfAccept(a)));
    assert!(matches!(status(&mismatch), MergeStatus::Invalid(MergeRuleError::HeadMismatch { .. })));
    assert_eq!(status(&self_dispute), MergeStatus::Invalid(MergeRuleError::SelfDispute(a1)));
    assert!(matches!(status(&not_own), MergeStatus::Invalid(MergeRuleError::NotOwnDispute { .. })));
    assert_eq!(status(&d), MergeStatus::Withdrawn { by: w1 });
    assert_eq!(status(&w1), MergeStatus::Applied);
    assert_eq!(status(&w2), MergeStatus::Invalid(MergeRuleError::AlreadyWithdrawn { dispute: d, by: w1 }));
    assert_eq!(status(&newer), MergeStatus::Invalid(MergeRuleError::Decode(MergeDecodeError::UnknownKind(9))));
    assert!(matches!(status(&garbled), MergeStatus::Invalid(MergeRuleError::Decode(MergeDecodeError::Malformed(_)))));
    assert_eq!(m.check(&c, &MergeEvent::Withdraw { dispute: d }), Err(MergeRuleError::AlreadyWithdrawn { dispute: d, by: w1 }));
    // None of it had an effect.
    assert!(m.frontiers().is_empty());
    assert!(m.open_disputes().is_empty());
    let _: AgentId = c;
}

#[test]
fn garbage_never_panics() {
    // Payloads that claim to be merge events, of every length up to 40, on a
    // chain that also has gaps and forks.
    let mut s = Swarm::new(2);
    let a1 = s.event(0, prop("a1"));
    for len in 0..40u8 {
        let mut p = b"agmg\x01".to_vec();
        p.extend((0..len).map(|i| i.wrapping_mul(37).wrapping_add(len)));
        s.append(1, p);
    }
    s.append_after(0, Some(a1), prop("fork").encode());
    s.append_after(0, Some(a1), prop("fork2").encode());
    let held = s.without(&[a1]);
    for entries in [&s.entries, &held] {
        let m = Merge::compute(entries, &[]).unwrap();
        let _ = (m.view_hash(), m.disagreements(None), m.audit(&s.agent(0)), m.audit(&s.agent(1)), m.merged_view());
        let _ = m.consensus(&m.agents(), 1).unwrap();
        let _ = m.perspective(&s.agent(1));
    }
}
