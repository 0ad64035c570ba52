//! One home, many agents: the keyring (`agora agent new|list|show`), each
//! named agent with its own key file (0600) and chain, admitted on its own,
//! and every move made as one with `--as NAME`, by hand and through a
//! running node.

mod support;

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use support::*;

fn err_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_home_hosts_named_agents_each_with_its_own_key_and_chain() {
    let home = Agent::new();
    let h = &home.home;
    let alice = json(h, &["agent", "new", "alice"]);
    let alice_id = alice["id"].as_str().unwrap().to_string();
    assert_ne!(alice_id, home.id);
    assert_eq!(alice["admitted"], false, "{alice}");
    assert_eq!(mode(&h.join("agents")), 0o700);
    assert_eq!(mode(&h.join("agents/alice.key")), 0o600);
    let bob_id = json(h, &["agent", "new", "bob"])["id"].as_str().unwrap().to_string();
    // A key is never overwritten; a name is a file name and nothing else.
    for (args, says) in [
        (vec!["agent", "new", "alice"], "exists already"),
        (vec!["agent", "new", "self"], "home's own agent"),
        (vec!["agent", "new", "../x"], "not an agent name"),
        (vec!["agent", "new", ".hidden"], "not an agent name"),
        (vec!["--as", "carol", "propose", "x"], "agora agent new carol"),
    ] {
        let out = agora(h, &args);
        assert!(!out.status.success() && err_of(&out).contains(says), "{args:?}: {}", err_of(&out));
    }
    assert_eq!(json(h, &["agent", "show", "alice"])["id"], alice_id.as_str());
    // The founder (the home's own agent) admits each by name; an agent is
    // no founder.
    let out = agora(h, &["--as", "alice", "admit", "bob"]);
    assert!(!out.status.success() && err_of(&out).contains("only the workspace founder"), "{}", err_of(&out));
    json(h, &["admit", "alice"]);
    json(h, &["admit", "bob", "Bob the auditor\nsecond line ignored"]);
    // Every move takes the agent: the entry is signed by alice's key, in
    // alice's chain.
    let p = json(h, &["--as", "alice", "propose", "Ship the keyring"]);
    assert_eq!(p["seq"], 1, "alice's chain starts at 1: {p}");
    let c = json(h, &["--as", "bob", "contradict", p["id"].as_str().unwrap(), "Not before the audit"]);
    let status = json(h, &["status", p["id"].as_str().unwrap()]);
    assert_eq!(status["author"], alice_id.as_str(), "{status}");
    assert_eq!(status["status"], "contested", "{status}");
    assert_eq!(json(h, &["--as", "bob", "id"])["agent"], bob_id.as_str());
    let said = json(h, &["status", c["id"].as_str().unwrap()]);
    assert_eq!((said["author"].as_str(), said["author_name"].as_str()), (Some(bob_id.as_str()), Some("Bob the auditor")), "{said}");
    let roster = json(h, &["roster"]);
    assert!(roster["members"].as_array().unwrap().iter().any(|m| m["agent"] == alice_id.as_str() && m["display_name"] == "alice"), "{roster}");
    let list = json(h, &["agent", "list"]);
    let agents = list["agents"].as_array().unwrap();
    let row = |name: &str| agents.iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("{name}: {list}")).clone();
    assert_eq!(agents[0]["name"], "self", "{list}");
    assert_eq!((row("self")["founder"].clone(), row("self")["id"].clone()), (Value::Bool(true), Value::from(home.id.as_str())));
    assert_eq!(
        (row("alice")["admitted"].clone(), row("alice")["display_name"].clone(), row("alice")["max_seq"].clone()),
        (true.into(), "alice".into(), 1.into())
    );
    assert_eq!(row("bob")["display_name"], "Bob the auditor", "the first line of the admission's note");
    // Each chain verifies under its own key.
    let verified = json(h, &["verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    for id in [&alice_id, &bob_id] {
        let log = json(h, &["log", "--author", id]);
        assert!(log.to_string().contains(id), "{log}");
    }
}

