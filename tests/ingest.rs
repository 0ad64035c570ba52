//! `agora ingest` (free text into typed events through an audited
//! pipeline) with real `agora` processes: the rule-based classifier end to
//! end on a running node (events linked to earlier nodes, the audit and
//! its links, a proposal below the threshold and one with no match
//! reported, an amendment that keeps the original, the API's input
//! bounds); an OpenAI-compatible endpoint faked on 127.0.0.1 with scripted
//! answers (a good one, a malformed one, an error status; the key sent only
//! to the configured endpoint); the same over https with a self-signed
//! certificate trusted through `[ingest] ca_file`, and refused, named, with
//! another CA; bad inputs, each named; and the official
//! MCP Python SDK answering the sampling classifier from its sampling
//! callback (tests/mcp_python/sampling.py).

mod support;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use support::*;

/// `agora --json ARGS` on `home` with `stdin` and extra environment: the
/// exit status's success, the JSON on standard output, standard error.
fn run(home: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> (bool, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agora"));
    cmd.arg("--home").arg(home).arg("--json").args(args).env_remove("AGORA_HOME").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("agora runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.success(), value, String::from_utf8_lossy(&out.stderr).to_string())
}

/// The error of a refused `agora --json ingest ARGS`: its JSON (`rule`, `message`) and standard error.
fn refused(home: &Path, args: &[&str], stdin: &[u8]) -> (Value, String) {
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    let (ok, value, err) = run(home, &all, stdin, &[]);
    assert!(!ok, "ingest {args:?} should fail: {value}");
    (value, err)
}

/// How many entries the home's store holds (every author's highest seq, summed).
fn entries(home: &Path) -> u64 {
    json(home, &["authors"]).as_array().unwrap().iter().map(|a| a["max_seq"].as_u64().unwrap()).sum()
}

/// As [`refused`], with extra environment.
fn refused_with(home: &Path, args: &[&str], env: &[(&str, &str)]) -> (Value, String) {
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    let (ok, value, err) = run(home, &all, b"", env);
    assert!(!ok, "ingest {args:?} should fail: {value}");
    (value, err)
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn actions(home: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["actions"];
    all.extend_from_slice(args);
    json(home, &all).as_array().unwrap().clone()
}

#[test]
fn rule_based_ingest_records_links_audits_and_reports_what_it_dropped() {
    let alice = Agent::new();
    let _node = Node::start(&alice, &alice.id, &[]);
    let p = json(&alice.home, &["propose", "We should use usage-based pricing for every customer"])["id"].as_str().unwrap().to_string();

    let text = "bob: But enterprise procurement cannot budget usage-based pricing costs.\n\
                carol: Is the pricing fair to small teams?\n\
                dave: Seat counts grow slowly\n\
                erin: However zebra migrations are irrelevant here.";
    let answer = json(&alice.home, &["ingest", text, "--conversation", "pricing-call"]);
    println!("{answer:#}");
    assert_eq!(answer["classifier"], "rules");
    assert_eq!(answer["model"], "agora-rules-1");
    assert_eq!(answer["input_hash"], sha256(text));
    assert_eq!(answer["threshold"], 0.5);
    let recorded = answer["recorded"].as_array().unwrap();
    let kinds: Vec<&str> = recorded.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["contradiction", "question"]);
    // The contradiction names the earlier proposition, found by search, with the candidates weighed.
    let c = &recorded[0];
    assert_eq!(c["targets"], json!([p]));
    let weighed = c["resolutions"][0]["candidates"].as_array().unwrap();
    assert_eq!(weighed[0]["id"], p.as_str());
    assert!(weighed[0]["score"].as_f64().unwrap() > 0.0, "{weighed:?}");
    assert_eq!(c["resolutions"][0]["chosen"], p.as_str());
    assert_eq!(json(&alice.home, &["status", &p])["status"], "contested");
    let c_id = c["id"].as_str().unwrap().to_string();
    assert_eq!(json(&alice.home, &["status", &c_id])["text"], "But enterprise procurement cannot budget usage-based pricing costs.");
    // Dropped and said why: below the threshold, and a target nothing matches.
    let dropped = answer["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert_eq!((dropped[0]["reason"].as_str(), dropped[0]["text"].as_str()), (Some("below_threshold"), Some("Seat counts grow slowly")));
    assert!(dropped[0]["message"].as_str().unwrap().contains("0.3 is below the threshold 0.5"), "{}", dropped[0]);
    assert_eq!(dropped[1]["reason"], "unresolved");
    assert_eq!(dropped[1]["resolutions"][0]["candidates"], json!([]));
    let hits = json(&alice.home, &["search", "zebra", "--all"])["hits"].as_array().unwrap().clone();
    assert!(hits.iter().all(|h| h["kind"] == "action"), "never recorded, only audited: {hits:?}");

    // The audit: one `classify` action with the input's hash, classifier and model, every proposal, its candidates and outcome.
    let audit = answer["audit"].as_str().unwrap().to_string();
    let audits = actions(&alice.home, &["--operation", "classify"]);
    assert_eq!(audits.len(), 1);
    let a = &audits[0];
    assert_eq!((a["id"].as_str(), a["name"].as_str(), a["conversation"].as_str()), (Some(audit.as_str()), Some("rules/agora-rules-1"), Some("pricing-call")));
    assert_eq!(a["input_hash"], sha256(text));
    assert_eq!(a["author"], alice.id.as_str());
    let record: Value = serde_json::from_str(a["text"].as_str().unwrap()).unwrap();
    assert_eq!(record["format"], "agora-ingest-audit/1");
    let outcomes: Vec<&str> = record["proposals"].as_array().unwrap().iter().map(|p| p["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["recorded", "recorded", "below_threshold", "unresolved"]);
    assert_eq!(record["proposals"][0]["id"], c_id.as_str());
    assert_eq!(record["proposals"][0]["confidence"], 0.8);
    assert_eq!(record["proposals"][0]["resolutions"][0]["candidates"][0]["id"], p.as_str());
    // Every recorded event is linked to it: a `classified` action caused by the event, named by the audit.
    let links = actions(&alice.home, &["--operation", "classified", "--name", &audit]);
    let causes: Vec<&str> = links.iter().map(|l| l["cause"].as_str().unwrap()).collect();
    let ids: Vec<&str> = recorded.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(causes, ids);
    assert_eq!(links[0]["id"], c["link"]);
    let traced: Vec<String> =
        json(&alice.home, &["trace", &c_id])["events"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
    assert!(traced.contains(&c["link"].as_str().unwrap().to_string()), "the event's trace shows its link to the audit: {traced:?}");

    // A second ingest finds what the first recorded, never an action (the audit holds the same words).
    let q = recorded[1]["id"].as_str().unwrap();
    let second = json(&alice.home, &["ingest", "The answer is yes: small teams pay less per seat."]);
    assert_eq!(second["recorded"][0]["kind"], "resolve", "{second}");
    assert_eq!(second["recorded"][0]["targets"], json!([q]));
    assert_eq!(json(&alice.home, &["status", q])["status"], "resolved");
    let weighed = second["recorded"][0]["resolutions"][0]["candidates"].as_array().unwrap();
    assert!(weighed.iter().all(|c| c["kind"] != "action"), "an action among the candidates: {weighed:?}");

    // A person amends a wrong classification: the contradiction was a caveat. Refining it keeps the original, signed.
    let amended =
        json(&alice.home, &["refine", &c_id, "Enterprise procurement needs a predictable cap on usage-based pricing"])["id"].as_str().unwrap().to_string();
    let why = json(&alice.home, &["act", "amend", "--name", &audit, "--cause", &amended, "--text", "a caveat, not a contradiction"]);
    let status = json(&alice.home, &["status", &c_id]);
    assert_eq!(status["status"], "superseded");
    assert_eq!(status["successor"]["id"], amended.as_str());
    assert_eq!(status["text"], "But enterprise procurement cannot budget usage-based pricing costs.", "the original is kept");
    let trail: Vec<String> = actions(&alice.home, &["--name", &audit]).iter().map(|a| a["operation"].as_str().unwrap().to_string()).collect();
    assert_eq!(trail, ["classified", "classified", "amend"], "the audit's trail, amendment included");
    assert_eq!(actions(&alice.home, &["--name", &audit]).last().unwrap()["id"], why["id"]);

    // The threshold from agora.toml, and the call's over it.
    std::fs::write(alice.home.join("agora.toml"), "[ingest]\nthreshold = 0.95\n").unwrap();
    let strict = json(&alice.home, &["ingest", "Should we publish prices?"]);
    assert_eq!((strict["threshold"].as_f64(), strict["recorded"].as_array().unwrap().len()), (Some(0.95), 0));
    assert_eq!(strict["dropped"][0]["reason"], "below_threshold");
    let lenient = json(&alice.home, &["ingest", "Should we publish prices?", "--threshold", "0.1"]);
    assert_eq!(lenient["recorded"][0]["kind"], "question");

    // Over the JSON API: the same operation, its bounds checked by its schema.
    let node: Value = serde_json::from_str(&std::fs::read_to_string(alice.home.join("node.json")).unwrap()).unwrap();
    let http = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().new_agent();
    let post = |body: Value| {
        let mut resp = http
            .post(format!("http://{}/v1/ops/ingest", node["control"].as_str().unwrap()))
            .header("authorization", format!("Bearer {}", node["token"].as_str().unwrap()))
            .header("content-type", "application/json")
            .send(body.to_string().as_str())
            .unwrap();
        (resp.status().as_u16(), serde_json::from_str::<Value>(&resp.body_mut().read_to_string().unwrap()).unwrap())
    };
    let (status, body) = post(json!({ "text": "We should publish a price list.", "threshold": 0.5 }));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["recorded"][0]["kind"], "proposition");
    let (status, body) = post(json!({ "text": "x", "threshold": 1.5 }));
    assert_eq!((status, body["rule"].as_str()), (400, Some("input_schema")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("threshold"), "{body}");
    let (status, body) = post(json!({ "text": "" }));
    assert_eq!((status, body["rule"].as_str()), (400, Some("input_schema")), "{body}");
    let (status, body) = post(json!({ "text": "Is it?", "classifier": "sampling" }));
    assert_eq!((status, body["rule"].as_str()), (422, Some("sampling_unavailable")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("MCP"), "{body}");
}

#[test]
fn bad_inputs_are_refused_naming_what_and_where() {
    let alice = Agent::new();
    let before = entries(&alice.home);
    let (e, err) = refused(&alice.home, &[""], b"");
    assert_eq!(e["rule"], "empty_text", "{e}");
    assert!(err.contains("ingest: the text is empty"), "{err}");
    let (e, _) = refused(&alice.home, &["-"], b"  \n");
    assert_eq!(e["rule"], "empty_text", "{e}");
    let long = "We should test. ".repeat(5000);
    let (e, err) = refused(&alice.home, &["-"], long.as_bytes());
    assert_eq!(e["rule"], "limit", "{e}");
    assert!(err.contains("over the limit of 65536 bytes"), "{err}");
    let (e, err) = refused(&alice.home, &["We should test.", "--classifier", "magic"], b"");
    assert_eq!((e["rule"].as_str(), e["code"].as_str()), (Some("unknown_classifier"), Some("bad_input")), "{e}");
    assert!(err.contains("unknown classifier \"magic\" (the call's classifier); the classifiers are rules, openai and sampling"), "{err}");
    for t in ["1.5", "-0.1", "NaN"] {
        let flag = format!("--threshold={t}");
        let (e, err) = refused(&alice.home, &["We should test.", &flag], b"");
        assert_eq!(e["rule"], "out_of_range", "{t}: {e}");
        assert!(err.contains("(the call's threshold) is not between 0 and 1"), "{err}");
    }
    let (e, err) = refused(&alice.home, &["We should test.", "--classifier", "sampling"], b"");
    assert_eq!(e["rule"], "sampling_unavailable", "{e}");
    assert!(err.contains("only available to the ingest tool called over MCP"), "{err}");
    let (e, err) = refused(&alice.home, &["We should test.", "--classifier", "openai"], b"");
    assert_eq!(e["rule"], "classifier_settings", "{e}");
    assert!(err.contains("needs an endpoint: --endpoint URL, or [ingest] endpoint in"), "{err}");
    // A bad default names the file it is in.
    std::fs::write(alice.home.join("agora.toml"), "[ingest]\nclassifier = \"oracle\"\nthreshold = 2.0\n").unwrap();
    let (e, err) = refused(&alice.home, &["We should test.", "--threshold", "0.5"], b"");
    assert_eq!(e["rule"], "unknown_classifier", "{e}");
    assert!(err.contains("\"oracle\" ([ingest] classifier in ") && err.contains("agora.toml)"), "{err}");
    let (e, err) = refused(&alice.home, &["We should test.", "--classifier", "rules"], b"");
    assert_eq!(e["rule"], "out_of_range", "{e}");
    assert!(err.contains("threshold 2 ([ingest] threshold in "), "{err}");
    // Nothing was recorded by any of them.
    assert_eq!(entries(&alice.home), before);
    // The call's own settings win over the file's; the text from standard input.
    let (ok, v, err) = run(&alice.home, &["ingest", "-", "--threshold", "0.5", "--classifier", "rules"], b"We should test more.", &[]);
    assert!(ok, "{err}");
    assert_eq!(v["recorded"][0]["text"], "We should test more.");
}

/// One scripted answer of the fake endpoint: status and body.
type Script = Vec<(u16, String)>;

/// A fake OpenAI-compatible endpoint on 127.0.0.1: answers each request with
/// the next scripted answer, keeping what it was sent (head and body).
struct FakeEndpoint {
    url: String,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

impl FakeEndpoint {
    fn start(script: Script) -> Self {
        Self::serve(script, None)
    }

    /// Over https with `tls`'s certificate: a connection whose handshake
    /// fails (the client does not trust it) takes no answer of the script.
    fn serve(script: Script, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            let mut script = script.into_iter().peekable();
            for stream in listener.incoming() {
                let Some((status, body)) = script.peek() else { break };
                let stream = stream.unwrap();
                let answered = match &tls {
                    None => answer(stream, *status, body, &kept),
                    Some(config) => {
                        let mut tls = rustls::StreamOwned::new(rustls::ServerConnection::new(config.clone()).unwrap(), stream);
                        answer(&mut tls, *status, body, &kept).and_then(|()| {
                            tls.conn.send_close_notify();
                            tls.flush()
                        })
                    }
                };
                if answered.is_ok() {
                    script.next();
                }
            }
        });
        Self { url, seen }
    }
}

/// Read one request from `stream`, keep it, and answer `status` and `body`.
fn answer(mut stream: impl Read + Write, status: u16, body: &str, kept: &Mutex<Vec<(String, Value)>>) -> std::io::Result<()> {
    let (head, request) = {
        let mut reader = BufReader::new(&mut stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let len = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())).unwrap_or(0);
        let mut request = vec![0; len];
        reader.read_exact(&mut request)?;
        (head, request)
    };
    kept.lock().unwrap().push((head, serde_json::from_slice(&request).unwrap_or(Value::Null)));
    let reason = if status == 200 { "OK" } else { "Error" };
    let answer = format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
    stream.write_all(answer.as_bytes())?;
    stream.flush()
}

/// A self-signed certificate for 127.0.0.1 (PEM) and the TLS configuration
/// of a server presenting it.
fn self_signed() -> (String, Arc<rustls::ServerConfig>) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.key_pair.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .unwrap();
    (made.cert.pem(), Arc::new(config))
}

/// A chat completion whose message is `content`.
fn completion(content: &str) -> String {
    json!({ "id": "c1", "object": "chat.completion", "model": "fake-model-1", "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }] }).to_string()
}

#[test]
fn an_openai_compatible_endpoint_classifies_and_its_failures_are_named() {
    let alice = Agent::new();
    let proposals = json!({ "proposals": [
        { "kind": "proposition", "text": "Cache the search index between commands", "targets": [], "confidence": 0.9 },
        { "kind": "support", "text": "Rebuilding the index takes three seconds on large graphs", "targets": ["#0"], "confidence": 0.8 },
        { "kind": "contradiction", "text": "A cache goes stale when peers write", "targets": ["cache the search index"], "confidence": 0.7 },
        { "kind": "question", "text": "How large may the cache grow?", "targets": [], "confidence": 0.2 },
    ]});
    let fake = FakeEndpoint::start(vec![
        (200, completion(&proposals.to_string())),
        (200, completion("Sure! Here are the events: a proposition about caching.")),
        (500, json!({ "error": { "message": "the model is loading" } }).to_string()),
    ]);
    std::fs::write(
        alice.home.join("agora.toml"),
        format!("[ingest]\nclassifier = \"openai\"\nendpoint = \"{}\"\nmodel = \"fake-model\"\napi_key_env = \"AGORA_TEST_INGEST_KEY\"\n", fake.url),
    )
    .unwrap();
    let key = [("AGORA_TEST_INGEST_KEY", "sk-test-123")];
    let text = "We could cache the index. It takes 3 s to rebuild. But caches go stale. How big?";

    let (ok, answer, err) = run(&alice.home, &["ingest", text], b"", &key);
    assert!(ok, "{err}");
    println!("{answer:#}");
    assert_eq!((answer["classifier"].as_str(), answer["model"].as_str()), (Some("openai"), Some("fake-model-1")));
    let recorded = answer["recorded"].as_array().unwrap();
    assert_eq!(recorded.iter().map(|r| r["kind"].as_str().unwrap()).collect::<Vec<_>>(), ["proposition", "support", "contradiction"]);
    let first = recorded[0]["id"].as_str().unwrap();
    assert_eq!(recorded[1]["targets"], json!([first]), "#0 is the event of proposal 0");
    assert_eq!(recorded[1]["resolutions"][0]["via"], "proposal");
    assert_eq!(recorded[2]["targets"], json!([first]), "found by search");
    assert_eq!(answer["dropped"][0]["reason"], "below_threshold");
    let audit = &actions(&alice.home, &["--operation", "classify"])[0];
    assert_eq!(audit["name"], "openai/fake-model-1");
    assert_eq!(audit["input_hash"], sha256(text));
    let record: Value = serde_json::from_str(audit["text"].as_str().unwrap()).unwrap();
    assert_eq!(record["endpoint"], format!("{}/chat/completions", fake.url));
    // What the endpoint was sent: the model, the prompt, JSON asked for, the configured key.
    {
        let seen = fake.seen.lock().unwrap();
        let (head, body) = &seen[0];
        assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
        assert!(head.to_ascii_lowercase().contains("authorization: bearer sk-test-123"), "{head}");
        assert_eq!(body["model"], "fake-model");
        assert_eq!(body["response_format"]["type"], "json_object");
        assert_eq!(body["messages"][1]["content"], format!("Classify this text:\n\n{text}"));
    }

    // A malformed answer: a typed error naming the endpoint; nothing recorded.
    let before = entries(&alice.home);
    let (e, err) = refused_with(&alice.home, &["We could shard it."], &key);
    assert_eq!(e["rule"], "classifier_malformed", "{e}");
    assert!(err.contains(&format!("the answer of the endpoint {}/chat/completions is malformed", fake.url)), "{err}");
    // An error status: named with the endpoint and what it said.
    let (e, err) = refused_with(&alice.home, &["We could shard it."], &key);
    assert_eq!(e["rule"], "classifier_failed", "{e}");
    assert!(err.contains(&format!("classifier endpoint {}/chat/completions answered HTTP 500", fake.url)) && err.contains("the model is loading"), "{err}");
    assert_eq!(entries(&alice.home), before, "nothing recorded by a failed classification");
    // Another endpoint, given by the call, is never sent the configured key.
    let other = FakeEndpoint::start(vec![(200, completion(r#"{"proposals": []}"#))]);
    let (ok, answer, err) = run(&alice.home, &["ingest", "We could shard it.", "--endpoint", &other.url, "--model", "m2"], b"", &key);
    assert!(ok, "{err}");
    assert_eq!((answer["recorded"].as_array().unwrap().len(), answer["dropped"].as_array().unwrap().len()), (0, 0));
    let head = other.seen.lock().unwrap()[0].0.to_ascii_lowercase();
    assert!(!head.contains("authorization"), "{head}");
    // Nothing listens: unreachable, named.
    let (e, err) = refused_with(&alice.home, &["We could shard it.", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"], &key);
    assert_eq!(e["rule"], "classifier_unreachable", "{e}");
    assert!(err.contains("classifier endpoint http://127.0.0.1:9/v1/chat/completions: unreachable"), "{err}");
}

/// An https endpoint whose certificate is self-signed: trusted through
/// `[ingest] ca_file`, it classifies as over http; with another CA, or the
/// platform's roots alone, the call is refused naming the endpoint and
/// nothing is recorded.
#[test]
fn an_https_endpoint_is_trusted_through_the_configured_ca_file_only() {
    let alice = Agent::new();
    let (cert, tls) = self_signed();
    let (other_cert, _) = self_signed();
    std::fs::write(alice.home.join("local-ca.pem"), cert).unwrap();
    std::fs::write(alice.home.join("other-ca.pem"), other_cert).unwrap();
    std::fs::write(alice.home.join("not-a-ca.pem"), "no certificate here\n").unwrap();
    let proposals = json!({ "proposals": [
        { "kind": "proposition", "text": "Serve the classifier over TLS", "targets": [], "confidence": 0.9 },
        { "kind": "support", "text": "Keys cross the network", "targets": ["#0"], "confidence": 0.8 },
    ]});
    let fake = FakeEndpoint::serve(vec![(200, completion(&proposals.to_string()))], Some(tls));
    let url = format!("{}/chat/completions", fake.url);
    let configure = |ca: Option<&str>| {
        let ca = ca.map(|f| format!("ca_file = \"{f}\"\n")).unwrap_or_default();
        std::fs::write(
            alice.home.join("agora.toml"),
            format!("[ingest]\nclassifier = \"openai\"\nendpoint = \"{}\"\nmodel = \"fake-model\"\napi_key_env = \"AGORA_TEST_INGEST_KEY\"\n{ca}", fake.url),
        )
        .unwrap();
    };
    let key = [("AGORA_TEST_INGEST_KEY", "sk-test-tls")];
    let text = "We should serve the classifier over TLS. Keys cross the network.";
    let before = entries(&alice.home);

    // Another CA, then none but the platform's: not trusted, named.
    configure(Some("other-ca.pem"));
    let (e, err) = refused_with(&alice.home, &[text], &key);
    assert_eq!(e["rule"], "classifier_untrusted", "{e}");
    assert!(err.contains(&format!("classifier endpoint {url}: its TLS certificate is not trusted (invalid peer certificate: ")), "{err}");
    assert!(err.contains("and the 1 of [ingest] ca_file ") && err.contains("other-ca.pem"), "{err}");
    configure(None);
    let (e, err) = refused_with(&alice.home, &[text], &key);
    assert_eq!(e["rule"], "classifier_untrusted", "{e}");
    assert!(err.contains(&format!("classifier endpoint {url}: its TLS certificate is not trusted")) && !err.contains("ca_file"), "{err}");
    // A CA file that is missing or holds no certificate: a setting, named.
    configure(Some("missing.pem"));
    let (e, err) = refused_with(&alice.home, &[text], &key);
    assert_eq!(e["rule"], "classifier_settings", "{e}");
    assert!(err.contains("[ingest] ca_file ") && err.contains("missing.pem"), "{err}");
    configure(Some("not-a-ca.pem"));
    let (e, err) = refused_with(&alice.home, &[text], &key);
    assert_eq!(e["rule"], "classifier_settings", "{e}");
    assert!(err.contains("not-a-ca.pem: holds no PEM certificate"), "{err}");
    assert_eq!(entries(&alice.home), before, "nothing recorded by a refused classification");
    assert!(fake.seen.lock().unwrap().is_empty(), "no request was sent before the certificate was trusted");

    // Trusted through the CA file: classified, recorded and audited as over http, the key sent.
    configure(Some("local-ca.pem"));
    let (ok, answer, err) = run(&alice.home, &["ingest", text], b"", &key);
    assert!(ok, "{err}");
    assert_eq!((answer["classifier"].as_str(), answer["model"].as_str()), (Some("openai"), Some("fake-model-1")));
    let recorded = answer["recorded"].as_array().unwrap();
    assert_eq!(recorded.iter().map(|r| r["kind"].as_str().unwrap()).collect::<Vec<_>>(), ["proposition", "support"]);
    let audit = &actions(&alice.home, &["--operation", "classify"])[0];
    assert_eq!(audit["name"], "openai/fake-model-1");
    let record: Value = serde_json::from_str(audit["text"].as_str().unwrap()).unwrap();
    assert_eq!(record["endpoint"], url);
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].0.to_ascii_lowercase().contains("authorization: bearer sk-test-tls"), "{}", seen[0].0);
    assert_eq!(seen[0].1["messages"][1]["content"], format!("Classify this text:\n\n{text}"));
}

/// The official MCP Python SDK as the client whose model classifies
/// (tests/mcp_python/sampling.py): its sampling callback answers scripted
/// proposals over streamable HTTP and over `agora mcp` on stdio; a session
/// without the callback is told sampling is unavailable. Said skipped, with
/// the reason, when the environment cannot be made.
#[test]
fn the_python_sdks_sampling_callback_classifies_for_ingest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = Command::new("bash").arg(root.join("scripts/mcp-python-venv.sh")).output().expect("bash runs");
    if venv.status.code() == Some(3) {
        println!("SKIPPED the_python_sdks_sampling_callback_classifies_for_ingest: {}", String::from_utf8_lossy(&venv.stderr).trim());
        eprintln!("SKIPPED the_python_sdks_sampling_callback_classifies_for_ingest: {}", String::from_utf8_lossy(&venv.stderr).trim());
        return;
    }
    assert!(venv.status.success(), "scripts/mcp-python-venv.sh: {}", String::from_utf8_lossy(&venv.stderr));
    let python = String::from_utf8(venv.stdout).unwrap().trim().to_string();
    let alice = Agent::new();
    let _node = Node::start(&alice, &alice.id, &[]);
    let node: Value = serde_json::from_str(&std::fs::read_to_string(alice.home.join("node.json")).unwrap()).unwrap();
    let run = Command::new(python)
        .arg(root.join("tests/mcp_python/sampling.py"))
        .env("AGORA_BIN", env!("CARGO_BIN_EXE_agora"))
        .env("ALICE_HOME", &alice.home)
        .env("AGORA_MCP_URL", format!("http://{}/mcp?tools=reasoning,tasks", node["control"].as_str().unwrap()))
        .env("AGORA_TOKEN", node["token"].as_str().unwrap())
        .env_remove("AGORA_HOME")
        .output()
        .expect("python runs");
    let (out, err) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    println!("{out}");
    assert!(run.status.success(), "the Python SDK's client failed:\n{out}\n{err}");
    assert!(out.contains("sampling: passed"), "{out}");
    // What the client's model classified is recorded and audited on the node.
    let audits = actions(&alice.home, &["--operation", "classify"]);
    assert_eq!(audits.iter().map(|a| a["name"].as_str().unwrap()).collect::<Vec<_>>(), ["sampling/scripted-model", "sampling/scripted-model"]);
}
