//! Rendering results as text or JSON.

use agora_store::PayloadState;
use serde_json::json;
use std::io::Write;

/// A read named an event the graph does not hold (not stored, or not an
/// event of the workspace's views).
#[derive(Debug)]
pub struct NoSuchEvent(pub agora_core::EntryId);

impl std::fmt::Display for NoSuchEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no event {} in the graph", self.0)
    }
}

impl std::error::Error for NoSuchEvent {}

/// A refusal whose rule the command names itself, where no typed cause of a
/// lower layer does (an input it cannot read, a workspace rule). Its
/// message is what the person or program is told.
#[derive(Debug)]
pub struct Refused {
    /// The rule broken ([`error_rule`] returns it).
    pub rule: &'static str,
    /// The entry concerned, where there is one.
    pub entry: Option<String>,
    /// What went wrong, in words.
    pub message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refused {}

/// A [`Refused`] error with no entry.
pub fn refused(rule: &'static str, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Refused { rule, entry: None, message: message.into() })
}

/// A [`Refused`] error about `entry`.
pub fn refused_about(rule: &'static str, entry: impl ToString, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Refused { rule, entry: Some(entry.to_string()), message: message.into() })
}

/// The rule of a failure no typed cause names (a file that cannot be
/// read, say): every error carries a rule, this one when nothing finer is
/// known.
pub const UNNAMED_RULE: &str = "command_failed";

/// The rules that say the input itself is wrong (not a hex id, not a time,
/// over a limit, not matching the schema), as opposed to a rule of the log
/// the input would break: a front end answers them as bad input (HTTP 400).
pub const INPUT_RULES: &[&str] = &[
    "input_schema",
    "usage",
    "not_an_entry_id",
    "not_an_agent_id",
    "not_an_agent_name",
    "ambiguous_prefix",
    "not_a_time",
    "out_of_range",
    "limit",
    "payload_too_large",
    "bad_pack",
    "bad_fork_proof",
    "empty_text",
    "unknown_classifier",
];

/// The kind of failure a rule is, for programs (one word for every front
/// end: the HTTP API's status follows from it): `bad_input`, `not_found`
/// (a referenced entry is not held here), `unavailable` (the node is
/// shutting down), `internal` (the store failed), or `refused` (a rule of
/// the log was broken).
pub fn error_code(rule: &str) -> &'static str {
    match rule {
        r if INPUT_RULES.contains(&r) => "bad_input",
        "unknown_entry" | "unknown_agent" => "not_found",
        "shutting_down" => "unavailable",
        "store_failure" => "internal",
        _ => "refused",
    }
}

/// Report an error: as `{"error": ..., "code": ..., "message": ..., "rule":
/// ..., "entry": ...}` on `out` with `--json` (the shape of the HTTP API's
/// and MCP's errors, with `error` the same text as `message`; `rule` is
/// [`UNNAMED_RULE`] where no typed cause names one), and always as `error:
/// ...` on `err`, with the whole chain of causes.
pub fn write_error(error: &anyhow::Error, json: bool, out: &mut dyn Write, err: &mut dyn Write) {
    let chain: Vec<String> = error.chain().map(|e| e.to_string()).collect();
    let text = chain.join(": ");
    if json {
        let (rule, entry) = error_rule(error).unwrap_or((UNNAMED_RULE, None));
        let v = json!({ "error": text, "code": error_code(rule), "message": text, "rule": rule, "entry": entry });
        let _ = writeln!(out, "{v}");
    }
    let _ = writeln!(err, "error: {text}");
}

