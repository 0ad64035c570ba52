//! The reasoning commands: record typed events as entries, and read the
//! reasoning graph. The graph is a view; nothing about it is stored. Run by
//! hand it is rebuilt from the store's entries by replay for each command;
//! inside a running node it is the node's live graph, updated incrementally
//! as entries are committed (see `agora_live_views::graph_cache`).

use crate::answers::{ComputedOver, DisputeOf, NodeRefAnswer, NodeStatus, Recorded};
use crate::args::{entry_reference as reference, now_ms};
use crate::cli::{FrameCommand, FrameMove, ReadCommand, ReasoningCommand, RecordCommand, TaskCommand};
use crate::merge_view::{MergeMarks, Placed};
use crate::output::NoSuchEvent;
use crate::revoked;
use crate::session::Session;
use agora_command_line::inputs as i;
use agora_core::EntryId;
use agora_graph::event::Confidence;
use agora_graph::query::{as_of_entry, as_of_time};
use agora_graph::{Event, Graph, LogEvent, Node, NodeRef};
use agora_store::Store;
use anyhow::{Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::process::ExitCode;

/// Every stored entry that counts in the workspace's views, as events.
fn load_events(store: &Store, founder: agora_core::AgentId) -> Result<Vec<LogEvent>> {
    Ok(agora_view::load_events(store, founder)?)
}

fn basis_points(x: f64, what: &str) -> Result<u16> {
    if !(0.0..=1.0).contains(&x) {
        return Err(crate::output::refused("out_of_range", format!("{what} must be between 0 and 1, got {x}")));
    }
    Ok((x * 10_000.0).round() as u16)
}

/// The event a recording command describes.
fn event_for(store: &Store, command: &RecordCommand) -> Result<Event> {
    let r = |t: &String| reference(store, t);
    let ev = match command {
        RecordCommand::Propose(i::Propose { text }) => Event::Proposition { text: text.clone() },
        RecordCommand::Support(i::OnTarget { target, text }) => Event::Support { target: r(target)?, text: text.clone() },
        RecordCommand::Contradict(i::OnTarget { target, text }) => Event::Contradiction { target: r(target)?, text: text.clone() },
        RecordCommand::Refine(i::Refine { target, text, resolves }) => {
            Event::Refinement { target: r(target)?, resolves: resolves.iter().map(r).collect::<Result<_>>()?, text: text.clone() }
        }
        RecordCommand::Synthesize(i::Synthesize { sources, text }) => {
            Event::Synthesis { sources: sources.iter().map(r).collect::<Result<_>>()?, text: text.clone() }
        }
        RecordCommand::Ask(i::Ask { text }) => Event::Question { text: text.clone() },
        RecordCommand::Resolve(i::OnTarget { target, text }) => Event::Resolve { target: r(target)?, text: text.clone() },
        RecordCommand::Connect(i::Pair { a, b, text }) => Event::Connection { a: r(a)?, b: r(b)?, text: text.clone() },
        RecordCommand::Tension(i::Pair { a, b, text }) => Event::Tension { a: r(a)?, b: r(b)?, text: text.clone() },
        RecordCommand::Reframe(i::OnTarget { target, text }) => Event::Reframe { target: r(target)?, text: text.clone() },
        RecordCommand::Park(i::Park { target, reason }) => Event::Park { target: r(target)?, reason: reason.clone() },
        RecordCommand::Resume(i::NodeRef { target }) => Event::Resume { target: r(target)? },
        RecordCommand::Claim(i::Claim { text, kind, sources, owner, confirmed, expires_at_ms }) => Event::Claim {
            text: text.clone(),
            kind: kind.0,
            sources: sources.iter().map(r).collect::<Result<_>>()?,
            owner_scope: owner.clone().unwrap_or_default(),
            confirmed: *confirmed,
            expires_at_ms: *expires_at_ms,
        },
        RecordCommand::Relate(i::Relate { from, to, relation, reason }) => {
            Event::Relate { from: r(from)?, to: r(to)?, relation: relation.0, reason: reason.clone() }
        }
        RecordCommand::Confirm(i::NodeRef { target }) => Event::Confirm { target: r(target)? },
        RecordCommand::Task(t) => match t {
            TaskCommand::New(i::TaskNew { objective, owner }) => Event::Task { objective: objective.clone(), owner_scope: owner.clone().unwrap_or_default() },
            TaskCommand::Update(i::TaskUpdate { task, state, note }) => Event::TaskUpdate { task: r(task)?, state: state.0, note: note.clone() },
        },
        RecordCommand::Trajectory(i::Trajectory { task_query, final_answer, iterations, converged }) => {
            Event::Trajectory { task_query: task_query.clone(), final_answer: final_answer.clone(), iterations: iterations.unwrap_or(1), converged: *converged }
        }
        RecordCommand::Judge(i::Judge { trajectory, outcome, reason, confidence }) => Event::Judgment {
            trajectory: r(trajectory)?,
            success: *outcome == i::Outcome::Success,
            reason: reason.clone(),
            confidence: confidence.map_or(Confidence::Medium, |c| c.0),
        },
        RecordCommand::Item(i::MemoryItem { title, description, content, scope, from }) => Event::MemoryItem {
            title: title.clone(),
            description: description.clone(),
            content: content.clone(),
            scope: scope.clone().unwrap_or_default(),
            source_trajectory: from.as_ref().map(r).transpose()?,
        },
        RecordCommand::Use(i::RecordUse { trajectory, item, rank, score }) => {
            Event::Usage { trajectory: r(trajectory)?, item: r(item)?, rank: *rank, score_bp: basis_points(score.unwrap_or(0.0), "the score")? }
        }
        RecordCommand::Act(a) => Event::Action {
            operation: a.operation.clone(),
            name: a.name.clone(),
            conversation: a.conversation.clone(),
            span: a.span.clone(),
            parent: a.parent.clone(),
            cause: a.cause.as_ref().map(r).transpose()?,
            input_hash: a.input_hash.as_deref().map(|h| sha256_arg(h, "input_hash")).transpose()?,
            output_hash: a.output_hash.as_deref().map(|h| sha256_arg(h, "output_hash")).transpose()?,
            text: a.text.clone(),
            error: a.error.clone(),
        },
        // `ingest` records several events, each through this function (`crate::ingest`).
        RecordCommand::Ingest(_) => anyhow::bail!("ingest records no single event"),
    };
    Ok(ev)
}

/// A SHA-256 given as 64 hex digits.
fn sha256_arg(text: &str, what: &str) -> Result<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out)
        .map_err(|_| crate::output::refused("not_a_hash", format!("{what} {text:?} is not a SHA-256 (64 hex digits)")))?;
    Ok(out)
}

