//! The adversary search: strategies sampled from a seed over every
//! adversary family and its parameters, each played against a scenario and
//! checked against every invariant of the run, and against the liveness
//! bound: honest nodes converge within twice the time of the honest-only
//! run of the same seed, plus a constant.
//!
//! A trial is named by its strategy seed: from it come the family's
//! parameters, the adversaries' count and the run's seed, so one trial is
//! replayed alone by its family and strategy seed. The honest-only run is
//! the same scenario with the same adversary nodes following the protocol
//! ([`AdversaryKind::Honest`]): the same swarm, links and honest moves (the
//! adversaries draw from a generator of their own), none misbehaving. The
//! search keeps, per family, the trial with the worst ratio of convergence
//! times, and every trial that broke an invariant.

use crate::report::Report;
use crate::scenario::{Adversary, AdversaryKind, AnswerKind, Scenario};
use agora_core::xorshift::Xorshift64;
use serde::Serialize;
use std::collections::BTreeMap;

/// The constant of the liveness bound, virtual ms: a strategy may cost the
/// swarm's convergence twice the honest-only time plus this, the default
/// request timeout (`protocol-spec/replication.md`, "Liveness": what an
/// answer that never comes may cost once).
pub const LIVENESS_SLACK_MS: u64 = 10_000;

/// Most trials in one search.
pub const BUDGET_MAX: usize = 100_000;

/// The adversary families a search samples from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Serves everything, late.
    SlowServer,
    /// Serves a fraction, or the first few entries, of each range with `more = false`.
    PartialServer,
    /// Serves one entry at a time.
    Dripper,
    /// Serves ranges in reverse order.
    Reorderer,
    /// Serves entries twice.
    Duplicator,
    /// Claims heads and never answers.
    Silent,
    /// Claims heads and answers empty.
    EmptyAfterClaim,
    /// Republishes old entries and their stripped and announced variants,
    /// and sends stale frontiers.
    Replayer,
    /// Records with a skewed clock, answering honest positions.
    Backdater,
    /// Forks a seq into many branches, spread over time.
    ForkFlooder,
    /// Strips the payloads of a pattern of entries it serves and relays.
    Stripper,
    /// One operator behind many nodes and identities, acting together.
    Sybil,
    /// A victim's only connections for a while, then it gets one honest peer.
    Eclipse,
    /// Relays some authors' gossip and delays or drops the others'.
    SelectiveRelay,
    /// An equivocator whose only relays strip the payloads of its forks.
    ColludingForker,
    /// Steals an honest agent's current key early or late in the writing,
    /// signs forks of its chain slowly or fast and tries to rotate it to a
    /// key of its own; the owner revokes at once (before the thief's
    /// entries reach the nodes) or once they have spread.
    KeyThief,
    /// Steals both keys of an honest agent (the moments and paces of a key
    /// thief) and rotates its chain validly to a key of its own; the
    /// roster's founder recovers the victim at once or once the thief's
    /// entries have spread, and the owner takes over under a fresh key.
    KeyRecovery,
}

