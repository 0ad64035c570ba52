//! Black-box tests of the reasoning verbs: recording typed events with the
//! `agora` binary and reading the derived graph back, including every bad input
//! issue 3 lists (refused locally; invalid when it arrives from a peer).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn agora(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agora")).arg("--home").arg(home).args(args).env_remove("AGORA_HOME").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn json(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, out, err) = agora(home, &all);
    assert_eq!(code, 0, "agora {args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// Record an event; return its id.
fn rec(home: &Path, args: &[&str]) -> String {
    json(home, args)["id"].as_str().unwrap().to_string()
}

fn status(home: &Path, id: &str) -> String {
    json(home, &["status", id])["status"].as_str().unwrap().to_string()
}

fn refused(home: &Path, args: &[&str], expect: &str) {
    let before = agora(home, &["export"]).1;
    let (code, _, err) = agora(home, args);
    assert_eq!(code, 1, "agora {args:?} should be refused");
    assert!(err.contains(expect), "agora {args:?}: expected {expect:?} in: {err}");
    assert_eq!(agora(home, &["export"]).1, before, "a refused event must not be stored");
}

fn init(dir: &Path, name: &str) -> PathBuf {
    let home = dir.join(name);
    assert_eq!(agora(&home, &["init"]).0, 0);
    home
}

#[test]
fn pricing_debate_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let h = init(dir.path(), "a");
    let e1 = rec(&h, &["propose", "Usage-based pricing aligns incentives and reduces low-end friction"]);
    let e2 = rec(&h, &["contradict", &e1[..10], "Enterprise procurement requires predictable costs"]);
    assert_eq!(status(&h, &e1), "contested");
    let d = json(&h, &["disagreements"]);
    assert_eq!(d[0]["id"], e1.as_str());
    assert_eq!(d[0]["contested_by"][0]["id"], e2.as_str());
    let e3 = rec(&h, &["refine", &e1, "Two-track model: seat-based for enterprise, usage-based for self-serve", "--resolves", &e2]);
    let e4 = rec(&h, &["synthesize", &e1, &e3, "Pricing should track how value is realized"]);
    let s1 = json(&h, &["status", &e1]);
    assert_eq!(s1["status"], "superseded");
    assert_eq!(s1["why"][0]["id"], e3.as_str());
    assert_eq!(s1["latest"], e3.as_str());
    assert_eq!(status(&h, &e2), "resolved");
    assert_eq!(status(&h, &e3), "resolved");
    assert_eq!(status(&h, &e4), "active");
    assert_eq!(json(&h, &["latest", &e1])["latest"], e3.as_str());
    let decisions = json(&h, &["decisions"]);
    assert_eq!(decisions.as_array().unwrap().len(), 2);
    assert_eq!(decisions[1]["id"], e3.as_str());
    assert_eq!(decisions[1]["because"][0]["id"], e2.as_str());
    assert!(json(&h, &["disagreements"]).as_array().unwrap().is_empty());
    // trace: every event that touched e1, in order, verified.
    let trace = json(&h, &["trace", &e1]);
    let ids: Vec<&str> = trace["events"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![e1.as_str(), e2.as_str(), e3.as_str(), e4.as_str()]);
    assert!(trace["events"].as_array().unwrap().iter().all(|e| e["verified"] == true));
    // search: hides the superseded proposition unless asked, shows statuses.
    let hits = json(&h, &["search", "usage-based"]);
    assert!(hits["hits"].as_array().unwrap().iter().all(|h| h["status"] != "superseded"));
    let all = json(&h, &["search", "usage-based", "--all"]);
    assert!(all["hits"].as_array().unwrap().iter().any(|h| h["id"] == e1.as_str() && h["status"] == "superseded"));
    // Each answer names the frontier it was computed over: this one chain at its last seq.
    let me = json(&h, &["id"])["agent"].as_str().unwrap().to_string();
    for answer in [&hits, &trace, &json(&h, &["status", &e1])] {
        let over = &answer["computed_over"];
        assert_eq!((over["authors"].as_u64(), over["chains"][&me].as_u64()), (Some(1), Some(4)), "{answer}");
        assert_eq!(over["frontier_hash"].as_str().map(str::len), Some(64), "{answer}");
    }
    // exports
    let (_, dot, _) = agora(&h, &["graph", "--format", "dot"]);
    assert!(dot.starts_with("digraph agora") && dot.contains("superseded"));
    let (_, mermaid, _) = agora(&h, &["graph", "--format", "mermaid"]);
    assert!(mermaid.starts_with("flowchart BT") && mermaid.contains(":::resolved"));
    // Text status prints the status and the why.
    let (_, text, _) = agora(&h, &["status", &e1]);
    assert!(text.contains("superseded") && text.contains("why:"));
}

