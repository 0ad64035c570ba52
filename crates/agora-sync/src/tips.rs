//! One author's local tips, kept so that a commit costs what it changes.
//!
//! Almost every author has one tip: a vector of exactly that size then. A
//! forked author may have as many tips as branches (a fork flood: 100,000 at
//! one seq); those sit in an ordered set, so that a commit passing a few
//! tips and adding a few costs a few lookups, never a pass over the others,
//! and the highest tips (what is announced) are read from the end.

use crate::wire::Head;
use std::collections::BTreeSet;

/// Above this many tips, an author's tips are kept in a set.
const FEW_TIPS_MAX: usize = 16;

/// The tips of one author, in (seq, id) order, never empty while kept.
#[derive(Debug, Clone)]
pub(crate) enum Tips {
    /// At most [`FEW_TIPS_MAX`], sorted, exact-size.
    Few(Vec<Head>),
    /// More.
    Many(BTreeSet<Head>),
}

impl PartialEq for Tips {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Tips {}

impl Tips {
    /// From tips sorted and without repeats.
    pub(crate) fn from_sorted(mut tips: Vec<Head>) -> Self {
        if tips.len() > FEW_TIPS_MAX {
            Tips::Many(tips.into_iter().collect())
        } else {
            tips.shrink_to_fit();
            Tips::Few(tips)
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Tips::Few(v) => v.len(),
            Tips::Many(s) => s.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = &Head> + '_> {
        match self {
            Tips::Few(v) => Box::new(v.iter()),
            Tips::Many(s) => Box::new(s.iter()),
        }
    }

    /// The highest seq (0 when empty).
    pub(crate) fn max_seq(&self) -> u64 {
        match self {
            Tips::Few(v) => v.last().map_or(0, |h| h.seq),
            Tips::Many(s) => s.last().map_or(0, |h| h.seq),
        }
    }

    pub(crate) fn contains(&self, head: &Head) -> bool {
        match self {
            Tips::Few(v) => v.binary_search(head).is_ok(),
            Tips::Many(s) => s.contains(head),
        }
    }

    /// The `max` highest tips (ties by id), in (seq, id) order.
    pub(crate) fn highest(&self, max: usize) -> Vec<Head> {
        match self {
            Tips::Few(v) => v[v.len().saturating_sub(max)..].to_vec(),
            Tips::Many(s) => {
                let mut out: Vec<Head> = s.iter().rev().take(max).copied().collect();
                out.reverse();
                out
            }
        }
    }

    /// Pass `passed` and add `added`: the tips that were passed (held
    /// before, gone now). Costs a lookup per head given.
    pub(crate) fn apply(&mut self, passed: &[Head], added: &[Head]) -> Vec<Head> {
        let mut gone = Vec::new();
        match self {
            Tips::Few(v) => {
                for h in passed {
                    if let Ok(i) = v.binary_search(h) {
                        v.remove(i);
                        gone.push(*h);
                    }
                }
                for h in added {
                    if let Err(i) = v.binary_search(h) {
                        v.insert(i, *h);
                    }
                }
                if v.len() > FEW_TIPS_MAX {
                    *self = Tips::Many(std::mem::take(v).into_iter().collect());
                } else {
                    v.shrink_to_fit();
                }
            }
            Tips::Many(s) => {
                for h in passed {
                    if s.remove(h) {
                        gone.push(*h);
                    }
                }
                s.extend(added.iter().copied());
                if s.len() <= FEW_TIPS_MAX {
                    *self = Tips::Few(std::mem::take(s).into_iter().collect());
                }
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{AgentId, EntryId};

    fn head(seq: u64, n: u32) -> Head {
        let mut id = [0u8; 32];
        id[..4].copy_from_slice(&n.to_be_bytes());
        Head { author: AgentId([1; 32]), seq, id: EntryId(id) }
    }

    #[test]
    fn a_set_and_a_vector_of_the_same_tips_agree() {
        let all: Vec<Head> = (0..40).map(|n| head(2, n)).collect();
        let mut grown = Tips::from_sorted(vec![head(1, 0)]);
        assert_eq!(grown.apply(&[head(1, 0)], &all), vec![head(1, 0)]);
        assert_eq!(grown, Tips::from_sorted(all.clone()));
        assert!(matches!(grown, Tips::Many(_)));
        assert_eq!(grown.highest(3), all[37..].to_vec());
        assert_eq!(grown.max_seq(), 2);
        let passed = grown.apply(&all[..30], &[]);
        assert_eq!(passed.len(), 30);
        assert!(matches!(grown, Tips::Few(_)) && grown.len() == 10 && grown.contains(&head(2, 35)) && !grown.contains(&head(2, 3)));
    }
}
