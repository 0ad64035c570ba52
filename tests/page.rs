//! The live graph page in a real browser: headless Chromium, driven over
//! WebDriver (chromedriver; both from Debian's packages, installed by
//! `scripts/setup.sh`), against a real `agora node run` on 127.0.0.1 with a
//! scripted debate between two agents. The page draws the nodes with their
//! statuses and the dispute, shows a node's verified trace when clicked,
//! finds nodes by search, and draws an event recorded through the API
//! without a reload. A screenshot is saved as a test artifact.

mod support;

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// A chromedriver process, killed when dropped.
struct Driver(Child, u16);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chromedriver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver runs (Debian's chromium-driver; scripts/setup.sh installs it)");
    let driver = Driver(child, port);
    wait_for("chromedriver to listen", || std::net::TcpStream::connect(("127.0.0.1", port)).ok().map(|_| ()));
    driver
}

/// A W3C WebDriver session, spoken as plain JSON over HTTP.
struct Browser {
    base: String,
    http: ureq::Agent,
}

impl Browser {
    fn start(driver: &Driver) -> Self {
        let http = ureq::Agent::config_builder().proxy(None).http_status_as_error(false).build().new_agent();
        let caps = json!({ "capabilities": { "alwaysMatch": { "browserName": "chrome", "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"] } } } });
        let root = format!("http://127.0.0.1:{}", driver.1);
        let v = post(&http, &format!("{root}/session"), &caps);
        let session = v["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {v}")).to_string();
        Self { base: format!("{root}/session/{session}"), http }
    }

    fn cmd(&self, path: &str, body: Value) -> Value {
        let v = post(&self.http, &format!("{}/{path}", self.base), &body);
        assert!(v["value"].get("error").is_none(), "WebDriver {path}: {v}");
        v["value"].clone()
    }

    fn goto(&self, url: &str) {
        self.cmd("url", json!({ "url": url }));
    }

    fn execute(&self, script: &str) -> Value {
        self.cmd("execute/sync", json!({ "script": script, "args": [] }))
    }

    fn click(&self, css: &str) {
        let found = self.cmd("element", json!({ "using": "css selector", "value": css }));
        let element = found.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).unwrap_or_else(|| panic!("no element {css}: {found}")).to_string();
        self.cmd(&format!("element/{element}/click"), json!({}));
    }

    fn current_url(&self) -> String {
        let mut r = self.http.get(format!("{}/url", self.base)).call().unwrap();
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        v["value"].as_str().unwrap_or_default().to_string()
    }

    fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let mut r = self.http.get(format!("{}/screenshot", self.base)).call().unwrap();
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        base64::engine::general_purpose::STANDARD.decode(v["value"].as_str().unwrap()).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.http.delete(&self.base).call();
    }
}