/// An action as `actions` lists it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
pub struct ActionAnswer {
    /// The event's id.
    pub id: String,
    /// The agent that signed it.
    pub author: String,
    pub seq: u64,
    /// When it was recorded (the author's clock, ms since the epoch).
    pub timestamp_ms: u64,
    /// What was done.
    pub operation: String,
    /// What it was done to or with.
    pub name: String,
    pub conversation: String,
    /// `<trace id>/<span id>`, or empty.
    pub span: String,
    /// The span it ran under, or empty.
    pub parent: String,
    /// The event that caused it.
    pub cause: Option<String>,
    /// SHA-256 of what went in, hex.
    pub input_hash: Option<String>,
    /// SHA-256 of what came out, hex.
    pub output_hash: Option<String>,
    /// The contents, when kept (empty once redacted).
    pub text: String,
    /// What went wrong; empty when it succeeded.
    pub error: String,
    /// active, or duplicate (a span recorded twice by its author).
    pub status: String,
}

/// The actions of the graph that `q` selects, in log order, the latest
/// `limit` of them.
fn actions(store: &Store, graph: &Graph, q: &i::ActionsQuery) -> Result<(Vec<ActionAnswer>, String)> {
    let agent = q.agent.as_deref().map(|a| a.parse::<agora_core::AgentId>().with_context(|| format!("agent {a:?} is not a 64-hex agent id"))).transpose()?;
    let mut rows = Vec::new();
    for n in graph.nodes().filter(|n| n.kind() == "action") {
        let Some(stored) = store.get(&n.id)? else { continue };
        let h = stored.signed.header();
        if agent.is_some_and(|a| a != h.author) {
            continue;
        }
        // A redacted action is listed with what its residue keeps.
        let payload = match stored.payload {
            agora_store::PayloadState::Held(p) => p,
            agora_store::PayloadState::Redacted { residue: Some(r), .. } => r,
            _ => continue,
        };
        let Ok(Event::Action { operation, name, conversation, span, parent, cause, input_hash, output_hash, text, error }) = Event::decode(&payload) else {
            continue;
        };
        let wanted = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        if !wanted(&q.conversation, &conversation) || !wanted(&q.operation, &operation) || !wanted(&q.name, &name) {
            continue;
        }
        rows.push(ActionAnswer {
            id: n.id.to_string(),
            author: h.author.to_string(),
            seq: h.seq,
            timestamp_ms: h.timestamp_ms,
            operation,
            name,
            conversation,
            span,
            parent,
            cause: cause.map(|c| c.to_string()),
            input_hash: input_hash.map(hex::encode),
            output_hash: output_hash.map(hex::encode),
            text,
            error,
            status: n.status().name().to_string(),
        });
    }
    let limit = q.limit.unwrap_or(1000);
    if rows.len() > limit {
        rows.drain(..rows.len() - limit);
    }
    let text = rows.iter().map(|a| format!("{} {} {:<14} {} {}", &a.id[..8], &a.author[..8], a.operation, a.name, a.error)).collect::<Vec<_>>().join("\n");
    Ok((rows, text))
}

/// The frame event a frame move describes.
fn frame_event(store: &Store, command: &FrameMove) -> Result<Event> {
    let r = |t: &String| reference(store, t);
    Ok(match command {
        FrameMove::Open(i::FrameOpen { query, parent, branched_from, invalidate_if }) => Event::FrameOpen {
            parent: parent.as_ref().map(r).transpose()?,
            query: query.clone(),
            branched_from: branched_from.as_ref().map(r).transpose()?,
            invalidation_condition: invalidate_if.clone().unwrap_or_default(),
        },
        FrameMove::Evidence(i::FrameEvidence { frame, text }) => Event::FrameEvidence { frame: r(frame)?, text: text.clone() },
        FrameMove::Conclude(i::FrameConclude { frame, conclusion, confidence }) => {
            Event::FrameConclude { frame: r(frame)?, conclusion: conclusion.clone(), confidence_bp: basis_points(confidence.unwrap_or(1.0), "the confidence")? }
        }
        FrameMove::Suspend(i::FrameRef { frame }) => Event::FrameSuspend { frame: r(frame)? },
        FrameMove::Resume(i::FrameRef { frame }) => Event::FrameResume { frame: r(frame)? },
        FrameMove::Invalidate(i::FrameInvalidate { frame, reason }) => Event::FrameInvalidate { frame: r(frame)?, reason: reason.clone() },
    })
}

