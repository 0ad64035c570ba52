//! The merged view over the automerge-repo sync protocol: a real `agora node
//! run`, and a Rust automerge-repo client (a `samod` repo) connected to the
//! node's `/v1/automerge/repo` WebSocket with the control token. The client
//! finds the document `/v1/automerge/url` names, reads the view (chains,
//! nodes and their statuses, the view hash), follows a new event within a
//! second, and cannot change the node's document (read-only). Without the
//! token: 401. At most 64 sockets (503 beyond), and an open socket does not
//! hold the node's shutdown.

mod support;

use agora_automerge::Tree;
use automerge::{AutoCommit, Automerge, ROOT, transaction::Transactable};
use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use samod::{BackoffConfig, DialError, Dialer, DocHandle, DocumentId, Repo, Transport};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

/// How soon a committed event must reach a connected client.
const FOLLOW_MAX: Duration = Duration::from_secs(1);
const STEP: Duration = Duration::from_secs(30);

struct Control {
    addr: String,
    token: String,
}

impl Control {
    fn of(agent: &Agent) -> Self {
        let node: Value = serde_json::from_str(&std::fs::read_to_string(agent.home.join("node.json")).unwrap()).unwrap();
        Self { addr: node["control"].as_str().unwrap().to_string(), token: node["token"].as_str().unwrap().to_string() }
    }

    /// `GET path` with an optional token: status and body.
    fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let http = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().new_agent();
        let mut req = http.get(format!("http://{}{path}", self.addr));
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let mut resp = req.call().expect("the node answers");
        (resp.status().as_u16(), resp.body_mut().read_to_string().unwrap_or_default())
    }

    /// The WebSocket, opened with an optional token.
    async fn socket(
        &self,
        path: &str,
        token: Option<&str>,
    ) -> Result<tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>, tungstenite::Error> {
        let mut request = format!("ws://{}{path}", self.addr).into_client_request()?;
        if let Some(t) = token {
            request.headers_mut().insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        tokio_tungstenite::connect_async(request).await.map(|(ws, _)| ws)
    }
}

/// The WebSocket at `path` with the headers a browser can set: a
/// subprotocol list, or a cookie and an `Origin`. Returns the protocol the
/// handshake selected.
async fn browser_socket(addr: &str, path: &str, headers: &[(&'static str, String)]) -> Result<Option<String>, tungstenite::Error> {
    let mut request = format!("ws://{addr}{path}").into_client_request()?;
    for (k, v) in headers {
        request.headers_mut().insert(*k, v.parse().unwrap());
    }
    let (mut ws, response) = tokio_tungstenite::connect_async(request).await?;
    let _ = ws.close(None).await;
    Ok(response.headers().get("sec-websocket-protocol").map(|v| v.to_str().unwrap().to_string()))
}

/// The status of a refused WebSocket handshake.
fn refused_status(result: Result<impl Sized, tungstenite::Error>) -> u16 {
    match result {
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("expected an HTTP refusal, the socket opened"),
    }
}

/// A samod dialer: a plain WebSocket with the bearer token, its binary
/// messages as samod's bytes.
struct BearerDialer {
    addr: String,
    path: String,
    token: String,
}

impl Dialer for BearerDialer {
    type Error = std::convert::Infallible;

    fn url(&self) -> samod::Url {
        samod::Url::parse(&format!("ws://{}{}", self.addr, self.path)).unwrap()
    }

    fn connect(&self) -> BoxFuture<'static, Result<Transport, DialError<Self::Error>>> {
        let control = Control { addr: self.addr.clone(), token: self.token.clone() };
        let path = self.path.clone();
        async move {
            let ws = control.socket(&path, Some(&control.token)).await.map_err(DialError::transient)?;
            let (sink, stream) = ws.split();
            let stream = stream.filter_map(|m| async move {
                match m {
                    Ok(Message::Binary(b)) => Some(Ok(b.to_vec())),
                    Ok(Message::Text(_)) => Some(Err(std::io::Error::other("a text message"))),
                    Ok(_) => None,
                    Err(e) => Some(Err(std::io::Error::other(e))),
                }
            });
            let sink = sink.with(|b: Vec<u8>| futures::future::ready(Ok::<_, tungstenite::Error>(Message::Binary(b.into()))));
            Ok(Transport::new(Box::pin(stream), sink))
        }
        .boxed()
    }
}

/// A client repo connected to the node.
async fn client(control: &Control) -> Repo {
    let repo = Repo::build_tokio().load().await;
    let dialer = BearerDialer { addr: control.addr.clone(), path: "/v1/automerge/repo".to_string(), token: control.token.clone() };
    // A few retries: samod 0.16's `Repo::dial` hands the first attempt to its
    // IO loop before it registers the dialer, and on a multi-threaded
    // runtime that attempt can fail with "no dialer registered".
    let handle = repo.dial(BackoffConfig { max_retries: Some(5), ..BackoffConfig::default() }, Arc::new(dialer)).unwrap();
    tokio::time::timeout(STEP, handle.established()).await.expect("connected in time").expect("connected");
    repo
}

async fn find(repo: &Repo, id: &DocumentId) -> DocHandle {
    tokio::time::timeout(STEP, repo.find(id.clone())).await.expect("found in time").expect("the repo runs").expect("the node has the document")
}

/// The document as the view's tree.
fn tree(doc: &DocHandle) -> BTreeMap<String, Tree> {
    let bytes = doc.with_document(|d: &mut Automerge| d.save());
    agora_automerge::read_tree(&AutoCommit::load(&bytes).unwrap()).unwrap()
}

fn map<'a>(t: &'a BTreeMap<String, Tree>, key: &str) -> &'a BTreeMap<String, Tree> {
    match t.get(key) {
        Some(Tree::Map(m)) => m,
        other => panic!("{key} is not a map: {other:?}"),
    }
}

