//! Replication wire format test vectors in
//! `protocol-spec/vectors/replication.json` (`protocol-spec/replication.md`).
//!
//! Three halves:
//! 1. `replication_vectors_are_current`: regenerates every vector from fixed
//!    seeds and requires the committed file to match byte for byte. Set
//!    `AGORA_BLESS_VECTORS=1` to rewrite the file after a deliberate format
//!    change (and update protocol-spec/replication.md in the same commit):
//!    `AGORA_BLESS_VECTORS=1 cargo test --release --workspace --locked --test wire`.
//! 2. `replication_vectors_check`: reads the committed file as an outside
//!    implementation would. Every valid vector is rebuilt from its `value` with
//!    a small encoder written from the spec alone (not postcard), decoded,
//!    re-encoded, and its gossip message id recomputed (SHA-256 of the
//!    message bytes); every invalid vector must be refused with the stated
//!    error; the replicator's defaults and constants match.
//! 3. Property tests: `encode` then `decode` gives the value back; decoding
//!    arbitrary bytes never panics; bytes that decode re-encode to themselves.

use agora_core::entry::next_header;
use agora_core::limits::{FUTURE_SKEW_MAX_MS, VERIFY_BATCH_LEN};
use agora_core::verify::verify_signature;
use agora_core::{AgentId, AgentKey, EntryId, ForkProof, SignedEntry, sha256};
use agora_sync::wire::{GOSSIP_BYTES_MAX, GOSSIP_INLINE_PAYLOAD_MAX, REQUEST_BYTES_MAX, RESPONSE_BYTES_MAX, SYNC_PROTOCOL, WIRE_VERSION, gossip_message_id};
use agora_sync::{
    ANNOUNCE_INTERVAL_MS, BUSY_BACKOFF_MS, Config, Gossip, Head, RESPONSE_ENTRIES_MAX, RETRY_FANOUT_MAX, RangeStart, WAIT_MIN_MS, WireEntry, WireError,
    WireRequest, WireResponse, WorkspaceId,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::PathBuf;

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protocol-spec/vectors/replication.json")
}

// ---------------------------------------------------------------------------
// Fixtures: fixed seeds, fixed timestamps.

const ALICE_SEED: [u8; 32] = [0x11; 32];
const BOB_SEED: [u8; 32] = [0x22; 32];
const T0: u64 = 1_700_000_000_000;

