//! Keys (`protocol-spec/keys.md`): what key events cost a verifier, and how
//! fast a node says which key signed an entry.
//!
//! 1. Verifying a chain (every signature in batches, every link with its key
//!    rules: what an import or an audit does) with a rotation every
//!    `--rotate-every` entries, against the same chain in version 1 (one
//!    key, no key fields) and in version 2 without rotations, in one run,
//!    1,024 entries of each in turn, so that the machine's drift hits all
//!    three alike.
//! 2. A store holding `--agents` agents' chains, each of which rotated once:
//!    "which key signed this entry" for entries picked at random, one
//!    `Store::signing_key_of` each (one point read: the `ids` row names the
//!    signer), as written and once flushed, against one point read of the
//!    store in the same run; `--explain` says where the time goes.
//! 3. The roster of that workspace (the founder admitting every agent)
//!    derived, against the same workspace where no agent changed key; and
//!    what `status` of an entry a revocation leaves out adds to find why.

use crate::measure::percentile;
use agora_core::entry::next_header;
use agora_core::verify::{verify_link, verify_signatures};
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentId, AgentKey, EntryId, KeyEvent, SignedEntry, key_commitment};
use agora_roster::RosterEvent;
use agora_store::{Store, StoreOptions};
use anyhow::Result;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct KeysArgs {
    /// Entries in each verified chain.
    #[arg(long, default_value_t = 100_000)]
    entries: usize,
    /// A rotation every this many entries of the chain with key events.
    #[arg(long, default_value_t = 1000)]
    rotate_every: usize,
    /// Agents in the store of the key lookups.
    #[arg(long, default_value_t = 10_000)]
    agents: usize,
    /// Entries of each agent (its rotation among them).
    #[arg(long, default_value_t = 10)]
    entries_per_agent: usize,
    /// Key lookups timed.
    #[arg(long, default_value_t = 100_000)]
    lookups: usize,
    /// Rounds of the three verifications.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Also say where the lookups' time goes: RocksDB's counts of each
    /// lookup (blocks read from files, cache hits, memtables searched),
    /// lookups grouped by blocks read. Counting costs a little, so the
    /// figures of a run with it are not the benchmark's.
    #[arg(long)]
    explain: bool,
}

/// A chain of `n` entries: version 1 (`keyed` false), or version 2
/// committing at seq 1 and, when `rotate_every` is set, rotating every that
/// many entries to the key it committed to.
fn chain(n: usize, keyed: bool, rotate_every: Option<usize>) -> Vec<SignedEntry> {
    let seed = |i: u64| {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&i.to_le_bytes());
        s[31] = 7;
        s
    };
    let inception = AgentKey::from_seed(seed(0));
    let agent = inception.agent_id();
    let mut key = inception;
    let mut generation = 0u64;
    let mut out: Vec<SignedEntry> = Vec::with_capacity(n);
    let payload = [0x5a; 256];
    for i in 0..n {
        let mut h = next_header(agent, out.last(), 1_700_000_000_000 + i as u64, &payload).expect("header");
        if keyed && i == 0 {
            h = h.committing(key_commitment(&AgentKey::from_seed(seed(1)).public_key()));
        }
        if let Some(every) = rotate_every
            && i > 0
            && i % every == 0
        {
            generation += 1;
            key = AgentKey::from_seed(seed(generation)).for_agent(agent);
            h = h.key_event_by(KeyEvent::Rotate, key.public_key(), key_commitment(&AgentKey::from_seed(seed(generation + 1)).public_key()));
        }
        out.push(SignedEntry::sign(h, &key));
    }
    out
}

/// Entries verified at a time, each chain in turn: the machine's drift (other
/// work on its cores) hits the three chains alike.
const WINDOW: usize = 1_024;

/// Verify `chains` as an import does (signatures in batches, then each
/// link, the link into the window included), a window of each in turn, the
/// first chain of each window taking turns; returns each chain's total time.
fn verify_interleaved(chains: &[&[SignedEntry]]) -> Vec<Duration> {
    let mut spent = vec![Duration::ZERO; chains.len()];
    let len = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    for (w, start) in (0..len).step_by(WINDOW).enumerate() {
        let end = (start + WINDOW).min(len);
        for k in 0..chains.len() {
            let i = (w + k) % chains.len();
            let chain = chains[i];
            let started = Instant::now();
            let refs: Vec<&SignedEntry> = chain[start..end].iter().collect();
            verify_signatures(&refs).expect("valid signatures");
            for j in start.max(1)..end {
                verify_link(&chain[j - 1], &chain[j]).expect("valid link");
            }
            spent[i] += started.elapsed();
        }
    }
    spent
}

