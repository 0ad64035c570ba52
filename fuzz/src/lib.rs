//! The checks behind Agora's fuzz targets, one public function per target
//! (`fuzz_targets/<name>.rs` calls `agora_fuzz::<name>`). Each takes the
//! fuzzer's bytes as input from outside (a peer, a pack file) and asserts what
//! must hold for any bytes: no panic, and where a decoder accepts, the
//! canonical-decoding invariant (re-encoding what was decoded gives back
//! exactly the input; `agora_core::canonical::encodes_to`). Some add a
//! differential check (two code paths that must agree) or a property of the
//! format (a residue fails with the same error code as its payload).
//!
//! Input layouts that are not one decoder's bytes (lists of entries, a log,
//! a sequence of peer events) are read with [`Reader`], and the example
//! `seed` writes the checked-in corpus in those layouts.

pub mod fixture;
pub mod reader;
pub mod replicator;
pub mod store;

use agora_core::limits::{FORK_PROOF_BYTES_MAX, PAYLOAD_BYTES_MAX, SIGNED_ENTRY_BYTES_MAX};
use agora_core::verify::{check_entries, verify_link, verify_payload, verify_signature, verify_signatures};
use agora_core::{Content, DecodeError, EntryId, ForkProof, ForkProofError, Header, LogPosition, SignedEntry, sha256};
use agora_graph::event::EVENT_FRAMING;
use agora_graph::{Event, EventDecodeError, Graph, Late, LogEvent};
use agora_merge::payload::MERGE_FRAMING;
use agora_merge::{MergeDecodeError, MergeEvent};
use agora_roster::{FounderEntry, Roster, RosterError, RosterEvent};
use agora_sync::wire::{GOSSIP_BYTES_MAX, REQUEST_BYTES_MAX, RESPONSE_BYTES_MAX};
use agora_sync::{Gossip, WireEntry, WireRequest, WireResponse};
pub use reader::Reader;
use std::mem::discriminant;

/// `agora_core::SignedEntry::decode` and `Header::decode`: an accepted entry
/// re-encodes to the input, its header bytes are the header's canonical
/// encoding, its id is their hash, and the header keeps the structure rules.
pub fn signed_entry(data: &[u8]) {
    match SignedEntry::decode(data) {
        Ok(e) => {
            assert_eq!(e.encode(), data, "signed entry not canonical");
            assert!(data.len() <= SIGNED_ENTRY_BYTES_MAX);
            let h = e.header();
            assert_eq!(h.encode(), e.header_bytes());
            assert_eq!(Header::decode(e.header_bytes()).as_ref(), Ok(h));
            assert_eq!(e.id(), h.id());
            assert_eq!(e.id().0, sha256(e.header_bytes()));
            assert!(h.seq >= 1 && (h.seq == 1) == h.backlink.is_none() && h.payload_len <= PAYLOAD_BYTES_MAX);
            assert_eq!(&data[data.len() - 64..], e.signature());
        }
        Err(err) => {
            let _ = err.code();
            if data.len() > SIGNED_ENTRY_BYTES_MAX {
                assert!(matches!(err, DecodeError::TooLong { .. }), "{err:?}");
            }
        }
    }
    if let Ok(h) = Header::decode(data) {
        assert_eq!(h.encode(), data, "header not canonical");
    }
}

/// `agora_core::ForkProof::decode`: an accepted proof re-encodes to the
/// input, checks, names two entries of one author in ascending id order that
/// share a seq or a backlink, and is the proof `ForkProof::new` builds from
/// its two entries in either order.
pub fn fork_proof(data: &[u8]) {
    match ForkProof::decode(data) {
        Ok(p) => {
            assert_eq!(p.encode(), data, "fork proof not canonical");
            assert_eq!(p.check(), Ok(()));
            let (a, b) = p.entries();
            let (ha, hb) = (a.header(), b.header());
            assert!(a.id() < b.id());
            assert_eq!(ha.author, hb.author);
            assert_eq!(p.author(), ha.author);
            assert!(ha.seq == hb.seq || (ha.backlink.is_some() && ha.backlink == hb.backlink));
            assert_eq!(p.seq(), ha.seq.min(hb.seq));
            assert_eq!(ForkProof::new(b.clone(), a.clone()).as_ref(), Ok(&p));
            assert_eq!(ForkProof::new(a.clone(), b.clone()).as_ref(), Ok(&p));
            // The same proof as the merge layer takes it from a peer.
            assert_eq!(agora_merge::decode_fork_proof(data).ok().as_ref(), Some(&p));
        }
        Err(err) => {
            let _ = err.code();
            if data.len() > FORK_PROOF_BYTES_MAX {
                assert!(matches!(err, ForkProofError::TooLong(_)), "{err:?}");
            }
            assert!(agora_merge::decode_fork_proof(data).is_err());
        }
    }
}

