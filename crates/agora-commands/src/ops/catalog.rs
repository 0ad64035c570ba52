//! The catalog: every operation, one line each, naming its input type, the
//! command it stands for (or its own code, in `composed.rs`), its title,
//! effect on the log, output type (the command's answer) and description
//! for a model, and the MCP tool group of each (`group_of`). It is data, so
//! the MCP server lists it and a test checks every entry's schema.

use super::composed::{self, Exported, Oriented};
use super::operation::{Effect, Group, Operation, frame, output_schema_of, read, rec, schema_of, tool};
use crate::answers::Recorded;
use crate::chain_cmds::{
    EntryHeader, ForkProofAnswer, IdentityAnswer, ImportAnswer, LoggedEntry, ProofChecked, RedactAnswer, ShownEntry, StoredAuthor, VerifyAnswer,
};
use crate::cli::{ChainCommand, Command, FrameCommand, FrameMove, MembershipCommand, MergeCommand, ReadCommand, ReasoningCommand, RecordCommand, TaskCommand};
use crate::ingest::Ingested;
use crate::keys::{KeyEventAnswer, KeyHistoryAnswer, RecoveryRecorded};
use crate::membership::{AdminsRecorded, RosterAnswer, RosterRecorded};
use crate::merge_cmds::{AuditAnswer, ConsensusAnswer, DisputesAnswer, PerspectiveAnswer, ViewHashAnswer};
use crate::reasoning::{
    self as r, ActionAnswer, Contested, Decision, GraphAnswer, HistoryAnswer, LatestAnswer, ListedNode, SearchAnswer, StatusAnswer, TraceAnswer,
};
use agora_command_line::inputs::*;

