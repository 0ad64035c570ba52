//! Each command's input, written once: the same struct is the command
//! line's arguments (clap), an operation's JSON input (serde) and its JSON
//! Schema (schemars), with one doc comment per field for all three. A
//! field's JSON name is its Rust name, except where one thing has one name
//! across operations: the entry a move is about is `target` (a second one
//! `other`, a relating claim `claim`), an agent is `agent` (each keeps its
//! older name as an alias); on the command line, targets come first as
//! positional arguments and texts last, options are `--flags`.
//!
//! An optional number or text is `Option` here and its default is applied
//! by the command, so that both front ends share it.
//!
//! A text that becomes a field of an event is at most
//! [`TEXT_BYTES_MAX`](agora_graph::event::TEXT_BYTES_MAX) bytes (the merge layer's texts have the same limit):
//! its schema says `maxLength` with that number, in characters, which is
//! the most such a text can have (a character is one to four bytes).
//!
//! Each area's file holds its commands' enum (their verbs, flattened into
//! the command line by `cli.rs`) beside their inputs: a new command is its
//! input and its variant, in one file.

mod chain;
mod membership;
mod merge;
mod reasoning;

pub use chain::*;
pub use membership::*;
pub use merge::*;
pub use reasoning::*;

use clap::Args;
use schemars::JsonSchema;
use serde::Deserialize;

/// No input.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}