#[test]
fn questions_frames_tasks_claims_and_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let h = init(dir.path(), "a");
    let q = rec(&h, &["ask", "Should we support EU VAT at launch?"]);
    assert_eq!(json(&h, &["questions"])[0]["id"], q.as_str());
    rec(&h, &["resolve", &q, "Yes, via the payment provider"]);
    assert!(json(&h, &["questions"]).as_array().unwrap().is_empty());
    assert_eq!(status(&h, &q), "resolved");

    let root = rec(&h, &["frame", "open", "find auth problem", "--invalidate-if", "refresh logic exists elsewhere"]);
    let jwt = rec(&h, &["frame", "open", "focus on JWT", "--parent", &root]);
    rec(&h, &["frame", "evidence", &jwt, "401 patterns found"]);
    let db = rec(&h, &["frame", "open", "wait, could be DB", "--parent", &root, "--branched-from", &jwt]);
    assert_eq!(json(&h, &["status", &jwt])["frame_state"], "suspended");
    assert_eq!(json(&h, &["status", &db])["frame_state"], "active");
    rec(&h, &["frame", "invalidate", &root, "refresh logic found in the gateway"]);
    let tree = json(&h, &["frame", "tree", &root]);
    let states: Vec<&str> = tree.as_array().unwrap().iter().map(|n| n["frame_state"].as_str().unwrap()).collect();
    assert_eq!(states, vec!["invalidated", "invalidated", "invalidated"]);
    assert_eq!(tree[2]["id"], root.as_str(), "post-order: root last");
    rec(&h, &["frame", "resume", &jwt]);
    assert_eq!(json(&h, &["status", &jwt])["frame_state"], "active");

    let task = rec(&h, &["task", "new", "Migrate billing", "--owner", "user:8831"]);
    rec(&h, &["task", "update", &task, "done", "cut over"]);
    assert_eq!(json(&h, &["status", &task])["task_state"], "done");
    refused(&h, &["task", "update", &task, "in_progress"], "done task");

    let ep = rec(&h, &["claim", "Sure, because I love 7 a.m. meetings", "--kind", "episodic", "--owner", "user:8831", "--confirmed"]);
    let pref = rec(&h, &["claim", "Default meeting time: morning", "--kind", "preference", "--source", &ep, "--owner", "user:8831"]);
    let s = json(&h, &["status", &pref]);
    assert_eq!((s["status"].as_str(), s["unconfirmed"].as_bool(), s["orphan"].as_bool()), (Some("active"), Some(true), Some(false)));
    let orphan = rec(&h, &["claim", "Prefers aisle seats", "--kind", "preference"]);
    assert_eq!(json(&h, &["orphans"])[0]["id"], orphan.as_str());
    let ep2 = rec(&h, &["claim", "I hate early meetings", "--kind", "episodic", "--confirmed"]);
    rec(&h, &["relate", &ep2, &pref, "retracts", "sarcasm, not a preference"]);
    assert_eq!(status(&h, &pref), "retracted");

    let t1 = rec(&h, &["trajectory", "research ACME", "revenue found", "--iterations", "3", "--converged"]);
    let item = rec(&h, &["item", "Check filings first", "When researching a company", "Read the 10-K before the news", "--from", &t1]);
    rec(&h, &["judge", &t1, "success", "found revenue", "--confidence", "high"]);
    let t2 = rec(&h, &["trajectory", "research Globex", "missed merger"]);
    rec(&h, &["use", &t2, &item, "--rank", "1", "--score", "0.82"]);
    rec(&h, &["judge", &t2, "failure", "missed the merger"]);
    let again = rec(&h, &["item", "Check filings first", "again", "Read the 10-K before the news"]);
    assert_eq!(status(&h, &again), "duplicate");
    let outcomes = json(&h, &["outcomes"]);
    let first = outcomes.as_array().unwrap().iter().find(|o| o["id"] == item.as_str()).unwrap();
    assert_eq!((first["successes"].as_u64(), first["failures"].as_u64(), first["uses"].as_u64()), (Some(0), Some(1), Some(1)));
}

