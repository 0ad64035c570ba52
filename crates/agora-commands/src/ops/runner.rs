//! Where an operation's command runs: a [`Runner`] holds a store, the
//! node's open one ([`NodeRunner`], for the node's own front ends) or the
//! home's, opened for the command when no node runs ([`HomeRunner`]). The
//! command runs in a session that keeps its result as a value
//! ([`crate::session::Session::capturing`]): the same command code the
//! `agora` binary runs, with no command line written or parsed and no
//! printed output read back.

use super::error::OpError;
use crate::cli::Command;
use crate::run::{OpenStore, Produced, produce_at_home, produce_in_open_store};
use agora_home::home::Home;
use serde_json::Value;

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

/// Commands on a running node's open store and live views, acting as the
/// named agent `agent` of the home's keyring (none: the home's own agent).
pub struct NodeRunner<'a> {
    pub open: OpenStore<'a>,
    pub agent: Option<&'a str>,
}

impl Runner for NodeRunner<'_> {
    fn produce(&self, command: Command, stdin: &[u8]) -> Result<Produced, OpError> {
        produce_in_open_store(&self.open, self.agent, command, stdin).map_err(|e| OpError::from_error(&e))
    }
}

/// Commands on a home's store, opened for each command (no node runs),
/// acting as the named agent `agent` (none: the home's own agent).
pub struct HomeRunner<'a> {
    pub home: &'a Home,
    pub agent: Option<&'a str>,
}

impl Runner for HomeRunner<'_> {
    fn produce(&self, command: Command, stdin: &[u8]) -> Result<Produced, OpError> {
        produce_at_home(self.home, self.agent, &command, stdin).map_err(|e| OpError::from_error(&e))
    }
}