/// Run a reasoning command: record the event it describes, or answer a read
/// from the graph (the node's live one, or one replayed for this command).
pub fn run(s: &Session, command: ReasoningCommand) -> Result<ExitCode> {
    let answer = match command {
        // Ingest records several moves through this module: the dispatcher runs it (`crate::commands`).
        ReasoningCommand::Record(RecordCommand::Ingest(_)) => anyhow::bail!("ingest is run by the dispatcher, not as one reasoning move"),
        ReasoningCommand::Record(r) => {
            let event = event_for(s.store()?, &r)?;
            return record(s, event);
        }
        ReasoningCommand::Frame(FrameCommand::Move(m)) => {
            let event = frame_event(s.store()?, &m)?;
            return record(s, event);
        }
        ReasoningCommand::Frame(FrameCommand::Tree(i::FrameRef { frame })) => s.with_graph(|store, graph| frame_tree(store, graph, &frame))?,
        ReasoningCommand::Read(ReadCommand::Status(i::NodeRef { target })) => {
            let answer = status(s, &target)?;
            let text = answer.text();
            return print(s, &answer.answer, text);
        }
        ReasoningCommand::Read(ReadCommand::Search(search_input)) => {
            let answer = search(s, &search_input)?;
            let text = search_text(&answer);
            return print(s, &answer, text);
        }
        ReasoningCommand::Read(q) => {
            let founder = s.founder()?;
            s.with_graph(|store, graph| read(store, graph, founder, &q))?
        }
    };
    let (value, text) = answer;
    s.print(&value, || text)?;
    Ok(ExitCode::SUCCESS)
}

/// Print a typed answer: as JSON with `--json` (and to an operation), else
/// its text.
fn print<T: serde::Serialize>(s: &Session, answer: &T, text: String) -> Result<ExitCode> {
    s.print_lazy(|| answer, || text)?;
    Ok(ExitCode::SUCCESS)
}

/// A node's status with its text form (built from the graph, then told the
/// merge layer's marks).
struct Status {
    answer: StatusAnswer,
    text: String,
}

impl Status {
    fn text(&self) -> String {
        let mut t = self.text.clone();
        if let Some(next) = &self.answer.node.successor {
            t.push_str(&format!("\n  superseded by {}: {}", next.id, next.text.as_deref().unwrap_or("")));
        }
        t.push_str(&marks_text(&self.answer.node.disputed_by, &self.answer.node.accepted_by));
        t
    }
}

/// The merge layer's marks as lines of text.
fn marks_text(disputed_by: &[DisputeOf], accepted_by: &[String]) -> String {
    let mut t = String::new();
    for d in disputed_by {
        let counter = d.counter_claim.as_deref().map_or(String::new(), |c| format!(" (counter-claim: {c})"));
        let by = d.by_name.as_deref().unwrap_or(short(&d.by));
        t.push_str(&format!("\n  disputed by {by}: {}{counter}", d.reason));
    }
    if !accepted_by.is_empty() {
        t.push_str(&format!("\n  accepted by {}", accepted_by.iter().map(|a| short(a)).collect::<Vec<_>>().join(", ")));
    }
    t
}

/// A status's text with the key that signed the event on its first line.
fn signed_line(text: String, key: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first} (signed by key {})\n{rest}", short(key)),
        None => format!("{text} (signed by key {})", short(key)),
    }
}

/// The first 8 characters of an id, as the text forms show ids.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `status`: the node's status, the events that made it so, its successor
/// when superseded, and the merge layer's disputes and accepts of it.
fn status(s: &Session, target: &str) -> Result<Status> {
    let (mut status, placed) = s.with_graph(|store, graph| {
        let id = reference(store, target)?;
        let over = crate::frontier::of_store(store)?;
        match graph.node(&id) {
            Some(n) => {
                let placed = Placed { id, author: graph.position(n).author, seq: n.seq() };
                let signed_by = revoked::signed_by(store, &id)?;
                let mut text = status_text(graph, n)?;
                if let Some(key) = &signed_by {
                    text = signed_line(text, key);
                }
                let answer = StatusAnswer { node: NodeStatus { signed_by, ..node_status(graph, n)? }, computed_over: over };
                Ok((Status { answer, text }, Some(placed)))
            }
            None => match graph.pending().into_iter().find(|p| p.event.id == id) {
                Some(p) => {
                    let missing: Vec<String> = p.missing.iter().map(|m| m.to_string()).collect();
                    let text = format!("{id}: pending, waiting for {}", missing.join(", "));
                    let signed_by = revoked::signed_by(store, &id)?;
                    let node = NodeStatus { missing: Some(missing), signed_by, ..NodeStatus::bare(id.to_string(), "pending") };
                    let answer = StatusAnswer { node, computed_over: over };
                    Ok((Status { answer, text }, None))
                }
                None => match (store.get_signed(&id)?, revoked::why_excluded(store, s.founder()?, &id)?) {
                    (Some(e), Some(why)) => {
                        let h = e.header();
                        let signed_by = h.keys.and_then(|k| k.signer).map(|k| k.to_string());
                        let mut text = format!("{id}: excluded: counts in no view, {} (protocol-spec/keys.md)", why.text());
                        if let Some(key) = &signed_by {
                            text = signed_line(text, key);
                        }
                        let node = NodeStatus {
                            author: Some(h.author.to_string()),
                            seq: Some(h.seq),
                            timestamp_ms: Some(h.timestamp_ms),
                            signed_by,
                            excluded: Some(why),
                            ..NodeStatus::bare(id.to_string(), "excluded")
                        };
                        Ok((Status { answer: StatusAnswer { node, computed_over: over }, text }, None))
                    }
                    _ => Err(not_in_graph(store, s.founder()?, id)),
                },
            },
        }
    })?;
    if let Some(placed) = placed {
        let all = MergeMarks::of(s, &[placed])?;
        let marks = all.get(&placed.id);
        status.answer.node.disputed_by = marks.disputed_by;
        status.answer.node.accepted_by = marks.accepted_by;
        status.answer.node.author_name = all.name(&placed.author);
    }
    Ok(status)
}

