//! Agora's commands as typed operations, for programs rather than people:
//! every reasoning move, every merge-layer move and every read, each with a
//! typed input whose JSON Schema is derived from its type, an output schema,
//! a description written for a model, and what it does to the log.
//!
//! The MCP server (`agora_interfaces::mcp`) lists them as tools and the JSON
//! API serves them. An operation's input becomes a command of the CLI's
//! grammar ([`crate::cli::Command`]), run by the CLI's own dispatcher on a
//! store ([`runner`]), its result kept as a value: nothing here adds a rule
//! or a code path, so an operation cannot do what the command line refuses,
//! and means what it means.
//!
//! Files, each using only the ones listed before it: `error.rs` (an
//! operation's failure), `runner.rs` (where its command runs),
//! `operation.rs` (what an operation is, and the `tool!` line),
//! `composed.rs` (the operations with code of their own, and their
//! answers), `catalog.rs` (every operation), `backend.rs` (what a front end
//! calls). An operation's output type is its command's answer, typed
//! beside the command (a list is returned as `{"result": [...]}`).

pub mod backend;
pub mod catalog;
pub mod composed;
pub mod error;
pub mod operation;
pub mod runner;

pub use backend::{Backend, HomeBackend};
pub use catalog::catalog;
pub use error::OpError;
pub use operation::{Effect, Group, Operation};
pub use runner::{NodeRunner, Runner};
