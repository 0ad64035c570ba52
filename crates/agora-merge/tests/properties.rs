//! Convergence: the merged view (and its hash) is a function of the set of
//! entries, whatever order they arrive in, over random swarms with accepts,
//! disputes, withdrawals, forks and resolutions.

mod common;

use agora_core::{EntryId, ForkProof};
use agora_graph::{Event, Graph};
use agora_merge::*;
use common::Swarm;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Action {
    agent: usize,
    kind: u8,
    a: usize,
    b: u64,
}

fn action(n: usize) -> impl Strategy<Value = Action> {
    (0..n, 0u8..10, any::<usize>(), any::<u64>()).prop_map(|(agent, kind, a, b)| Action { agent, kind, a, b })
}

/// Play the actions into a swarm. Every choice is derived from the action, so
/// a failing case shrinks and replays exactly.
fn build(n: usize, actions: &[Action]) -> Swarm {
    let mut s = Swarm::new(n);
    let mut reasoning: Vec<EntryId> = Vec::new();
    let mut all: Vec<EntryId> = Vec::new();
    let mut own: Vec<Vec<EntryId>> = vec![Vec::new(); n];
    for (i, act) in actions.iter().enumerate() {
        let pick = |v: &[EntryId]| (!v.is_empty()).then(|| v[act.a % v.len()]);
        let id = match act.kind {
            0 | 1 => Some(s.event(act.agent, Event::Proposition { text: format!("p{i}") })),
            2 => pick(&reasoning).map(|t| s.event(act.agent, Event::Contradiction { target: t, text: format!("c{i}") })),
            3 => pick(&reasoning).map(|t| s.event(act.agent, Event::Support { target: t, text: format!("s{i}") })),
            4 => pick(&all).map(|t| {
                let ev = s.accept_of(&t);
                s.merge(act.agent, ev)
            }),
            5 => pick(&all).map(|t| {
                s.merge(act.agent, MergeEvent::Dispute { target: t, reason: format!("r{i}"), counter_claim: (act.b % 2 == 0).then(|| format!("cc{i}")) })
            }),
            6 => pick(&own[act.agent]).map(|d| s.merge(act.agent, MergeEvent::Withdraw { dispute: d })),
            7 => pick(&own[act.agent]).map(|p| s.append_after(act.agent, Some(p), Event::Proposition { text: format!("f{i}") }.encode())),
            8 => pick(&own[act.agent]).map(|c| {
                let ev = MergeEvent::ForkResolution { fork_number: act.b % 4, fork_seq: s.seq(&c), continue_with: c };
                s.merge(act.agent, ev)
            }),
            _ => pick(&all).map(|t| s.merge(act.agent, MergeEvent::Dispute { target: t, reason: String::new(), counter_claim: None })),
        };
        if let Some(id) = id {
            if matches!(act.kind, 0..=3 | 7) {
                reasoning.push(id);
            }
            all.push(id);
            own[act.agent].push(id);
        }
    }
    s
}

/// Fisher-Yates with the shared generator: a deterministic arrival order
/// per seed (made odd: a zero state would not shuffle).
fn shuffled<T: Clone>(v: &[T], seed: u64) -> Vec<T> {
    let mut rng = agora_core::xorshift::Xorshift64(seed | 1);
    let mut out = v.to_vec();
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i + 1));
    }
    out
}

/// Everything a node would publish or answer, as bytes.
fn fingerprint(m: &Merge<'_>) -> Vec<u8> {
    let mut out = m.canonical_bytes();
    let view = m.merged_view();
    out.extend_from_slice(&view.graph_digest);
    out.extend_from_slice(format!("{:?}", view.nodes().collect::<Vec<_>>()).as_bytes());
    for a in m.agents() {
        out.extend_from_slice(&m.perspective(&a).hash());
        out.extend_from_slice(format!("{:?}", m.audit(&a)).as_bytes());
    }
    if !m.agents().is_empty() {
        out.extend_from_slice(format!("{:?}", m.consensus(&m.agents(), 1.max(m.agents().len() / 2)).unwrap()).as_bytes());
    }
    out.extend_from_slice(format!("{:?}", m.disagreements(None)).as_bytes());
    out
}

