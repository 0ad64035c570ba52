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
    assert_eq!(json(h, &["status", c["id"].as_str().unwrap()])["author"], bob_id.as_str());
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
}
