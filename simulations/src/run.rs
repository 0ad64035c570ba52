//! The runner: builds the swarm a scenario describes, plays it on virtual
//! time (agents' moves, adversaries' actions, partitions, churn, re-dials),
//! lets it settle, checks the invariants (among them the scenario's
//! expectations of the merged view) and writes the report.
//!
//! Honest agents record through their home node's store and the node
//! publishes as the real node does ([`Net::append`]); adversaries act through
//! nodes of their own. Everything random comes from the run's seed: the
//! agents' keys, their moves and delays, the topology's random links, the
//! network's latencies and losses.

use crate::net::Net;
use crate::net::Spread;
use crate::report::{Ban, ForkDetection, InvariantResult, MoveSpread, NodeFigures, Report, RunEvent, RunEventKind, Sample, Swarm, Written};
use crate::scenario::{AdversaryKind, Clock, Expectation, MoveKind, Scenario, Topology, Verdict};
use agora_core::entry::next_header;
use agora_core::limits::FUTURE_SKEW_MAX_MS;
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentId, AgentKey, EntryId, KeyEvent, SignedEntry};
use agora_graph::Event;
use agora_graph::event::Confidence;
use agora_merge::{Merge, MergeEntry, MergeEvent, MergedView};
use agora_roster::RosterEvent;
use agora_sync::harness::{Contents, MemStore};
use agora_sync::{Gossip, Head, Message, WireEntry, WireRequest, WorkspaceId};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// How often the runner re-dials lost links (as a node's bootstrap does), ms.
const REDIAL_EVERY_MS: u64 = 1_000;

/// How often convergence is checked while the swarm settles, ms.
const SETTLE_CHECK_MS: u64 = 50;

/// Batch merges a checkpoint of the live views computes at most, beyond
/// those it computed before for the same store contents (the largest groups
/// of nodes first); the last checkpoint computes every one. What bounds the
/// check's cost in a swarm of many nodes that hold different entries.
const BATCH_VIEWS_PER_CHECKPOINT: usize = 4;

/// Samples in a report's series.
const SAMPLES: u64 = 40;

/// How often an owner whose keys were both stolen looks again whether its
/// node's roster binds the key the founder granted it, ms.
const TAKE_OVER_RETRY_MS: u64 = 100;

/// What the runner knows of an agent.
struct Agent {
    /// The key that signs for it now.
    key: Rc<AgentKey>,
    /// The seed of its inception key (what a key thief copies).
    seed: [u8; 32],
    /// The seed of the next key its chain commits to, when it commits to
    /// one (every agent's, in a run with a key thief): kept apart by its
    /// owner, who revokes with it.
    next_seed: Option<[u8; 32]>,
    /// Its chain may be forked by a thief of its key: it writes after its
    /// own last entry, never after the highest tip its node holds.
    own_branch: bool,
    /// It revoked a stolen key, or took over under the key a recovery
    /// granted it: its entries from then on must count everywhere.
    revoked: bool,
    name: String,
    node: usize,
    /// Generated moves left.
    moves_left: usize,
    /// Scripted moves, if any.
    script: Option<usize>,
    /// A scripted adversary: its entries are no honest ones.
    adversary: bool,
    /// The entry its last move wrote (what a fork forks beside).
    last: Option<SignedEntry>,
    /// Off the roster until then (virtual ms since the run's start): it
    /// makes no move before.
    admitted_at: Option<u64>,
    /// Removed from the roster: what it writes from then on is no honest entry.
    removed: bool,
    /// A generated agent whose move fell due while its node was down: it
    /// acts again once the node is back.
    stalled: bool,
}

/// What an honest move created, for later moves to refer to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Made {
    /// A position (a proposition, a refinement, a synthesis).
    Position,
    /// A contradiction of the target.
    Contradiction(EntryId),
    /// A dispute.
    Dispute,
    /// Anything else.
    Other,
}

struct Created {
    id: EntryId,
    author: AgentId,
    made: Made,
}

/// An adversary on its own node.
struct Adversary {
    kind: AdversaryKind,
    every_ms: u64,
    node: usize,
    key: Rc<AgentKey>,
    /// Has an equivocator forked yet?
    forked: bool,
    /// An equivocator's predecessor of its branches, once it forked.
    fork_prev: Option<SignedEntry>,
    /// Branches an equivocator signed so far.
    branches_signed: usize,
    /// The scenario's adversary entry it is one of (its group).
    group: usize,
    /// Which of the group's `count` nodes it is.
    k: usize,
    /// A Sybil's keys (its identities).
    identities: Vec<Rc<AgentKey>>,
    /// A key thief's theft, once it stole.
    theft: Option<Theft>,
    /// A key thief's planned theft and revocation, virtual ms since the start.
    thief_times: Option<(u64, u64)>,
}

/// A key thief's loot and what it did with it.
struct Theft {
    /// The agent robbed.
    victim: usize,
    /// The victim's key the thief copied (the current one).
    stolen: Rc<AgentKey>,
    /// The victim's next key, when the thief copied both.
    stolen_next: Option<Rc<AgentKey>>,
    /// The victim's last entry before the theft: what its owner vouches for.
    boundary: SignedEntry,
    /// Rotations it tried so far (with both keys: made, and stored).
    rotations_tried: usize,
    /// Entries it signed on branches of its own.
    forks_signed: usize,
    /// With both keys: the key of its own its rotations installed, and the
    /// top of the branch they made.
    own: Option<(Rc<AgentKey>, SignedEntry)>,
    /// With both keys: the recovery fell due (and is not turned off).
    recovering: bool,
    /// With both keys: the seed of the key the founder's recovery granted
    /// the owner, once it bound it.
    granted: Option<[u8; 32]>,
    /// With both keys: the owner wrote its recover entry.
    taken_over: bool,
}

/// What key thieves did, and their victims' owners, for the invariants.
#[derive(Default)]
struct Thefts {
    /// Every entry a thief signed with a stolen key.
    thief_entries: BTreeSet<EntryId>,
    /// Every rotation a thief tried (never stored), with its payload.
    rotations: Vec<(SignedEntry, Vec<u8>)>,
    /// Every rotation a thief of both keys made with the stolen next key
    /// (valid, stored): (its author, its id).
    stolen_rotations: Vec<(AgentId, EntryId)>,
    /// Every entry an owner wrote from its revocation or recovery on (the
    /// revocation or recover entry included).
    owner_entries: Vec<EntryId>,
    /// Thefts whose owner never revoked: (thief node, victim's name).
    unrevoked: Vec<(usize, String)>,
}

/// Something that happens at a time.
#[derive(Clone, Debug)]
enum Action {
    Generated(usize),
    Scripted(usize, usize),
    PartitionOpen(usize),
    PartitionHeal,
    Join(usize),
    Crash(usize),
    Restart(usize),
    Leave(usize),
    Adversary(usize),
    Roster(usize),
    /// Redaction `k` of the scenario.
    Redact(usize),
    /// An eclipse ends: its victim gets one honest peer.
    EclipseEnds(usize),
    /// Key thief `a` steals its victim's current key.
    Steal(usize),
    /// The owner of the key thief `a` stole revokes it (or, with both keys
    /// stolen, the founder recovers it).
    Revoke(usize),
    /// The owner whose keys thief `a` stole both writes its recover entry,
    /// once its node's roster binds it.
    TakeOver(usize),
    Redial,
    Sample,
}

/// A scenario being played.
pub struct Run<'s> {
    scenario: &'s Scenario,
    seed: u64,
    /// The network and its nodes.
    pub net: Net,
    rng: Xorshift64,
    /// The adversaries' own draws: what they do changes nothing the honest
    /// agents draw, so a run and its honest baseline have the same moves.
    adversary_rng: Xorshift64,
    agents: Vec<Agent>,
    adversaries: Vec<Adversary>,
    admitted: BTreeMap<AgentId, Option<u64>>,
    /// Links the nodes keep dialling.
    wanted: BTreeSet<(u64, u64)>,
    /// Nodes that left for good.
    left: BTreeSet<usize>,
    schedule: BTreeMap<(u64, u64), Action>,
    scheduled: u64,
    created: Vec<Created>,
    /// Indexes into `created` of positions.
    positions: Vec<usize>,
    /// With topic-bound targets, indexes into `created` of the positions
    /// generated on each topic.
    topic_positions: BTreeMap<usize, Vec<usize>>,
    /// The topic of the generated move being made, when targets are
    /// topic-bound.
    topic: Option<usize>,
    labels: BTreeMap<String, EntryId>,
    /// Payloads redacted: by which node, of which entry.
    redacted: Vec<(usize, EntryId)>,
    honest_ids: Vec<EntryId>,
    written: Written,
    /// Forked positions written by equivocators.
    forked: BTreeMap<(AgentId, u64), u64>,
    series: Vec<Sample>,
    activity_end_ms: u64,
    last_heal_ms: u64,
    /// The first checkpoint at which the honest nodes' live views broke
    /// the replay principle ([`Run::check_views`]).
    view_break: Option<String>,
    /// The batch view hash of each store content met at a checkpoint.
    batch_hashes: BTreeMap<Contents, Result<[u8; 32], String>>,
    /// Checkpoints at which the live views were compared.
    view_checkpoints: u64,
    /// Is each node's memory measured by the allocator ([`crate::heap`])?
    /// Else it is estimated.
    metered: bool,
    /// Each node's highest memory at a checkpoint, bytes.
    peak_memory: Vec<u64>,
    /// Each honest node's clock, when the scenario sets it off.
    clocks: Vec<Option<Clock>>,
    /// The workspace's founder, when the scenario changes the roster or
    /// has a thief of both keys (else the founder never writes, and has no
    /// key).
    founder: Option<Rc<AgentKey>>,
    /// Agents the founder's chain admitted (or admitted and removed).
    founder_admitted: BTreeSet<AgentId>,
    /// The founder's last entry: it writes only through a node that holds
    /// it ([`Run::founder_node`]).
    founder_last: Option<EntryId>,
    /// What key thieves and their victims' owners did.
    thefts: Thefts,
    /// The founder never recovers a victim of a thief of both keys, nor does
    /// its owner take over ([`Run::without_recovery`]).
    recovery_off: bool,
}

/// How many valid signatures a run remembers ([`agora_core::verify::remember_verified`]):
/// far more than a swarm has in flight at once (an entry reaches every node
/// within seconds), and every entry of the scale run, so that the end's
/// check of everything stored answers from memory too; about 13 MiB.
const VERIFIED_REMEMBERED: usize = 1 << 17;

fn key_from(label: &str) -> Rc<AgentKey> {
    Rc::new(AgentKey::from_seed(agora_core::sha256(label.as_bytes())))
}

/// An honest agent's key from its label: its seed, the key, and, when
/// `commits`, the seed of the next key its chain commits to from its first
/// entry (`protocol-spec/keys.md`).
fn agent_key(label: &str, commits: bool) -> (Rc<AgentKey>, [u8; 32], Option<[u8; 32]>) {
    let seed = agora_core::sha256(label.as_bytes());
    let key = AgentKey::from_seed(seed);
    if !commits {
        return (Rc::new(key), seed, None);
    }
    let next_seed = agora_core::sha256(&seed);
    let commitment = agora_core::key_commitment(&AgentKey::from_seed(next_seed).public_key());
    (Rc::new(key.committing_to(commitment)), seed, Some(next_seed))
}

