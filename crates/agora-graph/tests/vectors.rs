//! Event payload test vectors in `protocol-spec/vectors/events.json`: one
//! example of every kind, its payload bytes, and payloads that must be refused.
//! Regenerate after a deliberate format change with
//! `AGORA_BLESS_VECTORS=1 cargo test --release --workspace --locked --test vectors event_vectors_are_current`
//! (and update protocol-spec/events.md in the same commit).

use agora_core::EntryId;
use agora_graph::event::{Confidence, EventDecodeError, KIND_COUNT};
use agora_graph::{Event, MemoryKind, Relation, TaskState};
use serde_json::{Value, json};
use std::path::PathBuf;

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protocol-spec/vectors/events.json")
}

fn id(n: u8) -> EntryId {
    EntryId([n; 32])
}

fn examples() -> Vec<Event> {
    let t = |s: &str| s.to_string();
    vec![
        Event::Proposition { text: t("usage-based pricing") },
        Event::Support { target: id(1), text: t("competitors do it") },
        Event::Contradiction { target: id(1), text: t("procurement can't budget it") },
        Event::Refinement { target: id(1), resolves: vec![id(2)], text: t("two-track") },
        Event::Synthesis { sources: vec![id(1), id(3)], text: t("track realized value") },
        Event::Question { text: t("EU VAT?") },
        Event::Resolve { target: id(5), text: t("via the provider") },
        Event::Connection { a: id(1), b: id(5), text: t("both about billing") },
        Event::Tension { a: id(3), b: id(5), text: t("tracks differ by region") },
        Event::Reframe { target: id(5), text: t("which taxes apply at launch?") },
        Event::Park { target: id(5), reason: t("later") },
        Event::Resume { target: id(5) },
        Event::Claim {
            text: t("Default meeting time: morning"),
            kind: MemoryKind::Preference,
            sources: vec![id(9)],
            owner_scope: t("user:8831"),
            confirmed: false,
            expires_at_ms: Some(1_700_000_000_000),
        },
        Event::Relate { from: id(12), to: id(13), relation: Relation::StateChange, reason: t("Rex died") },
        Event::Confirm { target: id(12) },
        Event::FrameOpen { parent: Some(id(15)), query: t("trace code"), branched_from: None, invalidation_condition: t("refresh logic exists elsewhere") },
        Event::FrameEvidence { frame: id(16), text: t("line 47, no expiry check") },
        Event::FrameConclude { frame: id(16), conclusion: t("no expiry check"), confidence_bp: 9000 },
        Event::FrameSuspend { frame: id(16) },
        Event::FrameResume { frame: id(16) },
        Event::FrameInvalidate { frame: id(16), reason: t("found in gateway") },
        Event::Task { objective: t("Migrate billing"), owner_scope: t("user:8831") },
        Event::TaskUpdate { task: id(22), state: TaskState::Blocked, note: t("staging down") },
        Event::Trajectory { task_query: t("research ACME"), final_answer: t("revenue $3M"), iterations: 3, converged: true },
        Event::Judgment { trajectory: id(24), success: true, reason: t("found revenue"), confidence: Confidence::High },
        Event::MemoryItem {
            title: t("Check filings first"),
            description: t("company research"),
            content: t("Read the 10-K"),
            scope: t("research"),
            source_trajectory: Some(id(24)),
        },
        Event::Usage { trajectory: id(24), item: id(26), rank: 1, score_bp: 8200 },
        Event::Action {
            operation: t("execute_tool"),
            name: t("get_weather"),
            conversation: t("conv_5j66UpCpwteGg4YSxUnt7lPY"),
            span: t("0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331"),
            parent: t("0af7651916cd43dd8448eb211c80319c/00f067aa0ba902b7"),
            cause: Some(id(27)),
            input_hash: Some(agora_core::sha256(br#"{"city":"Paris"}"#)),
            output_hash: Some(agora_core::sha256(b"rainy, 57F")),
            text: t(r#"{"city":"Paris"} -> rainy, 57F"#),
            error: t(""),
        },
    ]
}

/// An action with `operation` and `span`, every other field empty.
fn action(operation: &str, span: &str) -> Vec<u8> {
    let t = |s: &str| s.to_string();
    Event::Action {
        operation: t(operation),
        name: t(""),
        conversation: t(""),
        span: t(span),
        parent: t(""),
        cause: None,
        input_hash: None,
        output_hash: None,
        text: t(""),
        error: t(""),
    }
    .encode()
}

/// An action from `span` under `parent`, every other field empty.
fn action_under(span: &str, parent: &str) -> Vec<u8> {
    let Ok(mut event) = agora_graph::Event::decode(&action("chat", span)) else { unreachable!("a valid action") };
    if let Event::Action { parent: p, .. } = &mut event {
        *p = parent.to_string();
    }
    event.encode()
}

fn invalid() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let mut trailing = Event::Question { text: "x".into() }.encode();
    trailing.push(0);
    let mut overlong = Event::Question { text: "x".into() }.encode();
    // kind code 5 as the overlong varint 85 00.
    overlong.splice(5..6, [0x85, 0x00]);
    vec![
        ("unknown_kind", b"agev\x01\x63".to_vec(), "unknown_kind"),
        ("unknown_version", b"agev\x02\x00\x01x".to_vec(), "unknown_version"),
        ("trailing_byte", trailing, "malformed"),
        ("overlong_kind_code", overlong, "malformed"),
        ("truncated", b"agev\x01\x00\x05ab".to_vec(), "malformed"),
        ("basis_points_over_10000", Event::FrameConclude { frame: id(1), conclusion: "c".into(), confidence_bp: 10_001 }.encode(), "limit"),
        ("action_operation_empty", action("", ""), "limit"),
        ("action_operation_upper_case", action("Execute_Tool", ""), "limit"),
        ("action_operation_over_64_bytes", action(&"a".repeat(65), ""), "limit"),
        ("action_span_upper_case", action("chat", "0AF7651916CD43DD8448EB211C80319C/B7AD6B7169203331"), "limit"),
        ("action_span_without_span_id", action("chat", "0af7651916cd43dd8448eb211c80319c"), "limit"),
        (
            "action_parent_of_another_trace",
            action_under("0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331", "1af7651916cd43dd8448eb211c80319c/00f067aa0ba902b7"),
            "limit",
        ),
        ("action_parent_without_span", action_under("", "0af7651916cd43dd8448eb211c80319c/00f067aa0ba902b7"), "limit"),
    ]
}

fn code(e: &EventDecodeError) -> &'static str {
    match e {
        EventDecodeError::NotAnEvent => "not_an_event",
        EventDecodeError::UnknownVersion(_) => "unknown_version",
        EventDecodeError::UnknownKind(_) => "unknown_kind",
        EventDecodeError::Malformed(_) => "malformed",
        EventDecodeError::Limit(_) => "limit",
    }
}

fn generate() -> Value {
    let valid: Vec<Value> = examples()
        .iter()
        .enumerate()
        .map(|(code, e)| {
            json!({ "code": code, "kind": e.kind_name(), "debug": format!("{e:?}"), "payload": hex::encode(e.encode()), "residue": hex::encode(Event::residue(&e.encode())) })
        })
        .collect();
    let bad: Vec<Value> = invalid()
        .into_iter()
        .map(|(name, bytes, error)| json!({ "name": name, "payload": hex::encode(&bytes), "error": error, "residue": hex::encode(Event::residue(&bytes)) }))
        .collect();
    let residues: Vec<Value> = residues()
        .into_iter()
        .map(|(name, e)| json!({ "name": name, "debug": format!("{e:?}"), "payload": hex::encode(e.encode()), "residue": hex::encode(Event::residue(&e.encode())) }))
        .collect();
    json!({ "description": "Agora event payload vectors; see protocol-spec/events.md", "valid": valid, "invalid": bad, "residues": residues })
}

/// Events whose residue keeps more than structure: a memory-write action
/// keeps its record's key as its name (events.md, the residue).
fn residues() -> Vec<(&'static str, Event)> {
    let memory = |operation: &str, name: &str| Event::Action {
        operation: operation.into(),
        name: name.into(),
        conversation: "conv-1".into(),
        span: "0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331".into(),
        parent: String::new(),
        cause: None,
        input_hash: Some([7; 32]),
        output_hash: None,
        text: "likes tea".into(),
        error: String::new(),
    };
    vec![
        ("memory_write_keeps_its_record_key", memory("update_memory", "pref-42")),
        ("memory_create_keeps_its_record_key", memory("create_memory", "pref-42")),
        ("memory_search_keeps_no_name", memory("search_memory", "pref-42")),
        ("memory_write_without_record", memory("update_memory", "")),
    ]
}

#[test]
fn event_vectors_are_current() {
    let text = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("AGORA_BLESS_VECTORS").is_some() {
        std::fs::write(path(), &text).unwrap();
    }
    let committed = std::fs::read_to_string(path()).expect("protocol-spec/vectors/events.json exists");
    assert!(committed == text, "event vectors differ from the implementation; rerun with AGORA_BLESS_VECTORS=1 after a deliberate format change");
}

#[test]
fn event_vectors_check() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap();
    let valid = v["valid"].as_array().unwrap();
    assert_eq!(valid.len() as u32, KIND_COUNT, "one example per kind");
    for (i, case) in valid.iter().enumerate() {
        let bytes = hex::decode(case["payload"].as_str().unwrap()).unwrap();
        assert_eq!(&bytes[..5], b"agev\x01");
        assert_eq!(bytes[5] as usize, i, "kind code is the variant index");
        let event = Event::decode(&bytes).unwrap();
        assert_eq!(event.kind_name(), case["kind"].as_str().unwrap());
        assert_eq!(event.encode(), bytes);
        // Its residue: the same kind and structure, no text (events.md, merge.md).
        let residue = Event::decode(&hex::decode(case["residue"].as_str().unwrap()).unwrap()).unwrap();
        assert_eq!(residue.kind_name(), event.kind_name());
        assert_eq!(Event::residue(&bytes), hex::decode(case["residue"].as_str().unwrap()).unwrap());
    }
    for case in v["residues"].as_array().unwrap() {
        let bytes = hex::decode(case["payload"].as_str().unwrap()).unwrap();
        let residue = hex::decode(case["residue"].as_str().unwrap()).unwrap();
        assert_eq!(Event::residue(&bytes), residue, "{}", case["name"]);
        let (Ok(Event::Action { operation, name, .. }), Ok(Event::Action { name: kept, text, input_hash, .. })) =
            (Event::decode(&bytes), Event::decode(&residue))
        else {
            panic!("{}: an action and its residue", case["name"])
        };
        assert_eq!((text.as_str(), input_hash), ("", None), "{}", case["name"]);
        let expected = match ["create_memory", "update_memory"].contains(&operation.as_str()) && !name.is_empty() {
            true => format!("sha256:{}", hex::encode(agora_core::sha256(name.as_bytes()))),
            false => String::new(),
        };
        assert_eq!(kept, expected, "{}", case["name"]);
    }
    for case in v["invalid"].as_array().unwrap() {
        let bytes = hex::decode(case["payload"].as_str().unwrap()).unwrap();
        let err = Event::decode(&bytes).unwrap_err();
        let residue = hex::decode(case["residue"].as_str().unwrap()).unwrap();
        if !residue.is_empty() {
            let residue_err = Event::decode(&residue).unwrap_err();
            assert_eq!(code(&residue_err), code(&err), "{}: residue", case["name"]);
        }
        assert_eq!(code(&err), case["error"].as_str().unwrap(), "{}", case["name"]);
    }
}
