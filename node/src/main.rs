//! `agora-node`: the full program behind the `agora` command line, and the
//! node itself.
//!
//! `agora` (`client.rs`, a second binary of this package) forwards commands
//! to a running node and hands everything else to this program in its own
//! process (`exec`), so this one takes the same command line. It is thin
//! too: it parses arguments (`agora_commands::cli`),
//! resolves the home directory, and runs one command where it belongs
//! (`agora_commands::run::run_at_home`: forwarded to the home's running
//! node over the local control channel, or on the home's store), mapping
//! errors to exit codes. `agora node run` starts the long-running node
//! ([`daemon`]); `agora token` shows or rotates its control token
//! ([`token_cmd`]); `agora mcp` serves the MCP tools over standard input and
//! output (`agora_interfaces::mcp`); `agora sim` runs the simulator
//! ([`sim_cmd`]). The commands live in `agora-commands`, the front ends in
//! `agora-interfaces`; formats, verification, storage and replication in the
//! library crates below them.
//!
//! Exit codes: 0 success; 1 refused or failed (bad input, I/O, a store that is
//! not ours); 2 usage error; 3 `verify` found problems in stored data.

// Store errors name the entry they concern and are built only on failure.
#![allow(clippy::result_large_err)]

mod daemon;
mod metrics;
mod scratch_arena;
mod sim_cmd;
mod token_cmd;

use agora_commands::cli::{self, ChainCommand, Command, NodeCommand};
use agora_commands::run::NodeLookup;
use agora_commands::{automerge_pull, control, output};
use agora_home::home;
use agora_interfaces::mcp;
use agora_node_client as client;
use std::path::Path;
use std::process::ExitCode;

/// jemalloc rather than glibc's allocator: a node allocates and frees
/// megabyte buffers from many threads (RocksDB memtables, responses being
/// verified), and glibc's arenas keep such memory resident once freed (a 1M-entry
/// sync left a receiver at 146 MiB RSS with glibc, against 96 MiB when every
/// large block was returned). Wrapped in the simulator's meter, which
/// charges allocations to simulated nodes while `agora sim` runs (each
/// node's memory is measured, not estimated) and costs the node one relaxed
/// load per allocation otherwise.
#[global_allocator]
static ALLOCATOR: agora_sim::heap::Metered<tikv_jemallocator::Jemalloc> = agora_sim::heap::Metered(tikv_jemallocator::Jemalloc);

/// jemalloc's options, read at start-up:
/// - freed pages go back to the system within a second (by a background
///   thread) instead of ten, so a burst of sync traffic does not stay
///   resident;
/// - one arena instead of four per core: the views are built and kept by
///   a few threads, and every further arena held its own partly filled
///   pages of each size;
/// - small objects come from slabs of 16 pages, and threads cache them up
///   to 1 KiB: fewer slabs, so less of the allocator's own metadata, which
///   it never gives back.
///
/// Together these took a node holding a million entries with its views
/// from 399 to 386 MiB (`node views`), its allocator's metadata from 17 to
/// 9 MiB, with no measured change to the sync figures (`node rss`).
#[used]
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 107] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:1,slab_sizes:1-4096:16,tcache_max:1024\0";

