//! Roster test vectors in `protocol-spec/vectors/roster.json`
//! (`protocol-spec/roster.md`).
//!
//! 1. `roster_vectors_are_current`: regenerates every vector from fixed seeds
//!    and requires the committed file to match byte for byte. After a
//!    deliberate format change, rewrite it with
//!    `AGORA_BLESS_VECTORS=1 cargo test --release -p agora-roster --test vectors`
//!    (and update protocol-spec/roster.md in the same commit).
//! 2. `roster_vectors_check`: reads the committed file as an outside
//!    implementation would: payloads decode to the stated events (and are
//!    rebuilt byte for byte from the spec's layout), invalid payloads give the
//!    stated error, and each founder chain derives the stated roster.
//! 3. Property tests: round trips, arbitrary bytes, and derivation that does
//!    not depend on the order entries are handed over.

use agora_core::entry::next_header;
use agora_core::verify::verify_signature;
use agora_core::{AgentId, AgentKey, EntryId, SignedEntry};
use agora_roster::{AdminEntry, AdminHold, FounderEntry, NOTE_BYTES_MAX, Roster, RosterError, RosterEvent, VoteOutcome};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::PathBuf;

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protocol-spec/vectors/roster.json")
}

const T0: u64 = 1_700_000_000_000;

fn seed(name: &str) -> u8 {
    match name {
        "alice" => 0x11,
        "bob" => 0x22,
        "carol" => 0x33,
        "dave" => 0x44,
        "erin" => 0x55,
        other => panic!("no key {other}"),
    }
}

fn key(name: &str) -> AgentKey {
    AgentKey::from_seed([seed(name); 32])
}

fn agent(name: &str) -> AgentId {
    key(name).agent_id()
}

const NAMES: [&str; 5] = ["alice", "bob", "carol", "dave", "erin"];

fn name_of(a: &AgentId) -> String {
    NAMES.iter().find(|n| agent(n) == *a).map_or_else(|| a.to_string(), |n| (*n).to_string())
}

fn admit(who: &str, note: &str) -> Vec<u8> {
    RosterEvent::Admit { agent: agent(who), note: note.into() }.encode()
}

fn recover(who: &str, last_seq: u64, head: u8, key_of: &str, note: &str) -> RosterEvent {
    RosterEvent::Recover { agent: agent(who), last_seq, head: EntryId([head; 32]), key: agent(key_of), note: note.into() }
}

/// The founder names `who` admins with threshold `k` (sorted by id, as the
/// event requires).
fn admins(who: &[&str], k: u64, note: &str) -> RosterEvent {
    let mut admins: Vec<AgentId> = who.iter().map(|n| agent(n)).collect();
    admins.sort();
    RosterEvent::Admins { admins, threshold: k, note: note.into() }
}

fn remove_at(who: &str, last_seq: u64, head: u8, reason: &str) -> Vec<u8> {
    RosterEvent::RemoveAt { agent: agent(who), last_seq, head: EntryId([head; 32]), reason: reason.into() }.encode()
}

fn remove(who: &str, reason: &str) -> Vec<u8> {
    RosterEvent::Remove { agent: agent(who), reason: reason.into() }.encode()
}

/// Replace `replace` bytes at `at` by `insert`.
fn with(bytes: &[u8], at: usize, replace: usize, insert: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.splice(at..at + replace, insert.iter().copied());
    v
}

// ---------------------------------------------------------------------------
// The layout, written from protocol-spec/roster.md alone.

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn spec_encode(e: &RosterEvent) -> Vec<u8> {
    let mut out = b"agrs\x01".to_vec();
    if let RosterEvent::Admins { admins, threshold, note } = e {
        varint(&mut out, 5);
        varint(&mut out, admins.len() as u64);
        for a in admins {
            out.extend_from_slice(a.as_bytes());
        }
        varint(&mut out, *threshold);
        varint(&mut out, note.len() as u64);
        out.extend_from_slice(note.as_bytes());
        return out;
    }
    let (kind, agent, last_seq, head, key, text) = match e {
        RosterEvent::Admit { agent, note } => (0, agent, None, None, None, note),
        RosterEvent::Remove { agent, reason } => (1, agent, None, None, None, reason),
        RosterEvent::RemoveAfter { agent, last_seq, reason } => (2, agent, Some(*last_seq), None, None, reason),
        RosterEvent::RemoveAt { agent, last_seq, head, reason } => (3, agent, Some(*last_seq), Some(head), None, reason),
        RosterEvent::Recover { agent, last_seq, head, key, note } => (4, agent, Some(*last_seq), Some(head), Some(key), note),
        RosterEvent::Admins { .. } => unreachable!("written above"),
    };
    varint(&mut out, kind);
    out.extend_from_slice(agent.as_bytes());
    if let Some(s) = last_seq {
        varint(&mut out, s);
    }
    if let Some(h) = head {
        out.extend_from_slice(h.as_bytes());
    }
    if let Some(k) = key {
        out.extend_from_slice(k.as_bytes());
    }
    varint(&mut out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
    out
}

fn event_json(e: &RosterEvent) -> Value {
    match e {
        RosterEvent::Admit { agent, note } => json!({ "kind": "admit", "code": 0, "agent": agent.to_string(), "note": note }),
        RosterEvent::Remove { agent, reason } => json!({ "kind": "remove", "code": 1, "agent": agent.to_string(), "reason": reason }),
        RosterEvent::RemoveAfter { agent, last_seq, reason } => {
            json!({ "kind": "remove_after", "code": 2, "agent": agent.to_string(), "last_seq": last_seq, "reason": reason })
        }
        RosterEvent::RemoveAt { agent, last_seq, head, reason } => {
            json!({ "kind": "remove_at", "code": 3, "agent": agent.to_string(), "last_seq": last_seq, "head": head.to_string(), "reason": reason })
        }
        RosterEvent::Recover { agent, last_seq, head, key, note } => json!({
            "kind": "recover", "code": 4, "agent": agent.to_string(), "last_seq": last_seq, "head": head.to_string(), "key": key.to_string(), "note": note,
        }),
        RosterEvent::Admins { admins, threshold, note } => json!({
            "kind": "admins", "code": 5, "admins": admins.iter().map(|a| a.to_string()).collect::<Vec<_>>(), "threshold": threshold, "note": note,
        }),
    }
}

fn code(e: &RosterError) -> &'static str {
    match e {
        RosterError::NotRoster => "not_roster",
        RosterError::Version(_) => "unsupported_version",
        RosterError::Malformed(_) => "malformed",
        RosterError::NoteTooLong(_) => "note_too_long",
        RosterError::RemoveFounder => "remove_founder",
        RosterError::RecoverFounder => "recover_founder",
        RosterError::RecoverKeyIsAuthor => "recover_key_is_author",
        RosterError::AdminsTooMany(_) => "admins_too_many",
        RosterError::AdminsOrder => "admins_order",
        RosterError::AdminsFounder => "admins_founder",
        RosterError::AdminsThreshold { .. } => "admins_threshold",
        RosterError::AdminNotMember(_) => "admin_not_member",
    }
}