/// Proofs for every pair of held entries at one (author, seq).
fn proofs_of(entries: &[MergeEntry]) -> Vec<ForkProof> {
    let mut out = Vec::new();
    for (i, x) in entries.iter().enumerate() {
        for y in &entries[i + 1..] {
            if x.author() == y.author() && x.seq() == y.seq() {
                out.push(ForkProof::new(x.signed().clone(), y.signed().clone()).unwrap());
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Same set, any arrival order: same view, byte for byte.
    #[test]
    fn view_is_independent_of_arrival_order(n in 2usize..5, actions in prop::collection::vec(action(4), 1..60), seeds in prop::collection::vec(any::<u64>(), 3)) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        let reference = Merge::compute(&s.entries, &[]).unwrap();
        let (hash, print) = (reference.view_hash(), fingerprint(&reference));
        for seed in seeds {
            let order = shuffled(&s.entries, seed);
            let m = Merge::compute(&order, &[]).unwrap();
            prop_assert_eq!(m.view_hash(), hash);
            prop_assert!(fingerprint(&m) == print, "views differ for seed {}", seed);
        }
        // In canonical order (as a store hands entries over: the one-pass
        // path), with every entry twice in a row, and with a redacted copy
        // after each held one: the same view.
        let mut canonical = s.entries.clone();
        canonical.sort_by_key(|e| (e.author(), e.seq(), e.id()));
        prop_assert!(fingerprint(&Merge::compute(&canonical, &[]).unwrap()) == print);
        let doubled: Vec<MergeEntry> = canonical.iter().flat_map(|e| [e.clone(), e.clone()]).collect();
        prop_assert_eq!(Merge::compute(&doubled, &[]).unwrap().view_hash(), hash);
        let with_redacted: Vec<MergeEntry> =
            canonical.iter().flat_map(|e| [e.clone(), MergeEntry::new(e.signed().clone(), None).unwrap()]).collect();
        prop_assert!(fingerprint(&Merge::compute(&with_redacted, &[]).unwrap()) == print);
        // Duplicates count once.
        let mut twice = s.entries.clone();
        twice.extend(s.entries.iter().cloned());
        prop_assert_eq!(Merge::compute(&twice, &[]).unwrap().view_hash(), hash);
        // The merge and its view computed together are the two computed apart.
        let (together, view) = Merge::compute_with_view(&s.entries, &[]).unwrap();
        prop_assert!(fingerprint(&together) == print);
        let apart = reference.merged_view();
        prop_assert_eq!((view.view_hash, view.graph_digest), (apart.view_hash, apart.graph_digest));
        prop_assert_eq!(view.nodes().collect::<Vec<_>>(), apart.nodes().collect::<Vec<_>>());
        prop_assert_eq!(&view.disputes, &apart.disputes);
        prop_assert_eq!(&view.chains, &apart.chains);
        // The merged graph is the plain (sorting) replay of every non-merge
        // entry on a view chain.
        let mut log = Vec::new();
        for a in reference.agents() {
            for id in reference.view_chain(&a) {
                let e = s.entries.iter().find(|e| e.id() == id).unwrap();
                if e.payload().is_some_and(MergeEvent::is_merge_payload) {
                    continue;
                }
                let h = e.signed().header();
                log.push((id, h.log_position(), e.payload()));
            }
        }
        prop_assert_eq!(reference.merged_graph().snapshot(), Graph::replay_encoded(&log).snapshot());
        prop_assert_eq!(view.graph().snapshot(), Graph::replay_encoded(&log).snapshot());
        // Proofs of forks whose entries are already held add nothing.
        let proofs = proofs_of(&s.entries);
        prop_assert_eq!(Merge::compute(&s.entries, &proofs).unwrap().view_hash(), hash);
    }

    /// Any subset (a node that has received part of the swarm) computes
    /// without panicking, and two nodes holding the same subset agree.
    #[test]
    fn partial_sets_agree(n in 2usize..5, actions in prop::collection::vec(action(4), 1..50), seed in any::<u64>(), keep in 0usize..50) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        let order = shuffled(&s.entries, seed);
        let part = &order[..keep.min(order.len())];
        let a = Merge::compute(part, &[]).unwrap();
        let other = shuffled(part, seed ^ 0x5555);
        let b = Merge::compute(&other, &[]).unwrap();
        prop_assert!(fingerprint(&a) == fingerprint(&b));
        // Nothing pending refers to something held; nothing applied refers to something missing.
        for r in a.records() {
            if let MergeStatus::Pending { missing } = r.status {
                prop_assert!(!a.contains(&missing) || !a.on_view(&missing));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// What `Merge::check` accepts locally is applied by every node once it is
    /// written; what it refuses is never applied.
    #[test]
    fn local_check_agrees_with_peer_evaluation(n in 2usize..4, actions in prop::collection::vec(action(3), 1..40), probes in prop::collection::vec((0usize..3, 0u8..4, any::<usize>()), 1..8)) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        let ids: Vec<EntryId> = s.entries.iter().map(|e| e.id()).collect();
        for (agent, kind, pick) in probes {
            let agent = agent % n;
            if ids.is_empty() {
                break;
            }
            let target = ids[pick % ids.len()];
            let ev = match kind {
                0 => s.accept_of(&target),
                1 => MergeEvent::Dispute { target, reason: "probe".into(), counter_claim: None },
                2 => MergeEvent::Withdraw { dispute: target },
                _ => MergeEvent::ForkResolution { fork_number: 1 + (pick as u64 % 3), fork_seq: s.seq(&target), continue_with: target },
            };
            let m = Merge::compute(&s.entries, &[]).unwrap();
            let verdict = m.check(&s.agent(agent), &ev);
            // Written after the agent's view head, as the CLI does.
            let head = m.view_head(&s.agent(agent)).map(|(_, id)| id);
            drop(m);
            let mut probe = build(n, &actions);
            let written = match &ev {
                MergeEvent::ForkResolution { .. } => {
                    // A resolution goes after the kept branch's tip.
                    let m = Merge::compute(&probe.entries, &[]).unwrap();
                    match m.plan_resolution(&probe.agent(agent), &target) {
                        Ok(plan) if plan.event == ev => { drop(m); probe.append_after(agent, Some(plan.append_after), ev.encode()) }
                        _ => continue,
                    }
                }
                _ => probe.append_after(agent, head, ev.encode()),
            };
            let after = Merge::compute(&probe.entries, &[]).unwrap();
            let status = after.record(&written).unwrap().status.clone();
            match verdict {
                Ok(()) => prop_assert!(matches!(status, MergeStatus::Applied), "{:?} checked ok but is {:?}", ev, status),
                Err(e) => prop_assert!(!matches!(status, MergeStatus::Applied) || matches!(ev, MergeEvent::ForkResolution { .. }) || matches!(e, MergeRuleError::AlreadyDisputed { .. } | MergeRuleError::SignerForked { .. }), "{:?} refused ({}) but applied", ev, e),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Hardening item 7: a node that redacted any subset of payloads (and
    /// kept their residues) computes the same view hash, the same merged
    /// graph snapshot and the same statuses as a node that redacted none.
    #[test]
    fn redacting_any_subset_keeps_the_views(n in 2usize..5, actions in prop::collection::vec(action(4), 1..60), pick in prop::collection::vec(any::<bool>(), 60)) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        let reference = Merge::compute(&s.entries, &[]).unwrap();
        let redacted: Vec<MergeEntry> = s
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| match e.payload() {
                Some(p) if pick[i % pick.len()] => {
                    MergeEntry::with_content(e.signed().clone(), agora_core::Payload::Redacted(Some(residue(p)))).unwrap()
                }
                _ => e.clone(),
            })
            .collect();
        let m = Merge::compute(&redacted, &[]).unwrap();
        prop_assert_eq!(m.view_hash(), reference.view_hash());
        prop_assert_eq!(m.merged_graph().snapshot(), reference.merged_graph().snapshot());
        let (a, b) = (m.merged_view(), reference.merged_view());
        prop_assert_eq!(a.graph_digest, b.graph_digest);
        prop_assert_eq!(&a.disputes.iter().map(|d| (d.target, d.by, d.dispute)).collect::<Vec<_>>(), &b.disputes.iter().map(|d| (d.target, d.by, d.dispute)).collect::<Vec<_>>());
        for agent in reference.agents() {
            prop_assert_eq!(m.perspective(&agent).hash(), reference.perspective(&agent).hash());
        }
    }

    /// Hardening item 6: an entry whose payload never arrived is never read
    /// as "no event": its author's view chain ends before it (everything
    /// after it is pending; on another branch of a fork, it may be a
    /// resolution of that fork, so the fork waits for it too), and once the
    /// payload arrives the view is the full one again.
    #[test]
    fn a_missing_payload_holds_its_chain_until_it_arrives(n in 2usize..5, actions in prop::collection::vec(action(4), 1..60), which in any::<usize>()) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        prop_assume!(!s.entries.is_empty());
        let reference = Merge::compute(&s.entries, &[]).unwrap();
        let k = which % s.entries.len();
        let gone = &s.entries[k];
        let mut stripped = s.entries.clone();
        stripped[k] = MergeEntry::new(gone.signed().clone(), None).unwrap();
        let m = Merge::compute(&stripped, &[]).unwrap();
        prop_assert!(!m.on_view(&gone.id()), "an entry of unknown meaning is never on a view");
        for id in m.view_chain(&gone.author()) {
            let e = s.entries.iter().find(|e| e.id() == id).unwrap();
            prop_assert!(e.seq() < gone.seq(), "the view ends before the missing entry");
        }
        // The payload arrives (a second copy, held): the full view.
        stripped.push(gone.clone());
        prop_assert_eq!(Merge::compute(&stripped, &[]).unwrap().view_hash(), reference.view_hash());
    }
}

/// The minimal case proptest found for the property above (regression
/// `cc ef5ebe52…`, minimised to four entries): agent 0 writes `p1`, then
/// `b2` and `f2` both after `p1` (a fork at seq 2), and `r3` after `f2`
/// resolving that fork with `f2`. `b2`'s payload is missing (what it says
/// does not matter). `b2` is one of the fork's own candidates, at the fork
/// seq rather than above it, and it too may be a resolution of that fork
/// (it can name its sibling `f2`, or a third one, with a higher number: see
/// the next test). So the fork waits for it: the view is frozen at `p1` and
/// does not reach seq 2 on either branch.
#[test]
fn a_missing_candidate_at_the_fork_seq_freezes_the_fork() {
    let mut s = Swarm::new(1);
    let p1 = s.event(0, Event::Proposition { text: "p1".into() });
    let b2 = s.append_after(0, Some(p1), Event::Proposition { text: "b2".into() }.encode());
    let f2 = s.append_after(0, Some(p1), Event::Proposition { text: "f2".into() }.encode());
    let r3 = s.append_after(0, Some(f2), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: f2 }.encode());
    let author = s.agent(0);

    // With every payload held: resolved, the view follows f2.
    let full = s.compute();
    assert_eq!(full.view_chain(&author), vec![p1, f2, r3]);
    assert_eq!(full.record(&r3).unwrap().status, MergeStatus::Applied);

    // b2's payload missing: the fork at seq 2 is frozen at p1.
    let mut stripped = s.entries.clone();
    let k = stripped.iter().position(|e| e.id() == b2).unwrap();
    stripped[k] = MergeEntry::new(s.signed(&b2), None).unwrap();
    let m = Merge::compute(&stripped, &[]).unwrap();
    assert_eq!(m.view_chain(&author), vec![p1], "the view ends before the missing entry's seq");
    assert!(!m.on_view(&b2) && !m.on_view(&f2) && !m.on_view(&r3));
    let fork = m.chain(&author).unwrap().frozen().expect("frozen until b2 arrives");
    assert_eq!((fork.seq, fork.shared, fork.outcome.clone()), (2, Some(p1), ForkOutcome::Frozen));
    assert_ne!(m.record(&r3).unwrap().status, MergeStatus::Applied);

    // The payload arrives: the full view again.
    stripped.push(s.entries[k].clone());
    assert_eq!(Merge::compute(&stripped, &[]).unwrap().view_hash(), full.view_hash());
}

/// Why the fork above waits: an entry at the fork seq can be a resolution of
/// its own fork, naming a sibling signed before it. Here `d2` (seq 2, fork
/// number 2) picks `g2` over `r3`'s (seq 3, number 1) `f2`. Were `d2`'s
/// missing payload read as "no resolution", the pending view would show `f2`
/// and `r3`, which the full view drops: the view would depend on which
/// relay stripped what.
#[test]
fn a_missing_entry_at_the_fork_seq_may_be_the_resolution_that_decides_it() {
    let mut s = Swarm::new(1);
    let p1 = s.event(0, Event::Proposition { text: "p1".into() });
    let f2 = s.append_after(0, Some(p1), Event::Proposition { text: "f2".into() }.encode());
    let g2 = s.append_after(0, Some(p1), Event::Proposition { text: "g2".into() }.encode());
    let d2 = s.append_after(0, Some(p1), MergeEvent::ForkResolution { fork_number: 2, fork_seq: 2, continue_with: g2 }.encode());
    let r3 = s.append_after(0, Some(f2), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: f2 }.encode());
    let author = s.agent(0);

    let full = s.compute();
    assert_eq!(full.view_chain(&author), vec![p1, g2], "d2 (number 2) decides the fork");
    assert_eq!(full.record(&d2).unwrap().status, MergeStatus::Applied);
    assert_eq!(full.record(&r3).unwrap().status, MergeStatus::Idle);

    let stripped = s.entries.iter().map(|e| if e.id() == d2 { MergeEntry::new(e.signed().clone(), None).unwrap() } else { e.clone() }).collect::<Vec<_>>();
    let m = Merge::compute(&stripped, &[]).unwrap();
    assert_eq!(m.view_chain(&author), vec![p1], "frozen until d2 arrives, never on the branch d2 drops");
    assert!(!m.on_view(&f2) && !m.on_view(&r3));
    assert_ne!(m.record(&r3).unwrap().status, MergeStatus::Applied);
}

/// A delivery to a live node: entries, some without their payload.
#[derive(Clone, Debug)]
enum Step {
    /// These entries arrive (an index into the shuffled history, how many,
    /// and whether their payloads are stripped).
    Arrive { count: usize, stripped: bool },
    /// The payload of a stripped entry arrives.
    FillIn { pick: usize },
    /// A held payload is redacted here (its residue kept).
    Redact { pick: usize },
    /// A fork proof of a held fork arrives.
    Proof { pick: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1usize..6, prop::bool::weighted(0.15)).prop_map(|(count, stripped)| Step::Arrive { count, stripped }),
        1 => any::<usize>().prop_map(|pick| Step::FillIn { pick }),
        1 => any::<usize>().prop_map(|pick| Step::Redact { pick }),
        1 => any::<usize>().prop_map(|pick| Step::Proof { pick }),
    ]
}

/// Everything an audit says, as text (a record's place in a recompute's
/// tables is not part of it).
fn audit_parts(a: &agora_merge::Audit) -> String {
    let records =
        |rs: &[agora_merge::MergeRecord]| rs.iter().map(|r| format!("{} {} {} {:?} {:?}", r.entry, r.signer, r.seq, r.event, r.status)).collect::<Vec<_>>();
    format!(
        "{:#?}",
        (
            (a.agent, a.held, a.max_seq, a.view_len, a.problems.iter().map(ToString::to_string).collect::<Vec<_>>(), &a.gaps, &a.detached, &a.missing),
            (&a.fork_seqs, &a.forks, a.proofs.iter().map(|p| hex::encode(p.encode())).collect::<Vec<_>>()),
            (records(&a.resolutions), records(&a.disputes_against), records(&a.disputes_made), records(&a.accepts_made)),
            (&a.frontiers, &a.accepted_by),
        )
    )
}

/// What is known of an entry's payload, owned (what a store answers).
fn payload_of(e: &MergeEntry) -> agora_core::Payload {
    match e.content() {
        agora_core::Content::Held(p) => agora_core::Payload::Held(p.to_vec()),
        agora_core::Content::Redacted(r) => agora_core::Payload::Redacted(r.map(<[u8]>::to_vec)),
        agora_core::Content::Missing => agora_core::Payload::Missing,
    }
}

/// Everything the live view answers, compared with a full recompute.
fn assert_live_equals(live: &mut LiveMerge, held: &[MergeEntry], proofs: &[ForkProof], what: &str) -> Result<(), TestCaseError> {
    let m = Merge::compute(held, proofs).unwrap();
    let statuses: Vec<(EntryId, agora_core::AgentId, u64, MergeStatus)> = m.records().iter().map(|r| (r.entry, r.signer, r.seq, r.status.clone())).collect();
    prop_assert_eq!(live.statuses(), statuses, "statuses {}", what);
    prop_assert_eq!(&live.frontiers(), m.frontiers(), "frontiers {}", what);
    prop_assert_eq!(live.open_disputes(), m.open_disputes(), "open disputes {}", what);
    // One event's open disputes, read off its index, are the same marks.
    for e in held {
        let one: Vec<_> = m.open_disputes().into_iter().filter(|d| d.target == e.id()).collect();
        prop_assert_eq!(live.open_disputes_of(&e.id()), one, "open disputes of one event {}", what);
    }
    prop_assert_eq!(live.agents(), m.agents(), "agents {}", what);
    for a in m.agents() {
        prop_assert_eq!(live.view_chain(&a).to_vec(), m.view_chain(&a), "view chain {}", what);
        prop_assert_eq!(live.forks(&a), &m.chain(&a).unwrap().forks[..], "forks {}", what);
        // The audit from the agent's chain and the live state.
        let chain: ChainInput = (held.iter().filter(|e| e.author() == a).cloned().collect(), proofs.iter().filter(|p| p.author() == a).cloned().collect());
        prop_assert_eq!(audit_parts(&live.audit(&a, &chain).unwrap()), audit_parts(&m.audit(&a)), "audit of {} {}", a, what);
    }
    prop_assert_eq!(live.view_hash(), m.view_hash(), "view hash {}", what);
    // The disagreement map off the live state, reading what a node's store
    // answers: entries by id, the forked chains, and (here by brute force)
    // the entries that refer into a fork's sides. All agents, then a subset.
    let by_id: std::collections::HashMap<EntryId, &MergeEntry> = held.iter().map(|e| (e.id(), e)).collect();
    let some_agents: Vec<_> = m.agents().into_iter().step_by(2).collect();
    for agents in [None, Some(&some_agents[..])] {
        let map = live
            .disagreements(
                agents,
                |id, _, _| Ok::<_, Box<InputError>>(by_id.get(id).map_or(agora_core::Payload::Missing, |e| payload_of(e))),
                |a| Ok((held.iter().filter(|e| e.author() == *a).cloned().collect(), proofs.iter().filter(|p| p.author() == *a).cloned().collect())),
                |ids| {
                    let wanted: std::collections::HashSet<&EntryId> = ids.iter().collect();
                    let refers = |e: &MergeEntry| {
                        e.payload()
                            .filter(|p| Event::is_event_payload(p))
                            .and_then(|p| Event::decode(p).ok())
                            .is_some_and(|ev| ev.ref_list().iter().any(|r| wanted.contains(r)))
                    };
                    Ok(held.iter().filter(|e| refers(e)).map(MergeEntry::id).collect())
                },
            )
            .unwrap();
        prop_assert_eq!(map, m.disagreements(agents), "disagreement map of {:?} {}", agents, what);
    }
    // A write checked on the live state gets the recompute's answer: accepts
    // of view heads, of seq 1 and of fork branches, disputes of heads, of
    // disputed events and of an unknown id, withdrawals of every open
    // dispute, fork resolutions of every branch.
    let open = m.open_disputes();
    let unknown = EntryId([0xee; 32]);
    let mut events: Vec<MergeEvent> =
        vec![MergeEvent::Dispute { target: unknown, reason: "r".into(), counter_claim: None }, MergeEvent::Withdraw { dispute: unknown }];
    for b in m.agents() {
        let view = m.view_chain(&b);
        if let (Some(first), Some(last)) = (view.first(), view.last()) {
            events.push(MergeEvent::Accept { author: b, up_to_seq: view.len() as u64, head: *last });
            events.push(MergeEvent::Accept { author: b, up_to_seq: 1, head: *first });
            events.push(MergeEvent::Dispute { target: *last, reason: "r".into(), counter_claim: None });
            events.push(MergeEvent::Withdraw { dispute: *last });
        }
        for f in &m.chain(&b).unwrap().forks {
            for c in &f.candidates {
                events.push(MergeEvent::Accept { author: b, up_to_seq: f.seq, head: *c });
                for fork_number in 1..=2 {
                    events.push(MergeEvent::ForkResolution { fork_number, fork_seq: f.seq, continue_with: *c });
                }
            }
        }
    }
    for d in &open {
        events.push(MergeEvent::Dispute { target: d.target, reason: "again".into(), counter_claim: None });
        events.push(MergeEvent::Withdraw { dispute: d.dispute });
    }
    for a in m.agents() {
        for ev in &events {
            prop_assert_eq!(live.check(&a, ev), m.check(&a, ev), "check of {:?} by {} {}", ev, a, what);
        }
    }
    let agents = m.agents();
    for k in 1..=agents.len() {
        prop_assert_eq!(live.consensus(&agents, k).unwrap(), m.consensus(&agents, k).unwrap(), "consensus {} {}", k, what);
    }
    // A subset of the agents (disputes and accepts of the others not counted),
    // asked at every step: the live view answers it from its cache where
    // nothing it depends on changed.
    let some: Vec<_> = agents.iter().copied().step_by(2).collect();
    if !some.is_empty() {
        prop_assert_eq!(live.consensus(&some, 1).unwrap(), m.consensus(&some, 1).unwrap(), "consensus of every other agent {}", what);
    }
    Ok(())
}

/// Every entry of `held` by `author` with a seq in `seqs`: what a node's store
/// answers a live perspective.
fn entries_in(held: &[MergeEntry], author: &agora_core::AgentId, seqs: std::ops::RangeInclusive<u64>) -> Result<Vec<MergeEntry>, std::convert::Infallible> {
    Ok(held.iter().filter(|e| e.author() == *author && seqs.contains(&e.seq())).cloned().collect())
}

/// Each live perspective, refreshed, equals the recompute's: the same hash
/// (agent, prefixes, disputes and the graph's digest), prefixes, left-out
/// events and graph snapshot.
fn assert_perspectives_equal(
    perspectives: &mut [LivePerspective],
    live: &LiveMerge,
    changed: &[EntryId],
    held: &[MergeEntry],
    proofs: &[ForkProof],
    what: &str,
) -> Result<(), TestCaseError> {
    let m = Merge::compute(held, proofs).unwrap();
    for p in perspectives.iter_mut() {
        p.refresh(live, changed, |a, seqs| entries_in(held, a, seqs)).unwrap();
        let mut want = m.perspective(&p.agent());
        prop_assert_eq!(&p.view().included, &want.included, "included {}", what);
        prop_assert_eq!(&p.view().excluded, &want.excluded, "excluded {}", what);
        prop_assert_eq!(&p.view().disputes, &want.disputes, "disputes {}", what);
        prop_assert_eq!(p.view().graph.snapshot(), want.graph.snapshot(), "graph {}", what);
        // The snapshot leaves text out: a redaction must reach it too. In
        // listing order: late events taken in place are listed where a
        // replay applied them.
        let texts = |g: &Graph| g.nodes().map(|n| (n.id, n.kind(), g.text(n).unwrap().into_owned(), n.redacted())).collect::<Vec<_>>();
        prop_assert_eq!(texts(&p.view().graph), texts(&want.graph), "node texts {}", what);
        prop_assert_eq!(p.hash(), want.hash(), "perspective hash {}", what);
    }
    Ok(())
}

/// The live merged graph, refreshed, equals the recompute's
/// (`Merge::merged_graph`): snapshot, texts and digest; and the chain
/// summaries the Automerge document publishes, read off the live state,
/// equal the recompute's.
fn assert_merged_graph_equal(
    graph: &mut LiveMergedGraph,
    live: &LiveMerge,
    changed: &[EntryId],
    held: &[MergeEntry],
    proofs: &[ForkProof],
    what: &str,
) -> Result<(), TestCaseError> {
    let m = Merge::compute(held, proofs).unwrap();
    graph.refresh(live, changed, |a, seqs| entries_in(held, a, seqs)).unwrap();
    let mut want = m.merged_graph();
    prop_assert_eq!(graph.graph().snapshot(), want.snapshot(), "merged graph {}", what);
    // In listing order: the live merged graph takes late events in place,
    // and lists them where a replay applied them.
    let texts = |g: &Graph| g.nodes().map(|n| (n.id, n.kind(), g.text(n).unwrap().into_owned(), n.redacted())).collect::<Vec<_>>();
    prop_assert_eq!(texts(graph.graph()), texts(&want), "merged graph texts {}", what);
    prop_assert_eq!(graph.digest(), want.digest(), "merged graph digest {}", what);
    prop_assert_eq!(live.chain_summaries(), m.merged_view().chains, "chain summaries {}", what);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Issue 16: the live merged view, updated entry by entry in any arrival
    /// order (out of log order, forks found late, resolutions before what
    /// they resolve, payloads missing then filled in, redactions, fork
    /// proofs), equals a full recompute after every step: view hash, every
    /// status, frontier, view chain, fork, open dispute and consensus.
    #[test]
    fn live_equals_recompute(n in 2usize..5, actions in prop::collection::vec(action(4), 1..60), seed in any::<u64>(), steps in prop::collection::vec(step(), 1..40), start in 0usize..20) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        let order = shuffled(&s.entries, seed);
        // A node starts with part of the history (built once), then takes in the rest.
        let start = start.min(order.len());
        let mut held: Vec<MergeEntry> = order[..start].to_vec();
        let mut proofs: Vec<ForkProof> = Vec::new();
        // Built as a node builds it at start: from the merge events alone,
        // every other payload checked and dropped.
        let mut live = LiveMerge::from_entries(&for_merge_state(&held), &proofs).unwrap();
        assert_live_equals(&mut live, &held, &proofs, "at start")?;
        // Every agent's perspective, kept current alongside.
        let mut perspectives: Vec<LivePerspective> = (0..n).map(|i| LivePerspective::build(&live, s.agent(i), |a, seqs| entries_in(&held, a, seqs)).unwrap()).collect();
        assert_perspectives_equal(&mut perspectives, &live, &[], &held, &proofs, "at start")?;
        // The merged graph (what the Automerge document publishes), too.
        let mut merged = LiveMergedGraph::build(&live, |a, seqs| entries_in(&held, a, seqs)).unwrap();
        assert_merged_graph_equal(&mut merged, &live, &[], &held, &proofs, "at start")?;
        let mut next = start;
        let mut steps = steps;
        // Then everything left arrives.
        steps.push(Step::Arrive { count: order.len(), stripped: false });
        for (i, st) in steps.iter().enumerate() {
            let mut update = LiveUpdate::default();
            // Entries whose payload this step fills in or redacts.
            let mut changed: Vec<EntryId> = Vec::new();
            match st {
                Step::Arrive { count, stripped } => {
                    let end = (next + count).min(order.len());
                    for e in &order[next..end] {
                        let e = if *stripped { MergeEntry::new(e.signed().clone(), None).unwrap() } else { e.clone() };
                        held.push(e.clone());
                        update.entries.push(e);
                    }
                    next = end;
                }
                Step::FillIn { pick } => {
                    let stripped: Vec<usize> = (0..held.len()).filter(|&k| matches!(held[k].content(), agora_core::Content::Missing)).collect();
                    if stripped.is_empty() { continue; }
                    let k = stripped[pick % stripped.len()];
                    let full = s.entries.iter().find(|e| e.id() == held[k].id()).unwrap().clone();
                    update.changed.push(full.author());
                    changed.push(full.id());
                    held[k] = full;
                }
                Step::Redact { pick } => {
                    let with: Vec<usize> = (0..held.len()).filter(|&k| matches!(held[k].content(), agora_core::Content::Held(_))).collect();
                    if with.is_empty() { continue; }
                    let k = with[pick % with.len()];
                    let r = residue(held[k].payload().unwrap());
                    update.changed.push(held[k].author());
                    changed.push(held[k].id());
                    held[k] = MergeEntry::with_content(held[k].signed().clone(), agora_core::Payload::Redacted(Some(r))).unwrap();
                }
                Step::Proof { pick } => {
                    let all = proofs_of(&held);
                    if all.is_empty() { continue; }
                    let p = all[pick % all.len()].clone();
                    proofs.push(p.clone());
                    update.proofs.push(p);
                }
            }
            let author_input = |a: &agora_core::AgentId| -> Result<ChainInput, std::convert::Infallible> {
                Ok((held.iter().filter(|e| e.author() == *a).cloned().collect(), proofs.iter().filter(|p| p.author() == *a).cloned().collect()))
            };
            live.apply(update, author_input).unwrap();
            assert_live_equals(&mut live, &held, &proofs, &format!("after step {i} ({st:?})"))?;
            assert_perspectives_equal(&mut perspectives, &live, &changed, &held, &proofs, &format!("after step {i} ({st:?})"))?;
            assert_merged_graph_equal(&mut merged, &live, &changed, &held, &proofs, &format!("after step {i} ({st:?})"))?;
        }
        // Built from scratch over the final set: the same state.
        let mut fresh = LiveMerge::from_entries(&held, &proofs).unwrap();
        prop_assert_eq!(fresh.view_hash(), live.view_hash());
        let mut fresh = LiveMerge::from_entries(&for_merge_state(&held), &proofs).unwrap();
        prop_assert_eq!(fresh.view_hash(), live.view_hash());
    }
}

