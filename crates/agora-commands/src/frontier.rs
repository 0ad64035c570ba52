//! What an answer was computed from: the store's frontier (every author's
//! tips) when it was read, attached as `computed_over` to the answers of
//! status, trace, search, orient, perspective, consensus and view-hash.
//!
//! Two answers with the same frontier hash were computed over the same
//! entries (a tip commits to its whole chain through the backlinks, and a
//! forked chain lists every branch's tip), so they are comparable; an agent
//! comparing `chains` with another node's (or with `agora authors`) sees
//! what it has not seen yet. The hash is defined in
//! `protocol-spec/answers.md`.
//!
//! The frontier is read right after the view the answer came from, under
//! the same lock as the node's live graph: a write is stored and its commit
//! notice updates the graph under that lock, so at most the one write whose
//! notice is waiting for the lock can be named by the frontier before the
//! graph reflects it.

use crate::answers::ComputedOver;
use agora_store::{AuthorSummary, Store, StoreError};
use serde_json::{Map, Value, json};

/// Most chains listed by name in an answer; beyond it only the count and
/// the hash are given (`agora authors` lists them all).
pub const CHAINS_LISTED_MAX: usize = 256;

/// Domain separation of the frontier hash.
const DOMAIN: &[u8] = b"agora/frontier/v1";

/// The frontier hash of `authors` (in any order): SHA-256 over the domain,
/// then for each author ascending by id: its 32 id bytes, its tip count
/// (u32, big-endian), and each tip ascending by (seq, id): seq (u64,
/// big-endian) and the 32 entry id bytes.
pub fn hash(authors: &[AuthorSummary]) -> [u8; 32] {
    let mut sorted: Vec<&AuthorSummary> = authors.iter().collect();
    sorted.sort_by_key(|a| a.author);
    let mut bytes = Vec::with_capacity(DOMAIN.len() + sorted.len() * 80);
    bytes.extend_from_slice(DOMAIN);
    for a in sorted {
        bytes.extend_from_slice(a.author.as_bytes());
        let mut tips: Vec<(u64, [u8; 32])> = a.tips.iter().map(|t| (t.seq, *t.id.as_bytes())).collect();
        tips.sort();
        bytes.extend_from_slice(&(tips.len() as u32).to_be_bytes());
        for (seq, id) in tips {
            bytes.extend_from_slice(&seq.to_be_bytes());
            bytes.extend_from_slice(&id);
        }
    }
    agora_core::sha256(&bytes)
}

/// `computed_over` of an answer: the frontier hash, how many chains, and
/// each chain's highest seq (with its tip count when forked), for at most
/// [`CHAINS_LISTED_MAX`] chains.
pub fn describe(authors: &[AuthorSummary]) -> ComputedOver {
    let mut chains = Map::new();
    let mut sorted: Vec<&AuthorSummary> = authors.iter().collect();
    sorted.sort_by_key(|a| a.author);
    for a in sorted.iter().take(CHAINS_LISTED_MAX) {
        let v = if a.tips.len() > 1 { json!({ "max_seq": a.max_seq, "tips": a.tips.len() }) } else { json!(a.max_seq) };
        chains.insert(a.author.to_string(), v);
    }
    ComputedOver {
        frontier_hash: hex::encode(hash(authors)),
        authors: authors.len(),
        chains,
        chains_truncated: (authors.len() > CHAINS_LISTED_MAX).then_some(true),
        exact: None,
    }
}

/// The store's frontier now, described.
pub fn of_store(store: &Store) -> Result<ComputedOver, StoreError> {
    Ok(describe(&store.authors()?))
}

/// Run `load` (a read of the whole store, such as the merge layer's input)
/// between two readings of the frontier, and again while a write lands in
/// between (at most [`STABLE_TRIES`] times): the answer's frontier is then
/// exactly the one `load` read. If writes keep landing, the last reading is
/// given with `"exact": false`.
pub fn around<T, E: From<StoreError>>(store: &Store, mut load: impl FnMut() -> Result<T, E>) -> Result<(T, ComputedOver), E> {
    let mut before = store.authors()?;
    let mut tries = 0;
    loop {
        let value = load()?;
        let after = store.authors()?;
        tries += 1;
        if hash(&before) == hash(&after) {
            return Ok((value, describe(&after)));
        }
        if tries >= STABLE_TRIES {
            return Ok((value, ComputedOver { exact: Some(false), ..describe(&after) }));
        }
        before = after;
    }
}

/// How many times [`around`] reads again while writes land.
pub const STABLE_TRIES: usize = 3;

/// Attach `computed_over` to an object answer.
pub fn attach(value: &mut Value, computed_over: &ComputedOver) {
    if let Value::Object(m) = value {
        m.insert("computed_over".to_string(), json!(computed_over));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{AgentId, EntryId, EntryRef};

    fn summary(author: u8, tips: &[(u64, u8)]) -> AuthorSummary {
        let author = AgentId([author; 32]);
        AuthorSummary {
            author,
            max_seq: tips.iter().map(|t| t.0).max().unwrap_or(0),
            tips: tips.iter().map(|&(seq, id)| EntryRef { author, seq, id: EntryId([id; 32]) }).collect(),
            fork_proofs: 0,
        }
    }

    #[test]
    fn the_hash_ignores_order_and_sees_every_tip() {
        let a = [summary(1, &[(3, 7)]), summary(2, &[(5, 8), (5, 9)])];
        let b = [summary(2, &[(5, 9), (5, 8)]), summary(1, &[(3, 7)])];
        assert_eq!(hash(&a), hash(&b));
        let fewer = [summary(1, &[(3, 7)]), summary(2, &[(5, 8)])];
        assert_ne!(hash(&a), hash(&fewer), "a branch more is another frontier");
        let other_tip = [summary(1, &[(3, 6)]), summary(2, &[(5, 8), (5, 9)])];
        assert_ne!(hash(&a), hash(&other_tip));
        assert_eq!(describe(&a).chains[&AgentId([2; 32]).to_string()]["tips"], 2);
    }

    /// The spec's vectors (protocol-spec/answers.md).
    #[test]
    fn the_hash_matches_the_spec_vectors() {
        let empty: [AuthorSummary; 0] = [];
        assert_eq!(hex::encode(hash(&empty)), "56a54452d69f193e37bfc5894961c2353918b598d2aba9b895ab2dfbc7f7dea4");
        assert_eq!(hex::encode(hash(&[summary(1, &[(1, 2)])])), "867032bb588b265026ffe295cc2089a3dc40b22eaf17238c026567e39a966bfd");
        let forked = [summary(2, &[(5, 9), (5, 8)]), summary(1, &[(3, 7)])];
        assert_eq!(hex::encode(hash(&forked)), "48465fbc137e6c7c4a3f6b5602a5a0252336ebb5ad052a42c28557fe3463f526");
    }
}
