//! `agora`: the command-line front of an Agora node.
//!
//! This binary is thin: it parses arguments ([`cli`]), resolves the home
//! directory ([`home`]), runs one command ([`commands`]) and maps errors to
//! exit codes. Formats, verification and storage live in the library crates.
//!
//! Exit codes: 0 success; 1 refused or failed (bad input, I/O, a store that is
//! not ours); 2 usage error; 3 `verify` found problems in stored data.

// Store errors name the entry they concern and are built only on failure.
#![allow(clippy::result_large_err)]

mod cli;
mod commands;
mod home;
mod output;
mod reasoning;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let json = args.json;
    match commands::run(args) {
        Ok(code) => code,
        Err(error) => {
            output::print_error(&error, json);
            ExitCode::from(1)
        }
    }
}
