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

use anyhow::{Context, Result};
use std::path::Path;

pub use agora_node_client::*;

/// Write `node.json` atomically with mode 0600.
pub fn write_node_file(home: &Path, file: &NodeFile) -> Result<()> {
    let tmp = home.join(format!("{NODE_FILE}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    agora_home::home::write_private_file(&tmp, serde_json::to_string_pretty(file)?.as_bytes())?;
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
