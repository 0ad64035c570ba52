//! Golden scenarios from the seed essays, with exact expected statuses, plus
//! every bad input issue 3 lists, pending references, and determinism.

use agora_core::{AgentId, EntryId};
use agora_graph::event::{Confidence, EventDecodeError};
use agora_graph::query::{as_of_entry, as_of_time};
use agora_graph::*;
use proptest::prelude::*;

/// A log under construction: each event gets an id and a log position.
struct Log {
    events: Vec<LogEvent>,
    clock: u64,
}

impl Log {
    fn new() -> Self {
        Self { events: Vec::new(), clock: 1_000 }
    }
    fn at(&mut self, author: u8, time_ms: u64, ev: Event) -> EntryId {
        self.clock = time_ms;
        self.push_as(author, ev)
    }
    fn push(&mut self, ev: Event) -> EntryId {
        self.clock += 1_000;
        self.push_as(1, ev)
    }
    fn push_as(&mut self, author: u8, ev: Event) -> EntryId {
        let seq = self.events.iter().filter(|e| e.pos.author == AgentId([author; 32])).count() as u64 + 1;
        let mut seed = vec![author];
        seed.extend_from_slice(&seq.to_be_bytes());
        let id = EntryId(agora_core::sha256(&seed));
        let pos = LogPosition { timestamp_ms: self.clock, author: AgentId([author; 32]), seq };
        self.events.push(LogEvent::from_payload(id, pos, Some(&ev.encode())));
        id
    }
    fn graph(&self) -> Graph {
        Graph::replay(self.events.clone())
    }
}

fn status(g: &Graph, id: &EntryId) -> Status {
    g.node(id).unwrap_or_else(|| panic!("no node {id}")).status()
}

fn text(t: &str) -> String {
    t.to_string()
}

/// 000: the pricing decision.
#[test]
fn pricing_example() {
    let mut log = Log::new();
    let e1 = log.push(Event::Proposition { text: text("Usage-based pricing aligns incentives and reduces low-end friction") });
    let e2 = log.push(Event::Contradiction { target: e1, text: text("Enterprise procurement requires predictable costs; usage-based is a blocker") });
    let after_contradiction = log.graph();
    assert_eq!(status(&after_contradiction, &e1), Status::Contested);
    let d = after_contradiction.disagreements();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].node, d[0].challenges.clone()), (e1, vec![e2]));

    let e3 =
        log.push(Event::Refinement { target: e1, resolves: vec![e2], text: text("Two-track model: seat-based for enterprise, usage-based for self-serve") });
    let e4 = log.push(Event::Synthesis { sources: vec![e1, e3], text: text("Pricing should track how value is realized; the two-track model is an instance") });
    let g = log.graph();
    assert_eq!(status(&g, &e1), Status::Superseded);
    assert_eq!(g.why(g.node(&e1).unwrap()), vec![e3]);
    assert_eq!(status(&g, &e2), Status::Resolved);
    assert_eq!(status(&g, &e3), Status::Resolved);
    assert_eq!(g.why(g.node(&e3).unwrap()), vec![e2], "it resolved the contradiction");
    assert_eq!(g.why(g.node(&e2).unwrap()), vec![e3]);
    assert_eq!(status(&g, &e4), Status::Active);
    // "Should we reconsider usage-based pricing?" -> it was replaced by e3.
    assert_eq!(g.latest_in_chain(&e1), Some(e3));
    assert!(g.disagreements().is_empty());
    let decided: Vec<EntryId> = g.decisions().iter().map(|d| d.node).collect();
    assert_eq!(decided, vec![e2, e3]);
    // The trace of e1: itself, the contradiction, the refinement, the synthesis.
    assert_eq!(g.touched_by(g.node(&e1).unwrap()), vec![e1, e2, e3, e4]);
}

/// 000: order matters. A proposition made after a contradiction (of an
/// earlier proposition) is made in light of it, and is not defeated by it.
#[test]
fn order_matters_and_settled_is_derived() {
    let mut log = Log::new();
    let p1 = log.push(Event::Proposition { text: text("usage-based pricing") });
    let c = log.push(Event::Contradiction { target: p1, text: text("procurement can't budget variable costs") });
    let p2 = log.push(Event::Proposition { text: text("usage-based pricing with a spend cap") });
    let g = log.graph();
    assert_eq!(status(&g, &p1), Status::Contested);
    assert_eq!(status(&g, &p2), Status::Active);
    assert!(!g.node(&p2).unwrap().settled());

    // p1 survives: the challenge is answered without replacing p1.
    let r = log.push(Event::Resolve { target: c, text: text("caps make it budgetable") });
    let g = log.graph();
    assert_eq!(status(&g, &p1), Status::Active);
    assert!(g.node(&p1).unwrap().settled(), "survived a challenge, nothing open");
    assert_eq!(g.why(g.node(&p1).unwrap()), vec![c]);
    assert_eq!(status(&g, &c), Status::Resolved);
    assert_eq!(g.why(g.node(&c).unwrap()), vec![r]);
    // A new challenge unsettles it.
    log.push(Event::Contradiction { target: p1, text: text("caps annoy power users") });
    let g = log.graph();
    assert_eq!(status(&g, &p1), Status::Contested);
    assert!(!g.node(&p1).unwrap().settled());
}

/// 001: Alex's dog, with typed relations.
#[test]
fn dog_example() {
    let mut log = Log::new();
    let claim = |t: &str| Event::Claim {
        text: text(t),
        kind: MemoryKind::Semantic,
        sources: vec![],
        owner_scope: text("contact:alex"),
        confirmed: true,
        expires_at_ms: None,
    };
    let jan = 1_704_067_200_000; // 2024-01-01
    let feb = 1_706_745_600_000;
    let mar = 1_709_251_200_000;
    let jun = 1_717_200_000_000;
    let f12 = log.at(1, jan, claim("Alex has a pet"));
    let f14 = log.at(1, feb, claim("Alex has a dog named Rex"));
    log.at(1, feb + 1, Event::Relate { from: f14, to: f12, relation: Relation::Expands, reason: text("more specific") });
    let f47 = log.at(1, jun, claim("Rex passed away last week"));
    let sc = log.at(1, jun + 1, Event::Relate { from: f47, to: f14, relation: Relation::StateChange, reason: text("Rex died") });
    let g = log.graph();
    assert_eq!(status(&g, &f12), Status::Active, "expands keeps both true");
    assert_eq!(status(&g, &f14), Status::Superseded);
    assert_eq!(status(&g, &f47), Status::Active);
    assert_eq!(g.why(g.node(&f14).unwrap()), vec![f47]);
    assert!(g.touched_by(g.node(&f47).unwrap()).contains(&sc));
    assert_eq!(g.latest_in_chain(&f14), Some(f47));
    assert_eq!(g.latest_in_chain(&f12), Some(f12));
    // "Did Alex have a dog last March?" Yes: as of March, f14 was current.
    let march = as_of_time(&log.events, mar + 15 * 86_400_000);
    assert_eq!(status(&march, &f14), Status::Active);
    assert!(march.node(&f47).is_none());
    // As of the entry that recorded the death, the dog fact is superseded.
    assert_eq!(status(&as_of_entry(&log.events, &sc).unwrap(), &f14), Status::Superseded);

    // contradicts picks no winner; retracts hides; same_as de-duplicates.
    let rome = log.push(claim("Alex lives in Rome"));
    let milan = log.push(claim("Alex lives in Milan"));
    let conflict = log.push(Event::Relate { from: milan, to: rome, relation: Relation::Contradicts, reason: text("both asserted") });
    let cat = log.push(claim("Alex has a cat"));
    let fix = log.push(Event::Relate { from: f14, to: cat, relation: Relation::Retracts, reason: text("extractor hallucinated; it is a dog") });
    let again = log.push(claim("Alex has a dog named Rex (second extraction)"));
    log.push(Event::Relate { from: again, to: f14, relation: Relation::SameAs, reason: text("same event") });
    let g = log.graph();
    assert_eq!(status(&g, &rome), Status::Contested);
    assert_eq!(status(&g, &milan), Status::Contested);
    assert_eq!(g.why(g.node(&rome).unwrap()), vec![conflict]);
    assert_eq!(status(&g, &cat), Status::Retracted);
    assert_eq!(g.why(g.node(&cat).unwrap()), vec![fix]);
    assert_eq!(status(&g, &again), Status::Duplicate);
    // Resolving the conflict settles both sides.
    log.push(Event::Resolve { target: conflict, text: text("moved from Rome to Milan in May") });
    let g = log.graph();
    assert_eq!(status(&g, &rome), Status::Active);
    assert!(g.node(&milan).unwrap().settled());
}

