//! Running one command line where it belongs: the one code path the `agora`
//! binary, `agora mcp` and the node's own front ends share.
//!
//! While a node runs on the home, a command is forwarded to it over the
//! control channel and runs on the node's open store ([`run_in_open_store`]
//! on the node's side); with no node, it opens the store itself
//! ([`run_at_home`]), waiting briefly if another short-lived command holds it.

use crate::cli::{Args, ChainCommand, Command, NodeCommand};
use crate::control::{self, CommandRequest, ForwardError};
use crate::session::Session;
use agora_core::AgentId;
use agora_home::home::Home;
use agora_live_views::graph_cache::GraphCache;
use agora_store::Store;
use clap::Parser;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long a command run by hand waits for a store that another short-lived
/// command holds open.
pub const STORE_BUSY_WAIT: Duration = Duration::from_secs(10);

/// Did the command fail because another process holds the store open?
pub fn is_locked(e: &anyhow::Error) -> bool {
    e.chain().any(|c| matches!(c.downcast_ref::<agora_store::StoreError>(), Some(agora_store::StoreError::Locked { .. })))
}

/// `ExitCode` hides its value; the commands only return these.
pub fn exit_code_byte(code: ExitCode) -> u8 {
    if code == ExitCode::SUCCESS {
        0
    } else if code == ExitCode::from(3) {
        3
    } else if code == ExitCode::from(2) {
        2
    } else {
        1
    }
}

/// Whether a command run by hand looks for the home's running node first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeLookup {
    /// Look, and forward the command to it when one answers.
    Look,
    /// The caller found none just now (the `agora` front program, which
    /// then runs the full one): run here; look again only if the store
    /// turns out to be held by a node that started since.
    Absent,
    /// Never: `init` and `check-proof` need no node.
    Never,
}

/// Run the command line `argv` (program name first), parsed as `args`, for
/// `home`: forwarded to the home's running node, or on the home's store
/// when none runs (see [`NodeLookup`]). Output is written to `out` and `err`
/// as it comes. Returns the exit code's byte. An error is returned when the
/// command could not run at all or failed on this process's own store; the
/// caller renders it.
pub fn run_at_home(home: &Home, argv: &[String], args: Args, stdin: &[u8], lookup: NodeLookup, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        let look = match lookup {
            NodeLookup::Look => true,
            NodeLookup::Absent => attempt > 0,
            NodeLookup::Never => false,
        };
        attempt += 1;
        if look && let Some(node) = control::find_node(&home.dir) {
            let request = CommandRequest { argv: argv.to_vec(), cwd: std::env::current_dir().unwrap_or_default() };
            match control::forward_to(&node, &request, stdin, out, err) {
                Ok(code) => return Ok(code),
                Err(ForwardError::Failed(e)) => return Err(e),
                // A node that died without cleaning up: run here.
                Err(ForwardError::Unreachable) => {}
            }
        }
        let mut input = std::io::Cursor::new(stdin);
        let result = {
            let session = Session::local(home, args.json, out, &mut input).acting_as(args.agent.clone());
            crate::commands::run(&session, args.command.clone())
        };
        match result {
            Ok(code) => return Ok(exit_code_byte(code)),
            // Another short-lived command (or a node that just started)
            // holds the store: it never wrote anything of ours yet (opening
            // is the first step), so wait.
            Err(e) if is_locked(&e) && started.elapsed() < STORE_BUSY_WAIT => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e),
        }
    }
}

/// A running node's open store and live graph, on which forwarded commands
/// run.
pub struct OpenStore<'a> {
    pub home: &'a Home,
    pub store: &'a Store,
    pub graph: &'a GraphCache,
    /// Its live merged view.
    pub merge: &'a agora_live_views::merge_cache::MergeCache,
    /// The workspace founder the node runs for.
    pub founder: AgentId,
}

