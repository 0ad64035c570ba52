//! A home's configuration: `<home>/agora.toml` (or `--config`), overridden
//! by flags. The node daemon reads all of it; every command reads the
//! workspace's founder from it (which roster and views apply).
//!
//! ```toml
//! [node]
//! data_dir = "/var/lib/agora"            # default: --home / AGORA_HOME / ~/.agora
//! listen = ["/ip4/0.0.0.0/tcp/7411"]     # port 0 picks a free port
//! bootstrap = ["/ip4/10.0.0.2/tcp/7411/p2p/12D3KooW..."]
//! mdns = true                            # LAN discovery
//! gossip_heartbeat_ms = 700
//!
//! [workspace]
//! name = "research"
//! founder = "<64 hex digits>"            # default: this node's agent
//! ```

use crate::cli::NodeRunArgs;
use agora_core::AgentId;
use anyhow::{bail, Context, Result};
use libp2p::Multiaddr;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file's name inside a home directory, read when no --config is given.
pub const CONFIG_FILE: &str = "agora.toml";
/// Default listen address.
pub const DEFAULT_LISTEN: &str = "/ip4/0.0.0.0/tcp/7411";
/// Default workspace name.
pub const DEFAULT_WORKSPACE: &str = "default";

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    node: NodeSection,
    #[serde(default)]
    workspace: WorkspaceSection,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct NodeSection {
    data_dir: Option<PathBuf>,
    #[serde(default)]
    listen: Vec<String>,
    #[serde(default)]
    bootstrap: Vec<String>,
    mdns: Option<bool>,
    gossip_heartbeat_ms: Option<u64>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct WorkspaceSection {
    name: Option<String>,
    founder: Option<String>,
}

/// The workspace part of a home's `agora.toml`, for commands run by hand.
#[derive(Debug, Default, Clone)]
pub struct WorkspaceSettings {
    /// Founder, if configured.
    pub founder: Option<AgentId>,
}

/// Everything `agora node run` needs, resolved.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The home (data) directory.
    pub home: PathBuf,
    /// Addresses to listen on.
    pub listen: Vec<Multiaddr>,
    /// Peers to dial at start and to bootstrap Kademlia from.
    pub bootstrap: Vec<Multiaddr>,
    /// mDNS on the LAN.
    pub mdns: bool,
    /// Gossipsub heartbeat.
    pub gossip_heartbeat: Duration,
    /// Workspace name.
    pub workspace: String,
    /// Workspace founder; `None`: this node's agent.
    pub founder: Option<AgentId>,
    /// Where to write the status JSON once listening.
    pub ready_file: Option<PathBuf>,
}

fn read_file(path: &Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
    if text.len() > 1 << 20 {
        bail!("config {} is larger than 1 MiB", path.display());
    }
    toml::from_str(&text).with_context(|| format!("config {}", path.display()))
}

fn parse_addrs(list: &[String], what: &str) -> Result<Vec<Multiaddr>> {
    list.iter().map(|a| a.parse::<Multiaddr>().with_context(|| format!("{what} {a:?} is not a multiaddr"))).collect()
}

fn parse_founder(text: &str) -> Result<AgentId> {
    text.parse::<AgentId>().with_context(|| format!("workspace founder {text:?} is not an agent id"))
}

/// The workspace settings in `<home>/agora.toml`, if the file exists.
pub fn workspace_of_home(home: &Path) -> Result<WorkspaceSettings> {
    let path = home.join(CONFIG_FILE);
    if !path.exists() {
        return Ok(WorkspaceSettings::default());
    }
    let file = read_file(&path)?;
    Ok(WorkspaceSettings { founder: file.workspace.founder.as_deref().map(parse_founder).transpose()? })
}

/// Resolve flags over the file over defaults. `home` is the global --home.
pub fn resolve(args: &NodeRunArgs, home: PathBuf) -> Result<NodeConfig> {
    let home = args.data_dir.clone().unwrap_or(home);
    let file = match &args.config {
        Some(path) => read_file(path)?,
        None if home.join(CONFIG_FILE).exists() => read_file(&home.join(CONFIG_FILE))?,
        None => FileConfig::default(),
    };
    let home = match (&args.data_dir, &file.node.data_dir) {
        (None, Some(dir)) if args.config.is_some() => dir.clone(),
        _ => home,
    };
    let listen = if !args.listen.is_empty() { parse_addrs(&args.listen, "--listen")? } else { parse_addrs(&file.node.listen, "listen")? };
    let listen = if listen.is_empty() { vec![DEFAULT_LISTEN.parse()?] } else { listen };
    let mut bootstrap = parse_addrs(&file.node.bootstrap, "bootstrap")?;
    bootstrap.extend(parse_addrs(&args.bootstrap, "--bootstrap")?);
    let founder = match (&args.founder, &file.workspace.founder) {
        (Some(f), _) | (None, Some(f)) => Some(parse_founder(f)?),
        (None, None) => None,
    };
    let workspace = args.workspace.clone().or(file.workspace.name).unwrap_or_else(|| DEFAULT_WORKSPACE.into());
    if workspace.is_empty() || workspace.len() > 128 {
        bail!("workspace name must be 1 to 128 bytes, got {}", workspace.len());
    }
    Ok(NodeConfig {
        home,
        listen,
        bootstrap,
        mdns: !args.no_mdns && file.node.mdns.unwrap_or(true),
        gossip_heartbeat: Duration::from_millis(file.node.gossip_heartbeat_ms.unwrap_or(700).clamp(50, 60_000)),
        workspace,
        founder,
        ready_file: args.ready_file.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_and_unknown_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[node]\nlisten = [\"/ip4/127.0.0.1/tcp/9\"]\nmdns = false\nbootstrap = [\"/ip4/127.0.0.1/tcp/8\"]\n[workspace]\nname = \"lab\"\n",
        )
        .unwrap();
        let args = NodeRunArgs { config: Some(path.clone()), listen: vec!["/ip4/127.0.0.1/tcp/0".into()], ..Default::default() };
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        assert_eq!(c.listen, vec!["/ip4/127.0.0.1/tcp/0".parse::<Multiaddr>().unwrap()]);
        assert_eq!(c.bootstrap.len(), 1);
        assert!(!c.mdns);
        assert_eq!(c.workspace, "lab");
        assert_eq!(c.founder, None);
        std::fs::write(&path, "[node]\nlisten_on = []\n").unwrap();
        let err = resolve(&args, dir.path().to_path_buf()).unwrap_err();
        assert!(format!("{err:#}").contains("listen_on"), "{err:#}");
        std::fs::write(&path, "[workspace]\nfounder = \"nope\"\n").unwrap();
        assert!(format!("{:#}", resolve(&args, dir.path().to_path_buf()).unwrap_err()).contains("not an agent id"));
    }
}
