//! The local control channel: how the `agora` command line reaches a running
//! node on the same home directory.
//!
//! While a node runs it listens on an HTTP port of 127.0.0.1 and writes
//! `<home>/node.json` (mode 0600: its pid, control address, a random bearer
//! token, peer id and listen addresses). A command line invocation that finds
//! the file sends its arguments (and its standard input, when the command
//! reads it) to `POST /v1/command`; the node runs the command on its own open
//! store and streams back frames of standard output, standard error and the
//! exit code. `GET /v1/status` answers `agora node status`, and
//! `POST /v1/automerge/sync` serves the merged view to `agora automerge pull`.
//! Only the home's owner can read the token, so only they can drive the node.
//!
//! Frame: one kind byte (1 stdout, 2 stderr, 3 exit code), a u32 big-endian
//! length, the bytes.
//!
//! `node.json` can outlive its node (a crash, a kill). Before a client sends
//! the token, its arguments or its input, it checks that the recorded pid is
//! alive, then that whatever listens at the address knows the token:
//! `GET /v1/hello` with a fresh random challenge, answered with
//! SHA-256(`"agora-control-proof/1"` || token || challenge) ([`proof`]). A
//! listener that fails either check receives nothing else, and the command
//! runs on the store directly (which RocksDB's lock refuses while a live node
//! holds it).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

/// The file a running node writes into its home.
pub const NODE_FILE: &str = "node.json";
pub use agora_command_line::wire::{
    frame, proof, token_matches, CommandRequest, CHALLENGE_HEADER, COMMAND_LINE_BYTES_MAX, FRAME_EXIT, FRAME_STDERR, FRAME_STDOUT, PROOF_HEADER,
    STDIN_BYTES_MAX,
};
use agora_command_line::wire::{encode_request, frame_head};

/// Contents of `node.json`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct NodeFile {
    /// The node's process id.
    pub pid: u32,
    /// `127.0.0.1:PORT` of the control channel.
    pub control: String,
    /// Bearer token for the control channel.
    pub token: String,
    /// The node's libp2p peer id.
    pub peer_id: String,
    /// Addresses it listens on, each ending in /p2p/<peer id>.
    pub listen: Vec<String>,
    /// Workspace name.
    pub workspace: String,
}