pub fn run(args: KeysArgs) -> Result<()> {
    let plain = chain(args.entries, false, None);
    let committed = chain(args.entries, true, None);
    let rotating = chain(args.entries, true, Some(args.rotate_every));
    let mut times: [Vec<Duration>; 3] = Default::default();
    let chains = [&plain[..], &committed[..], &rotating[..]];
    verify_interleaved(&chains);
    for _ in 0..args.rounds {
        for (i, d) in verify_interleaved(&chains).into_iter().enumerate() {
            times[i].push(d);
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let [p, c, r] = times.each_mut().map(median);
    let per_s = |d: Duration| args.entries as f64 / d.as_secs_f64();
    println!(
        "verify {} entries, median of {} rounds: version 1 {:.0}/s; version 2 committed {:.0}/s ({:.3}x the time); rotating every {} {:.0}/s ({:.3}x the time of version 1, {:.3}x of version 2 without rotations)",
        args.entries,
        args.rounds,
        per_s(p),
        per_s(c),
        c.as_secs_f64() / p.as_secs_f64(),
        args.rotate_every,
        per_s(r),
        r.as_secs_f64() / p.as_secs_f64(),
        r.as_secs_f64() / c.as_secs_f64()
    );

    // Which key signed an entry, in a store of many agents' key histories
    // (written in synced batches: setup, not measured).
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path().join("store"), &StoreOptions { create: true, ..Default::default() })?;
    let (agents, ids) = fill(&store, &args, true)?;
    // As written (the `ids` rows still in memory, most entries in files),
    // then flushed, as a node that restarted holds them: on disk.
    for state in ["as written", "flushed"] {
        if state == "flushed" {
            store.flush()?;
        }
        let (lookups, reads, answered) = lookups_timed(&store, &ids, args.lookups)?;
        let us = |v: &[Duration], p: f64| percentile(v, p).as_secs_f64() * 1e6;
        println!(
            "which key signed an entry, {} agents x {} entries (one rotation each), {state}, {} random lookups: median {:.2} us, p99 {:.2} us ({} answered); one point read of the store: median {:.2} us, p99 {:.2} us ({:.2}x at the median, {:.2}x at p99)",
            args.agents,
            args.entries_per_agent,
            args.lookups,
            us(&lookups, 0.5),
            us(&lookups, 0.99),
            answered,
            us(&reads, 0.5),
            us(&reads, 0.99),
            us(&lookups, 0.5) / us(&reads, 0.5),
            us(&lookups, 0.99) / us(&reads, 0.99)
        );
        if args.explain {
            explain(&store, &ids, args.lookups)?;
        }
    }
    roster_costs(&args, &store, &agents)
}

/// `n` lookups of which key signed an entry picked at random, and the
/// limit, one point read of the store (the id's `ids` row) for another,
/// alternated with them; each sorted, with the number answered.
fn lookups_timed(store: &Store, ids: &[EntryId], n: usize) -> Result<(Vec<Duration>, Vec<Duration>, usize)> {
    let mut rng = Xorshift64(0x9e37_79b9_7f4a_7c15);
    let mut lookups = Vec::with_capacity(n);
    let mut reads = Vec::with_capacity(n);
    let mut answered = 0usize;
    for _ in 0..n {
        let id = ids[rng.below(ids.len())];
        let started = Instant::now();
        let signer = store.signing_key_of(&id)?.expect("stored");
        lookups.push(started.elapsed());
        answered += usize::from(signer.as_bytes().iter().any(|b| *b != 0));
        let id = ids[rng.below(ids.len())];
        let started = Instant::now();
        store.locate(&id)?.expect("stored");
        reads.push(started.elapsed());
    }
    lookups.sort();
    reads.sort();
    Ok((lookups, reads, answered))
}

/// The seed of agent `a`'s inception key (`next`: of its next key).
fn agent_seed(a: usize, next: bool) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&(a as u64).to_le_bytes());
    s[30] = 1;
    if next {
        s[29] = 2;
    }
    s
}