/// `search`: the hits, best first, each with its successor when superseded
/// (or, with `current`, replaced by it) and the merge layer's marks.
pub(crate) fn search(s: &Session, input: &i::Search) -> Result<SearchAnswer> {
    let mut answer = s.with_graph(|store, graph| {
        let index = agora_search::SearchIndex::build(graph)?;
        let found = index.search(graph, &input.query, input.all || input.current, input.limit.unwrap_or(20))?;
        let mut hits: Vec<(SearchHit, Option<Placed>)> = Vec::new();
        for h in found {
            let mut id = h.id;
            let mut through = None;
            if input.current
                && h.status == agora_graph::Status::Superseded
                && let Some(latest) = graph.latest_in_chain(&h.id).filter(|l| *l != h.id)
            {
                id = latest;
                through = Some(h.id);
            }
            let Some(n) = graph.node(&id) else { continue };
            if !input.all && matches!(n.status(), agora_graph::Status::Superseded | agora_graph::Status::Retracted) {
                continue;
            }
            if let Some(same) = hits.iter_mut().find(|(hit, _)| hit.id == id.to_string()) {
                same.0.found_through.extend(through.map(|t| t.to_string()));
                continue;
            }
            let text = if through.is_some() { text_of(graph, n)?.into_owned() } else { h.text };
            hits.push((
                SearchHit {
                    id: id.to_string(),
                    score: f64::from(h.score),
                    status: n.status().name().to_string(),
                    kind: n.kind().to_string(),
                    text,
                    successor: successor(graph, n)?,
                    found_through: through.map(|t| vec![t.to_string()]).unwrap_or_default(),
                    disputed_by: Vec::new(),
                    accepted_by: Vec::new(),
                },
                Some(Placed { id, author: graph.position(n).author, seq: n.seq() }),
            ));
        }
        let placed: Vec<Placed> = hits.iter().filter_map(|(_, p)| *p).collect();
        Ok((SearchAnswer { hits: hits.into_iter().map(|(h, _)| h).collect(), computed_over: crate::frontier::of_store(store)? }, placed))
    })?;
    let marks = MergeMarks::of(s, &answer.1)?;
    for (hit, placed) in answer.0.hits.iter_mut().zip(&answer.1) {
        let m = marks.get(&placed.id);
        hit.disputed_by = m.disputed_by;
        hit.accepted_by = m.accepted_by;
    }
    Ok(answer.0)
}

