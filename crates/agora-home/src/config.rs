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
//! store_cache_mib = 8                    # the store's block cache
//! control = "127.0.0.1:7412"             # the control channel (API, /mcp, page)
//! token_file = "/run/secrets/agora-token" # its bearer token (default <home>/control.token)
//! control_connections_max = 128          # open control-channel connections
//! connections_per_ip_max = 32            # peer connections from one address
//!
//! [workspace]
//! name = "research"
//! founder = "<64 hex digits>"            # default: this node's agent
//!
//! [mcp]
//! tools = ["memory", "frames"]           # tool groups listed besides core; "all"
//!
//! [otlp]                                 # spans received at /v1/traces (protocol-spec/otlp.md)
//! agents = { "Research Agent" = "researcher" }  # a framework's agent to a keyring agent
//! default_agent = "self"                 # for spans naming no known agent; default: refused
//! keep_contents = false                  # arguments and results in the text, not only hashed
//! export = "http://collector:4318"       # the node's own spans, sent over OTLP/HTTP
//!
//! [replication]                          # a peer's own messages (protocol-spec/replication.md)
//! peer_messages_per_s = 500              # sustained; beyond, a range request is answered Wait
//! peer_messages_burst = 2000             # on top of the sustained rate
//!
//! [ingest]                               # `agora ingest`'s defaults (protocol-spec/ingest.md)
//! classifier = "openai"                  # rules (default), openai or sampling
//! endpoint = "http://127.0.0.1:8080/v1"  # an OpenAI-compatible chat endpoint
//! model = "qwen2.5-7b-instruct"
//! threshold = 0.6                        # proposals below it are dropped (default 0.5)
//! api_key_env = "OPENAI_API_KEY"         # or api_key_file = "/run/secrets/key"
//! ca_file = "local-ca.pem"               # trusted for https besides the platform's roots
//! ```
//!
//! The control channel's address is, first found: `agora node run
//! --control ADDR:PORT`, the environment's `AGORA_CONTROL`, `control` here,
//! then the address this home kept from its last start without one
//! (`<home>/control.address`), else 127.0.0.1 with a free port, which is
//! then kept. Its token file likewise: `--token-file`, `AGORA_TOKEN_FILE`,
//! `token_file` here (relative to this file's directory), else
//! `<home>/control.token` (see [`crate::control`]).
//!
//! `[otlp] export` is where the node sends its own spans (GenAI memory
//! operations, one per operation it serves; protocol-spec/otlp.md, "The
//! node's own spans"): a base URL like `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`/v1/traces` is added) or the whole traces URL. The environment's
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! overrides it, `OTEL_EXPORTER_OTLP_HEADERS` adds headers (a collector's
//! token), `OTEL_SDK_DISABLED=true` turns it off; with no endpoint nothing is
//! exported.

use agora_command_line::cli::NodeRunArgs;
use agora_core::AgentId;
use anyhow::{Context, Result, bail};
use libp2p::Multiaddr;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file's name inside a home directory, read when no --config is given.
pub const CONFIG_FILE: &str = "agora.toml";
/// Default listen address.
pub const DEFAULT_LISTEN: &str = "/ip4/0.0.0.0/tcp/7411";
/// Default workspace name.
pub const DEFAULT_WORKSPACE: &str = "default";
/// Largest store block cache a configuration may ask for, in MiB.
pub const STORE_CACHE_MIB_MAX: u64 = 64 << 10;
/// Control-channel connections open at once when the file does not say:
/// the command line opens one or two per command, a page a few (its reads
/// and its event stream), an MCP client one or two; 128 is far above one
/// user's needs and well within a descriptor limit of 1,024 beside the
/// network's connections.
pub const CONTROL_CONNECTIONS_DEFAULT: usize = 128;
/// The range a configuration may ask for: a command line needs two at once
/// (the proof, then the command), a page one more for its stream.
pub const CONTROL_CONNECTIONS_RANGE: std::ops::RangeInclusive<usize> = 4..=16_384;
/// Peer connections from one address (an IPv4 address, an IPv6 /64) when
/// the file does not say: 16 peers of one host (2 connections each at most)
/// fit, so a swarm of test nodes on one machine or behind one NAT is
/// served, while an attacker needs 8 addresses to fill the 256 slots.
pub const CONNECTIONS_PER_IP_DEFAULT: u32 = 32;
/// The range a configuration may ask for.
pub const CONNECTIONS_PER_IP_RANGE: std::ops::RangeInclusive<u32> = 1..=256;

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    node: NodeSection,
    #[serde(default)]
    workspace: WorkspaceSection,
    #[serde(default)]
    mcp: McpSection,
    #[serde(default)]
    otlp: OtlpSettings,
    #[serde(default)]
    ingest: IngestSettings,
    #[serde(default)]
    replication: ReplicationSettings,
}

