//! The `graph_replay` target: a reasoning graph fed a log of payloads from
//! peers.

use crate::layout::read_log;
use agora_core::{Content, EntryId, LogPosition};
use agora_graph::{Event, Graph, Late, LogEvent};

/// `agora_graph::Graph` fed a log of payloads from peers ([`read_log`]):
/// `replay_contents` (decoding as it goes), `replay` of the decoded events
/// in any order, and applying them one by one in log order give the same
/// snapshot; and redacting every held payload to its residue changes no
/// node's kind or status and leaves the snapshot byte for byte the same
/// (events.md: "A local redaction therefore changes no status, edge or mark").
pub fn graph_replay(data: &[u8]) {
    let log = read_log(data);
    let residues: Vec<Vec<u8>> = log.iter().map(|(_, _, _, p)| Event::residue(p)).collect();
    let contents: Vec<(EntryId, LogPosition, Content<'_>)> = log
        .iter()
        .zip(&residues)
        .map(|((id, pos, what, p), residue)| {
            let c = match what {
                0 => Content::Held(p),
                1 => Content::Redacted(Some(residue)),
                2 => Content::Redacted(None),
                _ => Content::Missing,
            };
            (*id, *pos, c)
        })
        .collect();
    let g = Graph::replay_contents(&contents);
    let snapshot = g.snapshot();
    let mut events: Vec<LogEvent> = contents.iter().filter_map(|(id, pos, c)| LogEvent::from_content(*id, *pos, *c)).collect();
    events.reverse();
    assert_eq!(Graph::replay(events.clone()).snapshot(), snapshot, "replay and replay_contents differ");
    events.sort_by_key(|e| (e.pos, e.id));
    let mut one_by_one = Graph::new();
    for e in events {
        assert!(one_by_one.apply(e), "an event in log order was refused");
    }
    assert_eq!(one_by_one.snapshot(), snapshot, "incremental application differs from replay");
    // In the order read (out of log order), into a live graph that keeps a
    // short journal: each event rewound, taken in place, or (older than the
    // journal, its place mattering) refused and the graph replayed. The
    // same graph, listed in the same order.
    let arrivals: Vec<LogEvent> = contents.iter().filter_map(|(id, pos, c)| LogEvent::from_content(*id, *pos, *c)).collect();
    let mut live = Graph::new();
    live.keep_journal(8);
    for (i, e) in arrivals.iter().enumerate() {
        match live.apply_late(e.clone()) {
            Late::Applied => {}
            Late::Refused => live = Graph::replay_journaled(arrivals[..=i].to_vec(), 8),
            Late::Spoiled => panic!("a graph that keeps a journal spoiled"),
        }
    }
    assert_eq!(live.snapshot(), snapshot, "late arrivals rewound differ from replay");
    assert!(live.nodes().map(|n| n.id).eq(g.nodes().map(|n| n.id)), "late arrivals rewound are listed out of a replay's order");
    // Every held payload redacted here, keeping its residue.
    let redacted: Vec<(EntryId, LogPosition, Content<'_>)> = contents
        .iter()
        .zip(&residues)
        .map(|((id, pos, c), residue)| match c {
            Content::Held(_) => (*id, *pos, Content::Redacted(Some(residue.as_slice()))),
            other => (*id, *pos, *other),
        })
        .collect();
    let r = Graph::replay_contents(&redacted);
    for n in r.nodes() {
        let original = g.node(&n.id).expect("the same nodes");
        assert_eq!((n.id, n.kind(), n.status()), (original.id, original.kind(), original.status()), "redaction changed a node");
    }
    assert_eq!(r.len(), g.len());
    assert_eq!(r.snapshot(), snapshot, "redaction changed the snapshot");
}
