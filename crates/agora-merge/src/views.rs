//! The views: an agent's perspective, consensus with a quorum, and the audit
//! of an agent (the disagreement map, whose types are here, is computed in
//! `disagreements.rs`). Each is a pure function of the [`Merge`] (so of the
//! set of entries).

use crate::merge::{ForkPoint, Frontier, Merge, MergeRecord, NONE};
use crate::payload::MergeEvent;
use crate::rules::MergeStatus;
use agora_core::verify::{VerifyError, verify_link, verify_payload, verify_signatures};
use agora_core::{AgentId, EntryId, ForkProof};
use agora_graph::{Graph, LogPosition, Status};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

/// Most ancestors listed for one disputed event in the disagreement map
/// (breadth first, nearest first); the rest is marked truncated. Follow a
/// listed ancestor's own references (the merged view's edges) to go further.
pub const ANCESTORS_MAX: usize = 256;
/// Most agents a consensus may be computed over.
pub const AGENTS_MAX: usize = 100_000;

/// An open dispute, as a mark on its target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisputeMark {
    /// The dispute entry.
    pub dispute: EntryId,
    /// Who disputes.
    pub by: AgentId,
    /// The disputed entry.
    pub target: EntryId,
    /// Why.
    pub reason: String,
    /// What the disputer holds instead.
    pub counter_claim: Option<String>,
}

/// What agent X sees: its own chain, plus what it accepted, minus what it
/// disputes, with every node's reasoning status computed over exactly that.
#[derive(Debug)]
pub struct Perspective {
    /// The agent.
    pub agent: AgentId,
    /// Per chain, the prefix included: X's own view chain, and X's accept
    /// frontier on each other chain. Ascending by author.
    pub included: Vec<(AgentId, u64)>,
    /// X's open disputes.
    pub disputes: Vec<DisputeMark>,
    /// Events inside the included prefixes that X disputes: left out of the
    /// graph (events that refer to them are held as pending by the graph).
    pub excluded: Vec<EntryId>,
    /// The reasoning graph replayed over the included events (merge events
    /// are not reasoning and are not in it).
    pub graph: Graph,
}

impl Perspective {
    /// A node's status as X sees it (`None`: not in X's perspective).
    pub fn status(&self, id: &EntryId) -> Option<Status> {
        self.graph.node(id).map(|n| n.status())
    }
    /// Does X dispute this event?
    pub fn disputed(&self, id: &EntryId) -> bool {
        self.disputes.iter().any(|d| d.target == *id)
    }
    /// Canonical bytes (normative: `protocol-spec/merge.md`, "Perspective
    /// hash"): the agent, the included prefixes, the dispute marks, then the
    /// graph's digest ([`Graph::digest`]), which a live perspective keeps
    /// current, so hashing again after an arrival costs what changed.
    pub fn canonical_bytes(&mut self) -> Vec<u8> {
        let mut out = PERSPECTIVE_TAG.to_vec();
        out.extend_from_slice(self.agent.as_bytes());
        out.extend_from_slice(&(self.included.len() as u32).to_be_bytes());
        for (a, s) in &self.included {
            out.extend_from_slice(a.as_bytes());
            out.extend_from_slice(&s.to_be_bytes());
        }
        out.extend_from_slice(&(self.disputes.len() as u32).to_be_bytes());
        for d in &self.disputes {
            out.extend_from_slice(d.dispute.as_bytes());
            out.extend_from_slice(d.target.as_bytes());
        }
        out.extend_from_slice(&self.graph.digest());
        out
    }
    /// SHA-256 of [`Perspective::canonical_bytes`].
    pub fn hash(&mut self) -> [u8; 32] {
        agora_core::sha256(&self.canonical_bytes())
    }
}

/// Version 2: the graph enters by its digest, not its whole snapshot.
const PERSPECTIVE_TAG: &[u8] = b"agora-perspective/2";

/// A disputed event, with who disputes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisputedEvent {
    /// The disputed entry.
    pub target: EntryId,
    /// Its seq.
    pub seq: u64,
    /// Is it on its author's view chain?
    pub on_view: bool,
    /// (disputer, dispute entry), ascending.
    pub by: Vec<(AgentId, EntryId)>,
}

