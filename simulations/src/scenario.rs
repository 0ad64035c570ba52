//! A scenario file (TOML): the swarm (nodes, honest agents, adversaries),
//! the network (topology, link model, partitions, churn), what the agents do
//! (generated moves, scripted moves), what the merged view must show at the
//! end (`[[expect]]`, the scripted debate's golden statuses) and the bounds
//! the run is held to. An attack is stated outright: scripted adversaries
//! with their own timestamps and forks ([`ScriptedAgent::adversary`],
//! [`Move::time_ms`], [`Move::skew_ms`], [`Move::fork`]), node clocks off
//! virtual time ([`Clock`]), roster changes during the run
//! ([`RosterChange`]), redactions ([`Redaction`]), uneven agents per node ([`Scenario::agents`]) and
//! topic-bound targets ([`Generated::topic_bound`]). `protocol`-free: it only says what happens when; the
//! runner ([`crate::run`]) makes it happen through the simulated nodes.

use crate::model::{Latency, LinkModel, within};
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
    /// Generated honest agents homed on each honest node, one count per
    /// node (instead of `agents_per_node`; as many counts as nodes).
    #[serde(default)]
    pub agents: Option<Vec<usize>>,
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
    /// Honest nodes whose clocks are off: the timestamps their agents sign
    /// are read from them (`[[clocks]] node, skew_ms, drift_ppm`).
    #[serde(default)]
    pub clocks: Vec<Clock>,
    /// Roster changes the workspace's founder writes during the run
    /// (`[[roster]] at_ms, admit = "agent" | remove = "agent", cut_off`).
    #[serde(default)]
    pub roster: Vec<RosterChange>,
    /// Payloads an honest node's operator redacts during the run
    /// (`[[redactions]] at_ms, node, label = "move" | agent = "agent"`).
    #[serde(default)]
    pub redactions: Vec<Redaction>,
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
    /// What verification and writes cost a node ([`crate::cost`]); a
    /// field left out takes its measured default. Without the block, none.
    #[serde(default)]
    pub cost: Option<crate::cost::Cost>,
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

/// An honest node's clock, off the network's virtual time: at virtual time
/// `t` (ms since the run's start) it reads `t + skew_ms + t × drift_ppm /
/// 10⁶`. The timestamps its agents sign are read from it (the node's peers
/// defer an entry dated more than the allowed skew ahead of their own
/// clocks until it is due).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clock {
    /// The honest node.
    pub node: usize,
    /// Its offset at the run's start, ms (negative: behind).
    #[serde(default)]
    pub skew_ms: i64,
    /// How fast it drifts, parts per million (negative: it runs slow).
    #[serde(default)]
    pub drift_ppm: i64,
}

impl Clock {
    /// What the clock reads when `elapsed_ms` of virtual time have passed
    /// since the run's start, at virtual time `now_ms` (never below 0).
    pub fn read(&self, now_ms: u64, elapsed_ms: u64) -> u64 {
        let drift = i128::from(elapsed_ms) * i128::from(self.drift_ppm) / 1_000_000;
        let t = i128::from(now_ms) + i128::from(self.skew_ms) + drift;
        u64::try_from(t.max(0)).unwrap_or(u64::MAX)
    }
}

/// A roster change: the founder (an agent of its own, recording through the
/// first honest node up that holds its last entry, so that its chain never
/// forks) admits or removes an agent, a scripted agent by its
/// name or a generated one by its `agent-<node>-<j>` name. An agent whose
/// first change is an admission is off the roster until then: it makes no
/// move before (a generated agent starts then). An agent on the roster from
/// the start is admitted in the founder's chain at its removal, just
/// before it (a removal counts only of a member). A removal pins the removed
/// agent's chain as its own node holds it then (`RemoveAt`: that head and
/// what it links to count, nothing else the key signs), or with `cut_off`
/// its chain up to that seq. The founder's entry reaches each node as any
/// entry does (each node's views derive the roster from it); the nodes'
/// replicators are told the new admission at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosterChange {
    /// When, virtual ms.
    pub at_ms: u64,
    /// The agent admitted.
    #[serde(default)]
    pub admit: Option<String>,
    /// The agent removed.
    #[serde(default)]
    pub remove: Option<String>,
    /// A removal's last seq that stays admitted.
    #[serde(default)]
    pub cut_off: Option<u64>,
}

impl RosterChange {
    /// The agent it names.
    pub fn agent(&self) -> &str {
        self.admit.as_deref().or(self.remove.as_deref()).unwrap_or_default()
    }
}

