//! The dispatcher: one exhaustive match over the command groups of
//! `cli.rs`, each handed to the module that owns it. `init`, `check-proof`,
//! `node` and `automerge` commands never reach here through a node (see
//! the `agora` binary's `main.rs`); `node` and `automerge` never reach here at all.

use crate::cli::{Command, ReasoningCommand, RecordCommand};
use crate::session::Session;
use anyhow::{Result, bail};
use std::process::ExitCode;

/// Run one command in a session.
pub fn run(s: &Session, command: Command) -> Result<ExitCode> {
    match command {
        Command::Chain(c) => crate::chain_cmds::run(s, c),
        Command::Membership(c) => crate::membership::run(s, c),
        // Ingest uses the reasoning moves, so it sits beside them, not under them.
        Command::Reasoning(ReasoningCommand::Record(RecordCommand::Ingest(input))) => crate::ingest::run(s, input),
        Command::Reasoning(c) => crate::reasoning::run(s, c),
        Command::Merge(c) => crate::merge_cmds::run(s, c),
        Command::Agent(c) => crate::agents::run(s, c),
        // Handled by `main` before a session exists: they run a node or talk
        // to one, never on a session's store.
        Command::Node(_) | Command::Automerge(_) | Command::Sim(_) | Command::Mcp { .. } | Command::Open { .. } | Command::Token(_) => {
            bail!("this command talks to the node itself and cannot run inside a session")
        }
    }
}
