//! The command line: its global options, the command groups (each
//! area's enum lives beside its inputs, in `inputs/`), the commands of the
//! node, the simulator and the interfaces, and `agora --help` laid out in
//! groups.

pub use crate::inputs::{
    AgentCommand, ChainCommand, FrameCommand, FrameMove, MembershipCommand, MergeCommand, ReadCommand, ReasoningCommand, RecordCommand, TaskCommand,
};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Agora: signed, hash-linked reasoning chains for agent swarms, replicated
/// between nodes, merged into one reasoning graph every node derives alike.
#[derive(Parser, Debug)]
#[command(name = "agora", version, propagate_version = true)]
pub struct Args {
    /// Directory holding the agent key and the data store.
    /// Default: $AGORA_HOME, else ~/.agora.
    #[arg(long, global = true, env = "AGORA_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Act as this named agent of the home's keyring (`agora agent new`)
    /// instead of the home's own agent. Default: $AGORA_AGENT.
    #[arg(id = "acting_agent", long = "as", global = true, env = "AGORA_AGENT", value_name = "NAME")]
    pub agent: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

/// Every command, in groups. Each group is its own enum, flattened into one
/// level on the command line (`agora propose`, not `agora reasoning
/// propose`), so that the dispatcher (`commands::run`) is one exhaustive
/// match over the groups and each group's module one exhaustive match over
/// its commands: adding a command cannot leave it without a handler.
#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    #[command(flatten)]
    Chain(ChainCommand),
    #[command(flatten)]
    Membership(MembershipCommand),
    #[command(flatten)]
    Reasoning(ReasoningCommand),
    #[command(flatten)]
    Merge(MergeCommand),
    /// The home's keyring: named agents, each with its own key and chain,
    /// on the same store and node (`--as NAME` acts as one).
    #[command(subcommand)]
    Agent(AgentCommand),
    /// The node daemon: run, status.
    #[command(subcommand)]
    Node(NodeCommand),
    /// The running node's merged view as an Automerge document.
    #[command(subcommand)]
    Automerge(AutomergeCommand),
    /// The swarm simulator: seeded runs of many agents and nodes on virtual time.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Serve this agent's moves and reads as Model Context Protocol tools on
    /// standard input and output, for an LLM agent's MCP client to start as
    /// a subprocess. Commands go to the node running on this home, else run
    /// on its store. (A running node also serves them at /mcp over HTTP.)
    Mcp {
        /// Tool groups listed besides the core profile, comma-separated:
        /// reasoning, views, memory, frames, tasks, log, roster, or all.
        /// Default: `[mcp] tools` in the home's agora.toml, else core only.
        #[arg(long, value_name = "GROUPS", value_delimiter = ',')]
        tools: Vec<String>,
    },
    /// The live graph page of the node running on this home: a one-time
    /// login (good for a minute) written to <home>/open.html (mode 0600) and
    /// opened with $BROWSER, or the desktop's browser, and printed as a URL.
    /// The page never holds the control token.
    Open {
        /// Print the login URL only.
        #[arg(long)]
        no_browser: bool,
    },
    /// The control channel's bearer token, kept in <home>/control.token
    /// (mode 0600) across node runs
    #[command(subcommand, arg_required_else_help = false)]
    Token(TokenCommand),
}

/// `agora token`.
#[derive(Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCommand {
    /// Print the token (made now if the home has none), for a client's configuration
    Show,
    /// Write a new token; a running node refuses the old one and takes the new one at once, and node.json follows
    Rotate,
}