// ---------------------------------------------------------------------------
// Vectors.

fn valid_events() -> Vec<(&'static str, RosterEvent)> {
    vec![
        ("admit", RosterEvent::Admit { agent: agent("bob"), note: "bob, pricing analyst".into() }),
        ("admit_empty_note", RosterEvent::Admit { agent: agent("carol"), note: String::new() }),
        ("remove", RosterEvent::Remove { agent: agent("bob"), reason: "left the team".into() }),
        ("remove_after", RosterEvent::RemoveAfter { agent: agent("bob"), last_seq: 300, reason: "left the team".into() }),
        ("remove_after_nothing_kept", RosterEvent::RemoveAfter { agent: agent("carol"), last_seq: 0, reason: String::new() }),
        ("remove_at", RosterEvent::RemoveAt { agent: agent("bob"), last_seq: 300, head: EntryId([0xab; 32]), reason: "left the team".into() }),
        ("admit_note_at_limit", RosterEvent::Admit { agent: agent("dave"), note: "n".repeat(NOTE_BYTES_MAX) }),
        ("admit_utf8_note", RosterEvent::Admit { agent: agent("erin"), note: "équipe".into() }),
        ("recover", recover("bob", 300, 0xab, "erin", "both keys lost with the laptop")),
        ("admins", admins(&["bob", "carol", "dave"], 2, "on-call admins")),
        ("admins_none", RosterEvent::Admins { admins: Vec::new(), threshold: 0, note: String::new() }),
        // Decodes; refused when written (check_local) and skipped when derived.
        ("remove_founder", RosterEvent::Remove { agent: agent("alice"), reason: String::new() }),
        ("recover_founder", recover("alice", 3, 0xab, "erin", "")),
        ("recover_key_is_author", recover("bob", 3, 0xab, "bob", "")),
        ("admins_order", RosterEvent::Admins { admins: vec![agent("bob"), agent("bob")], threshold: 1, note: String::new() }),
        ("admins_founder", admins(&["alice", "bob"], 1, "")),
        ("admins_threshold", admins(&["bob", "carol"], 3, "")),
    ]
}

fn invalid_payloads() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let a = admit("bob", "x");
    // Offsets in `a`: magic 0..4, version 4, kind 5, agent 6..38, note length 38, note 39.
    assert_eq!(a.len(), 40);
    let long = admit("bob", &"n".repeat(NOTE_BYTES_MAX + 1));
    vec![
        ("empty", Vec::new(), "not_roster"),
        ("event_payload", b"agev\x01\x05\x01x".to_vec(), "not_roster"),
        ("magic_only", b"agrs".to_vec(), "malformed"),
        ("version_only", b"agrs\x01".to_vec(), "malformed"),
        ("version_0", with(&a, 4, 1, &[0]), "unsupported_version"),
        ("version_2", with(&a, 4, 1, &[2]), "unsupported_version"),
        ("unknown_kind", with(&a, 5, 1, &[6]), "malformed"),
        ("admins_truncated", admins(&["bob", "carol"], 2, "").encode()[..50].to_vec(), "malformed"),
        ("recover_truncated_key", recover("bob", 3, 0xab, "erin", "").encode()[..80].to_vec(), "malformed"),
        ("trailing_byte", with(&a, a.len(), 0, &[0]), "malformed"),
        ("overlong_kind", with(&a, 5, 1, &[0x80, 0x00]), "malformed"),
        ("overlong_note_length", with(&a, 38, 1, &[0x81, 0x00]), "malformed"),
        ("truncated_agent", a[..20].to_vec(), "malformed"),
        ("note_length_beyond_input", with(&a, 38, 1, &[5]), "malformed"),
        ("note_not_utf8", with(&a, 39, 1, &[0xff]), "malformed"),
        ("note_over_limit", long, "note_too_long"),
    ]
}

