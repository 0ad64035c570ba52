//! Where an operation runs. An operation turns its typed input into a
//! [`Command`] of the CLI's grammar and runs it in a session that keeps the
//! result as a value ([`crate::session::Session::capturing`]): the same
//! command code the `agora` binary runs, with no command line written or
//! parsed and no printed output read back.
//!
//! A [`Runner`] holds a store: the node's open one ([`NodeRunner`], for
//! the node's own front ends), or the home's, opened for the command when
//! no node runs ([`HomeRunner`]). A [`Backend`] is what a front end holds:
//! the node's runs every operation on its runner; `agora mcp` over stdio
//! ([`HomeBackend`]) sends each operation to the node running on its home
//! (`POST /v1/ops/<name>`), or, with no node, runs it on the home's store.

use super::catalog::Operation;
use crate::cli::Command;
use crate::control;
use crate::run::{OpenStore, Produced, produce_at_home, produce_in_open_store};
use agora_home::home::Home;
use serde_json::Value;

/// A failure to turn a call into commands, or of the commands themselves:
/// returned to the model as a tool error, with the rule that was broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    /// What went wrong, as the CLI says it.
    pub message: String,
    /// The rule broken, by name, where a typed cause names it.
    pub rule: Option<String>,
    /// The entry it concerns, where there is one.
    pub entry: Option<String>,
}

impl OpError {
    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        Self { message: message.into(), rule: None, entry: None }
    }

    /// A command's error: its causes in one message, the rule and entry
    /// its typed causes name ([`crate::output::error_rule`]).
    pub fn from_error(error: &anyhow::Error) -> Self {
        let message = error.chain().map(|e| e.to_string()).collect::<Vec<_>>().join(": ");
        match crate::output::error_rule(error) {
            Some((rule, entry)) => Self { message, rule: Some(rule.to_string()), entry },
            None => Self::msg(message),
        }
    }

    /// An input that does not match the operation's schema.
    pub fn input(message: impl Into<String>) -> Self {
        Self { message: message.into(), rule: Some("input_schema".to_string()), entry: None }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        match (&self.rule, &self.entry) {
            (Some(rule), Some(entry)) => write!(f, " (rule: {rule}; entry: {entry})"),
            (Some(rule), None) => write!(f, " (rule: {rule})"),
            _ => Ok(()),
        }
    }
}

/// Runs an operation's commands on a store.
pub trait Runner {
    /// Run `command` with `stdin` as its standard input: its result.
    fn produce(&self, command: Command, stdin: &[u8]) -> Result<Produced, OpError>;

    /// Run `command` with no input: its result as a value.
    fn value(&self, command: Command) -> Result<Value, OpError> {
        value_of(self.produce(command, &[])?)
    }
}

/// A command's result as a value (a command that streams a pack gives none).
pub fn value_of(produced: Produced) -> Result<Value, OpError> {
    match produced {
        Produced::Value(v) => Ok(v),
        Produced::Bytes(_) => Err(OpError::msg("the command gave no result")),
    }
}

/// Commands on a running node's open store and live views.
pub struct NodeRunner<'a> {
    pub open: OpenStore<'a>,
}

impl Runner for NodeRunner<'_> {
    fn produce(&self, command: Command, stdin: &[u8]) -> Result<Produced, OpError> {
        produce_in_open_store(&self.open, command, stdin).map_err(|e| OpError::from_error(&e))
    }
}

/// Commands on a home's store, opened for each command (no node runs).
pub struct HomeRunner<'a> {
    pub home: &'a Home,
}

impl Runner for HomeRunner<'_> {
    fn produce(&self, command: Command, stdin: &[u8]) -> Result<Produced, OpError> {
        produce_at_home(self.home, &command, stdin).map_err(|e| OpError::from_error(&e))
    }
}

/// Where a front end's operations run, and what is known there of the node.
pub trait Backend: Send + Sync + 'static {
    /// Run `op` with its JSON input: its result.
    fn call(&self, op: &Operation, input: Value) -> Result<Value, OpError>;

    /// The node's status (peers, frontiers, lag), or what there is without
    /// a running node.
    fn node_status(&self) -> Result<Value, OpError>;
}

/// The operations of `agora mcp`: sent to this home's node, else run on
/// the home's store.
pub struct HomeBackend {
    pub home: Home,
}

impl HomeBackend {
    /// The node running on this home, when one answers as it.
    fn node(&self) -> Option<control::NodeFile> {
        control::find_node(&self.home.dir).filter(|node| control::verify_node(node).is_ok())
    }
}

impl Backend for HomeBackend {
    fn call(&self, op: &Operation, input: Value) -> Result<Value, OpError> {
        if let Some(node) = self.node() {
            match control::call_operation(&node, op.name, &input) {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(body)) => {
                    let field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
                    let message = field("message").unwrap_or_else(|| body.to_string());
                    return Err(OpError { message, rule: field("rule"), entry: field("entry") });
                }
                Err(control::ForwardError::Failed(e)) => return Err(OpError::msg(format!("{e:#}"))),
                // The node went away between the check and the call: run here.
                Err(control::ForwardError::Unreachable) => {}
            }
        }
        (op.run)(&HomeRunner { home: &self.home }, input)
    }

    fn node_status(&self) -> Result<Value, OpError> {
        if let Some(node) = self.node() {
            return control::status(&node).map_err(|e| OpError::msg(format!("{e:#}")));
        }
        let runner = HomeRunner { home: &self.home };
        let agent = runner.value(crate::cli::Command::Chain(crate::cli::ChainCommand::Id))?;
        let authors = runner.value(crate::cli::Command::Chain(crate::cli::ChainCommand::Authors))?;
        Ok(serde_json::json!({ "node_running": false, "home": self.home.dir, "agent": agent, "authors": authors }))
    }
}