/// `args.agents` agents' chains of `args.entries_per_agent` entries each,
/// every first entry committing to a next key; with `rotate`, each agent
/// rotates to it halfway. Returns the agents and every entry's id.
fn fill(store: &Store, args: &KeysArgs, rotate: bool) -> Result<(Vec<AgentId>, Vec<EntryId>)> {
    let mut ids = Vec::with_capacity(args.agents * args.entries_per_agent);
    let mut agents = Vec::with_capacity(args.agents);
    let payload = [0x33u8; 64];
    let before = if rotate { (args.entries_per_agent / 2).max(1) } else { args.entries_per_agent };
    for a in 0..args.agents {
        let next = AgentKey::from_seed(agent_seed(a, true));
        let key = AgentKey::from_seed(agent_seed(a, false)).committing_to(key_commitment(&next.public_key()));
        agents.push(key.agent_id());
        let payloads: Vec<&[u8]> = vec![&payload[..]; before];
        let written = store.append_batch(&key, &payloads, 1_700_000_000_000)?;
        ids.extend(written.iter().map(SignedEntry::id));
        if !rotate {
            continue;
        }
        let next = next.for_agent(key.agent_id());
        let last = written.last().map(SignedEntry::id).expect("entries");
        let rotation = store.append_key_event(&next, &last, KeyEvent::Rotate, [a as u8; 32], &payload, 1_700_000_000_000)?;
        ids.push(rotation.id());
        let rest: Vec<&[u8]> = vec![&payload[..]; args.entries_per_agent.saturating_sub(before + 1)];
        if !rest.is_empty() {
            ids.extend(store.append_batch(&next, &rest, 1_700_000_000_000)?.iter().map(SignedEntry::id));
        }
    }
    Ok((agents, ids))
}

/// The founder of the roster benchmarks' workspace.
fn founder_key() -> AgentKey {
    AgentKey::from_seed([0xf0; 32])
}

/// The founder admits `agents`, a batch of admissions at a time.
fn admit_all(store: &Store, agents: &[AgentId]) -> Result<()> {
    let admits: Vec<Vec<u8>> = agents.iter().map(|a| RosterEvent::Admit { agent: *a, note: String::new() }.encode()).collect();
    for chunk in admits.chunks(10_000) {
        let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
        store.append_batch(&founder_key(), &refs, 1_700_000_000_000)?;
    }
    Ok(())
}