/// One founder chain: (payload or None when not held) per seq, optionally
/// with a rival branch from some seq, and the chains of other agents (an
/// admin's votes count; anyone else's roster events are ignored).
struct Scenario {
    name: &'static str,
    note: &'static str,
    main: Vec<Option<Vec<u8>>>,
    /// (seq of the first rival entry, payloads of the rival branch)
    rival: Option<(u64, Vec<Option<Vec<u8>>>)>,
    others: Vec<Other>,
}

/// Another agent's chain, from seq 1, as a [`Scenario`]'s founder chain.
struct Other {
    who: &'static str,
    main: Vec<Option<Vec<u8>>>,
    rival: Option<(u64, Vec<Option<Vec<u8>>>)>,
}

/// One entry of `who` at seq 1.
fn other(who: &'static str, payload: Vec<u8>) -> Other {
    Other { who, main: vec![Some(payload)], rival: None }
}

/// The founder admits bob, carol, dave and erin and names bob, carol and
/// dave admins with threshold 2: the start of the quorum scenarios.
fn quorum_founder() -> Vec<Option<Vec<u8>>> {
    let mut out: Vec<Option<Vec<u8>>> = ["bob", "carol", "dave", "erin"].iter().map(|n| Some(admit(n, ""))).collect();
    out.push(Some(admins(&["bob", "carol", "dave"], 2, "on-call").encode()));
    out
}