#[test]
fn history_as_of_a_time_and_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let h = init(dir.path(), "a");
    let dog = rec(&h, &["claim", "Alex has a dog named Rex", "--owner", "contact:alex"]);
    let died = rec(&h, &["claim", "Rex passed away last week", "--owner", "contact:alex"]);
    let sc = rec(&h, &["relate", &died, &dog, "state_change", "Rex died"]);
    assert_eq!(status(&h, &dog), "superseded");
    assert_eq!(json(&h, &["latest", &dog])["latest"], died.as_str());
    // As of the entry before the state change, the dog fact was current.
    assert_eq!(json(&h, &["history", "--as-of", &died, &dog])["status"], "active");
    assert_eq!(json(&h, &["history", "--as-of", &sc, &dog])["status"], "superseded");
    // As of a date before anything was recorded, nothing is known.
    assert_eq!(json(&h, &["history", "--as-of", "2001-01-01", &dog])["status"], "not_yet_recorded");
    let now = json(&h, &["status", &sc])["timestamp_ms"].as_u64().unwrap();
    assert_eq!(json(&h, &["history", "--as-of", &now.to_string(), &dog])["status"], "superseded");
    assert_eq!(json(&h, &["history", "--as-of", &now.to_string()]).as_array().unwrap().len(), 3);
}