impl<'s> Run<'s> {
    /// Build the swarm of `scenario` with `seed`: nodes, agents, roster,
    /// links and the schedule, at virtual time 0 + the network's start.
    pub fn new(scenario: &'s Scenario, seed: u64) -> Self {
        // Every node verifies every entry it receives, through the
        // replicator; the same signed entry's check is answered from memory
        // after the first node's (the same answer, without its CPU: the time
        // a check takes is the cost model's). Allocated before metering, and
        // never again, so no node is charged for it.
        agora_core::verify::remember_verified(VERIFIED_REMEMBERED);
        let metered = crate::heap::start();
        let honest = scenario.nodes;
        let adversary_nodes: usize = scenario.adversaries.iter().map(|a| a.count).sum();
        let total = honest + adversary_nodes;
        let mut net = Net::with_seed(total, scenario.replicator.config(), seed ^ 0x005e_ed0f_a60a);
        net.honest_nodes = scenario.nodes;
        net.live_views = true;
        net.model = scenario.network.clone();
        net.set_cost(scenario.cost.clone());
        for l in &scenario.links {
            net.link_models.insert((l.a.min(l.b) as u64, l.a.max(l.b) as u64), l.model.clone());
        }
        let mut rng = Xorshift64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut agents = Vec::new();
        // With a key thief about, every agent's chain commits to a next key.
        let commits = scenario.adversaries.iter().any(|a| matches!(a.kind, AdversaryKind::KeyThief { .. }));
        for node in 0..honest {
            for j in 0..scenario.agents_on(node) {
                let name = format!("agent-{node}-{j}");
                let (key, key_seed, next_seed) = agent_key(&format!("agora-sim {seed} {name}"), commits);
                agents.push(Agent {
                    key,
                    seed: key_seed,
                    next_seed,
                    own_branch: false,
                    revoked: false,
                    name,
                    node,
                    moves_left: scenario.generated.events_per_agent,
                    script: None,
                    adversary: false,
                    last: None,
                    admitted_at: None,
                    removed: false,
                    stalled: false,
                });
            }
        }
        for (i, s) in scenario.scripted.iter().enumerate() {
            let (key, key_seed, next_seed) = agent_key(&format!("agora-sim scripted {}", s.name), commits);
            agents.push(Agent {
                key,
                seed: key_seed,
                next_seed,
                own_branch: false,
                revoked: false,
                name: s.name.clone(),
                node: s.node,
                moves_left: 0,
                script: Some(i),
                adversary: s.adversary,
                last: None,
                admitted_at: None,
                removed: false,
                stalled: false,
            });
        }
        // An agent whose first roster change admits it is off the roster until then.
        for a in &mut agents {
            if let Some(first) = scenario.roster.iter().find(|r| r.agent() == a.name)
                && first.admit.is_some()
            {
                a.admitted_at = Some(first.at_ms);
            }
        }
        let recovers = scenario.adversaries.iter().any(|a| matches!(a.kind, AdversaryKind::KeyThief { both_keys: true, .. }));
        let founder = (!scenario.roster.is_empty() || recovers).then(|| key_from(&format!("agora-sim {seed} founder")));
        if let Some(f) = &founder {
            net.founder = f.agent_id();
            let workspace = WorkspaceId::new(&net.founder, "sim");
            net.nodes.iter_mut().for_each(|n| n.workspace = workspace);
        }
        let mut adversaries = Vec::new();
        let mut admitted: BTreeMap<AgentId, Option<u64>> = agents.iter().filter(|a| a.admitted_at.is_none()).map(|a| (a.key.agent_id(), None)).collect();
        if let Some(f) = &founder {
            admitted.insert(f.agent_id(), None);
        }
        for (group, a) in scenario.adversaries.iter().enumerate() {
            let group_first = honest + adversaries.len();
            for k in 0..a.count {
                let node = honest + adversaries.len();
                let key = key_from(&format!("agora-sim {seed} adversary {node} {k}"));
                net.nodes[node].behaviour = a.kind.behaviour();
                if a.kind.writes() {
                    admitted.insert(key.agent_id(), None);
                }
                let identities: Vec<Rc<AgentKey>> = match a.kind {
                    AdversaryKind::Sybil { identities } => (0..identities).map(|j| key_from(&format!("agora-sim {seed} sybil {node} {j}"))).collect(),
                    _ => Vec::new(),
                };
                for key in &identities {
                    admitted.insert(key.agent_id(), None);
                }
                if let AdversaryKind::ColludingForker { .. } = a.kind
                    && k > 0
                {
                    // Strips the entries of the group's forker (its first node).
                    let forker: &Adversary = &adversaries[group_first - honest];
                    net.nodes[node].behaviour = crate::net::Behaviour::StripAuthor { author: forker.key.agent_id() };
                }
                adversaries.push(Adversary {
                    kind: a.kind.clone(),
                    every_ms: a.every_ms,
                    node,
                    key,
                    forked: false,
                    fork_prev: None,
                    branches_signed: 0,
                    group,
                    k,
                    identities,
                    theft: None,
                    thief_times: None,
                });
            }
        }
        let now = net.now;
        for n in &mut net.nodes {
            n.rep.set_admitted(Some(admitted.clone()), now);
        }
        net.members_from_start = admitted.keys().copied().collect();
        // Links: the honest topology, and each adversary's node to a few honest nodes.
        let mut wanted = BTreeSet::new();
        let mut want = |a: usize, b: usize| {
            if a != b {
                wanted.insert((a.min(b) as u64, a.max(b) as u64));
            }
        };
        match scenario.topology {
            Topology::Full => (0..honest).for_each(|a| (a + 1..honest).for_each(|b| want(a, b))),
            Topology::Ring => (0..honest).for_each(|a| want(a, (a + 1) % honest)),
            Topology::Random { degree } => {
                for a in 0..honest {
                    want(a, (a + 1) % honest);
                    for _ in 2..degree {
                        want(a, rng.below(honest));
                    }
                }
            }
        }
        for adv in &adversaries {
            let dials = if scenario.topology == Topology::Full { honest } else { 3.min(honest) };
            let first = rng.below(honest);
            match adv.kind {
                // The forker's only links are its strippers.
                AdversaryKind::ColludingForker { .. } if adv.k == 0 => {
                    adversaries.iter().filter(|o| o.group == adv.group && o.k > 0).for_each(|o| want(adv.node, o.node));
                }
                // The victim, and one other honest node to learn from.
                AdversaryKind::Eclipse { victim, .. } => {
                    want(adv.node, victim);
                    want(adv.node, if first == victim { (first + 1) % honest } else { first });
                }
                _ => (0..dials).for_each(|k| want(adv.node, (first + k) % honest)),
            }
        }
        // An eclipsed node's honest links wait for the eclipse's end.
        for adv in &adversaries {
            if let AdversaryKind::Eclipse { victim, .. } = adv.kind {
                wanted.retain(|&(a, b)| !((a as usize == victim && (b as usize) < honest) || (b as usize == victim && (a as usize) < honest)));
            }
        }
        let mut clocks = vec![None; honest];
        for c in &scenario.clocks {
            clocks[c.node] = Some(c.clone());
        }
        let mut run = Run {
            founder_admitted: BTreeSet::new(),
            founder_last: None,
            founder,
            clocks,
            scenario,
            seed,
            net,
            rng,
            adversary_rng: Xorshift64(seed.wrapping_mul(0xd6e8_feb8_6659_fd93) | 1),
            agents,
            adversaries,
            admitted,
            wanted,
            left: BTreeSet::new(),
            schedule: BTreeMap::new(),
            scheduled: 0,
            created: Vec::new(),
            positions: Vec::new(),
            topic_positions: BTreeMap::new(),
            topic: None,
            labels: BTreeMap::new(),
            redacted: Vec::new(),
            honest_ids: Vec::new(),
            written: Written::default(),
            forked: BTreeMap::new(),
            series: Vec::new(),
            activity_end_ms: 0,
            last_heal_ms: 0,
            view_break: None,
            batch_hashes: BTreeMap::new(),
            view_checkpoints: 0,
            metered,
            peak_memory: vec![0; total],
            thefts: Thefts::default(),
            recovery_off: false,
        };
        run.plan();
        run
    }

    /// This run without recoveries: when a thief of both keys is due to be
    /// recovered, the founder binds nothing and the owner writes no recover
    /// entry (it writes on under its old key), and nothing marks a recovery
    /// as missing. What the protocol leaves without one, for a test to
    /// show that the run's checks see the thief's entries count.
    pub fn without_recovery(mut self) -> Self {
        self.recovery_off = true;
        self
    }

    fn at(&mut self, t: u64, action: Action) {
        self.scheduled += 1;
        self.schedule.insert((t, self.scheduled), action);
    }

    /// Virtual ms since the run's start.
    fn elapsed(&self) -> u64 {
        self.net.now - START_MS
    }

    /// Everything the scenario says will happen, on the schedule.
    fn plan(&mut self) {
        let s = self.scenario;
        let start = START_MS;
        self.net.now = start;
        for c in &s.churn {
            if let Some(t) = c.join_ms {
                self.net.crash(c.node);
                self.at(start + t, Action::Join(c.node));
            }
            if let Some(t) = c.crash_ms {
                self.at(start + t, Action::Crash(c.node));
            }
            if let Some(t) = c.restart_ms {
                self.at(start + t, Action::Restart(c.node));
            }
            if let Some(t) = c.leave_ms {
                self.at(start + t, Action::Leave(c.node));
            }
        }
        for (i, p) in s.partitions.iter().enumerate() {
            self.at(start + p.at_ms, Action::PartitionOpen(i));
            self.at(start + p.heal_ms, Action::PartitionHeal);
            self.last_heal_ms = self.last_heal_ms.max(p.heal_ms);
        }
        for i in 0..self.agents.len() {
            if let Some(script) = self.agents[i].script {
                for (m, mv) in s.scripted[script].moves.iter().enumerate() {
                    self.at(start + mv.at_ms, Action::Scripted(i, m));
                }
            } else if self.agents[i].moves_left > 0 {
                let first = s.generated.interval.sample(&mut self.rng);
                self.at(start + first, Action::Generated(i));
            }
        }
        for i in 0..self.adversaries.len() {
            let first = self.adversary_rng.below_u64(self.adversaries[i].every_ms);
            self.at(start + first, Action::Adversary(i));
        }
        let mut last_revocation = 0;
        for i in 0..self.adversaries.len() {
            if let AdversaryKind::KeyThief { steal_ms, revoke_ms, .. } = self.adversaries[i].kind {
                let steal = steal_ms.unwrap_or_else(|| self.adversary_rng.below_u64((s.duration_ms / 2).max(1)));
                let revoke = steal + revoke_ms.unwrap_or_else(|| self.adversary_rng.below_u64(s.duration_ms.max(1)));
                self.adversaries[i].thief_times = Some((steal, revoke));
                self.at(start + steal, Action::Steal(i));
                self.at(start + revoke, Action::Revoke(i));
                last_revocation = last_revocation.max(revoke);
            }
        }
        for (k, r) in s.roster.iter().enumerate() {
            self.at(start + r.at_ms, Action::Roster(k));
        }
        for (k, r) in s.redactions.iter().enumerate() {
            self.at(start + r.at_ms, Action::Redact(k));
        }
        let mut eclipses_end = 0;
        for a in &s.adversaries {
            if let AdversaryKind::Eclipse { victim, until_ms } = a.kind {
                self.at(start + until_ms, Action::EclipseEnds(victim));
                eclipses_end = eclipses_end.max(until_ms);
            }
        }
        let last_churn = s.churn.iter().flat_map(|c| [c.join_ms, c.restart_ms]).flatten().max().unwrap_or(0);
        let last_script = s.scripted.iter().flat_map(|a| a.moves.iter().map(|m| m.at_ms)).max().unwrap_or(0);
        let last_roster = s.roster.iter().map(|r| r.at_ms).chain(s.redactions.iter().map(|r| r.at_ms)).max().unwrap_or(0);
        self.activity_end_ms = s.duration_ms.max(self.last_heal_ms).max(last_churn).max(last_script).max(last_roster).max(eclipses_end).max(last_revocation);
        self.at(start, Action::Redial);
        self.at(start, Action::Sample);
    }

    /// Play the scenario to its end and report.
    pub fn play(self, replay: String) -> Report {
        self.play_and_keep(replay).0
    }

    /// [`Run::play`], and the network as the run left it (what its nodes
    /// hold, for a test to look into).
    pub fn play_and_keep(mut self, replay: String) -> (Report, Net) {
        let s = self.scenario;
        let settle_from = START_MS + self.activity_end_ms;
        let deadline = settle_from + s.settle_ms;
        let mut converged_at = None;
        let mut next_check = settle_from;
        loop {
            let next_action = self.schedule.keys().next().map(|k| k.0);
            let t = match next_action {
                Some(t) if t <= next_check || t < settle_from => t,
                _ => next_check,
            };
            if t > deadline {
                break;
            }
            self.net.run_until(t);
            if next_action == Some(t) {
                let Some((_, action)) = self.schedule.pop_first() else { break };
                self.apply(action);
            } else {
                self.check_views(false);
                // An owner still to take over under a recovered key has more to write.
                if self.in_sync() == self.honest_up().len() && !self.take_over_pending() {
                    converged_at = Some(self.net.now - settle_from);
                    break;
                }
                next_check += SETTLE_CHECK_MS;
            }
        }
        self.check_views(true);
        self.record_sample();
        let report = self.report(converged_at, replay);
        (report, self.net)
    }

