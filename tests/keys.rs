//! An agent outlives its key (`protocol-spec/keys.md`), with real `agora`
//! processes: the first entry commits to a next key kept in `next-keys/`
//! until exported; `agora key rotate` signs with it and installs it; the
//! old key (a thief's copy of the home) can no longer extend the chain,
//! neither by appending nor by a pack; a rotation with the wrong next key is
//! refused with its rule; `agora key revoke` places the rotation after an
//! earlier entry; `agora key history` lists the key events; the reads name
//! the key that signed (`status`, `trace`, `audit`), each member's current
//! key (`roster`), and what a revocation leaves out (`status` of such an
//! entry, the accepts and disputes naming it in `audit` and `disputes`).

mod support;

use agora_core::entry::next_header;
use agora_core::{AgentKey, KeyFields, SignedEntry, pack};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use support::*;

fn err_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn refused_with(h: &std::path::Path, args: &[&str], rule: &str) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = agora(h, &all);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(err_of(&out).contains(rule) || String::from_utf8_lossy(&out.stdout).contains(rule), "{args:?} refused without {rule}: {}", err_of(&out));
}

#[test]
fn an_agent_rotates_to_its_committed_key_and_the_old_key_is_refused() {
    let agent = Agent::new();
    let h = &agent.home;
    let next_file = h.join("next-keys/self.key");
    assert_eq!(std::fs::metadata(&next_file).unwrap().permissions().mode() & 0o777, 0o600);
    refused_with(h, &["key", "rotate"], "empty_chain");
    let first = json(h, &["propose", "Ship on Friday"]);
    let shown = json(h, &["show", first["id"].as_str().unwrap()]);
    assert_eq!(shown["version"], 2, "the first entry commits to the next key: {shown}");
    assert_eq!(shown["signer"], Value::Null, "signed by the agent's own key: {shown}");

    // The next key leaves the home; a thief copies the home after that.
    let apart = tempfile::tempdir().unwrap();
    let exported = apart.path().join("next.key");
    let moved = json(h, &["key", "next", "--export", exported.to_str().unwrap()]);
    assert_eq!(moved["in_home"], Value::Null, "{moved}");
    assert!(!next_file.exists() && exported.exists());
    let thief = tempfile::tempdir().unwrap();
    copy_dir(h, thief.path());
    refused_with(h, &["key", "rotate"], "no next key");

    // A key that is not the committed one is refused, naming the rule.
    let wrong = apart.path().join("wrong.key");
    std::fs::copy(h.join("agent.key"), &wrong).unwrap();
    refused_with(h, &["key", "rotate", "--next-key", wrong.to_str().unwrap()], "rotation_key");

    let second = json(h, &["propose", "Or Monday"]);
    let rotated = json(h, &["key", "rotate", "--next-key", exported.to_str().unwrap()]);
    assert_eq!(rotated["boundary"], second["id"], "{rotated}");
    assert_eq!(rotated["event"], "rotate");
    let new_key = rotated["key"].as_str().unwrap().to_string();
    assert_ne!(new_key, agent.id);
    assert_eq!(std::fs::metadata(h.join("agent.key")).unwrap().len(), 64, "the key file names the agent and the new key");
    assert_eq!(json(h, &["id"])["agent"], agent.id.as_str(), "the agent keeps its id");

    // The agent carries on under the new key, in the same chain.
    let third = json(h, &["propose", "Tuesday, final"]);
    let shown = json(h, &["show", third["id"].as_str().unwrap()]);
    assert_eq!((shown["author"].as_str(), shown["signer"].as_str()), (Some(agent.id.as_str()), Some(new_key.as_str())), "{shown}");
    // status and trace name the key that signed, when not the agent's own.
    let status = json(h, &["status", third["id"].as_str().unwrap()]);
    assert_eq!(status["signed_by"], new_key.as_str(), "{status}");
    assert!(ok(h, &["status", third["id"].as_str().unwrap()]).contains(&format!("signed by key {}", &new_key[..8])));
    assert_eq!(json(h, &["status", second["id"].as_str().unwrap()]).get("signed_by"), None, "signed by the agent's own key");
    let trace = json(h, &["trace", third["id"].as_str().unwrap()]);
    assert_eq!(trace["events"][0]["signed_by"], new_key.as_str(), "{trace}");
    let shown = json(h, &["show", rotated["entry"].as_str().unwrap()]);
    assert_eq!(shown["key_event"], "rotate", "{shown}");
    let history = json(h, &["key", "history"]);
    let events: Vec<&str> = history["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["commit", "rotate"], "{history}");
    assert_eq!(history["current"], serde_json::json!([new_key]), "{history}");
    json(h, &["verify"]);

    // The thief's copy signs with the old key. What it signed after the
    // boundary on a branch of its own is a fork the owner's store keeps as
    // evidence; an entry it signs after the rotation is refused by every
    // store, with the rule named.
    let t = thief.path();
    let stolen = json(t, &["propose", "Thief: ship today"]);
    assert_eq!(stolen["seq"], 2, "the copy was taken after seq 1: the thief's entry sits beside the owner's seq 2, below the rotation");
    let pack = t.join("stolen.jsonl");
    ok(t, &["export", "--output", pack.to_str().unwrap()]);
    ok(h, &["import", pack.to_str().unwrap()]);
    assert_eq!(json(h, &["forks"]).as_array().map(Vec::len), Some(1), "the thief's seq 2 forks the chain: the store keeps the evidence");
    // The rotation resolves that fork: the thief's entry counts in no view,
    // the chain is not frozen, and the owner's entries all count.
    // status says it is excluded, by which rotation, after which boundary;
    // the other reads of it refuse it with that rule.
    let excluded = json(h, &["status", stolen["id"].as_str().unwrap()]);
    assert_eq!(excluded["status"], "excluded", "the thief's entry is in no view: {excluded}");
    assert_eq!((&excluded["excluded"]["rotation"], &excluded["excluded"]["boundary"]), (&rotated["entry"], &second["id"]), "{excluded}");
    assert_eq!(excluded["seq"], 2, "{excluded}");
    refused_with(h, &["trace", stolen["id"].as_str().unwrap()], "excluded_entry");
    refused_with(h, &["latest", stolen["id"].as_str().unwrap()], "excluded_entry");
    for mine in [&first, &second, &third] {
        json(h, &["status", mine["id"].as_str().unwrap()]);
    }
    let consensus = json(h, &["consensus", "--quorum", "1"]);
    let chain = consensus["chains"].as_array().unwrap().iter().find(|c| c["author"] == agent.id.as_str()).cloned().unwrap();
    assert_eq!(chain["frozen_at"], Value::Null, "a fork the rotation resolves freezes nothing: {chain}");
    // The thief's copy, given the owner's entries after its own, derives
    // the same views: the order entries arrive in decides nothing.
    let owners = apart.path().join("owner.jsonl");
    ok(h, &["export", "--output", owners.to_str().unwrap()]);
    ok(t, &["import", owners.to_str().unwrap()]);
    assert_eq!(json(t, &["view-hash"])["view_hash"], json(h, &["view-hash"])["view_hash"]);
    assert_eq!(json(t, &["status", stolen["id"].as_str().unwrap()])["status"], "excluded", "the thief's entry is in no view there either");
    let rotation = std::fs::read_to_string(&owners)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| pack::parse_entry_line(0, l).unwrap().0)
        .find(|e| e.id().to_string() == rotated["entry"].as_str().unwrap())
        .expect("the rotation is in the owner's pack");
    let old_key = AgentKey::from_key_file_bytes(&std::fs::read(t.join("agent.key")).unwrap()).unwrap();
    let mut header = next_header(old_key.agent_id(), Some(&rotation), 0, b"thief after the rotation").unwrap();
    header.keys = header.keys.map(|k| KeyFields { signer: None, ..k });
    let forged = SignedEntry::sign(header, &old_key);
    let forged_pack = apart.path().join("forged.jsonl");
    std::fs::write(&forged_pack, format!("{}\n{}\n", pack::header_line(), pack::entry_line(&forged, Some(b"thief after the rotation")))).unwrap();
    let out = agora(h, &["import", forged_pack.to_str().unwrap()]);
    assert!(!out.status.success() && err_of(&out).contains("signer"), "an entry by the old key after the rotation: {}", err_of(&out));
}

