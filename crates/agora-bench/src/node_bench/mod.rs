//! Benchmarks of real `agora node run` processes on 127.0.0.1: full sync of a
//! chain between two nodes, gossip latency across a swarm, and node memory
//! while holding many entries. Every figure is printed with this machine's
//! batch-verify rate measured in the same run.
//!
//! Run: `./scripts/bench.sh node sync --entries 100000`,
//! `./scripts/bench.sh node gossip --nodes 10 --events 100`,
//! `./scripts/bench.sh node rss --entries 1000000`,
//! `./scripts/bench.sh node mcp --calls 1000`, `./scripts/bench.sh node views`,
//! `./scripts/bench.sh node load`, `./scripts/bench.sh node agents`,
//! `./scripts/bench.sh node otlp`.
//!
//! One file per benchmark (`sync.rs`, `gossip.rs`, `rss.rs`, `mcp.rs`,
//! `views.rs`, `load.rs`, `agents.rs`, `otlp.rs`); this one holds the command line, and
//! `harness.rs` what they share: homes, node processes and their control
//! API, filled stores.

mod agents;
mod gossip;
mod harness;
mod load;
mod mcp;
mod otlp;
mod rss;
mod sync;
mod views;

use anyhow::{Context, Result, bail};
use std::path::PathBuf;

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
    /// Many agents of one node's keyring recording at once through the JSON
    /// API, against one agent alone: moves per second and latency.
    Agents {
        #[arg(long, default_value_t = 100)]
        agents: usize,
        /// Moves of each agent at once (the agent alone makes agents x moves).
        #[arg(long, default_value_t = 20)]
        moves: usize,
    },
    /// Framework exporters sending GenAI spans at once to `POST /v1/traces`:
    /// spans recorded per second and request latency, against the store
    /// alone appending the same events in the same batches.
    Otlp {
        #[arg(long, default_value_t = 50_000)]
        spans: usize,
        /// Spans per request (OpenTelemetry's batch processor sends up to 512).
        #[arg(long, default_value_t = 512)]
        batch: usize,
        /// Exporters sending at once.
        #[arg(long, default_value_t = 4)]
        clients: usize,
        /// Agents the spans name (each a keyring agent with its own chain).
        #[arg(long, default_value_t = 8)]
        agents: usize,
        /// Offered load in spans a second over all exporters, each sending
        /// its requests on a fixed schedule (a request's latency counts from
        /// when it was due); 0: each exporter sends its next request when
        /// the last is answered (the receiver's most).
        #[arg(long, default_value_t = 0)]
        rate: usize,
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
        What::Sync { entries, payload_bytes } => sync::run(&agora, entries, payload_bytes),
        What::Gossip { nodes, events } => gossip::run(&agora, nodes, events),
        What::Rss { entries, payload_bytes } => rss::run(&agora, entries, payload_bytes),
        What::Views { agents, events_per_agent, rounds } => views::run(&agora, agents, events_per_agent, rounds),
        What::Load { rate, agents, seconds, preload_agents, preload_events, skew_ms } => {
            load::run(&agora, rate, agents, seconds, preload_agents, preload_events, skew_ms)
        }
        What::Mcp { calls, events } => mcp::run(&agora, calls, events),
        What::Agents { agents, moves } => agents::run(&agora, agents, moves),
        What::Otlp { spans, batch, clients, agents, rate } => otlp::run(&agora, spans, batch, clients, agents, rate),
    }
}
