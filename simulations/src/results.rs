//! Results pages (`simulations/results/`): each shipped scenario's question,
//! its figures over several seeds, and what a reader may conclude. The
//! figures of a page are a table rendered from a sweep report kept beside it
//! (`simulations/results/data/NAME.json`, written by `agora sim sweep
//! --seeds`), between the markers
//!
//! ```text
//! <!-- results: data/NAME.json -->
//! ...the table...
//! <!-- end results -->
//! ```
//!
//! [`check_page`] renders every such table again from its report and says
//! where a page and its data disagree, so a page cannot state a figure its
//! runs did not give; [`render_page`] writes the tables in.

use crate::report::ForkDetection;
use crate::sweep::{AxisKind, SweepReport};
use std::path::Path;

const OPEN: &str = "<!-- results: ";
const CLOSE: &str = "<!-- end results -->";

/// Why a page could not be checked or rendered.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A marker is not closed, or names no file.
    #[error("{page}: {what}")]
    Marker {
        /// The page.
        page: String,
        /// What is wrong.
        what: String,
    },
    /// The report a marker names cannot be read.
    #[error("{page}: {data}: {reason}")]
    Data {
        /// The page.
        page: String,
        /// The report's path, as the marker names it.
        data: String,
        /// Why.
        reason: String,
    },
}

/// Median, lowest and highest of `values` (none: `None`).
fn spread(mut values: Vec<f64>) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
    Some((median, values[0], values[n - 1]))
}

fn row(name: &str, unit: &str, values: Vec<f64>, runs: usize, digits: usize) -> String {
    let counted = values.len();
    match spread(values) {
        None => format!("| {name} | – | – | – | 0 of {runs} |\n"),
        Some((m, lo, hi)) => format!("| {name} ({unit}) | {m:.digits$} | {lo:.digits$} | {hi:.digits$} | {counted} of {runs} |\n"),
    }
}

/// The table of a sweep: over seeds, [`seeds_table`]; over sizes (each with
/// one or more seeds), [`sizes_table`].
pub fn table(report: &SweepReport) -> String {
    match report.axis {
        AxisKind::Seed => seeds_table(report),
        AxisKind::Nodes => sizes_table(report),
    }
}

/// `median (lowest–highest)` of `values`, or `–`.
fn cell(values: Vec<f64>, digits: usize) -> String {
    match spread(values) {
        None => "–".into(),
        Some((m, lo, hi)) if lo == hi => format!("{m:.digits$}"),
        Some((m, lo, hi)) => format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})"),
    }
}