/// Consensus on one chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainConsensus {
    /// The chain.
    pub author: AgentId,
    /// Length of its view chain.
    pub view_len: u64,
    /// Where it forks, if it is frozen.
    pub frozen_at: Option<u64>,
    /// The prefix at least k agents accept: its last seq (0 for none).
    pub accepted_seq: u64,
    /// The entry at `accepted_seq`.
    pub accepted_head: Option<EntryId>,
    /// Each counted agent's frontier on this chain (the author's is its view
    /// length: an author accepts its own chain), ascending by agent.
    pub frontiers: Vec<(AgentId, u64)>,
    /// Disputed events of this chain (by the counted agents), by seq.
    pub disputed: Vec<DisputedEvent>,
    /// The first disputed event on the view chain: where the provenance forks.
    pub first_disputed: Option<(u64, EntryId)>,
}

/// Consensus with a quorum of k of the n agents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consensus {
    /// k.
    pub quorum: usize,
    /// The n agents counted, ascending.
    pub agents: Vec<AgentId>,
    /// Every chain, ascending by author. Shared: a live view hands out the
    /// same result for a chain until something it depends on changes.
    pub chains: Vec<Arc<ChainConsensus>>,
}

/// Why a consensus cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsensusError {
    /// k is 0 or more than n.
    #[error("quorum {quorum} is not between 1 and the number of agents ({agents})")]
    Quorum {
        /// k.
        quorum: usize,
        /// n.
        agents: usize,
    },
    /// Too many agents.
    #[error("{0} agents, more than the limit of {AGENTS_MAX}")]
    TooManyAgents(usize),
}

/// One disputed event in the disagreement map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisputedEventView {
    /// The disputed entry.
    pub target: EntryId,
    /// Its author.
    pub author: AgentId,
    /// Its seq.
    pub seq: u64,
    /// Is it on its author's view chain?
    pub on_view: bool,
    /// Its kind (a reasoning kind, a merge kind, `raw`, `redacted`, `invalid`).
    pub kind: String,
    /// Its text, when it is a reasoning event.
    pub text: String,
    /// The reasoning that led to it: events it refers to, transitively,
    /// nearest first (held ones only), at most [`ANCESTORS_MAX`].
    pub ancestors: Vec<EntryId>,
    /// More ancestors exist than listed.
    pub ancestors_truncated: bool,
    /// Agents whose accepts cover it (its author included when it is on the
    /// view chain), ascending.
    pub accepted_by: Vec<AgentId>,
    /// The open disputes of it, by disputer.
    pub disputes: Vec<DisputeMark>,
}

/// One side of a fork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    /// Its entry at the fork seq.
    pub first: EntryId,
    /// Is that entry held (or only named by a later entry)?
    pub held: bool,
    /// Does the view follow it (the resolution kept it)?
    pub kept: bool,
    /// Its tips: (seq, id).
    pub tips: Vec<(u64, EntryId)>,
    /// Agents with an accept whose head is on it, ascending.
    pub accepted_by: Vec<AgentId>,
    /// Agents (other than the author) whose viewed reasoning refers to an
    /// entry on it, ascending.
    pub built_on_by: Vec<AgentId>,
}

/// The branch view of one fork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkBranches {
    /// The forked author.
    pub author: AgentId,
    /// The fork.
    pub fork: ForkPoint,
    /// Its sides, by first entry id.
    pub branches: Vec<Branch>,
}

/// Disagreement across agents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisagreementMap {
    /// Every event with an open dispute, by (author, seq, id).
    pub disputed: Vec<DisputedEventView>,
    /// Every fork met on a view chain, with who accepts and builds on each side.
    pub forks: Vec<ForkBranches>,
}

