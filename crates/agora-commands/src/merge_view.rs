//! The merged view a command reads: the node's live one, current with every
//! committed write ([`live_view`]), or, with no node, one computed here from
//! the store. [`MergeMarks`] is what it says of single events for the
//! reasoning reads: who disputes an event (and with which counter-claim)
//! and whose accepts reach it.

use crate::answers::{ComputedOver, DisputeOf};
use crate::session::Session;
use agora_core::{AgentId, EntryId};
use agora_live_views::merge_cache::{LiveView, MergeCache};
use agora_merge::LiveMerge;
use agora_store::Store;
use anyhow::Result;
use std::collections::HashMap;

/// The node's live merged view, current with every committed write, and the
/// frontier it covers: read while the view is held, again if a write was
/// queued meanwhile (at most [`crate::frontier::STABLE_TRIES`] times, then
/// `"exact": false`).
pub fn live_view<'c>(cache: &'c MergeCache, store: &Store) -> Result<(LiveView<'c>, ComputedOver)> {
    let mut tries = 0;
    loop {
        let view = cache.current(store)?;
        let mut over = crate::frontier::of_store(store)?;
        tries += 1;
        if cache.is_current() {
            return Ok((view, over));
        }
        if tries >= crate::frontier::STABLE_TRIES {
            over.exact = Some(false);
            return Ok((view, over));
        }
    }
}

/// An event as the merge layer places it: its id, author and seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub id: EntryId,
    pub author: AgentId,
    pub seq: u64,
}

/// What the merged view says of some events: their open disputes and the
/// agents whose accepts reach them.
#[derive(Debug, Default)]
pub struct MergeMarks {
    marks: HashMap<EntryId, Marks>,
    /// Display names of the events' authors and disputers that have one.
    names: HashMap<AgentId, String>,
}

/// One event's marks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Marks {
    /// Open disputes of it, by disputer then dispute.
    pub disputed_by: Vec<DisputeOf>,
    /// Agents other than its author whose accepts reach it on its author's
    /// view chain, ascending; empty for an entry off the view chain (a
    /// fork's other branch, which `disputes` describes).
    pub accepted_by: Vec<String>,
}

impl MergeMarks {
    /// The marks of `events`, read off the node's live merged view, or off
    /// one computed from the store when no node runs.
    pub fn of(s: &Session, events: &[Placed]) -> Result<Self> {
        if events.is_empty() {
            return Ok(Self::default());
        }
        let store = s.store()?;
        let (mut marks, roster) = match s.live_merge() {
            Some(cache) => {
                let (mut view, _) = live_view(cache, store)?;
                let marks = Self::from_merge(view.merge(), events);
                (marks, view.roster().clone())
            }
            None => {
                let founder = s.founder()?;
                let (entries, proofs) = agora_view::load_merge_state_input(store, founder)?;
                let merge = LiveMerge::from_entries(&entries, &proofs)?;
                (Self::from_merge(&merge, events), agora_view::derive_roster(store, founder)?)
            }
        };
        let mut agents: Vec<AgentId> = events.iter().map(|e| e.author).collect();
        for m in marks.marks.values() {
            agents.extend(m.disputed_by.iter().filter_map(|d| d.by.parse::<AgentId>().ok()));
        }
        agents.sort();
        agents.dedup();
        for agent in agents {
            if let Some(name) = agora_view::display_name(store, &roster, &agent)? {
                marks.names.insert(agent, name);
            }
        }
        for m in marks.marks.values_mut() {
            for d in &mut m.disputed_by {
                d.by_name = d.by.parse::<AgentId>().ok().and_then(|a| marks.names.get(&a).cloned());
            }
        }
        Ok(marks)
    }

    /// The display name of `agent` (an author or disputer of the events
    /// asked about), from the roster's admission note.
    pub fn name(&self, agent: &AgentId) -> Option<String> {
        self.names.get(agent).cloned()
    }

    /// The marks of `events` in `merge`.
    pub fn from_merge(merge: &LiveMerge, events: &[Placed]) -> Self {
        let mut marks: HashMap<EntryId, Marks> = HashMap::new();
        for d in events.iter().flat_map(|e| merge.open_disputes_of(&e.id)) {
            marks.entry(d.target).or_default().disputed_by.push(DisputeOf {
                by: d.by.to_string(),
                dispute: d.dispute.to_string(),
                reason: d.reason,
                counter_claim: d.counter_claim,
                by_name: None,
            });
        }
        let agents = merge.agents();
        for e in events {
            let view = merge.view_chain(&e.author);
            let on_view = e.seq >= 1 && usize::try_from(e.seq - 1).ok().and_then(|i| view.get(i)) == Some(e.id);
            if !on_view {
                continue;
            }
            let by: Vec<String> =
                agents.iter().filter(|a| **a != e.author && merge.frontier(a, &e.author).is_some_and(|f| f.seq >= e.seq)).map(AgentId::to_string).collect();
            if !by.is_empty() {
                marks.entry(e.id).or_default().accepted_by = by;
            }
        }
        Self { marks, names: HashMap::new() }
    }

    /// The marks of one event (none when it has none).
    pub fn get(&self, id: &EntryId) -> Marks {
        self.marks.get(id).cloned().unwrap_or_default()
    }
}