/// `entries` as a node's start-up loads them for its live merged view
/// ([`MergeEntry::for_merge_state`]).
fn for_merge_state(entries: &[MergeEntry]) -> Vec<MergeEntry> {
    entries.iter().map(|e| MergeEntry::for_merge_state(e.signed().clone(), payload_of(e)).unwrap()).collect()
}

/// Entries loaded for the merge state alone keep merge events whole and
/// drop every other held payload; a computation that reads reasoning
/// refuses them, naming the first such entry, rather than reading the
/// dropped payloads as empty.
#[test]
fn entries_without_their_reasoning_are_refused_where_reasoning_is_read() {
    let actions: Vec<Action> = (0..24).map(|i| Action { agent: i % 3, kind: (i % 6) as u8, a: i * 7, b: i as u64 }).collect();
    let s = build(3, &actions);
    let stripped = for_merge_state(&s.entries);
    let mut dropped = 0;
    for (full, e) in s.entries.iter().zip(&stripped) {
        let merge_event = full.payload().is_some_and(agora_merge::MergeEvent::is_merge_payload);
        match full.content() {
            agora_core::Content::Held(_) if !merge_event => {
                assert!(e.reasoning_dropped() && e.payload() == Some(&[][..]), "{}", e.id());
                dropped += 1;
            }
            _ => assert!(!e.reasoning_dropped() && e.content() == full.content(), "{}", e.id()),
        }
    }
    assert!(dropped > 0 && dropped < stripped.len(), "the history holds both kinds");
    let first = stripped.iter().find(|e| e.reasoning_dropped()).unwrap().id();
    let refused = |r: Result<(), agora_merge::InputError>| assert_eq!(r.unwrap_err(), agora_merge::InputError::ReasoningDropped(first));
    refused(Merge::compute(&stripped, &[]).map(|_| ()));
    refused(Merge::compute_with_view(&stripped, &[]).map(|_| ()));
}