/// The swarm simulator (`simulations/`).
#[derive(Subcommand, Debug, Clone)]
pub enum SimCommand {
    /// Play a scenario file: print its seed and the command that replays
    /// it, the invariants checked and the figures; exit 3 if an invariant
    /// was violated.
    Run {
        /// The scenario (TOML; see simulations/scenarios/).
        scenario: PathBuf,
        /// The seed of every random choice (default: the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Write the JSON report and the run's plots there (DIR/report.json,
        /// DIR/run-*.svg and .png).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Play a scenario over a range of swarm sizes or seeds, one run after
    /// another, and draw the curves: convergence time and bandwidth per
    /// honest node against the size (or seed), and when forks were detected;
    /// runs that broke an invariant are marked.
    /// Exit 3 if an invariant was violated in any run.
    #[command(group(clap::ArgGroup::new("axis").required(true).multiple(true).args(["sizes", "seeds"])))]
    Sweep {
        /// The scenario (TOML; see simulations/scenarios/).
        scenario: PathBuf,
        /// Honest nodes of each run, e.g. 5,10,20,40 (generated agents scale
        /// with them; node indices in partitions and churn are rescaled).
        #[arg(long)]
        sizes: Option<String>,
        /// Seeds: FROM..TO (both included) or a list. Alone, one run per seed
        /// at the scenario's size; with --sizes, every size with each seed
        /// (the plots draw each size's median and its spread).
        #[arg(long)]
        seeds: Option<String>,
        /// The seed of every run of a size sweep (default: the scenario's).
        #[arg(long, conflicts_with = "seeds")]
        seed: Option<u64>,
        /// Write the sweep's JSON report and plots there (DIR/sweep.json,
        /// DIR/sweep-*.svg and .png), and each run's report and plots under
        /// DIR/runs/.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Search for the worst adversary: sample strategies of every adversary
    /// family from the seed, play each against the scenario and its
    /// honest-only run, check every invariant and the liveness bound (honest
    /// nodes converge within twice the honest-only time plus a constant),
    /// and report the worst strategy per family with its seed, its ratio and
    /// the command that replays it. Exit 3 if an invariant was broken.
    Search {
        /// The scenario (TOML; see simulations/scenarios/search.toml).
        scenario: PathBuf,
        /// Trials, the families taken in turn.
        #[arg(long)]
        budget: Option<usize>,
        /// The seed every strategy comes from.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only this family (slow_server, partial_server, dripper, reorderer,
        /// duplicator, silent, empty_after_claim, replayer, backdater,
        /// fork_flooder, stripper, sybil, eclipse, selective_relay,
        /// colluding_forker, key_thief, key_recovery).
        #[arg(long)]
        family: Option<String>,
        /// Replay one trial: the strategy seed a report gives (with --family).
        #[arg(long, requires = "family", conflicts_with = "budget")]
        strategy_seed: Option<u64>,
    },
    /// Results pages (simulations/results/*.md): write each page's tables
    /// again from the sweep reports they name, or with --check say which
    /// tables differ from their reports (exit 3).
    Results {
        /// The pages' directory.
        #[arg(default_value = "simulations/results")]
        dir: PathBuf,
        /// Change nothing; exit 3 if a table differs from its report.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum NodeCommand {
    /// Run the node: replicate the workspace's chains with peers and serve
    /// this home's commands until SIGINT or SIGTERM.
    Run(Box<NodeRunArgs>),
    /// The running node's peers, per-author frontiers, sync lag and refused input.
    Status,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct NodeRunArgs {
    /// TOML configuration file (see `agora.example.toml`); default: <home>/agora.toml if present.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data directory (the home: key and store); overrides --home.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Listen address (repeatable), e.g. /ip4/0.0.0.0/tcp/4001; port 0 picks one.
    #[arg(long = "listen", value_name = "MULTIADDR")]
    pub listen: Vec<String>,
    /// Bootstrap peer (repeatable), e.g. /ip4/10.0.0.2/tcp/4001/p2p/12D3Koo...
    #[arg(long = "bootstrap", value_name = "MULTIADDR")]
    pub bootstrap: Vec<String>,
    /// Workspace (swarm) name.
    #[arg(long)]
    pub workspace: Option<String>,
    /// The workspace founder's agent id (default: this node's agent).
    #[arg(long)]
    pub founder: Option<String>,
    /// Turn mDNS discovery on the local network off.
    #[arg(long)]
    pub no_mdns: bool,
    /// Write the status JSON (peer id, addresses) to this file once listening.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// The store's block cache in MiB (default 8): blocks read again are
    /// served from it; the rest come from the operating system's page cache.
    #[arg(long, value_name = "MIB")]
    pub store_cache_mib: Option<u64>,
    /// The control channel's address (HTTP API, /mcp, the page); default: this home's last, else 127.0.0.1 with a free port
    #[arg(long, value_name = "ADDR:PORT", env = "AGORA_CONTROL")]
    pub control: Option<String>,
    /// Read the control token from FILE (a mounted secret) instead of <home>/control.token
    #[arg(long, value_name = "FILE", env = "AGORA_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// `control` came from `AGORA_CONTROL`, not the flag (errors name
    /// which); set by [`parse`], which sees where a value came from.
    #[arg(skip)]
    pub control_from_env: bool,
    /// `token_file` came from `AGORA_TOKEN_FILE`, not the flag; set by [`parse`].
    #[arg(skip)]
    pub token_file_from_env: bool,
}

#[derive(Subcommand, Debug, Clone)]
pub enum AutomergeCommand {
    /// Bring an Automerge document file up to date with the running node's
    /// merged view, through Automerge's sync protocol (only changes travel).
    Pull {
        /// The document file (created if missing).
        #[arg(long)]
        doc: PathBuf,
        /// This client's id, which lets the node keep its sync state between pulls.
        #[arg(long, default_value = "cli")]
        client: String,
    },
}

/// The command line's definition, with `agora --help` laid out as a manual:
/// the commands in groups (the signed log, reasoning moves, reading the
/// graph, the merge layer, node and membership, interfaces, simulation),
/// each group taken from its own enum, so a command added to a group is
/// listed under it.
pub fn command() -> clap::Command {
    use clap::{CommandFactory, Subcommand};
    let cmd = Args::command();
    let names = |sub: clap::Command| -> Vec<String> { sub.get_subcommands().map(|c| c.get_name().to_string()).collect() };
    let empty = || clap::Command::new("group");
    let groups: [(&str, Vec<String>); 7] = [
        ("The signed log: keys, entries, packs, forks", names(ChainCommand::augment_subcommands(empty()))),
        ("Reasoning: record typed events", {
            let mut v = names(RecordCommand::augment_subcommands(empty()));
            v.push("frame".to_string());
            v
        }),
        ("Reasoning: read the graph", names(ReadCommand::augment_subcommands(empty()))),
        ("Merge: positions on other chains, and the views of all of them", names(MergeCommand::augment_subcommands(empty()))),
        ("Node and membership", {
            let mut v = vec!["node".to_string()];
            v.extend(names(MembershipCommand::augment_subcommands(empty())));
            v.push("agent".to_string());
            v
        }),
        ("Interfaces: for agents, programs and people", vec!["mcp".into(), "open".into(), "automerge".into()]),
        ("Simulation", vec!["sim".into()]),
    ];
    let width = cmd.get_subcommands().map(|c| c.get_name().len()).max().unwrap_or(10) + 2;
    let mut listed = std::collections::BTreeSet::new();
    let mut text = String::new();
    for (heading, members) in &groups {
        text.push_str(heading);
        text.push_str(":\n");
        for name in members {
            if let Some(sub) = cmd.find_subcommand(name) {
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                // The first sentence: the command's own help says the rest.
                let line = about.lines().next().unwrap_or("");
                let first = line.split_once(". ").map_or(line, |(head, _)| head);
                text.push_str(&format!("  {name:<width$}{first}\n"));
                listed.insert(name.clone());
            }
        }
        text.push('\n');
    }
    // Every command is in a group (the test `every_command_is_in_a_help_group` holds it).
    debug_assert!(cmd.get_subcommands().all(|c| listed.contains(c.get_name()) || ["help", AFTER_GROUPS].contains(&c.get_name())));
    let template = format!(
        "{{before-help}}{{name}} {{version}}\n{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{text}Options:\n{{options}}\n\n`agora <command> --help` explains one command.{{after-help}}"
    );
    cmd.help_template(template).after_help("Node and membership, also: `agora token show|rotate`, the control channel's bearer token.")
}

/// The command the help names after its groups rather than in one.
const AFTER_GROUPS: &str = "token";

/// Parse the process's arguments (exits with the help or a usage error).
pub fn parse() -> Args {
    use clap::FromArgMatches;
    use clap::parser::ValueSource;
    let matches = command().get_matches();
    let mut args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Where `agora node run`'s endpoint came from, which only the matches know.
    if let Command::Node(NodeCommand::Run(run)) = &mut args.command
        && let Some(("node", node)) = matches.subcommand()
        && let Some(("run", given)) = node.subcommand()
    {
        let from_env = |id: &str| given.value_source(id) == Some(ValueSource::EnvVariable);
        run.control_from_env = from_env("control");
        run.token_file_from_env = from_env("token_file");
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every top-level command is listed under one of the help's groups.
    #[test]
    fn every_command_is_in_a_help_group() {
        let cmd = command();
        let help = cmd.clone().render_help().to_string();
        for sub in cmd.get_subcommands().filter(|c| !["help", AFTER_GROUPS].contains(&c.get_name())) {
            let line = format!("  {} ", sub.get_name());
            assert!(help.contains(&line), "{} is not in a group of the help:\n{help}", sub.get_name());
        }
        assert!(help.contains(&format!("`agora {AFTER_GROUPS} ")), "{AFTER_GROUPS} is named after the groups:\n{help}");
        for heading in ["The signed log", "Reasoning: record", "Reasoning: read", "Merge:", "Node and membership", "Interfaces:"] {
            assert!(help.contains(heading), "{heading}:\n{help}");
        }
    }
}