/// A redaction: at `at_ms`, the operator of honest node `node` redacts
/// (`agora redact`) the payload of the entry a scripted move wrote (`label`),
/// or of every entry of an agent that the node holds with its payload then
/// (`agent`, a scripted name or a generated `agent-<node>-<j>`). The node
/// keeps the residue and no import fills the payload again; every other
/// node keeps its copy, and a node that later gets the entry from this one
/// fetches the payload elsewhere. A redaction changes no view: the run
/// checks that the node's view hash stays the swarm's, and that the
/// payload never comes back to the node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// When, virtual ms.
    pub at_ms: u64,
    /// The honest node whose operator redacts.
    pub node: usize,
    /// The scripted move whose entry's payload is redacted.
    #[serde(default)]
    pub label: Option<String>,
    /// The agent every payload of which the node holds then is redacted.
    #[serde(default)]
    pub agent: Option<String>,
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
    /// Targets (of supports, contradictions, refinements, syntheses and
    /// disputes) chosen among the positions generated on the move's own
    /// topic, not among any recent position.
    pub topic_bound: bool,
    /// An agent whose move fell due while its node was down (crashed, or
    /// not joined yet) acts again once the node is back. Off by default:
    /// the shipped scenarios' figures were made with agents that stop for
    /// good at their node's first downtime.
    pub resume_after_churn: bool,
}