fn scenarios() -> Vec<Scenario> {
    let some = |p: Vec<u8>| Some(p);
    vec![
        Scenario { name: "nothing_written", note: "the founder alone is a member", main: vec![], rival: None, others: vec![] },
        Scenario {
            name: "admit_and_remove_in_seq_order",
            note: "non-roster payloads are ignored; roster events by other agents have no effect",
            main: vec![
                some(admit("bob", "")),
                some(b"agev\x01\x00\x05hello".to_vec()),
                some(b"a raw note".to_vec()),
                some(admit("carol", "")),
                some(remove("bob", "left")),
            ],
            rival: None,
            others: vec![other("bob", admit("dave", "bob cannot admit anyone")), other("carol", remove("carol", "nor remove"))],
        },
        Scenario {
            name: "readmitted",
            note: "a later admit undoes a remove",
            main: vec![some(admit("bob", "")), some(remove("bob", "")), some(admit("bob", "back"))],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "admitted_twice",
            note: "the latest admitting entry is recorded",
            main: vec![some(admit("bob", "")), some(admit("bob", "again"))],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "remove_non_member",
            note: "removing an agent that is not a member has no effect and is not reported",
            main: vec![some(remove("dave", ""))],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "founder_cannot_be_removed",
            note: "a remove naming the founder is skipped",
            main: vec![some(remove("alice", "")), some(admit("bob", ""))],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "admit_founder",
            note: "admitting the founder records the admitting entry (the founder is a member regardless)",
            main: vec![some(admit("alice", ""))],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "unreadable_roster_entries_are_skipped",
            note: "payloads not held (whatever they were), unknown versions, malformed and oversized events are reported and have no effect",
            main: vec![
                some(with(&admit("bob", ""), 4, 1, &[2])),
                some(with(&admit("bob", ""), 5, 1, &[7])),
                some(admit("bob", &"n".repeat(NOTE_BYTES_MAX + 1))),
                some(admit("carol", "")),
            ],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "missing_payload_holds_the_roster",
            note: "a founder entry whose payload never arrived: only the entries before it count, until it arrives",
            main: vec![some(admit("bob", "")), None, some(admit("carol", ""))],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "removal_with_a_cut_off",
            note: "bob's entries up to seq 3 stay admitted, later ones are admitted nowhere; carol is readmitted whole",
            main: vec![
                some(admit("bob", "")),
                some(admit("carol", "")),
                some(RosterEvent::RemoveAfter { agent: agent("bob"), last_seq: 3, reason: "left".into() }.encode()),
                some(RosterEvent::RemoveAfter { agent: agent("carol"), last_seq: 0, reason: String::new() }.encode()),
                some(admit("carol", "back")),
            ],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "removal_pinning_a_head",
            note: "bob's history ending at the named head stays admitted (the pin is resolved against a store holding it); his entries beyond seq 2 are admitted nowhere",
            main: vec![
                some(admit("bob", "")),
                some(RosterEvent::RemoveAt { agent: agent("bob"), last_seq: 2, head: EntryId([0xcd; 32]), reason: "left".into() }.encode()),
            ],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "recoveries",
            note: "bob's keys are lost twice: each recovery readmits him (lifting the removal's cut-off and pin) and every binding is kept in order; a recovery of the founder, or granting bob's own id, is skipped",
            main: vec![
                some(admit("bob", "")),
                some(RosterEvent::RemoveAt { agent: agent("bob"), last_seq: 2, head: EntryId([0xcd; 32]), reason: "keys lost".into() }.encode()),
                some(recover("bob", 2, 0xcd, "erin", "new laptop").encode()),
                some(recover("alice", 1, 0xcd, "erin", "").encode()),
                some(recover("bob", 2, 0xcd, "bob", "").encode()),
                some(recover("bob", 9, 0xef, "dave", "lost again").encode()),
            ],
            rival: None,
            others: vec![other("carol", recover("bob", 2, 0xcd, "carol", "carol cannot recover anyone").encode())],
        },
        Scenario {
            name: "admins_named",
            note: "an admin set naming a non-member, the founder, or a threshold over its size is skipped; the last one applied is in force",
            main: vec![
                some(admit("bob", "")),
                some(admit("carol", "")),
                some(admins(&["bob", "erin"], 1, "erin is no member").encode()),
                some(admins(&["alice", "bob"], 1, "").encode()),
                some(admins(&["bob", "carol"], 3, "").encode()),
                some(admins(&["bob", "carol"], 2, "").encode()),
            ],
            rival: None,
            others: vec![],
        },
        Scenario {
            name: "quorum_reached",
            note: "bob and carol, two of the three admins, write the same recovery of erin (their notes differ): it binds, as if the founder had written it after its last entry",
            main: quorum_founder(),
            rival: None,
            others: vec![
                other("bob", recover("erin", 2, 0xcd, "dave", "erin lost both keys").encode()),
                other("carol", recover("erin", 2, 0xcd, "dave", "").encode()),
            ],
        },
        Scenario {
            name: "quorum_not_reached",
            note: "bob alone writes the recovery: no effect, the vote is listed short",
            main: quorum_founder(),
            rival: None,
            others: vec![other("bob", recover("erin", 2, 0xcd, "dave", "").encode())],
        },
        Scenario {
            name: "vote_of_a_non_admin",
            note: "bob and erin (a member, not an admin) write the same removal of carol: erin's counts for nothing, no quorum",
            main: quorum_founder(),
            rival: None,
            others: vec![other("bob", remove_at("carol", 4, 0xcd, "")), other("erin", remove_at("carol", 4, 0xcd, ""))],
        },
        Scenario {
            name: "duplicate_vote_by_one_admin",
            note: "bob writes the same removal twice: one voter, no quorum",
            main: quorum_founder(),
            rival: None,
            others: vec![Other { who: "bob", main: vec![some(remove_at("erin", 4, 0xcd, "")), some(remove_at("erin", 4, 0xcd, "again"))], rival: None }],
        },
        Scenario {
            name: "forked_admin_chain",
            note: "carol's chain forks at seq 2, where her vote sits: her votes are frozen before the fork, bob's alone is short",
            main: quorum_founder(),
            rival: None,
            others: vec![
                other("bob", recover("erin", 2, 0xcd, "dave", "").encode()),
                Other {
                    who: "carol",
                    main: vec![some(b"a note".to_vec()), some(recover("erin", 2, 0xcd, "dave", "").encode())],
                    rival: Some((2, vec![some(b"another note".to_vec())])),
                },
            ],
        },
        Scenario {
            name: "admin_payload_missing",
            note: "the payload of carol's entry at seq 1 has not arrived: her votes wait at that seq, so her vote at seq 2 does not count yet and bob's alone is short",
            main: quorum_founder(),
            rival: None,
            others: vec![
                other("bob", remove_at("erin", 4, 0xcd, "")),
                Other { who: "carol", main: vec![None, some(remove_at("erin", 4, 0xcd, ""))], rival: None },
            ],
        },
        Scenario {
            name: "removed_admin_votes_no_more",
            note: "the founder removes dave after naming him: he is an admin no more, and his vote with bob's is short",
            main: {
                let mut m = quorum_founder();
                m.push(some(RosterEvent::RemoveAfter { agent: agent("dave"), last_seq: 0, reason: String::new() }.encode()));
                m
            },
            rival: None,
            others: vec![other("bob", recover("erin", 2, 0xcd, "carol", "").encode()), other("dave", recover("erin", 2, 0xcd, "carol", "").encode())],
        },
        Scenario {
            name: "quorum_after_the_founder",
            note: "bob and dave remove erin, pinning her head; the founder's admission of erin in its chain does not undo it (quorum acts apply after the founder's events); a quorum's admission has no effect",
            main: {
                let mut m = quorum_founder();
                m.push(some(admit("erin", "back")));
                m
            },
            rival: None,
            others: vec![
                Other { who: "bob", main: vec![some(remove_at("erin", 4, 0xcd, "stolen key")), some(admit("erin", ""))], rival: None },
                Other { who: "dave", main: vec![some(admit("erin", "")), some(remove_at("erin", 4, 0xcd, ""))], rival: None },
            ],
        },
        Scenario {
            name: "fork_freezes_the_roster",
            note: "two entries at seq 2: only seq 1 counts, on either branch",
            main: vec![some(admit("bob", "")), some(admit("carol", "")), some(admit("erin", ""))],
            rival: Some((2, vec![some(admit("dave", "")), some(remove("bob", ""))])),
            others: vec![],
        },
    ]
}

type Payloads = Vec<Option<Vec<u8>>>;