impl Family {
    /// Every family, in the order a search takes them in turn.
    pub const ALL: [Family; 17] = [
        Family::SlowServer,
        Family::PartialServer,
        Family::Dripper,
        Family::Reorderer,
        Family::Duplicator,
        Family::Silent,
        Family::EmptyAfterClaim,
        Family::Replayer,
        Family::Backdater,
        Family::ForkFlooder,
        Family::Stripper,
        Family::Sybil,
        Family::Eclipse,
        Family::SelectiveRelay,
        Family::ColludingForker,
        Family::KeyThief,
        Family::KeyRecovery,
    ];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::SlowServer => "slow_server",
            Family::PartialServer => "partial_server",
            Family::Dripper => "dripper",
            Family::Reorderer => "reorderer",
            Family::Duplicator => "duplicator",
            Family::Silent => "silent",
            Family::EmptyAfterClaim => "empty_after_claim",
            Family::Replayer => "replayer",
            Family::Backdater => "backdater",
            Family::ForkFlooder => "fork_flooder",
            Family::Stripper => "stripper",
            Family::Sybil => "sybil",
            Family::Eclipse => "eclipse",
            Family::SelectiveRelay => "selective_relay",
            Family::ColludingForker => "colluding_forker",
            Family::KeyThief => "key_thief",
            Family::KeyRecovery => "key_recovery",
        }
    }

    /// The family named `name`.
    pub fn from_name(name: &str) -> Result<Family, SearchError> {
        Family::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
            SearchError::Family(format!("{name:?}: one of {}", names.join(", ")))
        })
    }

    /// A strategy of this family against `scenario`: its adversaries,
    /// drawn from `rng`.
    fn sample(self, rng: &mut Xorshift64, scenario: &Scenario) -> Adversary {
        let pick = |rng: &mut Xorshift64, of: &[u64]| of[rng.below(of.len())];
        let delay_ms = pick(rng, &[0, 50, 200, 1_000, 3_000, 8_000]);
        let server = |answer: AnswerKind, delay_ms: u64, k: u32, per_mille: u32| AdversaryKind::Server { delay_ms, answer, k, per_mille };
        let (kind, every_ms) = match self {
            Family::SlowServer => (server(AnswerKind::Full, pick(rng, &[200, 1_000, 3_000, 8_000, 20_000]), 1, 500), 2_000),
            Family::PartialServer => {
                let (k, per_mille) = (pick(rng, &[1, 2, 10, 100]) as u32, pick(rng, &[1, 10, 100, 500, 900]) as u32);
                let answer = if rng.below(2) == 0 { AnswerKind::FirstK } else { AnswerKind::Fraction };
                (server(answer, delay_ms, k, per_mille), 2_000)
            }
            Family::Dripper => (server(AnswerKind::OneAtATime, delay_ms, 1, 500), 2_000),
            Family::Reorderer => (server(AnswerKind::Reversed, delay_ms, 1, 500), 2_000),
            Family::Duplicator => (server(AnswerKind::Duplicated, delay_ms, 1, 500), 2_000),
            Family::Silent => (server(AnswerKind::Silent, 0, 1, 500), 2_000),
            Family::EmptyAfterClaim => (server(AnswerKind::Empty, delay_ms, 1, 500), 2_000),
            Family::Replayer => {
                let rate = pick(rng, &[1, 10, 100, 1_000]) as usize;
                (AdversaryKind::Replayer { rate, stale_frontiers: rng.below(2) == 0 }, pick(rng, &[100, 500, 2_000]))
            }
            Family::Backdater => {
                let skew_ms = pick(rng, &[1_000, 60_000, 3_600_000, 86_400_000, 31_536_000_000]) as i64;
                let skew_ms = if rng.below(2) == 0 { -skew_ms } else { skew_ms };
                (AdversaryKind::Backdater { skew_ms, targets: rng.below(4) != 0 }, pick(rng, &[200, 1_000, 3_000]))
            }
            Family::ForkFlooder => {
                let branches = pick(rng, &[2, 50, 500, 2_000, 5_000]) as usize;
                let packs = (pick(rng, &[1, 2, 10, 100]) as usize).min(branches);
                (AdversaryKind::Equivocator { fork_at_seq: 1 + rng.below_u64(4), branches, packs }, pick(rng, &[100, 500, 2_000]))
            }
            Family::Stripper => (AdversaryKind::Stripper { per_mille: pick(rng, &[100, 500, 900, 1_000]) as u32 }, 2_000),
            Family::Sybil => (AdversaryKind::Sybil { identities: pick(rng, &[1, 4, 16, 64]) as usize }, pick(rng, &[200, 1_000, 3_000])),
            Family::Eclipse => {
                // It ends within the writing: the liveness bound applies once the victim has an honest peer.
                let until_ms = scenario.duration_ms * pick(rng, &[1, 2, 4]) / 4;
                (AdversaryKind::Eclipse { victim: rng.below(scenario.nodes), until_ms }, 2_000)
            }
            Family::SelectiveRelay => {
                let per_mille = pick(rng, &[100, 500, 900, 1_000]) as u32;
                (AdversaryKind::SelectiveRelay { per_mille, delay_ms: pick(rng, &[0, 0, 200, 3_000, 20_000]) }, 2_000)
            }
            Family::ColludingForker => {
                let branches = pick(rng, &[2, 10, 100]) as usize;
                (AdversaryKind::ColludingForker { fork_at_seq: 1 + rng.below_u64(4), branches }, pick(rng, &[100, 500, 2_000]))
            }
            Family::KeyThief | Family::KeyRecovery => {
                // Early or late in the writing; slow or fast; the owner
                // revokes (or the founder recovers) at once or once every
                // fork (and, with both keys, both rotations) has spread.
                let steal_ms = scenario.duration_ms * pick(rng, &[1, 3, 6, 9]) / 10;
                let every_ms = pick(rng, &[50, 200, 1_000, 3_000]);
                let forks = pick(rng, &[1, 2, 4, 16]) as usize;
                let revoke_ms = if rng.below(2) == 0 { pick(rng, &[0, every_ms / 2]) } else { every_ms * (forks as u64 + 2) + pick(rng, &[500, 3_000]) };
                let both_keys = self == Family::KeyRecovery;
                (AdversaryKind::KeyThief { victim: None, steal_ms: Some(steal_ms), revoke_ms: Some(revoke_ms), forks, both_keys }, every_ms)
            }
        };
        let count = match self {
            Family::ColludingForker => 2 + rng.below(2),
            Family::KeyThief | Family::KeyRecovery => 1 + rng.below(2),
            _ => 1 + rng.below(3),
        };
        Adversary { kind, count, every_ms }
    }
}

