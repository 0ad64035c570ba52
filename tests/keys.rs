//! An agent outlives its key (`protocol-spec/keys.md`), with real `agora`
//! processes: the first entry commits to a next key kept in `next-keys/`
//! until exported; `agora key rotate` signs with it and installs it; the
//! old key (a thief's copy of the home) can no longer extend the chain,
//! neither by appending nor by a pack; a rotation with the wrong next key is
//! refused with its rule; `agora key revoke` places the rotation after an
//! earlier entry; `agora key history` lists the key events.

mod support;

use agora_core::entry::next_header;
use agora_core::{AgentKey, KeyFields, SignedEntry, pack};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use support::*;

fn err_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn refused_with(h: &std::path::Path, args: &[&str], rule: &str) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = agora(h, &all);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(err_of(&out).contains(rule) || String::from_utf8_lossy(&out.stdout).contains(rule), "{args:?} refused without {rule}: {}", err_of(&out));
}

#[test]
fn an_agent_rotates_to_its_committed_key_and_the_old_key_is_refused() {
    let agent = Agent::new();
    let h = &agent.home;
    let next_file = h.join("next-keys/self.key");
    assert_eq!(std::fs::metadata(&next_file).unwrap().permissions().mode() & 0o777, 0o600);
    refused_with(h, &["key", "rotate"], "empty_chain");
    let first = json(h, &["propose", "Ship on Friday"]);
    let shown = json(h, &["show", first["id"].as_str().unwrap()]);
    assert_eq!(shown["version"], 2, "the first entry commits to the next key: {shown}");
    assert_eq!(shown["signer"], Value::Null, "signed by the agent's own key: {shown}");

    // The next key leaves the home; a thief copies the home after that.
    let apart = tempfile::tempdir().unwrap();
    let exported = apart.path().join("next.key");
    let moved = json(h, &["key", "next", "--export", exported.to_str().unwrap()]);
    assert_eq!(moved["in_home"], Value::Null, "{moved}");
    assert!(!next_file.exists() && exported.exists());
    let thief = tempfile::tempdir().unwrap();
    copy_dir(h, thief.path());
    refused_with(h, &["key", "rotate"], "no next key");

    // A key that is not the committed one is refused, naming the rule.
    let wrong = apart.path().join("wrong.key");
    std::fs::copy(h.join("agent.key"), &wrong).unwrap();
    refused_with(h, &["key", "rotate", "--next-key", wrong.to_str().unwrap()], "rotation_key");

    let second = json(h, &["propose", "Or Monday"]);
    let rotated = json(h, &["key", "rotate", "--next-key", exported.to_str().unwrap()]);
    assert_eq!(rotated["boundary"], second["id"], "{rotated}");
    assert_eq!(rotated["event"], "rotate");
    let new_key = rotated["key"].as_str().unwrap().to_string();
    assert_ne!(new_key, agent.id);
    assert_eq!(std::fs::metadata(h.join("agent.key")).unwrap().len(), 64, "the key file names the agent and the new key");
    assert_eq!(json(h, &["id"])["agent"], agent.id.as_str(), "the agent keeps its id");

    // The agent carries on under the new key, in the same chain.
    let third = json(h, &["propose", "Tuesday, final"]);
    let shown = json(h, &["show", third["id"].as_str().unwrap()]);
    assert_eq!((shown["author"].as_str(), shown["signer"].as_str()), (Some(agent.id.as_str()), Some(new_key.as_str())), "{shown}");
    let shown = json(h, &["show", rotated["entry"].as_str().unwrap()]);
    assert_eq!(shown["key_event"], "rotate", "{shown}");
    let history = json(h, &["key", "history"]);
    let events: Vec<&str> = history["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["commit", "rotate"], "{history}");
    assert_eq!(history["current"], serde_json::json!([new_key]), "{history}");
    json(h, &["verify"]);

    // The thief's copy signs with the old key. What it signed after the
    // boundary on a branch of its own is a fork the owner's store keeps as
    // evidence; an entry it signs after the rotation is refused by every
    // store, with the rule named.
    let t = thief.path();
    let stolen = json(t, &["propose", "Thief: ship today"]);
    assert_eq!(stolen["seq"], 2, "the copy was taken after seq 1: the thief's entry sits beside the owner's seq 2, below the rotation");
    let pack = t.join("stolen.jsonl");
    ok(t, &["export", "--output", pack.to_str().unwrap()]);
    ok(h, &["import", pack.to_str().unwrap()]);
    assert_eq!(json(h, &["forks"]).as_array().map(Vec::len), Some(1), "the thief's seq 2 forks the chain: the store keeps the evidence");
    // The rotation resolves that fork: the thief's entry counts in no view,
    // the chain is not frozen, and the owner's entries all count.
    let out = agora(h, &["--json", "status", stolen["id"].as_str().unwrap()]);
    assert!(!out.status.success(), "the thief's entry is in no view: {}", String::from_utf8_lossy(&out.stdout));
    for mine in [&first, &second, &third] {
        json(h, &["status", mine["id"].as_str().unwrap()]);
    }
    let consensus = json(h, &["consensus", "--quorum", "1"]);
    let chain = consensus["chains"].as_array().unwrap().iter().find(|c| c["author"] == agent.id.as_str()).cloned().unwrap();
    assert_eq!(chain["frozen_at"], Value::Null, "a fork the rotation resolves freezes nothing: {chain}");
    // The thief's copy, given the owner's entries after its own, derives
    // the same views: the order entries arrive in decides nothing.
    let owners = apart.path().join("owner.jsonl");
    ok(h, &["export", "--output", owners.to_str().unwrap()]);
    ok(t, &["import", owners.to_str().unwrap()]);
    assert_eq!(json(t, &["view-hash"])["view_hash"], json(h, &["view-hash"])["view_hash"]);
    let out = agora(t, &["--json", "status", stolen["id"].as_str().unwrap()]);
    assert!(!out.status.success(), "the thief's entry is in no view there either");
    let rotation = std::fs::read_to_string(&owners)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| pack::parse_entry_line(0, l).unwrap().0)
        .find(|e| e.id().to_string() == rotated["entry"].as_str().unwrap())
        .expect("the rotation is in the owner's pack");
    let old_key = AgentKey::from_key_file_bytes(&std::fs::read(t.join("agent.key")).unwrap()).unwrap();
    let mut header = next_header(old_key.agent_id(), Some(&rotation), 0, b"thief after the rotation").unwrap();
    header.keys = header.keys.map(|k| KeyFields { signer: None, ..k });
    let forged = SignedEntry::sign(header, &old_key);
    let forged_pack = apart.path().join("forged.jsonl");
    std::fs::write(&forged_pack, format!("{}\n{}\n", pack::header_line(), pack::entry_line(&forged, Some(b"thief after the rotation")))).unwrap();
    let out = agora(h, &["import", forged_pack.to_str().unwrap()]);
    assert!(!out.status.success() && err_of(&out).contains("signer"), "an entry by the old key after the rotation: {}", err_of(&out));
}