    fn apply(&mut self, action: Action) {
        let now = self.elapsed();
        let s = self.scenario;
        match action {
            Action::Generated(i) => {
                if now >= s.duration_ms {
                    return;
                }
                if self.net.nodes[self.agents[i].node].down {
                    // It waits for its node, when agents resume after churn.
                    self.agents[i].stalled = s.generated.resume_after_churn;
                    return;
                }
                if let Some(t) = self.agents[i].admitted_at.filter(|t| now < *t) {
                    // Not on the roster yet: it starts when admitted.
                    return self.at(START_MS + t, Action::Generated(i));
                }
                self.generated_move(i);
                self.agents[i].moves_left -= 1;
                if self.agents[i].moves_left > 0 {
                    let delay = s.generated.interval.sample(&mut self.rng).max(1);
                    self.at(self.net.now + delay, Action::Generated(i));
                }
            }
            Action::Scripted(i, m) => {
                if self.agents[i].admitted_at.is_none_or(|t| now >= t) {
                    self.scripted_move(i, m);
                }
            }
            Action::Roster(k) => self.roster_change(k),
            Action::Steal(a) => self.steal(a),
            Action::Revoke(a) => self.revoke(a),
            Action::TakeOver(a) => self.take_over(a),
            Action::Redact(k) => self.redact(k),
            Action::EclipseEnds(victim) => {
                let honest = s.nodes;
                if honest > 1 {
                    let peer = (victim + 1) % honest;
                    self.wanted.insert((victim.min(peer) as u64, victim.max(peer) as u64));
                    self.redial();
                }
            }
            Action::PartitionOpen(p) => {
                let mut groups = vec![0u32; self.net.nodes.len()];
                for (g, members) in s.partitions[p].groups.iter().enumerate() {
                    for &n in members {
                        groups[n] = g as u32 + 1;
                    }
                }
                self.net.partition(&groups);
            }
            Action::PartitionHeal => self.net.heal(),
            Action::Join(n) | Action::Restart(n) => {
                if !self.left.contains(&n) {
                    self.net.restart(n);
                    let now = self.net.now;
                    self.net.nodes[n].rep.set_admitted(Some(self.admitted.clone()), now);
                    self.redial();
                    self.resume_agents(n);
                }
            }
            Action::Crash(n) => self.net.crash(n),
            Action::Leave(n) => {
                self.left.insert(n);
                self.net.crash(n);
            }
            Action::Adversary(a) => {
                if now >= s.duration_ms {
                    return;
                }
                self.adversary_acts(a);
                let every = self.adversaries[a].every_ms;
                self.at(self.net.now + every, Action::Adversary(a));
            }
            Action::Redial => {
                self.redial();
                self.at(self.net.now + REDIAL_EVERY_MS, Action::Redial);
            }
            Action::Sample => {
                self.sample();
                let every = ((self.activity_end_ms + s.settle_ms) / SAMPLES).max(REDIAL_EVERY_MS);
                self.at(self.net.now + every, Action::Sample);
            }
        }
    }

    /// The generated agents of node `n`, back up, that stalled while it was
    /// down act again, each after its reaction delay.
    fn resume_agents(&mut self, n: usize) {
        for i in 0..self.agents.len() {
            if self.agents[i].node == n && self.agents[i].stalled {
                self.agents[i].stalled = false;
                let delay = self.scenario.generated.interval.sample(&mut self.rng).max(1);
                self.at(self.net.now + delay, Action::Generated(i));
            }
        }
    }

    /// Dial every wanted link that is down but could be up.
    fn redial(&mut self) {
        let wanted: Vec<(u64, u64)> = self.wanted.iter().copied().filter(|(a, b)| !self.net.connected(*a, *b) && self.net.reachable(*a, *b)).collect();
        for (a, b) in wanted {
            self.net.connect(a, b);
        }
    }

    // -----------------------------------------------------------------
    // Honest agents.

    /// Are agent `i`'s entries honest ones (written by no scripted
    /// adversary, nor after its removal from the roster)?
    fn honest(&self, i: usize) -> bool {
        !self.agents[i].adversary && !self.agents[i].removed
    }

    /// The operator of a node redacts what redaction `k` names: the entry of
    /// a scripted move, or every entry of an agent the node holds with its
    /// payload now.
    fn redact(&mut self, k: usize) {
        let r = &self.scenario.redactions[k];
        let ids: Vec<EntryId> = match (&r.label, &r.agent) {
            (Some(label), _) => self.labels.get(label).copied().into_iter().collect(),
            (None, Some(name)) => {
                let Some(agent) = self.agents.iter().find(|a| a.name == *name).map(|a| a.key.agent_id()) else { return };
                let store = &self.net.nodes[r.node].store;
                store
                    .entries
                    .range((agent, 0, EntryId([0; 32]))..)
                    .take_while(|((a, _, _), _)| *a == agent)
                    .filter(|(_, (_, p))| p.is_some())
                    .map(|((_, _, id), _)| *id)
                    .collect()
            }
            (None, None) => Vec::new(),
        };
        let redacted = self.net.redact(r.node, &ids);
        self.redacted.extend(redacted.into_iter().map(|id| (r.node, id)));
    }

    /// The honest node up the founder writes through: the first that holds
    /// its last entry, so that its chain never forks (a fork freezes the
    /// roster), and `also` if given.
    fn founder_node(&self, also: Option<&EntryId>) -> Option<usize> {
        let holds = |n: &usize, id: &EntryId| self.net.nodes[*n].store.ids.contains_key(id);
        self.honest_up().into_iter().find(|n| self.founder_last.iter().chain(also).all(|id| holds(n, id)))
    }

    /// The founder writes `payload` through node `node`.
    fn founder_writes(&mut self, node: usize, founder: &AgentKey, payload: &[u8]) {
        let e = self.net.append(node, founder, payload);
        self.written.honest += 1;
        self.honest_ids.push(e.id());
        self.founder_last = Some(e.id());
    }

    /// The founder writes roster change `k` through an honest node up
    /// ([`Run::founder_node`]; while none holds its last entry, it tries
    /// again a second later), and every node's replicator is told the new
    /// admission.
    fn roster_change(&mut self, k: usize) {
        let scenario = self.scenario;
        let change = &scenario.roster[k];
        let Some(founder) = self.founder.clone() else { return };
        if self.honest_up().is_empty() {
            return;
        }
        let Some(node) = self.founder_node(None) else {
            return self.at(self.net.now + REDIAL_EVERY_MS, Action::Roster(k));
        };
        let Some(i) = self.agents.iter().position(|a| a.name == change.agent()) else { return };
        let agent = self.agents[i].key.agent_id();
        let event = if change.admit.is_some() {
            self.admitted.insert(agent, None);
            self.agents[i].removed = false;
            RosterEvent::Admit { agent, note: change.agent().to_string() }
        } else {
            // A removal counts only of a member the founder's chain admitted:
            // an agent on the roster from the start is admitted first.
            if !self.founder_admitted.contains(&agent) {
                let admit = RosterEvent::Admit { agent, note: change.agent().to_string() };
                self.founder_writes(node, &founder, &admit.encode());
            }
            // Its chain as its own node holds it: up to its highest tip, or
            // its entry at the cut-off.
            let store = &self.net.nodes[self.agents[i].node].store;
            let head = match change.cut_off {
                Some(c) => store.entries.range((agent, c, EntryId([0; 32]))..).next().map(|(k, _)| *k).filter(|(a, seq, _)| *a == agent && *seq == c),
                None => store.tips(&agent).into_iter().max_by_key(|h| (h.seq, h.id)).map(|h| (h.author, h.seq, h.id)),
            };
            let reason = format!("removed at {} ms", change.at_ms);
            self.agents[i].removed = true;
            match head {
                Some((_, last_seq, head)) => {
                    self.admitted.insert(agent, Some(last_seq));
                    RosterEvent::RemoveAt { agent, last_seq, head, reason }
                }
                None => {
                    let last_seq = change.cut_off.unwrap_or(0);
                    self.admitted.insert(agent, Some(last_seq));
                    RosterEvent::RemoveAfter { agent, last_seq, reason }
                }
            }
        };
        self.founder_admitted.insert(agent);
        self.founder_writes(node, &founder, &event.encode());
        let now = self.net.now;
        for n in &mut self.net.nodes {
            n.rep.set_admitted(Some(self.admitted.clone()), now);
        }
    }

    /// Is entry (`author`, `seq`) beyond its author's cut-off (removed from
    /// the roster: it counts nowhere, and replicates nowhere)?
    fn beyond_cut_off(&self, author: &AgentId, seq: u64) -> bool {
        self.founder.is_some() && self.admitted.get(author).is_some_and(|a| a.is_some_and(|last| seq > last))
    }

    /// What node `node`'s clock reads now, when the scenario sets it off.
    fn clock_reading(&self, node: usize) -> Option<u64> {
        self.clocks.get(node).and_then(Option::as_ref).map(|c| c.read(self.net.now, self.elapsed()))
    }

    /// Record `payload` as agent `i` through its node: dated `stamp` (else
    /// by its node's clock), and with `fork` a second entry at the seq of
    /// its last move.
    fn record(&mut self, i: usize, payload: Vec<u8>, made: Made, stamp: Option<u64>, fork: bool) -> EntryId {
        let node = self.agents[i].node;
        let key = self.agents[i].key.clone();
        let dated = stamp.or_else(|| self.clock_reading(node));
        let e = match dated {
            None if !fork && self.honest(i) && !self.agents[i].own_branch => self.net.append(node, &key, &payload),
            _ => self.write_dated(i, &payload, dated.unwrap_or(self.net.now), fork),
        };
        let id = e.id();
        self.agents[i].last = Some(e);
        if self.agents[i].revoked {
            self.thefts.owner_entries.push(id);
        }
        if !self.honest(i) {
            self.written.adversary += 1;
            return id;
        }
        self.written.honest += 1;
        self.honest_ids.push(id);
        if made == Made::Position {
            if let Some(t) = self.topic {
                self.topic_positions.entry(t).or_default().push(self.created.len());
            }
            self.positions.push(self.created.len());
        }
        self.created.push(Created { id, author: key.agent_id(), made });
        id
    }

    /// Sign agent `i`'s next entry, dated `timestamp_ms` (raised to its
    /// predecessor's, the format's rule), or with `fork` a second entry at
    /// the seq of its last move, on the same predecessor; store it on its
    /// node and publish it as the node's commit path does.
    fn write_dated(&mut self, i: usize, payload: &[u8], timestamp_ms: u64, fork: bool) -> SignedEntry {
        let (node, key) = (self.agents[i].node, self.agents[i].key.clone());
        let author = key.agent_id();
        let store = &self.net.nodes[node].store;
        let held = |id: &EntryId| store.get(id).map(|(e, _)| SignedEntry::clone(e));
        let last = self.agents[i].last.as_ref().filter(|l| store.ids.contains_key(&l.id()));
        let prev = match last {
            Some(l) if fork => l.header().backlink.and_then(|b| held(&b)),
            Some(l) => Some(l.clone()),
            None => store.tips(&author).into_iter().max_by_key(|h| (h.seq, h.id)).and_then(|h| held(&h.id)),
        };
        let e = SignedEntry::sign(next_header(author, prev.as_ref(), timestamp_ms, payload).expect("a bounded payload").commit_if_none(key.commitment()), &key);
        // The node's own write is never deferred, whatever its date.
        let r = self.net.nodes[node].store.put(&e, Some(payload), self.net.now.max(e.header().timestamp_ms));
        let now = self.net.now;
        for p in &r.new_forks {
            self.forked.entry((p.author(), p.seq())).or_insert(now);
        }
        if self.honest(i) && node < self.net.honest_nodes {
            self.net.spread.insert(e.id(), Spread { appended_ms: now, honest_nodes: 1, last_ms: now });
        }
        self.net.committed(node, &[(e.clone(), Some(payload.to_vec()))], &r);
        e
    }

    /// A recent position that agent `i`'s node holds, by another author when `other`.
    fn pick_position(&mut self, i: usize, other: bool) -> Option<EntryId> {
        let node = self.agents[i].node;
        let me = self.agents[i].key.agent_id();
        let empty = Vec::new();
        let positions = match self.topic {
            Some(t) => self.topic_positions.get(&t).unwrap_or(&empty),
            None => &self.positions,
        };
        let window = positions.len().min(256);
        for _ in 0..16 {
            if window == 0 {
                return None;
            }
            let c = &self.created[positions[positions.len() - 1 - self.rng.below(window)]];
            if (!other || c.author != me) && self.net.nodes[node].store.ids.contains_key(&c.id) {
                return Some(c.id);
            }
        }
        None
    }

    fn generated_move(&mut self, i: usize) {
        let w = &self.scenario.generated.weights;
        let table = [w.propose, w.support, w.contradict, w.refine, w.synthesize, w.accept, w.dispute];
        let total: u32 = table.iter().sum();
        let mut r = self.rng.below_u64(u64::from(total.max(1))) as u32;
        let mut kind = 0;
        for (k, weight) in table.iter().enumerate() {
            if r < *weight {
                kind = k;
                break;
            }
            r -= weight;
        }
        let topic = self.rng.below(self.scenario.generated.topics.max(1));
        self.topic = self.scenario.generated.topic_bound.then_some(topic);
        let n = self.created.len();
        let name = self.agents[i].name.clone();
        let text = format!("topic {topic}: {name}'s point {n}");
        let made = match kind {
            1 => self.pick_position(i, false).map(|target| (Event::Support { target, text: text.clone() }.encode(), Made::Other)),
            2 => self.pick_position(i, true).map(|target| (Event::Contradiction { target, text: text.clone() }.encode(), Made::Contradiction(target))),
            3 => self.pick_position(i, false).map(|target| {
                let node = self.agents[i].node;
                let resolves: Vec<EntryId> = self
                    .created
                    .iter()
                    .rev()
                    .take(512)
                    .filter(|c| c.made == Made::Contradiction(target) && self.net.nodes[node].store.ids.contains_key(&c.id))
                    .map(|c| c.id)
                    .take(4)
                    .collect();
                (Event::Refinement { target, resolves, text: text.clone() }.encode(), Made::Position)
            }),
            4 => match (self.pick_position(i, false), self.pick_position(i, true)) {
                (Some(a), Some(b)) if a != b => Some((Event::Synthesis { sources: vec![a, b], text: text.clone() }.encode(), Made::Position)),
                _ => None,
            },
            5 => self.pick_accept(i).map(|(author, head)| (MergeEvent::Accept { author, up_to_seq: head.seq, head: head.id }.encode(), Made::Other)),
            6 => self.pick_position(i, true).map(|target| {
                let ev = MergeEvent::Dispute { target, reason: format!("{name} disputes it"), counter_claim: Some(text.clone()) };
                (ev.encode(), Made::Dispute)
            }),
            _ => None,
        };
        let (payload, made) = made.unwrap_or_else(|| (Event::Proposition { text }.encode(), Made::Position));
        self.record(i, payload, made, None, false);
        self.topic = None;
    }

