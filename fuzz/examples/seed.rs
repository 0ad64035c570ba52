//! Writes the checked-in seed corpus, `fuzz/corpus/<target>/`: the spec's test
//! vectors (`protocol-spec/vectors/*.json`, hex decoded) and valid encodings
//! made by the crates' own encoders, in each target's input layout. Run from
//! `fuzz/` after a format changes:
//!
//! ```text
//! cargo run --release --example seed
//! ```
//!
//! It replaces the files it writes (named `<source>-<name>`) and leaves any
//! other file in the corpus (a crash input kept as a regression seed) alone.

use agora_core::entry::next_header;
use agora_core::{AgentId, EntryId, ForkProof, SignedEntry};
use agora_fuzz::fixture::{self, T0, agent, key};
use agora_fuzz::replicator::{Script, run_with};
use agora_fuzz::{write_entries, write_log, write_swarm};
use agora_graph::event::Confidence;
use agora_graph::{Event, MemoryKind, Relation, TaskState};
use agora_merge::MergeEvent;
use agora_roster::RosterEvent;
use agora_sync::{Gossip, Head, Message, RangeStart, WireEntry, WireRequest, WireResponse};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

struct Corpus {
    root: PathBuf,
    written: usize,
    bytes: usize,
}

impl Corpus {
    /// Inputs over 8 KiB (the vectors of size limits) are left out: the
    /// targets run with a smaller `-max_len`, and the corpus stays small.
    fn put(&mut self, target: &str, name: &str, bytes: &[u8]) {
        if bytes.len() > 8 << 10 {
            return;
        }
        let dir = self.root.join(target);
        fs::create_dir_all(&dir).unwrap();
        let name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        fs::write(dir.join(name), bytes).unwrap();
        self.written += 1;
        self.bytes += bytes.len();
    }
}

fn vectors(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../protocol-spec/vectors").join(file);
    serde_json::from_str(&fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap_or("")).expect("hex in the vectors")
}

