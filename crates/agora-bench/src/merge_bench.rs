//! Merge-layer benchmark: recompute the merged view of a synthetic swarm
//! (default 100 agents x 10,000 events each) held in memory: reasoning
//! events, accepts, disputes, withdrawals, an honest fork with its resolution
//! and an equivocation.

use crate::measure::percentile;
use agora_core::entry::{Header, next_header_after};
use agora_core::{AgentKey, EntryId, SignedEntry};
use agora_graph::Event;
use agora_merge::{Merge, MergeEntry, MergeEvent};
use anyhow::Result;
use rayon::prelude::*;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Agents in the swarm.
    #[arg(long, default_value_t = 100)]
    agents: usize,
    /// Events on each agent's chain.
    #[arg(long, default_value_t = 10_000)]
    events_per_agent: usize,
    /// Timed recomputations.
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Also time the full merged view (the merged reasoning graph of every
    /// view chain, replayed) and one agent's perspective.
    #[arg(long)]
    with_graph: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Every run benchmarks the same swarm.
use agora_core::xorshift::Xorshift64 as Rng;

/// One agent's chain under construction: headers are chained first (ids do
/// not depend on signatures) and signed in parallel at the end.
struct Chain {
    key: AgentKey,
    headers: Vec<(Header, EntryId)>,
    payloads: Vec<Vec<u8>>,
    disputes: Vec<EntryId>,
}

impl Chain {
    fn push_after(&mut self, prev: Option<usize>, now_ms: u64, payload: Vec<u8>) -> EntryId {
        let prev = prev.map(|i| (&self.headers[i].0, self.headers[i].1));
        let h = next_header_after(self.key.agent_id(), prev, now_ms, &payload).expect("bench payloads are small");
        let id = h.id();
        self.headers.push((h, id));
        self.payloads.push(payload);
        id
    }
    fn push(&mut self, now_ms: u64, payload: Vec<u8>) -> EntryId {
        let prev = self.headers.len().checked_sub(1);
        self.push_after(prev, now_ms, payload)
    }
}

/// The synthetic swarm. Returns the entries (as a store would hand them over).
pub fn swarm(agents: usize, per_agent: usize) -> Vec<MergeEntry> {
    swarm_from(agents, per_agent, 0, SWARM_CLOCK)
}

/// The first timestamp of [`swarm`]; each event takes the next millisecond.
pub const SWARM_CLOCK: u64 = 1_700_000_000_000;

/// [`swarm`] of the agents numbered from `first_agent` (other keys than a
/// swarm's first agents), its clock starting at `clock`: a swarm that
/// arrives after another.
pub fn swarm_from(agents: usize, per_agent: usize, first_agent: usize, clock: u64) -> Vec<MergeEntry> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut chains: Vec<Chain> = (0..agents)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&((first_agent + i) as u64 + 1).to_le_bytes());
            Chain { key: AgentKey::from_seed(seed), headers: Vec::new(), payloads: Vec::new(), disputes: Vec::new() }
        })
        .collect();
    let authors: Vec<_> = chains.iter().map(|c| c.key.agent_id()).collect();
    // Recent reasoning positions, for references: (author, seq, id).
    let mut recent: Vec<EntryId> = Vec::new();
    let mut clock = clock;
    for step in 0..per_agent {
        for a in 0..agents {
            clock += 1;
            let pick = |rng: &mut Rng, v: &[EntryId]| v.get(v.len().saturating_sub(1 + rng.below(v.len().min(5_000)))).copied();
            let text = format!("agent {a} step {step} on pricing tier {} and hiring plan {}", step % 97, a % 13);
            let r = rng.below(100);
            let payload = match r {
                0..=29 => Event::Proposition { text }.encode(),
                30..=49 => match pick(&mut rng, &recent) {
                    Some(t) => Event::Support { target: t, text }.encode(),
                    None => Event::Proposition { text }.encode(),
                },
                50..=64 => match pick(&mut rng, &recent) {
                    Some(t) => Event::Contradiction { target: t, text }.encode(),
                    None => Event::Proposition { text }.encode(),
                },
                65..=72 => match (pick(&mut rng, &recent), pick(&mut rng, &recent)) {
                    (Some(x), Some(y)) if x != y => Event::Synthesis { sources: vec![x, y], text }.encode(),
                    _ => Event::Proposition { text }.encode(),
                },
                73..=87 => {
                    // Accept another agent's chain up to its current head.
                    let b = (a + 1 + rng.below(agents - 1)) % agents;
                    match chains[b].headers.last() {
                        Some((h, id)) => MergeEvent::Accept { author: authors[b], up_to_seq: h.seq, head: *id }.encode(),
                        None => Event::Proposition { text }.encode(),
                    }
                }
                88..=94 => match pick(&mut rng, &recent) {
                    Some(t) => {
                        MergeEvent::Dispute { target: t, reason: format!("disputed at step {step}"), counter_claim: r.is_multiple_of(2).then(|| text.clone()) }
                            .encode()
                    }
                    None => Event::Proposition { text }.encode(),
                },
                _ => match chains[a].disputes.pop() {
                    Some(d) => MergeEvent::Withdraw { dispute: d }.encode(),
                    None => Event::Question { text }.encode(),
                },
            };
            let is_dispute = MergeEvent::decode(&payload).is_ok_and(|e| matches!(e, MergeEvent::Dispute { .. }));
            let is_reasoning = Event::is_event_payload(&payload);
            let id = chains[a].push(clock, payload);
            if is_dispute {
                chains[a].disputes.push(id);
            }
            if is_reasoning {
                recent.push(id);
            }
        }
    }
    // An honest fork (agent 0 restores a backup 10 entries back, continues,
    // and resolves) and an equivocation (agent 1, unresolved).
    if agents >= 2 && per_agent > 20 {
        let base = chains[0].headers.len() - 11;
        let first = chains[0].push_after(Some(base), clock, Event::Proposition { text: "restored".into() }.encode());
        let restored = chains[0].headers.len() - 1;
        let second = chains[0].push_after(Some(restored), clock, Event::Proposition { text: "restored 2".into() }.encode());
        let _ = second;
        let fork_seq = chains[0].headers[restored].0.seq;
        let tip = chains[0].headers.len() - 1;
        chains[0].push_after(Some(tip), clock, MergeEvent::ForkResolution { fork_number: 1, fork_seq, continue_with: first }.encode());
        let base = chains[1].headers.len() - 2;
        chains[1].push_after(Some(base), clock, Event::Proposition { text: "the other story".into() }.encode());
    }
    let mut entries: Vec<MergeEntry> = chains
        .into_par_iter()
        .flat_map_iter(|c| {
            let key = c.key;
            c.headers
                .into_iter()
                .zip(c.payloads)
                .map(move |((h, _), p)| MergeEntry::from_owned(SignedEntry::sign(h, &key), Some(p)).expect("payload matches its header"))
                .collect::<Vec<_>>()
        })
        .collect();
    // As a store hands them over (`Store::for_each_entry`): by author, seq,
    // id, each read (so allocated) in that order.
    entries.sort_unstable_by_key(|e| (e.author(), e.seq(), e.id()));
    // (Copied while the originals are alive, so the copies get fresh memory.)
    let copies: Vec<MergeEntry> = entries
        .iter()
        .map(|e| {
            let copy = agora_core::SignedEntry::decode(&e.signed().encode()).expect("re-decoding a signed entry");
            MergeEntry::from_owned(copy, e.payload().map(<[u8]>::to_vec)).expect("payload matches its header")
        })
        .collect();
    drop(entries);
    copies
}