/// A payload filled in beyond what a live perspective includes does not make
/// it replay (an author that withholds the payloads of its later entries and
/// releases them one at a time must not make every node replay the
/// perspectives that accept its chain); a payload redacted inside it does,
/// so that the text is gone.
#[test]
fn a_payload_change_replays_a_live_perspective_only_inside_what_it_includes() {
    let mut s = Swarm::new(2);
    let b1 = s.event(1, Event::Proposition { text: "b1".into() });
    let b2 = s.event(1, Event::Proposition { text: "b2".into() });
    let accept = s.accept_of(&b2);
    s.merge(0, accept);
    s.event(0, Event::Proposition { text: "a1".into() });
    let b3 = s.event(1, Event::Proposition { text: "b3".into() });
    s.event(1, Event::Proposition { text: "b4".into() });
    let full = s.entries.clone();
    let at = |id: EntryId| full.iter().position(|e| e.id() == id).unwrap();
    let mut held = full.clone();
    held[at(b3)] = MergeEntry::new(full[at(b3)].signed().clone(), None).unwrap();
    let mut live = LiveMerge::from_entries(&held, &[]).unwrap();
    let agent = s.agent(0);
    let mut p = LivePerspective::build(&live, agent, |a, seqs| entries_in(&held, a, seqs)).unwrap();
    let chain_of = |held: &[MergeEntry], a: &agora_core::AgentId| -> Result<ChainInput, std::convert::Infallible> {
        Ok((held.iter().filter(|e| e.author() == *a).cloned().collect(), Vec::new()))
    };

    // b3's payload arrives: b3 and b4 join B's view, beyond A's accept.
    held[at(b3)] = full[at(b3)].clone();
    live.apply(LiveUpdate { changed: vec![s.agent(1)], ..LiveUpdate::default() }, |a| chain_of(&held, a)).unwrap();
    let done = p.refresh(&live, &[b3], |a, seqs| entries_in(&held, a, seqs)).unwrap();
    assert!(!done.rebuilt, "a payload beyond the accepted prefix replayed the perspective");
    assert_eq!(p.hash(), Merge::compute(&held, &[]).unwrap().perspective(&agent).hash());

    // b1, inside it, is redacted here: replayed, its text gone.
    let r = residue(held[at(b1)].payload().unwrap());
    held[at(b1)] = MergeEntry::with_content(full[at(b1)].signed().clone(), agora_core::Payload::Redacted(Some(r))).unwrap();
    live.apply(LiveUpdate { changed: vec![s.agent(1)], ..LiveUpdate::default() }, |a| chain_of(&held, a)).unwrap();
    // In place it cannot be done: a node drops the perspective instead of replaying it on its view thread.
    let before = p.hash();
    assert_eq!(p.refresh_in_place(&live, &[b1], |a, seqs| entries_in(&held, a, seqs)).unwrap(), None);
    assert_eq!(p.hash(), before, "refresh_in_place changed a perspective it could not refresh");
    let done = p.refresh(&live, &[b1], |a, seqs| entries_in(&held, a, seqs)).unwrap();
    assert!(done.rebuilt, "a redaction inside the prefix must reach the perspective");
    let node = p.view().graph.node(&b1).unwrap();
    assert!(p.view().graph.text(node).unwrap().is_empty() && node.redacted(), "{node:?}");
    assert_eq!(p.hash(), Merge::compute(&held, &[]).unwrap().perspective(&agent).hash());
}

