//! The node's JSON API (`/v1/ops/<name>`) against its own OpenAPI document
//! (`/v1/openapi.json`), with a real `agora node run` on 127.0.0.1: every
//! documented route answers, only with documented statuses, errors in the
//! one error shape, results with the fields their schema requires; a
//! debate played through the API reads back exact statuses.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use support::*;

struct Api {
    base: String,
    token: String,
    agent: ureq::Agent,
}

impl Api {
    fn of(agent: &Agent) -> Self {
        let node: Value = serde_json::from_str(&std::fs::read_to_string(agent.home.join("node.json")).unwrap()).unwrap();
        let http = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().new_agent();
        Self { base: format!("http://{}", node["control"].as_str().unwrap()), token: node["token"].as_str().unwrap().to_string(), agent: http }
    }

    /// `POST /v1/ops/<name>` with a raw body and an optional token: status and JSON answer.
    fn post_raw(&self, name: &str, body: &str, token: Option<&str>) -> (u16, Value) {
        let mut req = self.agent.post(format!("{}/v1/ops/{name}", self.base)).header("content-type", "application/json");
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let mut resp = req.send(body).expect("the node answers");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {text:?}")))
    }

    fn post(&self, name: &str, body: Value) -> (u16, Value) {
        self.post_raw(name, &body.to_string(), Some(&self.token))
    }

    fn ok(&self, name: &str, body: Value) -> Value {
        let (status, v) = self.post(name, body.clone());
        assert_eq!(status, 200, "{name} {body}: {v}");
        v
    }

    fn document(&self) -> Value {
        let mut resp = self.agent.get(format!("{}/v1/openapi.json", self.base)).call().expect("the document");
        assert_eq!(resp.status().as_u16(), 200);
        serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
    }
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

/// The schema a `$ref` points at, within the document.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling reference {r}")),
        None => schema,
    }
}

/// Every `$ref` in the document resolves.
fn check_refs(doc: &Value, v: &Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                assert!(r.starts_with("#/components/schemas/") && doc.pointer(r.trim_start_matches('#')).is_some(), "dangling {r}");
            }
            m.values().for_each(|x| check_refs(doc, x));
        }
        Value::Array(a) => a.iter().for_each(|x| check_refs(doc, x)),
        _ => {}
    }
}

/// A documented answer: its status is listed for the route, an error has
/// the error shape, and a result has every field its schema requires.
fn check_answer(doc: &Value, path: &str, status: u16, body: &Value) {
    let responses = &doc["paths"][path]["post"]["responses"];
    let documented = &responses[status.to_string()];
    assert!(documented.is_object(), "{path}: status {status} is not documented: {body}");
    if status == 200 {
        let schema = resolve(doc, &documented["content"]["application/json"]["schema"]);
        assert!(body.is_object(), "{path}: {body}");
        for field in schema["required"].as_array().into_iter().flatten() {
            assert!(body.get(field.as_str().unwrap()).is_some(), "{path}: required {field} missing from {body}");
        }
    } else {
        assert!(body["code"].is_string() && body["message"].is_string(), "{path}: the error shape: {body}");
    }
}