/// One agent's signed chain, with a rival branch from some seq.
fn sign_chain(
    who: &'static str,
    main_payloads: &Payloads,
    rival: &Option<(u64, Payloads)>,
    ts: &mut u64,
    out: &mut Vec<(&'static str, SignedEntry, Option<Vec<u8>>)>,
) {
    let k = key(who);
    let mut main: Vec<SignedEntry> = Vec::new();
    for p in main_payloads {
        // A payload not held was still bound by the header when it was written.
        let bytes = p.clone().unwrap_or_else(|| format!("redacted {ts}").into_bytes());
        let e = SignedEntry::sign(next_header(k.agent_id(), main.last(), *ts, &bytes).unwrap(), &k);
        *ts += 1000;
        out.push((who, e.clone(), p.clone()));
        main.push(e);
    }
    if let Some((from, rival)) = rival {
        let mut prev = main.get(*from as usize - 2).cloned();
        for p in rival {
            let bytes = p.clone().unwrap_or_default();
            let e = SignedEntry::sign(next_header(k.agent_id(), prev.as_ref(), *ts, &bytes).unwrap(), &k);
            *ts += 1000;
            out.push((who, e.clone(), p.clone()));
            prev = Some(e);
        }
    }
}

/// The signed entries of a scenario: (author name, entry, payload or None).
fn chain_of(s: &Scenario) -> Vec<(&'static str, SignedEntry, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut ts = T0;
    sign_chain("alice", &s.main, &s.rival, &mut ts, &mut out);
    for o in &s.others {
        sign_chain(o.who, &o.main, &o.rival, &mut ts, &mut out);
    }
    out
}

fn roster_json(r: &Roster) -> Value {
    json!({
        "founder": r.founder.to_string(),
        "members": r.members.iter().map(|(a, by)| json!({ "agent": a.to_string(), "name": name_of(a), "admitted_by": by.map(|e| e.to_string()) })).collect::<Vec<_>>(),
        "removed": r.removed.iter().map(|(a, by)| json!({ "agent": a.to_string(), "name": name_of(a), "removed_by": by.to_string() })).collect::<Vec<_>>(),
        "frozen_at_fork_seq": r.frozen_at_fork_seq,
        "skipped": r.skipped.iter().map(|k| json!({ "entry": k.id.to_string() })).collect::<Vec<_>>(),
        "cut_off": r.cut_off.iter().map(|(a, s)| json!({ "agent": a.to_string(), "name": name_of(a), "last_seq": s })).collect::<Vec<_>>(),
        "pinned": r.pinned.iter().map(|(a, p)| json!({ "agent": a.to_string(), "name": name_of(a), "head": p.head.to_string() })).collect::<Vec<_>>(),
        "pending_at_seq": r.pending_at_seq,
        "recoveries": r.recoveries.iter().flat_map(|(a, list)| list.iter().map(move |x| json!({
            "agent": a.to_string(), "name": name_of(a), "last_seq": x.last_seq, "head": x.head.to_string(), "key": x.key.to_string(), "by": x.by.to_string(),
        }))).collect::<Vec<_>>(),
        "admins": r.admins.iter().map(|a| json!({ "agent": a.to_string(), "name": name_of(a) })).collect::<Vec<_>>(),
        "threshold": r.threshold,
        "admins_by": r.admins_by.map(|e| e.to_string()),
        "votes": r.votes.iter().map(|v| json!({
            "event": event_json(&v.event),
            "voters": v.voters.iter().map(|(a, e)| json!({ "agent": a.to_string(), "name": name_of(a), "entry": e.to_string() })).collect::<Vec<_>>(),
            "outcome": match v.outcome { VoteOutcome::Short => "short", VoteOutcome::Applied => "applied", VoteOutcome::Conflict => "conflict" },
        })).collect::<Vec<_>>(),
        "admin_holds": r.admin_holds.iter().map(|(a, h)| match h {
            AdminHold::FrozenAtForkSeq(s) => json!({ "agent": a.to_string(), "name": name_of(a), "frozen_at_fork_seq": s }),
            AdminHold::PendingAtSeq(s) => json!({ "agent": a.to_string(), "name": name_of(a), "pending_at_seq": s }),
        }).collect::<Vec<_>>(),
    })
}

/// Derive as a node does: the founder's entries, and the other agents'
/// (only the admins' votes count).
fn derive(founder: AgentId, entries: &[(AgentId, SignedEntry, Option<Vec<u8>>)]) -> Roster {
    fn content(p: &Option<Vec<u8>>) -> agora_core::Content<'_> {
        p.as_deref().map_or(agora_core::Content::Missing, agora_core::Content::Held)
    }
    Roster::derive_with_votes(
        founder,
        entries.iter().filter(|(author, _, _)| *author == founder).map(|(_, e, p)| FounderEntry { seq: e.header().seq, id: e.id(), content: content(p) }),
        entries.iter().filter(|(author, _, _)| *author != founder).map(|(author, e, p)| AdminEntry {
            author: *author,
            seq: e.header().seq,
            id: e.id(),
            content: content(p),
        }),
    )
}

/// Why a skipped entry had no effect: its error, from the payload alone,
/// but for an admin set naming a non-member (which the roster decides).
fn skip_error(payload: Option<&[u8]>, founder: &AgentId) -> Option<RosterError> {
    match payload {
        None => unreachable!("a missing payload holds the roster; it is never skipped"),
        Some(p) => match RosterEvent::decode(p).and_then(|ev| ev.check_local(founder).map(|()| ev)) {
            Err(e) => Some(e),
            Ok(RosterEvent::Admins { .. }) => None,
            Ok(other) => panic!("a skipped payload is refused: {other:?}"),
        },
    }
}

fn skip_code(payload: Option<&[u8]>, founder: &AgentId) -> &'static str {
    skip_error(payload, founder).as_ref().map_or("admin_not_member", code)
}

