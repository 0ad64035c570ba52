//! `agora node run`: the long-running node.
//!
//! It opens the home's store once and keeps it open; replicates the
//! workspace's chains with peers over libp2p ([`driver`], [`network`]); keeps
//! the reasoning graph in memory, updated as entries are committed; and serves
//! this home's command line over the local control channel ([`server`]), so
//! no other process opens the store while it runs. The control channel's
//! address and token stay the same across runs ([`bind_control`],
//! `agora_home::control`), so a client's configuration does too. SIGINT or SIGTERM stop it
//! cleanly: the control channel stops taking commands, verified entries
//! already queued are stored, and the store is closed (every acknowledged
//! write was synced when it was made). With an OTLP endpoint configured it
//! exports a span per operation it serves ([`telemetry`]), flushed within the
//! same bound when it stops.

mod automerge_repo;
mod automerge_routes;
mod control_listener;
mod control_state;
mod control_token;
mod driver;
mod heap_trim;
mod network;
mod otlp_route;
mod page_access;
mod peer_limits;
mod published_view;
mod server;
mod telemetry;

use agora_commands::cli::NodeRunArgs;
use agora_commands::control::{NodeFile, remove_node_file, write_node_file};
use agora_home::config;
use agora_home::home::Home;
use agora_live_views::graph_cache::GraphCache;
use agora_live_views::merge_cache::MergeCache;
use agora_sync::WorkspaceId;
use anyhow::{Context, Result, bail};
use driver::NodeContext;
use libp2p::identity::Keypair;
use network::NetworkSettings;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::info;

/// The node's libp2p key file inside the home (mode 0600). Separate from
/// the agent key: the transport identity can be rotated without touching
/// the chain.
pub const NODE_KEY_FILE: &str = "node.key";

/// Where a home's first default control port is picked: below Linux's
/// range for outgoing connections (32768-60999), so that while the node is
/// stopped no connection of this machine takes the port it keeps.
const CONTROL_PORTS_PICKED: std::ops::Range<u16> = 20_000..32_000;

/// How long each step of a shutdown (the control channel's open requests,
/// the event loop and its queued imports, blocking threads) may take: a
/// node stops within a few seconds of SIGTERM whatever it was doing.
const SHUTDOWN_STEP_MAX: Duration = Duration::from_millis(1500);

