//! Spans received over OTLP, recorded (`protocol-spec/otlp.md`): each
//! planned span's action goes to the chain of the keyring agent that signs
//! it, checked by the rules every recorded event meets, and the whole
//! request is one atomic, synced write across those chains; then the
//! reasoning moves the spans carry run as the operations they name, under
//! the same rules as from the command line.

use crate::ops::{Effect, NodeRunner, catalog};
use crate::reasoning::check_appended_payload;
use crate::run::OpenStore;
use crate::session::Session;
use agora_core::{AgentKey, EntryId};
use agora_graph::Event;
use agora_otlp::{ActionDraft, Plan, Planned, Refused};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a request recorded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TraceReport {
    /// Actions newly recorded.
    pub recorded: usize,
    /// Spans already recorded by the same agent (an exporter's retry).
    pub already_recorded: usize,
    /// Moves the spans carried, recorded.
    pub moves: usize,
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

/// Record a request's plan on the node's open store. An error means nothing
/// was written (the store refused the write); refusals of single spans are
/// in the report.
pub fn record_traces(open: &OpenStore<'_>, plan: Plan) -> anyhow::Result<TraceReport> {
    let mut report = TraceReport { refused: plan.refused, ignored: plan.ignored, ..TraceReport::default() };
    let mut by_agent: BTreeMap<String, Vec<Planned>> = BTreeMap::new();
    for p in plan.planned {
        by_agent.entry(p.agent.clone()).or_default().push(p);
    }
    // Check each agent's actions; keep what will be written.
    let mut chains: Vec<(AgentKey, Vec<Vec<u8>>, Vec<Planned>)> = Vec::new();
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
        let held = recorded_spans(&s, &key, &planned)?;
        let mut seen = std::collections::HashSet::new();
        let (mut payloads, mut kept) = (Vec::new(), Vec::new());
        for p in planned {
            if held.contains(&p.action.span) || !seen.insert(p.action.span.clone()) {
                report.already_recorded += 1;
                continue;
            }
            let payload = action_event(&p.action).encode();
            match check_appended_payload(&s, &payload) {
                Ok(()) => {
                    payloads.push(payload);
                    kept.push(p);
                }
                Err(e) => report.refused.push(Refused { span: p.action.span.clone(), reason: format!("{e:#}") }),
            }
        }
        if !payloads.is_empty() {
            chains.push((key, payloads, kept));
        }
    }
    let batch: Vec<(&AgentKey, Vec<&[u8]>)> = chains.iter().map(|(k, payloads, _)| (k, payloads.iter().map(Vec::as_slice).collect())).collect();
    let batch: Vec<(&AgentKey, &[&[u8]])> = batch.iter().map(|(k, p)| (*k, p.as_slice())).collect();
    open.store.append_chains(&batch, crate::args::now_ms())?;
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

/// The spans among `planned` this agent has recorded already.
fn recorded_spans(s: &Session<'_>, key: &AgentKey, planned: &[Planned]) -> anyhow::Result<std::collections::HashSet<String>> {
    let author = key.agent_id();
    s.with_graph(|_, graph| Ok(planned.iter().filter(|p| graph.action_of_span(&author, &p.action.span).is_some()).map(|p| p.action.span.clone()).collect()))
}