fn search_text(answer: &SearchAnswer) -> String {
    answer
        .hits
        .iter()
        .map(|h| {
            let mut line = format!("{:>7.3} {} [{}] {}: {}", h.score, short(&h.id), h.status, h.kind, h.text);
            if let Some(next) = &h.successor {
                line.push_str(&format!("\n  superseded by {}", short(&next.id)));
            }
            for t in &h.found_through {
                line.push_str(&format!("\n  found through {}", short(t)));
            }
            line + &marks_text(&h.disputed_by, &h.accepted_by)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The current version of a superseded node (none for any other).
fn successor(g: &Graph, n: NodeRef<'_>) -> Result<Option<NodeRefAnswer>> {
    if n.status() != agora_graph::Status::Superseded {
        return Ok(None);
    }
    let Some(next) = g.latest_in_chain(&n.id).filter(|l| *l != n.id) else { return Ok(None) };
    Ok(Some(ref_answer(g, &next)?))
}

/// A typed answer as the value printed and its text.
fn answer<T: Serialize>(answer: &T, text: String) -> Result<(Value, String)> {
    Ok((serde_json::to_value(answer)?, text))
}

/// Answer a read command from the graph.
fn read(store: &Store, graph: &Graph, founder: agora_core::AgentId, command: &ReadCommand) -> Result<(Value, String)> {
    let value_text: (Value, String) = match command {
        ReadCommand::Status(_) | ReadCommand::Search(_) => unreachable!("status and search are answered by `status` and `search`"),
        ReadCommand::Trace(i::NodeRef { target }) => {
            let (traced, text) = trace(store, founder, graph, &reference(store, target)?)?;
            answer(&traced, text)?
        }
        ReadCommand::History(i::History { as_of, target }) => {
            let events = load_events(store, founder)?;
            let past = if let Some(ms) = parse_time(as_of) {
                as_of_time(&events, ms)
            } else {
                let entry = reference(store, as_of).with_context(|| format!("as of {as_of:?}: not a time (ms or YYYY-MM-DD) or an entry"))?;
                as_of_entry(&events, &entry).with_context(|| format!("entry {entry} is not in the log"))?
            };
            let (then, text) = match target {
                Some(t) => {
                    let id = reference(store, t)?;
                    match past.node(&id) {
                        Some(n) => {
                            let node = NodeStatus { signed_by: revoked::signed_by(store, &id)?, ..node_status(&past, n)? };
                            (HistoryAnswer::Node(Box::new(node)), status_text(&past, n)?)
                        }
                        None => (
                            HistoryAnswer::Node(Box::new(NodeStatus::bare(id.to_string(), "not_yet_recorded"))),
                            format!("{id}: not yet recorded at that point"),
                        ),
                    }
                }
                None => {
                    let (nodes, text) = nodes_listing(&past, past.nodes().filter(|n| n.is_event()))?;
                    (HistoryAnswer::Nodes(nodes), text)
                }
            };
            answer(&then, text)?
        }
        ReadCommand::Latest(i::NodeRef { target }) => {
            let id = reference(store, target)?;
            let latest = graph.latest_in_chain(&id).ok_or_else(|| not_in_graph(store, founder, id))?;
            let n = graph.node(&latest).context("latest node vanished")?;
            let t = text_of(graph, n)?.into_owned();
            let text = format!("{latest}  [{}]  {}", n.status().name(), t);
            let latest = LatestAnswer {
                id: id.to_string(),
                latest: latest.to_string(),
                text: t,
                status: n.status().name().to_string(),
                computed_over: crate::frontier::of_store(store)?,
            };
            answer(&latest, text)?
        }
        ReadCommand::Decisions => {
            let rows: Vec<Decision> = graph
                .decisions()
                .iter()
                .filter_map(|d| graph.node(&d.node).map(|n| (n, d)))
                .map(|(n, d)| {
                    Ok(Decision {
                        id: n.id.to_string(),
                        kind: n.kind().to_string(),
                        text: text_of(graph, n)?.into_owned(),
                        because: refs_answer(graph, &d.because)?,
                    })
                })
                .collect::<Result<_>>()?;
            let text = graph
                .decisions()
                .iter()
                .filter_map(|d| graph.node(&d.node).map(|n| (n, d)))
                .map(|(n, d)| Ok(format!("{} {} {}\n{}", n.id.short(), n.kind(), text_of(graph, n)?, refs_text(graph, &d.because, "  because")?)))
                .collect::<Result<Vec<_>>>()?
                .join("\n");
            answer(&rows, text)?
        }
        ReadCommand::Actions(q) => {
            let (rows, text) = actions(store, graph, q)?;
            answer(&rows, text)?
        }
        ReadCommand::Questions => {
            let (rows, text) = nodes_listing(graph, graph.open_questions().into_iter())?;
            answer(&rows, text)?
        }
        ReadCommand::Orphans => {
            let (rows, text) = nodes_listing(graph, graph.orphans().into_iter())?;
            answer(&rows, text)?
        }
        ReadCommand::Disagreements => {
            let d = graph.disagreements();
            let rows: Vec<Contested> = d
                .iter()
                .filter_map(|x| graph.node(&x.node).map(|n| (n, x)))
                .map(|(n, x)| {
                    Ok(Contested {
                        id: n.id.to_string(),
                        kind: n.kind().to_string(),
                        text: text_of(graph, n)?.into_owned(),
                        status: n.status().name().to_string(),
                        contested_by: refs_answer(graph, &x.challenges)?,
                        tensions: refs_answer(graph, &x.tensions)?,
                    })
                })
                .collect::<Result<_>>()?;
            let text = d
                .iter()
                .filter_map(|x| graph.node(&x.node).map(|n| (n, x)))
                .map(|(n, x)| {
                    Ok(format!(
                        "{} [{}] {}\n{}{}",
                        n.id.short(),
                        n.status().name(),
                        text_of(graph, n)?,
                        refs_text(graph, &x.challenges, "  contested by")?,
                        refs_text(graph, &x.tensions, "  tension")?
                    ))
                })
                .collect::<Result<Vec<_>>>()?
                .join("\n");
            answer(&rows, text)?
        }
        ReadCommand::Outcomes => {
            let rows: Vec<Outcome> = graph
                .memory_item_outcomes()
                .into_iter()
                .filter_map(|(id, s, f, u)| graph.node(&id).map(|n| (n, s, f, u)))
                .map(|(n, successes, failures, uses)| {
                    let status = n.status().name().to_string();
                    Ok(Outcome { id: n.id.to_string(), status, successes, failures, uses, text: text_of(graph, n)?.into_owned() })
                })
                .collect::<Result<_>>()?;
            let text = rows
                .iter()
                .map(|o| {
                    let (s, f, u) = (o.successes, o.failures, o.uses);
                    format!("{} [{}] success {s} failure {f} uses {u}: {}", short(&o.id), o.status, o.text.lines().next().unwrap_or(""))
                })
                .collect::<Vec<_>>()
                .join("\n");
            answer(&rows, text)?
        }
        ReadCommand::Graph(i::GraphExport { format }) => {
            let format = format.unwrap_or(i::GraphFormat::Dot);
            let text = match format {
                i::GraphFormat::Dot => agora_graph::export::to_dot(graph)?,
                i::GraphFormat::Mermaid => agora_graph::export::to_mermaid(graph)?,
                i::GraphFormat::Json => {
                    let v = serde_json::to_value(GraphAnswer::Data(graph_data(graph)?))?;
                    let text = v.to_string();
                    return Ok((v, text));
                }
            };
            let trimmed = text.trim_end().to_string();
            answer(&GraphAnswer::Text(GraphText { format: format.name().to_string(), graph: text }), trimmed)?
        }
    };
    Ok(value_text)
}

/// The graph as data: every node (raw and redacted events left out, as in
/// the other formats) with its status, author and place in its chain, and
/// every edge between shown nodes, from the newer event to the one it names.
fn graph_data(g: &Graph) -> Result<GraphData> {
    let shown = |n: &Node| !matches!(n.kind(), "raw" | "redacted");
    let nodes: Vec<GraphNode> = g
        .nodes()
        .filter(|n| shown(n))
        .map(|n| {
            Ok(GraphNode {
                id: n.id.to_string(),
                kind: n.kind().to_string(),
                text: text_of(g, n)?.into_owned(),
                status: n.status().name().to_string(),
                author: g.position(n).author.to_string(),
                seq: n.seq(),
                timestamp_ms: n.timestamp_ms,
            })
        })
        .collect::<Result<_>>()?;
    let edges: Vec<GraphEdge> = g
        .nodes()
        .filter(|n| shown(n))
        .flat_map(|n| {
            g.edges(n).filter(|(_, to)| g.node(to).is_some_and(|t| shown(&t))).map(move |(rel, to)| GraphEdge {
                from: n.id.to_string(),
                to: to.to_string(),
                relation: rel.to_string(),
            })
        })
        .collect();
    Ok(GraphData { format: "json".to_string(), nodes, edges })
}

/// The frame tree under `frame`, in verification (post-) order.
fn frame_tree(store: &Store, graph: &Graph, frame: &str) -> Result<(Value, String)> {
    let root = reference(store, frame)?;
    let order = graph.frames_post_order(&root);
    if order.is_empty() {
        return Err(crate::output::refused_about("unknown_entry", root, format!("no frame {root}")));
    }
    let (rows, text) = nodes_listing(graph, order.iter().filter_map(|id| graph.node(id)))?;
    answer(&rows, text)
}

/// The rules for a locally written event: decodable, within limits, and (when
/// every reference is known) allowed by the graph's rules. Returns the
/// references not known yet, which the event will wait for as pending.
fn check_local(s: &Session, event: &Event) -> Result<Vec<EntryId>> {
    event.check_limits()?;
    s.with_graph(|_, graph| check_against(graph, event))
}

fn check_against(graph: &Graph, event: &Event) -> Result<Vec<EntryId>> {
    let missing: Vec<EntryId> = event.refs().into_iter().filter(|r| graph.node(r).is_none()).collect();
    if missing.is_empty() {
        // The new entry's id is not known before signing; no stored id can equal it.
        graph.check(EntryId::default(), event).with_context(|| format!("refused: this {} breaks a rule", event.kind_name()))?;
    } else {
        // The rules that need no referenced node still apply.
        let refs = event.refs();
        if let Some((_, r)) = refs.iter().enumerate().find(|(i, r)| refs[..*i].contains(r)) {
            let message = format!("refused: this {} breaks a rule: refers to itself: {r} is named more than once", event.kind_name());
            return Err(crate::output::refused_about("self_reference", r, message));
        }
        if let Event::Synthesis { sources, .. } = event
            && sources.len() < 2
        {
            let message = format!("refused: this synthesis breaks a rule: a synthesis needs at least two sources, found {}", sources.len());
            return Err(crate::output::refused("synthesis_arity", message));
        }
    }
    Ok(missing)
}

/// The rules every recorded event meets, checked for several events by one
/// read of the graph (the OTLP receiver's spans): each one's refusal, in
/// order, `None` for an event that may be recorded.
pub fn check_events<'a>(s: &Session, events: impl IntoIterator<Item = &'a Event>) -> Result<Vec<Option<anyhow::Error>>> {
    s.with_graph(|_, graph| {
        Ok(events.into_iter().map(|e| e.check_limits().map_err(anyhow::Error::from).and_then(|()| check_against(graph, e)).err()).collect())
    })
}

/// `agora append` of a payload that claims to be an event (it starts with the
/// event magic) is held to the same rules as the recording verbs.
pub fn check_appended_payload(s: &Session, payload: &[u8]) -> Result<()> {
    if Event::is_event_payload(payload) {
        let event = Event::decode(payload).context("refused: the payload is an event this version cannot accept")?;
        check_local(s, &event)?;
    }
    Ok(())
}

fn record(s: &Session, event: Event) -> Result<ExitCode> {
    let answer = record_event(s, &event)?;
    let pending = answer.pending.clone().unwrap_or_default();
    let mut text = answer.id.clone();
    if !pending.is_empty() {
        text.push_str(&format!("\n(pending: waiting for {})", pending.join(", ")));
    }
    print(s, &answer, text)
}

/// Record `event` in the acting agent's chain, by the rules every recorded
/// event meets: what every recording command prints.
fn record_event(s: &Session, event: &Event) -> Result<Recorded> {
    s.key()?;
    let missing = check_local(s, event)?;
    let entry = crate::own_chain::append_own(s, &event.encode())?;
    let pending: Vec<String> = missing.iter().map(|m| m.to_string()).collect();
    Ok(Recorded { id: entry.id().to_string(), kind: event.kind_name().to_string(), seq: entry.header().seq, pending: Some(pending), after: None })
}

/// Record the event a recording command describes, as the command itself
/// would (the same references, limits and rules), for commands that record
/// several moves (`ingest`).
pub(crate) fn record_move(s: &Session, command: &RecordCommand) -> Result<Recorded> {
    let event = event_for(s.store()?, command)?;
    let recorded = record_event(s, &event)?;
    s.wrote();
    Ok(recorded)
}

/// Whether the event a recording command describes would be recorded now:
/// its references, limits and the graph's rules, without writing it.
pub(crate) fn check_move(s: &Session, command: &RecordCommand) -> Result<()> {
    let event = event_for(s.store()?, command)?;
    check_local(s, &event).map(|_| ())
}

/// The text of `n`, a node of `g`: held by the graph, or read from the
/// store (the node's live graph holds none).
fn text_of<'g>(g: &'g Graph, n: impl agora_graph::AsNode<'g>) -> Result<std::borrow::Cow<'g, str>> {
    Ok(g.text(n)?)
}

/// Nodes named in an answer.
fn refs_answer(g: &Graph, ids: &[EntryId]) -> Result<Vec<NodeRefAnswer>> {
    ids.iter().map(|id| ref_answer(g, id)).collect()
}

/// A node named in an answer: its kind, text and status when applied here.
fn ref_answer(g: &Graph, id: &EntryId) -> Result<NodeRefAnswer> {
    Ok(match g.node(id) {
        Some(n) => NodeRefAnswer {
            id: id.to_string(),
            kind: Some(n.kind().to_string()),
            text: Some(text_of(g, n)?.into_owned()),
            status: Some(n.status().name().to_string()),
        },
        None => NodeRefAnswer { id: id.to_string(), kind: None, text: None, status: None },
    })
}

fn refs_text(g: &Graph, ids: &[EntryId], label: &str) -> Result<String> {
    ids.iter()
        .map(|id| match g.node(id) {
            Some(n) => Ok(format!("{label} {} {}: {}\n", id.short(), n.kind(), text_of(g, n)?)),
            None => Ok(format!("{label} {}\n", id.short())),
        })
        .collect()
}

/// Why `id` has no node: [`NoSuchEvent`], said more precisely for a merge
/// event, which the store holds but the reasoning graph never makes a node
/// of (`protocol-spec/merge.md`), and for an entry a key rotation of its
/// author leaves out of every view (`excluded_entry`, [`revoked::why_excluded`]).
fn not_in_graph(store: &Store, founder: agora_core::AgentId, id: EntryId) -> anyhow::Error {
    if let Ok(Some(why)) = revoked::why_excluded(store, founder, &id) {
        let message = format!(
            "{id} counts in no view: {} (protocol-spec/keys.md, \"Which entries count\"); `agora status {}` says more, `agora show {}` shows the entry",
            why.text(),
            id.short(),
            id.short()
        );
        return crate::output::refused_about("excluded_entry", id, message);
    }
    let merge_kind = store.get(&id).ok().flatten().and_then(|e| {
        let content = e.payload.content();
        content
            .is_merge_event()
            .then(|| content.meaning().and_then(|p| agora_merge::MergeEvent::decode(p).ok()).map_or("merge event", |m| m.kind_name()).to_string())
    });
    match merge_kind {
        Some(kind) => anyhow::Error::new(NoSuchEvent(id)).context(format!(
            "{id} is a merge event ({kind}), which is no node of the reasoning graph: `agora consensus`, `agora disputes` and `agora audit` show what it did"
        )),
        None => NoSuchEvent(id).into(),
    }
}

/// A node's status as the graph gives it (the merge layer's marks are added
/// by [`status`]).
fn node_status(g: &Graph, n: NodeRef<'_>) -> Result<NodeStatus> {
    Ok(NodeStatus {
        kind: Some(n.kind().to_string()),
        text: Some(text_of(g, n)?.into_owned()),
        author: Some(g.position(n).author.to_string()),
        seq: Some(n.seq()),
        timestamp_ms: Some(n.timestamp_ms),
        settled: Some(n.settled()),
        why: Some(refs_answer(g, &g.why(n))?),
        orphan: Some(n.orphan()),
        unconfirmed: Some(n.unconfirmed()),
        expired: Some(n.expired(now_ms())),
        memory_kind: Some(n.memory_kind().map(|k| k.name().to_string())),
        frame_state: Some(n.frame_state().map(|s| s.name().to_string())),
        task_state: Some(n.task_state().map(|s| s.name().to_string())),
        latest: Some(g.latest_in_chain(&n.id).map(|l| l.to_string())),
        invalid: Some(n.invalid().map(str::to_string)),
        successor: successor(g, n)?,
        ..NodeStatus::bare(n.id.to_string(), n.status().name())
    })
}

fn status_text(g: &Graph, n: NodeRef<'_>) -> Result<String> {
    let mut flags = Vec::new();
    if n.settled() {
        flags.push("settled".to_string());
    }
    if n.orphan() {
        flags.push("orphan".into());
    }
    if n.unconfirmed() {
        flags.push("unconfirmed".into());
    }
    if n.expired(now_ms()) {
        flags.push("expired".into());
    }
    if let Some(s) = n.frame_state() {
        flags.push(format!("frame {}", s.name()));
    }
    if let Some(s) = n.task_state() {
        flags.push(format!("task {}", s.name()));
    }
    if let Some(reason) = n.invalid() {
        flags.push(format!("invalid: {reason}"));
    }
    let flags = if flags.is_empty() { String::new() } else { format!(" ({})", flags.join(", ")) };
    Ok(format!("{} {} {}{}\n{}\n{}", n.id, n.kind(), n.status().name(), flags, text_of(g, n)?, refs_text(g, &g.why(n), "  why:")?).trim_end().to_string())
}

fn nodes_listing<'a>(g: &Graph, nodes: impl Iterator<Item = NodeRef<'a>>) -> Result<(Vec<ListedNode>, String)> {
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for n in nodes {
        let t = text_of(g, n)?.into_owned();
        lines.push(format!("{} {:<12} [{}] {}", n.id.short(), n.kind(), n.status().name(), t));
        rows.push(ListedNode {
            id: n.id.to_string(),
            kind: n.kind().to_string(),
            status: n.status().name().to_string(),
            text: t,
            frame_state: n.frame_state().map(|s| s.name().to_string()),
        });
    }
    Ok((rows, lines.join("\n")))
}

/// `trace`: every event that touched the node, in order, each verified
/// against its chain (see `agora_view::trace`).
fn trace(store: &Store, founder: agora_core::AgentId, g: &Graph, id: &EntryId) -> Result<(TraceAnswer, String)> {
    let node = g.node(id).ok_or_else(|| not_in_graph(store, founder, *id))?;
    let traced = agora_view::trace(store, g, id)?;
    let mut rows = Vec::new();
    let mut text = Vec::new();
    for t in &traced {
        let n = g.node(&t.entry.id());
        let node_text = n.map(|n| text_of(g, n)).transpose()?;
        let h = t.entry.header();
        let signed_by = h.keys.and_then(|k| k.signer);
        rows.push(TracedEvent {
            id: t.entry.id().to_string(),
            author: h.author.to_string(),
            seq: h.seq,
            timestamp_ms: h.timestamp_ms,
            signed_by: signed_by.map(|k| k.to_string()),
            kind: n.map(|n| n.kind().to_string()),
            text: node_text.as_deref().map(str::to_string),
            status: n.map(|n| n.status().name().to_string()),
            payload_held: t.payload_held,
            verified: true,
        });
        text.push(format!(
            "{} {}/{}{} {:<14} {}",
            t.entry.id().short(),
            h.author.short(),
            h.seq,
            signed_by.map_or(String::new(), |k| format!(" key {}", k.short())),
            n.map_or("?", |n| n.kind()),
            node_text.as_deref().unwrap_or("")
        ));
    }
    text.push(format!("verified: {} events, signatures, payload hashes and chain links", traced.len()));
    let answer = TraceAnswer { id: id.to_string(), status: node.status().name().to_string(), events: rows, computed_over: crate::frontier::of_store(store)? };
    Ok((answer, text.join("\n")))
}

/// Milliseconds since the epoch, or a UTC date `YYYY-MM-DD` (its first millisecond).
/// A time given as ms since the epoch, or as YYYY-MM-DD (midnight UTC).
pub fn parse_time(text: &str) -> Option<u64> {
    if !text.is_empty() && text.len() < 16 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else { return None };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400_000).ok()
}

