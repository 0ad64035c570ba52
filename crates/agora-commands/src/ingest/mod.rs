//! `agora ingest`: free text (conversation turns, notes) turned into typed
//! reasoning events by an audited pipeline (protocol-spec/ingest.md; the
//! audit's actions in protocol-spec/events.md, "Actions").
//!
//! 1. A **classifier** proposes events (kind, text, targets described in
//!    words, confidence): `rules` ([`rules`], offline), `openai` (an
//!    OpenAI-compatible chat endpoint, [`openai`]) or `sampling` (the MCP
//!    client's model, asked by the MCP server, which passes its answer in).
//! 2. Proposals less confident than the threshold are dropped and reported.
//! 3. A **resolver** finds the node each target describes: the `search`
//!    command over the graph as it is at that point (so an earlier
//!    proposal of the same text, once recorded, can be found), its
//!    candidates kept with their scores; the first candidate (actions
//!    excepted) for which the move passes the graph's rules is chosen. A
//!    target nothing matches drops the proposal (a gap rather than a wrong
//!    link).
//! 4. Each remaining proposal is recorded by its own command's code
//!    (`propose`, `contradict`...: the same references, limits and rules);
//!    a refusal drops it with the rule.
//! 5. The **audit**: an action `classify` (name `<classifier>/<model>`,
//!    `input_hash` the SHA-256 of the text, `output_hash` that of the
//!    classifier's answer, text the JSON of every proposal, its candidates
//!    and its outcome), then, for each recorded event, an action
//!    `classified` whose `cause` is the event and whose `name` is the
//!    audit's id: `agora actions --name <audit>` lists what one ingest
//!    recorded, and the event's trace shows its `classified` action.

pub mod classify;
pub mod openai;
pub mod rules;

use crate::answers::Recorded;
use crate::cli::RecordCommand;
use crate::output::{UNNAMED_RULE, error_rule, refused};
use crate::reasoning::{check_move, record_move, search};
use crate::session::Session;
use agora_command_line::inputs as i;
use classify::{ClassifyError, MoveKind, Proposal};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::process::ExitCode;

/// The threshold when neither the call nor `[ingest] threshold` gives one.
pub const DEFAULT_THRESHOLD: f64 = 0.5;
/// Candidates the resolver keeps (and the audit lists) per target.
pub const CANDIDATES_MAX: usize = 5;
/// How much of a candidate's text the audit keeps, in bytes.
const CANDIDATE_TEXT_BYTES: usize = 160;
/// How much of a proposal's text the audit keeps, in bytes (with the
/// SHA-256 of the whole).
const AUDIT_TEXT_BYTES: usize = 1024;
/// The audit text's format.
pub const AUDIT_FORMAT: &str = "agora-ingest-audit/1";

/// A classifier, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classifier {
    Rules,
    OpenAi,
    Sampling,
}

impl Classifier {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Classifier::Rules => "rules",
            Classifier::OpenAi => "openai",
            Classifier::Sampling => "sampling",
        }
    }

    fn parse(name: &str, from: &str) -> anyhow::Result<Classifier> {
        match name {
            "rules" => Ok(Classifier::Rules),
            "openai" => Ok(Classifier::OpenAi),
            "sampling" => Ok(Classifier::Sampling),
            other => {
                Err(refused("unknown_classifier", format!("ingest: unknown classifier {other:?} ({from}); the classifiers are rules, openai and sampling")))
            }
        }
    }
}

/// The rule of the error the sampling classifier gives outside MCP: the
/// MCP server, which can ask its client's model, answers it by sampling.
pub const SAMPLING_UNAVAILABLE: &str = "sampling_unavailable";

/// One candidate the resolver weighed for a target.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Candidate {
    /// The node.
    pub id: String,
    /// Its search score (BM25; higher is better).
    pub score: f64,
    /// Its kind.
    pub kind: String,
    /// Its status.
    pub status: String,
    /// The start of its text.
    pub text: String,
}

/// How one target of a proposal was resolved.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Resolution {
    /// The target as the classifier described it.
    pub target: String,
    /// How it was looked for: `search` (with `query`), or `proposal` (`#N`).
    pub via: String,
    /// The words searched for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query: String,
    /// The candidates weighed, best first (actions are never candidates).
    pub candidates: Vec<Candidate>,
    /// The node chosen; none: nothing fit.
    pub chosen: Option<String>,
}

