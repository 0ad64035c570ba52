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
//! A size run with several seeds is drawn as its median with a bar from the
//! lowest to the highest seed; sizes that span a factor of ten or more are
//! drawn on a logarithmic axis (growth claimed logarithmic is a straight
//! line there); a run that broke an invariant is ringed in red.
//! From a run ([`draw_run`]): disputes, proven forks and honest nodes in
//! sync over time, each on its own scale, with the run's partitions,
//! crashes, restarts, joins and departures marked; and when each forked
//! position was first proven and proven at every honest node.

mod png;

use crate::report::{EventMark, ForkDetection, Report, RunEventKind};
use crate::sweep::{AxisKind, SweepPoint, SweepReport};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::collections::BTreeSet;
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
    /// Its size, pixels.
    fn size(&self) -> (u32, u32) {
        SIZE
    }
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
        let root = SVGBackend::new(&svg, figure.size()).into_drawing_area();
        figure.draw(&root).and_then(|()| root.present()).map_err(|e| failed(&svg, e.to_string()))?;
    }
    {
        let root = png::PngBackend::new(&png_file, figure.size(), font()?).into_drawing_area();
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
    /// Vertical grid lines at these x values only (a logarithmic axis
    /// labels 1, 2, 5, 10...), instead of one at every tick.
    x_grid: Option<Vec<f64>>,
}

/// The title's font size: 24 px, smaller for a title that would not fit
/// in `width` pixels (a glyph of the sans font is about 0.55 of its size
/// wide on average), never below 14.
fn caption_size(title: &str, width: u32) -> u32 {
    let fits = (f64::from(width.saturating_sub(40)) / (0.55 * title.chars().count().max(1) as f64)).floor();
    (fits as u32).clamp(14, 24)
}

/// The background, title, axes and grid every figure shares.
fn frame<'a, DB: DrawingBackend>(root: &'a DrawingArea<DB, Shift>, f: &Frame) -> DrawResult<Chart<'a, DB>, DB> {
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(root);
    if !f.title.is_empty() {
        builder.caption(&f.title, (FONT, caption_size(&f.title, root.dim_in_pixel().0)));
    }
    let mut chart = builder.margin(20).x_label_area_size(56).y_label_area_size(84).build_cartesian_2d(f.x.clone(), f.y.clone())?;
    let mut mesh = chart.configure_mesh();
    if f.x_grid.is_some() {
        mesh.disable_x_mesh();
    }
    mesh.x_desc(f.x_desc)
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
    if let Some(xs) = &f.x_grid {
        let y = f.y.clone();
        chart.draw_series(xs.iter().map(|&x| PathElement::new(vec![(x, y.start), (x, y.end)], RGBColor(215, 215, 215))))?;
    }
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

