//! The merge layer across real node processes on 127.0.0.1: the pricing
//! debate between three agents with a dispute and a later synthesis, an honest
//! fork that its author resolves, and a malicious equivocation that every
//! honest node detects and proves. Every node must compute the same merged
//! view (same view hash) once it holds the same entries.

mod support;

use serde_json::Value;
use support::*;

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

/// Name `founder`'s workspace in `home`'s configuration, as the node's
/// `--founder` flag did: a command run without the node reads the founder
/// from there, and counts the chains that founder's roster admits.
fn configure_founder(home: &std::path::Path, founder: &str) {
    std::fs::write(home.join("agora.toml"), format!("[workspace]\nfounder = \"{founder}\"\n")).unwrap();
}

/// Wait until every node prints the same view hash, and return it.
fn converged(nodes: &[&Node]) -> String {
    wait_for("every node to compute the same merged view", || {
        let hashes: Vec<String> = nodes.iter().map(|n| json(&n.home, &["view-hash"])["view_hash"].as_str().unwrap().to_string()).collect();
        hashes.iter().all(|h| *h == hashes[0]).then(|| hashes[0].clone())
    })
}

#[test]
fn the_pricing_debate_between_three_agents_with_a_dispute_and_a_synthesis() {
    let Trio { agents: [a, b, c], nodes: [na, nb, nc] } = Trio::start();
    let p1 = id_of(&json(&a.home, &["propose", "Usage-based pricing aligns our incentives with customers"]));
    wait_for("B and C to hold the proposition", || (nb.holds(&p1) && nc.holds(&p1)).then_some(()));
    let c1 = id_of(&json(&b.home, &["contradict", &p1, "Enterprise procurement needs predictable costs"]));
    let s1 = id_of(&json(&c.home, &["support", &p1, "Competitors bill by usage and win deals"]));
    wait_for("A to hold the contradiction", || na.holds(&c1).then_some(()));
    // A reads B's contradiction, accepts B's chain through it, and refines.
    json(&a.home, &["accept", &b.id, &c1]);
    let r1 = id_of(&json(&a.home, &["refine", &p1, "Two-track: seats for enterprise, usage for self-serve", "--resolves", &c1]));
    wait_for("B to hold the refinement", || nb.holds(&r1).then_some(()));
    // B accepts A's reasoning through the proposition and disputes the refinement.
    let p1_seq = json(&a.home, &["show", &p1])["seq"].as_u64().unwrap().to_string();
    let r1_seq = json(&a.home, &["show", &r1])["seq"].as_u64().unwrap();
    json(&b.home, &["accept", &a.id, &p1_seq]);
    let d1 = id_of(&json(&b.home, &["dispute", &r1, "Two tracks double billing operations", "--counter", "One plan with usage caps"]));
    // C accepts all of A's chain so far and B's contradiction, then synthesizes.
    json(&c.home, &["accept", &a.id, &r1]);
    wait_for("C to hold B's contradiction", || nc.holds(&c1).then_some(()));
    json(&c.home, &["accept", &b.id, &c1]);
    let syn = id_of(&json(&c.home, &["synthesize", &p1, &c1, "Price should track realized value, with a predictable cap"]));
    let hash = converged(&[&na, &nb, &nc]);
    assert_eq!(hash.len(), 64);
    for n in [&na, &nb, &nc] {
        assert!(n.holds(&d1) && n.holds(&syn) && n.holds(&s1));
        // A merge event is held but is no node of the reasoning graph
        // (protocol-spec/merge.md), and `status` says so.
        let out = agora(&n.home, &["status", &d1]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("is a merge event (dispute)"), "{err}");
        // The disagreement map: the refinement, disputed by B with a counter-claim,
        // with the reasoning that led to it.
        let map = json(&n.home, &["disputes"]);
        let disputed = map["disputed"].as_array().unwrap();
        assert_eq!(disputed.len(), 1, "{map}");
        let d = &disputed[0];
        assert_eq!(d["target"], r1.as_str());
        assert_eq!(d["disputes"][0]["by"], b.id.as_str());
        assert_eq!(d["disputes"][0]["counter_claim"], "One plan with usage caps");
        let ancestors: Vec<&str> = d["ancestors"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        assert!(ancestors.contains(&p1.as_str()) && ancestors.contains(&c1.as_str()), "{d}");
        let accepted_by: Vec<&str> = d["accepted_by"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        assert!(accepted_by.contains(&c.id.as_str()), "C accepted through the refinement: {d}");
        // The summary counts the acceptors instead of listing them.
        let short = json(&n.home, &["disputes", "--summary"]);
        assert_eq!(short["disputed"][0]["accepted_by"], serde_json::json!([]), "{short}");
        assert_eq!(short["disputed"][0]["accepted_by_count"].as_u64(), Some(accepted_by.len() as u64), "{short}");
        assert_eq!(short["disputed"][0]["ancestors"], d["ancestors"], "{short}");
        // A (its own chain) and C accept the refinement; B accepts up to it and
        // disputes it. With 2 of 3 it is accepted; with 3 of 3, A's chain is
        // accepted only up to the event before it. Either way the first disputed
        // event of A's chain (the fork point of the provenance) is the refinement.
        let p1_seq: u64 = p1_seq.parse().unwrap();
        for (k, accepted) in [("2", r1_seq), ("3", p1_seq)] {
            let cons = json(&n.home, &["consensus", "--quorum", k]);
            let chain_a = cons["chains"].as_array().unwrap().iter().find(|ch| ch["author"] == a.id.as_str()).unwrap();
            assert_eq!(chain_a["first_disputed"]["id"], r1.as_str(), "{chain_a}");
            assert_eq!(chain_a["first_disputed"]["seq"].as_u64(), Some(r1_seq));
            assert_eq!(chain_a["accepted_seq"].as_u64(), Some(accepted), "quorum {k}: {chain_a}");
            assert_eq!(chain_a["disputed"][0]["by"][0]["agent"], b.id.as_str());
        }
        // Statuses as each agent sees them. B accepted A only through the
        // proposition: for B it is still contested by B's own contradiction,
        // and the refinement is not part of B's view. A and C accepted the
        // contradiction and the refinement: the proposition is superseded and
        // the contradiction answered.
        let status_in =
            |view: &Value, id: &str| view["nodes"].as_array().unwrap().iter().find(|x| x["id"] == id).map(|x| x["status"].as_str().unwrap().to_string());
        let pb = json(&n.home, &["perspective", &b.id]);
        assert_eq!(status_in(&pb, &p1).as_deref(), Some("contested"), "{pb}");
        assert_eq!(status_in(&pb, &r1), None, "{pb}");
        for agent in [&a.id, &c.id] {
            let view = json(&n.home, &["perspective", agent]);
            assert_eq!(status_in(&view, &p1).as_deref(), Some("superseded"), "{view}");
            assert_eq!(status_in(&view, &c1).as_deref(), Some("resolved"), "{view}");
            assert!(status_in(&view, &r1).is_some(), "{view}");
        }
        let pc = json(&n.home, &["perspective", &c.id]);
        assert!(status_in(&pc, &syn).is_some(), "C's synthesis is in C's view: {pc}");
        disputes_and_successors_show_where_agents_read(&n.home, [&a.id, &b.id, &c.id], &p1, &r1, &d1);
    }
    // The same answers with no node running, off a merged view computed from
    // the store (C's home, whose configuration names the founder).
    let mut nc = nc;
    nc.terminate();
    configure_founder(&c.home, &a.id);
    disputes_and_successors_show_where_agents_read(&c.home, [&a.id, &b.id, &c.id], &p1, &r1, &d1);
    let nc = Node::start(&c, &a.id, &[&na.addr, &nb.addr]);
    // B withdraws: every node agrees on the new view.
    json(&b.home, &["withdraw", &d1]);
    let after = converged(&[&na, &nb, &nc]);
    assert_ne!(after, hash);
    assert!(json(&nc.home, &["disputes"])["disputed"].as_array().unwrap().is_empty());
    // The Automerge document follows the node's merged view.
    let doc = a.home.parent().unwrap().join("view.automerge");
    let pulled = json(&a.home, &["automerge", "pull", "--doc", doc.to_str().unwrap()]);
    assert_eq!(pulled["view_hash"], after.as_str(), "{pulled}");
    assert!(pulled["nodes"].as_u64().unwrap() >= 5);
    let first_bytes = pulled["bytes_received"].as_u64().unwrap();
    // Each pull after a change brings the document up to date. Automerge sends
    // the whole document while one change is more than a third of its history,
    // and only the changes after that: the last pulls are small.
    let mut last = pulled.clone();
    let mut questions = Vec::new();
    for i in 0..5 {
        questions.push(id_of(&json(&a.home, &["ask", &format!("Open question {i}: do we grandfather existing customers?")])));
        last = json(&a.home, &["automerge", "pull", "--doc", doc.to_str().unwrap()]);
        assert_eq!(last["view_hash"], json(&a.home, &["view-hash"])["view_hash"], "{last}");
    }
    assert!(last["bytes_received"].as_u64().unwrap() * 2 < first_bytes, "only the change travels: {last} after {pulled}");
    // The node publishes off its live view, writing only what changed; a
    // redaction changes a node's text and not the graph's digest, so the
    // publisher writes everything again after the graph is replayed: the
    // text is gone from the document too.
    let node_text = |path: &std::path::Path, id: &str| {
        let tree = agora_automerge::read_tree(&automerge::AutoCommit::load(&std::fs::read(path).unwrap()).unwrap()).unwrap();
        let Some(agora_automerge::Tree::Map(nodes)) = tree.get("nodes") else { panic!("no nodes map") };
        let Some(agora_automerge::Tree::Map(node)) = nodes.get(id) else { panic!("no node {id}") };
        match node.get("text") {
            Some(agora_automerge::Tree::Str(t)) => t.clone(),
            other => panic!("text of {id}: {other:?}"),
        }
    };
    assert!(node_text(&doc, &questions[2]).contains("Open question 2"));
    json(&a.home, &["redact", &questions[2]]);
    json(&a.home, &["automerge", "pull", "--doc", doc.to_str().unwrap()]);
    assert_eq!(node_text(&doc, &questions[2]), "", "the redacted text left the document");
    assert!(node_text(&doc, &questions[3]).contains("Open question 3"));
    // The document is read only: a client's own change, sent in its sync
    // messages, is dropped, and another client never sees it.
    {
        use automerge::transaction::Transactable;
        let mut forged = automerge::AutoCommit::load(&std::fs::read(&doc).unwrap()).unwrap();
        forged.put(automerge::ROOT, "view_hash", "forged by a client").unwrap();
        std::fs::write(&doc, forged.save()).unwrap();
    }
    json(&a.home, &["automerge", "pull", "--doc", doc.to_str().unwrap()]);
    let other = a.home.parent().unwrap().join("other.automerge");
    let fresh = json(&a.home, &["automerge", "pull", "--doc", other.to_str().unwrap(), "--client", "another"]);
    assert_eq!(fresh["view_hash"], json(&a.home, &["view-hash"])["view_hash"], "the forged change did not reach the node: {fresh}");
    // Every value the key holds, conflicting ones included.
    use automerge::ReadDoc;
    let text = format!("{:?}", automerge::AutoCommit::load(&std::fs::read(&other).unwrap()).unwrap().get_all(automerge::ROOT, "view_hash").unwrap());
    assert!(!text.contains("forged"), "{text}");
}

/// `status` and `search` of the debate's events say who disputes them (with
/// the counter-claim) and who accepts them, and the superseded proposition's
/// current successor; a search with `--current` (what `orient` asks) finds
/// the refinement by the proposition's words.
fn disputes_and_successors_show_where_agents_read(home: &std::path::Path, [a, b, c]: [&str; 3], p1: &str, r1: &str, d1: &str) {
    let refined = json(home, &["status", r1]);
    assert_eq!(refined["disputed_by"][0]["by"], b, "{refined}");
    assert_eq!(refined["disputed_by"][0]["dispute"], d1, "{refined}");
    assert_eq!(refined["disputed_by"][0]["counter_claim"], "One plan with usage caps", "{refined}");
    let acceptors: Vec<&str> = refined["accepted_by"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(acceptors, vec![c], "C accepted A's chain through the refinement, B only through the proposition (the author is not listed): {refined}");
    assert_ne!(a, c);
    let text = ok(home, &["status", r1]);
    assert!(text.contains("disputed by") && text.contains("(counter-claim: One plan with usage caps)"), "{text}");
    let proposition = json(home, &["status", p1]);
    assert_eq!(proposition["status"], "superseded", "{proposition}");
    assert_eq!(proposition["successor"]["id"], r1, "{proposition}");
    assert!(proposition["accepted_by"].as_array().unwrap().iter().any(|x| x == b), "B accepted through the proposition: {proposition}");
    assert!(proposition.get("disputed_by").is_none(), "nobody disputes the proposition: {proposition}");
    // Plain search leaves the superseded proposition out and does not find
    // the refinement by the proposition's words; `--current` does.
    let plain = json(home, &["search", "incentives"]);
    assert!(plain["hits"].as_array().unwrap().iter().all(|h| h["id"] != p1 && h["id"] != r1), "{plain}");
    let current = json(home, &["search", "--current", "incentives"]);
    let hit = current["hits"].as_array().unwrap().iter().find(|h| h["id"] == r1).unwrap_or_else(|| panic!("the refinement: {current}"));
    assert_eq!(hit["found_through"], serde_json::json!([p1]), "{hit}");
    assert_eq!(hit["disputed_by"][0]["counter_claim"], "One plan with usage caps", "{hit}");
    let all = json(home, &["search", "--all", "incentives"]);
    let old = all["hits"].as_array().unwrap().iter().find(|h| h["id"] == p1).unwrap_or_else(|| panic!("the proposition: {all}"));
    assert_eq!(old["successor"]["id"], r1, "{old}");
}

/// A fork from a restored backup: every node proves it and freezes the chain
/// until its author resolves it. On the way, `disputes` through a node
/// (off its live view) says who builds on which side, the same as a
/// recompute of its store.
#[test]
fn an_honest_fork_is_resolved_by_its_author() {
    let (h, p, q) = (Agent::new(), Agent::new(), Agent::new());
    let founder = h.id.clone();
    admit(&h, &[&p, &q]);
    json(&h.home, &["propose", "first"]);
    // A backup of H's home, taken now.
    let backup = h.home.parent().unwrap().join("backup");
    copy_dir(&h.home, &backup);
    let mut nh = Node::start(&h, &founder, &[]);
    let mut np = Node::start(&p, &founder, &[&nh.addr]);
    let nq = Node::start(&q, &founder, &[&np.addr]);
    let later = id_of(&json(&h.home, &["propose", "second, before the restore"]));
    wait_for("P to hold the entry made before the restore", || np.holds(&later).then_some(()));
    // P builds on it before anyone knows it will be on a side of a fork.
    json(&p.home, &["support", &later, "agreed, before the fork"]);
    // H loses its disk and restores the backup, then writes on.
    nh.kill();
    std::fs::remove_dir_all(&h.home).unwrap();
    copy_dir(&backup, &h.home);
    let _ = std::fs::remove_file(h.home.join("node.json"));
    let restored = id_of(&json(&h.home, &["propose", "second, after the restore"]));
    let nh = Node::start(&h, &founder, &[&np.addr]);
    // Both branches meet: each node holds both and a proof of the fork.
    wait_for("both nodes to hold both branches", || (nh.holds(&later) && np.holds(&restored)).then_some(()));
    for n in [&nh, &np, &nq] {
        wait_for("the fork proof", || (!json(&n.home, &["forks"]).as_array().unwrap().is_empty()).then_some(()));
        let cons = json(&n.home, &["consensus", "--quorum", "1"]);
        let chain = cons["chains"].as_array().unwrap().iter().find(|c| c["author"] == h.id.as_str()).unwrap().clone();
        // H's chain: seqs 1-2 admit P and Q, seq 3 "first", seq 4 forked.
        assert_eq!(chain["frozen_at"].as_u64(), Some(4), "frozen at the fork until resolved: {chain}");
    }
    // Who builds on which side, through P's node (off its live view): P on
    // the side it saw first (noted before the fork was known), then Q on the
    // other (noted as it arrives).
    let side_of = |map: &Value, member: &str| -> Value {
        let forks = map["forks"].as_array().unwrap();
        let branches = forks.iter().find(|f| f["author"] == h.id.as_str()).unwrap()["branches"].as_array().unwrap();
        branches.iter().find(|b| b["members"].as_array().unwrap().iter().any(|m| m == member)).unwrap().clone()
    };
    let map = json(&p.home, &["disputes"]);
    assert_eq!(side_of(&map, &later)["built_on_by"], serde_json::json!([p.id.as_str()]), "{map}");
    assert_eq!(side_of(&map, &restored)["built_on_by"], serde_json::json!([]), "{map}");
    let against = id_of(&json(&q.home, &["contradict", &restored, "the restored branch is wrong"]));
    wait_for("P to hold Q's contradiction", || np.holds(&against).then_some(()));
    let map = json(&p.home, &["disputes"]);
    assert_eq!(side_of(&map, &restored)["built_on_by"], serde_json::json!([q.id.as_str()]), "{map}");
    // H cannot extend its forked chain until it chooses a branch.
    let refused = agora(&h.home, &["propose", "third"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("resolve-fork"), "{}", String::from_utf8_lossy(&refused.stderr));
    // Only a branch of its own chain (planned over that chain alone).
    wait_for("H to hold Q's contradiction", || nh.holds(&against).then_some(()));
    let foreign = agora(&h.home, &["resolve-fork", &against]);
    let said = String::from_utf8_lossy(&foreign.stderr);
    assert!(!foreign.status.success() && said.contains("only the forked author can resolve its chain"), "{said}");
    let resolution = id_of(&json(&h.home, &["resolve-fork", &restored]));
    let third = id_of(&json(&h.home, &["propose", "third, on the kept branch"]));
    wait_for("P and Q to hold the resolution and what follows", || {
        (np.holds(&resolution) && np.holds(&third) && nq.holds(&resolution) && nq.holds(&third)).then_some(())
    });
    converged(&[&nh, &np, &nq]);
    let cons = json(&np.home, &["consensus", "--quorum", "1"]);
    let chain = cons["chains"].as_array().unwrap().iter().find(|c| c["author"] == h.id.as_str()).unwrap().clone();
    assert!(chain["frozen_at"].is_null(), "resolved: {chain}");
    assert_eq!(chain["view_len"].as_u64(), Some(6), "2 admits, first, restored second, resolution, third: {chain}");
    // Both branches stay stored and inspectable.
    assert!(np.holds(&later) && np.holds(&restored));
    // The audit reports the fork (exit 3: a forked chain is a finding).
    let out = agora(&np.home, &["--json", "audit", &h.id]);
    let audit: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(audit["fork_seqs"], serde_json::json!([4]), "{audit}");
    assert_eq!(audit["resolutions"].as_array().unwrap().len(), 1, "{audit}");
    // The disagreement map P's node gave off its live view is the one a
    // recompute of its store gives once the node stops.
    let live = json(&p.home, &["disputes"]);
    assert_eq!(side_of(&live, &restored)["kept"], true, "{live}");
    // The summary counts each side's entries instead of listing them.
    let short = json(&p.home, &["disputes", "--summary"]);
    for (full, side) in live["forks"][0]["branches"].as_array().unwrap().iter().zip(short["forks"][0]["branches"].as_array().unwrap()) {
        assert_eq!(side["members"], serde_json::json!([]), "{short}");
        assert_eq!(side["member_count"].as_u64(), Some(full["members"].as_array().unwrap().len() as u64), "{short}");
        assert_eq!(side["built_on_by"], full["built_on_by"], "{short}");
    }
    np.kill();
    let _ = std::fs::remove_file(p.home.join("node.json"));
    configure_founder(&p.home, &founder);
    assert_eq!(json(&p.home, &["disputes"]), live);
}

#[test]
fn a_malicious_equivocation_is_detected_and_proven_by_every_honest_node() {
    let (a, b, m) = (Agent::new(), Agent::new(), Agent::new());
    let founder = a.id.clone();
    admit(&a, &[&b, &m]);
    json(&m.home, &["propose", "shared start"]);
    // M copies its key and store to a second machine and says two different
    // things at the same seq.
    let twin_dir = tempfile::tempdir().unwrap();
    let twin = twin_dir.path().join("home");
    copy_dir(&m.home, &twin);
    let x = id_of(&json(&m.home, &["propose", "to A: the deal is signed"]));
    let y = id_of(&json(&twin, &["propose", "to B: the deal fell through"]));
    let na = Node::start(&a, &founder, &[]);
    let nb = Node::start(&b, &founder, &[&na.addr]);
    let nm = Node::start(&m, &founder, &[&na.addr]);
    let twin_agent = Agent::existing(twin.clone(), m.id.clone());
    let nt = Node::start(&twin_agent, &founder, &[&nb.addr]);
    let mut proofs = Vec::new();
    for n in [&na, &nb] {
        wait_for("the honest node to hold both statements", || (n.holds(&x) && n.holds(&y)).then_some(()));
        let forks = wait_for("a fork proof", || {
            let f = json(&n.home, &["forks", "--author", &m.id]);
            (!f.as_array().unwrap().is_empty()).then_some(f)
        });
        let proof = forks[0]["proof"].as_str().unwrap().to_string();
        // The proof stands alone: checked with no other data.
        let checked = json(&n.home, &["check-proof", &proof]);
        assert_eq!(checked["valid"], true);
        assert_eq!(checked["author"], m.id.as_str());
        proofs.push(proof);
        let audit = agora(&n.home, &["--json", "audit", &m.id]);
        let report: Value = serde_json::from_slice(&audit.stdout).unwrap();
        assert_eq!(report["fork_seqs"], serde_json::json!([2]), "{report}");
    }
    assert_eq!(proofs[0], proofs[1], "every honest node proves the same equivocation");
    // Views freeze M's chain at the last shared entry.
    let hash = converged(&[&na, &nb]);
    assert_eq!(hash.len(), 64);
    let cons = json(&na.home, &["consensus", "--quorum", "1"]);
    let chain = cons["chains"].as_array().unwrap().iter().find(|c| c["author"] == m.id.as_str()).unwrap().clone();
    assert_eq!(chain["frozen_at"].as_u64(), Some(2), "{chain}");
    // A forged proof is refused.
    let mut forged = proofs[0].clone().into_bytes();
    let last = forged.len() - 3;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    assert!(!agora(&na.home, &["check-proof", std::str::from_utf8(&forged).unwrap()]).status.success());
    drop((nm, nt));
}

/// The merge layer's views as they were: `--as-of` keeps the entries dated
/// at or before a time, so an accept or a dispute made later is not in the
/// perspective, the consensus or the dispute map as of before it.
#[test]
fn the_merge_views_as_of_a_time_leave_out_later_accepts_and_disputes() {
    let (a, b) = (Agent::new(), Agent::new());
    admit(&a, &[&b]);
    let na = Node::start(&a, &a.id, &[]);
    let nb = Node::start(&b, &a.id, &[&na.addr]);
    let p = id_of(&json(&a.home, &["propose", "Ship weekly"]));
    wait_for("B to hold the proposition", || nb.holds(&p).then_some(()));
    let stamp = |id: &str| json(&b.home, &["show", id])["timestamp_ms"].as_u64().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let accept = id_of(&json(&b.home, &["accept", &a.id, "1"]));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let dispute = id_of(&json(&b.home, &["dispute", &p, "Weekly is too often for enterprise customers"]));
    let (before_accept, before_dispute) = ((stamp(&accept) - 1).to_string(), (stamp(&dispute) - 1).to_string());

    let included = |v: &Value| {
        v["included"].as_array().unwrap().iter().filter(|i| i["author"] == a.id.as_str()).map(|i| i["through_seq"].as_u64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(included(&json(&b.home, &["perspective", "--as-of", &before_accept, &b.id])), Vec::<u64>::new(), "not accepted yet");
    assert_eq!(included(&json(&b.home, &["perspective", "--as-of", &before_dispute, &b.id])), vec![1]);
    assert_eq!(included(&json(&b.home, &["perspective", &b.id])), vec![1]);

    let disputed = |v: &Value| v["disputed"].as_array().unwrap().len();
    assert_eq!(disputed(&json(&b.home, &["disputes", "--as-of", &before_dispute])), 0);
    assert_eq!(disputed(&json(&b.home, &["disputes"])), 1);

    let b_frontier = |v: &Value| {
        v["chains"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["author"] == a.id.as_str())
            .flat_map(|c| c["frontiers"].as_array().unwrap().clone())
            .filter(|f| f["agent"] == b.id.as_str())
            .count()
    };
    assert_eq!(b_frontier(&json(&b.home, &["consensus", "--quorum", "1", "--as-of", &before_accept])), 0);
    assert_eq!(b_frontier(&json(&b.home, &["consensus", "--quorum", "1"])), 1);

    let bad = agora(&b.home, &["perspective", "--as-of", "last week"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stdout).contains("as_of \"last week\"") || String::from_utf8_lossy(&bad.stderr).contains("as_of \"last week\""),
        "{bad:?}"
    );
}

/// Issue 16: a running node answers `view-hash`, `consensus` and
/// `perspective` from its live merged view and the perspectives it keeps,
/// current as entries arrive by replication (accepts, disputes, a withdrawal,
/// entries whose targets arrive after them); once the node stops, the full
/// recompute over its store gives the same answers.
#[test]
fn the_live_merged_view_equals_a_recompute_of_the_store() {
    let Trio { agents: [a, b, c], nodes: [na, mut nb, nc] } = Trio::start();
    let p1 = id_of(&json(&a.home, &["propose", "Ship the pricing page this week"]));
    let q1 = id_of(&json(&c.home, &["propose", "Run a survey first"]));
    wait_for("B to hold both proposals", || (nb.holds(&p1) && nb.holds(&q1)).then_some(()));
    // Asked now, B's own perspective and A's are kept current from here on.
    let early = json(&b.home, &["perspective", "--summary"]);
    assert_eq!(early["nodes"], serde_json::json!([]), "{early}");
    json(&b.home, &["perspective", &a.id]);
    json(&b.home, &["accept", &a.id, &p1]);
    let d1 = id_of(&json(&b.home, &["dispute", &q1, "a survey takes a month"]));
    json(&c.home, &["contradict", &p1, "legal has not read it"]);
    let d2 = id_of(&json(&a.home, &["dispute", &q1, "too slow"]));
    json(&a.home, &["withdraw", &d2]);
    json(&b.home, &["withdraw", &d1]);
    json(&c.home, &["accept", &a.id, &p1]);
    // Writes through the node are checked on its live view: the same
    // refusals as a recompute gives.
    id_of(&json(&b.home, &["dispute", &q1, "still too slow"]));
    for (args, rule) in [
        (vec!["dispute", q1.as_str(), "twice"], "already"),
        (vec!["withdraw", d1.as_str()], "withdrawn"),
        (vec!["accept", a.id.as_str(), "99"], "not seq 99"),
        (vec!["dispute", p1.as_str(), "my own"], "own"),
    ] {
        let who = if args[1] == p1 { &a.home } else { &b.home };
        let out = agora(who, &args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success() && text.to_lowercase().contains(rule), "{args:?}: {text}");
    }
    let hash = converged(&[&na, &nb, &nc]);
    let live_consensus = json(&nb.home, &["consensus", "--quorum", "2"]);
    assert_eq!(live_consensus["view_hash"], hash.as_str());
    let summary = json(&nb.home, &["consensus", "--quorum", "2", "--summary"]);
    for (full, short) in live_consensus["chains"].as_array().unwrap().iter().zip(summary["chains"].as_array().unwrap()) {
        assert_eq!(short["disputed"], serde_json::json!([]), "{summary}");
        assert_eq!(short["disputed_count"].as_u64().unwrap() as usize, full["disputed"].as_array().unwrap().len(), "{summary}");
        assert_eq!(short["accepted_seq"], full["accepted_seq"]);
        assert_eq!(short["frontier_count"].as_u64().unwrap() as usize, full["frontiers"].as_array().unwrap().len(), "{summary}");
        assert_eq!(short["frontiers"], serde_json::json!([]), "{summary}");
    }
    assert!(summary["chains"].as_array().unwrap().iter().any(|c| c["disputed_count"] == 1), "B's dispute of q1 is open: {summary}");
    let live_perspectives: Vec<serde_json::Value> = [&b.id, &a.id, &c.id].iter().map(|x| json(&b.home, &["perspective", x])).collect();
    assert!(live_perspectives[0]["included"].as_array().unwrap().len() >= 2, "B accepted A: {}", live_perspectives[0]);
    // Audits: each chain checked again, the merge events about it from the live view.
    let live_audits: Vec<serde_json::Value> = [&b.id, &a.id, &c.id].iter().map(|x| json(&b.home, &["audit", x])).collect();
    assert_eq!(live_audits[2]["disputes_against"].as_array().unwrap().len(), 3, "C's q1 was disputed three times: {}", live_audits[2]);
    assert!(!live_audits[0]["accepts_made"].as_array().unwrap().is_empty() && !live_audits[1]["accepted_by"].as_array().unwrap().is_empty(), "{live_audits:?}");
    // The node's answers came from its live view; stop it and recompute.
    nb.kill();
    let _ = std::fs::remove_file(b.home.join("node.json"));
    configure_founder(&b.home, &a.id);
    let recomputed = json(&b.home, &["view-hash"]);
    assert_eq!(recomputed["view_hash"], hash.as_str(), "live {hash}, recomputed {recomputed}");
    let recomputed_consensus = json(&b.home, &["consensus", "--quorum", "2"]);
    assert_eq!(recomputed_consensus["chains"], live_consensus["chains"]);
    assert_eq!(recomputed_consensus["agents"], live_consensus["agents"]);
    for (x, live) in [&b.id, &a.id, &c.id].iter().zip(&live_perspectives) {
        let recomputed = json(&b.home, &["perspective", x]);
        for field in ["hash", "included", "disputes", "excluded", "node_count", "nodes"] {
            assert_eq!(recomputed[field], live[field], "perspective of {x}: {field}");
        }
    }
    for (x, live) in [&b.id, &a.id, &c.id].iter().zip(&live_audits) {
        assert_eq!(&json(&b.home, &["audit", x]), live, "audit of {x}");
    }
}