#[test]
fn every_route_answers_as_its_openapi_document_says() {
    let alice = Agent::new();
    let _node = Node::start(&alice, &alice.id, &[]);
    let api = Api::of(&alice);
    let doc = api.document();
    assert_eq!(doc["openapi"], "3.1.0");
    check_refs(&doc, &doc);
    let paths: BTreeSet<String> = doc["paths"].as_object().unwrap().keys().cloned().collect();
    for name in OPERATIONS {
        assert!(paths.contains(&format!("/v1/ops/{name}")), "{name} is not documented");
    }
    // Every documented route, called with an empty input and without the token.
    for path in &paths {
        let name = path.strip_prefix("/v1/ops/").expect("every path is an operation");
        let (status, body) = api.post(name, json!({}));
        check_answer(&doc, path, status, &body);
        assert!(status == 200 || status == 400, "{name} with no input: {status} {body}");
        let (status, body) = api.post_raw(name, "{}", None);
        assert_eq!(status, 401, "{name} without the token: {body}");
        check_answer(&doc, path, status, &body);
        let (status, body) = api.post_raw(name, "{}", Some("not-the-token"));
        assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "{name}");
    }
    // A refusal leaves its request's body unread and closes the connection:
    // it says so, or a client would send its next request down a closed one.
    let refused = api.agent.post(format!("{}/v1/ops/status", api.base)).header("content-type", "application/json").send("{}").expect("the node answers");
    assert_eq!(refused.status().as_u16(), 401);
    assert_eq!(refused.headers().get("connection").and_then(|v| v.to_str().ok()), Some("close"), "{:?}", refused.headers());
    let (status, body) = api.post("no_such_operation", json!({}));
    assert_eq!((status, body["code"].as_str()), (404, Some("unknown_operation")), "{body}");
    let (status, body) = api.post_raw("propose", "not json", Some(&api.token));
    assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")), "{body}");
    let (status, body) = api.post("propose", json!({ "text": 5 }));
    assert_eq!((status, body["code"].as_str(), body["rule"].as_str()), (400, Some("bad_input"), Some("input_schema")), "{body}");

    // A debate, through the API.
    let p = id(&api.ok("propose", json!({ "text": "Ship on Friday" })));
    let c = id(&api.ok("contradict", json!({ "target": p, "text": "QA is not done" })));
    assert_eq!(api.ok("status", json!({ "target": p }))["status"], "contested");
    let r = api.ok("refine", json!({ "target": p, "text": "Ship on Monday after QA", "resolves": [c] }));
    check_answer(&doc, "/v1/ops/refine", 200, &r);
    let r = id(&r);
    for (node, want) in [(&p, "superseded"), (&c, "resolved"), (&r, "resolved")] {
        let s = api.ok("status", json!({ "target": node }));
        check_answer(&doc, "/v1/ops/status", 200, &s);
        assert_eq!(s["status"], want, "{node}: {s}");
    }
    let o = api.ok("orient", json!({ "topic": "ship" }));
    check_answer(&doc, "/v1/ops/orient", 200, &o);
    assert_eq!(o["nodes"].as_array().unwrap().len(), 1, "only the current position: {o}");

    // Errors name the rule and the entry.
    let missing = "ab".repeat(32);
    let (status, body) = api.post("status", json!({ "target": missing }));
    check_answer(&doc, "/v1/ops/status", status, &body);
    assert_eq!(status, 404, "{body}");
    let (status, body) = api.post("refine", json!({ "target": "zz", "text": "x" }));
    check_answer(&doc, "/v1/ops/refine", status, &body);
    assert!(body["rule"].is_string(), "{body}");
    let (status, body) = api.post("resume", json!({ "target": r }));
    check_answer(&doc, "/v1/ops/resume", status, &body);
    assert_eq!((status, body["code"].as_str()), (422, Some("refused")), "resuming an active node breaks a rule: {body}");
    assert!(body["rule"].is_string() && body["entry"] == r.as_str(), "the rule and the entry are named: {body}");
}

/// The value of one sample line of a Prometheus text exposition.
fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name_and_labels).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
}

