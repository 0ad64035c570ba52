//! The pieces of answers that several commands share: a recorded entry,
//! the frontier an answer was computed over, a node's status, a dispute of
//! an event, an entry at a seq. Each command's own answer is typed beside
//! it (`reasoning.rs`, `merge_cmds.rs`, `chain_cmds.rs`, `membership.rs`,
//! `agents.rs`): the value it prints with `--json`, an operation returns
//! (the JSON API and MCP serialize it) and whose JSON Schema is the
//! operation's output schema, so each shape is written once.

use crate::revoked::ExcludedBy;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a recording tool returns: the event's entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Recorded {
    /// The new entry's id: how later events refer to this one.
    pub id: String,
    /// The event kind recorded (proposition, contradiction, ...).
    pub kind: String,
    /// Its position in this agent's chain (1 is the first).
    pub seq: u64,
    /// Referenced events not received yet: the event takes effect when they arrive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Vec<String>>,
    /// For a fork resolution: the entry this agent's chain now continues after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// The frontier an answer was computed over: every author's tips in the
/// store when it was read.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ComputedOver {
    /// SHA-256 of the frontier (protocol-spec/views.md): two answers with the same hash were computed over the same entries.
    pub frontier_hash: String,
    /// How many chains (authors) are stored.
    pub authors: usize,
    /// Each chain's highest seq by author id (an object with `max_seq` and `tips` when the chain is forked); at most 256 chains.
    pub chains: Map<String, Value>,
    /// True when more chains are stored than listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chains_truncated: Option<bool>,
    /// False when writes kept landing while the answer was read: the frontier is the last one read, and the answer may include a write or two more or fewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
}

/// A node named in another's answer (a cause, a challenge).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NodeRefAnswer {
    /// The node's entry id.
    pub id: String,
    /// Its kind (absent when the node is not applied here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A node's status and the events that made it so (or `pending`, with what
/// it waits for): `status`'s answer, and `history`'s of one node then.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NodeStatus {
    /// The node.
    pub id: String,
    /// Its status (see the tool's description), `pending` when it waits for events not received, `excluded` when a key rotation leaves it out of every view (see `excluded`).
    pub status: String,
    /// Its kind (proposition, contradiction, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its author's agent id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Its author's display name (the roster's admission note), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_name: Option<String>,
    /// Its seq in the author's chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// When it was signed, ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ms: Option<u64>,
    /// The key that signed it (hex) when its author had rotated; absent: the author's own key (its id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// Status `excluded`: the key rotation (revocation) that leaves it out of every view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<ExcludedBy>,
    /// Survived a challenge: at least one contradiction of it was answered, and nothing is open against it now. False for a node never challenged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<bool>,
    /// The events that made the status so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<Vec<NodeRefAnswer>>,
    /// A derived memory claim with no source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan: Option<bool>,
    /// A claim its owner has not confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfirmed: Option<bool>,
    /// A claim past its expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired: Option<bool>,
    /// A claim's memory kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kind: Option<Option<String>>,
    /// A frame's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_state: Option<Option<String>>,
    /// A task's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_state: Option<Option<String>>,
    /// The newest version of the node (following refinements, reframes, updates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<Option<String>>,
    /// When superseded: the current version that replaced it (read it instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<NodeRefAnswer>,
    /// Agents' open disputes of this event (merge layer): who, why, and what they hold instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disputed_by: Vec<DisputeOf>,
    /// Agents other than its author whose accepts reach this event on its author's chain (merge layer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_by: Vec<String>,
    /// Arrived from a peer but breaks a rule: why (null when it does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<Option<String>>,
    /// Events referenced but not received (a pending node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
}

impl NodeStatus {
    /// A status with only the node and its status.
    pub fn bare(id: String, status: &str) -> Self {
        Self {
            id,
            status: status.to_string(),
            kind: None,
            text: None,
            author: None,
            author_name: None,
            seq: None,
            timestamp_ms: None,
            signed_by: None,
            excluded: None,
            settled: None,
            why: None,
            orphan: None,
            unconfirmed: None,
            expired: None,
            memory_kind: None,
            frame_state: None,
            task_state: None,
            latest: None,
            successor: None,
            disputed_by: Vec::new(),
            accepted_by: Vec::new(),
            invalid: None,
            missing: None,
        }
    }
}

/// An agent's open dispute of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DisputeOf {
    /// The disputing agent's id.
    pub by: String,
    /// Its display name (the roster's admission note), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_name: Option<String>,
    /// The dispute event's entry id (withdraw it by this id).
    pub dispute: String,
    /// Why the agent disputes it.
    pub reason: String,
    /// What the agent holds instead, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_claim: Option<String>,
}

/// An entry at a seq: a chain's tip, an entry named but not held.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SeqEntry {
    /// Its entry id.
    pub id: String,
    /// Its seq.
    pub seq: u64,
}

/// Serde's `serialize_with` for ids held as they are in an answer (not
/// made text first): each written as its text (`Display`), hex for an id.
pub mod shown {
    use serde::Serializer;
    use std::fmt::Display;

    /// One, as its text.
    pub fn one<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(value)
    }

    /// A list, each as its text.
    pub fn list<T: Display, S: Serializer>(values: &[T], s: S) -> Result<S::Ok, S::Error> {
        struct Shown<'a, T>(&'a T);
        impl<T: Display> serde::Serialize for Shown<'_, T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self.0)
            }
        }
        s.collect_seq(values.iter().map(Shown))
    }
}