/// 002: the JWT frames: a call tree, a pivot, invalidation, resumption.
#[test]
fn jwt_frames() {
    let mut log = Log::new();
    let open = |parent: Option<EntryId>, q: &str, branched_from: Option<EntryId>, inv: &str| Event::FrameOpen {
        parent,
        query: text(q),
        branched_from,
        invalidation_condition: text(inv),
    };
    let root = log.push(open(None, "find auth problem", None, "refresh logic exists elsewhere"));
    let auth = log.push(open(Some(root), "focus on JWT", None, ""));
    let logs = log.push(open(Some(auth), "analyze prod logs", None, ""));
    log.push(Event::FrameEvidence { frame: logs, text: text("401 patterns found") });
    log.push(Event::FrameConclude { frame: logs, conclusion: text("401s cluster after token lifetime"), confidence_bp: 8000 });
    let code = log.push(open(Some(auth), "trace code", None, ""));
    log.push(Event::FrameEvidence { frame: code, text: text("line 47, no expiry check") });
    log.push(Event::FrameConclude { frame: code, conclusion: text("no expiry check at line 47"), confidence_bp: 9000 });
    let g = log.graph();
    // Verification walks post-order: leaves first, root last.
    assert_eq!(g.frames_post_order(&root), vec![logs, code, auth, root]);
    assert_eq!(status(&g, &auth), Status::Active);
    assert_eq!(status(&g, &logs), Status::Resolved);

    // Pattern B: a pivot. The JWT frame is suspended, not deleted.
    let db = log.push(open(Some(root), "wait, could be DB", Some(auth), ""));
    log.push(Event::FrameConclude { frame: root, conclusion: text("auth module does not handle JWT expiry"), confidence_bp: 9000 });
    let g = log.graph();
    assert_eq!(g.node(&root).unwrap().frame_state(), Some(FrameState::Completed));
    assert_eq!(g.node(&auth).unwrap().frame_state(), Some(FrameState::Suspended));
    assert_eq!(g.node(&db).unwrap().frame_state(), Some(FrameState::Active));
    assert_eq!((status(&g, &root), status(&g, &auth), status(&g, &db)), (Status::Resolved, Status::Parked, Status::Active));

    // Invalidation cascades top-down from the JWT frame to its children, and
    // leaves its sibling branch alone.
    log.push(Event::FrameInvalidate { frame: auth, reason: text("refresh logic exists in the gateway") });
    let g = log.graph();
    for f in [auth, logs, code] {
        assert_eq!(g.node(&f).unwrap().frame_state(), Some(FrameState::Invalidated));
        assert_eq!(status(&g, &f), Status::Retracted);
    }
    assert_eq!(g.node(&db).unwrap().frame_state(), Some(FrameState::Active));
    assert_eq!(g.node(&root).unwrap().frame_state(), Some(FrameState::Completed));
    // The invalidated (suspended) frame can be resumed when the condition no longer holds.
    log.push(Event::FrameResume { frame: auth });
    let g = log.graph();
    assert_eq!(g.node(&auth).unwrap().frame_state(), Some(FrameState::Active));
    assert_eq!(g.node(&logs).unwrap().frame_state(), Some(FrameState::Invalidated));
}

/// 003: the 7 a.m. preference: a sarcastic episode written as an unconfirmed
/// preference, later contradicted and retracted; orphans and expiry.
#[test]
fn seven_am_preference() {
    let mut log = Log::new();
    let claim = |t: &str, kind, sources: Vec<EntryId>, confirmed, expires_at_ms| Event::Claim {
        text: text(t),
        kind,
        sources,
        owner_scope: text("user:8831"),
        confirmed,
        expires_at_ms,
    };
    let ep = log.push(claim("Sure, because I love 7 a.m. meetings", MemoryKind::Episodic, vec![], true, None));
    let pref = log.push(claim("Default meeting time: morning", MemoryKind::Preference, vec![ep], false, None));
    let orphan = log.push(claim("Prefers aisle seats", MemoryKind::Preference, vec![], false, None));
    let env = log.push(claim("staging is down", MemoryKind::Environmental, vec![ep], true, Some(50_000)));
    let g = log.graph();
    let p = g.node(&pref).unwrap();
    assert_eq!(p.status(), Status::Active);
    assert!(p.unconfirmed() && !p.orphan(), "the field whose absence caused the incident");
    assert!(g.node(&orphan).unwrap().orphan());
    assert_eq!(g.orphans().iter().map(|n| n.id).collect::<Vec<_>>(), vec![orphan]);
    assert!(!g.node(&ep).unwrap().orphan(), "episodes are the source, never orphans");
    assert!(g.node(&env).unwrap().expired(50_000) && !g.node(&env).unwrap().expired(49_999));

    let ep2 = log.push(claim("Can we move this to the afternoon? I hate early meetings", MemoryKind::Episodic, vec![], true, None));
    let c = log.push(Event::Contradiction { target: pref, text: text("the user reschedules early meetings") });
    assert_eq!(status(&log.graph(), &pref), Status::Contested);
    let g = log.graph();
    assert_eq!(g.why(g.node(&pref).unwrap()), vec![c]);
    let r = log.push(Event::Relate { from: ep2, to: pref, relation: Relation::Retracts, reason: text("sarcasm, not a preference") });
    let g = log.graph();
    assert_eq!(status(&g, &pref), Status::Retracted);
    assert_eq!(g.why(g.node(&pref).unwrap()), vec![r]);
    // Confirmation is recorded on the claim.
    log.push(Event::Confirm { target: orphan });
    assert!(!log.graph().node(&orphan).unwrap().unconfirmed());
}

