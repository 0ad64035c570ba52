//! What the node benchmarks share: homes, `agora` commands and their JSON,
//! node processes and their control API, filled stores, waiting and
//! resident memory.

use agora_core::AgentKey;
use agora_store::{Store, StoreOptions};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Home {
    _dir: tempfile::TempDir,
    pub(crate) path: PathBuf,
    pub(crate) agent: String,
}

pub(crate) fn agora_cmd(agora: &Path, home: &Path) -> Command {
    let mut c = Command::new(agora);
    c.arg("--home").arg(home).env_remove("AGORA_HOME").stdin(Stdio::null());
    c
}

pub(crate) fn agora_json(agora: &Path, home: &Path, args: &[&str]) -> Result<Value> {
    let out = agora_cmd(agora, home).arg("--json").args(args).output()?;
    if !out.status.success() {
        bail!("agora {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

pub(crate) fn new_home(agora: &Path) -> Result<Home> {
    let dir = tempfile::tempdir_in(std::env::var_os("AGORA_BENCH_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir))?;
    let path = dir.path().join("home");
    let v = agora_json(agora, &path, &["init"])?;
    let agent = v["agent"].as_str().context("init printed no agent")?.to_string();
    Ok(Home { _dir: dir, path, agent })
}

pub(super) fn key_of(home: &Path) -> Result<AgentKey> {
    let bytes = std::fs::read(home.join("agent.key"))?;
    Ok(AgentKey::from_key_file_bytes(&bytes)?)
}

/// Fill `home`'s own chain with `n` entries (unsynced batches: setup, not measured).
pub(super) fn fill(home: &Path, n: usize, payload_bytes: usize) -> Result<()> {
    let key = key_of(home)?;
    let store = Store::open(home.join("store"), &StoreOptions { sync: false, ..Default::default() })?;
    let payloads: Vec<Vec<u8>> = (0..1000).map(|i| format!("{i:0>width$}", width = payload_bytes).into_bytes()).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    let mut done = 0;
    while done < n {
        let k = (n - done).min(1000);
        store.append_batch(&key, &refs[..k], 1_700_000_000_000 + done as u64)?;
        done += k;
    }
    // As a node that stored them over time would: on disk, not in the log.
    store.flush()?;
    Ok(())
}

pub(crate) struct Node {
    pub(super) child: Child,
    pub(super) addr: String,
    pub(crate) control: NodeControl,
}

pub(crate) struct NodeControl {
    pub(crate) url: String,
    pub(crate) token: String,
}

impl NodeControl {
    pub(super) fn status(&self) -> Result<Value> {
        let agent = ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(10))).build().new_agent();
        let mut r = agent.get(format!("{}/v1/status", self.url)).header("authorization", format!("Bearer {}", self.token)).call()?;
        Ok(serde_json::from_str(&r.body_mut().read_to_string()?)?)
    }
    /// `GET /v1/memory`: the views' memory by part.
    pub(super) fn memory(&self) -> Result<Value> {
        let agent = ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(60))).build().new_agent();
        let mut r = agent.get(format!("{}/v1/memory", self.url)).header("authorization", format!("Bearer {}", self.token)).call()?;
        Ok(serde_json::from_str(&r.body_mut().read_to_string()?)?)
    }
    /// `POST /v1/ops/<name>`: the status and the answer.
    pub(super) fn op(&self, name: &str, input: &Value) -> Result<(u16, Value)> {
        let agent = ureq::Agent::config_builder().proxy(None).http_status_as_error(false).timeout_global(Some(Duration::from_secs(60))).build().new_agent();
        let mut r = agent
            .post(format!("{}/v1/ops/{name}", self.url))
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .config()
            .max_response_header_size(64 * 1024)
            .build()
            .send(input.to_string())?;
        let status = r.status().as_u16();
        let text = r.body_mut().with_config().limit(1 << 30).read_to_string()?;
        Ok((status, serde_json::from_str(&text)?))
    }
    /// The node's derived status of reasoning node `id` (`POST
    /// /v1/ops/status`), or `None` while its graph does not show it.
    pub(super) fn derived_status(&self, id: &str) -> Result<Option<String>> {
        match self.op("status", &serde_json::json!({ "target": id }))? {
            (200, v) => Ok(v["status"].as_str().map(str::to_string)),
            _ => Ok(None),
        }
    }
    /// The node's `/metrics` text.
    pub(super) fn metrics(&self) -> Result<String> {
        let agent = ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(10))).build().new_agent();
        Ok(agent.get(format!("{}/metrics", self.url)).header("authorization", format!("Bearer {}", self.token)).call()?.body_mut().read_to_string()?)
    }

    pub(super) fn max_seq(&self, author: &str) -> Result<u64> {
        let s = self.status()?;
        Ok(s["frontier"].as_array().into_iter().flatten().find(|f| f["author"] == author).and_then(|f| f["max_seq"].as_u64()).unwrap_or(0))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(agora: &Path, home: &Home, founder: &str, bootstrap: &[&str]) -> Result<Node> {
    let ready = home.path.join("ready.json");
    let _ = std::fs::remove_file(&ready);
    let mut c = agora_cmd(agora, &home.path);
    c.args(["node", "run", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--workspace", "bench", "--founder", founder])
        .arg("--ready-file")
        .arg(&ready)
        .env("AGORA_LOG", std::env::var("AGORA_BENCH_LOG").unwrap_or_else(|_| "warn".into()))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for b in bootstrap {
        c.args(["--bootstrap", b]);
    }
    let mut child = c.spawn()?;
    let start = Instant::now();
    let v: Value = loop {
        if let Some(status) = child.try_wait()? {
            bail!("node exited early: {status}");
        }
        if let Ok(text) = std::fs::read_to_string(&ready)
            && let Ok(v) = serde_json::from_str(&text)
        {
            break v;
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!("node not ready after 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let node_file: Value = serde_json::from_str(&std::fs::read_to_string(home.path.join("node.json"))?)?;
    Ok(Node {
        child,
        addr: v["listen"][0].as_str().context("no listen address")?.to_string(),
        control: NodeControl {
            url: format!("http://{}", node_file["control"].as_str().context("no control address")?),
            token: node_file["token"].as_str().context("no token")?.to_string(),
        },
    })
}

pub(super) fn wait_until(limit: Duration, mut done: impl FnMut() -> Result<bool>) -> Result<Duration> {
    let start = Instant::now();
    loop {
        if done()? {
            return Ok(start.elapsed());
        }
        if start.elapsed() > limit {
            bail!("not done after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub(super) fn rss_kib(pid: u32) -> Result<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field =
        |name: &str| -> u64 { text.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0) };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// Store the merge bench's swarm of `agents` x `per_agent` events in the
/// home's store (before its node starts), its agents admitted by the
/// home's ([`admit_all`]). Returns how many entries.
pub(super) fn store_swarm(agora: &Path, home: &Home, agents: usize, per_agent: usize) -> Result<usize> {
    let t = Instant::now();
    let entries = crate::merge_bench::swarm(agents, per_agent);
    let n = entries.len();
    let store = Store::open(home.path.join("store"), &StoreOptions { sync: false, ..Default::default() })?;
    for chunk in entries.chunks(10_000) {
        let items = chunk
            .iter()
            .map(|e| agora_store::ImportItem { entry: e.signed().clone(), payload: e.payload().map(<[u8]>::to_vec), origin: "bench".into() })
            .collect();
        store.import(items, 1_800_000_000_000)?;
    }
    store.flush()?;
    drop(store);
    admit_all(agora, home, entries.iter().map(|e| e.author()))?;
    eprintln!("{n} entries stored in {:.0} s", t.elapsed().as_secs_f64());
    Ok(n)
}

/// The home's agent, the founder of its node's workspace, admits every one
/// of `authors` (before the node starts): the views count only the chains
/// the roster admits (`protocol-spec/roster.md`).
pub(super) fn admit_all(agora: &Path, home: &Home, authors: impl IntoIterator<Item = agora_core::AgentId>) -> Result<()> {
    let authors: std::collections::BTreeSet<agora_core::AgentId> = authors.into_iter().collect();
    for author in authors {
        agora_json(agora, &home.path, &["admit", &author.to_string(), "bench agent"])?;
    }
    Ok(())
}
