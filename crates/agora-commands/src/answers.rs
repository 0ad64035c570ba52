//! What the commands answer, field by field: the values the reads and the
//! recording commands return (printed with `--json`, serialized by the JSON
//! API and MCP) and the operations' output schemas, derived from the same
//! types. The reasoning commands build these values (`reasoning.rs`); the
//! answers of the merge layer's, the log's and the roster's commands are
//! described here and built as JSON by their commands, and the property
//! test of the HTTP API (schemathesis, in the test command) checks those
//! against these schemas.

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

/// What `orient` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Oriented {
    /// The topic searched.
    pub topic: String,
    /// The nodes found, best match first. A superseded match is replaced by its current version (`found_through` names the matches that led to it) unless `include_superseded`.
    pub nodes: Vec<SearchHit>,
    /// Open questions among them.
    pub open_questions: Vec<ListedNode>,
    /// Contested nodes among them, with what contests them.
    pub contested: Vec<Contested>,
    /// The frontier the search was computed over.
    pub computed_over: ComputedOver,
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

/// What a raw append returns: the entry's header.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Appended {
    /// The new entry's id.
    pub id: String,
    /// Its author (this agent).
    pub author: String,
    /// Its position in the chain.
    pub seq: u64,
    /// The entry before it in the chain (none for the first).
    pub backlink: Option<String>,
    /// When the author signed it, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The payload's length in bytes.
    pub payload_len: u64,
    /// The payload's SHA-256, hex: the signed header binds the payload by it.
    pub payload_hash: String,
    /// The entry format's version.
    pub version: u64,
}

/// What `export` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Exported {
    /// How many entries the pack holds.
    pub entries: usize,
    /// The pack: JSON lines, a header line then one entry per line (protocol-spec/pack.md).
    pub pack: String,
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
    /// Its status (see the tool's description), `pending` when it waits for events not received.
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

/// `status`: the node's status, with the frontier it was computed over.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusAnswer {
    #[serde(flatten)]
    pub node: NodeStatus,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
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

/// One event of a trace.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TracedEvent {
    /// The event's entry id.
    pub id: String,
    /// Its author.
    pub author: String,
    /// Its seq.
    pub seq: u64,
    /// When it was signed, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// Its kind (null when its payload is not known here).
    pub kind: Option<String>,
    /// Its text.
    pub text: Option<String>,
    /// Its status.
    pub status: Option<String>,
    /// Whether its payload is held here.
    pub payload_held: bool,
    /// Its signature, payload hash and chain link were verified.
    pub verified: bool,
}

/// `trace`: every event that touched a node, in order, each verified.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TraceAnswer {
    /// The node traced.
    pub id: String,
    /// Its status now.
    pub status: String,
    /// The events, oldest first.
    pub events: Vec<TracedEvent>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// `latest`: the newest version of a node.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LatestAnswer {
    /// The node asked about.
    pub id: String,
    /// Its newest version (itself when none replaced it).
    pub latest: String,
    /// The newest version's text.
    pub text: String,
    /// The newest version's status.
    pub status: String,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// One search hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// The node.
    pub id: String,
    /// BM25 score: higher is a better match.
    pub score: f64,
    /// Its status.
    pub status: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// When superseded: the current version that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<NodeRefAnswer>,
    /// For `orient`: the superseded nodes that matched the topic and led here (this node is their current version).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_through: Vec<String>,
    /// Agents' open disputes of this event: who, why, and what they hold instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disputed_by: Vec<DisputeOf>,
    /// Agents other than its author whose accepts reach this event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_by: Vec<String>,
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

/// `search`: hits, best first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchAnswer {
    /// The nodes found, best match first.
    pub hits: Vec<SearchHit>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// A node in a listing (questions, orphans, history).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ListedNode {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its status.
    pub status: String,
    /// Its text.
    pub text: String,
    /// A frame's state.
    #[serde(default)]
    pub frame_state: Option<String>,
}

/// A listing of nodes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NodeList {
    /// The nodes.
    pub result: Vec<ListedNode>,
}

/// A decision and what it rests on.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// The deciding node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// The events it rests on.
    pub because: Vec<NodeRefAnswer>,
}

/// `decisions`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DecisionList {
    /// The decisions, in log order.
    pub result: Vec<Decision>,
}

/// A contested node.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Contested {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// Its status.
    pub status: String,
    /// The open challenges against it.
    pub contested_by: Vec<NodeRefAnswer>,
    /// Open tensions it is part of.
    pub tensions: Vec<NodeRefAnswer>,
}

/// `disagreements`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ContestedList {
    /// The contested nodes.
    pub result: Vec<Contested>,
}

/// `view_hash`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ViewHashAnswer {
    /// The merged view's hash (hex): equal on every node holding the same entries.
    pub view_hash: String,
    /// How many entries the merged view counts.
    pub entries: usize,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// A prefix of a chain a perspective includes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Included {
    /// The chain's author.
    pub author: String,
    /// Included through this seq.
    pub through_seq: u64,
}

/// A dispute in force in a perspective.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PerspectiveDispute {
    /// The dispute event.
    pub dispute: String,
    /// Who disputes.
    pub by: String,
    /// The disputed event.
    pub target: String,
    /// Why.
    pub reason: String,
    /// What should be believed instead.
    pub counter_claim: Option<String>,
}

/// A node of a perspective.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PerspectiveNode {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// Its status within this perspective.
    pub status: String,
    /// Disputed by the perspective's agent.
    pub disputed: bool,
}

/// `perspective`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PerspectiveAnswer {
    /// The agent whose perspective this is.
    pub agent: String,
    /// The perspective's hash (hex).
    pub hash: String,
    /// The prefixes of chains it includes.
    pub included: Vec<Included>,
    /// The disputes in force.
    pub disputes: Vec<PerspectiveDispute>,
    /// Events left out (disputed, or beyond what is accepted).
    pub excluded: Vec<String>,
    /// How many nodes its reasoning graph has: the valid reasoning events
    /// `nodes` lists, and raw notes, invalid events and entries redacted
    /// without a residue.
    pub node_count: usize,
    /// Its reasoning graph's nodes with their statuses (empty when a
    /// summary was asked for).
    pub nodes: Vec<PerspectiveNode>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// `consensus`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConsensusAnswer {
    /// k: how many agents must accept.
    pub quorum: usize,
    /// The agents counted.
    pub agents: Vec<String>,
    /// The merged view's hash (hex).
    pub view_hash: String,
    /// Per chain: the prefix at least `quorum` agents accept (`accepted_seq`, `accepted_head`), each agent's accept frontier (`frontiers`, empty in a summary; `frontier_count`), what is disputed and by whom (`disputed`, empty in a summary; `disputed_count`).
    pub chains: Vec<Map<String, Value>>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// One agent of the home: its own (`self`) or one of the keyring's.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentAnswer {
    /// Its name in this home (`self` for the home's own agent); `--as NAME` acts as it.
    pub name: String,
    /// Its agent id (64 hex characters).
    pub id: String,
    /// Its display name: the first line of the roster's admission note, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The workspace's roster admits it: its entries count in every view.
    pub admitted: bool,
    /// It founded the workspace.
    pub founder: bool,
    /// Its chain's highest seq held here (0: nothing written yet).
    pub max_seq: u64,
    /// Its key file (mode 0600).
    pub key_file: String,
}

/// `agent list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentList {
    /// The home's own agent first, then the keyring's by name.
    pub agents: Vec<AgentAnswer>,
}
