//! The OTLP receiver (`POST /v1/traces`, protocol-spec/otlp.md) between real
//! processes: the official OpenTelemetry Python SDK with its OTLP/HTTP
//! exporter sends a multi-agent trace to one node; every span that follows
//! the GenAI conventions is an action signed by the agent it names, with its
//! causal links, hashes and errors, on that node and on a peer; an unknown
//! agent is refused, never invented; a retried request records nothing
//! twice; a memory record's writes update one claim; bad requests are
//! refused whole with the error shape.

mod support;

use agora_core::SignedEntry;
use agora_graph::Event;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use support::*;

/// Every entry a home holds, with its decoded event (if it is one).
fn events_of(home: &std::path::Path) -> Vec<(SignedEntry, Option<Event>)> {
    let pack = ok(home, &["export"]);
    pack.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            let (entry, payload) = agora_core::pack::parse_entry_line(i + 1, line).unwrap();
            let event = payload.as_deref().filter(|p| Event::is_event_payload(p)).map(|p| Event::decode(p).unwrap());
            (entry, event)
        })
        .collect()
}

/// The actions among them, by span: (signer, entry id, the event's fields).
fn actions_of(home: &std::path::Path) -> BTreeMap<String, (String, String, Event)> {
    events_of(home)
        .into_iter()
        .filter_map(|(entry, event)| match event {
            Some(e @ Event::Action { .. }) => {
                let Event::Action { span, .. } = &e else { unreachable!() };
                Some((span.clone(), (entry.header().author.to_string(), entry.id().to_string(), e)))
            }
            _ => None,
        })
        .collect()
}

fn keyring_agent(home: &std::path::Path, name: &str) -> String {
    json(home, &["agent", "new", name])["id"].as_str().unwrap().to_string()
}

struct Api {
    http: ureq::Agent,
    base: String,
    token: String,
}

impl Api {
    fn of(home: &std::path::Path) -> Self {
        let node: Value = serde_json::from_str(&std::fs::read_to_string(home.join("node.json")).unwrap()).unwrap();
        let http = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().new_agent();
        Self { http, base: format!("http://{}", node["control"].as_str().unwrap()), token: node["token"].as_str().unwrap().to_string() }
    }

    fn post(&self, content_type: &str, body: &[u8], token: bool) -> (u16, String) {
        let mut req = self.http.post(format!("{}/v1/traces", self.base)).header("content-type", content_type);
        if token {
            req = req.header("authorization", &format!("Bearer {}", self.token));
        }
        let mut res = req.send(body).unwrap();
        (res.status().as_u16(), res.body_mut().read_to_string().unwrap_or_default())
    }
}

fn json_span(span_id: &str, parent: Option<&str>, attrs: &[(&str, &str)]) -> Value {
    let attributes: Vec<Value> = attrs.iter().map(|(k, v)| serde_json::json!({ "key": k, "value": { "stringValue": v } })).collect();
    let mut span = serde_json::json!({
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "name": "span",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000000001000",
        "attributes": attributes,
    });
    if let Some(p) = parent {
        span["parentSpanId"] = Value::from(p);
    }
    span
}

fn json_request(spans: Vec<Value>) -> Vec<u8> {
    serde_json::json!({ "resourceSpans": [{ "scopeSpans": [{ "spans": spans }] }] }).to_string().into_bytes()
}

