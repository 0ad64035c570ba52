//! Run a scenario file and print its report: `cargo run --release -p agora-sim --example run_scenario -- FILE [SEED]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("read the scenario");
    let scenario = agora_sim::Scenario::from_toml(&text).expect("a valid scenario");
    let seed = args.get(2).map_or(scenario.seed, |s| s.parse().expect("a seed"));
    let t = std::time::Instant::now();
    let report = agora_sim::run(&scenario, seed, format!("agora sim run {} --seed {seed}", args[1]));
    eprintln!("wall {:?}", t.elapsed());
    println!("{}", serde_json::to_string_pretty(&report).expect("json"));
}
