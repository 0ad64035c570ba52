//! The `rules` classifier: deterministic, offline. The text is cut into
//! turns (lines; a leading `speaker:` is taken off) and sentences (ending in
//! `.`, `!` or `?`); each sentence is one proposal, its kind given by the
//! first rule whose cue it holds (lowercase, `’` read as `'`):
//!
//! | rule | cue | kind | targets | confidence |
//! |---|---|---|---|---|
//! | 1 | ends with `?` | question | none | 0.9 |
//! | 2 | starts with `but `, `however`, `no,`, `no `; or holds `that's wrong`, `that is wrong`, `i disagree`, `won't work`, `will not work`, `doesn't work`, `does not work`, `rules out`, `isn't true`, `is not true`, `cannot work` | contradiction | the nearest match | 0.8 |
//! | 3 | holds `instead`, `rather than`, `so let's`, `let's refine`, `more precisely`, `revised` | refinement | the nearest match | 0.75 |
//! | 4 | starts with `the answer is`, `answer:`, `to answer`, `that settles`, `resolved:` | resolve | the nearest match | 0.7 |
//! | 5 | holds `combining`, `taken together`, `together these`, `synthesis`, `both of these` | synthesis | the two nearest matches | 0.65 |
//! | 6 | holds `i agree`, `evidence`, `for example`, `for instance`, `this is confirmed`, `supports this` | support | the nearest match | 0.7 |
//! | 7 | holds `i propose`, `we should`, `let's`, `let us`, `i suggest`, `we could`, `we must`, `my position`, `i think`, `i believe` | proposition | none | 0.8 |
//! | 8 | holds `because`, `since ` | support | the nearest match | 0.6 |
//! | 9 | anything else | proposition | none | 0.3 |
//!
//! "The nearest match" is the sentence itself as the resolver's query: the
//! node its words find best (`super::resolve`). At most
//! [`PROPOSALS_MAX`] sentences are proposed; the rest are left out and said.

use super::classify::{MoveKind, PROPOSALS_MAX, Proposal, TARGET_BYTES_MAX};
use agora_graph::event::TEXT_BYTES_MAX;

/// The rule set's name and version, as the audit names the model.
pub const MODEL: &str = "agora-rules-1";

const CONTRADICTION_STARTS: &[&str] = &["but ", "however", "no,", "no "];
const CONTRADICTION_HOLDS: &[&str] = &[
    "that's wrong",
    "that is wrong",
    "i disagree",
    "won't work",
    "will not work",
    "doesn't work",
    "does not work",
    "rules out",
    "isn't true",
    "is not true",
    "cannot work",
];
const REFINEMENT_HOLDS: &[&str] = &["instead", "rather than", "so let's", "let's refine", "more precisely", "revised"];
const RESOLVE_STARTS: &[&str] = &["the answer is", "answer:", "to answer", "that settles", "resolved:"];
const SYNTHESIS_HOLDS: &[&str] = &["combining", "taken together", "together these", "synthesis", "both of these"];
const SUPPORT_HOLDS: &[&str] = &["i agree", "evidence", "for example", "for instance", "this is confirmed", "supports this"];
const PROPOSAL_HOLDS: &[&str] = &["i propose", "we should", "let's", "let us", "i suggest", "we could", "we must", "my position", "i think", "i believe"];
const WEAK_SUPPORT_HOLDS: &[&str] = &["because", "since "];

/// The proposals for `text`, and how many sentences were left out past
/// [`PROPOSALS_MAX`].
pub fn classify(text: &str) -> (Vec<Proposal>, usize) {
    let mut out = Vec::new();
    let mut left_out = 0;
    for sentence in text.lines().map(strip_speaker).flat_map(sentences) {
        if out.len() == PROPOSALS_MAX {
            left_out += 1;
            continue;
        }
        out.push(proposal(sentence));
    }
    (out, left_out)
}

/// A turn without its `speaker:` prefix (1 to 32 letters, digits, spaces,
/// `_` or `-`, at most three words).
fn strip_speaker(line: &str) -> &str {
    let line = line.trim();
    if let Some((who, rest)) = line.split_once(':') {
        let plausible = (1..=32).contains(&who.len())
            && who.split_whitespace().count() <= 3
            && who.chars().all(|c| c.is_alphanumeric() || c == ' ' || c == '_' || c == '-')
            && !rest.starts_with("//");
        if plausible && !rest.trim().is_empty() {
            return rest.trim();
        }
    }
    line
}

/// The sentences of a turn: cut after `.`, `!` or `?` followed by a space
/// or the end.
fn sentences(turn: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = turn.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        let end = at + c.len_utf8();
        let last = k + 1 == chars.len();
        if matches!(c, '.' | '!' | '?') && (last || chars[k + 1].1.is_whitespace()) {
            out.push(turn[start..end].trim());
            start = end;
        }
    }
    out.push(turn[start..].trim());
    out.into_iter().filter(|s| s.chars().any(char::is_alphanumeric)).collect()
}

/// The first `max` bytes of `s`, cut at a character boundary.
fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn proposal(sentence: &str) -> Proposal {
    let s = sentence.to_lowercase().replace('\u{2019}', "'");
    let starts = |cues: &[&str]| cues.iter().any(|c| s.starts_with(c));
    let holds = |cues: &[&str]| cues.iter().any(|c| s.contains(c));
    let (kind, confidence) = if s.ends_with('?') {
        (MoveKind::Question, 0.9)
    } else if starts(CONTRADICTION_STARTS) || holds(CONTRADICTION_HOLDS) {
        (MoveKind::Contradiction, 0.8)
    } else if holds(REFINEMENT_HOLDS) {
        (MoveKind::Refinement, 0.75)
    } else if starts(RESOLVE_STARTS) {
        (MoveKind::Resolve, 0.7)
    } else if holds(SYNTHESIS_HOLDS) {
        (MoveKind::Synthesis, 0.65)
    } else if holds(SUPPORT_HOLDS) {
        (MoveKind::Support, 0.7)
    } else if holds(PROPOSAL_HOLDS) {
        (MoveKind::Proposition, 0.8)
    } else if holds(WEAK_SUPPORT_HOLDS) {
        (MoveKind::Support, 0.6)
    } else {
        (MoveKind::Proposition, 0.3)
    };
    let text = clip(sentence, TEXT_BYTES_MAX).to_string();
    let target = clip(sentence, TARGET_BYTES_MAX).to_string();
    let targets = vec![target; kind.arity().0];
    Proposal { kind, text, targets, confidence }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_gives_its_kind() {
        let text = "alice: We should use usage-based pricing. Is it fair to small teams?\n\
                    bob: But enterprise procurement cannot budget usage-based costs.\n\
                    alice: So let's go seat-based for enterprise instead.\n\
                    carol: Taken together, pricing follows how value is realized.\n\
                    dave: I agree, the evidence from sales shows it.\n\
                    erin: Seat counts grow slowly\n\
                    frank: The answer is yes, with a floor.";
        let (p, left) = classify(text);
        assert_eq!(left, 0);
        let kinds: Vec<&str> = p.iter().map(|p| p.kind.name()).collect();
        assert_eq!(kinds, ["proposition", "question", "contradiction", "refinement", "synthesis", "support", "proposition", "resolve"]);
        assert_eq!(p[0].text, "We should use usage-based pricing.");
        assert_eq!(p[2].targets, vec![p[2].text.clone()]);
        assert_eq!(p[4].targets.len(), 2);
        assert_eq!(p[6].confidence, 0.3);
    }
}
