//! The control channel's bearer token as the node holds it: read from its
//! file (`agora_home::control`) at start, and again whenever the file has
//! changed (its inode, length or times), checked on each request, so `agora
//! token rotate` (or an operator replacing a mounted secret) takes effect at
//! the next request: the old token refused, the new one taken, no restart.
//! A file that has become unreadable or holds no valid token leaves the last
//! good token in force (and says so in the log).

use agora_commands::control::token_matches;
use agora_home::control::{FileStamp, read_token, stamp};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The token and the file it comes from.
pub struct ControlToken {
    path: PathBuf,
    current: Mutex<(Option<FileStamp>, Arc<str>)>,
}

impl ControlToken {
    /// `token`, just read from `path`.
    pub fn new(path: PathBuf, token: String) -> Self {
        let seen = stamp(&path);
        Self { path, current: Mutex::new((seen, token.into())) }
    }

    /// The token in force now: the file's, read again if it changed.
    pub fn current(&self) -> Arc<str> {
        let now = stamp(&self.path);
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if now.is_some() && now != current.0 {
            current.0 = now;
            match read_token(&self.path) {
                Ok(token) if *token != *current.1 => {
                    tracing::info!(file = %self.path.display(), "the control token changed: the new one is in force");
                    current.1 = token.into();
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("keeping the control token in force: {e:#}"),
            }
        }
        current.1.clone()
    }

    /// Is `presented` the token in force?
    pub fn matches(&self, presented: &str) -> bool {
        token_matches(presented, &self.current())
    }
}
