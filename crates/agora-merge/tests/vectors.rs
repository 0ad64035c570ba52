//! Merge vectors in `protocol-spec/vectors/merge.json`: one payload of every
//! kind, payloads that must be refused, and a small swarm (signed entries and
//! payloads) with every merge event's status and the expected view hash.
//! Regenerate after a deliberate format change with
//! `AGORA_BLESS_VECTORS=1 cargo test --release -p agora-merge --test vectors`
//! (and update protocol-spec/merge.md in the same commit).

mod common;

use agora_core::{AgentId, EntryId, SignedEntry};
use agora_graph::Event;
use agora_merge::payload::{KIND_COUNT, TEXT_BYTES_MAX};
use agora_merge::{ChainInput, LiveMerge, LiveUpdate, Merge, MergeEntry, MergeEvent};
use common::{Swarm, text};
use serde_json::{Value, json};
use std::path::PathBuf;

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protocol-spec/vectors/merge.json")
}

fn examples() -> Vec<MergeEvent> {
    vec![
        MergeEvent::Accept { author: AgentId([1; 32]), up_to_seq: 4, head: EntryId([2; 32]) },
        MergeEvent::Dispute {
            target: EntryId([3; 32]),
            reason: text("two tracks double the billing system"),
            counter_claim: Some(text("one plan with a spend cap")),
        },
        MergeEvent::Withdraw { dispute: EntryId([4; 32]) },
        MergeEvent::ForkResolution { fork_number: 1, fork_seq: 6, continue_with: EntryId([5; 32]) },
    ]
}

fn invalid() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let mut trailing = MergeEvent::Withdraw { dispute: EntryId([4; 32]) }.encode();
    trailing.push(0);
    let mut overlong = MergeEvent::Withdraw { dispute: EntryId([4; 32]) }.encode();
    overlong.splice(5..6, [0x82, 0x00]);
    let mut long = b"agmg\x01".to_vec();
    long.extend(std::iter::repeat_n(0u8, 2 * TEXT_BYTES_MAX + 65));
    vec![
        ("unknown_kind", b"agmg\x01\x04".to_vec(), "unknown_kind"),
        ("unknown_version", b"agmg\x02\x02".to_vec(), "unknown_version"),
        ("trailing_byte", trailing, "malformed"),
        ("overlong_kind_code", overlong, "malformed"),
        ("truncated_accept", b"agmg\x01\x00\x01\x02".to_vec(), "malformed"),
        ("no_version", b"agmg".to_vec(), "malformed"),
        ("reason_over_16_kib", MergeEvent::Dispute { target: EntryId([3; 32]), reason: "x".repeat(TEXT_BYTES_MAX + 1), counter_claim: None }.encode(), "limit"),
        ("body_over_limit", long, "limit"),
    ]
}

/// Three agents: a proposition, a contradiction, accepts (one pending), a
/// dispute later withdrawn, a fork resolved by its author, a foreign resolution.
fn scenario() -> Swarm {
    let mut s = Swarm::new(3);
    let p1 = s.event(0, Event::Proposition { text: text("usage-based pricing") });
    let c1 = s.event(1, Event::Contradiction { target: p1, text: text("procurement needs predictable costs") });
    s.merge(2, s.accept_of(&p1));
    let d = s.merge(2, MergeEvent::Dispute { target: c1, reason: text("costs can be capped"), counter_claim: Some(text("usage with a cap")) });
    s.merge(2, MergeEvent::Withdraw { dispute: d });
    let p2 = s.event(0, Event::Proposition { text: text("seat-based for enterprise") });
    let p2b = s.append_after(0, Some(p1), Event::Proposition { text: text("restored from a backup") }.encode());
    s.merge(1, MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: p2 });
    s.append_after(0, Some(p2), MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: p2 }.encode());
    s.append_after(0, Some(p2b), MergeEvent::ForkResolution { fork_number: 2, fork_seq: 2, continue_with: p2b }.encode());
    s.merge(1, MergeEvent::Accept { author: s.agent(0), up_to_seq: 9, head: EntryId([9; 32]) });
    s.merge(1, MergeEvent::Dispute { target: p2, reason: text("off the kept branch"), counter_claim: None });
    s
}

fn generate() -> Value {
    let valid: Vec<Value> = examples()
        .iter()
        .enumerate()
        .map(|(code, e)| {
            json!({ "code": code, "kind": e.kind_name(), "debug": format!("{e:?}"), "payload": hex::encode(e.encode()), "residue": hex::encode(MergeEvent::residue(&e.encode())) })
        })
        .collect();
    let bad: Vec<Value> = invalid()
        .into_iter()
        .map(
            |(name, bytes, error)| json!({ "name": name, "payload": hex::encode(&bytes), "error": error, "residue": hex::encode(MergeEvent::residue(&bytes)) }),
        )
        .collect();
    let s = scenario();
    let m = s.compute();
    let entries: Vec<Value> = s.entries.iter().map(|e| json!({ "entry": hex::encode(e.signed().encode()), "payload": e.payload().map(hex::encode) })).collect();
    let statuses: Vec<Value> = m
        .records()
        .iter()
        .map(|r| json!({ "entry": r.entry.to_string(), "kind": r.event.as_ref().map(|e| e.kind_name()), "status": r.status.name() }))
        .collect();
    json!({
        "description": "Agora merge-event payload vectors and a small swarm with its view hash; see protocol-spec/merge.md",
        "valid": valid,
        "invalid": bad,
        "swarm": {
            "entries": entries,
            "statuses": statuses,
            "chain_bytes": m.agents().iter().map(|a| json!({ "author": a.to_string(), "bytes": hex::encode(m.chain_canonical_bytes(a).unwrap()) })).collect::<Vec<_>>(),
            "canonical_bytes": hex::encode(m.canonical_bytes()),
            "view_hash": hex::encode(m.view_hash()),
        },
    })
}