/// `(name, bytes)` of the field `field` of every item of `list`.
fn items(doc: &Value, list: &str, field: &str) -> Vec<(String, Vec<u8>)> {
    doc[list]
        .as_array()
        .map(|a| {
            a.iter()
                .enumerate()
                .filter(|(_, i)| i[field].is_string())
                .map(|(n, i)| {
                    let name = i["name"].as_str().or(i["kind"].as_str()).map_or_else(|| n.to_string(), str::to_string);
                    (name, unhex(&i[field]))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A chain of `n` entries of agent `who` with event payloads.
fn chain(who: u8, n: usize, from_ms: u64) -> Vec<(SignedEntry, Vec<u8>)> {
    let mut out: Vec<(SignedEntry, Vec<u8>)> = Vec::new();
    for i in 0..n {
        let payload = Event::Proposition { text: format!("{who} says {i}") }.encode();
        let h = next_header(agent(who), out.last().map(|(e, _)| e), from_ms + 1000 * i as u64, &payload).unwrap();
        out.push((SignedEntry::sign(h, key(who)), payload));
    }
    out
}

fn head(e: &SignedEntry) -> Head {
    Head { author: e.header().author, seq: e.header().seq, id: e.id() }
}

fn wire(e: &SignedEntry, p: Option<&[u8]>) -> WireEntry {
    WireEntry { entry: e.encode(), payload: p.map(<[u8]>::to_vec) }
}

/// The request id of the last range request the node sent to `peer` after `script`.
fn last_request(script: &Script, peer: u64) -> Option<(u64, AgentId, RangeStart)> {
    let h = run_with(&script.0);
    h.sent.iter().rev().find_map(|(to, m)| match m {
        Message::Request { req, author, start, .. } if to.0 == peer => Some((*req, *author, *start)),
        _ => None,
    })
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut c = Corpus { root, written: 0, bytes: 0 };
    let core = vectors("vectors.json");
    let events = vectors("events.json");
    let merge = vectors("merge.json");
    let roster = vectors("roster.json");
    let repl = vectors("replication.json");

    // signed_entry: every entry and header of the vectors.
    for (doc, tag) in [(&core, "core"), (&repl, "repl")] {
        for list in ["valid_entries", "invalid_entries", "entries"] {
            for (name, bytes) in items(doc, list, "signed_entry") {
                c.put("signed_entry", &format!("{tag}-{name}"), &bytes);
            }
        }
    }
    for (name, bytes) in items(&core, "valid_entries", "header_bytes") {
        c.put("signed_entry", &format!("core-header-{name}"), &bytes);
    }

    // fork_proof.
    for list in ["valid_fork_proofs", "invalid_fork_proofs"] {
        for (name, bytes) in items(&core, list, "proof") {
            c.put("fork_proof", &format!("core-{name}"), &bytes);
        }
    }
    c.put("fork_proof", "repl-fork_proof", &unhex(&repl["fork_proof"]["proof"]));

    // The replication vectors' entries, by name, with payloads.
    let entries: Vec<(String, SignedEntry, Option<Vec<u8>>)> = repl["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let p = e["payload"].as_str().map(|h| hex::decode(h).unwrap());
            (e["name"].as_str().unwrap().to_string(), SignedEntry::decode(&unhex(&e["signed_entry"])).unwrap(), p)
        })
        .collect();
    let by_name = |n: &str| entries.iter().find(|(name, ..)| name == n).map(|(_, e, p)| (e.clone(), p.clone())).unwrap();
    let (a1, p1) = by_name("alice_1");
    let (a2, p2) = by_name("alice_2");
    let (a2r, p2r) = by_name("alice_2_rival");
    let (b1, pb1) = by_name("bob_1");

    // pack_lines: a pack of the vectors' entries, and lines that break a rule.
    let mut pack = vec![agora_core::pack::header_line()];
    for (_, e, p) in &entries {
        pack.push(agora_core::pack::entry_line(e, p.as_deref()));
    }
    pack.push(agora_core::pack::entry_line(&a2, None));
    c.put("pack_lines", "enc-pack", pack.join("\n").as_bytes());
    let line = agora_core::pack::entry_line(&a1, p1.as_deref());
    c.put(
        "pack_lines",
        "enc-uppercase_hex",
        format!("{{\"agora_pack\":1}}\n{}", line.replace(&hex::encode(a1.encode()), &hex::encode_upper(a1.encode()))).as_bytes(),
    );
    c.put("pack_lines", "enc-wrong_payload", format!("{{\"agora_pack\":1}}\n{}", line.replacen("\"payload\":\"", "\"payload\":\"AA", 1)).as_bytes());
    c.put("pack_lines", "enc-spaces", format!("{{ \"agora_pack\" : 1 }}\n{}", line.replace(',', " , ")).as_bytes());

    // verify_entries: chains, a fork, the vectors' invalid entries.
    let raw = |e: &SignedEntry, p: &Option<Vec<u8>>| (e.encode(), p.clone());
    c.put("verify_entries", "repl-alice_chain", &write_entries(&[raw(&a1, &p1), raw(&a2, &p2)]));
    c.put("verify_entries", "repl-fork", &write_entries(&[raw(&a1, &p1), raw(&a2, &p2), raw(&a2r, &p2r), raw(&b1, &pb1)]));
    c.put("verify_entries", "repl-no_payloads", &write_entries(&[raw(&a1, &None), raw(&b1, &None), raw(&a2, &None)]));
    let mut wrong = p2.clone().unwrap();
    wrong[0] ^= 1;
    c.put("verify_entries", "repl-wrong_payload", &write_entries(&[raw(&a1, &p1), raw(&a2, &Some(wrong))]));
    for (name, bytes) in items(&core, "invalid_entries", "signed_entry") {
        c.put("verify_entries", &format!("core-{name}"), &write_entries(&[raw(&a1, &p1), (bytes, None), raw(&b1, &pb1)]));
    }
    let long = chain(0, 6, T0);
    c.put("verify_entries", "enc-chain6", &write_entries(&long.iter().map(|(e, p)| (e.encode(), Some(p.clone()))).collect::<Vec<_>>()));

    // graph_event: every event vector, its residue, and the refused ones.
    for list in ["valid", "invalid"] {
        for (name, bytes) in items(&events, list, "payload") {
            c.put("graph_event", &format!("events-{name}"), &bytes);
        }
        for (name, bytes) in items(&events, list, "residue") {
            c.put("graph_event", &format!("events-residue-{name}"), &bytes);
        }
    }

    // merge_event.
    for list in ["valid", "invalid"] {
        for (name, bytes) in items(&merge, list, "payload") {
            c.put("merge_event", &format!("merge-{name}"), &bytes);
        }
        for (name, bytes) in items(&merge, list, "residue") {
            c.put("merge_event", &format!("merge-residue-{name}"), &bytes);
        }
    }

    // roster_event.
    for list in ["events", "invalid", "checks"] {
        for (name, bytes) in items(&roster, list, "payload") {
            c.put("roster_event", &format!("roster-{list}-{name}"), &bytes);
        }
        for (name, bytes) in items(&roster, list, "residue") {
            c.put("roster_event", &format!("roster-residue-{list}-{name}"), &bytes);
        }
    }

    // graph_replay: logs whose events name each other (record i is [i + 1; 32]).
    let id = |i: u8| EntryId([i; 32]);
    let t = |s: &str| s.to_string();
    let debate = vec![
        Event::Proposition { text: t("usage-based pricing") },
        Event::Support { target: id(1), text: t("customers asked") },
        Event::Contradiction { target: id(1), text: t("churn risk") },
        Event::Refinement { target: id(1), resolves: vec![id(3)], text: t("tiered usage pricing") },
        Event::Question { text: t("which tiers?") },
        Event::Resolve { target: id(5), text: t("three tiers") },
        Event::Synthesis { sources: vec![id(2), id(4)], text: t("plan") },
        Event::Connection { a: id(4), b: id(7), text: t("related") },
        Event::Tension { a: id(2), b: id(3), text: t("tension") },
        Event::Reframe { target: id(7), text: t("reframed") },
        Event::Park { target: id(9), reason: t("later") },
        Event::Resume { target: id(9) },
    ];
    let memory = vec![
        Event::Claim {
            text: t("the sky is blue"),
            kind: MemoryKind::Semantic,
            sources: vec![],
            owner_scope: t("me"),
            confirmed: false,
            expires_at_ms: Some(5),
        },
        Event::Claim {
            text: t("the sky is grey"),
            kind: MemoryKind::Episodic,
            sources: vec![id(1)],
            owner_scope: t("me"),
            confirmed: true,
            expires_at_ms: None,
        },
        Event::Relate { from: id(2), to: id(1), relation: Relation::Contradicts, reason: t("weather") },
        Event::Confirm { target: id(1) },
        Event::Relate { from: id(2), to: id(1), relation: Relation::Update, reason: t("newer") },
        Event::FrameOpen { parent: None, query: t("why?"), branched_from: None, invalidation_condition: t("never") },
        Event::FrameOpen { parent: Some(id(6)), query: t("sub"), branched_from: None, invalidation_condition: t("") },
        Event::FrameEvidence { frame: id(7), text: t("seen") },
        Event::FrameConclude { frame: id(7), conclusion: t("because"), confidence_bp: 9000 },
        Event::FrameSuspend { frame: id(6) },
        Event::FrameResume { frame: id(6) },
        Event::FrameInvalidate { frame: id(6), reason: t("wrong") },
        Event::Task { objective: t("ship"), owner_scope: t("team") },
        Event::TaskUpdate { task: id(13), state: TaskState::InProgress, note: t("") },
        Event::Trajectory { task_query: t("ship it"), final_answer: t("done"), iterations: 3, converged: true },
        Event::Judgment { trajectory: id(15), success: true, reason: t("ok"), confidence: Confidence::High },
        Event::MemoryItem { title: t("lesson"), description: t("d"), content: t("c"), scope: t("s"), source_trajectory: Some(id(15)) },
        Event::Usage { trajectory: id(15), item: id(17), rank: 1, score_bp: 5000 },
        Event::TaskUpdate { task: id(13), state: TaskState::Done, note: t("shipped") },
    ];
    for (name, log) in [("debate", &debate), ("memory", &memory)] {
        let items: Vec<(u8, u8, u16, u8, Vec<u8>)> =
            log.iter().enumerate().map(|(i, e)| ((i % 3) as u8, (i / 3 + 1) as u8, 10 * i as u16, 0, e.encode())).collect();
        c.put("graph_replay", &format!("enc-{name}"), &write_log(&items));
        // The same with some payloads redacted (with and without residue), one missing, one raw.
        let mixed: Vec<(u8, u8, u16, u8, Vec<u8>)> = items
            .iter()
            .enumerate()
            .map(|(i, (a, s, ts, _, p))| match i % 5 {
                1 => (*a, *s, *ts, 1, Event::residue(p)),
                2 => (*a, *s, *ts, 2, Vec::new()),
                3 if i == 3 => (*a, *s, *ts, 3, p.clone()),
                4 if i == 4 => (*a, *s, *ts, 0, b"a raw note".to_vec()),
                _ => (*a, *s, *ts, 0, p.clone()),
            })
            .collect();
        c.put("graph_replay", &format!("enc-{name}-mixed"), &write_log(&mixed));
    }
    // Concurrent events of two agents on one target, arriving out of order.
    let concurrent = vec![
        (0u8, 1u8, 100u16, 0u8, Event::Question { text: t("q") }.encode()),
        (1, 1, 50, 0, Event::Resolve { target: id(1), text: t("a") }.encode()),
        (2, 1, 200, 0, Event::Resolve { target: id(1), text: t("b") }.encode()),
        (0, 2, 300, 0, Event::Park { target: id(1), reason: t("p") }.encode()),
        (1, 2, 300, 0, Event::Resume { target: id(1) }.encode()),
    ];
    c.put("graph_replay", "enc-concurrent", &write_log(&concurrent));
    let undecodable: Vec<(u8, u8, u16, u8, Vec<u8>)> =
        items(&events, "invalid", "payload").into_iter().enumerate().map(|(i, (_, p))| ((i % 4) as u8, 1 + i as u8, i as u16, 0, p)).collect();
    c.put("graph_replay", "events-invalid", &write_log(&undecodable));

    // roster_derive: founder chains (seq is the second field).
    let admit = |i: u8| RosterEvent::Admit { agent: agent(i), note: format!("agent {i}") }.encode();
    let remove_after = |i: u8, last: u64| RosterEvent::RemoveAfter { agent: agent(i), last_seq: last, reason: t("gone") }.encode();
    let remove = |i: u8| RosterEvent::Remove { agent: agent(i), reason: t("old") }.encode();
    let founder = vec![
        (0u8, 1u8, 0u16, 0u8, admit(1)),
        (0, 2, 1, 0, admit(2)),
        (0, 3, 2, 0, remove_after(2, 7)),
        (0, 4, 3, 0, admit(3)),
        (0, 5, 4, 0, remove(3)),
        (0, 6, 5, 0, remove_after(0, 1)),
        (0, 7, 6, 0, Event::Proposition { text: t("not a roster event") }.encode()),
        (0, 8, 7, 0, admit(2)),
    ];
    c.put("roster_derive", "enc-founder", &write_log(&founder));
    let mut redacted = founder.clone();
    redacted[2] = (0, 3, 2, 1, RosterEvent::residue(&remove_after(2, 7)));
    redacted[3].3 = 2;
    redacted[6].3 = 3;
    c.put("roster_derive", "enc-redacted-missing", &write_log(&redacted));
    let mut forked = founder.clone();
    forked.push((0, 4, 9, 0, admit(4)));
    c.put("roster_derive", "enc-forked", &write_log(&forked));
    let invalid: Vec<(u8, u8, u16, u8, Vec<u8>)> = items(&roster, "invalid", "payload")
        .into_iter()
        .chain(items(&roster, "checks", "payload"))
        .enumerate()
        .map(|(i, (_, p))| (0, 1 + i as u8, i as u16, 0, p))
        .collect();
    c.put("roster_derive", "roster-invalid", &write_log(&invalid));

    // merge_views: swarms with merge events naming entries ([k; 32]) and agents ([0xf1 + i; 32]).
    let agent_ph = |i: u8| AgentId([0xf1 + i; 32]);
    let accept = |who: u8, up_to_seq: u64, k: u8| MergeEvent::Accept { author: agent_ph(who), up_to_seq, head: id(k) }.encode();
    let dispute = |k: u8, counter: bool| MergeEvent::Dispute { target: id(k), reason: t("no"), counter_claim: counter.then(|| t("instead")) }.encode();
    let prop = |s: &str| Event::Proposition { text: t(s) }.encode();
    let swarm = vec![
        (0u8, 0u8, 0u8, prop("a1")),
        (0, 0, 0, Event::Support { target: id(1), text: t("a2") }.encode()),
        (1, 0, 0, accept(0, 2, 2)),
        (2, 0, 0, dispute(2, false)),
        (2, 0, 0, MergeEvent::Withdraw { dispute: id(4) }.encode()),
        (1, 0, 0, dispute(1, true)),
        (3, 0, 0, accept(1, 2, 6)),
        (3, 0, 0, Event::Contradiction { target: id(1), text: t("no") }.encode()),
    ];
    c.put("merge_views", "enc-accept_dispute_withdraw", &write_swarm(&swarm));
    let mut mixed = swarm.clone();
    mixed[1].2 = 1;
    mixed[3].2 = 2;
    mixed[4].2 = 3;
    mixed[6].2 = 1;
    c.put("merge_views", "enc-redacted_missing", &write_swarm(&mixed));
    let fork = vec![
        (0u8, 0u8, 0u8, prop("a1")),
        (0, 0, 0, prop("a2")),
        (0, 1, 0, prop("a2 rival")),
        (1, 0, 0, accept(0, 2, 2)),
        (1, 0, 0, accept(0, 1, 1)),
        (0, 0, 0, MergeEvent::ForkResolution { fork_number: 1, fork_seq: 2, continue_with: id(3) }.encode()),
        (2, 0, 0, accept(0, 3, 6)),
        (0, 2, 0, MergeEvent::ForkResolution { fork_number: 2, fork_seq: 2, continue_with: id(2) }.encode()),
        (2, 0, 0, dispute(3, false)),
    ];
    c.put("merge_views", "enc-fork_resolution", &write_swarm(&fork));
    let swarm_vectors: Vec<(u8, u8, u8, Vec<u8>)> = items(&merge, "valid", "payload")
        .into_iter()
        .chain(items(&merge, "invalid", "payload"))
        .filter(|(_, p)| p.len() <= 1024)
        .enumerate()
        .map(|(i, (_, p))| ((i % 4) as u8, 0, 0, p))
        .collect();
    c.put("merge_views", "merge-payloads", &write_swarm(&swarm_vectors));

    // sync_wire: every wire vector, valid and refused.
    for list in ["requests", "responses", "gossip", "invalid"] {
        for (name, bytes) in items(&repl, list, "bytes") {
            let family = repl[list].as_array().unwrap().iter().find(|i| i["name"] == name.as_str()).and_then(|i| i["family"].as_str()).unwrap_or(list);
            if bytes.len() <= 1 << 16 {
                c.put("sync_wire", &format!("repl-{family}-{name}"), &bytes);
            }
        }
    }

    // replicator: scripted peers. Configuration 0: default limits and the
    // roster; 1: small limits; 3: small limits, no roster.
    let ws = fixture::workspace();
    let frontier = |heads: Vec<Head>| WireRequest::Frontier { workspace: ws, heads }.encode();
    let entries_response = |req: u64, entries: Vec<WireEntry>, more: bool| WireResponse::Entries { req, entries, more }.encode();
    let gossip = |g: Gossip| g.encode();
    for conf in [0u8, 1, 3] {
        // A peer claims alice's chain (seq 2) and serves it when asked.
        let s = Script::new(conf).request(1, &frontier(vec![head(&a2)]));
        let (req, _, _) = last_request(&s, 1).expect("a range request");
        let s = s.response(1, conf == 1, &entries_response(req, vec![wire(&a1, p1.as_deref()), wire(&a2, p2.as_deref())], false));
        c.put("replicator", &format!("enc-{conf}-range_sync"), &s.0);
        // Then a rival branch is announced by another peer: a fork.
        let s = s.request(2, &frontier(vec![head(&a2r)]));
        let s = match last_request(&s, 2) {
            Some((req, _, _)) => s.response(2, false, &entries_response(req, vec![wire(&a2r, p2r.as_deref())], false)),
            None => s,
        };
        c.put("replicator", &format!("enc-{conf}-fork"), &s.0);
        // Gossip: entries inline, an announcement, a fork proof; bob too.
        let proof = ForkProof::new(a2.clone(), a2r.clone()).unwrap().encode();
        let s = Script::new(conf)
            .gossip(1, &gossip(Gossip::Entry(wire(&a1, p1.as_deref()))))
            .gossip(2, &gossip(Gossip::Entry(wire(&a2, p2.as_deref()))))
            .gossip(1, &gossip(Gossip::Announce(a2r.encode())))
            .gossip(2, &gossip(Gossip::ForkProof(proof)))
            .gossip(1, &gossip(Gossip::Entry(wire(&b1, None))))
            .timer();
        c.put("replicator", &format!("enc-{conf}-gossip"), &s.0);
        // A longer chain of alice by gossip out of order: later entries first.
        let long = chain(0, 5, T0 + 10_000);
        let mut s = Script::new(conf);
        for (e, p) in long.iter().rev() {
            s = s.gossip(1, &gossip(Gossip::Entry(wire(e, Some(p)))));
        }
        let s = s.timer().advance(2_000).timer();
        c.put("replicator", &format!("enc-{conf}-gossip_out_of_order"), &s.0);
        // A peer asks for this node's chain and announces its frontier.
        let erin = agent(fixture::LOCAL);
        let s = Script::new(conf)
            .request(1, &WireRequest::Range { workspace: ws, req: 7, author: erin, start: RangeStart::at(1), limit: 4 }.encode())
            .request(1, &frontier(vec![]))
            .append(b"agev\x01\x00\x03new")
            .advance(300)
            .request(2, &WireRequest::Range { workspace: ws, req: 1, author: erin, start: RangeStart { seq: 2, after: None }, limit: 1 }.encode());
        c.put("replicator", &format!("enc-{conf}-serve"), &s.0);
        // A peer that claims and never answers: timeouts, retries to another peer, Busy, Wait.
        let s = Script::new(conf)
            .request(1, &frontier(vec![head(&a2)]))
            .request(2, &frontier(vec![head(&a2)]))
            .response(1, false, &WireResponse::Busy.encode())
            .response(2, false, &WireResponse::Wait { ms: 0 }.encode())
            .advance(11_000)
            .timer()
            .connect(3)
            .request(3, &frontier(vec![head(&a1), head(&b1)]))
            .advance(12_000)
            .timer();
        c.put("replicator", &format!("enc-{conf}-timeouts"), &s.0);
        // Bad input: garbage, a wrong workspace, a forged entry; a ban that ends.
        let mut forged = a1.encode();
        let n = forged.len();
        forged[n - 40] ^= 1;
        let s = Script::new(conf)
            .request(1, b"\x02\xff\xff")
            .request(2, &WireRequest::Frontier { workspace: agora_sync::WorkspaceId([7; 32]), heads: vec![head(&a1)] }.encode())
            .gossip(2, &gossip(Gossip::Entry(WireEntry { entry: forged, payload: None })))
            .advance(700_000)
            .connect(1)
            .connect(2)
            .request(1, &frontier(vec![head(&b1)]));
        c.put("replicator", &format!("enc-{conf}-bad_input"), &s.0);
        // The roster changes: dave removed with a cut-off, bob removed, everyone admitted.
        let dave = chain(3, 3, T0);
        let s = Script::new(conf)
            .request(1, &frontier(vec![head(&dave[2].0), head(&b1)]))
            .admit(0b1_1111, 0)
            .admit(0b1_0111, 1)
            .gossip(1, &gossip(Gossip::Entry(wire(&dave[0].0, Some(&dave[0].1)))))
            .gossip(1, &gossip(Gossip::Entry(wire(&dave[1].0, Some(&dave[1].1)))))
            .admit(0x80, 0)
            .timer();
        c.put("replicator", &format!("enc-{conf}-roster"), &s.0);
        // An entry arrives without its payload, which another peer then supplies.
        let s = Script::new(conf).request(1, &frontier(vec![head(&a1)]));
        let s = match last_request(&s, 1) {
            Some((req, _, _)) => s.response(1, false, &entries_response(req, vec![wire(&a1, None)], false)),
            None => s,
        };
        let s = s.request(2, &frontier(vec![head(&a1)])).timer();
        let s = match last_request(&s, 2) {
            Some((req, _, _)) => s.response(2, true, &entries_response(req, vec![wire(&a1, p1.as_deref())], false)),
            None => s,
        };
        c.put("replicator", &format!("enc-{conf}-missing_payload"), &s.0);
    }
    // A response cut short (`more`) and resumed.
    let long = chain(1, 6, T0 + 20_000);
    let s = Script::new(1).request(1, &frontier(vec![head(&long[5].0)]));
    if let Some((req, _, start)) = last_request(&s, 1) {
        let first: Vec<WireEntry> = long.iter().filter(|(e, _)| e.header().seq >= start.seq).take(2).map(|(e, p)| wire(e, Some(p))).collect();
        let s = s.response(1, false, &entries_response(req, first, true));
        let s = match last_request(&s, 1) {
            Some((req, _, start)) => {
                let rest: Vec<WireEntry> = long.iter().filter(|(e, _)| e.header().seq >= start.seq).map(|(e, p)| wire(e, Some(p))).collect();
                s.response(1, false, &entries_response(req, rest, false))
            }
            None => s,
        };
        c.put("replicator", "enc-1-more", &s.0);
    }
    println!("wrote {} files, {} bytes, under {}", c.written, c.bytes, c.root.display());
}