/// The `--with-graph` timings.
struct GraphTimes {
    /// Entries to merged view, one per run, ascending.
    full: Vec<Duration>,
    nodes: usize,
    /// Reading every node of one view.
    read: Duration,
    replay: Duration,
    sort: Duration,
    hash: Duration,
    /// SHA-256 alone over the snapshot's bytes.
    sha_floor: Duration,
    snapshot_bytes: usize,
    perspective: Duration,
    perspective_nodes: usize,
}

pub fn run(args: MergeArgs) -> Result<()> {
    anyhow::ensure!(args.agents >= 2 && args.runs >= 1, "need at least 2 agents and 1 run");
    let start = Instant::now();
    let entries = swarm(args.agents, args.events_per_agent);
    let build = start.elapsed();
    let n = entries.len();
    let reference = Merge::compute(&entries, &[])?;
    let hash = reference.view_hash();
    let merge_events = reference.records().len();
    let open = reference.open_disputes().len();
    let frozen = reference.chains().iter().filter(|c| c.frozen().is_some()).count();
    let quorum = args.agents / 2 + 1;
    drop(reference);

    // The recompute of the merged view: the merge state (chains, forks, the
    // status of every merge event, frontiers), its view hash, and consensus
    // (k = n/2 + 1 of all agents) over it.
    let mut times = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let t = Instant::now();
        let m = Merge::compute(&entries, &[])?;
        let h = m.view_hash();
        let consensus = m.consensus(&m.agents(), quorum)?;
        times.push(t.elapsed());
        anyhow::ensure!(h == hash, "the view hash changed between runs");
        std::hint::black_box(consensus);
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;

    // Queries on top of it, each timed once: the disagreement map (every open
    // dispute with its ancestors, acceptors and the branch view) and, with
    // --with-graph, the merged reasoning graph and one agent's perspective.
    let m = Merge::compute(&entries, &[])?;
    let t = Instant::now();
    let d = m.disagreements(None);
    let disagreements = t.elapsed();
    let disputed = d.disputed.len();
    drop(d);
    let graph = if args.with_graph {
        // The whole recompute, from the entries to the merged view (merge
        // state, the merged reasoning graph replayed, its hash, the dispute
        // marks), checked against computing the merge and then the view.
        let reference = m.merged_view();
        let expected = (reference.view_hash, reference.graph_digest);
        let nodes = reference.len();
        drop(reference);
        let mut full = Vec::with_capacity(args.runs);
        let mut read = Duration::ZERO;
        for _ in 0..args.runs {
            let t = Instant::now();
            let (m, view) = Merge::compute_with_view(&entries, &[])?;
            full.push(t.elapsed());
            anyhow::ensure!((view.view_hash, view.graph_digest) == expected, "compute_with_view differs from compute + merged_view");
            // Reading every node out of it, as a publisher does (after the
            // recompute; not part of it).
            let t = Instant::now();
            let marks: usize = view.nodes().map(|n| std::hint::black_box(n).disputed_by.len()).sum();
            read = t.elapsed();
            anyhow::ensure!(marks == view.disputes.len() - view.disputes.iter().filter(|d| view.node(&d.target).is_none()).count());
            drop((m, view));
        }
        full.sort();
        // Where the time goes, each part timed once on its own.
        let t = Instant::now();
        let g = m.merged_graph();
        let replay = t.elapsed();
        let t = Instant::now();
        std::hint::black_box(g.by_id());
        let sort = t.elapsed();
        let t = Instant::now();
        std::hint::black_box(g.view_hash());
        let hash = t.elapsed();
        // This machine's floor for that hash: SHA-256 alone over the same bytes.
        let snapshot = g.snapshot();
        let t = Instant::now();
        std::hint::black_box(agora_core::sha256(&snapshot));
        let sha_floor = t.elapsed();
        let snapshot_bytes = snapshot.len();
        drop(snapshot);
        drop(g);
        let agent = m.agents()[args.agents / 2];
        let t = Instant::now();
        let p = m.perspective(&agent);
        let perspective = t.elapsed();
        Some(GraphTimes { full, nodes, read, replay, sort, hash, sha_floor, snapshot_bytes, perspective, perspective_nodes: p.graph.len() })
    } else {
        None
    };
    drop(m);

    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "agents": args.agents, "entries": n, "merge_events": merge_events, "open_disputes": open, "disputed_events": disputed,
                "frozen_chains": frozen, "quorum": quorum, "runs": args.runs, "build_s": build.as_secs_f64(),
                "recompute_ms": { "median": ms(percentile(&times, 0.5)), "p99": ms(percentile(&times, 0.99)), "min": ms(times[0]) },
                "disagreement_map_ms": ms(disagreements),
                "view_hash": hex::encode(hash),
                "merged_view_from_entries_ms": graph.as_ref().map(|g| serde_json::json!({ "median": ms(percentile(&g.full, 0.5)), "p99": ms(percentile(&g.full, 0.99)), "min": ms(g.full[0]) })),
                "merged_graph_nodes": graph.as_ref().map(|g| g.nodes),
                "read_every_node_ms": graph.as_ref().map(|g| ms(g.read)),
                "merged_graph_replay_ms": graph.as_ref().map(|g| ms(g.replay)), "merged_graph_sort_by_id_ms": graph.as_ref().map(|g| ms(g.sort)),
                "merged_graph_hash_ms": graph.as_ref().map(|g| ms(g.hash)),
                "snapshot_bytes": graph.as_ref().map(|g| g.snapshot_bytes), "sha256_of_snapshot_ms": graph.as_ref().map(|g| ms(g.sha_floor)),
                "perspective_ms": graph.as_ref().map(|g| ms(g.perspective)), "perspective_nodes": graph.as_ref().map(|g| g.perspective_nodes),
            })
        );
    } else {
        println!(
            "swarm: {} agents, {} entries ({} merge events, {} open disputes on {} events, {} frozen chain(s)); built and signed in {:.1} s",
            args.agents,
            n,
            merge_events,
            open,
            disputed,
            frozen,
            build.as_secs_f64()
        );
        println!(
            "recompute of the merged view (merge state + view hash + consensus {quorum} of {}), {} runs: median {:.0} ms, p99 {:.0} ms, min {:.0} ms",
            args.agents,
            args.runs,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            ms(times[0])
        );
        println!("view hash {}", hex::encode(hash));
        println!("disagreement map ({disputed} disputed events, ancestors, acceptors, branch view), once: {:.0} ms", ms(disagreements));
        if let Some(g) = graph {
            println!(
                "merged view from the entries (merge state + merged reasoning graph of {} nodes + its hash + dispute marks), {} runs: median {:.0} ms, p99 {:.0} ms, min {:.0} ms",
                g.nodes,
                args.runs,
                ms(percentile(&g.full, 0.5)),
                ms(percentile(&g.full, 0.99)),
                ms(g.full[0])
            );
            println!(
                "  parts, each once: graph replay {:.0} ms, nodes sorted by id {:.0} ms, graph hash {:.0} ms (SHA-256 alone over its {:.0} MB snapshot: {:.0} ms, {:.2} of it); then reading every node out of the view {:.0} ms",
                ms(g.replay),
                ms(g.sort),
                ms(g.hash),
                g.snapshot_bytes as f64 / 1e6,
                ms(g.sha_floor),
                g.sha_floor.as_secs_f64() / g.hash.as_secs_f64(),
                ms(g.read)
            );
            println!("one agent's perspective ({} nodes), once: {:.0} ms", g.perspective_nodes, ms(g.perspective));
        }
    }
    Ok(())
}
