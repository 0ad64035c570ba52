//! The graph as Graphviz DOT and as Mermaid, with status shown by colour.

use crate::graph::{Graph, Node, NodeRef, Status, TextUnavailable};

fn colour(status: Status) -> (&'static str, &'static str) {
    // (fill, border)
    match status {
        Status::Active => ("#e6efe2", "#4a7a4a"),
        Status::Contested => ("#fbe3c8", "#c46a1b"),
        Status::Superseded => ("#eeeeee", "#999999"),
        Status::Resolved => ("#dde8f7", "#3a64a4"),
        Status::Parked => ("#f3eed8", "#a89a5a"),
        Status::Retracted => ("#f8e3df", "#a44a3a"),
        Status::Duplicate => ("#f0e6f5", "#7a4a94"),
        Status::Invalid => ("#ffcccc", "#cc0000"),
    }
}

fn label(g: &Graph, n: &NodeRef<'_>) -> Result<String, TextUnavailable> {
    let full = g.text(n)?;
    let mut text: String = full.chars().take(48).collect();
    if full.chars().count() > 48 {
        text.push('…');
    }
    Ok(format!("{} {}\\n{}\\n[{}]", n.kind(), n.id.short(), text, n.status().name()))
}

fn shown(n: &Node) -> bool {
    !matches!(n.kind(), "raw" | "redacted")
}

/// Graphviz DOT. Nodes are filled by status; superseded and retracted nodes
/// are dashed. Fails only if a text cannot be read from the graph's store.
pub fn to_dot(g: &Graph) -> Result<String, TextUnavailable> {
    let mut out = String::from("digraph agora {\n  rankdir=BT;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n");
    for n in g.nodes().filter(|n| shown(n)) {
        let (fill, border) = colour(n.status());
        let dashed = if matches!(n.status(), Status::Superseded | Status::Retracted) { ",dashed" } else { "" };
        let text = label(g, &n)?.replace('"', "\\\"");
        out.push_str(&format!("  \"{}\" [label=\"{}\", fillcolor=\"{fill}\", color=\"{border}\", style=\"rounded,filled{dashed}\"];\n", n.id, text));
    }
    for n in g.nodes().filter(|n| shown(n)) {
        for (rel, to) in g.edges(n) {
            if g.node(&to).is_some_and(|t| shown(&t)) {
                out.push_str(&format!("  \"{}\" -> \"{}\" [label=\"{rel}\"];\n", n.id, to));
            }
        }
    }
    out.push_str("}\n");
    Ok(out)
}

/// Mermaid flowchart. Each status is a class with its colour. Fails only
/// if a text cannot be read from the graph's store.
pub fn to_mermaid(g: &Graph) -> Result<String, TextUnavailable> {
    let mut out = String::from("flowchart BT\n");
    let id = |n: &NodeRef<'_>| format!("n{}", n.id.short());
    for n in g.nodes().filter(|n| shown(n)) {
        let text = label(g, &n)?.replace("\\n", "<br/>").replace('"', "'");
        out.push_str(&format!("  {}[\"{}\"]:::{}\n", id(&n), text, n.status().name()));
    }
    for n in g.nodes().filter(|n| shown(n)) {
        for (rel, to) in g.edges(n) {
            if let Some(t) = g.node(&to).filter(|t| shown(t)) {
                out.push_str(&format!("  {} -- {} --> {}\n", id(&n), rel, id(&t)));
            }
        }
    }
    for s in [Status::Active, Status::Contested, Status::Superseded, Status::Resolved, Status::Parked, Status::Retracted, Status::Duplicate, Status::Invalid] {
        let (fill, border) = colour(s);
        out.push_str(&format!("  classDef {} fill:{fill},stroke:{border}\n", s.name()));
    }
    Ok(out)
}
