//! A scenario file (TOML): the swarm (nodes, honest agents, adversaries),
//! the network (topology, link model, partitions, churn), what the agents do
//! (generated moves, scripted moves), what the merged view must show at the
//! end (`[[expect]]`, the scripted debate's golden statuses) and the bounds
//! the run is held to. `protocol`-free: it only says what happens when; the
//! runner ([`crate::run`]) makes it happen through the simulated nodes.

use crate::model::{Latency, LinkModel};
use agora_graph::Status;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A short name, used in reports.
    pub name: String,
    /// What it shows.
    #[serde(default)]
    pub description: String,
    /// The seed of every random choice (`--seed` overrides it).
    #[serde(default = "one")]
    pub seed: u64,
    /// Honest nodes.
    pub nodes: usize,
    /// Generated honest agents homed on each honest node.
    #[serde(default)]
    pub agents_per_node: usize,
    /// Who dials whom (each adversary's node dials `degree` honest nodes,
    /// or every honest node for a full mesh).
    #[serde(default)]
    pub topology: Topology,
    /// The link model of every link without one of its own.
    #[serde(default)]
    pub network: LinkModel,
    /// Links with their own model.
    #[serde(default)]
    pub links: Vec<LinkOverride>,
    /// Partitions that open and heal.
    #[serde(default)]
    pub partitions: Vec<Partition>,
    /// Nodes that crash, restart, join late or leave.
    #[serde(default)]
    pub churn: Vec<Churn>,
    /// What generated agents do.
    #[serde(default)]
    pub generated: Generated,
    /// Agents whose moves are written out.
    #[serde(default)]
    pub scripted: Vec<ScriptedAgent>,
    /// Adversaries, each on a node of its own.
    #[serde(default)]
    pub adversaries: Vec<Adversary>,
    /// What the merged view must show of scripted moves at every honest node
    /// once the swarm has converged (checked as an invariant of the run).
    #[serde(default)]
    pub expect: Vec<Expectation>,
    /// Agents act during `[0, duration_ms)` of virtual time.
    pub duration_ms: u64,
    /// After activity stops and every partition has healed, honest nodes
    /// must converge within this much virtual time.
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
    /// Overrides of the replicator's defaults.
    #[serde(default)]
    pub replicator: ReplicatorOverrides,
    /// Bounds a run is held to.
    #[serde(default)]
    pub bounds: Bounds,
}

fn one() -> u64 {
    1
}

fn default_settle_ms() -> u64 {
    300_000
}

/// Who dials whom among the honest nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Topology {
    /// Every pair.
    #[default]
    Full,
    /// Each node to the next (and the last to the first).
    Ring,
    /// A ring, plus `degree − 2` random links per node (so the graph is connected).
    Random {
        /// Links per node, about.
        degree: usize,
    },
}

/// A link with its own model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    /// One end (a node index).
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Its model.
    pub model: LinkModel,
}

/// A partition: from `at_ms` to `heal_ms`, nodes in different groups cannot
/// reach each other. Nodes in no group form one more group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    /// When it opens.
    pub at_ms: u64,
    /// When it heals.
    pub heal_ms: u64,
    /// The sides, by honest node index.
    pub groups: Vec<Vec<usize>>,
}

/// What happens to one node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Churn {
    /// The honest node.
    pub node: usize,
    /// It starts only then (a late join).
    #[serde(default)]
    pub join_ms: Option<u64>,
    /// It crashes then (its store survives).
    #[serde(default)]
    pub crash_ms: Option<u64>,
    /// It restarts then, over its store.
    #[serde(default)]
    pub restart_ms: Option<u64>,
    /// It leaves for good then.
    #[serde(default)]
    pub leave_ms: Option<u64>,
}

/// What generated agents do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Generated {
    /// Moves each agent makes.
    pub events_per_agent: usize,
    /// Topics the agents argue about.
    pub topics: usize,
    /// The time between an agent's moves (its reaction delay).
    pub interval: Latency,
    /// Relative weights of the moves.
    pub weights: Weights,
}

