//! Two documents kept in sync with Automerge's sync protocol converge on the
//! published view, and a small view change travels as a small sync message.

use agora_automerge::{publish, read_tree, view_tree};
use agora_graph::Event;
use agora_merge::{Merge, MergeEvent};
use automerge::sync::{self, SyncDoc};
use automerge::{ActorId, AutoCommit};

mod common;
use common::Log;

/// Exchange sync messages until neither side has anything to send. Returns
/// the bytes sent both ways.
fn sync_until_quiet(a: &mut AutoCommit, b: &mut AutoCommit, sa: &mut sync::State, sb: &mut sync::State) -> usize {
    let mut bytes = 0;
    for _ in 0..20 {
        let mut quiet = true;
        if let Some(m) = a.sync().generate_sync_message(sa) {
            let enc = m.encode();
            bytes += enc.len();
            b.sync().receive_sync_message(sb, sync::Message::decode(&enc).unwrap()).unwrap();
            quiet = false;
        }
        if let Some(m) = b.sync().generate_sync_message(sb) {
            let enc = m.encode();
            bytes += enc.len();
            a.sync().receive_sync_message(sa, sync::Message::decode(&enc).unwrap()).unwrap();
            quiet = false;
        }
        if quiet {
            return bytes;
        }
    }
    panic!("sync did not settle in 20 rounds");
}

#[test]
fn published_view_syncs_and_small_changes_send_small_messages() {
    // The publisher republishes after every entry it learns, as a node does,
    // so its document has a history of small changes.
    let mut publisher = AutoCommit::new().with_actor(ActorId::from(b"agora-node".as_slice()));
    let mut log = Log::new(3);
    let step = |log: &mut Log, i: usize, payload: Vec<u8>, doc: &mut AutoCommit| {
        let id = log.push(i, payload);
        let view = Merge::compute(&log.entries, &[]).unwrap().merged_view();
        assert!(publish(doc, &view).unwrap().changed());
        id
    };
    let p1 = step(&mut log, 0, Event::Proposition { text: "Usage-based pricing aligns incentives".into() }.encode(), &mut publisher);
    let c2 = step(&mut log, 1, Event::Contradiction { target: p1, text: "Procurement needs predictable costs".into() }.encode(), &mut publisher);
    let r3 = step(&mut log, 0, Event::Refinement { target: p1, resolves: vec![c2], text: "Two-track model".into() }.encode(), &mut publisher);
    let alice = log.keys[0].agent_id();
    step(&mut log, 2, MergeEvent::Accept { author: alice, up_to_seq: 2, head: r3 }.encode(), &mut publisher);
    let dispute = step(
        &mut log,
        1,
        MergeEvent::Dispute { target: r3, reason: "double billing".into(), counter_claim: Some("spend caps".into()) }.encode(),
        &mut publisher,
    );
    for i in 0..40 {
        step(&mut log, 2, Event::Proposition { text: format!("carol's note {i}") }.encode(), &mut publisher);
    }
    let view = Merge::compute(&log.entries, &[]).unwrap().merged_view();
    assert_eq!(read_tree(&publisher).unwrap(), view_tree(&view));

    // A client with its own actor syncs from nothing.
    let mut client = AutoCommit::new().with_actor(ActorId::from(b"js-client".as_slice()));
    let (mut sp, mut sc) = (sync::State::new(), sync::State::new());
    let first = sync_until_quiet(&mut publisher, &mut client, &mut sp, &mut sc);
    assert_eq!(read_tree(&client).unwrap(), view_tree(&view), "the client converged");
    assert_eq!(publisher.get_heads(), client.get_heads());

    // Publishing the same view again changes nothing and sends nothing.
    let heads = publisher.get_heads();
    assert!(!publish(&mut publisher, &view).unwrap().changed());
    assert_eq!(publisher.get_heads(), heads);
    assert_eq!(sync_until_quiet(&mut publisher, &mut client, &mut sp, &mut sc), 0);

    // Bob withdraws his dispute: a handful of keys change.
    log.push(1, MergeEvent::Withdraw { dispute }.encode());
    let m = Merge::compute(&log.entries, &[]).unwrap();
    let next = m.merged_view();
    let stats = publish(&mut publisher, &next).unwrap();
    assert!(stats.puts + stats.deletes <= 6, "{stats:?}");
    let small = sync_until_quiet(&mut publisher, &mut client, &mut sp, &mut sc);
    assert_eq!(read_tree(&client).unwrap(), view_tree(&next));
    eprintln!("first sync {first} bytes; sync of the withdrawal {small} bytes ({stats:?})");
    assert!(small > 0 && small < 1_500, "sync of a small change took {small} bytes");
    assert!(small * 10 < first, "small change {small} B vs first sync {first} B");
}

#[test]
fn concurrent_publishers_converge() {
    let mut log = Log::new(2);
    let a = log.push(0, Event::Proposition { text: "a".into() }.encode());
    log.push(1, MergeEvent::Accept { author: log.keys[0].agent_id(), up_to_seq: 1, head: a }.encode());
    let view1 = Merge::compute(&log.entries, &[]).unwrap().merged_view();
    log.push(1, MergeEvent::Dispute { target: a, reason: "no".into(), counter_claim: None }.encode());
    let view2 = Merge::compute(&log.entries, &[]).unwrap().merged_view();
    // Two nodes publish from a shared start: one has seen the dispute, one not yet.
    let mut x = AutoCommit::new().with_actor(ActorId::from(b"node-x".as_slice()));
    publish(&mut x, &view1).unwrap();
    let mut y = x.fork().with_actor(ActorId::from(b"node-y".as_slice()));
    publish(&mut x, &view2).unwrap();
    let (mut sx, mut sy) = (sync::State::new(), sync::State::new());
    sync_until_quiet(&mut x, &mut y, &mut sx, &mut sy);
    // Once y catches up with the log and republishes, both hold view2.
    publish(&mut y, &view2).unwrap();
    sync_until_quiet(&mut x, &mut y, &mut sx, &mut sy);
    assert_eq!(read_tree(&x).unwrap(), view_tree(&view2));
    assert_eq!(read_tree(&y).unwrap(), view_tree(&view2));
}
