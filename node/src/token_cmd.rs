//! `agora token show|rotate`: the control channel's bearer token, which a
//! client's configuration (an MCP client's `Authorization` header, a
//! script's header file) holds across node runs.
//!
//! The file is the one the home's running node reads (named in its
//! `node.json`); with no node running, the one a node started now would
//! read without flags: `AGORA_TOKEN_FILE`, else `token_file` in
//! `<home>/agora.toml`, else `<home>/control.token`. A rotation replaces
//! the file at once (`agora_home::control::write_token`); the running node
//! notices the change at its next request, so from then on it refuses the
//! old token and takes the new one, and `node.json` is rewritten with it.

use agora_command_line::cli::TokenCommand;
use agora_commands::control;
use agora_home::control::{home_token_file, load_or_create_token, new_token, read_token, write_token};
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// Run `agora token <action>` on `home`.
pub fn run(home: &Path, action: TokenCommand, json: bool) -> Result<()> {
    let node = control::find_node(home);
    let path = match node.as_ref().and_then(|n| n.token_file.clone()) {
        Some(path) => PathBuf::from(path),
        None => match std::env::var_os("AGORA_TOKEN_FILE") {
            Some(path) => PathBuf::from(path),
            None => agora_home::config::token_file_of_home(home)?.unwrap_or_else(|| home_token_file(home)),
        },
    };
    let own = path == home_token_file(home);
    match action {
        TokenCommand::Show => {
            let token = if own { load_or_create_token(home, None)?.0 } else { read_token(&path)? };
            if json {
                println!("{}", serde_json::json!({ "token": token, "file": path.display().to_string() }));
            } else {
                println!("{token}");
            }
        }
        TokenCommand::Rotate => {
            if own && !home.is_dir() {
                bail!("{} is not a home (run `agora init` first)", home.display());
            }
            let token = new_token()?;
            write_token(&path, &token)?;
            // The running node takes it at its next request: this one.
            let taken = match node {
                Some(mut node) => {
                    node.token = token;
                    control::write_node_file(home, &node)?;
                    match control::verify_node(&node) {
                        Ok(()) => Some(node.pid),
                        Err(_) => bail!("wrote a new token to {}, but the node (pid {}) does not answer with it", path.display(), node.pid),
                    }
                }
                None => None,
            };
            if json {
                println!("{}", serde_json::json!({ "file": path.display().to_string(), "node": taken }));
            } else {
                match taken {
                    Some(pid) => println!("new control token in {}; the running node (pid {pid}) takes only it from now", path.display()),
                    None => println!("new control token in {}; no node runs on {}", path.display(), home.display()),
                }
            }
        }
    }
    Ok(())
}