// ---------------------------------------------------------------------------
// The answers

/// `status`: the node's status, with the frontier it was computed over.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusAnswer {
    #[serde(flatten)]
    pub node: NodeStatus,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// One event of a trace.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TracedEvent {
    /// The event's entry id.
    pub id: String,
    /// Its author.
    pub author: String,
    /// Its seq.
    pub seq: u64,
    /// When it was signed, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The key that signed it (hex) when its author had rotated; absent: the author's own key (its id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// Its kind (null when its payload is not known here).
    pub kind: Option<String>,
    /// Its text.
    pub text: Option<String>,
    /// Its status.
    pub status: Option<String>,
    /// Whether its payload is held here.
    pub payload_held: bool,
    /// Its signature, payload hash and chain link were verified.
    pub verified: bool,
}

/// `trace`: every event that touched a node, in order, each verified.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TraceAnswer {
    /// The node traced.
    pub id: String,
    /// Its status now.
    pub status: String,
    /// The events, oldest first.
    pub events: Vec<TracedEvent>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// `latest`: the newest version of a node.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LatestAnswer {
    /// The node asked about.
    pub id: String,
    /// Its newest version (itself when none replaced it).
    pub latest: String,
    /// The newest version's text.
    pub text: String,
    /// The newest version's status.
    pub status: String,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// One search hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// The node.
    pub id: String,
    /// BM25 score: higher is a better match.
    pub score: f64,
    /// Its status.
    pub status: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// When superseded: the current version that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<NodeRefAnswer>,
    /// For `orient`: the superseded nodes that matched the topic and led here (this node is their current version).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_through: Vec<String>,
    /// Agents' open disputes of this event: who, why, and what they hold instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disputed_by: Vec<DisputeOf>,
    /// Agents other than its author whose accepts reach this event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_by: Vec<String>,
}