impl Default for Generated {
    fn default() -> Self {
        Self { events_per_agent: 0, topics: 4, interval: Latency::Uniform { min_ms: 500, max_ms: 5_000 }, weights: Weights::default() }
    }
}

/// Relative weights of generated moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// A new position.
    pub propose: u32,
    /// Support for a position held.
    pub support: u32,
    /// A contradiction of a position held (often another agent's).
    pub contradict: u32,
    /// A refinement, resolving the contradictions of its target.
    pub refine: u32,
    /// A synthesis of two positions.
    pub synthesize: u32,
    /// An accept of another agent's chain up to what this node holds.
    pub accept: u32,
    /// A dispute of another agent's event.
    pub dispute: u32,
}

impl Default for Weights {
    fn default() -> Self {
        Self { propose: 25, support: 15, contradict: 20, refine: 12, synthesize: 8, accept: 12, dispute: 8 }
    }
}

/// An agent whose moves are written out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAgent {
    /// Its name (moves of other agents refer to it).
    pub name: String,
    /// The honest node it records through.
    pub node: usize,
    /// Its moves, in time order.
    pub moves: Vec<Move>,
}

/// One scripted move. References are labels of earlier moves (by any agent).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Move {
    /// When, in virtual ms.
    pub at_ms: u64,
    /// What.
    #[serde(rename = "move")]
    pub kind: MoveKind,
    /// This move's label, for later moves to refer to.
    #[serde(default)]
    pub label: Option<String>,
    /// Its text (a reason, for a dispute).
    #[serde(default)]
    pub text: String,
    /// The move it answers (support, contradict, refine, resolve, dispute, withdraw).
    #[serde(default)]
    pub target: Option<String>,
    /// What a refinement resolves, or a synthesis draws on.
    #[serde(default)]
    pub sources: Vec<String>,
    /// For an accept: the last move of the accepted agent's chain endorsed.
    #[serde(default)]
    pub up_to: Option<String>,
}

/// The kinds of scripted moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// A new position.
    Propose,
    /// Support for `target`.
    Support,
    /// A contradiction of `target`.
    Contradict,
    /// A refinement of `target`, resolving `sources`.
    Refine,
    /// A synthesis of `sources`.
    Synthesize,
    /// An open question.
    Question,
    /// Resolves `target` (a question or a contradiction).
    Resolve,
    /// Accepts the chain of `up_to`'s author through `up_to`.
    Accept,
    /// Disputes `target`.
    Dispute,
    /// Withdraws the dispute `target`.
    Withdraw,
}

impl MoveKind {
    /// Does the move become a node of the reasoning graph? Accepts, disputes
    /// and withdrawals are merge events: they mark nodes, they are none.
    pub fn makes_node(self) -> bool {
        match self {
            MoveKind::Propose | MoveKind::Support | MoveKind::Contradict | MoveKind::Refine | MoveKind::Synthesize | MoveKind::Question | MoveKind::Resolve => {
                true
            }
            MoveKind::Accept | MoveKind::Dispute | MoveKind::Withdraw => false,
        }
    }
}

/// What the merged view must show of one scripted move's node at every
/// honest node after convergence: a golden reading of the debate, so that a
/// change to the graph's or the merge layer's rules that changes what a
/// debate means fails the run instead of passing unnoticed. Every field but
/// `label` is optional; each one given is checked, and one at least must be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// The scripted move whose node is meant (a propose, support, contradict,
    /// refine, synthesize, question or resolve).
    pub label: String,
    /// Its reasoning status in the merged graph.
    #[serde(default, with = "status_name")]
    pub status: Option<Status>,
    /// The move whose node superseded it (the graph names the first successor).
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// Settled or not: it survived a challenge and nothing is open against it.
    #[serde(default)]
    pub settled: Option<bool>,
    /// Exactly the scripted agents holding an open dispute of it (`[]`:
    /// nobody, as after a withdrawal).
    #[serde(default)]
    pub disputed_by: Option<Vec<String>>,
    /// Exactly the scripted agents whose accept frontier on its author's
    /// chain reaches it. An author's own chain is its word, not an accept,
    /// so the author is never listed.
    #[serde(default)]
    pub accepted_by: Option<Vec<String>>,
}