/// `agora_core::pack`: the input as a pack file (UTF-8, lines). The first line
/// goes to `parse_header_line`, every other to `parse_entry_line`. An accepted
/// line's entry is the canonical encoding of the entry it decodes to (the hex
/// in the line is exactly `entry.encode()`), its payload matches the header,
/// and the line `entry_line` writes for it parses back to the same thing.
pub fn pack_lines(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    agora_core::pack::parse_header_line(&agora_core::pack::header_line()).expect("our own header line");
    for (i, line) in text.split('\n').enumerate() {
        if i == 0 {
            let _ = agora_core::pack::parse_header_line(line);
            continue;
        }
        let Ok((entry, payload)) = agora_core::pack::parse_entry_line(i + 1, line) else { continue };
        let value: serde_json::Value = serde_json::from_str(line).expect("an accepted line is JSON");
        let hex_entry = value["entry"].as_str().expect("an accepted line has an entry string");
        assert_eq!(hex::decode(hex_entry).ok(), Some(entry.encode()), "pack entry not canonical");
        assert_eq!(value["id"].as_str(), Some(entry.id().to_string().as_str()));
        if let Some(p) = &payload {
            assert_eq!(verify_payload(&entry, p), Ok(()));
        }
        let ours = agora_core::pack::entry_line(&entry, payload.as_deref());
        let back = agora_core::pack::parse_entry_line(i + 1, &ours).expect("our own entry line parses");
        assert_eq!(back, (entry, payload));
        assert_eq!(agora_core::pack::entry_line(&back.0, back.1.as_deref()), ours);
    }
}

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

/// `agora_core::verify::check_entries` on decoded entries ([`read_entries`]):
/// the batched verification names the same first bad entry and rule as
/// checking each payload, then each signature, one at a time in input order
/// (signatures.md: single and batched verification agree on every input);
/// `agora_sync::check_entries` (the replicator's) agrees with it; and the
/// link rule between neighbours never panics.
pub fn verify_entries(data: &[u8]) {
    let raw = read_entries(data);
    let decoded: Vec<(SignedEntry, Option<Vec<u8>>)> = raw.iter().filter_map(|(e, p)| SignedEntry::decode(e).ok().map(|e| (e, p.clone()))).collect();
    // One at a time: payloads first, then signatures, in input order.
    let expected = decoded
        .iter()
        .filter_map(|(e, p)| p.as_ref().map(|p| (e, p)))
        .map(|(e, p)| verify_payload(e, p))
        .chain(decoded.iter().map(|(e, _)| verify_signature(e)))
        .find_map(Result::err);
    let refs: Vec<&SignedEntry> = decoded.iter().map(|(e, _)| e).collect();
    let batch_signatures = verify_signatures(&refs);
    let single_signatures = refs.iter().map(|e| verify_signature(e)).find_map(Result::err);
    assert_eq!(batch_signatures.err(), single_signatures, "batched and single signature checks disagree");
    let checked = check_entries(decoded.clone());
    assert_eq!(checked.as_ref().err(), expected.as_ref(), "check_entries names another entry or rule");
    if let Ok(checked) = &checked {
        assert_eq!(checked.len(), decoded.len());
        for (c, (e, p)) in checked.iter().zip(&decoded) {
            assert_eq!(c.entry().entry(), e);
            assert_eq!(c.payload(), p.as_deref());
        }
    }
    for w in decoded.windows(2) {
        if verify_link(&w[0].0, &w[1].0).is_ok() {
            let (a, b) = (w[0].0.header(), w[1].0.header());
            assert!(a.author == b.author && b.seq == a.seq + 1 && b.backlink == Some(w[0].0.id()) && b.timestamp_ms >= a.timestamp_ms);
        }
    }
    // The replicator's check of a response's entries: the same verdict.
    let wire: Vec<WireEntry> = raw.iter().map(|(e, p)| WireEntry { entry: e.clone(), payload: p.clone() }).collect();
    let all_decode = decoded.len() == raw.len();
    match agora_sync::check_entries(wire) {
        Ok(v) => {
            assert!(all_decode && checked.is_ok());
            assert_eq!(v.len(), raw.len());
        }
        Err(agora_sync::CheckError::Entry { index, .. }) => assert!(SignedEntry::decode(&raw[index].0).is_err()),
        Err(agora_sync::CheckError::Verify(e)) => assert!(all_decode && checked.err() == Some(e)),
        Err(other) => panic!("unexpected check error {other:?}"),
    }
}