/// The audit of one agent's chain and of its merge events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Audit {
    /// The agent.
    pub agent: AgentId,
    /// Entries held (including ones carried by fork proofs).
    pub held: usize,
    /// Highest seq held.
    pub max_seq: u64,
    /// Length of its view chain.
    pub view_len: u64,
    /// Verification failures: signatures, payload bindings, links.
    pub problems: Vec<VerifyError>,
    /// Seq ranges below `max_seq` with no entry held (inclusive).
    pub gaps: Vec<(u64, u64)>,
    /// Held entries not connected to seq 1 through held entries.
    pub detached: Vec<EntryId>,
    /// Ids named as predecessors but not held: (seq, id).
    pub missing: Vec<(u64, EntryId)>,
    /// Every seq where two entries are known.
    pub fork_seqs: Vec<u64>,
    /// Forks met along its view chain and how they were settled.
    pub forks: Vec<ForkPoint>,
    /// Standalone proofs of its forks: one per seq with two held entries,
    /// plus any given as input.
    pub proofs: Vec<ForkProof>,
    /// Its fork resolutions and their status.
    pub resolutions: Vec<MergeRecord>,
    /// Disputes of its events by others (any status).
    pub disputes_against: Vec<MergeRecord>,
    /// The disputes it made (any status).
    pub disputes_made: Vec<MergeRecord>,
    /// Its accepts (any status).
    pub accepts_made: Vec<MergeRecord>,
    /// Its accept frontiers on other chains, ascending by author.
    pub frontiers: Vec<(AgentId, Frontier)>,
    /// Other agents' frontiers on its chain, ascending by agent.
    pub accepted_by: Vec<(AgentId, Frontier)>,
}

impl Audit {
    /// Nothing wrong: no verification problem, gap, detached entry or fork.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.gaps.is_empty() && self.detached.is_empty() && self.fork_seqs.is_empty()
    }
}

