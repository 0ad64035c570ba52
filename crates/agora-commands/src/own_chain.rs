//! Writing to this agent's own chain, for every command that records
//! something (reasoning events, merge events, roster events).

use crate::args::now_ms;
use crate::session::Session;
use agora_core::SignedEntry;
use agora_merge::Merge;
use anyhow::{Context, Result};

/// Append `payload` to this agent's own chain. A chain with one tip is
/// extended as usual. A forked chain is extended only after the branch its
/// author chose with a fork resolution, and refused while no resolution
/// decides the fork (the store refuses it too).
pub fn append_own(s: &Session, payload: &[u8]) -> Result<SignedEntry> {
    let key = s.key()?;
    let store = s.store()?;
    let me = key.agent_id();
    if store.tip_summary(&me)?.is_none_or(|s| s.count == 1) {
        return Ok(store.append(&key, payload, now_ms())?);
    }
    let (entries, proofs) = agora_view::load_merge_input(store, s.founder()?)?;
    let m = Merge::compute(&entries, &proofs)?;
    if let Some(fork) = m.chain(&me).and_then(|c| c.frozen()) {
        return Err(crate::output::refused(
            "own_chain_forked",
            format!(
                "refused: this agent's own chain is forked at seq {} and no fork resolution decides it; \
             choose the branch that continues with `agora resolve-fork <entry at seq {} on that branch>`",
                fork.seq, fork.seq
            ),
        ));
    }
    let (_, head) = m.view_head(&me).context("this agent's chain has no head in the merged view")?;
    Ok(store.append_after(&key, &head, payload, now_ms())?)
}