#[test]
fn a_revocation_follows_the_last_entry_its_owner_vouches_for() {
    let agent = Agent::new();
    let h = &agent.home;
    let vouched = json(h, &["propose", "Mine"]);
    let _later = json(h, &["propose", "Written with a key that leaked"]);
    let revoked = json(h, &["key", "revoke", vouched["id"].as_str().unwrap()]);
    assert_eq!(revoked["boundary"], vouched["id"], "{revoked}");
    assert_eq!(revoked["seq"], 2, "the revocation follows the boundary: {revoked}");
    let forks = json(h, &["forks"]);
    assert_eq!(forks.as_array().map(Vec::len), Some(1), "the revocation and the later entry share seq 2: {forks}");
    let history = json(h, &["key", "history"]);
    let events: Vec<&str> = history["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["commit", "rotate"], "{history}");
    // An entry of another agent is no boundary of this one's.
    let other = Agent::new();
    let theirs = json(&other.home, &["propose", "Someone else's"]);
    let pack = other.home.join("theirs.jsonl");
    ok(&other.home, &["export", "--output", pack.to_str().unwrap()]);
    ok(h, &["import", pack.to_str().unwrap()]);
    refused_with(h, &["key", "revoke", theirs["id"].as_str().unwrap()], "not_own_entry");
}

fn carry(from: &std::path::Path, into: &std::path::Path, dir: &std::path::Path, name: &str) {
    let file = dir.join(format!("{name}.jsonl"));
    ok(from, &["export", "--output", file.to_str().unwrap()]);
    ok(into, &["import", file.to_str().unwrap()]);
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

/// The reads of another agent's workspace after an agent revokes a key
/// (issue 41, item 5): status, trace and audit name the new key that
/// signed; the roster names each member's current key and rotations; the
/// entry the revocation leaves out is said to be so, by which rotation
/// after which boundary; an accept and a dispute naming it are listed as
/// such by audit and disputes, which the live page draws from. The same
/// answers with a node running on the home and without.
#[test]
fn reads_name_the_signing_key_and_what_a_revocation_leaves_out() {
    let (owner, bob) = (Agent::new(), Agent::new());
    let (o, b) = (&owner.home, &bob.home);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    admit(&owner, &[&bob]);
    let vouched = id_of(&json(o, &["propose", "Mine"]));
    let leaked = id_of(&json(o, &["propose", "Written with a key that leaked"]));
    // Bob's workspace admits the owner; Bob accepts the owner's chain
    // through the entry that will be left out, and disputes it.
    let b1 = id_of(&json(b, &["propose", "Bob's own"]));
    carry(o, b, dir, "owner-before");
    admit(&bob, &[&owner]);
    let accept = id_of(&json(b, &["accept", &owner.id, &leaked]));
    let dispute = id_of(&json(b, &["dispute", &leaked, "Not what the owner holds"]));
    // The owner revokes after the last entry it vouches for, writes on with
    // the new key and accepts Bob's chain.
    let revoked = json(o, &["key", "revoke", &vouched]);
    let (rotation, new_key) = (revoked["entry"].as_str().unwrap().to_string(), revoked["key"].as_str().unwrap().to_string());
    let after = id_of(&json(o, &["propose", "After the revocation"]));
    carry(b, o, dir, "bob");
    let owners_accept = id_of(&json(o, &["accept", &bob.id, &b1]));
    carry(o, b, dir, "owner-after");

    let reads = || {
        let status = json(b, &["status", &after]);
        assert_eq!(status["signed_by"], new_key.as_str(), "{status}");
        assert_eq!(json(b, &["status", &vouched]).get("signed_by"), None, "the owner's own key signed it");
        let trace = json(b, &["trace", &after]);
        assert_eq!(trace["events"][0]["signed_by"], new_key.as_str(), "{trace}");
        // The entry left out: its status says by which rotation, after which boundary.
        let excluded = json(b, &["status", &leaked]);
        assert_eq!(excluded["status"], "excluded", "{excluded}");
        assert_eq!(
            (excluded["excluded"]["rotation"].as_str(), excluded["excluded"]["boundary"].as_str()),
            (Some(rotation.as_str()), Some(vouched.as_str())),
            "{excluded}"
        );
        assert_eq!((excluded["author"].as_str(), excluded["seq"].as_u64()), (Some(owner.id.as_str()), Some(3)), "{excluded}");
        let text = ok(b, &["status", &leaked]);
        assert!(text.contains("excluded") && text.contains(&rotation[..8]) && text.contains(&vouched[..8]), "{text}");
        refused_with(b, &["trace", &leaked], "excluded_entry");
        // The roster: each member's current key and rotations.
        let roster = json(b, &["roster"]);
        let member = |id: &str| roster["members"].as_array().unwrap().iter().find(|m| m["agent"] == id).cloned().unwrap_or_else(|| panic!("{id}: {roster}"));
        assert_eq!((member(&owner.id)["current_key"].as_str(), member(&owner.id)["rotations"].as_u64()), (Some(new_key.as_str()), Some(1)), "{roster}");
        assert_eq!((member(&bob.id)["current_key"].as_str(), member(&bob.id)["rotations"].as_u64()), (Some(bob.id.as_str()), Some(0)), "{roster}");
        // The audits: Bob's accept and dispute name an entry left out; the
        // owner's audit lists Bob's dispute of it, and its accept signed by the new key.
        let audit = json(b, &["audit", &bob.id]);
        let record = |list: &str, entry: &str| {
            audit[list].as_array().unwrap().iter().find(|r| r["entry"] == entry).cloned().unwrap_or_else(|| panic!("{entry} not in {list}: {audit}"))
        };
        for (list, entry) in [("accepts_made", &accept), ("disputes_made", &dispute)] {
            let r = record(list, entry);
            assert_eq!((r["status"].as_str(), r["target_excluded"]["rotation"].as_str()), (Some("pending"), Some(rotation.as_str())), "{r}");
            assert_eq!(r["target_excluded"]["boundary"], vouched.as_str(), "{r}");
            assert_eq!(r.get("signed_by"), None, "{r}");
        }
        let owners = json(b, &["audit", &owner.id]);
        let against: Vec<&Value> = owners["disputes_against"].as_array().unwrap().iter().filter(|r| r["entry"] == dispute.as_str()).collect();
        assert_eq!(against.len(), 1, "Bob's dispute of the entry left out is listed against the owner: {owners}");
        assert_eq!(against[0]["target_excluded"]["rotation"], rotation.as_str(), "{owners}");
        let accepts: Vec<&Value> = owners["accepts_made"].as_array().unwrap().iter().filter(|r| r["entry"] == owners_accept.as_str()).collect();
        assert_eq!(accepts.len(), 1, "{owners}");
        assert_eq!(accepts[0]["signed_by"], new_key.as_str(), "{owners}");
        // The dispute map names the range left out and what names it.
        let disputes = json(b, &["disputes"]);
        let mut refs = [(accept.as_str(), "accept"), (dispute.as_str(), "dispute")];
        refs.sort();
        let refs: Vec<Value> = refs.iter().map(|(entry, kind)| serde_json::json!({ "by": bob.id, "entry": entry, "kind": kind, "target": leaked })).collect();
        let want = serde_json::json!([{
            "author": owner.id, "boundary": vouched, "count": 1, "from_seq": 3, "to_seq": 3, "rotation": rotation, "event": "rotate", "referenced_by": refs,
        }]);
        assert_eq!(disputes["revoked"], want, "{disputes}");
        // The owner's audit lists the same range of its own chain.
        assert_eq!(owners["revoked"][0]["rotation"], rotation.as_str(), "{owners}");
        assert_eq!(owners["revoked"][0]["count"], 1, "{owners}");
        assert_eq!(audit["revoked"], serde_json::json!([]), "Bob's own chain loses nothing: {audit}");
        let text = ok(b, &["disputes"]);
        assert!(text.contains("revoked: 1 entries") && text.contains("never takes effect"), "{text}");
        (status, excluded, roster, audit, owners, disputes)
    };
    let offline = reads();
    let _node = Node::start(&bob, &bob.id, &[]);
    let live = reads();
    assert_eq!((&live.2, &live.3, &live.4, &live.5), (&offline.2, &offline.3, &offline.4, &offline.5), "the node's answers are those read without it");
    assert_eq!((&live.0["signed_by"], &live.1["excluded"]), (&offline.0["signed_by"], &offline.1["excluded"]));
}

/// The last entry of `author`'s chain in a pack exported from `home`.
fn last_of(home: &std::path::Path, author: &str, dir: &std::path::Path) -> SignedEntry {
    let file = dir.join("last.jsonl");
    ok(home, &["export", "--author", author, "--output", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    let entries: Vec<SignedEntry> = text.lines().enumerate().skip(1).map(|(i, l)| pack::parse_entry_line(i + 1, l).unwrap().0).collect();
    entries.into_iter().max_by_key(|e| e.header().seq).unwrap()
}

fn member_of(roster: &Value, id: &str) -> Value {
    roster["members"].as_array().unwrap().iter().find(|m| m["agent"] == id).cloned().unwrap_or_else(|| panic!("{id} not in {roster}"))
}

fn view_hash(home: &std::path::Path) -> String {
    json(home, &["view-hash"])["view_hash"].as_str().unwrap().to_string()
}

/// Issue 41, item 4: both keys lost. A thief holding the owner's whole
/// home (current and next key) writes on after the last entry the owner
/// vouches for, part of it before the recovery reaches the nodes and part
/// after, rotating to the stolen next key in between. The founder binds the
/// owner to a new key after that entry (`agora key recover`); the owner
/// takes over with it (`agora key take-over`) and writes on. On both nodes:
/// none of the thief's entries counts (status says excluded, by the
/// recovery), the owner's new entries do, signed by the new key; the roster
/// and the key history show the recovery; the view hashes are equal.
#[test]
fn both_keys_lost_the_founder_recovers_and_the_owner_writes_on_under_the_new_key() {
    let (founder, owner) = (Agent::new(), Agent::new());
    let (f, o) = (&founder.home, &owner.home);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    admit(&founder, &[&owner]);
    let vouched = id_of(&json(o, &["propose", "Mine"]));
    // The thief copies the whole home: both keys.
    let thief_dir = tempfile::tempdir().unwrap();
    let thief = thief_dir.path().join("home");
    copy_dir(o, &thief);
    let thief_first = id_of(&json(&thief, &["propose", "Written by the thief"]));
    let early = dir.join("thief-early.jsonl");
    ok(&thief, &["export", "--output", early.to_str().unwrap()]);
    let thief_rotation = json(&thief, &["key", "rotate"])["entry"].as_str().unwrap().to_string();
    let thief_later = id_of(&json(&thief, &["propose", "The thief under the stolen next key"]));
    let late = dir.join("thief-late.jsonl");
    ok(&thief, &["export", "--output", late.to_str().unwrap()]);

    let nf = Node::start(&founder, &founder.id, &[]);
    let no = Node::start(&owner, &founder.id, &[&nf.addr]);
    // The thief's first entry reaches both nodes before the recovery.
    ok(f, &["import", early.to_str().unwrap()]);
    wait_for("the thief's entry on the owner's node", || no.holds(&thief_first).then_some(()));

    // The owner draws a new key; the founder binds it after `vouched`.
    let key_file = dir.join("new.key");
    let drawn = json(o, &["key", "new", "--out", key_file.to_str().unwrap()]);
    let new_key = drawn["public_key"].as_str().unwrap().to_string();
    assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);
    refused_with(o, &["key", "recover", &owner.id, "--after", &vouched, "--key", &new_key], "admins_only");
    refused_with(f, &["key", "recover", &founder.id, "--after", &vouched, "--key", &new_key], "not_agents_entry");
    refused_with(f, &["key", "recover", &owner.id, "--after", &vouched, "--key", &owner.id], "recover_key_is_author");
    let bound = json(f, &["key", "recover", &owner.id, "--after", &vouched, "--key", &new_key, "--note", "laptop stolen with both keys"]);
    assert_eq!((bound["boundary"].as_str(), bound["last_seq"].as_u64()), (Some(vouched.as_str()), Some(1)), "{bound}");
    let binding = bound["id"].as_str().unwrap().to_string();
    wait_for("the binding on the owner's node", || {
        member_of(&json(o, &["roster"]), &owner.id)["recoveries"].as_array().is_some_and(|r| !r.is_empty()).then_some(())
    });
    // Before the recover entry: the thief's entry counts nowhere already.
    assert_eq!(json(f, &["status", &thief_first])["status"], "excluded");

    let taken = json(o, &["key", "take-over", "--key", key_file.to_str().unwrap()]);
    assert_eq!((taken["event"].as_str(), taken["key"].as_str(), taken["seq"].as_u64()), (Some("recover"), Some(new_key.as_str()), Some(2)), "{taken}");
    let recovery = taken["entry"].as_str().unwrap().to_string();
    let after = id_of(&json(o, &["propose", "The owner, under the new key"]));
    // The rest of the thief's chain arrives after the recovery.
    ok(f, &["import", late.to_str().unwrap()]);
    for node in [&nf, &no] {
        wait_for("every entry on both nodes", || [&after, &recovery, &thief_later, &thief_rotation].iter().all(|id| node.holds(id)).then_some(()));
    }
    let reads = |h: &std::path::Path| {
        let status = json(h, &["status", &after]);
        assert_eq!(status["signed_by"], new_key.as_str(), "{status}");
        for left_out in [&thief_first, &thief_rotation, &thief_later] {
            let s = json(h, &["status", left_out]);
            assert_eq!(s["status"], "excluded", "{s}");
            assert_eq!(
                (s["excluded"]["event"].as_str(), s["excluded"]["rotation"].as_str(), s["excluded"]["boundary"].as_str(), s["excluded"]["bound_by"].as_str()),
                (Some("recover"), Some(recovery.as_str()), Some(vouched.as_str()), Some(binding.as_str())),
                "{s}"
            );
        }
        let member = member_of(&json(h, &["roster"]), &owner.id);
        assert_eq!(member["current_key"], new_key.as_str(), "{member}");
        assert_eq!(member["recoveries"][0]["entry"], recovery.as_str(), "{member}");
        let history = json(h, &["key", "history", "--agent", &owner.id]);
        assert!(history["events"].as_array().unwrap().iter().any(|e| e["event"] == "recover" && e["entry"] == recovery.as_str()), "{history}");
        assert_eq!(history["recoveries"][0]["bound_by"], binding.as_str(), "{history}");
        let audit = json(h, &["audit", &owner.id]);
        let ranges: Vec<(&str, u64)> =
            audit["revoked"].as_array().unwrap().iter().map(|r| (r["event"].as_str().unwrap(), r["count"].as_u64().unwrap())).collect();
        assert_eq!(ranges, [("recover", 3)], "the owner's audit lists the range the recovery leaves out: {audit}");
        view_hash(h)
    };
    assert_eq!(reads(f), reads(o), "both nodes count the same entries");
}

/// A recover entry no binding names: signed by a stranger's key after the
/// owner's entry, it is valid by the local rules, so a node it is imported
/// into by hand stores it, but counts it in no view; another node does not
/// fetch it (the replication gate) and both views agree. Once the founder
/// binds it, it is fetched and counts.
#[test]
fn a_recover_entry_without_a_binding_counts_nowhere_and_is_not_replicated() {
    let (founder, owner, observer) = (Agent::new(), Agent::new(), Agent::new());
    let (f, o, b) = (&founder.home, &owner.home, &observer.home);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    admit(&founder, &[&owner, &observer]);
    let vouched = id_of(&json(o, &["propose", "The owner's"]));
    carry(o, f, dir, "owner");
    let last = last_of(o, &owner.id, dir);
    let stranger = AgentKey::from_seed([0x5a; 32]);
    let header = next_header(last.header().author, Some(&last), last.header().timestamp_ms + 1, b"").unwrap().key_event_by(
        agora_core::KeyEvent::Recover,
        stranger.public_key(),
        [7; 32],
    );
    let recover = SignedEntry::sign(header, &stranger);
    let pack_file = dir.join("stranger.jsonl");
    std::fs::write(&pack_file, format!("{}\n{}\n", pack::header_line(), pack::entry_line(&recover, Some(b"")))).unwrap();

    let nf = Node::start(&founder, &founder.id, &[]);
    let nb = Node::start(&observer, &founder.id, &[&nf.addr]);
    wait_for("the owner's entry on the observer's node", || nb.holds(&vouched).then_some(()));
    ok(f, &["import", pack_file.to_str().unwrap()]);
    let id = recover.id().to_string();
    let status = json(f, &["status", &id]);
    assert_eq!((status["status"].as_str(), status["excluded"]["event"].as_str()), (Some("excluded"), Some("unbound_recover")), "{status}");
    // A later entry of the founder's reaches the observer: the recover
    // entry, announced before it, was not taken.
    let barrier = id_of(&json(f, &["propose", "After the stranger's entry"]));
    wait_for("the founder's entry on the observer's node", || nb.holds(&barrier).then_some(()));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(!nb.holds(&id), "the observer's node fetched a recover entry its roster does not bind");
    assert_eq!(view_hash(f), view_hash(b), "an unbound recover entry counts nowhere");
    // Bound, it is fetched and counts.
    ok(f, &["key", "recover", &owner.id, "--after", &vouched, "--key", &stranger.public_key().to_string()]);
    wait_for("the bound recover entry on the observer's node", || nb.holds(&id).then_some(()));
    for h in [f, b] {
        let out = agora(h, &["--json", "status", &id]);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("excluded"), "bound, it counts: {}", String::from_utf8_lossy(&out.stdout));
    }
    wait_for("the same view on both nodes", || (view_hash(f) == view_hash(b)).then_some(()));
}

/// Issues 41, items 3 and 4, by a quorum: the founder names three admins,
/// two of whom must act. The owner's keys are lost; one admin's vote to
/// recover it changes nothing (the roster binds no key, the owner cannot
/// take over, a recover entry signed by the new key is not fetched); the
/// second admin's identical vote (its note differs) binds the key on every
/// node, the owner takes over and writes on under it, and the founder's and
/// the owner's nodes count the same entries.
#[test]
fn two_of_three_admins_recover_an_agent_and_one_alone_changes_nothing() {
    let (founder, owner, a, b, c) = (Agent::new(), Agent::new(), Agent::new(), Agent::new(), Agent::new());
    let (f, o) = (&founder.home, &owner.home);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    admit(&founder, &[&owner, &a, &b]);
    // The checks before writing, each with its rule.
    refused_with(f, &["admins", &a.id, &c.id, "--threshold", "2"], "admin_not_member");
    refused_with(f, &["admins", &a.id, &b.id, "--threshold", "3"], "admins_threshold");
    refused_with(f, &["admins", &a.id, &founder.id, "--threshold", "1"], "admins_founder");
    admit(&founder, &[&c]);
    let named = json(f, &["admins", &a.id, &b.id, &c.id, "--threshold", "2", "--note", "on call"]);
    assert_eq!((named["admins"].as_array().map(Vec::len), named["threshold"].as_u64()), (Some(3), Some(2)), "{named}");
    let vouched = id_of(&json(o, &["propose", "Mine, before the laptop was lost"]));

    let nf = Node::start(&founder, &founder.id, &[]);
    let no = Node::start(&owner, &founder.id, &[&nf.addr]);
    let na = Node::start(&a, &founder.id, &[&nf.addr]);
    let nb = Node::start(&b, &founder.id, &[&nf.addr]);
    for (node, who) in [(&na, &a), (&nb, &b)] {
        wait_for("the admin set and the owner's entry on an admin's node", || {
            let roster = json(&who.home, &["roster"]);
            (roster["admins"].as_array().is_some_and(|x| x.len() == 3) && node.holds(&vouched)).then_some(())
        });
    }
    let key_file = dir.join("new.key");
    let new_key = json(o, &["key", "new", "--out", key_file.to_str().unwrap()])["public_key"].as_str().unwrap().to_string();
    refused_with(&owner.home, &["admins", &a.id, "--threshold", "1"], "founder_only");

    // One admin alone: a vote, no binding.
    let first = json(&a.home, &["key", "recover", &owner.id, "--after", &vouched, "--key", &new_key, "--note", "owner called: laptop lost"]);
    assert_eq!((first["vote"]["voters"].as_u64(), first["vote"]["outcome"].as_str()), (Some(1), Some("short")), "{first}");
    let first_vote = id_of(&first);
    wait_for("the first vote on every node", || [&nf, &no, &nb].iter().all(|n| n.holds(&first_vote)).then_some(()));
    for h in [f, o] {
        let roster = json(h, &["roster"]);
        assert!(member_of(&roster, &owner.id)["recoveries"].as_array().unwrap().is_empty(), "one admin of two bound a key: {roster}");
        assert_eq!(roster["votes"][0]["outcome"], "short", "{roster}");
    }
    refused_with(o, &["key", "take-over", "--key", key_file.to_str().unwrap()], "not_bound");
    let hash_before = view_hash(f);

    // The second admin: the same act, another note. It binds everywhere.
    let second = json(&b.home, &["key", "recover", &owner.id, "--after", &vouched, "--key", &new_key, "--note", "confirmed"]);
    assert_eq!((second["vote"]["voters"].as_u64(), second["vote"]["outcome"].as_str()), (Some(2), Some("applied")), "{second}");
    let second_vote = id_of(&second);
    for h in [f, o] {
        wait_for("the binding on the founder's and the owner's nodes", || {
            member_of(&json(h, &["roster"]), &owner.id)["recoveries"].as_array().is_some_and(|r| !r.is_empty()).then_some(())
        });
    }
    let taken = json(o, &["key", "take-over", "--key", key_file.to_str().unwrap()]);
    assert_eq!((taken["event"].as_str(), taken["key"].as_str()), (Some("recover"), Some(new_key.as_str())), "{taken}");
    let recovery = taken["entry"].as_str().unwrap().to_string();
    let after = id_of(&json(o, &["propose", "The owner, under the key the admins bound"]));
    wait_for("the owner's new entries on the founder's node", || [&recovery, &after].iter().all(|id| nf.holds(id)).then_some(()));
    let by = first_vote.clone().min(second_vote.clone());
    let reads = |h: &std::path::Path| {
        assert_eq!(json(h, &["status", &after])["signed_by"], new_key.as_str());
        let member = member_of(&json(h, &["roster"]), &owner.id);
        assert_eq!((member["current_key"].as_str(), member["recoveries"][0]["bound_by"].as_str()), (Some(new_key.as_str()), Some(by.as_str())), "{member}");
        assert_eq!(member["recoveries"][0]["entry"], recovery.as_str(), "{member}");
        view_hash(h)
    };
    wait_for("the same view on both nodes", || (reads(f) == reads(o)).then_some(()));
    assert_ne!(view_hash(f), hash_before, "the owner's new entries count");
}