impl Merge<'_> {
    pub(crate) fn dispute_mark(&self, r: &MergeRecord) -> Option<DisputeMark> {
        match &r.event {
            Some(MergeEvent::Dispute { target, reason, counter_claim }) => {
                Some(DisputeMark { dispute: r.entry, by: r.signer, target: *target, reason: reason.clone(), counter_claim: counter_claim.clone() })
            }
            _ => None,
        }
    }

    /// Open disputes (status applied), as marks, in (target, disputer) order.
    pub fn open_disputes(&self) -> Vec<DisputeMark> {
        let mut out: Vec<DisputeMark> = self.open_disputes.iter().filter_map(|&(_, r)| self.dispute_mark(&self.records[r as usize])).collect();
        out.sort_by_key(|a| (a.target, a.by, a.dispute));
        out
    }

    pub(crate) fn log_item(&self, k: u32) -> (EntryId, LogPosition, agora_core::Content<'_>) {
        let it = &self.items[k as usize];
        let h = it.signed.header();
        (it.id(), h.log_position(), it.content())
    }

    /// The perspective of `agent`.
    pub fn perspective(&self, agent: &AgentId) -> Perspective {
        let mut included: Vec<(AgentId, u64)> = Vec::new();
        for chain in &self.chains {
            let upto = if chain.author == *agent { chain.view_len() } else { self.frontier(agent, &chain.author).map_or(0, |f| f.seq) };
            if upto > 0 {
                included.push((chain.author, upto));
            }
        }
        let disputes: Vec<DisputeMark> = self.open_disputes().into_iter().filter(|d| d.by == *agent).collect();
        let parts: Vec<(u32, usize)> = included.iter().map(|(author, upto)| (self.chain_index[author], *upto as usize)).collect();
        // The reasoning events on those prefixes that the agent disputes.
        let mut skipped: HashSet<u32> = HashSet::new();
        for d in &disputes {
            let Some(k) = self.lookup(&d.target) else { continue };
            let it = &self.items[k as usize];
            let upto = included.iter().find(|(a, _)| self.chains[it.author as usize].author == *a).map_or(0, |p| p.1);
            if it.record == NONE && it.on_view() && it.seq() <= upto {
                skipped.insert(k);
            }
        }
        let mut excluded: Vec<EntryId> = skipped.iter().map(|&k| self.items[k as usize].id()).collect();
        excluded.sort_unstable();
        let graph = self.replay_view_prefixes(&parts, |k| !skipped.is_empty() && skipped.contains(&k));
        Perspective { agent: *agent, included, disputes, excluded, graph }
    }

    /// Every author with a view chain (the default n for a consensus).
    pub fn agents(&self) -> Vec<AgentId> {
        self.chains.iter().map(|c| c.author).collect()
    }

    /// Consensus with quorum `k` of `agents` (the n agents counted: their
    /// accepts, disputes, and each one's implicit acceptance of its own view
    /// chain). An agent counts for an event of a chain when its frontier covers
    /// the event and it does not dispute it; the accepted prefix is the longest
    /// prefix whose every event at least `k` agents count for.
    pub fn consensus(&self, agents: &[AgentId], k: usize) -> Result<Consensus, ConsensusError> {
        let agents = counted_agents(agents, k)?;
        let counted: HashSet<AgentId> = agents.iter().copied().collect();
        // Open disputes by counted agents, grouped by target item.
        let mut by_target: BTreeMap<u32, Vec<(AgentId, EntryId)>> = BTreeMap::new();
        for &(t, r) in &self.open_disputes {
            let rec = &self.records[r as usize];
            if counted.contains(&rec.signer) {
                by_target.entry(t).or_default().push((rec.signer, rec.entry));
            }
        }
        let mut chains = Vec::with_capacity(self.chains.len());
        for chain in &self.chains {
            let mut frontiers: Vec<(AgentId, u64)> = Vec::new();
            for a in &agents {
                let f = if *a == chain.author { chain.view_len() } else { self.frontier(a, &chain.author).map_or(0, |f| f.seq) };
                if f > 0 {
                    frontiers.push((*a, f));
                }
            }
            let lo = chain.start;
            let mut disputed: Vec<DisputedEvent> = by_target
                .range(lo..chain.end)
                .map(|(&t, by)| {
                    let mut by = by.clone();
                    by.sort_unstable();
                    let it = &self.items[t as usize];
                    DisputedEvent { target: it.id(), seq: it.seq(), on_view: it.on_view(), by }
                })
                .collect();
            disputed.sort_by_key(|d| (d.seq, d.target));
            let accepted = accepted_prefix(&frontiers, &disputed, k);
            let first_disputed = disputed.iter().find(|d| d.on_view).map(|d| (d.seq, d.target));
            chains.push(Arc::new(ChainConsensus {
                author: chain.author,
                view_len: chain.view_len(),
                frozen_at: chain.frozen().map(|f| f.seq),
                accepted_seq: accepted,
                accepted_head: (accepted > 0).then(|| self.items[chain.view[(accepted - 1) as usize] as usize].id()),
                frontiers,
                disputed,
                first_disputed,
            }));
        }
        Ok(Consensus { quorum: k, agents, chains })
    }

    /// The audit of `agent`: its chain verified end to end (signatures,
    /// payload bindings, links), gaps, forks with standalone proofs, and its
    /// merge events both ways.
    pub fn audit(&self, agent: &AgentId) -> Audit {
        let Some(chain) = self.chain(agent) else {
            return Audit {
                agent: *agent,
                held: 0,
                max_seq: 0,
                view_len: 0,
                problems: vec![],
                gaps: vec![],
                detached: vec![],
                missing: vec![],
                fork_seqs: vec![],
                forks: vec![],
                proofs: vec![],
                resolutions: vec![],
                disputes_against: self.disputes_of_author(agent),
                disputes_made: vec![],
                accepts_made: vec![],
                frontiers: vec![],
                accepted_by: vec![],
            };
        };
        let range = chain.start as usize..chain.end as usize;
        let items = &self.items[range.clone()];
        let mut problems = Vec::new();
        let signed: Vec<&agora_core::SignedEntry> = items.iter().map(|it| it.signed).collect();
        for chunk in signed.chunks(agora_core::limits::VERIFY_BATCH_LEN) {
            if verify_signatures(chunk).is_err() {
                problems.extend(chunk.iter().filter_map(|e| agora_core::verify::verify_signature(e).err()));
            }
        }
        for it in items {
            if let agora_core::Content::Held(p) = it.content()
                && let Err(e) = verify_payload(it.signed, p)
            {
                problems.push(e);
            }
            if it.seq() > 1 && it.parent == NONE {
                let prev = it.signed.header().backlink.and_then(|b| self.lookup(&b));
                if let Some(p) = prev
                    && let Err(e) = verify_link(self.items[p as usize].signed, it.signed)
                {
                    problems.push(e);
                }
            }
        }
        let mut gaps = Vec::new();
        let mut expect = 1u64;
        for it in items {
            if it.seq() > expect {
                gaps.push((expect, it.seq() - 1));
            }
            expect = expect.max(it.seq() + 1);
        }
        let detached = items.iter().filter(|it| !it.rooted()).map(|it| it.id()).collect();
        let mut proofs: Vec<ForkProof> = Vec::new();
        for w in items.windows(2) {
            if w[0].seq() == w[1].seq() && !proofs.iter().any(|p| p.seq() == w[0].seq()) {
                proofs.extend(ForkProof::new(w[0].signed.clone(), w[1].signed.clone()).ok());
            }
        }
        for p in &self.proofs {
            if p.author() == *agent && !proofs.contains(p) {
                proofs.push((*p).clone());
            }
        }
        proofs.sort_by_key(|p| (p.seq(), p.entries().0.id()));
        let mine = |kind: fn(&MergeEvent) -> bool| -> Vec<MergeRecord> {
            self.records.iter().filter(|r| r.signer == *agent && r.event.as_ref().is_some_and(kind)).cloned().collect()
        };
        Audit {
            agent: *agent,
            held: items.len(),
            max_seq: items.last().map_or(0, |it| it.seq()),
            view_len: chain.view_len(),
            problems,
            gaps,
            detached,
            missing: chain.missing.clone(),
            fork_seqs: chain.fork_seqs.clone(),
            forks: chain.forks.clone(),
            proofs,
            resolutions: mine(|e| matches!(e, MergeEvent::ForkResolution { .. })),
            disputes_against: self.disputes_of_author(agent),
            disputes_made: mine(|e| matches!(e, MergeEvent::Dispute { .. })),
            accepts_made: mine(|e| matches!(e, MergeEvent::Accept { .. })),
            frontiers: self.frontiers.iter().filter(|((a, _), _)| a == agent).map(|((_, author), f)| (*author, *f)).collect(),
            accepted_by: self.frontiers.iter().filter(|((_, b), _)| b == agent).map(|((a, _), f)| (*a, *f)).collect(),
        }
    }

    /// Disputes (any status) whose target is an entry of `author`.
    fn disputes_of_author(&self, author: &AgentId) -> Vec<MergeRecord> {
        self.records
            .iter()
            .filter(|r| self.target_of(r).and_then(|t| self.lookup(&t)).is_some_and(|k| self.items[k as usize].signed.header().author == *author))
            .cloned()
            .collect()
    }

    /// The status of every merge event of `agent`, for reports.
    pub fn statuses_of(&self, agent: &AgentId) -> Vec<(EntryId, MergeStatus)> {
        self.records.iter().filter(|r| r.signer == *agent).map(|r| (r.entry, r.status.clone())).collect()
    }
}