impl Default for Generated {
    fn default() -> Self {
        Self {
            events_per_agent: 0,
            topics: 4,
            interval: Latency::Uniform { min_ms: 500, max_ms: 5_000 },
            weights: Weights::default(),
            topic_bound: false,
            resume_after_churn: false,
        }
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
    /// An adversary (its key on the roster, writing through an honest
    /// node): its moves count as no honest entry (what "nothing lost" and
    /// the spread figures follow), and it may fork its chain (`fork`).
    #[serde(default)]
    pub adversary: bool,
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
    /// For a judgment: its verdict (success or failure).
    #[serde(default)]
    pub success: Option<bool>,
    /// The entry's own timestamp, absolute virtual ms since the run's start
    /// (a backdated or forward-dated move); else its node's clock is read.
    /// Never earlier than the timestamp of the entry it follows on its
    /// author's chain (the format's rule): it is raised to that one.
    #[serde(default)]
    pub time_ms: Option<u64>,
    /// The entry's timestamp as an offset from its node's clock, ms
    /// (negative: backdated); not with `time_ms`.
    #[serde(default)]
    pub skew_ms: Option<i64>,
    /// An equivocation (adversaries only): the entry is signed at the seq of
    /// the author's previous move, on the same predecessor, a second entry
    /// there; later moves follow it.
    #[serde(default)]
    pub fork: bool,
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
    /// A trajectory (its task query is `text`).
    Trajectory,
    /// Judges the trajectory `target`: `success` or not (`text`: its reason).
    Judgment,
    /// A memory item (a lesson), `text` its title and content: two items of
    /// one text have one content id.
    MemoryItem,
}

impl MoveKind {
    /// Does the move become a node of the reasoning graph? Accepts, disputes
    /// and withdrawals are merge events: they mark nodes, they are none.
    pub fn makes_node(self) -> bool {
        match self {
            MoveKind::Propose
            | MoveKind::Support
            | MoveKind::Contradict
            | MoveKind::Refine
            | MoveKind::Synthesize
            | MoveKind::Question
            | MoveKind::Resolve
            | MoveKind::Trajectory
            | MoveKind::Judgment
            | MoveKind::MemoryItem => true,
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
    /// For a trajectory: `"success"` or `"failure"` (judged alike by every
    /// agent that judged it), or `"none"` (not judged, or concurrent
    /// verdicts that differ: a conflict, deciding nothing).
    #[serde(default)]
    pub judged: Option<Verdict>,
}

/// A trajectory's verdict in the merged graph (see [`Expectation::judged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Judged a success.
    Success,
    /// Judged a failure.
    Failure,
    /// No verdict stands.
    None,
}

impl Verdict {
    /// The verdict the graph's `judged` stands for.
    pub fn of(judged: Option<bool>) -> Self {
        match judged {
            Some(true) => Verdict::Success,
            Some(false) => Verdict::Failure,
            None => Verdict::None,
        }
    }
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
        /// Actions the branches are spread over (`every_ms` apart), each
        /// signing and publishing its share: a flood spread over time.
        #[serde(default = "one_usize")]
        packs: usize,
    },
    /// Gossips entries whose signatures do not verify, and sends garbage bytes.
    InvalidSigner,
    /// Claims the heads it holds and never answers a range request.
    Withholder,
    /// Serves and relays entries without their payloads: all of them, or
    /// those whose id falls in `per_mille` thousandths (a pattern).
    Stripper {
        /// Thousandths of entries stripped.
        #[serde(default = "thousand")]
        per_mille: u32,
    },
    /// Holds what it syncs, claims it, and answers range requests its own
    /// way, `delay_ms` late: all of it, a fraction or the first `k` entries
    /// with `more = false`, one entry at a time, reversed, duplicated,
    /// nothing after claiming the head, or never.
    Server {
        /// How late each answer is sent.
        #[serde(default)]
        delay_ms: u64,
        /// What it answers.
        answer: AnswerKind,
        /// Entries kept by `first_k`.
        #[serde(default = "one_u32")]
        k: u32,
        /// Thousandths of the entries kept by `fraction`.
        #[serde(default = "half")]
        per_mille: u32,
    },
    /// Republishes `rate` old entries it holds each time it acts, each as
    /// itself, stripped of its payload and as an announcement (each a new
    /// gossip message id), and, with `stale_frontiers`, sends its peers
    /// frontiers of heads they passed long ago.
    Replayer {
        /// Entries replayed per action.
        #[serde(default = "default_replay_rate")]
        rate: usize,
        /// Stale frontiers too.
        #[serde(default)]
        stale_frontiers: bool,
    },
    /// Follows the protocol and writes nothing: the baseline that an
    /// adversary search compares each strategy with (the same swarm and
    /// links, every node honest).
    Honest,
    /// Sends frontiers claiming heads of `authors` random authors.
    HeadFlooder {
        /// Authors per frontier.
        #[serde(default = "default_flood_authors")]
        authors: usize,
    },
    /// Records with timestamps `skew_ms` off (negative: early, positive:
    /// late): propositions, or, with `targets`, contradictions and disputes
    /// of honest positions it holds, so that its clock meets theirs.
    Backdater {
        /// How far off.
        skew_ms: i64,
        /// Answer honest positions.
        #[serde(default)]
        targets: bool,
    },
    /// Records and gossips `burst` entries each time it acts, far over the rate limits.
    Spammer {
        /// Entries per action.
        #[serde(default = "default_burst")]
        burst: usize,
    },
    /// An agent not on the roster, recording and gossiping as if it were.
    Outsider,
    /// A Sybil group: one operator behind its `count` nodes, each holding
    /// `identities` keys on the roster, acting together: each time the group
    /// acts, one identity proposes, every other identity supports that
    /// proposal, and every identity disputes one honest position the
    /// group holds (the same one).
    Sybil {
        /// Keys per node.
        #[serde(default = "default_identities")]
        identities: usize,
    },
    /// An eclipse: the group's nodes are honest node `victim`'s only
    /// connections until `until_ms`, when it gets one honest peer; they
    /// claim what they hold, never answer a range request and relay no
    /// gossip.
    Eclipse {
        /// The honest node eclipsed.
        victim: usize,
        /// When it gets an honest peer, virtual ms.
        until_ms: u64,
    },
    /// A selective relay: forwards the gossip of some authors, and holds
    /// back that of the `per_mille` thousandths of authors (by their ids'
    /// hash), `delay_ms` late or, with 0, for good.
    SelectiveRelay {
        /// Thousandths of authors held back.
        #[serde(default = "half")]
        per_mille: u32,
        /// How late their gossip is relayed (0: dropped).
        #[serde(default)]
        delay_ms: u64,
    },
    /// A colluding equivocator and stripper: the group's first node forks
    /// its chain at `fork_at_seq` into `branches` entries, its only links
    /// are the group's other nodes, and these serve and relay its entries
    /// without their payloads. `count` 2 at least.
    ColludingForker {
        /// The seq it forks at.
        fork_at_seq: u64,
        /// Entries it signs there.
        #[serde(default = "two")]
        branches: usize,
    },
    /// A key thief (`protocol-spec/keys.md`): at `steal_ms` it copies an
    /// honest agent's current key (not its next key, kept apart by its
    /// owner); each time it acts it tries to rotate the chain to a key of
    /// its own (by that key and by the stolen key in turn, which every
    /// import refuses), then signs one entry of the victim's chain on a
    /// branch of its own (after the victim's tip or below it), until it has
    /// signed `forks` and tried two rotations at least. `revoke_ms`
    /// after the theft the owner revokes: a rotation signed by its
    /// pre-committed next key, after the last entry it wrote before the
    /// theft, and it writes under the new key from then on. Every honest
    /// agent's chain commits to a next key from its first entry. Each thief
    /// is one node of its own; `count` thieves steal from as many victims.
    ///
    /// With `both_keys` it copies the next key too ("Recovery: both keys
    /// lost"): its first action rotates the chain with the stolen next key
    /// (a valid rotation, stored everywhere) to a key of its own, its second
    /// rotates again to that key, then it signs its `forks` entries in
    /// turn on that branch with its own key and on branches of the stolen
    /// current key. The owner cannot revoke (the thief holds the same
    /// keys); instead, `revoke_ms` after the theft, the workspace's founder
    /// binds the victim to a fresh key after the owner's last entry before
    /// the theft (a roster `recover` event, written through the first
    /// honest node up that holds that entry and the founder's last), and
    /// the owner, once its own node's roster binds it (as
    /// `agora key take-over` requires), writes its recover entry there,
    /// signed by the fresh key, and writes on under it. The founder alone binds: the
    /// simulator derives the roster from the founder's chain, not from
    /// admins' votes.
    KeyThief {
        /// The victim, a scripted or generated agent's name (default: an
        /// honest agent drawn from the seed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        victim: Option<String>,
        /// When it steals, virtual ms (default: drawn from the seed within
        /// the first half of `duration_ms`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steal_ms: Option<u64>,
        /// How long after the theft the owner revokes (default: drawn from
        /// the seed within `duration_ms`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        revoke_ms: Option<u64>,
        /// Entries it signs on its branches, one per action.
        #[serde(default = "default_thief_forks")]
        forks: usize,
        /// It copies the next key too, and the roster's founder recovers
        /// the victim (above). Default false: the current key alone.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        both_keys: bool,
    },
}

fn default_thief_forks() -> usize {
    4
}

fn default_identities() -> usize {
    4
}

impl AdversaryKind {
    /// Its numbers within their bounds, the field named under `at`.
    pub fn validate_bounds(&self, at: &str) -> Result<(), String> {
        match *self {
            AdversaryKind::Equivocator { fork_at_seq, branches, packs } => {
                within(&format!("{at}.fork_at_seq"), fork_at_seq, 1, u64::from(u32::MAX))?;
                within(&format!("{at}.branches"), branches as u64, 2, BRANCHES_MAX)?;
                within(&format!("{at}.packs"), packs as u64, 1, branches as u64)
            }
            AdversaryKind::HeadFlooder { authors } => within(&format!("{at}.authors"), authors as u64, 1, FLOOD_AUTHORS_MAX),
            AdversaryKind::Backdater { skew_ms, .. } => within(&format!("{at}.skew_ms (either way)"), skew_ms.unsigned_abs(), 0, SKEW_MS_MAX),
            AdversaryKind::Spammer { burst } => within(&format!("{at}.burst"), burst as u64, 1, BURST_MAX),
            AdversaryKind::Stripper { per_mille } => within(&format!("{at}.per_mille"), u64::from(per_mille), 0, 1_000),
            AdversaryKind::Server { delay_ms, k, per_mille, .. } => {
                within(&format!("{at}.delay_ms"), delay_ms, 0, TIME_MS_MAX)?;
                within(&format!("{at}.k"), u64::from(k), 1, agora_sync::RESPONSE_ENTRIES_MAX as u64)?;
                within(&format!("{at}.per_mille"), u64::from(per_mille), 0, 1_000)
            }
            AdversaryKind::Replayer { rate, .. } => within(&format!("{at}.rate"), rate as u64, 1, BURST_MAX),
            AdversaryKind::Sybil { identities } => within(&format!("{at}.identities"), identities as u64, 1, IDENTITIES_MAX),
            AdversaryKind::Eclipse { until_ms, .. } => within(&format!("{at}.until_ms"), until_ms, 0, TIME_MS_MAX),
            AdversaryKind::SelectiveRelay { per_mille, delay_ms } => {
                within(&format!("{at}.per_mille"), u64::from(per_mille), 0, 1_000)?;
                within(&format!("{at}.delay_ms"), delay_ms, 0, TIME_MS_MAX)
            }
            AdversaryKind::ColludingForker { fork_at_seq, branches } => {
                within(&format!("{at}.fork_at_seq"), fork_at_seq, 1, u64::from(u32::MAX))?;
                within(&format!("{at}.branches"), branches as u64, 2, BRANCHES_MAX)
            }
            AdversaryKind::KeyThief { ref victim, steal_ms, revoke_ms, forks, .. } => {
                if let Some(v) = victim {
                    within(&format!("{at}.victim (bytes)"), v.len() as u64, 1, TEXT_BYTES_MAX)?;
                }
                within(&format!("{at}.steal_ms"), steal_ms.unwrap_or(0), 0, TIME_MS_MAX)?;
                within(&format!("{at}.revoke_ms"), revoke_ms.unwrap_or(0), 0, TIME_MS_MAX)?;
                within(&format!("{at}.forks"), forks as u64, 0, BRANCHES_MAX)
            }
            AdversaryKind::InvalidSigner | AdversaryKind::Withholder | AdversaryKind::Outsider | AdversaryKind::Honest => Ok(()),
        }
    }
}

fn two() -> usize {
    2
}

fn one_usize() -> usize {
    1
}

fn one_u32() -> u32 {
    1
}

fn half() -> u32 {
    500
}

fn thousand() -> u32 {
    1_000
}

fn default_replay_rate() -> usize {
    20
}

/// What a [`AdversaryKind::Server`] answers (see [`crate::net::Answer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// All of it (only late).
    Full,
    /// The first `per_mille` thousandths, `more = false`.
    Fraction,
    /// The first `k` entries, `more = false`.
    FirstK,
    /// One entry at a time.
    OneAtATime,
    /// Reversed.
    Reversed,
    /// Its first half, each entry twice.
    Duplicated,
    /// Nothing, `more = false`, after claiming the head.
    Empty,
    /// Never.
    Silent,
}

