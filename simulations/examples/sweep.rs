//! Sweep a scenario file and draw its plots, without the node's binary:
//! `cargo run --release -p agora-sim --example sweep -- FILE (--sizes 5,10,20 | --seeds 1..20) OUT_DIR`.
//! Writes OUT_DIR/sweep.json, the sweep's plots, and the plots of the last run.
use agora_sim::{SweepAxis, draw_run, draw_sweep, sweep_with};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, file, flag, values, out] = args.as_slice() else {
        eprintln!("usage: sweep FILE (--sizes 5,10,20 | --seeds 1..20) OUT_DIR");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(file).expect("read the scenario");
    let scenario = agora_sim::Scenario::from_toml(&text).expect("a valid scenario");
    let axis = match flag.as_str() {
        "--sizes" => SweepAxis::parse_sizes(values),
        "--seeds" => SweepAxis::parse_seeds(values),
        other => panic!("{other}: --sizes or --seeds"),
    }
    .expect("an axis");
    let out = Path::new(out);
    let mut last = None;
    let report = sweep_with(
        &scenario,
        &axis,
        scenario.seed,
        |n, seed| format!("agora sim sweep {file} --sizes {n} --seed {seed}"),
        |p, r| {
            eprintln!("{} nodes, seed {}: converged {:?} ms, ok {}", p.nodes, p.seed, p.convergence_ms, p.ok);
            last = Some(r.clone());
        },
    )
    .expect("a sweep");
    std::fs::create_dir_all(out).expect("out dir");
    std::fs::write(out.join("sweep.json"), serde_json::to_vec_pretty(&report).expect("json")).expect("write sweep.json");
    let mut files = draw_sweep(&report, out).expect("sweep plots");
    if let Some(run) = last {
        files.extend(draw_run(&run, out).expect("run plots"));
    }
    for f in files {
        println!("{}", f.display());
    }
}