fn main() -> ExitCode {
    // A home holds an agent's key and everything it wrote, redacted text
    // included until RocksDB rewrites it: every file and directory this
    // program creates (RocksDB's tables, write-ahead logs, LOG and OPTIONS
    // files among them, at any time, on its own threads) is its user's
    // alone, whatever the caller's umask. `Store::open` tightens what an
    // earlier program left.
    // SAFETY: umask(2) only sets the process's file mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    scratch_arena::install();
    let args = cli::parse();
    let json = args.json;
    if let Command::Token(action) = args.command {
        return match home::Home::resolve(args.home) {
            Ok(home) => done(token_cmd::run(&home.dir, action, json), json),
            Err(e) => fail(&e, json),
        };
    }
    // The simulator needs no home: it runs its own simulated nodes.
    match &args.command {
        Command::Sim(cli::SimCommand::Run { scenario, seed, out }) => {
            return sim_cmd::run(scenario, *seed, out.as_deref(), json).unwrap_or_else(|e| fail(&e, json));
        }
        Command::Sim(cli::SimCommand::Sweep { scenario, sizes, seeds, seed, out }) => {
            return sim_cmd::sweep(scenario, sizes.as_deref(), seeds.as_deref(), *seed, out.as_deref(), json).unwrap_or_else(|e| fail(&e, json));
        }
        Command::Sim(cli::SimCommand::Search { scenario, budget, seed, family, strategy_seed }) => {
            return sim_cmd::search(scenario, *budget, *seed, family.as_deref(), *strategy_seed, json).unwrap_or_else(|e| fail(&e, json));
        }
        Command::Sim(cli::SimCommand::Results { dir, check }) => {
            return sim_cmd::results(dir, *check, json).unwrap_or_else(|e| fail(&e, json));
        }
        _ => {}
    }
    let home = match home::Home::resolve(args.home.clone()) {
        Ok(h) => h,
        Err(e) => return fail(&e, json),
    };
    match &args.command {
        Command::Node(NodeCommand::Run(run)) => {
            return daemon::run(home.dir.clone(), run, json).unwrap_or_else(|e| fail(&e, json));
        }
        Command::Node(NodeCommand::Status) => return done(client::print_status(&home.dir, json), json),
        Command::Mcp { tools } => {
            let groups = match tools.is_empty() {
                false => mcp::parse_groups(tools),
                true => agora_home::config::mcp_tools_of_home(&home.dir).and_then(|t| mcp::parse_groups(&t.unwrap_or_default())),
            };
            return groups.and_then(|g| mcp::serve_stdio(home, args.agent.as_deref(), &g)).unwrap_or_else(|e| fail(&e, json));
        }
        Command::Open { no_browser } => return done(client::open_page(&home.dir, *no_browser, json), json),
        Command::Automerge(cli::AutomergeCommand::Pull { doc, client }) => {
            return automerge_pull(&home, doc, client, json).unwrap_or_else(|e| fail(&e, json));
        }
        _ => {}
    }
    // Standard input is read up front when the command uses it, so that the
    // command can be forwarded to a node, or retried, with it.
    let stdin = match client::reads_stdin(&args.command) {
        Some(max) => match client::read_stdin(max) {
            Ok(bytes) => bytes,
            Err(e) => return fail(&e, json),
        },
        None => Vec::new(),
    };
    let lookup = if matches!(args.command, Command::Chain(ChainCommand::Init | ChainCommand::CheckProof { .. })) {
        NodeLookup::Never
    } else if std::env::var_os(control::NODE_ABSENT_ENV).is_some_and(|v| v == "1") {
        NodeLookup::Absent
    } else {
        NodeLookup::Look
    };
    let argv: Vec<String> = std::env::args().collect();
    let result = {
        let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
        agora_commands::run::run_at_home(&home, &argv, args, &stdin, lookup, &mut stdout.lock(), &mut stderr.lock())
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e, json),
    }
}

fn automerge_pull(home: &home::Home, doc: &Path, client: &str, json: bool) -> anyhow::Result<ExitCode> {
    let node = control::find_node(&home.dir)
        .ok_or_else(|| anyhow::anyhow!("no node is running on {}: the Automerge view is served by `agora node run`", home.dir.display()))?;
    let (sent, received, rounds, doc_now) = automerge_pull::pull(&node, doc, client)?;
    let tree = agora_automerge::read_tree(&doc_now).map_err(|e| anyhow::anyhow!("reading the document: {e:?}"))?;
    let text = |k: &str| match tree.get(k) {
        Some(agora_automerge::Tree::Str(s)) => s.clone(),
        _ => String::new(),
    };
    let count = |k: &str| match tree.get(k) {
        Some(agora_automerge::Tree::Map(m)) => m.len(),
        _ => 0,
    };
    let value = serde_json::json!({
        "doc": doc.display().to_string(), "view_hash": text("view_hash"), "nodes": count("nodes"), "chains": count("chains"),
        "disputes": count("disputes"), "bytes_sent": sent, "bytes_received": received, "rounds": rounds,
    });
    if json {
        println!("{value}");
    } else {
        println!(
            "{}: view {} ({} nodes, {} chains, {} disputes); sync sent {sent} B, received {received} B in {rounds} round(s)",
            doc.display(),
            text("view_hash"),
            count("nodes"),
            count("chains"),
            count("disputes")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn done(result: anyhow::Result<()>, json: bool) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn fail(error: &anyhow::Error, json: bool) -> ExitCode {
    output::write_error(error, json, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    ExitCode::from(1)
}
