//! Every field of a scenario file is bounded: a value out of its bound is
//! refused with an error that names the field, before anything is built.

use agora_sim::Scenario;

const BASE: &str = r#"
name = "bounds"
nodes = 3
agents_per_node = 1
duration_ms = 1_000
"#;

/// `BASE` with `case`'s keys put over it (tables merged key by key).
fn with(case: &str) -> String {
    fn merge(into: &mut toml::Table, from: toml::Table) {
        for (k, v) in from {
            match (into.get_mut(&k), v) {
                (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
                (_, v) => {
                    into.insert(k, v);
                }
            }
        }
    }
    let mut base: toml::Table = toml::from_str(BASE).expect("the base parses");
    merge(&mut base, toml::from_str(case).unwrap_or_else(|e| panic!("case {case:?}: {e}")));
    toml::to_string(&base).expect("a table prints")
}

/// (a value out of bounds, the field the error must name).
const CASES: &[(&str, &str)] = &[
    ("name = ''", "name"),
    ("description = '''\n{LONG}'''", "description"),
    ("nodes = 0", "nodes"),
    ("nodes = 100_001", "nodes"),
    ("agents_per_node = 4294967295", "agents_per_node"),
    ("agents_per_node = 10_000\nnodes = 1_000\ntopology = { kind = 'ring' }", "agents_per_node × nodes"),
    ("topology = { kind = 'random', degree = 1 }", "topology.degree"),
    ("topology = { kind = 'random', degree = 100_000 }", "topology.degree"),
    ("network = { latency = { kind = 'fixed', ms = 999_999_999_999 } }", "network.latency.ms"),
    ("network = { latency = { kind = 'uniform', min_ms = 0, max_ms = 999_999_999_999 } }", "network.latency.max_ms"),
    ("network = { latency = { kind = 'normal', mean_ms = 1e300, sd_ms = 1.0 } }", "network.latency.mean_ms"),
    ("network = { latency = { kind = 'log_normal', median_ms = 10.0, sigma = 1e9, max_ms = 10 } }", "network.latency.sigma"),
    ("network = { bandwidth_bytes_per_s = 0 }", "network.bandwidth_bytes_per_s"),
    ("network = { bandwidth_bytes_per_s = 9_000_000_000_000_000 }", "network.bandwidth_bytes_per_s"),
    ("network = { loss_ppm = 2_000_000 }", "network.loss_ppm"),
    ("links = [{ a = 0, b = 1, model = { bandwidth_bytes_per_s = 0 } }]", "links[0].model.bandwidth_bytes_per_s"),
    ("partitions = [{ at_ms = 1, heal_ms = 999_999_999_999_999, groups = [[0]] }]", "partitions[0].heal_ms"),
    ("partitions = [{ at_ms = 1, heal_ms = 2, groups = [[0], [1], [2], [0]] }]", "partitions[0].groups"),
    ("churn = [{ node = 0, crash_ms = 999_999_999_999_999 }]", "churn[0].crash_ms"),
    ("churn = [{ node = 0, join_ms = 999_999_999_999_999 }]", "churn[0].join_ms"),
    ("generated = { events_per_agent = 4294967295 }", "generated.events_per_agent"),
    ("agents_per_node = 1_000\nnodes = 100\ntopology = { kind = 'ring' }\ngenerated = { events_per_agent = 100_000 }", "generated.events_per_agent × agents"),
    ("generated = { topics = 0 }", "generated.topics"),
    ("generated = { interval = { kind = 'fixed', ms = 999_999_999_999 } }", "generated.interval.ms"),
    ("generated = { weights = { dispute = 4_000_000_000 } }", "generated.weights.dispute"),
    ("scripted = [{ name = '', node = 0, moves = [] }]", "scripted[0].name"),
    ("scripted = [{ name = 'a', node = 0, moves = [{ at_ms = 999_999_999_999_999, move = 'propose' }] }]", "scripted[0].moves[0].at_ms"),
    ("scripted = [{ name = 'a', node = 0, moves = [{ at_ms = 1, move = 'propose', text = '''{LONG}''' }] }]", "scripted[0].moves[0].text"),
    ("adversaries = [{ kind = 'withholder', count = 4294967295 }]", "adversaries[0].count"),
    ("adversaries = [{ kind = 'withholder', count = 0 }]", "adversaries[0].count"),
    ("adversaries = [{ kind = 'withholder', every_ms = 0 }]", "adversaries[0].every_ms"),
    ("adversaries = [{ kind = 'withholder', every_ms = 999_999_999_999_999 }]", "adversaries[0].every_ms"),
    ("adversaries = [{ kind = 'withholder', count = 6_000 }, { kind = 'stripper', count = 6_000 }]", "adversaries (nodes"),
    ("adversaries = [{ kind = 'equivocator', fork_at_seq = 0 }]", "adversaries[0].fork_at_seq"),
    ("adversaries = [{ kind = 'equivocator', fork_at_seq = 2, branches = 1_000_000 }]", "adversaries[0].branches"),
    ("adversaries = [{ kind = 'head_flooder', authors = 4294967295 }]", "adversaries[0].authors"),
    ("adversaries = [{ kind = 'spammer', burst = 0 }]", "adversaries[0].burst"),
    ("adversaries = [{ kind = 'backdater', skew_ms = -9_000_000_000_000_000 }]", "adversaries[0].skew_ms"),
    ("scripted = [{ name = 'a', node = 0, moves = [{ at_ms = 1, move = 'propose', time_ms = 999_999_999_999_999 }] }]", "scripted[0].moves[0].time_ms"),
    ("scripted = [{ name = 'a', node = 0, moves = [{ at_ms = 1, move = 'propose', skew_ms = -999_999_999_999_999 }] }]", "scripted[0].moves[0].skew_ms"),
    ("clocks = [{ node = 0, skew_ms = 999_999_999_999_999 }]", "clocks[0].skew_ms"),
    ("clocks = [{ node = 0, drift_ppm = -1_000_000 }]", "clocks[0].drift_ppm"),
    ("clocks = [{ node = 0 }, { node = 1 }, { node = 2 }, { node = 0 }]", "clocks (count)"),
    ("roster = [{ at_ms = 999_999_999_999_999, admit = 'agent-0-0' }]", "roster[0].at_ms"),
    ("roster = [{ at_ms = 1, remove = 'agent-0-0', cut_off = 999_999_999_999 }]", "roster[0].cut_off"),
    ("roster = [{ at_ms = 1, admit = '' }]", "roster[0]"),
    ("redactions = [{ at_ms = 999_999_999_999_999, node = 0, agent = 'agent-0-0' }]", "redactions[0].at_ms"),
    ("redactions = [{ at_ms = 1, node = 0, agent = '' }]", "redactions[0]"),
    ("redactions = [{ at_ms = 1, node = 3, agent = 'agent-0-0' }]", "redactions[0].node"),
    ("redactions = [{ at_ms = 1, node = 0, agent = 'agent-7-0' }]", "redactions[0].agent"),
    ("redactions = [{ at_ms = 1, node = 0, label = 'nothing' }]", "redactions[0].label"),
    ("redactions = [{ at_ms = 1, node = 0 }]", "redactions[0]"),
    ("redactions = [{ at_ms = 1, node = 0, label = 'a', agent = 'agent-0-0' }]", "redactions[0]"),
    ("agents_per_node = 0\nagents = [1, 20_000, 1]", "agents[1]"),
    ("agents_per_node = 0\nagents = [1, 1]", "agents (count)"),
    ("duration_ms = 999_999_999_999_999", "duration_ms"),
    ("settle_ms = 999_999_999_999_999", "settle_ms"),
    ("replicator = { range_limit = 0 }", "replicator.range_limit"),
    ("replicator = { request_timeout_ms = 0 }", "replicator.request_timeout_ms"),
    ("replicator = { in_flight_max = 1_000_000 }", "replicator.in_flight_max"),
    ("replicator = { frontier_refresh_ms = 999_999_999_999_999 }", "replicator.frontier_refresh_ms"),
    ("bounds = { node_memory_bytes = 0 }", "bounds.node_memory_bytes"),
];

#[test]
fn every_field_out_of_its_bound_is_refused_by_name() {
    Scenario::from_toml(BASE).expect("the base scenario is valid");
    let long = "x".repeat(70_000);
    for (case, field) in CASES {
        let text = with(&case.replace("{LONG}", &long));
        match Scenario::from_toml(&text) {
            Ok(_) => panic!("{case:?} was accepted"),
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with(field), "{case:?}: the error names {field:?}: {e}");
            }
        }
    }
}

