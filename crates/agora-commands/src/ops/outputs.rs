//! Output types of operations whose answer `crate::answers` does not type
//! yet: what their commands print with `--json`, field by field, for the
//! operations' output schemas.

use crate::answers::{NodeList, NodeStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `identity` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IdentityAnswer {
    /// This agent's id (64 hex characters): what others pass as `agent`.
    pub agent: String,
}

/// An entry at a seq: a chain's tip, an entry named but not held.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SeqEntry {
    /// Its seq.
    pub seq: u64,
    /// Its entry id.
    pub id: String,
}

/// `history`: every node with its status at that point, or one node's.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HistoryAnswer {
    /// No `target`: every node, with its status then.
    Nodes(NodeList),
    /// A `target`: its status then.
    Node(Box<NodeStatus>),
}

/// `disputes`: the disagreement map.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DisputesAnswer {
    /// Every event with an open dispute, by author, seq and id.
    pub disputed: Vec<DisputedEvent>,
    /// Every fork met on a view chain, with who accepts and builds on each side.
    pub forks: Vec<ForkAnswer>,
}

/// A disputed event.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DisputedEvent {
    /// Agents whose accepts cover it (empty in a summary).
    pub accepted_by: Vec<String>,
    /// How many agents accept it.
    pub accepted_by_count: usize,
    /// The events it refers to, transitively, nearest first.
    pub ancestors: Vec<String>,
    /// More ancestors exist than listed.
    pub ancestors_truncated: bool,
    /// Its author.
    pub author: String,
    /// The open disputes of it.
    pub disputes: Vec<DisputeMarkAnswer>,
    /// Its kind (a reasoning or merge kind, `raw`, `redacted`, `invalid`).
    pub kind: String,
    /// It is on its author's view chain.
    pub on_view: bool,
    /// Its seq.
    pub seq: u64,
    /// The disputed entry.
    pub target: String,
    /// Its text (empty when not a reasoning event).
    pub text: String,
}

/// An open dispute of an event.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DisputeMarkAnswer {
    /// The dispute entry.
    pub dispute: String,
    /// Who disputes.
    pub by: String,
    /// Why.
    pub reason: String,
    /// What the disputer holds instead.
    pub counter_claim: Option<String>,
}

/// A fork and its branches.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ForkAnswer {
    /// The forked author.
    pub author: String,
    /// The fork's seq.
    pub seq: u64,
    /// The entry both branches continue (null at seq 1).
    pub shared: Option<String>,
    /// Its branches.
    pub branches: Vec<BranchAnswer>,
}

/// One branch of a fork.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BranchAnswer {
    /// Its entry at the fork seq.
    pub first: String,
    /// That entry is held (not only named by a later one).
    pub held: bool,
    /// The view follows it.
    pub kept: bool,
    /// Its tips.
    pub tips: Vec<SeqEntry>,
    /// Agents with an accept whose head is on it.
    pub accepted_by: Vec<String>,
    /// Other agents whose reasoning refers to an entry on it.
    pub built_on_by: Vec<String>,
    /// How many entries it has from the fork seq (at most 10,000 counted).
    pub member_count: usize,
    /// Those entries by seq (empty in a summary).
    pub members: Vec<String>,
    /// More entries exist than counted.
    pub members_truncated: bool,
}

/// `audit`: one agent's chain and merge events checked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AuditAnswer {
    /// The agent audited.
    pub agent: String,
    /// No problem, gap, detached entry or fork.
    pub clean: bool,
    /// Entries held.
    pub held: usize,
    /// Highest seq held.
    pub max_seq: u64,
    /// Length of its view chain.
    pub view_len: u64,
    /// Verification failures.
    pub problems: Vec<String>,
    /// Seq ranges not held.
    pub gaps: Vec<SeqRange>,
    /// Held entries not linked to seq 1.
    pub detached: Vec<String>,
    /// Entries named as predecessors but not held.
    pub missing: Vec<SeqEntry>,
    /// Seqs with two entries.
    pub fork_seqs: Vec<u64>,
    /// Proofs of its forks, hex.
    pub fork_proofs: Vec<String>,
    /// Its fork resolutions.
    pub resolutions: Vec<MergeRecordAnswer>,
    /// Disputes of its events by others.
    pub disputes_against: Vec<MergeRecordAnswer>,
    /// The disputes it made.
    pub disputes_made: Vec<MergeRecordAnswer>,
    /// Its accepts.
    pub accepts_made: Vec<MergeRecordAnswer>,
    /// Its accept frontiers on other chains.
    pub frontiers: Vec<AuthorFrontier>,
    /// Other agents' frontiers on its chain.
    pub accepted_by: Vec<AgentFrontier>,
}