/// `agora_graph::Event::decode` (`agev`): the one-pass reader accepts exactly
/// what the serde path accepts, with the same result or error; an accepted
/// payload re-encodes to the input; the residue of an event decodes to the
/// same kind with the same references; the residue of a payload that does not
/// decode fails with the same error (events.md, "Residues").
pub fn graph_event(data: &[u8]) {
    let fast = Event::decode(data);
    let serde: Result<Event, EventDecodeError> = EVENT_FRAMING.decode::<Event>(data).map_err(EventDecodeError::from).and_then(|e| e.check_limits().map(|()| e));
    assert_eq!(fast, serde, "the one-pass reader and serde disagree");
    assert_eq!(Event::is_event_payload(data), data.starts_with(b"agev"));
    let residue = Event::residue(data);
    match &fast {
        Ok(ev) => {
            assert_eq!(ev.encode(), data, "event not canonical");
            let _ = (ev.kind_name(), ev.text(), ev.ref_list());
            let r = Event::decode(&residue).expect("the residue of an event decodes");
            assert_eq!((r.kind_name(), r.refs()), (ev.kind_name(), ev.refs()));
        }
        Err(EventDecodeError::NotAnEvent) => assert!(residue.is_empty()),
        Err(e) => {
            let r = Event::decode(&residue).expect_err("the residue of an invalid event is invalid");
            assert_eq!(discriminant(&r), discriminant(e), "residue error {r:?} for {e:?}");
            match (&r, e) {
                (EventDecodeError::UnknownKind(a), EventDecodeError::UnknownKind(b)) => assert_eq!(a, b),
                (EventDecodeError::UnknownVersion(a), EventDecodeError::UnknownVersion(b)) => assert_eq!(a, b),
                _ => {}
            }
        }
    }
}

/// A log of payloads for [`graph_replay`]: records `author: u8 (of 4), seq:
/// u8, timestamp: u16, what: u8 (0..3: held, redacted with a residue,
/// redacted without one, missing), len: u16, payload`. Record `i` has the
/// entry id `[i + 1; 32]`, so events can name each other. At most 48.
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

