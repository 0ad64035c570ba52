//! Agora's command API: every command of the `agora` command line, as typed
//! arguments ([`cli`], from `agora-command-line`), run in a [`session::Session`] by one dispatcher
//! ([`commands`]: [`chain_cmds`], [`membership`], [`reasoning`],
//! [`merge_cmds`]), and the same commands as typed operations for programs
//! ([`ops`]: inputs with JSON Schemas, output schemas, effects).
//!
//! Every front end calls into this crate and adds no rule of its own: the
//! `agora` binary parses a command line and runs it ([`run::run_at_home`]);
//! a running node runs forwarded command lines on its open store
//! ([`run::run_in_open_store`]); the MCP server, the JSON API and the live
//! page (crate `agora-interfaces`) run operations, each the typed input of
//! one command, run in a session that keeps its answer (typed beside the
//! command; shared pieces in [`answers`]) as a value. So the front ends
//! cannot disagree.
//!
//! It knows no daemon, no network and no HTTP server. What it does touch:
//! the home directory's files, the store (through `agora-store`), and the
//! control channel's client side ([`control`]), which forwards a command to
//! the home's node.
#![forbid(unsafe_code)]
// Store errors name the entry they concern and are built only on failure.
#![allow(clippy::result_large_err)]

pub mod agents;
pub mod answers;
pub mod args;
pub mod automerge_pull;
pub mod chain_cmds;
pub mod commands;
pub mod control;
pub mod frontier;
pub mod ingest;
pub mod keys;
pub mod membership;
pub mod merge_cmds;
pub mod merge_view;
pub mod ops;
pub mod output;
pub mod own_chain;
pub mod reasoning;
pub mod revoked;
pub mod run;
pub mod session;
pub mod traces;

pub use agora_command_line::cli;
