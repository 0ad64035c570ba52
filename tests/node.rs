//! The node daemon with real processes and real sockets on 127.0.0.1: gossip,
//! late catch-up, crash and restart, a garbage-sending peer, the roster, and
//! one writer per chain.
//!
//! Every wait is on an observable condition (a node's status, a command's
//! output) in a bounded loop, never a bare sleep.

mod support;

use agora_core::AgentKey;
use std::io::Write;
use std::process::{Command, Stdio};
use support::*;

#[test]
fn an_event_appended_on_one_node_reaches_every_node() {
    let agents: Vec<Agent> = (0..4).map(|_| Agent::new()).collect();
    let founder = agents[0].id.clone();
    admit(&agents[0], &agents[1..].iter().collect::<Vec<_>>());
    // Nodes 1 and 2 bootstrap from node 0; node 3 only knows node 2, and
    // gets the rest through it (a node dials no address a peer names).
    let nodes = {
        let n0 = Node::start(&agents[0], &founder, &[]);
        let n1 = Node::start(&agents[1], &founder, &[&n0.addr]);
        let n2 = Node::start(&agents[2], &founder, &[&n0.addr]);
        let n3 = Node::start(&agents[3], &founder, &[&n2.addr]);
        vec![n0, n1, n2, n3]
    };
    wait_for("every node to have a peer and the roster", || nodes.iter().all(|n| n.peers() >= 1 && n.max_seq(&founder) == 3).then_some(()));
    // Recorded through node 1's control channel: no other process opens its store.
    let id = json(&agents[1].home, &["propose", "Usage-based pricing aligns incentives"])["id"].as_str().unwrap().to_string();
    wait_for("the proposition to reach all 4 nodes", || nodes.iter().all(|n| n.holds(&id)).then_some(()));
    // Every node derives the same status for it.
    for n in &nodes {
        assert_eq!(json(&n.home, &["status", &id])["status"], "active");
    }
    // A reply on another node reaches the author.
    let reply = json(&agents[3].home, &["contradict", &id, "Procurement needs predictable costs"])["id"].as_str().unwrap().to_string();
    wait_for("the contradiction to reach node 1", || nodes[1].holds(&reply).then_some(()));
    wait_for("node 1 to see its proposition contested", || (json(&agents[1].home, &["status", &id])["status"] == "contested").then_some(()));
}

#[test]
fn a_node_started_late_catches_up_and_a_killed_node_loses_nothing() {
    let (a, b, c) = (Agent::new(), Agent::new(), Agent::new());
    let founder = a.id.clone();
    admit(&a, &[&b, &c]);
    // Node A starts holding a 2,000-entry chain of another admitted member.
    let writer = AgentKey::from_seed([42; 32]);
    let pack_w = pack_of(&writer, 2_000, b.home.parent().unwrap());
    ok(&a.home, &["admit", &writer.agent_id().to_string(), "bulk writer"]);
    ok(&a.home, &["import", pack_w.to_str().unwrap()]);
    let node_a = Node::start(&a, &founder, &[]);
    let mut node_b = Node::start(&b, &founder, &[&node_a.addr]);
    let writer_id = writer.agent_id().to_string();
    wait_for("node B to catch up 2,000 entries", || (node_b.max_seq(&writer_id) == 2_000).then_some(()));

    // Appends acknowledged by B, then SIGKILL: every one of them survives.
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(json(&b.home, &["propose", &format!("claim {i}")])["id"].as_str().unwrap().to_string());
    }
    node_b.kill();
    // While B is down, A records more.
    let late = json(&a.home, &["ask", "What did we miss?"])["id"].as_str().unwrap().to_string();
    let node_b = Node::start(&b, &founder, &[&node_a.addr]);
    for id in &ids {
        assert!(node_b.holds(id), "entry {id} acknowledged before SIGKILL is gone");
    }
    assert_eq!(json(&b.home, &["verify"])["ok"], true, "the store verifies after a crash");
    wait_for("restarted node B to catch up what it missed", || node_b.holds(&late).then_some(()));

    // A node that starts last, bootstrapping from B only, gets everything.
    let node_c = Node::start(&c, &founder, &[&node_b.addr]);
    wait_for("late node C to catch up", || (node_c.max_seq(&writer_id) == 2_000 && node_c.holds(&late) && ids.iter().all(|id| node_c.holds(id))).then_some(()));
    let status = node_c.status();
    assert_eq!(status["rejected"]["bans"], 0, "{status}");
}