/// Events older than the last one a live perspective applied are taken in
/// place: an accept that reaches back into a chain's history, an event back
/// after its dispute is withdrawn; and an event it included that it now
/// disputes is taken out in place. After each, it equals the recompute's,
/// in listing order too.
#[test]
fn a_live_perspective_takes_late_events_in_place_where_their_order_does_not_matter() {
    let mut s = Swarm::new(2);
    let b1 = s.event(1, Event::Proposition { text: "b1".into() });
    let b2 = s.event(1, Event::Proposition { text: "b2".into() });
    let b3 = s.event(1, Event::Contradiction { target: b1, text: "b3".into() });
    let accept = s.accept_of(&b1);
    s.merge(0, accept);
    let a2 = s.event(0, Event::Proposition { text: "a2".into() });
    let dispute = s.merge(0, MergeEvent::Dispute { target: b2, reason: "no".into(), counter_claim: None });
    s.event(0, Event::Support { target: a2, text: "a4".into() });
    let agent = s.agent(0);
    let chain_of = |held: &[MergeEntry], a: &agora_core::AgentId| -> Result<ChainInput, std::convert::Infallible> {
        Ok((held.iter().filter(|e| e.author() == *a).cloned().collect(), Vec::new()))
    };
    let mut held = s.entries.clone();
    let mut live = LiveMerge::from_entries(&held, &[]).unwrap();
    let mut p = LivePerspective::build(&live, agent, |a, seqs| entries_in(&held, a, seqs)).unwrap();
    let step = |s: &mut Swarm, ev: MergeEvent, held: &mut Vec<MergeEntry>, live: &mut LiveMerge, p: &mut LivePerspective| {
        let id = s.merge(0, ev);
        let e = s.entries.iter().find(|e| e.id() == id).unwrap().clone();
        held.push(e.clone());
        live.apply(LiveUpdate { entries: vec![e], ..LiveUpdate::default() }, |a| chain_of(held, a)).unwrap();
        let done = p.refresh(live, &[], |a, seqs| entries_in(held, a, seqs)).unwrap();
        let mut want = Merge::compute(held, &[]).unwrap().perspective(&agent);
        assert_eq!(p.view().graph.nodes().map(|n| n.id).collect::<Vec<_>>(), want.graph.nodes().map(|n| n.id).collect::<Vec<_>>());
        assert_eq!(p.hash(), want.hash());
        done
    };
    // b2 (left out: disputed) is not in it; accepting through b2 keeps it out.
    let ev = s.accept_of(&b2);
    let done = step(&mut s, ev, &mut held, &mut live, &mut p);
    assert!(!done.rebuilt && done.applied == 0, "{done:?}");
    // The dispute withdrawn: b2, older than a2, comes back in place.
    let done = step(&mut s, MergeEvent::Withdraw { dispute }, &mut held, &mut live, &mut p);
    assert!(!done.rebuilt && done.applied == 1, "an event back after its dispute is withdrawn: {done:?}");
    assert!(p.view().graph.node(&b2).is_some());
    // Accepting through b3, which contradicts b1, older than a2 and a4:
    // nothing later named b1, so in place.
    let ev = s.accept_of(&b3);
    let done = step(&mut s, ev, &mut held, &mut live, &mut p);
    assert!(!done.rebuilt && done.applied == 1, "an accept reaching back, in place: {done:?}");
    assert_eq!(p.view().graph.node(&b1).unwrap().status().name(), "contested");
    // Disputing b3, which it includes: taken out of the graph in place
    // (rewound past it), b1 no longer contested.
    let done = step(&mut s, MergeEvent::Dispute { target: b3, reason: "no".into(), counter_claim: None }, &mut held, &mut live, &mut p);
    assert!(!done.rebuilt, "a dispute of an included event: {done:?}");
    assert!(p.view().graph.node(&b3).is_none());
    assert_eq!(p.view().graph.node(&b1).unwrap().status().name(), "active");
}