fn generate() -> Value {
    let founder = agent("alice");
    let keys: Vec<Value> = NAMES.iter().map(|n| json!({ "name": n, "seed": hex::encode([seed(n); 32]), "public": agent(n).to_string() })).collect();
    let events: Vec<Value> = valid_events()
        .iter()
        .map(|(name, e)| {
            json!({ "name": name, "event": event_json(e), "payload": hex::encode(e.encode()), "residue": hex::encode(RosterEvent::residue(&e.encode())) })
        })
        .collect();
    let invalid: Vec<Value> = invalid_payloads()
        .into_iter()
        .map(|(name, p, error)| json!({ "name": name, "payload": hex::encode(&p), "error": error, "residue": hex::encode(RosterEvent::residue(&p)) }))
        .collect();
    let checks = json!([
        { "name": "remove_founder", "founder": founder.to_string(), "payload": hex::encode(remove("alice", "")), "error": "remove_founder" },
        { "name": "remove_other", "founder": founder.to_string(), "payload": hex::encode(remove("bob", "")), "error": null },
        { "name": "admit_founder", "founder": founder.to_string(), "payload": hex::encode(admit("alice", "")), "error": null },
        { "name": "recover_founder", "founder": founder.to_string(), "payload": hex::encode(recover("alice", 3, 0xab, "erin", "").encode()), "error": "recover_founder" },
        { "name": "recover_key_is_author", "founder": founder.to_string(), "payload": hex::encode(recover("bob", 3, 0xab, "bob", "").encode()), "error": "recover_key_is_author" },
        { "name": "recover_other", "founder": founder.to_string(), "payload": hex::encode(recover("bob", 3, 0xab, "erin", "").encode()), "error": null },
        { "name": "admins", "founder": founder.to_string(), "payload": hex::encode(admins(&["bob", "carol"], 2, "").encode()), "error": null },
        { "name": "admins_none", "founder": founder.to_string(), "payload": hex::encode(admins(&[], 0, "").encode()), "error": null },
        { "name": "admins_order", "founder": founder.to_string(), "payload": hex::encode(RosterEvent::Admins { admins: vec![agent("bob"), agent("bob")], threshold: 1, note: String::new() }.encode()), "error": "admins_order" },
        { "name": "admins_founder", "founder": founder.to_string(), "payload": hex::encode(admins(&["alice", "bob"], 1, "").encode()), "error": "admins_founder" },
        { "name": "admins_threshold_over", "founder": founder.to_string(), "payload": hex::encode(admins(&["bob", "carol"], 3, "").encode()), "error": "admins_threshold" },
        { "name": "admins_threshold_zero", "founder": founder.to_string(), "payload": hex::encode(admins(&["bob"], 0, "").encode()), "error": "admins_threshold" },
        { "name": "admins_too_many", "founder": founder.to_string(), "payload": hex::encode(RosterEvent::Admins { admins: (1..=17u8).map(|n| AgentKey::from_seed([n; 32]).agent_id()).collect::<std::collections::BTreeSet<_>>().into_iter().collect(), threshold: 2, note: String::new() }.encode()), "error": "admins_too_many" },
    ]);
    let derivations: Vec<Value> = scenarios()
        .iter()
        .map(|s| {
            let chain = chain_of(s);
            let held: Vec<(AgentId, SignedEntry, Option<Vec<u8>>)> = chain.iter().map(|(w, e, p)| (agent(w), e.clone(), p.clone())).collect();
            let roster = derive(founder, &held);
            let mut expected = roster_json(&roster);
            let by_id = |id: &str| chain.iter().find(|(_, e, _)| e.id().to_string() == id).map(|(_, _, p)| p.clone()).unwrap();
            for k in expected["skipped"].as_array_mut().unwrap() {
                let p = by_id(k["entry"].as_str().unwrap());
                k["reason"] = json!(skip_code(p.as_deref(), &founder));
            }
            json!({
                "name": s.name,
                "note": s.note,
                "founder": founder.to_string(),
                "entries": chain.iter().map(|(who, e, p)| json!({
                    "author": who, "seq": e.header().seq, "id": e.id().to_string(),
                    "signed_entry": hex::encode(e.encode()), "payload": p.as_ref().map(hex::encode),
                })).collect::<Vec<_>>(),
                "roster": expected,
            })
        })
        .collect();
    json!({
        "description": "Agora workspace roster vectors; see protocol-spec/roster.md. Regenerate with AGORA_BLESS_VECTORS=1 cargo test --release -p agora-roster --test vectors",
        "magic": hex::encode(agora_roster::ROSTER_MAGIC),
        "version": agora_roster::ROSTER_VERSION,
        "note_bytes_max": NOTE_BYTES_MAX,
        "keys": keys,
        "events": events,
        "invalid": invalid,
        "checks": checks,
        "derivations": derivations,
    })
}

#[test]
fn roster_vectors_are_current() {
    let text = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("AGORA_BLESS_VECTORS").is_some() {
        // Write then rename, so the checking test running alongside reads
        // either the old file or the new one, never half of it.
        let tmp = path().with_extension("json.tmp");
        std::fs::write(&tmp, &text).unwrap();
        std::fs::rename(&tmp, path()).unwrap();
    }
    let committed = std::fs::read_to_string(path()).expect("protocol-spec/vectors/roster.json exists");
    assert!(committed == text, "roster vectors differ from the implementation; rerun with AGORA_BLESS_VECTORS=1 after a deliberate format change");
}

