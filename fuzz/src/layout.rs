//! Input layouts that are not one decoder's bytes, read with [`Reader`] by
//! the targets and written by the `seed` example: entries with payloads
//! ([`read_entries`]), a log of payloads ([`read_log`]) and a swarm of chains
//! ([`read_swarm`]).

use crate::fixture;
use crate::reader::Reader;
use agora_core::{EntryId, LogPosition, SignedEntry};

/// Entries with optional payloads, as a response or a pack carries them:
/// records `len: u8, signed entry (len bytes), plen: u8, payload (plen - 1
/// bytes; none when plen is 0)`, at most 16.
pub fn read_entries(data: &[u8]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut r = Reader::new(data);
    let mut out = Vec::new();
    while out.len() < 16 {
        let Some(len) = r.u8() else { break };
        let Some(entry) = r.bytes(len as usize) else { break };
        let payload = match r.u8() {
            None | Some(0) => None,
            Some(n) => Some(r.bytes(n as usize - 1).unwrap_or_default().to_vec()),
        };
        out.push((entry.to_vec(), payload));
    }
    out
}

/// The layout [`read_entries`] reads.
pub fn write_entries(entries: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (e, p) in entries {
        out.push(e.len() as u8);
        out.extend_from_slice(e);
        match p {
            None => out.push(0),
            Some(p) => {
                out.push(p.len() as u8 + 1);
                out.extend_from_slice(p);
            }
        }
    }
    out
}

/// A log of payloads for [`graph_replay`](fn@crate::graph_replay): records
/// `author: u8 (of 4), seq: u8, timestamp: u16, what: u8 (0..3: held,
/// redacted with a residue, redacted without one, missing), len: u16,
/// payload`. Record `i` has the entry id `[i + 1; 32]`, so events can name
/// each other. At most 48.
pub fn read_log(data: &[u8]) -> Vec<(EntryId, LogPosition, u8, Vec<u8>)> {
    let mut r = Reader::new(data);
    let mut out = Vec::new();
    while out.len() < 48 {
        let (Some(author), Some(seq), Some(ts), Some(what), Some(len)) = (r.u8(), r.u8(), r.u16(), r.u8(), r.u16()) else { break };
        let payload = r.bytes(len as usize).unwrap_or_default().to_vec();
        let id = EntryId([out.len() as u8 + 1; 32]);
        let pos = LogPosition { timestamp_ms: u64::from(ts), author: fixture::agent(author % 4), seq: u64::from(seq) };
        out.push((id, pos, what % 4, payload));
    }
    out
}

/// The layout [`read_log`] reads.
pub fn write_log(items: &[(u8, u8, u16, u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (author, seq, ts, what, payload) in items {
        out.extend([*author, *seq]);
        out.extend(ts.to_le_bytes());
        out.push(*what);
        out.extend((payload.len() as u16).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}

/// A swarm for [`merge_views`](fn@crate::merge_views): records `agent: u8 (of
/// 4), parent: u8, what: u8 (as in [`read_log`]), len: u16, payload`, at most
/// 24. Record `k` (from 1) is signed by its agent after that agent's latest
/// entry (`parent` 0) or its entry number `parent` (counted from 1, modulo
/// how many it has: a fork when that is not its latest), dated `T0 + k`
/// seconds. In the payload, a run of 32 bytes equal to `b` names entry `b` (1
/// ≤ b < k) and one of `0xf1..=0xf4` agent `b - 0xf1`: they are replaced by
/// the real ids.
pub fn read_swarm(data: &[u8]) -> Vec<(SignedEntry, u8, Vec<u8>)> {
    let mut r = Reader::new(data);
    let mut out: Vec<(SignedEntry, u8, Vec<u8>)> = Vec::new();
    let mut mine: [Vec<usize>; 4] = Default::default();
    while out.len() < 24 {
        let (Some(who), Some(parent), Some(what), Some(len)) = (r.u8(), r.u8(), r.u8(), r.u16()) else { break };
        let mut payload = r.bytes(len as usize).unwrap_or_default().to_vec();
        let mut i = 0;
        while i + 32 <= payload.len() {
            let b = payload[i];
            let run = payload[i..i + 32].iter().all(|x| *x == b);
            let name = match b {
                _ if !run => None,
                1..=24 if usize::from(b) <= out.len() => Some(out[usize::from(b) - 1].0.id().0),
                0xf1..=0xf4 => Some(fixture::agent(b - 0xf1).0),
                _ => None,
            };
            match name {
                Some(id) => {
                    payload[i..i + 32].copy_from_slice(&id);
                    i += 32;
                }
                None => i += 1,
            }
        }
        let who = who % 4;
        let chain = &mine[usize::from(who)];
        let prev = match (parent, chain.len()) {
            (_, 0) => None,
            (0, n) => Some(&out[chain[n - 1]].0),
            (p, n) => Some(&out[chain[(usize::from(p) - 1) % n]].0),
        };
        let ts = fixture::T0 + 1_000 * (out.len() as u64 + 1);
        let h = agora_core::entry::next_header(fixture::agent(who), prev, ts, &payload).expect("a header");
        let e = SignedEntry::sign(h, fixture::key(who));
        mine[usize::from(who)].push(out.len());
        out.push((e, what % 4, payload));
    }
    out
}

/// The layout [`read_swarm`] reads.
pub fn write_swarm(items: &[(u8, u8, u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (who, parent, what, payload) in items {
        out.extend([*who, *parent, *what]);
        out.extend((payload.len() as u16).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}
