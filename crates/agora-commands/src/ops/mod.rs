//! Agora's commands as typed operations, for programs rather than people:
//! every reasoning move, every merge-layer move and every read, each with a
//! typed input whose JSON Schema is derived from its type, an output schema,
//! a description written for a model, and what it does to the log.
//!
//! The MCP server (`agora_interfaces::mcp`) lists them as tools and the JSON
//! API serves them. An operation's input becomes a command of the CLI's
//! grammar ([`crate::cli::Command`]), run by the CLI's own dispatcher on a
//! store ([`invoke`]), its result kept as a value: nothing here adds a rule
//! or a code path, so an operation cannot do what the command line refuses,
//! and means what it means.

pub mod catalog;
pub mod invoke;

pub use catalog::{Effect, Operation, catalog};
pub use invoke::{Backend, HomeBackend, NodeRunner, OpError, Runner};