    /// Another agent's chain that `i`'s node holds, and its highest tip there.
    fn pick_accept(&mut self, i: usize) -> Option<(AgentId, Head)> {
        let node = self.agents[i].node;
        let me = self.agents[i].key.agent_id();
        for _ in 0..8 {
            let other = self.agents[self.rng.below(self.agents.len())].key.agent_id();
            if other == me {
                continue;
            }
            if let Some(tip) = self.net.nodes[node].store.tips(&other).into_iter().max_by_key(|h| (h.seq, h.id)) {
                return Some((other, tip));
            }
        }
        None
    }

    fn scripted_move(&mut self, i: usize, m: usize) {
        let Some(script) = self.agents[i].script else { return };
        let mv = self.scenario.scripted[script].moves[m].clone();
        if self.net.nodes[self.agents[i].node].down {
            return;
        }
        let label = |l: &Option<String>| l.as_ref().and_then(|l| self.labels.get(l).copied());
        let target = label(&mv.target);
        let sources: Vec<EntryId> = mv.sources.iter().filter_map(|l| self.labels.get(l).copied()).collect();
        let text = mv.text.clone();
        // Validated: every reference names an earlier move's label.
        let t = || target.expect("validated: the move has a target");
        let (payload, made) = match mv.kind {
            MoveKind::Propose => (Event::Proposition { text }.encode(), Made::Position),
            MoveKind::Support => (Event::Support { target: t(), text }.encode(), Made::Other),
            MoveKind::Contradict => (Event::Contradiction { target: t(), text }.encode(), Made::Contradiction(t())),
            MoveKind::Refine => (Event::Refinement { target: t(), resolves: sources, text }.encode(), Made::Position),
            MoveKind::Synthesize => (Event::Synthesis { sources, text }.encode(), Made::Position),
            MoveKind::Question => (Event::Question { text }.encode(), Made::Other),
            MoveKind::Resolve => (Event::Resolve { target: t(), text }.encode(), Made::Other),
            MoveKind::Dispute => (MergeEvent::Dispute { target: t(), reason: text, counter_claim: None }.encode(), Made::Dispute),
            MoveKind::Withdraw => (MergeEvent::Withdraw { dispute: t() }.encode(), Made::Other),
            MoveKind::Trajectory => (Event::Trajectory { task_query: text, final_answer: String::new(), iterations: 1, converged: true }.encode(), Made::Other),
            MoveKind::Judgment => {
                let success = mv.success.expect("validated: a judgment has a verdict");
                (Event::Judgment { trajectory: t(), success, reason: text, confidence: Confidence::High }.encode(), Made::Other)
            }
            MoveKind::MemoryItem => (
                Event::MemoryItem { title: text.clone(), description: String::new(), content: text, scope: "sim".into(), source_trajectory: None }.encode(),
                Made::Other,
            ),
            MoveKind::Accept => {
                let head_id = label(&mv.up_to).expect("validated: an accept names up_to");
                let Some(&(author, seq)) = self.net.nodes[self.agents[i].node].store.ids.get(&head_id) else {
                    // Not arrived at this agent's node yet: it cannot pin what it has not seen.
                    return;
                };
                (MergeEvent::Accept { author, up_to_seq: seq, head: head_id }.encode(), Made::Other)
            }
        };
        let clock = self.clock_reading(self.agents[i].node).unwrap_or(self.net.now);
        let stamp = match (mv.time_ms, mv.skew_ms) {
            (Some(t), _) => Some(START_MS + t),
            (None, Some(skew)) => Some(clock.saturating_add_signed(skew)),
            (None, None) => None,
        };
        let id = self.record(i, payload, made, stamp, mv.fork);
        if let Some(l) = mv.label {
            self.labels.insert(l, id);
        }
    }

    // -----------------------------------------------------------------
    // Adversaries.

    /// Sign and store the next entry of adversary `a`'s chain on its node,
    /// dated `timestamp_ms`, and publish it as the node would.
    fn adversary_record(&mut self, a: usize, payload: &[u8], timestamp_ms: u64) -> SignedEntry {
        let key = self.adversaries[a].key.clone();
        self.adversary_record_as(a, &key, payload, timestamp_ms)
    }

