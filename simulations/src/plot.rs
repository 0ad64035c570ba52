//! Plots of a sweep and of one run, each written twice: SVG (scales, for
//! documents and browsers) and PNG (for places that show only pictures).
//!
//! Text is drawn with DejaVu Sans, embedded in the crate (`assets/`, with its
//! licence), through plotters' `ab_glyph` renderer: a PNG comes out the same
//! on any machine, with no system font or font library (fontconfig,
//! freetype) to find. Every time is virtual (the simulator's clock), every
//! size in bytes on the wire.
//!
//! From a sweep ([`draw_sweep`]): convergence time and bandwidth per honest
//! node against the swarm's size (or seed), and when forks were detected.
//! From a run ([`draw_run`]): disputes and forks held over time, and when
//! each forked position was first proven and proven at every honest node.

mod png;

use crate::report::{ForkDetection, Report};
use crate::sweep::{AxisKind, SweepPoint, SweepReport};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The family every text style names; the embedded font is registered under it.
const FONT: &str = "sans-serif";

/// DejaVu Sans 2.37 (Debian's fonts-dejavu-core; licence in assets/DejaVuSans-LICENSE).
static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// The embedded font, parsed once: plotters measures text with it (it is
/// registered under [`FONT`]) and the PNG backend draws with it.
fn font() -> Result<&'static ab_glyph::FontRef<'static>, PlotError> {
    static PARSED: OnceLock<Option<ab_glyph::FontRef<'static>>> = OnceLock::new();
    PARSED
        .get_or_init(|| {
            let parsed = ab_glyph::FontRef::try_from_slice(DEJAVU_SANS).ok()?;
            plotters::style::register_font(FONT, FontStyle::Normal, DEJAVU_SANS).ok()?;
            Some(parsed)
        })
        .as_ref()
        .ok_or(PlotError::Font)
}

/// Every figure's size, pixels (the SVG's user units).
const SIZE: (u32, u32) = (1024, 640);

/// The colours, told apart by most readers (matplotlib's first four).
const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const GREEN: RGBColor = RGBColor(44, 160, 44);
const RED: RGBColor = RGBColor(214, 39, 40);
const GREY: RGBColor = RGBColor(110, 110, 110);

/// Why a figure could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The output directory could not be created, or a stale plot removed.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The embedded font did not parse (a damaged build).
    #[error("the embedded font (assets/DejaVuSans.ttf) does not load")]
    Font,
    /// Drawing or writing a figure failed.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The file.
        path: PathBuf,
        /// Plotters' error.
        message: String,
    },
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type DrawResult<T, DB> = Result<T, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// One figure, drawn the same way on either backend.
trait Figure {
    /// The file name, without its extension.
    fn stem(&self) -> &'static str;
    /// Draw on `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB>;
}

/// The plots of a sweep, into `out_dir` (created if need be): convergence
/// and bandwidth against the axis, and fork detection when any run had
/// forks. Returns the files written.
pub fn draw_sweep(report: &SweepReport, out_dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    prepare(out_dir)?;
    let mut files = Vec::new();
    files.extend(write(&SweepConvergence(report), out_dir)?);
    files.extend(write(&SweepSpread(report), out_dir)?);
    files.extend(write(&SweepBandwidth(report), out_dir)?);
    let figure = SweepForkDetection(report);
    if report.points.iter().any(|p| !p.forks.is_empty()) {
        files.extend(write(&figure, out_dir)?);
    } else {
        remove_stale(&figure, out_dir)?;
    }
    Ok(files)
}

/// One size of a spread-against-size curve: the swarm (agents over nodes)
/// and the spread of its moves (see the report's `spread`).
#[derive(Clone, Debug)]
pub struct SpreadPoint {
    /// Agents in the swarm.
    pub agents: u64,
    /// Honest nodes they run on.
    pub nodes: u64,
    /// Median spread of a move, virtual ms.
    pub p50_ms: u64,
    /// 99th percentile.
    pub p99_ms: u64,
    /// The slowest move.
    pub max_ms: u64,
}

