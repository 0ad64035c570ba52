//! Rendering results as text or JSON.

use agora_core::SignedEntry;
use agora_store::{PayloadState, StoredEntry};
use base64::Engine;
use serde_json::{Value, json};
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

/// Report an error: as `{"error": ..., "rule": ..., "entry": ...}` on `out`
/// with `--json` (`rule` and `entry` where a typed cause names them), and
/// always as `error: ...` on `err`, with the whole chain of causes.
pub fn write_error(error: &anyhow::Error, json: bool, out: &mut dyn Write, err: &mut dyn Write) {
    let chain: Vec<String> = error.chain().map(|e| e.to_string()).collect();
    let text = chain.join(": ");
    if json {
        let mut v = json!({ "error": text });
        if let Some((rule, entry)) = error_rule(error) {
            v["rule"] = json!(rule);
            v["entry"] = json!(entry);
        }
        let _ = writeln!(out, "{v}");
    }
    let _ = writeln!(err, "error: {text}");
}

/// The rule an error broke, and the entry it concerns, for programs: the
/// reasoning graph's rules by name, and the store's answers about references.
pub fn error_rule(error: &anyhow::Error) -> Option<(&'static str, Option<String>)> {
    error.chain().find_map(|cause| {
        if let Some(NoSuchEvent(id)) = cause.downcast_ref::<NoSuchEvent>() {
            return Some(("unknown_entry", Some(id.to_string())));
        }
        if let Some(r) = cause.downcast_ref::<agora_graph::RuleError>() {
            return Some((r.rule(), r.entry().map(|e| e.to_string())));
        }
        match cause.downcast_ref::<agora_store::StoreError>()? {
            agora_store::StoreError::NotFound(what) => Some(("unknown_entry", Some(what.clone()))),
            agora_store::StoreError::Ambiguous { prefix, .. } => Some(("ambiguous_prefix", Some(prefix.clone()))),
            agora_store::StoreError::BadPrefix(what) => Some(("not_an_entry_id", Some(what.clone()))),
            agora_store::StoreError::Forked { .. } => Some(("own_chain_forked", None)),
            _ => None,
        }
    })
}

pub fn entry_header_json(e: &SignedEntry) -> Value {
    let h = e.header();
    json!({
        "id": e.id().to_string(),
        "author": h.author.to_string(),
        "seq": h.seq,
        "backlink": h.backlink.map(|b| b.to_string()),
        "timestamp_ms": h.timestamp_ms,
        "payload_len": h.payload_len,
        "payload_hash": hex::encode(h.payload_hash),
        "version": h.version,
    })
}

pub fn payload_status(p: &PayloadState) -> String {
    match p {
        PayloadState::Held(_) => "held".into(),
        PayloadState::Redacted { at_ms, residue: Some(_) } => format!("redacted at {at_ms} ms (its meaning kept)"),
        PayloadState::Redacted { at_ms, residue: None } => format!("redacted at {at_ms} ms"),
        PayloadState::NotHeld => "not held (never received: asked of peers again)".into(),
    }
}

pub fn stored_entry_json(s: &StoredEntry, with_payload: bool) -> Value {
    let mut v = entry_header_json(&s.signed);
    let obj = v.as_object_mut().map(|o| {
        let (status, redacted_at) = match &s.payload {
            PayloadState::Held(_) => ("held", None),
            PayloadState::Redacted { at_ms, .. } => ("redacted", Some(*at_ms)),
            PayloadState::NotHeld => ("not_held", None),
        };
        o.insert("payload_status".into(), json!(status));
        o.insert("redacted_at_ms".into(), json!(redacted_at));
        if with_payload {
            o.insert("signature".into(), json!(hex::encode(s.signed.signature())));
            if let PayloadState::Held(p) = &s.payload {
                o.insert("payload_base64".into(), json!(base64::engine::general_purpose::STANDARD.encode(p)));
                o.insert("payload_utf8".into(), json!(std::str::from_utf8(p).ok()));
            }
        }
    });
    debug_assert!(obj.is_some());
    v
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