    /// [`Run::adversary_record`] as `key` (one of a Sybil's identities).
    fn adversary_record_as(&mut self, a: usize, key: &AgentKey, payload: &[u8], timestamp_ms: u64) -> SignedEntry {
        let node = self.adversaries[a].node;
        let store = &self.net.nodes[node].store;
        let prev = store.tips(&key.agent_id()).into_iter().max_by_key(|h| (h.seq, h.id)).and_then(|h| store.get(&h.id).map(|(e, _)| SignedEntry::clone(e)));
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), timestamp_ms, payload).expect("a small payload"), key);
        let r = self.net.nodes[node].store.put(&e, Some(payload), self.net.now.max(timestamp_ms));
        self.written.adversary += 1;
        self.net.committed(node, &[(e.clone(), Some(payload.to_vec()))], &r);
        e
    }

    fn adversary_acts(&mut self, a: usize) {
        let now = self.net.now;
        let node = self.adversaries[a].node;
        let author = self.adversaries[a].key.agent_id();
        let text = |what: &str, n: u64| Event::Proposition { text: format!("{what} {n}") }.encode();
        match self.adversaries[a].kind.clone() {
            AdversaryKind::Withholder | AdversaryKind::Stripper { .. } | AdversaryKind::Server { .. } | AdversaryKind::Honest => {}
            AdversaryKind::Equivocator { fork_at_seq, branches, packs } => self.equivocate(a, fork_at_seq, branches, packs),
            AdversaryKind::ColludingForker { fork_at_seq, branches } if self.adversaries[a].k == 0 => self.equivocate(a, fork_at_seq, branches, 1),
            AdversaryKind::ColludingForker { .. } | AdversaryKind::Eclipse { .. } | AdversaryKind::SelectiveRelay { .. } => {}
            AdversaryKind::Sybil { .. } if self.adversaries[a].k == 0 => self.sybils_act(a),
            AdversaryKind::Sybil { .. } => {}
            AdversaryKind::Replayer { rate, stale_frontiers } => self.replay_old(a, rate, stale_frontiers),
            AdversaryKind::InvalidSigner => {
                let n = self.adversary_rng.next_u64();
                let payload = text("forged", n);
                let key = self.adversaries[a].key.clone();
                let e = SignedEntry::sign(next_header(author, None, now, &payload).expect("a small payload"), &key);
                let mut bytes = e.encode();
                let last = bytes.len() - 1;
                bytes[last] ^= 0x01;
                self.net.gossip_from(node, Gossip::Entry(WireEntry { entry: bytes, payload: Some(payload) }));
                for peer in self.net.neighbours(node) {
                    let len = 1 + self.adversary_rng.below(512);
                    let garbage: Vec<u8> = (0..len).map(|_| self.adversary_rng.next_u64() as u8).collect();
                    self.net.send_raw_request(node, peer, garbage);
                }
            }
            AdversaryKind::HeadFlooder { authors } => {
                let workspace = self.net.nodes[node].workspace;
                for peer in self.net.neighbours(node) {
                    let heads: Vec<Head> = (0..authors)
                        .map(|_| {
                            let mut a = [0u8; 32];
                            let mut id = [0u8; 32];
                            a.iter_mut().chain(id.iter_mut()).for_each(|b| *b = self.adversary_rng.next_u64() as u8);
                            Head { author: AgentId(a), seq: 1 + self.adversary_rng.below_u64(1_000), id: EntryId(id) }
                        })
                        .collect();
                    for chunk in heads.chunks(self.net.nodes[node].rep.config().frontier_heads_max.max(1)) {
                        let request = WireRequest::from_message(workspace, Message::Frontier(chunk.to_vec())).expect("a frontier is a request");
                        self.net.send_raw_request(node, peer, request.encode());
                    }
                }
            }
            AdversaryKind::Backdater { skew_ms, targets } => {
                let n = self.adversary_rng.next_u64();
                let at = if skew_ms < 0 { now.saturating_sub(skew_ms.unsigned_abs()) } else { now.saturating_add(skew_ms as u64) };
                let payload = match self.honest_position_held(node).filter(|_| targets) {
                    Some(target) if n.is_multiple_of(2) => Event::Contradiction { target, text: format!("backdated contradiction {n}") }.encode(),
                    Some(target) => MergeEvent::Dispute { target, reason: format!("backdated dispute {n}"), counter_claim: None }.encode(),
                    None => text("backdated", n),
                };
                self.adversary_record(a, &payload, at);
            }
            AdversaryKind::Spammer { burst } => {
                for _ in 0..burst {
                    let n = self.adversary_rng.next_u64();
                    self.adversary_record(a, &text("spam", n), now);
                }
            }
            AdversaryKind::Outsider => {
                let n = self.adversary_rng.next_u64();
                self.adversary_record(a, &text("outsider's point", n), now);
            }
            AdversaryKind::KeyThief { forks, .. } => self.thief_acts(a, forks),
        }
    }

    /// Key thief `a` steals: it picks its victim (named, else an honest
    /// agent drawn from its seed among those who wrote and are robbed by no
    /// other thief), copies its current key (and, with `both_keys`, its
    /// next key) and its chain up to its last entry (the boundary its owner
    /// will vouch for) to its own node. With no victim that wrote yet, it
    /// tries again later, until the planned revocation.
    fn steal(&mut self, a: usize) {
        let Some((_, revoke)) = self.adversaries[a].thief_times else { return };
        let AdversaryKind::KeyThief { victim, both_keys, .. } = self.adversaries[a].kind.clone() else { return };
        let robbed: BTreeSet<usize> = self.adversaries.iter().filter_map(|t| t.theft.as_ref().map(|t| t.victim)).collect();
        let wrote = |g: &Agent| g.last.as_ref().is_some_and(|l| self.net.nodes[g.node].store.ids.contains_key(&l.id()));
        let candidates: Vec<usize> = (0..self.agents.len())
            .filter(|i| self.honest(*i) && !robbed.contains(i) && wrote(&self.agents[*i]))
            .filter(|i| victim.as_ref().is_none_or(|name| self.agents[*i].name == *name))
            .collect();
        if candidates.is_empty() {
            let again = self.net.now + self.adversaries[a].every_ms;
            if again < START_MS + revoke {
                self.at(again, Action::Steal(a));
            }
            return;
        }
        let v = candidates[self.adversary_rng.below(candidates.len())];
        let boundary = self.agents[v].last.clone().expect("a victim that wrote");
        // The thief's node gets the chain up to the boundary, as the key's copy came with it.
        let (from, to) = (self.agents[v].node, self.adversaries[a].node);
        let mut copied = Vec::new();
        let mut at = Some(boundary.id());
        while let Some(id) = at.filter(|id| !self.net.nodes[to].store.ids.contains_key(id)) {
            let Some((e, p)) = self.net.nodes[from].store.get(&id) else { break };
            at = e.header().backlink;
            copied.push((SignedEntry::clone(e), p.as_deref().map(<[u8]>::to_vec)));
        }
        copied.reverse();
        if !copied.is_empty() {
            let checked = agora_core::verify::check_entries(copied).expect("entries an honest node holds");
            let r = self.net.nodes[to].store.import(checked, self.net.now);
            self.net.committed(to, &[], &r);
        }
        self.agents[v].own_branch = true;
        let stolen = Rc::new(AgentKey::from_seed(self.agents[v].seed));
        let author = stolen.agent_id();
        let stolen_next = self.agents[v].next_seed.filter(|_| both_keys).map(|seed| Rc::new(AgentKey::from_seed(seed).for_agent(author)));
        self.adversaries[a].theft = Some(Theft {
            victim: v,
            stolen,
            stolen_next,
            boundary,
            rotations_tried: 0,
            forks_signed: 0,
            own: None,
            recovering: false,
            granted: None,
            taken_over: false,
        });
    }

    /// A key thief's action once it stole. First, on its first two actions
    /// and on each while it signs, a rotation of the victim's chain to a key
    /// of its own, signed by that key and by the stolen one in turn: after
    /// the highest entry of the chain its node holds, which a node that took
    /// it reads as a new tip and hands to its import rules; gossiped as is
    /// (no store takes it, its own neither). Then, while it has signed fewer
    /// than `forks`, one entry signed with the stolen key on a branch of its
    /// own, after the highest entry that key signed (the victim's or its
    /// own) or after an entry at or below the boundary, in turn.
    fn thief_acts(&mut self, a: usize, forks: usize) {
        let now = self.net.now;
        let node = self.adversaries[a].node;
        let Some(theft) = self.adversaries[a].theft.as_ref() else { return };
        if theft.stolen_next.is_some() {
            return self.thief_of_both_keys_acts(a, forks);
        }
        let (stolen, boundary, tried, signed) = (theft.stolen.clone(), theft.boundary.clone(), theft.rotations_tried, theft.forks_signed);
        let author = stolen.agent_id();
        let rotates = tried < 2 || signed < forks;
        if rotates {
            let store = &self.net.nodes[node].store;
            let top = store
                .tips(&author)
                .into_iter()
                .max_by_key(|h| (h.seq, h.id))
                .and_then(|h| store.get(&h.id))
                .map_or_else(|| boundary.clone(), |(e, _)| SignedEntry::clone(e));
            let own = AgentKey::from_seed(agora_core::sha256(format!("agora-sim {} thief {node} {tried}", self.seed).as_bytes()));
            let then = agora_core::key_commitment(&AgentKey::from_seed(agora_core::sha256(own.public_key().as_bytes())).public_key());
            let payload = Vec::new();
            let header = next_header(author, Some(&top), now, &payload).expect("an empty payload");
            let e = if tried % 2 == 0 {
                SignedEntry::sign(header.key_event_by(KeyEvent::Rotate, own.public_key(), then), &own)
            } else {
                SignedEntry::sign(header.key_event_by(KeyEvent::Rotate, stolen.public_key(), agora_core::key_commitment(&own.public_key())), &stolen)
            };
            self.net.gossip_from(node, Gossip::Entry(WireEntry { entry: e.encode(), payload: Some(payload.clone()) }));
            self.thefts.rotations.push((e, payload));
            self.written.adversary += 1;
        }
        if signed < forks {
            let prev = if signed % 2 == 0 { self.stolen_top(node, &stolen, &boundary) } else { self.below_boundary(node, &boundary) };
            self.thief_sign(a, &stolen, &prev);
        }
        if let Some(t) = self.adversaries[a].theft.as_mut() {
            t.rotations_tried = tried + usize::from(rotates);
            t.forks_signed = (signed + 1).min(forks);
        }
    }

    /// A thief of both keys acts once it stole. First a rotation of the
    /// victim's chain signed by the stolen next key, after the highest
    /// entry its node holds that the stolen current key signed (else the
    /// boundary), whose commitment that next key opens: valid, so its node
    /// stores it and every node takes it. It commits to a key of the
    /// thief's own, which its second action installs by a second rotation.
    /// Then, while it has signed fewer than `forks`, one entry in turn on
    /// that branch with its own key and, with the stolen current key, after
    /// an entry at or below the boundary.
    fn thief_of_both_keys_acts(&mut self, a: usize, forks: usize) {
        let now = self.net.now;
        let node = self.adversaries[a].node;
        let Some(theft) = self.adversaries[a].theft.as_ref() else { return };
        let Some(next) = theft.stolen_next.clone() else { return };
        let (stolen, boundary, tried, signed, own) =
            (theft.stolen.clone(), theft.boundary.clone(), theft.rotations_tried, theft.forks_signed, theft.own.clone());
        let author = stolen.agent_id();
        let own_key =
            |k: u32| AgentKey::from_seed(agora_core::sha256(format!("agora-sim {} thief {node} own key {k}", self.seed).as_bytes())).for_agent(author);
        let rotation = |prev: &SignedEntry, by: &AgentKey, to: &AgentKey| {
            let header = next_header(author, Some(prev), now, b"").expect("an empty payload");
            SignedEntry::sign(header.key_event_by(KeyEvent::Rotate, by.public_key(), agora_core::key_commitment(&to.public_key())), by)
        };
        let own = match (tried, own) {
            (0, _) => {
                let mine = own_key(0);
                let e = rotation(&self.stolen_top(node, &stolen, &boundary), &next, &mine);
                self.thief_store(a, &e, Vec::new());
                self.thefts.stolen_rotations.push((author, e.id()));
                Some((Rc::new(mine), e))
            }
            (1, Some((mine, top))) => {
                let e = rotation(&top, &mine, &own_key(1));
                self.thief_store(a, &e, Vec::new());
                Some((mine, e))
            }
            (_, Some((mine, top))) if signed < forks => {
                if signed % 2 == 0 {
                    let e = self.thief_sign(a, &mine, &top);
                    Some((mine, e))
                } else {
                    let prev = self.below_boundary(node, &boundary);
                    self.thief_sign(a, &stolen, &prev);
                    Some((mine, top))
                }
            }
            (_, own) => own,
        };
        if let Some(t) = self.adversaries[a].theft.as_mut() {
            t.forks_signed = if tried >= 2 { (signed + 1).min(forks) } else { signed };
            t.rotations_tried = (tried + 1).min(2);
            t.own = own;
        }
    }

    /// An entry of the victim's chain at or below `boundary` that node
    /// `node` holds: some steps back along its chain, drawn by the thief.
    fn below_boundary(&mut self, node: usize, boundary: &SignedEntry) -> SignedEntry {
        let steps = self.adversary_rng.below_u64(boundary.header().seq);
        let store = &self.net.nodes[node].store;
        let mut at = boundary.clone();
        for _ in 0..steps {
            match at.header().backlink.and_then(|b| store.get(&b)) {
                Some((p, _)) => at = SignedEntry::clone(p),
                None => break,
            }
        }
        at
    }

    /// The highest entry of the victim's chain that node `node` holds
    /// signed by the `stolen` key (the victim's, or a thief's), else the
    /// boundary.
    fn stolen_top(&self, node: usize, stolen: &AgentKey, boundary: &SignedEntry) -> SignedEntry {
        let store = &self.net.nodes[node].store;
        store
            .tips(&stolen.agent_id())
            .into_iter()
            .filter_map(|h| store.get(&h.id).map(|(e, _)| e))
            .filter(|e| e.header().signing_key() == stolen.public_key())
            .max_by_key(|e| (e.header().seq, e.id()))
            .map_or_else(|| boundary.clone(), |e| SignedEntry::clone(e))
    }

    /// Key thief `a` signs an entry of the victim's chain after `prev` with
    /// `key` (the stolen one, or with both keys stolen its own), stores it
    /// on its node and publishes it.
    fn thief_sign(&mut self, a: usize, key: &AgentKey, prev: &SignedEntry) -> SignedEntry {
        let (now, node) = (self.net.now, self.adversaries[a].node);
        let n = self.adversary_rng.next_u64();
        let payload = match self.honest_position_held(node) {
            Some(target) if n.is_multiple_of(2) => Event::Contradiction { target, text: format!("the stolen key contradicts {n}") }.encode(),
            _ => Event::Proposition { text: format!("the stolen key's point {n}") }.encode(),
        };
        let e = SignedEntry::sign(next_header(prev.header().author, Some(prev), now, &payload).expect("a small payload"), key);
        self.thief_store(a, &e, payload);
        e
    }

    /// Key thief `a` stores `e`, an entry of the victim's chain it signed
    /// (valid), on its node and publishes it.
    fn thief_store(&mut self, a: usize, e: &SignedEntry, payload: Vec<u8>) {
        let (now, node) = (self.net.now, self.adversaries[a].node);
        let r = self.net.nodes[node].store.put(e, Some(&payload), now.max(e.header().timestamp_ms));
        for p in &r.new_forks {
            self.forked.entry((p.author(), p.seq())).or_insert(now);
        }
        self.net.committed(node, &[(e.clone(), Some(payload))], &r);
        self.thefts.thief_entries.insert(e.id());
        self.written.adversary += 1;
    }

    /// The owner of the key thief `a` stole revokes it, through its node: a
    /// rotation signed by its pre-committed next key, placed after the
    /// boundary (its last entry before the theft), committing to the key
    /// after it; from then on it signs with the new key, and it writes one
    /// entry at once. With its node down it tries again a second later; if
    /// the thief never stole, there is nothing to revoke. A thief that
    /// stole both keys holds the next key too: the founder recovers the
    /// victim instead ([`Run::recover`]).
    fn revoke(&mut self, a: usize) {
        let Some(theft) = self.adversaries[a].theft.as_ref() else { return };
        if theft.stolen_next.is_some() {
            return self.recover(a);
        }
        let (v, boundary) = (theft.victim, theft.boundary.clone());
        let node = self.agents[v].node;
        if self.left.contains(&node) {
            self.thefts.unrevoked.push((self.adversaries[a].node, self.agents[v].name.clone()));
            return;
        }
        if self.net.nodes[node].down {
            return self.at(self.net.now + REDIAL_EVERY_MS, Action::Revoke(a));
        }
        let Some(next_seed) = self.agents[v].next_seed else { return };
        let author = self.agents[v].key.agent_id();
        let next = AgentKey::from_seed(next_seed).for_agent(author);
        self.owner_key_event(v, next, next_seed, &boundary, KeyEvent::Rotate);
    }

    /// The founder recovers the victim of `a`, a thief of both keys, as
    /// `agora key recover` does: a roster `recover` event binding the
    /// victim, after its last entry before the theft (the boundary), to a
    /// fresh key, written through an honest node up that holds the boundary
    /// ([`Run::founder_node`]; none: it tries again a second later). Then
    /// the owner takes over ([`Run::take_over`]). With the owner's node gone
    /// for good, nobody is left to take over: a violation.
    fn recover(&mut self, a: usize) {
        let Some(theft) = self.adversaries[a].theft.as_ref() else { return };
        let (v, boundary) = (theft.victim, theft.boundary.clone());
        if self.recovery_off || theft.granted.is_some() {
            return;
        }
        if self.left.contains(&self.agents[v].node) {
            self.thefts.unrevoked.push((self.adversaries[a].node, self.agents[v].name.clone()));
            return;
        }
        if let Some(t) = self.adversaries[a].theft.as_mut() {
            t.recovering = true;
        }
        let Some(founder) = self.founder.clone() else { return };
        let Some(node) = self.founder_node(Some(&boundary.id())) else {
            return self.at(self.net.now + REDIAL_EVERY_MS, Action::Revoke(a));
        };
        let name = self.agents[v].name.clone();
        let seed = agora_core::sha256(format!("agora-sim {} recovery {name}", self.seed).as_bytes());
        let agent = self.agents[v].key.agent_id();
        let key = AgentKey::from_seed(seed).public_key();
        let event = RosterEvent::Recover { agent, last_seq: boundary.header().seq, head: boundary.id(), key, note: format!("{name} lost both keys") };
        event.check_local(&founder.agent_id()).expect("a member's recovery to a key of its own");
        self.founder_writes(node, &founder, &event.encode());
        if let Some(t) = self.adversaries[a].theft.as_mut() {
            t.granted = Some(seed);
        }
        self.take_over(a);
    }

    /// The owner of the victim of `a`, a thief of both keys, takes over
    /// under the key the founder granted, as `agora key take-over` does:
    /// once the roster its own node derives binds that key as the victim's
    /// last recovery, after the boundary, and the node holds the boundary,
    /// it writes there its recover entry signed by that key after the
    /// boundary, committing to the key after it, and writes on under it.
    /// Until then, and while its node is down, it looks again shortly.
    fn take_over(&mut self, a: usize) {
        let Some(theft) = self.adversaries[a].theft.as_ref() else { return };
        let (v, boundary) = (theft.victim, theft.boundary.clone());
        let Some(seed) = theft.granted.filter(|_| !theft.taken_over) else { return };
        let node = self.agents[v].node;
        if self.left.contains(&node) {
            self.thefts.unrevoked.push((self.adversaries[a].node, self.agents[v].name.clone()));
            return;
        }
        let retry = self.net.now + TAKE_OVER_RETRY_MS;
        if self.net.nodes[node].down {
            return self.at(retry, Action::TakeOver(a));
        }
        let author = self.agents[v].key.agent_id();
        let key = AgentKey::from_seed(seed).for_agent(author);
        let store = &self.net.nodes[node].store;
        let roster = crate::views::derive_roster(store, self.net.founder, &self.net.members_from_start);
        let last = roster.recoveries.get(&author).and_then(|r| r.last());
        if !last.is_some_and(|r| r.key == key.public_key() && r.head == boundary.id()) || !store.ids.contains_key(&boundary.id()) {
            return self.at(retry, Action::TakeOver(a));
        }
        if let Some(t) = self.adversaries[a].theft.as_mut() {
            t.taken_over = true;
        }
        self.owner_key_event(v, key, seed, &boundary, KeyEvent::Recover);
    }

    /// Is an owner due to take over under a recovered key still to do it,
    /// with its node up? Then the swarm has not settled.
    fn take_over_pending(&self) -> bool {
        self.adversaries.iter().filter_map(|t| t.theft.as_ref()).any(|t| {
            let node = self.agents[t.victim].node;
            t.recovering && !t.taken_over && !self.left.contains(&node) && !self.net.nodes[node].down
        })
    }

    /// The owner of agent `v` writes the key event `event` (a revocation, or
    /// a recover entry) through its node after `boundary`, signed by `key`
    /// (made from `seed`), committing to the key after it; from then on it
    /// signs with `key`, and it writes one entry at once.
    fn owner_key_event(&mut self, v: usize, key: AgentKey, seed: [u8; 32], boundary: &SignedEntry, event: KeyEvent) {
        let node = self.agents[v].node;
        let after = AgentKey::from_seed(agora_core::sha256(&seed));
        let commitment = agora_core::key_commitment(&after.public_key());
        let now = self.net.now;
        let (r, written) = self.net.nodes[node].store.append_key_event(&key, &boundary.id(), event, commitment, b"", now);
        assert_eq!(written.outcome, agora_sync::ImportOutcome::Stored, "the owner's key event");
        for p in &written.new_forks {
            self.forked.entry((p.author(), p.seq())).or_insert(now);
        }
        self.net.spread.insert(r.id(), Spread { appended_ms: now, honest_nodes: 1, last_ms: now });
        self.net.committed(node, &[(r.clone(), Some(Vec::new()))], &written);
        self.written.honest += 1;
        self.honest_ids.push(r.id());
        self.thefts.owner_entries.push(r.id());
        let agent = &mut self.agents[v];
        agent.key = Rc::new(key);
        agent.next_seed = Some(agora_core::sha256(&seed));
        agent.last = Some(r);
        agent.revoked = true;
        let text = format!("{} carries on under its new key", agent.name);
        self.record(v, Event::Proposition { text }.encode(), Made::Position, None, false);
    }

    /// An equivocator's action: honest entries until its chain reaches
    /// `fork_at_seq`, then its share (`branches` over `packs` actions) of
    /// the entries it signs there, all on the same predecessor.
    fn equivocate(&mut self, a: usize, fork_at_seq: u64, branches: usize, packs: usize) {
        let now = self.net.now;
        let node = self.adversaries[a].node;
        let author = self.adversaries[a].key.agent_id();
        let text = |what: &str, n: u64| Event::Proposition { text: format!("{what} {n}") }.encode();
        let seq = self.net.nodes[node].store.max_seq(&author);
        let adv = &self.adversaries[a];
        if (adv.forked && adv.branches_signed >= branches) || (!adv.forked && seq + 1 < fork_at_seq) {
            let n = self.adversary_rng.next_u64();
            self.adversary_record(a, &text("equivocator's honest point", n), now);
            return;
        }
        // Sign this pack's share of `branches` entries at the fork
        // seq, all on the same predecessor.
        let key = self.adversaries[a].key.clone();
        if !self.adversaries[a].forked {
            let store = &self.net.nodes[node].store;
            let prev = store.tips(&author).into_iter().max_by_key(|h| (h.seq, h.id)).and_then(|h| store.get(&h.id).map(|(e, _)| SignedEntry::clone(e)));
            self.adversaries[a].fork_prev = prev;
            self.forked.insert((author, seq + 1), now);
            self.adversaries[a].forked = true;
        }
        let prev = self.adversaries[a].fork_prev.clone();
        let from = self.adversaries[a].branches_signed;
        let to = (from + branches.div_ceil(packs)).min(branches);
        let written: Vec<(SignedEntry, Option<Vec<u8>>)> = (from..to)
            .map(|b| {
                let payload = text("equivocation branch", b as u64);
                (SignedEntry::sign(next_header(author, prev.as_ref(), now, &payload).expect("a small payload"), &key), Some(payload))
            })
            .collect();
        // One pack, one commit, as a node writes a batch of its own.
        let checked = agora_core::verify::check_entries(written.clone()).expect("entries signed here");
        let r = self.net.nodes[node].store.import(checked, now);
        self.net.committed(node, &written, &r);
        self.written.adversary += (to - from) as u64;
        self.adversaries[a].branches_signed = to;
    }

    /// A Sybil group's action, all its nodes and identities together: one
    /// identity proposes, every other one supports the proposal, and every
    /// one disputes the same honest position the group's first node holds.
    fn sybils_act(&mut self, a: usize) {
        let group = self.adversaries[a].group;
        let members: Vec<usize> = (0..self.adversaries.len()).filter(|m| self.adversaries[*m].group == group).collect();
        let target = self.honest_position_held(self.adversaries[a].node);
        let n = self.adversary_rng.next_u64();
        let mut proposal = None;
        for &m in &members {
            for key in self.adversaries[m].identities.clone() {
                let payload = match proposal {
                    None => Event::Proposition { text: format!("the group's point {n}") }.encode(),
                    Some(p) => Event::Support { target: p, text: format!("as the group says {n}") }.encode(),
                };
                let e = self.adversary_record_as(m, &key, &payload, self.net.now);
                proposal.get_or_insert(e.id());
                if let Some(target) = target {
                    let dispute = MergeEvent::Dispute { target, reason: format!("the group disputes it {n}"), counter_claim: None }.encode();
                    self.adversary_record_as(m, &key, &dispute, self.net.now);
                }
            }
        }
    }

    /// A recent honest position that adversary node `node` holds.
    fn honest_position_held(&mut self, node: usize) -> Option<EntryId> {
        let window = self.positions.len().min(256);
        for _ in 0..8 {
            if window == 0 {
                return None;
            }
            let c = &self.created[self.positions[self.positions.len() - 1 - self.adversary_rng.below(window)]];
            if self.net.nodes[node].store.ids.contains_key(&c.id) {
                return Some(c.id);
            }
        }
        None
    }

    /// A replayer's action: `rate` old honest entries it holds, each
    /// gossiped again as itself, stripped of its payload and as an
    /// announcement (three new message ids), and with `stale_frontiers`, a
    /// frontier of old heads (an entry's seq and id, long passed) to each peer.
    fn replay_old(&mut self, a: usize, rate: usize, stale_frontiers: bool) {
        let node = self.adversaries[a].node;
        let held = self.honest_ids.len();
        if held == 0 {
            return;
        }
        let mut stale = Vec::new();
        for _ in 0..rate {
            let id = self.honest_ids[self.adversary_rng.below(held)];
            let Some((e, p)) = self.net.nodes[node].store.get(&id).map(|(e, p)| (SignedEntry::clone(e), p.as_deref().map(<[u8]>::to_vec))) else {
                continue;
            };
            let entry = e.encode();
            self.net.gossip_from(node, Gossip::Entry(WireEntry { entry: entry.clone(), payload: p }));
            self.net.gossip_from(node, Gossip::Entry(WireEntry { entry: entry.clone(), payload: None }));
            self.net.gossip_from(node, Gossip::Announce(entry));
            stale.push(Head { author: e.header().author, seq: e.header().seq, id });
        }
        if stale_frontiers && !stale.is_empty() {
            let workspace = self.net.nodes[node].workspace;
            let per_message = self.net.nodes[node].rep.config().frontier_heads_max.max(1);
            for chunk in stale.chunks(per_message) {
                let request = WireRequest::from_message(workspace, Message::Frontier(chunk.to_vec())).expect("a frontier is a request").encode();
                for peer in self.net.neighbours(node) {
                    self.net.send_raw_request(node, peer, request.clone());
                }
            }
        }
    }

    // -----------------------------------------------------------------
    // Checks and figures.

    /// Honest nodes that are up and have not left.
    fn honest_up(&self) -> Vec<usize> {
        (0..self.scenario.nodes).filter(|n| !self.net.nodes[*n].down && !self.left.contains(n)).collect()
    }

    /// How many honest up nodes hold exactly what the first one holds.
    fn in_sync(&self) -> usize {
        let up = self.honest_up();
        let Some(&first) = up.first() else { return 0 };
        // Payloads redacted wherever they were held: gone from the swarm, so
        // a node still lacking one lacks nothing it could get.
        let erased: BTreeSet<EntryId> = self
            .redacted
            .iter()
            .map(|(_, id)| *id)
            .filter(|id| !up.iter().any(|n| self.net.nodes[*n].store.get(id).is_some_and(|(_, p)| p.is_some())))
            .collect();
        // The same entries, proofs and payloads.
        let fp = |n: usize| {
            let s = &self.net.nodes[n].store;
            let mut fp = (s.entries.len(), s.digest, s.proofs.len(), s.payloads_missing);
            if self.founder.is_some() {
                self.discount_beyond_cut_off(s, &mut fp);
            }
            fp.3 -= erased.iter().filter(|id| s.get(id).is_some_and(|(_, p)| p.is_none()) && !s.redacted.contains_key(id)).count();
            fp
        };
        let reference = fp(first);
        up.iter().filter(|n| fp(**n) == reference).count()
    }

    /// Take out of a store's fingerprint (entries, digest, proofs, payloads
    /// missing) what is beyond the cut-off of a removed agent: what a
    /// removed agent's own node holds of it and no other node accepts.
    fn discount_beyond_cut_off(&self, s: &MemStore, fp: &mut (usize, [u8; 32], usize, usize)) {
        for (agent, last) in self.admitted.iter().filter_map(|(a, l)| l.map(|l| (a, l))) {
            let beyond = s.entries.range((*agent, last + 1, EntryId([0; 32]))..).take_while(|((a, _, _), _)| a == agent);
            for ((_, _, id), (_, p)) in beyond {
                fp.0 -= 1;
                fp.1.iter_mut().zip(id.0).for_each(|(d, b)| *d ^= b);
                fp.3 -= usize::from(p.is_none());
            }
            fp.2 -= s.proofs.range((*agent, last + 1)..).take_while(|((a, _), _)| a == agent).count();
        }
    }

    /// A checkpoint of the live views: honest nodes whose stores hold the
    /// same entries, proofs and payloads have the same live view hash
    /// (each fed in its own arrival order), and it is the hash of the
    /// batch merge of those entries (the replay principle). The first
    /// break is kept, naming the nodes, the time and the hashes. At most
    /// [`BATCH_VIEWS_PER_CHECKPOINT`] batch merges are computed anew
    /// unless `last`.
    fn check_views(&mut self, last: bool) {
        if self.view_break.is_some() {
            return;
        }
        self.view_checkpoints += 1;
        let at = self.elapsed();
        let mut groups: BTreeMap<Contents, Vec<NodeHash>> = BTreeMap::new();
        for n in self.honest_up() {
            if let Some(h) = self.net.live_view_hash(n) {
                groups.entry(self.net.nodes[n].store.contents()).or_default().push((n, h));
            }
        }
        // The largest groups first: their batch views are computed within the budget.
        let mut groups: Vec<(Contents, Vec<NodeHash>)> = groups.into_iter().collect();
        groups.sort_by_key(|(_, nodes)| std::cmp::Reverse(nodes.len()));
        let mut budget = if last { usize::MAX } else { BATCH_VIEWS_PER_CHECKPOINT };
        for (contents, nodes) in groups {
            let (first, live) = nodes[0];
            if let Some(&(other, h)) = nodes.iter().find(|(_, h)| *h != live) {
                self.view_break = Some(format!(
                    "at {at} ms nodes {first} and {other} hold the same {} entries but their live views differ: node {first} {}, node {other} {}",
                    contents.0,
                    hex::encode(live),
                    hex::encode(h)
                ));
                return;
            }
            let batch = match self.batch_hashes.get(&contents) {
                Some(known) => known.clone(),
                None if budget == 0 => continue,
                None => {
                    budget -= 1;
                    let computed = batch_view_hash(&self.net.nodes[first].store, self.net.founder, &self.net.members_from_start);
                    self.batch_hashes.insert(contents, computed.clone());
                    computed
                }
            };
            let which: Vec<usize> = nodes.iter().map(|(n, _)| *n).collect();
            let broken = match batch {
                Ok(batch) if batch == live => continue,
                Ok(batch) => format!(
                    "at {at} ms the live view of nodes {which:?} is not the batch view of the {} entries they hold: live {}, batch {}",
                    contents.0,
                    hex::encode(live),
                    hex::encode(batch)
                ),
                Err(e) => format!("at {at} ms the batch view of the {} entries nodes {which:?} hold failed: {e}", contents.0),
            };
            self.view_break = Some(broken);
            return;
        }
    }

    /// Does the scenario have a key thief?
    fn has_thieves(&self) -> bool {
        self.adversaries.iter().any(|a| matches!(a.kind, AdversaryKind::KeyThief { .. }))
    }

    /// The key thieves' invariants at the honest nodes `up`, each the first
    /// violation found: an entry a thief signed that counts (under the
    /// roster the node derives, with what rotations and recoveries leave
    /// out); a thief's rotation stored by any node, or that a node's import
    /// rules, offered it now, do not refuse by the rule `rotation_key` (or
    /// that a node refused during the run by another rule); an owner's
    /// entry from its revocation or recovery on that a node lacks or does
    /// not count, or an owner due to take over under a recovered key that
    /// did not; a rotation a thief of both keys made with the stolen next
    /// key that a node lacks (it is valid), or that counts there, or an
    /// entry descending from it there that counts.
    fn theft_violations(&self, up: &[usize]) -> [Option<String>; 4] {
        let (mut counted, mut refused, mut owners, mut rotated) = (None, None, None, None);
        if let Some((thief, victim)) = self.thefts.unrevoked.first() {
            counted = Some(format!("the owner of {victim}'s key (stolen by node {thief}) never revoked it nor took over under a recovered key: its node left"));
        }
        for t in self.adversaries.iter().filter_map(|t| t.theft.as_ref()).filter(|t| t.recovering && !t.taken_over) {
            if up.contains(&self.agents[t.victim].node) {
                let name = &self.agents[t.victim].name;
                owners.get_or_insert(format!("{name}'s owner never took over under the key the founder's recovery granted (bound: {})", t.granted.is_some()));
            }
        }
        for &n in up {
            let store = &self.net.nodes[n].store;
            let roster = crate::views::derive_roster(store, self.net.founder, &self.net.members_from_start);
            let counts = |id: &EntryId| store.ids.get(id).is_some_and(|(a, seq)| roster.admits_entry(a, *seq, id));
            if let Some(id) = self.thefts.thief_entries.iter().find(|id| counts(id)) {
                counted.get_or_insert(format!("node {n} counts {id:?}, signed by a key thief"));
            }
            if let Some(id) = self.thefts.owner_entries.iter().find(|id| !counts(id)) {
                let how = if store.ids.contains_key(id) { "holds but does not count" } else { "lacks" };
                owners.get_or_insert(format!("node {n} {how} {id:?}, written by its owner from its revocation or recovery on"));
            }
            for (author, rotation) in &self.thefts.stolen_rotations {
                let Some(&(_, at)) = store.ids.get(rotation) else {
                    rotated.get_or_insert(format!("node {n} lacks the rotation {rotation:?} a thief made with a stolen next key (a valid entry)"));
                    continue;
                };
                // The rotation and every entry of the chain held there that descends from it, by backlinks.
                let mut line = BTreeSet::from([*rotation]);
                for ((_, _, id), (e, _)) in store.entries.range((*author, at + 1, EntryId([0; 32]))..).take_while(|((a, _, _), _)| a == author) {
                    if e.header().backlink.is_some_and(|b| line.contains(&b)) {
                        line.insert(*id);
                    }
                }
                if let Some(id) = line.iter().find(|id| counts(id)) {
                    rotated
                        .get_or_insert(format!("node {n} counts {id:?}, the rotation {rotation:?} a thief made with a stolen next key or an entry after it"));
                }
            }
            for (e, p) in &self.thefts.rotations {
                let offered = vec![agora_core::import::Offered { entry: e.clone(), payload: Some(p.clone()) }];
                let rule = match agora_core::import::plan_import(store, offered, false, self.net.now) {
                    Err(agora_core::import::PlanError::Refused { problem: agora_core::import::ImportProblem::Link(v), .. }) => v.rule.code().to_string(),
                    Err(other) => other.to_string(),
                    Ok(_) => "accepted".into(),
                };
                let during = store.refused.get(&e.id()).copied().unwrap_or("rotation_key");
                if rule != "rotation_key" || during != "rotation_key" {
                    refused.get_or_insert(format!("node {n}'s import gives {rule} (during the run: {during}) for the thief's rotation {:?}", e.id()));
                }
            }
        }
        for (n, node) in self.net.nodes.iter().enumerate() {
            if let Some((e, _)) = self.thefts.rotations.iter().find(|(e, _)| node.store.ids.contains_key(&e.id())) {
                refused.get_or_insert(format!("node {n} stores the thief's rotation {:?}", e.id()));
            }
        }
        [counted, refused, owners, rotated]
    }

    /// A checkpoint of the live views, and a sample of the figures.
    fn sample(&mut self) {
        self.check_views(false);
        self.record_sample();
    }

    fn record_sample(&mut self) {
        for n in 0..self.peak_memory.len() {
            self.peak_memory[n] = self.peak_memory[n].max(self.memory(n));
        }
        let up = self.honest_up();
        let Some(&first) = up.first() else { return };
        let store = &self.net.nodes[first].store;
        let disputes = self.created.iter().filter(|c| c.made == Made::Dispute && store.ids.contains_key(&c.id)).count();
        let sample = Sample { at_ms: self.elapsed(), entries: store.entries.len(), forks: store.proofs.len(), disputes, nodes_in_sync: self.in_sync() };
        self.series.push(sample);
    }

    /// A node's memory now. Measured when the program's allocator meters
    /// ([`crate::heap`]): what the node's work allocated and still holds,
    /// plus the bytes of the entries and payloads its store holds (shared
    /// between simulated nodes, so charged to none). Else estimated from
    /// its store (bytes held plus the maps' overhead per entry) and the
    /// replicator's bounded state (claims, requests in flight, held
    /// responses).
    fn memory(&self, n: usize) -> u64 {
        let node = &self.net.nodes[n];
        if self.metered {
            return crate::heap::held(n) + node.store.bytes;
        }
        let config = node.rep.config();
        node.store.bytes
            + 160 * node.store.entries.len() as u64
            + 96 * node.rep.claims_held() as u64
            + (node.rep.in_flight() + node.rep.held()) as u64 * config.response_bytes_max as u64
    }

    /// An agent's name in a report: its scripted or generated name, or, for
    /// an adversary, its id.
    fn agent_name(&self, agent: &AgentId) -> String {
        self.agents.iter().find(|a| a.key.agent_id() == *agent).map_or_else(|| hex::encode(agent.0), |a| a.name.clone())
    }

    /// How a report names an entry: the label of the scripted move that
    /// wrote it, or its id.
    fn entry_name(&self, entry: Option<EntryId>) -> String {
        match entry {
            None => "nothing".into(),
            Some(id) => self.labels.iter().find(|(_, l)| **l == id).map_or_else(|| format!("entry {id:?}"), |(label, _)| format!("{label:?}")),
        }
    }

    /// The first expectation of the scenario that `view`, one node's merged
    /// view, does not meet, worded as what was expected and what was found.
    fn expectation_mismatch(&self, view: &MergedView) -> Option<String> {
        self.scenario.expect.iter().find_map(|e| self.unmet(e, view))
    }

    fn unmet(&self, e: &Expectation, view: &MergedView) -> Option<String> {
        let label = &e.label;
        let Some(&id) = self.labels.get(label) else {
            return Some(format!("{label:?}: expected its node, found that the move was never made (its agent's node was down at its time)"));
        };
        let (Some(node), Some(marks)) = (view.graph().node(&id), view.node(&id)) else {
            return Some(format!(
                "{label:?}: expected its node, found none in the merged graph (its entry is missing, pending or off its author's view chain)"
            ));
        };
        if let Some(expected) = e.status
            && node.status() != expected
        {
            return Some(format!("{label:?} status: expected {}, found {}", expected.name(), node.status().name()));
        }
        if let Some(by) = &e.superseded_by {
            let expected = self.labels.get(by).copied();
            let found = view.graph().superseded_by(node);
            if found != expected {
                return Some(format!("{label:?} superseded_by: expected {by:?}, found {}", self.entry_name(found)));
            }
        }
        if let Some(expected) = e.settled
            && node.settled() != expected
        {
            return Some(format!("{label:?} settled: expected {expected}, found {}", node.settled()));
        }
        if let Some(expected) = &e.disputed_by
            && let Some(unmet) = self.other_agents(expected, marks.disputed_by.iter().map(|d| &d.by))
        {
            return Some(format!("{label:?} disputed_by: {unmet}"));
        }
        if let Some(expected) = e.judged
            && Verdict::of(node.judged()) != expected
        {
            return Some(format!("{label:?} judged: expected {expected:?}, found {:?}", Verdict::of(node.judged())));
        }
        if let Some(expected) = &e.accepted_by {
            let author = view.graph().position(node).author;
            let frontiers = view.chains.iter().filter(|c| c.author == author).flat_map(|c| &c.accepted_by);
            if let Some(unmet) = self.other_agents(expected, frontiers.filter(|(_, seq)| *seq >= node.seq()).map(|(agent, _)| agent)) {
                return Some(format!("{label:?} accepted_by: {unmet}"));
            }
        }
        None
    }

    /// `None` when `found` are exactly the agents named `expected`; else
    /// both sets, by name.
    fn other_agents<'a>(&self, expected: &[String], found: impl Iterator<Item = &'a AgentId>) -> Option<String> {
        let found: BTreeSet<String> = found.map(|a| self.agent_name(a)).collect();
        let expected: BTreeSet<String> = expected.iter().cloned().collect();
        (found != expected).then(|| format!("expected {expected:?}, found {found:?}"))
    }

    fn report(&mut self, converged_at: Option<u64>, replay: String) -> Report {
        let s = self.scenario;
        let up = self.honest_up();
        let end_ms = self.elapsed();
        let honest_nodes: BTreeSet<u64> = (0..s.nodes as u64).collect();
        let mut invariants = Vec::new();
        let mut check = |name: &str, violation: Option<String>| invariants.push(InvariantResult { name: name.into(), held: violation.is_none(), violation });

        check(
            "honest nodes converge within settle_ms",
            converged_at.is_none().then(|| {
                let state: Vec<String> = up
                    .iter()
                    .map(|&n| {
                        let st = &self.net.nodes[n].store;
                        format!("node {n}: {} entries, {} proofs, {} payloads missing", st.entries.len(), st.proofs.len(), st.payloads_missing)
                    })
                    .collect();
                format!("{} of {} honest nodes in sync {} ms after activity ended ({})", self.in_sync(), up.len(), s.settle_ms, state.join("; "))
            }),
        );

        // The merged view at every honest node (computed once per distinct
        // store), its hash and, when the scenario expects something of it,
        // the first departure from the expectations.
        let mut by_digest: BTreeMap<Contents, (String, Option<String>)> = BTreeMap::new();
        let mut view_hashes = Vec::new();
        let mut view_error = None;
        let mut unmet = None;
        for &n in &up {
            let store = &self.net.nodes[n].store;
            let fp = store.contents();
            let (h, mismatch) = match by_digest.get(&fp) {
                Some(known) => known.clone(),
                None => {
                    // What counts under the roster the node holds, when the
                    // founder writes one or a key thief may have its entries left out.
                    let roster = (self.founder.is_some() || self.has_thieves())
                        .then(|| crate::views::derive_roster(store, self.net.founder, &self.net.members_from_start));
                    let entries: Vec<MergeEntry> = store
                        .entries
                        .iter()
                        .filter(|((a, seq, id), _)| roster.as_ref().is_none_or(|r| r.admits_entry(a, *seq, id)))
                        .filter_map(|((_, _, id), (e, p))| MergeEntry::with_content(SignedEntry::clone(e), store.content(id, p)).ok())
                        .collect();
                    let proofs: Vec<_> =
                        store.proofs.iter().filter(|((a, seq), _)| roster.as_ref().is_none_or(|r| r.admits_fork(a, *seq))).map(|(_, p)| p.clone()).collect();
                    // Only a scenario with expectations pays for the merged graph.
                    let computed = if s.expect.is_empty() {
                        Merge::compute(&entries, &proofs).map(|m| (hex::encode(m.view_hash()), None))
                    } else {
                        Merge::compute_with_view(&entries, &proofs).map(|(m, view)| (hex::encode(m.view_hash()), self.expectation_mismatch(&view)))
                    };
                    let known = computed.unwrap_or_else(|e| {
                        view_error.get_or_insert(format!("node {n}: the merged view failed: {e}"));
                        (String::new(), (!s.expect.is_empty()).then(|| format!("the merged view failed: {e}")))
                    });
                    by_digest.insert(fp, known.clone());
                    known
                }
            };
            if let Some(m) = mismatch {
                unmet.get_or_insert(format!("node {n}: {m}"));
            }
            view_hashes.push(h);
        }
        let distinct: BTreeSet<&String> = view_hashes.iter().collect();
        check(
            "honest nodes compute the same merged view hash",
            view_error.or_else(|| (distinct.len() > 1).then(|| format!("{} different view hashes among {} honest nodes", distinct.len(), up.len()))),
        );
        check("scripted expectations hold at every honest node", unmet);
        let view_failure = self.net.view_failures.first().map(|(n, e)| format!("node {n}: {e}"));
        check(
            "every honest node's live view is the batch view of what it holds, at every checkpoint",
            view_failure.or_else(|| self.view_break.take()).or_else(|| (self.view_checkpoints == 0).then(|| "no checkpoint compared the live views".into())),
        );

        // Every equivocation proven at every honest node.
        let mut forks = Vec::new();
        let mut unproven = None;
        for (&(author, seq), &forked_at) in &self.forked {
            let seen = self.net.forks_seen.get(&(author, seq)).cloned().unwrap_or_default();
            let first_ms = seen.values().min().map_or(0, |t| t - START_MS);
            let honest_seen: Vec<u64> = up.iter().filter_map(|n| seen.get(n).copied()).collect();
            let first_honest_ms = honest_seen.iter().min().map(|t| t - START_MS);
            let all = (honest_seen.len() == up.len()).then(|| honest_seen.iter().max().map_or(0, |t| t - START_MS));
            if let Some(&n) = up.iter().find(|n| !self.net.nodes[**n].store.proofs.contains_key(&(author, seq))) {
                unproven.get_or_insert(format!("node {n} holds no proof of {} seq {seq}", hex::encode(author.0)));
            }
            forks.push(ForkDetection { author: hex::encode(author.0), seq, forked_ms: forked_at - START_MS, first_ms, first_honest_ms, all_honest_ms: all });
        }
        check("every equivocation is proven at every honest node", unproven);
        if self.has_thieves() {
            let [counted, refused, owners, rotated] = self.theft_violations(&up);
            let both = |b: bool| self.adversaries.iter().any(|a| matches!(a.kind, AdversaryKind::KeyThief { both_keys, .. } if both_keys == b));
            check("no entry a key thief signed counts at any honest node", counted);
            if both(false) {
                check("every rotation a key thief tried is stored nowhere and refused by every honest node's import (rotation_key)", refused);
            }
            check("every entry an owner wrote from its revocation or recovery on counts at every honest node", owners);
            if both(true) {
                check("every rotation a thief of both keys made is stored at every honest node, and neither it nor any entry after it counts", rotated);
            }
        }

        // Nothing invalid stored: every entry verifies (each distinct one once),
        // is by an admitted author, and is not dated beyond the allowed skew.
        let mut distinct_entries: BTreeMap<EntryId, (SignedEntry, Option<Vec<u8>>, usize)> = BTreeMap::new();
        for &n in &up {
            for (e, p) in self.net.nodes[n].store.entries.values() {
                distinct_entries.entry(e.id()).or_insert_with(|| (SignedEntry::clone(e), p.as_deref().map(<[u8]>::to_vec), n));
            }
        }
        let mut invalid = None;
        let latest = self.net.now + FUTURE_SKEW_MAX_MS;
        for (id, (e, _, n)) in &distinct_entries {
            if !self.admitted.contains_key(&e.header().author) {
                invalid.get_or_insert(format!("node {n} stores {id:?} by an author not on the roster"));
            }
            if e.header().timestamp_ms > latest {
                invalid.get_or_insert(format!("node {n} stores {id:?}, dated beyond the allowed skew"));
            }
        }
        let batch: Vec<(SignedEntry, Option<Vec<u8>>)> = distinct_entries.values().map(|(e, p, _)| (e.clone(), p.clone())).collect();
        if let Err(e) = agora_core::verify::check_entries(batch) {
            invalid.get_or_insert(format!("a stored entry does not verify: {e}"));
        }
        check("no invalid entry is stored", invalid);

        // No honest entry or payload lost: what an honest node still online
        // holds, every one of them holds. An entry (or payload) whose every
        // holder left or is down is gone with them, not lost by the swarm.
        let mut lost = None;
        for id in &self.honest_ids {
            let held = |n: &usize| self.net.nodes[*n].store.get(id);
            if self.founder.is_some() && up.iter().find_map(|n| self.net.nodes[*n].store.ids.get(id)).is_some_and(|(a, seq)| self.beyond_cut_off(a, *seq)) {
                continue; // written before its author's removal, beyond its cut-off: replicated nowhere since
            }
            // One pass over the nodes still up: does any hold the entry (and
            // its payload), and which first lacks it (or lacks the payload,
            // not having redacted it: a node that redacted the payload holds
            // all it ever will of it)?
            let (mut entry_held, mut payload_held) = (false, false);
            let (mut first_without, mut first_without_payload) = (None, None);
            for &n in &up {
                match held(&n) {
                    None => {
                        first_without.get_or_insert(n);
                    }
                    Some((_, p)) => {
                        entry_held = true;
                        if p.is_some() {
                            payload_held = true;
                        } else if !self.net.nodes[n].store.redacted.contains_key(id) {
                            first_without_payload.get_or_insert(n);
                        }
                    }
                }
            }
            let lacking = match (entry_held, first_without) {
                (false, _) => None,
                (true, Some(n)) => Some((n, "")),
                (true, None) if !payload_held => None,
                (true, None) => first_without_payload.map(|n| (n, "the payload of ")),
            };
            if let Some((n, what)) = lacking {
                let writer = self
                    .created
                    .iter()
                    .find(|c| c.id == *id)
                    .and_then(|c| self.agents.iter().find(|a| a.key.agent_id() == c.author))
                    .map_or(usize::MAX, |a| a.node);
                let payload_holders: Vec<usize> = up.iter().copied().filter(|n| held(n).is_some_and(|(_, p)| p.is_some())).collect();
                lost = Some(format!(
                    "node {n} lacks {what}honest entry {id:?} (written through node {writer}; held with its payload by nodes {payload_holders:?}; payloads given up at node {n}: {})",
                    self.net.nodes[n].unavailable.len()
                ));
                break;
            }
        }
        check("no honest entry or payload is lost", lost);

        // A redaction sticks: no import brought a redacted payload back.
        let returned = self.redacted.iter().find(|(n, id)| self.net.nodes[*n].store.get(id).is_some_and(|(_, p)| p.is_some()));
        check(
            "a payload redacted at a node never comes back to it",
            returned.map(|(n, id)| format!("node {n} holds the payload of {} again after redacting it", self.entry_name(Some(*id)))),
        );

        let memory: Vec<u64> = (0..self.net.nodes.len()).map(|n| self.peak_memory[n].max(self.memory(n))).collect();
        let over = (0..s.nodes).find(|n| memory[*n] > s.bounds.node_memory_bytes);
        let how = if self.metered { "measured" } else { "estimated" };
        check(
            "memory per honest node stays under its bound",
            over.map(|n| format!("node {n} held {} bytes at its peak ({how}), over {}", memory[n], s.bounds.node_memory_bytes)),
        );

        let banned_honest = self.net.bans.iter().find(|(by, peer, _)| honest_nodes.contains(by) && honest_nodes.contains(peer));
        check("no honest node is banned", banned_honest.map(|(by, peer, reason)| format!("node {by} banned honest node {peer}: {reason}")));

        let roles: Vec<String> = (0..self.net.nodes.len())
            .map(|n| {
                if n < s.nodes {
                    "honest".to_string()
                } else {
                    let kind = &self.adversaries[n - s.nodes].kind;
                    serde_json::to_value(kind).ok().and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string)).unwrap_or_default()
                }
            })
            .collect();
        let nodes = (0..self.net.nodes.len())
            .map(|n| NodeFigures {
                node: n,
                role: roles[n].clone(),
                up: !self.net.nodes[n].down,
                entries: self.net.nodes[n].store.entries.len(),
                memory_bytes: memory[n],
                traffic: self.net.nodes[n].traffic,
            })
            .collect();
        let bans = std::mem::take(&mut self.net.bans).into_iter().map(|(by, peer, reason)| Ban { by, peer, reason }).collect();
        let ok = invariants.iter().all(|i| i.held);
        // How fast honest moves spread: from its append to the last honest
        // node storing it, over the moves every honest node holds.
        let mut spreads: Vec<u64> = self.net.spread.values().filter(|m| m.honest_nodes as usize >= s.nodes).map(|m| m.last_ms - m.appended_ms).collect();
        spreads.sort_unstable();
        let quantile = |q: f64| spreads[((spreads.len() - 1) as f64 * q).round() as usize];
        let spread = (!spreads.is_empty()).then(|| MoveSpread {
            moves: spreads.len(),
            moves_not_everywhere: self.net.spread.len() - spreads.len(),
            p50_ms: quantile(0.5),
            p99_ms: quantile(0.99),
            max_ms: quantile(1.0),
        });
        Report {
            scenario: s.name.clone(),
            seed: self.seed,
            replay,
            swarm: Swarm {
                honest_nodes: s.nodes,
                adversary_nodes: self.adversaries.len(),
                honest_agents: self.agents.iter().filter(|a| !a.adversary).count(),
                adversary_agents: self.adversaries.iter().filter(|a| a.kind.writes() || a.kind == AdversaryKind::Outsider).count()
                    + self.agents.iter().filter(|a| a.adversary).count(),
            },
            activity_end_ms: self.activity_end_ms,
            last_heal_ms: self.last_heal_ms,
            end_ms,
            events: events_of(s),
            convergence_ms: converged_at,
            settle_ms: s.settle_ms,
            spread,
            entries_written: std::mem::take(&mut self.written),
            view_hashes,
            forks,
            series: std::mem::take(&mut self.series),
            nodes,
            bans,
            memory_measured: self.metered,
            load: crate::report::Load { gossip: self.net.gossip_traffic, busy_answers: self.net.busy, lost_writes: self.net.lost_writes },
            invariants,
            ok,
        }
    }
}