fn text(t: &BTreeMap<String, Tree>, key: &str) -> Option<String> {
    match t.get(key) {
        Some(Tree::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

/// A node's status in the view, if the node is there.
fn status_of(t: &BTreeMap<String, Tree>, id: &str) -> Option<String> {
    match map(t, "nodes").get(id) {
        Some(Tree::Map(n)) => text(n, "status"),
        _ => None,
    }
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

/// `agora --json args` off the async threads.
async fn agora_json(home: &std::path::Path, args: &[&str]) -> Value {
    let (home, args): (std::path::PathBuf, Vec<String>) = (home.to_path_buf(), args.iter().map(|a| a.to_string()).collect());
    tokio::task::spawn_blocking(move || json(&home, &args.iter().map(String::as_str).collect::<Vec<_>>())).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_automerge_repo_client_follows_the_view_read_only() {
    let alice = Agent::new();
    let mut node = Node::start(&alice, &alice.id, &[]);
    let control = Control::of(&alice);
    let p = id(&agora_json(&alice.home, &["propose", "Ship on Friday"]).await);
    let c = id(&agora_json(&alice.home, &["contradict", &p, "QA is not done"]).await);

    // Without the token (or with a wrong one): 401, before any upgrade.
    assert_eq!(control.get("/v1/automerge/url", None).0, 401);
    assert_eq!(control.get("/v1/automerge/url", Some("not-the-token")).0, 401);
    assert_eq!(refused_status(control.socket("/v1/automerge/repo", None).await), 401);
    assert_eq!(refused_status(control.socket("/v1/automerge/repo", Some("not-the-token")).await), 401);

    // Which document, and where.
    let (status, body) = control.get("/v1/automerge/url", Some(&control.token));
    assert_eq!(status, 200, "{body}");
    let named: Value = serde_json::from_str(&body).unwrap();
    let url = named["url"].as_str().unwrap();
    let doc_id: DocumentId = named["document_id"].as_str().unwrap().parse().unwrap();
    assert_eq!(url, format!("automerge:{doc_id}"), "{named}");
    assert_eq!(named["websocket"], "/v1/automerge/repo");
    let status = agora_json(&alice.home, &["node", "status"]).await;
    assert_eq!(status["automerge"]["url"], url, "the node's status names the document: {status}");

    // A client finds the document and reads the view.
    let started = Instant::now();
    let a = client(&control).await;
    let doc = find(&a, &doc_id).await;
    println!("connected and found the document in {:?}", started.elapsed());
    let view = tree(&doc);
    assert_eq!(text(&view, "format").as_deref(), Some(agora_automerge::DOCUMENT_FORMAT));
    let hash = agora_json(&alice.home, &["view-hash"]).await["view_hash"].as_str().unwrap().to_string();
    assert_eq!(text(&view, "view_hash").as_deref(), Some(hash.as_str()), "the view the node computes");
    assert!(map(&view, "chains").contains_key(&alice.id), "Alice's chain: {:?}", map(&view, "chains").keys());
    assert_eq!(status_of(&view, &p).as_deref(), Some("contested"));
    let c_status = agora_json(&alice.home, &["status", &c]).await["status"].as_str().unwrap().to_string();
    assert_eq!(status_of(&view, &c).as_deref(), Some(c_status.as_str()));
    assert!(doc.peers().0.values().any(|s| s.peer_read_only), "the node says it ignores this client's changes");

    // The client edits its copy: it keeps its edit, the node does not take it.
    let tampered = doc.with_document(|d: &mut Automerge| {
        d.transact::<_, _, automerge::AutomergeError>(|tx| {
            tx.put(ROOT, "intruder", "a client's edit")?;
            Ok(())
        })
        .unwrap();
        d.get_heads()
    });
    // Wait until the client has sent the edit, then give the node time to
    // take it if it would.
    let sent = Instant::now();
    loop {
        let peers = doc.peers().0;
        if peers.values().any(|s| s.last_sent_heads.as_ref() == Some(&tampered)) {
            break;
        }
        assert!(sent.elapsed() < STEP, "the client never sent its edit: {peers:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let b = client(&control).await;
    let fresh = find(&b, &doc_id).await;
    let seen = tree(&fresh);
    assert!(!seen.contains_key("intruder"), "the node's document took a client's edit");
    assert_eq!(text(&seen, "view_hash").as_deref(), Some(hash.as_str()));
    assert!(doc.peers().0.values().all(|s| s.their_heads.as_ref().is_none_or(|h| !h.iter().any(|x| tampered.contains(x)))));

    // A new event reaches both clients within a second of its commit.
    let mut changes = Box::pin(doc.changes());
    let r = id(&agora_json(&alice.home, &["refine", &p, "Ship on Monday after QA", "--resolves", &c]).await);
    let committed = Instant::now();
    loop {
        if status_of(&tree(&doc), &r).is_some() {
            break;
        }
        let left = FOLLOW_MAX.saturating_sub(committed.elapsed());
        assert!(!left.is_zero(), "the client did not receive the change within {FOLLOW_MAX:?}");
        let _ = tokio::time::timeout(left, changes.next()).await;
    }
    let delay = committed.elapsed();
    println!("the new event reached the client {delay:?} after `agora refine` returned");
    let view = tree(&doc);
    for (node, want) in [(&p, "superseded"), (&c, "resolved"), (&r, "resolved")] {
        assert_eq!(status_of(&view, node).as_deref(), Some(want), "{node}");
    }
    let hash = agora_json(&alice.home, &["view-hash"]).await["view_hash"].as_str().unwrap().to_string();
    assert_eq!(text(&view, "view_hash").as_deref(), Some(hash.as_str()));
    assert_eq!(text(&view, "intruder").as_deref(), Some("a client's edit"), "the client keeps its own edit");
    let deadline = Instant::now() + STEP;
    while status_of(&tree(&fresh), &r).is_none() {
        assert!(Instant::now() < deadline, "the second client never received the change");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!tree(&fresh).contains_key("intruder"));

    // At most 64 sockets: the two clients and 62 more; the next is refused.
    let mut open = Vec::new();
    for _ in 0..62 {
        open.push(control.socket("/v1/automerge/repo", Some(&control.token)).await.expect("a socket within the limit"));
    }
    assert_eq!(refused_status(control.socket("/v1/automerge/repo", Some(&control.token)).await), 503);
    for mut ws in open.drain(..) {
        let _ = ws.close(None).await;
    }
    let deadline = Instant::now() + STEP;
    loop {
        match control.socket("/v1/automerge/repo", Some(&control.token)).await {
            Ok(mut ws) => {
                let _ = ws.close(None).await;
                break;
            }
            Err(e) => {
                assert!(Instant::now() < deadline, "closed sockets never freed their places: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    b.stop().await;

    // An open socket does not hold the node's shutdown.
    let stopping = Instant::now();
    let exit = tokio::task::spawn_blocking(move || node.terminate()).await.unwrap();
    let took = stopping.elapsed();
    assert!(exit.success(), "the node stopped cleanly: {exit}");
    assert!(took < Duration::from_secs(5), "the node took {took:?} to stop with a client connected");
    println!("the node stopped in {took:?} with a client connected");
    tokio::time::timeout(Duration::from_secs(5), a.stop()).await.expect("the client stops");
}

/// A browser cannot put a header on a WebSocket, so the stock automerge-repo
/// adapters cannot send the bearer token. A client that holds the token
/// offers it as the subprotocol `agora-token.<token>`; the live page, which
/// never holds it, opens the socket under its own path with its session
/// cookie (`agora open`'s one-time login), and only from the node's own
/// origin. Nothing else gets in: a wrong subprotocol, the session without an
/// `Origin` or from another origin, the session on the token's routes, the
/// token as a cookie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_opens_the_websocket_with_a_subprotocol_or_the_page_session() {
    let alice = Agent::new();
    let _node = Node::start(&alice, &alice.id, &[]);
    let control = Control::of(&alice);
    let addr = control.addr.clone();
    let token = control.token.clone();
    const SOCKET: &str = "/v1/automerge/repo";

    // The page's session: a one-time code from `agora open`, exchanged.
    let url = json(&alice.home, &["open", "--no-browser"])["url"].as_str().unwrap().to_string();
    let code = url.split("#code=").nth(1).unwrap().to_string();
    let http = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).max_redirects(0).build().new_agent();
    let given = http.post(format!("http://{addr}/v1/page/session")).send(format!("code={code}")).unwrap();
    assert_eq!(given.status().as_u16(), 303);
    let set = given.headers().get("set-cookie").expect("a cookie").to_str().unwrap().to_string();
    let page = given.headers().get("location").unwrap().to_str().unwrap().trim_end_matches('/').to_string();
    let session = set.split("; ").next().unwrap().to_string();
    assert!(!set.contains(&token), "{set}");
    let cookie_header = ("cookie", session.clone());
    let own_origin = ("origin", format!("http://{addr}"));
    let page_socket = format!("{page}{SOCKET}");

    // A subprotocol: the handshake selects it, as a browser requires.
    let protocol = format!("agora-token.{token}");
    let selected =
        browser_socket(&addr, SOCKET, &[("sec-websocket-protocol", format!("automerge-repo, {protocol}"))]).await.expect("the subprotocol lets the socket in");
    assert_eq!(selected.as_deref(), Some(protocol.as_str()));
    assert_eq!(refused_status(browser_socket(&addr, SOCKET, &[("sec-websocket-protocol", "agora-token.0123abcd".to_string())]).await), 401);

    // The session, under the page's path, from the node's own origin.
    browser_socket(&addr, &page_socket, &[cookie_header.clone(), own_origin.clone()]).await.expect("the session lets a page of this origin in");
    assert_eq!(refused_status(browser_socket(&addr, &page_socket, std::slice::from_ref(&cookie_header)).await), 401, "no Origin: not a browser page");
    assert_eq!(refused_status(browser_socket(&addr, &page_socket, &[cookie_header.clone(), ("origin", "http://evil.example".to_string())]).await), 401);
    let (name, _) = session.split_once('=').unwrap();
    assert_eq!(refused_status(browser_socket(&addr, &page_socket, &[("cookie", format!("{name}=0123abcd")), own_origin.clone()]).await), 401);
    assert_eq!(
        refused_status(browser_socket(&addr, &page_socket, &[("cookie", format!("{name}={token}")), own_origin.clone()]).await),
        401,
        "the token is no session"
    );
    // Not on the token's socket.
    assert_eq!(refused_status(browser_socket(&addr, SOCKET, &[cookie_header.clone(), own_origin.clone()]).await), 401);

    // The JSON API's moves still want the bearer token.
    let api = http
        .post(format!("http://{addr}/v1/ops/status"))
        .header("cookie", session.clone())
        .header("origin", format!("http://{addr}"))
        .header("sec-websocket-protocol", protocol.clone())
        .send("{}")
        .unwrap();
    assert_eq!(api.status().as_u16(), 401);
}

/// Every byte a document can give away: its whole history, saved without
/// compression, and each change's bytes.
fn history_bytes(doc: &mut Automerge) -> Vec<u8> {
    let mut out = doc.save_nocompress();
    for change in doc.get_changes(&[]) {
        out.extend_from_slice(change.raw_bytes());
    }
    out
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Issue 36, item 6: a redaction makes the published document again with no
/// history of the redacted text. A client connected before holds the text
/// (its copy is its own); its socket is closed, `/v1/automerge/url` names a
/// new document, and a new client's full sync of it holds no byte of the
/// text; the old document is unknown to the node. A pull client
/// (`agora automerge pull`) sees the new id and drops its copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_redaction_no_client_can_pull_the_text_from_the_history() {
    let alice = Agent::new();
    let _node = Node::start(&alice, &alice.id, &[]);
    let control = Control::of(&alice);
    let marker = format!("redacted-marker-{:016x}", std::process::id() as u64 * 0x9e37_79b9_7f4a_7c15);
    let p = id(&agora_json(&alice.home, &["propose", &marker]).await);
    let c = id(&agora_json(&alice.home, &["contradict", &p, "kept text"]).await);
    let described = |control: &Control| -> Value { serde_json::from_str(&control.get("/v1/automerge/url", Some(&control.token)).1).unwrap() };
    let before = described(&control);
    let old_id: DocumentId = before["document_id"].as_str().unwrap().parse().unwrap();
    assert_eq!(before["remade"], 0);

    // Before: a connected client and a pull client hold the text.
    let a = client(&control).await;
    let old_doc = find(&a, &old_id).await;
    let text_of = |t: &BTreeMap<String, Tree>, node: &str| match map(t, "nodes").get(node) {
        Some(Tree::Map(n)) => text(n, "text"),
        _ => None,
    };
    assert_eq!(text_of(&tree(&old_doc), &p).as_deref(), Some(marker.as_str()));
    let dir = tempfile::tempdir().unwrap();
    let pulled = dir.path().join("view.automerge");
    let pull = |path: &std::path::Path| {
        let (home, path) = (alice.home.clone(), path.to_str().unwrap().to_string());
        tokio::task::spawn_blocking(move || json(&home, &["automerge", "pull", "--doc", &path]))
    };
    pull(&pulled).await.unwrap();
    let mut copy = Automerge::load(&std::fs::read(&pulled).unwrap()).unwrap();
    assert!(holds(&history_bytes(&mut copy), &marker), "the check sees the text where it is");

    // The redaction: the payload is erased here, and the document is made again.
    let redacted = agora_json(&alice.home, &["redact", &p]).await;
    assert_eq!(redacted["erased"], true, "{redacted}");
    let deadline = Instant::now() + STEP;
    let after = loop {
        let now = described(&control);
        if now["document_id"] != before["document_id"] {
            break now;
        }
        assert!(Instant::now() < deadline, "the node still serves the old document: {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(after["remade"], 1, "{after}");
    let new_id: DocumentId = after["document_id"].as_str().unwrap().parse().unwrap();
    // A new client: the new document, with every node but no byte of the text.
    let b = client(&control).await;
    let fresh = find(&b, &new_id).await;
    let view = tree(&fresh);
    assert_eq!(text_of(&view, &p).as_deref(), Some(""), "the node stays, without its text");
    assert_eq!(text_of(&view, &c).as_deref(), Some("kept text"));
    assert_eq!(status_of(&view, &p).as_deref(), Some("contested"), "the redaction changes no status");
    let bytes = fresh.with_document(history_bytes);
    assert!(!holds(&bytes, &marker), "a new client pulled the redacted text from the history");
    // The old document is gone from the node.
    let old = tokio::time::timeout(STEP, b.find(old_id.clone())).await.expect("answered in time").expect("the repo runs");
    assert!(old.is_none(), "the node still serves the document that held the text");

    // The pull client: a new document id, its copy dropped and synced again.
    pull(&pulled).await.unwrap();
    let mut copy = Automerge::load(&std::fs::read(&pulled).unwrap()).unwrap();
    assert!(!holds(&history_bytes(&mut copy), &marker), "the pulled copy keeps the redacted text");
    let copy_tree = agora_automerge::read_tree(&AutoCommit::load(&std::fs::read(&pulled).unwrap()).unwrap()).unwrap();
    assert_eq!(text_of(&copy_tree, &c).as_deref(), Some("kept text"));
    // And a pull from nothing.
    let fresh_pull = dir.path().join("fresh.automerge");
    pull(&fresh_pull).await.unwrap();
    let mut copy = Automerge::load(&std::fs::read(&fresh_pull).unwrap()).unwrap();
    assert!(!holds(&history_bytes(&mut copy), &marker));
    b.stop().await;
    a.stop().await;
}