impl AdversaryKind {
    /// How its node behaves towards peers (honest unless it serves or
    /// relays its own way).
    pub fn behaviour(&self) -> crate::net::Behaviour {
        use crate::net::{Answer, Behaviour};
        match *self {
            AdversaryKind::Withholder => Behaviour::Withholder,
            AdversaryKind::Eclipse { .. } => Behaviour::Eclipser,
            AdversaryKind::SelectiveRelay { per_mille, delay_ms } => Behaviour::SelectiveRelay { per_mille, delay_ms },
            AdversaryKind::Stripper { per_mille } if per_mille >= 1_000 => Behaviour::Stripper,
            AdversaryKind::Stripper { per_mille } => Behaviour::StripSome { per_mille },
            AdversaryKind::Server { delay_ms, answer, k, per_mille } => Behaviour::Server {
                delay_ms,
                answer: match answer {
                    AnswerKind::Full => Answer::Full,
                    AnswerKind::Fraction => Answer::Fraction { per_mille },
                    AnswerKind::FirstK => Answer::FirstK { k },
                    AnswerKind::OneAtATime => Answer::OneAtATime,
                    AnswerKind::Reversed => Answer::Reversed,
                    AnswerKind::Duplicated => Answer::Duplicated,
                    AnswerKind::Empty => Answer::Empty,
                    AnswerKind::Silent => Answer::Silent,
                },
            },
            _ => Behaviour::Honest,
        }
    }

