//! Liveness against a real misbehaving peer (`protocol-spec/replication.md`,
//! "Liveness"): a libp2p peer written in this test against the wire spec (no
//! switch in the node makes it misbehave) claims an author's whole chain
//! and answers every range request with its first entry only, `more =
//! false`, after 5 s; it serves the roster honestly, so that it is measured
//! and asked first. A new node that also has an honest peer syncs within
//! twice the honest-only time plus 10 s.

mod support;

use agora_core::entry::next_header;
use agora_core::{AgentId, AgentKey, SignedEntry, pack};
use agora_sync::wire::{SYNC_PROTOCOL, WireRequest, WireResponse};
use agora_sync::{Head, Message, WireEntry, WorkspaceId};
use futures::{AsyncReadExt, AsyncWriteExt, StreamExt};
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::SwarmEvent;
use libp2p::{StreamProtocol, noise, tcp, yamux};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::*;

/// A frame: four bytes of length (big-endian), then the bytes.
async fn read_frame<T: futures::AsyncRead + Unpin + Send>(io: &mut T) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    io.read_exact(&mut len).await?;
    let mut buf = vec![0u8; u32::from_be_bytes(len) as usize];
    io.read_exact(&mut buf).await?;
    Ok(buf)
}

/// An answer waiting for its time: when, where, what, to whom (claimed
/// again after it).
type Pending = (tokio::time::Instant, request_response::ResponseChannel<Vec<u8>>, Vec<u8>, libp2p::PeerId);

#[derive(Clone, Default)]
struct RawCodec;

impl request_response::Codec for RawCodec {
    type Protocol = StreamProtocol;
    type Request = Vec<u8>;
    type Response = Vec<u8>;
    async fn read_request<T: futures::AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> std::io::Result<Vec<u8>> {
        read_frame(io).await
    }
    async fn read_response<T: futures::AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> std::io::Result<Vec<u8>> {
        read_frame(io).await
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

/// The dripper: listens on 127.0.0.1, claims the heads of `chains` to every
/// peer that connects (again after every answer), serves the chains marked
/// honest as they are, and answers each range request of the others with its
/// first entry, `more = false`, after `delay`. Runs until `stop`.
/// Counts the range requests it gets in `asked`. Returns its address (with
/// `/p2p/`).
fn dripper(workspace: WorkspaceId, chains: Vec<(Vec<WireEntry>, bool)>, delay: Duration, stop: Arc<AtomicBool>, asked: Arc<AtomicU64>) -> String {
    let heads: Vec<Head> = chains
        .iter()
        .map(|(c, _)| {
            let e = SignedEntry::decode(&c[c.len() - 1].entry).unwrap();
            Head { author: e.header().author, seq: e.header().seq, id: e.id() }
        })
        .collect();
    let by_author: std::collections::BTreeMap<AgentId, (Vec<WireEntry>, bool)> = heads.iter().map(|h| h.author).zip(chains).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let mut swarm = libp2p::SwarmBuilder::with_new_identity()
                .with_tokio()
                .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
                .unwrap()
                .with_behaviour(|_| {
                    request_response::Behaviour::with_codec(
                        RawCodec,
                        [(StreamProtocol::new(SYNC_PROTOCOL), ProtocolSupport::Full)],
                        request_response::Config::default().with_request_timeout(Duration::from_secs(60)),
                    )
                })
                .unwrap()
                .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(120)))
                .build();
            swarm.listen_on("/ip4/127.0.0.1/tcp/0".parse().unwrap()).unwrap();
            let me = *swarm.local_peer_id();
            let claim = || WireRequest::from_message(workspace, Message::Frontier(heads.clone())).unwrap().encode();
            // Answers waiting for their time.
            let mut pending: Vec<Pending> = Vec::new();
            let mut sent_addr = Some(tx);
            while !stop.load(Ordering::Relaxed) {
                let next = pending.iter().map(|p| p.0).min().unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_millis(100));
                let event = tokio::select! {
                    e = swarm.select_next_some() => Some(e),
                    _ = tokio::time::sleep_until(next) => None,
                };
                let now = tokio::time::Instant::now();
                let (due, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(|p| p.0 <= now);
                pending = rest;
                for (_, channel, bytes, peer) in due {
                    let _ = swarm.behaviour_mut().send_response(channel, bytes);
                    swarm.behaviour_mut().send_request(&peer, claim());
                }
                let Some(event) = event else { continue };
                match event {
                    SwarmEvent::NewListenAddr { address, .. } => {
                        if let Some(tx) = sent_addr.take() {
                            tx.send(format!("{address}/p2p/{me}")).unwrap();
                        }
                    }
                    SwarmEvent::ConnectionEstablished { peer_id, .. } => {
                        swarm.behaviour_mut().send_request(&peer_id, claim());
                    }
                    SwarmEvent::Behaviour(request_response::Event::Message {
                        peer,
                        message: request_response::Message::Request { request, channel, .. },
                        ..
                    }) => {
                        let Ok(req) = WireRequest::decode(&request) else { continue };
                        match req {
                            WireRequest::Frontier { .. } => {
                                let _ = swarm.behaviour_mut().send_response(channel, WireResponse::Ack.encode());
                            }
                            WireRequest::Range { req, author, start, limit, .. } => {
                                let Some((chain, honest)) = by_author.get(&author) else { continue };
                                let from = start.seq as usize - 1 + usize::from(start.after.is_some());
                                let all: Vec<WireEntry> = chain.iter().skip(from).take(limit as usize).cloned().collect();
                                if *honest {
                                    let answer = WireResponse::Entries { req, entries: all, more: false };
                                    let _ = swarm.behaviour_mut().send_response(channel, answer.encode());
                                    continue;
                                }
                                asked.fetch_add(1, Ordering::Relaxed);
                                let answer = WireResponse::Entries { req, entries: all.into_iter().take(1).collect(), more: false };
                                pending.push((now + delay, channel, answer.encode(), peer));
                            }
                        }
                    }
                    _ => {}
                }
            }
        });
    });
    rx.recv_timeout(Duration::from_secs(30)).expect("the dripper listens")
}

