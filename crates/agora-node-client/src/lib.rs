//! The local control channel: how the `agora` command line reaches a running
//! node on the same home directory.
//!
//! While a node runs it listens on an HTTP port (127.0.0.1 unless told
//! otherwise) and writes `<home>/node.json` (mode 0600: its pid, control
//! address, its bearer token and the file that holds it, peer id and listen
//! addresses). A command line invocation that finds
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
//!
//! This crate is the client's side and nothing else: it links no store, so
//! the `agora` command line, which forwards every command while a node runs,
//! starts without loading RocksDB (see `node/src/client.rs`). The node's side
//! (writing `node.json`, serving the routes) is in `agora-commands::control`
//! and `agora-node`'s `daemon/server.rs`.
#![forbid(unsafe_code)]

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file a running node writes into its home.
pub const NODE_FILE: &str = "node.json";
use agora_command_line::cli::{ChainCommand, Command, ReasoningCommand, RecordCommand};
pub use agora_command_line::wire::{
    CHALLENGE_HEADER, COMMAND_LINE_BYTES_MAX, CommandRequest, FRAME_EXIT, FRAME_STDERR, FRAME_STDOUT, PROOF_HEADER, STDIN_BYTES_MAX, frame, proof,
    token_matches,
};
use agora_command_line::wire::{encode_request, frame_head};
use agora_core::limits::PAYLOAD_BYTES_MAX;

/// Contents of `node.json`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct NodeFile {
    /// The node's process id.
    pub pid: u32,
    /// `ADDR:PORT` of the control channel, as a client of this machine
    /// reaches it (127.0.0.1 for a node bound to every address).
    pub control: String,
    /// Bearer token for the control channel: the one at the node's start
    /// or its last `agora token rotate`.
    pub token: String,
    /// The file the node reads its token from, again whenever it changes;
    /// [`find_node`] takes the token from it when it can read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    /// The node's libp2p peer id.
    pub peer_id: String,
    /// Addresses it listens on, each ending in /p2p/<peer id>.
    pub listen: Vec<String>,
    /// Workspace name.
    pub workspace: String,
}

/// The home directory a command line means: `--home` (or `AGORA_HOME`, which
/// the grammar reads into the same option), else `~/.agora`.
pub fn home_dir(home: Option<PathBuf>) -> Result<PathBuf> {
    match home {
        Some(dir) => Ok(dir),
        None => {
            let user = std::env::var_os("HOME").context("neither --home, AGORA_HOME nor HOME is set")?;
            Ok(PathBuf::from(user).join(".agora"))
        }
    }
}

/// A node found through `node.json` whose recorded process is alive. It may
/// still not be ours (the pid reused): [`verify_node`] tells, and every call
/// below makes it first.
pub fn find_node(home: &Path) -> Option<NodeFile> {
    let text = std::fs::read_to_string(home.join(NODE_FILE)).ok()?;
    let mut file: NodeFile = serde_json::from_str(&text).ok()?;
    if let Some(token) = file.token_file.as_deref().and_then(current_token) {
        file.token = token;
    }
    process_alive(file.pid).then_some(file)
}

/// The token in a node's token file now (it may have been replaced since
/// `node.json` was written), if the file is readable and holds one.
fn current_token(path: &str) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(4096).read_to_string(&mut text).ok()?;
    let token = text.trim();
    (!token.is_empty() && !token.contains(char::is_whitespace)).then(|| token.to_string())
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
    send_command(node, request, stdin, out, err)
}

