//! A stable endpoint: the control channel's address and token stay the same
//! across node runs, so an HTTP MCP client's configuration (the URL of
//! `/mcp`, the `Authorization` header) does too. Real `agora node run`
//! processes on 127.0.0.1:
//! - the token is a 0600 file in the home, unchanged by a restart, and the
//!   default address (a free port picked at the first start) is kept;
//! - `--control`, `AGORA_CONTROL` and `control` in agora.toml each set the
//!   address, in that order of precedence;
//! - `agora token rotate` with a node running: the old token is refused at
//!   once, the new one taken, the command line keeps working;
//! - a taken port is an error that says how to choose another;
//! - a node bound to every address (0.0.0.0) with a token given as a file
//!   still needs the token on every route (the API, `/mcp`, `/metrics`, the
//!   page's code, the automerge-repo WebSocket).

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// Start a node on `agent`'s home with extra arguments and environment
/// (`AGORA_CONTROL` and `AGORA_TOKEN_FILE` are removed unless given).
fn start(agent: &Agent, extra: &[&str], env: &[(&str, &str)]) -> Node {
    let mut cmd = node_command(agent, extra, env);
    let ready = agent.home.join("ready.json");
    let mut child = cmd.spawn().expect("agora node runs");
    let addr = wait_for("the node to be ready", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("node exited early with {status}: {}", std::fs::read_to_string(agent.home.with_extension("log")).unwrap_or_default());
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&ready).ok()?).ok()?;
        Some(v["listen"][0].as_str()?.to_string())
    });
    Node { child, home: agent.home.clone(), addr }
}

