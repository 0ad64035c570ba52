//! MCP tools/call latency through a running node (`./scripts/bench.sh node
//! mcp --calls 1000`): what an LLM agent waits for each move and read.
//!
//! A node runs on 127.0.0.1 with a graph of `--events` events. Two MCP
//! clients, written here as plain JSON-RPC so that nothing but the
//! protocol is timed, call `status` (a read) and `propose` (a signed,
//! durable append) `--calls` times each:
//! - over stdio: `agora mcp` as a subprocess, as an MCP client configures
//!   it; each call is forwarded to the node over its control channel;
//! - over the node's own streamable HTTP endpoint (`/mcp`, a session kept
//!   open, one keep-alive connection).
//!
//! The floors, measured in the same run: a bare HTTP round trip to the node
//! (`GET /v1/hello`, no work), and a small write made durable (fdatasync) on
//! the disk the store is on, which every append waits for. Figures are p50 /
//! p99 / max in ms, and the p99 as a multiple of the round trip's p99.

use super::harness::{Home, agora_json, new_home, start};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The protocol version both clients ask for (sessions, `initialize`).
const PROTOCOL: &str = "2025-06-18";

pub fn run(agora: &Path, calls: usize, events: usize) -> Result<()> {
    if calls == 0 {
        bail!("--calls must be at least 1");
    }
    let home = new_home(agora)?;
    let node = start(agora, &home, &home.agent, &[])?;
    // The graph the reads run on: events through the CLI would take minutes,
    // so they go through the node's MCP endpoint (not timed).
    let mut http = HttpClient::connect(&node.control.url, &node.control.token)?;
    let mut target = String::new();
    for i in 0..events {
        let r = http.call("propose", json!({ "text": format!("position {i} on the pricing question") }))?;
        if i == 0 {
            target = r["id"].as_str().context("propose returned no id")?.to_string();
        }
    }
    if target.is_empty() {
        target = http.call("propose", json!({ "text": "the one position" }))?["id"].as_str().context("no id")?.to_string();
    }

    let floor = time(calls, || http.hello())?;
    // The floor of a durable append on this disk: a small write made durable
    // (fdatasync), as the store's write-ahead log does for each append.
    let mut file = std::fs::File::create(home.path.join("fsync-probe"))?;
    let fsync = time(calls, || {
        file.write_all(&[0u8; 256])?;
        file.sync_data()?;
        Ok(())
    })?;
    let http_status = time(calls, || http.call("status", json!({ "target": target })).map(drop))?;
    let http_propose = time(calls, || http.call("propose", json!({ "text": "a move over HTTP" })).map(drop))?;
    let mut stdio = StdioClient::spawn(agora, &home)?;
    let stdio_status = time(calls, || stdio.call("status", json!({ "target": target })).map(drop))?;
    let stdio_propose = time(calls, || stdio.call("propose", json!({ "text": "a move over stdio" })).map(drop))?;
    // The node answered every read from its live graph; check one answer is right.
    let s = stdio.call("status", json!({ "target": target }))?;
    if s["status"] != "active" {
        bail!("unexpected status answer: {s}");
    }
    let total = agora_json(agora, &home.path, &["log", "--limit", "100000"])?.as_array().map_or(0, Vec::len);

    println!("mcp: {calls} calls of each tool per transport, node on 127.0.0.1 holding {total} entries of one agent");
    println!("{:<44} {:>8} {:>8} {:>8} {:>10}", "", "p50 ms", "p99 ms", "max ms", "p99/floor");
    let f99 = floor.pct(0.99);
    for (name, t, target) in [
        ("floor: GET /v1/hello (HTTP round trip)", &floor, None),
        ("floor: 256-byte write + fdatasync", &fsync, None),
        ("status over stdio (agora mcp -> node)", &stdio_status, Some(5.0)),
        ("propose over stdio (agora mcp -> node)", &stdio_propose, Some(10.0)),
        ("status over streamable HTTP (/mcp)", &http_status, Some(5.0)),
        ("propose over streamable HTTP (/mcp)", &http_propose, Some(10.0)),
    ] {
        let verdict = match target {
            Some(limit) if t.pct(0.99) < limit => format!("  p99 < {limit} ms: met"),
            Some(limit) => format!("  p99 < {limit} ms: NOT met"),
            None => String::new(),
        };
        println!("{name:<44} {:>8.2} {:>8.2} {:>8.2} {:>9.1}x{verdict}", t.pct(0.5), t.pct(0.99), t.pct(1.0), t.pct(0.99) / f99);
    }
    drop(stdio);
    drop(node);
    Ok(())
}

