//! Tests across containers: `agora node run` in Docker containers, one home per
//! named volume, brought up by `docker/swarm.sh` (the image built FROM scratch
//! from this build's own binary) and driven through the docker CLI: five nodes
//! converge; a 2/3 partition (packet filter between the sides) heals; a node
//! SIGKILLed mid-sync loses no acknowledged entry; a rolling restart while
//! agents record loses nothing; a copied volume started twice is proven to
//! equivocate by every honest node; one container publishes the API, `/mcp`
//! and the live page on a host port, with its token given as a file.
//!
//! Skipped, with a message saying why (and passing), when no Docker engine
//! answers `docker info`, when neither `docker compose` nor `docker-compose`
//! is installed, or when `AGORA_CONTAINER_TESTS=0`. The tests run one at a
//! time (a lock: two cores), each under its own compose project, and a guard
//! takes its swarm down with its volumes, extra containers and packet filters
//! even when it fails (`AGORA_TEST_KEEP=1` keeps it for a post-mortem).
//!
//! Every wait is a bounded loop on an observable condition. Figures (time to
//! converge, entries per second) are written to standard error as they are
//! measured, so they show without `--nocapture`.

use agora_core::entry::next_header;
use agora_core::{AgentKey, SignedEntry, pack};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const SWARM_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docker/swarm.sh");
const BUILD_IMAGE_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docker/build-image.sh");
/// The control channel's port inside the image (`AGORA_CONTROL` in docker/Dockerfile).
const CONTROL_PORT: u16 = 7412;
const IMAGE: &str = "agora:local";
const WORKSPACE: &str = "containers";
const PORT: u16 = 7411;
/// A swarm of five reaches one view within this bound (2 cores, shared).
const CONVERGE_BOUND: Duration = Duration::from_secs(120);
/// After a partition heals, every node converges within this bound.
const HEAL_BOUND: Duration = Duration::from_secs(60);
/// A restarted container answers `agora node status` within this bound.
const READY_BOUND: Duration = Duration::from_secs(60);

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A line for the log of the run, written past libtest's capture.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "containers: {line}");
}

fn output(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

fn docker(args: &[&str]) -> Output {
    output(Command::new("docker").args(args))
}

fn docker_ok(args: &[&str]) -> String {
    let out = docker(args);
    assert!(out.status.success(), "docker {args:?} failed: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Run a command with a time limit; `None` when it did not finish in time.
fn bounded(mut cmd: Command, limit: Duration) -> Option<std::io::Result<Output>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(cmd.stdin(Stdio::null()).output());
    });
    rx.recv_timeout(limit).ok()
}

/// Why the container tests cannot run here, if they cannot.
fn skip_reason() -> Option<String> {
    if std::env::var("AGORA_CONTAINER_TESTS").as_deref() == Ok("0") {
        return Some("AGORA_CONTAINER_TESTS=0".into());
    }
    let mut info = Command::new("docker");
    info.args(["info", "--format", "{{.ServerVersion}}"]);
    match bounded(info, Duration::from_secs(30)) {
        None => return Some("`docker info` did not answer within 30 s".into()),
        Some(Err(e)) => return Some(format!("the docker command cannot run ({e})")),
        Some(Ok(out)) if !out.status.success() => return Some(format!("no Docker engine answers `docker info`: {}", text(&out.stderr))),
        Some(Ok(_)) => {}
    }
    let v2 = Command::new("docker").args(["compose", "version"]).output().is_ok_and(|o| o.status.success());
    let v1 = Command::new("docker-compose").arg("version").output().is_ok_and(|o| o.status.success());
    if !v2 && !v1 {
        return Some("neither `docker compose` nor docker-compose is installed".into());
    }
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some("python3 (which docker/swarm.sh uses) is missing: run scripts/setup.sh".into());
    }
    None
}

/// Take the lock and check the engine; `None` (after saying why) to skip.
fn begin(test: &str) -> Option<MutexGuard<'static, ()>> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(why) = skip_reason() {
        report(&format!("SKIPPED {test} (the container tests need a Docker engine with Compose): {why}"));
        return None;
    }
    report(&format!("{test}: starting"));
    Some(guard)
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Wait for `check` to give a value, polling every 200 ms, at most `bound`.
fn wait<T>(what: &str, bound: Duration, mut check: impl FnMut() -> Option<T>) -> (T, Duration) {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return (v, start.elapsed());
        }
        assert!(start.elapsed() < bound, "timed out after {bound:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A chain of `key` from seq 1, cut into packs of the given sizes (each
/// continuing the previous one), with 256-byte payloads.
fn chain_packs(key: &AgentKey, sizes: &[usize], dir: &Path) -> Vec<PathBuf> {
    let mut prev: Option<SignedEntry> = None;
    let mut seq = 0u64;
    let mut paths = Vec::new();
    for (k, n) in sizes.iter().enumerate() {
        let path = dir.join(format!("pack-{k}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(out, "{}", pack::header_line()).unwrap();
        for _ in 0..*n {
            seq += 1;
            let payload = format!("{seq:0>256}");
            let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), 1_000 + seq, payload.as_bytes()).unwrap(), key);
            writeln!(out, "{}", pack::entry_line(&e, Some(payload.as_bytes()))).unwrap();
            prev = Some(e);
        }
        out.flush().unwrap();
        paths.push(path);
    }
    paths
}

