//! Late arrivals into a live reasoning graph: the seeded debate of the
//! graph bench, its last events delivered in the order a node receives
//! them when each author's entries reach it some time after they were
//! written (per author, a delay of up to `skew` events), so most arrivals
//! sort before the last one applied.
//!
//! For each skew, a live graph (its journal of [`LIVE_GRAPH_JOURNAL`]
//! applies filled by the replay that built it, as a node builds it) takes
//! every arrival with [`Graph::apply_late`]: in place, or by rewinding the
//! applies after it. Each arrival is timed; at the end the graph must equal
//! a replay of the whole log (the bench fails otherwise). Beside it, in the
//! same run: how many of the same arrivals a graph without a journal could
//! not take in place (each cost a replay of the whole graph before), and
//! what that replay costs.

use crate::measure::percentile;
use agora_graph::{Graph, LIVE_GRAPH_JOURNAL, Late, LogEvent};
use anyhow::{Result, ensure};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct LateArgs {
    /// Events in the debate.
    #[arg(long, default_value_t = 1_000_000)]
    events: usize,
    /// Authors writing it, one event each in turn.
    #[arg(long, default_value_t = 100)]
    authors: usize,
    /// The last events, delivered late (the rest is replayed first).
    #[arg(long, default_value_t = 20_000)]
    arrivals: usize,
    /// Largest delay of an author's entries, in events of the debate; one run each.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    skew: Vec<usize>,
}

pub fn run(args: LateArgs) -> Result<()> {
    ensure!(args.arrivals < args.events && args.authors >= 1, "need fewer arrivals than events and at least one author");
    let log = agora_graph::workload::debate(args.events, args.authors);
    let events = || log.iter().map(|(id, pos, p)| LogEvent::from_payload(*id, *pos, Some(p)));
    let t = Instant::now();
    let mut whole = Graph::replay(events().collect());
    let replay = t.elapsed();
    let want = (whole.view_hash(), whole.digest());
    drop(whole);
    println!(
        "late arrivals: the last {} of a debate of {} events by {} authors, into a live graph (journal of {} applies) built from the rest; a replay of the whole graph takes {:.2} s",
        args.arrivals,
        args.events,
        args.authors,
        LIVE_GRAPH_JOURNAL,
        replay.as_secs_f64()
    );
    let start = args.events - args.arrivals;
    for &skew in &args.skew {
        // Each author's entries arrive `delay` events after they were
        // written: delivered in order of (index + delay).
        let mut rng = agora_core::xorshift::Xorshift64(0x5eed ^ skew as u64);
        let delays: Vec<usize> = (0..args.authors).map(|_| rng.below(skew.max(1))).collect();
        let mut order: Vec<usize> = (start..args.events).collect();
        order.sort_by_key(|&i| (i + delays[i % args.authors], i));
        let arrivals: Vec<LogEvent> = order.iter().map(|&i| LogEvent::from_payload(log[i].0, log[i].1, Some(&log[i].2))).collect();

        // Without a journal: how many the graph cannot take in place.
        let mut plain = Graph::replay(events().take(start).collect());
        let (mut late, mut not_in_place) = (0usize, 0usize);
        for e in arrivals.iter().cloned() {
            late += usize::from(plain.last_position().is_some_and(|l| e.pos < l));
            if plain.apply_late(e) != Late::Applied {
                not_in_place += 1;
            }
        }
        drop(plain);

        // With the journal, as a node keeps it.
        let mut live = Graph::replay_journaled(events().take(start).collect(), LIVE_GRAPH_JOURNAL);
        let mut took: Vec<Duration> = Vec::with_capacity(arrivals.len());
        let mut refused = 0usize;
        for e in arrivals {
            let t = Instant::now();
            let done = live.apply_late(e.clone());
            took.push(t.elapsed());
            match done {
                Late::Applied => {}
                Late::Refused => {
                    // Older than the whole journal: what the node does, a
                    // replay (not timed here).
                    refused += 1;
                    let mut all: Vec<LogEvent> = Vec::new();
                    all.extend(events().take(start));
                    all.extend(order.iter().take(took.len()).map(|&i| LogEvent::from_payload(log[i].0, log[i].1, Some(&log[i].2))));
                    live = Graph::replay_journaled(all, LIVE_GRAPH_JOURNAL);
                }
                Late::Spoiled => anyhow::bail!("a graph that keeps a journal spoiled"),
            }
        }
        ensure!((live.view_hash(), live.digest()) == want, "skew {skew}: the live graph differs from a replay of the whole log");
        // What the journal holds: the allocator's count before and after
        // dropping it.
        let before = crate::measure::allocated_bytes();
        live.keep_journal(0);
        let journal_bytes = before.saturating_sub(crate::measure::allocated_bytes());
        let total: Duration = took.iter().sum();
        took.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "  skew up to {skew} events: {late} of {} arrivals sort before the last one applied; without a journal {not_in_place} could not be taken in place (each a replay: {:.0} s in all); with it, {refused} refused, per arrival p50 {:.1} us, p99 {:.1} us, max {:.0} us, {:.2} s in all; equal to a replay; the journal held {:.1} MB ({} B a record)",
            took.len(),
            not_in_place as f64 * replay.as_secs_f64(),
            us(percentile(&took, 0.5)),
            us(percentile(&took, 0.99)),
            us(*took.last().unwrap_or(&Duration::ZERO)),
            total.as_secs_f64(),
            journal_bytes as f64 / 1e6,
            journal_bytes / LIVE_GRAPH_JOURNAL as u64
        );
    }
    Ok(())
}