fn post(http: &ureq::Agent, url: &str, body: &Value) -> Value {
    let mut r = http.post(url).header("content-type", "application/json").send(body.to_string()).unwrap_or_else(|e| panic!("{url}: {e}"));
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap_or_else(|e| panic!("{url}: {e}"))
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

/// Poll `f` until it gives `Some`, for at most `limit`; the value and how long it took.
fn until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> (T, Duration) {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return (v, start.elapsed());
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn the_live_page_draws_the_debate_and_follows_new_events() {
    // The debate: Alice proposes; Bob contradicts and proposes; Alice
    // refines answering the contradiction, accepts Bob through it and
    // disputes his proposal.
    let (alice, bob) = (Agent::new(), Agent::new());
    admit(&alice, &[&bob]);
    let na = Node::start(&alice, &alice.id, &[]);
    let nb = Node::start(&bob, &alice.id, &[&na.addr]);
    let p = id(&json(&alice.home, &["propose", "Usage-based pricing aligns our incentives with customers"]));
    wait_for("Bob to hold the proposition", || nb.holds(&p).then_some(()));
    let c = id(&json(&bob.home, &["contradict", &p, "Enterprise procurement needs predictable costs"]));
    let q = id(&json(&bob.home, &["propose", "Drop the free tier entirely"]));
    wait_for("Alice to hold Bob's moves", || (na.holds(&c) && na.holds(&q)).then_some(()));
    let r = id(&json(&alice.home, &["refine", &p, "Usage-based with a committed annual minimum", "--resolves", &c]));
    json(&alice.home, &["accept", &bob.id, "1"]);
    json(&alice.home, &["dispute", &q, "The free tier is our funnel", "--counter", "Keep a capped free tier"]);

    let node: Value = serde_json::from_str(&std::fs::read_to_string(alice.home.join("node.json")).unwrap()).unwrap();
    let (control, token) = (node["control"].as_str().unwrap().to_string(), node["token"].as_str().unwrap().to_string());
    let url = json(&alice.home, &["open", "--no-browser"])["url"].as_str().unwrap().to_string();
    assert_eq!(url, format!("http://{control}/#token={token}"));

    let driver = chromedriver();
    let browser = Browser::start(&driver);
    browser.goto(&url);
    let nodes = || browser.execute("return [...document.querySelectorAll('g.node')].map(g => [g.dataset.id, g.dataset.status, g.dataset.kind, !!g.querySelector('.disputed')])");
    let status_of = |v: &Value, id: &str| v.as_array().unwrap().iter().find(|n| n[0] == id).map(|n| (n[1].as_str().unwrap().to_string(), n[3].as_bool().unwrap()));

    // Every node drawn with its status; the disputed proposal marked.
    let (drawn, _) = until("the debate to be drawn", Duration::from_secs(20), || {
        let v = nodes();
        (v.as_array().unwrap().len() >= 4).then_some(v)
    });
    assert_eq!(status_of(&drawn, &p), Some(("superseded".into(), false)), "{drawn}");
    assert_eq!(status_of(&drawn, &c), Some(("resolved".into(), false)), "{drawn}");
    assert_eq!(status_of(&drawn, &r), Some(("resolved".into(), false)), "{drawn}");
    assert_eq!(status_of(&drawn, &q), Some(("active".into(), true)), "the dispute is drawn: {drawn}");
    // The token left the address bar at once.
    let address = browser.current_url();
    assert!(!address.contains(&token), "the token stays out of the address bar: {address}");

    // Clicking a node shows its trace, each event verified.
    browser.click(&format!("g.node[data-id='{p}'] .shape"));
    let (traced, _) = until("the trace", Duration::from_secs(10), || {
        let v: Value = browser.execute("return [...document.querySelectorAll('#trace li')].map(li => [li.dataset.id, li.textContent.includes('verified')])");
        (v.as_array().unwrap().len() >= 3).then_some(v)
    });
    let ids: Vec<&str> = traced.as_array().unwrap().iter().map(|t| t[0].as_str().unwrap()).collect();
    assert_eq!(ids, [p.as_str(), c.as_str(), r.as_str()], "{traced}");
    assert!(traced.as_array().unwrap().iter().all(|t| t[1] == true), "each event verified: {traced}");
    // The disputed node's panel shows the dispute and its counter-claim.
    browser.click(&format!("g.node[data-id='{q}'] .shape"));
    until("the dispute in the panel", Duration::from_secs(10), || {
        let text: Value = browser.execute("return document.getElementById('detail').textContent");
        text.as_str().unwrap().contains("Keep a capped free tier").then_some(())
    });

    // Search uses the CLI's search.
    browser.execute("document.getElementById('search').value = 'procurement'; return true");
    browser.click("#search-form button");
    until("a search result", Duration::from_secs(10), || {
        let hits: Value = browser.execute("return [...document.querySelectorAll('g.node.match')].map(g => g.dataset.id)");
        (hits.as_array().unwrap().len() == 1 && hits[0] == c.as_str()).then_some(())
    });

    // A new event, recorded through the API, appears without a reload.
    let marker: Value = browser.execute("window.__loaded = true; return true");
    assert_eq!(marker, true);
    let agent = ureq::Agent::config_builder().proxy(None).build().new_agent();
    let recorded: Value = agent
        .post(format!("http://{control}/v1/ops/ask"))
        .header("authorization", format!("Bearer {token}"))
        .send(json!({ "text": "What minimum do enterprise buyers accept?" }).to_string())
        .unwrap()
        .body_mut()
        .read_to_string()
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap();
    let asked = id(&recorded);
    let (_, took) = until("the new question on the page", Duration::from_secs(5), || {
        let v = nodes();
        status_of(&v, &asked).filter(|(s, _)| s == "active").map(|_| ())
    });
    let same_page: Value = browser.execute("return window.__loaded === true");
    assert_eq!(same_page, true, "no reload");
    println!("the page drew the new event {} ms after it was recorded", took.as_millis());
    assert!(took < Duration::from_secs(2), "within a second or so: {took:?}");

    let png = browser.screenshot();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("live-page.png");
    std::fs::write(&path, &png).unwrap();
    println!("screenshot: {}", path.display());
}