/// A peer over its message rate is answered `Wait` (when to ask again),
/// keeps away that long and still gets everything, unbanned: node A takes
/// 10 messages a second from a peer (`[replication]` in its `agora.toml`,
/// burst 4); node B syncs 24 chains from it, at least one request each.
#[test]
fn a_peer_over_its_rate_is_told_to_wait_and_still_catches_up() {
    let (a, b) = (Agent::new(), Agent::new());
    let founder = a.id.clone();
    admit(&a, &[&b]);
    let writers: Vec<AgentKey> = (0..24).map(|i| AgentKey::from_seed([100 + i; 32])).collect();
    for w in &writers {
        ok(&a.home, &["admit", &w.agent_id().to_string(), "writer"]);
        let pack = pack_of(w, 5, a.home.parent().unwrap());
        ok(&a.home, &["import", pack.to_str().unwrap()]);
    }
    let config = a.home.join("agora.toml");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&config).unwrap();
    writeln!(file, "\n[replication]\npeer_messages_per_s = 10\npeer_messages_burst = 4").unwrap();
    drop(file);
    let node_a = Node::start(&a, &founder, &[]);
    let node_b = Node::start(&b, &founder, &[&node_a.addr]);
    let ids: Vec<String> = writers.iter().map(|w| w.agent_id().to_string()).collect();
    wait_for("node B to hold all 24 chains", || ids.iter().all(|w| node_b.max_seq(w) == 5).then_some(()));
    let (sa, sb) = (node_a.status(), node_b.status());
    assert!(sa["rejected"]["rate_limited"].as_u64().unwrap() > 0, "node A never declined: {sa}");
    assert!(sb["sync"]["declined"]["wait"].as_u64().unwrap() > 0, "node B was never told to wait: {sb}");
    assert_eq!(sa["rejected"]["bans"], 0, "{sa}");
    assert_eq!(sb["rejected"]["bans"], 0, "{sb}");
}

#[test]
fn sigterm_stops_the_node_cleanly_and_commands_run_by_hand_again() {
    let a = Agent::new();
    let mut node = Node::start(&a, &a.id, &[]);
    let id = json(&a.home, &["propose", "before shutdown"])["id"].as_str().unwrap().to_string();
    assert!(a.home.join("node.json").exists());
    let status = node.terminate();
    assert!(status.success(), "exit status {status}");
    assert!(!a.home.join("node.json").exists(), "node.json is removed on a clean stop");
    // Without a node, the command line opens the store itself.
    assert_eq!(json(&a.home, &["status", &id])["status"], "active");
}