#[test]
fn bad_events_are_refused_locally() {
    let dir = tempfile::tempdir().unwrap();
    let h = init(dir.path(), "a");
    let a = rec(&h, &["propose", "a"]);
    let b = rec(&h, &["refine", &a, "b"]);
    let frame = rec(&h, &["frame", "open", "q"]);
    refused(&h, &["relate", &a, &a, "expands"], "refers to itself");
    refused(&h, &["relate", &a, &b, "update"], "cycle");
    refused(&h, &["synthesize", &a, "one source"], "at least two sources");
    refused(&h, &["relate", &frame, &a, "expands"], "cannot refer to");
    refused(&h, &["resolve", &a, "not a question"], "cannot refer to");
    // An unknown relation is a usage error: the command line lists the relations.
    let (code, _, err) = agora(&h, &["relate", &a, &b, "causes"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("causes") && err.contains("possible values: update, state_change"), "{err}");
    // An unknown kind from a newer format version, appended raw.
    let payload = dir.path().join("newer.bin");
    let mut bytes = b"agev\x01".to_vec();
    bytes.push(99);
    std::fs::write(&payload, &bytes).unwrap();
    refused(&h, &["append", payload.to_str().unwrap()], "unknown event kind 99");
    std::fs::write(&payload, b"agev\x02\x00\x01x").unwrap();
    refused(&h, &["append", payload.to_str().unwrap()], "unknown event format version 2");
}

#[test]
fn pending_references_and_invalid_events_from_peers() {
    let dir = tempfile::tempdir().unwrap();
    let alice = init(dir.path(), "alice");
    let bob = init(dir.path(), "bob");
    let p = rec(&alice, &["propose", "we should ship on Friday"]);
    // Bob contradicts an event he has not received yet: held as pending.
    let r = json(&bob, &["contradict", &p, "QA is not done"]);
    assert_eq!(r["pending"][0], p.as_str());
    let c = r["id"].as_str().unwrap().to_string();
    assert_eq!(status(&bob, &c), "pending");
    // When Alice's chain arrives, the contradiction takes effect.
    let pack = agora(&alice, &["export"]).1;
    let pack_file = dir.path().join("alice.jsonl");
    std::fs::write(&pack_file, &pack).unwrap();
    assert_eq!(agora(&bob, &["import", pack_file.to_str().unwrap()]).0, 0);
    // Stored, but Alice is no member of Bob's workspace (his own, with no
    // workspace configured): her chain counts in no view until he admits her.
    assert_eq!(status(&bob, &c), "pending", "a non-member's entries count nowhere");
    assert_eq!(agora(&bob, &["status", &p]).0, 1);
    json(&bob, &["admit", json(&alice, &["id"])["agent"].as_str().unwrap(), "a peer"]);
    assert_eq!(status(&bob, &p), "contested");
    assert_eq!(status(&bob, &c), "active");

    // Alice's store imports a hand-made entry with an event of an unknown
    // kind signed by a third agent, whom she admits: kept, reported invalid.
    let mallory = init(dir.path(), "mallory");
    // Mallory's own CLI refuses it, so craft the entry with the library.
    let key = agora_core::AgentKey::from_key_file_bytes(&std::fs::read(mallory.join("agent.key")).unwrap()).unwrap();
    let payload = b"agev\x01\x63".to_vec();
    let header = agora_core::entry::next_header(key.agent_id(), None, 1_000, &payload).unwrap();
    let entry = agora_core::SignedEntry::sign(header, &key);
    let pack = format!("{}\n{}\n", agora_core::pack::header_line(), agora_core::pack::entry_line(&entry, Some(&payload)));
    std::fs::write(&pack_file, pack).unwrap();
    assert_eq!(agora(&alice, &["import", pack_file.to_str().unwrap()]).0, 0, "the log keeps it");
    json(&alice, &["admit", &key.agent_id().to_string(), "a peer"]);
    let s = json(&alice, &["status", &entry.id().to_string()]);
    assert_eq!(s["status"], "invalid");
    assert!(s["invalid"].as_str().unwrap().contains("unknown event kind 99"));
}

/// `agora act` records an action (what a framework traced) and `agora
/// actions` reads it back, filtered; a span recorded twice by its agent is
/// a duplicate; a bad hash, operation, span or parent is refused, naming it.
#[test]
fn actions_recorded_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let home = init(dir.path(), "a");
    let (trace, run, tool) = ("0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7", "b7ad6b7169203331");
    let span = |s: &str| format!("{trace}/{s}");
    let position = rec(&home, &["propose", "Use the weather service"]);
    let root = rec(&home, &["act", "invoke_agent", "--name", "planner", "--conversation", "c1", "--span", &span(run)]);
    let hash = "ab".repeat(32);
    let call = rec(
        &home,
        &[
            "act",
            "execute_tool",
            "--name",
            "get_weather",
            "--conversation",
            "c1",
            "--span",
            &span(tool),
            "--parent",
            &span(run),
            "--cause",
            &position,
            "--input-hash",
            &hash,
            "--text",
            "{\"city\":\"Paris\"} -> rainy",
            "--error",
            "slow",
        ],
    );
    rec(&home, &["act", "chat", "--name", "gpt", "--conversation", "c2"]);
    let listed = json(&home, &["actions", "--conversation", "c1"]);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["id"], root.as_str());
    let a = &listed[1];
    assert_eq!((a["id"].as_str(), a["operation"].as_str(), a["name"].as_str()), (Some(call.as_str()), Some("execute_tool"), Some("get_weather")));
    assert_eq!((a["span"].as_str(), a["parent"].as_str()), (Some(span(tool).as_str()), Some(span(run).as_str())));
    assert_eq!((a["cause"].as_str(), a["input_hash"].as_str(), a["output_hash"].as_str()), (Some(position.as_str()), Some(hash.as_str()), None));
    assert_eq!((a["text"].as_str(), a["error"].as_str(), a["status"].as_str()), (Some("{\"city\":\"Paris\"} -> rainy"), Some("slow"), Some("active")));
    assert_eq!(json(&home, &["actions", "--operation", "chat"]).as_array().unwrap().len(), 1);
    assert_eq!(json(&home, &["actions", "--limit", "1"]).as_array().unwrap()[0]["operation"], "chat");
    // The cause is an edge of the graph.
    assert_eq!(json(&home, &["status", &call])["kind"], "action");
    // The same span again: recorded, and a duplicate of the first.
    let again = rec(&home, &["act", "execute_tool", "--span", &span(tool)]);
    assert_eq!(status(&home, &again), "duplicate");
    refused(&home, &["act", "execute_tool", "--input-hash", "xyz"], "not a SHA-256");
    refused(&home, &["act", "Execute Tool"], "operation");
    refused(&home, &["act", "chat", "--span", "not-a-span"], "span");
    refused(&home, &["act", "chat", "--span", &span(tool), "--parent", &format!("{}/{run}", "1".repeat(32))], "parent");
}