    /// Does it sign entries of its own (and so hold a key on the roster)?
    pub fn writes(&self) -> bool {
        matches!(
            self,
            AdversaryKind::Equivocator { .. }
                | AdversaryKind::InvalidSigner
                | AdversaryKind::Backdater { .. }
                | AdversaryKind::Spammer { .. }
                | AdversaryKind::Sybil { .. }
                | AdversaryKind::ColludingForker { .. }
        )
    }
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

// The bounds of a scenario's fields: a file is refused, naming the field,
// rather than grow a run without bound. Generous for every shipped scenario
// and sweep; the products (agents, events) are bounded as well as each factor.

/// Any time in a scenario (a move, an episode, a duration), ms: 100 days.
pub const TIME_MS_MAX: u64 = 100 * 24 * 3_600_000;
/// Honest nodes.
pub const NODES_MAX: u64 = 100_000;
/// Generated agents per honest node.
pub const AGENTS_PER_NODE_MAX: u64 = 10_000;
/// Generated agents in all.
pub const AGENTS_MAX: u64 = 1_000_000;
/// Generated moves per agent.
pub const EVENTS_PER_AGENT_MAX: u64 = 100_000;
/// Generated moves in all.
pub const EVENTS_MAX: u64 = 10_000_000;
/// Topics generated agents argue about.
pub const TOPICS_MAX: u64 = 1_000_000;
/// A generated move's weight (the sum of seven stays far within `u32`).
pub const WEIGHT_MAX: u64 = 1_000_000;
/// Links per node of a random topology.
pub const DEGREE_MAX: u64 = 1_024;
/// Link overrides and expectations.
pub const LIST_MAX: u64 = 100_000;
/// Partitions, and churn episodes.
pub const EPISODES_MAX: u64 = 10_000;
/// Scripted agents.
pub const SCRIPTED_AGENTS_MAX: u64 = 10_000;
/// Moves of one scripted agent.
pub const MOVES_PER_AGENT_MAX: u64 = 100_000;
/// A move's text, bytes (the payload of one entry).
pub const MOVE_TEXT_BYTES_MAX: u64 = 64 << 10;
/// A synthesis's or refinement's sources.
pub const SOURCES_MAX: u64 = 1_024;
/// A name or a label, bytes.
pub const TEXT_BYTES_MAX: u64 = 256;
/// A scenario's description, bytes.
pub const DESCRIPTION_BYTES_MAX: u64 = 64 << 10;
/// Adversary nodes in all (and per entry).
pub const ADVERSARY_NODES_MAX: u64 = 10_000;
/// Branches of one equivocation.
pub const BRANCHES_MAX: u64 = 100_000;
/// Authors per frontier of a head flooder.
pub const FLOOD_AUTHORS_MAX: u64 = 100_000;
/// Keys per node of a Sybil group.
pub const IDENTITIES_MAX: u64 = 1_000;
/// Entries per action of a spammer.
pub const BURST_MAX: u64 = 100_000;
/// A backdater's skew either way, ms: ten years.
pub const SKEW_MS_MAX: u64 = 10 * 365 * 24 * 3_600_000;
/// A node clock's drift either way, parts per million (10%: far beyond any
/// quartz, as a broken clock's).
pub const DRIFT_PPM_MAX: u64 = 100_000;
/// A range request's seqs (the wire's own bound is far above).
pub const RANGE_LIMIT_MAX: u64 = 100_000;
/// Requests in flight at a node.
pub const IN_FLIGHT_MAX: u64 = 4_096;
/// A node's memory bound, bytes: 1 TiB.
pub const MEMORY_BYTES_MAX: u64 = 1 << 40;
/// A full mesh of more nodes than this is refused (use a random topology).
pub const FULL_MESH_MAX: usize = 256;
/// A latency's bounds: the link model's own.
pub use crate::model::{LATENCY_MS_MAX, SIGMA_MAX};

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
    /// Generated agents homed on honest node `node`.
    pub fn agents_on(&self, node: usize) -> usize {
        self.agents.as_ref().map_or(self.agents_per_node, |list| list.get(node).copied().unwrap_or(0))
    }