/// `search`: hits, best first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchAnswer {
    /// The nodes found, best match first.
    pub hits: Vec<SearchHit>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// A node in a listing (questions, orphans, history).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ListedNode {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its status.
    pub status: String,
    /// Its text.
    pub text: String,
    /// A frame's state.
    #[serde(default)]
    pub frame_state: Option<String>,
}

/// A decision and what it rests on.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// The deciding node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// The events it rests on.
    pub because: Vec<NodeRefAnswer>,
}

/// A contested node.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Contested {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// Its status.
    pub status: String,
    /// The open challenges against it.
    pub contested_by: Vec<NodeRefAnswer>,
    /// Open tensions it is part of.
    pub tensions: Vec<NodeRefAnswer>,
}

/// `history`: every node with its status at that point, or one node's.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HistoryAnswer {
    /// No `target`: every node, with its status then.
    Nodes(Vec<ListedNode>),
    /// A `target`: its status then.
    Node(Box<NodeStatus>),
}

/// A memory item's outcomes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// The memory item.
    pub id: String,
    /// Its status.
    pub status: String,
    /// Judged successes of trajectories that used it.
    pub successes: u64,
    /// Judged failures.
    pub failures: u64,
    /// Recorded uses.
    pub uses: usize,
    /// Its text.
    pub text: String,
}