/// Why a search could not start.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A family that does not exist.
    #[error("family {0}")]
    Family(String),
    /// A budget of nothing, or too much.
    #[error("budget: {0} is not between 1 and {BUDGET_MAX}")]
    Budget(usize),
    /// The scenario with a sampled strategy does not validate.
    #[error("the scenario with the strategy {strategy_seed} of {family}: {reason}")]
    Invalid {
        /// The family.
        family: &'static str,
        /// The strategy seed.
        strategy_seed: u64,
        /// What `Scenario::validate` said.
        reason: String,
    },
}

/// What to search.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// Trials (each one run of a strategy, with its honest-only run).
    pub budget: usize,
    /// The seed every strategy seed comes from.
    pub seed: u64,
    /// Only this family (default: every family in turn).
    pub family: Option<Family>,
    /// Only this strategy (with `family`): the replay of one trial.
    pub strategy_seed: Option<u64>,
}

/// One strategy played.
#[derive(Clone, Debug, Serialize)]
pub struct Trial {
    /// Its family.
    pub family: Family,
    /// The seed of its parameters and its run.
    pub strategy_seed: u64,
    /// Its adversaries, as a scenario's `[[adversaries]]` table says them.
    pub adversaries: Vec<Adversary>,
    /// The run's seed (its honest-only run has the same).
    pub run_seed: u64,
    /// Convergence of the honest nodes, virtual ms (`None`: not within `settle_ms`).
    pub convergence_ms: Option<u64>,
    /// The honest-only run's.
    pub honest_convergence_ms: Option<u64>,
    /// `convergence_ms` over the honest-only run's (`None`: it did not
    /// converge while the honest-only run did, the worst; 1 when neither did).
    pub ratio: Option<f64>,
    /// What the liveness bound allows: twice the honest-only time plus
    /// [`LIVENESS_SLACK_MS`].
    pub bound_ms: Option<u64>,
    /// Every invariant broken, the liveness bound's included.
    pub violated: Vec<String>,
    /// The command that replays this trial alone.
    pub replay: String,
}

/// A family's result.
#[derive(Clone, Debug, Serialize)]
pub struct FamilyResult {
    /// The family.
    pub family: Family,
    /// Trials of it.
    pub runs: usize,
    /// Trials that broke an invariant.
    pub violating_runs: usize,
    /// The trial with the worst ratio (the first such, by strategy seed order of play).
    pub worst: Trial,
}

/// A search's report: the same bytes for the same scenario, budget and seed.
#[derive(Clone, Debug, Serialize)]
pub struct SearchReport {
    /// The scenario's name.
    pub scenario: String,
    /// The search's seed.
    pub seed: u64,
    /// Trials played.
    pub budget: usize,
    /// The liveness bound's constant.
    pub slack_ms: u64,
    /// Per family, in [`Family::ALL`]'s order.
    pub families: Vec<FamilyResult>,
    /// Every trial that broke an invariant.
    pub violations: Vec<Trial>,
    /// Did every trial hold every invariant?
    pub ok: bool,
}

/// A well-mixed 64-bit value from `seed` and `i` (splitmix64's finaliser).
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The trials of a search: (family, strategy seed), in the order played.
pub fn plan(options: &SearchOptions) -> Result<Vec<(Family, u64)>, SearchError> {
    if let (Some(family), Some(s)) = (options.family, options.strategy_seed) {
        return Ok(vec![(family, s)]);
    }
    if options.budget == 0 || options.budget > BUDGET_MAX {
        return Err(SearchError::Budget(options.budget));
    }
    Ok((0..options.budget)
        .map(|i| {
            let family = options.family.unwrap_or(Family::ALL[i % Family::ALL.len()]);
            (family, mix(options.seed, i as u64))
        })
        .collect())
}

/// `scenario` with `adversaries` added after its own.
fn with_adversaries(scenario: &Scenario, adversaries: &[Adversary]) -> Scenario {
    let mut s = scenario.clone();
    s.adversaries.extend(adversaries.iter().cloned());
    s
}