/// Seqs from `from` to `to`, both included.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SeqRange {
    /// The first seq.
    pub from: u64,
    /// The last seq.
    pub to: u64,
}

/// A merge event and what became of it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MergeRecordAnswer {
    /// The entry carrying it.
    pub entry: String,
    /// Who signed it.
    pub signer: String,
    /// Its seq on the signer's chain.
    pub seq: u64,
    /// Its kind (null when the payload does not decode).
    pub kind: Option<String>,
    /// Its status.
    pub status: String,
    /// The event, as debug text.
    pub event: Option<String>,
}

/// An accept frontier on an author's chain.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AuthorFrontier {
    /// The chain's author.
    pub author: String,
    /// Accepted through this seq.
    pub seq: u64,
    /// The view chain's entry at that seq.
    pub head: String,
}

/// Another agent's accept frontier on this chain.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentFrontier {
    /// The accepting agent.
    pub agent: String,
    /// Accepted through this seq.
    pub seq: u64,
    /// The view chain's entry at that seq.
    pub head: String,
}

/// `outcomes`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OutcomeList {
    /// The memory items used by judged trajectories.
    pub result: Vec<Outcome>,
}

/// A memory item's outcomes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// The memory item.
    pub id: String,
    /// Its status.
    pub status: String,
    /// Judged successes of trajectories that used it.
    pub successes: u64,
    /// Judged failures.
    pub failures: u64,
    /// Recorded uses.
    pub uses: usize,
    /// Its text.
    pub text: String,
}

/// `graph`: the graph as data (`json`) or as text (`dot`, `mermaid`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum GraphAnswer {
    /// As data.
    Data(GraphData),
    /// As Graphviz DOT or Mermaid text.
    Text(GraphText),
}

/// The graph as data.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphData {
    /// `json`.
    pub format: String,
    /// Every node (raw and redacted events left out).
    pub nodes: Vec<GraphNode>,
    /// Every edge between them.
    pub edges: Vec<GraphEdge>,
}

/// A node of the graph.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphNode {
    /// The node.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its text.
    pub text: String,
    /// Its status.
    pub status: String,
    /// Its author.
    pub author: String,
    /// Its seq in the author's chain.
    pub seq: u64,
    /// When it was signed, ms since the Unix epoch.
    pub timestamp_ms: u64,
}

/// An edge, from the newer event to the one it names.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphEdge {
    /// The newer event.
    pub from: String,
    /// The event it names.
    pub to: String,
    /// How (supports, contradicts, ...).
    pub relation: String,
}

/// The graph as text.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GraphText {
    /// `dot` or `mermaid`.
    pub format: String,
    /// The text.
    pub graph: String,
}

/// `log`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EntryList {
    /// The entries, by author then seq.
    pub result: Vec<LoggedEntry>,
}

/// An entry's signed header and its payload's state.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LoggedEntry {
    /// The entry's id.
    pub id: String,
    /// Its author.
    pub author: String,
    /// Its seq.
    pub seq: u64,
    /// The entry before it (null for the first).
    pub backlink: Option<String>,
    /// When signed, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The payload's length in bytes.
    pub payload_len: u64,
    /// The payload's SHA-256, hex.
    pub payload_hash: String,
    /// The entry format's version.
    pub version: u64,
    /// `held`, `redacted` or `not_held`.
    pub payload_status: String,
    /// When redacted, ms since the Unix epoch (null otherwise).
    pub redacted_at_ms: Option<u64>,
}

/// `show`: one entry in full.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ShownEntry {
    /// Its header and payload state.
    #[serde(flatten)]
    pub entry: LoggedEntry,
    /// The signature, hex.
    pub signature: String,
    /// The payload, base64 (when held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// The payload as text (when held; null when not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_utf8: Option<Option<String>>,
}

/// `verify`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VerifyAnswer {
    /// Everything verified.
    pub ok: bool,
    /// Entries verified.
    pub entries: u64,
    /// Each chain's report.
    pub authors: Vec<VerifiedChain>,
}