/// The longest prefix of a chain that at least `k` of the counted agents
/// count for: the k-th highest frontier, cut before the first disputed event
/// on the view that fewer than `k` agents count for (covered and not
/// disputed). `disputed` is in seq order.
pub(crate) fn accepted_prefix(frontiers: &[(AgentId, u64)], disputed: &[DisputedEvent], k: usize) -> u64 {
    let mut sorted: Vec<u64> = frontiers.iter().map(|(_, f)| *f).collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let accepted = if sorted.len() >= k { sorted[k - 1] } else { 0 };
    for d in disputed.iter().filter(|d| d.on_view) {
        if d.seq > accepted {
            break;
        }
        let covering = frontiers.iter().filter(|(_, f)| *f >= d.seq).count();
        let disputing = d.by.iter().filter(|(a, _)| frontiers.iter().any(|(b, f)| b == a && *f >= d.seq)).count();
        if covering - disputing < k {
            return d.seq - 1;
        }
    }
    accepted
}

/// The n agents a consensus counts, ascending and once each, checked against
/// the limit and the quorum `k`.
pub(crate) fn counted_agents(agents: &[AgentId], k: usize) -> Result<Vec<AgentId>, ConsensusError> {
    if agents.len() > AGENTS_MAX {
        return Err(ConsensusError::TooManyAgents(agents.len()));
    }
    let agents: Vec<AgentId> = agents.iter().copied().collect::<BTreeSet<_>>().into_iter().collect();
    if k == 0 || k > agents.len() {
        return Err(ConsensusError::Quorum { quorum: k, agents: agents.len() });
    }
    Ok(agents)
}