/// `agora_graph::Graph` fed a log of payloads from peers ([`read_log`]):
/// `replay_contents` (decoding as it goes), `replay` of the decoded events
/// in any order, and applying them one by one in log order give the same
/// snapshot; and redacting every held payload to its residue changes no
/// node's kind or status and leaves the snapshot byte for byte the same
/// (events.md: "A local redaction therefore changes no status, edge or mark").
pub fn graph_replay(data: &[u8]) {
    let log = read_log(data);
    let residues: Vec<Vec<u8>> = log.iter().map(|(_, _, _, p)| Event::residue(p)).collect();
    let contents: Vec<(EntryId, LogPosition, Content<'_>)> = log
        .iter()
        .zip(&residues)
        .map(|((id, pos, what, p), residue)| {
            let c = match what {
                0 => Content::Held(p),
                1 => Content::Redacted(Some(residue)),
                2 => Content::Redacted(None),
                _ => Content::Missing,
            };
            (*id, *pos, c)
        })
        .collect();
    let g = Graph::replay_contents(&contents);
    let snapshot = g.snapshot();
    let mut events: Vec<LogEvent> = contents.iter().filter_map(|(id, pos, c)| LogEvent::from_content(*id, *pos, *c)).collect();
    events.reverse();
    assert_eq!(Graph::replay(events.clone()).snapshot(), snapshot, "replay and replay_contents differ");
    events.sort_by_key(|e| (e.pos, e.id));
    let mut one_by_one = Graph::new();
    for e in events {
        assert!(one_by_one.apply(e), "an event in log order was refused");
    }
    assert_eq!(one_by_one.snapshot(), snapshot, "incremental application differs from replay");
    // In the order read (out of log order), into a live graph that keeps a
    // short journal: each event rewound, taken in place, or (older than the
    // journal, its place mattering) refused and the graph replayed. The
    // same graph, listed in the same order.
    let arrivals: Vec<LogEvent> = contents.iter().filter_map(|(id, pos, c)| LogEvent::from_content(*id, *pos, *c)).collect();
    let mut live = Graph::new();
    live.keep_journal(8);
    for (i, e) in arrivals.iter().enumerate() {
        match live.apply_late(e.clone()) {
            Late::Applied => {}
            Late::Refused => live = Graph::replay_journaled(arrivals[..=i].to_vec(), 8),
            Late::Spoiled => panic!("a graph that keeps a journal spoiled"),
        }
    }
    assert_eq!(live.snapshot(), snapshot, "late arrivals rewound differ from replay");
    assert!(live.nodes().map(|n| n.id).eq(g.nodes().map(|n| n.id)), "late arrivals rewound are listed out of a replay's order");
    // Every held payload redacted here, keeping its residue.
    let redacted: Vec<(EntryId, LogPosition, Content<'_>)> = contents
        .iter()
        .zip(&residues)
        .map(|((id, pos, c), residue)| match c {
            Content::Held(_) => (*id, *pos, Content::Redacted(Some(residue.as_slice()))),
            other => (*id, *pos, *other),
        })
        .collect();
    let r = Graph::replay_contents(&redacted);
    for n in r.nodes() {
        let original = g.node(&n.id).expect("the same nodes");
        assert_eq!((n.id, n.kind(), n.status()), (original.id, original.kind(), original.status()), "redaction changed a node");
    }
    assert_eq!(r.len(), g.len());
    assert_eq!(r.snapshot(), snapshot, "redaction changed the snapshot");
}

/// `agora_merge::MergeEvent::decode` (`agmg`): an accepted payload re-encodes
/// to the input and keeps the text limits; a dispute's residue keeps its
/// target and whether it had a counter-claim, other kinds' residues are the
/// payload itself; the residue of a payload that does not decode fails with
/// the same error code (merge.md).
pub fn merge_event(data: &[u8]) {
    let decoded = MergeEvent::decode(data);
    assert_eq!(MergeEvent::is_merge_payload(data), data.starts_with(b"agmg"));
    let reference: Result<MergeEvent, MergeDecodeError> =
        MERGE_FRAMING.decode::<MergeEvent>(data).map_err(MergeDecodeError::from).and_then(|e| e.check_limits().map(|()| e));
    assert_eq!(decoded, reference);
    let residue = MergeEvent::residue(data);
    match &decoded {
        Ok(ev) => {
            assert_eq!(ev.encode(), data, "merge event not canonical");
            let _ = ev.kind_name();
            let r = MergeEvent::decode(&residue).expect("the residue of a merge event decodes");
            match (ev, &r) {
                (MergeEvent::Dispute { target, counter_claim, .. }, MergeEvent::Dispute { target: t, reason, counter_claim: c }) => {
                    assert_eq!((target, counter_claim.is_some()), (t, c.is_some()));
                    assert!(reason.is_empty() && c.as_ref().is_none_or(String::is_empty));
                }
                (MergeEvent::Dispute { .. }, _) => panic!("a dispute's residue is {r:?}"),
                _ => assert_eq!(&r, ev),
            }
        }
        Err(MergeDecodeError::NotMerge) => assert!(residue.is_empty()),
        Err(e) => {
            let r = MergeEvent::decode(&residue).expect_err("the residue of an invalid merge event is invalid");
            assert_eq!(r.code(), e.code(), "residue error {r:?} for {e:?}");
        }
    }
}

/// `agora_roster::RosterEvent::decode` (`agrs`): an accepted payload
/// re-encodes to the input and keeps the note limit; its residue is the event
/// without its text; the residue of a payload that does not decode fails with
/// the same error (roster.md); `check_local` never panics.
pub fn roster_event(data: &[u8]) {
    let decoded = RosterEvent::decode(data);
    assert_eq!(RosterEvent::is_roster_payload(data), data.starts_with(b"agrs"));
    let residue = RosterEvent::residue(data);
    match &decoded {
        Ok(ev) => {
            assert_eq!(ev.encode(), data, "roster event not canonical");
            assert!(ev.note().len() <= agora_roster::NOTE_BYTES_MAX);
            let founder = fixture::agent(0);
            let local = ev.check_local(&founder);
            let removes_founder = matches!(ev, RosterEvent::Remove { agent, .. } | RosterEvent::RemoveAfter { agent, .. } | RosterEvent::RemoveAt { agent, .. } if *agent == founder);
            assert_eq!(local.is_err(), removes_founder);
            assert_eq!(RosterEvent::decode(&residue).as_ref(), Ok(&ev.without_text()));
        }
        Err(RosterError::NotRoster) => assert!(residue.is_empty()),
        Err(e) => {
            let r = RosterEvent::decode(&residue).expect_err("the residue of an invalid roster event is invalid");
            assert_eq!(discriminant(&r), discriminant(e), "residue error {r:?} for {e:?}");
        }
    }
}

/// `agora_roster::Roster::derive` over a founder chain of payloads from
/// peers (the [`read_log`] layout; seq and payload used, the author ignored):
/// the roster does not depend on the order entries are given in; redacting
/// every held payload to its residue changes no membership, removal, cut-off,
/// freeze or pending seq, and skips the same entries; the founder is always a
/// member and admission agrees with the members and cut-offs.
pub fn roster_derive(data: &[u8]) {
    let founder = fixture::agent(0);
    let log = read_log(data);
    let residues: Vec<Vec<u8>> = log.iter().map(|(_, _, _, p)| RosterEvent::residue(p)).collect();
    let entries: Vec<FounderEntry<'_>> = log
        .iter()
        .zip(&residues)
        .map(|((id, pos, what, p), residue)| FounderEntry {
            seq: pos.seq,
            id: *id,
            content: match what {
                0 => Content::Held(p),
                1 => Content::Redacted(Some(residue)),
                2 => Content::Redacted(None),
                _ => Content::Missing,
            },
        })
        .collect();
    let roster = Roster::derive(founder, entries.iter().copied());
    assert_eq!(Roster::derive(founder, entries.iter().rev().copied()), roster, "the roster depends on the order");
    assert!(roster.admits(&founder));
    let admission = roster.admission();
    for (agent, cut) in &admission {
        assert_eq!(cut.is_none(), roster.members.contains_key(agent));
        let any = agora_core::EntryId([0; 32]);
        if let Some(last) = cut {
            if roster.pinned.contains_key(agent) {
                // A pinned history not resolved against a store: nothing counts yet.
                assert!(!roster.admits_entry(agent, *last, &any));
            } else {
                assert!(roster.admits_entry(agent, *last, &any) && !roster.admits_entry(agent, last.saturating_add(1), &any) || *last == u64::MAX);
            }
        }
    }
    let redacted: Vec<FounderEntry<'_>> = entries
        .iter()
        .zip(&residues)
        .map(|(e, residue)| match e.content {
            Content::Held(_) => FounderEntry { content: Content::Redacted(Some(residue)), ..*e },
            _ => *e,
        })
        .collect();
    let r = Roster::derive(founder, redacted);
    assert_eq!(
        (&r.members, &r.removed, &r.cut_off, &r.pinned, r.pending_at_seq, r.frozen_at_fork_seq),
        (&roster.members, &roster.removed, &roster.cut_off, &roster.pinned, roster.pending_at_seq, roster.frozen_at_fork_seq),
        "redaction changed the roster"
    );
    let skipped = |r: &Roster| r.skipped.iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(skipped(&r), skipped(&roster), "redaction changed what is skipped");
}

/// A swarm for [`merge_views`]: records `agent: u8 (of 4), parent: u8, what:
/// u8 (as in [`read_log`]), len: u16, payload`, at most 24. Record `k`
/// (from 1) is signed by its agent after that agent's latest entry (`parent`
/// 0) or its entry number `parent` (counted from 1, modulo how many it has:
/// a fork when that is not its latest), dated `T0 + k` seconds. In the
/// payload, a run of 32 bytes equal to `b` names entry `b` (1 ≤ b < k) and
/// one of `0xf1..=0xf4` agent `b - 0xf1`: they are replaced by the real ids.
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

/// The residue of any payload, asked of the format that owns it (as
/// `agora_view::residue` does).
pub fn residue(payload: &[u8]) -> Vec<u8> {
    if Event::is_event_payload(payload) {
        Event::residue(payload)
    } else if MergeEvent::is_merge_payload(payload) {
        MergeEvent::residue(payload)
    } else if RosterEvent::is_roster_payload(payload) {
        RosterEvent::residue(payload)
    } else {
        Vec::new()
    }
}

/// `agora_merge::Merge` over a swarm whose payloads come from peers
/// ([`read_swarm`]: chains with forks, merge and reasoning events naming
/// each other, payloads held, redacted or missing). A peer's event that breaks
/// a rule is reported, never a panic; the view is a function of the set of
/// entries (another order, or every entry given again with its payload
/// missing, gives the same view hash and statuses); redacting every held
/// payload to its residue changes no view hash (merge.md, "Chains as the
/// views see them"); `compute_with_view` agrees with `compute` then
/// `merged_view`; the local-write check and the views never panic.
pub fn merge_views(data: &[u8]) {
    use agora_core::Payload;
    use agora_merge::{Merge, MergeEntry};
    let swarm = read_swarm(data);
    let entry = |e: &SignedEntry, what: u8, p: &[u8]| {
        let content = match what {
            0 => Payload::Held(p.to_vec()),
            1 => Payload::Redacted(Some(residue(p))),
            2 => Payload::Redacted(None),
            _ => Payload::Missing,
        };
        MergeEntry::with_content(e.clone(), content).expect("a payload signed with its entry")
    };
    let entries: Vec<MergeEntry> = swarm.iter().map(|(e, what, p)| entry(e, *what, p)).collect();
    let m = Merge::compute(&entries, &[]).expect("within the limits");
    let hash = m.view_hash();
    let statuses = |m: &Merge<'_>| m.records().iter().map(|r| (r.entry, r.status.clone())).collect::<Vec<_>>();
    let expected = statuses(&m);
    let reversed: Vec<MergeEntry> = entries.iter().rev().cloned().collect();
    let again = Merge::compute(&reversed, &[]).expect("within the limits");
    assert_eq!((again.view_hash(), statuses(&again)), (hash, expected.clone()), "the view depends on the order");
    let doubled: Vec<MergeEntry> = entries.iter().cloned().chain(swarm.iter().map(|(e, _, p)| entry(e, 3, p))).collect();
    let again = Merge::compute(&doubled, &[]).expect("within the limits");
    assert_eq!((again.view_hash(), statuses(&again)), (hash, expected.clone()), "an entry given again without its payload changed the view");
    let redacted: Vec<MergeEntry> = swarm.iter().map(|(e, what, p)| entry(e, if *what == 0 { 1 } else { *what }, p)).collect();
    let again = Merge::compute(&redacted, &[]).expect("within the limits");
    assert_eq!(again.view_hash(), hash, "redaction changed the view hash");
    let (with_view, view) = Merge::compute_with_view(&entries, &[]).expect("within the limits");
    assert_eq!(with_view.view_hash(), hash);
    let plain = m.merged_view();
    assert_eq!((view.view_hash, view.graph_digest), (plain.view_hash, plain.graph_digest), "compute_with_view differs");
    let agents: Vec<agora_core::AgentId> = (0..4).map(fixture::agent).collect();
    for a in &agents {
        let _ = m.perspective(a);
        for (_, _, p) in &swarm {
            if let Ok(ev) = MergeEvent::decode(p) {
                let _ = m.check(a, &ev);
            }
        }
    }
    let _ = (m.disagreements(None), m.consensus(&agents, 2), m.open_disputes());
}

/// `agora_sync::wire`: the input as a request, a response and a gossip
/// message (the three families a peer sends, `protocol-spec/replication.md`).
/// Each accepted message re-encodes to the input and is within its size
/// limit; a request is the one its replicator message travels as; a
/// response's entries go through the replicator's check without a panic;
/// gossip's entries and fork proofs go through their decoders.
pub fn sync_wire(data: &[u8]) {
    if let Ok(r) = WireRequest::decode(data) {
        assert_eq!(r.encode(), data, "request not canonical");
        assert!(data.len() <= REQUEST_BYTES_MAX);
        let back = WireRequest::from_message(r.workspace(), r.clone().into_message());
        assert_eq!(back.as_ref().ok(), Some(&r));
    }
    if let Ok(r) = WireResponse::decode(data) {
        assert_eq!(r.encode(), data, "response not canonical");
        assert!(data.len() <= RESPONSE_BYTES_MAX);
        if let WireResponse::Entries { entries, .. } = r {
            let _ = entries.iter().map(WireEntry::wire_len).sum::<usize>();
            if let Ok(checked) = agora_sync::check_entries(entries.clone()) {
                for (c, w) in checked.iter().zip(&entries) {
                    assert_eq!(c.encode(), w.entry);
                    assert_eq!(c.payload(), w.payload.as_deref());
                }
            }
        }
    }
    if let Ok(g) = Gossip::decode(data) {
        assert_eq!(g.encode(), data, "gossip not canonical");
        assert!(data.len() <= GOSSIP_BYTES_MAX);
        assert_eq!(agora_sync::wire::gossip_message_id(data), sha256(data));
        match &g {
            Gossip::Entry(w) => {
                if let Ok(e) = SignedEntry::decode(&w.entry) {
                    let again = Gossip::for_entry(&e, w.payload.as_deref());
                    let inline = w.payload.as_ref().is_some_and(|p| p.len() <= agora_sync::wire::GOSSIP_INLINE_PAYLOAD_MAX);
                    assert_eq!(again == g, inline);
                }
            }
            Gossip::Announce(bytes) => signed_entry(bytes),
            Gossip::ForkProof(bytes) => fork_proof(bytes),
        }
    }
}

/// `agora_sync::Replicator` fed a peer's input: see [`replicator::run`].
pub fn replicator(data: &[u8]) {
    replicator::run(data);
}

/// The control channel (`agora-command-line`'s wire): a `POST /v1/command`
/// body splits into a request line and the command's standard input; one
/// that decodes re-encodes to the same request and input, and its argv is
/// parsed by the CLI's own grammar (accepted or refused with clap's error,
/// never a panic: clap's debug checks of the grammar run here too). The
/// first five bytes, read as an output frame's head, give a known kind and
/// a length within the limit, or are refused.
pub fn control_request(data: &[u8]) {
    use agora_command_line::wire;
    if let Some(head) = data.get(..5) {
        let head: [u8; 5] = head.try_into().expect("five bytes");
        if let Ok((kind, len)) = wire::frame_head(head) {
            assert!(matches!(kind, wire::FRAME_STDOUT | wire::FRAME_STDERR | wire::FRAME_EXIT));
            assert!(len <= wire::FRAME_BYTES_MAX);
            let again = wire::frame(kind, &data[5..]);
            assert_eq!(wire::frame_head(again[..5].try_into().expect("five bytes")), Ok((kind, data.len() - 5)));
        }
    }
    if let Ok((request, stdin)) = wire::decode_request(data) {
        let body = wire::encode_request(&request, stdin);
        let (back, input) = wire::decode_request(&body).expect("a re-encoded request decodes");
        assert_eq!(back, request);
        assert_eq!(input, stdin);
        let _ = wire::parse_args(&request.argv);
    }
}
