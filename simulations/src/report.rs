//! What a run reports: the same bytes for the same scenario and seed (no
//! wall-clock figure is in it; the CLI prints those beside it), but for the
//! memory the allocator measured ([`MEASURED_FIELDS`]).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The fields of a run's or a sweep's report that the allocator measures
/// ([`crate::heap`]): the only ones that may differ between two runs of the
/// same scenario and seed, by a few KiB, because how far a hash table has
/// grown depends on its random keys, which each process draws anew.
pub const MEASURED_FIELDS: [&str; 2] = ["memory_bytes", "memory_peak_bytes"];

/// A report (a run's or a sweep's, as JSON) without its measured fields:
/// what is the same bytes for the same scenario and seed in every process.
pub fn without_measured(mut report: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                MEASURED_FIELDS.iter().for_each(|f| {
                    m.remove(*f);
                });
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut report);
    report
}

/// How a report's replay command names the scenario file at `path`: the
/// same text whatever path it was given by (relative, absolute, through
/// `..` or a link), so that the report is the same bytes. The file's
/// canonical path, relative to the repository that holds it (the nearest
/// directory above with a `.git`), else absolute; the path as given only
/// when it cannot be resolved.
pub fn scenario_path_shown(path: &Path) -> String {
    let Ok(canonical) = std::fs::canonicalize(path) else {
        return path.display().to_string();
    };
    let root: Option<PathBuf> = canonical.ancestors().skip(1).find(|d| d.join(".git").exists()).map(Path::to_path_buf);
    match root.as_deref().and_then(|r| canonical.strip_prefix(r).ok()) {
        Some(relative) => relative.display().to_string(),
        None => canonical.display().to_string(),
    }
}

/// The report of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The command that replays this run.
    pub replay: String,
    /// The swarm's size.
    pub swarm: Swarm,
    /// Virtual time: when activity stopped, when the last partition healed,
    /// when the run ended.
    pub activity_end_ms: u64,
    /// When the last partition healed (0: none).
    pub last_heal_ms: u64,
    /// When the run ended.
    pub end_ms: u64,
    /// What the scenario made happen to the swarm (partitions, crashes,
    /// restarts, joins, departures), in time order: the plots mark them.
    pub events: Vec<RunEvent>,
    /// Virtual ms from the later of activity's end and the last heal until
    /// every honest node held the same entries (`None`: not within the
    /// scenario's `settle_ms`).
    pub convergence_ms: Option<u64>,
    /// The bound the scenario sets on convergence.
    pub settle_ms: u64,
    /// How fast honest moves reached every honest node (`None`: none did).
    pub spread: Option<MoveSpread>,
    /// Entries written: by honest agents, by adversaries.
    pub entries_written: Written,
    /// The merged view's hash per honest node, hex (equal when converged).
    pub view_hashes: Vec<String>,
    /// Forked positions and when each honest node first held their proof.
    pub forks: Vec<ForkDetection>,
    /// Samples over time at the first honest node.
    pub series: Vec<Sample>,
    /// Per node: its role and its traffic.
    pub nodes: Vec<NodeFigures>,
    /// Bans, by whom of whom and why.
    pub bans: Vec<Ban>,
    /// Are the nodes' memory figures measured by the allocator
    /// ([`crate::heap`])? Else estimated (a program without the metering
    /// allocator).
    pub memory_measured: bool,
    /// The network's load: gossip traffic, `Busy` answers, lost writes.
    pub load: Load,
    /// Every invariant checked, with its result.
    pub invariants: Vec<InvariantResult>,
    /// Did every invariant hold?
    pub ok: bool,
}

/// What the network carried and shed.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    /// Gossip messages and control messages sent, duplicates dropped.
    pub gossip: crate::net::GossipTraffic,
    /// `Busy` and `Wait` answers delivered (read queue full, or the replicator declined).
    pub busy_answers: usize,
    /// Imports dropped on a full write queue, reported `Lost` and asked again.
    pub lost_writes: usize,
}

/// The swarm's size.
#[derive(Clone, Debug, Serialize)]
pub struct Swarm {
    /// Honest nodes.
    pub honest_nodes: usize,
    /// Nodes run by adversaries.
    pub adversary_nodes: usize,
    /// Honest agents (generated and scripted).
    pub honest_agents: usize,
    /// Adversary agents.
    pub adversary_agents: usize,
}