/// The table of a sweep over sizes: a row per size, each figure its median
/// over the size's seeds with the lowest and highest in brackets.
pub fn sizes_table(report: &SweepReport) -> String {
    let mut sizes: Vec<usize> = report.points.iter().map(|p| p.nodes).collect();
    sizes.dedup();
    let held = report.points.iter().filter(|p| p.ok).count();
    let mut seeds: Vec<u64> = report.points.iter().map(|p| p.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    let seeds: Vec<String> = seeds.iter().map(u64::to_string).collect();
    let mut t = format!(
        "Scenario `{}`, {} runs (sizes × seeds {}); every invariant held in {held} of {}. Each cell: the median over the seeds (lowest–highest).\n\n| honest nodes | agents | convergence (virtual s) | a move reaches every node, median (ms) | 99th percentile (ms) | sent per honest node (KiB) |\n|---:|---:|---:|---:|---:|---:|\n",
        report.scenario,
        report.points.len(),
        seeds.join(", "),
        report.points.len()
    );
    for n in sizes {
        let runs: Vec<_> = report.points.iter().filter(|p| p.nodes == n).collect();
        let agents = runs.first().map_or(0, |p| p.agents);
        t += &format!(
            "| {n} | {agents} | {} | {} | {} | {} |\n",
            cell(runs.iter().filter_map(|p| p.convergence_ms.map(|ms| ms as f64 / 1_000.0)).collect(), 2),
            cell(runs.iter().filter_map(|p| p.spread.as_ref().map(|s| s.p50_ms as f64)).collect(), 0),
            cell(runs.iter().filter_map(|p| p.spread.as_ref().map(|s| s.p99_ms as f64)).collect(), 0),
            cell(runs.iter().map(|p| p.traffic.bytes_sent_per_honest_node as f64 / 1024.0).collect(), 1),
        );
    }
    t
}

/// The table of a sweep over seeds: per figure, its median, lowest and
/// highest over the runs that have it, and how many runs do.
pub fn seeds_table(report: &SweepReport) -> String {
    let runs = report.points.len();
    let seeds: Vec<String> = report.points.iter().map(|p| p.seed.to_string()).collect();
    let held = report.points.iter().filter(|p| p.ok).count();
    let mut t = format!(
        "Scenario `{}`, {} runs (seeds {}); every invariant held in {held} of {runs}.\n\n| figure | median | lowest | highest | runs |\n|---|---:|---:|---:|---:|\n",
        report.scenario,
        runs,
        seeds.join(", ")
    );
    let p = &report.points;
    let secs = |ms: u64| ms as f64 / 1_000.0;
    t += &row("convergence after activity ends", "virtual s", p.iter().filter_map(|p| p.convergence_ms.map(secs)).collect(), runs, 2);
    t += &row("a move reaches every honest node, median", "virtual ms", p.iter().filter_map(|p| p.spread.as_ref().map(|s| s.p50_ms as f64)).collect(), runs, 0);
    t += &row(
        "a move reaches every honest node, 99th percentile",
        "virtual ms",
        p.iter().filter_map(|p| p.spread.as_ref().map(|s| s.p99_ms as f64)).collect(),
        runs,
        0,
    );
    t += &row(
        "slowest fork first proven at an honest node",
        "virtual ms",
        p.iter().filter_map(|p| p.forks.iter().filter_map(ForkDetection::to_first_honest_ms).max().map(|ms| ms as f64)).collect(),
        runs,
        0,
    );
    t += &row(
        "slowest fork proven at every honest node",
        "virtual ms",
        p.iter()
            .filter(|p| !p.forks.is_empty())
            .filter_map(|p| {
                p.forks.iter().map(ForkDetection::to_all_honest_ms).collect::<Option<Vec<u64>>>().and_then(|v| v.into_iter().max()).map(|ms| ms as f64)
            })
            .collect(),
        runs,
        0,
    );
    let kib = |b: u64| b as f64 / 1024.0;
    t += &row("bytes sent per honest node", "KiB", p.iter().map(|p| kib(p.traffic.bytes_sent_per_honest_node)).collect(), runs, 1);
    t += &row("bytes received per honest node", "KiB", p.iter().map(|p| kib(p.traffic.bytes_received_per_honest_node)).collect(), runs, 1);
    let measured: Vec<u64> = p.iter().filter_map(|p| p.memory_peak_bytes).collect();
    if let Some(&largest) = measured.iter().max() {
        // In MiB from one MiB up, else in KiB (a small swarm's nodes hold tens of KiB).
        let (unit, per) = if largest >= 1 << 20 { ("MiB", 1024.0 * 1024.0) } else { ("KiB", 1024.0) };
        t += &row("peak memory of the largest honest node, measured", unit, measured.iter().map(|&b| b as f64 / per).collect(), runs, 1);
    }
    t += &row("entries written by honest agents", "count", p.iter().map(|p| p.entries_written.honest as f64).collect(), runs, 0);
    t += &row("entries written by adversaries", "count", p.iter().map(|p| p.entries_written.adversary as f64).collect(), runs, 0);
    t
}

/// The marked tables of `page`: (start of the table, its end, the report's path).
fn tables(page: &str, name: &str) -> Result<Vec<(usize, usize, String)>, ResultsError> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = page[from..].find(OPEN).map(|i| from + i) {
        let marker_end = page[at..]
            .find("-->")
            .map(|i| at + i)
            .ok_or_else(|| ResultsError::Marker { page: name.into(), what: "a results marker is not closed with -->".into() })?;
        let data = page[at + OPEN.len()..marker_end].trim().to_string();
        if data.is_empty() {
            return Err(ResultsError::Marker { page: name.into(), what: "a results marker names no report".into() });
        }
        let start = marker_end + "-->".len();
        let start = if page[start..].starts_with('\n') { start + 1 } else { start };
        let end = page[start..]
            .find(CLOSE)
            .map(|i| start + i)
            .ok_or_else(|| ResultsError::Marker { page: name.into(), what: format!("the table of {data} has no {CLOSE}") })?;
        found.push((start, end, data));
        from = end + CLOSE.len();
    }
    Ok(found)
}

fn load(dir: &Path, page: &str, data: &str) -> Result<String, ResultsError> {
    let path = dir.join(data);
    let failed = |reason: String| ResultsError::Data { page: page.into(), data: data.into(), reason };
    let bytes = std::fs::read(&path).map_err(|e| failed(e.to_string()))?;
    let report: SweepReport = serde_json::from_slice(&bytes).map_err(|e| failed(format!("not a sweep report: {e}")))?;
    Ok(table(&report))
}

/// `page` (read from `dir`, where the paths its markers name are relative
/// to) with every marked table rendered again from its report.
pub fn render_page(page: &str, name: &str, dir: &Path) -> Result<String, ResultsError> {
    let mut out = String::with_capacity(page.len());
    let mut last = 0;
    for (start, end, data) in tables(page, name)? {
        out.push_str(&page[last..start]);
        out.push_str(&load(dir, name, &data)?);
        last = end;
    }
    out.push_str(&page[last..]);
    Ok(out)
}

/// Each marked table of `page` that differs from its report rendered again,
/// by the report's path (empty: the page says what its runs gave).
pub fn check_page(page: &str, name: &str, dir: &Path) -> Result<Vec<String>, ResultsError> {
    let mut stale = Vec::new();
    for (start, end, data) in tables(page, name)? {
        if page[start..end] != load(dir, name, &data)? {
            stale.push(data);
        }
    }
    Ok(stale)
}
