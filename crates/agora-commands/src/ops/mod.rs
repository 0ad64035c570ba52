//! Agora's commands as typed operations, for programs rather than people:
//! every reasoning move, every merge-layer move and every read, each with a
//! typed input whose JSON Schema is derived from its type, an output schema,
//! a description written for a model, and what it does to the log.
//!
//! The MCP server (`agora_interfaces::mcp`) lists them as tools. An operation is one or
//! more commands of the CLI ([`argv`]), parsed by the CLI's own argument
//! definitions and run by its own dispatcher where the CLI would run them
//! ([`invoke`]): nothing here adds a rule or a code path, so an operation
//! cannot do what the command line refuses, and means what it means.

pub mod argv;
pub mod catalog;
pub mod invoke;

pub use catalog::{Effect, Operation, catalog};
pub use invoke::{Invoke, OpError};

/// Where operations run, and what is known there of the node.
pub trait Backend: Invoke + Send + Sync + 'static {
    /// The node's status (peers, frontiers, lag), or what there is without
    /// a running node.
    fn node_status(&self) -> Result<serde_json::Value, OpError>;
}