/// `[replication]`: how many messages of its own (frontiers, range
/// requests) a peer may send; a range request beyond them is answered
/// `Wait` with when to ask again (`protocol-spec/replication.md`).
#[derive(Deserialize, Default, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReplicationSettings {
    /// Sustained, a second (1 to 1,000,000); none: 500.
    pub peer_messages_per_s: Option<u32>,
    /// On top of the sustained rate (1 to 1,000,000); none: 2,000.
    pub peer_messages_burst: Option<u32>,
}

impl ReplicationSettings {
    /// The allowed range of each setting.
    pub const RANGE: std::ops::RangeInclusive<u32> = 1..=1_000_000;

    fn checked(self) -> Result<Self> {
        for (name, value) in [("peer_messages_per_s", self.peer_messages_per_s), ("peer_messages_burst", self.peer_messages_burst)] {
            if let Some(n) = value.filter(|n| !Self::RANGE.contains(n)) {
                bail!("[replication] {name} must be 1 to 1000000, got {n}");
            }
        }
        Ok(self)
    }
}

/// `[ingest]`: the defaults of `agora ingest` (a call's own arguments
/// override each), and the API key of the configured endpoint, which is
/// sent to that endpoint only.
#[derive(Deserialize, Default, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IngestSettings {
    /// `rules`, `openai` or `sampling`; none: `rules`.
    pub classifier: Option<String>,
    /// The OpenAI-compatible chat endpoint (base URL or whole URL).
    pub endpoint: Option<String>,
    /// The model asked.
    pub model: Option<String>,
    /// Proposals below this confidence are dropped; none: 0.5.
    pub threshold: Option<f64>,
    /// The environment variable holding the endpoint's API key.
    pub api_key_env: Option<String>,
    /// A file holding it (relative to the home), read when `api_key_env` is not set.
    pub api_key_file: Option<PathBuf>,
    /// A PEM file of CA certificates (relative to the home) an `https://`
    /// endpoint's certificate may chain to, besides the platform's root
    /// certificates: a local server's self-signed one.
    pub ca_file: Option<PathBuf>,
}

/// The `[ingest]` settings of `<home>/agora.toml` (all unset when the file
/// does not exist); `api_key_file` and `ca_file` are made relative to the home.
pub fn ingest_of_home(home: &Path) -> Result<IngestSettings> {
    let path = home.join(CONFIG_FILE);
    if !path.exists() {
        return Ok(IngestSettings::default());
    }
    let mut settings = read_file(&path)?.ingest;
    settings.api_key_file = settings.api_key_file.map(|f| home.join(f));
    settings.ca_file = settings.ca_file.map(|f| home.join(f));
    Ok(settings)
}

/// `[otlp]`: how spans received over OTLP are attributed to the keyring's
/// agents, and what of them is kept (protocol-spec/otlp.md).
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OtlpSettings {
    /// A framework's agent (`gen_ai.agent.id`, `gen_ai.agent.name` or the
    /// resource's `service.name`) to the keyring agent that signs for it.
    #[serde(default)]
    pub agents: std::collections::BTreeMap<String, String>,
    /// The keyring agent for spans whose agent is known neither here nor
    /// in the keyring; none: such spans are refused.
    pub default_agent: Option<String>,
    /// Keep arguments, results and messages in the recorded text.
    #[serde(default)]
    pub keep_contents: bool,
    /// Where the node exports its own spans over OTLP/HTTP: a base URL
    /// (`/v1/traces` added) or the traces URL; none: not exported unless
    /// the `OTEL_EXPORTER_OTLP_*` environment names an endpoint.
    pub export: Option<String>,
}

/// `[mcp]`: what the MCP server lists.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct McpSection {
    /// The tool groups listed besides the core profile (`all`: every one).
    tools: Option<Vec<String>>,
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
    store_cache_mib: Option<u64>,
    control: Option<String>,
    token_file: Option<PathBuf>,
    control_connections_max: Option<usize>,
    connections_per_ip_max: Option<u32>,
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

