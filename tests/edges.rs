//! The node's edges, with real `agora` processes on 127.0.0.1: the local
//! control plane (the page's session is not the token and opens only the
//! page's reads; `agora open` puts no secret in any command line; floods of
//! half-sent requests and idle connections cost bounded descriptors and
//! memory while the command line keeps being answered) and the network
//! (no address a peer names is dialled; connections from one address are
//! capped). The live page in a real browser, and a server on another port
//! of 127.0.0.1 that never receives the page's cookie, are in `page.rs`.

mod support;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

fn http() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).proxy(None).max_redirects(0).timeout_global(Some(Duration::from_secs(10))).build().new_agent()
}

fn node_file(home: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(home.join("node.json")).unwrap()).unwrap()
}

fn write_config(home: &Path, node_section: &str) {
    std::fs::write(home.join("agora.toml"), format!("[node]\n{node_section}\n")).unwrap();
}

/// The code in a login URL (`http://.../#code=<hex>`).
fn code_of(url: &str) -> String {
    url.split("#code=").nth(1).expect("a login code in the URL").to_string()
}

/// `POST /v1/page/session` with `code`: the status, and the Set-Cookie header.
fn log_in(control: &str, code: &str) -> (u16, Option<String>, Option<String>) {
    let response = http()
        .post(format!("http://{control}/v1/page/session"))
        .header("content-type", "application/x-www-form-urlencoded")
        .send(format!("code={code}"))
        .unwrap();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    (response.status().as_u16(), header("set-cookie"), header("location"))
}

fn post_status(url: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    let mut request = http().post(url);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.send(body.to_string()).unwrap().status().as_u16()
}