#[test]
fn merge_vectors_are_current() {
    let text = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("AGORA_BLESS_VECTORS").is_some() {
        std::fs::write(path(), &text).unwrap();
    }
    let committed = std::fs::read_to_string(path()).expect("protocol-spec/vectors/merge.json exists");
    assert!(committed == text, "merge vectors differ from the implementation; rerun with AGORA_BLESS_VECTORS=1 after a deliberate format change");
}

#[test]
fn merge_vectors_check() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap();
    let valid = v["valid"].as_array().unwrap();
    assert_eq!(valid.len() as u32, KIND_COUNT, "one example per kind");
    for (i, case) in valid.iter().enumerate() {
        let bytes = hex::decode(case["payload"].as_str().unwrap()).unwrap();
        assert_eq!(&bytes[..5], b"agmg\x01");
        assert_eq!(bytes[5] as usize, i, "kind code is the variant index");
        let event = MergeEvent::decode(&bytes).unwrap();
        assert_eq!(event.kind_name(), case["kind"].as_str().unwrap());
        assert_eq!(event.encode(), bytes);
        // Its residue: the same kind and structure, no text (events.md, merge.md).
        let residue = MergeEvent::decode(&hex::decode(case["residue"].as_str().unwrap()).unwrap()).unwrap();
        assert_eq!(residue.kind_name(), event.kind_name());
        assert_eq!(MergeEvent::residue(&bytes), hex::decode(case["residue"].as_str().unwrap()).unwrap());
    }
    for case in v["invalid"].as_array().unwrap() {
        let bytes = hex::decode(case["payload"].as_str().unwrap()).unwrap();
        let err = MergeEvent::decode(&bytes).unwrap_err();
        let residue = hex::decode(case["residue"].as_str().unwrap()).unwrap();
        if !residue.is_empty() {
            let residue_err = MergeEvent::decode(&residue).unwrap_err();
            assert_eq!(residue_err.code(), err.code(), "{}: residue", case["name"]);
        }
        assert_eq!(err.code(), case["error"].as_str().unwrap(), "{}", case["name"]);
    }
    // The swarm, decoded from the file alone, in reverse order: same statuses, same bytes, same hash.
    let swarm = &v["swarm"];
    let mut entries: Vec<MergeEntry> = swarm["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let signed = SignedEntry::decode(&hex::decode(e["entry"].as_str().unwrap()).unwrap()).unwrap();
            agora_core::verify::verify_signature(&signed).unwrap();
            let payload = e["payload"].as_str().map(|p| hex::decode(p).unwrap());
            MergeEntry::from_owned(signed, payload).unwrap()
        })
        .collect();
    entries.reverse();
    let m = Merge::compute(&entries, &[]).unwrap();
    for (r, expected) in m.records().iter().zip(swarm["statuses"].as_array().unwrap()) {
        assert_eq!(r.entry.to_string(), expected["entry"].as_str().unwrap());
        assert_eq!(r.status.name(), expected["status"].as_str().unwrap(), "{:?}", r.event);
    }
    // Each chain's bytes, and the view bytes made of their digests.
    let mut view_bytes = b"agora-merge-view/2".to_vec();
    let chains = swarm["chain_bytes"].as_array().unwrap();
    view_bytes.extend_from_slice(&(chains.len() as u32).to_be_bytes());
    for (a, c) in m.agents().iter().zip(chains) {
        assert_eq!(a.to_string(), c["author"].as_str().unwrap());
        let bytes = hex::decode(c["bytes"].as_str().unwrap()).unwrap();
        assert_eq!(m.chain_canonical_bytes(a).unwrap(), bytes);
        view_bytes.extend_from_slice(a.as_bytes());
        view_bytes.extend_from_slice(&agora_core::sha256(&bytes));
    }
    assert_eq!(hex::encode(&view_bytes), swarm["canonical_bytes"].as_str().unwrap());
    assert_eq!(hex::encode(m.canonical_bytes()), swarm["canonical_bytes"].as_str().unwrap());
    assert_eq!(hex::encode(m.view_hash()), swarm["view_hash"].as_str().unwrap());
    // The live view, given the entries one at a time in that (reverse) order
    // and built at once: the same hash.
    let mut live = LiveMerge::new();
    for (i, e) in entries.iter().enumerate() {
        let held = &entries[..=i];
        let input = |a: &agora_core::AgentId| -> Result<ChainInput, std::convert::Infallible> {
            Ok((held.iter().filter(|e| e.author() == *a).cloned().collect(), Vec::new()))
        };
        live.apply(LiveUpdate { entries: vec![e.clone()], ..LiveUpdate::default() }, input).unwrap();
    }
    assert_eq!(hex::encode(live.view_hash()), swarm["view_hash"].as_str().unwrap());
    assert_eq!(hex::encode(LiveMerge::from_entries(&entries, &[]).unwrap().view_hash()), swarm["view_hash"].as_str().unwrap());
    // Every status name appears at least once in the swarm except clipped and off_view.
    let names: std::collections::BTreeSet<&str> = m.records().iter().map(|r| r.status.name()).collect();
    for n in ["applied", "withdrawn", "idle", "pending", "invalid"] {
        assert!(names.contains(n), "{n} missing from {names:?}");
    }
}
