//! What a classifier proposes, and how a model's answer is read: the
//! prompt the `openai` and `sampling` classifiers send, and the strict
//! reading of the JSON they must answer (protocol-spec/ingest.md).

use agora_graph::event::TEXT_BYTES_MAX;
use serde::{Deserialize, Serialize};

/// Most proposals one ingest records or drops: an answer with more is malformed.
pub const PROPOSALS_MAX: usize = 32;
/// Most targets one proposal names.
pub const TARGETS_MAX: usize = 4;
/// Longest target description, in bytes.
pub const TARGET_BYTES_MAX: usize = 512;

/// The moves a classifier may propose: the reasoning moves that carry a
/// text, each recorded by its own command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// A new position (`propose`).
    Proposition,
    /// An open question (`ask`).
    Question,
    /// Evidence for a position (`support`).
    Support,
    /// A challenge to a position (`contradict`).
    Contradiction,
    /// A successor to a position (`refine`).
    Refinement,
    /// An answer to a question or contradiction (`resolve`).
    Resolve,
    /// A position or question recast (`reframe`).
    Reframe,
    /// Two or more positions combined (`synthesize`).
    Synthesis,
    /// Two nodes related (`connect`).
    Connection,
    /// A tension between two nodes (`tension`).
    Tension,
}

impl MoveKind {
    /// Every kind, in the order the prompt lists them.
    pub const ALL: [MoveKind; 10] = [
        MoveKind::Proposition,
        MoveKind::Question,
        MoveKind::Support,
        MoveKind::Contradiction,
        MoveKind::Refinement,
        MoveKind::Resolve,
        MoveKind::Reframe,
        MoveKind::Synthesis,
        MoveKind::Connection,
        MoveKind::Tension,
    ];

    /// Its name: the graph's kind name.
    pub fn name(self) -> &'static str {
        match self {
            MoveKind::Proposition => "proposition",
            MoveKind::Question => "question",
            MoveKind::Support => "support",
            MoveKind::Contradiction => "contradiction",
            MoveKind::Refinement => "refinement",
            MoveKind::Resolve => "resolve",
            MoveKind::Reframe => "reframe",
            MoveKind::Synthesis => "synthesis",
            MoveKind::Connection => "connection",
            MoveKind::Tension => "tension",
        }
    }

    /// How many targets it names: at least, at most.
    pub fn arity(self) -> (usize, usize) {
        match self {
            MoveKind::Proposition | MoveKind::Question => (0, 0),
            MoveKind::Support | MoveKind::Contradiction | MoveKind::Refinement | MoveKind::Resolve | MoveKind::Reframe => (1, 1),
            MoveKind::Synthesis => (2, TARGETS_MAX),
            MoveKind::Connection | MoveKind::Tension => (2, 2),
        }
    }

    fn by_name(name: &str) -> Option<MoveKind> {
        MoveKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One proposed event: its kind, its text, what it refers to (described in
/// words, for the resolver to find, or `#N`: the event recorded for this
/// input's proposal N), and how sure the classifier is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Proposal {
    pub kind: MoveKind,
    pub text: String,
    pub targets: Vec<String>,
    pub confidence: f64,
}

/// Why a classifier gave no proposals.
#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    /// The endpoint could not be reached.
    #[error("classifier endpoint {endpoint}: unreachable: {reason}")]
    Unreachable { endpoint: String, reason: String },
    /// The endpoint's TLS certificate chains to no trusted root.
    #[error("classifier endpoint {endpoint}: its TLS certificate is not trusted ({reason}); trusted are {trusted}")]
    Untrusted { endpoint: String, reason: String, trusted: String },
    /// The endpoint answered with an error status.
    #[error("classifier endpoint {endpoint} answered HTTP {status}: {body}")]
    Status { endpoint: String, status: u16, body: String },
    /// The answer is not what the classifier must answer.
    #[error("the answer of {source_name} is malformed: {reason}")]
    Malformed { source_name: String, reason: String },
    /// A setting the classifier needs is missing or unusable.
    #[error("{0}")]
    Settings(String),
    /// The sampling classifier was asked for outside MCP.
    #[error("{0}")]
    SamplingUnavailable(String),
}

impl ClassifyError {
    /// The rule it names for programs.
    pub fn rule(&self) -> &'static str {
        match self {
            ClassifyError::Unreachable { .. } => "classifier_unreachable",
            ClassifyError::Untrusted { .. } => "classifier_untrusted",
            ClassifyError::Status { .. } => "classifier_failed",
            ClassifyError::Malformed { .. } => "classifier_malformed",
            ClassifyError::Settings(_) => "classifier_settings",
            ClassifyError::SamplingUnavailable(_) => "sampling_unavailable",
        }
    }
}