/// Something the scenario made happen to the swarm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunEvent {
    /// When it happened, virtual ms from the start.
    pub at_ms: u64,
    /// When it ended (a partition's heal), if it lasts.
    pub until_ms: Option<u64>,
    /// What happened.
    pub kind: RunEventKind,
    /// The nodes it happened to (a partition: the nodes cut off from the
    /// largest group).
    pub nodes: Vec<usize>,
}

/// What kind of thing happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEventKind {
    /// The network was cut into groups until `until_ms`.
    Partition,
    /// A node went down, its store kept.
    Crash,
    /// A crashed node came back.
    Restart,
    /// A node joined late.
    Join,
    /// A node left for good.
    Leave,
    /// Adversaries cut a node off from every honest peer until `until_ms`.
    Eclipse,
    /// The founder admitted an agent to the roster.
    Admit,
    /// The founder removed an agent from the roster.
    Remove,
    /// A node's operator redacted payloads.
    Redact,
}

/// How a timeline draws an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventMark {
    /// It takes nodes away (red).
    Away,
    /// It brings nodes (green).
    Back,
    /// It changes what counts or what is held, taking no node away (blue).
    Change,
}

impl RunEventKind {
    /// How a timeline draws it.
    pub fn mark(self) -> EventMark {
        match self {
            Self::Partition | Self::Crash | Self::Leave | Self::Eclipse => EventMark::Away,
            Self::Restart | Self::Join => EventMark::Back,
            Self::Admit | Self::Remove | Self::Redact => EventMark::Change,
        }
    }
}

/// Entries written.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Written {
    /// By honest agents.
    pub honest: u64,
    /// By adversaries (forks, spam, outsiders' and backdated entries).
    pub adversary: u64,
}

/// How fast honest moves spread: virtual ms from a move's append on its
/// agent's node until the last honest node stored it, over the moves every
/// honest node held at the end.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MoveSpread {
    /// Moves held by every honest node.
    pub moves: usize,
    /// Moves some honest node never held (one that left, say).
    pub moves_not_everywhere: usize,
    /// Median.
    pub p50_ms: u64,
    /// 99th percentile.
    pub p99_ms: u64,
    /// The slowest.
    pub max_ms: u64,
}

/// A forked position and its detection.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ForkDetection {
    /// The author, hex.
    pub author: String,
    /// The seq.
    pub seq: u64,
    /// When the equivocator signed its branches (virtual ms from the start).
    pub forked_ms: u64,
    /// When it was first proven anywhere (the equivocator's own node
    /// included, which proves it as it signs).
    pub first_ms: u64,
    /// When the first honest node proved it (`None`: none did).
    pub first_honest_ms: Option<u64>,
    /// When the last honest node that proved it did (`None`: some never did).
    pub all_honest_ms: Option<u64>,
}

impl ForkDetection {
    /// Time from the fork to its first proof at an honest node.
    pub fn to_first_honest_ms(&self) -> Option<u64> {
        self.first_honest_ms.map(|t| t.saturating_sub(self.forked_ms))
    }

    /// Time from the fork until every honest node held its proof.
    pub fn to_all_honest_ms(&self) -> Option<u64> {
        self.all_honest_ms.map(|t| t.saturating_sub(self.forked_ms))
    }
}

/// One sample of the reference node's view.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Virtual time.
    pub at_ms: u64,
    /// Entries held.
    pub entries: usize,
    /// Forked positions proven.
    pub forks: usize,
    /// Disputes held (dispute events recorded by honest agents that it holds).
    pub disputes: usize,
    /// Honest nodes holding exactly what the reference node holds.
    pub nodes_in_sync: usize,
}

/// One node's figures.
#[derive(Clone, Debug, Serialize)]
pub struct NodeFigures {
    /// Its index.
    pub node: usize,
    /// "honest", or the adversary's kind.
    pub role: String,
    /// Up at the end.
    pub up: bool,
    /// Entries held at the end.
    pub entries: usize,
    /// Its memory at its peak over the run's checkpoints, bytes: measured
    /// ([`crate::heap`]) when the report's `memory_measured`, else estimated.
    pub memory_bytes: u64,
    /// Traffic.
    pub traffic: crate::net::Traffic,
}

/// A ban.
#[derive(Clone, Debug, Serialize)]
pub struct Ban {
    /// The node that banned.
    pub by: u64,
    /// The node banned.
    pub peer: u64,
    /// Why.
    pub reason: String,
}

/// An invariant and whether it held.
#[derive(Clone, Debug, Serialize)]
pub struct InvariantResult {
    /// Its name.
    pub name: String,
    /// Held?
    pub held: bool,
    /// The first violation, when it did not.
    pub violation: Option<String>,
}