#[test]
fn a_revocation_follows_the_last_entry_its_owner_vouches_for() {
    let agent = Agent::new();
    let h = &agent.home;
    let vouched = json(h, &["propose", "Mine"]);
    let _later = json(h, &["propose", "Written with a key that leaked"]);
    let revoked = json(h, &["key", "revoke", vouched["id"].as_str().unwrap()]);
    assert_eq!(revoked["boundary"], vouched["id"], "{revoked}");
    assert_eq!(revoked["seq"], 2, "the revocation follows the boundary: {revoked}");
    let forks = json(h, &["forks"]);
    assert_eq!(forks.as_array().map(Vec::len), Some(1), "the revocation and the later entry share seq 2: {forks}");
    let history = json(h, &["key", "history"]);
    let events: Vec<&str> = history["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["commit", "rotate"], "{history}");
    // An entry of another agent is no boundary of this one's.
    let other = Agent::new();
    let theirs = json(&other.home, &["propose", "Someone else's"]);
    let pack = other.home.join("theirs.jsonl");
    ok(&other.home, &["export", "--output", pack.to_str().unwrap()]);
    ok(h, &["import", pack.to_str().unwrap()]);
    refused_with(h, &["key", "revoke", theirs["id"].as_str().unwrap()], "not_own_entry");
}
