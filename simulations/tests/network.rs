//! The link model: bandwidth is bytes over time with no floor per packet (a
//! bulk transfer takes half the time at twice the rate, and a very fast link
//! is no limit), and a connection delivers in order (a packet never
//! overtakes one sent before it on the same directed link).

mod common;

use agora_core::AgentKey;
use agora_sim::{Latency, LinkModel};
use agora_sync::{Config, Message, WireRequest};
use common::*;

/// An empty frontier from node 0, as request bytes.
fn frontier(net: &Net) -> Vec<u8> {
    WireRequest::from_message(net.nodes[0].workspace, Message::Frontier(Vec::new())).expect("a frontier is a request").encode()
}

/// Virtual ms node 1 takes to fetch `n` entries from node 0 over `model`.
fn bulk_transfer_ms(model: LinkModel, n: usize) -> u64 {
    let mut net = Net::new(2, small());
    net.model = model;
    chain(&mut net.nodes[0].store, &AgentKey::from_seed([1; 32]), n, 1);
    net.sync_local(0);
    let start = net.now;
    net.connect(0, 1);
    net.run();
    assert_eq!(net.nodes[1].store.entries.len(), n, "the transfer completes");
    assert!(net.bans.is_empty());
    net.now - start
}

fn with_rate(rate: Option<u64>) -> LinkModel {
    LinkModel { latency: Latency::Fixed { ms: 20 }, bandwidth_bytes_per_s: rate, loss_ppm: 0 }
}

/// Doubling the rate halves a bulk transfer's time (within 5%: the round
/// trips' latency overlaps the bytes), and 5 GB/s takes the time of no limit within 1%. With a floor
/// of 1 ms per packet both fail: the transfer is as slow at any rate.
#[test]
fn a_bulk_transfer_takes_its_bytes_over_the_rate() {
    let n = 3_000;
    let unlimited = bulk_transfer_ms(with_rate(None), n);
    let slow = bulk_transfer_ms(with_rate(Some(100_000)), n);
    let fast = bulk_transfer_ms(with_rate(Some(200_000)), n);
    assert!(fast > 4 * unlimited, "the links are bandwidth-bound: {fast} ms against {unlimited} ms unlimited");
    let ratio = slow as f64 / fast as f64;
    assert!((1.9..=2.1).contains(&ratio), "twice the rate: {slow} ms against {fast} ms ({unlimited} ms unlimited), ratio {ratio:.3}");
    let very_fast = bulk_transfer_ms(with_rate(Some(5_000_000_000)), n);
    assert!(very_fast.abs_diff(unlimited) * 100 <= unlimited, "5 GB/s takes {very_fast} ms, no limit {unlimited} ms: more than 1% apart");
}

/// Many small packets are not capped at one per ms: 10,000 gossip messages
/// of a few hundred bytes over 100 MB/s take tens of ms, not 10 s.
#[test]
fn small_packets_have_no_floor() {
    let mut net = Net::new(2, Config::default());
    net.model = LinkModel { latency: Latency::Fixed { ms: 0 }, bandwidth_bytes_per_s: Some(100_000_000), loss_ppm: 0 };
    net.connect(0, 1);
    net.run();
    let start = net.now;
    for _ in 0..10_000 {
        net.send_raw_request(0, 1, frontier(&net));
    }
    net.run();
    let took = net.now - start;
    assert!(took < 100, "10,000 small packets at 100 MB/s took {took} ms");
}

/// Packets on one directed link arrive in the order they were sent, even
/// when the latency drawn for a later one is shorter: the queue never lets a
/// packet overtake an earlier one on its link. Packets of different links
/// may pass each other.
#[test]
fn a_link_delivers_in_order_whatever_the_latency_drawn() {
    let mut net = Net::with_seed(3, Config::default(), 7);
    net.model = LinkModel { latency: Latency::Uniform { min_ms: 1, max_ms: 500 }, bandwidth_bytes_per_s: None, loss_ppm: 0 };
    net.connect(0, 1);
    net.connect(0, 2);
    net.connect(1, 2);
    net.run();
    net.trace = Some(Vec::new());
    for _ in 0..200 {
        for to in [1, 2] {
            net.send_raw_request(0, to, frontier(&net));
        }
    }
    net.run_until(net.now + 10_000);
    let trace = net.trace.take().unwrap_or_default();
    for to in [1u64, 2] {
        let sent: Vec<u64> = trace.iter().filter(|(f, t, _, _)| *f == 0 && *t == to).map(|(_, _, sent, _)| *sent).collect();
        assert_eq!(sent.len(), 200, "every packet from 0 to {to} arrived");
        assert!(sent.is_sorted(), "packets from 0 to {to} arrived in the order sent");
    }
    // The two links' packets did interleave out of send order: the latency
    // was drawn per packet, and only a link's own order is kept.
    let from_zero: Vec<u64> = trace.iter().filter(|(f, _, _, _)| *f == 0).map(|(_, _, sent, _)| *sent).collect();
    assert!(!from_zero.is_sorted(), "the test's latencies reorder packets across links");
}
