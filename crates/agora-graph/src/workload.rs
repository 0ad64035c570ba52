//! A synthetic debate for benchmarks and examples: a seeded log of reasoning
//! events by several authors (propositions, supports, contradictions,
//! refinements that resolve them, syntheses, questions and their resolves,
//! claims and relations), with references clustered near the head, as in a
//! real debate. The replay benchmark (`agora-bench graph`) and the replay
//! example both read it, so they measure the same log.

use crate::event::{Event, MemoryKind, Relation};
use agora_core::xorshift::Xorshift64;
use agora_core::{AgentId, EntryId, LogPosition};

/// The debate's events: `(id, position, payload)` in log order, `events` of
/// them by `authors` authors, the same for the same arguments.
pub fn debate(events: usize, authors: usize) -> Vec<(EntryId, LogPosition, Vec<u8>)> {
    let authors = authors.max(1);
    let mut rng = Xorshift64(0x9e37_79b9_7f4a_7c15);
    let mut known = Debate::default();
    let mut log = Vec::with_capacity(events);
    for i in 0..events {
        let ev = known.make(&mut rng, i);
        let id = EntryId(agora_core::sha256(&(i as u64).to_be_bytes()));
        let author = AgentId([(i % authors) as u8; 32]);
        let pos = LogPosition { timestamp_ms: 1_700_000_000_000 + i as u64, author, seq: (i / authors) as u64 + 1 };
        known.record(id, &ev);
        log.push((id, pos, ev.encode()));
    }
    log
}

/// The debate's generator: the ids seen so far, by what they can be referred
/// to as. [`Debate::make`] draws the next event, [`Debate::record`] tells it
/// the id the event got.
#[derive(Default)]
pub struct Debate {
    positions: Vec<EntryId>,
    claims: Vec<EntryId>,
    open_contradictions: Vec<EntryId>,
    open_questions: Vec<EntryId>,
}

impl Debate {
    /// A recent position: references cluster near the head, as in a debate.
    fn recent(v: &[EntryId], rng: &mut Xorshift64) -> Option<EntryId> {
        if v.is_empty() {
            return None;
        }
        let window = v.len().min(10_000);
        Some(v[v.len() - 1 - rng.below(window)])
    }

    /// The next event, the `i`-th of the log.
    pub fn make(&mut self, rng: &mut Xorshift64, i: usize) -> Event {
        let text = format!("position {i} about pricing tier {} and hiring plan {}", i % 97, i % 13);
        let r = rng.below(100);
        let pos = Self::recent(&self.positions, rng);
        let pos2 = Self::recent(&self.positions, rng);
        match (r, pos, pos2) {
            (0..30, _, _) | (_, None, _) => Event::Proposition { text },
            (30..45, Some(t), _) => Event::Support { target: t, text },
            (45..55, Some(t), _) => Event::Contradiction { target: t, text },
            (55..63, Some(t), _) => {
                let resolves = self.open_contradictions.pop().into_iter().collect();
                Event::Refinement { target: t, resolves, text }
            }
            (63..68, Some(a), Some(b)) if a != b => Event::Synthesis { sources: vec![a, b], text },
            (68..73, _, _) => Event::Question { text },
            (73..78, _, _) => match self.open_questions.pop().or_else(|| self.open_contradictions.pop()) {
                Some(t) => Event::Resolve { target: t, text },
                None => Event::Proposition { text },
            },
            (78..85, Some(t), _) => {
                Event::Claim { text, kind: MemoryKind::Semantic, sources: vec![t], owner_scope: "user:1".into(), confirmed: true, expires_at_ms: None }
            }
            (85..90, _, _) => match (Self::recent(&self.claims, rng), Self::recent(&self.claims, rng)) {
                (Some(a), Some(b)) if a != b => Event::Relate { from: a, to: b, relation: Relation::Expands, reason: text },
                _ => Event::Proposition { text },
            },
            (_, Some(a), Some(b)) if a != b => Event::Connection { a, b, text },
            _ => Event::Proposition { text },
        }
    }

    /// The event made last got this id.
    pub fn record(&mut self, id: EntryId, ev: &Event) {
        match ev {
            Event::Proposition { .. } | Event::Refinement { .. } | Event::Synthesis { .. } | Event::Claim { .. } => {
                self.positions.push(id);
                self.claims.push(id);
            }
            Event::Support { .. } => self.positions.push(id),
            Event::Contradiction { .. } => {
                self.positions.push(id);
                self.open_contradictions.push(id);
            }
            Event::Question { .. } => self.open_questions.push(id),
            _ => {}
        }
    }
}