/// The honest-only counterpart of `adversaries`: as many nodes, honest.
fn honest_counterpart(adversaries: &[Adversary]) -> Vec<Adversary> {
    adversaries.iter().map(|a| Adversary { kind: AdversaryKind::Honest, count: a.count, every_ms: a.every_ms }).collect()
}

/// An honest-only run's identity: its seed, and its adversary nodes'
/// (count, every_ms).
type BaselineKey = (u64, Vec<(usize, u64)>);

/// Play the trials of `options` against `scenario`; `replay` gives a
/// trial's replay command from its family and strategy seed, `each` sees
/// every trial as it ends.
pub fn search(
    scenario: &Scenario,
    options: &SearchOptions,
    replay: impl Fn(Family, u64) -> String,
    mut each: impl FnMut(&Trial),
) -> Result<SearchReport, SearchError> {
    let trials = plan(options)?;
    let mut baselines: BTreeMap<BaselineKey, Option<u64>> = BTreeMap::new();
    let mut families: BTreeMap<Family, FamilyResult> = BTreeMap::new();
    let mut violations = Vec::new();
    for (family, strategy_seed) in trials {
        let mut rng = Xorshift64(strategy_seed | 1);
        let adversaries = vec![family.sample(&mut rng, scenario)];
        let run_seed = rng.next_u64() % 1_000_000 + 1;
        let attacked = with_adversaries(scenario, &adversaries);
        attacked.validate().map_err(|reason| SearchError::Invalid { family: family.name(), strategy_seed, reason })?;
        let report = crate::run(&attacked, run_seed, String::new());
        let honest = honest_counterpart(&adversaries);
        let key = (run_seed, honest.iter().map(|a| (a.count, a.every_ms)).collect());
        let honest_ms = *baselines.entry(key).or_insert_with(|| crate::run(&with_adversaries(scenario, &honest), run_seed, String::new()).convergence_ms);
        let trial = judge(family, strategy_seed, adversaries, run_seed, &report, honest_ms, replay(family, strategy_seed));
        each(&trial);
        if !trial.violated.is_empty() {
            violations.push(trial.clone());
        }
        match families.get_mut(&family) {
            None => {
                let violating_runs = usize::from(!trial.violated.is_empty());
                families.insert(family, FamilyResult { family, runs: 1, violating_runs, worst: trial });
            }
            Some(r) => {
                r.runs += 1;
                r.violating_runs += usize::from(!trial.violated.is_empty());
                if worse(&trial, &r.worst) {
                    r.worst = trial;
                }
            }
        }
    }
    let ok = violations.is_empty();
    Ok(SearchReport {
        scenario: scenario.name.clone(),
        seed: options.seed,
        budget: families.values().map(|f| f.runs).sum(),
        slack_ms: LIVENESS_SLACK_MS,
        families: families.into_values().collect(),
        violations,
        ok,
    })
}

/// Is `a` worse than `b`: a higher ratio (not converging is the highest),
/// or as high and more invariants broken?
fn worse(a: &Trial, b: &Trial) -> bool {
    let rank = |t: &Trial| t.ratio.unwrap_or(f64::MAX);
    rank(a) > rank(b) || (rank(a) == rank(b) && a.violated.len() > b.violated.len())
}

/// A trial's figures and verdict: the run's invariants, and the liveness
/// bound against the honest-only run's convergence.
fn judge(family: Family, strategy_seed: u64, adversaries: Vec<Adversary>, run_seed: u64, report: &Report, honest_ms: Option<u64>, replay: String) -> Trial {
    let mut violated: Vec<String> =
        report.invariants.iter().filter(|i| !i.held).map(|i| format!("{}: {}", i.name, i.violation.clone().unwrap_or_default())).collect();
    let bound_ms = honest_ms.map(|h| 2 * h + LIVENESS_SLACK_MS);
    let ratio = match (report.convergence_ms, honest_ms) {
        (Some(a), Some(h)) => Some(a as f64 / h.max(1) as f64),
        (None, Some(_)) => None,
        (_, None) => Some(1.0),
    };
    match (report.convergence_ms, bound_ms) {
        (Some(a), Some(b)) if a > b => {
            violated.push(format!("liveness: converged in {a} ms, over the bound of {b} ms (2 × {} + {LIVENESS_SLACK_MS})", honest_ms.unwrap_or(0)))
        }
        (None, Some(b)) => violated.push(format!("liveness: did not converge within {} ms (the bound is {b} ms)", report.settle_ms)),
        _ => {}
    }
    Trial {
        family,
        strategy_seed,
        adversaries,
        run_seed,
        convergence_ms: report.convergence_ms,
        honest_convergence_ms: honest_ms,
        ratio,
        bound_ms,
        violated,
        replay,
    }
}