struct Fixtures {
    alice: AgentKey,
    bob: AgentKey,
    workspace: WorkspaceId,
    /// alice's chain: seq 1, seq 2, and a rival seq 2 (a fork).
    a1: SignedEntry,
    a2: SignedEntry,
    a2_rival: SignedEntry,
    payloads: [&'static [u8]; 3],
    proof: ForkProof,
    /// bob's first entry, whose payload is one byte over the inline limit.
    b1: SignedEntry,
}

fn fixtures() -> Fixtures {
    let alice = AgentKey::from_seed(ALICE_SEED);
    let bob = AgentKey::from_seed(BOB_SEED);
    let payloads: [&[u8]; 3] = [b"proposition: price at $20", b"support: competitors do it", b"rival"];
    let a1 = SignedEntry::sign(next_header(alice.agent_id(), None, T0, payloads[0]).unwrap(), &alice);
    let a2 = SignedEntry::sign(next_header(alice.agent_id(), Some(&a1), T0 + 1000, payloads[1]).unwrap(), &alice);
    let a2_rival = SignedEntry::sign(next_header(alice.agent_id(), Some(&a1), T0 + 2000, payloads[2]).unwrap(), &alice);
    let proof = ForkProof::new(a2.clone(), a2_rival.clone()).unwrap();
    let b1 = SignedEntry::sign(next_header(bob.agent_id(), None, T0 + 500, &bob_payload()).unwrap(), &bob);
    let workspace = WorkspaceId::new(&alice.agent_id(), "research");
    Fixtures { alice, bob, workspace, a1, a2, a2_rival, payloads, proof, b1 }
}

/// 32,769 bytes of `a`: one byte over the inline limit.
fn bob_payload() -> Vec<u8> {
    vec![b'a'; GOSSIP_INLINE_PAYLOAD_MAX + 1]
}

fn head(e: &SignedEntry) -> Head {
    Head { author: e.header().author, seq: e.header().seq, id: e.id() }
}

// ---------------------------------------------------------------------------
// A JSON description of each value (bytes as hex), used in the vectors and
// compared against what the committed bytes decode to.

fn head_json(h: &Head) -> Value {
    json!({ "author": h.author.to_string(), "seq": h.seq, "id": h.id.to_string() })
}

fn start_json(s: &RangeStart) -> Value {
    json!({ "seq": s.seq, "after": s.after.map(|id| id.to_string()) })
}

fn wire_entry_json(w: &WireEntry) -> Value {
    json!({ "entry": hex::encode(&w.entry), "payload": w.payload.as_ref().map(hex::encode) })
}

fn request_json(r: &WireRequest) -> Value {
    match r {
        WireRequest::Frontier { workspace, heads } => {
            json!({ "Frontier": { "workspace": workspace.to_string(), "heads": heads.iter().map(head_json).collect::<Vec<_>>() } })
        }
        WireRequest::Range { workspace, req, author, start, limit } => json!({ "Range": {
            "workspace": workspace.to_string(), "req": req, "author": author.to_string(), "start": start_json(start), "limit": limit } }),
    }
}

fn response_json(r: &WireResponse) -> Value {
    match r {
        WireResponse::Ack => json!("Ack"),
        WireResponse::Entries { req, entries, more } => {
            json!({ "Entries": { "req": req, "entries": entries.iter().map(wire_entry_json).collect::<Vec<_>>(), "more": more } })
        }
        WireResponse::WrongWorkspace => json!("WrongWorkspace"),
        WireResponse::Busy => json!("Busy"),
        WireResponse::Wait { ms } => json!({ "Wait": { "ms": ms } }),
    }
}

fn gossip_json(g: &Gossip) -> Value {
    match g {
        Gossip::Entry(w) => json!({ "Entry": wire_entry_json(w) }),
        Gossip::Announce(e) => json!({ "Announce": hex::encode(e) }),
        Gossip::ForkProof(p) => json!({ "ForkProof": hex::encode(p) }),
    }
}

// ---------------------------------------------------------------------------
// An encoder written from protocol-spec/replication.md alone, to show that
// the document (not only postcard) describes the bytes.

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn spec_head(out: &mut Vec<u8>, h: &Head) {
    out.extend_from_slice(h.author.as_bytes());
    varint(out, h.seq);
    out.extend_from_slice(h.id.as_bytes());
}

fn spec_wire_entry(out: &mut Vec<u8>, w: &WireEntry) {
    bytes(out, &w.entry);
    match &w.payload {
        None => out.push(0),
        Some(p) => {
            out.push(1);
            bytes(out, p);
        }
    }
}

fn spec_request(r: &WireRequest) -> Vec<u8> {
    let mut out = vec![2]; // wire version 2
    match r {
        WireRequest::Frontier { workspace, heads } => {
            varint(&mut out, 0);
            out.extend_from_slice(&workspace.0);
            varint(&mut out, heads.len() as u64);
            for h in heads {
                spec_head(&mut out, h);
            }
        }
        WireRequest::Range { workspace, req, author, start, limit } => {
            varint(&mut out, 1);
            out.extend_from_slice(&workspace.0);
            varint(&mut out, *req);
            out.extend_from_slice(author.as_bytes());
            // RangeStart: seq, then after: [32]?
            varint(&mut out, start.seq);
            match &start.after {
                None => out.push(0),
                Some(id) => {
                    out.push(1);
                    out.extend_from_slice(id.as_bytes());
                }
            }
            varint(&mut out, u64::from(*limit));
        }
    }
    out
}

fn spec_response(r: &WireResponse) -> Vec<u8> {
    let mut out = vec![2]; // wire version 2
    match r {
        WireResponse::Ack => varint(&mut out, 0),
        WireResponse::Entries { req, entries, more } => {
            varint(&mut out, 1);
            varint(&mut out, *req);
            varint(&mut out, entries.len() as u64);
            for w in entries {
                spec_wire_entry(&mut out, w);
            }
            out.push(u8::from(*more));
        }
        WireResponse::WrongWorkspace => varint(&mut out, 2),
        WireResponse::Busy => varint(&mut out, 3),
        WireResponse::Wait { ms } => {
            varint(&mut out, 4);
            varint(&mut out, u64::from(*ms));
        }
    }
    out
}

fn spec_gossip(g: &Gossip) -> Vec<u8> {
    let mut out = vec![2]; // wire version 2
    match g {
        Gossip::Entry(w) => {
            varint(&mut out, 0);
            spec_wire_entry(&mut out, w);
        }
        Gossip::Announce(e) => {
            varint(&mut out, 1);
            bytes(&mut out, e);
        }
        Gossip::ForkProof(p) => {
            varint(&mut out, 2);
            bytes(&mut out, p);
        }
    }
    out
}

/// The message id rule of the spec, computed without `gossip_message_id`:
/// SHA-256 of the message bytes, whatever they are (nothing is decoded).
fn spec_message_id(bytes: &[u8]) -> [u8; 32] {
    sha256(bytes)
}

// ---------------------------------------------------------------------------
// Error codes (protocol-spec/README.md). `WireError` has three variants; the
// finer codes are told apart by its detail text, which this test pins.

fn code(e: &WireError) -> &'static str {
    match e {
        WireError::TooLarge { .. } => "too_long",
        WireError::Version { .. } => "unsupported_version",
        WireError::Malformed { detail, .. } if detail == "empty" || detail.contains("end of buffer") => "truncated",
        WireError::Malformed { detail, .. } if detail.ends_with("trailing bytes") => "trailing_bytes",
        WireError::Malformed { detail, .. } if detail == "non-canonical encoding" => "non_canonical",
        WireError::Malformed { .. } => "malformed",
    }
}

fn what(e: &WireError) -> &'static str {
    match e {
        WireError::TooLarge { what, .. } | WireError::Version { what, .. } | WireError::Malformed { what, .. } => what,
    }
}

fn decode_family(family: &str, bytes: &[u8]) -> Result<Vec<u8>, WireError> {
    match family {
        "request" => WireRequest::decode(bytes).map(|v| v.encode()),
        "response" => WireResponse::decode(bytes).map(|v| v.encode()),
        "gossip" => Gossip::decode(bytes).map(|v| v.encode()),
        other => panic!("unknown family {other}"),
    }
}

// ---------------------------------------------------------------------------
// Generation.