/// 003: task lifecycle.
#[test]
fn task_lifecycle() {
    let mut log = Log::new();
    let t = log.push(Event::Task { objective: text("Migrate billing service to new schema"), owner_scope: text("user:8831") });
    assert_eq!(log.graph().node(&t).unwrap().task_state(), Some(TaskState::Created));
    log.push(Event::TaskUpdate { task: t, state: TaskState::Blocked, note: text("staging env unavailable") });
    assert_eq!(status(&log.graph(), &t), Status::Active);
    log.push(Event::TaskUpdate { task: t, state: TaskState::Done, note: text("cut over") });
    let g = log.graph();
    assert_eq!(status(&g, &t), Status::Resolved);
    // A closed task does not come back as open: further updates are refused.
    assert!(matches!(
        g.check(EntryId([0; 32]), &Event::TaskUpdate { task: t, state: TaskState::InProgress, note: text("") }),
        Err(RuleError::WrongState { .. })
    ));
    let t2 = log.push(Event::Task { objective: text("old idea"), owner_scope: text("user:8831") });
    log.push(Event::TaskUpdate { task: t2, state: TaskState::Abandoned, note: text("") });
    assert_eq!(status(&log.graph(), &t2), Status::Parked);
}

/// 004: outcome learning: trajectories, judgments, memory items, usage.
#[test]
fn outcome_learning() {
    let mut log = Log::new();
    let traj = |q: &str| Event::Trajectory { task_query: text(q), final_answer: text("done"), iterations: 3, converged: true };
    let item = |src| Event::MemoryItem {
        title: text("Check filings first"),
        description: text("When researching a company"),
        content: text("Read the latest 10-K before the news"),
        scope: text("research"),
        source_trajectory: src,
    };
    let t1 = log.push(traj("research ACME"));
    log.push(Event::Judgment { trajectory: t1, success: true, reason: text("found revenue"), confidence: Confidence::High });
    let a = log.push(item(Some(t1)));
    let t2 = log.push(traj("research Globex"));
    log.push(Event::Usage { trajectory: t2, item: a, rank: 1, score_bp: 8200 });
    log.push(Event::Judgment { trajectory: t2, success: false, reason: text("missed the merger"), confidence: Confidence::Medium });
    let t3 = log.push(traj("research Initech"));
    log.push(Event::Judgment { trajectory: t3, success: true, reason: text("ok"), confidence: Confidence::Low });
    log.push(Event::Usage { trajectory: t3, item: a, rank: 2, score_bp: 6100 });
    // Re-extracting the same lesson de-duplicates by content hash.
    let again = log.push(item(Some(t3)));
    let g = log.graph();
    assert_eq!(g.node(&a).unwrap().outcomes(), (1, 1, 2));
    assert_eq!(status(&g, &again), Status::Duplicate);
    assert_eq!(g.why(g.node(&again).unwrap())[1], a);
    assert_eq!(g.node(&t2).unwrap().judged(), Some(false));
    // A second judgment of one trajectory is refused.
    assert!(g.check(EntryId([0; 32]), &Event::Judgment { trajectory: t1, success: false, reason: text(""), confidence: Confidence::Low }).is_err());
}

/// Every bad input issue 3 lists is refused by the rules, and arrives from a
/// peer as an invalid node (kept, reported, never a panic or a wrong status).
#[test]
fn bad_inputs_are_refused_locally_and_invalid_from_peers() {
    let mut log = Log::new();
    let a = log.push(Event::Proposition { text: text("a") });
    let b = log.push(Event::Refinement { target: a, resolves: vec![], text: text("b") });
    let frame = log.push(Event::FrameOpen { parent: None, query: text("q"), branched_from: None, invalidation_condition: text("") });
    let g = log.graph();
    let fresh = EntryId([7; 32]);
    // Refers to itself.
    assert!(matches!(g.check(fresh, &Event::Relate { from: a, to: a, relation: Relation::Expands, reason: text("") }), Err(RuleError::SelfReference(_))));
    assert!(matches!(g.check(fresh, &Event::Support { target: fresh, text: text("") }), Err(RuleError::SelfReference(_))));
    // A cycle of refinements: b refines a, so a may not supersede b.
    assert!(matches!(g.check(fresh, &Event::Relate { from: a, to: b, relation: Relation::Update, reason: text("") }), Err(RuleError::Cycle { .. })));
    // A synthesis of one source.
    assert!(matches!(g.check(fresh, &Event::Synthesis { sources: vec![a], text: text("") }), Err(RuleError::SynthesisArity(1))));
    // A relation not allowed between those node types.
    assert!(matches!(g.check(fresh, &Event::Relate { from: frame, to: a, relation: Relation::Expands, reason: text("") }), Err(RuleError::WrongKind { .. })));
    assert!(matches!(g.check(fresh, &Event::Resolve { target: a, text: text("") }), Err(RuleError::WrongKind { .. })));
    // An unknown kind from a newer format version.
    let mut newer = Event::Proposition { text: text("x") }.encode();
    newer[5] = 99; // kind code
    assert_eq!(Event::decode(&newer), Err(EventDecodeError::UnknownKind(99)));
    let mut v2 = Event::Proposition { text: text("x") }.encode();
    v2[4] = 2;
    assert_eq!(Event::decode(&v2), Err(EventDecodeError::UnknownVersion(2)));

    // The same events arriving from a peer: kept and reported as invalid.
    let mut peer = Log::new();
    peer.events = log.events.clone();
    // (The cycle is the refining author's own: its chain order decides.)
    let cyc = peer.push_as(1, Event::Relate { from: a, to: b, relation: Relation::Update, reason: text("") });
    let one = peer.push_as(2, Event::Synthesis { sources: vec![a], text: text("") });
    let newer_id = EntryId([9; 32]);
    peer.events.push(LogEvent::from_payload(newer_id, LogPosition { timestamp_ms: 999_999, author: AgentId([2; 32]), seq: 99 }, Some(&newer)));
    let g = peer.graph();
    for id in [cyc, one, newer_id] {
        assert_eq!(status(&g, &id), Status::Invalid, "{id}");
        assert!(g.node(&id).unwrap().invalid().is_some());
    }
    // The invalid update had no effect: a is still superseded by b only.
    assert_eq!(g.why(g.node(&a).unwrap()), vec![b]);
    assert_eq!(status(&g, &b), Status::Active);
    assert_eq!(g.invalid().len(), 3);

    // The same cycle by another agent that names the refinement (`b`) had
    // seen it: causal order, so the rule stands (a cycle between agents
    // that saw nothing of each other is `a_backdated_update_cycle_...`).
    let cross = peer.push_as(2, Event::Relate { from: a, to: b, relation: Relation::Update, reason: text("") });
    let g = peer.graph();
    assert_eq!(status(&g, &cross), Status::Invalid);
    assert!(g.conflicts(g.node(&a).unwrap()).is_empty());
    assert_eq!(status(&g, &b), Status::Active);
}

