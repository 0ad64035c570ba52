//! The results pages say what their runs gave: every shipped scenario has a
//! page, and every table on a page is its sweep report rendered again.

use agora_sim::results::{check_page, render_page, seeds_table};
use agora_sim::{Scenario, SweepAxis};
use std::path::{Path, PathBuf};

fn results_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results")
}

#[test]
fn every_shipped_scenario_has_a_results_page_whose_tables_match_their_reports() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&scenarios).expect("scenarios") {
        let path = entry.expect("entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("name").to_string();
        // search.toml is the adversary search's base swarm: its results are
        // the search's table in RELIABILITY.md.
        if path.extension().is_some_and(|x| x == "toml") && stem != "search" && !results_dir().join(format!("{stem}.md")).exists() {
            missing.push(stem);
        }
    }
    assert!(missing.is_empty(), "scenarios without a results page: {missing:?}");
    let mut stale = Vec::new();
    let mut tables = 0;
    for entry in std::fs::read_dir(results_dir()).expect("results") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path).expect("page");
        tables += text.matches("<!-- results: ").count();
        stale.extend(check_page(&text, &name, &results_dir()).expect("a page with well-formed markers"));
    }
    assert!(tables > 0, "no results table found");
    assert!(stale.is_empty(), "tables that differ from their reports (run `agora sim results`): {stale:?}");
}

/// A page whose table was edited by hand is caught, and rendering writes
/// the table its report gives.
#[test]
fn a_table_that_differs_from_its_report_is_found_and_rendered_again() {
    let scenario = Scenario::from_toml(
        r#"
name = "tiny"
nodes = 3
agents_per_node = 1
duration_ms = 2_000
settle_ms = 60_000
[generated]
events_per_agent = 2
"#,
    )
    .expect("scenario");
    let report = agora_sim::sweep(&scenario, &SweepAxis::parse_seeds("1..3").expect("seeds"), 0, |_, s| format!("seed {s}")).expect("sweep");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("data")).expect("data");
    std::fs::write(dir.path().join("data/tiny.json"), serde_json::to_vec_pretty(&report).expect("json")).expect("write");
    let table = seeds_table(&report);
    assert!(table.contains("3 runs (seeds 1, 2, 3)") && table.contains("every invariant held in 3 of 3"), "{table}");
    assert!(
        table.contains("| entries written by honest agents (count) |")
            && table.contains("| slowest fork first proven at an honest node | – | – | – | 0 of 3 |"),
        "{table}"
    );
    let page = format!("# Tiny\n\n<!-- results: data/tiny.json -->\n{table}<!-- end results -->\n\nConclusion.\n");
    assert!(check_page(&page, "tiny.md", dir.path()).expect("check").is_empty());
    let edited = page.replace("held in 3 of 3", "held in 2 of 3");
    assert_eq!(check_page(&edited, "tiny.md", dir.path()).expect("check"), ["data/tiny.json"]);
    assert_eq!(render_page(&edited, "tiny.md", dir.path()).expect("render"), page);
    let unclosed = "<!-- results: data/tiny.json -->\n| x |\n";
    assert!(check_page(unclosed, "bad.md", dir.path()).expect_err("unclosed").to_string().contains("has no <!-- end results -->"));
    let absent = "<!-- results: data/none.json -->\n<!-- end results -->\n";
    assert!(check_page(absent, "bad.md", dir.path()).expect_err("absent").to_string().contains("data/none.json"));
}