/// One chain verified.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VerifiedChain {
    /// The author.
    pub author: String,
    /// Entries stored (all branches).
    pub entries: u64,
    /// Highest seq.
    pub max_seq: u64,
    /// How many tips.
    pub tips: usize,
    /// More than one tip, or a fork seq.
    pub forked: bool,
    /// Seqs with more than one entry.
    pub fork_seqs: Vec<u64>,
    /// Payloads held and checked.
    pub payloads_held: u64,
    /// Payloads redacted here.
    pub payloads_redacted: u64,
    /// Payloads never received.
    pub payloads_not_held: u64,
    /// Problems found, listed or not.
    pub problem_count: usize,
    /// The problems listed.
    pub problems: Vec<String>,
}

/// `redact`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RedactAnswer {
    /// The entry redacted.
    pub id: String,
    /// Always true.
    pub redacted: bool,
    /// No file of the store holds the payload's bytes any more.
    pub erased: bool,
    /// How long it waited for earlier reads, ms.
    pub waited_ms: u64,
    /// Earlier reads still open.
    pub reads_left: usize,
    /// When not erased: why, and when it will be (null otherwise).
    pub window: Option<String>,
}

/// `import`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImportAnswer {
    /// Entries stored.
    pub imported: usize,
    /// Entries already held.
    pub already_present: usize,
    /// Missing payloads filled in.
    pub payloads_filled: usize,
    /// Forks detected (their proofs stored).
    pub forks: Vec<AuthorSeq>,
    /// Entries dated ahead of this clock, not stored (null when none).
    pub deferred: Option<Deferred>,
}

/// An author's chain at a seq.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AuthorSeq {
    /// The author.
    pub author: String,
    /// The seq.
    pub seq: u64,
}

/// Entries dated ahead of this machine's clock.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Deferred {
    /// How many.
    pub count: usize,
    /// The first of them.
    pub first: String,
    /// Import again after this, ms since the Unix epoch.
    pub until_ms: u64,
}

/// `authors`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AuthorList {
    /// Every author stored.
    pub result: Vec<StoredAuthor>,
}

/// An author whose chain is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StoredAuthor {
    /// The author.
    pub author: String,
    /// Its highest seq.
    pub max_seq: u64,
    /// More than one tip, or a fork proof.
    pub forked: bool,
    /// Fork proofs stored.
    pub fork_proofs: usize,
    /// Its tips.
    pub tips: Vec<SeqEntry>,
}

/// `forks`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ForkProofList {
    /// The fork proofs stored.
    pub result: Vec<ForkProofAnswer>,
}

/// A fork proof.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ForkProofAnswer {
    /// The author.
    pub author: String,
    /// The seq.
    pub seq: u64,
    /// One entry at it.
    pub a: String,
    /// The other.
    pub b: String,
    /// The proof, hex (`check_proof` checks it).
    pub proof: String,
}

/// `check_proof`: a valid proof's contents (an invalid one is an error).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProofChecked {
    /// Always true.
    pub valid: bool,
    /// The author who signed both.
    pub author: String,
    /// The seq.
    pub seq: u64,
    /// One entry.
    pub a: String,
    /// The other.
    pub b: String,
}

/// `admit` and `remove`: the roster event's entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RosterRecorded {
    /// The new entry's id.
    pub id: String,
    /// Its seq in the founder's chain.
    pub seq: u64,
    /// For a removal: the agent's entries up to this seq stay admitted (null for an admission).
    pub last_seq_admitted: Option<u64>,
}

/// `roster`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RosterAnswer {
    /// The founder.
    pub founder: String,
    /// The members.
    pub members: Vec<Member>,
    /// The agents removed.
    pub removed: Vec<RemovedAgent>,
    /// The founder's chain forks at this seq: the roster is frozen before it (null when not).
    pub frozen_at_fork_seq: Option<u64>,
    /// The founder's entry at this seq has no payload yet: the roster stops before it (null when not).
    pub pending_at_seq: Option<u64>,
    /// Removed agents' last admitted seqs.
    pub cut_off: Vec<CutOff>,
    /// Roster events with no effect, and why.
    pub skipped: Vec<SkippedEvent>,
}

/// A member.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Member {
    /// Its agent id.
    pub agent: String,
    /// The admission's entry (null for the founder).
    pub admitted_by: Option<String>,
    /// Its display name (null when none).
    pub display_name: Option<String>,
}

/// An agent removed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RemovedAgent {
    /// Its agent id.
    pub agent: String,
    /// The removal's entry.
    pub removed_by: String,
}

/// How far a removed agent stays admitted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CutOff {
    /// Its agent id.
    pub agent: String,
    /// Its entries up to this seq stay admitted.
    pub last_seq_admitted: u64,
}

/// A roster event with no effect.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SkippedEvent {
    /// Its entry.
    pub entry: String,
    /// Why.
    pub reason: String,
}
