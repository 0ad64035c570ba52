//! The public API as its callers use it (the CLI in `node/`, `agora-view`,
//! `agora-search`, the merge layer): nodes borrowed from the graph and passed
//! around as `NodeRef` (a node with its id), fields and statuses read from
//! the node alone, the events a node names (why, touched by, edges) read
//! from the graph with the node, as entry ids. Mostly a compile-time check:
//! a change to the graph's layout must keep this file building unchanged.

use agora_core::{AgentId, EntryId};
use agora_graph::{Event, Graph, LogEvent, LogPosition, NodeRef, Status};

fn log() -> (Vec<LogEvent>, [EntryId; 3]) {
    let ids = [EntryId([1; 32]), EntryId([2; 32]), EntryId([3; 32])];
    let events = [
        Event::Proposition { text: "p".into() },
        Event::Contradiction { target: ids[0], text: "c".into() },
        Event::Refinement { target: ids[0], resolves: vec![ids[1]], text: "r".into() },
    ];
    let log = events
        .iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (ev, id))| {
            let pos = LogPosition { timestamp_ms: 1_000 + i as u64, author: AgentId([9; 32]), seq: i as u64 + 1 };
            LogEvent::from_payload(id, pos, Some(&ev.encode()))
        })
        .collect();
    (log, ids)
}

/// Like the CLI's status output: a node and its graph.
fn describe(g: &Graph, n: NodeRef<'_>) -> String {
    let why: Vec<String> = g.why(n).iter().map(|id| g.node(id).map_or(id.to_string(), |w| w.kind().to_string())).collect();
    format!(
        "{} {} {} by {} seq {} at {}: {} [{}] settled={} why={why:?} orphan={} unconfirmed={} expired={} memory_kind={:?} frame={:?} task={:?} invalid={:?} latest={:?}",
        n.id.short(),
        n.kind(),
        g.text(n).unwrap(),
        g.position(n).author.short(),
        n.seq(),
        n.timestamp_ms,
        n.status().name(),
        n.is_event(),
        n.settled(),
        n.orphan(),
        n.unconfirmed(),
        n.expired(0),
        n.memory_kind(),
        n.frame_state(),
        n.task_state(),
        n.invalid(),
        g.latest_in_chain(&n.id),
    )
}

/// Like the CLI's listings: any iterator of borrowed nodes.
fn listing<'a>(g: &Graph, nodes: impl Iterator<Item = NodeRef<'a>>) -> Vec<(EntryId, &'static str, String)> {
    let nodes: Vec<NodeRef<'_>> = nodes.collect();
    nodes.iter().map(|n| (n.id, n.kind(), g.text(n).unwrap().into_owned())).collect()
}

/// Like the merge layer's published view: a node's edges, from its graph.
fn edges(g: &Graph, n: NodeRef<'_>) -> Vec<(String, EntryId)> {
    g.edges(n).map(|(r, t)| (r.to_string(), t)).collect()
}

#[test]
fn nodes_are_read_as_callers_read_them() {
    let (log, [p, c, r]) = log();
    let g = Graph::replay(log);
    let node = g.node(&p).expect("p");
    assert!(describe(&g, node).contains("superseded"));
    assert_eq!(g.touched_by(node), vec![p, c, r]);
    assert_eq!(g.node(&c).map(|n| n.status()), Some(Status::Resolved));
    assert_eq!(edges(&g, g.node(&r).expect("r")), vec![("refines".to_string(), p), ("resolves".to_string(), c)]);
    assert_eq!(listing(&g, g.nodes().filter(|n| n.is_event())).len(), 3);
    assert!(listing(&g, g.open_questions().into_iter()).is_empty());
    assert_eq!(listing(&g, [p, r].iter().filter_map(|id| g.node(id))).len(), 2);
    let _kind: Option<&'static str> = g.node(&p).map(|n| n.kind());
    let _text: Option<String> = g.node(&p).map(|n| g.text(n).unwrap().into_owned());
}

/// A node asked about through a graph it is not in is refused, not read
/// against another graph's positions.
#[test]
#[should_panic(expected = "is not one of this graph's")]
fn a_node_is_read_only_through_its_own_graph() {
    let (log, [p, ..]) = log();
    let g = Graph::replay(log.clone());
    let other = Graph::replay(log);
    let _ = other.why(g.node(&p).expect("p"));
}