#[test]
fn the_page_session_is_not_the_token_and_opens_only_the_pages_reads() {
    let a = Agent::new();
    let node = Node::start(&a, &a.id, &[]);
    let file = node_file(&a.home);
    let (control, token) = (file["control"].as_str().unwrap().to_string(), file["token"].as_str().unwrap().to_string());
    let port = control.rsplit(':').next().unwrap().to_string();
    let seq_before = node.max_seq(&a.id);

    let opened = json(&a.home, &["open", "--no-browser"]);
    let url = opened["url"].as_str().unwrap();
    assert!(!url.contains(&token), "{url}");
    let code = code_of(url);
    let (status, cookie, location) = log_in(&control, &code);
    assert_eq!(status, 303);
    let cookie = cookie.expect("a session cookie");
    let location = location.expect("sent on to the page");
    let parts: Vec<&str> = cookie.split("; ").collect();
    let (name, session) = parts[0].split_once('=').unwrap();
    assert_eq!(name, format!("agora_page_{port}"), "bound to the node's port: {cookie}");
    assert_ne!(session, token, "the cookie is not the token");
    assert!(!cookie.contains(&token));
    assert!(parts.contains(&"HttpOnly") && parts.contains(&"SameSite=Strict"), "{cookie}");
    let path = parts.iter().find_map(|p| p.strip_prefix("Path=")).expect("a path");
    assert_eq!(path, location, "the page lives under the cookie's path");
    let hex = path.strip_prefix("/page/").and_then(|p| p.strip_suffix('/')).unwrap();
    assert!(hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()), "a path no other server can guess: {path}");
    // A code is good once.
    assert_eq!(log_in(&control, &code).0, 401, "the code was used");
    assert_eq!(log_in(&control, "00112233").0, 401);

    let with_cookie = [("cookie", parts[0]), ("content-type", "application/json")];
    let base = format!("http://{control}{}", path.trim_end_matches('/'));
    // The page's reads, under its path.
    assert_eq!(post_status(&format!("{base}/v1/ops/identity"), &with_cookie, "{}"), 200);
    assert_eq!(post_status(&format!("{base}/v1/ops/graph"), &with_cookie, "{}"), 200);
    // No write with the session, under the page's path or anywhere else.
    let propose = r#"{"text":"written with the page's cookie"}"#;
    assert_eq!(post_status(&format!("{base}/v1/ops/propose"), &with_cookie, propose), 403);
    assert_eq!(post_status(&format!("{base}/v1/ops/import"), &with_cookie, r#"{"pack":""}"#), 403);
    assert_eq!(post_status(&format!("http://{control}/v1/ops/propose"), &with_cookie, propose), 401);
    let as_bearer = format!("Bearer {session}");
    assert_eq!(
        post_status(&format!("http://{control}/v1/ops/propose"), &[("authorization", as_bearer.as_str()), ("content-type", "application/json")], propose),
        401
    );
    assert_eq!(post_status(&format!("http://{control}/v1/command"), &with_cookie, "{}\n"), 401);
    assert_eq!(post_status(&format!("http://{control}/mcp"), &with_cookie, "{}"), 401);
    assert_eq!(http().get(format!("http://{control}/v1/status")).header("cookie", parts[0]).call().unwrap().status().as_u16(), 401);
    // Without the session, nothing under the page's path but its files.
    assert_eq!(post_status(&format!("{base}/v1/ops/identity"), &[("content-type", "application/json")], "{}"), 401);
    assert_eq!(http().get(format!("{base}/")).call().unwrap().status().as_u16(), 200);
    // Nothing was written.
    assert_eq!(node.max_seq(&a.id), seq_before, "no entry written with the page's session");
    drop(node);
}

#[test]
fn agora_open_puts_no_secret_in_the_openers_command_line() {
    let a = Agent::new();
    let _node = Node::start(&a, &a.id, &[]);
    let file = node_file(&a.home);
    let (control, token) = (file["control"].as_str().unwrap().to_string(), file["token"].as_str().unwrap().to_string());
    // A fake browser that records the command line it was started with (as
    // any local user reads it in /proc/<pid>/cmdline) and the file it names.
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("argv");
    let opener = dir.path().join("browser");
    std::fs::write(&opener, format!("#!/bin/sh\ntr '\\0' '\\n' < /proc/$$/cmdline > {0}.tmp\nmv {0}.tmp {0}\n", record.display())).unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agora"))
        .arg("--home")
        .arg(&a.home)
        .args(["--json", "open"])
        .env_remove("AGORA_HOME")
        .env("BROWSER", &opener)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(printed["opened"], true, "{printed}");
    let argv = wait_for("the opener to record its command line", || std::fs::read_to_string(&record).ok());
    let code = code_of(printed["url"].as_str().unwrap());
    for secret in [token.as_str(), code.as_str(), "code=", "token"] {
        assert!(!argv.contains(secret), "the opener's command line holds {secret:?}: {argv}");
    }
    // What it names: the home's login file, readable by its owner only.
    let login = a.home.join("open.html");
    assert!(argv.lines().any(|l| Path::new(l) == login), "{argv}");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&login).unwrap().permissions()) & 0o777;
    assert_eq!(mode, 0o600);
    let form = std::fs::read_to_string(&login).unwrap();
    assert!(form.contains(&code) && !form.contains(&token), "the file holds the one-time code, not the token");
    assert!(form.contains(&format!("action=\"http://{control}/v1/page/session\"")), "{form}");
    // The code logs in once; a copy left in the file is dead after.
    assert_eq!(log_in(&control, &code).0, 303);
    assert_eq!(log_in(&control, &code).0, 401);
}