/// The rule an error broke, and the entry it concerns, for programs: the
/// reasoning graph's, the merge layer's and the roster's rules by name, the
/// store's answers about references, and the refusals commands name
/// ([`Refused`]).
pub fn error_rule(error: &anyhow::Error) -> Option<(&'static str, Option<String>)> {
    error.chain().find_map(|cause| {
        if let Some(r) = cause.downcast_ref::<Refused>() {
            return Some((r.rule, r.entry.clone()));
        }
        if let Some(NoSuchEvent(id)) = cause.downcast_ref::<NoSuchEvent>() {
            return Some(("unknown_entry", Some(id.to_string())));
        }
        if let Some(r) = cause.downcast_ref::<agora_graph::RuleError>() {
            if let agora_graph::RuleError::Decode(agora_graph::event::EventDecodeError::Limit(_)) = r {
                return Some(("limit", None));
            }
            return Some((r.rule(), r.entry().map(|e| e.to_string())));
        }
        if let Some(agora_graph::event::EventDecodeError::Limit(_)) = cause.downcast_ref::<agora_graph::event::EventDecodeError>() {
            return Some(("limit", None));
        }
        if let Some(r) = cause.downcast_ref::<agora_merge::MergeRuleError>() {
            let entry = match r {
                agora_merge::MergeRuleError::UnknownEntry { id, .. }
                | agora_merge::MergeRuleError::SelfDispute(id)
                | agora_merge::MergeRuleError::NotADispute(id) => Some(id.to_string()),
                _ => None,
            };
            return Some((r.code(), entry));
        }
        if let Some(e) = cause.downcast_ref::<agora_merge::payload::MergeDecodeError>() {
            return Some((e.code(), None));
        }
        if let Some(e) = cause.downcast_ref::<agora_roster::RosterError>() {
            return Some(match e {
                agora_roster::RosterError::NoteTooLong(_) => ("limit", None),
                agora_roster::RosterError::RemoveFounder => ("remove_founder", None),
                _ => ("undecodable_roster_event", None),
            });
        }
        if let Some(e) = cause.downcast_ref::<agora_merge::ConsensusError>() {
            return Some(match e {
                agora_merge::ConsensusError::Quorum { .. } => ("out_of_range", None),
                agora_merge::ConsensusError::TooManyAgents(_) => ("limit", None),
            });
        }
        if cause.downcast_ref::<agora_core::pack::PackError>().is_some() {
            return Some(("bad_pack", None));
        }
        if cause.downcast_ref::<agora_core::fork::ForkProofError>().is_some() {
            return Some(("bad_fork_proof", None));
        }
        if let Some(v) = cause.downcast_ref::<agora_core::verify::VerifyError>() {
            return Some((v.rule.code(), None));
        }
        if let Some(agora_core::entry::BuildError::PayloadTooLarge { .. }) = cause.downcast_ref::<agora_core::entry::BuildError>() {
            return Some(("payload_too_large", None));
        }
        match cause.downcast_ref::<agora_store::StoreError>()? {
            agora_store::StoreError::NotFound(what) => Some(("unknown_entry", Some(what.clone()))),
            agora_store::StoreError::Ambiguous { prefix, .. } => Some(("ambiguous_prefix", Some(prefix.clone()))),
            agora_store::StoreError::BadPrefix(what) => Some(("not_an_entry_id", Some(what.clone()))),
            agora_store::StoreError::Forked { .. } => Some(("own_chain_forked", None)),
            agora_store::StoreError::NotATip { tip, .. } => Some(("not_a_tip", Some(tip.to_string()))),
            agora_store::StoreError::Verify(v) => Some((v.rule.code(), None)),
            agora_store::StoreError::Import(f) => Some((import_rule(&f.problem), Some(f.problem.entry().id.to_string()))),
            agora_store::StoreError::Build(agora_core::entry::BuildError::PayloadTooLarge { .. }) => Some(("payload_too_large", None)),
            agora_store::StoreError::NotAStore { .. }
            | agora_store::StoreError::Locked { .. }
            | agora_store::StoreError::Corrupt { .. }
            | agora_store::StoreError::Db { .. } => Some(("store_failure", None)),
            _ => None,
        }
    })
}

/// The rule a refused import names: the chain rule its entry broke (a link,
/// its payload, its signature), or `predecessor_missing` when the entry its
/// backlink names is neither stored nor earlier in the input.
fn import_rule(problem: &agora_store::ImportProblem) -> &'static str {
    match problem {
        agora_store::ImportProblem::PredecessorMissing { .. } => "predecessor_missing",
        agora_store::ImportProblem::Link(v) | agora_store::ImportProblem::Payload(v) | agora_store::ImportProblem::Signature(v) => v.rule.code(),
    }
}

pub fn payload_status(p: &PayloadState) -> String {
    match p {
        PayloadState::Held(_) => "held".into(),
        PayloadState::Redacted { at_ms, residue: Some(_) } => format!("redacted at {at_ms} ms (its meaning kept)"),
        PayloadState::Redacted { at_ms, residue: None } => format!("redacted at {at_ms} ms"),
        PayloadState::NotHeld => "not held (never received: asked of peers again)".into(),
    }
}

/// A one-line preview of a payload for `log`.
pub fn preview(p: &PayloadState) -> String {
    match p {
        PayloadState::Held(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => {
                let line: String = text.chars().take(60).map(|c| if c.is_control() { ' ' } else { c }).collect();
                if text.chars().count() > 60 { format!("{line}…") } else { line }
            }
            Err(_) => format!("<{} bytes binary>", bytes.len()),
        },
        other => format!("<{}>", payload_status(other)),
    }
}