/// A node and its live view hash.
type NodeHash = (usize, [u8; 32]);

/// The view hash of the batch merge ([`Merge::compute`]) of what `store`
/// holds that counts under the roster it holds (`founder`'s, with the
/// members `from_start`).
#[allow(clippy::result_large_err)]
fn batch_view_hash(store: &MemStore, founder: AgentId, from_start: &BTreeSet<AgentId>) -> Result<[u8; 32], String> {
    let roster = crate::views::derive_roster(store, founder, from_start);
    let entries: Vec<MergeEntry> = store
        .entries
        .iter()
        .filter(|((a, seq, id), _)| roster.admits_entry(a, *seq, id))
        .map(|((_, _, id), (e, p))| MergeEntry::with_content(SignedEntry::clone(e), store.content(id, p)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let proofs: Vec<_> = store.proofs.iter().filter(|((a, seq), _)| roster.admits_fork(a, *seq)).map(|(_, p)| p.clone()).collect();
    Merge::compute(&entries, &proofs).map(|m| m.view_hash()).map_err(|e| e.to_string())
}

/// Virtual time at the start of a run (the network's clock starts above 0
/// so that "0" never means "unset" in the replicator's timers).
pub const START_MS: u64 = 1_000;

/// What `s` makes happen to the swarm, in time order (ties by kind, then
/// nodes).
fn events_of(s: &Scenario) -> Vec<RunEvent> {
    let mut events = Vec::new();
    for p in &s.partitions {
        let largest = p.groups.iter().map(Vec::len).max().unwrap_or(0);
        let main = p.groups.iter().position(|g| g.len() == largest);
        let mut cut: Vec<usize> = p.groups.iter().enumerate().filter(|(i, _)| Some(*i) != main).flat_map(|(_, g)| g.iter().copied()).collect();
        cut.sort_unstable();
        events.push(RunEvent { at_ms: p.at_ms, until_ms: Some(p.heal_ms), kind: RunEventKind::Partition, nodes: cut });
    }
    for c in &s.churn {
        for (at, kind) in
            [(c.join_ms, RunEventKind::Join), (c.crash_ms, RunEventKind::Crash), (c.restart_ms, RunEventKind::Restart), (c.leave_ms, RunEventKind::Leave)]
        {
            if let Some(at_ms) = at {
                events.push(RunEvent { at_ms, until_ms: None, kind, nodes: vec![c.node] });
            }
        }
    }
    for a in &s.adversaries {
        if let AdversaryKind::Eclipse { victim, until_ms } = a.kind {
            events.push(RunEvent { at_ms: 0, until_ms: Some(until_ms), kind: RunEventKind::Eclipse, nodes: vec![victim] });
        }
    }
    for r in &s.roster {
        let kind = if r.admit.is_some() { RunEventKind::Admit } else { RunEventKind::Remove };
        events.push(RunEvent { at_ms: r.at_ms, until_ms: None, kind, nodes: Vec::new() });
    }
    for r in &s.redactions {
        events.push(RunEvent { at_ms: r.at_ms, until_ms: None, kind: RunEventKind::Redact, nodes: vec![r.node] });
    }
    events.sort_by(|a, b| (a.at_ms, a.kind, &a.nodes).cmp(&(b.at_ms, b.kind, &b.nodes)));
    events
}

/// Play `scenario` with `seed`; `replay` is the command that replays it.
pub fn run(scenario: &Scenario, seed: u64, replay: String) -> Report {
    Run::new(scenario, seed).play(replay)
}