/// Redacting a payload removes its text, not its place in the graph: events
/// that refer to it keep their effect.
#[test]
fn redacted_events_keep_their_effects() {
    let mut log = Log::new();
    let p = log.push(Event::Proposition { text: text("a private position") });
    let c = log.push(Event::Contradiction { target: p, text: text("no") });
    let r = log.push(Event::Refinement { target: p, resolves: vec![c], text: text("better") });
    let full = log.graph();
    // The same log with p's payload redacted.
    let mut redacted = log.events.clone();
    redacted[0] = LogEvent::from_payload(p, redacted[0].pos, None);
    let g = Graph::replay(redacted);
    assert_eq!(g.node(&p).unwrap().kind(), "redacted");
    assert!(g.text(g.node(&p).unwrap()).unwrap().is_empty());
    for id in [p, c, r] {
        assert_eq!(status(&g, &id), status(&full, &id), "{id}");
    }
    assert!(g.invalid().is_empty());
}

/// References to events not yet known are held, never dropped.
#[test]
fn pending_references_resolve_on_arrival() {
    let mut log = Log::new();
    let p = log.push(Event::Proposition { text: text("p") });
    let c = log.push_as(2, Event::Contradiction { target: p, text: text("no") });
    // Apply the contradiction first (as if the proposition had not synced yet).
    let mut g = Graph::new();
    let mut events = log.events.clone();
    let (ev_p, ev_c) = (events.remove(0), events.remove(0));
    // Give the contradiction the earlier position so apply() accepts this order.
    let mut ev_c_early = ev_c.clone();
    ev_c_early.pos.timestamp_ms = 0;
    assert!(g.apply(ev_c_early));
    assert!(g.node(&c).is_none());
    let pending = g.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].missing, vec![p]);
    assert!(g.apply(ev_p));
    assert!(g.pending().is_empty());
    assert_eq!(status(&g, &p), Status::Contested);
    assert_eq!(status(&g, &c), Status::Active);
}

fn golden_log() -> Log {
    let mut log = Log::new();
    let e1 = log.push(Event::Proposition { text: text("usage-based") });
    let e2 = log.push_as(2, Event::Contradiction { target: e1, text: text("procurement") });
    let e3 = log.push(Event::Refinement { target: e1, resolves: vec![e2], text: text("two-track") });
    log.push_as(3, Event::Synthesis { sources: vec![e1, e3], text: text("value realized") });
    let q = log.push_as(3, Event::Question { text: text("what about EU VAT?") });
    log.push_as(2, Event::Tension { a: e3, b: q, text: text("tracks differ by region") });
    let r = log.push(Event::Claim {
        text: text("rome"),
        kind: MemoryKind::Semantic,
        sources: vec![e1],
        owner_scope: text("x"),
        confirmed: false,
        expires_at_ms: None,
    });
    let m = log.push_as(
        2,
        Event::Claim { text: text("milan"), kind: MemoryKind::Semantic, sources: vec![], owner_scope: text("x"), confirmed: false, expires_at_ms: None },
    );
    log.push_as(3, Event::Relate { from: m, to: r, relation: Relation::Contradicts, reason: text("") });
    log.push(Event::Park { target: q, reason: text("later") });
    log
}

proptest! {
    /// The graph depends only on the set of events: any arrival order gives
    /// the same snapshot, byte for byte.
    #[test]
    fn replay_is_independent_of_arrival_order(perm in Just(golden_log().events).prop_shuffle()) {
        let sorted = golden_log().graph();
        let shuffled = Graph::replay(perm);
        prop_assert_eq!(shuffled.snapshot(), sorted.snapshot());
        prop_assert_eq!(shuffled.view_hash(), sorted.view_hash());
    }
}

/// Replaying straight from payload bytes builds the same view as replaying
/// decoded events.
#[test]
fn replay_encoded_equals_replay() {
    let log = golden_log();
    let payloads: Vec<(EntryId, LogPosition, Vec<u8>)> = log
        .events
        .iter()
        .map(|e| match &e.body {
            Body::Event(ev) => (e.id, e.pos, ev.encode()),
            other => panic!("unexpected body {other:?}"),
        })
        .collect();
    let mut items: Vec<(EntryId, LogPosition, Option<&[u8]>)> = payloads.iter().map(|(id, pos, p)| (*id, *pos, Some(&p[..]))).collect();
    items.reverse();
    assert_eq!(Graph::replay_encoded(&items).snapshot(), log.graph().snapshot());
}

/// Incremental application in log order gives the same bytes as a full replay.
#[test]
fn incremental_equals_replay() {
    let log = golden_log();
    let mut g = Graph::new();
    let mut events = log.events.clone();
    events.sort_by_key(|e| (e.pos, e.id));
    for e in events {
        assert!(g.apply(e));
    }
    assert_eq!(g.snapshot(), log.graph().snapshot());
    // An event older than the last applied one is refused (the caller replays).
    let mut old = log.events[0].clone();
    old.id = EntryId([0xee; 32]);
    old.pos.timestamp_ms = 0;
    assert!(!g.apply(old));
}

#[test]
fn dot_and_mermaid_show_statuses() {
    let g = golden_log().graph();
    let dot = agora_graph::export::to_dot(&g).unwrap();
    assert!(dot.starts_with("digraph agora {") && dot.contains("[superseded]") && dot.contains("#fbe3c8"));
    assert!(dot.contains("-> ") && dot.contains("label=\"refines\""));
    let mermaid = agora_graph::export::to_mermaid(&g).unwrap();
    assert!(mermaid.starts_with("flowchart BT") && mermaid.contains(":::contested") && mermaid.contains("classDef superseded"));
}

/// Hardening item 8: an agent that signs a resolve dated before another
/// agent's resolve does not take over: in either timestamp order both
/// resolves are valid and named, and the question is contested by the
/// conflict. The same agent resolving twice is still refused.
#[test]
fn a_backdated_resolve_conflicts_instead_of_winning() {
    let mut outcomes = Vec::new();
    for rival_time in [4_999, 5_001] {
        let mut log = Log::new();
        let q = log.at(1, 1_000, Event::Question { text: text("Which region first?") });
        let honest = log.at(2, 5_000, Event::Resolve { target: q, text: text("EU: the partner is there") });
        let rival = log.at(3, rival_time, Event::Resolve { target: q, text: text("US first") });
        let g = log.graph();
        for r in [&honest, &rival] {
            assert!(g.node(r).unwrap().invalid().is_none(), "{r} is valid");
        }
        assert_eq!(status(&g, &q), Status::Contested);
        let mut conflicts = g.conflicts(g.node(&q).unwrap());
        conflicts.sort();
        let mut both = vec![honest, rival];
        both.sort();
        assert_eq!(conflicts, both);
        assert!(g.why(g.node(&q).unwrap()).contains(&honest) && g.why(g.node(&q).unwrap()).contains(&rival));
        outcomes.push((status(&g, &q), conflicts));
        // A second resolve by the honest agent itself breaks the rule.
        let again = log.at(2, 6_000, Event::Resolve { target: q, text: text("EU, again") });
        assert_eq!(status(&log.graph(), &again), Status::Invalid);
    }
    assert_eq!(outcomes[0], outcomes[1], "the clock decides nothing");
}