/// Open file descriptors of a process.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// Has the other side closed this socket (read returns end of stream or an error)?
fn closed(socket: &mut TcpStream) -> bool {
    socket.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let gone = loop {
        match socket.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    socket.set_nonblocking(false).unwrap();
    gone
}

#[test]
fn floods_of_half_sent_requests_and_idle_connections_cost_bounded_descriptors_and_memory() {
    const CAP: usize = 32;
    const EACH: usize = 2_000;
    let a = Agent::new();
    write_config(&a.home, &format!("control_connections_max = {CAP}"));
    let node = Node::start(&a, &a.id, &[]);
    let pid = node.child.id();
    let control = node_file(&a.home)["control"].as_str().unwrap().to_string();
    json(&a.home, &["propose", "before the flood"]);
    let seq_before = node.max_seq(&a.id);
    let (fds_before, rss_before) = (descriptors(pid), rss_kib(pid));

    // Idle connections, and requests whose headers never end (each with
    // 16 KiB of header already sent).
    let mut held: Vec<TcpStream> = Vec::with_capacity(2 * EACH);
    let padding = "a".repeat(16 << 10);
    for i in 0..2 * EACH {
        let Ok(mut socket) = TcpStream::connect(&control) else { continue };
        if i % 2 == 1 {
            let _ = write!(socket, "POST /v1/command HTTP/1.1\r\nHost: {control}\r\nContent-Length: 10\r\nX-Padding: {padding}");
        }
        held.push(socket);
    }
    // While they are held, the command line is answered at once.
    for i in 0..3 {
        let t = Instant::now();
        let status = json(&a.home, &["node", "status"]);
        let took_status = t.elapsed();
        let t = Instant::now();
        json(&a.home, &["propose", &format!("during the flood {i}")]);
        let took_write = t.elapsed();
        println!("during the flood: node status {took_status:?}, a write {took_write:?}; control {}", status["control"]);
        assert!(took_status < Duration::from_secs(1) && took_write < Duration::from_secs(1), "status {took_status:?}, write {took_write:?}");
    }
    let (fds, rss) = (descriptors(pid), rss_kib(pid));
    println!("descriptors {fds_before} -> {fds}, RSS {rss_before} KiB -> {rss} KiB, with {} connections held", held.len());
    assert!(fds <= fds_before + CAP + 8, "descriptors bounded by the cap: {fds_before} -> {fds}");
    assert!(rss < rss_before + 64 * 1024, "memory bounded: {rss_before} KiB -> {rss} KiB");
    let displaced = held.iter_mut().map(closed).filter(|gone| *gone).count();
    assert!(displaced >= held.len() - CAP, "at most the cap stay open: {displaced} of {} closed", held.len());
    let status = node.status();
    assert!(status["control"]["displaced"].as_u64().unwrap() >= (2 * EACH - CAP) as u64, "{}", status["control"]);

    // What the flood left open is closed by the header-read timeout (10 s).
    let t = Instant::now();
    let mut fresh = vec![TcpStream::connect(&control).unwrap(), TcpStream::connect(&control).unwrap()];
    let _ = write!(fresh[1], "GET /v1/status HTTP/1.1\r\nHost: {control}\r\n");
    held.append(&mut fresh);
    while !held.iter_mut().all(closed) {
        assert!(t.elapsed() < Duration::from_secs(15), "an idle or half-sent connection outlived the header-read timeout");
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("every held connection closed within {:?}", t.elapsed());
    assert_eq!(node.max_seq(&a.id), seq_before + 3, "every write during the flood was stored");
}

mod attacker {
    //! A libp2p peer (identify and ping only) that names a foreign address
    //! as its own, and goes away and comes back.
    use futures::StreamExt;
    use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
    use libp2p::{Multiaddr, identify, noise, ping, tcp, yamux};
    use std::time::Duration;

    #[derive(NetworkBehaviour)]
    pub struct Liar {
        identify: identify::Behaviour,
        ping: ping::Behaviour,
    }

    /// Listen on `listen`, announce `foreign` in identify, and close every
    /// connection a second after it was identified, for `run_for`. Returns
    /// how many times the node identified us.
    pub fn run(key: libp2p::identity::Keypair, listen: Multiaddr, foreign: Multiaddr, run_for: Duration) -> usize {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
                .with_tokio()
                .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
                .unwrap()
                .with_behaviour(|k| Liar {
                    identify: identify::Behaviour::new(identify::Config::new("/agora/1.0.0".into(), k.public()).with_push_listen_addr_updates(true)),
                    ping: ping::Behaviour::default(),
                })
                .unwrap()
                .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(30)))
                .build();
            swarm.listen_on(listen).unwrap();
            swarm.add_external_address(foreign);
            let deadline = tokio::time::Instant::now() + run_for;
            let mut identified = 0;
            let mut to_close: Vec<(tokio::time::Instant, libp2p::PeerId)> = Vec::new();
            loop {
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return identified;
                }
                to_close.retain(|(at, peer)| {
                    if *at <= now {
                        let _ = swarm.disconnect_peer_id(*peer);
                        false
                    } else {
                        true
                    }
                });
                let event = match tokio::time::timeout(Duration::from_millis(100), swarm.select_next_some()).await {
                    Ok(e) => e,
                    Err(_) => continue,
                };
                if let SwarmEvent::Behaviour(LiarEvent::Identify(identify::Event::Sent { peer_id, .. })) = event {
                    identified += 1;
                    to_close.push((now + Duration::from_secs(1), peer_id));
                }
            }
        })
    }
}