/// What key changes cost the reads that need the roster: deriving it
/// (`agora_view::derive_roster`, as a node does when its founder's chain
/// changes), with every agent rotated against the same workspace where no
/// agent changed key; and `status` of an entry a revocation leaves out
/// (`agora_commands::revoked::why_excluded`, what it adds to the status).
fn roster_costs(args: &KeysArgs, rotated: &Store, agents: &[AgentId]) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let plain = Store::open(dir.path().join("store"), &StoreOptions { create: true, sync: false, ..Default::default() })?;
    let (plain_agents, _) = fill(&plain, args, false)?;
    // One more agent in the rotated store revokes its key after its third
    // entry: its fourth and fifth count nowhere.
    let payload = [0x44u8; 64];
    let victim = args.agents + 1;
    let next = AgentKey::from_seed(agent_seed(victim, true));
    let key = AgentKey::from_seed(agent_seed(victim, false)).committing_to(key_commitment(&next.public_key()));
    let written = rotated.append_batch(&key, &[&payload[..]; 5], 1_700_000_000_000)?;
    rotated.append_key_event(&next.for_agent(key.agent_id()), &written[2].id(), KeyEvent::Rotate, [9; 32], &payload, 1_700_000_000_001)?;
    let excluded = written[3].id();
    admit_all(rotated, &[agents, &[key.agent_id()]].concat())?;
    let plain_victim = AgentKey::from_seed(agent_seed(victim, false));
    plain.append_batch(&plain_victim, &[&payload[..]; 5], 1_700_000_000_000)?;
    admit_all(&plain, &[&plain_agents[..], &[plain_victim.agent_id()]].concat())?;
    // As a node that stored them over time would: on disk, not in the log.
    rotated.flush()?;
    plain.flush()?;
    let founder = founder_key().agent_id();
    let why = agora_commands::revoked::why_excluded(rotated, founder, &excluded)?;
    anyhow::ensure!(why.is_some(), "the revoked entry must be excluded");
    let (mut plain_t, mut rotated_t, mut status_t) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..=args.rounds {
        let started = Instant::now();
        let r = agora_view::derive_roster(&plain, founder)?;
        let p = started.elapsed();
        anyhow::ensure!(r.members.len() == args.agents + 2, "every agent admitted");
        let started = Instant::now();
        agora_view::derive_roster(rotated, founder)?;
        let d = started.elapsed();
        let started = Instant::now();
        agora_commands::revoked::why_excluded(rotated, founder, &excluded)?;
        let s = started.elapsed();
        if round > 0 {
            plain_t.push(p);
            rotated_t.push(d);
            status_t.push(s);
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    let (p, d, s) = (median(&mut plain_t), median(&mut rotated_t), median(&mut status_t));
    println!(
        "roster of {} agents x {} entries, median of {} rounds: no key changes {:.2} ms; every agent rotated {:.2} ms ({:.2}x); status of an entry a revocation leaves out: {:.2} ms ({:.2}x the derivation without key changes)",
        args.agents,
        args.entries_per_agent,
        args.rounds,
        p,
        d,
        d / p,
        s,
        s / p
    );
    Ok(())
}

/// Where the time of a lookup goes: each lookup's RocksDB counts (perf
/// context), lookups grouped by the blocks they read from files, with the
/// share of the slowest 1% in each group; for `Store::signing_key_of` and
/// for `Store::get_signed` (the `ids` row, then the entry: the two reads
/// the answer took when the `ids` row did not name the signer).
fn explain(store: &Store, ids: &[EntryId], n: usize) -> Result<()> {
    use rocksdb::perf::{PerfContext, PerfMetric, PerfStatsLevel, set_perf_stats};
    let metrics = [
        PerfMetric::BlockReadCount,
        PerfMetric::BlockCacheHitCount,
        PerfMetric::GetFromMemtableCount,
        PerfMetric::BloomSstHitCount,
        PerfMetric::BloomSstMissCount,
    ];
    type Row = (Duration, [u64; 5]);
    type Lookup<'a> = (&'a str, &'a dyn Fn(&EntryId) -> Result<()>);
    let lookups: [Lookup; 2] = [
        ("signing_key_of", &|id: &EntryId| -> Result<()> {
            store.signing_key_of(id)?.expect("stored");
            Ok(())
        }),
        ("get_signed", &|id: &EntryId| -> Result<()> {
            store.get_signed(id)?.expect("stored");
            Ok(())
        }),
    ];
    set_perf_stats(PerfStatsLevel::EnableCount);
    let mut ctx = PerfContext::default();
    for (name, lookup) in lookups {
        let mut rng = Xorshift64(0x2545_f491_4f6c_dd1d);
        let mut rows: Vec<Row> = Vec::with_capacity(n);
        for _ in 0..n {
            let id = ids[rng.below(ids.len())];
            ctx.reset();
            let started = Instant::now();
            lookup(&id)?;
            let spent = started.elapsed();
            rows.push((spent, metrics.map(|m| ctx.metric(m))));
        }
        let mut all: Vec<Duration> = rows.iter().map(|r| r.0).collect();
        all.sort();
        let p99 = percentile(&all, 0.99);
        let mut groups: std::collections::BTreeMap<u64, Vec<&Row>> = Default::default();
        for r in &rows {
            groups.entry(r.1[0]).or_default().push(r);
        }
        println!("explain {name}: {n} lookups counted, median {:.2} us, p99 {:.2} us", percentile(&all, 0.5).as_secs_f64() * 1e6, p99.as_secs_f64() * 1e6);
        for (blocks, list) in groups {
            let mut t: Vec<Duration> = list.iter().map(|r| r.0).collect();
            t.sort();
            let slow = list.iter().filter(|r| r.0 >= p99).count();
            let mean = |k: usize| list.iter().map(|r| r.1[k]).sum::<u64>() as f64 / list.len() as f64;
            println!(
                "  {blocks} blocks read from files: {} lookups, median {:.2} us, p99 {:.2} us, {} of the slowest 1%; per lookup: cache hits {:.2}, memtables {:.2}, bloom hits {:.2}, bloom misses {:.2}",
                list.len(),
                percentile(&t, 0.5).as_secs_f64() * 1e6,
                percentile(&t, 0.99).as_secs_f64() * 1e6,
                slow,
                mean(1),
                mean(2),
                mean(3),
                mean(4)
            );
        }
    }
    set_perf_stats(PerfStatsLevel::Disable);
    Ok(())
}