/// alice's two entries at seq 2, in ascending id order (the order a response carries them).
fn fork_in_order(f: &Fixtures) -> [(&SignedEntry, &'static [u8]); 2] {
    let mut fork = [(&f.a2, f.payloads[1]), (&f.a2_rival, f.payloads[2])];
    fork.sort_by_key(|(e, _)| e.id());
    fork
}

fn valid_requests(f: &Fixtures) -> Vec<(&'static str, WireRequest)> {
    let mut heads = vec![head(&f.a2), head(&f.a2_rival), head(&f.b1)];
    heads.sort();
    let first_at_2 = fork_in_order(f)[0].0.id();
    vec![
        ("frontier", WireRequest::Frontier { workspace: f.workspace, heads }),
        ("frontier_empty", WireRequest::Frontier { workspace: f.workspace, heads: Vec::new() }),
        ("range", WireRequest::Range { workspace: f.workspace, req: 7, author: f.alice.agent_id(), start: RangeStart::at(1), limit: 1000 }),
        // The rest of `range` after a response cut inside seq 2 (after the
        // lower-id entry of the fork): seqs 2 to 1000, and of seq 2 only the
        // entries whose id is greater than `after`.
        (
            "range_after",
            WireRequest::Range {
                workspace: f.workspace,
                req: 8,
                author: f.alice.agent_id(),
                start: RangeStart { seq: 2, after: Some(first_at_2) },
                limit: 999,
            },
        ),
        // Wire-valid; the replicator refuses limit > range_limit (and bans).
        (
            "range_largest_numbers",
            WireRequest::Range {
                workspace: f.workspace,
                req: u64::MAX,
                author: f.bob.agent_id(),
                start: RangeStart { seq: 1 << 35, after: Some(EntryId([0xff; 32])) },
                limit: u32::MAX,
            },
        ),
    ]
}

fn valid_responses(f: &Fixtures) -> Vec<(&'static str, WireResponse)> {
    let fork = fork_in_order(f);
    let entries = vec![
        WireEntry { entry: f.a1.encode(), payload: Some(f.payloads[0].to_vec()) },
        WireEntry { entry: fork[0].0.encode(), payload: Some(fork[0].1.to_vec()) },
        // The sender does not hold this payload (redacted).
        WireEntry { entry: fork[1].0.encode(), payload: None },
    ];
    vec![
        ("ack", WireResponse::Ack),
        ("entries", WireResponse::Entries { req: 7, entries, more: true }),
        // The answer to `range_after`: the one entry of seq 2 after the one named, and nothing beyond.
        (
            "entries_after",
            WireResponse::Entries { req: 8, entries: vec![WireEntry { entry: fork[1].0.encode(), payload: Some(fork[1].1.to_vec()) }], more: false },
        ),
        ("entries_empty", WireResponse::Entries { req: 300, entries: Vec::new(), more: false }),
        ("wrong_workspace", WireResponse::WrongWorkspace),
        ("busy", WireResponse::Busy),
        // 1,000 ms: the varint takes two bytes.
        ("wait", WireResponse::Wait { ms: 1_000 }),
    ]
}

fn valid_gossip(f: &Fixtures) -> Vec<(&'static str, Gossip)> {
    vec![
        ("entry_inline", Gossip::for_entry(&f.a1, Some(f.payloads[0]))),
        // The same entry relayed with its payload stripped, and announced
        // (what a node publishes when it does not hold the payload): two
        // other messages, with other ids, so neither can shadow `entry_inline`.
        ("entry_inline_stripped", Gossip::Entry(WireEntry { entry: f.a1.encode(), payload: None })),
        ("announce_payload_not_held", Gossip::for_entry(&f.a1, None)),
        ("entry_without_payload", Gossip::Entry(WireEntry { entry: f.a2.encode(), payload: None })),
        ("head_payload_over_inline_limit", Gossip::for_entry(&f.b1, Some(&bob_payload()))),
        ("fork_proof", Gossip::ForkProof(f.proof.encode())),
        // Decodes as gossip; the replicator rejects it (the entry does not
        // decode). Its message id is the hash of the message.
        ("entry_undecodable_entry_bytes", Gossip::Entry(WireEntry { entry: b"not an entry".to_vec(), payload: None })),
    ]
}

/// (family, name, input, error). The input is either literal bytes or
/// `(prefix, length)`: the prefix followed by zero bytes up to `length`.
enum Input {
    Bytes(Vec<u8>),
    Padded(Vec<u8>, usize),
}

fn with(bytes: &[u8], at: usize, replace: usize, insert: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.splice(at..at + replace, insert.iter().copied());
    v
}

fn invalid(f: &Fixtures) -> Vec<(&'static str, &'static str, Input, &'static str)> {
    use Input::{Bytes, Padded};
    let range = valid_requests(f)[2].1.encode();
    let range_after = valid_requests(f)[3].1.encode();
    let frontier = valid_requests(f)[1].1.encode();
    let entries = valid_responses(f)[1].1.encode();
    let gossip_named = |name: &str| valid_gossip(f).into_iter().find(|(n, _)| *n == name).map(|(_, g)| g.encode()).unwrap();
    let entry_gossip = gossip_named("entry_inline");
    let head_gossip = gossip_named("head_payload_over_inline_limit");
    let last = |v: &[u8]| v.len() - 1;
    // Offsets in `range`: version 0, variant 1, workspace 2..34, req 34,
    // author 35..67, start.seq 67, start.after 68 (00: none), limit 69..71.
    assert_eq!(&range[67..], &[0x01, 0x00, 0xe8, 0x07]);
    // In `range_after`: start.after 68 (01), its id 69..101, limit 101..103.
    assert_eq!((range_after.len(), range_after[68], &range_after[101..]), (103, 1, &[0xe7, 0x07][..]));
    let mut req = vec![
        ("request", "empty", Bytes(Vec::new()), "truncated"),
        ("request", "version_only", Bytes(vec![2]), "truncated"),
        ("request", "version_0", Bytes(with(&range, 0, 1, &[0])), "unsupported_version"),
        ("request", "version_1", Bytes(with(&range, 0, 1, &[1])), "unsupported_version"),
        ("request", "version_3", Bytes(with(&range, 0, 1, &[3])), "unsupported_version"),
        ("request", "trailing_byte", Bytes(with(&range, range.len(), 0, &[0])), "trailing_bytes"),
        ("request", "truncated_range", Bytes(range[..last(&range)].to_vec()), "truncated"),
        ("request", "overlong_variant_code", Bytes(with(&frontier, 1, 1, &[0x80, 0x00])), "non_canonical"),
        ("request", "overlong_varint_req", Bytes(with(&range, 34, 1, &[0x87, 0x00])), "non_canonical"),
        ("request", "unknown_variant", Bytes(with(&range, 1, 1, &[2])), "malformed"),
        ("request", "limit_over_u32", Bytes(with(&range, 69, 2, &[0xff, 0xff, 0xff, 0xff, 0x10])), "malformed"),
        ("request", "after_option_tag_2", Bytes(with(&range, 68, 1, &[2])), "malformed"),
        ("request", "after_id_truncated", Bytes(range_after[..85].to_vec()), "truncated"),
        // The layout before `RangeStart` (no `after` field): `limit`'s first byte is read as the option tag.
        ("request", "range_without_after_field", Bytes(with(&range, 68, 1, &[])), "malformed"),
        ("request", "req_varint_over_10_bytes", Bytes(with(&range, 34, 1, &[0xff; 10])), "malformed"),
        ("request", "too_large", Padded(frontier[..34].to_vec(), REQUEST_BYTES_MAX + 1), "too_long"),
    ];
    // `entries` offsets: version 0, variant 1, req 2, count 3, first entry length 4.
    assert_eq!(entries[1..4], [1, 7, 3]);
    let first_len = f.a1.encode().len() as u64;
    let (mut short, mut long) = (Vec::new(), Vec::new());
    varint(&mut short, first_len);
    varint(&mut long, first_len);
    let n = long.len();
    long[n - 1] |= 0x80;
    long.push(0x00);
    let resp = vec![
        ("response", "empty", Bytes(Vec::new()), "truncated"),
        ("response", "version_1", Bytes(vec![1, 0]), "unsupported_version"),
        ("response", "trailing_byte", Bytes(vec![2, 0, 0]), "trailing_bytes"),
        ("response", "unknown_variant", Bytes(vec![2, 5]), "malformed"),
        ("response", "wait_truncated", Bytes(vec![2, 4]), "truncated"),
        ("response", "wait_over_u32", Bytes(vec![2, 4, 0xff, 0xff, 0xff, 0xff, 0x10]), "malformed"),
        ("response", "wait_overlong_varint", Bytes(vec![2, 4, 0x80, 0x00]), "non_canonical"),
        ("response", "overlong_variant_code", Bytes(vec![2, 0x83, 0x00]), "non_canonical"),
        ("response", "overlong_entry_length", Bytes(with(&entries, 4, short.len(), &long)), "non_canonical"),
        ("response", "more_not_a_bool", Bytes(with(&entries, last(&entries), 1, &[2])), "malformed"),
        ("response", "payload_option_tag_2", Bytes(vec![2, 1, 0, 1, 1, 0xaa, 2]), "malformed"),
        ("response", "count_beyond_input", Bytes(vec![2, 1, 0, 5]), "truncated"),
        ("response", "truncated_entries", Bytes(entries[..last(&entries)].to_vec()), "truncated"),
        ("response", "too_large", Padded(vec![2, 1, 0], RESPONSE_BYTES_MAX + 1), "too_long"),
    ];
    let gos = vec![
        ("gossip", "empty", Bytes(Vec::new()), "truncated"),
        ("gossip", "version_1", Bytes(with(&entry_gossip, 0, 1, &[1])), "unsupported_version"),
        ("gossip", "trailing_byte", Bytes(with(&head_gossip, head_gossip.len(), 0, &[0])), "trailing_bytes"),
        ("gossip", "unknown_variant", Bytes(with(&head_gossip, 1, 1, &[3])), "malformed"),
        ("gossip", "overlong_variant_code", Bytes(with(&head_gossip, 1, 1, &[0x81, 0x00])), "non_canonical"),
        ("gossip", "truncated_head", Bytes(head_gossip[..last(&head_gossip)].to_vec()), "truncated"),
        ("gossip", "too_large", Padded(vec![2, 2], GOSSIP_BYTES_MAX + 1), "too_long"),
    ];
    req.extend(resp);
    req.extend(gos);
    req
}

fn input_bytes(input: &Input) -> Vec<u8> {
    match input {
        Input::Bytes(b) => b.clone(),
        Input::Padded(prefix, len) => {
            let mut v = prefix.clone();
            v.resize(*len, 0);
            v
        }
    }
}

/// Every field of `Config` (destructured without `..`, so a new field does
/// not compile until it is added here, to the vectors and to the spec).
fn config_json(c: &Config) -> Value {
    let Config {
        range_limit,
        response_bytes_max,
        in_flight_per_peer,
        in_flight_max,
        request_timeout_ms,
        request_timeout_base_ms,
        hedge_min_ms,
        hedge_slowdown,
        ban_ms,
        frontier_heads_max,
        frontier_refresh_ms,
        heads_per_author_max,
        non_member_heads_per_peer,
        outputs_max,
        peer_messages_per_s,
        peer_messages_burst,
        peer_flood_ban_after,
        author_gossip_per_s,
        author_gossip_burst,
        missing_payloads_max,
        payload_tries_max,
    } = c;
    json!({
        "range_limit": range_limit,
        "response_bytes_max": response_bytes_max,
        "in_flight_per_peer": in_flight_per_peer,
        "in_flight_max": in_flight_max,
        "request_timeout_ms": request_timeout_ms,
        "request_timeout_base_ms": request_timeout_base_ms,
        "hedge_min_ms": hedge_min_ms,
        "hedge_slowdown": hedge_slowdown,
        "ban_ms": ban_ms,
        "frontier_heads_max": frontier_heads_max,
        "frontier_refresh_ms": frontier_refresh_ms,
        "heads_per_author_max": heads_per_author_max,
        "non_member_heads_per_peer": non_member_heads_per_peer,
        "outputs_max": outputs_max,
        "peer_messages_per_s": peer_messages_per_s,
        "peer_messages_burst": peer_messages_burst,
        "peer_flood_ban_after": peer_flood_ban_after,
        "author_gossip_per_s": author_gossip_per_s,
        "author_gossip_burst": author_gossip_burst,
        "missing_payloads_max": missing_payloads_max,
        "payload_tries_max": payload_tries_max,
    })
}

/// The replicator's fixed constants, and the agora-core limits it applies.
fn replicator_constants_json() -> Value {
    json!({
        "response_entries_max": RESPONSE_ENTRIES_MAX,
        "retry_fanout_max": RETRY_FANOUT_MAX,
        "announce_interval_ms": ANNOUNCE_INTERVAL_MS,
        "busy_backoff_ms": BUSY_BACKOFF_MS,
        "wait_min_ms": WAIT_MIN_MS,
        "future_skew_max_ms": FUTURE_SKEW_MAX_MS,
        "verify_batch_len": VERIFY_BATCH_LEN,
    })
}

fn generate() -> Value {
    let f = fixtures();
    let keys = json!([
        { "name": "alice", "seed": hex::encode(ALICE_SEED), "public": f.alice.agent_id().to_string() },
        { "name": "bob", "seed": hex::encode(BOB_SEED), "public": f.bob.agent_id().to_string() },
    ]);
    let named = |name: &str, e: &SignedEntry, payload: Value| json!({ "name": name, "signed_entry": hex::encode(e.encode()), "id": e.id().to_string(), "seq": e.header().seq, "payload": payload });
    let entries = json!([
        named("alice_1", &f.a1, json!(hex::encode(f.payloads[0]))),
        named("alice_2", &f.a2, json!(hex::encode(f.payloads[1]))),
        named("alice_2_rival", &f.a2_rival, json!(hex::encode(f.payloads[2]))),
        named("bob_1", &f.b1, json!({ "fill": "61", "length": GOSSIP_INLINE_PAYLOAD_MAX + 1 })),
    ]);
    let workspaces: Vec<Value> = [("alice", &f.alice, "research"), ("bob", &f.bob, "équipe"), ("alice", &f.alice, "")]
        .into_iter()
        .map(|(who, key, name)| {
            let id = WorkspaceId::new(&key.agent_id(), name);
            json!({ "founder": who, "founder_public": key.agent_id().to_string(), "name": name, "name_utf8": hex::encode(name.as_bytes()),
                    "id": id.to_string(), "topic": id.topic() })
        })
        .collect();
    let variant = |b: &[u8]| b[1];
    let requests: Vec<Value> = valid_requests(&f)
        .iter()
        .map(|(name, r)| {
            let b = r.encode();
            json!({ "name": name, "variant": variant(&b), "value": request_json(r), "bytes": hex::encode(&b) })
        })
        .collect();
    let responses: Vec<Value> = valid_responses(&f)
        .iter()
        .map(|(name, r)| {
            let b = r.encode();
            json!({ "name": name, "variant": variant(&b), "value": response_json(r), "bytes": hex::encode(&b) })
        })
        .collect();
    let gossip: Vec<Value> = valid_gossip(&f)
        .iter()
        .map(|(name, g)| {
            let b = g.encode();
            json!({ "name": name, "variant": variant(&b), "value": gossip_json(g), "bytes": hex::encode(&b),
                    "message_id": hex::encode(gossip_message_id(&b)) })
        })
        .collect();
    let bad: Vec<Value> = invalid(&f)
        .into_iter()
        .map(|(family, name, input, error)| {
            let mut v = json!({ "family": family, "name": name, "error": error });
            match &input {
                Input::Bytes(b) => v["bytes"] = json!(hex::encode(b)),
                Input::Padded(prefix, len) => {
                    v["prefix"] = json!(hex::encode(prefix));
                    v["length"] = json!(len);
                }
            }
            if family == "gossip" {
                v["message_id"] = json!(hex::encode(gossip_message_id(&input_bytes(&input))));
            }
            v
        })
        .collect();
    json!({
        "description": "Agora replication wire vectors; see protocol-spec/replication.md. Regenerate with AGORA_BLESS_VECTORS=1 cargo test --release --workspace --locked --test wire",
        "constants": {
            "protocol": SYNC_PROTOCOL,
            "wire_version": WIRE_VERSION,
            "request_bytes_max": REQUEST_BYTES_MAX,
            "response_bytes_max": RESPONSE_BYTES_MAX,
            "gossip_bytes_max": GOSSIP_BYTES_MAX,
            "gossip_inline_payload_max": GOSSIP_INLINE_PAYLOAD_MAX,
            "workspace_domain": "agora-workspace-v1",
        },
        "config_defaults": config_json(&Config::default()),
        "replicator_constants": replicator_constants_json(),
        "keys": keys,
        "entries": entries,
        "fork_proof": { "a": "alice_2 and alice_2_rival in ascending id order", "proof": hex::encode(f.proof.encode()) },
        "workspaces": workspaces,
        "requests": requests,
        "responses": responses,
        "gossip": gossip,
        "invalid": bad,
    })
}

#[test]
fn replication_vectors_are_current() {
    let text = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("AGORA_BLESS_VECTORS").is_some() {
        // Write then rename, so the checking test running alongside reads
        // either the old file or the new one, never half of it.
        let tmp = path().with_extension("json.tmp");
        std::fs::write(&tmp, &text).unwrap();
        std::fs::rename(&tmp, path()).unwrap();
    }
    let committed = std::fs::read_to_string(path()).expect("protocol-spec/vectors/replication.json exists");
    assert!(committed == text, "replication vectors differ from the implementation; rerun with AGORA_BLESS_VECTORS=1 after a deliberate format change");
}

// ---------------------------------------------------------------------------
// Checking the committed file.

fn load() -> Value {
    serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap()
}

fn hx(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

#[test]
fn replication_vectors_check() {
    let v = load();

    let c = &v["constants"];
    assert_eq!(c["protocol"], "/agora/sync/2");
    assert_eq!(c["wire_version"], 2);
    assert_eq!(c["request_bytes_max"], REQUEST_BYTES_MAX);
    assert_eq!(c["response_bytes_max"], RESPONSE_BYTES_MAX);
    assert_eq!(c["gossip_bytes_max"], GOSSIP_BYTES_MAX);
    assert_eq!(c["gossip_inline_payload_max"], GOSSIP_INLINE_PAYLOAD_MAX);
    assert_eq!(v["config_defaults"], config_json(&Config::default()));
    assert_eq!(v["replicator_constants"], replicator_constants_json());

    // Keys and entries: the signed entries verify and carry the stated ids.
    for k in v["keys"].as_array().unwrap() {
        let seed: [u8; 32] = hx(&k["seed"]).try_into().unwrap();
        assert_eq!(AgentKey::from_seed(seed).agent_id().to_string(), k["public"].as_str().unwrap());
    }
    for e in v["entries"].as_array().unwrap() {
        let entry = SignedEntry::decode(&hx(&e["signed_entry"])).unwrap();
        verify_signature(&entry).unwrap();
        assert_eq!(entry.id().to_string(), e["id"].as_str().unwrap());
        assert_eq!(entry.header().seq, e["seq"].as_u64().unwrap());
    }
    let proof = ForkProof::decode(&hx(&v["fork_proof"]["proof"])).unwrap();
    assert_eq!(proof.seq(), 2);

    // Workspace ids: SHA-256("agora-workspace-v1" || founder || name).
    for w in v["workspaces"].as_array().unwrap() {
        let founder: AgentId = w["founder_public"].as_str().unwrap().parse().unwrap();
        let name = w["name"].as_str().unwrap();
        assert_eq!(hx(&w["name_utf8"]), name.as_bytes());
        let mut pre = b"agora-workspace-v1".to_vec();
        pre.extend_from_slice(founder.as_bytes());
        pre.extend_from_slice(name.as_bytes());
        let id = hex::encode(sha256(&pre));
        assert_eq!(id, w["id"].as_str().unwrap());
        assert_eq!(WorkspaceId::new(&founder, name).to_string(), id);
        assert_eq!(w["topic"].as_str().unwrap(), format!("agora/v2/{id}"));
    }

    // Valid messages: the spec encoder rebuilds the bytes from the decoded
    // value, the value matches its description, and re-encoding is identity.
    let requests = v["requests"].as_array().unwrap();
    assert!(requests.iter().any(|r| r["variant"] == 0) && requests.iter().any(|r| r["variant"] == 1), "every request variant");
    let after = |r: &Value| r["value"]["Range"]["start"]["after"].clone();
    assert!(requests.iter().any(|r| after(r).is_null()) && requests.iter().any(|r| after(r).is_string()), "ranges with and without `after`");
    for case in requests {
        let b = hx(&case["bytes"]);
        let r = WireRequest::decode(&b).unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        assert_eq!(b[0], WIRE_VERSION);
        assert_eq!(u64::from(b[1]), case["variant"].as_u64().unwrap());
        assert_eq!(request_json(&r), case["value"], "{}", case["name"]);
        assert_eq!(spec_request(&r), b, "{}: spec layout", case["name"]);
        assert_eq!(r.encode(), b);
    }
    let responses = v["responses"].as_array().unwrap();
    for code in 0..5 {
        assert!(responses.iter().any(|r| r["variant"] == code), "response variant {code}");
    }
    for case in responses {
        let b = hx(&case["bytes"]);
        let r = WireResponse::decode(&b).unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        assert_eq!(u64::from(b[1]), case["variant"].as_u64().unwrap());
        assert_eq!(response_json(&r), case["value"], "{}", case["name"]);
        assert_eq!(spec_response(&r), b, "{}: spec layout", case["name"]);
        assert_eq!(r.encode(), b);
        if let WireResponse::Entries { entries, .. } = &r {
            for w in entries {
                let e = SignedEntry::decode(&w.entry).unwrap();
                verify_signature(&e).unwrap();
                if let Some(p) = &w.payload {
                    agora_core::verify::verify_payload(&e, p).unwrap();
                }
            }
        }
    }
    let gossip = v["gossip"].as_array().unwrap();
    for code in 0..3 {
        assert!(gossip.iter().any(|r| r["variant"] == code), "gossip variant {code}");
    }
    for case in gossip {
        let b = hx(&case["bytes"]);
        let g = Gossip::decode(&b).unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        assert_eq!(u64::from(b[1]), case["variant"].as_u64().unwrap());
        assert_eq!(gossip_json(&g), case["value"], "{}", case["name"]);
        assert_eq!(spec_gossip(&g), b, "{}: spec layout", case["name"]);
        assert_eq!(g.encode(), b);
        assert!(b.len() <= GOSSIP_BYTES_MAX);
        let id = hx(&case["message_id"]);
        assert_eq!(id, spec_message_id(&b), "{}: message id rule", case["name"]);
        assert_eq!(id, gossip_message_id(&b));
    }
    // One entry, three messages (payload inline, stripped, announced): three ids.
    let id_of = |name: &str| gossip.iter().find(|c| c["name"] == name).map(|c| c["message_id"].clone()).unwrap();
    let ids = [id_of("entry_inline"), id_of("entry_inline_stripped"), id_of("announce_payload_not_held")];
    assert!(ids[0] != ids[1] && ids[0] != ids[2] && ids[1] != ids[2], "a stripped or announced copy has an id of its own");

    // Invalid inputs: refused with the stated error, naming their family.
    for case in v["invalid"].as_array().unwrap() {
        let family = case["family"].as_str().unwrap();
        let b = if case.get("bytes").is_some() {
            hx(&case["bytes"])
        } else {
            let mut b = hx(&case["prefix"]);
            b.resize(case["length"].as_u64().unwrap() as usize, 0);
            b
        };
        let err = decode_family(family, &b).expect_err(case["name"].as_str().unwrap());
        assert_eq!(code(&err), case["error"].as_str().unwrap(), "{family} {}: {err}", case["name"]);
        assert_eq!(what(&err), family);
        if family == "gossip" {
            assert_eq!(hx(&case["message_id"]), sha256(&b), "undecodable gossip: id is the hash of the bytes");
            assert_eq!(gossip_message_id(&b), sha256(&b));
        }
    }
}

#[test]
fn limits_are_checked_before_decoding() {
    // One byte over each limit, with a version byte that would otherwise be
    // refused: the length is what is reported.
    for (family, max) in [("request", REQUEST_BYTES_MAX), ("response", RESPONSE_BYTES_MAX), ("gossip", GOSSIP_BYTES_MAX)] {
        let err = decode_family(family, &vec![9u8; max + 1]).unwrap_err();
        assert_eq!(err, WireError::TooLarge { what: family, len: max + 1, max });
        // At the limit, the length is fine and the version byte is looked at.
        assert_eq!(code(&decode_family(family, &vec![9u8; max]).unwrap_err()), "unsupported_version");
    }
}

#[test]
fn the_inline_threshold_is_inclusive() {
    let f = fixtures();
    let at = vec![b'x'; GOSSIP_INLINE_PAYLOAD_MAX];
    let e = SignedEntry::sign(next_header(f.bob.agent_id(), None, T0, &at).unwrap(), &f.bob);
    let g = Gossip::for_entry(&e, Some(&at));
    assert!(matches!(g, Gossip::Entry(_)), "a payload of exactly the limit travels inline");
    let b = g.encode();
    assert!(b.len() < GOSSIP_BYTES_MAX);
    assert_eq!(gossip_message_id(&b), sha256(&b), "the id is the hash of the message, not the entry id");
    assert_ne!(gossip_message_id(&b), e.id().0);
    assert!(matches!(Gossip::for_entry(&e, None), Gossip::Announce(ref b) if *b == e.encode()), "no payload held: an announcement");
    let over = bob_payload();
    assert!(matches!(Gossip::for_entry(&f.b1, Some(&over)), Gossip::Announce(ref b) if *b == f.b1.encode()));
}

#[test]
fn requests_carry_replicator_messages() {
    let f = fixtures();
    let m = agora_sync::Message::Request { req: 3, author: f.alice.agent_id(), start: RangeStart { seq: 5, after: Some(f.a1.id()) }, limit: 10 };
    let r = WireRequest::from_message(f.workspace, m.clone()).unwrap();
    assert_eq!(r.workspace(), f.workspace);
    assert_eq!(r.into_message(), m);
    let resp = agora_sync::Message::Response { req: 1, entries: Vec::new(), more: false };
    assert!(WireRequest::from_message(f.workspace, resp).is_err(), "responses do not travel as requests");
}

// ---------------------------------------------------------------------------
// Properties.

fn arb32() -> impl Strategy<Value = [u8; 32]> {
    prop::array::uniform32(any::<u8>())
}

fn arb_head() -> impl Strategy<Value = Head> {
    (arb32(), any::<u64>(), arb32()).prop_map(|(a, seq, id)| Head { author: AgentId(a), seq, id: EntryId(id) })
}

fn arb_wire_entry() -> impl Strategy<Value = WireEntry> {
    (prop::collection::vec(any::<u8>(), 0..300), prop::option::of(prop::collection::vec(any::<u8>(), 0..300)))
        .prop_map(|(entry, payload)| WireEntry { entry, payload })
}

fn arb_request() -> impl Strategy<Value = WireRequest> {
    prop_oneof![
        (arb32(), prop::collection::vec(arb_head(), 0..8)).prop_map(|(w, heads)| WireRequest::Frontier { workspace: WorkspaceId(w), heads }),
        (arb32(), any::<u64>(), arb32(), any::<u64>(), prop::option::of(arb32()), any::<u32>()).prop_map(|(w, req, a, seq, after, limit)| WireRequest::Range {
            workspace: WorkspaceId(w),
            req,
            author: AgentId(a),
            start: RangeStart { seq, after: after.map(EntryId) },
            limit
        }),
    ]
}

fn arb_response() -> impl Strategy<Value = WireResponse> {
    prop_oneof![
        Just(WireResponse::Ack),
        (any::<u64>(), prop::collection::vec(arb_wire_entry(), 0..6), any::<bool>()).prop_map(|(req, entries, more)| WireResponse::Entries {
            req,
            entries,
            more
        }),
        Just(WireResponse::WrongWorkspace),
        Just(WireResponse::Busy),
        any::<u32>().prop_map(|ms| WireResponse::Wait { ms }),
    ]
}

fn arb_gossip() -> impl Strategy<Value = Gossip> {
    prop_oneof![
        arb_wire_entry().prop_map(Gossip::Entry),
        prop::collection::vec(any::<u8>(), 0..200).prop_map(Gossip::Announce),
        prop::collection::vec(any::<u8>(), 0..400).prop_map(Gossip::ForkProof),
    ]
}

/// Edit one encoding: overwrite, insert or delete a byte somewhere, so the
/// decoder sees inputs close to valid ones (where bugs live).
fn arb_edit() -> impl Strategy<Value = (u8, prop::sample::Index, u8)> {
    (0u8..3, any::<prop::sample::Index>(), any::<u8>())
}

fn apply_edit(mut b: Vec<u8>, (kind, at, byte): (u8, prop::sample::Index, u8)) -> Vec<u8> {
    let i = at.index(b.len() + 1);
    match kind {
        0 if i < b.len() => b[i] = byte,
        1 => b.insert(i, byte),
        _ if i < b.len() => {
            b.remove(i);
        }
        _ => b.push(byte),
    }
    b
}

/// Decoding `bytes` as `family` either refuses them or gives a value that
/// encodes back to exactly `bytes`; the message id never panics.
fn accepted_bytes_are_canonical(family: &str, bytes: &[u8]) {
    if let Ok(again) = decode_family(family, bytes) {
        assert_eq!(again, bytes, "{family}: accepted bytes must re-encode to themselves");
    }
    if family == "gossip" {
        let _ = gossip_message_id(bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn requests_round_trip(r in arb_request()) {
        let b = r.encode();
        prop_assert_eq!(&spec_request(&r), &b);
        prop_assert_eq!(WireRequest::decode(&b), Ok(r));
    }

    #[test]
    fn responses_round_trip(r in arb_response()) {
        let b = r.encode();
        prop_assert_eq!(&spec_response(&r), &b);
        prop_assert_eq!(WireResponse::decode(&b), Ok(r));
    }

    #[test]
    fn gossip_round_trips(g in arb_gossip()) {
        let b = g.encode();
        prop_assert_eq!(&spec_gossip(&g), &b);
        prop_assert_eq!(&gossip_message_id(&b), &spec_message_id(&b));
        prop_assert_eq!(Gossip::decode(&b), Ok(g));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_accepted_ones_are_canonical(
        body in prop::collection::vec(any::<u8>(), 0..200),
        versioned in any::<bool>(),
    ) {
        // Half the inputs start with the version byte, to reach the decoder.
        let mut b = if versioned { vec![WIRE_VERSION] } else { Vec::new() };
        b.extend(body);
        for family in ["request", "response", "gossip"] {
            accepted_bytes_are_canonical(family, &b);
        }
    }

    #[test]
    fn edited_encodings_never_panic_and_accepted_ones_are_canonical(
        r in arb_request(), s in arb_response(), g in arb_gossip(), e1 in arb_edit(), e2 in arb_edit(),
    ) {
        accepted_bytes_are_canonical("request", &apply_edit(apply_edit(r.encode(), e1), e2));
        accepted_bytes_are_canonical("response", &apply_edit(apply_edit(s.encode(), e1), e2));
        accepted_bytes_are_canonical("gossip", &apply_edit(apply_edit(g.encode(), e1), e2));
    }
}