/// A late event whose place matters (b2 supports b1, which a later event of
/// the agent's own, a3, named) cannot be applied at the end: the live
/// perspective's graph rewinds its last applies around it (undoes a3 and
/// the accept's own events after b2, applies b2, then them again) instead
/// of being replayed.
#[test]
fn a_live_perspective_rewinds_for_a_late_event_whose_place_matters() {
    let mut s = Swarm::new(2);
    let b1 = s.event(1, Event::Proposition { text: "b1".into() });
    let b2 = s.event(1, Event::Support { target: b1, text: "b2".into() });
    let accept = s.accept_of(&b1);
    s.merge(0, accept);
    s.event(0, Event::Contradiction { target: b1, text: "a3".into() });
    let agent = s.agent(0);
    let held = s.entries.clone();
    let mut live = LiveMerge::from_entries(&held, &[]).unwrap();
    let mut p = LivePerspective::build(&live, agent, |a, seqs| entries_in(&held, a, seqs)).unwrap();
    let ev = s.accept_of(&b2);
    let id = s.merge(0, ev);
    let held = s.entries.clone();
    let e = held.iter().find(|e| e.id() == id).unwrap().clone();
    live.apply(LiveUpdate { entries: vec![e], ..LiveUpdate::default() }, |a| {
        Ok::<ChainInput, std::convert::Infallible>((held.iter().filter(|e| e.author() == *a).cloned().collect(), Vec::new()))
    })
    .unwrap();
    let done = p.refresh(&live, &[], |a, seqs| entries_in(&held, a, seqs)).unwrap();
    assert!(!done.rebuilt && done.applied == 1, "{done:?}");
    let mut want = Merge::compute(&held, &[]).unwrap().perspective(&agent);
    assert_eq!(p.view().graph.nodes().map(|n| n.id).collect::<Vec<_>>(), want.graph.nodes().map(|n| n.id).collect::<Vec<_>>());
    assert_eq!(p.hash(), want.hash());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// A fork resolution's rules read only its signer's chain: planned over
    /// that chain alone (what `resolve-fork` reads, instead of every entry
    /// held), the plan (or the refusal) is the one planned over the whole
    /// swarm, for every agent and every entry of its own chain it may keep.
    #[test]
    fn a_resolution_planned_over_its_signers_chain_equals_one_planned_over_everything(n in 2usize..4, actions in prop::collection::vec(action(3), 1..50)) {
        let actions: Vec<Action> = actions.into_iter().map(|a| Action { agent: a.agent % n, ..a }).collect();
        let s = build(n, &actions);
        let proofs = proofs_of(&s.entries);
        let all = Merge::compute(&s.entries, &proofs).unwrap();
        for i in 0..n {
            let agent = s.agent(i);
            let own: Vec<MergeEntry> = s.entries.iter().filter(|e| e.author() == agent).cloned().collect();
            let own_proofs: Vec<ForkProof> = proofs.iter().filter(|p| p.author() == agent).cloned().collect();
            let alone = Merge::compute(&own, &own_proofs).unwrap();
            for e in &own {
                prop_assert_eq!(alone.plan_resolution(&agent, &e.id()), all.plan_resolution(&agent, &e.id()), "agent {} keeping {}", i, e.id());
            }
        }
    }
}

