//! A sweep: one scenario played over a range of swarm sizes or of seeds,
//! one run after another, each reduced to the figures its curves need
//! (convergence, traffic, fork detection, entries written). The sweep's
//! report, like a run's, is the same bytes for the same scenario, axis and
//! seed: it holds no wall-clock figure.
//!
//! Resizing a scenario keeps its shape: every node index it names
//! (partitions, churn, links, scripted agents) is rescaled in proportion, so
//! a partition that splits 4/6 of ten nodes splits 8/12 of twenty, and the
//! crashed node stays the same fraction of the way along. Generated agents
//! scale with the nodes (`agents_per_node`); adversaries keep their count.

use crate::report::{ForkDetection, MoveSpread, Report, Written};
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};

/// More points than this in one sweep is refused: a typing slip (`1..100000`)
/// would otherwise run for days.
pub const POINTS_MAX: usize = 10_000;

/// What a sweep varies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepAxis {
    /// Honest nodes, one run per size and seed: every size with each seed
    /// given (several seeds give each size's figures a spread), or with the
    /// sweep's one seed when `seeds` is empty.
    Sizes {
        /// The sizes, in the order given.
        sizes: Vec<usize>,
        /// The seeds each size is run with (none: the sweep's seed).
        seeds: Vec<u64>,
    },
    /// Seeds, one run per seed, all with the scenario's size.
    Seeds(Vec<u64>),
}

/// Why a sweep was refused.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The list of sizes or seeds does not parse.
    #[error("{0}")]
    Axis(String),
    /// The scenario, resized to one of the sizes, is not valid.
    #[error("at {nodes} nodes: {reason}")]
    Resized {
        /// The size.
        nodes: usize,
        /// What `Scenario::validate` said.
        reason: String,
    },
}

impl SweepAxis {
    /// Sizes as written on the command line: `5,10,20,40`.
    pub fn parse_sizes(text: &str) -> Result<Self, SweepError> {
        let sizes = parse_list::<usize>(text, "size")?;
        if let Some(zero) = sizes.iter().position(|&n| n == 0) {
            return Err(SweepError::Axis(format!("sizes: entry {} is 0; a swarm needs at least one honest node", zero + 1)));
        }
        Ok(Self::Sizes { sizes, seeds: Vec::new() })
    }

    /// Run every size of a size sweep with each of `seeds` (as parsed by
    /// [`SweepAxis::parse_seeds`]); a seed sweep is refused (it has no sizes).
    pub fn with_seeds(self, seeds: SweepAxis) -> Result<Self, SweepError> {
        match (self, seeds) {
            (Self::Sizes { sizes, .. }, Self::Seeds(seeds)) => {
                if sizes.len().saturating_mul(seeds.len()) > POINTS_MAX {
                    return Err(SweepError::Axis(format!("{} sizes x {} seeds is more than {POINTS_MAX} runs", sizes.len(), seeds.len())));
                }
                Ok(Self::Sizes { sizes, seeds })
            }
            _ => Err(SweepError::Axis("seeds per size: give sizes, then seeds".into())),
        }
    }

    /// Seeds as written on the command line: an inclusive range `1..20`
    /// (as `AGORA_SIM_SEEDS` in the tests) or a list `3,7,11`.
    pub fn parse_seeds(text: &str) -> Result<Self, SweepError> {
        let text = text.trim();
        if let Some((from, to)) = text.split_once("..") {
            let bound = |s: &str, which: &str| s.trim().parse::<u64>().map_err(|e| SweepError::Axis(format!("seeds: {which} {s:?}: {e}")));
            let (from, to) = (bound(from, "from")?, bound(to, "to")?);
            if to < from {
                return Err(SweepError::Axis(format!("seeds: {from}..{to} is empty (the range is FROM..TO, both included)")));
            }
            if to - from >= POINTS_MAX as u64 {
                return Err(SweepError::Axis(format!("seeds: {from}..{to} is more than {POINTS_MAX} runs")));
            }
            return Ok(Self::Seeds((from..=to).collect()));
        }
        Ok(Self::Seeds(parse_list::<u64>(text, "seed")?))
    }