fn node_command(agent: &Agent, extra: &[&str], env: &[(&str, &str)]) -> Command {
    let ready = agent.home.join("ready.json");
    let _ = std::fs::remove_file(&ready);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agora"));
    cmd.arg("--home")
        .arg(&agent.home)
        .args(["node", "run", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--workspace", WORKSPACE, "--founder", &agent.id])
        .arg("--ready-file")
        .arg(&ready)
        .args(extra)
        .env_remove("AGORA_HOME")
        .env_remove("AGORA_CONTROL")
        .env_remove("AGORA_TOKEN_FILE")
        .env("AGORA_LOG", "agora=debug,warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(agent.home.with_extension("log")).unwrap()));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A node that must refuse to start: its standard error.
fn start_fails(agent: &Agent, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = node_command(agent, extra, env);
    let mut child = cmd.stderr(Stdio::piped()).spawn().expect("agora node runs");
    let status = wait_for("the node to exit", || child.try_wait().ok().flatten());
    assert!(!status.success(), "the node started");
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    err
}

fn node_file(home: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(home.join("node.json")).unwrap()).unwrap()
}

fn control_of(home: &Path) -> String {
    node_file(home)["control"].as_str().unwrap().to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 request on a new connection: the status and the body (the
/// head only for a switch of protocols).
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("connection")) {
        request.push_str("connection: close\r\n");
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status: u16 = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{method} {path}: {status_line:?}"));
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse::<usize>().ok();
        }
    }
    if status == 101 {
        return (status, String::new());
    }
    let mut bytes = Vec::new();
    match length {
        Some(n) => {
            bytes.resize(n, 0);
            reader.read_exact(&mut bytes).unwrap();
        }
        None => {
            let _ = reader.read_to_end(&mut bytes);
        }
    }
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn status_with(addr: &str, token: &str) -> u16 {
    http(addr, "GET", "/v1/status", &[("authorization", &format!("Bearer {token}"))], "").0
}

#[test]
fn the_token_is_a_private_file_and_the_endpoint_survives_a_restart() {
    let a = Agent::new();
    let mut node = start(&a, &[], &[]);
    let (control, token) = (control_of(&a.home), node_file(&a.home)["token"].as_str().unwrap().to_string());
    let file = a.home.join("control.token");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "the token file is the owner's alone");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    assert!(control.starts_with("127.0.0.1:") && !control.ends_with(":0"), "{control}");
    assert_eq!(std::fs::read_to_string(a.home.join("control.address")).unwrap().trim(), control, "the picked port is kept");
    assert_eq!(ok(&a.home, &["token", "show"]).trim(), token);
    assert_eq!(status_with(&control, &token), 200);
    node.terminate();
    let _again = start(&a, &[], &[]);
    assert_eq!(control_of(&a.home), control, "the control address survives a restart");
    assert_eq!(node_file(&a.home)["token"], token.as_str(), "the token survives a restart");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    assert_eq!(status_with(&control, &token), 200, "a client's configuration still works");
    json(&a.home, &["propose", "through the restarted node"]);
}

#[test]
fn the_control_address_is_set_by_flag_environment_or_configuration_in_that_order() {
    let a = Agent::new();
    let (flag, env, file) = (free_port(), free_port(), free_port());
    std::fs::write(a.home.join("agora.toml"), format!("[node]\ncontrol = \"127.0.0.1:{file}\"\n")).unwrap();
    let env_value = format!("127.0.0.1:{env}");
    for (extra, environment, expected, setting) in [
        (
            vec!["--control".to_string(), format!("127.0.0.1:{flag}")],
            vec![("AGORA_CONTROL", env_value.as_str())],
            flag,
            "the flag, over the environment and the file",
        ),
        (vec![], vec![("AGORA_CONTROL", env_value.as_str())], env, "the environment, over the file"),
        (vec![], vec![], file, "the file"),
    ] {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut node = start(&a, &extra, &environment);
        assert_eq!(control_of(&a.home), format!("127.0.0.1:{expected}"), "{setting}");
        let token = node_file(&a.home)["token"].as_str().unwrap().to_string();
        assert_eq!(status_with(&control_of(&a.home), &token), 200, "{setting}");
        node.terminate();
    }
    assert!(!a.home.join("control.address").exists(), "a set address is not kept as the default");
    std::fs::remove_file(a.home.join("agora.toml")).unwrap();
    let mut node = start(&a, &[], &[]);
    let default = control_of(&a.home);
    assert!(default.starts_with("127.0.0.1:"), "{default}");
    node.terminate();
    let _node = start(&a, &[], &[]);
    assert_eq!(control_of(&a.home), default, "with no setting, the port this home used last");
}

#[test]
fn rotating_the_token_refuses_the_old_one_and_takes_the_new_one_at_once() {
    let a = Agent::new();
    let node = start(&a, &[], &[]);
    let pid = node.child.id();
    let control = control_of(&a.home);
    let old = node_file(&a.home)["token"].as_str().unwrap().to_string();
    assert_eq!(status_with(&control, &old), 200);
    let rotated = json(&a.home, &["token", "rotate"]);
    assert_eq!(rotated["node"], pid, "the running node took it: {rotated}");
    let new = ok(&a.home, &["token", "show"]).trim().to_string();
    assert_ne!(new, old);
    assert_eq!(status_with(&control, &old), 401, "the old token is refused at once");
    assert_eq!(status_with(&control, &new), 200, "the new token is taken without a restart");
    let mcp = http(&control, "POST", "/mcp", &[("authorization", &format!("Bearer {old}")), ("content-type", "application/json")], "{}").0;
    assert_eq!(mcp, 401, "MCP too");
    assert_eq!(node_file(&a.home)["token"], new.as_str(), "node.json follows");
    assert_eq!(std::fs::metadata(a.home.join("control.token")).unwrap().permissions().mode() & 0o777, 0o600);
    // The command line goes on through the same node.
    json(&a.home, &["propose", "after the rotation"]);
    assert_eq!(node_file(&a.home)["pid"], pid);
    // A token replaced by hand (an operator's secret) is taken the same way.
    let by_hand = "0123456789abcdef".repeat(4);
    std::fs::write(a.home.join("control.token.tmp"), format!("{by_hand}\n")).unwrap();
    std::fs::rename(a.home.join("control.token.tmp"), a.home.join("control.token")).unwrap();
    assert_eq!(status_with(&control, &new), 401);
    assert_eq!(status_with(&control, &by_hand), 200);
    json(&a.home, &["propose", "after a replacement by hand"]);
}

#[test]
fn a_taken_control_port_is_an_error_that_says_how_to_choose_another() {
    let a = Agent::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = start_fails(&a, &["--control", &addr], &[]);
    assert!(err.contains(&format!("the control address {addr} (--control) is taken by another process")), "{err}");
    assert!(err.contains("--control ADDR:PORT") && err.contains("AGORA_CONTROL") && err.contains("agora.toml"), "{err}");
    // The port kept by the home, taken meanwhile: the endpoint does not move on its own.
    std::fs::write(a.home.join("control.address"), format!("{addr}\n")).unwrap();
    let err = start_fails(&a, &[], &[]);
    assert!(err.contains("is taken by another process") && err.contains("control.address to pick a new free port"), "{err}");
    assert!(!a.home.join("node.json").exists());
    drop(taken);
    let _node = start(&a, &[], &[]);
    assert_eq!(control_of(&a.home), addr, "once free, the kept port is used");
}

#[test]
fn a_node_bound_beyond_loopback_with_a_given_token_file_needs_the_token_on_every_route() {
    let a = Agent::new();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("agora-token");
    let token = "5ecre7-t0ken_".repeat(4);
    std::fs::write(&secret, format!("{token}\n")).unwrap();
    let port = free_port();
    let bind = format!("0.0.0.0:{port}");
    let _node = start(&a, &["--control", &bind], &[("AGORA_TOKEN_FILE", secret.to_str().unwrap())]);
    let control = control_of(&a.home);
    assert_eq!(control, format!("127.0.0.1:{port}"), "node.json names an address a local client dials");
    assert!(!a.home.join("control.token").exists(), "the given file is used, the home makes none");
    assert_eq!(node_file(&a.home)["token"], token.as_str());
    let bearer = format!("Bearer {token}");
    let websocket = [("upgrade", "websocket"), ("connection", "upgrade"), ("sec-websocket-version", "13"), ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")];
    for (method, path) in [
        ("GET", "/v1/status"),
        ("GET", "/metrics"),
        ("GET", "/v1/memory"),
        ("POST", "/v1/ops/orient"),
        ("POST", "/mcp"),
        ("POST", "/v1/page/code"),
        ("GET", "/v1/automerge/url"),
        ("GET", "/v1/events"),
    ] {
        let (status, body) = http(&control, method, path, &[("content-type", "application/json")], "{}");
        assert_eq!(status, 401, "{method} {path} without the token: {body}");
        assert_eq!(http(&control, method, path, &[("authorization", "Bearer wrong")], "").0, 401, "{method} {path} with a wrong token");
    }
    assert_eq!(http(&control, "GET", "/v1/automerge/repo", &websocket, "").0, 401, "the WebSocket without the token");
    let mut with = websocket.to_vec();
    with.push(("authorization", &bearer));
    assert_eq!(http(&control, "GET", "/v1/automerge/repo", &with, "").0, 101, "the WebSocket with it");
    let (status, body) = http(
        &control,
        "POST",
        "/v1/ops/propose",
        &[("authorization", &bearer), ("content-type", "application/json")],
        r#"{"text":"over the published endpoint"}"#,
    );
    assert_eq!(status, 200, "{body}");
    // The page: its login page is open, a code needs the token, a session the code.
    assert_eq!(http(&control, "GET", "/", &[], "").0, 200);
    let (status, body) = http(&control, "POST", "/v1/page/code", &[("authorization", &bearer)], "");
    assert_eq!(status, 200, "{body}");
    let code: Value = serde_json::from_str(&body).unwrap();
    let (status, _) = http(
        &control,
        "POST",
        "/v1/page/session",
        &[("content-type", "application/x-www-form-urlencoded")],
        &format!("code={}", code["code"].as_str().unwrap()),
    );
    assert_eq!(status, 303);
    assert_eq!(ok(&a.home, &["token", "show"]).trim(), token, "`token show` reads the file the node reads");
    let started = Instant::now();
    json(&a.home, &["propose", "the command line through a node bound to every address"]);
    assert!(started.elapsed() < Duration::from_secs(30));
}