/// Concurrent state changes by two agents: a task one agent closed and
/// another reopened is contested (both kept); a park and a resume, or
/// evidence for a frame another agent concluded, just apply.
#[test]
fn concurrent_state_changes_by_two_agents_are_kept() {
    let mut log = Log::new();
    let task = log.at(1, 1_000, Event::Task { objective: text("migrate"), owner_scope: text("team") });
    let done = log.at(1, 2_000, Event::TaskUpdate { task, state: TaskState::Done, note: text("cut over") });
    let reopen = log.at(2, 2_001, Event::TaskUpdate { task, state: TaskState::InProgress, note: text("not yet") });
    let q = log.at(1, 3_000, Event::Question { text: text("q") });
    log.at(1, 3_001, Event::Park { target: q, reason: text("later") });
    let park2 = log.at(2, 3_002, Event::Park { target: q, reason: text("agreed") });
    let frame = log.at(1, 4_000, Event::FrameOpen { parent: None, query: text("f"), branched_from: None, invalidation_condition: text("") });
    log.at(1, 4_001, Event::FrameConclude { frame, conclusion: text("done"), confidence_bp: 9_000 });
    let evidence = log.at(2, 4_002, Event::FrameEvidence { frame, text: text("late evidence") });
    let g = log.graph();
    assert_eq!(status(&g, &reopen), Status::Active);
    assert_eq!(status(&g, &task), Status::Contested);
    assert_eq!(g.conflicts(g.node(&task).unwrap()), vec![done, reopen]);
    assert_eq!((status(&g, &park2), status(&g, &q)), (Status::Active, Status::Parked));
    assert_eq!(status(&g, &evidence), Status::Active);
    assert!(g.conflicts(g.node(&frame).unwrap()).is_empty());
}

/// Which of two events by different agents log order puts first is the
/// authors' clocks' choice: for each rule where that order would decide
/// (events.md, "Concurrent events"), a rival event signed just before and
/// just after an honest one gives the same statuses. Returns, per rival
/// time, what `read` reads of the graph.
fn either_side<T: PartialEq + std::fmt::Debug>(build: impl Fn(&mut Log, u64) -> Vec<EntryId>, read: impl Fn(&Graph, &[EntryId]) -> T) -> T {
    let mut reads: Vec<T> = [4_999, 5_001]
        .into_iter()
        .map(|rival_time| {
            let mut log = Log::new();
            let ids = build(&mut log, rival_time);
            read(&log.graph(), &ids)
        })
        .collect();
    let after = reads.pop().unwrap();
    let before = reads.pop().unwrap();
    assert_eq!(before, after, "a rival signed before the honest event reads as one signed after it");
    after
}

fn sorted(mut ids: Vec<EntryId>) -> Vec<EntryId> {
    ids.sort();
    ids
}

fn item(title: &str, src: Option<EntryId>) -> Event {
    Event::MemoryItem {
        title: text(title),
        description: text("when it applies"),
        content: text("Read the latest 10-K before the news"),
        scope: text("research"),
        source_trajectory: src,
    }
}

/// A copy of another agent's memory item, dated before it, does not make
/// the original a duplicate: neither agent had seen the other's (a memory
/// item names no other item), so both are originals, in conflict, in
/// either order. An agent repeating its own item makes a duplicate.
#[test]
fn a_backdated_memory_item_copy_does_not_make_the_original_a_duplicate() {
    let (statuses, conflicts) = either_side(
        |log, rival_time| {
            let original = log.at(1, 5_000, item("Check filings first", None));
            let copy = log.at(2, rival_time, item("Check filings first", None));
            let again = log.at(1, 6_000, item("Check filings first", None));
            let rival_again = log.at(2, 6_001, item("Check filings first", None));
            vec![original, copy, again, rival_again]
        },
        |g, ids| {
            let statuses: Vec<Status> = ids.iter().map(|id| status(g, id)).collect();
            assert_eq!(g.why(g.node(&ids[2]).unwrap())[1], ids[0], "an agent's own repeat duplicates its own item");
            assert_eq!(g.why(g.node(&ids[3]).unwrap())[1], ids[1]);
            let conflicts: Vec<Vec<EntryId>> = ids[..2].iter().map(|id| g.conflicts(g.node(id).unwrap())).collect();
            (statuses, conflicts)
        },
    );
    assert_eq!(statuses, [Status::Contested, Status::Contested, Status::Duplicate, Status::Duplicate]);
    assert_eq!(conflicts[0].len(), 1);
    assert_eq!(conflicts[1].len(), 1);
    assert_ne!(conflicts[0], conflicts[1], "each names the other");
}

/// A failure judgment dated before another agent's success judgment of the
/// same trajectory does not take its outcome: the verdicts conflict, both
/// are named, and the trajectory counts for neither, in either order. The
/// same verdict by a third agent agrees and counts once.
#[test]
fn a_backdated_failure_judgment_does_not_flip_the_outcomes() {
    let judgment = |trajectory, success| Event::Judgment { trajectory, success, reason: text("checked"), confidence: Confidence::High };
    let read = either_side(
        |log, rival_time| {
            let lesson = log.at(1, 1_000, item("Check filings first", None));
            let traj = log.at(1, 2_000, Event::Trajectory { task_query: text("research ACME"), final_answer: text("done"), iterations: 1, converged: true });
            log.at(1, 3_000, Event::Usage { trajectory: traj, item: lesson, rank: 1, score_bp: 9_000 });
            let honest = log.at(2, 5_000, judgment(traj, true));
            let rival = log.at(3, rival_time, judgment(traj, false));
            vec![lesson, traj, honest, rival]
        },
        |g, ids| {
            let t = g.node(&ids[1]).unwrap();
            (g.node(&ids[0]).unwrap().outcomes(), t.status(), t.judged(), sorted(g.conflicts(t)), status(g, &ids[3]))
        },
    );
    assert_eq!(read.0, (0, 0, 1), "neither verdict counts");
    assert_eq!((read.1, read.2), (Status::Contested, None));
    let mut log = Log::new();
    let lesson = log.at(1, 1_000, item("Check filings first", None));
    let traj = log.at(1, 2_000, Event::Trajectory { task_query: text("q"), final_answer: text("a"), iterations: 1, converged: true });
    log.at(1, 3_000, Event::Usage { trajectory: traj, item: lesson, rank: 1, score_bp: 9_000 });
    let honest = log.at(2, 5_000, judgment(traj, true));
    let agreeing = log.at(3, 4_999, judgment(traj, true));
    let g = log.graph();
    assert_eq!(g.node(&lesson).unwrap().outcomes(), (1, 0, 1), "the same verdict twice counts once");
    assert_eq!((status(&g, &traj), status(&g, &agreeing), status(&g, &honest)), (Status::Active, Status::Active, Status::Active));
    // A usage after conflicting verdicts counts nothing; a third verdict joins the conflict.
    let dissent = log.at(4, 6_000, judgment(traj, false));
    log.at(1, 7_000, Event::Usage { trajectory: traj, item: lesson, rank: 1, score_bp: 9_000 });
    let g = log.graph();
    assert_eq!(g.node(&lesson).unwrap().outcomes(), (0, 0, 2));
    assert_eq!(sorted(g.conflicts(g.node(&traj).unwrap())), sorted(vec![honest, agreeing, dissent]), "every judgment is named");
    // An agent judging again is refused, as before.
    let again = log.at(2, 8_000, judgment(traj, false));
    assert_eq!(status(&log.graph(), &again), Status::Invalid);
}

