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

    /// `GET <path>` (or `POST` with `body`), with the token if given: the whole answer.
    fn send(&self, path: &str, body: Option<&[u8]>, token: Option<&str>) -> Answer {
        let url = format!("{}{path}", self.base);
        let auth = token.map(|t| format!("Bearer {t}"));
        let sent = match body {
            Some(body) => {
                let mut req = self.agent.post(url).header("content-type", "application/json");
                if let Some(a) = &auth {
                    req = req.header("authorization", a);
                }
                req.send(body)
            }
            None => {
                let mut req = self.agent.get(url);
                if let Some(a) = &auth {
                    req = req.header("authorization", a);
                }
                req.call()
            }
        };
        let mut resp = sent.expect("the node answers");
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let (content_type, allow) = (header("content-type").unwrap_or_default(), header("allow"));
        let status = resp.status().as_u16();
        let text = resp.body_mut().with_config().limit(64 << 20).read_to_string().unwrap_or_default();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer { status, content_type, allow, text, json }
    }

    fn document(&self) -> Value {
        let mut resp = self.agent.get(format!("{}/v1/openapi.json", self.base)).call().expect("the document");
        assert_eq!(resp.status().as_u16(), 200);
        serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
    }
}

/// An answer of the control channel, whole.
struct Answer {
    status: u16,
    content_type: String,
    allow: Option<String>,
    text: String,
    json: Value,
}