/// A proposal recorded.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IngestRecorded {
    /// Its place among the classifier's proposals (from 0).
    pub proposal: usize,
    /// The event recorded.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// The classifier's confidence.
    pub confidence: f64,
    /// The nodes it refers to.
    pub targets: Vec<String>,
    /// The `classified` action linking it to the audit.
    pub link: String,
    /// How each target was found.
    pub resolutions: Vec<Resolution>,
}

/// A proposal not recorded, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IngestDropped {
    /// Its place among the classifier's proposals (from 0).
    pub proposal: usize,
    /// The kind proposed.
    pub kind: String,
    /// The text proposed.
    pub text: String,
    /// The classifier's confidence.
    pub confidence: f64,
    /// `below_threshold`, `unresolved` (a target matched no node) or `refused` (a rule of the log).
    pub reason: String,
    /// The rule broken, when refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why, in words.
    pub message: String,
    /// How each target was looked for (none below the threshold).
    pub resolutions: Vec<Resolution>,
}

/// What `ingest` answers.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ingested {
    /// The audit: the `classify` action recording what was proposed, from which input, by which classifier and model, what the resolver weighed and what became of each proposal.
    pub audit: String,
    /// The classifier.
    pub classifier: String,
    /// The model (or rule set) that classified.
    pub model: String,
    /// SHA-256 of the text, hex.
    pub input_hash: String,
    /// The confidence below which proposals were dropped.
    pub threshold: f64,
    /// The events recorded, in order.
    pub recorded: Vec<IngestRecorded>,
    /// The proposals dropped, and why.
    pub dropped: Vec<IngestDropped>,
    /// Sentences past the most one ingest proposes (rules), left out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Ingested {
    fn text(&self) -> String {
        let short = |id: &str| id.get(..8).unwrap_or(id).to_string();
        let mut lines = vec![format!("audit {} ({}/{}, threshold {})", self.audit, self.classifier, self.model, self.threshold)];
        for r in &self.recorded {
            let targets =
                if r.targets.is_empty() { String::new() } else { format!(" -> {}", r.targets.iter().map(|t| short(t)).collect::<Vec<_>>().join(", ")) };
            lines.push(format!("recorded {} {} ({:.2}){targets}: {}", short(&r.id), r.kind, r.confidence, r.text));
        }
        for d in &self.dropped {
            lines.push(format!("dropped #{} {} ({:.2}), {}: {}: {}", d.proposal, d.kind, d.confidence, d.reason, d.message, d.text));
        }
        if self.left_out > 0 {
            lines.push(format!("left out: {} sentences past {}", self.left_out, classify::PROPOSALS_MAX));
        }
        lines.join("\n")
    }
}

/// Run `ingest` and print its answer.
pub fn run(s: &Session, input: i::Ingest) -> anyhow::Result<ExitCode> {
    let answer = ingest(s, input)?;
    let text = answer.text();
    s.print_lazy(|| &answer, || text)?;
    Ok(ExitCode::SUCCESS)
}

