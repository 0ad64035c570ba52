//! The fixed agents, workspace and clock the targets share with the seed
//! generator. The agents are the spec vectors' (alice, bob, carol, dave:
//! seeds of 0x11, 0x22, 0x33 and 0x44 bytes), so the vectors' entries,
//! proofs and requests are valid input of the replicator target; this node's
//! own agent is erin (0x55).

use agora_core::{AgentId, AgentKey};
use agora_sync::WorkspaceId;
use std::sync::OnceLock;

/// Timestamp of the vectors' entries; fixture chains start here.
pub const T0: u64 = 1_700_000_000_000;

/// This node's clock when a replicator run starts: 100 s after `T0`, so the
/// vectors' entries are not dated in the future.
pub const START_MS: u64 = T0 + 100_000;

fn keys() -> &'static [AgentKey; 5] {
    static KEYS: OnceLock<[AgentKey; 5]> = OnceLock::new();
    KEYS.get_or_init(|| std::array::from_fn(|i| AgentKey::from_seed([0x11 * (i as u8 + 1); 32])))
}

/// Agent `i` (0 alice, 1 bob, 2 carol, 3 dave, 4 erin: this node).
pub fn key(i: u8) -> &'static AgentKey {
    &keys()[usize::from(i) % 5]
}

/// Agent `i`'s id.
pub fn agent(i: u8) -> AgentId {
    key(i).agent_id()
}

/// This node's own agent.
pub const LOCAL: u8 = 4;

/// The workspace of the replication vectors: alice's "research".
pub fn workspace() -> WorkspaceId {
    WorkspaceId::new(&agent(0), "research")
}
