//! Benchmarks of real `agora node run` processes on 127.0.0.1: full sync of a
//! chain between two nodes, gossip latency across a swarm, and node memory
//! while holding many entries. Every figure is printed with this machine's
//! batch-verify rate measured in the same run.
//!
//! Run: `./scripts/bench.sh node sync --entries 100000`,
//! `./scripts/bench.sh node gossip --nodes 10 --events 100`,
//! `./scripts/bench.sh node rss --entries 1000000`,
//! `./scripts/bench.sh node mcp --calls 1000` (see `mcp_bench.rs`).

use agora_core::identity::KEY_FILE_BYTES;
use agora_core::verify::verify_signatures;
use agora_core::{AgentKey, SignedEntry};
use agora_store::{Store, StoreOptions};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct NodeArgs {
    #[command(subcommand)]
    what: What,
    /// The `agora` binary (default: next to this one).
    #[arg(long, global = true)]
    agora: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum What {
    /// Full sync of one chain from a node to a fresh node.
    Sync {
        #[arg(long, default_value_t = 100_000)]
        entries: usize,
        #[arg(long, default_value_t = 256)]
        payload_bytes: usize,
    },
    /// Time for a new event to reach every node of a local swarm.
    Gossip {
        #[arg(long, default_value_t = 10)]
        nodes: usize,
        #[arg(long, default_value_t = 100)]
        events: usize,
    },
    /// MCP tools/call latency through a running node: `status` and `propose`,
    /// over stdio (`agora mcp`, which forwards each call to the node) and over
    /// the node's streamable HTTP endpoint, beside a bare HTTP round trip to
    /// the node (`GET /v1/hello`), the floor of any call.
    Mcp {
        /// Calls of each tool on each transport.
        #[arg(long, default_value_t = 1000)]
        calls: usize,
        /// Events in the graph before measuring.
        #[arg(long, default_value_t = 1000)]
        events: usize,
    },
    /// Merge-layer reads through a running node holding the merge bench's
    /// swarm (100 agents x 10,000 events by default): the time to build its
    /// live merged view at start, then `view-hash` and `consensus --quorum 2`
    /// (each a whole `agora` command, forwarded to the node) after each new
    /// entry, and the node's memory.
    Views {
        #[arg(long, default_value_t = 100)]
        agents: usize,
        #[arg(long, default_value_t = 10_000)]
        events_per_agent: usize,
        /// New entries, each followed by the reads.
        #[arg(long, default_value_t = 200)]
        rounds: usize,
    },
    /// A sustained load into one node: the entries of 10 agents (the merge
    /// bench's swarm: reasoning, accepts, disputes, withdrawals), imported
    /// through the node in batches every 100 ms; how far behind the commits
    /// the live merged view runs (the node's `merge_view_lag_seconds`) and
    /// the CPU its view thread and the whole node use.
    Load {
        /// Entries per second.
        #[arg(long, default_value_t = 1000)]
        rate: usize,
        #[arg(long, default_value_t = 10)]
        agents: usize,
        #[arg(long, default_value_t = 30)]
        seconds: usize,
        /// Agents of a swarm stored before the node starts (the merge
        /// bench's; 0: the load goes into an empty node).
        #[arg(long, default_value_t = 0)]
        preload_agents: usize,
        /// Events on each preloaded agent's chain.
        #[arg(long, default_value_t = 10_000)]
        preload_events: usize,
        /// Each agent's entries reach the node up to this long after they
        /// were written (a delay per agent, in ms of the swarm's clock, one
        /// entry a millisecond), so most arrive after a later entry of
        /// another agent: out of log order. 0: in log order.
        #[arg(long, default_value_t = 0)]
        skew_ms: u64,
    },
    /// Resident memory of a node holding many entries, idle and while serving
    /// and receiving a full sync.
    Rss {
        #[arg(long, default_value_t = 1_000_000)]
        entries: usize,
        #[arg(long, default_value_t = 256)]
        payload_bytes: usize,
    },
}

pub fn run(args: NodeArgs) -> Result<()> {
    let agora = match args.agora {
        Some(p) => p,
        None => std::env::current_exe()?.parent().context("bench binary has no directory")?.join("agora"),
    };
    for program in [agora.clone(), agora.with_file_name("agora-node")] {
        if !program.exists() {
            bail!("{} not found: build it with `cargo build --release --workspace --locked --bins`", program.display());
        }
    }
    match args.what {
        What::Sync { entries, payload_bytes } => sync(&agora, entries, payload_bytes),
        What::Gossip { nodes, events } => gossip(&agora, nodes, events),
        What::Rss { entries, payload_bytes } => rss(&agora, entries, payload_bytes),
        What::Views { agents, events_per_agent, rounds } => views(&agora, agents, events_per_agent, rounds),
        What::Load { rate, agents, seconds, preload_agents, preload_events, skew_ms } => {
            load(&agora, rate, agents, seconds, preload_agents, preload_events, skew_ms)
        }
        What::Mcp { calls, events } => crate::mcp_bench::run(&agora, calls, events),
    }
}

/// This machine's batch verification rate for one chain (batches of
/// `VERIFY_BATCH_LEN` signatures of one key, as replication verifies them),
/// one thread: the denominator of the sync figure.
fn batch_verify_rate(key: &AgentKey) -> f64 {
    let mut prev: Option<SignedEntry> = None;
    let entries: Vec<SignedEntry> = (0..4096u64)
        .map(|i| {
            let p = format!("{i:0>256}");
            let e = SignedEntry::sign(agora_core::entry::next_header(key.agent_id(), prev.as_ref(), i, p.as_bytes()).unwrap_or_else(|_| unreachable!()), key);
            prev = Some(e.clone());
            e
        })
        .collect();
    let refs: Vec<&SignedEntry> = entries.iter().collect();
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed() < Duration::from_secs(2) {
        for chunk in refs.chunks(agora_core::limits::VERIFY_BATCH_LEN) {
            let _ = verify_signatures(chunk);
        }
        n += refs.len();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

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

fn key_of(home: &Path) -> Result<AgentKey> {
    let bytes = std::fs::read(home.join("agent.key"))?;
    if bytes.len() != KEY_FILE_BYTES {
        bail!("unexpected key file length");
    }
    Ok(AgentKey::from_key_file_bytes(&bytes)?)
}

/// Fill `home`'s own chain with `n` entries (unsynced batches: setup, not measured).
fn fill(home: &Path, n: usize, payload_bytes: usize) -> Result<()> {
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
    child: Child,
    addr: String,
    pub(crate) control: NodeControl,
}

pub(crate) struct NodeControl {
    pub(crate) url: String,
    pub(crate) token: String,
}

impl NodeControl {
    fn status(&self) -> Result<Value> {
        let agent = ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(10))).build().new_agent();
        let mut r = agent.get(format!("{}/v1/status", self.url)).header("authorization", format!("Bearer {}", self.token)).call()?;
        Ok(serde_json::from_str(&r.body_mut().read_to_string()?)?)
    }
    /// `GET /v1/memory`: the views' memory by part.
    fn memory(&self) -> Result<Value> {
        let agent = ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(60))).build().new_agent();
        let mut r = agent.get(format!("{}/v1/memory", self.url)).header("authorization", format!("Bearer {}", self.token)).call()?;
        Ok(serde_json::from_str(&r.body_mut().read_to_string()?)?)
    }
    /// `POST /v1/ops/<name>`: the status and the answer.
    fn op(&self, name: &str, input: &Value) -> Result<(u16, Value)> {
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
    fn derived_status(&self, id: &str) -> Result<Option<String>> {
        match self.op("status", &serde_json::json!({ "target": id }))? {
            (200, v) => Ok(v["status"].as_str().map(str::to_string)),
            _ => Ok(None),
        }
    }
    /// The node's `/metrics` text.
    fn metrics(&self) -> Result<String> {
        let agent = ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(10))).build().new_agent();
        Ok(agent.get(format!("{}/metrics", self.url)).header("authorization", format!("Bearer {}", self.token)).call()?.body_mut().read_to_string()?)
    }

    fn max_seq(&self, author: &str) -> Result<u64> {
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

fn wait_until(limit: Duration, mut done: impl FnMut() -> Result<bool>) -> Result<Duration> {
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

fn rss_kib(pid: u32) -> Result<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field =
        |name: &str| -> u64 { text.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0) };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

fn sync(agora: &Path, entries: usize, payload_bytes: usize) -> Result<()> {
    let a = new_home(agora)?;
    let b = new_home(agora)?;
    let verify_rate = batch_verify_rate(&key_of(&a.path)?);
    fill(&a.path, entries, payload_bytes)?;
    let node_a = start(agora, &a, &a.agent, &[])?;
    let t0 = Instant::now();
    let node_b = start(agora, &b, &a.agent, &[&node_a.addr])?;
    let target = entries as u64;
    wait_until(Duration::from_secs(600), || Ok(node_b.control.max_seq(&a.agent)? >= target))?;
    let elapsed = t0.elapsed();
    let (rss_a, hwm_a) = rss_kib(node_a.child.id())?;
    let (rss_b, hwm_b) = rss_kib(node_b.child.id())?;
    drop(node_b);
    drop(node_a);
    // The receiver's store verifies end to end after the sync.
    let verified = agora_json(agora, &b.path, &["verify"])?;
    let rate = entries as f64 / elapsed.as_secs_f64();
    println!("full sync of {entries} entries ({payload_bytes}-byte payloads), node process to node process over 127.0.0.1 TCP,");
    println!("verified (batched signatures, payload hashes, links) and stored durably (synced WAL):");
    println!("  elapsed (start of the receiving node to its last entry stored): {:.2} s", elapsed.as_secs_f64());
    println!("  sync rate:                          {rate:>10.0} entries/s (target >= 35,000)");
    println!("  this machine's batch verify (1 thread, {} per batch, one key): {verify_rate:>10.0} signatures/s", agora_core::limits::VERIFY_BATCH_LEN);
    println!("  ratio sync / batch verify:          {:>10.2}", rate / verify_rate);
    println!("  receiver store verifies clean:      {}", verified["ok"]);
    println!("  RSS after sync: sender {} MiB (peak {}), receiver {} MiB (peak {})", rss_a / 1024, hwm_a / 1024, rss_b / 1024, hwm_b / 1024);
    Ok(())
}

fn gossip(agora: &Path, n: usize, events: usize) -> Result<()> {
    if n < 2 {
        bail!("--nodes must be at least 2");
    }
    let homes: Vec<Home> = (0..n).map(|_| new_home(agora)).collect::<Result<_>>()?;
    let founder = homes[0].agent.clone();
    for h in &homes[1..] {
        agora_json(agora, &homes[0].path, &["admit", &h.agent])?;
    }
    let first = start(agora, &homes[0], &founder, &[])?;
    let mut nodes = vec![first];
    for h in &homes[1..] {
        let boot = nodes[0].addr.clone();
        nodes.push(start(agora, h, &founder, &[&boot])?);
    }
    // Ready: every node holds the roster and has joined the gossip topic.
    wait_until(Duration::from_secs(60), || {
        for node in &nodes {
            let s = node.control.status()?;
            if s["gossip"]["topic_peers"].as_u64().unwrap_or(0) < 1 || node.control.max_seq(&founder)? < (n - 1) as u64 {
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    // Two times per event: until every node holds the entry, and until every
    // node's derived status (its reasoning graph, through its API) shows it.
    let mut latencies = Vec::with_capacity(events);
    let mut derived = Vec::with_capacity(events);
    for i in 0..events {
        let origin = i % n;
        let home = &homes[origin];
        let before = nodes[origin].control.max_seq(&home.agent)?;
        let t0 = Instant::now();
        let id = agora_json(agora, &home.path, &["propose", &format!("event {i}")])?["id"].as_str().context("propose printed no id")?.to_string();
        let mut held: Vec<Option<Duration>> = vec![None; n];
        let mut shown: Vec<Option<Duration>> = vec![None; n];
        let deadline = Instant::now() + Duration::from_secs(30);
        while shown.iter().any(Option::is_none) {
            if Instant::now() > deadline {
                bail!("event {i} not in every node's derived status after 30 s");
            }
            for (k, node) in nodes.iter().enumerate() {
                if held[k].is_none() && node.control.max_seq(&home.agent)? > before {
                    held[k] = Some(t0.elapsed());
                }
                if shown[k].is_none() && node.control.derived_status(&id)?.is_some() {
                    shown[k] = Some(t0.elapsed());
                    held[k].get_or_insert(t0.elapsed());
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let last = |v: &[Option<Duration>]| v.iter().flatten().max().copied().unwrap_or_default().as_secs_f64() * 1000.0;
        latencies.push(last(&held));
        derived.push(last(&shown));
    }
    latencies.sort_by(f64::total_cmp);
    derived.sort_by(f64::total_cmp);
    let pct = |v: &[f64], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!("gossip: {events} events, each recorded on one of {n} nodes (round robin) with `agora propose`;");
    println!("time from issuing the command to the last of the {n} nodes (every node polled in turn, 1 ms apart):");
    println!(
        "  holding the entry:             p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 1000 ms)",
        pct(&latencies, 0.5),
        pct(&latencies, 0.9),
        pct(&latencies, 0.99),
        pct(&latencies, 1.0)
    );
    println!(
        "  showing it in derived status:  p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 100 ms)",
        pct(&derived, 0.5),
        pct(&derived, 0.9),
        pct(&derived, 0.99),
        pct(&derived, 1.0)
    );
    Ok(())
}

fn rss(agora: &Path, entries: usize, payload_bytes: usize) -> Result<()> {
    let a = new_home(agora)?;
    let b = new_home(agora)?;
    fill(&a.path, entries, payload_bytes)?;
    let node_a = start(agora, &a, &a.agent, &[])?;
    // Idle once its views are built: the first answer from the merged view
    // waits for the build that every node does at start.
    agora_json(agora, &a.path, &["view-hash"])?;
    std::thread::sleep(Duration::from_secs(2));
    let (idle, idle_hwm) = rss_kib(node_a.child.id())?;
    let t0 = Instant::now();
    let node_b = start(agora, &b, &a.agent, &[&node_a.addr])?;
    let target = entries as u64;
    let mut peak_a = 0;
    let mut peak_b = 0;
    wait_until(Duration::from_secs(3600), || {
        peak_a = peak_a.max(rss_kib(node_a.child.id())?.0);
        peak_b = peak_b.max(rss_kib(node_b.child.id())?.0);
        Ok(node_b.control.max_seq(&a.agent)? >= target)
    })?;
    let took = t0.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let (after_b, hwm_b) = rss_kib(node_b.child.id())?;
    let status_b = node_b.control.status()?;
    let store_memory = status_b["store_memory"].clone();
    let allocator = |k: &str| status_b["memory"][k].as_u64().unwrap_or(0) >> 20;
    let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", node_b.child.id())).unwrap_or_default();
    let rollup_mib = |name: &str| -> u64 {
        rollup.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) / 1024
    };
    let (anon_b, file_b) = (rollup_mib("Anonymous:"), rollup_mib("Rss:").saturating_sub(rollup_mib("Anonymous:")));
    let (_, hwm_a) = rss_kib(node_a.child.id())?;
    println!("node memory holding {entries} entries ({payload_bytes}-byte payloads):");
    println!("  sender, idle after start (views built): RSS {} MiB (peak so far {} MiB: the merged view built from the store)", idle / 1024, idle_hwm / 1024);
    println!("  sender, serving a full sync:        peak RSS {} MiB (VmHWM {} MiB)", peak_a / 1024, hwm_a / 1024);
    println!("  receiver, during the sync:          peak RSS {} MiB (VmHWM {} MiB)", peak_b / 1024, hwm_b / 1024);
    println!("  receiver, holding all of them:      RSS {} MiB ({anon_b} MiB anonymous, {file_b} MiB file-backed)", after_b / 1024);
    println!(
        "    of which the allocator: {} MiB allocated, {} MiB resident ({} MiB its metadata)",
        allocator("allocated"),
        allocator("resident"),
        allocator("metadata")
    );
    let mib = |k: &str| store_memory[k].as_u64().unwrap_or(0) as f64 / f64::from(1 << 20);
    println!(
        "    of which RocksDB: memtables {:.0} MiB, block cache {:.0} MiB ({:.0} pinned), table readers {:.0} MiB",
        mib("memtables_bytes"),
        mib("block_cache_bytes"),
        mib("block_cache_pinned_bytes"),
        mib("table_readers_bytes")
    );
    println!("  (sync took {:.1} s = {:.0} entries/s; target: RSS < 150 MiB)", took.as_secs_f64(), entries as f64 / took.as_secs_f64());
    Ok(())
}

/// Store the merge bench's swarm of `agents` x `per_agent` events in the
/// home's store (before its node starts). Returns how many entries.
fn store_swarm(home: &Home, agents: usize, per_agent: usize) -> Result<usize> {
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
    eprintln!("{n} entries stored in {:.0} s", t.elapsed().as_secs_f64());
    Ok(n)
}

fn views(agora: &Path, agents: usize, per_agent: usize, rounds: usize) -> Result<()> {
    let home = new_home(agora)?;
    let n = store_swarm(&home, agents, per_agent)?;
    let t = Instant::now();
    let node = start(agora, &home, &home.agent, &[])?;
    let ready = t.elapsed();
    // The first answer waits for the view built at start.
    let t = Instant::now();
    agora_json(agora, &home.path, &["view-hash"])?;
    let built = t.elapsed();
    // Memory at points of the run: RSS, and what the allocator says the
    // node's structures hold (allocated) and keeps resident.
    let mut memory: Vec<(&str, String)> = Vec::new();
    let mut memory_at = |what: &'static str, node: &Node| -> Result<()> {
        std::thread::sleep(Duration::from_secs(2)); // freed pages go back within a second
        let (rss, _) = rss_kib(node.child.id())?;
        let status = node.control.status()?;
        let (m, store) = (&status["memory"], &status["store_memory"]);
        let mib = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0) >> 20;
        // The resident set's anonymous and file-backed parts (the program's
        // pages), and what RocksDB holds outside the allocator.
        let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", node.child.id())).unwrap_or_default();
        let rollup_mib = |name: &str| -> u64 {
            rollup.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) / 1024
        };
        let (anon, file) = (rollup_mib("Anonymous:"), rollup_mib("Rss:").saturating_sub(rollup_mib("Anonymous:")));
        memory.push((
            what,
            format!(
                "RSS {} MiB ({anon} anonymous, {file} file-backed); allocated {} MiB, resident {} MiB, metadata {} MiB; RocksDB: block cache {} MiB, memtables {} MiB, table readers {} MiB",
                rss / 1024,
                mib(m, "allocated"),
                mib(m, "resident"),
                mib(m, "metadata"),
                mib(store, "block_cache_bytes"),
                mib(store, "memtables_bytes"),
                mib(store, "table_readers_bytes"),
            ),
        ));
        Ok(())
    };
    memory_at("the live merged view built", &node)?;
    // A reasoning read builds the node's reasoning graph (on first use).
    let probe = agora_json(agora, &home.path, &["propose", "memory probe"])?;
    agora_json(agora, &home.path, &["status", probe["id"].as_str().context("propose printed no id")?])?;
    memory_at("the reasoning graph built too", &node)?;
    let timed_as = |json: bool, args: &[&str]| -> Result<Duration> {
        let t = Instant::now();
        let mut cmd = agora_cmd(agora, &home.path);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.args(args).output()?;
        let took = t.elapsed();
        // `audit` exits 3 on a chain with forks, which the swarm has.
        let audited = args.first() == Some(&"audit") && out.status.code() == Some(3);
        if !out.status.success() && !audited {
            bail!("agora {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(took)
    };
    let timed = |args: &[&str]| timed_as(true, args);
    let timed_op = |name: &str, input: Value| -> Result<Duration> {
        let t = Instant::now();
        let (status, v) = node.control.op(name, &input)?;
        let took = t.elapsed();
        if status != 200 {
            bail!("{name}: {status} {v}");
        }
        Ok(took)
    };
    let (mut hash_http, mut consensus_http) = (Vec::new(), Vec::new());
    // The floor: a command the node answers without reading any view.
    let (mut hash, mut consensus, mut consensus_json, mut floor) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut consensus_summary, mut consensus_summary_http) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        timed(&["propose", &format!("live view round {i}")])?;
        hash.push(timed(&["view-hash"])?);
        consensus.push(timed_as(false, &["consensus", "--quorum", "2"])?);
        consensus_json.push(timed(&["consensus", "--quorum", "2"])?);
        floor.push(timed(&["node", "status"])?);
        hash_http.push(timed_op("view_hash", serde_json::json!({}))?);
        consensus_http.push(timed_op("consensus", serde_json::json!({ "quorum": 2 }))?);
        consensus_summary.push(timed(&["consensus", "--quorum", "2", "--summary"])?);
        consensus_summary_http.push(timed_op("consensus", serde_json::json!({ "quorum": 2, "summary": true }))?);
    }
    // The node's agent accepts the first half of every chain of the swarm,
    // so its perspective holds about half the history; asked once, it is
    // built by replay, then kept current with every update.
    let chains: Vec<(String, u64)> = agora_json(agora, &home.path, &["consensus", "--quorum", "1"])?["chains"]
        .as_array()
        .context("consensus printed no chains")?
        .iter()
        .filter_map(|c| Some((c["author"].as_str()?.to_string(), c["view_len"].as_u64()?)))
        .filter(|(a, len)| *a != home.agent && *len >= 2)
        .collect();
    for (author, len) in &chains {
        timed(&["accept", author, &(len / 2).to_string()])?;
    }
    let t = Instant::now();
    let first = agora_json(agora, &home.path, &["perspective", "--summary"])?;
    let perspective_built = t.elapsed();
    let perspective_nodes = first["node_count"].as_u64().unwrap_or(0);
    memory_at("the perspective built", &node)?;
    let (mut perspective, mut perspective_http) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        timed(&["propose", &format!("perspective round {i}")])?;
        perspective.push(timed(&["perspective", "--summary"])?);
        perspective_http.push(timed_op("perspective", serde_json::json!({ "summary": true }))?);
    }
    // An accept that reaches further into another chain's history: the
    // perspective takes in events older than its last one, and is replayed.
    // The view thread drops the perspective rather than replay it, so a
    // read of the merged view right after does not wait for the replay;
    // the perspective is replayed when it is next asked for.
    let reach_back = match chains.first() {
        Some((author, len)) => {
            timed(&["accept", author, &len.to_string()])?;
            let hash_after = timed(&["view-hash"])?;
            Some((hash_after, timed(&["perspective", "--summary"])?))
        }
        None => None,
    };
    memory_at("the perspective replayed after the accept", &node)?;
    // Audits of whole chains (10,000 entries each in the swarm): the chain
    // read and checked again, the merge events about it from the live view.
    let mut audit = Vec::new();
    for (i, (author, _)) in chains.iter().cycle().take(rounds.min(50)).enumerate() {
        timed(&["propose", &format!("audit round {i}")])?;
        audit.push(timed(&["audit", author])?);
    }
    memory_at("the audits read", &node)?;
    // The disagreement map (every open dispute with the reasoning that led
    // to it, every fork with who accepts and builds on each side): the
    // first ask indexes the references into forked chains (one pass over
    // the store), later ones read the disputed entries, their ancestors and
    // the forked chains only.
    let disputes_first = timed(&["disputes"])?;
    // What it prints: every disputed event lists every agent that accepts it.
    let map = agora_json(agora, &home.path, &["disputes"])?;
    let map_bytes = serde_json::to_vec(&map)?.len();
    let listed = |field: &str| map["disputed"].as_array().map_or(0, |d| d.iter().map(|x| x[field].as_array().map_or(0, Vec::len)).sum::<usize>());
    let (map_events, map_acceptors) = (map["disputed"].as_array().map_or(0, Vec::len), listed("accepted_by"));
    drop(map);
    let (mut disputes, mut disputes_summary) = (Vec::new(), Vec::new());
    for i in 0..rounds.min(50) {
        timed(&["propose", &format!("disputes round {i}")])?;
        disputes.push(timed(&["disputes"])?);
        disputes_summary.push(timed(&["disputes", "--summary"])?);
    }
    let summary_bytes = serde_json::to_vec(&agora_json(agora, &home.path, &["disputes", "--summary"])?)?.len();
    memory_at("the disagreement maps read", &node)?;
    // The start-up floor of each program: the command line that forwards,
    // and the full program it hands local commands to.
    let full = agora.with_file_name("agora-node");
    let (mut start_client, mut start_full) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        for (program, out) in [(agora, &mut start_client), (full.as_path(), &mut start_full)] {
            let t = Instant::now();
            let status = std::process::Command::new(program).arg("--version").stdout(std::process::Stdio::null()).status()?;
            out.push(t.elapsed());
            if !status.success() {
                bail!("{} --version failed", program.display());
            }
        }
    }
    for v in [&mut perspective, &mut perspective_http, &mut audit, &mut disputes, &mut disputes_summary, &mut start_client, &mut start_full] {
        v.sort();
    }
    for v in
        [&mut hash, &mut consensus, &mut consensus_json, &mut floor, &mut hash_http, &mut consensus_http, &mut consensus_summary, &mut consensus_summary_http]
    {
        v.sort();
    }
    memory_at("at the end of the reads", &node)?;
    // Where the views' memory goes, as each view counts it.
    let views_memory = node.control.memory()?;
    let (rss, hwm) = rss_kib(node.child.id())?;
    // The same audit with no node: the command reads every entry and
    // recomputes the merge.
    drop(node);
    let audit_by_hand = match chains.first() {
        Some((author, _)) => Some(timed(&["audit", author])?),
        None => None,
    };
    let disputes_by_hand = timed(&["disputes"])?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let q = |v: &[Duration], p: f64| ms(crate::percentile(v, p));
    println!("a node holding {n} entries ({agents} agents x {per_agent} events, the merge bench's swarm):");
    println!("  start: ready in {:.2} s; first view-hash answered {:.2} s later (the live merged view built once)", ready.as_secs_f64(), built.as_secs_f64());
    println!("  after each of {rounds} new entries (`agora propose` through the node), whole `agora --json` commands:");
    println!("    view-hash:            p50 {:.1} ms, p99 {:.1} ms", q(&hash, 0.5), q(&hash, 0.99));
    println!("    consensus --quorum 2 (text: one line per chain): p50 {:.1} ms, p99 {:.1} ms", q(&consensus, 0.5), q(&consensus, 0.99));
    println!("    consensus --quorum 2 --json (every disputed event listed): p50 {:.1} ms, p99 {:.1} ms", q(&consensus_json, 0.5), q(&consensus_json, 0.99));
    println!("  the same through the HTTP API (POST /v1/ops/<name>, JSON answers, no process started):");
    println!("    view_hash:            p50 {:.1} ms, p99 {:.1} ms", q(&hash_http, 0.5), q(&hash_http, 0.99));
    println!("    consensus quorum 2:   p50 {:.1} ms, p99 {:.1} ms (every disputed event listed)", q(&consensus_http, 0.5), q(&consensus_http, 0.99));
    println!(
        "    consensus quorum 2, summary (disputed events counted): p50 {:.1} ms, p99 {:.1} ms; the same as a whole `agora --json consensus --quorum 2 --summary`: p50 {:.1} ms, p99 {:.1} ms",
        q(&consensus_summary_http, 0.5),
        q(&consensus_summary_http, 0.99),
        q(&consensus_summary, 0.5),
        q(&consensus_summary, 0.99)
    );
    println!(
        "  perspective of the node's agent ({perspective_nodes} nodes): built when first asked in {:.2} s, then kept current",
        perspective_built.as_secs_f64()
    );
    println!(
        "    perspective --summary: p50 {:.1} ms, p99 {:.1} ms; through the HTTP API p50 {:.1} ms, p99 {:.1} ms",
        q(&perspective, 0.5),
        q(&perspective, 0.99),
        q(&perspective_http, 0.5),
        q(&perspective_http, 0.99)
    );
    if let Some((hash_after, d)) = reach_back {
        println!(
            "    after an accept that reaches further back into a chain: view-hash {:.1} ms (the perspective is not replayed on the view thread); the perspective, replayed when next asked: {:.0} ms",
            ms(hash_after),
            ms(d)
        );
    }
    println!("  audit <chain> (one of {} chains, after a new entry each time): p50 {:.1} ms, p99 {:.1} ms", chains.len(), q(&audit, 0.5), q(&audit, 0.99));
    if let Some(d) = audit_by_hand {
        println!("    the same audit with the node stopped (every entry read, the merge recomputed): {:.0} ms", ms(d));
    }
    println!(
        "  disputes (the whole disagreement map, JSON: {map_events} disputed events, {map_acceptors} acceptors listed, {:.0} MB): first {:.0} ms (references into forked chains indexed), then after each of {} new entries p50 {:.1} ms, p99 {:.1} ms; with the node stopped (every entry read, the merge recomputed): {:.0} ms",
        map_bytes as f64 / 1e6,
        ms(disputes_first),
        disputes.len(),
        q(&disputes, 0.5),
        q(&disputes, 0.99),
        ms(disputes_by_hand)
    );
    println!(
        "    disputes --summary (acceptors and fork sides' entries counted, {:.1} MB): p50 {:.1} ms, p99 {:.1} ms",
        summary_bytes as f64 / 1e6,
        q(&disputes_summary, 0.5),
        q(&disputes_summary, 0.99)
    );
    println!("    node status (floor: a command that reads no view): p50 {:.1} ms, p99 {:.1} ms", q(&floor, 0.5), q(&floor, 0.99));
    println!(
        "  start-up, `--version` x100: agora (the command line) p50 {:.2} ms, p99 {:.2} ms; agora-node (the full program) p50 {:.2} ms, p99 {:.2} ms",
        q(&start_client, 0.5),
        q(&start_client, 0.99),
        q(&start_full, 0.5),
        q(&start_full, 0.99)
    );
    println!("  node RSS {} MiB (peak {} MiB)", rss / 1024, hwm / 1024);
    for (what, line) in &memory {
        println!("    memory, {what}: {line}");
    }
    // GET /v1/memory: each view's parts, in MiB.
    let parts = |v: &Value| -> String {
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        let total: u64 = v.as_object().map_or(0, |o| o.values().filter_map(Value::as_u64).sum());
        let list: Vec<String> = v
            .as_object()
            .map_or_else(Vec::new, |o| o.iter().filter_map(|(k, b)| b.as_u64().filter(|&b| b >= 1 << 19).map(|b| format!("{k} {:.1}", mib(b)))).collect());
        format!("{:.1} MiB ({})", mib(total), list.join(", "))
    };
    println!("  the views at the end, as each counts its memory (GET /v1/memory; reserved room included):");
    println!("    live merged view: {}", parts(&views_memory["merged_view"]["live_view"]));
    if let Some(g) = views_memory["reasoning_graph"].as_object() {
        println!("    reasoning graph ({} nodes): {}", g["nodes"], parts(&g["bytes"]));
    }
    for p in views_memory["merged_view"]["perspectives"].as_array().into_iter().flatten() {
        println!("    perspective ({} nodes): {}", p["nodes"], parts(&p["bytes"]));
    }
    Ok(())
}

/// CPU time (user + system, in clock ticks) of each thread of `pid`, by name.
fn thread_ticks(pid: u32) -> Result<std::collections::BTreeMap<String, u64>> {
    let mut out = std::collections::BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(stat) = std::fs::read_to_string(task?.path().join("stat")) else { continue };
        // pid (comm) state ... ; utime and stime are fields 14 and 15.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let ticks = fields.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + fields.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        *out.entry(name).or_default() += ticks;
    }
    Ok(out)
}

/// The bucket bound under which a share `p` of a Prometheus histogram's
/// observations fall, and the count, from `/metrics` text.
fn histogram_quantile(text: &str, name: &str, p: f64) -> Option<(f64, u64)> {
    let mut buckets: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{name}_bucket{{le=\"")))
        .filter_map(|rest| {
            let (le, count) = rest.split_once("\"} ")?;
            Some((if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? }, count.trim().parse().ok()?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    let want = (total as f64 * p).ceil() as u64;
    buckets.iter().find(|(_, c)| *c >= want).map(|(le, _)| (*le, total))
}

/// The count of a Prometheus histogram's observations, from `/metrics` text.
fn histogram_count(text: &str, name: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(&format!("{name}_count "))).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

fn load(agora: &Path, rate: usize, agents: usize, seconds: usize, preload_agents: usize, preload_events: usize, skew_ms: u64) -> Result<()> {
    anyhow::ensure!(agents >= 2 && rate >= 10 && seconds >= 1, "need at least 2 agents, 10 entries/s and 1 s");
    let home = new_home(agora)?;
    let preloaded = if preload_agents > 0 { store_swarm(&home, preload_agents, preload_events)? } else { 0 };
    let per_agent = (rate * seconds).div_ceil(agents);
    // Other agents than the preloaded ones, writing after them.
    let clock = crate::merge_bench::SWARM_CLOCK + (preloaded as u64) + 1_000;
    let mut entries = crate::merge_bench::swarm_from(agents, per_agent, preload_agents, clock);
    // Delivered in the order they reach the node: each agent's entries
    // `delay` ms after they were written.
    let mut rng = agora_core::xorshift::Xorshift64(0x5eed ^ skew_ms);
    let delays: std::collections::HashMap<agora_core::AgentId, u64> = entries
        .iter()
        .map(|e| e.author())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|a| (a, if skew_ms == 0 { 0 } else { rng.below(skew_ms as usize) as u64 }))
        .collect();
    entries.sort_by_key(|e| (e.timestamp_ms() + delays[&e.author()], e.author(), e.seq()));
    let t = Instant::now();
    let node = start(agora, &home, &home.agent, &[])?;
    agora_json(agora, &home.path, &["view-hash"])?;
    if preloaded > 0 {
        println!(
            "on top of {preloaded} entries ({preload_agents} agents x {preload_events} events) stored before the node started; its view built in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    // The node's reasoning graph and the perspective of one of the agents
    // writing (who accepts the others' chains as they grow), in use from the
    // start: built now, kept current through the load, read every second.
    let probe = agora_json(agora, &home.path, &["propose", "load probe"])?;
    let probe = probe["id"].as_str().context("propose printed no id")?.to_string();
    let viewer = entries.first().context("no entries")?.author().to_string();
    agora_json(agora, &home.path, &["status", &probe])?;
    agora_json(agora, &home.path, &["perspective", &viewer, "--summary"])?;
    let (replays_before, builds_before) = {
        let m = node.control.metrics()?;
        (histogram_count(&m, "agora_view_recompute_seconds"), histogram_count(&m, "agora_perspective_build_seconds"))
    };
    let pid = node.child.id();
    let batch = rate / 10;
    let before = thread_ticks(pid)?;
    let t0 = Instant::now();
    let mut late = 0usize;
    let (mut status_reads, mut perspective_reads) = (Vec::new(), Vec::new());
    let timed = |args: &[&str]| -> Result<Duration> {
        let t = Instant::now();
        agora_json(agora, &home.path, args)?;
        Ok(t.elapsed())
    };
    for (i, chunk) in entries.chunks(batch).enumerate() {
        if i % 10 == 9 {
            status_reads.push(timed(&["status", &probe])?);
            perspective_reads.push(timed(&["perspective", &viewer, "--summary"])?);
        }
        let due = t0 + Duration::from_millis(100 * i as u64);
        match due.checked_duration_since(Instant::now()) {
            Some(wait) => std::thread::sleep(wait),
            None => late += 1,
        }
        let mut pack = agora_core::pack::header_line();
        pack.push('\n');
        for e in chunk {
            pack.push_str(&agora_core::pack::entry_line(e.signed(), e.payload()));
            pack.push('\n');
        }
        let mut child =
            agora_cmd(agora, &home.path).args(["--json", "import", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
        std::io::Write::write_all(&mut child.stdin.take().context("no stdin")?, pack.as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!("import of batch {i}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let fed = t0.elapsed();
    // Until the view has caught up with the last batch.
    let hash = agora_json(agora, &home.path, &["view-hash"])?;
    let after = thread_ticks(pid)?;
    let wall = t0.elapsed();
    let tick = 100.0; // USER_HZ on Linux
    let used = |name: Option<&str>| -> f64 {
        let sum = |m: &std::collections::BTreeMap<String, u64>| m.iter().filter(|(k, _)| name.is_none_or(|n| k.as_str() == n)).map(|(_, v)| *v).sum::<u64>();
        (sum(&after).saturating_sub(sum(&before))) as f64 / tick / wall.as_secs_f64()
    };
    let metrics = node.control.metrics()?;
    let replays = histogram_count(&metrics, "agora_view_recompute_seconds") - replays_before;
    let builds = histogram_count(&metrics, "agora_perspective_build_seconds") - builds_before;
    let (lag_p99, lags) = histogram_quantile(&metrics, "agora_merge_view_lag_seconds", 0.99).context("no agora_merge_view_lag_seconds in /metrics")?;
    let (lag_p50, _) = histogram_quantile(&metrics, "agora_merge_view_lag_seconds", 0.5).context("no agora_merge_view_lag_seconds")?;
    let (rss, hwm) = rss_kib(pid)?;
    let n = entries.len();
    println!(
        "sustained load: {n} entries of {agents} agents into one node, {batch} every 100 ms (`agora import -` through the node){}",
        if skew_ms > 0 { format!(", each agent's entries up to {skew_ms} ms late (out of log order)") } else { String::new() }
    );
    println!(
        "  fed in {:.1} s = {:.0} entries/s ({late} batches started late); the view current {:.2} s after the start",
        fed.as_secs_f64(),
        n as f64 / fed.as_secs_f64(),
        wall.as_secs_f64()
    );
    println!(
        "  live merged view lag behind commits ({lags} updates): p50 <= {:.1} ms, p99 <= {:.1} ms (histogram bucket bounds; target p99 < 100 ms)",
        lag_p50 * 1e3,
        lag_p99 * 1e3
    );
    println!("  CPU over the run, in cores: merged-view thread {:.3}, whole node {:.3} (target: views < 1 core)", used(Some("merged-view")), used(None));
    status_reads.sort();
    perspective_reads.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if let (Some(s), Some(p)) = (status_reads.last(), perspective_reads.last()) {
        println!(
            "  reads every second during the load ({} each): `status` (the reasoning graph) p50 {:.1} ms, max {:.1} ms; `perspective <a writing agent> --summary` p50 {:.1} ms, max {:.1} ms; the reasoning graph replayed {replays} times, the perspective {builds} times",
            status_reads.len(),
            ms(crate::percentile(&status_reads, 0.5)),
            ms(*s),
            ms(crate::percentile(&perspective_reads, 0.5)),
            ms(*p)
        );
    }
    println!("  node RSS {} MiB (peak {} MiB); view hash {}", rss / 1024, hwm / 1024, hash["view_hash"].as_str().unwrap_or("?"));
    Ok(())
}
