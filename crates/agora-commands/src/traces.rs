//! Spans received over OTLP, recorded (`protocol-spec/otlp.md`): each
//! planned span's action goes to the chain of the keyring agent that signs
//! it, checked by the rules every recorded event meets, followed by the
//! state a memory span gave its record (a claim, related by `update` to the
//! record's current claim, or that claim parked by a deletion); the whole
//! request is one atomic, synced write across those chains; then the
//! reasoning moves the spans carry run as the operations they name, under
//! the same rules as from the command line.

use crate::ops::{Effect, NodeRunner, catalog};
use crate::reasoning::check_events;
use crate::run::OpenStore;
use crate::session::Session;
use agora_core::{AgentKey, EntryId};
use agora_graph::{Event, Relation};
use agora_otlp::{ActionDraft, MemoryWrite, Plan, Planned, Refused};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

/// What a request recorded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TraceReport {
    /// Actions newly recorded.
    pub recorded: usize,
    /// Spans already recorded by the same agent (an exporter's retry).
    pub already_recorded: usize,
    /// Moves the spans carried, recorded.
    pub moves: usize,
    /// Memory records' new states recorded: claims and the parks of deletions.
    pub memory_states: usize,
    /// Spans (or their moves) refused, and why.
    pub refused: Vec<Refused>,
    /// Spans left out by design (no GenAI operation, no move).
    pub ignored: usize,
}

impl TraceReport {
    /// The partial-success message: why the first few spans were refused,
    /// and how many were left out.
    pub fn message(&self) -> String {
        const SHOWN: usize = 3;
        let mut parts: Vec<String> = self.refused.iter().take(SHOWN).map(|r| format!("span {}: {}", r.span, r.reason)).collect();
        if self.refused.len() > SHOWN {
            parts.push(format!("and {} more refused", self.refused.len() - SHOWN));
        }
        if self.ignored > 0 {
            parts.push(format!("{} spans with neither gen_ai.operation.name nor agora.move were left out", self.ignored));
        }
        parts.join("; ")
    }
}

/// The action event a draft stands for.
pub fn action_event(a: &ActionDraft) -> Event {
    Event::Action {
        operation: a.operation.clone(),
        name: a.name.clone(),
        conversation: a.conversation.clone(),
        span: a.span.clone(),
        parent: a.parent.clone(),
        cause: a.cause.map(EntryId),
        input_hash: a.input_hash,
        output_hash: a.output_hash,
        text: a.text.clone(),
        error: a.error.clone(),
    }
}

/// Whether `name` is an agent of the home's keyring (`self` always is).
pub fn is_keyring_agent(open: &OpenStore<'_>, name: &str) -> bool {
    name == agora_home::home::OWN_AGENT || open.home.agent_key_path(name).is_ok_and(|p| p.exists())
}

/// One entry of an agent's share of a request's write.
enum Write {
    /// A span's action, encoded.
    Action(Vec<u8>),
    /// A memory record's new state: a claim derived from the action at
    /// that index of the agent's share.
    Claim { action: usize, write: MemoryWrite },
    /// The claim at `from` (of the share) is the new state of `to`.
    Update { from: usize, to: Named },
    /// A deletion: the record's current claim is parked.
    Park { target: Named },
}

/// An event a write names: stored already, or written before it in the
/// same share.
#[derive(Clone, Copy)]
enum Named {
    Stored(EntryId),
    Share(usize),
}

impl Write {
    /// Its payload, given the ids of the entries before it in its share.
    fn payload(&self, before: &[EntryId]) -> Vec<u8> {
        let id = |n: Named| match n {
            Named::Stored(id) => id,
            Named::Share(i) => before[i],
        };
        match self {
            Write::Action(payload) => payload.clone(),
            Write::Claim { action, write } => Event::Claim {
                text: write.text.clone(),
                kind: write.kind,
                sources: vec![before[*action]],
                owner_scope: write.scope.clone(),
                confirmed: false,
                expires_at_ms: None,
            }
            .encode(),
            Write::Update { from, to } => Event::Relate { from: before[*from], to: id(*to), relation: Relation::Update, reason: String::new() }.encode(),
            Write::Park { target } => Event::Park { target: id(*target), reason: "delete_memory".into() }.encode(),
        }
    }
}

/// One request records at a time: a memory record's current claim is read
/// before the write that updates it.
static RECORDING: Mutex<()> = Mutex::new(());