impl Answer {
    /// An error in the one shape, as JSON: `code`, `rule` and `message`
    /// strings, `entry` a string or null, nothing else; `code` and `rule`
    /// as given (`None`: any).
    fn error(&self, status: u16, code: Option<&str>, rule: Option<&str>) -> &Self {
        let what = format!("{} {:?}: {}", self.status, self.content_type, self.text);
        assert_eq!(self.status, status, "{what}");
        assert!(self.content_type.starts_with("application/json"), "an error is JSON: {what}");
        let fields: BTreeSet<&str> = self.json.as_object().unwrap_or_else(|| panic!("not a JSON object: {what}")).keys().map(String::as_str).collect();
        assert_eq!(fields, BTreeSet::from(["code", "rule", "message", "entry"]), "{what}");
        assert!(self.json["code"].is_string() && self.json["rule"].is_string() && self.json["message"].is_string(), "{what}");
        assert!(self.json["entry"].is_string() || self.json["entry"].is_null(), "{what}");
        if let Some(code) = code {
            assert_eq!(self.json["code"], code, "{what}");
        }
        if let Some(rule) = rule {
            assert_eq!(self.json["rule"], rule, "{what}");
        }
        self
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
                assert!(
                    (r.starts_with("#/components/schemas/") || r.starts_with("#/components/responses/")) && doc.pointer(r.trim_start_matches('#')).is_some(),
                    "dangling {r}"
                );
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
        assert!(body["code"].is_string() && body["message"].is_string() && body["rule"].is_string(), "{path}: the error shape: {body}");
        assert!(!body["message"].as_str().unwrap_or_default().contains("--"), "{path}: the API's messages name no command-line flag: {body}");
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
        // A rotation needs a chain to rotate: on this empty one it is
        // refused by its rule, not by its input.
        let rotation_refused = name == "key_rotate" && status == 422 && body["rule"] == "empty_chain";
        assert!(status == 200 || status == 400 || rotation_refused, "{name} with no input: {status} {body}");
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

/// Every answer that is not a success is one JSON error object, on every
/// route and on none: an unknown path (404), a wrong method (405, with
/// `Allow`), a body over the limit (413), no token (401), bad input (400,
/// naming the input rule), a broken rule of the log (422, naming it); JSON
/// answers say so in their content type; the document lists the errors of
/// every operation and the text limit in its schemas; and the command
/// line's `--json` errors have the same fields.
#[test]
fn every_error_is_one_json_shape_with_its_rule() {
    let alice = Agent::new();
    let _node = Node::start(&alice, &alice.id, &[]);
    let api = Api::of(&alice);
    let token = Some(api.token.as_str());

    // Unknown paths, with the token and without.
    api.send("/no/such/route", None, token).error(404, Some("unknown_route"), Some("unknown_route"));
    api.send("/v1/no-such-thing", Some(b"{}"), None).error(404, Some("unknown_route"), None);
    // A wrong method: 405, `Allow` naming the one the route takes.
    let wrong = api.send("/v1/ops/propose", None, token);
    wrong.error(405, Some("method_not_allowed"), Some("method"));
    assert!(wrong.allow.as_deref().is_some_and(|a| a.contains("POST")), "Allow: {:?}", wrong.allow);
    let wrong = api.send("/v1/status", Some(b""), token);
    wrong.error(405, Some("method_not_allowed"), None);
    assert!(wrong.allow.as_deref().is_some_and(|a| a.contains("GET")), "Allow: {:?}", wrong.allow);
    // No token, or a wrong one: 401, on the API and the node's own routes.
    api.send("/v1/ops/propose", Some(b"{}"), None).error(401, Some("unauthorized"), Some("credentials"));
    api.send("/v1/status", None, Some("not-the-token")).error(401, Some("unauthorized"), Some("credentials"));
    api.send("/v1/memory", None, None).error(401, Some("unauthorized"), Some("credentials"));
    // A body over the limit (32 MiB): 413.
    let mut big = b"{\"text\": \"".to_vec();
    big.resize((32 << 20) + 1, b'x');
    api.send("/v1/ops/propose", Some(&big), token).error(413, Some("too_large"), Some("body_limit"));
    // Not JSON; not an object.
    api.send("/v1/ops/propose", Some(b"[1]"), token).error(400, Some("bad_request"), Some("json_body"));

    // Bad input is 400 with the input rule: not hex, not 64 digits, not a time.
    let p = id(&api.ok("propose", json!({ "text": "Ship on Friday" })));
    let e = api.send("/v1/ops/status", Some(br#"{"target": "zz-not-hex"}"#), token);
    e.error(400, Some("bad_input"), Some("not_an_entry_id"));
    api.send("/v1/ops/contradict", Some(format!(r#"{{"target": "{}", "text": "x"}}"#, "z".repeat(64)).as_bytes()), token).error(
        400,
        Some("bad_input"),
        Some("not_an_entry_id"),
    );
    api.send("/v1/ops/accept", Some(format!(r#"{{"author": "{}", "up_to": "1"}}"#, "ab".repeat(20)).as_bytes()), token).error(
        400,
        Some("bad_input"),
        Some("not_an_agent_id"),
    );
    let e = api.send("/v1/ops/history", Some(br#"{"as_of": "yesterday"}"#), token);
    e.error(400, Some("bad_input"), None);
    let said = e.json["message"].as_str().unwrap();
    assert!((said.contains("as of") || said.contains("as_of")) && !said.contains("--"), "names the field, not a flag: {}", e.text);
    let e = api.send("/v1/ops/propose", Some(format!(r#"{{"text": "{}"}}"#, "y".repeat(16 * 1024 + 1)).as_bytes()), token);
    e.error(400, Some("bad_input"), Some("input_schema"));
    // Within maxLength's characters but over the limit's bytes: the event's own rule.
    let e = api.send("/v1/ops/propose", Some(format!(r#"{{"text": "{}"}}"#, "é".repeat(9000)).as_bytes()), token);
    e.error(400, Some("bad_input"), Some("limit"));
    api.send("/v1/ops/propose", Some(br#"{"text": 5}"#), token).error(400, Some("bad_input"), Some("input_schema"));
    // A referenced entry not held here: 404 naming it.
    let missing = "cd".repeat(32);
    let e = api.send("/v1/ops/status", Some(format!(r#"{{"target": "{missing}"}}"#).as_bytes()), token);
    e.error(404, Some("not_found"), Some("unknown_entry"));
    // A rule of the log: 422 naming it, also where the command checks it itself.
    let e = api.send("/v1/ops/synthesize", Some(format!(r#"{{"sources": ["{missing}", "{missing}"], "text": "twice"}}"#).as_bytes()), token);
    e.error(422, Some("refused"), Some("self_reference"));
    assert_eq!(e.json["entry"], missing.as_str(), "{}", e.text);
    // Bounds the schema states, checked before the command runs.
    api.send("/v1/ops/search", Some(br#"{"query": "x", "limit": 0}"#), token).error(400, Some("bad_input"), Some("input_schema"));
    api.send("/v1/ops/synthesize", Some(format!(r#"{{"sources": ["{p}"], "text": "alone"}}"#).as_bytes()), token).error(
        400,
        Some("bad_input"),
        Some("input_schema"),
    );
    let e = api.send("/v1/ops/resume", Some(format!(r#"{{"target": "{p}"}}"#).as_bytes()), token);
    e.error(422, Some("refused"), Some("wrong_state"));
    assert_eq!(e.json["entry"], p.as_str(), "{}", e.text);
    let e = api.send("/v1/ops/perspective", Some(br#"{"as_of": "last week"}"#), token);
    e.error(400, Some("bad_input"), Some("not_a_time"));
    assert!(e.json["message"].as_str().unwrap().contains("as_of") && !e.text.contains("--"), "names the field, not a flag: {}", e.text);
    // Another agent than the founder changes no roster.
    let bob = Agent::new();
    let _bob_node = Node::start(&bob, &alice.id, &[]);
    let bob_api = Api::of(&bob);
    let e = bob_api.send("/v1/ops/admit", Some(format!(r#"{{"agent": "{}"}}"#, bob.id).as_bytes()), Some(&bob_api.token));
    e.error(422, Some("refused"), Some("founder_only"));
    let e = api.send("/v1/ops/accept", Some(format!(r#"{{"author": "{}", "up_to": "5"}}"#, bob.id).as_bytes()), token);
    e.error(422, Some("refused"), Some("beyond_head"));

    // JSON answers are labelled JSON.
    for path in ["/v1/status", "/v1/memory", "/v1/openapi.json"] {
        let a = api.send(path, None, token);
        assert_eq!(a.status, 200, "{path}: {}", a.text);
        assert!(a.content_type.starts_with("application/json"), "{path}: {:?}", a.content_type);
        assert!(a.json.is_object(), "{path}: {}", a.text);
    }
    let a = api.send("/v1/ops/propose", Some(br#"{"text": "Labelled"}"#), token);
    assert!(a.status == 200 && a.content_type.starts_with("application/json"), "{} {:?}", a.status, a.content_type);

    // The document: every operation lists every error, in the one shape;
    // texts of events have their limit.
    let doc = api.document();
    assert!(doc["components"]["schemas"]["Error"]["required"].as_array().is_some_and(|r| r.len() == 3), "{}", doc["components"]["schemas"]["Error"]);
    for (path, item) in doc["paths"].as_object().unwrap() {
        let responses = &item["post"]["responses"];
        for status in ["400", "401", "404", "405", "413", "422", "500", "503"] {
            let response = resolve_response(&doc, &responses[status]);
            let schema = &response["content"]["application/json"]["schema"]["$ref"];
            assert_eq!(schema, "#/components/schemas/Error", "{path} {status}: {response}");
        }
    }
    let propose = &doc["paths"]["/v1/ops/propose"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(propose["properties"]["text"]["maxLength"], 16 * 1024, "{propose}");
    let dispute = &doc["paths"]["/v1/ops/dispute"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(dispute["properties"]["reason"]["maxLength"], 16 * 1024, "{dispute}");

    // The command line's `--json` error: the same fields (and `error`, the message).
    let out = agora(&alice.home, &["--json", "status", "zz-not-hex"]);
    assert!(!out.status.success());
    let e: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!((e["code"].as_str(), e["rule"].as_str()), (Some("bad_input"), Some("not_an_entry_id")), "{e}");
    assert!(e["message"].is_string() && e["error"] == e["message"] && e.get("entry").is_some(), "{e}");
}

/// A response of the document, its `$ref` followed.
fn resolve_response<'a>(doc: &'a Value, response: &'a Value) -> &'a Value {
    match response.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling reference {r}")),
        None => response,
    }
}
