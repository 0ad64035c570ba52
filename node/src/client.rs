//! `agora`: the command line.
//!
//! While a node runs on the home, every command line is forwarded to it over
//! the control channel (`agora_node_client`) and runs on the node's open
//! store and live views. This binary does only that: it links the grammar
//! and the client, not the store, so it starts in about a millisecond. The
//! full program, `agora-node` beside it, links RocksDB: its relocations and
//! C++ static initialisers cost 6 ms before `main`, which a read answered by
//! the node in 3 ms would otherwise pay on every call.
//!
//! Everything else is the full program's, and this one replaces itself with
//! it (`exec`, same pid, same arguments): no node running (the command opens
//! the store), `node run`, `mcp`, `sim`, `automerge pull`, `init` and
//! `check-proof`, `token`. A node that turns out to be gone once standard input was
//! read gets that input handed to the full program as its standard input.
//!
//! Exit codes are the full program's: 0 success; 1 refused or failed; 2
//! usage error; 3 `verify` or `audit` found problems.

use agora_command_line::cli::{AutomergeCommand, ChainCommand, Command, NodeCommand};
use agora_node_client::{self as client, CommandRequest, ForwardError, NODE_ABSENT_ENV};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};

/// The full program's file name, looked for beside this one, then on `PATH`.
const FULL_PROGRAM: &str = "agora-node";

fn main() -> ExitCode {
    let args = agora_command_line::cli::parse();
    let json = args.json;
    // The token's file is the home's configuration's to say.
    let full_only = matches!(
        args.command,
        Command::Token(_)
            | Command::Sim(_)
            | Command::Mcp { .. }
            | Command::Node(NodeCommand::Run(_))
            | Command::Automerge(AutomergeCommand::Pull { .. })
            | Command::Chain(ChainCommand::Init | ChainCommand::CheckProof { .. })
    );
    if full_only {
        return run_full(None, false, json);
    }
    let home = match client::home_dir(args.home.clone()) {
        Ok(dir) => dir,
        Err(e) => return fail(&e, json),
    };
    match &args.command {
        Command::Node(NodeCommand::Status) => return done(client::print_status(&home, json), json),
        Command::Open { no_browser } => return done(client::open_page(&home, *no_browser, json), json),
        _ => {}
    }
    // No node, or a node.json whose node is gone: the command runs on the store.
    let Some(node) = client::find_node(&home) else { return run_full(None, true, json) };
    match client::verify_node(&node) {
        Ok(()) => {}
        Err(ForwardError::Unreachable) => return run_full(None, true, json),
        Err(ForwardError::Failed(e)) => return fail(&e, json),
    }
    let stdin = match client::reads_stdin(&args.command) {
        Some(max) => match client::read_stdin(max) {
            Ok(bytes) => bytes,
            Err(e) => return fail(&e, json),
        },
        None => Vec::new(),
    };
    drop(args);
    let request = CommandRequest { argv: std::env::args().collect(), cwd: std::env::current_dir().unwrap_or_default() };
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let result = client::send_command(&node, &request, &stdin, &mut stdout.lock(), &mut stderr.lock());
    match result {
        Ok(code) => ExitCode::from(code),
        Err(ForwardError::Failed(e)) => fail(&e, json),
        // Gone between the check and the command: run it here, with its input.
        Err(ForwardError::Unreachable) => run_full(Some(stdin), true, json),
    }
}

/// Run this command line with the full program: in place of this process
/// (`exec`), or, when standard input was already read, as a child given
/// those bytes, whose exit code becomes ours. `node_absent`: no node answers
/// on the home just now, so the full program does not look for it again
/// ([`NODE_ABSENT_ENV`]).
fn run_full(stdin: Option<Vec<u8>>, node_absent: bool, json: bool) -> ExitCode {
    let program = match full_program() {
        Ok(p) => p,
        Err(e) => return fail(&e, json),
    };
    let mut argv = std::env::args_os();
    let arg0 = argv.next().unwrap_or_else(|| OsString::from("agora"));
    let mut command = std::process::Command::new(&program);
    // Usage messages name the program as the user typed it.
    command.arg0(arg0).args(argv);
    if node_absent {
        command.env(NODE_ABSENT_ENV, "1");
    }
    let Some(bytes) = stdin else {
        let e = command.exec();
        return fail(&anyhow::anyhow!("starting {}: {e}", program.display()), json);
    };
    let child = command.stdin(Stdio::piped()).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return fail(&anyhow::anyhow!("starting {}: {e}", program.display()), json),
    };
    if let Some(mut input) = child.stdin.take() {
        // A command that stops reading early closes the pipe; its exit code says why.
        let _ = input.write_all(&bytes);
    }
    match child.wait() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => fail(&anyhow::anyhow!("waiting for {}: {e}", program.display()), json),
    }
}

/// `agora-node` beside this executable (how `cargo install`, the container
/// image and the build directory place them), else on `PATH`.
fn full_program() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    if let Some(dir) = exe.parent()
        && dir.join(FULL_PROGRAM).is_file()
    {
        return Ok(dir.join(FULL_PROGRAM));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join(FULL_PROGRAM)).find(|p| p.is_file()).ok_or_else(|| {
        anyhow::anyhow!(
            "{FULL_PROGRAM} is neither beside {} nor on PATH: this command needs the full program (install both binaries: `cargo install --path node`)",
            exe.display()
        )
    })
}

fn done(result: anyhow::Result<()>, json: bool) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

/// An error as the full program reports one: `{"error": ...}` on standard
/// output with `--json`, and `error: ...` on standard error.
fn fail(error: &anyhow::Error, json: bool) -> ExitCode {
    let text = error.chain().map(|e| e.to_string()).collect::<Vec<_>>().join(": ");
    if json {
        println!("{}", serde_json::json!({ "error": text }));
    }
    eprintln!("error: {text}");
    ExitCode::from(1)
}