#[test]
fn metrics_after_a_sync_report_the_figures() {
    let (alice, bob) = (Agent::new(), Agent::new());
    admit(&alice, &[&bob]);
    let na = Node::start(&alice, &alice.id, &[]);
    let nb = Node::start(&bob, &alice.id, &[&na.addr]);
    let (mut last, mut seq) = (String::new(), 0);
    for i in 0..5 {
        let moved = json(&alice.home, &["propose", &format!("position {i}")]);
        last = moved["id"].as_str().unwrap().to_string();
        seq = moved["seq"].as_u64().unwrap();
    }
    wait_for("Bob's node to hold Alice's five entries", || nb.holds(&last).then_some(()));
    // A read builds the reasoning view once (a recompute by replay).
    json(&bob.home, &["status", &last]);
    let api = Api::of(&bob);
    // `GET <path>`, with the bearer token if given: the status and the body.
    let get = |path: &str, token: Option<&str>| {
        let mut req = api.agent.get(format!("{}{path}", api.base));
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let mut resp = req.call().unwrap();
        (resp.status().as_u16(), resp.body_mut().read_to_string().unwrap())
    };
    let scrape = |token: Option<&str>| get("/metrics", token);
    assert_eq!(scrape(None).0, 401, "metrics need the token");
    let text = wait_for("the figures of the sync", || {
        let (status, text) = scrape(Some(&api.token));
        assert_eq!(status, 200);
        (sample(&text, &format!("agora_chain_entries{{author=\"{}\"}}", alice.id)) == Some(seq as f64)).then_some(text)
    });
    assert_eq!(sample(&text, "agora_peers"), Some(1.0), "{text}");
    assert!(sample(&text, "agora_entries_verified_total").unwrap() >= 5.0, "{text}");
    assert_eq!(sample(&text, "agora_sync_lag_entries"), Some(0.0), "caught up: {text}");
    assert_eq!(sample(&text, "agora_bans_total"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "agora_rejected_inputs_total{rule=\"malformed_messages\"}"), Some(0.0), "{text}");
    assert!(sample(&text, "agora_view_recompute_seconds_count").unwrap() >= 1.0, "{text}");
    assert!(text.contains("# TYPE agora_gossip_latency_seconds histogram"), "{text}");
    // The allocator's own figures: its structures hold something, kept resident.
    let allocated = sample(&text, "agora_allocator_bytes{kind=\"allocated\"}").unwrap_or(0.0);
    assert!(allocated > 0.0 && sample(&text, "agora_allocator_bytes{kind=\"resident\"}").unwrap_or(0.0) >= allocated, "{text}");
    // libp2p's own metrics, fed by the swarm's events: the connection to Alice's node.
    assert_eq!(sample(&text, "libp2p_swarm_connections_established_total{role=\"Dialer\",protocols=\"/ip4/tcp/p2p\"}"), Some(1.0), "{text}");
    assert!(text.lines().any(|l| l.starts_with("libp2p_identify_remote_protocols{")), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1, "one exposition: {text}");
    assert!(text.trim_end().ends_with("# EOF"), "OpenMetrics text ends with # EOF");
    // Where the views' memory goes, part by part: the reasoning graph the
    // read built (Alice's five positions in it), the live merged view.
    let memory = |token: Option<&str>| get("/v1/memory", token);
    assert_eq!(memory(None).0, 401, "the memory report needs the token");
    let (status, body) = memory(Some(&api.token));
    assert_eq!(status, 200, "{body}");
    let report: serde_json::Value = serde_json::from_str(&body).unwrap();
    let graph = &report["reasoning_graph"];
    assert!(graph["nodes"].as_u64().unwrap() >= 5 && graph["bytes"]["nodes"].as_u64().unwrap() >= 5 * 32, "{report}");
    assert_eq!(graph["bytes"]["texts"], 0, "the node's graph reads its texts from the store: {report}");
    assert!(report["merged_view"]["live_view"]["entry_index"].as_u64().unwrap() >= 5 * 12, "a row for each entry: {report}");
    assert!(report["merged_view"]["live_view"]["ids"].as_u64().unwrap() >= 5 * 32, "each id once, in the arena the views share: {report}");
    assert_eq!(graph["bytes"]["ids"], 0, "the node's graph holds its ids in the shared arena: {report}");
    assert!(report["allocator"]["allocated"].as_u64().unwrap() > 0, "{report}");
}