/// Where a setting given outside the file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// The command line's flag.
    Flag,
    /// The environment.
    Environment,
}

/// The control channel's settings of `agora node run` that may come from
/// its flags or the environment (`--control`/`AGORA_CONTROL`,
/// `--token-file`/`AGORA_TOKEN_FILE`).
#[derive(Debug, Clone, Default)]
pub struct EndpointArgs {
    /// The control address as given, and where.
    pub control: Option<(String, Given)>,
    /// The token file as given, and where.
    pub token_file: Option<(PathBuf, Given)>,
}

/// The control address a node was told to bind, and by what (named in
/// errors, with how to choose another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSetting {
    pub addr: SocketAddr,
    /// `--control`, `AGORA_CONTROL` or `control in <file>`.
    pub from: String,
}

/// Everything `agora node run` needs, resolved.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The home (data) directory.
    pub home: PathBuf,
    /// Addresses to listen on.
    pub listen: Vec<Multiaddr>,
    /// Peers to dial at start and again whenever they are not connected.
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
    /// The store's block cache, in bytes.
    pub store_cache_bytes: usize,
    /// Control-channel connections open at once.
    pub control_connections_max: usize,
    /// Peer connections (established and pending) from one address.
    pub connections_per_ip_max: u32,
    /// The control channel's address, if set; `None`: the one this home
    /// kept, else 127.0.0.1 with a free port ([`crate::control`]).
    pub control: Option<ControlSetting>,
    /// The control token's file, if given; `None`: `<home>/control.token`.
    pub token_file: Option<PathBuf>,
    /// `[otlp]`: the spans the node receives.
    pub otlp: OtlpSettings,
    /// `[replication]`: peers' message rates.
    pub replication: ReplicationSettings,
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

/// The MCP tool groups named by `<home>/agora.toml` (`[mcp] tools`), if
/// any: what `agora mcp` and the node's `/mcp` list when neither the flag
/// nor the request names groups.
pub fn mcp_tools_of_home(home: &Path) -> Result<Option<Vec<String>>> {
    let path = home.join(CONFIG_FILE);
    if !path.exists() {
        return Ok(None);
    }
    Ok(read_file(&path)?.mcp.tools)
}

/// The token file named by `<home>/agora.toml` (`[node] token_file`), if
/// any: where `agora token` looks when no node runs and the environment
/// names none.
pub fn token_file_of_home(home: &Path) -> Result<Option<PathBuf>> {
    let path = home.join(CONFIG_FILE);
    if !path.exists() {
        return Ok(None);
    }
    Ok(read_file(&path)?.node.token_file.map(|f| home.join(f)))
}

fn parse_control(text: &str, from: String) -> Result<ControlSetting> {
    let addr = text.trim().parse::<SocketAddr>().with_context(|| format!("control address {text:?} ({from}) is not ADDR:PORT, e.g. 127.0.0.1:7412"))?;
    Ok(ControlSetting { addr, from })
}

/// Resolve flags over the file over defaults. `home` is the global --home.
pub fn resolve(args: &NodeRunArgs, home: PathBuf) -> Result<NodeConfig> {
    resolve_node(args, &EndpointArgs::default(), home)
}