/// Latencies in ms, sorted.
struct Timings(Vec<f64>);

impl Timings {
    fn pct(&self, p: f64) -> f64 {
        self.0[((self.0.len() as f64 - 1.0) * p).round() as usize]
    }
}

fn time(n: usize, mut f: impl FnMut() -> Result<()>) -> Result<Timings> {
    // A few calls first: connections, caches and the graph warmed.
    for _ in 0..n.min(20) {
        f()?;
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        f()?;
        v.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    v.sort_by(f64::total_cmp);
    Ok(Timings(v))
}

/// The result of a tools/call, or its error.
fn tool_result(reply: &Value) -> Result<Value> {
    if let Some(e) = reply.get("error") {
        bail!("JSON-RPC error: {e}");
    }
    let r = &reply["result"];
    if r["isError"] == true {
        bail!("tool error: {}", r["content"]);
    }
    Ok(r["structuredContent"].clone())
}

/// `agora mcp` over stdio: one JSON-RPC message per line.
struct StdioClient {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    fn spawn(agora: &Path, home: &Home) -> Result<Self> {
        let mut child = Command::new(agora)
            .arg("--home")
            .arg(&home.path)
            .arg("mcp")
            .env_remove("AGORA_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let input = child.stdin.take().context("no stdin")?;
        let output = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut c = Self { child, input, output, next_id: 1 };
        c.request("initialize", json!({ "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "agora-bench", "version": "0" } }))?;
        c.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
        Ok(c)
    }

    fn send(&mut self, msg: &Value) -> Result<()> {
        writeln!(self.input, "{msg}")?;
        self.input.flush()?;
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.output.read_line(&mut line)? == 0 {
                bail!("agora mcp closed its output");
            }
            let v: Value = serde_json::from_str(&line).with_context(|| format!("not JSON-RPC: {line}"))?;
            // Notifications (logging, progress) are skipped.
            if v["id"] == id {
                return Ok(v);
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        tool_result(&self.request("tools/call", json!({ "name": tool, "arguments": args }))?)
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The node's `/mcp` endpoint over streamable HTTP, one session.
struct HttpClient {
    base: String,
    token: String,
    agent: ureq::Agent,
    session: Option<String>,
    next_id: u64,
}

impl HttpClient {
    fn connect(base: &str, token: &str) -> Result<Self> {
        let agent = ureq::Agent::config_builder().proxy(None).http_status_as_error(false).timeout_global(Some(Duration::from_secs(30))).build().new_agent();
        let mut c = Self { base: base.to_string(), token: token.to_string(), agent, session: None, next_id: 1 };
        c.post(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "agora-bench", "version": "0" } } }))?;
        c.post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
        Ok(c)
    }

    /// POST one message; the JSON-RPC reply in the body (JSON, or the
    /// server-sent event that carries it), if any.
    fn post(&mut self, msg: &Value) -> Result<Option<Value>> {
        let mut req = self
            .agent
            .post(format!("{}/mcp", self.base))
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL);
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let mut resp = req.send(msg.to_string())?;
        let status = resp.status().as_u16();
        if let Some(s) = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            self.session = Some(s.to_string());
        }
        let body = resp.body_mut().read_to_string()?;
        if !(200..300).contains(&status) {
            bail!("/mcp answered {status}: {body}");
        }
        if body.trim().is_empty() {
            return Ok(None);
        }
        if let Ok(v) = serde_json::from_str::<Value>(&body) {
            return Ok(Some(v));
        }
        // A server-sent event stream: the data line that is the reply.
        for line in body.lines() {
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
                && v.get("id").is_some()
            {
                return Ok(Some(v));
            }
        }
        bail!("no JSON-RPC reply in {body:?}")
    }

    fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let reply = self.post(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } }))?;
        tool_result(&reply.context("no reply to tools/call")?)
    }

    fn hello(&mut self) -> Result<()> {
        let mut r = self.agent.get(format!("{}/v1/hello", self.base)).call()?;
        r.body_mut().read_to_string()?;
        Ok(())
    }
}
