//! The replication gate of recoveries (`protocol-spec/keys.md`, "Recovery"):
//! a recover entry the roster does not bind is refused like an entry of an
//! author not admitted (not imported, not forwarded, the relay not
//! penalised), and accepted once the roster binds it.

use agora_core::entry::next_header;
use agora_core::{AgentKey, KeyEvent, SignedEntry};
use agora_sync::{Config, Gossip, GossipVerdict, Head, Output, PeerId, Replicator};
use std::collections::{BTreeMap, BTreeSet};

mod support;

#[test]
fn an_unbound_recover_entry_is_refused_until_the_roster_binds_it() {
    let chain = support::chain(7, 1);
    let (first, _) = &chain[0];
    let author = first.header().author;
    let stranger = AgentKey::from_seed([0x5a; 32]);
    let header = next_header(author, Some(first), 2_000, b"").unwrap().key_event_by(KeyEvent::Recover, stranger.public_key(), [7; 32]);
    let recover = SignedEntry::sign(header, &stranger);
    let mut rep = Replicator::new(Config::default());
    rep.set_admitted(Some(BTreeMap::from([(author, None)])), 0);
    rep.set_local_frontier(vec![Head { author, seq: 1, id: first.id() }], 0);
    let relay = PeerId(1);
    rep.connected(relay, 0);
    while rep.poll().is_some() {}

    let verdict = rep.gossip(relay, Gossip::for_entry(&recover, Some(b"")), 10);
    let imported = std::iter::from_fn(|| rep.poll()).any(|o| matches!(o, Output::Import { .. }));
    assert_eq!(verdict, GossipVerdict::Ignore, "an unbound recovery is not forwarded");
    assert!(!imported, "an unbound recovery is not imported");
    assert_eq!(rep.stats().refused_not_admitted, 1);
    assert_eq!(rep.stats().bans, 0, "the relay is not penalised");

    rep.set_recoveries(BTreeSet::from([(author, first.id(), stranger.public_key())]), 20);
    let verdict = rep.gossip(relay, Gossip::for_entry(&recover, Some(b"")), 30);
    let imported = std::iter::from_fn(|| rep.poll()).any(|o| matches!(o, Output::Import { entries, .. } if entries.iter().any(|e| e.id() == recover.id())));
    assert_eq!(verdict, GossipVerdict::Accept, "bound, it is accepted and forwarded");
    assert!(imported, "bound, it is imported");
}