/// Every operation, in the order they are listed.
pub fn catalog() -> Vec<Operation> {
    use Effect::*;
    vec![
        tool!(
            "propose",
            |i: Propose| rec(RecordCommand::Propose(i)),
            "Propose a position",
            Append,
            Recorded,
            "Record a new position (a proposition) in this agent's signed chain. Use it for a claim others may support, contradict or refine. Returns the new event's id, which later moves use to refer to it."
        ),
        tool!("support", |i: OnTarget| rec(RecordCommand::Support(i)), "Support a node", Append, Recorded, "Record evidence for an earlier node."),
        tool!(
            "contradict",
            |i: OnTarget| rec(RecordCommand::Contradict(i)),
            "Contradict a node",
            Append,
            Recorded,
            "Record a contradiction of an earlier node: the node becomes contested until the contradiction is resolved (by a refinement that resolves it, or a resolve)."
        ),
        tool!(
            "refine",
            |i: Refine| rec(RecordCommand::Refine(i)),
            "Refine a node",
            Append,
            Recorded,
            "Record a refinement: a successor to an earlier node, which becomes superseded. List in `resolves` the contradictions the refinement answers: they become resolved, and the contested node's successor is active."
        ),
        tool!(
            "synthesize",
            |i: Synthesize| rec(RecordCommand::Synthesize(i)),
            "Synthesize nodes",
            Append,
            Recorded,
            "Record a synthesis combining two or more earlier nodes into one position."
        ),
        tool!(
            "ask",
            |i: Ask| rec(RecordCommand::Ask(i)),
            "Ask a question",
            Append,
            Recorded,
            "Record an open question. It stays open (listed by `questions`) until a `resolve` answers it."
        ),
        tool!(
            "resolve",
            |i: OnTarget| rec(RecordCommand::Resolve(i)),
            "Resolve",
            Append,
            Recorded,
            "Resolve a question, contradiction, tension or contradicts-relation with an answer: it becomes resolved."
        ),
        tool!(
            "park",
            |i: Park| rec(RecordCommand::Park(i)),
            "Park a node",
            Append,
            Recorded,
            "Set a node aside for now (status parked); `resume` brings it back."
        ),
        tool!("resume", |i: NodeRef| rec(RecordCommand::Resume(i)), "Resume a parked node", Append, Recorded, "Bring a parked node back."),
        tool!(
            "reframe",
            |i: OnTarget| rec(RecordCommand::Reframe(i)),
            "Reframe",
            Append,
            Recorded,
            "Restate a position or question in other terms; the original becomes superseded."
        ),
        tool!("connect", |i: Pair| rec(RecordCommand::Connect(i)), "Connect two nodes", Append, Recorded, "Record that two nodes are related, and how."),
        tool!(
            "tension",
            |i: Pair| rec(RecordCommand::Tension(i)),
            "Note a tension",
            Append,
            Recorded,
            "Record a tension between two nodes (not a contradiction: both may hold). It stays open until resolved."
        ),
        tool!(
            "claim",
            |i: Claim| rec(RecordCommand::Claim(i)),
            "Record a memory claim",
            Append,
            Recorded,
            "Record a memory claim with its kind (episodic, semantic, preference, ...) and provenance (the events it derives from). A derived claim with no source is an orphan."
        ),
        tool!(
            "relate",
            |i: Relate| rec(RecordCommand::Relate(i)),
            "Relate two claims",
            Append,
            Recorded,
            "Relate one claim to another: update or state_change supersede the `target`, retracts retracts it, contradicts contests it, expands and qualifies add to it, same_as marks a duplicate."
        ),
        tool!("confirm", |i: NodeRef| rec(RecordCommand::Confirm(i)), "Confirm a claim", Append, Recorded, "Record that a claim's owner confirms it."),
        tool!(
            "frame_open",
            |i: FrameOpen| frame(FrameMove::Open(i)),
            "Open a frame",
            Append,
            Recorded,
            "Open a causal frame: a question being worked on, optionally under a parent frame. Its conclusion holds until the frame, or one above it, is invalidated."
        ),
        tool!("frame_evidence", |i: FrameEvidence| frame(FrameMove::Evidence(i)), "Frame evidence", Append, Recorded, "Record evidence found inside a frame."),
        tool!("frame_conclude", |i: FrameConclude| frame(FrameMove::Conclude(i)), "Conclude a frame", Append, Recorded, "Conclude a frame (status resolved)."),
        tool!("frame_suspend", |i: FrameRef| frame(FrameMove::Suspend(i)), "Suspend a frame", Append, Recorded, "Suspend a frame (status parked)."),
        tool!("frame_resume", |i: FrameRef| frame(FrameMove::Resume(i)), "Resume a frame", Append, Recorded, "Resume a suspended or invalidated frame."),
        tool!(
            "frame_invalidate",
            |i: FrameInvalidate| frame(FrameMove::Invalidate(i)),
            "Invalidate a frame",
            Append,
            Recorded,
            "Invalidate a frame and every frame under it (status retracted): their conclusions no longer hold."
        ),
        tool!(
            "task_new",
            |i: TaskNew| rec(RecordCommand::Task(TaskCommand::New(i))),
            "Create a task",
            Append,
            Recorded,
            "Record a new task: an objective to work on, optionally with its owner. Move it through its states with `task_update`."
        ),
        tool!(
            "task_update",
            |i: TaskUpdate| rec(RecordCommand::Task(TaskCommand::Update(i))),
            "Update a task",
            Append,
            Recorded,
            "Move a task to a new state: done resolves it, abandoned parks it."
        ),
        tool!(
            "trajectory",
            |i: Trajectory| rec(RecordCommand::Trajectory(i)),
            "Record a trajectory",
            Append,
            Recorded,
            "Record one attempt at a task: the query, the final answer, how many iterations, whether it converged. Judge it with `judge`."
        ),
        tool!(
            "judge",
            |i: Judge| rec(RecordCommand::Judge(i)),
            "Judge a trajectory",
            Append,
            Recorded,
            "Record whether a trajectory succeeded or failed, why, and how sure."
        ),
        tool!(
            "memory_item",
            |i: MemoryItem| rec(RecordCommand::Item(i)),
            "Record a memory item",
            Append,
            Recorded,
            "Record a reusable lesson (title, when it applies, content), optionally learned from a trajectory. `outcomes` counts how often items led to success."
        ),
        tool!(
            "record_use",
            |i: RecordUse| rec(RecordCommand::Use(i)),
            "Record an item's use",
            Append,
            Recorded,
            "Record that a memory item was retrieved for a trajectory, at which rank and score."
        ),
        tool!(
            "act",
            |i: Act| rec(RecordCommand::Act(i)),
            "Record an action",
            Append,
            Recorded,
            "Record an action as a framework traced it: what was done (`operation`: invoke_agent, execute_tool, handoff, checkpoint...), to or with what (`name`), in which `conversation`, from which `span` under which `parent`, caused by which event, the SHA-256 of what went in and came out, the contents when kept, the error if it failed. A span its agent recorded already is a duplicate."
        ),
        tool!(
            "ingest",
            |i: Ingest| rec(RecordCommand::Ingest(i)),
            "Ingest free text",
            Append,
            Ingested,
            "Classify free text (turns, notes) into moves, each recorded as its own tool would, naming the earlier nodes a search finds; proposals under `threshold` or matching nothing are dropped and reported. A `classify` action audits it."
        ),
        tool!(
            "accept",
            |i: Accept| Command::Merge(MergeCommand::Accept(i)),
            "Accept a chain",
            Append,
            Recorded,
            "Accept another `agent`'s chain up to an event (`up_to`: a seq of that chain or an entry id): this agent's perspective then includes that prefix. Accepting further later moves the frontier; to reject one event, `dispute` it."
        ),
        tool!(
            "dispute",
            |i: Dispute| Command::Merge(MergeCommand::Dispute(i)),
            "Dispute an event",
            Append,
            Recorded,
            "Dispute exactly one event of another agent's chain with a reason and, optionally, a counter-claim. The dispute is signed and locatable: it says which event, and leaves the rest of the chain accepted."
        ),
        tool!(
            "withdraw",
            |i: Withdraw| Command::Merge(MergeCommand::Withdraw(i)),
            "Withdraw a dispute",
            Append,
            Recorded,
            "Withdraw one of this agent's disputes: its `target` is the dispute event."
        ),
        tool!(
            "resolve_fork",
            |i: ResolveFork| Command::Merge(MergeCommand::ResolveFork(i)),
            "Resolve a fork of this chain",
            AppendFinal,
            Recorded,
            "Resolve a fork of this agent's own chain: its `target` is the entry, at the forked seq, of the branch that continues. The other branch stays stored and proven, but this chain no longer continues it."
        ),
        Operation {
            name: "orient",
            group: Group::Core,
            title: "Orient on a topic",
            description: "Start here on a topic: the nodes whose text matches it (full-text search, best first), with their statuses, who disputes or accepts each, and the open questions and contested nodes among them. A superseded match is replaced by its current version (`found_through` names the match), so a refined position is found by the words of the one it replaced; retracted nodes are left out; include_superseded shows every match as it is. Then read one node with `status` or `trace`.",
            effect: Read,
            input_schema: schema_of::<composed::Orient>,
            output_schema: output_schema_of::<Oriented>,
            run: composed::orient,
        },
        tool!(
            "status",
            |i: NodeRef| read(ReadCommand::Status(i)),
            "A node's status",
            Read,
            StatusAnswer,
            "A node's status and the events that made it so; its current successor when superseded; who disputes it (with counter-claims) and who accepts it."
        ),
        tool!(
            "trace",
            |i: NodeRef| read(ReadCommand::Trace(i)),
            "Trace a node",
            Read,
            TraceAnswer,
            "Every event that touched a node, in order, each verified against its author's chain."
        ),
        tool!(
            "history",
            |i: History| read(ReadCommand::History(i)),
            "History as of",
            Read,
            HistoryAnswer,
            "The graph as it was at a time (ms since the epoch or YYYY-MM-DD, UTC) or as of an event: every node with its status then, or one node."
        ),
        tool!(
            "latest",
            |i: NodeRef| read(ReadCommand::Latest(i)),
            "Latest version of a node",
            Read,
            LatestAnswer,
            "The current version of a node: follows refinements, reframes, updates and state changes to the newest."
        ),
        tool!("decisions", |_: Nothing| read(ReadCommand::Decisions), "Decisions", Read, Vec<Decision>, "What was decided, and the events it rests on."),
        tool!(
            "actions",
            |i: ActionsQuery| read(ReadCommand::Actions(i)),
            "List actions",
            Read,
            Vec<ActionAnswer>,
            "The actions recorded (by every agent, or one), in log order, optionally of one conversation, operation or name: the latest `limit` (1000)."
        ),
        tool!("questions", |_: Nothing| read(ReadCommand::Questions), "Open questions", Read, Vec<ListedNode>, "Questions not yet resolved."),
        tool!(
            "disagreements",
            |_: Nothing| read(ReadCommand::Disagreements),
            "Contested nodes",
            Read,
            Vec<Contested>,
            "Contested nodes and what contests them (open contradictions and tensions)."
        ),
        tool!(
            "perspective",
            |i: Perspective| Command::Merge(MergeCommand::Perspective(i)),
            "An agent's perspective",
            Read,
            PerspectiveAnswer,
            "An agent's perspective: its own chain plus the prefixes of other chains it accepts, minus the events it disputes, with statuses."
        ),
        tool!(
            "consensus",
            |i: Consensus| Command::Merge(MergeCommand::Consensus(i)),
            "Consensus",
            Read,
            ConsensusAnswer,
            "Which prefix of each chain at least `quorum` agents accept, what is disputed and by whom, and the merged view's hash."
        ),
        tool!(
            "disputes",
            |i: Disputes| Command::Merge(MergeCommand::Disputes(i)),
            "Dispute map",
            Read,
            DisputesAnswer,
            "The disagreement map across agents: each disputed event, who accepts and who disputes it, counter-claims; and forked chains by branch."
        ),
        tool!(
            "audit",
            |i: AgentRef| Command::Merge(MergeCommand::Audit(i)),
            "Audit a chain",
            Read,
            AuditAnswer,
            "Verify an agent's replicated chain end to end: forks, gaps, missing payloads, disputes, accept frontiers."
        ),
        tool!(
            "frame_tree",
            |i: FrameRef| Command::Reasoning(ReasoningCommand::Frame(FrameCommand::Tree(i))),
            "Frame tree",
            Read,
            Vec<ListedNode>,
            "The frames under a frame, in verification (post-) order, with their states."
        ),
        tool!(
            "outcomes",
            |_: Nothing| read(ReadCommand::Outcomes),
            "Memory item outcomes",
            Read,
            Vec<r::Outcome>,
            "Success and failure counts of memory items, from the judged trajectories that used them."
        ),
        tool!(
            "identity",
            |_: Nothing| Command::Chain(ChainCommand::Id),
            "This agent's id",
            Read,
            IdentityAnswer,
            "This agent's id (64 hex characters): what others pass as `agent`."
        ),
        tool!(
            "graph",
            |i: GraphExport| read(ReadCommand::Graph(GraphExport { format: i.format.or(Some(GraphFormat::Json)) })),
            "The whole graph",
            Read,
            GraphAnswer,
            "Every node of the reasoning graph with its status, author and place in its chain, and every edge (from the newer event to the one it names), as data (json) or as Graphviz DOT or Mermaid text."
        ),
        tool!(
            "view_hash",
            |_: Nothing| Command::Merge(MergeCommand::ViewHash),
            "Merged view hash",
            Read,
            ViewHashAnswer,
            "The merged view's hash and entry count: equal on every node that holds the same entries."
        ),
        // The signed log's and the roster's operations.
        tool!(
            "log",
            |i: Log| Command::Chain(ChainCommand::Log(i)),
            "List a chain",
            Read,
            Vec<LoggedEntry>,
            "The entries of one `agent`'s chain in seq order (default: this agent's), or of every chain: id, seq, timestamp, payload state and a preview. Use `show` for one entry in full."
        ),
        tool!(
            "show",
            |i: EntryRef| Command::Chain(ChainCommand::Show(i)),
            "Show an entry",
            Read,
            ShownEntry,
            "One entry in full: its signed header (author, seq, backlink, timestamp, payload length and hash), its signature, and its payload (text, or base64) or why it is absent (redacted, not received)."
        ),
        tool!(
            "verify",
            |i: Verify| Command::Chain(ChainCommand::Verify(i)),
            "Verify chains",
            Read,
            VerifyAnswer,
            "Verify stored chains end to end: every signature, backlink and payload hash, and the tips. `ok` is false, with the problems listed, when anything fails; forks are reported with their seqs."
        ),
        Operation {
            name: "append",
            group: Group::Log,
            title: "Append a raw entry",
            description: "Append a raw payload to this agent's chain as a signed entry (give `text` or `base64`). Reasoning events are better recorded with their own tools (propose, contradict, ...), which encode the payload; a raw payload that is a malformed event is refused.",
            effect: Append,
            input_schema: schema_of::<composed::AppendRaw>,
            output_schema: output_schema_of::<EntryHeader>,
            run: composed::append,
        },
        tool!(
            "redact",
            |i: EntryRef| Command::Chain(ChainCommand::Redact(i)),
            "Redact a payload",
            Delete,
            RedactAnswer,
            "Delete an entry's payload from this node's store and record the redaction. The signed header stays, so the chain still verifies, and what the payload meant (its residue) keeps every view unchanged; the text itself is gone from this node for good."
        ),
        tool!(
            "key_history",
            |i: KeyHistory| Command::Chain(ChainCommand::Key(KeyCommand::History(i))),
            "Key history",
            Read,
            KeyHistoryAnswer,
            "An agent's key events in seq order (first commitment, rotations, recoveries): each one's boundary, the key that signs from it and its commitment to the next key; the key signing each tip now; the recoveries the roster binds."
        ),
        tool!(
            "key_rotate",
            |i: KeyRotate| Command::Chain(ChainCommand::Key(KeyCommand::Rotate(i))),
            "Rotate this agent's key",
            Append,
            KeyEventAnswer,
            "Sign a rotation after this agent's tip with its pre-committed next key, which signs from then on; a new next key is drawn and committed to. Nodes refuse any entry the old key signs after it on this branch."
        ),
        tool!(
            "key_revoke",
            |i: KeyRevoke| Command::Chain(ChainCommand::Key(KeyCommand::Revoke(i))),
            "Revoke this agent's key",
            Append,
            KeyEventAnswer,
            "After a compromise: a rotation by the next key placed after `after`, the last entry the owner vouches for (protocol-spec/keys.md: its trust boundary). A thief holding only the current key cannot make one."
        ),
        tool!(
            "key_recover",
            |i: KeyRecover| Command::Chain(ChainCommand::Key(KeyCommand::Recover(i))),
            "Recover an agent whose keys are lost",
            Append,
            RecoveryRecorded,
            "Founder, or an admin's vote: bind `agent`, both keys lost, to the new public key `key` after `after`, its last legitimate entry; nothing else after it counts."
        ),
        Operation {
            name: "export",
            group: Group::Log,
            title: "Export a pack",
            description: "Every stored entry (or one author's) with the payloads held, as a pack: JSON lines that `import` (here or on another node) verifies and stores.",
            effect: Read,
            input_schema: schema_of::<Export>,
            output_schema: output_schema_of::<Exported>,
            run: composed::export,
        },
        Operation {
            name: "import",
            group: Group::Log,
            title: "Import a pack",
            description: "Verify a pack (signatures, links, payload hashes, roster) whole, then store its entries; entries already held are counted, never overwritten, and a fork found is stored with its proof. Returns the counts and the forks detected.",
            effect: Store,
            input_schema: schema_of::<composed::Import>,
            output_schema: output_schema_of::<ImportAnswer>,
            run: composed::import,
        },
        tool!(
            "authors",
            |_: Nothing| Command::Chain(ChainCommand::Authors),
            "Authors stored",
            Read,
            Vec<StoredAuthor>,
            "Every author whose chain is stored here, with its highest seq, its tips (more than one: forked) and its fork proofs."
        ),
        tool!(
            "forks",
            |i: AuthorFilter| Command::Chain(ChainCommand::Forks(i)),
            "Fork proofs",
            Read,
            Vec<ForkProofAnswer>,
            "The fork proofs stored here (or one author's): the two signed entries at one seq, and the proof itself, hex-encoded, which anyone can check with `check_proof` and no other data."
        ),
        tool!(
            "check_proof",
            |i: CheckProof| Command::Chain(ChainCommand::CheckProof(i)),
            "Check a fork proof",
            Read,
            ProofChecked,
            "Check a hex-encoded fork proof with no other data: valid when one author signed two different entries at the same seq."
        ),
        tool!(
            "search",
            |i: Search| read(ReadCommand::Search(i)),
            "Search the graph",
            Read,
            SearchAnswer,
            "Full-text search (BM25) over the nodes' text: id, score, status, kind and text, best first. Superseded and retracted nodes are left out unless `all`. `orient` adds the open questions and contested nodes on the topic."
        ),
        tool!(
            "orphans",
            |_: Nothing| read(ReadCommand::Orphans),
            "Orphan claims",
            Read,
            Vec<ListedNode>,
            "Derived memory claims with no source event (their provenance is missing)."
        ),
        tool!(
            "admit",
            |i: Admit| Command::Membership(MembershipCommand::Admit(i)),
            "Admit an agent",
            Append,
            RosterRecorded,
            "Admit an agent to this workspace (the founder only): its entries are then replicated and counted by every node."
        ),
        tool!(
            "remove",
            |i: Remove| Command::Membership(MembershipCommand::Remove(i)),
            "Remove an agent",
            Append,
            RosterRecorded,
            "Remove an agent from this workspace (the founder, or an admin's vote): its chain up to `at` (default: its tip here) stays admitted, nothing else."
        ),
        tool!(
            "admins",
            |i: AdminsSet| Command::Membership(MembershipCommand::Admins(i)),
            "Name the admins",
            Append,
            AdminsRecorded,
            "Founder only: name the admins, `threshold` of whom together may remove or recover an agent."
        ),
        tool!(
            "roster",
            |_: Nothing| Command::Membership(MembershipCommand::Roster),
            "The roster",
            Read,
            RosterAnswer,
            "The workspace's members, derived from the founder's chain: who was admitted and removed, and when; each member's current key."
        ),
    ]
}

