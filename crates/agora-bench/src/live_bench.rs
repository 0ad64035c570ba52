//! Live merged-view benchmark: a node's [`LiveMerge`] built once over the
//! synthetic swarm of the merge bench (default 100 agents x 10,000 events),
//! then entries arriving one at a time, each applied and the view hash read
//! after it, then the consensus asked for: the cost of keeping the merged
//! view current, beside the full recompute (`Merge::compute` + view hash +
//! consensus) in the same run.
//!
//! The arrivals are the last entries of every chain, in log order: mostly
//! entries that extend their chain in place, and, at the end of agent 0's
//! and agent 1's chains, a fork with its resolution and an equivocation,
//! which make their chains be derived again.
//!
//! Beside it, the perspective of the agent that accepts the most: built by
//! replay at start, then refreshed and hashed after each arrival.

use crate::measure::percentile;
use agora_core::AgentId;
use agora_merge::{ChainInput, LiveMerge, LivePerspective, LiveUpdate, Merge, MergeEntry};
use anyhow::Result;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct LiveArgs {
    /// Agents in the swarm.
    #[arg(long, default_value_t = 100)]
    agents: usize,
    /// Events on each agent's chain.
    #[arg(long, default_value_t = 10_000)]
    events_per_agent: usize,
    /// Entries held back from each chain and delivered one at a time.
    #[arg(long, default_value_t = 20)]
    arrivals_per_agent: usize,
    /// Timed full recomputes, for comparison.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// A swarm split into what a node holds at start and what arrives after.
pub(crate) struct HeldBack {
    /// Each chain but its last entries.
    pub held: HashMap<AgentId, Vec<MergeEntry>>,
    /// The last entries of every chain, in log order.
    pub arrivals: Vec<MergeEntry>,
    /// What is held, in (author, seq, id) order.
    pub initial: Vec<MergeEntry>,
}

/// Hold back the last `per_agent` entries of every chain of `entries`
/// (which come by author, then seq).
pub(crate) fn held_back(entries: &[MergeEntry], per_agent: usize) -> HeldBack {
    let mut by_author: HashMap<AgentId, Vec<MergeEntry>> = HashMap::new();
    for e in entries {
        by_author.entry(e.author()).or_default().push(e.clone());
    }
    let mut held: HashMap<AgentId, Vec<MergeEntry>> = HashMap::new();
    let mut arrivals: Vec<MergeEntry> = Vec::new();
    for (a, chain) in by_author {
        let keep = chain.len().saturating_sub(per_agent);
        let (start, late) = chain.split_at(keep);
        held.insert(a, start.to_vec());
        arrivals.extend(late.iter().cloned());
    }
    arrivals.sort_by_key(|e| (e.timestamp_ms(), e.author(), e.seq(), e.id()));
    let mut initial: Vec<MergeEntry> = held.values().flatten().cloned().collect();
    initial.sort_unstable_by_key(|e| (e.author(), e.seq(), e.id()));
    HeldBack { held, arrivals, initial }
}

pub fn run(args: LiveArgs) -> Result<()> {
    anyhow::ensure!(args.agents >= 2 && args.runs >= 1, "need at least 2 agents and 1 run");
    let entries = crate::merge_bench::swarm(args.agents, args.events_per_agent);
    let n = entries.len();
    let HeldBack { mut held, arrivals, initial } = held_back(&entries, args.arrivals_per_agent);

    // Start-up: the live view built once from what is held.
    let before = crate::measure::allocated_bytes();
    let t = Instant::now();
    let mut live = LiveMerge::from_entries(&initial, &[])?;
    let first_hash = live.view_hash();
    let startup = t.elapsed();
    let live_bytes = crate::measure::allocated_bytes().saturating_sub(before);
    let live_entries = initial.len() as u64;
    // Where its memory goes, as the live view counts it.
    let live_memory = live.memory();
    drop(initial);
    std::hint::black_box(first_hash);

    // Arrivals, one at a time: apply, then read the view hash; then ask for
    // the consensus (quorum 2 of all), as an agent following the swarm would.
    let agents = live.agents();
    let t = Instant::now();
    std::hint::black_box(live.consensus(&agents, 2)?);
    let first_consensus = t.elapsed();
    let mut consensus: Vec<Duration> = Vec::new();
    let mut extended: Vec<Duration> = Vec::new();
    let mut rederived: Vec<Duration> = Vec::new();
    let mut all: Vec<Duration> = Vec::new();
    // The perspective of the agent whose frontiers reach furthest.
    let frontiers = live.frontiers();
    let viewer = agents.iter().copied().max_by_key(|a| frontiers.iter().filter(|((x, _), _)| x == a).map(|(_, f)| f.seq).sum::<u64>()).unwrap_or(agents[0]);
    let range =
        |held: &HashMap<AgentId, Vec<MergeEntry>>, a: &AgentId, seqs: std::ops::RangeInclusive<u64>| -> Result<Vec<MergeEntry>, std::convert::Infallible> {
            Ok(held.get(a).map(|c| c.iter().filter(|e| seqs.contains(&e.seq())).cloned().collect()).unwrap_or_default())
        };
    let before = crate::measure::allocated_bytes();
    let t = Instant::now();
    let mut perspective = LivePerspective::build(&live, viewer, |a, seqs| range(&held, a, seqs)).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    std::hint::black_box(perspective.hash());
    let perspective_built = t.elapsed();
    let perspective_bytes = crate::measure::allocated_bytes().saturating_sub(before);
    let perspective_nodes = perspective.view().graph.len();
    // Where its memory goes, as the graph counts it (texts are held here;
    // a node's perspectives read theirs from the store).
    let perspective_memory = perspective.view().graph.memory();
    let (mut perspective_in_place, mut perspective_replayed) = (Vec::new(), Vec::new());
    for e in arrivals.iter().cloned() {
        let author = e.author();
        let t = Instant::now();
        held.entry(author).or_default().push(e.clone());
        let input = |a: &AgentId| -> Result<ChainInput, std::convert::Infallible> { Ok((held.get(a).cloned().unwrap_or_default(), Vec::new())) };
        let done = live.apply(LiveUpdate { entries: vec![e], ..LiveUpdate::default() }, input).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        std::hint::black_box(live.view_hash());
        let took = t.elapsed();
        all.push(took);
        if done.rederived > 0 {
            rederived.push(took)
        } else {
            extended.push(took)
        }
        let t = Instant::now();
        std::hint::black_box(live.consensus(&agents, 2)?);
        consensus.push(t.elapsed());
        let t = Instant::now();
        let done = perspective.refresh(&live, &[], |a, seqs| range(&held, a, seqs)).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        std::hint::black_box(perspective.hash());
        if done.rebuilt { perspective_replayed.push(t.elapsed()) } else { perspective_in_place.push(t.elapsed()) }
    }
    perspective_in_place.sort();
    perspective_replayed.sort();
    for v in [&mut all, &mut extended, &mut rederived] {
        v.sort();
    }
    consensus.sort();

    // The same state recomputed in full, as every answer did before.
    let t = Instant::now();
    let all_entries: Vec<MergeEntry> = {
        let mut v: Vec<MergeEntry> = held.values().flatten().cloned().collect();
        v.sort_unstable_by_key(|e| (e.author(), e.seq(), e.id()));
        v
    };
    let gather = t.elapsed();
    let mut recompute = Vec::new();
    let mut reference = [0u8; 32];
    for _ in 0..args.runs {
        let t = Instant::now();
        let m = Merge::compute(&all_entries, &[])?;
        reference = m.view_hash();
        std::hint::black_box(m.consensus(&m.agents(), 2)?);
        recompute.push(t.elapsed());
    }
    recompute.sort();
    anyhow::ensure!(live.view_hash() == reference, "the live view hash differs from the recompute's");
    let t = Instant::now();
    let perspective_reference = Merge::compute(&all_entries, &[])?.perspective(&viewer).hash();
    let perspective_recompute = t.elapsed();
    anyhow::ensure!(perspective.hash() == perspective_reference, "the live perspective's hash differs from the recompute's");
    anyhow::ensure!(all_entries.len() == n, "every entry was delivered");
    // The disagreement map off the live state, the entries it reads looked
    // up in memory (a node reads them from its store), against the recompute's.
    let by_id: std::collections::HashMap<agora_core::EntryId, &MergeEntry> = all_entries.iter().map(|e| (e.id(), e)).collect();
    let t = Instant::now();
    let (mut entries_read, mut chains_read, mut scanning) = (0usize, 0usize, Duration::ZERO);
    let live_map = live
        .disagreements(
            None,
            |id, _, _| -> Result<agora_core::Payload, Box<agora_merge::InputError>> {
                entries_read += 1;
                Ok(by_id.get(id).map_or(agora_core::Payload::Missing, |e| match e.content() {
                    agora_core::Content::Held(p) => agora_core::Payload::Held(p.to_vec()),
                    agora_core::Content::Redacted(r) => agora_core::Payload::Redacted(r.map(<[u8]>::to_vec)),
                    agora_core::Content::Missing => agora_core::Payload::Missing,
                }))
            },
            |a| {
                chains_read += 1;
                Ok((held.get(a).cloned().unwrap_or_default(), Vec::new()))
            },
            |ids| {
                let scan = Instant::now();
                let wanted: std::collections::HashSet<&agora_core::EntryId> = ids.iter().collect();
                let found: Vec<agora_core::EntryId> = all_entries
                    .iter()
                    .filter(|e| {
                        e.payload()
                            .filter(|p| agora_graph::Event::is_event_payload(p))
                            .and_then(|p| agora_graph::Event::decode(p).ok())
                            .is_some_and(|ev| ev.ref_list().iter().any(|r| wanted.contains(r)))
                    })
                    .map(MergeEntry::id)
                    .collect();
                scanning += scan.elapsed();
                Ok(found)
            },
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Less the brute-force scan for referrers, which a node answers from its index.
    let map_live = t.elapsed() - scanning;
    let t = Instant::now();
    let m = Merge::compute(&all_entries, &[])?;
    let map_recompute = m.disagreements(None);
    let map_recomputed = t.elapsed();
    anyhow::ensure!(live_map == map_recompute, "the live disagreement map differs from the recompute's");
    let ancestors: usize = live_map.disputed.iter().map(|d| d.ancestors.len()).sum();
    let acceptors: usize = live_map.disputed.iter().map(|d| d.accepted_by.len()).sum();

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let q = |v: &[Duration], p: f64| if v.is_empty() { 0.0 } else { ms(percentile(v, p)) };
    let recompute_median = ms(percentile(&recompute, 0.5));
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "agents": args.agents, "entries": n, "arrivals": all.len(),
                "startup_ms": ms(startup),
                "apply_ms": { "p50": q(&all, 0.5), "p99": q(&all, 0.99), "max": q(&all, 1.0) },
                "extended": { "count": extended.len(), "p50": q(&extended, 0.5), "p99": q(&extended, 0.99), "max": q(&extended, 1.0) },
                "rederived": { "count": rederived.len(), "p50": q(&rederived, 0.5), "p99": q(&rederived, 0.99), "max": q(&rederived, 1.0) },
                "consensus_quorum_2_ms": { "first": ms(first_consensus), "p50": q(&consensus, 0.5), "p99": q(&consensus, 0.99), "max": q(&consensus, 1.0) },
                "recompute_ms": { "median": recompute_median, "min": ms(recompute[0]) },
                "apply_p99_over_recompute": q(&all, 0.99) / recompute_median,
                "gather_ms": ms(gather),
                "perspective": {
                    "nodes": perspective_nodes, "built_ms": ms(perspective_built), "recompute_ms": ms(perspective_recompute),
                    "in_place": { "count": perspective_in_place.len(), "p50": q(&perspective_in_place, 0.5), "p99": q(&perspective_in_place, 0.99), "max": q(&perspective_in_place, 1.0) },
                    "replayed": { "count": perspective_replayed.len(), "p50": q(&perspective_replayed, 0.5), "max": q(&perspective_replayed, 1.0) },
                },
                "view_hash": hex::encode(reference),
                "memory": { "live_view_bytes": live_bytes, "live_view_bytes_per_entry": live_bytes / live_entries.max(1), "perspective_bytes": perspective_bytes, "perspective_bytes_per_node": perspective_bytes / (perspective_nodes as u64).max(1), "live_view_parts": live_memory, "perspective_graph_parts": perspective_memory },
            })
        );
    } else {
        println!("swarm: {} agents, {n} entries; {} delivered one at a time after the start", args.agents, all.len());
        println!(
            "disagreement map ({} disputed events with {ancestors} ancestors and {acceptors} acceptors listed, {} forks): off the live state {:.0} ms ({entries_read} payloads and {chains_read} forked chains read, here from memory; the referrers' scan, which a node answers from its index, not counted); recomputed (merge state + map) {:.0} ms (equal)",
            live_map.disputed.len(),
            live_map.forks.len(),
            ms(map_live),
            ms(map_recomputed)
        );
        println!("start-up: live view built from {} entries in {:.0} ms", n - all.len(), ms(startup));
        println!(
            "memory (bytes allocated across the step): the live view {} MiB ({} B per entry); the perspective below {} MiB ({} B per node)",
            live_bytes >> 20,
            live_bytes / live_entries.max(1),
            perspective_bytes >> 20,
            perspective_bytes / (perspective_nodes as u64).max(1)
        );
        println!(
            "  the live view by part, bytes per entry: {}",
            live_memory.parts().iter().map(|(name, b)| format!("{name} {:.1}", *b as f64 / live_entries.max(1) as f64)).collect::<Vec<_>>().join(", ")
        );
        let per_node = |b: usize| b as f64 / perspective_nodes.max(1) as f64;
        println!(
            "  the perspective's graph by part, bytes per node: {}",
            perspective_memory.parts().iter().map(|(name, b)| format!("{name} {:.1}", per_node(*b))).collect::<Vec<_>>().join(", ")
        );
        println!("one arrival applied + view hash read: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms", q(&all, 0.5), q(&all, 0.99), q(&all, 1.0));
        println!(
            "  extended in place: {} arrivals, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            extended.len(),
            q(&extended, 0.5),
            q(&extended, 0.99),
            q(&extended, 1.0)
        );
        println!(
            "  chain derived again (fork, resolution): {} arrivals, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            rederived.len(),
            q(&rederived, 0.5),
            q(&rederived, 0.99),
            q(&rederived, 1.0)
        );
        println!(
            "consensus (quorum 2 of {}) on the live view: first {:.1} ms; after each arrival p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            agents.len(),
            ms(first_consensus),
            q(&consensus, 0.5),
            q(&consensus, 0.99),
            q(&consensus, 1.0)
        );
        println!(
            "full recompute (merge state + view hash + consensus), {} runs: median {:.0} ms, min {:.0} ms; one arrival's p99 is {:.5} of it",
            args.runs,
            recompute_median,
            ms(recompute[0]),
            q(&all, 0.99) / recompute_median
        );
        println!("view hash {} (live and recomputed agree)", hex::encode(reference));
        println!(
            "perspective of the agent that accepts the most ({perspective_nodes} nodes): built at start in {:.0} ms; recomputed (merge state + replay + hash) in {:.0} ms",
            ms(perspective_built),
            ms(perspective_recompute)
        );
        println!(
            "  refreshed + hashed after each arrival, in place: {} arrivals, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            perspective_in_place.len(),
            q(&perspective_in_place, 0.5),
            q(&perspective_in_place, 0.99),
            q(&perspective_in_place, 1.0)
        );
        println!(
            "  replayed (an event older than its last one came in): {} arrivals, p50 {:.0} ms, max {:.0} ms",
            perspective_replayed.len(),
            q(&perspective_replayed, 0.5),
            q(&perspective_replayed, 1.0)
        );
        println!("  (live and recomputed perspective hashes agree)");
    }
    Ok(())
}