/// The instructions a model is given (the system prompt).
pub const SYSTEM_PROMPT: &str = "You turn conversation turns or notes into typed reasoning events for a signed reasoning log. \
Answer with one JSON object and nothing else: {\"proposals\": [{\"kind\": KIND, \"text\": TEXT, \"targets\": [TARGET, ...], \"confidence\": NUMBER}]}. \
KIND is one of: proposition (a new position; no targets), question (an open question; no targets), support (evidence for 1 target), \
contradiction (challenges 1 target), refinement (replaces 1 target with a better position), resolve (answers 1 target question or contradiction), \
reframe (recasts 1 target), synthesis (combines 2 to 4 targets), connection (relates 2 targets), tension (2 targets that pull apart). \
TEXT restates the event as one self-contained sentence. A TARGET is a short description, in the text's own words, of the earlier statement \
the event is about (it is searched for in the log), or \"#N\" for the event of proposal N (counted from 0) of this answer. \
NUMBER, from 0 to 1, is how sure you are of the kind and the targets. Leave out small talk; answer {\"proposals\": []} when nothing is a reasoning move. \
At most 32 proposals.";

/// The user message: the text to classify.
pub fn user_message(text: &str) -> String {
    format!("Classify this text:\n\n{text}")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    proposals: Vec<ProposalIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProposalIn {
    kind: String,
    text: String,
    #[serde(default)]
    targets: Vec<String>,
    confidence: f64,
}

/// Read a model's answer strictly: one JSON object `{"proposals": [...]}`
/// (a Markdown code fence around it is taken off), each proposal with a
/// known kind, a text of 1 to 16 KiB, as many targets as its kind names
/// and a confidence in [0, 1]; no other field. `source_name` names who
/// answered, in the error.
pub fn parse_answer(answer: &str, source_name: &str) -> Result<Vec<Proposal>, ClassifyError> {
    let malformed = |reason: String| ClassifyError::Malformed { source_name: source_name.to_string(), reason };
    let mut body = answer.trim();
    if let Some(inner) = body.strip_prefix("```") {
        let inner = inner.strip_prefix("json").unwrap_or(inner);
        body = inner.strip_suffix("```").ok_or_else(|| malformed("a code fence that is not closed".into()))?.trim();
    }
    let parsed: Answer = serde_json::from_str(body).map_err(|e| malformed(format!("not the JSON object {{\"proposals\": [...]}} asked for: {e}")))?;
    if parsed.proposals.len() > PROPOSALS_MAX {
        return Err(malformed(format!("{} proposals, more than {PROPOSALS_MAX}", parsed.proposals.len())));
    }
    parsed
        .proposals
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let kind = MoveKind::by_name(&p.kind).ok_or_else(|| {
                let known: Vec<&str> = MoveKind::ALL.iter().map(|k| k.name()).collect();
                malformed(format!("proposal {i}: kind {:?} is none of {}", p.kind, known.join(", ")))
            })?;
            if p.text.trim().is_empty() || p.text.len() > TEXT_BYTES_MAX {
                return Err(malformed(format!("proposal {i}: its text has {} bytes (1 to {TEXT_BYTES_MAX})", p.text.len())));
            }
            if !p.confidence.is_finite() || !(0.0..=1.0).contains(&p.confidence) {
                return Err(malformed(format!("proposal {i}: confidence {} is not between 0 and 1", p.confidence)));
            }
            let (min, max) = kind.arity();
            if p.targets.len() < min || p.targets.len() > max {
                return Err(malformed(format!("proposal {i}: a {} names {min} to {max} targets, not {}", kind.name(), p.targets.len())));
            }
            if let Some(t) = p.targets.iter().find(|t| t.trim().is_empty() || t.len() > TARGET_BYTES_MAX) {
                return Err(malformed(format!("proposal {i}: target {t:?} is empty or over {TARGET_BYTES_MAX} bytes")));
            }
            Ok(Proposal { kind, text: p.text.trim().to_string(), targets: p.targets, confidence: p.confidence })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        let ok = r#"{"proposals": [{"kind": "proposition", "text": "Use seats", "targets": [], "confidence": 0.9},
            {"kind": "contradiction", "text": "No", "targets": ["seats"], "confidence": 0.6}]}"#;
        let p = parse_answer(ok, "x").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].kind, MoveKind::Contradiction);
        assert_eq!(parse_answer(&format!("```json\n{ok}\n```"), "x").unwrap(), p);
        for bad in [
            "not json",
            r#"{"proposals": [{"kind": "vote", "text": "a", "confidence": 0.5}]}"#,
            r#"{"proposals": [{"kind": "support", "text": "a", "targets": [], "confidence": 0.5}]}"#,
            r#"{"proposals": [{"kind": "question", "text": "a?", "confidence": 1.5}]}"#,
            r#"{"proposals": [{"kind": "question", "text": "a?", "confidence": 0.5, "extra": 1}]}"#,
            r#"{"proposals": [], "note": "x"}"#,
        ] {
            let e = parse_answer(bad, "the endpoint http://e").unwrap_err();
            assert!(e.to_string().contains("http://e"), "{e}");
            assert_eq!(e.rule(), "classifier_malformed");
        }
    }
}