/// A dashed vertical line at `x` marking a moment (in the legend unless
/// `label` is empty).
fn moment<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, x: f64, y_top: f64, color: RGBColor, label: &str) -> DrawResult<(), DB> {
    let drawn = chart.draw_series(DashedLineSeries::new(vec![(x, 0.0), (x, y_top)], 8, 6, color.stroke_width(2)))?;
    if !label.is_empty() {
        drawn.label(label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
    }
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

/// The x axis of a sweep: honest nodes (from 0, so scaling reads off the
/// slope; on a logarithmic axis when the sizes span a factor of ten or
/// more), or seeds around their span.
struct SweepAxisFrame {
    range: Range<f64>,
    ticks: usize,
    desc: &'static str,
    against: &'static str,
    joined: bool,
    /// x is drawn as log10(x).
    log: bool,
}

impl SweepAxisFrame {
    /// Where `x` (a size or a seed) is drawn.
    fn at(&self, x: u64) -> f64 {
        if self.log { (x.max(1) as f64).log10() } else { x as f64 }
    }

    /// The label of a tick at drawn position `v`: the size or seed; on a
    /// logarithmic axis only 1, 2 and 5 times a power of ten are labelled.
    fn label(&self, v: &f64) -> String {
        if !self.log {
            return whole(v);
        }
        let x = 10f64.powf(*v);
        if log_grid_value(x) { format!("{}", x.round()) } else { String::new() }
    }

    /// A logarithmic axis's grid: 1, 2, 5 times each power of ten in range.
    fn grid(&self) -> Option<Vec<f64>> {
        self.log.then(|| {
            let mut v = Vec::new();
            let mut decade = 1.0f64;
            while decade.log10() <= self.range.end {
                for m in [1.0, 2.0, 5.0] {
                    let x = (m * decade).log10();
                    if self.range.contains(&x) {
                        v.push(x);
                    }
                }
                decade *= 10.0;
            }
            v
        })
    }
}

/// Is `x` within 1% of 1, 2 or 5 times a power of ten?
fn log_grid_value(x: f64) -> bool {
    if x < 0.99 {
        return false;
    }
    let decade = 10f64.powf(x.log10().floor());
    let m = x / decade;
    [1.0, 2.0, 5.0, 10.0].iter().any(|t| (m - t).abs() / t < 0.01)
}

fn sweep_axis(report: &SweepReport) -> SweepAxisFrame {
    let xs: Vec<f64> = report.points.iter().map(|p| p.x(report.axis) as f64).collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    let log = report.axis == AxisKind::Nodes && lo >= 1.0 && hi / lo >= 10.0;
    let (range, desc, against, joined) = match report.axis {
        AxisKind::Nodes if log => {
            let (a, b) = (lo.log10(), hi.log10());
            let pad = (b - a) * 0.06;
            ((a - pad)..(b + pad), "honest nodes (logarithmic)", "swarm size", true)
        }
        AxisKind::Nodes => (0.0..(hi * 1.05).max(hi + 1.0), "honest nodes", "swarm size", true),
        AxisKind::Seed => ((lo - 0.5)..(hi + 0.5), "seed", "seed", false),
    };
    // A logarithmic axis asks for many ticks and labels the round ones.
    let ticks = if log { 60 } else { ((range.end - range.start).floor().max(1.0) as usize).min(12) };
    SweepAxisFrame { range, ticks, desc, against, joined, log }
}

/// A curve over a sweep: per place on the axis, the median of its runs'
/// values and, when a place has several runs (seeds), their lowest and
/// highest; runs that broke an invariant, with their value.
struct Along {
    median: Vec<(f64, f64)>,
    /// (x, lowest, median, highest), for places with more than one run.
    spread: Vec<(f64, f64, f64, f64)>,
    broken: Vec<(f64, f64)>,
}

impl Along {
    fn max(&self) -> f64 {
        self.median.iter().map(|p| p.1).chain(self.spread.iter().map(|s| s.3)).fold(0.0, f64::max)
    }
}

/// `y` of every run, by place along x (sorted, so a joined curve runs left
/// to right).
fn along(report: &SweepReport, axis: &SweepAxisFrame, y: impl Fn(&SweepPoint) -> Option<f64>) -> Along {
    let mut by_x: std::collections::BTreeMap<u64, Vec<f64>> = std::collections::BTreeMap::new();
    let mut broken = Vec::new();
    for p in &report.points {
        let x = p.x(report.axis);
        if let Some(v) = y(p) {
            by_x.entry(x).or_default().push(v);
            if !p.ok {
                broken.push((axis.at(x), v));
            }
        }
    }
    let mut median = Vec::new();
    let mut spread = Vec::new();
    for (x, mut vs) in by_x {
        vs.sort_by(f64::total_cmp);
        let n = vs.len();
        let mid = if n % 2 == 1 { vs[n / 2] } else { (vs[n / 2 - 1] + vs[n / 2]) / 2.0 };
        let at = axis.at(x);
        median.push((at, mid));
        if n > 1 {
            spread.push((at, vs[0], mid, vs[n - 1]));
        }
    }
    Along { median, spread, broken }
}

/// How many runs each place on the axis had, for a title: "" for one,
/// else ", median of N seeds (bars: lowest to highest)".
fn seeds_note(report: &SweepReport) -> String {
    if report.axis != AxisKind::Nodes {
        return String::new();
    }
    let mut per: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    for p in &report.points {
        *per.entry(p.nodes).or_default() += 1;
    }
    match per.values().max() {
        Some(&n) if n > 1 => format!(", median of {n} seeds (bars: lowest to highest)"),
        _ => String::new(),
    }
}

/// Draw `a` as a curve in `color`, with its spread bars.
fn curve_along<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, a: &Along, color: RGBColor, label: &str, joined: bool) -> DrawResult<(), DB> {
    if !a.spread.is_empty() {
        chart.draw_series(a.spread.iter().map(|&(x, lo, _, hi)| PathElement::new(vec![(x, lo), (x, hi)], color.stroke_width(2))))?;
        chart.draw_series(
            a.spread
                .iter()
                .flat_map(|&(x, lo, _, hi)| [lo, hi].map(|y| EmptyElement::at((x, y)) + PathElement::new(vec![(-6, 0), (6, 0)], color.stroke_width(2)))),
        )?;
    }
    curve(chart, &a.median, color, label, joined)
}

/// Ring in red the runs that broke an invariant (once per figure, on its
/// main curve).
fn mark_broken<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, a: &Along) -> DrawResult<(), DB> {
    if a.broken.is_empty() {
        return Ok(());
    }
    chart
        .draw_series(a.broken.iter().map(|&p| Circle::new(p, 10, RED.stroke_width(3))))?
        .label("run broke an invariant (see sweep.json)")
        .legend(|(x, y)| Circle::new((x + 12, y), 7, RED.stroke_width(3)));
    Ok(())
}