/// The spread of a move against the number of agents on a logarithmic
/// axis, from the points of one or more sweeps (a curve that grows
/// logarithmically with the swarm is a straight line here), into
/// `out_dir/spread-by-agents.{svg,png}`.
pub fn draw_spread_by_agents(title: &str, points: &[SpreadPoint], out_dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    prepare(out_dir)?;
    write(&SpreadByAgents { title, points }, out_dir)
}

struct SpreadByAgents<'p> {
    title: &'p str,
    points: &'p [SpreadPoint],
}

impl Figure for SpreadByAgents<'_> {
    fn stem(&self) -> &'static str {
        "spread-by-agents"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        // One curve pair per number of agents per node: the spread depends
        // on the nodes a move must reach, so each density is its own line.
        let mut groups: std::collections::BTreeMap<u64, Vec<SpreadPoint>> = std::collections::BTreeMap::new();
        for p in self.points {
            groups.entry(p.agents / p.nodes.max(1)).or_default().push(p.clone());
        }
        let x = |p: &SpreadPoint| (p.agents.max(1) as f64).log10();
        let lo = self.points.iter().map(x).fold(f64::INFINITY, f64::min).min(4.0);
        let hi = self.points.iter().map(x).fold(0.0, f64::max).max(lo + 1.0);
        let top = self.points.iter().map(|p| seconds(p.max_ms)).fold(0.0, f64::max);
        let power = |v: &f64| {
            let n = 10f64.powf(*v).round() as u64;
            // Thousands separated, as the README writes them.
            let digits = n.to_string();
            let mut out = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let frame_desc = Frame {
            title: self.title.to_string(),
            x: (lo - 0.15)..(hi + 0.15),
            y: y_range(top, 2 * groups.len()),
            x_desc: "agents (logarithmic axis)",
            y_desc: "from a move's append to the last honest node storing it (virtual s)",
            x_ticks: ((hi - lo) * 2.0).round() as usize + 1,
            x_label: &power,
            y_counts: false,
        };
        let mut chart = frame(root, &frame_desc)?;
        let colors = [(BLUE, ORANGE), (RED, RGBColor(150, 90, 200)), (RGBColor(40, 150, 60), RGBColor(120, 120, 120))];
        for (i, (per_node, pts)) in groups.iter_mut().enumerate() {
            pts.sort_by_key(|p| p.agents);
            let (median_color, p99_color) = colors[i % colors.len()];
            let density = if *per_node == 1 { "1 agent per node".to_string() } else { format!("{per_node} agents per node") };
            let p50: Vec<(f64, f64)> = pts.iter().map(|p| (x(p), seconds(p.p50_ms))).collect();
            let p99: Vec<(f64, f64)> = pts.iter().map(|p| (x(p), seconds(p.p99_ms))).collect();
            curve(&mut chart, &p50, median_color, &format!("median, {density}"), true)?;
            curve(&mut chart, &p99, p99_color, &format!("99th percentile, {density}"), true)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// The plots of one run, into `out_dir` (created if need be): disputes and
/// forks over time, and each fork's detection when the run had forks.
/// Returns the files written.
pub fn draw_run(report: &Report, out_dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    prepare(out_dir)?;
    let mut files = write(&RunTimeline(report), out_dir)?;
    let figure = RunForkDetection(report);
    if !report.forks.is_empty() {
        files.extend(write(&figure, out_dir)?);
    } else {
        remove_stale(&figure, out_dir)?;
    }
    Ok(files)
}

fn prepare(out_dir: &Path) -> Result<(), PlotError> {
    font()?;
    std::fs::create_dir_all(out_dir).map_err(|source| PlotError::Io { path: out_dir.to_path_buf(), source })
}

/// Remove `figure`'s files left in `out_dir` by an earlier run or sweep, so
/// every plot there describes this one.
fn remove_stale<F: Figure>(figure: &F, out_dir: &Path) -> Result<(), PlotError> {
    for ext in ["svg", "png"] {
        let path = out_dir.join(format!("{}.{ext}", figure.stem()));
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(PlotError::Io { path, source: e }),
            _ => {}
        }
    }
    Ok(())
}

/// Write `figure` as `stem.svg` and `stem.png`.
fn write<F: Figure>(figure: &F, out_dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let svg = out_dir.join(format!("{}.svg", figure.stem()));
    let png_file = out_dir.join(format!("{}.png", figure.stem()));
    let failed = |path: &Path, message: String| PlotError::Draw { path: path.to_path_buf(), message };
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        figure.draw(&root).and_then(|()| root.present()).map_err(|e| failed(&svg, e.to_string()))?;
    }
    {
        let root = png::PngBackend::new(&png_file, SIZE, font()?).into_drawing_area();
        figure.draw(&root).and_then(|()| root.present()).map_err(|e| failed(&png_file, e.to_string()))?;
    }
    Ok(vec![svg, png_file])
}

