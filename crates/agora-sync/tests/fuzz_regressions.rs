//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found wrong, kept as
//! tests. Each names its target.

use agora_core::{AgentId, AgentKey, EntryId};
use agora_sync::{Config, Head, Message, Output, PeerId, Replicator};
use std::collections::BTreeMap;

fn drain(rep: &mut Replicator) -> Vec<Output> {
    std::iter::from_fn(|| rep.poll()).collect()
}

/// Target `replicator`: a peer's frontier claimed a head at seq 0 of an
/// author we hold nothing of. The claim is not one of our tips and not above
/// our highest seq (0), so it was probed as a branch: a range request from
/// seq 0, which every honest peer bans its sender for
/// (replication.md, "Bans"). A claim at seq 0 names no entry: nothing is asked.
#[test]
fn a_claimed_head_at_seq_0_is_never_asked_for() {
    let alice = AgentKey::from_seed([0x11; 32]).agent_id();
    let dave = AgentKey::from_seed([0x44; 32]).agent_id();
    // No roster; and a roster that removed dave with nothing kept (up to seq 0).
    let rosters: [Option<BTreeMap<AgentId, Option<u64>>>; 2] = [None, Some(BTreeMap::from([(alice, None), (dave, Some(0))]))];
    for admitted in rosters {
        let mut rep = Replicator::new(Config::default());
        rep.set_admitted(admitted, 1_000);
        let peer = PeerId(1);
        rep.connected(peer, 1_000);
        drain(&mut rep);
        let heads = vec![Head { author: alice, seq: 0, id: EntryId([7; 32]) }, Head { author: dave, seq: 0, id: EntryId([8; 32]) }];
        rep.handle(peer, Message::Frontier(heads), 1_000);
        rep.handle_timeout(100_000);
        for out in drain(&mut rep) {
            if let Output::Send(_, Message::Request { start, limit, .. }) = out {
                assert!(start.seq >= 1 && limit >= 1, "asked for seq {} (limit {limit})", start.seq);
            }
        }
        assert_eq!(rep.in_flight(), 0);
    }
}
