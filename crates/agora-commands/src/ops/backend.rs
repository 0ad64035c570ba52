//! What a front end holds: a [`Backend`] runs each operation somewhere.
//! The node's runs every operation on its open store; `agora mcp` over
//! stdio ([`HomeBackend`]) sends each operation to the node running on its
//! home (`POST /v1/ops/<name>`), or, with no node, runs it on the home's
//! store.

use super::error::OpError;
use super::operation::Operation;
use super::runner::{HomeRunner, Runner};
use crate::control;
use agora_home::home::Home;
use serde_json::Value;

/// Where a front end's operations run, and what is known there of the node.
pub trait Backend: Send + Sync + 'static {
    /// Run `op` with its JSON input, acting as the named agent `agent` of
    /// the home's keyring (none: the home's own agent): its result.
    fn call(&self, agent: Option<&str>, op: &Operation, input: Value) -> Result<Value, OpError>;

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
    fn call(&self, agent: Option<&str>, op: &Operation, input: Value) -> Result<Value, OpError> {
        if let Some(node) = self.node() {
            match control::call_operation(&node, agent, op.name, &input) {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(body)) => {
                    let field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
                    let message = field("message").unwrap_or_else(|| body.to_string());
                    return Err(OpError { message, rule: field("rule"), entry: field("entry"), code: field("code") });
                }
                Err(control::ForwardError::Failed(e)) => return Err(OpError::msg(format!("{e:#}"))),
                // The node went away between the check and the call: run here.
                Err(control::ForwardError::Unreachable) => {}
            }
        }
        (op.run)(&HomeRunner { home: &self.home, agent }, input)
    }

    fn node_status(&self) -> Result<Value, OpError> {
        if let Some(node) = self.node() {
            return control::status(&node).map_err(|e| OpError::msg(format!("{e:#}")));
        }
        let runner = HomeRunner { home: &self.home, agent: None };
        let agent = runner.value(crate::cli::Command::Chain(crate::cli::ChainCommand::Id))?;
        let authors = runner.value(crate::cli::Command::Chain(crate::cli::ChainCommand::Authors))?;
        Ok(serde_json::json!({ "node_running": false, "home": self.home.dir, "agent": agent, "authors": authors }))
    }
}
