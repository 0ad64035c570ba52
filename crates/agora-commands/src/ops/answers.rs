//! The output schemas of the reads: what each read's answer holds, field by
//! field, as its command prints it with `--json`. These types describe; the
//! commands build the JSON (`reasoning.rs`, `merge_cmds.rs`). The property
//! test of the HTTP API (schemathesis, in the test command) checks every
//! answer against them, so a field renamed on one side fails there.

use super::*;

/// A node named in another's answer (a cause, a challenge).
#[derive(Serialize, Deserialize, JsonSchema)]
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

/// `status`: a node's status and the events that made it so (or `pending`,
/// with what it waits for).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct StatusAnswer {
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
    /// Its seq in the author's chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// When it was signed, ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ms: Option<u64>,
    /// No open challenge and nothing pending on it.
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
    /// Arrived from a peer but breaks a rule (why, when so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<Value>,
    /// Events referenced but not received (a pending node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// One event of a trace.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
}

/// `search`: hits, best first.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct SearchAnswer {
    /// The nodes found, best match first.
    pub hits: Vec<SearchHit>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// A node in a listing (questions, orphans, history).
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct NodeList {
    /// The nodes.
    pub result: Vec<ListedNode>,
}

/// A decision and what it rests on.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct DecisionList {
    /// The decisions, in log order.
    pub result: Vec<Decision>,
}

/// A contested node.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ContestedList {
    /// The contested nodes.
    pub result: Vec<Contested>,
}

/// `view_hash`.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ViewHashAnswer {
    /// The merged view's hash (hex): equal on every node holding the same entries.
    pub view_hash: String,
    /// How many entries the merged view counts.
    pub entries: usize,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// A prefix of a chain a perspective includes.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Included {
    /// The chain's author.
    pub author: String,
    /// Included through this seq.
    pub through_seq: u64,
}

/// A dispute in force in a perspective.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