fn hx(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

#[test]
fn roster_vectors_check() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap();
    assert_eq!(hx(&v["magic"]), b"agrs");
    assert_eq!(v["version"], 1);
    assert_eq!(v["note_bytes_max"], 1024);
    for k in v["keys"].as_array().unwrap() {
        let seed: [u8; 32] = hx(&k["seed"]).try_into().unwrap();
        assert_eq!(AgentKey::from_seed(seed).agent_id().to_string(), k["public"].as_str().unwrap());
    }
    let events = v["events"].as_array().unwrap();
    for kind in 0..6 {
        assert!(events.iter().any(|e| e["event"]["code"] == kind), "kind {kind}");
    }
    for case in events {
        let p = hx(&case["payload"]);
        assert!(RosterEvent::is_roster_payload(&p));
        let e = RosterEvent::decode(&p).unwrap_or_else(|err| panic!("{}: {err}", case["name"]));
        assert_eq!(event_json(&e), case["event"], "{}", case["name"]);
        assert_eq!(spec_encode(&e), p, "{}: spec layout", case["name"]);
        assert_eq!(e.encode(), p);
        // The residue: the same event with its text emptied.
        let residue = RosterEvent::decode(&hx(&case["residue"])).unwrap();
        assert_eq!(residue, e.without_text(), "{}: residue", case["name"]);
        assert!(residue.note().is_empty());
    }
    for case in v["invalid"].as_array().unwrap() {
        let p = hx(&case["payload"]);
        let err = RosterEvent::decode(&p).expect_err(case["name"].as_str().unwrap());
        assert_eq!(code(&err), case["error"].as_str().unwrap(), "{}: {err}", case["name"]);
        // The residue of an invalid payload fails with the same code.
        if err != RosterError::NotRoster {
            let residue_err = RosterEvent::decode(&hx(&case["residue"])).expect_err("an invalid residue");
            assert_eq!(code(&residue_err), code(&err), "{}: residue", case["name"]);
        }
    }
    for case in v["checks"].as_array().unwrap() {
        let founder: AgentId = case["founder"].as_str().unwrap().parse().unwrap();
        let e = RosterEvent::decode(&hx(&case["payload"])).unwrap();
        let got = e.check_local(&founder).err().map(|err| code(&err));
        assert_eq!(got, case["error"].as_str(), "{}", case["name"]);
    }
    let derivations = v["derivations"].as_array().unwrap();
    assert!(!derivations.is_empty());
    for case in derivations {
        let founder: AgentId = case["founder"].as_str().unwrap().parse().unwrap();
        let mut held = Vec::new();
        for e in case["entries"].as_array().unwrap() {
            let entry = SignedEntry::decode(&hx(&e["signed_entry"])).unwrap();
            verify_signature(&entry).unwrap();
            assert_eq!(entry.id().to_string(), e["id"].as_str().unwrap());
            assert_eq!(entry.header().seq, e["seq"].as_u64().unwrap());
            let payload = e["payload"].as_str().map(|p| hex::decode(p).unwrap());
            if let Some(p) = &payload {
                agora_core::verify::verify_payload(&entry, p).unwrap();
            }
            held.push((entry.header().author, entry, payload));
        }
        let expected = &case["roster"];
        let roster = derive(founder, &held);
        let mut got = roster_json(&roster);
        // Reasons as codes; the text is the error's own message.
        for (k, s) in got["skipped"].as_array_mut().unwrap().iter_mut().zip(&roster.skipped) {
            let payload = held.iter().find(|(_, e, _)| e.id() == s.id).and_then(|(_, _, p)| p.as_deref());
            let reason = skip_code(payload, &founder);
            if let Some(e) = skip_error(payload, &founder) {
                assert_eq!(s.reason, e.to_string());
            }
            k["reason"] = json!(reason);
        }
        assert_eq!(&got, expected, "{}", case["name"]);
        assert!(roster.admits(&founder), "{}: the founder is always a member", case["name"]);
        // Any order of arrival derives the same roster.
        held.reverse();
        assert_eq!(derive(founder, &held), roster, "{}: reversed input", case["name"]);
    }
}

// ---------------------------------------------------------------------------
// Properties.

fn arb_event() -> impl Strategy<Value = RosterEvent> {
    (any::<bool>(), prop::array::uniform32(any::<u8>()), "\\PC{0,200}").prop_map(|(admit, a, text)| {
        let agent = AgentId(a);
        if admit { RosterEvent::Admit { agent, note: text } } else { RosterEvent::Remove { agent, reason: text } }
    })
}

fn accepted_bytes_are_canonical(p: &[u8]) {
    if let Ok(e) = RosterEvent::decode(p) {
        assert_eq!(e.encode(), p, "accepted payloads re-encode to themselves");
        assert_eq!(spec_encode(&e), p);
    }
}

/// Test founder entries: (seq, id byte, kind, agent index 0..4, held).
fn arb_chain() -> impl Strategy<Value = Vec<(u64, u8, u8, u8, bool)>> {
    prop::collection::vec((0u8..3, 0u8..5, prop::bool::weighted(0.9)), 0..12).prop_flat_map(|steps| {
        // seqs 1..=n, plus maybe one rival entry at a random seq.
        let n = steps.len() as u64;
        (Just(steps), prop::option::weighted(0.3, 1..=n.max(1)))
            .prop_map(move |(steps, fork)| {
                let mut out: Vec<(u64, u8, u8, u8, bool)> = steps.iter().enumerate().map(|(i, (k, a, held))| (i as u64 + 1, i as u8, *k, *a, *held)).collect();
                if let (Some(seq), true) = (fork, n > 0) {
                    out.push((seq, 200, 0, 4, true));
                }
                out
            })
            .prop_shuffle()
    })
}