    /// Is `name` a generated agent's (`agent-<node>-<j>`, on an honest node
    /// that has that many)?
    pub fn is_generated_agent(&self, name: &str) -> bool {
        name.strip_prefix("agent-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(n, j)| Some((n.parse::<usize>().ok()?, j.parse::<usize>().ok()?)))
            .is_some_and(|(n, j)| n < self.nodes && j < self.agents_on(n) && format!("agent-{n}-{j}") == name)
    }

    /// Generated agents in all.
    pub fn generated_agents(&self) -> usize {
        self.agents.as_ref().map_or(self.agents_per_node.saturating_mul(self.nodes), |list| list.iter().sum())
    }

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
        self.validate_bounds()?;
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
        if self.topology == Topology::Full && self.nodes > FULL_MESH_MAX {
            return Err(format!("topology: a full mesh of {} nodes (at most {}; use a random topology)", self.nodes, FULL_MESH_MAX));
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
        for a in &self.scripted {
            for (m, mv) in a.moves.iter().enumerate() {
                let what = format!("scripted agent {}: move {m} (at {} ms)", a.name, mv.at_ms);
                if mv.time_ms.is_some() && mv.skew_ms.is_some() {
                    return Err(format!("{what}: time_ms and skew_ms both given (one timestamp)"));
                }
                if mv.fork && !a.adversary {
                    return Err(format!("{what}: fork is for adversaries (give the agent adversary = true)"));
                }
                if mv.fork && m == 0 {
                    return Err(format!("{what}: fork needs an earlier move of the agent to fork beside"));
                }
                if mv.fork && a.moves[m - 1].at_ms > mv.at_ms {
                    return Err(format!("{what}: fork comes before the move it forks beside"));
                }
                if (mv.kind == MoveKind::Judgment) != mv.success.is_some() {
                    return Err(format!("{what}: success is the verdict of a judgment, and a judgment needs one"));
                }
            }
        }
        for (a, m) in all {
            if m.kind == MoveKind::Judgment
                && let Some(t) = &m.target
                && labels.get(t.as_str()).is_some_and(|k| *k != MoveKind::Trajectory)
            {
                return Err(format!("scripted agent {}: the judgment at {} ms judges {t:?}, not a trajectory", a.name, m.at_ms));
            }
            for r in m.target.iter().chain(&m.sources).chain(&m.up_to) {
                if !labels.contains_key(r.as_str()) {
                    return Err(format!("scripted agent {}: move at {} ms refers to {r:?}, not a label of an earlier move", a.name, m.at_ms));
                }
            }
            let needs_target = matches!(
                m.kind,
                MoveKind::Support | MoveKind::Contradict | MoveKind::Refine | MoveKind::Resolve | MoveKind::Dispute | MoveKind::Withdraw | MoveKind::Judgment
            );
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
        for (i, r) in self.roster.iter().enumerate() {
            let what = format!("roster[{i}]");
            if r.admit.is_some() == r.remove.is_some() {
                return Err(format!("{what}: give one of admit and remove"));
            }
            if r.cut_off.is_some() && r.admit.is_some() {
                return Err(format!("{what}.cut_off: a cut-off is a removal's"));
            }
            let name = r.agent();
            if !self.is_generated_agent(name) && !names.contains(name) {
                return Err(format!("{what}: {name:?} is neither a scripted agent nor a generated one (agent-<node>-<j>)"));
            }
        }
        if self.roster.windows(2).any(|w| w[1].at_ms < w[0].at_ms) {
            return Err("roster: changes out of time order".into());
        }
        for (i, r) in self.redactions.iter().enumerate() {
            let what = format!("redactions[{i}]");
            node(&format!("{what}.node"), r.node)?;
            match (&r.label, &r.agent) {
                (Some(label), None) => {
                    if !labels.contains_key(label.as_str()) {
                        return Err(format!("{what}.label: {label:?} is not the label of a scripted move"));
                    }
                }
                (None, Some(name)) => {
                    if !self.is_generated_agent(name) && !names.contains(name.as_str()) {
                        return Err(format!("{what}.agent: {name:?} is neither a scripted agent nor a generated one (agent-<node>-<j>)"));
                    }
                }
                _ => return Err(format!("{what}: give one of label and agent")),
            }
        }
        let mut clocked = BTreeSet::new();
        for (i, c) in self.clocks.iter().enumerate() {
            node(&format!("clocks[{i}].node"), c.node)?;
            if !clocked.insert(c.node) {
                return Err(format!("clocks[{i}].node: node {} has a clock already", c.node));
            }
        }
        for (i, a) in self.adversaries.iter().enumerate() {
            if a.every_ms == 0 {
                return Err(format!("adversaries[{i}]: every_ms must be positive"));
            }
            if let AdversaryKind::Equivocator { fork_at_seq, branches, .. } = a.kind
                && (fork_at_seq == 0 || !(2..=100_000).contains(&branches))
            {
                return Err(format!("adversaries[{i}]: an equivocator forks at a seq ≥ 1 into 2 to 100,000 branches"));
            }
            if let AdversaryKind::ColludingForker { .. } = a.kind
                && a.count < 2
            {
                return Err(format!("adversaries[{i}].count: a colluding forker is 2 nodes at least (a forker and its strippers)"));
            }
            if let AdversaryKind::Eclipse { victim, .. } = a.kind {
                node(&format!("adversaries[{i}].victim"), victim)?;
            }
            if let AdversaryKind::KeyThief { victim: Some(name), .. } = &a.kind {
                let scripted = self.scripted.iter().find(|s| s.name == *name);
                if scripted.is_some_and(|s| s.adversary) || (scripted.is_none() && !self.is_generated_agent(name)) {
                    return Err(format!("adversaries[{i}].victim: {name:?} is neither an honest scripted agent nor a generated one (agent-<node>-<j>)"));
                }
            }
        }
        Ok(())
    }

    /// Every field within its bound (see the constants of this module):
    /// the first one out of bounds is named, with its value and the bound.
    fn validate_bounds(&self) -> Result<(), String> {
        let time = |field: &str, ms: u64| within(field, ms, 0, TIME_MS_MAX);
        if let Some((field, value, least, most)) = self.cost.as_ref().and_then(crate::cost::Cost::out_of_bounds) {
            within(field, value, least, most)?;
        }
        within("name (bytes)", self.name.len() as u64, 1, TEXT_BYTES_MAX)?;
        within("description (bytes)", self.description.len() as u64, 0, DESCRIPTION_BYTES_MAX)?;
        within("nodes", self.nodes as u64, 1, NODES_MAX)?;
        within("agents_per_node", self.agents_per_node as u64, 0, AGENTS_PER_NODE_MAX)?;
        within("agents_per_node × nodes", (self.agents_per_node as u64).saturating_mul(self.nodes as u64), 0, AGENTS_MAX)?;
        if let Some(list) = &self.agents {
            if self.agents_per_node != 0 {
                return Err("agents: agents and agents_per_node both given (give one)".into());
            }
            within("agents (count)", list.len() as u64, self.nodes as u64, self.nodes as u64)?;
            for (i, n) in list.iter().enumerate() {
                within(&format!("agents[{i}]"), *n as u64, 0, AGENTS_PER_NODE_MAX)?;
            }
            within("agents (sum)", list.iter().map(|n| *n as u64).sum(), 0, AGENTS_MAX)?;
        }
        if let Topology::Random { degree } = self.topology {
            within("topology.degree", degree as u64, 2, DEGREE_MAX)?;
        }
        self.network.validate_bounds("network")?;
        within("links (count)", self.links.len() as u64, 0, LIST_MAX)?;
        for (i, l) in self.links.iter().enumerate() {
            l.model.validate_bounds(&format!("links[{i}].model"))?;
        }
        within("partitions (count)", self.partitions.len() as u64, 0, EPISODES_MAX)?;
        for (i, p) in self.partitions.iter().enumerate() {
            time(&format!("partitions[{i}].at_ms"), p.at_ms)?;
            time(&format!("partitions[{i}].heal_ms"), p.heal_ms)?;
            within(&format!("partitions[{i}].groups (count)"), p.groups.len() as u64, 0, self.nodes as u64)?;
            let members: usize = p.groups.iter().map(Vec::len).sum();
            within(&format!("partitions[{i}].groups (members)"), members as u64, 0, self.nodes as u64)?;
        }
        within("churn (count)", self.churn.len() as u64, 0, EPISODES_MAX)?;
        for (i, c) in self.churn.iter().enumerate() {
            for (field, t) in [("join_ms", c.join_ms), ("crash_ms", c.crash_ms), ("restart_ms", c.restart_ms), ("leave_ms", c.leave_ms)] {
                if let Some(t) = t {
                    time(&format!("churn[{i}].{field}"), t)?;
                }
            }
        }
        let g = &self.generated;
        within("generated.events_per_agent", g.events_per_agent as u64, 0, EVENTS_PER_AGENT_MAX)?;
        let agents = self.generated_agents() as u64;
        within("generated.events_per_agent × agents", (g.events_per_agent as u64).saturating_mul(agents), 0, EVENTS_MAX)?;
        within("generated.topics", g.topics as u64, 1, TOPICS_MAX)?;
        g.interval.validate_bounds("generated.interval")?;
        let w = &g.weights;
        for (field, v) in [
            ("propose", w.propose),
            ("support", w.support),
            ("contradict", w.contradict),
            ("refine", w.refine),
            ("synthesize", w.synthesize),
            ("accept", w.accept),
            ("dispute", w.dispute),
        ] {
            within(&format!("generated.weights.{field}"), u64::from(v), 0, WEIGHT_MAX)?;
        }
        within("scripted (count)", self.scripted.len() as u64, 0, SCRIPTED_AGENTS_MAX)?;
        for (i, a) in self.scripted.iter().enumerate() {
            within(&format!("scripted[{i}].name (bytes)"), a.name.len() as u64, 1, TEXT_BYTES_MAX)?;
            within(&format!("scripted[{i}].moves (count)"), a.moves.len() as u64, 0, MOVES_PER_AGENT_MAX)?;
            for (m, mv) in a.moves.iter().enumerate() {
                let what = format!("scripted[{i}].moves[{m}]");
                time(&format!("{what}.at_ms"), mv.at_ms)?;
                within(&format!("{what}.text (bytes)"), mv.text.len() as u64, 0, MOVE_TEXT_BYTES_MAX)?;
                within(&format!("{what}.sources (count)"), mv.sources.len() as u64, 0, SOURCES_MAX)?;
                if let Some(t) = mv.time_ms {
                    time(&format!("{what}.time_ms"), t)?;
                }
                if let Some(skew) = mv.skew_ms {
                    within(&format!("{what}.skew_ms (either way)"), skew.unsigned_abs(), 0, SKEW_MS_MAX)?;
                }
                for label in mv.label.iter().chain(&mv.target).chain(&mv.up_to).chain(&mv.sources) {
                    within(&format!("{what}: label {label:?} (bytes)"), label.len() as u64, 1, TEXT_BYTES_MAX)?;
                }
            }
        }
        within("adversaries (count)", self.adversaries.len() as u64, 0, ADVERSARY_NODES_MAX)?;
        let mut adversary_nodes = 0u64;
        for (i, a) in self.adversaries.iter().enumerate() {
            within(&format!("adversaries[{i}].count"), a.count as u64, 1, ADVERSARY_NODES_MAX)?;
            adversary_nodes = adversary_nodes.saturating_add(a.count as u64);
            within(&format!("adversaries[{i}].every_ms"), a.every_ms, 1, TIME_MS_MAX)?;
            a.kind.validate_bounds(&format!("adversaries[{i}]"))?;
        }
        within("adversaries (nodes, the sum of their counts)", adversary_nodes, 0, ADVERSARY_NODES_MAX)?;
        within("expect (count)", self.expect.len() as u64, 0, LIST_MAX)?;
        within("clocks (count)", self.clocks.len() as u64, 0, self.nodes as u64)?;
        within("roster (count)", self.roster.len() as u64, 0, EPISODES_MAX)?;
        for (i, r) in self.roster.iter().enumerate() {
            time(&format!("roster[{i}].at_ms"), r.at_ms)?;
            within(&format!("roster[{i}]: the agent's name (bytes)"), r.agent().len() as u64, 1, TEXT_BYTES_MAX)?;
            if let Some(c) = r.cut_off {
                within(&format!("roster[{i}].cut_off"), c, 0, u64::from(u32::MAX))?;
            }
        }
        within("redactions (count)", self.redactions.len() as u64, 0, EPISODES_MAX)?;
        for (i, r) in self.redactions.iter().enumerate() {
            time(&format!("redactions[{i}].at_ms"), r.at_ms)?;
            for name in r.label.iter().chain(&r.agent) {
                within(&format!("redactions[{i}]: the name (bytes)"), name.len() as u64, 1, TEXT_BYTES_MAX)?;
            }
        }
        for (i, c) in self.clocks.iter().enumerate() {
            within(&format!("clocks[{i}].skew_ms (either way)"), c.skew_ms.unsigned_abs(), 0, SKEW_MS_MAX)?;
            within(&format!("clocks[{i}].drift_ppm (either way)"), c.drift_ppm.unsigned_abs(), 0, DRIFT_PPM_MAX)?;
        }
        time("duration_ms", self.duration_ms)?;
        time("settle_ms", self.settle_ms)?;
        let r = &self.replicator;
        if let Some(v) = r.range_limit {
            within("replicator.range_limit", u64::from(v), 1, RANGE_LIMIT_MAX)?;
        }
        if let Some(v) = r.request_timeout_ms {
            within("replicator.request_timeout_ms", v, 1, TIME_MS_MAX)?;
        }
        if let Some(v) = r.in_flight_max {
            within("replicator.in_flight_max", v as u64, 1, IN_FLIGHT_MAX)?;
        }
        if let Some(v) = r.frontier_refresh_ms {
            within("replicator.frontier_refresh_ms", v, 0, TIME_MS_MAX)?;
        }
        within("bounds.node_memory_bytes", self.bounds.node_memory_bytes, 1, MEMORY_BYTES_MAX)?;
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
            if e.status.is_none()
                && e.superseded_by.is_none()
                && e.settled.is_none()
                && e.disputed_by.is_none()
                && e.accepted_by.is_none()
                && e.judged.is_none()
            {
                return Err(format!("{what}: {:?} expects nothing (give status, superseded_by, settled, disputed_by, accepted_by or judged)", e.label));
            }
            if e.judged.is_some() && labels.get(e.label.as_str()) != Some(&MoveKind::Trajectory) {
                return Err(format!("{what}.judged: {:?} is not a trajectory", e.label));
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