/// [`forward_to`] to a node [`verify_node`] has already accepted: the
/// command line reads its standard input only once it knows a node will
/// take it, so that it can still hand the input to a local run otherwise.
pub fn send_command(node: &NodeFile, request: &CommandRequest, stdin: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, ForwardError> {
    let body = encode_request(request, stdin);
    let response = agent(None).post(format!("http://{}/v1/command", node.control)).header("authorization", format!("Bearer {}", node.token)).send(&body[..]);
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

/// `POST /v1/ops/<name>` of a running node that [`verify_node`] accepted:
/// `Ok(result)` with the operation's JSON result, or `Err(body)` with the
/// error the node answered (its JSON body: `code`, `message`, `rule`,
/// `entry`).
pub fn call_operation(
    node: &NodeFile,
    as_agent: Option<&str>,
    name: &str,
    input: &serde_json::Value,
) -> Result<Result<serde_json::Value, serde_json::Value>, ForwardError> {
    let body = serde_json::to_vec(input).map_err(|e| ForwardError::Failed(e.into()))?;
    let mut request = agent(None)
        .post(format!("http://{}/v1/ops/{name}", node.control))
        .header("authorization", format!("Bearer {}", node.token))
        .header("content-type", "application/json");
    if let Some(name) = as_agent {
        request = request.header(AGENT_HEADER, name);
    }
    let response = request.send(&body[..]);
    let mut response = match response {
        Ok(r) => r,
        Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Err(ForwardError::Unreachable),
        Err(ureq::Error::ConnectionFailed) => return Err(ForwardError::Unreachable),
        Err(e) => return Err(ForwardError::Failed(anyhow::anyhow!("the node at {}: {e}", node.control))),
    };
    let status = response.status();
    let text = response
        .body_mut()
        .with_config()
        .limit(OPERATION_ANSWER_BYTES_MAX)
        .read_to_string()
        .map_err(|e| ForwardError::Failed(anyhow::anyhow!("reading the node's answer to {name}: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| ForwardError::Failed(anyhow::anyhow!("the node's answer to {name} ({status}) is not JSON: {e}: {}", text.trim())))?;
    Ok(if status == 200 { Ok(value) } else { Err(value) })
}

/// The request header naming the agent of the node's keyring an operation
/// acts as (`POST /v1/ops/<name>`); without it, the node's own agent.
pub const AGENT_HEADER: &str = "agora-agent";

/// Set (to `1`) by the `agora` front program when it found no node on the
/// home and hands the command to the full program, which then runs it on
/// the store without looking for a node again.
pub const NODE_ABSENT_ENV: &str = "AGORA_NODE_ABSENT";

/// Largest answer of an operation read from a node (an export of a large
/// store is the largest).
pub const OPERATION_ANSWER_BYTES_MAX: u64 = 1 << 30;

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

/// One round of Automerge sync with the node's published merged view: the
/// node's reply, and the id of the document it is about (the
/// `agora-automerge-document` header; a new id means a new document).
pub fn automerge_sync(node: &NodeFile, client: &str, message: &[u8]) -> Result<(Vec<u8>, Option<String>)> {
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
    let document = response.headers().get("agora-automerge-document").and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut out = Vec::new();
    response.body_mut().as_reader().take(64 << 20).read_to_end(&mut out)?;
    Ok((out, document))
}

/// Does the command read standard input, and up to how many bytes? It is
/// read up front, so that the command can be forwarded to a node, or
/// retried, with it.
pub fn reads_stdin(command: &Command) -> Option<usize> {
    let dash = |p: &Path| p == Path::new("-");
    match command {
        Command::Chain(ChainCommand::Append { file }) if file.as_deref().is_none_or(dash) => Some(PAYLOAD_BYTES_MAX as usize + 1),
        Command::Chain(ChainCommand::Import { file }) if dash(file) => Some(STDIN_BYTES_MAX + 1),
        Command::Reasoning(ReasoningCommand::Record(RecordCommand::Ingest(i))) if i.text == "-" => Some(agora_command_line::inputs::INGEST_TEXT_BYTES_MAX + 1),
        _ => None,
    }
}

/// Read standard input up to `max` bytes ([`reads_stdin`]). More than a
/// payload's worth is refused: an import that large is read from a file.
pub fn read_stdin(max: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::io::stdin().lock().take(max as u64).read_to_end(&mut buf)?;
    if buf.len() >= max && max > PAYLOAD_BYTES_MAX as usize + 1 {
        bail!("standard input is larger than {} bytes; pass a file path instead", max - 1);
    }
    Ok(buf)
}

/// `agora node status`: the running node's status, printed.
pub fn print_status(home: &Path, json: bool) -> Result<()> {
    let node = find_node(home).ok_or_else(|| anyhow::anyhow!("no node is running on {} (no {})", home.display(), NODE_FILE))?;
    let status = status(&node)?;
    if json {
        println!("{status}");
    } else {
        println!("{}", serde_json::to_string_pretty(&status)?);
    }
    Ok(())
}

/// The file `agora open` hands the browser, in the home (mode 0600): a
/// form that posts a one-time login code to the node.
pub const OPEN_PAGE_FILE: &str = "open.html";
/// The environment variable naming the program that opens the page (given
/// the login file's path as its one argument); without it, `xdg-open` on a
/// desktop.
pub const BROWSER_VAR: &str = "BROWSER";

/// A login code for the live page, good once within the time the node
/// states (`POST /v1/page/code`, with the token).
pub fn page_code(node: &NodeFile) -> Result<(String, u64)> {
    let mut response = agent(Some(Duration::from_secs(10)))
        .post(format!("http://{}/v1/page/code", node.control))
        .header("authorization", format!("Bearer {}", node.token))
        .send_empty()
        .with_context(|| format!("no node answers at {} (is it running?)", node.control))?;
    let text = response.body_mut().read_to_string()?;
    if response.status() != 200 {
        bail!("the node refused a login code ({}): {text}", response.status());
    }
    let v: serde_json::Value = serde_json::from_str(&text)?;
    let code = v["code"].as_str().filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_hexdigit())).context("the node's login code is not hex")?;
    Ok((code.to_string(), v["expires_in_ms"].as_u64().unwrap_or(0)))
}

/// The login file's contents: a form that posts `code` to the node's
/// `/v1/page/session` as soon as a browser loads it.
fn login_form(control: &str, code: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\"><title>Agora: the live page</title></head>\n\
         <body><form method=\"post\" action=\"http://{control}/v1/page/session\"><input type=\"hidden\" name=\"code\" value=\"{code}\">\
         <noscript><button>Open the live page</button></noscript></form>\n\
         <script>document.forms[0].submit();</script></body></html>\n"
    )
}

/// Write `bytes` to `path` created with mode 0600 (a new file, renamed over
/// any older one), so no other local user can read it at any moment.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `agora open`: log a browser into the live page without handing it the
/// control token, and without putting any secret in a command line.
///
/// A one-time login code (good for a minute) goes into `<home>/open.html`
/// (mode 0600, in the owner's home); the browser is started with that
/// file's path, which other local users may read from the process list but
/// whose contents they cannot read. The browser posts the code and gets the
/// page's session back (a cookie for the page's path, which opens the
/// page's reads only). The same code, in a URL fragment, is printed for a
/// browser started by hand (standard output is the owner's terminal). A
/// code is good once: whoever uses it first gets the session, and a copy
/// left behind is dead within the minute.
pub fn open_page(home: &Path, no_browser: bool, json: bool) -> Result<()> {
    let node = find_node(home).ok_or_else(|| anyhow::anyhow!("no node is running on {}: the page is served by `agora node run`", home.display()))?;
    if verify_node(&node).is_err() {
        bail!("no node of this home answers at {} (node.json is stale: pid {})", node.control, node.pid);
    }
    let (code, expires_in_ms) = page_code(&node)?;
    let file = home.join(OPEN_PAGE_FILE);
    write_private(&file, login_form(&node.control, &code).as_bytes())?;
    let url = format!("http://{}/#code={code}", node.control);
    let opener = match std::env::var_os(BROWSER_VAR).filter(|b| !b.is_empty()) {
        Some(program) => Some(program),
        None if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() => Some("xdg-open".into()),
        None => None,
    };
    let opened = match opener.filter(|_| !no_browser) {
        // Best effort: the URL is printed either way.
        Some(program) => std::process::Command::new(program)
            .arg(&file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .is_ok(),
        None => false,
    };
    let secs = expires_in_ms / 1000;
    if json {
        println!("{}", serde_json::json!({ "url": url, "file": file, "opened": opened, "expires_in_ms": expires_in_ms }));
    } else {
        if opened {
            println!("opening the live page in the browser ({})", file.display());
        }
        println!("{url}");
        println!("(a one-time login, good for {secs} s: run `agora open` again for another)");
    }
    Ok(())
}