fn payload_of(kind: u8, who: u8) -> Vec<u8> {
    let a = AgentId([who; 32]);
    match kind {
        0 => RosterEvent::Admit { agent: a, note: String::new() }.encode(),
        1 => RosterEvent::Remove { agent: a, reason: String::new() }.encode(),
        _ => b"a raw note".to_vec(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn events_round_trip(e in arb_event()) {
        let p = e.encode();
        prop_assert_eq!(&spec_encode(&e), &p);
        prop_assert_eq!(RosterEvent::decode(&p), Ok(e));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_accepted_ones_are_canonical(body in prop::collection::vec(any::<u8>(), 0..120), prefix in 0usize..3) {
        let mut p = [&b""[..], &b"agrs"[..], &b"agrs\x01"[..]][prefix].to_vec();
        p.extend(body);
        accepted_bytes_are_canonical(&p);
    }

    #[test]
    fn edited_payloads_never_panic_and_accepted_ones_are_canonical(
        e in arb_event(), at in any::<prop::sample::Index>(), byte in any::<u8>(), kind in 0u8..3,
    ) {
        let mut p = e.encode();
        let i = at.index(p.len() + 1);
        match kind {
            0 if i < p.len() => p[i] = byte,
            1 => p.insert(i, byte),
            _ if i < p.len() => { p.remove(i); }
            _ => p.push(byte),
        }
        accepted_bytes_are_canonical(&p);
    }

    #[test]
    fn derivation_does_not_depend_on_arrival_order(chain in arb_chain()) {
        let founder = AgentId([0; 32]);
        let payloads: Vec<Vec<u8>> = chain.iter().map(|(_, _, k, a, _)| payload_of(*k, *a)).collect();
        let entries = |order: &[usize]| {
            order.iter().map(|&i| {
                let (seq, id, _, _, held) = chain[i];
                FounderEntry { seq, id: EntryId([id; 32]), content: if held { agora_core::Content::Held(&payloads[i]) } else { agora_core::Content::Missing } }
            }).collect::<Vec<_>>()
        };
        let forward: Vec<usize> = (0..chain.len()).collect();
        let mut sorted = forward.clone();
        sorted.sort_by_key(|&i| (chain[i].0, chain[i].1));
        let a = Roster::derive(founder, entries(&forward));
        let b = Roster::derive(founder, entries(&sorted));
        prop_assert_eq!(&a, &b);
        prop_assert!(a.admits(&founder));
        // A fork freezes the roster at its seq: nothing at or after it counts.
        if let Some(f) = a.frozen_at_fork_seq {
            let before: Vec<usize> = sorted.iter().copied().filter(|&i| chain[i].0 < f).collect();
            let c = Roster::derive(founder, entries(&before));
            prop_assert_eq!(&c.members, &a.members);
            prop_assert_eq!(&c.removed, &a.removed);
        }
    }
}

/// Admins' entries: (author 1..=3, seq 1..=4, kind 0..3, held); ids are
/// their index. Agents 1 and 2 are the admins (threshold 2), 3 a member.
fn arb_votes() -> impl Strategy<Value = Vec<(u8, u64, u8, bool)>> {
    prop::collection::vec((1u8..=3, 1u64..=4, 0u8..3, prop::bool::weighted(0.9)), 0..14).prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Votes, forks of admin chains and missing payloads derive the same
    /// roster whatever order the entries arrive in.
    #[test]
    fn votes_do_not_depend_on_arrival_order(votes in arb_votes()) {
        let founder = AgentId([0; 32]);
        let who = |n: u8| AgentId([n; 32]);
        let mut founder_payloads: Vec<Vec<u8>> = (1..=4).map(|n| RosterEvent::Admit { agent: who(n), note: String::new() }.encode()).collect();
        founder_payloads.push(RosterEvent::Admins { admins: vec![who(1), who(2)], threshold: 2, note: String::new() }.encode());
        let act = |kind: u8| match kind {
            0 => RosterEvent::Recover { agent: who(4), last_seq: 2, head: EntryId([9; 32]), key: who(8), note: String::new() }.encode(),
            1 => RosterEvent::RemoveAt { agent: who(4), last_seq: 3, head: EntryId([7; 32]), reason: "r".into() }.encode(),
            _ => b"a raw note".to_vec(),
        };
        let payloads: Vec<Vec<u8>> = votes.iter().map(|(_, _, k, _)| act(*k)).collect();
        let admin_entries = |order: &[usize]| {
            order.iter().map(|&i| {
                let (author, seq, _, held) = votes[i];
                AdminEntry { author: who(author), seq, id: EntryId([100 + i as u8; 32]), content: if held { agora_core::Content::Held(&payloads[i]) } else { agora_core::Content::Missing } }
            }).collect::<Vec<_>>()
        };
        let founder_entries = || founder_payloads.iter().enumerate().map(|(i, p)| FounderEntry { seq: i as u64 + 1, id: EntryId([i as u8 + 1; 32]), content: agora_core::Content::Held(p) }).collect::<Vec<_>>();
        let forward: Vec<usize> = (0..votes.len()).collect();
        let mut sorted = forward.clone();
        sorted.sort_by_key(|&i| (votes[i].0, votes[i].1, i));
        let mut backward = forward.clone();
        backward.reverse();
        let a = Roster::derive_with_votes(founder, founder_entries(), admin_entries(&forward));
        prop_assert_eq!(&a, &Roster::derive_with_votes(founder, founder_entries(), admin_entries(&sorted)));
        prop_assert_eq!(&a, &Roster::derive_with_votes(founder, founder_entries(), admin_entries(&backward)));
        // A quorum needs both admins: agent 3's votes never count.
        for v in &a.votes {
            prop_assert!(v.voters.keys().all(|k| *k != who(3)));
            prop_assert_eq!(v.outcome == VoteOutcome::Applied, v.voters.len() == 2);
        }
    }
}