/// A refinement dated before another agent's refinement of the same node
/// does not become its successor: both are kept, the node is contested and
/// has no current successor, in either order. An agent that had seen the
/// first successor (it refines it, then relates that refinement back as an
/// update) branches from an older state, and the first successor stays.
#[test]
fn a_backdated_refinement_does_not_become_the_successor() {
    let read = either_side(
        |log, rival_time| {
            let x = log.at(1, 1_000, Event::Proposition { text: text("Price at $20") });
            let honest = log.at(2, 5_000, Event::Refinement { target: x, resolves: vec![], text: text("Price at $25") });
            let rival = log.at(3, rival_time, Event::Refinement { target: x, resolves: vec![], text: text("Price at $5") });
            vec![x, honest, rival]
        },
        |g, ids| {
            let x = g.node(&ids[0]).unwrap();
            (x.status(), sorted(g.conflicts(x)), g.latest_in_chain(&ids[0]), g.superseded_by(x))
        },
    );
    assert_eq!(read.0, Status::Contested);
    assert_eq!(read.1.len(), 2);
    assert_eq!(read.3, None, "no successor is current");
    // Causal order: the update's author names a refinement of the first successor.
    let mut log = Log::new();
    let x = log.at(1, 1_000, Event::Proposition { text: text("Price at $20") });
    let first = log.at(2, 5_000, Event::Refinement { target: x, resolves: vec![], text: text("Price at $25") });
    let next = log.at(3, 6_000, Event::Refinement { target: first, resolves: vec![], text: text("Price at $24") });
    let claim = log.at(
        3,
        6_001,
        Event::Claim {
            text: text("Price at $24 from today"),
            kind: MemoryKind::Semantic,
            sources: vec![next],
            owner_scope: text("team"),
            confirmed: true,
            expires_at_ms: None,
        },
    );
    log.at(3, 6_002, Event::Relate { from: claim, to: x, relation: Relation::Update, reason: text("restated") });
    let g = log.graph();
    assert_eq!(status(&g, &x), Status::Superseded);
    assert_eq!(g.superseded_by(g.node(&x).unwrap()), Some(first));
    assert!(g.conflicts(g.node(&x).unwrap()).is_empty());
}

/// A refinement that resolves a contradiction another agent resolved, dated
/// before or after that resolve, is a second resolution as a resolve would
/// be: the contradiction is contested and names both, in either order.
#[test]
fn a_backdated_refinement_resolution_conflicts_with_a_resolve() {
    let read = either_side(
        |log, rival_time| {
            let p = log.at(1, 1_000, Event::Proposition { text: text("Ship Friday") });
            let c = log.at(1, 2_000, Event::Contradiction { target: p, text: text("QA is not done") });
            let honest = log.at(2, 5_000, Event::Resolve { target: c, text: text("QA signed off") });
            let rival = log.at(3, rival_time, Event::Refinement { target: p, resolves: vec![c], text: text("Ship Monday") });
            vec![c, honest, rival]
        },
        |g, ids| (status(g, &ids[0]), sorted(g.conflicts(g.node(&ids[0]).unwrap())), status(g, &ids[1]), status(g, &ids[2])),
    );
    assert_eq!(read.0, Status::Contested);
    assert_eq!(read.1.len(), 2);
    assert_ne!(read.2, Status::Invalid);
    assert_ne!(read.3, Status::Invalid);
}

/// Two `update` relations that would supersede each other's claims (a
/// cycle), one dated before the other: both claims are contested in either
/// order, and neither is the other's successor.
#[test]
fn a_backdated_update_cycle_conflicts_in_either_order() {
    let claim =
        |t: &str| Event::Claim { text: text(t), kind: MemoryKind::Semantic, sources: vec![], owner_scope: text("team"), confirmed: true, expires_at_ms: None };
    let read = either_side(
        |log, rival_time| {
            let x = log.at(1, 1_000, claim("EU first"));
            let y = log.at(1, 1_001, claim("US first"));
            log.at(2, 5_000, Event::Relate { from: x, to: y, relation: Relation::Update, reason: text("EU") });
            log.at(3, rival_time, Event::Relate { from: y, to: x, relation: Relation::Update, reason: text("US") });
            vec![x, y]
        },
        |g, ids| (status(g, &ids[0]), status(g, &ids[1])),
    );
    assert_eq!(read, (Status::Contested, Status::Contested));
}

/// Final states of tasks and frames: a close dated before another agent's
/// move does not win; the move it would block is kept as a conflict. (A
/// change signed after another's is a later change, which any agent may
/// make at any time: last in log order, not a clock's choice.)
#[test]
fn a_backdated_final_state_conflicts_instead_of_blocking() {
    let mut log = Log::new();
    let task = log.at(1, 1_000, Event::Task { objective: text("migrate"), owner_scope: text("team") });
    let honest = log.at(2, 5_000, Event::TaskUpdate { task, state: TaskState::InProgress, note: text("on it") });
    let rival = log.at(3, 4_999, Event::TaskUpdate { task, state: TaskState::Abandoned, note: text("drop it") });
    let frame = log.at(1, 1_001, Event::FrameOpen { parent: None, query: text("f"), branched_from: None, invalidation_condition: text("") });
    let concluded = log.at(2, 5_002, Event::FrameConclude { frame, conclusion: text("found it"), confidence_bp: 9_000 });
    let invalidated = log.at(3, 5_001, Event::FrameInvalidate { frame, reason: text("no") });
    let g = log.graph();
    assert_eq!(status(&g, &task), Status::Contested, "not parked by the backdated abandon");
    assert_eq!(sorted(g.conflicts(g.node(&task).unwrap())), sorted(vec![honest, rival]));
    assert_eq!(status(&g, &frame), Status::Contested, "not retracted by the backdated invalidation");
    assert_eq!(sorted(g.conflicts(g.node(&frame).unwrap())), sorted(vec![concluded, invalidated]));
}