/// Issue 36 item 2: a fork flood spread over updates. Branches at the seq
/// where a chain is frozen change nothing the view shows but the fork's
/// candidates: each update adds them in place and asks the caller for no
/// chain (before, each update derived the flooded chain again from every
/// branch held: 20 updates of 50 asked for 10,500 entries). The state
/// equals a recompute after every update, with another agent's accept of
/// the shared entry, an accept whose head is a branch not yet held, and a
/// dispute of a branch.
#[test]
fn branches_at_a_frozen_fork_are_added_in_place_and_cost_what_they_add() {
    let mut s = Swarm::new(2);
    let p1 = s.event(0, Event::Proposition { text: "p1".into() });
    let packs: Vec<Vec<EntryId>> =
        (0..20).map(|k| (0..50).map(|i| s.append_after(0, Some(p1), Event::Proposition { text: format!("branch {k}.{i}") }.encode())).collect()).collect();
    let author = s.agent(0);
    let late = packs[19][7];
    s.merge(1, MergeEvent::Accept { author, up_to_seq: 1, head: p1 });
    s.merge(1, MergeEvent::Accept { author, up_to_seq: 2, head: late });
    s.merge(1, MergeEvent::Dispute { target: packs[3][1], reason: "no".into(), counter_claim: None });
    let in_pack = |ids: &[EntryId], s: &Swarm| -> Vec<MergeEntry> { s.entries.iter().filter(|e| ids.contains(&e.id())).cloned().collect() };
    // The root, the first two branches (the fork), and the other agent.
    let mut held: Vec<MergeEntry> = s.entries.iter().filter(|e| e.id() == p1 || e.author() == s.agent(1)).cloned().collect();
    held.extend(in_pack(&packs[0][..2], &s));
    let mut live = LiveMerge::from_entries(&held, &[]).unwrap();
    assert!(live.forks(&author).last().is_some_and(|f| f.outcome == ForkOutcome::Frozen));
    let mut asked = 0usize;
    for (k, pack) in packs.iter().enumerate() {
        let from = if k == 0 { 2 } else { 0 };
        let update = in_pack(&pack[from..], &s);
        held.extend(update.iter().cloned());
        let done = live
            .apply(LiveUpdate { entries: update, ..LiveUpdate::default() }, |a| -> Result<ChainInput, std::convert::Infallible> {
                let chain: Vec<MergeEntry> = held.iter().filter(|e| e.author() == *a).cloned().collect();
                asked += chain.len();
                Ok((chain, Vec::new()))
            })
            .unwrap();
        assert_eq!((done.branched, done.rederived), (pack.len() - from, 0), "pack {k}");
        assert_live_equals(&mut live, &held, &[], &format!("after pack {k}")).unwrap();
    }
    assert_eq!(asked, 0, "no chain was derived again");
    assert_eq!(live.forks(&author).last().map(|f| f.candidates.len()), Some(1000));
}
