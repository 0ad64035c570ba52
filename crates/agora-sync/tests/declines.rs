//! A peer that declines every request (`Busy`, or `Wait` with any wait)
//! cannot hold a payload round open (`protocol-spec/replication.md`,
//! "Payload refetch"): a claimant that declines is asked again once it may
//! be, and its second decline in the round counts as its answer. So a
//! payload nobody sends is reported unavailable after `payload_tries_max`
//! rounds, as when every claimant answers without it, and a decliner is
//! asked at most twice a round, whatever it says and however soon.
//!
//! The harness drives one `Replicator` on virtual time: the node holds an
//! author's chain without one entry's payload; one peer strips it, the
//! others decline.

use agora_core::EntryRef;
use agora_sync::{Config, Head, Message, Output, PeerId, Replicator, WireEntry};
use std::collections::BTreeMap;

mod support;

const RTT_MS: u64 = 20;

/// How a declining peer answers.
#[derive(Clone, Copy, Debug)]
enum Decline {
    Busy,
    Wait(u32),
}

/// Requests each peer was sent, and whether the payload was reported
/// unavailable, by `limit_ms` of virtual time.
fn run(decliners: &[Decline], limit_ms: u64) -> (BTreeMap<u64, u64>, bool) {
    let chain = support::chain(5, 3);
    let author = chain[0].0.header().author;
    let (tip, _) = chain.last().expect("a chain");
    let mut rep = Replicator::new(Config::default());
    rep.set_local_heads(author, vec![Head { author, seq: 3, id: tip.id() }], 0);
    // Peer 1 strips; peers 2.. decline. Every one claims the whole chain.
    let peers: Vec<u64> = (1..=decliners.len() as u64 + 1).collect();
    for p in &peers {
        rep.connected(PeerId(*p), 0);
        rep.handle(PeerId(*p), Message::Frontier(vec![Head { author, seq: 3, id: tip.id() }]), 0);
    }
    let lacking = &chain[1].0;
    rep.payloads_missing(&[EntryRef { author, seq: 2, id: lacking.id() }], 0);
    let mut sent: BTreeMap<u64, u64> = BTreeMap::new();
    let mut unavailable = false;
    // Answers due: (time, order) -> (peer, request id).
    let mut due: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    let (mut now, mut order, mut last_tick) = (0u64, 0u64, 0u64);
    loop {
        while let Some(out) = rep.poll() {
            match out {
                Output::Send(peer, Message::Request { req, .. }) => {
                    *sent.entry(peer.0).or_default() += 1;
                    order += 1;
                    due.insert((now + RTT_MS, order), (peer.0, req));
                }
                Output::PayloadUnavailable(e) => {
                    assert_eq!(e.seq, 2);
                    unavailable = true;
                }
                Output::Ban { peer, .. } => panic!("{peer:?} banned"),
                _ => {}
            }
        }
        if unavailable {
            return (sent, true);
        }
        let next_answer = due.keys().next().map(|k| k.0);
        let next_tick = rep.poll_timeout().map(|t| t.max(last_tick + 1));
        let Some(t) = support::next_time(next_answer, next_tick) else { return (sent, unavailable) };
        if t > limit_ms {
            return (sent, unavailable);
        }
        now = now.max(t);
        if next_answer == Some(t) {
            let (_, (peer, req)) = due.pop_first().expect("an answer");
            match peer {
                1 => {
                    let entries = vec![WireEntry { entry: lacking.encode(), payload: None }];
                    rep.handle(PeerId(1), Message::Response { req, entries, more: false }, now);
                }
                p => match decliners[p as usize - 2] {
                    Decline::Busy => rep.busy(PeerId(p), req, now),
                    Decline::Wait(ms) => rep.wait(PeerId(p), req, ms, now),
                },
            }
        } else {
            last_tick = now;
            rep.handle_timeout(now);
        }
    }
}

#[test]
fn peers_that_decline_every_request_cannot_hold_a_payload_round_open() {
    let tries = u64::from(Config::default().payload_tries_max);
    let variants: [&[Decline]; 6] = [
        &[Decline::Busy],
        &[Decline::Wait(0)],
        &[Decline::Wait(1)],
        &[Decline::Wait(u32::MAX)],
        &[Decline::Busy, Decline::Wait(0), Decline::Wait(250)],
        &[Decline::Wait(0), Decline::Wait(0), Decline::Wait(0), Decline::Wait(0)],
    ];
    for decliners in variants {
        // Ten minutes of virtual time: eight rounds take seconds.
        let (sent, unavailable) = run(decliners, 600_000);
        assert!(unavailable, "{decliners:?}: the payload was never reported unavailable; requests sent {sent:?}");
        assert_eq!(sent.get(&1), Some(&tries), "{decliners:?}: the stripper is asked once a round");
        for p in 2..=decliners.len() as u64 + 1 {
            let n = sent.get(&p).copied().unwrap_or(0);
            assert!(n <= 2 * tries, "{decliners:?}: peer {p} asked {n} times in {tries} rounds");
        }
    }
}
