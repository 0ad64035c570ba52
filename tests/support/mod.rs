//! Shared harness of the node integration tests: homes with agent keys, and
//! real `agora node run` processes on 127.0.0.1 that are killed when dropped.
//! Every wait is a bounded loop on an observable condition.
#![allow(dead_code)]

use agora_core::entry::next_header;
use agora_core::{AgentKey, SignedEntry, pack};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const WAIT: Duration = Duration::from_secs(60);
pub const WORKSPACE: &str = "it";

pub fn agora(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agora")).arg("--home").arg(home).args(args).env_remove("AGORA_HOME").stdin(Stdio::null()).output().expect("agora runs")
}

pub fn ok(home: &Path, args: &[&str]) -> String {
    let out = agora(home, args);
    assert!(out.status.success(), "agora {args:?} failed ({}): {}{}", out.status, String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn json(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(home, &all)).expect("JSON output")
}

pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < WAIT, "timed out after {WAIT:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A home with an agent key.
pub struct Agent {
    _dir: Option<tempfile::TempDir>,
    pub home: PathBuf,
    pub id: String,
}

impl Agent {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let id = json(&home, &["init"])["agent"].as_str().unwrap().to_string();
        // AGORA_TEST_KEEP=1 keeps homes and node logs for a post-mortem.
        if std::env::var_os("AGORA_TEST_KEEP").is_some() {
            eprintln!("keeping {}", dir.path().display());
            let _ = dir.keep();
            return Self { _dir: None, home, id };
        }
        Self { _dir: Some(dir), home, id }
    }
    /// An agent whose home already exists (a copy of another's, say).
    pub fn existing(home: PathBuf, id: String) -> Self {
        Self { _dir: None, home, id }
    }
    pub fn key(&self) -> AgentKey {
        AgentKey::from_key_file_bytes(&std::fs::read(self.home.join("agent.key")).unwrap()).unwrap()
    }
}

/// A running `agora node run`, killed when dropped.
pub struct Node {
    pub child: Child,
    pub home: PathBuf,
    pub addr: String,
}

impl Node {
    pub fn start(agent: &Agent, founder: &str, bootstrap: &[&str]) -> Self {
        Self::start_on(agent, founder, bootstrap, "/ip4/127.0.0.1/tcp/0")
    }

    /// A node listening on `listen` (a fixed port, to come back where it was).
    pub fn start_on(agent: &Agent, founder: &str, bootstrap: &[&str], listen: &str) -> Self {
        let ready = agent.home.join("ready.json");
        let _ = std::fs::remove_file(&ready);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agora"));
        cmd.arg("--home")
            .arg(&agent.home)
            .args(["node", "run", "--listen", listen, "--no-mdns", "--workspace", WORKSPACE, "--founder", founder])
            .arg("--ready-file")
            .arg(&ready)
            .env_remove("AGORA_HOME")
            .env("AGORA_LOG", "agora=debug,warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(agent.home.with_extension("log")).unwrap()));
        for b in bootstrap {
            cmd.args(["--bootstrap", b]);
        }
        let mut child = cmd.spawn().expect("agora node runs");
        let addr = wait_for("the node to be ready", || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("node exited early with {status}: {}", std::fs::read_to_string(agent.home.with_extension("log")).unwrap_or_default());
            }
            let text = std::fs::read_to_string(&ready).ok()?;
            let v: Value = serde_json::from_str(&text).ok()?;
            Some(v["listen"][0].as_str()?.to_string())
        });
        Self { child, home: agent.home.clone(), addr }
    }

    pub fn status(&self) -> Value {
        json(&self.home, &["node", "status"])
    }

    pub fn peers(&self) -> usize {
        self.status()["peers"].as_array().map_or(0, Vec::len)
    }

    pub fn max_seq(&self, author: &str) -> u64 {
        let authors = json(&self.home, &["authors"]);
        authors.as_array().unwrap().iter().find(|a| a["author"] == author).map_or(0, |a| a["max_seq"].as_u64().unwrap())
    }

    pub fn holds(&self, id: &str) -> bool {
        agora(&self.home, &["show", id]).status.success()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        wait_for("the node to exit", || self.child.try_wait().ok().flatten())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `founder` admits every agent in `others` (before any node runs, or through its node).
pub fn admit(founder: &Agent, others: &[&Agent]) {
    for a in others {
        ok(&founder.home, &["admit", &a.id, "test member"]);
    }
}

/// A pack of `n` entries extending `key`'s chain from nothing, 256-byte payloads.
pub fn pack_of(key: &AgentKey, n: usize, dir: &Path) -> PathBuf {
    let path = dir.join("pack.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(out, "{}", pack::header_line()).unwrap();
    let mut prev: Option<SignedEntry> = None;
    for i in 0..n {
        let payload = format!("{i:0>256}");
        let e = SignedEntry::sign(next_header(key.agent_id(), prev.as_ref(), 1_000 + i as u64, payload.as_bytes()).unwrap(), key);
        writeln!(out, "{}", pack::entry_line(&e, Some(payload.as_bytes()))).unwrap();
        prev = Some(e);
    }
    out.flush().unwrap();
    path
}

/// Three agents in one workspace founded by the first, each running a node
/// bootstrapped from the founder's.
pub struct Trio {
    pub agents: [Agent; 3],
    pub nodes: [Node; 3],
}

impl Trio {
    pub fn start() -> Self {
        let agents = [Agent::new(), Agent::new(), Agent::new()];
        let founder = agents[0].id.clone();
        admit(&agents[0], &[&agents[1], &agents[2]]);
        let na = Node::start(&agents[0], &founder, &[]);
        let nb = Node::start(&agents[1], &founder, &[&na.addr]);
        let nc = Node::start(&agents[2], &founder, &[&na.addr]);
        Self { agents, nodes: [na, nb, nc] }
    }
}

/// Run `agora propose` `n` times at once on `home` (text `label i`), and
/// check that every one succeeded.
pub fn propose_concurrently(home: &Path, n: usize, label: &str) {
    let procs: Vec<Child> = (0..n)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_agora"))
                .arg("--home")
                .arg(home)
                .args(["propose", &format!("{label} {i}")])
                .env_remove("AGORA_HOME")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for p in procs {
        let out = p.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Every operation of the MCP server and the JSON API, by name.
pub const OPERATIONS: &[&str] = &[
    "propose",
    "support",
    "contradict",
    "refine",
    "synthesize",
    "ask",
    "resolve",
    "park",
    "resume",
    "reframe",
    "connect",
    "tension",
    "claim",
    "relate",
    "confirm",
    "frame_open",
    "frame_evidence",
    "frame_conclude",
    "frame_suspend",
    "frame_resume",
    "frame_invalidate",
    "task_new",
    "task_update",
    "trajectory",
    "judge",
    "memory_item",
    "record_use",
    "act",
    "ingest",
    "accept",
    "dispute",
    "withdraw",
    "resolve_fork",
    "orient",
    "status",
    "trace",
    "history",
    "latest",
    "decisions",
    "questions",
    "disagreements",
    "perspective",
    "consensus",
    "audit",
    "disputes",
    "frame_tree",
    "outcomes",
    "actions",
    "identity",
    "view_hash",
    "graph",
    "log",
    "show",
    "verify",
    "append",
    "redact",
    "export",
    "import",
    "authors",
    "forks",
    "check_proof",
    "search",
    "orphans",
    "admit",
    "remove",
    "admins",
    "roster",
    "key_rotate",
    "key_revoke",
    "key_recover",
    "key_history",
];

/// Copy a directory tree (a home, to restore it or to start a second
/// writer on the same key).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