/// What a chart's frame shows: title, ranges, axis names and tick labels.
struct Frame<'t> {
    title: String,
    x: Range<f64>,
    y: Range<f64>,
    x_desc: &'t str,
    y_desc: &'t str,
    /// At most this many ticks on x (whole-number axes ask for no more than
    /// their span, so every tick falls on a whole number).
    x_ticks: usize,
    x_label: &'t dyn Fn(&f64) -> String,
    /// The y axis counts things: ticks on whole numbers only.
    y_counts: bool,
}

/// The background, title, axes and grid every figure shares.
fn frame<'a, DB: DrawingBackend>(root: &'a DrawingArea<DB, Shift>, f: &Frame) -> DrawResult<Chart<'a, DB>, DB> {
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(&f.title, (FONT, 24))
        .margin(20)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(f.x.clone(), f.y.clone())?;
    chart
        .configure_mesh()
        .x_desc(f.x_desc)
        .y_desc(f.y_desc)
        .x_labels(f.x_ticks.max(1))
        .y_labels(if f.y_counts { (f.y.end.floor() as usize + 1).min(8) } else { 8 })
        .x_label_formatter(f.x_label)
        .y_label_formatter(if f.y_counts { &whole } else { &decimal })
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(242, 242, 242))
        .draw()?;
    Ok(chart)
}

fn legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, position: SeriesLabelPosition) -> DrawResult<(), DB> {
    chart
        .configure_series_labels()
        .position(position)
        .margin(14)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(170, 170, 170))
        .draw()
}

/// Points with a marker each, joined by a line when `joined` (a curve over
/// sizes or time; seeds are independent and stay unjoined).
fn curve<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, points: &[(f64, f64)], color: RGBColor, label: &str, joined: bool) -> DrawResult<(), DB> {
    if points.is_empty() {
        return Ok(());
    }
    if joined {
        chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?;
    }
    let half = if joined { 12 } else { 0 };
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?.label(label).legend(move |(x, y)| {
        EmptyElement::at((x + 12, y)) + PathElement::new(vec![(-half, 0), (half, 0)], color.stroke_width(2)) + Circle::new((0, 0), 4, color.filled())
    });
    Ok(())
}