fn run_title(report: &SweepReport) -> String {
    let seeds: BTreeSet<u64> = report.points.iter().map(|p| p.seed).collect();
    match report.points.as_slice() {
        [] => report.scenario.clone(),
        [p, ..] if report.axis == AxisKind::Nodes && seeds.len() == 1 => format!("{}, seed {}", report.scenario, p.seed),
        [_, ..] if report.axis == AxisKind::Nodes => report.scenario.clone(),
        [p, ..] => format!("{}, {} honest nodes", report.scenario, p.nodes),
    }
}

/// The frame of a sweep's figure.
fn sweep_frame<'t>(axis: &'t SweepAxisFrame, title: String, max: f64, legend_rows: usize, y_desc: &'t str, label: &'t dyn Fn(&f64) -> String) -> Frame<'t> {
    Frame {
        title,
        x: axis.range.clone(),
        y: y_range(max, legend_rows),
        x_desc: axis.desc,
        y_desc,
        x_ticks: axis.ticks,
        x_label: label,
        y_counts: false,
        x_grid: axis.grid(),
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
        let label = |v: &f64| axis.label(v);
        let converged = along(r, &axis, |p| p.convergence_ms.map(seconds));
        let missed = along(r, &axis, |p| p.convergence_ms.is_none().then(|| seconds(p.settle_ms)));
        let max = converged.max().max(missed.max());
        let rows = 1 + usize::from(!missed.median.is_empty()) + usize::from(!converged.broken.is_empty());
        let title = format!("Convergence time against {} ({}{})", axis.against, run_title(r), seeds_note(r));
        let mut chart = frame(root, &sweep_frame(&axis, title, max, rows, "time to converge after activity ends (virtual s)", &label))?;
        curve_along(&mut chart, &converged, BLUE, "every honest node holds the same entries", axis.joined)?;
        if !missed.median.is_empty() {
            let crosses: Vec<(f64, f64)> =
                r.points.iter().filter(|p| p.convergence_ms.is_none()).map(|p| (axis.at(p.x(r.axis)), seconds(p.settle_ms))).collect();
            chart
                .draw_series(crosses.iter().map(|&p| Cross::new(p, 7, RED.stroke_width(3))))?
                .label("did not converge (drawn at settle_ms, the bound)")
                .legend(|(x, y)| Cross::new((x + 12, y), 6, RED.stroke_width(3)));
        }
        mark_broken(&mut chart, &converged)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (a') How long an honest move takes to reach every honest node (median,
/// 99th percentile, slowest) against the swarm's size (or seed): at a fixed
/// fan-out, gossip should reach N nodes in about log N hops, a straight
/// line on the logarithmic axis.
struct SweepSpread<'r>(&'r SweepReport);

impl Figure for SweepSpread<'_> {
    fn stem(&self) -> &'static str {
        "sweep-spread"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        let axis = sweep_axis(r);
        let label = |v: &f64| axis.label(v);
        let p50 = along(r, &axis, |p| p.spread.as_ref().map(|s| seconds(s.p50_ms)));
        let p99 = along(r, &axis, |p| p.spread.as_ref().map(|s| seconds(s.p99_ms)));
        let max_ = along(r, &axis, |p| p.spread.as_ref().map(|s| seconds(s.max_ms)));
        let max = max_.max();
        let rows = 3 + usize::from(!p50.broken.is_empty());
        let title = format!("Time for a move to reach every honest node against {} ({}{})", axis.against, run_title(r), seeds_note(r));
        let mut chart = frame(root, &sweep_frame(&axis, title, max, rows, "from its append to the last honest node storing it (virtual s)", &label))?;
        curve_along(&mut chart, &p50, BLUE, "median move", axis.joined)?;
        curve_along(&mut chart, &p99, ORANGE, "99th percentile", axis.joined)?;
        curve_along(&mut chart, &max_, RED, "slowest", axis.joined)?;
        mark_broken(&mut chart, &p50)?;
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
        let label = |v: &f64| axis.label(v);
        let max = r.points.iter().map(|p| p.traffic.bytes_sent_per_honest_node.max(p.traffic.bytes_received_per_honest_node) as f64).fold(0.0, f64::max);
        let (unit, unit_name) = byte_unit(max);
        let sent = along(r, &axis, |p| Some(p.traffic.bytes_sent_per_honest_node as f64 / unit));
        let received = along(r, &axis, |p| Some(p.traffic.bytes_received_per_honest_node as f64 / unit));
        let y_desc = format!("per honest node over the run ({unit_name})");
        let rows = 2 + usize::from(!sent.broken.is_empty());
        let title = format!("Bandwidth per honest node against {} ({}{})", axis.against, run_title(r), seeds_note(r));
        let mut chart = frame(root, &sweep_frame(&axis, title, max / unit, rows, &y_desc, &label))?;
        curve_along(&mut chart, &sent, BLUE, "bytes sent (mean over honest nodes)", axis.joined)?;
        curve_along(&mut chart, &received, ORANGE, "bytes received (mean over honest nodes)", axis.joined)?;
        mark_broken(&mut chart, &sent)?;
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
        let label = |v: &f64| axis.label(v);
        let first = along(r, &axis, |p| p.forks.iter().filter_map(ForkDetection::to_first_honest_ms).max().map(seconds));
        // A run where some fork never reached every honest node has no such time.
        let everywhere = along(r, &axis, |p| {
            p.forks.iter().map(ForkDetection::to_all_honest_ms).collect::<Option<Vec<u64>>>().and_then(|v| v.into_iter().max()).map(seconds)
        });
        let max = first.max().max(everywhere.max());
        let rows = 2 + usize::from(!first.broken.is_empty());
        let title = format!("Fork detection against {} ({}{})", axis.against, run_title(r), seeds_note(r));
        let mut chart = frame(root, &sweep_frame(&axis, title, max, rows, "time to prove the slowest fork (virtual s after it was signed)", &label))?;
        curve_along(&mut chart, &first, BLUE, "first proof at an honest node", axis.joined)?;
        curve_along(&mut chart, &everywhere, ORANGE, "proof held by every honest node", axis.joined)?;
        mark_broken(&mut chart, &first)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// (c) Over the run, each on its own scale: disputes and proven forks held
/// by the first honest node, and the honest nodes holding what it holds;
/// with the run's partitions (shaded), crashes and departures (red),
/// restarts and joins (green), the end of activity and the moment every
/// honest node was in sync.
struct RunTimeline<'r>(&'r Report);

