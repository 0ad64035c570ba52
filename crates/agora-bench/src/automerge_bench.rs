//! Automerge publishing benchmark: the merged view published as an Automerge
//! document from a live view, as a node does (`LiveMerge`, the merged graph
//! kept current beside it, `agora_automerge::Publisher`), then entries
//! arriving one at a time, each followed by a republish; beside it, the
//! republish by recompute (`Merge::compute_with_view` over every entry, then
//! `publish`, which compares the whole view with the document) in the same
//! run.
//!
//! The swarm and the arrivals are the live bench's (the merge bench's
//! synthetic swarm; the last entries of every chain, in log order, with a
//! fork, its resolution and an equivocation at the end of two chains). After
//! each republish it measures the bytes of the document's new changes: what
//! a client's pull transfers for that arrival. After the last one the
//! document must equal the recomputed view's (the bench fails otherwise).
//!
//! The merged graph takes an arrival in place only when it sorts after
//! every event the graph applied (see `agora_merge::LiveMergedGraph`); the
//! bench reports how many arrivals were late and what their replay cost.

use crate::measure::percentile;
use agora_automerge::{LiveViewParts, Publisher, apply, publish, read_tree, view_tree};
use agora_core::AgentId;
use agora_merge::{ChainInput, LiveMerge, LiveMergedGraph, LiveUpdate, Merge, MergeEntry};
use anyhow::Result;
use automerge::AutoCommit;
use std::collections::HashMap;
use std::convert::Infallible;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct AutomergeArgs {
    /// Agents in the swarm.
    #[arg(long, default_value_t = 100)]
    agents: usize,
    /// Events on each agent's chain.
    #[arg(long, default_value_t = 1_000)]
    events_per_agent: usize,
    /// Entries held back from each chain and delivered one at a time.
    #[arg(long, default_value_t = 5)]
    arrivals_per_agent: usize,
    /// Timed republishes by recompute, for comparison.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

pub fn run(args: AutomergeArgs) -> Result<()> {
    anyhow::ensure!(args.agents >= 2 && args.runs >= 1, "need at least 2 agents and 1 run");
    let entries = crate::merge_bench::swarm(args.agents, args.events_per_agent);
    let n = entries.len();
    let crate::live_bench::HeldBack { mut held, arrivals, initial } = crate::live_bench::held_back(&entries, args.arrivals_per_agent);
    drop(entries);
    let range = |held: &HashMap<AgentId, Vec<MergeEntry>>, a: &AgentId, seqs: std::ops::RangeInclusive<u64>| -> Result<Vec<MergeEntry>, Infallible> {
        Ok(held.get(a).map(|c| c.iter().filter(|e| seqs.contains(&e.seq())).cloned().collect()).unwrap_or_default())
    };

    // Start-up: the live view and the merged graph built once, then the
    // document published whole.
    let mut live = LiveMerge::from_entries(&initial, &[])?;
    drop(initial);
    let t = Instant::now();
    let mut graph = LiveMergedGraph::build(&live, |a, seqs| range(&held, a, seqs)).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let graph_built = t.elapsed();
    let nodes = graph.graph().len();
    let mut publisher = Publisher::new();
    let mut doc = AutoCommit::new();
    let publish_live =
        |live: &mut LiveMerge, graph: &mut LiveMergedGraph, publisher: &mut Publisher, doc: &mut AutoCommit| -> Result<(usize, usize, Duration)> {
            let t = Instant::now();
            let graph_digest = graph.digest();
            let changes = publisher.changes(LiveViewParts {
                view_hash: live.view_hash(),
                graph: graph.graph(),
                graph_digest,
                chains: live.chain_summaries(),
                disputes: live.open_disputes(),
                payloads_changed: Some(&[]),
            })?;
            let found = t.elapsed();
            apply(doc, &changes).map_err(|e| anyhow::anyhow!("{e:?}"))?;
            Ok((changes.nodes.len(), changes.chains.len() + changes.disputes.len(), found))
        };
    let t = Instant::now();
    publish_live(&mut live, &mut graph, &mut publisher, &mut doc)?;
    let first_publish = t.elapsed();
    let doc_bytes = doc.save().len();

    // Arrivals: applied, the graph refreshed, the document republished; the
    // bytes of the new changes are what a client's pull transfers.
    let (mut in_place, mut replayed) = (Vec::new(), Vec::new());
    let (mut change_bytes, mut nodes_written, mut finding) = (Vec::new(), Vec::new(), Vec::new());
    for e in arrivals.iter().cloned() {
        let author = e.author();
        held.entry(author).or_default().push(e.clone());
        let heads = doc.get_heads();
        let t = Instant::now();
        let input = |a: &AgentId| -> Result<ChainInput, Infallible> { Ok((held.get(a).cloned().unwrap_or_default(), Vec::new())) };
        live.apply(LiveUpdate { entries: vec![e], ..LiveUpdate::default() }, input).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let refresh = graph.refresh(&live, &[], |a, seqs| range(&held, a, seqs)).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let (written, _, found) = publish_live(&mut live, &mut graph, &mut publisher, &mut doc)?;
        let took = t.elapsed();
        if refresh.rebuilt {
            replayed.push(took)
        } else {
            in_place.push(took);
            finding.push(found);
        }
        nodes_written.push(written);
        change_bytes.push(doc.get_changes(&heads).iter_mut().map(|c| c.raw_bytes().len()).sum::<usize>());
    }
    in_place.sort();
    replayed.sort();
    finding.sort();
    let mut sorted_bytes = change_bytes.clone();
    sorted_bytes.sort();
    let mut sorted_written = nodes_written.clone();
    sorted_written.sort();

    // The same republish by recompute: every entry, the merged view computed
    // and the document compared with it whole.
    let all_entries: Vec<MergeEntry> = {
        let mut v: Vec<MergeEntry> = held.values().flatten().cloned().collect();
        v.sort_unstable_by_key(|e| (e.author(), e.seq(), e.id()));
        v
    };
    anyhow::ensure!(all_entries.len() == n, "every entry was delivered");
    let mut recompute = Vec::new();
    let mut plain = doc.fork();
    for _ in 0..args.runs {
        let t = Instant::now();
        let (_, view) = Merge::compute_with_view(&all_entries, &[])?;
        let stats = publish(&mut plain, &view).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        recompute.push(t.elapsed());
        anyhow::ensure!(!stats.changed(), "the live document differs from the recomputed view: {stats:?}");
    }
    recompute.sort();
    let (_, view) = Merge::compute_with_view(&all_entries, &[])?;
    anyhow::ensure!(read_tree(&doc).map_err(|e| anyhow::anyhow!("{e:?}"))? == view_tree(&view), "the live document differs from the recomputed view's");

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let q = |v: &[Duration], p: f64| if v.is_empty() { 0.0 } else { ms(percentile(v, p)) };
    let qn = |v: &[usize], p: f64| if v.is_empty() { 0 } else { v[((v.len() as f64 - 1.0) * p).round() as usize] };
    println!("swarm: {} agents, {n} entries; merged graph of {nodes} nodes; {} entries delivered one at a time after the start", args.agents, arrivals.len());
    println!(
        "start-up: merged graph built in {:.0} ms; document published whole in {:.0} ms ({:.1} MB saved)",
        ms(graph_built),
        ms(first_publish),
        doc_bytes as f64 / 1e6
    );
    println!(
        "one arrival applied + merged graph refreshed + republished, in place: {} arrivals, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        in_place.len(),
        q(&in_place, 0.5),
        q(&in_place, 0.99),
        q(&in_place, 1.0)
    );
    println!("  of which finding what to write (digest, chains, disputes compared) in place: p50 {:.2} ms, p99 {:.2} ms", q(&finding, 0.5), q(&finding, 0.99));
    println!(
        "  the graph replayed first (an event that sorts before the last one it applied, a fork, a resolution): {} arrivals, p50 {:.0} ms, max {:.0} ms",
        replayed.len(),
        q(&replayed, 0.5),
        q(&replayed, 1.0)
    );
    println!(
        "  nodes written per republish: p50 {}, p99 {}, max {}; bytes of the document's new changes (what a pull transfers): p50 {}, p99 {}, max {}",
        qn(&sorted_written, 0.5),
        qn(&sorted_written, 0.99),
        qn(&sorted_written, 1.0),
        qn(&sorted_bytes, 0.5),
        qn(&sorted_bytes, 0.99),
        qn(&sorted_bytes, 1.0)
    );
    println!(
        "republish by recompute (every entry, merged view, whole comparison with the document), {} runs: median {:.0} ms, min {:.0} ms; the in-place p99 is {:.4} of it",
        args.runs,
        ms(percentile(&recompute, 0.5)),
        ms(recompute[0]),
        q(&in_place, 0.99) / ms(percentile(&recompute, 0.5))
    );
    println!("(the live document equals the recomputed view's)");
    Ok(())
}