/// Write `node.json` atomically with mode 0600.
pub fn write_node_file(home: &Path, file: &NodeFile) -> Result<()> {
    let tmp = home.join(format!("{NODE_FILE}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    crate::home::write_private_file(&tmp, serde_json::to_string_pretty(file)?.as_bytes())?;
    std::fs::rename(&tmp, home.join(NODE_FILE)).with_context(|| format!("writing {}", home.join(NODE_FILE).display()))?;
    Ok(())
}

/// Remove `node.json` if it is ours (same pid).
pub fn remove_node_file(home: &Path) {
    let path = home.join(NODE_FILE);
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(f) = serde_json::from_str::<NodeFile>(&text)
        && f.pid == std::process::id()
    {
        let _ = std::fs::remove_file(path);
    }
}

/// A node found through `node.json` whose recorded process is alive. It may
/// still not be ours (the pid reused): [`verify_node`] tells, and every call
/// below makes it first.
pub fn find_node(home: &Path) -> Option<NodeFile> {
    let text = std::fs::read_to_string(home.join(NODE_FILE)).ok()?;
    let file: NodeFile = serde_json::from_str(&text).ok()?;
    process_alive(file.pid).then_some(file)
}

/// Is a process with this pid running? (Linux: its `/proc` entry; where
/// `/proc` is not mounted, assume it is and let [`verify_node`] decide.)
fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    proc_root.join(pid.to_string()).exists()
}

/// Does the listener at `node.control` know the token? Sends a random
/// challenge and nothing else.
pub fn verify_node(node: &NodeFile) -> Result<(), ForwardError> {
    let mut challenge = [0u8; 32];
    getrandom::fill(&mut challenge).map_err(|e| ForwardError::Failed(anyhow::anyhow!("OS random source failed: {e}")))?;
    let challenge = hex::encode(challenge);
    let response = agent(Some(Duration::from_secs(10))).get(format!("http://{}/v1/hello", node.control)).header(CHALLENGE_HEADER, &challenge).call();
    let answer = match response {
        Ok(r) if r.status() == 200 => r.headers().get(PROOF_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string),
        _ => None,
    };
    match answer {
        Some(a) if token_matches(&a, &proof(&node.token, &challenge)) => Ok(()),
        // Nothing listens, or something that is not this home's node.
        _ => Err(ForwardError::Unreachable),
    }
}

fn agent(timeout: Option<Duration>) -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .timeout_connect(Some(Duration::from_secs(2)))
        .timeout_global(timeout)
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// Why a forward did not happen.
pub enum ForwardError {
    /// Nothing listens at the address: the node is gone (run locally).
    Unreachable,
    /// The node answered with an error.
    Failed(anyhow::Error),
}

/// Run a command in the node and write its standard output and error to
/// `out` and `err` as they arrive. Returns the exit code's byte.
pub fn forward_to(node: &NodeFile, request: &CommandRequest, stdin: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, ForwardError> {
    verify_node(node)?;
    let body = encode_request(request, stdin);
    let response = agent(None)
        .post(format!("http://{}/v1/command", node.control))
        .header("authorization", format!("Bearer {}", node.token))
        .send(&body[..]);
    let mut response = match response {
        Ok(r) => r,
        Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Err(ForwardError::Unreachable),
        Err(ureq::Error::ConnectionFailed) => return Err(ForwardError::Unreachable),
        Err(e) => return Err(ForwardError::Failed(anyhow::anyhow!("control channel of the node at {}: {e}", node.control))),
    };
    if response.status() != 200 {
        let text = response.body_mut().read_to_string().unwrap_or_default();
        return Err(ForwardError::Failed(anyhow::anyhow!("the node refused the command ({}): {}", response.status(), text.trim())));
    }
    let mut reader = response.body_mut().as_reader();
    copy_frames(&mut reader, out, err).map_err(ForwardError::Failed)
}

fn copy_frames(reader: &mut impl Read, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    loop {
        let mut head = [0u8; 5];
        if let Err(e) = reader.read_exact(&mut head) {
            bail!("the node closed the control stream before the command finished: {e}");
        }
        let (kind, len) = frame_head(head)?;
        let mut bytes = vec![0u8; len];
        reader.read_exact(&mut bytes).context("reading a control frame")?;
        match kind {
            FRAME_STDOUT => {
                out.write_all(&bytes)?;
                out.flush()?;
            }
            FRAME_STDERR => err.write_all(&bytes)?,
            FRAME_EXIT => return Ok(bytes.first().copied().unwrap_or(1)),
            other => bail!("unknown control frame kind {other}"),
        }
    }
}

/// `GET /v1/status` of a running node.
pub fn status(node: &NodeFile) -> Result<serde_json::Value> {
    if verify_node(node).is_err() {
        bail!("no node of this home answers at {} (node.json is stale: pid {})", node.control, node.pid);
    }
    let mut response = agent(Some(Duration::from_secs(10)))
        .get(format!("http://{}/v1/status", node.control))
        .header("authorization", format!("Bearer {}", node.token))
        .call()
        .with_context(|| format!("no node answers at {} (is it running?)", node.control))?;
    let text = response.body_mut().read_to_string()?;
    if response.status() != 200 {
        bail!("the node refused the status request ({}): {text}", response.status());
    }
    Ok(serde_json::from_str(&text)?)
}

/// One round of Automerge sync with the node's published merged view.
pub fn automerge_sync(node: &NodeFile, client: &str, message: &[u8]) -> Result<Vec<u8>> {
    if verify_node(node).is_err() {
        bail!("no node of this home answers at {} (node.json is stale: pid {})", node.control, node.pid);
    }
    let mut body = client.as_bytes().to_vec();
    body.push(b'\n');
    body.extend_from_slice(message);
    let mut response = agent(Some(Duration::from_secs(60)))
        .post(format!("http://{}/v1/automerge/sync", node.control))
        .header("authorization", format!("Bearer {}", node.token))
        .send(&body[..])
        .with_context(|| format!("no node answers at {} (is it running?)", node.control))?;
    if response.status() != 200 {
        let text = response.body_mut().read_to_string().unwrap_or_default();
        bail!("the node refused the sync message ({}): {}", response.status(), text.trim());
    }
    let mut out = Vec::new();
    response.body_mut().as_reader().take(64 << 20).read_to_end(&mut out)?;
    Ok(out)
}