/// One node of a swarm.
#[derive(Clone, Debug)]
struct Member {
    service: String,
    container: String,
    ip: String,
    agent: String,
}

/// A swarm brought up by `docker/swarm.sh up N` under its own project, taken
/// down with everything the test added when dropped.
struct Swarm {
    project: String,
    state: tempfile::TempDir,
    nodes: Vec<Member>,
    extra_containers: Vec<String>,
    extra_volumes: Vec<String>,
    /// iptables rules (DOCKER-USER) to delete.
    filters: Vec<Vec<String>>,
}

impl Swarm {
    fn up(tag: &str, n: usize) -> Self {
        let mut swarm = Self {
            project: format!("agoratest-{tag}-{}", std::process::id()),
            state: tempfile::tempdir().unwrap(),
            nodes: Vec::new(),
            extra_containers: Vec::new(),
            extra_volumes: Vec::new(),
            filters: Vec::new(),
        };
        let start = Instant::now();
        let out = swarm.script(&["up", &n.to_string()]);
        assert!(out.status.success(), "swarm.sh up {n} failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
        let nodes = std::fs::read_to_string(swarm.state.path().join(&swarm.project).join("nodes")).unwrap();
        swarm.nodes = nodes
            .lines()
            .map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                Member { service: f[0].into(), container: format!("{}-{}", swarm.project, f[0]), ip: f[1].into(), agent: f[2].into() }
            })
            .collect();
        assert_eq!(swarm.nodes.len(), n);
        report(&format!("{tag}: swarm.sh up {n}: {n} nodes answering in {:.1} s (image build included when the binary changed)", secs(start.elapsed())));
        swarm
    }

    fn script(&self, args: &[&str]) -> Output {
        output(
            Command::new("bash")
                .arg(SWARM_SH)
                .args(args)
                .env("AGORA_PROJECT", &self.project)
                .env("AGORA_SWARM_STATE", self.state.path())
                .env("AGORA_BIN", env!("CARGO_BIN_EXE_agora"))
                .env("AGORA_IMAGE", IMAGE)
                .env("AGORA_WORKSPACE", WORKSPACE)
                .env("AGORA_RESTART", "no")
                .env("AGORA_LOG", "info"),
        )
    }

    fn all(&self) -> Vec<usize> {
        (0..self.nodes.len()).collect()
    }

    fn network(&self) -> String {
        format!("{}_swarm", self.project)
    }

    /// `agora ARGS` inside node `i`'s container (through its running node).
    fn exec(&self, i: usize, args: &[&str]) -> Output {
        output(Command::new("docker").args(["exec", &self.nodes[i].container, "agora"]).args(args))
    }

    fn exec_input(&self, i: usize, args: &[&str], input: &[u8]) -> Output {
        let mut child = Command::new("docker")
            .args(["exec", "-i", &self.nodes[i].container, "agora"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    }

    fn try_json(&self, i: usize, args: &[&str]) -> Result<Value, String> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.exec(i, &all);
        if !out.status.success() {
            return Err(format!("{}: {}", out.status, text(&out.stderr)));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out.stdout)))
    }

    fn json(&self, i: usize, args: &[&str]) -> Value {
        self.try_json(i, args).unwrap_or_else(|e| panic!("agora {args:?} in {} failed: {e}", self.nodes[i].service))
    }

    fn holds(&self, i: usize, id: &str) -> bool {
        self.exec(i, &["show", id]).status.success()
    }

    /// Each author's highest seq held by node `i` (`agora authors`).
    fn frontier(&self, i: usize) -> Option<BTreeMap<String, u64>> {
        let v = self.try_json(i, &["authors"]).ok()?;
        Some(v.as_array()?.iter().map(|a| (a["author"].as_str().unwrap_or_default().to_string(), a["max_seq"].as_u64().unwrap_or(0))).collect())
    }

    fn max_seq(&self, i: usize, author: &str) -> u64 {
        self.frontier(i).and_then(|f| f.get(author).copied()).unwrap_or(0)
    }

    fn view_hash(&self, i: usize) -> Option<String> {
        Some(self.try_json(i, &["view-hash"]).ok()?["view_hash"].as_str()?.to_string())
    }

    /// Wait until the nodes `who` hold the same frontier and compute the same
    /// view hash; returns the hash, the frontier and the time taken.
    fn converge(&self, who: &[usize], bound: Duration, what: &str) -> (String, BTreeMap<String, u64>, Duration) {
        let ((hash, frontier), took) = wait(what, bound, || {
            let fronts: Vec<_> = who.iter().map(|&i| self.frontier(i)).collect::<Option<Vec<_>>>()?;
            if fronts.iter().any(|f| *f != fronts[0]) {
                return None;
            }
            let hashes: Vec<String> = who.iter().map(|&i| self.view_hash(i)).collect::<Option<Vec<_>>>()?;
            hashes.iter().all(|h| *h == hashes[0]).then(|| (hashes[0].clone(), fronts[0].clone()))
        });
        (hash, frontier, took)
    }

    fn ready(&self, i: usize) -> Duration {
        wait(&format!("{} to answer `agora node status`", self.nodes[i].service), READY_BOUND, || {
            self.exec(i, &["node", "status"]).status.success().then_some(())
        })
        .1
    }

    fn peers(&self, i: usize) -> usize {
        self.try_json(i, &["node", "status"]).ok().and_then(|s| s["peers"].as_array().map(Vec::len)).unwrap_or(0)
    }

    fn kill(&self, i: usize) {
        docker_ok(&["kill", "-s", "KILL", &self.nodes[i].container]);
        wait("the killed container to stop", Duration::from_secs(30), || {
            (docker_ok(&["inspect", "-f", "{{.State.Running}}", &self.nodes[i].container]) == "false").then_some(())
        });
    }

    fn stop(&self, i: usize) {
        docker_ok(&["stop", "-t", "30", &self.nodes[i].container]);
    }

    fn start(&self, i: usize) -> Duration {
        let t = Instant::now();
        docker_ok(&["start", &self.nodes[i].container]);
        self.ready(i);
        t.elapsed()
    }

    fn disconnect(&self, i: usize) {
        docker_ok(&["network", "disconnect", &self.network(), &self.nodes[i].container]);
    }

    fn connect(&self, i: usize) {
        docker_ok(&["network", "connect", "--ip", &self.nodes[i].ip, &self.network(), &self.nodes[i].container]);
    }

    /// Drop every packet between the sides (both directions) in the host's
    /// DOCKER-USER chain, which bridged container traffic passes through.
    fn cut(&mut self, a: &[usize], b: &[usize]) {
        for &x in a {
            for &y in b {
                for (s, d) in [(x, y), (y, x)] {
                    let rule: Vec<String> =
                        ["DOCKER-USER", "-s", &self.nodes[s].ip, "-d", &self.nodes[d].ip, "-m", "comment", "--comment", &self.project, "-j", "DROP"]
                            .iter()
                            .map(|s| s.to_string())
                            .collect();
                    let mut insert = vec!["-I".to_string()];
                    insert.extend(rule.iter().cloned());
                    let out = output(Command::new("iptables").args(&insert));
                    assert!(out.status.success(), "iptables {insert:?}: {}", text(&out.stderr));
                    self.filters.push(rule);
                }
            }
        }
    }

    fn heal(&mut self) {
        for rule in self.filters.drain(..) {
            let mut delete = vec!["-D".to_string()];
            delete.extend(rule);
            let out = output(Command::new("iptables").args(&delete));
            assert!(out.status.success(), "iptables {delete:?}: {}", text(&out.stderr));
        }
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut containers: Vec<String> = self.nodes.iter().map(|m| m.container.clone()).collect();
            containers.extend(self.extra_containers.iter().cloned());
            for c in containers {
                let out = docker(&["logs", "--tail", "25", &c]);
                report(&format!("last log lines of {c}:\n{}\n{}", text(&out.stdout), text(&out.stderr)));
            }
        }
        for rule in self.filters.drain(..) {
            let mut delete = vec!["-D".to_string()];
            delete.extend(rule);
            let _ = output(Command::new("iptables").args(&delete));
        }
        if std::env::var_os("AGORA_TEST_KEEP").is_some() {
            report(&format!("AGORA_TEST_KEEP: keeping project {} (state in {})", self.project, self.state.path().display()));
            let _ = std::mem::replace(&mut self.state, tempfile::tempdir().unwrap()).keep();
            return;
        }
        for c in &self.extra_containers {
            let _ = docker(&["rm", "-f", "-v", c]);
        }
        let out = self.script(&["down", "-v"]);
        if !out.status.success() {
            report(&format!("swarm.sh down -v failed for {}: {}", self.project, text(&out.stderr)));
        }
        for v in &self.extra_volumes {
            let _ = docker(&["volume", "rm", "-f", v]);
        }
    }
}