/// The official SDK's exporter, two nodes, and the events checked on both.
#[test]
fn the_official_python_sdk_records_a_multi_agent_trace_seen_on_two_nodes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = std::process::Command::new("bash").arg(root.join("scripts/python-venv.sh")).output().expect("bash runs");
    if venv.status.code() == Some(3) {
        let why = String::from_utf8_lossy(&venv.stderr);
        println!("SKIPPED the_official_python_sdk_records_a_multi_agent_trace_seen_on_two_nodes: {}", why.trim());
        eprintln!("SKIPPED the_official_python_sdk_records_a_multi_agent_trace_seen_on_two_nodes: {}", why.trim());
        return;
    }
    assert!(venv.status.success(), "scripts/python-venv.sh: {}", String::from_utf8_lossy(&venv.stderr));
    let python = String::from_utf8(venv.stdout).unwrap().trim().to_string();

    let (alice, bob) = (Agent::new(), Agent::new());
    let planner = keyring_agent(&alice.home, "planner");
    let researcher = keyring_agent(&alice.home, "researcher");
    ok(&alice.home, &["admit", "planner", "Planner"]);
    ok(&alice.home, &["admit", "researcher", "Researcher"]);
    admit(&alice, &[&bob]);
    let na = Node::start(&alice, &alice.id, &[]);
    let nb = Node::start(&bob, &alice.id, &[&na.addr]);

    let run = std::process::Command::new(&python).arg(root.join("tests/otlp_python/send_trace.py")).env("AGORA_NODE_HOME", &alice.home).output().unwrap();
    assert!(run.status.success(), "send_trace.py: {}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let ids: BTreeMap<String, String> = serde_json::from_slice(&run.stdout).unwrap();

    for (node, home) in [("alice's", &alice.home), ("bob's", &bob.home)] {
        let actions = wait_for(&format!("the trace's six actions on {node} node"), || {
            let a = actions_of(home);
            (a.len() == 6).then_some(a)
        });
        let get = |name: &str| actions.get(&ids[name]).unwrap_or_else(|| panic!("{name} ({}) not recorded on {node} node: {actions:?}", ids[name]));
        let field = |e: &Event, f: &str| -> String {
            let Event::Action { operation, name, conversation, span, text, error, .. } = e else { unreachable!() };
            match f {
                "operation" => operation.clone(),
                "name" => name.clone(),
                "conversation" => conversation.clone(),
                "span" => span.clone(),
                "text" => text.clone(),
                "error" => error.clone(),
                _ => unreachable!(),
            }
        };
        // Signed by the agent each span names, or its ancestor's.
        for (span, signer) in [
            ("planner_run", &planner),
            ("planner_tool", &planner),
            ("handoff", &planner),
            ("researcher_run", &researcher),
            ("researcher_move", &researcher),
            ("researcher_failed_tool", &researcher),
        ] {
            assert_eq!(&get(span).0, signer, "{span} signed by the wrong agent on {node} node");
        }
        let (_, _, tool) = get("planner_tool");
        assert_eq!((field(tool, "operation"), field(tool, "name")), ("execute_tool".to_string(), "web_search".to_string()));
        let Event::Action { input_hash, output_hash, .. } = tool else { unreachable!() };
        assert_eq!(*input_hash, Some(<[u8; 32]>::from(Sha256::digest(br#"{"q": "agora provenance"}"#))));
        assert_eq!(*output_hash, Some(<[u8; 32]>::from(Sha256::digest(b"3 results"))));
        assert_eq!(field(tool, "text"), "", "contents are not kept unless configured");
        assert_eq!(field(&get("planner_run").2, "conversation"), "conv-42");
        assert_eq!(field(&get("handoff").2, "name"), "researcher");
        assert_eq!(field(&get("researcher_failed_tool").2, "error"), "division by zero");
        assert_eq!(field(&get("researcher_move").2, "operation"), "move");
        // Nothing recorded for the unknown agent, nor for the HTTP span.
        assert!(!actions.contains_key(&ids["unknown_agent"]));
        // The move the span carried: a proposition in the researcher's chain.
        let proposition = events_of(home).into_iter().find(|(_, e)| matches!(e, Some(Event::Proposition { text }) if text == "Ship the release on Friday"));
        let (entry, _) = proposition.unwrap_or_else(|| panic!("the carried move is not on {node} node"));
        assert_eq!(entry.header().author.to_string(), researcher);
    }
    // The causal links, as the tracer knew them, across the two agents'
    // chains: the tool ran under the planner's run, the researcher's run
    // under the planner's handoff, its move under its run.
    let actions = actions_of(&bob.home);
    let parent = |span: &str| match &actions[&ids[span]].2 {
        Event::Action { parent, .. } => parent.clone(),
        _ => unreachable!(),
    };
    assert_eq!(parent("planner_tool"), ids["planner_run"]);
    assert_eq!(parent("handoff"), ids["planner_run"]);
    assert_eq!(parent("researcher_run"), ids["handoff"]);
    assert_eq!(parent("researcher_move"), ids["researcher_run"]);
    assert_eq!(parent("planner_run"), "");
    // Both nodes derive the same view.
    wait_for("one view hash on both nodes", || {
        let (a, b) = (json(&alice.home, &["view-hash"]), json(&bob.home, &["view-hash"]));
        (a["view_hash"] == b["view_hash"]).then_some(())
    });
    drop(nb);
}

/// OTLP/JSON: partial success names the refused spans; a retry records
/// nothing twice; a move that breaks a rule is refused, its action kept;
/// bad requests are refused whole.
#[test]
fn partial_success_retries_and_bad_requests() {
    let alice = Agent::new();
    let planner = keyring_agent(&alice.home, "planner");
    ok(&alice.home, &["admit", "planner"]);
    let _node = Node::start(&alice, &alice.id, &[]);
    let api = Api::of(&alice.home);

    let request = json_request(vec![
        json_span("0000000000000001", None, &[("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "planner")]),
        json_span("0000000000000002", Some("0000000000000001"), &[("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "search")]),
        json_span("0000000000000003", None, &[("gen_ai.operation.name", "chat"), ("gen_ai.agent.name", "ghost")]),
        json_span(
            "0000000000000004",
            None,
            &[("gen_ai.agent.name", "planner"), ("agora.move", "contradict"), ("agora.move.target", "not-an-id"), ("agora.move.text", "no")],
        ),
        json_span("0000000000000005", None, &[("http.request.method", "GET")]),
    ]);
    let (status, body) = api.post("application/json", &request, true);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let partial = &answer["partialSuccess"];
    // OTLP/JSON writes 64-bit integers as strings.
    assert!(partial["rejectedSpans"] == "2" || partial["rejectedSpans"] == 2, "the unknown agent's span and the refused move: {answer}");
    let message = partial["errorMessage"].as_str().unwrap();
    assert!(message.contains("\"ghost\" is no agent of this node's keyring"), "{message}");
    assert!(message.contains("agora.move contradict"), "a move whose target is no event id is refused: {message}");
    assert!(message.contains("1 spans with neither gen_ai.operation.name nor agora.move were left out"), "{message}");
    let actions = actions_of(&alice.home);
    assert_eq!(actions.len(), 3, "{actions:?}");
    assert!(actions.values().all(|(signer, _, _)| signer == &planner));

    // The exporter retries the same request: nothing is recorded twice.
    let (status, _) = api.post("application/json", &request, true);
    assert_eq!(status, 200);
    let recorded = events_of(&alice.home).into_iter().filter(|(_, e)| matches!(e, Some(Event::Action { .. }))).count();
    assert_eq!(recorded, 3, "a retried span is not written again");

    // Refused whole, with the error shape.
    let (status, body) = api.post("application/json", &request, false);
    assert_eq!(status, 401, "{body}");
    let (status, body) = api.post("text/plain", b"hello", true);
    assert_eq!(status, 415, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((error["code"].as_str(), error["rule"].as_str()), (Some("unsupported_media_type"), Some("otlp_content_type")));
    let (status, body) = api.post("application/x-protobuf", b"\xff\xff\xff\xff", true);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("not an OTLP trace export request"), "{body}");
}

/// A framework's memory record through OTLP/JSON: created, updated in a
/// later request, updated twice in one request, deleted, written again.
/// Each write is a claim derived from its action, related by `update` to
/// the record's current claim; the deletion parks it; `latest` of the
/// first claim is the last state, on the node that took the spans and on a
/// peer, with one view hash. A retried request records no second state.
#[test]
fn memory_spans_update_one_claim_per_record_on_two_nodes() {
    let (alice, bob) = (Agent::new(), Agent::new());
    let planner = keyring_agent(&alice.home, "planner");
    ok(&alice.home, &["admit", "planner"]);
    admit(&alice, &[&bob]);
    let na = Node::start(&alice, &alice.id, &[]);
    let nb = Node::start(&bob, &alice.id, &[&na.addr]);
    let api = Api::of(&alice.home);
    let memory = |span: &str, op: &str, record: &str, content: &str| {
        json_span(
            span,
            None,
            &[
                ("gen_ai.operation.name", op),
                ("gen_ai.agent.name", "planner"),
                ("gen_ai.memory.store.id", "prefs"),
                ("gen_ai.memory.record.id", record),
                ("gen_ai.memory.content", content),
                ("gen_ai.memory.type", "preference"),
            ],
        )
    };
    let send = |spans: Vec<Value>| {
        let (status, body) = api.post("application/json", &json_request(spans), true);
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert!(answer.get("partialSuccess").is_none_or(|p| p.get("rejectedSpans").is_none()), "{answer}");
    };
    // The claims, relations and parks in the planner's chain, in order.
    let states = |home: &std::path::Path| -> Vec<(String, Event)> {
        events_of(home)
            .into_iter()
            .filter(|(entry, e)| {
                entry.header().author.to_string() == planner && matches!(e, Some(Event::Claim { .. } | Event::Relate { .. } | Event::Park { .. }))
            })
            .map(|(entry, e)| (entry.id().to_string(), e.unwrap()))
            .collect()
    };

    send(vec![memory("00000000000000a1", "create_memory", "tea", "likes tea")]);
    let first = states(&alice.home);
    assert_eq!(first.len(), 1, "one claim: {first:?}");
    let (c1, claim) = &first[0];
    let w1 = &actions_of(&alice.home)["5b8efff798038103d269b633813fc60c/00000000000000a1"].1;
    let Event::Claim { sources, kind, text, .. } = claim else { panic!("{claim:?}") };
    assert_eq!((sources.iter().map(|s| s.to_string()).collect::<Vec<_>>(), *kind), (vec![w1.clone()], agora_graph::MemoryKind::Preference));
    assert!(text.starts_with("memory record tea, contents sha256:"), "contents are not kept unless configured: {text}");

    let update = memory("00000000000000a2", "update_memory", "tea", "likes green tea");
    send(vec![update.clone()]);
    send(vec![update]);
    send(vec![memory("00000000000000a3", "update_memory", "tea", "likes oolong"), memory("00000000000000a4", "update_memory", "tea", "likes no tea")]);
    send(vec![json_span(
        "00000000000000a5",
        None,
        &[("gen_ai.operation.name", "delete_memory"), ("gen_ai.agent.name", "planner"), ("gen_ai.memory.record.id", "tea")],
    )]);
    send(vec![memory("00000000000000a6", "update_memory", "tea", "likes tea again"), memory("00000000000000b1", "create_memory", "coffee", "no coffee")]);

    let all = states(&alice.home);
    let kinds: Vec<&str> = all.iter().map(|(_, e)| e.kind_name()).collect();
    assert_eq!(
        kinds,
        ["claim", "claim", "relate", "claim", "relate", "claim", "relate", "park", "claim", "relate", "claim"],
        "a retried request records no second state: {all:?}"
    );
    let claims: Vec<&String> = all.iter().filter(|(_, e)| matches!(e, Event::Claim { .. })).map(|(id, _)| id).collect();
    // Each update names the claim written before it for the record.
    for (i, (_, e)) in all.iter().enumerate() {
        match e {
            Event::Relate { from, to, relation, .. } => {
                assert_eq!(*relation, agora_graph::Relation::Update);
                assert_eq!(&from.to_string(), &all[i - 1].0, "from the claim just written");
                let before = claims.iter().position(|c| **c == all[i - 1].0).unwrap();
                assert_eq!(&to.to_string(), claims[before - 1], "to the record's claim before it");
            }
            Event::Park { target, reason } => assert_eq!((target.to_string(), reason.as_str()), (claims[3].clone(), "delete_memory")),
            _ => {}
        }
    }
    for (node, home) in [("alice's", &alice.home), ("bob's", &bob.home)] {
        wait_for(&format!("the record's states on {node} node"), || (states(home).len() == all.len()).then_some(()));
        let latest = json(home, &["latest", c1]);
        assert_eq!(latest["latest"].as_str(), Some(claims[4].as_str()), "{node}: {latest}");
        assert_eq!(latest["status"], "active", "{node}: {latest}");
        assert_eq!(json(home, &["status", claims[3]])["status"], "superseded", "{node}: parked, then written again");
        assert_eq!(json(home, &["latest", claims[5]])["latest"].as_str(), Some(claims[5].as_str()), "another record: its own claim");
    }
    wait_for("one view hash on both nodes", || {
        let (a, b) = (json(&alice.home, &["view-hash"]), json(&bob.home, &["view-hash"]));
        (a["view_hash"] == b["view_hash"]).then_some(())
    });
    drop(nb);
}

/// What a collector on 127.0.0.1 received: each request's path, its
/// `x-collector-key` header and its decoded body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>, opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest)>>>;

/// A collector: a thread per connection reading HTTP/1.1 POSTs (keep-alive
/// included) and answering each with an empty `ExportTraceServiceResponse`.
fn collector() -> (String, Received) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received: Received = Default::default();
    let into = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let into = into.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_string();
                    let (mut length, mut key) = (0usize, None);
                    loop {
                        let mut line = String::new();
                        reader.read_line(&mut line).unwrap();
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        let (name, value) = line.split_once(':').unwrap();
                        match name.trim().to_ascii_lowercase().as_str() {
                            "content-length" => length = value.trim().parse().unwrap(),
                            "x-collector-key" => key = Some(value.trim().to_string()),
                            _ => {}
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let request = <opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as prost::Message>::decode(&body[..])
                        .expect("an OTLP/HTTP protobuf trace export");
                    into.lock().unwrap().push((path, key, request));
                    let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n");
                }
            });
        }
    });
    (url, received)
}

/// A span's string (or integer, as text) attribute.
fn attribute(span: &opentelemetry_proto::tonic::trace::v1::Span, key: &str) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
        V::StringValue(s) => Some(s.clone()),
        V::IntValue(i) => Some(i.to_string()),
        _ => None,
    })
}

/// The node's own spans (protocol-spec/otlp.md, "The node's own spans"):
/// with `[otlp] export` set, each operation of the JSON API is one GenAI
/// memory span sent over OTLP/HTTP with the headers of
/// `OTEL_EXPORTER_OTLP_HEADERS`: a move is `create_memory` naming the entry
/// recorded, a search `search_memory` by the agent the request named, a
/// refused move an ERROR naming the rule; no span carries an event's text;
/// the spans still queued when the node stops are sent before it exits.
#[test]
fn the_node_exports_genai_memory_spans_for_the_operations_it_serves() {
    let (url, received) = collector();
    let alice = Agent::new();
    keyring_agent(&alice.home, "researcher");
    let config = alice.home.join("agora.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap_or_default();
    toml.push_str(&format!("\n[otlp]\nexport = \"{url}\"\n"));
    std::fs::write(&config, toml).unwrap();

    // `Node::start`, with the exporter's environment set (a short batch
    // delay, a collector's key) and any endpoint of the test's own removed.
    let ready = alice.home.join("ready.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agora"))
        .arg("--home")
        .arg(&alice.home)
        .args(["node", "run", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--workspace", WORKSPACE, "--founder", &alice.id, "--ready-file"])
        .arg(&ready)
        .env_remove("AGORA_HOME")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-key=k3y")
        .env("AGORA_LOG", "agora=debug,warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(std::fs::File::create(alice.home.with_extension("log")).unwrap()))
        .spawn()
        .unwrap();
    let workspace_id = wait_for("the node to be ready", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("node exited early with {status}: {}", std::fs::read_to_string(alice.home.with_extension("log")).unwrap_or_default());
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&ready).ok()?).ok()?;
        Some(v["workspace_id"].as_str()?.to_string())
    });
    let api = Api::of(&alice.home);
    let op = |name: &str, agent: Option<&str>, body: Value| -> (u16, Value) {
        let mut req = api.http.post(format!("{}/v1/ops/{name}", api.base)).header("content-type", "application/json");
        req = req.header("authorization", &format!("Bearer {}", api.token));
        if let Some(a) = agent {
            req = req.header("agora-agent", a);
        }
        let mut res = req.send(body.to_string()).unwrap();
        (res.status().as_u16(), serde_json::from_str(&res.body_mut().read_to_string().unwrap()).unwrap())
    };
    let secret = "Ship on Friday, quietly";
    let (status, proposed) = op("propose", None, serde_json::json!({ "text": secret }));
    assert_eq!(status, 200, "{proposed}");
    let p = proposed["id"].as_str().unwrap().to_string();
    let (status, found) = op("search", Some("researcher"), serde_json::json!({ "query": "friday" }));
    assert_eq!(status, 200, "{found}");
    let (status, refused) = op("resume", None, serde_json::json!({ "target": p }));
    assert_eq!(status, 422, "resuming an active node breaks a rule: {refused}");
    let rule = refused["rule"].as_str().unwrap().to_string();

    let spans = |received: &Received| -> Vec<opentelemetry_proto::tonic::trace::v1::Span> {
        let received = received.lock().unwrap();
        for (path, key, request) in received.iter() {
            assert_eq!(path, "/v1/traces", "`export` is a base: /v1/traces is added");
            assert_eq!(key.as_deref(), Some("k3y"), "OTEL_EXPORTER_OTLP_HEADERS is sent");
            for resource in &request.resource_spans {
                let service = resource.resource.as_ref().and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name")).cloned();
                let service = service.and_then(|kv| kv.value?.value);
                assert_eq!(service, Some(opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue("agora".into())));
                for scope in &resource.scope_spans {
                    assert_eq!(scope.scope.as_ref().map(|s| s.name.as_str()), Some("agora-node"));
                }
            }
        }
        received.iter().flat_map(|(_, _, r)| r.resource_spans.iter().flat_map(|r| r.scope_spans.iter().flat_map(|s| s.spans.iter().cloned()))).collect()
    };
    // While the node runs: the batch processor sends them within its delay.
    let by_operation = wait_for("the three operations' spans", || {
        let all = spans(&received);
        let of = |name: &str| all.iter().find(|s| attribute(s, "agora.operation").as_deref() == Some(name)).cloned();
        Some((of("propose")?, of("search")?, of("resume")?))
    });
    let (propose, search, resume) = by_operation;
    for (span, memory_operation, agent) in [(&propose, "create_memory", "self"), (&search, "search_memory", "researcher"), (&resume, "create_memory", "self")] {
        assert_eq!(span.name, format!("{memory_operation} {WORKSPACE}"));
        assert_eq!(span.kind, opentelemetry_proto::tonic::trace::v1::span::SpanKind::Server as i32, "{span:?}");
        assert_eq!(attribute(span, "gen_ai.operation.name").as_deref(), Some(memory_operation));
        assert_eq!(attribute(span, "gen_ai.provider.name").as_deref(), Some("agora"));
        assert_eq!(attribute(span, "gen_ai.memory.store.id").as_deref(), Some(workspace_id.as_str()));
        assert_eq!(attribute(span, "gen_ai.memory.store.name").as_deref(), Some(WORKSPACE));
        assert_eq!(attribute(span, "gen_ai.agent.name").as_deref(), Some(agent));
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano && span.start_time_unix_nano > 0);
    }
    assert_eq!(attribute(&propose, "gen_ai.memory.id").as_deref(), Some(p.as_str()), "a write names the entry it recorded");
    assert_eq!(attribute(&search, "gen_ai.memory.id"), None, "a read names none");
    let code = |s: &opentelemetry_proto::tonic::trace::v1::Span| s.status.as_ref().map_or(0, |st| st.code);
    use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
    assert_eq!((code(&propose), code(&search)), (StatusCode::Unset as i32, StatusCode::Unset as i32));
    assert_eq!(code(&resume), StatusCode::Error as i32);
    assert_eq!(attribute(&resume, "error.type").as_deref(), Some(rule.as_str()));
    assert!(resume.status.as_ref().unwrap().message.starts_with(&format!("{rule}: ")), "{:?}", resume.status);
    assert_eq!(attribute(&resume, "gen_ai.memory.id"), None);

    // The receiver's requests: one span each, counting what was recorded,
    // but none for a request made only of a node's own spans (a node
    // exporting to its own /v1/traces would otherwise never stop).
    let tool = |id| json_span(id, None, &[("gen_ai.operation.name", "execute_tool"), ("gen_ai.agent.name", "researcher"), ("gen_ai.tool.name", "lookup")]);
    let own = serde_json::json!({ "resourceSpans": [{ "scopeSpans": [{ "scope": { "name": "agora-node" }, "spans": [tool("00f067aa0ba902b1")] }] }] });
    assert_eq!(api.post("application/json", own.to_string().as_bytes(), true).0, 200);
    assert_eq!(api.post("application/json", &json_request(vec![tool("00f067aa0ba902b2")]), true).0, 200);
    let receiver = wait_for("the receiver's span", || {
        let all = spans(&received);
        let batches: Vec<_> = all.into_iter().filter(|s| attribute(s, "agora.operation").as_deref() == Some("otlp_export")).collect();
        (!batches.is_empty()).then_some(batches)
    });
    assert_eq!(receiver.len(), 1, "the request of a node's own spans has none: {receiver:?}");
    assert_eq!(receiver[0].name, format!("create_memory {WORKSPACE}"));
    assert_eq!((attribute(&receiver[0], "agora.otlp.recorded").as_deref(), attribute(&receiver[0], "agora.otlp.refused").as_deref()), (Some("1"), Some("0")));
    assert_eq!(attribute(&receiver[0], "gen_ai.memory.store.id").as_deref(), Some(workspace_id.as_str()));

    // A move made just before the node stops is sent on the way out.
    let (status, last) = op("propose", None, serde_json::json!({ "text": "one more" }));
    assert_eq!(status, 200, "{last}");
    let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let exit = wait_for("the node to exit", || child.try_wait().ok().flatten());
    assert!(exit.success(), "{exit}");
    let all = spans(&received);
    assert!(all.iter().any(|s| attribute(s, "gen_ai.memory.id").as_deref() == last["id"].as_str()), "the last move's span is flushed at shutdown");
    for span in &all {
        for kv in &span.attributes {
            assert!(!format!("{:?}", kv.value).contains("Friday"), "no event text in an attribute: {kv:?}");
        }
    }
}