    /// Runs the sweep makes.
    pub fn len(&self) -> usize {
        match self {
            Self::Sizes { sizes, seeds } => sizes.len() * seeds.len().max(1),
            Self::Seeds(v) => v.len(),
        }
    }

    /// No points at all (refused by [`sweep`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Which quantity varies.
    pub fn kind(&self) -> AxisKind {
        match self {
            Self::Sizes { .. } => AxisKind::Nodes,
            Self::Seeds(_) => AxisKind::Seed,
        }
    }
}

/// Which quantity a sweep varies, as its report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisKind {
    /// Honest nodes.
    Nodes,
    /// The seed.
    Seed,
}

fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>, SweepError>
where
    T::Err: std::fmt::Display,
{
    let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.is_empty() {
        return Err(SweepError::Axis(format!("{what}s: none given (a comma-separated list, e.g. 5,10,20)")));
    }
    if items.len() > POINTS_MAX {
        return Err(SweepError::Axis(format!("{what}s: {} is more than {POINTS_MAX} runs", items.len())));
    }
    items.iter().map(|s| s.parse::<T>().map_err(|e| SweepError::Axis(format!("{what}s: {s:?}: {e}")))).collect()
}

/// A whole sweep: one point per run, in the axis's order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepReport {
    /// The scenario's name.
    pub scenario: String,
    /// What varies.
    pub axis: AxisKind,
    /// The points, in the order given.
    pub points: Vec<SweepPoint>,
    /// Did every invariant hold in every run?
    pub ok: bool,
}

/// One run of a sweep, reduced to its figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Honest nodes.
    pub nodes: usize,
    /// Nodes run by adversaries.
    pub adversary_nodes: usize,
    /// Honest agents (generated and scripted).
    pub agents: usize,
    /// The run's seed.
    pub seed: u64,
    /// The command that replays this run alone.
    pub replay: String,
    /// When activity stopped (and the last partition healed), virtual ms.
    pub activity_end_ms: u64,
    /// Virtual ms from activity's end until every honest node held the same
    /// entries (`None`: not within `settle_ms`).
    pub convergence_ms: Option<u64>,
    /// The bound on convergence.
    pub settle_ms: u64,
    /// How fast honest moves reached every honest node.
    pub spread: Option<MoveSpread>,
    /// What went over the wire.
    pub traffic: SweepTraffic,
    /// Each forked position: when it was first proven anywhere and when at
    /// every honest node, virtual ms from the run's start.
    pub forks: Vec<ForkDetection>,
    /// Entries written, by honest agents and by adversaries.
    pub entries_written: Written,
    /// The highest peak memory of an honest node, bytes, when measured by
    /// the allocator (`None`: estimated only, not reported here).
    #[serde(default)]
    pub memory_peak_bytes: Option<u64>,
    /// Did every invariant hold?
    pub ok: bool,
    /// The invariants that did not hold, by name.
    pub violated: Vec<String>,
}

/// Traffic of one run: totals over every node, and the mean per honest node
/// (what running a node costs, adversaries' floods included on the
/// receiving side).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SweepTraffic {
    /// Bytes sent by every node, adversaries included.
    pub bytes_sent: u64,
    /// Messages sent by every node, adversaries included.
    pub messages_sent: u64,
    /// Bytes sent per honest node, mean (rounded down).
    pub bytes_sent_per_honest_node: u64,
    /// Bytes received per honest node, mean (rounded down).
    pub bytes_received_per_honest_node: u64,
    /// Messages sent per honest node, mean (rounded down).
    pub messages_sent_per_honest_node: u64,
    /// Messages received per honest node, mean (rounded down).
    pub messages_received_per_honest_node: u64,
}

