//! A commit's tip update costs what the commit changed: 100 commits of 1,000
//! branches each at one seq (a fork flood spread over packs) look at each
//! branch a bounded number of times, not at every branch held before.

use agora_core::{AgentId, EntryId};
use agora_sync::{Config, Head, Output, Replicator};

fn head(seq: u64, n: u32) -> Head {
    let mut id = [0u8; 32];
    id[..4].copy_from_slice(&n.to_be_bytes());
    Head { author: AgentId([7; 32]), seq, id: EntryId(id) }
}

#[test]
fn a_fork_flood_over_a_hundred_commits_costs_each_commit_what_it_adds() {
    let mut rep = Replicator::new(Config::default());
    rep.connected(agora_sync::PeerId(1), 0);
    let root = head(1, u32::MAX);
    rep.local_tips_changed(root.author, &[], &[root], 0);
    let cap = rep.config().heads_per_author_max;
    let mut now = 0;
    for commit in 0..100u32 {
        now += 1_000;
        let added: Vec<Head> = (0..1_000).map(|i| head(2, commit * 1_000 + i)).collect();
        let passed: Vec<Head> = if commit == 0 { vec![root] } else { Vec::new() };
        let before = rep.tips_handled();
        rep.local_tips_changed(root.author, &passed, &added, now);
        let work = rep.tips_handled() - before;
        assert!(work <= 1_001, "commit {commit} looked at {work} tips for 1,000 new ones");
        // What is announced stays capped, whatever the author holds.
        while let Some(out) = rep.poll() {
            if let Output::Send(_, agora_sync::Message::Frontier(heads)) = out {
                assert!(heads.iter().filter(|h| h.author == root.author).count() <= cap);
            }
        }
    }
    let ours: Vec<Head> = rep.local_heads().into_iter().filter(|h| h.author == root.author).collect();
    assert_eq!(ours.len(), cap, "the highest tips only are listed");
    assert_eq!(ours.last(), Some(&head(2, 99_999)));
    // A full list is still taken (a resync), in one pass.
    let all: Vec<Head> = (0..100_000).map(|i| head(2, i)).collect();
    let before = rep.tips_handled();
    rep.set_local_heads(root.author, all, now + 1_000);
    assert!(rep.tips_handled() - before <= 200_000);
}
