//! Turning command-line text into typed values, in one place for every
//! command: agent ids, entry references, the clock.

use agora_core::{AgentId, EntryId};
use agora_store::Store;
use anyhow::{Context, Result};

/// Milliseconds since the Unix epoch: the timestamp of entries written here.
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// A full agent id; `what` names the argument in the error.
pub fn agent_id(text: &str, what: &str) -> Result<AgentId> {
    text.parse::<AgentId>().map_err(|e| crate::output::refused("not_an_agent_id", format!("{what} {text:?} is not an agent id ({e}; `identity` gives one)")))
}

/// The `--author` argument.
pub fn parse_author(text: &str) -> Result<AgentId> {
    agent_id(text, "author")
}

/// An entry given on the command line: a stored entry (full id or unique
/// prefix), or a full id not stored yet, which an event may refer to and
/// then waits for (pending).
pub fn entry_reference(store: &Store, text: &str) -> Result<EntryId> {
    match store.resolve(text) {
        Ok(id) => Ok(id),
        Err(agora_store::StoreError::NotFound(_)) if text.len() == 64 => {
            text.parse::<EntryId>().map_err(|e| crate::output::refused("not_an_entry_id", format!("{text:?} is not an entry id: {e}")))
        }
        Err(e) => Err(e).with_context(|| format!("entry {text:?}")),
    }
}
