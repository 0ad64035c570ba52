//! The merge layer's commands: take positions on other agents' reasoning
//! (`accept`, `dispute`, `withdraw`, `resolve-fork`) and read the merged views
//! (`perspective`, `consensus`, `disputes`, `audit`, `view-hash`).
//!
//! Every view is computed from the store's entries by `agora_merge::Merge`, a
//! pure function of the set of entries: two nodes holding the same entries
//! print the same view hash, whatever order the entries arrived in.

use crate::answers::{ComputedOver, Recorded, SeqEntry, shown};
use crate::args::{entry_reference as entry_ref, now_ms, parse_author};
use crate::cli::MergeCommand;
use crate::merge_view::live_view;
use crate::own_chain::append_own;
use crate::revoked::{self, ChainsRead, ExcludedBy, OnExcluded};
use crate::session::Session;
use agora_command_line::inputs;
use agora_core::AgentId;
use agora_merge::{DisputeMark, DisputedEventView, Merge, MergeEvent, MergeRecord};
use anyhow::{Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// Run one merge-layer command.
pub fn run(s: &Session, command: MergeCommand) -> Result<ExitCode> {
    match command {
        MergeCommand::Accept(inputs::Accept { author, up_to }) => accept(s, &author, &up_to),
        MergeCommand::Dispute(inputs::Dispute { target, reason, counter }) => dispute(s, &target, &reason, counter.as_deref()),
        MergeCommand::Withdraw(inputs::Withdraw { dispute: d }) => withdraw(s, &d),
        MergeCommand::ResolveFork(inputs::ResolveFork { keep }) => resolve_fork(s, &keep),
        MergeCommand::Perspective(inputs::Perspective { agent, as_of, summary }) => perspective(s, agent.as_deref(), as_of.as_deref(), summary),
        MergeCommand::Consensus(inputs::Consensus { quorum, agents, as_of, summary }) => consensus(s, quorum, &agents, as_of.as_deref(), summary),
        MergeCommand::Disputes(inputs::Disputes { agents, as_of, summary }) => disputes(s, &agents, as_of.as_deref(), summary),
        MergeCommand::Audit(inputs::AgentRef { agent }) => audit(s, &agent),
        MergeCommand::ViewHash => view_hash(s),
    }
}

fn record_event(s: &Session, event: MergeEvent) -> Result<ExitCode> {
    let me = s.key()?.agent_id();
    let store = s.store()?;
    let checked = match s.live_merge() {
        // Inside a node: against the live merged view, current with every
        // committed write (the same answer as a recompute, property-tested).
        Some(cache) => cache.current(store)?.merge().check(&me, &event),
        None => {
            let (entries, proofs) = agora_view::load_merge_input(store, s.founder()?)?;
            Merge::compute(&entries, &proofs)?.check(&me, &event)
        }
    };
    checked.with_context(|| format!("refused: this {} breaks a rule", event.kind_name()))?;
    let entry = append_own(s, &event.encode())?;
    let answer = Recorded { id: entry.id().to_string(), kind: event.kind_name().to_string(), seq: entry.header().seq, pending: None, after: None };
    s.print(&answer, || entry.id().to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// `author`'s view chain: from the live merged view inside a node, else
/// recomputed.
fn view_chain(s: &Session, author: &AgentId) -> Result<Vec<agora_core::EntryId>> {
    let store = s.store()?;
    Ok(match s.live_merge() {
        Some(cache) => cache.current(store)?.merge().view_chain(author).to_vec(),
        None => {
            let (entries, proofs) = agora_view::load_merge_input(store, s.founder()?)?;
            Merge::compute(&entries, &proofs)?.view_chain(author)
        }
    })
}

/// `agora accept <author> <seq | entry id>`.
pub fn accept(s: &Session, author: &str, up_to: &str) -> Result<ExitCode> {
    let author = parse_author(author)?;
    let store = s.store()?;
    let (up_to_seq, head) = if let Ok(seq) = up_to.parse::<u64>() {
        // A seq: the entry at that seq on the author's view chain.
        let chain = view_chain(s, &author)?;
        let head = chain.get(usize::try_from(seq).unwrap_or(usize::MAX).wrapping_sub(1)).copied().ok_or_else(|| {
            crate::output::refused(
                "beyond_head",
                format!(
                    "refused: {author}'s chain holds {} entries here, not seq {seq}; give the entry id to accept beyond the known head (held as pending)",
                    chain.len()
                ),
            )
        })?;
        (seq, head)
    } else {
        let id = entry_ref(store, up_to)?;
        let seq = match store.get(&id)? {
            Some(e) => e.signed.header().seq,
            None => return Err(crate::output::refused_about("unknown_entry", id, format!("entry {id} is not held here: accept it by seq once it arrives"))),
        };
        (seq, id)
    };
    record_event(s, MergeEvent::Accept { author, up_to_seq, head })
}

/// `agora dispute <entry> "reason" [--counter "claim"]`.
pub fn dispute(s: &Session, target: &str, reason: &str, counter: Option<&str>) -> Result<ExitCode> {
    let target = entry_ref(s.store()?, target)?;
    record_event(s, MergeEvent::Dispute { target, reason: reason.to_string(), counter_claim: counter.map(str::to_string) })
}

/// `agora withdraw <dispute>`.
pub fn withdraw(s: &Session, dispute: &str) -> Result<ExitCode> {
    let dispute = entry_ref(s.store()?, dispute)?;
    record_event(s, MergeEvent::Withdraw { dispute })
}

/// `agora resolve-fork <entry on the branch that continues>`.
pub fn resolve_fork(s: &Session, keep: &str) -> Result<ExitCode> {
    let key = s.key()?;
    let me = key.agent_id();
    let store = s.store()?;
    let keep = entry_ref(store, keep)?;
    // A resolution's rules read only its signer's chain (the fork it
    // decides, the branch it keeps, the signer's earlier resolutions), so it
    // is planned over that chain alone rather than every entry held (the
    // property test `a_resolution_planned_over_its_signers_chain_equals_one_planned_over_everything`).
    // An entry of another chain is refused as planning over everything
    // refuses it.
    let foreign = match store.get(&keep)? {
        Some(e) if e.signed.header().author != me => Some(e.signed.header().author),
        _ => None,
    };
    let plan = match foreign {
        Some(author) => Err(agora_merge::MergeRuleError::ResolutionForeign { signer: me, continue_with: keep, author }),
        None => {
            let roster = agora_view::derive_roster(store, s.founder()?)?;
            let (entries, proofs) = agora_view::load_chain_merge_input(store, &roster, &me)?;
            Merge::compute(&entries, &proofs)?.plan_resolution(&me, &keep)
        }
    };
    let plan = plan.context("refused: this fork resolution breaks a rule")?;
    let entry = store.append_after(&key, &plan.append_after, &plan.event.encode(), now_ms())?;
    let answer = Recorded {
        id: entry.id().to_string(),
        kind: plan.event.kind_name().to_string(),
        seq: entry.header().seq,
        pending: None,
        after: Some(plan.append_after.to_string()),
    };
    s.print(&answer, || format!("{}\n(fork resolved: the chain continues after {})", entry.id(), plan.append_after))?;
    Ok(ExitCode::SUCCESS)
}

fn agents_arg(list: &[String]) -> Result<Option<Vec<AgentId>>> {
    if list.is_empty() {
        return Ok(None);
    }
    list.iter().flat_map(|l| l.split(',')).filter(|t| !t.is_empty()).map(parse_author).collect::<Result<Vec<_>>>().map(Some)
}

fn ids(list: &[AgentId]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

impl MergeRecordAnswer {
    fn of(r: &MergeRecord) -> Self {
        Self {
            entry: r.entry.to_string(),
            signer: r.signer.to_string(),
            seq: r.seq,
            kind: r.event.as_ref().map(|e| e.kind_name().to_string()),
            status: r.status.name().to_string(),
            event: r.event.as_ref().map(|e| format!("{e:?}")),
            signed_by: None,
            target_excluded: None,
        }
    }

    /// A merge event that waits for an entry a key rotation leaves out, as
    /// its signer's chain holds it (none when it is not held).
    fn waiting(store: &agora_store::Store, w: &OnExcluded) -> Result<Option<Self>> {
        let Some(e) = store.get(&w.entry)? else { return Ok(None) };
        let event = e.payload.content().meaning().and_then(|p| MergeEvent::decode(p).ok());
        Ok(Some(Self {
            entry: w.entry.to_string(),
            signer: w.by.to_string(),
            seq: w.seq,
            kind: event.as_ref().map(|e| e.kind_name().to_string()),
            status: "pending".to_string(),
            event: event.as_ref().map(|e| format!("{e:?}")),
            signed_by: None,
            target_excluded: None,
        }))
    }

    fn all(records: &[MergeRecord]) -> Vec<Self> {
        records.iter().map(Self::of).collect()
    }
}

/// `agora perspective [<agent>] [--as-of T] [--summary]`.
pub fn perspective(s: &Session, agent: Option<&str>, as_of: Option<&str>, summary: bool) -> Result<ExitCode> {
    let agent = match agent {
        Some(a) => parse_author(a)?,
        None => s.key()?.agent_id(),
    };
    match (s.live_merge(), as_of) {
        // Inside a node, now: the perspective kept current with the live view.
        (Some(cache), None) => {
            let store = s.store()?;
            // One not kept is built without holding the view.
            cache.prepare_perspective(store, agent)?;
            let (mut view, over) = live_view(cache, store)?;
            let p = view.perspective(agent, store)?;
            let hash = p.hash();
            print_perspective(s, p.view(), hash, over, summary)
        }
        _ => {
            let ((entries, proofs), over) = merge_input(s, as_of)?;
            let m = Merge::compute(&entries, &proofs)?;
            let mut p = m.perspective(&agent);
            let hash = p.hash();
            print_perspective(s, &p, hash, over, summary)
        }
    }
}

fn print_perspective(s: &Session, p: &agora_merge::Perspective, hash: [u8; 32], over: ComputedOver, summary: bool) -> Result<ExitCode> {
    // Each event with its text, read once (from the store, for a node's
    // live perspective) for whichever form is printed.
    let events: Vec<(agora_graph::NodeRef<'_>, std::borrow::Cow<'_, str>)> =
        if summary { Vec::new() } else { p.graph.nodes().filter(|n| n.is_event()).map(|n| Ok((n, p.graph.text(n)?))).collect::<Result<_>>()? };
    let answer = || PerspectiveAnswer {
        agent: p.agent.to_string(),
        hash: hex::encode(hash),
        included: p.included.iter().map(|(a, seq)| Included { author: a.to_string(), through_seq: *seq }).collect(),
        disputes: p
            .disputes
            .iter()
            .map(|d| PerspectiveDispute {
                dispute: d.dispute.to_string(),
                by: d.by.to_string(),
                target: d.target.to_string(),
                reason: d.reason.clone(),
                counter_claim: d.counter_claim.clone(),
            })
            .collect(),
        excluded: p.excluded.iter().map(ToString::to_string).collect(),
        node_count: p.graph.len(),
        nodes: events
            .iter()
            .map(|(n, t)| PerspectiveNode {
                id: n.id.to_string(),
                kind: n.kind().to_string(),
                text: t.to_string(),
                status: n.status().name().to_string(),
                disputed: p.disputed(&n.id),
            })
            .collect(),
        computed_over: over,
    };
    s.print_with(answer, || {
        let mut out = vec![format!("perspective of {} (hash {})", p.agent, hex::encode(&hash[..8]))];
        for (a, seq) in &p.included {
            out.push(format!("  includes {} through seq {seq}", a.short()));
        }
        if summary {
            out.push(format!("  {} nodes, {} disputes in force, {} events left out", p.graph.len(), p.disputes.len(), p.excluded.len()));
        } else {
            for (n, t) in &events {
                let mark = if p.disputed(&n.id) { " DISPUTED" } else { "" };
                out.push(format!("{} {:<13} [{}{mark}] {}", n.id.short(), n.kind(), n.status().name(), t));
            }
        }
        out.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `agora consensus --quorum k [--agents a,b,c] [--as-of T] [--summary]`.
pub fn consensus(s: &Session, quorum: usize, agents: &[String], as_of: Option<&str>, summary: bool) -> Result<ExitCode> {
    let (c, view_hash, over) = match (s.live_merge(), as_of) {
        // Inside a node, now: from the live merged view.
        (Some(cache), None) => {
            let store = s.store()?;
            let (mut view, over) = live_view(cache, store)?;
            let m = view.merge();
            let agents = agents_arg(agents)?.unwrap_or_else(|| m.agents());
            (m.consensus(&agents, quorum)?, m.view_hash(), over)
        }
        _ => {
            let ((entries, proofs), over) = merge_input(s, as_of)?;
            let m = Merge::compute(&entries, &proofs)?;
            let agents = agents_arg(agents)?.unwrap_or_else(|| m.agents());
            (m.consensus(&agents, quorum)?, m.view_hash(), over)
        }
    };
    // The JSON lists every disputed event (unless a summary is asked for);
    // the text, one line per chain.
    let listed = if summary { 0 } else { usize::MAX };
    let answer = || ConsensusAnswer {
        quorum: c.quorum,
        agents: ids(&c.agents),
        view_hash: hex::encode(view_hash),
        chains: c
            .chains
            .iter()
            .map(|ch| ConsensusChain {
                author: ch.author.to_string(),
                view_len: ch.view_len,
                frozen_at: ch.frozen_at,
                accepted_seq: ch.accepted_seq,
                accepted_head: ch.accepted_head.map(|h| h.to_string()),
                frontier_count: ch.frontiers.len(),
                frontiers: ch.frontiers.iter().take(listed).map(|(a, seq)| AgentSeq { agent: a.to_string(), seq: *seq }).collect(),
                disputed_count: ch.disputed.len(),
                disputed: ch
                    .disputed
                    .iter()
                    .take(listed)
                    .map(|d| ChainDisputed {
                        target: d.target.to_string(),
                        seq: d.seq,
                        on_view: d.on_view,
                        by: d.by.iter().map(|(a, e)| DisputedBy { agent: a.to_string(), dispute: e.to_string() }).collect(),
                    })
                    .collect(),
                first_disputed: ch.first_disputed.map(|(seq, id)| SeqEntry { id: id.to_string(), seq }),
            })
            .collect(),
        computed_over: over,
    };
    s.print_with(answer, || {
        let mut out = vec![format!("consensus with quorum {} of {} agents", c.quorum, c.agents.len())];
        for ch in &c.chains {
            let frozen = ch.frozen_at.map_or(String::new(), |f| format!(", FROZEN at fork seq {f}"));
            let first = ch.first_disputed.map_or(String::new(), |(seq, id)| format!(", first disputed: seq {seq} ({})", id.short()));
            out.push(format!("{}: accepted through seq {} of {}{frozen}{first}", ch.author.short(), ch.accepted_seq, ch.view_len));
        }
        out.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `agora disputes [--agents a,b,c] [--as-of T] [--summary]`: the disagreement map across agents.
pub fn disputes(s: &Session, agents: &[String], as_of: Option<&str>, summary: bool) -> Result<ExitCode> {
    let cut = as_of.map(parse_as_of).transpose()?;
    let agents = agents_arg(agents)?;
    // `entries` holds at least the forked authors' entries, for each side's members.
    let store = s.store()?;
    let (map, entries, roster, waiting) = match (s.live_merge(), cut) {
        // In a node: off the live view, reading only the disputed
        // entries, the forked chains and who refers into them.
        (Some(cache), None) => {
            let mut view = live_view(cache, store)?.0;
            let (map, entries) = view.disagreements(store, agents.as_deref())?;
            let roster = view.roster().clone();
            let waiting = waiting_on_excluded(&roster, || view.merge().statuses());
            (map, entries, roster, waiting)
        }
        _ => {
            let founder = s.founder()?;
            let (entries, proofs) = as_it_was(agora_view::load_merge_input(store, founder)?, cut);
            let roster = key_bounds_of(store, founder)?;
            let m = Merge::compute(&entries, &proofs)?;
            let map = m.disagreements(agents.as_deref());
            let waiting = revoked::on_excluded(&roster, m.records().iter().map(|r| (r.entry, r.signer, r.seq, &r.status)));
            (map, entries, roster, waiting)
        }
    };
    let shown = |a: &AgentId| agents.as_ref().is_none_or(|list| list.contains(a));
    let revoked = revoked_ranges(store, &roster, waiting.iter().filter(|w| shown(&w.by)))?;
    if !s.json {
        s.print(&(), || disputes_text(&map) + &revoked_text(&revoked))?;
        return Ok(ExitCode::SUCCESS);
    }
    // The answer (about 140 MB of JSON at a million entries) takes the
    // map's lists over rather than copying them, is written as it is
    // serialized (no tree of values: `print_lazy`), and is freed once
    // printed: scratch memory (`agora_view::scratch`).
    agora_view::scratch::run(|| {
        let answer = DisputesAnswer { revoked, ..DisputesAnswer::of(map, &entries, summary) };
        s.print_lazy(|| &answer, String::new)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The roster with its key bounds (`agora_view::derive_roster`): what key
/// events leave out, which recoveries need the founder's bindings for.
fn key_bounds_of(store: &agora_store::Store, founder: AgentId) -> Result<agora_roster::Roster> {
    Ok(agora_view::derive_roster(store, founder)?)
}

/// The merge events waiting for an entry a rotation leaves out, among
/// every merge event's status (read only when a rotation leaves something out).
fn waiting_on_excluded(
    roster: &agora_roster::Roster,
    statuses: impl FnOnce() -> Vec<(agora_core::EntryId, AgentId, u64, agora_merge::MergeStatus)>,
) -> Vec<OnExcluded> {
    if roster.key_bounds.is_empty() {
        return Vec::new();
    }
    revoked::on_excluded(roster, statuses().iter().map(|(e, by, seq, st)| (*e, *by, *seq, st)))
}

/// The ranges of chains key rotations leave out, each with the merge
/// events of `waiting` that name an entry in it. Reads each such chain once.
fn revoked_ranges<'a>(store: &agora_store::Store, roster: &agora_roster::Roster, waiting: impl Iterator<Item = &'a OnExcluded>) -> Result<Vec<RevokedRange>> {
    let mut chains = ChainsRead::new(roster);
    let mut out = Vec::new();
    for author in roster.key_bounds.keys() {
        let Some(rotations) = chains.of(store, author)? else { continue };
        for (why, count, from_seq, to_seq) in rotations.ranges() {
            out.push(RevokedRange {
                author: author.to_string(),
                boundary: why.boundary.clone(),
                count,
                from_seq,
                referenced_by: Vec::new(),
                rotation: why.rotation.clone(),
                event: why.event.clone(),
                to_seq,
            });
        }
    }
    for w in waiting {
        let Some(why) = chains.why(store, &w.target_author, &w.target)? else { continue };
        let Some(range) = out.iter_mut().find(|r| r.rotation == why.rotation && r.author == w.target_author.to_string()) else { continue };
        let kind = MergeRecordAnswer::waiting(store, w)?.and_then(|r| r.kind).unwrap_or_default();
        range.referenced_by.push(RevokedReference { by: w.by.to_string(), entry: w.entry.to_string(), kind, target: w.target.to_string() });
    }
    for r in &mut out {
        r.referenced_by.sort_by(|a, b| (&a.by, &a.entry).cmp(&(&b.by, &b.entry)));
    }
    Ok(out)
}

/// The revoked ranges as lines of text.
fn revoked_text(ranges: &[RevokedRange]) -> String {
    let mut out = String::new();
    for r in ranges {
        out.push_str(&format!(
            "\nrevoked: {} entries of {} (seq {}..={}) count in no view, {}",
            r.count,
            short(&r.author),
            r.from_seq,
            r.to_seq,
            ExcludedBy { rotation: r.rotation.clone(), boundary: r.boundary.clone(), event: r.event.clone(), bound_by: None }.text()
        ));
        for x in &r.referenced_by {
            out.push_str(&format!(
                "\n  {} by {} in {} names {}: it counts in no view, so it never takes effect",
                x.kind,
                short(&x.by),
                short(&x.entry),
                short(&x.target)
            ));
        }
    }
    out
}

/// The first 8 characters of an id.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// The disagreement map as text: each disputed event, then each fork.
fn disputes_text(map: &agora_merge::DisagreementMap) -> String {
    let mut out = Vec::new();
    for d in &map.disputed {
        out.push(format!("{} by {} seq {} [{}] {}", d.target.short(), d.author.short(), d.seq, d.kind, d.text));
        out.push(format!(
            "  led to by {} earlier event(s); accepted by {}",
            d.ancestors.len(),
            d.accepted_by.iter().map(|a| a.short()).collect::<Vec<_>>().join(", ")
        ));
        for x in &d.disputes {
            let counter = x.counter_claim.as_deref().map_or(String::new(), |c| format!(" (counter-claim: {c})"));
            out.push(format!("  disputed by {}: {}{counter}", x.by.short(), x.reason));
        }
    }
    for f in &map.forks {
        out.push(format!("fork of {} at seq {}:", f.author.short(), f.fork.seq));
        for b in &f.branches {
            let kept = if b.kept { " (kept)" } else { "" };
            out.push(format!(
                "  branch {}{kept}: accepted by [{}], built on by [{}]",
                b.first.short(),
                b.accepted_by.iter().map(|a| a.short()).collect::<Vec<_>>().join(", "),
                b.built_on_by.iter().map(|a| a.short()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if out.is_empty() {
        out.push("no disputes and no forks".into());
    }
    out.join("\n")
}

impl DisputesAnswer {
    /// The answer of `disputes` from the map, and `entries` (at least the
    /// forked authors' entries, for each side's members).
    fn of(map: agora_merge::DisagreementMap, entries: &[agora_merge::MergeEntry], summary: bool) -> Self {
        // Each branch's entries, walked back from its tips by backlink to the
        // fork seq, so that a reader (the live page) places every entry on its
        // branch, not only the first and the tips.
        let forked: std::collections::BTreeSet<AgentId> = map.forks.iter().map(|f| f.author).collect();
        let backlinks: std::collections::HashMap<agora_core::EntryId, (u64, Option<agora_core::EntryId>)> = entries
            .iter()
            .filter(|e| forked.contains(&e.signed().header().author))
            .map(|e| (e.id(), (e.signed().header().seq, e.signed().header().backlink)))
            .collect();
        let members = |fork_seq: u64, tips: &[(u64, agora_core::EntryId)]| -> (Vec<String>, bool) {
            let mut seen = std::collections::BTreeSet::new();
            let mut out: Vec<(u64, agora_core::EntryId)> = Vec::new();
            for (_, tip) in tips {
                let mut at = Some(*tip);
                while let Some(id) = at {
                    let Some(&(seq, back)) = backlinks.get(&id) else { break };
                    if seq < fork_seq || !seen.insert(id) {
                        break;
                    }
                    if out.len() == BRANCH_MEMBERS_MAX {
                        out.sort();
                        return (out.into_iter().map(|(_, id): (u64, agora_core::EntryId)| id.to_string()).collect(), true);
                    }
                    out.push((seq, id));
                    at = back;
                }
            }
            out.sort();
            (out.into_iter().map(|(_, id): (u64, agora_core::EntryId)| id.to_string()).collect(), false)
        };
        let forks = map
            .forks
            .iter()
            .map(|f| ForkAnswer {
                author: f.author.to_string(),
                seq: f.fork.seq,
                shared: f.fork.shared.map(|s| s.to_string()),
                branches: f
                    .branches
                    .iter()
                    .map(|b| {
                        let (members, truncated) = members(f.fork.seq, &b.tips);
                        BranchAnswer {
                            first: b.first.to_string(),
                            held: b.held,
                            kept: b.kept,
                            tips: b.tips.iter().map(|(seq, id)| SeqEntry { id: id.to_string(), seq: *seq }).collect(),
                            accepted_by: ids(&b.accepted_by),
                            built_on_by: ids(&b.built_on_by),
                            member_count: members.len(),
                            members: if summary { Vec::new() } else { members },
                            members_truncated: truncated,
                        }
                    })
                    .collect(),
            })
            .collect();
        Self { disputed: map.disputed.into_iter().map(|d| DisputedEvent::of(d, summary)).collect(), forks, revoked: Vec::new() }
    }
}

impl DisputedEvent {
    /// A disputed event of the map, its lists taken over; in a summary,
    /// its acceptors counted, not listed.
    fn of(d: DisputedEventView, summary: bool) -> Self {
        Self {
            accepted_by_count: d.accepted_by.len(),
            accepted_by: if summary { Vec::new() } else { d.accepted_by },
            ancestors: d.ancestors,
            ancestors_truncated: d.ancestors_truncated,
            author: d.author,
            disputes: d
                .disputes
                .into_iter()
                .map(|x: DisputeMark| DisputeMarkAnswer {
                    by: x.by.to_string(),
                    counter_claim: x.counter_claim,
                    dispute: x.dispute.to_string(),
                    reason: x.reason,
                })
                .collect(),
            kind: d.kind,
            on_view: d.on_view,
            seq: d.seq,
            target: d.target,
            text: d.text,
        }
    }
}

/// Most entries listed per fork branch in `disputes` (`members`); beyond it
/// `members_truncated` is set.
const BRANCH_MEMBERS_MAX: usize = 10_000;

/// `agora audit <agent>`: exit 3 when the chain has problems. Inside a node
/// it costs the agent's chain and a pass over the merge events
/// ([`agora_merge::LiveMerge::audit`]), not a recompute.
pub fn audit(s: &Session, agent: &str) -> Result<ExitCode> {
    let agent = parse_author(agent)?;
    let store = s.store()?;
    // The merge events waiting for an entry a key rotation leaves out: of
    // the agent's own, and of anyone's naming the agent's.
    let (a, waiting, roster) = match s.live_merge() {
        // In a node: the agent's chain read and checked again without
        // holding the live view (its updates go on meanwhile), then the
        // merge events about it from the view.
        Some(cache) => {
            let roster = live_view(cache, store)?.0.roster().clone();
            let (entries, proofs) = agora_view::load_chain_merge_input(store, &roster, &agent)?;
            let mut a = Merge::compute(&entries, &proofs)?.audit(&agent);
            let mut view = live_view(cache, store)?.0;
            view.merge().complete_audit(&mut a);
            let waiting = waiting_on_excluded(&roster, || view.merge().statuses());
            (a, waiting, roster)
        }
        None => {
            let bar = s.progress(0, "{spinner} auditing: reading and verifying every chain, then the merge layer ({elapsed})");
            let founder = s.founder()?;
            let (entries, proofs) = agora_view::load_merge_input(store, founder)?;
            let roster = key_bounds_of(store, founder)?;
            let m = Merge::compute(&entries, &proofs)?;
            let waiting = revoked::on_excluded(&roster, m.records().iter().map(|r| (r.entry, r.signer, r.seq, &r.status)));
            let a = m.audit(&agent);
            bar.finish_and_clear();
            (a, waiting, roster)
        }
    };
    let clean = a.is_clean();
    let mut answer = AuditAnswer {
        agent: agent.to_string(),
        clean,
        held: a.held,
        max_seq: a.max_seq,
        view_len: a.view_len,
        problems: a.problems.iter().map(ToString::to_string).collect(),
        gaps: a.gaps.iter().map(|&(from, to)| SeqRange { from, to }).collect(),
        detached: a.detached.iter().map(ToString::to_string).collect(),
        missing: a.missing.iter().map(|(seq, id)| SeqEntry { id: id.to_string(), seq: *seq }).collect(),
        fork_seqs: a.fork_seqs.clone(),
        fork_proofs: a.proofs.iter().map(|p| hex::encode(p.encode())).collect(),
        resolutions: MergeRecordAnswer::all(&a.resolutions),
        disputes_against: MergeRecordAnswer::all(&a.disputes_against),
        disputes_made: MergeRecordAnswer::all(&a.disputes_made),
        accepts_made: MergeRecordAnswer::all(&a.accepts_made),
        frontiers: a.frontiers.iter().map(|(x, f)| AuthorFrontier { author: x.to_string(), seq: f.seq, head: f.head.to_string() }).collect(),
        accepted_by: a.accepted_by.iter().map(|(x, f)| AgentFrontier { agent: x.to_string(), seq: f.seq, head: f.head.to_string() }).collect(),
        revoked: Vec::new(),
    };
    // The ranges of the agent's own chain its key events leave out.
    if roster.key_bounds.contains_key(&agent) {
        let mine = agora_roster::Roster {
            key_bounds: roster.key_bounds.iter().filter(|(x, _)| **x == agent).map(|(x, b)| (*x, b.clone())).collect(),
            ..roster.clone()
        };
        answer.revoked = revoked_ranges(store, &mine, waiting.iter().filter(|w| w.target_author == agent))?;
    }
    // Disputes of the agent's entries that a rotation leaves out wait for
    // them forever: listed, not dropped.
    for w in waiting.iter().filter(|w| w.target_author == agent) {
        if let Some(r) = MergeRecordAnswer::waiting(store, w)?.filter(|r| r.kind.as_deref() == Some("dispute")) {
            answer.disputes_against.push(r);
        }
    }
    let mut chains = ChainsRead::new(&roster);
    for list in [&mut answer.resolutions, &mut answer.disputes_against, &mut answer.disputes_made, &mut answer.accepts_made] {
        for r in list.iter_mut() {
            let entry: agora_core::EntryId = r.entry.parse()?;
            r.signed_by = revoked::signed_by(store, &entry)?;
            if let Some(w) = waiting.iter().find(|w| w.entry == entry) {
                r.target_excluded = chains.why(store, &w.target_author, &w.target)?;
            }
        }
    }
    s.print(&answer, || {
        let mut out = vec![format!(
            "audit of {agent}: {} entries held, max seq {}, view length {}; {}",
            a.held,
            a.max_seq,
            a.view_len,
            if clean { "chain verifies" } else { "PROBLEMS FOUND" }
        )];
        out.extend(a.problems.iter().map(|p| format!("  problem: {p}")));
        out.extend(a.gaps.iter().map(|(f, t)| format!("  gap: seqs {f}..={t} not held")));
        out.extend(a.fork_seqs.iter().map(|s| format!("  fork at seq {s}")));
        let marks = |r: &MergeRecordAnswer| {
            let key = r.signed_by.as_deref().map_or(String::new(), |k| format!(" (signed by key {})", short(k)));
            let out = r.target_excluded.as_ref().map_or(String::new(), |w| format!("; names an entry that counts in no view, {}", w.text()));
            key + &out
        };
        out.extend(answer.resolutions.iter().map(|r| format!("  fork resolution {} [{}]{}", short(&r.entry), r.status, marks(r))));
        out.extend(answer.disputes_against.iter().map(|r| format!("  disputed by {} in {} [{}]{}", short(&r.signer), short(&r.entry), r.status, marks(r))));
        out.extend(answer.disputes_made.iter().map(|r| format!("  disputes: {} [{}]{}", short(&r.entry), r.status, marks(r))));
        out.extend(
            answer
                .accepts_made
                .iter()
                .filter(|r| r.signed_by.is_some() || r.target_excluded.is_some())
                .map(|r| format!("  accept {} [{}]{}", short(&r.entry), r.status, marks(r))),
        );
        out.extend(a.frontiers.iter().map(|(x, f)| format!("  accepts {} through seq {}", x.short(), f.seq)));
        out.extend(a.accepted_by.iter().map(|(x, f)| format!("  accepted by {} through seq {}", x.short(), f.seq)));
        out.join("\n") + &revoked_text(&answer.revoked)
    })?;
    Ok(if clean { ExitCode::SUCCESS } else { ExitCode::from(3) })
}

/// `agora view-hash`: the merged view's hash (equal on nodes holding the same
/// entries); inside a node, the live view's.
pub fn view_hash(s: &Session) -> Result<ExitCode> {
    let (hash, entries, over) = match s.live_merge() {
        Some(cache) => {
            let (mut view, over) = live_view(cache, s.store()?)?;
            let m = view.merge();
            (m.view_hash(), usize::try_from(m.entries_held()).unwrap_or(usize::MAX), over)
        }
        None => {
            let ((entries, proofs), over) = merge_input(s, None)?;
            let m = Merge::compute(&entries, &proofs)?;
            (m.view_hash(), entries.len(), over)
        }
    };
    let h = hex::encode(hash);
    let answer = ViewHashAnswer { view_hash: h.clone(), entries, computed_over: over };
    s.print(&answer, || h)?;
    Ok(ExitCode::SUCCESS)
}

/// The merge layer's input with the frontier it was read at (see
/// `frontier::around`).
type MergeInput = (Vec<agora_merge::MergeEntry>, Vec<agora_core::ForkProof>);

/// The merge layer's input, and the frontier it was read at; with `as_of`,
/// only the entries dated at or before it ([`as_it_was`]).
fn merge_input(s: &Session, as_of: Option<&str>) -> Result<(MergeInput, ComputedOver)> {
    let cut = as_of.map(parse_as_of).transpose()?;
    let (store, founder) = (s.store()?, s.founder()?);
    let (input, over) = crate::frontier::around(store, || agora_view::load_merge_input(store, founder).map_err(anyhow::Error::from))?;
    Ok((as_it_was(input, cut), over))
}

fn parse_as_of(text: &str) -> Result<u64> {
    crate::reasoning::parse_time(text).ok_or_else(|| crate::output::refused("not_a_time", format!("as_of {text:?}: not a time (ms, or YYYY-MM-DD in UTC)")))
}

/// The merge input as it was at `cut`: the entries dated at or before it,
/// and the fork proofs both of whose entries are. A chain's timestamps never
/// go backwards (a verify rule), so what is left of each chain, and of each
/// branch of a fork, is a prefix of it: the views are those a node holding
/// exactly these entries computes.
fn as_it_was((entries, proofs): MergeInput, cut: Option<u64>) -> MergeInput {
    let Some(t) = cut else { return (entries, proofs) };
    let entries = entries.into_iter().filter(|e| e.signed().header().timestamp_ms <= t).collect();
    let proofs = proofs
        .into_iter()
        .filter(|p| {
            let (a, b) = p.entries();
            a.header().timestamp_ms <= t && b.header().timestamp_ms <= t
        })
        .collect();
    (entries, proofs)
}

// ---------------------------------------------------------------------------
// The answers

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
    /// Per chain: the prefix at least `quorum` agents accept, the agents' accept frontiers and what is disputed.
    pub chains: Vec<ConsensusChain>,
    /// The frontier the answer was computed over.
    pub computed_over: ComputedOver,
}

/// A chain's consensus.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConsensusChain {
    /// The chain's author.
    pub author: String,
    /// Length of its view chain.
    pub view_len: u64,
    /// The fork seq it is frozen at (null when not).
    pub frozen_at: Option<u64>,
    /// The last seq at least `quorum` agents accept (0: none).
    pub accepted_seq: u64,
    /// The entry at `accepted_seq`.
    pub accepted_head: Option<String>,
    /// How many agents' frontiers there are.
    pub frontier_count: usize,
    /// Each agent's accept frontier (empty in a summary).
    pub frontiers: Vec<AgentSeq>,
    /// How many of its events are disputed.
    pub disputed_count: usize,
    /// Its disputed events, by seq (empty in a summary).
    pub disputed: Vec<ChainDisputed>,
    /// The first disputed event on the view chain.
    pub first_disputed: Option<SeqEntry>,
}

/// An agent's accept frontier on a chain.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentSeq {
    /// The agent.
    pub agent: String,
    /// Accepted through this seq.
    pub seq: u64,
}

/// A disputed event of a chain.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChainDisputed {
    /// The event.
    pub target: String,
    /// Its seq.
    pub seq: u64,
    /// It is on the view chain.
    pub on_view: bool,
    /// Who disputes it.
    pub by: Vec<DisputedBy>,
}

/// An agent's dispute of an event.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DisputedBy {
    /// The agent.
    pub agent: String,
    /// Its dispute entry.
    pub dispute: String,
}

/// `disputes`: the disagreement map. Written as it is serialized
/// (`Session::print_lazy`), so its fields, and those of the types in it,
/// are in the order of their names, the order a JSON value writes keys in.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DisputesAnswer {
    /// Every event with an open dispute, by author, seq and id.
    pub disputed: Vec<DisputedEvent>,
    /// Every fork met on a view chain, with who accepts and builds on each side.
    pub forks: Vec<ForkAnswer>,
    /// Chain ranges a key revocation leaves out of every view, with the accepts and disputes naming them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked: Vec<RevokedRange>,
}

/// Entries of a chain that a key rotation leaves out of every view
/// (protocol-spec/keys.md): those after its boundary on other branches.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RevokedRange {
    /// The chain's author.
    pub author: String,
    /// The rotation's trust boundary: the last entry its owner vouches for.
    pub boundary: String,
    /// How many entries it leaves out.
    pub count: usize,
    /// The lowest seq among them.
    pub from_seq: u64,
    /// Accepts and disputes naming one of them (a dispute's target, an accept's head): they wait and never take effect.
    pub referenced_by: Vec<RevokedReference>,
    /// The key event that leaves them out (protocol-spec/keys.md).
    pub rotation: String,
    /// `rotate`, `recover` or `unbound_recover`.
    pub event: String,
    /// The highest seq among them.
    pub to_seq: u64,
}

/// An accept or dispute naming an entry a rotation leaves out.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RevokedReference {
    /// Its signer.
    pub by: String,
    /// Its entry.
    pub entry: String,
    /// `accept` or `dispute`.
    pub kind: String,
    /// The entry it names.
    pub target: String,
}

/// A disputed event.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DisputedEvent {
    /// Agents whose accepts cover it (empty in a summary).
    #[serde(serialize_with = "shown::list")]
    #[schemars(with = "Vec<String>")]
    pub accepted_by: Vec<AgentId>,
    /// How many agents accept it.
    pub accepted_by_count: usize,
    /// The events it refers to, transitively, nearest first.
    #[serde(serialize_with = "shown::list")]
    #[schemars(with = "Vec<String>")]
    pub ancestors: Vec<agora_core::EntryId>,
    /// More ancestors exist than listed.
    pub ancestors_truncated: bool,
    /// Its author.
    #[serde(serialize_with = "shown::one")]
    #[schemars(with = "String")]
    pub author: AgentId,
    /// The open disputes of it.
    pub disputes: Vec<DisputeMarkAnswer>,
    /// Its kind (a reasoning or merge kind, `raw`, `redacted`, `invalid`).
    pub kind: String,
    /// It is on its author's view chain.
    pub on_view: bool,
    /// Its seq.
    pub seq: u64,
    /// The disputed entry.
    #[serde(serialize_with = "shown::one")]
    #[schemars(with = "String")]
    pub target: agora_core::EntryId,
    /// Its text (empty when not a reasoning event).
    pub text: String,
}

/// An open dispute of an event.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DisputeMarkAnswer {
    /// Who disputes.
    pub by: String,
    /// What the disputer holds instead.
    pub counter_claim: Option<String>,
    /// The dispute entry.
    pub dispute: String,
    /// Why.
    pub reason: String,
}

/// A fork and its branches.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ForkAnswer {
    /// The forked author.
    pub author: String,
    /// Its branches.
    pub branches: Vec<BranchAnswer>,
    /// The fork's seq.
    pub seq: u64,
    /// The entry both branches continue (null at seq 1).
    pub shared: Option<String>,
}

/// One branch of a fork.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BranchAnswer {
    /// Agents with an accept whose head is on it.
    pub accepted_by: Vec<String>,
    /// Other agents whose reasoning refers to an entry on it.
    pub built_on_by: Vec<String>,
    /// Its entry at the fork seq.
    pub first: String,
    /// That entry is held (not only named by a later one).
    pub held: bool,
    /// The view follows it.
    pub kept: bool,
    /// How many entries it has from the fork seq (at most 10,000 counted).
    pub member_count: usize,
    /// Those entries by seq (empty in a summary).
    pub members: Vec<String>,
    /// More entries exist than counted.
    pub members_truncated: bool,
    /// Its tips.
    pub tips: Vec<SeqEntry>,
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
    /// The ranges of its chain its key events leave out.
    #[serde(default)]
    pub revoked: Vec<RevokedRange>,
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
    /// The key that signed it (hex) when its signer had rotated; absent: the signer's own key (its id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// The entry it names (a dispute's target, an accept's head) counts in no view: a key rotation of that entry's author leaves it out, so this event waits (`pending`) and never takes effect. Absent when what it names counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_excluded: Option<ExcludedBy>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::EntryId;
    use serde_json::{Value, json};

    /// The answer of `disputes`, written as it is serialized, is the JSON
    /// the same answer had as a tree of values (its keys sorted), with and
    /// without `--summary`.
    #[test]
    fn disputes_json_is_written_as_the_value_it_was() {
        let mark = |i: u8, counter: Option<&str>| DisputeMark {
            dispute: EntryId([i; 32]),
            by: AgentId([i + 1; 32]),
            target: EntryId([9; 32]),
            reason: format!("reason \"{i}\"\n"),
            counter_claim: counter.map(Into::into),
        };
        let disputed = [
            DisputedEventView {
                target: EntryId([9; 32]),
                author: AgentId([3; 32]),
                seq: 7,
                on_view: true,
                kind: "proposition".into(),
                text: "a \u{e9}\u{1f600} text".into(),
                ancestors: vec![EntryId([4; 32]), EntryId([5; 32])],
                ancestors_truncated: false,
                accepted_by: vec![AgentId([6; 32]), AgentId([7; 32])],
                disputes: vec![mark(1, Some("instead")), mark(2, None)],
            },
            DisputedEventView {
                target: EntryId([8; 32]),
                author: AgentId([3; 32]),
                seq: 9,
                on_view: false,
                kind: "raw".into(),
                text: String::new(),
                ancestors: Vec::new(),
                ancestors_truncated: true,
                accepted_by: Vec::new(),
                disputes: vec![mark(3, None)],
            },
        ];
        let branch = BranchAnswer {
            accepted_by: vec![AgentId([6; 32]).to_string()],
            built_on_by: Vec::new(),
            first: EntryId([1; 32]).to_string(),
            held: true,
            kept: false,
            member_count: 1,
            members: vec![EntryId([1; 32]).to_string()],
            members_truncated: false,
            tips: vec![SeqEntry { id: EntryId([1; 32]).to_string(), seq: 2 }],
        };
        let forks = vec![ForkAnswer { author: AgentId([3; 32]).to_string(), branches: vec![branch], seq: 2, shared: None }];
        let forks_value = json!([{
            "author": AgentId([3; 32]).to_string(), "seq": 2, "shared": null,
            "branches": [{
                "first": EntryId([1; 32]).to_string(), "held": true, "kept": false,
                "tips": [{ "seq": 2, "id": EntryId([1; 32]).to_string() }],
                "accepted_by": [AgentId([6; 32]).to_string()], "built_on_by": [],
                "member_count": 1, "members": [EntryId([1; 32]).to_string()], "members_truncated": false,
            }],
        }]);
        for summary in [false, true] {
            let expected: Vec<Value> = disputed
                .iter()
                .map(|d| {
                    json!({
                        "target": d.target.to_string(), "author": d.author.to_string(), "seq": d.seq, "on_view": d.on_view,
                        "kind": d.kind, "text": d.text,
                        "ancestors": d.ancestors.iter().map(ToString::to_string).collect::<Vec<_>>(), "ancestors_truncated": d.ancestors_truncated,
                        "accepted_by": if summary { Vec::new() } else { ids(&d.accepted_by) }, "accepted_by_count": d.accepted_by.len(),
                        "disputes": d.disputes.iter().map(|x| json!({ "dispute": x.dispute.to_string(), "by": x.by.to_string(), "reason": x.reason, "counter_claim": x.counter_claim })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let expected = json!({ "disputed": expected, "forks": forks_value });
            let answer = DisputesAnswer {
                disputed: disputed.iter().cloned().map(|d| DisputedEvent::of(d, summary)).collect(),
                forks: forks.clone(),
                revoked: Vec::new(),
            };
            let written = serde_json::to_string(&answer).unwrap();
            assert_eq!(written, expected.to_string(), "byte for byte, summary {summary}");
        }
    }
}