impl SweepPoint {
    /// The figures of one run.
    pub fn from_report(report: &Report) -> Self {
        let honest = report.swarm.honest_nodes;
        let mut traffic = SweepTraffic::default();
        let mut honest_sums = [0u64; 4];
        for node in &report.nodes {
            let t = &node.traffic;
            traffic.bytes_sent += t.bytes_sent;
            traffic.messages_sent += t.messages_sent;
            if node.node < honest {
                for (sum, v) in honest_sums.iter_mut().zip([t.bytes_sent, t.bytes_received, t.messages_sent, t.messages_received]) {
                    *sum += v;
                }
            }
        }
        let mean = |sum: u64| sum / honest.max(1) as u64;
        traffic.bytes_sent_per_honest_node = mean(honest_sums[0]);
        traffic.bytes_received_per_honest_node = mean(honest_sums[1]);
        traffic.messages_sent_per_honest_node = mean(honest_sums[2]);
        traffic.messages_received_per_honest_node = mean(honest_sums[3]);
        SweepPoint {
            nodes: honest,
            adversary_nodes: report.swarm.adversary_nodes,
            agents: report.swarm.honest_agents,
            seed: report.seed,
            replay: report.replay.clone(),
            activity_end_ms: report.activity_end_ms,
            convergence_ms: report.convergence_ms,
            settle_ms: report.settle_ms,
            spread: report.spread.clone(),
            traffic,
            forks: report.forks.clone(),
            entries_written: report.entries_written.clone(),
            memory_peak_bytes: report.memory_measured.then(|| report.nodes.iter().filter(|n| n.node < honest).map(|n| n.memory_bytes).max().unwrap_or(0)),
            ok: report.ok,
            violated: report.invariants.iter().filter(|i| !i.held).map(|i| i.name.clone()).collect(),
        }
    }

    /// The point's place on the axis.
    pub fn x(&self, axis: AxisKind) -> u64 {
        match axis {
            AxisKind::Nodes => self.nodes as u64,
            AxisKind::Seed => self.seed,
        }
    }
}

/// `scenario` with `nodes` honest nodes, every node index it names rescaled
/// in proportion (see the module's documentation), and checked.
pub fn resized(scenario: &Scenario, nodes: usize) -> Result<Scenario, SweepError> {
    let from = scenario.nodes;
    let mut s = scenario.clone();
    s.nodes = nodes;
    if nodes != from && from > 0 {
        // A single node named by the scenario: the new node at the same fraction.
        let place = |i: usize| (i * nodes / from).min(nodes.saturating_sub(1));
        // A new node stands for the old node at its fraction of the swarm, and
        // so joins that node's side of every partition.
        let stands_for = |j: usize| j * from / nodes;
        for p in &mut s.partitions {
            p.groups = p.groups.iter().map(|g| (0..nodes).filter(|&j| g.contains(&stands_for(j))).collect()).collect();
        }
        for c in &mut s.churn {
            c.node = place(c.node);
        }
        for l in &mut s.links {
            (l.a, l.b) = (place(l.a), place(l.b));
        }
        for a in &mut s.scripted {
            a.node = place(a.node);
        }
    }
    s.validate().map_err(|reason| SweepError::Resized { nodes, reason })?;
    Ok(s)
}

/// Play `scenario` at every point of `axis` (each size with each of the
/// axis's seeds or else with `seed`, or seeds at the scenario's size), one run after another, and report. `replay`
/// gives each run's replay command from its size and seed.
pub fn sweep(scenario: &Scenario, axis: &SweepAxis, seed: u64, replay: impl Fn(usize, u64) -> String) -> Result<SweepReport, SweepError> {
    sweep_with(scenario, axis, seed, replay, |_, _| {})
}