#[test]
fn only_one_process_writes_a_chain() {
    let a = Agent::new();
    let node = Node::start(&a, &a.id, &[]);
    // A second node on the same home is refused.
    let second = agora(&a.home, &["node", "run", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns"]);
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("already running"), "{}", String::from_utf8_lossy(&second.stderr));
    // Many processes record at once: all go through the node, none forks the chain.
    propose_concurrently(&a.home, 8, "concurrent");
    let authors = json(&a.home, &["authors"]);
    let me = authors.as_array().unwrap().iter().find(|x| x["author"] == a.id.as_str()).unwrap();
    assert_eq!(me["max_seq"], 8);
    assert_eq!(me["tips"].as_array().unwrap().len(), 1, "no fork: {me}");
    drop(node);
    // Without a node, concurrent processes wait for the store in turn.
    propose_concurrently(&a.home, 6, "by hand");
    let authors = json(&a.home, &["authors"]);
    let me = authors.as_array().unwrap().iter().find(|x| x["author"] == a.id.as_str()).unwrap();
    assert_eq!((me["max_seq"].as_u64(), me["tips"].as_array().unwrap().len()), (Some(14), 1), "{me}");
    assert_eq!(json(&a.home, &["verify"])["ok"], true);
}

#[test]
fn an_author_outside_the_roster_is_refused_everywhere() {
    let (a, b, mallory) = (Agent::new(), Agent::new(), Agent::new());
    let founder = a.id.clone();
    admit(&a, &[&b]);
    let node_a = Node::start(&a, &founder, &[]);
    let node_b = Node::start(&b, &founder, &[&node_a.addr]);
    let node_m = Node::start(&mallory, &founder, &[&node_a.addr, &node_b.addr]);
    let intruder = json(&mallory.home, &["propose", "let me in"])["id"].as_str().unwrap().to_string();
    let member = json(&b.home, &["propose", "members only"])["id"].as_str().unwrap().to_string();
    wait_for("the member's entry to reach A", || node_a.holds(&member).then_some(()));
    wait_for("both nodes to report refusing the intruder", || {
        [&node_a, &node_b].iter().all(|n| n.status()["rejected"]["refused_not_admitted"].as_u64().unwrap_or(0) > 0).then_some(())
    });
    // The refusal is stable: more traffic does not let it in.
    let again = json(&mallory.home, &["propose", "please"])["id"].as_str().unwrap().to_string();
    let member2 = json(&b.home, &["propose", "still members only"])["id"].as_str().unwrap().to_string();
    wait_for("the second member entry to reach A", || node_a.holds(&member2).then_some(()));
    for n in [&node_a, &node_b] {
        assert!(!n.holds(&intruder) && !n.holds(&again), "an entry by a non-member was stored");
        assert_eq!(n.max_seq(&mallory.id), 0);
    }
    drop(node_m);
}

mod garbage {
    //! A libp2p peer that speaks the sync protocol's framing but sends garbage.
    use futures::{AsyncReadExt, AsyncWriteExt, StreamExt};
    use libp2p::request_response::{self, ProtocolSupport};
    use libp2p::swarm::SwarmEvent;
    use libp2p::{Multiaddr, StreamProtocol, noise, tcp, yamux};
    use std::time::Duration;

    #[derive(Clone, Default)]
    pub struct RawCodec;

    impl request_response::Codec for RawCodec {
        type Protocol = StreamProtocol;
        type Request = Vec<u8>;
        type Response = Vec<u8>;
        async fn read_request<T: futures::AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> std::io::Result<Vec<u8>> {
            let mut buf = Vec::new();
            io.read_to_end(&mut buf).await?;
            Ok(buf)
        }
        async fn read_response<T: futures::AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> std::io::Result<Vec<u8>> {
            let mut buf = Vec::new();
            io.read_to_end(&mut buf).await?;
            Ok(buf)
        }
        async fn write_request<T: futures::AsyncWrite + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T, req: Vec<u8>) -> std::io::Result<()> {
            io.write_all(&(req.len() as u32).to_be_bytes()).await?;
            io.write_all(&req).await?;
            io.close().await
        }
        async fn write_response<T: futures::AsyncWrite + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T, res: Vec<u8>) -> std::io::Result<()> {
            io.write_all(&(res.len() as u32).to_be_bytes()).await?;
            io.write_all(&res).await?;
            io.close().await
        }
    }

    /// What happened to a connection attempt.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Outcome {
        /// The node closed the connection after our garbage.
        ClosedAfterGarbage,
        /// The node refused the connection outright (a banned peer).
        Refused,
        /// Nothing happened within the time limit.
        TimedOut,
    }

    /// Connect to `addr` as `key`, send a garbage sync request, and see what
    /// the node does.
    pub fn attack(addr: &str, key: &libp2p::identity::Keypair) -> Outcome {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key.clone())
                .with_tokio()
                .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
                .unwrap()
                .with_behaviour(|_| {
                    request_response::Behaviour::with_codec(
                        RawCodec,
                        [(StreamProtocol::new(agora_sync::wire::SYNC_PROTOCOL), ProtocolSupport::Full)],
                        request_response::Config::default(),
                    )
                })
                .unwrap()
                .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(30)))
                .build();
            let target: Multiaddr = addr.parse().unwrap();
            let Some(libp2p::multiaddr::Protocol::P2p(peer)) = target.iter().last() else { panic!("address without /p2p") };
            swarm.dial(target).unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            let mut sent = false;
            loop {
                let event = match tokio::time::timeout_at(deadline, swarm.select_next_some()).await {
                    Ok(e) => e,
                    Err(_) => return Outcome::TimedOut,
                };
                match event {
                    SwarmEvent::ConnectionEstablished { .. } => {
                        // This wire version, then a variant index no request has.
                        let version = agora_sync::wire::WIRE_VERSION;
                        swarm.behaviour_mut().send_request(&peer, vec![version, 0xff, 0xff, 0xff, 0xff, 0x0f, 9, 9, 9]);
                        sent = true;
                    }
                    SwarmEvent::ConnectionClosed { num_established: 0, .. } => {
                        return if sent { Outcome::ClosedAfterGarbage } else { Outcome::Refused };
                    }
                    SwarmEvent::OutgoingConnectionError { .. } => return Outcome::Refused,
                    _ => {}
                }
            }
        })
    }
}

#[test]
fn a_peer_sending_garbage_is_banned_while_the_others_keep_working() {
    let (a, b) = (Agent::new(), Agent::new());
    let founder = a.id.clone();
    admit(&a, &[&b]);
    let node_a = Node::start(&a, &founder, &[]);
    let _node_b = Node::start(&b, &founder, &[&node_a.addr]);
    let key = libp2p::identity::Keypair::generate_ed25519();
    let attacker = key.public().to_peer_id().to_string();
    assert_eq!(garbage::attack(&node_a.addr, &key), garbage::Outcome::ClosedAfterGarbage, "the node disconnects the garbage peer");
    let status = wait_for("the ban to show in the status", || {
        let s = node_a.status();
        (s["rejected"]["bans"].as_u64().unwrap_or(0) >= 1).then_some(s)
    });
    let bans = status["rejected"]["recent_bans"].as_array().unwrap();
    assert!(bans.iter().any(|b| b["peer_id"] == attacker.as_str() && b["reason"].as_str().unwrap().contains("malformed")), "{status}");
    assert!(status["rejected"]["malformed_messages"].as_u64().unwrap() >= 1);
    // Banned means refused when it comes back.
    let again = garbage::attack(&node_a.addr, &key);
    assert!(matches!(again, garbage::Outcome::Refused | garbage::Outcome::ClosedAfterGarbage), "{again:?}");
    assert_eq!(node_a.status()["rejected"]["bans"], status["rejected"]["bans"], "no second ban: it never got in");
    // The honest peers keep replicating.
    let id = json(&b.home, &["propose", "still working"])["id"].as_str().unwrap().to_string();
    wait_for("B's entry to reach A after the ban", || node_a.holds(&id).then_some(()));
}

