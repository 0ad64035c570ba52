//! Gossip replays (`protocol-spec/replication.md`, "Gossip verdicts"): a
//! peer that republishes an honest author's old entries, in full, stripped
//! of their payload, or as announcements (each a new gossip message id), is
//! charged for them itself; the author's budget stays whole, so its live
//! gossip is still accepted, and the replays are not verified again.

use agora_core::SignedEntry;
use agora_sync::{Config, Gossip, GossipVerdict, Head, ImportOutcome, Output, PeerId, Replicator, WireEntry};

mod support;

fn chain(n: usize) -> Vec<(SignedEntry, Vec<u8>)> {
    support::chain(5, n)
}

fn head(e: &SignedEntry) -> Head {
    Head { author: e.header().author, seq: e.header().seq, id: e.id() }
}

/// The three replays of an entry: in full, stripped, announced.
fn variant(e: &SignedEntry, payload: &[u8], i: usize) -> Gossip {
    match i % 3 {
        0 => Gossip::Entry(WireEntry { entry: e.encode(), payload: Some(payload.to_vec()) }),
        1 => Gossip::Entry(WireEntry { entry: e.encode(), payload: None }),
        _ => Gossip::Announce(e.encode()),
    }
}

#[test]
fn a_replayer_of_old_entries_cannot_silence_the_authors_live_gossip() {
    const HELD: usize = 1_000;
    const LIVE: usize = 100;
    let entries = chain(HELD + LIVE);
    let author = entries[0].0.header().author;
    let mut rep = Replicator::new(Config::default());
    rep.set_local_frontier(vec![head(&entries[HELD - 1].0)], 0);
    let (replayer, relay) = (PeerId(1), PeerId(2));
    rep.connected(replayer, 0);
    rep.connected(relay, 0);
    let mut tip = HELD as u64;
    let mut replays = 0usize;
    let mut live_sent = 0usize;
    let mut live_refused: Vec<(u64, u64)> = Vec::new();
    let mut replays_accepted = 0usize;
    // 10 s: the replayer sends 5 old entries (in turn full, stripped,
    // announced) every millisecond, 5,000 a second, five times the author's
    // budget; the author's live entries come through an honest relay, one
    // every 100 ms.
    for now in 0..10_000u64 {
        for _ in 0..5 {
            let (e, p) = &entries[replays % HELD];
            if rep.gossip(replayer, variant(e, p, replays), now) == GossipVerdict::Accept {
                replays_accepted += 1;
            }
            replays += 1;
        }
        if now % 100 == 0 {
            let (e, p) = &entries[HELD + live_sent];
            if rep.gossip(relay, Gossip::for_entry(e, Some(p)), now) != GossipVerdict::Accept {
                live_refused.push((e.header().seq, now));
            }
            live_sent += 1;
        }
        while let Some(out) = rep.poll() {
            if let Output::Import { id, entries: batch, .. } = out {
                for e in &batch {
                    if e.header().seq == tip + 1 {
                        tip += 1;
                    }
                }
                let last = batch.last().expect("an entry");
                rep.set_local_heads(author, vec![Head { author, seq: last.header().seq, id: last.id() }], now);
                rep.import_result(id, ImportOutcome::Stored, now);
            }
        }
    }
    assert_eq!(live_sent, LIVE);
    assert!(live_refused.is_empty(), "{} of {LIVE} live entries refused, the first (seq, ms): {:?}", live_refused.len(), live_refused.first());
    assert_eq!(tip, (HELD + LIVE) as u64, "every live entry stored");
    assert_eq!(replays_accepted, 0, "replays of entries held accepted, and so forwarded");
    let stats = rep.stats();
    assert_eq!(stats.author_rate_limited, 0, "the author was charged for the replays");
    assert_eq!(stats.entries_verified, LIVE as u64, "replays are dropped before their signatures are checked");
    assert!(stats.gossip_not_new >= replays as u64 - 1);
    // The replayer paid: over its own budget, its messages were dropped.
    assert!(stats.rate_limited > 0, "the replays cost the replayer");
    // The honest relay was never charged beyond its budget, nor struck.
    assert_eq!(rep.strikes(relay), Some(0));
}

/// The gossip of an entry the node already holds by range sync (a race
/// between an honest relay and the range), and its variants, are `Ignore`:
/// not forwarded, the relay not penalised (no strike, no ban), the author
/// not charged.
#[test]
fn an_entry_already_held_is_ignored_without_penalising_its_relay() {
    let entries = chain(3);
    let mut rep = Replicator::new(Config { author_gossip_burst: 1, author_gossip_per_s: 1, ..Config::default() });
    rep.set_local_frontier(vec![head(&entries[1].0)], 0);
    rep.connected(PeerId(1), 0);
    for (i, (e, p)) in entries[..2].iter().enumerate() {
        for k in 0..3 {
            assert_eq!(rep.gossip(PeerId(1), variant(e, p, k), 0), GossipVerdict::Ignore, "entry {i}, variant {k}");
        }
    }
    assert_eq!(rep.strikes(PeerId(1)), Some(0));
    assert_eq!(rep.stats().bans, 0);
    // The author's single token is still there for its next entry.
    let (e, p) = &entries[2];
    assert_eq!(rep.gossip(PeerId(1), Gossip::for_entry(e, Some(p)), 0), GossipVerdict::Accept);
    // And a second copy of that new entry (another variant, before the
    // store has it) is no new tip either.
    assert_eq!(rep.gossip(PeerId(1), Gossip::Announce(e.encode()), 0), GossipVerdict::Ignore);
    assert_eq!(rep.stats().author_rate_limited, 0);
}