/// Run a command line on a node's open store and live graph, as `agora`
/// would run it by hand, with its output written to `out` and `err`.
/// Returns the exit code's byte. The control channel's forwarded commands
/// and every front end of the node (MCP, the JSON API) come through here.
pub fn run_in_open_store(open: &OpenStore<'_>, request: &CommandRequest, stdin: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let args = match Args::try_parse_from(&request.argv) {
        Ok(args) => args,
        Err(e) => {
            let _ = write!(err, "{}", e.render());
            return e.exit_code().clamp(0, 255) as u8;
        }
    };
    let (json, agent) = (args.json, args.agent);
    let mut command = args.command;
    if matches!(command, Command::Chain(ChainCommand::Init) | Command::Node(NodeCommand::Run(_))) {
        let _ = writeln!(err, "error: a node is already running on {}", open.home.dir.display());
        return 1;
    }
    absolutize(&mut command, &request.cwd);
    let mut input = std::io::Cursor::new(stdin);
    let result = {
        let session = Session::in_node(open.home, json, out, &mut input, open.store, open.graph, open.merge, open.founder).acting_as(agent);
        crate::commands::run(&session, command)
    };
    match result {
        Ok(code) => exit_code_byte(code),
        Err(e) => {
            crate::output::write_error(&e, json, out, err);
            1
        }
    }
}

/// What a command run for a program produced: the result it would print
/// as JSON, or the bytes it streams (a pack).
pub enum Produced {
    Value(serde_json::Value),
    Bytes(Vec<u8>),
}

/// Run `command` for a program on the home's own store (no node runs on
/// it), waiting briefly if another short-lived command holds the store, as
/// [`run_at_home`] does: the result as a value, no text in between.
pub fn produce_at_home(home: &Home, agent: Option<&str>, command: &Command, stdin: &[u8]) -> anyhow::Result<Produced> {
    let started = Instant::now();
    loop {
        let mut out = Vec::new();
        let mut input = std::io::Cursor::new(stdin);
        let result = {
            let session = Session::local(home, true, &mut out, &mut input).capturing().acting_as(agent.map(str::to_string));
            crate::commands::run(&session, command.clone()).map(|_| session.take_result())
        };
        match result {
            Ok(value) => return Ok(produced(value, out)),
            Err(e) if is_locked(&e) && started.elapsed() < STORE_BUSY_WAIT => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e),
        }
    }
}

/// Run `command` for a program on a node's open store and live views, as
/// the named agent `agent` (none: the home's own agent).
pub fn produce_in_open_store(open: &OpenStore<'_>, agent: Option<&str>, command: Command, stdin: &[u8]) -> anyhow::Result<Produced> {
    if matches!(command, Command::Chain(ChainCommand::Init) | Command::Node(NodeCommand::Run(_))) {
        anyhow::bail!("a node is already running on {}", open.home.dir.display());
    }
    let mut out = Vec::new();
    let mut input = std::io::Cursor::new(stdin);
    let value = {
        let session = Session::in_node(open.home, true, &mut out, &mut input, open.store, open.graph, open.merge, open.founder)
            .capturing()
            .acting_as(agent.map(str::to_string));
        crate::commands::run(&session, command)?;
        session.take_result()
    };
    Ok(produced(value, out))
}

fn produced(value: Option<serde_json::Value>, out: Vec<u8>) -> Produced {
    match value {
        Some(v) => Produced::Value(v),
        None => Produced::Bytes(out),
    }
}

/// Make the command's relative paths relative to the caller's directory.
fn absolutize(command: &mut Command, cwd: &Path) {
    let fix = |p: &mut std::path::PathBuf| {
        if p.is_relative() && p.as_os_str() != "-" {
            *p = cwd.join(&*p);
        }
    };
    match command {
        Command::Chain(ChainCommand::Append { file: Some(p) }) => fix(p),
        Command::Chain(ChainCommand::Import { file }) => fix(file),
        Command::Chain(ChainCommand::Export(agora_command_line::inputs::Export { output: Some(p), .. })) => fix(p),
        _ => {}
    }
}