/// A node dials its bootstrap peers again while they are not connected: a
/// peer that went away (killed here; a long partition alike) and came back
/// is joined again, though it has no bootstrap of its own and nothing else
/// would dial. Replication resumes.
#[test]
fn a_node_rejoins_a_bootstrap_peer_that_came_back() {
    let (a, b) = (Agent::new(), Agent::new());
    admit(&a, &[&b]);
    let mut na = Node::start(&a, &a.id, &[]);
    let listen = na.addr.split("/p2p/").next().unwrap().to_string();
    let nb = Node::start(&b, &a.id, &[&na.addr]);
    wait_for("B to connect to A", || (nb.peers() >= 1).then_some(()));
    na.kill();
    wait_for("B to see A gone", || (nb.peers() == 0).then_some(()));
    // A comes back where it was, with no bootstrap address: only B's redial
    // can join them again.
    let na = Node::start_on(&a, &a.id, &[], &listen);
    let back = std::time::Instant::now();
    wait_for("B to rejoin A", || (nb.peers() >= 1).then_some(()));
    let rejoined = back.elapsed();
    let p = json(&a.home, &["propose", "after the restart"])["id"].as_str().unwrap().to_string();
    wait_for("B to receive A's new entry", || nb.holds(&p).then_some(()));
    assert_eq!(na.peers(), 1);
    println!("B rejoined its restarted bootstrap peer {} ms after it came back", rejoined.as_millis());
    assert!(rejoined < std::time::Duration::from_secs(35), "within the longest redial wait: {rejoined:?}");
}

/// `agora` alone, with no `agora-node` beside it or on `PATH`: what a node
/// runs is forwarded without the full program (standard input too), and
/// what needs the store (no node running, `init`) is handed to the full
/// program, whose absence is then a clear error. This is what keeps a read
/// through a node off the full program's 6 ms start-up.
#[test]
fn the_command_line_forwards_to_a_node_without_the_full_program() {
    let alone = tempfile::tempdir().unwrap();
    let agora_alone = alone.path().join("agora");
    std::fs::copy(env!("CARGO_BIN_EXE_agora"), &agora_alone).unwrap();
    let run = |home: &std::path::Path, args: &[&str], stdin: &[u8]| {
        let mut child = Command::new(&agora_alone)
            .arg("--home")
            .arg(home)
            .args(args)
            .env_remove("AGORA_HOME")
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let a = Agent::new();
    let node = Node::start(&a, &a.id, &[]);
    let (code, out, err) = run(&a.home, &["--json", "propose", "forwarded"], b"");
    assert_eq!(code, Some(0), "{err}");
    let id = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"].as_str().unwrap().to_string();
    let (code, out, err) = run(&a.home, &["--json", "append"], b"a note from standard input");
    assert_eq!(code, Some(0), "{err}");
    let note = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"].as_str().unwrap().to_string();
    let shown = ok(&a.home, &["show", &note]);
    assert!(shown.contains("a note from standard input"), "{shown}");
    let (code, out, err) = run(&a.home, &["--json", "view-hash"], b"");
    assert_eq!((code, out.trim_end()), (Some(0), ok(&a.home, &["--json", "view-hash"]).trim_end()), "{err}");
    let (code, out, _) = run(&a.home, &["--json", "node", "status"], b"");
    assert_eq!(code, Some(0));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["agent"], a.id.as_str());
    // Usage errors are the grammar's, in either program.
    let (code, _, err) = run(&a.home, &["propose"], b"");
    assert_eq!(code, Some(2), "{err}");
    // `init` never goes to a node: it needs the full program.
    let fresh = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&fresh.path().join("h"), &["init"], b"");
    assert_eq!(code, Some(1));
    assert!(err.contains("agora-node is neither beside") && err.contains("cargo install --path node"), "{err}");
    drop(node);
    // No node: the store is opened by the full program, here missing.
    let (code, out, err) = run(&a.home, &["--json", "status", &id], b"");
    assert_eq!(code, Some(1));
    assert!(err.contains("agora-node") && out.contains("\"error\""), "{out} {err}");
    // Beside the full program the same command line runs on the store.
    assert_eq!(json(&a.home, &["status", &id])["status"], "active");
}
