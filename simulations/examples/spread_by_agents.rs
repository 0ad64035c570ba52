//! Draw the spread of a move against the number of agents, on a logarithmic
//! axis, from the points of one or more sweep reports (`sweep.json`, as
//! `agora sim sweep` writes them):
//! `cargo run --release -p agora-sim --example spread_by_agents -- "TITLE" OUT_DIR SWEEP.json...`.
//! Writes OUT_DIR/spread-by-agents.{svg,png}.
use agora_sim::{SpreadPoint, draw_spread_by_agents};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, title, out, reports @ ..] = args.as_slice() else {
        eprintln!("usage: spread_by_agents TITLE OUT_DIR SWEEP.json...");
        std::process::exit(2);
    };
    let mut points = Vec::new();
    for file in reports {
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(file).expect("read a sweep report")).expect("a sweep report");
        for p in report["points"].as_array().expect("points") {
            let n = |k: &str| p["spread"][k].as_u64().unwrap_or_else(|| panic!("{file}: a point without spread.{k}"));
            points.push(SpreadPoint {
                agents: p["agents"].as_u64().expect("agents"),
                nodes: p["nodes"].as_u64().expect("nodes"),
                p50_ms: n("p50_ms"),
                p99_ms: n("p99_ms"),
                max_ms: n("max_ms"),
            });
        }
    }
    for f in draw_spread_by_agents(title, &points, Path::new(out)).expect("the figure") {
        println!("{}", f.display());
    }
}