impl Figure for RunTimeline<'_> {
    fn stem(&self) -> &'static str {
        "run-timeline"
    }

    fn size(&self) -> (u32, u32) {
        (1024, 960)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let r = self.0;
        root.fill(&WHITE)?;
        let root = root.titled(&format!("The run over time ({}, seed {})", r.scenario, r.seed), (FONT, 24))?;
        let panels = root.split_evenly((3, 1));
        let end = r.series.iter().map(|s| seconds(s.at_ms)).chain([seconds(r.end_ms)]).fold(0.0, f64::max);
        let x = 0.0..(end * 1.02).max(1.0);
        let converged_at = r.convergence_ms.map(|c| seconds(r.activity_end_ms + c));
        let series: [Panel; 3] = [
            ("disputes recorded by honest agents", BLUE, r.series.iter().map(|s| (seconds(s.at_ms), s.disputes as f64)).collect()),
            ("forked positions proven", RED, r.series.iter().map(|s| (seconds(s.at_ms), s.forks as f64)).collect()),
            ("honest nodes holding what it holds", GREEN, r.series.iter().map(|s| (seconds(s.at_ms), s.nodes_in_sync as f64)).collect()),
        ];
        let y_descs = ["disputes held", "forks proven", "honest nodes in sync"];
        for (i, ((name, color, points), panel)) in series.iter().zip(panels.iter()).enumerate() {
            let max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0);
            // The first panel carries the legend of the marks.
            let rows = if i == 0 { 2 + marks_legend_rows(r, converged_at.is_some()) } else { 1 };
            let top = y_range(max, rows).end;
            let f = Frame {
                title: String::new(),
                x: x.clone(),
                y: 0.0..top,
                x_desc: if i == 2 { "virtual time since the start (s)" } else { "" },
                y_desc: y_descs[i],
                x_ticks: 12,
                x_label: &decimal,
                y_counts: true,
                x_grid: None,
            };
            let mut chart = frame(panel, &f)?;
            mark_events(&mut chart, r, top, converged_at, i == 0)?;
            curve(&mut chart, points, *color, name, true)?;
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        Ok(())
    }
}