/// A reasoning status in a scenario file: agora-graph's [`Status`], by its
/// [`Status::name`]. A name the graph does not have is refused, with the
/// names it takes.
mod status_name {
    use super::Status;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(status: &Option<Status>, s: S) -> Result<S::Ok, S::Error> {
        match status {
            Some(status) => s.serialize_some(status.name()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Status>, D::Error> {
        let name = String::deserialize(d)?;
        Status::from_name(&name).map(Some).ok_or_else(|| {
            let names: Vec<&str> = Status::ALL.iter().map(|s| s.name()).collect();
            serde::de::Error::custom(format!("unknown status {name:?}: one of {}", names.join(", ")))
        })
    }
}

/// An adversary: `count` of them, each with its own key and node. In the
/// file, one table: `kind`, the kind's own fields, and optionally `count`
/// and `every_ms` (an unknown field is refused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "toml::Table")]
pub struct Adversary {
    /// How it misbehaves.
    #[serde(flatten)]
    pub kind: AdversaryKind,
    /// How many.
    pub count: usize,
    /// How often it acts, ms.
    pub every_ms: u64,
}

impl TryFrom<toml::Table> for Adversary {
    type Error = String;
    fn try_from(mut t: toml::Table) -> Result<Self, String> {
        let mut take = |name: &str, default: u64| -> Result<u64, String> {
            match t.remove(name) {
                None => Ok(default),
                Some(toml::Value::Integer(v)) if v >= 0 => Ok(v as u64),
                Some(v) => Err(format!("{name}: {v} is not a count")),
            }
        };
        let count = take("count", 1)? as usize;
        let every_ms = take("every_ms", default_every_ms())?;
        let kind = AdversaryKind::deserialize(toml::Value::Table(t)).map_err(|e| e.to_string())?;
        Ok(Self { kind, count, every_ms })
    }
}

fn default_every_ms() -> u64 {
    2_000
}

/// The ways an adversary misbehaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdversaryKind {
    /// Records honestly, then signs `branches` entries at `fork_at_seq` (2:
    /// an equivocator; thousands: a fork flooder) and goes on on one of them.
    Equivocator {
        /// The seq it forks at.
        fork_at_seq: u64,
        /// Entries it signs there.
        #[serde(default = "two")]
        branches: usize,
    },
    /// Gossips entries whose signatures do not verify, and sends garbage bytes.
    InvalidSigner,
    /// Claims the heads it holds and never answers a range request.
    Withholder,
    /// Serves and relays entries without their payloads.
    Stripper,
    /// Sends frontiers claiming heads of `authors` random authors.
    HeadFlooder {
        /// Authors per frontier.
        #[serde(default = "default_flood_authors")]
        authors: usize,
    },
    /// Records with timestamps `skew_ms` off (negative: early, positive: late).
    Backdater {
        /// How far off.
        skew_ms: i64,
    },
    /// Records and gossips `burst` entries each time it acts, far over the rate limits.
    Spammer {
        /// Entries per action.
        #[serde(default = "default_burst")]
        burst: usize,
    },
    /// An agent not on the roster, recording and gossiping as if it were.
    Outsider,
}

fn two() -> usize {
    2
}

fn default_flood_authors() -> usize {
    5_000
}

fn default_burst() -> usize {
    200
}

/// Overrides of the replicator's defaults (others keep theirs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplicatorOverrides {
    /// See `agora_sync::Config::range_limit`.
    pub range_limit: Option<u32>,
    /// See `agora_sync::Config::request_timeout_ms`.
    pub request_timeout_ms: Option<u64>,
    /// See `agora_sync::Config::in_flight_max`.
    pub in_flight_max: Option<usize>,
    /// See `agora_sync::Config::frontier_refresh_ms`.
    pub frontier_refresh_ms: Option<u64>,
}

impl ReplicatorOverrides {
    /// The replicator's configuration.
    pub fn config(&self) -> agora_sync::Config {
        let mut c = agora_sync::Config::default();
        if let Some(v) = self.range_limit {
            c.range_limit = v;
        }
        if let Some(v) = self.request_timeout_ms {
            c.request_timeout_ms = v;
        }
        if let Some(v) = self.in_flight_max {
            c.in_flight_max = v;
        }
        if let Some(v) = self.frontier_refresh_ms {
            c.frontier_refresh_ms = v;
        }
        c
    }
}

/// Bounds a run is held to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bounds {
    /// Most bytes a simulated node may hold (its store and the replicator's
    /// claims, requests and held responses, as estimated by the runner).
    pub node_memory_bytes: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Self { node_memory_bytes: 256 << 20 }
    }
}