/// The MCP tool group an operation is listed in (the HTTP API serves them
/// all). The core profile is what a debate needs, and no more than 12.
pub const fn group_of(name: &str) -> Group {
    match name.as_bytes() {
        b"orient" | b"propose" | b"support" | b"contradict" | b"refine" | b"ask" | b"resolve" | b"accept" | b"dispute" | b"status" | b"trace" | b"identity" => {
            Group::Core
        }
        b"synthesize" | b"park" | b"resume" | b"reframe" | b"connect" | b"tension" | b"latest" | b"history" | b"decisions" | b"questions"
        | b"disagreements" | b"search" | b"graph" | b"ingest" => Group::Reasoning,
        b"withdraw" | b"resolve_fork" | b"perspective" | b"consensus" | b"disputes" | b"audit" | b"view_hash" => Group::Views,
        b"claim" | b"relate" | b"confirm" | b"orphans" => Group::Memory,
        b"frame_open" | b"frame_evidence" | b"frame_conclude" | b"frame_suspend" | b"frame_resume" | b"frame_invalidate" | b"frame_tree" => Group::Frames,
        b"task_new" | b"task_update" | b"trajectory" | b"judge" | b"memory_item" | b"record_use" | b"outcomes" | b"act" | b"actions" => Group::Tasks,
        b"admit" | b"remove" | b"admins" | b"roster" | b"key_recover" => Group::Roster,
        _ => Group::Log,
    }
}
