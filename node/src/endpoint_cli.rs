//! The command line of both binaries: the grammar (`agora_command_line::cli`)
//! with the control channel's endpoint added: `--control` and
//! `--token-file` on `agora node run` (also from `AGORA_CONTROL` and
//! `AGORA_TOKEN_FILE`), and `agora token show|rotate`. They sit here, on
//! top of the grammar, and are read before the grammar's own arguments are;
//! a command forwarded to a node is never one of them (`node run` and
//! `token` run in the full program).

use agora_command_line::cli::{self, Args};
use clap::parser::ValueSource;
use clap::{Arg, FromArgMatches};
use std::path::PathBuf;

/// `--control` or `--token-file` as given: the value, and whether it came
/// from the environment rather than the flag.
pub type Given<T> = Option<(T, bool)>;

/// The control channel's settings given to `agora node run`.
#[derive(Debug, Default)]
pub struct Endpoint {
    pub control: Given<String>,
    pub token_file: Given<PathBuf>,
}

/// What `agora token` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAction {
    Show,
    Rotate,
}

/// A parsed command line.
pub enum Parsed {
    /// A command of the grammar (for `node run`, with its endpoint).
    Command(Box<Args>, Endpoint),
    /// `agora token ...`, with the global `--home` and `--json`.
    Token { home: Option<PathBuf>, json: bool, action: TokenAction },
}

/// The grammar with the endpoint's flags and the `token` command.
pub fn command() -> clap::Command {
    cli::command()
        .mut_subcommand("node", |node| {
            node.mut_subcommand("run", |run| {
                run.arg(
                    Arg::new("control")
                        .long("control")
                        .value_name("ADDR:PORT")
                        .env("AGORA_CONTROL")
                        .help("The control channel's address (HTTP API, /mcp, the page); default: this home's last, else 127.0.0.1 with a free port"),
                )
                .arg(
                    Arg::new("token_file")
                        .long("token-file")
                        .value_name("FILE")
                        .env("AGORA_TOKEN_FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("Read the control token from FILE (a mounted secret) instead of <home>/control.token"),
                )
            })
        })
        .subcommand(
            clap::Command::new("token")
                .about("The control channel's bearer token, kept in <home>/control.token (mode 0600) across node runs")
                .subcommand_required(true)
                .subcommand(clap::Command::new("show").about("Print the token (made now if the home has none), for a client's configuration"))
                .subcommand(
                    clap::Command::new("rotate")
                        .about("Write a new token; a running node refuses the old one and takes the new one at once, and node.json follows"),
                ),
        )
        .after_help("Node and membership, also: `agora token show|rotate`, the control channel's bearer token.")
}

/// Parse the process's arguments (exits with the help or a usage error).
pub fn parse() -> Parsed {
    let mut matches = command().get_matches();
    if let Some(("token", sub)) = matches.subcommand() {
        let action = if sub.subcommand_name() == Some("rotate") { TokenAction::Rotate } else { TokenAction::Show };
        return Parsed::Token { home: matches.get_one::<PathBuf>("home").cloned(), json: matches.get_flag("json"), action };
    }
    let mut endpoint = Endpoint::default();
    if let Some(("node", node)) = matches.subcommand()
        && let Some(("run", run)) = node.subcommand()
    {
        let from_env = |id: &str| run.value_source(id) == Some(ValueSource::EnvVariable);
        endpoint.control = run.get_one::<String>("control").map(|v| (v.clone(), from_env("control")));
        endpoint.token_file = run.get_one::<PathBuf>("token_file").map(|v| (v.clone(), from_env("token_file")));
    }
    let args = Args::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit());
    Parsed::Command(Box::new(args), endpoint)
}