#[test]
fn a_node_never_dials_an_address_a_peer_names() {
    // The host and port the peer names: anything connecting is counted.
    let victim = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let victim_addr = victim.local_addr().unwrap();
    victim.set_nonblocking(true).unwrap();
    let liar_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let key = libp2p::identity::Keypair::generate_ed25519();
    let liar = format!("/ip4/127.0.0.1/tcp/{liar_port}/p2p/{}", key.public().to_peer_id());
    let foreign: libp2p::Multiaddr = format!("/ip4/127.0.0.1/tcp/{}", victim_addr.port()).parse().unwrap();
    let listen: libp2p::Multiaddr = format!("/ip4/127.0.0.1/tcp/{liar_port}").parse().unwrap();
    let liar_thread = std::thread::spawn(move || attacker::run(key, listen, foreign, Duration::from_secs(12)));
    // The node is told of the liar (its operator's bootstrap): it dials it,
    // hears the foreign address, loses the connection, dials again.
    std::thread::sleep(Duration::from_millis(300));
    let a = Agent::new();
    let node = Node::start(&a, &a.id, &[&liar]);
    let identified = liar_thread.join().unwrap();
    assert!(identified >= 2, "the node connected to the liar and identified it again after it went away: {identified}");
    let mut dialled = 0;
    while victim.accept().is_ok() {
        dialled += 1;
    }
    assert_eq!(dialled, 0, "the node connected to the address a peer named");
    drop(node);
}

#[test]
fn connections_from_one_address_are_capped() {
    const PER_ADDRESS: u32 = 4;
    let (a, b) = (Agent::new(), Agent::new());
    admit(&a, &[&b]);
    write_config(&a.home, &format!("connections_per_ip_max = {PER_ADDRESS}"));
    let node = Node::start(&a, &a.id, &[]);
    let tcp_addr = {
        let parts: Vec<&str> = node.addr.split('/').collect();
        format!("{}:{}", parts[2], parts[4])
    };
    // Forty connections from 127.0.0.1 that never finish their handshake
    // (as many identities as an attacker cares to make cost it no more).
    let mut flood: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(&tcp_addr).unwrap()).collect();
    let status = wait_for("the refusals to show", || {
        let s = node.status();
        (s["rejected"]["connections_refused_per_address"].as_u64().unwrap_or(0) >= 40 - PER_ADDRESS as u64).then_some(s)
    });
    std::thread::sleep(Duration::from_millis(300));
    let open = flood.iter_mut().map(closed).filter(|gone| !*gone).count();
    println!("of 40 connections from one address, {open} stay open; {}", status["rejected"]["connections_refused_per_address"]);
    assert!(open <= PER_ADDRESS as usize, "{open} connections from one address stay open");
    // Gone, their places are free: an honest peer on the same host joins.
    drop(flood);
    let node_b = Node::start(&b, &a.id, &[&node.addr]);
    let id = json(&b.home, &["propose", "after the flood"])["id"].as_str().unwrap().to_string();
    wait_for("B's entry to reach A", || node.holds(&id).then_some(()));
    drop(node_b);
}