/// [`sweep`], handing each run's point and full report to `each` as soon as
/// it is done (for progress, or to keep or draw the runs themselves).
pub fn sweep_with(
    scenario: &Scenario,
    axis: &SweepAxis,
    seed: u64,
    replay: impl Fn(usize, u64) -> String,
    mut each: impl FnMut(&SweepPoint, &Report),
) -> Result<SweepReport, SweepError> {
    if axis.is_empty() {
        return Err(SweepError::Axis("nothing to sweep: no sizes or seeds given".into()));
    }
    // Every point is built and checked before the first run, so a size the
    // scenario cannot take is refused at once rather than after hours.
    let runs: Vec<(Scenario, u64)> = match axis {
        SweepAxis::Sizes { sizes, seeds } => {
            let seeds = if seeds.is_empty() { std::slice::from_ref(&seed) } else { seeds.as_slice() };
            let mut runs = Vec::with_capacity(sizes.len() * seeds.len());
            for &n in sizes {
                let s = resized(scenario, n)?;
                runs.extend(seeds.iter().map(|&seed| (s.clone(), seed)));
            }
            runs
        }
        SweepAxis::Seeds(seeds) => seeds.iter().map(|&seed| (scenario.clone(), seed)).collect(),
    };
    let mut points = Vec::with_capacity(runs.len());
    for (s, seed) in &runs {
        let report = crate::run(s, *seed, replay(s.nodes, *seed));
        let point = SweepPoint::from_report(&report);
        each(&point, &report);
        points.push(point);
    }
    Ok(SweepReport { scenario: scenario.name.clone(), axis: axis.kind(), ok: points.iter().all(|p| p.ok), points })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ten_nodes() -> Scenario {
        Scenario::from_toml(
            r#"
name = "t"
nodes = 10
duration_ms = 1_000
topology = { kind = "ring" }
[[partitions]]
at_ms = 100
heal_ms = 200
groups = [[0, 1, 2, 3], [4, 5, 6, 7, 8, 9]]
[[churn]]
node = 9
join_ms = 500
[[churn]]
node = 3
crash_ms = 300
restart_ms = 400
"#,
        )
        .expect("scenario")
    }

    #[test]
    fn axes_parse_as_written_on_the_command_line() {
        assert_eq!(SweepAxis::parse_sizes("5, 10,20").unwrap(), SweepAxis::Sizes { sizes: vec![5, 10, 20], seeds: vec![] });
        let grid = SweepAxis::parse_sizes("5,10").unwrap().with_seeds(SweepAxis::parse_seeds("1..3").unwrap()).unwrap();
        assert_eq!((grid.len(), grid.kind()), (6, AxisKind::Nodes));
        assert!(SweepAxis::parse_seeds("1..3").unwrap().with_seeds(SweepAxis::parse_seeds("1").unwrap()).is_err());
        let too_many = SweepAxis::parse_sizes(&vec!["5"; 200].join(",")).unwrap().with_seeds(SweepAxis::parse_seeds("1..100").unwrap());
        assert!(matches!(too_many, Err(SweepError::Axis(m)) if m.contains("more than")));
        assert_eq!(SweepAxis::parse_seeds("1..4").unwrap(), SweepAxis::Seeds(vec![1, 2, 3, 4]));
        assert_eq!(SweepAxis::parse_seeds("7,3").unwrap(), SweepAxis::Seeds(vec![7, 3]));
        for bad in ["", "5,x", "0,4"] {
            assert!(SweepAxis::parse_sizes(bad).is_err(), "{bad:?}");
        }
        for bad in ["4..1", "1..x", "1..100000"] {
            assert!(SweepAxis::parse_seeds(bad).is_err(), "{bad:?}");
        }
    }

    /// Resizing keeps the partition's fractions and the churned nodes' places.
    #[test]
    fn resizing_keeps_the_scenarios_shape() {
        let s = ten_nodes();
        let twenty = resized(&s, 20).unwrap();
        assert_eq!(twenty.partitions[0].groups, vec![(0..8).collect::<Vec<_>>(), (8..20).collect()]);
        assert_eq!((twenty.churn[0].node, twenty.churn[1].node), (18, 6));
        let five = resized(&s, 5).unwrap();
        assert_eq!(five.partitions[0].groups, vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!((five.churn[0].node, five.churn[1].node), (4, 1));
        assert_eq!(resized(&s, 10).unwrap(), s);
        let mut full = s.clone();
        full.topology = crate::scenario::Topology::Full;
        assert!(matches!(resized(&full, 1_000), Err(SweepError::Resized { nodes: 1_000, .. })));
    }
}
