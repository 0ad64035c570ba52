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
//!    `Store::signing_key_of` each (two point reads, the header decoded).

use crate::measure::percentile;
use agora_core::entry::next_header;
use agora_core::verify::{verify_link, verify_signatures};
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentKey, KeyEvent, SignedEntry, key_commitment};
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
    let mut ids = Vec::with_capacity(args.agents * args.entries_per_agent);
    let payload = [0x33u8; 64];
    let before = args.entries_per_agent / 2;
    for a in 0..args.agents {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&(a as u64).to_le_bytes());
        s[30] = 1;
        let mut n = s;
        n[29] = 2;
        let next = AgentKey::from_seed(n);
        let key = AgentKey::from_seed(s).committing_to(key_commitment(&next.public_key()));
        let payloads: Vec<&[u8]> = vec![&payload[..]; before.max(1)];
        let written = store.append_batch(&key, &payloads, 1_700_000_000_000)?;
        ids.extend(written.iter().map(SignedEntry::id));
        let next = next.for_agent(key.agent_id());
        let last = written.last().map(SignedEntry::id).expect("entries");
        let rotation = store.append_key_event(&next, &last, KeyEvent::Rotate, [a as u8; 32], &payload, 1_700_000_000_000)?;
        ids.push(rotation.id());
        let rest: Vec<&[u8]> = vec![&payload[..]; args.entries_per_agent.saturating_sub(before.max(1) + 1)];
        if !rest.is_empty() {
            ids.extend(store.append_batch(&next, &rest, 1_700_000_000_000)?.iter().map(SignedEntry::id));
        }
    }
    // The limit, in the same run: one point read of the store (the id's
    // index row), for lookups alternated with the answers timed.
    let mut rng = Xorshift64(0x9e37_79b9_7f4a_7c15);
    let mut lookups = Vec::with_capacity(args.lookups);
    let mut reads = Vec::with_capacity(args.lookups);
    let mut rotated = 0usize;
    for _ in 0..args.lookups {
        let id = ids[rng.below(ids.len())];
        let started = Instant::now();
        let signer = store.signing_key_of(&id)?.expect("stored");
        lookups.push(started.elapsed());
        rotated += usize::from(signer.as_bytes().iter().any(|b| *b != 0));
        let id = ids[rng.below(ids.len())];
        let started = Instant::now();
        store.locate(&id)?.expect("stored");
        reads.push(started.elapsed());
    }
    lookups.sort();
    reads.sort();
    let us = |v: &[Duration], p: f64| percentile(v, p).as_secs_f64() * 1e6;
    println!(
        "which key signed an entry, {} agents x {} entries (one rotation each), {} random lookups: median {:.2} us, p99 {:.2} us ({} answered); one point read of the store: median {:.2} us, p99 {:.2} us ({:.2}x)",
        args.agents,
        args.entries_per_agent,
        args.lookups,
        us(&lookups, 0.5),
        us(&lookups, 0.99),
        rotated,
        us(&reads, 0.5),
        us(&reads, 0.99),
        us(&lookups, 0.5) / us(&reads, 0.5)
    );
    Ok(())
}