/// One panel of the timeline: what it counts, its colour, its points.
type Panel<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// Rows the marks add to a legend.
fn marks_legend_rows(r: &Report, converged: bool) -> usize {
    let kinds: BTreeSet<EventMark> = r.events.iter().filter(|e| e.kind != RunEventKind::Partition).map(|e| e.kind.mark()).collect();
    usize::from(r.events.iter().any(|e| e.kind == RunEventKind::Partition)) + kinds.len() + 1 + usize::from(converged)
}

/// The run's events on a timeline chart up to `top`: partitions shaded,
/// nodes lost (crash, departure, eclipse) in red, gained (restart, join) in
/// green, roster changes and redactions in blue,
/// the end of activity in grey and the moment of sync in orange; labelled
/// (for the legend) when `labelled`.
fn mark_events<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>, r: &Report, top: f64, converged_at: Option<f64>, labelled: bool) -> DrawResult<(), DB> {
    let shade = RGBColor(120, 120, 120).mix(0.14);
    let partitions: Vec<(f64, f64)> =
        r.events.iter().filter(|e| e.kind == RunEventKind::Partition).map(|e| (seconds(e.at_ms), seconds(e.until_ms.unwrap_or(e.at_ms)))).collect();
    if !partitions.is_empty() {
        let drawn = chart.draw_series(partitions.iter().map(|&(a, b)| Rectangle::new([(a, 0.0), (b, top)], shade.filled())))?;
        if labelled {
            drawn.label("partitioned").legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], shade.filled()));
        }
    }
    for (mark, color, label) in [
        (EventMark::Away, RED, "a node crashes, leaves or is eclipsed"),
        (EventMark::Back, GREEN, "a node restarts or joins"),
        (EventMark::Change, BLUE, "the roster changes or a node redacts"),
    ] {
        let xs: Vec<f64> = r.events.iter().filter(|e| e.kind != RunEventKind::Partition && e.kind.mark() == mark).map(|e| seconds(e.at_ms)).collect();
        if xs.is_empty() {
            continue;
        }
        let drawn = chart.draw_series(xs.iter().flat_map(|&x| DashedLineSeries::new(vec![(x, 0.0), (x, top)], 4, 4, color.stroke_width(1))))?;
        if labelled {
            drawn.label(label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(1)));
        }
    }
    moment(chart, seconds(r.activity_end_ms), top, GREY, if labelled { "activity ends" } else { "" })?;
    if let Some(t) = converged_at {
        moment(chart, t, top, ORANGE, if labelled { "every honest node in sync" } else { "" })?;
    }
    Ok(())
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
            x_grid: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logarithmic_axis_labels_one_two_and_five_times_each_power_of_ten() {
        for x in [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1_000.0, 1.995, 5.012] {
            assert!(log_grid_value(x), "{x}");
        }
        for x in [0.5, 3.0, 3.16, 7.0, 15.0, 30.0, 2.1] {
            assert!(!log_grid_value(x), "{x}");
        }
        let axis = SweepAxisFrame { range: 0.2..2.5, ticks: 60, desc: "", against: "", joined: true, log: true };
        let grid: Vec<f64> = axis.grid().expect("a grid").iter().map(|v| 10f64.powf(*v).round()).collect();
        assert_eq!(grid, [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        assert_eq!(axis.label(&2f64.log10()), "2");
        assert_eq!(axis.label(&3f64.log10()), "");
        assert_eq!(axis.at(100), 2.0);
    }

    /// The longest title a sweep draws fits in the figure's width, and a
    /// short one keeps the full size.
    #[test]
    fn a_long_title_is_drawn_small_enough_to_fit() {
        font().expect("the embedded font");
        let long = "Time for a move to reach every honest node against honest nodes (swarm-100-adversarial, seeds 1–5 at each size)";
        let mut svg = String::new();
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let size = caption_size(long, SIZE.0);
        assert!(size < 24);
        let (width, _) = root.estimate_text_size(long, &TextStyle::from((FONT, size).into_font())).expect("measured");
        assert!(width <= SIZE.0 - 40, "{width} px at {size} px");
        assert_eq!(caption_size("Convergence time against honest nodes (fanout)", SIZE.0), 24);
    }
}