fn classify_error(e: ClassifyError) -> anyhow::Error {
    refused(e.rule(), format!("ingest: {e}"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The first `max` bytes of `s`, cut at a character boundary.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// What a proposal became.
enum Outcome {
    Recorded(Recorded, Vec<String>),
    Dropped { reason: &'static str, rule: Option<String>, message: String },
}

fn ingest(s: &Session, input: i::Ingest) -> anyhow::Result<Ingested> {
    let config = s.home.dir.join(agora_home::config::CONFIG_FILE);
    let settings = agora_home::config::ingest_of_home(&s.home.dir)?;
    let text = if input.text == "-" {
        let mut buf = String::new();
        s.with_input(|r| r.take(i::INGEST_TEXT_BYTES_MAX as u64 + 1).read_to_string(&mut buf))
            .map_err(|e| refused("input_schema", format!("ingest: the text on standard input is not UTF-8: {e}")))?;
        buf
    } else {
        input.text.clone()
    };
    if text.trim().is_empty() {
        return Err(refused("empty_text", "ingest: the text is empty: there is nothing to classify"));
    }
    if text.len() > i::INGEST_TEXT_BYTES_MAX {
        return Err(refused(
            "limit",
            format!(
                "ingest: the text has {} bytes or more, over the limit of {} bytes (INGEST_TEXT_BYTES_MAX); split it",
                text.len(),
                i::INGEST_TEXT_BYTES_MAX
            ),
        ));
    }
    if input.conversation.len() > agora_graph::event::TEXT_BYTES_MAX {
        return Err(refused("limit", format!("ingest: the conversation has {} bytes, over {}", input.conversation.len(), agora_graph::event::TEXT_BYTES_MAX)));
    }
    let (threshold, threshold_from) = match (input.threshold, settings.threshold) {
        (Some(t), _) => (t, "the call's threshold".to_string()),
        (None, Some(t)) => (t, format!("[ingest] threshold in {}", config.display())),
        (None, None) => (DEFAULT_THRESHOLD, "the default".to_string()),
    };
    if !threshold.is_finite() || !(0.0..=1.0).contains(&threshold) {
        return Err(refused("out_of_range", format!("ingest: threshold {threshold} ({threshold_from}) is not between 0 and 1")));
    }
    let classifier = match (&input.classifier, &settings.classifier) {
        (Some(c), _) => Classifier::parse(c, "the call's classifier")?,
        (None, Some(c)) => Classifier::parse(c, &format!("[ingest] classifier in {}", config.display()))?,
        (None, None) => Classifier::Rules,
    };
    // Refuse an unknown acting agent before asking any model.
    s.key()?;

    // 1. Classify.
    let input_hash = sha256_hex(text.as_bytes());
    let mut endpoint = None;
    let mut left_out = 0;
    let (proposals, model, raw): (Vec<Proposal>, String, String) = match classifier {
        Classifier::Rules => {
            let (p, left) = rules::classify(&text);
            left_out = left;
            let raw = serde_json::to_string(&p)?;
            (p, rules::MODEL.to_string(), raw)
        }
        Classifier::OpenAi => {
            let url = input.endpoint.clone().or_else(|| settings.endpoint.clone()).ok_or_else(|| {
                classify_error(ClassifyError::Settings(format!(
                    "the openai classifier needs an endpoint: --endpoint URL, or [ingest] endpoint in {}",
                    config.display()
                )))
            })?;
            let model = input.model.clone().or_else(|| settings.model.clone()).ok_or_else(|| {
                classify_error(ClassifyError::Settings(format!("the openai classifier needs a model: --model NAME, or [ingest] model in {}", config.display())))
            })?;
            // The configured key goes to the configured endpoint only.
            let key = if settings.endpoint.as_deref().map(openai::completions_url) == Some(openai::completions_url(&url)) { api_key(&settings)? } else { None };
            let (p, answered_by, raw) = openai::classify(&url, &model, key.as_deref(), settings.ca_file.as_deref(), &text).map_err(classify_error)?;
            endpoint = Some(openai::completions_url(&url));
            (p, answered_by, raw)
        }
        Classifier::Sampling => {
            let Some(sampled) = &input.sampled else {
                return Err(classify_error(ClassifyError::SamplingUnavailable(
                    "the sampling classifier asks the connected MCP client's own model (sampling/createMessage): it is only available to the ingest tool \
                     called over MCP by a client that declares the sampling capability, not from the command line or the HTTP API"
                        .to_string(),
                )));
            };
            let source = format!("the MCP client's model {:?}", sampled.model);
            let p = classify::parse_answer(&sampled.answer, &source).map_err(classify_error)?;
            (p, sampled.model.clone(), sampled.answer.clone())
        }
    };
    let name = clip(&format!("{}/{}", classifier.name(), model), 256);

    // 2-4. Threshold, resolve, record.
    let mut outcomes: Vec<(Outcome, Vec<Resolution>)> = Vec::with_capacity(proposals.len());
    for (index, p) in proposals.iter().enumerate() {
        if p.confidence < threshold {
            let message = format!("confidence {} is below the threshold {threshold}", p.confidence);
            outcomes.push((Outcome::Dropped { reason: "below_threshold", rule: None, message }, Vec::new()));
            continue;
        }
        let (resolutions, targets) = resolve(s, index, p, &outcomes)?;
        let Some(targets) = targets else {
            let unresolved: Vec<&str> = resolutions.iter().filter(|r| r.chosen.is_none()).map(|r| r.target.as_str()).collect();
            let message = format!("no node fits the target {:?}", unresolved.first().copied().unwrap_or_default());
            outcomes.push((Outcome::Dropped { reason: "unresolved", rule: None, message }, resolutions));
            continue;
        };
        let outcome = match record_move(s, &command_for(p.kind, &p.text, &targets)) {
            Ok(recorded) => Outcome::Recorded(recorded, targets),
            Err(e) => {
                let rule = error_rule(&e).map_or(UNNAMED_RULE, |(r, _)| r).to_string();
                let message = e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ");
                Outcome::Dropped { reason: "refused", rule: Some(rule), message }
            }
        };
        outcomes.push((outcome, resolutions));
    }

    // 5. The audit, then a link from each recorded event to it.
    let audit_text = json!({
        "format": AUDIT_FORMAT,
        "classifier": classifier.name(),
        "model": model,
        "endpoint": endpoint,
        "threshold": threshold,
        "input_bytes": text.len(),
        "left_out": left_out,
        "proposals": proposals.iter().zip(&outcomes).enumerate().map(|(index, (p, (outcome, resolutions)))| {
            let mut v = json!({
                "index": index,
                "kind": p.kind.name(),
                "text": clip(&p.text, AUDIT_TEXT_BYTES),
                "text_sha256": sha256_hex(p.text.as_bytes()),
                "targets": p.targets,
                "confidence": p.confidence,
                "resolutions": resolutions,
            });
            match outcome {
                Outcome::Recorded(r, _) => {
                    v["outcome"] = json!("recorded");
                    v["id"] = json!(r.id);
                }
                Outcome::Dropped { reason, rule, message } => {
                    v["outcome"] = json!(reason);
                    v["rule"] = json!(rule);
                    v["message"] = json!(message);
                }
            }
            v
        }).collect::<Vec<_>>(),
    })
    .to_string();
    let act = |operation: &str, name: String, cause: Option<String>, text: String, output_hash: Option<String>| {
        RecordCommand::Act(i::Act {
            operation: operation.to_string(),
            name,
            conversation: input.conversation.clone(),
            span: String::new(),
            parent: String::new(),
            cause,
            input_hash: Some(input_hash.clone()),
            output_hash,
            text,
            error: String::new(),
        })
    };
    let audit = record_move(s, &act("classify", name, None, audit_text, Some(sha256_hex(raw.as_bytes()))))?.id;

    let mut recorded = Vec::new();
    let mut dropped = Vec::new();
    for (index, (p, (outcome, resolutions))) in proposals.iter().zip(outcomes).enumerate() {
        match outcome {
            Outcome::Recorded(r, targets) => {
                let link_text = json!({ "audit": audit, "proposal": index, "kind": p.kind.name(), "confidence": p.confidence }).to_string();
                let link = record_move(s, &act("classified", audit.clone(), Some(r.id.clone()), link_text, None))?.id;
                recorded.push(IngestRecorded {
                    proposal: index,
                    id: r.id,
                    kind: r.kind,
                    text: p.text.clone(),
                    confidence: p.confidence,
                    targets,
                    link,
                    resolutions,
                });
            }
            Outcome::Dropped { reason, rule, message } => dropped.push(IngestDropped {
                proposal: index,
                kind: p.kind.name().to_string(),
                text: p.text.clone(),
                confidence: p.confidence,
                reason: reason.to_string(),
                rule,
                message,
                resolutions,
            }),
        }
    }
    Ok(Ingested { audit, classifier: classifier.name().to_string(), model, input_hash, threshold, recorded, dropped, left_out })
}

/// The API key of the configured endpoint: `[ingest] api_key_env`'s
/// variable, else `api_key_file`'s contents; none when neither is set.
fn api_key(settings: &agora_home::config::IngestSettings) -> anyhow::Result<Option<String>> {
    if let Some(var) = &settings.api_key_env {
        return match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(classify_error(ClassifyError::Settings(format!(
                "[ingest] api_key_env names {var}, which is not set in the environment of the process classifying"
            )))),
        };
    }
    if let Some(file) = &settings.api_key_file {
        let key =
            std::fs::read_to_string(file).map_err(|e| classify_error(ClassifyError::Settings(format!("[ingest] api_key_file {}: {e}", file.display()))))?;
        return Ok(Some(key.trim().to_string()));
    }
    Ok(None)
}

/// The recording command of a move.
fn command_for(kind: MoveKind, text: &str, targets: &[String]) -> RecordCommand {
    let text = text.to_string();
    let target = targets.first().cloned().unwrap_or_default();
    let other = targets.get(1).cloned().unwrap_or_default();
    match kind {
        MoveKind::Proposition => RecordCommand::Propose(i::Propose { text }),
        MoveKind::Question => RecordCommand::Ask(i::Ask { text }),
        MoveKind::Support => RecordCommand::Support(i::OnTarget { target, text }),
        MoveKind::Contradiction => RecordCommand::Contradict(i::OnTarget { target, text }),
        MoveKind::Refinement => RecordCommand::Refine(i::Refine { target, text, resolves: Vec::new() }),
        MoveKind::Resolve => RecordCommand::Resolve(i::OnTarget { target, text }),
        MoveKind::Reframe => RecordCommand::Reframe(i::OnTarget { target, text }),
        MoveKind::Synthesis => RecordCommand::Synthesize(i::Synthesize { sources: targets.to_vec(), text }),
        MoveKind::Connection => RecordCommand::Connect(i::Pair { a: target, b: other, text }),
        MoveKind::Tension => RecordCommand::Tension(i::Pair { a: target, b: other, text }),
    }
}

/// Words that find nothing (and the rules' cues, which would find every
/// move that used them).
const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "that",
    "this",
    "with",
    "are",
    "was",
    "but",
    "however",
    "not",
    "its",
    "it's",
    "our",
    "we",
    "you",
    "they",
    "their",
    "there",
    "then",
    "than",
    "from",
    "have",
    "has",
    "had",
    "will",
    "would",
    "should",
    "could",
    "can",
    "cannot",
    "won't",
    "don't",
    "doesn't",
    "isn't",
    "is",
    "be",
    "been",
    "to",
    "of",
    "in",
    "on",
    "at",
    "by",
    "or",
    "an",
    "a",
    "as",
    "so",
    "if",
    "it",
    "do",
    "does",
    "let's",
    "lets",
    "let",
    "us",
    "i",
    "me",
    "my",
    "propose",
    "suggest",
    "think",
    "believe",
    "agree",
    "disagree",
    "wrong",
    "instead",
    "rather",
    "because",
    "since",
    "evidence",
    "example",
    "answer",
    "combining",
    "together",
    "what",
    "which",
    "who",
    "how",
    "why",
    "when",
    "where",
    "all",
    "any",
    "some",
    "no",
    "yes",
    "work",
    "works",
    "out",
    "rules",
    "true",
    "more",
    "precisely",
];

/// The words of a target description the search is asked for: lowercase
/// letters and digits, stop words left out, at most 32.
fn query_of(target: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for w in target.to_lowercase().replace('\u{2019}', "'").split(|c: char| !c.is_alphanumeric() && c != '\'') {
        let w = w.trim_matches('\'');
        if w.len() < 2 || STOP_WORDS.contains(&w) || words.iter().any(|x| x == w) {
            continue;
        }
        // The index's tokenizer cuts at apostrophes too.
        for part in w.split('\'').filter(|p| p.len() >= 2 && !STOP_WORDS.contains(p)) {
            if !words.iter().any(|x| x == part) {
                words.push(part.to_string());
            }
        }
        if words.len() >= 32 {
            break;
        }
    }
    words.join(" ")
}

/// Resolve each target of proposal `index`: the resolutions, and the ids
/// chosen when every target found one.
fn resolve(s: &Session, index: usize, p: &Proposal, earlier: &[(Outcome, Vec<Resolution>)]) -> anyhow::Result<(Vec<Resolution>, Option<Vec<String>>)> {
    let mut resolutions = Vec::new();
    let mut chosen: Vec<String> = Vec::new();
    let single = p.kind.arity().1 == 1;
    for target in &p.targets {
        // `#N`: the event recorded for an earlier proposal of this input.
        if let Some(n) = target.trim().strip_prefix('#').and_then(|n| n.parse::<usize>().ok()) {
            let id = match earlier.get(n) {
                Some((Outcome::Recorded(r, _), _)) if n < index && !chosen.contains(&r.id) => Some(r.id.clone()),
                _ => None,
            };
            chosen.extend(id.clone());
            resolutions.push(Resolution { target: target.clone(), via: "proposal".into(), query: String::new(), candidates: Vec::new(), chosen: id });
            continue;
        }
        let query = query_of(target);
        let mut candidates = Vec::new();
        if !query.is_empty() {
            let found = search(s, &i::Search { query: query.clone(), all: false, current: true, limit: Some(50) })?;
            for hit in found.hits.into_iter().filter(|h| h.kind != "action" && !chosen.contains(&h.id)).take(CANDIDATES_MAX) {
                candidates.push(Candidate { id: hit.id, score: hit.score, kind: hit.kind, status: hit.status, text: clip(&hit.text, CANDIDATE_TEXT_BYTES) });
            }
        }
        // The first candidate the move may name: for a move with one
        // target, by the graph's own rules; else the best one left.
        let pick =
            candidates.iter().find(|c| !single || check_move(s, &command_for(p.kind, &p.text, std::slice::from_ref(&c.id))).is_ok()).map(|c| c.id.clone());
        chosen.extend(pick.clone());
        resolutions.push(Resolution { target: target.clone(), via: "search".into(), query, candidates, chosen: pick });
    }
    let complete = resolutions.iter().all(|r| r.chosen.is_some());
    Ok((resolutions, complete.then_some(chosen)))
}