/// The new adversary families' numbers are bounded too.
#[test]
fn the_adversary_families_parameters_are_bounded() {
    for (case, field) in ADVERSARY_CASES {
        let text = with(case);
        let e = Scenario::from_toml(&text).err().unwrap_or_else(|| panic!("{case:?} was accepted")).to_string();
        assert!(e.starts_with(field), "{case:?}: the error names {field:?}: {e}");
    }
}

const ADVERSARY_CASES: &[(&str, &str)] = &[
    ("adversaries = [{ kind = 'server', answer = 'first_k', k = 0 }]", "adversaries[0].k"),
    ("adversaries = [{ kind = 'server', answer = 'fraction', per_mille = 1_001 }]", "adversaries[0].per_mille"),
    ("adversaries = [{ kind = 'server', answer = 'full', delay_ms = 999_999_999_999_999 }]", "adversaries[0].delay_ms"),
    ("adversaries = [{ kind = 'replayer', rate = 0 }]", "adversaries[0].rate"),
    ("adversaries = [{ kind = 'replayer', rate = 4294967295 }]", "adversaries[0].rate"),
    ("adversaries = [{ kind = 'stripper', per_mille = 5_000 }]", "adversaries[0].per_mille"),
    ("adversaries = [{ kind = 'equivocator', fork_at_seq = 2, branches = 10, packs = 11 }]", "adversaries[0].packs"),
    ("adversaries = [{ kind = 'equivocator', fork_at_seq = 2, branches = 10, packs = 0 }]", "adversaries[0].packs"),
    ("adversaries = [{ kind = 'sybil', identities = 0 }]", "adversaries[0].identities"),
    ("adversaries = [{ kind = 'sybil', identities = 1_001 }]", "adversaries[0].identities"),
    ("adversaries = [{ kind = 'eclipse', victim = 0, until_ms = 999_999_999_999_999 }]", "adversaries[0].until_ms"),
    ("adversaries = [{ kind = 'eclipse', victim = 3, until_ms = 1 }]", "adversaries[0].victim"),
    ("adversaries = [{ kind = 'selective_relay', per_mille = 1_001 }]", "adversaries[0].per_mille"),
    ("adversaries = [{ kind = 'selective_relay', delay_ms = 999_999_999_999_999 }]", "adversaries[0].delay_ms"),
    ("adversaries = [{ kind = 'colluding_forker', fork_at_seq = 0, count = 2 }]", "adversaries[0].fork_at_seq"),
    ("adversaries = [{ kind = 'colluding_forker', fork_at_seq = 1, branches = 1, count = 2 }]", "adversaries[0].branches"),
    ("adversaries = [{ kind = 'colluding_forker', fork_at_seq = 1 }]", "adversaries[0].count"),
    ("adversaries = [{ kind = 'key_thief', steal_ms = 999_999_999_999_999 }]", "adversaries[0].steal_ms"),
    ("adversaries = [{ kind = 'key_thief', revoke_ms = 999_999_999_999_999 }]", "adversaries[0].revoke_ms"),
    ("adversaries = [{ kind = 'key_thief', forks = 100_001 }]", "adversaries[0].forks"),
    ("adversaries = [{ kind = 'key_thief', victim = 'agent-3-0' }]", "adversaries[0].victim"),
];
