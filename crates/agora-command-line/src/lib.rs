//! The `agora` command line as data: its grammar ([`cli`]: every command's
//! typed arguments, in help groups) and the control channel's wire
//! ([`wire`]: how one command line, with its standard input, travels to the
//! home's running node, and how its output comes back).
//!
//! Both take bytes from outside (a command line; a request body on the
//! node's control channel), so both live here, apart from the store and the
//! commands that run: they can be fuzzed and tested on their own
//! (`fuzz/`). Running a command is `agora-commands`' job.
#![forbid(unsafe_code)]

pub mod cli;
pub mod inputs;
pub mod named;
pub mod wire;