/// A dashed vertical line at `x` marking a moment.
fn moment<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, x: f64, y_top: f64, color: RGBColor, label: &str) -> DrawResult<(), DB> {
    chart
        .draw_series(DashedLineSeries::new(vec![(x, 0.0), (x, y_top)], 8, 6, color.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
    Ok(())
}

fn seconds(ms: u64) -> f64 {
    ms as f64 / 1_000.0
}

/// A y range from 0 with room above the data for a legend of
/// `legend_rows` entries (drawn in the upper left, it must not hide the
/// data): about 20 px a row, plus its margins, of the plot's 510 or so.
fn y_range(max: f64, legend_rows: usize) -> Range<f64> {
    let legend_share = (48.0 + 20.0 * legend_rows as f64) / 510.0;
    0.0..if max > 0.0 { max / (1.0 - legend_share.min(0.5)) } else { 1.0 }
}

/// Bytes in the unit that keeps the numbers short.
fn byte_unit(max: f64) -> (f64, &'static str) {
    match max {
        m if m >= 10.0 * 1024.0 * 1024.0 => (1024.0 * 1024.0, "MiB"),
        m if m >= 10.0 * 1024.0 => (1024.0, "KiB"),
        _ => (1.0, "bytes"),
    }
}

fn whole(v: &f64) -> String {
    format!("{v:.0}")
}

fn decimal(v: &f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The x axis of a sweep: honest nodes from 0 (so scaling reads off the
/// slope), or seeds around their span.
struct SweepAxisFrame {
    range: Range<f64>,
    ticks: usize,
    desc: &'static str,
    against: &'static str,
    joined: bool,
}

fn sweep_axis(report: &SweepReport) -> SweepAxisFrame {
    let xs: Vec<f64> = report.points.iter().map(|p| p.x(report.axis) as f64).collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    let (range, desc, against, joined) = match report.axis {
        AxisKind::Nodes => (0.0..(hi * 1.05).max(hi + 1.0), "honest nodes", "swarm size", true),
        AxisKind::Seed => ((lo - 0.5)..(hi + 0.5), "seed", "seed", false),
    };
    let span = (range.end - range.start).floor().max(1.0) as usize;
    SweepAxisFrame { range, ticks: span.min(12), desc, against, joined }
}

/// Points sorted along x, so a joined curve runs left to right.
fn along(report: &SweepReport, y: impl Fn(&SweepPoint) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = report.points.iter().filter_map(|p| y(p).map(|y| (p.x(report.axis) as f64, y))).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

fn run_title(report: &SweepReport) -> String {
    match report.points.as_slice() {
        [] => report.scenario.clone(),
        [p, ..] if report.axis == AxisKind::Nodes => format!("{}, seed {}", report.scenario, p.seed),
        [p, ..] => format!("{}, {} honest nodes", report.scenario, p.nodes),
    }
}

/// (a) Convergence time against the swarm's size (or seed).
struct SweepConvergence<'r>(&'r SweepReport);

impl Figure for SweepConvergence<'_> {
    fn stem(&self) -> &'static str {
        "sweep-convergence"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let axis = sweep_axis(r);
        let converged = along(r, |p| p.convergence_ms.map(seconds));
        let missed = along(r, |p| p.convergence_ms.is_none().then(|| seconds(p.settle_ms)));
        let max = converged.iter().chain(&missed).map(|p| p.1).fold(0.0, f64::max);
        let title = format!("Convergence time against {} ({})", axis.against, run_title(r));
        let frame_desc = Frame {
            title,
            x: axis.range.clone(),
            y: y_range(max, if missed.is_empty() { 1 } else { 2 }),
            x_desc: axis.desc,
            y_desc: "time to converge after activity ends (virtual s)",
            x_ticks: axis.ticks,
            x_label: &whole,
            y_counts: false,
        };
        let mut chart = frame(root, &frame_desc)?;
        curve(&mut chart, &converged, BLUE, "every honest node holds the same entries", axis.joined)?;
        if !missed.is_empty() {
            chart
                .draw_series(missed.iter().map(|&p| Cross::new(p, 7, RED.stroke_width(3))))?
                .label("did not converge (drawn at settle_ms, the bound)")
                .legend(|(x, y)| Cross::new((x + 12, y), 6, RED.stroke_width(3)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (a') How long an honest move takes to reach every honest node (median,
/// 99th percentile, slowest) against the swarm's size (or seed): at a fixed
/// fan-out, gossip should reach N nodes in about log N hops.
struct SweepSpread<'r>(&'r SweepReport);

impl Figure for SweepSpread<'_> {
    fn stem(&self) -> &'static str {
        "sweep-spread"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let axis = sweep_axis(r);
        let p50 = along(r, |p| p.spread.as_ref().map(|s| seconds(s.p50_ms)));
        let p99 = along(r, |p| p.spread.as_ref().map(|s| seconds(s.p99_ms)));
        let max_ = along(r, |p| p.spread.as_ref().map(|s| seconds(s.max_ms)));
        let max = max_.iter().map(|p| p.1).fold(0.0, f64::max);
        let frame_desc = Frame {
            title: format!("Time for a move to reach every honest node against {} ({})", axis.against, run_title(r)),
            x: axis.range.clone(),
            y: y_range(max, 1),
            x_desc: axis.desc,
            y_desc: "from its append to the last honest node storing it (virtual s)",
            x_ticks: axis.ticks,
            x_label: &whole,
            y_counts: false,
        };
        let mut chart = frame(root, &frame_desc)?;
        curve(&mut chart, &p50, BLUE, "median", axis.joined)?;
        curve(&mut chart, &p99, ORANGE, "99th percentile", axis.joined)?;
        curve(&mut chart, &max_, RED, "slowest", axis.joined)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (b) Bandwidth per honest node against the swarm's size (or seed).
struct SweepBandwidth<'r>(&'r SweepReport);

impl Figure for SweepBandwidth<'_> {
    fn stem(&self) -> &'static str {
        "sweep-bandwidth"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let axis = sweep_axis(r);
        let max = r.points.iter().map(|p| p.traffic.bytes_sent_per_honest_node.max(p.traffic.bytes_received_per_honest_node) as f64).fold(0.0, f64::max);
        let (unit, unit_name) = byte_unit(max);
        let sent = along(r, |p| Some(p.traffic.bytes_sent_per_honest_node as f64 / unit));
        let received = along(r, |p| Some(p.traffic.bytes_received_per_honest_node as f64 / unit));
        let y_desc = format!("per honest node over the run ({unit_name})");
        let frame_desc = Frame {
            title: format!("Bandwidth per honest node against {} ({})", axis.against, run_title(r)),
            x: axis.range.clone(),
            y: y_range(max / unit, 2),
            x_desc: axis.desc,
            y_desc: &y_desc,
            x_ticks: axis.ticks,
            x_label: &whole,
            y_counts: false,
        };
        let mut chart = frame(root, &frame_desc)?;
        curve(&mut chart, &sent, BLUE, "bytes sent (mean over honest nodes)", axis.joined)?;
        curve(&mut chart, &received, ORANGE, "bytes received (mean over honest nodes)", axis.joined)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (d, over a sweep) How long after it was signed the slowest fork of each
/// run was first proven at an honest node, and at every honest node.
struct SweepForkDetection<'r>(&'r SweepReport);

impl Figure for SweepForkDetection<'_> {
    fn stem(&self) -> &'static str {
        "sweep-fork-detection"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let axis = sweep_axis(r);
        let first = along(r, |p| p.forks.iter().filter_map(ForkDetection::to_first_honest_ms).max().map(seconds));
        // A run where some fork never reached every honest node has no such time.
        let everywhere =
            along(r, |p| p.forks.iter().map(ForkDetection::to_all_honest_ms).collect::<Option<Vec<u64>>>().and_then(|v| v.into_iter().max()).map(seconds));
        let max = first.iter().chain(&everywhere).map(|p| p.1).fold(0.0, f64::max);
        let frame_desc = Frame {
            title: format!("Fork detection against {} ({})", axis.against, run_title(r)),
            x: axis.range.clone(),
            y: y_range(max, 2),
            x_desc: axis.desc,
            y_desc: "time to prove the slowest fork (virtual s after it was signed)",
            x_ticks: axis.ticks,
            x_label: &whole,
            y_counts: false,
        };
        let mut chart = frame(root, &frame_desc)?;
        curve(&mut chart, &first, BLUE, "first proof at an honest node", axis.joined)?;
        curve(&mut chart, &everywhere, ORANGE, "proof held by every honest node", axis.joined)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (c) Disputes and forks held by the reference node over the run, with
/// the moments activity ended, the last partition healed and the swarm
/// converged.
struct RunTimeline<'r>(&'r Report);

impl Figure for RunTimeline<'_> {
    fn stem(&self) -> &'static str {
        "run-disputes-forks"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let disputes: Vec<(f64, f64)> = r.series.iter().map(|s| (seconds(s.at_ms), s.disputes as f64)).collect();
        let forks: Vec<(f64, f64)> = r.series.iter().map(|s| (seconds(s.at_ms), s.forks as f64)).collect();
        let converged_at = r.convergence_ms.map(|c| seconds(r.activity_end_ms + c));
        let end = disputes.iter().map(|p| p.0).chain([seconds(r.end_ms)]).fold(0.0, f64::max);
        let max = disputes.iter().chain(&forks).map(|p| p.1).fold(0.0, f64::max).max(1.0);
        let legend_rows = 3 + usize::from(r.last_heal_ms > 0) + usize::from(converged_at.is_some());
        let top = y_range(max, legend_rows).end;
        let frame_desc = Frame {
            title: format!("Disputes and forks over time ({}, seed {})", r.scenario, r.seed),
            x: 0.0..(end * 1.02).max(1.0),
            y: 0.0..top,
            x_desc: "virtual time since the start (s)",
            y_desc: "held by the first honest node (count)",
            x_ticks: 12,
            x_label: &decimal,
            y_counts: true,
        };
        let mut chart = frame(root, &frame_desc)?;
        curve(&mut chart, &disputes, BLUE, "disputes recorded by honest agents", true)?;
        curve(&mut chart, &forks, RED, "forked positions proven", true)?;
        if r.last_heal_ms > 0 {
            moment(&mut chart, seconds(r.last_heal_ms), top, GREEN, "last partition heals")?;
        }
        moment(&mut chart, seconds(r.activity_end_ms), top, GREY, "activity ends")?;
        if let Some(t) = converged_at {
            moment(&mut chart, t, top, ORANGE, "every honest node in sync")?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (d, one run) Per forked position: how long after it was signed the first
/// honest node proved it, and the last.
struct RunForkDetection<'r>(&'r Report);

/// A fork's name on the x axis: its author's first bytes and the seq.
fn fork_name(f: &ForkDetection) -> String {
    format!("{}… seq {}", &f.author[..f.author.len().min(8)], f.seq)
}

impl Figure for RunForkDetection<'_> {
    fn stem(&self) -> &'static str {
        "run-fork-detection"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let forks = &r.forks;
        let max = forks.iter().map(|f| seconds(f.to_all_honest_ms().or(f.to_first_honest_ms()).unwrap_or(0))).fold(0.0, f64::max);
        let names: Vec<String> = forks.iter().map(fork_name).collect();
        let label = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 { names.get(i as usize).cloned().unwrap_or_default() } else { String::new() }
        };
        let frame_desc = Frame {
            title: format!("Time to detect each fork ({}, seed {})", r.scenario, r.seed),
            x: -0.6..(forks.len() as f64 - 0.4),
            y: y_range(max, if forks.iter().any(|f| f.all_honest_ms.is_none()) { 3 } else { 2 }),
            x_desc: "forked position (author, seq)",
            y_desc: "time to prove it (virtual s after it was signed)",
            x_ticks: forks.len().min(8),
            x_label: &label,
            y_counts: false,
        };
        let mut chart = frame(root, &frame_desc)?;
        let bar = |i: usize, left: bool, ms: u64, color: RGBColor| {
            let x = i as f64;
            let (a, b) = if left { (x - 0.36, x - 0.02) } else { (x + 0.02, x + 0.36) };
            Rectangle::new([(a, 0.0), (b, seconds(ms))], color.filled())
        };
        chart
            .draw_series(forks.iter().enumerate().filter_map(|(i, f)| f.to_first_honest_ms().map(|t| bar(i, true, t, BLUE))))?
            .label("first proof at an honest node")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], BLUE.filled()));
        chart
            .draw_series(forks.iter().enumerate().filter_map(|(i, f)| f.to_all_honest_ms().map(|t| bar(i, false, t, ORANGE))))?
            .label("proof held by every honest node")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], ORANGE.filled()));
        if forks.iter().any(|f| f.all_honest_ms.is_none()) {
            chart
                .draw_series(
                    forks
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| f.all_honest_ms.is_none())
                        .map(|(i, _)| Cross::new((i as f64 + 0.19, 0.0), 7, RED.stroke_width(3))),
                )?
                .label("never proven at every honest node")
                .legend(|(x, y)| Cross::new((x + 8, y), 6, RED.stroke_width(3)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