/// Record `per_node` propositions on each of `who` at once (one writer per
/// node, through `docker exec`); the acknowledged ids by node, and the time.
fn record_everywhere(s: &Swarm, who: &[usize], per_node: usize, label: &str) -> (Vec<Vec<String>>, Duration) {
    let start = Instant::now();
    let ids = std::thread::scope(|scope| {
        let handles: Vec<_> = who
            .iter()
            .map(|&i| scope.spawn(move || (0..per_node).map(|k| id_of(&s.json(i, &["propose", &format!("{label}: node {i}, claim {k}")]))).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    (ids, start.elapsed())
}

#[test]
fn five_nodes_converge_every_node_holds_every_chain() {
    let Some(_one) = begin("five_nodes_converge") else { return };
    let s = Swarm::up("converge", 5);
    let (_, _, took) = s.converge(&s.all(), CONVERGE_BOUND, "the roster to reach every node");
    report(&format!("converge: the founder's roster (4 admissions) on all 5 nodes {:.1} s after they answered", secs(took)));
    for i in s.all() {
        assert!(s.peers(i) >= 1, "{} has no peer", s.nodes[i].service);
    }

    // A bulk writer of the test's own, admitted by the founder; its chain of
    // 2,000 entries is imported into member1's node and spreads from there.
    let writer = AgentKey::from_seed([71; 32]);
    let writer_id = writer.agent_id().to_string();
    s.json(0, &["admit", &writer_id, "bulk writer"]);
    wait("member1 to hold the writer's admission", CONVERGE_BOUND, || {
        s.try_json(1, &["roster"]).ok()?["members"].as_array()?.iter().any(|m| m["agent"] == writer_id.as_str()).then_some(())
    });
    let dir = tempfile::tempdir().unwrap();
    let bulk = 10_000u64;
    let packs = chain_packs(&writer, &[bulk as usize], dir.path());
    let start = Instant::now();
    let out = s.exec_input(1, &["--json", "import", "-"], &std::fs::read(&packs[0]).unwrap());
    assert!(out.status.success(), "import: {}", text(&out.stderr));
    let imported = start.elapsed();
    let (_, spread) = wait("every node to hold the writer's chain", CONVERGE_BOUND, || s.all().iter().all(|&i| s.max_seq(i, &writer_id) == bulk).then_some(()));
    report(&format!(
        "converge: {bulk} entries imported into member1 in {:.2} s; on all 5 nodes {:.1} s later ({:.0} entries/s from the import's start, to 4 nodes at once)",
        secs(imported),
        secs(spread),
        bulk as f64 / secs(imported + spread)
    ));

    // Every agent records at once, then replies across nodes.
    let per_node = 10;
    let (ids, took) = record_everywhere(&s, &s.all(), per_node, "converge");
    report(&format!(
        "converge: {} propositions recorded by 5 agents at once in {:.1} s ({:.1} entries/s through docker exec)",
        5 * per_node,
        secs(took),
        (5 * per_node) as f64 / secs(took)
    ));
    let p = &ids[1][0];
    wait("member3 to hold member1's first proposition", CONVERGE_BOUND, || s.holds(3, p).then_some(()));
    let contra = id_of(&s.json(3, &["contradict", p, "Enterprise procurement needs predictable costs"]));
    let dispute = id_of(&s.json(4, &["dispute", p, "No customer asked for it", "--counter", "Seats first"]));
    let accept = id_of(&s.json(2, &["accept", &s.nodes[1].agent, p]));
    let start = Instant::now();
    let (hash, frontier, _) = s.converge(&s.all(), CONVERGE_BOUND, "all 5 nodes to compute one view");
    report(&format!("converge: one view hash on all 5 nodes {:.1} s after the last move ({hash})", secs(start.elapsed())));
    // Every node holds every chain, each to its last entry.
    for m in &s.nodes {
        assert!(frontier.get(&m.agent).copied().unwrap_or(0) >= per_node as u64, "{} missing from {frontier:?}", m.service);
    }
    assert_eq!(frontier.get(&writer_id), Some(&bulk));
    assert_eq!(frontier.len(), 6, "5 agents and the writer: {frontier:?}");
    for i in s.all() {
        for id in ids.iter().flatten().chain([&contra, &dispute, &accept]) {
            assert!(s.holds(i, id), "{} lacks {id}", s.nodes[i].service);
        }
        assert_eq!(s.json(i, &["status", p])["status"], "contested", "on {}", s.nodes[i].service);
    }
    // The script's status table agrees.
    let out = s.script(&["status"]);
    assert!(out.status.success(), "swarm.sh status: {}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("converged: yes"), "{table}");
    report(&format!("converge: swarm.sh status:\n{table}"));
}

#[test]
fn a_two_three_partition_heals_and_converges() {
    let Some(_one) = begin("partition") else { return };
    if let Some(why) = packet_filter_missing() {
        report(&format!("SKIPPED partition: {why}"));
        return;
    }
    let mut s = Swarm::up("partition", 5);
    let (side_a, side_b) = ([0usize, 1], [2usize, 3, 4]);
    let proposal = id_of(&s.json(2, &["propose", "Ship 2.0 on Friday"]));
    let freeze = id_of(&s.json(0, &["propose", "Freeze the API today"]));
    s.converge(&s.all(), CONVERGE_BOUND, "the swarm to converge before the cut");

    s.cut(&side_a, &side_b);
    // The cut holds: an entry on side A reaches A's other node, not side B.
    let probe = id_of(&s.json(0, &["propose", "probe: written after the cut"]));
    wait("member1 to hold the probe", CONVERGE_BOUND, || s.holds(1, &probe).then_some(()));
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_secs(5) {
        for &i in &side_b {
            assert!(!s.holds(i, &probe), "{} received the probe across the cut", s.nodes[i].service);
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    // Both sides record; a contradiction and a dispute cross the cut.
    let contradiction = id_of(&s.json(0, &["contradict", &proposal, "QA needs the weekend: ship Monday"]));
    let dispute = id_of(&s.json(3, &["dispute", &freeze, "Freezing now blocks the security fix", "--counter", "Freeze after the fix lands"]));
    let (ids, took) = record_everywhere(&s, &s.all(), 10, "partition");
    report(&format!("partition: 50 propositions recorded on both sides in {:.1} s ({:.1} entries/s)", secs(took), 50.0 / secs(took)));
    let (ha, _, _) = s.converge(&side_a, CONVERGE_BOUND, "side A (founder, member1) to converge");
    let (hb, _, _) = s.converge(&side_b, CONVERGE_BOUND, "side B (member2-4) to converge");
    assert_ne!(ha, hb, "the two sides cannot compute the same view while cut");
    assert!(!s.holds(2, &contradiction) && !s.holds(0, &dispute), "nothing crosses the cut");

    s.heal();
    let (hash, _, took) = s.converge(&s.all(), HEAL_BOUND, "all 5 nodes to converge after the heal");
    report(&format!("partition: healed; all 5 nodes on one view {:.1} s after the filter was lifted (bound {} s): {hash}", secs(took), HEAL_BOUND.as_secs()));
    for i in s.all() {
        for id in ids.iter().flatten().chain([&contradiction, &dispute, &probe]) {
            assert!(s.holds(i, id), "{} lacks {id} after the heal", s.nodes[i].service);
        }
        assert_eq!(s.json(i, &["status", &proposal])["status"], "contested", "on {}", s.nodes[i].service);
        let disputes = s.json(i, &["disputes"]).to_string();
        assert!(disputes.contains(&dispute), "{}: the dispute is not in its disagreement map", s.nodes[i].service);
    }
}

/// Why the partition cannot be made here, if it cannot: it needs root,
/// iptables and Docker's DOCKER-USER chain, and bridged traffic passing
/// through iptables (br_netfilter).
fn packet_filter_missing() -> Option<String> {
    let chain = Command::new("iptables").args(["-S", "DOCKER-USER"]).output();
    match chain {
        Err(e) => return Some(format!("iptables cannot run ({e})")),
        Ok(o) if !o.status.success() => return Some(format!("no DOCKER-USER chain to filter in (root needed): {}", text(&o.stderr))),
        Ok(_) => {}
    }
    match std::fs::read_to_string("/proc/sys/net/bridge/bridge-nf-call-iptables") {
        Ok(v) if v.trim() == "1" => None,
        _ => Some("bridged traffic does not pass through iptables (net.bridge.bridge-nf-call-iptables is not 1)".into()),
    }
}

#[test]
fn a_node_killed_mid_sync_loses_no_acknowledged_entry() {
    let Some(_one) = begin("node_loss") else { return };
    let s = Swarm::up("nodeloss", 5);
    let (source, victim) = (1usize, 4usize);
    let writer = AgentKey::from_seed([72; 32]);
    let writer_id = writer.agent_id().to_string();
    s.json(0, &["admit", &writer_id, "bulk writer"]);
    s.converge(&s.all(), CONVERGE_BOUND, "the writer's admission to reach every node");
    let dir = tempfile::tempdir().unwrap();
    // Each round, the writer's next entries are imported into member1 while
    // the victim is down, so it catches up by range sync when it starts.
    let round_size = 40_000u64;
    let kills = [0.2, 0.5, 0.8];
    let packs = chain_packs(&writer, &vec![round_size as usize; 1 + kills.len()], dir.path());
    let victim_agent = s.nodes[victim].agent.clone();
    let import_while_down = |round: usize| {
        s.stop(victim);
        let out = s.exec_input(source, &["--json", "import", "-"], &std::fs::read(&packs[round]).unwrap());
        assert!(out.status.success(), "import: {}", text(&out.stderr));
        round_size * (round as u64 + 1)
    };
    // Round 0 measures the catch-up: from the node answering to holding all.
    let target = import_while_down(0);
    let started = s.start(victim);
    let (_, catch_up) = wait("the victim to catch up", CONVERGE_BOUND, || (s.max_seq(victim, &writer_id) == target).then_some(()));
    report(&format!(
        "node loss: the victim answers {:.2} s after `docker start`, then catches up {round_size} entries in {:.2} s ({:.0} entries/s); the kills land at {kills:?} of that",
        secs(started),
        secs(catch_up),
        round_size as f64 / secs(catch_up)
    ));

    let mut acked_all: Vec<(String, u64)> = Vec::new();
    for n in 0..5 {
        let v = s.json(victim, &["propose", &format!("before the kills: claim {n}")]);
        acked_all.push((id_of(&v), v["seq"].as_u64().unwrap()));
    }
    let mut caught_mid_sync = 0;
    for (k, fraction) in kills.iter().enumerate() {
        let round = k + 1;
        let target = import_while_down(round);
        let before = target - round_size;
        let stop = AtomicBool::new(false);
        s.start(victim);
        let acked = std::thread::scope(|scope| {
            // The victim's agent records through its node from the moment
            // the node answers (a command before that would open the store
            // itself) until the kill.
            let recorder = scope.spawn(|| {
                let mut acked = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    match s.try_json(victim, &["propose", &format!("round {round}: claim {n}")]) {
                        Ok(v) => acked.push((id_of(&v), v["seq"].as_u64().unwrap())),
                        Err(_) => break,
                    }
                    n += 1;
                }
                acked
            });
            std::thread::sleep(catch_up.mul_f64(*fraction));
            s.kill(victim);
            stop.store(true, Ordering::Relaxed);
            recorder.join().unwrap()
        });
        acked_all.extend(acked.iter().cloned());
        // Restarted on its volume with no network: nothing can come back
        // from a peer, so what it holds is what it kept.
        s.disconnect(victim);
        let took = s.start(victim);
        let held = s.max_seq(victim, &writer_id);
        let own = s.max_seq(victim, &victim_agent);
        let last_acked = acked_all.iter().map(|(_, q)| *q).max().unwrap_or(0);
        assert!(own >= last_acked, "own chain at seq {own} after the restart, {last_acked} acknowledged");
        for (id, _) in &acked_all {
            assert!(s.holds(victim, id), "acknowledged entry {id} lost by the SIGKILL");
        }
        assert!(held >= before, "entries of the writer held before this round were lost: {held} < {before}");
        let verify = s.exec(victim, &["--json", "verify"]);
        assert!(verify.status.success(), "verify after the kill: {}\n{}", text(&verify.stdout), text(&verify.stderr));
        let when = if held == before {
            "before the sync stored anything"
        } else if held < target {
            caught_mid_sync += 1;
            "mid-sync"
        } else {
            "after the sync"
        };
        report(&format!(
            "node loss, kill {round}: SIGKILL {:.2} s after the node answered, {when}: kept {} of the round's {round_size} entries and all {} own entries acknowledged ({} recorded during the sync); restarted isolated in {:.1} s, verify clean",
            secs(catch_up.mul_f64(*fraction)),
            held - before,
            acked_all.len(),
            acked.len(),
            secs(took)
        ));
        s.stop(victim);
        s.connect(victim);
        s.start(victim);
        wait("the victim to catch up the rest of the round", CONVERGE_BOUND, || (s.max_seq(victim, &writer_id) == target).then_some(()));
        // A few more acknowledged entries of its own before the next kill.
        for n in 0..5 {
            let v = s.json(victim, &["propose", &format!("after round {round}: claim {n}")]);
            acked_all.push((id_of(&v), v["seq"].as_u64().unwrap()));
        }
    }
    let (_, frontier, took) = s.converge(&s.all(), CONVERGE_BOUND, "all 5 nodes to converge after the kills");
    assert_eq!(frontier.get(&writer_id), Some(&(round_size * (1 + kills.len() as u64))));
    report(&format!(
        "node loss: {} kills survived ({caught_mid_sync} mid-sync), no acknowledged entry lost; all 5 nodes converged {:.1} s after the last restart",
        kills.len(),
        secs(took)
    ));
    assert!(caught_mid_sync >= 1, "no kill landed mid-sync: the catch-up is too short to hit");
    for i in s.all() {
        for (id, _) in &acked_all {
            assert!(s.holds(i, id), "{} lacks acknowledged {id}", s.nodes[i].service);
        }
    }
}

#[test]
fn a_rolling_restart_while_agents_record_loses_nothing() {
    let Some(_one) = begin("rolling_restart") else { return };
    let s = Swarm::up("rolling", 5);
    let n = s.nodes.len();
    // One agent per node records without pause, except while its own node
    // restarts (a command reaching a container before its node has opened
    // the store would open it itself: see the report's notes).
    let paused: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    let failed: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (acked, restarts) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..n)
            .map(|i| {
                let (s, paused, failed, stop) = (&s, &paused, &failed, &stop);
                scope.spawn(move || {
                    let mut acked = Vec::new();
                    let mut k = 0;
                    while !stop.load(Ordering::Relaxed) {
                        if paused[i].load(Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(100));
                            continue;
                        }
                        match s.try_json(i, &["propose", &format!("rolling: node {i}, claim {k}")]) {
                            Ok(v) => acked.push(id_of(&v)),
                            Err(e) => {
                                let first = e.lines().next().unwrap_or_default().chars().take(160).collect::<String>();
                                failed.lock().unwrap().push(format!("{}: {first}", s.nodes[i].service));
                                std::thread::sleep(Duration::from_millis(100));
                            }
                        }
                        k += 1;
                    }
                    acked
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(3));
        let mut restarts = Vec::new();
        // `i` names the node in the swarm as well as its pause flag.
        #[allow(clippy::needless_range_loop)]
        for i in 0..n {
            paused[i].store(true, Ordering::Relaxed);
            let t = Instant::now();
            docker_ok(&["restart", "-t", "30", &s.nodes[i].container]);
            s.ready(i);
            wait("the restarted node to have a peer", READY_BOUND, || (s.peers(i) >= 1).then_some(()));
            restarts.push(t.elapsed());
            paused[i].store(false, Ordering::Relaxed);
            std::thread::sleep(Duration::from_secs(2));
        }
        stop.store(true, Ordering::Relaxed);
        (writers.into_iter().map(|w| w.join().unwrap()).collect::<Vec<_>>(), restarts)
    });
    let recording = start.elapsed();
    let total: usize = acked.iter().map(Vec::len).sum();
    report(&format!(
        "rolling restart: {total} entries acknowledged in {:.1} s ({:.1} entries/s) while each of {n} nodes restarted (SIGTERM) in turn; restart to a peer: {}",
        secs(recording),
        total as f64 / secs(recording),
        restarts.iter().map(|d| format!("{:.1} s", secs(*d))).collect::<Vec<_>>().join(", ")
    ));
    let failed = failed.into_inner().unwrap();
    report(&format!("rolling restart: {} commands failed (not acknowledged, so not counted): {failed:?}", failed.len()));
    let (hash, _, took) = s.converge(&s.all(), CONVERGE_BOUND, "all 5 nodes to converge after the rolling restart");
    report(&format!("rolling restart: one view on all {n} nodes {:.1} s after the last restart: {hash}", secs(took)));
    // Every acknowledged entry is on every node.
    for i in s.all() {
        let mut held = BTreeSet::new();
        for m in &s.nodes {
            for e in s.json(i, &["log", "--author", &m.agent, "--limit", "1000000"]).as_array().unwrap() {
                held.insert(e["id"].as_str().unwrap().to_string());
            }
        }
        for id in acked.iter().flatten() {
            assert!(held.contains(id), "{} lacks acknowledged {id}", s.nodes[i].service);
        }
    }
}

#[test]
fn a_copied_volume_started_twice_is_proven_by_every_honest_node() {
    let Some(_one) = begin("equivocation") else { return };
    let mut s = Swarm::up("equivocation", 5);
    let m = 4usize;
    let honest = [0usize, 1, 2, 3];
    let m_agent = s.nodes[m].agent.clone();
    let shared = id_of(&s.json(m, &["propose", "shared start"]));
    s.converge(&s.all(), CONVERGE_BOUND, "the shared start to reach every node");

    // The volume copied while its node is stopped. The copy gets a network
    // identity of its own (a second machine would): its node key is dropped.
    s.stop(m);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("home");
    docker_ok(&["cp", &format!("{}:/data", s.nodes[m].container), copy.to_str().unwrap()]);
    for f in ["node.key", "node.json"] {
        let _ = std::fs::remove_file(copy.join(f));
    }
    let twin = format!("{}-twin", s.project);
    let twin_volume = format!("{}_twin", s.project);
    s.extra_containers.push(twin.clone());
    s.extra_volumes.push(twin_volume.clone());
    let prefix = s.nodes[0].ip.rsplit_once('.').unwrap().0.to_string();
    let mut run = vec![
        "create".to_string(),
        "--name".into(),
        twin.clone(),
        "--network".into(),
        s.network(),
        "--ip".into(),
        format!("{prefix}.200"),
        "-v".into(),
        format!("{twin_volume}:/data"),
        "--label".into(),
        format!("org.agora.swarm={}", s.project),
        IMAGE.into(),
        "node".into(),
        "run".into(),
        "--listen".into(),
        format!("/ip4/0.0.0.0/tcp/{PORT}"),
        "--no-mdns".into(),
        "--workspace".into(),
        WORKSPACE.into(),
        "--founder".into(),
        s.nodes[0].agent.clone(),
    ];
    for n in &s.nodes {
        run.push("--bootstrap".into());
        run.push(format!("/ip4/{}/tcp/{PORT}", n.ip));
    }
    docker_ok(&run.iter().map(String::as_str).collect::<Vec<_>>());
    // Into the new volume as a tar stream owned by the image's user (10001),
    // so the copy's node can read its key (`docker cp -a` cannot resolve a
    // numeric USER on some engines).
    let mut tar = Command::new("tar")
        .args(["--numeric-owner", "--owner=10001", "--group=10001", "-C"])
        .arg(&copy)
        .args(["-cf", "-", "."])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let into = Command::new("docker").args(["cp", "-", &format!("{twin}:/data/")]).stdin(tar.stdout.take().unwrap()).output().unwrap();
    assert!(tar.wait().unwrap().success() && into.status.success(), "copying the home into {twin_volume}: {}", text(&into.stderr));

    // Two different statements at the same seq: the copy's written offline,
    // the original's through its node.
    let y = docker_ok(&["run", "--rm", "--network", "none", "-v", &format!("{twin_volume}:/data"), IMAGE, "--json", "propose", "to B: the deal fell through"]);
    let y: Value = serde_json::from_str(&y).unwrap();
    s.start(m);
    let x = s.json(m, &["propose", "to A: the deal is signed"]);
    assert_eq!(x["seq"], y["seq"], "both at the same seq");
    let (x, y) = (id_of(&x), id_of(&y));
    assert_ne!(x, y);
    let start = Instant::now();
    docker_ok(&["start", &twin]);
    let mut proofs = Vec::new();
    for &i in &honest {
        let (proof, _) = wait(&format!("{} to hold a fork proof of the copied agent", s.nodes[i].service), CONVERGE_BOUND, || {
            if !(s.holds(i, &x) && s.holds(i, &y)) {
                return None;
            }
            let forks = s.try_json(i, &["forks", "--author", &m_agent]).ok()?;
            Some(forks.as_array()?.first()?["proof"].as_str()?.to_string())
        });
        let checked = s.json(i, &["check-proof", &proof]);
        assert_eq!(checked["valid"], true);
        assert_eq!(checked["author"], m_agent.as_str());
        proofs.push(proof);
    }
    report(&format!("equivocation: all 4 honest nodes hold the fork proof {:.1} s after the copy started", secs(start.elapsed())));
    assert!(proofs.iter().all(|p| *p == proofs[0]), "every honest node holds the same proof");
    let (hash, _, _) = s.converge(&honest, CONVERGE_BOUND, "the honest nodes to compute one view");
    for &i in &honest {
        let audit = s.exec(i, &["--json", "audit", &m_agent]);
        let report_json: Value = serde_json::from_slice(&audit.stdout).unwrap();
        let fork_seq = s.json(i, &["show", &x])["seq"].clone();
        assert_eq!(report_json["fork_seqs"], serde_json::json!([fork_seq]), "{report_json}");
        assert!(s.holds(i, &shared));
    }
    report(&format!("equivocation: honest view {hash}"));
}

/// A container and its volume, removed when dropped (unless AGORA_TEST_KEEP).
struct Lone {
    name: String,
}

impl Drop for Lone {
    fn drop(&mut self) {
        if std::env::var_os("AGORA_TEST_KEEP").is_some() {
            report(&format!("keeping container and volume {}", self.name));
            return;
        }
        let _ = docker(&["rm", "-f", "-v", &self.name]);
        let _ = docker(&["volume", "rm", "-f", &self.name]);
    }
}

/// An HTTP client that reports every status (no redirect followed).
fn http_agent() -> ureq::Agent {
    ureq::Agent::config_builder().proxy(None).http_status_as_error(false).max_redirects(0).timeout_global(Some(Duration::from_secs(20))).build().new_agent()
}

/// The image publishes the control channel (`AGORA_CONTROL=0.0.0.0:7412` in
/// the image) with a token given as a mounted file: from the host, through
/// the published port, `/v1/status`, `/mcp` (an MCP `initialize`) and the
/// live page (login page, a code bought with the token, the session, the
/// page itself) answer, and nothing but the open routes answers without the
/// token.
#[test]
fn a_container_publishes_the_api_mcp_and_the_page_with_a_token_file() {
    let Some(_one) = begin("published endpoint") else { return };
    let built = output(Command::new("bash").arg(BUILD_IMAGE_SH).env("AGORA_BIN", env!("CARGO_BIN_EXE_agora")).env("AGORA_IMAGE", IMAGE));
    assert!(built.status.success(), "build-image.sh failed:\n{}\n{}", text(&built.stdout), text(&built.stderr));
    let lone = Lone { name: format!("agoratest-endpoint-{}", std::process::id()) };
    let name = lone.name.as_str();
    // The secret: readable by the image's user (10001) through the bind mount.
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("agora-token");
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let token = format!("{nanos:x}-{:x}-published-endpoint-test", std::process::id());
    std::fs::write(&secret, format!("{token}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    docker_ok(&["run", "--rm", "-v", &format!("{name}:/data"), IMAGE, "init"]);
    let mount = format!("{}:/run/secrets/agora-token:ro", secret.display());
    docker_ok(&[
        "run",
        "-d",
        "--name",
        name,
        "-v",
        &format!("{name}:/data"),
        "-v",
        &mount,
        "-e",
        "AGORA_TOKEN_FILE=/run/secrets/agora-token",
        "-p",
        &format!("127.0.0.1::{CONTROL_PORT}"),
        IMAGE,
    ]);
    let published = docker_ok(&["port", name, &CONTROL_PORT.to_string()]);
    let host = published.lines().next().unwrap_or_default().to_string();
    assert!(host.starts_with("127.0.0.1:"), "docker port: {published}");
    let base = format!("http://{host}");
    let agent = http_agent();
    let bearer = format!("Bearer {token}");
    let status = |auth: Option<&str>| {
        let mut request = agent.get(format!("{base}/v1/status"));
        if let Some(a) = auth {
            request = request.header("authorization", a);
        }
        request.call().map(|r| r.status().as_u16()).ok()
    };
    let ((), took) = wait("the published control channel to answer", READY_BOUND, || (status(Some(&bearer)) == Some(200)).then_some(()));
    report(&format!("published endpoint: /v1/status answered on {host} {:.1} s after the start", secs(took)));
    assert_eq!(status(None), Some(401), "no token, no status");
    assert_eq!(status(Some("Bearer not-the-token")), Some(401));

    // MCP over streamable HTTP, as a desktop client starts it.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"containers","version":"1"}}}"#;
    let mcp = |auth: &str| {
        agent
            .post(format!("{base}/mcp"))
            .header("authorization", auth)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .send(initialize)
            .expect("POST /mcp")
    };
    assert_eq!(mcp("Bearer not-the-token").status().as_u16(), 401);
    let mut answer = mcp(&bearer);
    assert_eq!(answer.status().as_u16(), 200);
    let mut seen = String::new();
    let mut reader = std::io::BufReader::new(answer.body_mut().as_reader());
    while !seen.contains("serverInfo") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
            break;
        }
        seen.push_str(&line);
    }
    assert!(seen.contains("serverInfo"), "the MCP initialize answer: {seen}");

    // A move through the published API, seen inside the container.
    let mut moved = agent
        .post(format!("{base}/v1/ops/propose"))
        .header("authorization", &bearer)
        .header("content-type", "application/json")
        .send(r#"{"text":"Recorded through the published port"}"#)
        .unwrap();
    assert_eq!(moved.status().as_u16(), 200);
    let id = serde_json::from_str::<Value>(&moved.body_mut().read_to_string().unwrap()).unwrap()["id"].as_str().unwrap().to_string();
    let shown = output(Command::new("docker").args(["exec", name, "agora", "show", &id]));
    assert!(shown.status.success(), "the container's own command line reaches its node: {}", text(&shown.stderr));

    // The live page: the login page is open; a code takes the token; the
    // session the code; the page its session.
    assert_eq!(agent.get(format!("{base}/")).call().unwrap().status().as_u16(), 200);
    assert_eq!(agent.post(format!("{base}/v1/page/code")).send_empty().unwrap().status().as_u16(), 401);
    let mut code = agent.post(format!("{base}/v1/page/code")).header("authorization", &bearer).send_empty().unwrap();
    assert_eq!(code.status().as_u16(), 200);
    let code = serde_json::from_str::<Value>(&code.body_mut().read_to_string().unwrap()).unwrap()["code"].as_str().unwrap().to_string();
    let session =
        agent.post(format!("{base}/v1/page/session")).header("content-type", "application/x-www-form-urlencoded").send(format!("code={code}")).unwrap();
    assert_eq!(session.status().as_u16(), 303);
    let header = |k: &str| session.headers().get(k).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let (location, cookie) = (header("location"), header("set-cookie"));
    let cookie = cookie.split(';').next().unwrap_or_default().to_string();
    assert!(location.starts_with("/page/") && !cookie.is_empty(), "{location} {cookie}");
    let mut page = agent.get(format!("{base}{location}")).call().unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.body_mut().read_to_string().unwrap().contains("<html"), "the page");
    let reads = format!("{base}{location}v1/automerge/url");
    assert_eq!(agent.get(&reads).call().unwrap().status().as_u16(), 401, "the page's reads need its session");
    assert_eq!(agent.get(&reads).header("cookie", &cookie).call().unwrap().status().as_u16(), 200, "the page's reads with its session");
}