/// Record a request's plan on the node's open store. An error means nothing
/// was written (the store refused the write); refusals of single spans are
/// in the report.
pub fn record_traces(open: &OpenStore<'_>, plan: Plan) -> anyhow::Result<TraceReport> {
    let _one = RECORDING.lock().unwrap_or_else(|p| p.into_inner());
    let mut report = TraceReport { refused: plan.refused, ignored: plan.ignored, ..TraceReport::default() };
    let mut by_agent: BTreeMap<String, Vec<Planned>> = BTreeMap::new();
    for p in plan.planned {
        by_agent.entry(p.agent.clone()).or_default().push(p);
    }
    // Check each agent's actions; keep what will be written.
    let mut chains: Vec<(AgentKey, Vec<Write>, Vec<Planned>)> = Vec::new();
    for (agent, planned) in by_agent {
        let (mut out, mut input) = (Vec::new(), std::io::empty());
        let s = Session::in_node(open.home, true, &mut out, &mut input, open.store, open.graph, open.merge, open.founder).acting_as(Some(agent.clone()));
        let refuse_all = |report: &mut TraceReport, planned: &[Planned], reason: String| {
            report.refused.extend(planned.iter().map(|p| Refused { span: p.action.span.clone(), reason: reason.clone() }));
        };
        let key = match s.key() {
            Ok(k) => k,
            Err(e) => {
                refuse_all(&mut report, &planned, format!("agent {agent:?}: {e:#}"));
                continue;
            }
        };
        if open.store.tip_summary(&key.agent_id())?.is_some_and(|t| t.count > 1) {
            refuse_all(&mut report, &planned, format!("agent {agent:?}'s chain is forked: resolve the fork before it records spans (rule own_chain_forked)"));
            continue;
        }
        let (held, mut current) = recorded_spans_and_records(&s, &key, &planned)?;
        let mut seen = std::collections::HashSet::new();
        let mut fresh = Vec::with_capacity(planned.len());
        for p in planned {
            if held.contains(&p.action.span) || !seen.insert(p.action.span.clone()) {
                report.already_recorded += 1;
            } else {
                fresh.push((action_event(&p.action), p));
            }
        }
        let refusals = check_events(&s, fresh.iter().map(|(event, _)| event))?;
        let (mut writes, mut kept) = (Vec::new(), Vec::new());
        for ((event, p), refusal) in fresh.into_iter().zip(refusals) {
            if let Some(e) = refusal {
                report.refused.push(Refused { span: p.action.span.clone(), reason: format!("{e:#}") });
                continue;
            }
            writes.push(Write::Action(event.encode()));
            let action = writes.len() - 1;
            if let Some(m) = &p.memory {
                let now = current.get(&m.record).copied().flatten();
                match &m.write {
                    Some(write) => {
                        writes.push(Write::Claim { action, write: write.clone() });
                        let claim = writes.len() - 1;
                        if let Some((to, _)) = now {
                            writes.push(Write::Update { from: claim, to });
                        }
                        current.insert(m.record.clone(), Some((Named::Share(claim), false)));
                        report.memory_states += 1;
                    }
                    None => {
                        if let Some((target, false)) = now {
                            writes.push(Write::Park { target });
                            current.insert(m.record.clone(), Some((target, true)));
                            report.memory_states += 1;
                        }
                    }
                }
            }
            kept.push(p);
        }
        if !writes.is_empty() {
            chains.push((key, writes, kept));
        }
    }
    let shares: Vec<(&AgentKey, usize)> = chains.iter().map(|(k, writes, _)| (k, writes.len())).collect();
    open.store.append_chains_with(&shares, crate::args::now_ms(), |chain, before| chains[chain].1[before.len()].payload(before))?;
    // The moves, in order, by the agent whose span carried them.
    let operations = catalog();
    for (_, _, kept) in &chains {
        report.recorded += kept.len();
        for p in kept {
            let Some(m) = &p.carried_move else { continue };
            let refusal = |reason: String| Refused { span: p.action.span.clone(), reason: format!("agora.move {}: {reason}", m.operation) };
            let Some(op) = operations.iter().find(|o| o.name == m.operation) else {
                report.refused.push(refusal("no operation of that name".into()));
                continue;
            };
            if !matches!(op.effect, Effect::Append | Effect::AppendFinal) {
                report.refused.push(refusal("not a move: a span records only operations that append to the agent's chain".into()));
                continue;
            }
            match (op.run)(
                &NodeRunner {
                    open: OpenStore { home: open.home, store: open.store, graph: open.graph, merge: open.merge, founder: open.founder },
                    agent: Some(&p.agent),
                },
                Value::Object(m.input.clone()),
            ) {
                Ok(_) => report.moves += 1,
                Err(e) => {
                    let rule = e.rule.as_deref().map(|r| format!(" (rule {r})")).unwrap_or_default();
                    report.refused.push(refusal(format!("{}{rule}", e.message)));
                }
            }
        }
    }
    Ok(report)
}

/// The current claim of each memory record (with whether it is parked),
/// `None` for a record with none yet.
type Records = HashMap<String, Option<(Named, bool)>>;

/// The spans among `planned` this agent has recorded already, and the
/// records they name as the graph holds them.
fn recorded_spans_and_records(s: &Session<'_>, key: &AgentKey, planned: &[Planned]) -> anyhow::Result<(HashSet<String>, Records)> {
    let author = key.agent_id();
    s.with_graph(|_, graph| {
        let held = planned.iter().filter(|p| graph.action_of_span(&author, &p.action.span).is_some()).map(|p| p.action.span.clone()).collect();
        let records = planned
            .iter()
            .filter_map(|p| p.memory.as_ref())
            .map(|m| {
                let claim = graph.memory_record_claim(&author, &m.record);
                (m.record.clone(), claim.map(|id| (Named::Stored(id), graph.node(&id).is_some_and(|n| n.parked()))))
            })
            .collect();
        Ok((held, records))
    })
}