/// Parks and resumes agree or are overwritten: a park dated before another
/// agent's resume is resumed by it, and a resume dated before the park it
/// answers is invalid (its own author's mistake), in neither case a win.
#[test]
fn a_backdated_park_or_resume_decides_nothing() {
    let mut log = Log::new();
    let q = log.at(1, 1_000, Event::Question { text: text("Which region?") });
    log.at(1, 5_000, Event::Park { target: q, reason: text("later") });
    log.at(2, 6_000, Event::Resume { target: q });
    log.at(3, 5_999, Event::Park { target: q, reason: text("backdated") });
    let early_resume = log.at(4, 4_999, Event::Resume { target: q });
    let g = log.graph();
    assert_eq!(status(&g, &q), Status::Active);
    assert_eq!(status(&g, &early_resume), Status::Invalid);
}

/// An action from `span` by its framework, caused by `cause`.
fn action(operation: &str, name: &str, span: &str, cause: Option<EntryId>) -> Event {
    Event::Action {
        operation: text(operation),
        name: text(name),
        conversation: text("conv-1"),
        span: text(span),
        parent: text(""),
        cause,
        input_hash: Some(agora_core::sha256(b"{\"city\":\"Paris\"}")),
        output_hash: None,
        text: text(""),
        error: text(""),
    }
}

/// `events` with every event's payload replaced by its residue, as a node
/// that redacted them all holds them.
fn all_redacted(events: &[LogEvent]) -> Vec<LogEvent> {
    let mut redacted = events.to_vec();
    for e in &mut redacted {
        if let Body::Event(ev) = &e.body {
            let residue = Event::residue(&ev.encode());
            *e = LogEvent::from_content(e.id, e.pos, agora_core::Content::Redacted(Some(&residue))).unwrap();
        }
    }
    redacted
}

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

fn span(id: &str) -> String {
    format!("{TRACE}/{id}")
}

/// A framework's trace, recorded: an agent run, a tool call it made, a
/// handoff to another agent, whose run names the handoff as its cause
/// (across the two agents' chains). Each is an active `action` node with a
/// `caused_by` edge to its cause. A span sent twice by its agent is
/// recorded once (the repeat is a duplicate); another agent's action with
/// that span is not a duplicate of it, nor an action without a span.
#[test]
fn actions_from_a_trace() {
    let mut log = Log::new();
    let run = log.push(action("invoke_agent", "triage", &span("1111111111111111"), None));
    let tool = log.push(action("execute_tool", "get_weather", &span("2222222222222222"), Some(run)));
    let handoff = log.push(action("handoff", "billing", &span("3333333333333333"), Some(run)));
    let other_run = log.push_as(2, action("invoke_agent", "billing", &span("4444444444444444"), Some(handoff)));
    let again = log.push(action("execute_tool", "get_weather", &span("2222222222222222"), Some(run)));
    let same_span_other_agent = log.push_as(2, action("execute_tool", "get_weather", &span("2222222222222222"), Some(run)));
    let no_span = log.push(action("chat", "gpt-4o", "", None));
    let no_span_again = log.push(action("chat", "gpt-4o", "", None));
    let g = log.graph();
    assert!(g.invalid().is_empty());
    for id in [run, tool, handoff, other_run, same_span_other_agent, no_span, no_span_again] {
        assert_eq!(g.node(&id).unwrap().kind(), "action");
        assert_eq!(status(&g, &id), Status::Active, "{id}");
    }
    assert_eq!(g.edges(g.node(&tool).unwrap()).collect::<Vec<_>>(), vec![("caused_by", run)]);
    assert_eq!(g.edges(g.node(&other_run).unwrap()).collect::<Vec<_>>(), vec![("caused_by", handoff)]);
    assert_eq!(g.edges(g.node(&run).unwrap()).len(), 0);
    assert_eq!(g.touched_by(g.node(&run).unwrap()), vec![run, tool, handoff, again, same_span_other_agent]);
    assert_eq!(status(&g, &again), Status::Duplicate);
    assert_eq!(g.why(g.node(&again).unwrap()), vec![again, tool]);
    assert!(g.touched_by(g.node(&tool).unwrap()).contains(&again));
    assert_eq!(g.action_of_span(&AgentId([1; 32]), &span("2222222222222222")), Some(tool));
    assert_eq!(g.action_of_span(&AgentId([2; 32]), &span("2222222222222222")), Some(same_span_other_agent));
    assert_eq!(g.action_of_span(&AgentId([2; 32]), &span("1111111111111111")), None);
    assert_eq!(g.action_of_span(&AgentId([1; 32]), ""), None);
    // Its node text: what it was done with, its contents, its error.
    assert_eq!(g.text(g.node(&tool).unwrap()).unwrap(), "get_weather");

    // A redacted action keeps its place: the repeat is still a duplicate.
    let r = Graph::replay(all_redacted(&log.events));
    assert_eq!(r.snapshot(), g.snapshot());
    assert_eq!(status(&r, &again), Status::Duplicate);
    assert!(r.text(r.node(&tool).unwrap()).unwrap().is_empty());
}

/// An action's cause is any event, not a raw note or an invalid event:
/// refused locally, and an invalid node when a peer sends it (and so is an
/// action caused by that invalid one). Its operation and span have fixed
/// forms, checked at decoding.
#[test]
fn an_action_caused_by_a_raw_note_or_an_invalid_event_is_invalid() {
    let mut log = Log::new();
    let p = log.push(Event::Proposition { text: text("ship on friday") });
    let raw = EntryId([0x52; 32]);
    log.clock += 1_000;
    log.events.push(LogEvent::from_payload(raw, LogPosition { timestamp_ms: log.clock, author: AgentId([3; 32]), seq: 1 }, Some(b"a raw note")));
    let g = log.graph();
    let fresh = EntryId([7; 32]);
    assert_eq!(g.check(fresh, &action("plan", "", "", Some(p))), Ok(()), "a proposition can cause an action");
    assert!(matches!(g.check(fresh, &action("plan", "", "", Some(raw))), Err(RuleError::WrongKind { kind: "raw", .. })));
    assert!(matches!(g.check(fresh, &action("plan", "", "", Some(fresh))), Err(RuleError::SelfReference(_))));

    let bad = log.push_as(2, action("execute_tool", "deploy", &span("5555555555555555"), Some(raw)));
    let after_bad = log.push_as(2, action("execute_tool", "notify", "", Some(bad)));
    // The invalid action's span is not claimed: a later one from it is active.
    let retry = log.push_as(2, action("execute_tool", "deploy", &span("5555555555555555"), Some(p)));
    let g = log.graph();
    assert_eq!(status(&g, &bad), Status::Invalid);
    assert_eq!(status(&g, &after_bad), Status::Invalid);
    assert_eq!(status(&g, &retry), Status::Active);
    assert_eq!(g.invalid().len(), 2);

    let mut upper = action("Execute_Tool", "", "", None).encode();
    assert!(matches!(Event::decode(&upper), Err(EventDecodeError::Limit(_))));
    upper = action("execute_tool", "", &span("5555555555555555").to_uppercase(), None).encode();
    assert!(matches!(Event::decode(&upper), Err(EventDecodeError::Limit(_))));
}