#[test]
fn named_agents_act_through_a_running_node() {
    let founder = Agent::new();
    let h = &founder.home;
    let carol_id = json(h, &["agent", "new", "carol"])["id"].as_str().unwrap().to_string();
    json(h, &["admit", "carol", "Carol"]);
    let node = Node::start(&founder, &founder.id, &[]);
    // A name created while the node runs is usable at once.
    let dave_id = json(h, &["agent", "new", "dave"])["id"].as_str().unwrap().to_string();
    json(h, &["admit", "dave"]);
    let p = json(h, &["--as", "carol", "propose", "One node, many agents"]);
    let s = json(h, &["--as", "dave", "support", p["id"].as_str().unwrap(), "Fewer processes to run"]);
    assert!(node.holds(p["id"].as_str().unwrap()) && node.holds(s["id"].as_str().unwrap()));
    assert_eq!(json(h, &["status", p["id"].as_str().unwrap()])["author"], carol_id.as_str());
    assert_eq!(json(h, &["status", s["id"].as_str().unwrap()])["author"], dave_id.as_str());
    assert_eq!(node.max_seq(&carol_id), 1);
    let status = node.status();
    assert!(status.to_string().contains(&carol_id) && status.to_string().contains(&dave_id), "{status}");
    let carol_row = status["frontier"].as_array().unwrap().iter().find(|f| f["author"] == carol_id.as_str()).cloned();
    assert_eq!(carol_row.map(|r| r["name"].clone()), Some(Value::from("Carol")), "the node's status names its agents: {status}");
    // The JSON API takes the agent in a header; an agent the keyring does
    // not hold is a 404 naming its rule, on the API and at /mcp/agents/NAME.
    let (control, token) = endpoint(h);
    let post = |agent: Option<&str>, op: &str, body: Value| {
        let mut request = ureq::post(format!("http://{control}/v1/ops/{op}")).header("authorization", format!("Bearer {token}"));
        if let Some(agent) = agent {
            request = request.header("agora-agent", agent);
        }
        let mut response = request.config().http_status_as_error(false).build().header("content-type", "application/json").send(body.to_string()).unwrap();
        (response.status().as_u16(), serde_json::from_str::<Value>(&response.body_mut().read_to_string().unwrap()).unwrap())
    };
    let (code, moved) = post(Some("dave"), "propose", serde_json::json!({ "text": "Through the API as dave" }));
    assert_eq!(code, 200, "{moved}");
    assert_eq!(json(h, &["status", moved["id"].as_str().unwrap()])["author"], dave_id.as_str());
    assert_eq!(post(None, "identity", serde_json::json!({})).1["agent"], founder.id.as_str());
    let (code, refused) = post(Some("nobody"), "propose", serde_json::json!({ "text": "x" }));
    assert_eq!((code, refused["rule"].as_str()), (404, Some("unknown_agent")), "{refused}");
    let mut response = ureq::post(format!("http://{control}/mcp/agents/nobody"))
        .header("authorization", format!("Bearer {token}"))
        .config()
        .http_status_as_error(false)
        .build()
        .header("content-type", "application/json")
        .send("{}")
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(body["rule"], "unknown_agent", "{body}");
}

/// `agora mcp --as NAME` over stdio acts as the named agent, through the
/// home's running node or on its store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agora_mcp_as_a_named_agent() {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let founder = Agent::new();
    let erin_id = json(&founder.home, &["agent", "new", "erin"])["id"].as_str().unwrap().to_string();
    json(&founder.home, &["admit", "erin"]);
    for running in [false, true] {
        let _node = running.then(|| Node::start(&founder, &founder.id, &[]));
        let home = founder.home.clone();
        let transport = TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_agora")).configure(|c| {
            c.arg("--home").arg(&home).arg("mcp").arg("--as").arg("erin").env_remove("AGORA_HOME");
        }))
        .unwrap();
        let client = ().serve(transport).await.expect("initialize");
        assert_eq!(call(&client, "identity", serde_json::json!({})).await["agent"], erin_id.as_str(), "node running: {running}");
        let p = call(&client, "propose", serde_json::json!({ "text": format!("erin, node running: {running}") })).await;
        assert_eq!(json(&founder.home, &["status", p["id"].as_str().unwrap()])["author"], erin_id.as_str());
        client.cancel().await.unwrap();
    }
}

/// The node's control address and token, from its home's node file.
fn endpoint(home: &std::path::Path) -> (String, String) {
    let node: Value = serde_json::from_str(&std::fs::read_to_string(home.join("node.json")).unwrap()).unwrap();
    (node["control"].as_str().unwrap().to_string(), node["token"].as_str().unwrap().to_string())
}

type Client = rmcp::service::RunningService<rmcp::service::RoleClient, ()>;

/// An MCP session as the named agent `name` of the node at `control`.
async fn session_as(control: &str, token: &str, name: &str) -> Client {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{control}/mcp/agents/{name}")).auth_header(token.to_string());
    ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap_or_else(|e| panic!("{name}: initialize: {e}"))
}

async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let args = args.as_object().cloned().unwrap_or_default();
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"));
    let value = r.structured_content.clone().unwrap_or(Value::Null);
    assert_ne!(r.is_error, Some(true), "{tool}: {value}");
    value
}