/// The signed log's and the roster's commands through the API: append,
/// log, show, verify, export on one node and import on another, authors,
/// redact (the chain still verifies), forks and check_proof, search and
/// orphans, admit and roster. Each answer is checked against the document.
#[test]
fn the_log_and_the_roster_are_reachable_through_the_api() {
    let (alice, bob) = (Agent::new(), Agent::new());
    let _na = Node::start(&alice, &alice.id, &[]);
    let api = Api::of(&alice);
    let doc = api.document();
    let call = |name: &str, body: Value| {
        let v = api.ok(name, body);
        check_answer(&doc, &format!("/v1/ops/{name}"), 200, &v);
        v
    };

    let raw = call("append", json!({ "text": "a raw note, not an event" }));
    assert_eq!((raw["author"].as_str(), raw["seq"].as_u64()), (Some(alice.id.as_str()), Some(1)), "{raw}");
    let binary = call("append", json!({ "base64": "AAECAwQ=" }));
    assert_eq!(binary["payload_len"], 5, "{binary}");
    let (status, body) = api.post("append", json!({ "text": "x", "base64": "AA==" }));
    assert_eq!((status, body["rule"].as_str()), (400, Some("input_schema")), "exactly one of text or base64: {body}");
    let p = id(&call("propose", json!({ "text": "Cache the merged view per generation" })));

    let log = call("log", json!({}));
    let ids: Vec<&str> = log["result"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id(&raw), id(&binary), p.clone()], "{log}");
    let shown = call("show", json!({ "entry": &id(&raw)[..12] }));
    assert_eq!(shown["id"], id(&raw).as_str(), "{shown}");
    assert!(shown.to_string().contains("a raw note, not an event"), "{shown}");
    let verified = call("verify", json!({}));
    assert_eq!((verified["ok"].as_bool(), verified["entries"].as_u64()), (Some(true), Some(3)), "{verified}");
    let found = call("search", json!({ "query": "merged view" }));
    assert_eq!(found["hits"][0]["id"], p.as_str(), "{found}");
    assert!(call("orphans", json!({}))["result"].as_array().unwrap().is_empty());

    // A pack from Alice's node, imported on Bob's (twice: nothing new the second time).
    let exported = call("export", json!({ "author": alice.id }));
    assert_eq!(exported["entries"], 3, "{exported}");
    // Bob's node is in Alice's workspace (her chain is the founder's) but not connected to hers.
    let _nb = Node::start(&bob, &alice.id, &[]);
    let bob_api = Api::of(&bob);
    let imported = bob_api.ok("import", json!({ "pack": exported["pack"] }));
    assert_eq!(imported["imported"], 3, "{imported}");
    assert_eq!(bob_api.ok("import", json!({ "pack": exported["pack"] }))["already_present"], 3);
    let authors = bob_api.ok("authors", json!({}));
    assert!(authors["result"].as_array().unwrap().iter().any(|a| a["author"] == alice.id.as_str() && a["max_seq"] == 3), "{authors}");
    let (status, body) = bob_api.post("import", json!({ "pack": "not a pack" }));
    assert!(status == 400 || status == 422, "a bad pack is refused: {status} {body}");
    assert!(body["message"].as_str().unwrap().contains("pack") || body["message"].as_str().unwrap().contains("header"), "{body}");

    // Redaction: the payload is gone here, the chain still verifies.
    let r = call("redact", json!({ "entry": id(&raw) }));
    assert_eq!(r["redacted"], true, "{r}");
    assert!(!call("show", json!({ "entry": id(&raw) })).to_string().contains("a raw note"), "the text is gone");
    assert_eq!(call("verify", json!({}))["ok"], true);

    // No forks here; a proof that is not one is refused with a message.
    assert!(call("forks", json!({}))["result"].as_array().unwrap().is_empty());
    let (status, body) = api.post("check_proof", json!({ "proof": "00ff" }));
    check_answer(&doc, "/v1/ops/check_proof", status, &body);
    assert!(status >= 400 && body["message"].as_str().unwrap().contains("proof"), "{status} {body}");

    // Membership: Alice founded this workspace; she admits Bob.
    let admitted = call("admit", json!({ "agent": bob.id, "note": "reviewer" }));
    assert!(admitted["id"].is_string(), "{admitted}");
    let roster = call("roster", json!({}));
    assert!(roster.to_string().contains(&bob.id), "{roster}");
}