/// Another agent's action from the same span, dated before or after the
/// honest one, makes neither a duplicate: only an author's own repeat is.
#[test]
fn a_backdated_action_from_the_same_span_makes_no_duplicate() {
    let statuses = either_side(
        |log, rival_time| {
            let honest = log.at(1, 5_000, action("execute_tool", "get_weather", &span("6666666666666666"), None));
            let rival = log.at(2, rival_time, action("execute_tool", "get_weather", &span("6666666666666666"), None));
            let repeat = log.at(1, 6_000, action("execute_tool", "get_weather", &span("6666666666666666"), None));
            vec![honest, rival, repeat]
        },
        |g, ids| {
            assert_eq!(g.why(g.node(&ids[2]).unwrap()), vec![ids[2], ids[0]], "an agent's own repeat duplicates its own action");
            ids.iter().map(|id| status(g, id)).collect::<Vec<_>>()
        },
    );
    assert_eq!(statuses, [Status::Active, Status::Active, Status::Duplicate]);
}

/// A framework's memory record, written, updated, deleted and written
/// again through one agent's spans: each state a claim derived from its
/// write action, related to the one before by `update`; the record's
/// current claim is its author's last such claim in log order. Another
/// agent's claim of the action, a claim of a search's action and a claim
/// whose first source is content are no state of the record. A redaction
/// changes nothing, and neither does the order the events arrive in.
#[test]
fn a_memory_record_is_one_claim_updated() {
    let claim = |sources: Vec<EntryId>| Event::Claim {
        text: text("likes tea"),
        kind: MemoryKind::Preference,
        sources,
        owner_scope: text("user:ann"),
        confirmed: false,
        expires_at_ms: None,
    };
    let update = |from, to| Event::Relate { from, to, relation: Relation::Update, reason: text("") };
    let ann = AgentId([1; 32]);
    let mut log = Log::new();
    let w1 = log.push(action("create_memory", "r1", &span("1111111111111111"), None));
    let c1 = log.push(claim(vec![w1]));
    let w2 = log.push(action("update_memory", "r1", &span("2222222222222222"), None));
    let c2 = log.push(claim(vec![w2]));
    let u2 = log.push(update(c2, c1));
    let g = log.graph();
    assert!(g.invalid().is_empty(), "a claim may derive from an action: {:?}", g.invalid().iter().map(|n| n.id).collect::<Vec<_>>());
    assert_eq!(g.memory_record_claim(&ann, "r1"), Some(c2));
    assert_eq!(status(&g, &c1), Status::Superseded);
    assert_eq!(g.latest_in_chain(&c1), Some(c2));

    let delete = log.push(action("delete_memory", "r1", &span("3333333333333333"), None));
    let park = log.push(Event::Park { target: c2, reason: text("delete_memory") });
    let _ = (delete, u2);
    // Not states of r1: another agent's claim of ann's write, a claim of a
    // search, a claim whose first source is content.
    let other = log.push_as(2, claim(vec![w2]));
    let search = log.push(action("search_memory", "r1", &span("4444444444444444"), None));
    let of_search = log.push(claim(vec![search]));
    let p = log.push(Event::Proposition { text: text("tea is good") });
    let of_content = log.push(claim(vec![p, w2]));
    let g = log.graph();
    assert_eq!(status(&g, &c2), Status::Parked);
    assert_eq!(g.memory_record_claim(&ann, "r1"), Some(c2));
    assert_eq!(g.memory_record_claim(&AgentId([2; 32]), "r1"), None);
    for id in [other, of_search, of_content] {
        assert_eq!(status(&g, &id), Status::Active);
    }

    // Written again after the deletion: the parked claim is updated.
    let w3 = log.push(action("update_memory", "r1", &span("5555555555555555"), None));
    let c3 = log.push(claim(vec![w3]));
    log.push(update(c3, c2));
    let w4 = log.push(action("create_memory", "r2", &span("6666666666666666"), None));
    let c4 = log.push(claim(vec![w4]));
    let g = log.graph();
    assert_eq!(g.memory_record_claim(&ann, "r1"), Some(c3));
    assert_eq!(g.memory_record_claim(&ann, "r2"), Some(c4));
    assert_eq!(g.memory_record_claim(&ann, "r3"), None);
    assert_eq!(g.latest_in_chain(&c1), Some(c3));
    assert_eq!(status(&g, &park), Status::Active);

    // Redacted: the write actions keep their records' keys.
    let r = Graph::replay(all_redacted(&log.events));
    assert_eq!(r.snapshot(), g.snapshot());
    assert_eq!(r.memory_record_claim(&ann, "r1"), Some(c3));
    assert_eq!(r.memory_record_claim(&ann, "r2"), Some(c4));

    // Arriving newest first, each one late, rewound into place.
    let mut live = Graph::new();
    live.keep_journal(64);
    for e in log.events.iter().rev() {
        assert_eq!(live.apply_late(e.clone()), Late::Applied);
    }
    assert_eq!(live.snapshot(), g.snapshot());
    assert_eq!(live.memory_record_claim(&ann, "r1"), Some(c3));
    assert_eq!(live.memory_record_claim(&ann, "r2"), Some(c4));
}

/// A state of a memory record that arrives after a later one sorts before
/// it, so the record's current claim stays the later one: the late claim is
/// not taken in place (the live graph rewinds or replays), while a late
/// claim of no record is.
#[test]
fn a_late_state_of_a_memory_record_leaves_the_later_one_current() {
    let claim = |sources: Vec<EntryId>| Event::Claim {
        text: text("likes tea"),
        kind: MemoryKind::Episodic,
        sources,
        owner_scope: text(""),
        confirmed: false,
        expires_at_ms: None,
    };
    let ann = AgentId([1; 32]);
    let mut log = Log::new();
    let w1 = log.push(action("create_memory", "r1", &span("1111111111111111"), None));
    log.push(claim(vec![w1]));
    let p = log.push_as(2, Event::Proposition { text: text("tea") });
    log.push_as(2, claim(vec![p]));
    let w2 = log.push(action("update_memory", "r1", &span("2222222222222222"), None));
    let c2 = log.push(claim(vec![w2]));
    let events = log.events.clone();
    // The first state and the unrelated claim arrive last, both late.
    let arrivals = [&events[0], &events[2], &events[4], &events[5], &events[1], &events[3]];
    let mut live = Graph::new();
    let mut in_place = Vec::new();
    for (i, e) in arrivals.iter().enumerate() {
        match live.apply_late((*e).clone()) {
            Late::Applied => in_place.push(e.id),
            Late::Refused | Late::Spoiled => live = Graph::replay(arrivals[..=i].iter().map(|e| (*e).clone()).collect()),
        }
    }
    assert_eq!(live.memory_record_claim(&ann, "r1"), Some(c2));
    assert!(!in_place.contains(&events[1].id), "the late state of r1 is not taken in place");
    assert!(in_place.contains(&events[3].id), "a late claim of no record is");
    assert_eq!(live.snapshot(), log.graph().snapshot());
}