/// `graph`: the graph as data (`json`) or as text (`dot`, `mermaid`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum GraphAnswer {
    /// As data.
    Data(GraphData),
    /// As Graphviz DOT or Mermaid text.
    Text(GraphText),
}

/// The graph as data.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphData {
    /// `json`.
    pub format: String,
    /// Every node (raw and redacted events left out).
    pub nodes: Vec<GraphNode>,
    /// Every edge between them.
    pub edges: Vec<GraphEdge>,
}

/// A node of the graph.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphNode {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// Its status.
    pub status: String,
    /// Its author.
    pub author: String,
    /// Its seq in the author's chain.
    pub seq: u64,
    /// When it was signed, ms since the Unix epoch.
    pub timestamp_ms: u64,
}

/// An edge, from the newer event to the one it names.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphEdge {
    /// The newer event.
    pub from: String,
    /// The event it names.
    pub to: String,
    /// How (supports, contradicts, ...).
    pub relation: String,
}

/// The graph as text.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphText {
    /// `dot` or `mermaid`.
    pub format: String,
    /// The text.
    pub graph: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_parse_to_utc_midnight() {
        assert_eq!(super::parse_time("1970-01-01"), Some(0));
        assert_eq!(super::parse_time("2024-03-15"), Some(1_710_460_800_000));
        assert_eq!(super::parse_time("1710460800000"), Some(1_710_460_800_000));
        assert_eq!(super::parse_time("2024-13-01"), None);
        assert_eq!(super::parse_time("abcd"), None);
    }
}