/// Why a scenario file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not valid TOML, or not a scenario.
    #[error("{0}")]
    Parse(#[from] toml::de::Error),
    /// Valid TOML whose numbers do not make sense.
    #[error("{0}")]
    Invalid(String),
}

impl Scenario {
    /// Parse and check a scenario.
    pub fn from_toml(text: &str) -> Result<Self, ScenarioError> {
        let s: Scenario = toml::from_str(text)?;
        s.validate().map_err(ScenarioError::Invalid)?;
        Ok(s)
    }

    /// The checks `from_toml` makes: every index in range, every time in
    /// order, every model sound, every label defined before it is used,
    /// every expectation about a scripted node and scripted agents.
    pub fn validate(&self) -> Result<(), String> {
        if self.nodes == 0 {
            return Err("nodes: at least one honest node".into());
        }
        if self.nodes > 100_000 {
            return Err(format!("nodes: {} is more than 100,000", self.nodes));
        }
        self.network.validate().map_err(|e| format!("network: {e}"))?;
        self.generated.interval.validate().map_err(|e| format!("generated.interval: {e}"))?;
        let node = |what: &str, i: usize| if i < self.nodes { Ok(()) } else { Err(format!("{what}: node {i} is not one of the {} honest nodes", self.nodes)) };
        for (i, l) in self.links.iter().enumerate() {
            node(&format!("links[{i}]"), l.a)?;
            node(&format!("links[{i}]"), l.b)?;
            l.model.validate().map_err(|e| format!("links[{i}]: {e}"))?;
        }
        for (i, p) in self.partitions.iter().enumerate() {
            if p.heal_ms <= p.at_ms {
                return Err(format!("partitions[{i}]: heal_ms {} is not after at_ms {}", p.heal_ms, p.at_ms));
            }
            for g in &p.groups {
                for &n in g {
                    node(&format!("partitions[{i}]"), n)?;
                }
            }
        }
        for (i, c) in self.churn.iter().enumerate() {
            node(&format!("churn[{i}]"), c.node)?;
            if let (Some(crash), Some(restart)) = (c.crash_ms, c.restart_ms)
                && restart <= crash
            {
                return Err(format!("churn[{i}]: restart_ms {restart} is not after crash_ms {crash}"));
            }
            if c.restart_ms.is_some() && c.crash_ms.is_none() {
                return Err(format!("churn[{i}]: restart_ms without crash_ms"));
            }
        }
        if let Topology::Random { degree } = self.topology
            && degree < 2
        {
            return Err("topology: a random topology needs degree ≥ 2".into());
        }
        if self.topology == Topology::Full && self.nodes > crate::run::FULL_MESH_MAX {
            return Err(format!("topology: a full mesh of {} nodes (at most {}; use a random topology)", self.nodes, crate::run::FULL_MESH_MAX));
        }
        let mut spans: Vec<(u64, u64)> = self.partitions.iter().map(|p| (p.at_ms, p.heal_ms)).collect();
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[1].0 < w[0].1) {
            return Err("partitions: they overlap in time (a heal heals every partition)".into());
        }
        let mut labels: BTreeMap<&str, MoveKind> = BTreeMap::new();
        let mut all: Vec<(&ScriptedAgent, &Move)> = self.scripted.iter().flat_map(|a| a.moves.iter().map(move |m| (a, m))).collect();
        all.sort_by_key(|(_, m)| m.at_ms);
        let mut names = BTreeSet::new();
        for a in &self.scripted {
            node(&format!("scripted agent {}", a.name), a.node)?;
            // Expectations name agents, and an agent's key is derived from its
            // name: two agents of one name would be one agent.
            if !names.insert(a.name.as_str()) {
                return Err(format!("scripted agent {}: the name is used twice", a.name));
            }
        }
        for (a, m) in all {
            for r in m.target.iter().chain(&m.sources).chain(&m.up_to) {
                if !labels.contains_key(r.as_str()) {
                    return Err(format!("scripted agent {}: move at {} ms refers to {r:?}, not a label of an earlier move", a.name, m.at_ms));
                }
            }
            let needs_target =
                matches!(m.kind, MoveKind::Support | MoveKind::Contradict | MoveKind::Refine | MoveKind::Resolve | MoveKind::Dispute | MoveKind::Withdraw);
            if needs_target && m.target.is_none() {
                return Err(format!("scripted agent {}: the {:?} at {} ms needs a target", a.name, m.kind, m.at_ms));
            }
            if m.kind == MoveKind::Synthesize && m.sources.len() < 2 {
                return Err(format!("scripted agent {}: the synthesis at {} ms needs two sources", a.name, m.at_ms));
            }
            if m.kind == MoveKind::Accept && m.up_to.is_none() {
                return Err(format!("scripted agent {}: the accept at {} ms needs up_to", a.name, m.at_ms));
            }
            if let Some(l) = &m.label
                && labels.insert(l.as_str(), m.kind).is_some()
            {
                return Err(format!("scripted agent {}: label {l:?} used twice", a.name));
            }
        }
        self.validate_expectations(&labels, &names)?;
        for (i, a) in self.adversaries.iter().enumerate() {
            if a.every_ms == 0 {
                return Err(format!("adversaries[{i}]: every_ms must be positive"));
            }
            if let AdversaryKind::Equivocator { fork_at_seq, branches } = a.kind
                && (fork_at_seq == 0 || !(2..=100_000).contains(&branches))
            {
                return Err(format!("adversaries[{i}]: an equivocator forks at a seq ≥ 1 into 2 to 100,000 branches"));
            }
        }
        Ok(())
    }

    /// Every expectation names a scripted move that makes a node, checks
    /// something, and names only scripted agents and such moves.
    fn validate_expectations(&self, labels: &BTreeMap<&str, MoveKind>, agents: &BTreeSet<&str>) -> Result<(), String> {
        let node_label = |what: &str, label: &str| match labels.get(label) {
            None => Err(format!("{what}: {label:?} is not the label of a scripted move")),
            Some(kind) if !kind.makes_node() => Err(format!("{what}: {label:?} is a {kind:?}, a merge event, not a node of the merged graph")),
            Some(_) => Ok(()),
        };
        let mut expected = BTreeSet::new();
        for (i, e) in self.expect.iter().enumerate() {
            let what = format!("expect[{i}]");
            node_label(&what, &e.label)?;
            if !expected.insert(e.label.as_str()) {
                return Err(format!("{what}: {:?} has an expectation already (put every check of a label in one)", e.label));
            }
            if e.status.is_none() && e.superseded_by.is_none() && e.settled.is_none() && e.disputed_by.is_none() && e.accepted_by.is_none() {
                return Err(format!("{what}: {:?} expects nothing (give status, superseded_by, settled, disputed_by or accepted_by)", e.label));
            }
            if let Some(by) = &e.superseded_by {
                node_label(&format!("{what}.superseded_by"), by)?;
            }
            for (field, list) in [("disputed_by", &e.disputed_by), ("accepted_by", &e.accepted_by)] {
                let mut seen = BTreeSet::new();
                for name in list.iter().flatten() {
                    if !agents.contains(name.as_str()) {
                        return Err(format!("{what}.{field}: {name:?} is not a scripted agent"));
                    }
                    if !seen.insert(name) {
                        return Err(format!("{what}.{field}: {name:?} is named twice"));
                    }
                }
            }
        }
        Ok(())
    }
}