fn load_or_create_node_key(home: &Path) -> Result<Keypair> {
    let path = home.join(NODE_KEY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Keypair::from_protobuf_encoding(&bytes).with_context(|| format!("node key {} is damaged", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = Keypair::generate_ed25519();
            agora_home::home::write_private_file(&path, &key.to_protobuf_encoding()?)?;
            Ok(key)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGORA_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("agora=info,warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).try_init();
}

/// Bind the control channel where the configuration says (`--control`,
/// `AGORA_CONTROL`, `control` in agora.toml), else where this home's last
/// default run did, else on 127.0.0.1 with a free port, which the home then
/// keeps. A taken address is an error that says how to choose another:
/// the endpoint never moves on its own.
fn bind_control(config: &config::NodeConfig) -> Result<std::net::TcpListener> {
    use agora_home::control::{CONTROL_ADDRESS_FILE, CONTROL_DEFAULT, keep_control_address, kept_control_address};
    let kept_file = config.home.join(CONTROL_ADDRESS_FILE);
    let (want, from) = match &config.control {
        Some(setting) => (setting.addr, setting.from.clone()),
        None => match kept_control_address(&config.home)? {
            Some(addr) => (addr, format!("this home's, kept in {}", kept_file.display())),
            None => {
                // The first start: a free port of the picked range, tried at
                // random; the system's choice if none of those is free.
                let default: std::net::SocketAddr = CONTROL_DEFAULT.parse()?;
                for _ in 0..32 {
                    let mut r = [0u8; 2];
                    getrandom::fill(&mut r).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
                    let span = CONTROL_PORTS_PICKED.end - CONTROL_PORTS_PICKED.start;
                    let port = CONTROL_PORTS_PICKED.start + u16::from_le_bytes(r) % span;
                    if let Ok(listener) = std::net::TcpListener::bind((default.ip(), port)) {
                        keep_control_address(&config.home, listener.local_addr()?)?;
                        listener.set_nonblocking(true).context("the control channel's socket")?;
                        return Ok(listener);
                    }
                }
                (default, "the default".to_string())
            }
        },
    };
    let listener = std::net::TcpListener::bind(want).map_err(|e| {
        let choose = "choose another with `agora node run --control ADDR:PORT`, AGORA_CONTROL=ADDR:PORT or `control = \"ADDR:PORT\"` in agora.toml's [node]";
        if e.kind() == std::io::ErrorKind::AddrInUse {
            let forget = if config.control.is_none() { format!(", or delete {} to pick a new free port", kept_file.display()) } else { String::new() };
            anyhow::anyhow!("the control address {want} ({from}) is taken by another process: {choose}{forget}")
        } else {
            anyhow::anyhow!("binding the control channel on {want} ({from}): {e}; {choose}")
        }
    })?;
    let bound = listener.local_addr().context("the control channel's address")?;
    if config.control.is_none() && want != bound {
        keep_control_address(&config.home, bound)?;
    }
    listener.set_nonblocking(true).context("the control channel's socket")?;
    Ok(listener)
}

/// The control address as a client of this machine dials it: a node bound
/// to every address (0.0.0.0, ::) is reached on loopback.
fn dialled(bound: std::net::SocketAddr) -> std::net::SocketAddr {
    match bound.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => (std::net::Ipv4Addr::LOCALHOST, bound.port()).into(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => (std::net::Ipv6Addr::LOCALHOST, bound.port()).into(),
        _ => bound,
    }
}

/// `agora node run`.
pub fn run(home_dir: PathBuf, args: &NodeRunArgs, json: bool) -> Result<ExitCode> {
    init_tracing();
    let given = |env: bool| if env { config::Given::Environment } else { config::Given::Flag };
    let endpoint = config::EndpointArgs {
        control: args.control.clone().map(|v| (v, given(args.control_from_env))),
        token_file: args.token_file.clone().map(|v| (v, given(args.token_file_from_env))),
    };
    let config = config::resolve_node(args, &endpoint, home_dir)?;
    let home = Home { dir: config.home.clone() };
    let key = home.load_key()?;
    if let Some(other) = agora_commands::control::find_node(&home.dir)
        && agora_commands::control::status(&other).is_ok()
    {
        bail!("a node (pid {}) is already running on {}", other.pid, home.dir.display());
    }
    let (token, token_file) = agora_home::control::load_or_create_token(&home.dir, config.token_file.as_deref())?;
    let control = bind_control(&config)?;
    let store = Arc::new(home.open_store_with_cache(config.store_cache_bytes).context("opening the store for the node")?);
    let agent = key.agent_id();
    // A node knows at start-up whether its own chain is forked, and whether
    // its author has resolved the fork; appends follow the resolution or are
    // refused (see `own_chain::append_own`).
    let founder = config.founder.unwrap_or(agent);
    if store.tip_summary(&agent)?.is_some_and(|s| s.count > 1) {
        let (entries, proofs) = agora_view::load_merge_input(&store, founder)?;
        let m = agora_merge::Merge::compute(&entries, &proofs)?;
        match m.chain(&agent).and_then(|c| c.frozen()) {
            Some(fork) => tracing::warn!(
                seq = fork.seq,
                "this agent's own chain is forked and unresolved: appends are refused until `agora resolve-fork <entry>` picks the branch that continues"
            ),
            None => info!("this agent's own chain is forked; its fork resolution names the branch that continues"),
        }
    }
    let workspace = WorkspaceId::new(&founder, &config.workspace);
    let node_key = load_or_create_node_key(&home.dir)?;
    let peer_id = node_key.public().to_peer_id();
    let histograms = crate::metrics::Histograms::default();
    // The live graphs hold no texts: an answer reads the few it shows from
    // the store. All the views hold their entry ids in one arena, each id
    // once.
    let ids = Arc::new(agora_core::id_arena::IdArena::new());
    let graph = Arc::new(GraphCache::observed(founder, histograms.view_recompute.clone()).texts_from(&store).sharing_ids(ids.clone()));
    let merge = Arc::new(
        MergeCache::observed(founder, histograms.merge_rebuild.clone(), histograms.merge_lag.clone())
            .with_perspective_builds(histograms.perspective_build.clone())
            .texts_from(&store)
            .sharing_ids(ids),
    );
    let ctx =
        NodeContext { config: config.clone(), store: store.clone(), graph: graph.clone(), agent, founder, workspace, node_key, histograms: histograms.clone() };
    let settings = NetworkSettings {
        mdns: config.mdns,
        heartbeat: config.gossip_heartbeat,
        connections_per_ip_max: config.connections_per_ip_max,
        bootstrap: config.bootstrap.clone(),
        ..NetworkSettings::default()
    };

    // The node's own spans over OTLP, when an endpoint is configured.
    let telemetry =
        telemetry::start(ctx.config.otlp.export.as_deref(), telemetry::Store { id: workspace.to_string(), name: ctx.config.workspace.clone() })?.map(Arc::new);
    let telemetry_at_stop = telemetry.clone();

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = runtime.block_on(async move {
        let (commit_tx, commits) = mpsc::channel(1024);
        let commits_missed = Arc::new(AtomicBool::new(false));
        let generation = Arc::new(std::sync::atomic::AtomicU64::new(0));
        store.set_observer(Some(driver::observer(graph.clone(), merge.clone(), commit_tx, commits_missed.clone(), generation.clone())));
        // The live merged view's thread: builds it from the store now, then
        // applies each commit as soon as it is made.
        let merge_stop = Arc::new(AtomicBool::new(false));
        let merge_worker = {
            let (merge, store, stop) = (merge.clone(), store.clone(), merge_stop.clone());
            std::thread::Builder::new()
                .name("merged-view".into())
                .spawn(move || merge.run_worker(&store, || stop.load(std::sync::atomic::Ordering::Relaxed)))
                .context("starting the merged view's thread")?
        };
        heap_trim::start().context("starting the heap trim's thread")?;
        let (status_tx, status) = mpsc::channel(16);
        let (stop_loop, shutdown) = oneshot::channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        let inbox = driver::Inbox { commits, commits_missed, status, shutdown };
        let loop_task = tokio::spawn(driver::run(ctx.clone(), settings, inbox, ready_tx));
        let listen = match ready_rx.await {
            Ok(listen) => listen,
            Err(_) => {
                return loop_task.await.context("the node's event loop")?.and(Err(anyhow::anyhow!("the node did not start")));
            }
        };
        let control = tokio::net::TcpListener::from_std(control).context("the control channel's socket")?;
        let bound = control.local_addr()?;
        let control_addr = dialled(bound);
        if !bound.ip().is_loopback() {
            info!(%bound, "the control channel listens beyond this machine: every route but the hello proof, the login page and the OpenAPI document needs the token");
        }
        // Ends the long-lived streams (the MCP endpoint's, the page's
        // /v1/events, the automerge-repo WebSockets), which would otherwise
        // hold the graceful shutdown open.
        let streams_end = tokio_util::sync::CancellationToken::new();
        // The published view, also served over the automerge-repo protocol
        // (one samod document made of its changes; see `automerge_repo.rs`).
        let mut published = published_view::PublishedView::default();
        let automerge_repo = Arc::new(
            automerge_repo::AutomergeRepo::start(&mut published, &peer_id.to_string(), &format!("ws://{control_addr}{}", automerge_repo::WEBSOCKET_PATH))
                .await
                .context("starting the automerge-repo server")?,
        );
        let control_limits = control_listener::ControlLimits::with_connections_max(ctx.config.control_connections_max);
        let control_counters = Arc::new(control_listener::ControlCounters::default());
        let state = Arc::new(control_state::ControlState {
            store: store.clone(),
            graph: graph.clone(),
            merge: merge.clone(),
            home: Home { dir: ctx.config.home.clone() },
            founder,
            token: control_token::ControlToken::new(token_file.clone(), token.clone()),
            status: status_tx,
            published: std::sync::Mutex::new(published),
            generation,
            histograms,
            streams_end: streams_end.clone(),
            automerge_repo: automerge_repo.clone(),
            page: page_access::PageAccess::new(control_addr.port())?,
            control_limits,
            control_counters: control_counters.clone(),
            otlp: otlp_route::mapping(&ctx.config.otlp),
            telemetry,
        });
        // Ends (and stops the repo) when `streams_end` is cancelled.
        let automerge_watcher = automerge_repo.spawn_watcher(state.clone());
        let stop_control = tokio_util::sync::CancellationToken::new();
        let router = server::router(state);
        let server = tokio::spawn(control_listener::serve(control, router, control_limits, control_counters, stop_control.clone()));
        let listen_full: Vec<String> = listen.iter().map(|a| format!("{a}/p2p/{peer_id}")).collect();
        let node_file = NodeFile {
            pid: std::process::id(),
            control: control_addr.to_string(),
            token,
            token_file: Some(token_file.display().to_string()),
            peer_id: peer_id.to_string(),
            listen: listen_full.clone(),
            workspace: ctx.config.workspace.clone(),
        };
        write_node_file(&ctx.config.home, &node_file)?;
        let ready = serde_json::json!({
            "peer_id": peer_id.to_string(), "agent": agent.to_string(), "listen": listen_full,
            "control": control_addr.to_string(), "workspace": ctx.config.workspace, "workspace_id": workspace.to_string(),
            "founder": founder.to_string(), "token_file": token_file.display().to_string(),
        });
        if let Some(path) = &ctx.config.ready_file {
            std::fs::write(path, ready.to_string()).with_context(|| format!("writing {}", path.display()))?;
        }
        {
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{ready}")?;
            } else {
                writeln!(out, "peer id {peer_id}")?;
                for a in &listen_full {
                    writeln!(out, "listening on {a}")?;
                }
                writeln!(out, "workspace {} ({workspace}), founder {founder}", ctx.config.workspace)?;
                writeln!(out, "control http://{control_addr} (MCP at /mcp; bearer token in {})", token_file.display())?;
            }
            out.flush()?;
        }
        info!(%peer_id, "node running");

        let mut loop_task = loop_task;
        let early = tokio::select! {
            signal = wait_for_signal() => { signal?; None }
            ended = &mut loop_task => Some(ended),
        };
        // Stop taking commands first, then the network loop. Each step is
        // bounded: every acknowledged write was synced when it was made, so
        // a command or an import still running when the time is up loses
        // nothing that was acknowledged (SHUTDOWN_STEP_MAX, below).
        streams_end.cancel();
        stop_control.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_STEP_MAX, server).await;
        let _ = tokio::time::timeout(SHUTDOWN_STEP_MAX, automerge_watcher).await;
        let loop_result = match early {
            Some(ended) => ended.context("the node's event loop")?.and(Err(anyhow::anyhow!("the node's event loop stopped"))),
            None => {
                info!("signal received; stopped taking commands");
                let _ = stop_loop.send(());
                match tokio::time::timeout(SHUTDOWN_STEP_MAX, loop_task).await {
                    Ok(ended) => ended.context("the node's event loop")?,
                    Err(_) => {
                        tracing::warn!("the event loop did not stop in time; exiting (acknowledged writes are synced)");
                        Ok(())
                    }
                }
            }
        };
        store.set_observer(None);
        merge_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        merge.wake();
        let deadline = std::time::Instant::now() + SHUTDOWN_STEP_MAX;
        while !merge_worker.is_finished() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        loop_result
    });
    // Commands still running on blocking threads are not waited for.
    runtime.shutdown_timeout(SHUTDOWN_STEP_MAX);
    // The spans still queued are sent, within the same bound.
    if let Some(t) = telemetry_at_stop {
        t.shutdown(SHUTDOWN_STEP_MAX);
    }
    remove_node_file(&config.home);
    result?;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