/// [`resolve`], with the control channel's settings from flags or the
/// environment: those come first, then the file's.
pub fn resolve_node(args: &NodeRunArgs, endpoint: &EndpointArgs, home: PathBuf) -> Result<NodeConfig> {
    let home = args.data_dir.clone().unwrap_or(home);
    let file_path = match &args.config {
        Some(path) => Some(path.clone()),
        None if home.join(CONFIG_FILE).exists() => Some(home.join(CONFIG_FILE)),
        None => None,
    };
    let file = match &file_path {
        Some(path) => read_file(path)?,
        None => FileConfig::default(),
    };
    let file_name = file_path.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
    let control = match (&endpoint.control, &file.node.control) {
        (Some((text, Given::Flag)), _) => Some(parse_control(text, "--control".into())?),
        (Some((text, Given::Environment)), _) => Some(parse_control(text, "AGORA_CONTROL".into())?),
        (None, Some(text)) => Some(parse_control(text, format!("control in {file_name}"))?),
        (None, None) => None,
    };
    let token_file = match (&endpoint.token_file, &file.node.token_file) {
        (Some((path, _)), _) => Some(path.clone()),
        // Relative to the file's directory, wherever the node was started.
        (None, Some(path)) => Some(file_path.as_deref().and_then(Path::parent).map_or_else(|| path.clone(), |dir| dir.join(path))),
        (None, None) => None,
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
    let store_cache_bytes = match args.store_cache_mib.or(file.node.store_cache_mib) {
        None => agora_store::StoreOptions::default().block_cache_bytes,
        Some(mib @ 1..=STORE_CACHE_MIB_MAX) => (mib << 20) as usize,
        Some(mib) => bail!("store_cache_mib must be 1 to {STORE_CACHE_MIB_MAX}, got {mib}"),
    };
    let control_connections_max = match file.node.control_connections_max {
        None => CONTROL_CONNECTIONS_DEFAULT,
        Some(n) if CONTROL_CONNECTIONS_RANGE.contains(&n) => n,
        Some(n) => bail!("control_connections_max must be {} to {}, got {n}", CONTROL_CONNECTIONS_RANGE.start(), CONTROL_CONNECTIONS_RANGE.end()),
    };
    let connections_per_ip_max = match file.node.connections_per_ip_max {
        None => CONNECTIONS_PER_IP_DEFAULT,
        Some(n) if CONNECTIONS_PER_IP_RANGE.contains(&n) => n,
        Some(n) => bail!("connections_per_ip_max must be {} to {}, got {n}", CONNECTIONS_PER_IP_RANGE.start(), CONNECTIONS_PER_IP_RANGE.end()),
    };
    Ok(NodeConfig {
        home,
        listen,
        bootstrap,
        mdns: !args.no_mdns && file.node.mdns.unwrap_or(true),
        gossip_heartbeat: Duration::from_millis(file.node.gossip_heartbeat_ms.unwrap_or(700).clamp(50, 60_000)),
        workspace,
        founder,
        ready_file: args.ready_file.clone(),
        store_cache_bytes,
        control_connections_max,
        connections_per_ip_max,
        control,
        token_file,
        otlp: file.otlp,
        replication: file.replication.checked()?,
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

    /// The example configuration at the repository's root is a valid
    /// configuration, and says what the defaults are.
    #[test]
    fn the_example_configuration_is_valid_and_gives_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agora.toml");
        std::fs::write(&path, include_str!("../../../agora.example.toml")).unwrap();
        let args = NodeRunArgs { config: Some(path), ..Default::default() };
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        let d = resolve(&NodeRunArgs::default(), dir.path().join("empty")).unwrap();
        assert_eq!(
            (c.listen, c.mdns, c.gossip_heartbeat, c.workspace, c.store_cache_bytes),
            (d.listen, d.mdns, d.gossip_heartbeat, d.workspace, d.store_cache_bytes)
        );
        assert_eq!(c.otlp, d.otlp);
        assert_eq!(c.replication, d.replication);
    }

    /// `[replication]`: a peer's message rates, within bounds; zero (a
    /// budget that never refills) is refused with the setting named.
    #[test]
    fn the_replication_rates_are_read_within_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agora.toml");
        let args = NodeRunArgs { config: Some(path.clone()), ..Default::default() };
        std::fs::write(&path, "[replication]\npeer_messages_per_s = 10\npeer_messages_burst = 4\n").unwrap();
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        assert_eq!((c.replication.peer_messages_per_s, c.replication.peer_messages_burst), (Some(10), Some(4)));
        for (bad, name) in [("peer_messages_per_s = 0", "peer_messages_per_s"), ("peer_messages_burst = 1000001", "peer_messages_burst")] {
            std::fs::write(&path, format!("[replication]\n{bad}\n")).unwrap();
            let err = resolve(&args, dir.path().to_path_buf()).unwrap_err();
            assert!(format!("{err:#}").contains(&format!("[replication] {name} must be 1 to 1000000")), "{err:#}");
        }
    }

    /// `[otlp] export`: where the node's own spans go, read as written
    /// (the node checks the URL and adds `/v1/traces`).
    #[test]
    fn the_otlp_export_endpoint_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agora.toml");
        std::fs::write(&path, "[otlp]\nexport = \"http://collector:4318\"\n").unwrap();
        let c = resolve(&NodeRunArgs { config: Some(path), ..Default::default() }, dir.path().to_path_buf()).unwrap();
        assert_eq!(c.otlp.export.as_deref(), Some("http://collector:4318"));
        assert_eq!(resolve(&NodeRunArgs::default(), dir.path().join("empty")).unwrap().otlp.export, None);
    }

    /// The store's block cache: the default, the file's, the flag's over
    /// the file's; zero and absurd sizes are refused with the setting named.
    #[test]
    fn the_store_cache_is_set_by_file_or_flag_within_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "").unwrap();
        let args = NodeRunArgs { config: Some(path.clone()), ..Default::default() };
        assert_eq!(resolve(&args, dir.path().to_path_buf()).unwrap().store_cache_bytes, agora_store::StoreOptions::default().block_cache_bytes);
        std::fs::write(&path, "[node]\nstore_cache_mib = 64\n").unwrap();
        assert_eq!(resolve(&args, dir.path().to_path_buf()).unwrap().store_cache_bytes, 64 << 20);
        let flag = NodeRunArgs { store_cache_mib: Some(2), ..args.clone() };
        assert_eq!(resolve(&flag, dir.path().to_path_buf()).unwrap().store_cache_bytes, 2 << 20);
        for bad in [0, STORE_CACHE_MIB_MAX + 1] {
            let err = resolve(&NodeRunArgs { store_cache_mib: Some(bad), ..args.clone() }, dir.path().to_path_buf()).unwrap_err();
            assert!(format!("{err:#}").contains("store_cache_mib must be 1 to"), "{err:#}");
        }
    }

    /// The control address: the flag, then the environment, then the
    /// file; none of them: `None` (the home's kept address). The token
    /// file: the given one, then the file's, relative to the file.
    #[test]
    fn the_control_endpoint_is_set_by_flag_environment_or_file_in_that_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let args = NodeRunArgs { config: Some(path.clone()), ..Default::default() };
        std::fs::write(&path, "").unwrap();
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        assert_eq!((c.control, c.token_file), (None, None));
        std::fs::write(&path, "[node]\ncontrol = \"0.0.0.0:7412\"\ntoken_file = \"secret\"\n").unwrap();
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        assert_eq!(c.control.map(|s| s.addr), Some("0.0.0.0:7412".parse().unwrap()));
        assert_eq!(c.token_file, Some(dir.path().join("secret")));
        let env = EndpointArgs { control: Some(("127.0.0.1:7413".into(), Given::Environment)), token_file: Some(("/run/t".into(), Given::Environment)) };
        let c = resolve_node(&args, &env, dir.path().to_path_buf()).unwrap();
        assert_eq!(c.control, Some(ControlSetting { addr: "127.0.0.1:7413".parse().unwrap(), from: "AGORA_CONTROL".into() }));
        assert_eq!(c.token_file, Some(PathBuf::from("/run/t")));
        let flag = EndpointArgs { control: Some(("[::1]:7414".into(), Given::Flag)), ..env };
        assert_eq!(
            resolve_node(&args, &flag, dir.path().to_path_buf()).unwrap().control.map(|s| (s.addr, s.from)),
            Some(("[::1]:7414".parse().unwrap(), "--control".into()))
        );
        std::fs::write(&path, "[node]\ncontrol = \"localhost\"\n").unwrap();
        let err = resolve(&args, dir.path().to_path_buf()).unwrap_err();
        assert!(format!("{err:#}").contains("is not ADDR:PORT"), "{err:#}");
    }

    #[test]
    fn the_connection_caps_are_set_by_file_within_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let args = NodeRunArgs { config: Some(path.clone()), ..Default::default() };
        std::fs::write(&path, "").unwrap();
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        assert_eq!((c.control_connections_max, c.connections_per_ip_max), (CONTROL_CONNECTIONS_DEFAULT, CONNECTIONS_PER_IP_DEFAULT));
        std::fs::write(&path, "[node]\ncontrol_connections_max = 16\nconnections_per_ip_max = 2\n").unwrap();
        let c = resolve(&args, dir.path().to_path_buf()).unwrap();
        assert_eq!((c.control_connections_max, c.connections_per_ip_max), (16, 2));
        for (bad, named) in
            [("control_connections_max = 3", "control_connections_max must be 4 to"), ("connections_per_ip_max = 0", "connections_per_ip_max must be 1 to")]
        {
            std::fs::write(&path, format!("[node]\n{bad}\n")).unwrap();
            let err = resolve(&args, dir.path().to_path_buf()).unwrap_err();
            assert!(format!("{err:#}").contains(named), "{err:#}");
        }
    }
}