/// The time node `c` takes to hold `n` entries of `author` (bounded at 120 s).
fn sync_time(node: &Node, author: &str, n: u64, started: Instant) -> Duration {
    let deadline = started + Duration::from_secs(120);
    loop {
        if node.max_seq(author) >= n {
            return started.elapsed();
        }
        assert!(Instant::now() < deadline, "{} of {n} entries after 120 s", node.max_seq(author));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_real_peer_answering_with_one_entry_per_range_does_not_stall_a_new_node() {
    const N: usize = 5_000;
    let (a, b, c) = (Agent::new(), Agent::new(), Agent::new());
    admit(&a, &[&b, &c]);
    let writer = AgentKey::from_seed([42; 32]);
    let writer_id = writer.agent_id().to_string();
    ok(&a.home, &["admit", &writer_id, "writer"]);
    // The writer's chain, imported into A's store before its node starts.
    let mut wire = Vec::with_capacity(N);
    let path = a.home.parent().unwrap().join("writer.jsonl");
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(out, "{}", pack::header_line()).unwrap();
        let mut prev: Option<SignedEntry> = None;
        for i in 0..N {
            let payload = format!("{i:0>256}");
            let e = SignedEntry::sign(next_header(writer.agent_id(), prev.as_ref(), 1_000 + i as u64, payload.as_bytes()).unwrap(), &writer);
            writeln!(out, "{}", pack::entry_line(&e, Some(payload.as_bytes()))).unwrap();
            wire.push(WireEntry { entry: e.encode(), payload: Some(payload.into_bytes()) });
            prev = Some(e);
        }
        out.flush().unwrap();
    }
    ok(&a.home, &["import", path.to_str().unwrap()]);
    let founder: AgentId = a.id.parse().unwrap();
    let workspace = WorkspaceId::new(&founder, WORKSPACE);
    let na = Node::start(&a, &a.id, &[]);

    // Honest only: B syncs from A.
    let started = Instant::now();
    let nb = Node::start(&b, &a.id, &[&na.addr]);
    let honest = sync_time(&nb, &writer_id, N as u64, started);
    drop(nb);

    // C has the dripper (5 s per one-entry answer) first, and A.
    let stop = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicU64::new(0));
    // The dripper serves the founder's chain (the roster) honestly and fast,
    // so that it is measured first, and drips the writer's.
    let export = a.home.parent().unwrap().join("founder.jsonl");
    ok(&a.home, &["export", "--author", &a.id, "-o", export.to_str().unwrap()]);
    let text = std::fs::read_to_string(&export).unwrap();
    let roster: Vec<WireEntry> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let (e, p) = pack::parse_entry_line(i + 2, l).unwrap();
            WireEntry { entry: e.encode(), payload: p }
        })
        .collect();
    let drip = dripper(workspace, vec![(roster, true), (wire, false)], Duration::from_secs(5), stop.clone(), asked.clone());
    let started = Instant::now();
    let nc = Node::start(&c, &a.id, &[&drip, &na.addr]);
    let with_dripper = sync_time(&nc, &writer_id, N as u64, started);
    stop.store(true, Ordering::Relaxed);
    let status = nc.status();
    let asked = asked.load(Ordering::Relaxed);
    println!(
        "{N} entries: {} ms from the honest peer alone, {} ms with the dripper too (asked {asked} ranges; short answers {}, hedged {})",
        honest.as_millis(),
        with_dripper.as_millis(),
        status["rejected"]["short_answers"],
        status["sync"]["hedged"]
    );
    assert!(asked >= 1, "the dripper was asked for ranges");
    assert!(with_dripper <= 2 * honest + Duration::from_secs(10), "{with_dripper:?} against {honest:?} alone");
}