/// 20 agents on one node and 5 on each of two more debate through MCP, one
/// session per agent (`/mcp/agents/NAME`): every move is signed by its
/// agent's own key in its own chain, every node computes the same view, and
/// every chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_agents_on_three_nodes_debate_through_mcp() {
    let homes = [Agent::new(), Agent::new(), Agent::new()];
    let founder = homes[0].id.clone();
    admit(&homes[0], &[&homes[1], &homes[2]]);
    let mut agents: Vec<(usize, String, String)> = Vec::new();
    for (h, count) in [(0, 20), (1, 5), (2, 5)] {
        for i in 0..count {
            let name = format!("n{h}-agent{i:02}");
            let id = json(&homes[h].home, &["agent", "new", &name])["id"].as_str().unwrap().to_string();
            ok(&homes[0].home, &["admit", &id, &format!("Agent {i} of node {h}")]);
            agents.push((h, name, id));
        }
    }
    let n0 = Node::start(&homes[0], &founder, &[]);
    let n1 = Node::start(&homes[1], &founder, &[&n0.addr]);
    let n2 = Node::start(&homes[2], &founder, &[&n0.addr]);
    let nodes = [&n0, &n1, &n2];
    let endpoints: Vec<(String, String)> = homes.iter().map(|h| endpoint(&h.home)).collect();
    let mut sessions = Vec::new();
    for (h, name, id) in &agents {
        let client = session_as(&endpoints[*h].0, &endpoints[*h].1, name).await;
        // The session acts as its agent.
        assert_eq!(call(&client, "identity", serde_json::json!({})).await["agent"], id.as_str(), "{name}");
        sessions.push(client);
    }
    // Each agent proposes; then each answers the next agent's proposition
    // (a contradiction, or a support), once its node holds it.
    let mut propositions = Vec::new();
    for (k, client) in sessions.iter().enumerate() {
        let p = call(client, "propose", serde_json::json!({ "text": format!("Position {k}: ship in week {}", k % 4 + 1) })).await;
        propositions.push(p["id"].as_str().unwrap().to_string());
    }
    let mut answers = Vec::new();
    for (k, client) in sessions.iter().enumerate() {
        let target = &propositions[(k + 1) % sessions.len()];
        wait_for("the node to hold the next proposition", || nodes[agents[k].0].holds(target).then_some(()));
        let tool = if k % 2 == 0 { "contradict" } else { "support" };
        let moved = call(client, tool, serde_json::json!({ "target": target, "text": format!("Answer of agent {k}") })).await;
        answers.push(moved["id"].as_str().unwrap().to_string());
    }
    // The first agent accepts the second's chain through its proposition and
    // disputes its answer with a counter-claim.
    let (second, answer) = (&agents[1].2, &answers[1]);
    wait_for("the first node to hold the second agent's answer", || n0.holds(answer).then_some(()));
    call(&sessions[0], "accept", serde_json::json!({ "author": second, "up_to": "1" })).await;
    call(&sessions[0], "dispute", serde_json::json!({ "target": answer, "reason": "Week 2 is too early", "counter": "Week 3" })).await;
    // Every node holds every move and computes the same merged view.
    let last: Vec<&String> = propositions.iter().chain(&answers).collect();
    let hash = wait_for("every node to hold every move and agree on the view", || {
        if !last.iter().all(|id| nodes.iter().all(|n| n.holds(id))) {
            return None;
        }
        let hashes: Vec<Value> = homes.iter().map(|h| json(&h.home, &["view-hash"])["view_hash"].clone()).collect();
        hashes.iter().all(|x| *x == hashes[0]).then(|| hashes[0].clone())
    });
    assert_eq!(hash.as_str().map(str::len), Some(64));
    // Each move is its agent's: the author of each proposition is the agent
    // whose session made it, and every chain verifies under its own key.
    for (k, p) in propositions.iter().enumerate() {
        assert_eq!(json(&homes[2].home, &["status", p])["author"], agents[k].2.as_str());
    }
    let disputed = json(&homes[1].home, &["status", answer]);
    assert_eq!(disputed["disputed_by"][0]["counter_claim"], "Week 3", "{disputed}");
    assert_eq!(disputed["disputed_by"][0]["by_name"], "Agent 0 of node 0", "{disputed}");
    assert_eq!(disputed["author_name"], "Agent 1 of node 0", "{disputed}");
    for h in &homes {
        let verified = json(&h.home, &["verify"]);
        assert_eq!(verified["ok"], true, "{verified}");
        let authors = json(&h.home, &["authors"]);
        assert!(authors.to_string().matches("\"author\"").count() >= 31, "the founder and 30 agents at least: {authors}");
    }
    for client in sessions {
        client.cancel().await.expect("shut down");
    }
}
