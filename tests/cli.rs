//! Black-box tests of the `agora` binary: real processes, real files.
//!
//! Every bad input listed in issue 2 is tried here, and each must give a clear
//! error, a non-zero exit, and leave what was stored unchanged.

use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn agora(home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agora"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("AGORA_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agora runs");
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(bytes) = stdin {
            // agora may refuse the input before reading all of it (limits are
            // checked first), which closes the pipe early.
            match input.write_all(bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.unwrap(),
            }
        }
    }
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(home: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let out = agora(home, args, stdin);
    assert_eq!(out.code, 0, "agora {args:?} failed: {}", out.stderr);
    out.stdout
}

fn json(home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(home, &all, stdin)).expect("JSON output")
}

fn fails(home: &Path, args: &[&str], stdin: Option<&[u8]>, expect: &str) -> Out {
    let out = agora(home, args, stdin);
    assert_ne!(out.code, 0, "agora {args:?} should fail");
    assert!(out.stderr.contains(expect), "agora {args:?}: expected {expect:?} in error, got: {}", out.stderr);
    out
}

/// A simulator's report without the memory the allocator measured (which
/// varies by a few KiB between processes): the part that must be the same
/// bytes for the same scenario and seed.
fn same_bytes(report: &[u8]) -> Vec<u8> {
    let value: Value = serde_json::from_slice(report).expect("a report");
    serde_json::to_vec(&agora_sim::report::without_measured(value)).expect("json")
}

fn init(dir: &Path, name: &str) -> PathBuf {
    let home = dir.join(name);
    ok(&home, &["init"], None);
    home
}

/// Everything stored, as a pack: a stable fingerprint of the store's contents.
fn snapshot(home: &Path) -> String {
    ok(home, &["export"], None)
}

#[test]
fn init_append_log_show_verify() {
    let dir = tempfile::tempdir().unwrap();
    let home = init(dir.path(), "a");
    let key = home.join("agent.key");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&key).unwrap().len(), 32);
    let key_before = std::fs::read(&key).unwrap();
    fails(&home, &["init"], None, "refusing to overwrite");
    assert_eq!(std::fs::read(&key).unwrap(), key_before);

    let agent = json(&home, &["id"], None)["agent"].as_str().unwrap().to_string();
    assert_eq!(agent.len(), 64);
    let first = json(&home, &["append"], Some(b"we should price at $20"));
    assert_eq!(first["seq"], 1);
    assert_eq!(first["author"], agent.as_str());
    let file = dir.path().join("p.txt");
    std::fs::write(&file, b"counter: $20 is too low").unwrap();
    let second_id = ok(&home, &["append", file.to_str().unwrap()], None).trim().to_string();
    assert_eq!(second_id.len(), 64);

    let log = json(&home, &["log"], None);
    assert_eq!(log.as_array().unwrap().len(), 2);
    assert_eq!(log[1]["backlink"], first["id"]);
    let show = json(&home, &["show", &second_id[..10]], None);
    assert_eq!(show["payload_utf8"], "counter: $20 is too low");
    assert_eq!(show["payload_status"], "held");
    let text = ok(&home, &["show", &second_id], None);
    assert!(text.contains("counter: $20 is too low") && text.contains("seq           2"));
    let verify = json(&home, &["verify"], None);
    assert_eq!(verify["ok"], true);
    assert_eq!(verify["entries"], 2);
}

#[test]
fn redact_keeps_chain_valid() {
    let dir = tempfile::tempdir().unwrap();
    let home = init(dir.path(), "a");
    let id = json(&home, &["append"], Some(b"private thought"))["id"].as_str().unwrap().to_string();
    ok(&home, &["append"], Some(b"public conclusion"));
    ok(&home, &["redact", &id], None);
    let show = json(&home, &["show", &id], None);
    assert_eq!(show["payload_status"], "redacted");
    assert!(show.get("payload_utf8").is_none());
    assert!(ok(&home, &["show", &id], None).contains("redacted at"));
    assert_eq!(json(&home, &["verify"], None)["ok"], true);
    fails(&home, &["redact", &id], None, "already redacted");
    // The redacted payload travels as null and the importer knows it is not held.
    let pack = snapshot(&home);
    assert!(pack.contains("\"payload\":null"));
    let other = init(dir.path(), "b");
    ok(&other, &["import", "-"], Some(pack.as_bytes()));
    assert_eq!(json(&other, &["show", &id], None)["payload_status"], "not_held");
    assert_eq!(json(&other, &["verify"], None)["ok"], true);
}

#[test]
fn export_import_round_trip_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let a = init(dir.path(), "a");
    let b = init(dir.path(), "b");
    for i in 0..20 {
        ok(&a, &["append"], Some(format!("a{i}").as_bytes()));
    }
    ok(&b, &["append"], Some(b"b's own"));
    let pack = dir.path().join("a.jsonl");
    ok(&a, &["export", "-o", pack.to_str().unwrap()], None);
    let r = json(&b, &["import", pack.to_str().unwrap()], None);
    assert_eq!(r["imported"], 20);
    let r = json(&b, &["import", pack.to_str().unwrap()], None);
    assert_eq!((r["imported"].as_u64(), r["already_present"].as_u64()), (Some(0), Some(20)));
    assert_eq!(json(&b, &["authors"], None).as_array().unwrap().len(), 2);
    assert_eq!(json(&b, &["verify"], None)["entries"], 21);
    let agent_a = json(&a, &["id"], None)["agent"].as_str().unwrap().to_string();
    assert_eq!(json(&b, &["log", "--author", &agent_a], None).as_array().unwrap().len(), 20);
}

fn pack_of(lines: &[String]) -> String {
    let mut s = "{\"agora_pack\":1}\n".to_string();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

#[test]
fn bad_packs_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let a = init(dir.path(), "a");
    for i in 0..6 {
        ok(&a, &["append"], Some(format!("entry {i}").as_bytes()));
    }
    let pack = snapshot(&a);
    let lines: Vec<String> = pack.lines().skip(1).map(str::to_string).collect();
    let b = init(dir.path(), "b");
    ok(&b, &["append"], Some(b"b was here"));
    let before = snapshot(&b);

    let check = |name: &str, text: String, expect: &str| {
        let out = fails(&b, &["import", "-"], Some(text.as_bytes()), expect);
        assert_eq!(out.code, 1, "{name}");
        assert_eq!(snapshot(&b), before, "{name} changed the store");
    };
    // One bad entry in the middle: a flipped signature bit on line 4.
    let mut v: Value = serde_json::from_str(&lines[2]).unwrap();
    let mut entry = hex::decode(v["entry"].as_str().unwrap()).unwrap();
    let n = entry.len();
    entry[n - 5] ^= 0x20;
    v["entry"] = Value::from(hex::encode(&entry));
    let mut bad = lines.clone();
    bad[2] = v.to_string();
    check("bad signature mid-pack", pack_of(&bad), "line 4");
    // Payload that does not match its hash.
    let mut v: Value = serde_json::from_str(&lines[1]).unwrap();
    v["payload"] = Value::from("dGFtcGVyZWQ=");
    let mut bad = lines.clone();
    bad[1] = v.to_string();
    check("payload mismatch", pack_of(&bad), "payload");
    // Reordered entries.
    let mut bad = lines.clone();
    bad.swap(2, 3);
    check("reordered", pack_of(&bad), "predecessor");
    // Truncated entry.
    let mut v: Value = serde_json::from_str(&lines[0]).unwrap();
    let e = v["entry"].as_str().unwrap().to_string();
    v["entry"] = Value::from(&e[..e.len() - 2]);
    check("truncated", pack_of(&[v.to_string()]), "truncated");
    // Oversized entry.
    let mut v: Value = serde_json::from_str(&lines[0]).unwrap();
    v["entry"] = Value::from("01".repeat(400));
    check("oversized", pack_of(&[v.to_string()]), "too long");
    // Not a pack at all / wrong version.
    check("not a pack", "hello\n".into(), "not an Agora pack header");
    check("future version", "{\"agora_pack\":2}\n".into(), "version 2");
    // An over-long line is refused before it is parsed.
    check("over-long line", format!("{{\"agora_pack\":1}}\n{}\n", "x".repeat(1_500_000)), "longer than the limit");
}

/// A refused import names, for programs, the chain rule its entry broke and
/// that entry: `bad_signature`, a link rule (`seq`, `timestamp_backwards`),
/// or `predecessor_missing` for an entry whose predecessor is neither stored
/// nor on an earlier line.
#[test]
fn a_refused_import_names_the_rule_and_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let a = init(dir.path(), "a");
    for i in 0..4 {
        ok(&a, &["append"], Some(format!("entry {i}").as_bytes()));
    }
    let lines: Vec<String> = snapshot(&a).lines().skip(1).map(str::to_string).collect();
    let b = init(dir.path(), "b");
    let before = snapshot(&b);
    let refused = |bad: &[String], rule: &str, line: usize| {
        let out = fails(&b, &["--json", "import", "-"], Some(pack_of(bad).as_bytes()), &format!("line {line}"));
        let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
        let id: Value = serde_json::from_str::<Value>(&bad[line - 2]).unwrap()["id"].clone();
        assert_eq!((v["rule"].as_str(), v["code"].as_str(), &v["entry"]), (Some(rule), Some("refused"), &id), "{v}");
        assert_eq!(snapshot(&b), before, "{rule} changed the store");
    };
    // A flipped bit in the signature of line 3.
    let mut v: Value = serde_json::from_str(&lines[1]).unwrap();
    let mut entry = hex::decode(v["entry"].as_str().unwrap()).unwrap();
    let n = entry.len();
    entry[n - 5] ^= 0x20;
    v["entry"] = Value::from(hex::encode(&entry));
    let mut bad = lines.clone();
    bad[1] = v.to_string();
    refused(&bad, "bad_signature", 3);
    // Seq 3 before seq 2: line 3 names a predecessor not yet seen.
    let mut bad = lines.clone();
    bad.swap(1, 2);
    refused(&bad, "predecessor_missing", 3);
    // The vectors' broken links after their predecessor (protocol-spec/vectors/vectors.json):
    // each names the rule the vector gives (`seq`, `timestamp_backwards`).
    let vectors: Value =
        serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol-spec/vectors/vectors.json")).unwrap()).unwrap();
    let valid = &vectors["valid_entries"][0];
    let b64 = |hex_text: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(hex::decode(hex_text).unwrap())
    };
    let predecessor = serde_json::json!({ "id": valid["id"], "entry": valid["signed_entry"], "payload": b64(valid["payload"].as_str().unwrap()) });
    for case in vectors["invalid_entries"].as_array().unwrap().iter().filter(|c| c["predecessor"] == "alice_1") {
        let bytes = hex::decode(case["signed_entry"].as_str().unwrap()).unwrap();
        use sha2::Digest;
        let id = hex::encode(sha2::Sha256::digest(&bytes[..bytes.len() - 64]));
        let line = serde_json::json!({ "id": id, "entry": case["signed_entry"], "payload": Value::Null });
        // A backlink that is not its predecessor's id names an entry not held.
        let rule = if case["name"] == "backlink_mismatch" { "predecessor_missing" } else { case["error"].as_str().unwrap() };
        refused(&[predecessor.to_string(), line.to_string()], rule, 3);
    }
}

#[test]
fn every_invalid_vector_is_refused_on_import() {
    let vectors: Value =
        serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol-spec/vectors/vectors.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = init(dir.path(), "b");
    let before = snapshot(&b);
    let valid = &vectors["valid_entries"][0];
    let b64 = |hex_text: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(hex::decode(hex_text).unwrap())
    };
    for case in vectors["invalid_entries"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let entry_hex = case["signed_entry"].as_str().unwrap();
        // The id field is the header hash where the entry decodes; otherwise any.
        let id = if entry_hex.len() > 128 {
            let bytes = hex::decode(entry_hex).unwrap();
            let header = &bytes[..bytes.len() - 64];
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(header))
        } else {
            "00".repeat(32)
        };
        let payload = case.get("payload").map(|p| b64(p.as_str().unwrap())).map_or(Value::Null, Value::from);
        let mut lines = Vec::new();
        if case.get("predecessor").is_some() {
            lines
                .push(serde_json::json!({ "id": valid["id"], "entry": valid["signed_entry"], "payload": b64(valid["payload"].as_str().unwrap()) }).to_string());
        }
        lines.push(serde_json::json!({ "id": id, "entry": entry_hex, "payload": payload }).to_string());
        let out = agora(&b, &["import", "-"], Some(pack_of(&lines).as_bytes()));
        assert_eq!(out.code, 1, "invalid vector {name} was accepted: {}", out.stdout);
        let line = if case.get("predecessor").is_some() { "line 3" } else { "line 2" };
        assert!(out.stderr.contains(line), "{name}: error does not name {line}: {}", out.stderr);
        assert_eq!(snapshot(&b), before, "{name} changed the store");
    }
}

#[test]
fn bad_keys_and_foreign_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = init(dir.path(), "a");
    ok(&home, &["append"], Some(b"one"));
    let before = snapshot(&home);
    let key = home.join("agent.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = fails(&home, &["append"], Some(b"two"), "mode 0644");
    assert!(out.stderr.contains("chmod 600"));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let good = std::fs::read(&key).unwrap();
    std::fs::write(&key, &good[..31]).unwrap();
    fails(&home, &["append"], Some(b"two"), "exactly 32 or 64 bytes, found 31");
    std::fs::write(&key, [&good[..], b"\n"].concat()).unwrap();
    fails(&home, &["append"], Some(b"two"), "exactly 32 or 64 bytes, found 33");
    std::fs::write(&key, &good).unwrap();
    assert_eq!(snapshot(&home), before);

    // A data directory made by something else.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(foreign.join("store")).unwrap();
    std::fs::write(foreign.join("store/data.bin"), b"not ours").unwrap();
    fails(&foreign, &["log", "--all"], None, "not an Agora store");
    fails(&foreign, &["init"], None, "not an Agora store");
    assert!(!foreign.join("agent.key").exists(), "init must not write a key beside a foreign store");
    assert_eq!(std::fs::read(foreign.join("store/data.bin")).unwrap(), b"not ours");
    assert_eq!(std::fs::read_dir(foreign.join("store")).unwrap().count(), 1);

    // Missing home.
    fails(&dir.path().join("nothing"), &["log", "--all"], None, "run `agora init`");

    // Oversized payload.
    let big = vec![b'x'; (1 << 20) + 1];
    fails(&home, &["append"], Some(&big), "larger than the limit");
    assert_eq!(snapshot(&home), before);
}

#[test]
fn a_restored_backup_forks_and_the_fork_is_proven() {
    let dir = tempfile::tempdir().unwrap();
    let home = init(dir.path(), "a");
    ok(&home, &["append"], Some(b"before backup"));
    // Back up the whole home, then both copies go on appending.
    let backup = dir.path().join("backup");
    let status = Command::new("cp").arg("-a").arg(&home).arg(&backup).status().unwrap();
    assert!(status.success());
    ok(&home, &["append"], Some(b"original timeline"));
    ok(&backup, &["append"], Some(b"restored timeline"));
    let pack = snapshot(&backup);
    let report = json(&home, &["import", "-"], Some(pack.as_bytes()));
    assert_eq!(report["forks"].as_array().unwrap().len(), 1);
    assert_eq!(report["forks"][0]["seq"], 2);
    let authors = json(&home, &["authors"], None);
    assert_eq!(authors[0]["forked"], true);
    assert_eq!(authors[0]["tips"].as_array().unwrap().len(), 2);
    fails(&home, &["append"], Some(b"third"), "forked");
    let verify = json(&home, &["verify"], None);
    assert_eq!(verify["ok"], true, "a fork is evidence, not corruption");
    assert_eq!(verify["authors"][0]["fork_seqs"][0], 2);
    let proofs = json(&home, &["forks"], None);
    let proof = proofs[0]["proof"].as_str().unwrap().to_string();
    let checked = json(&home, &["check-proof", &proof], None);
    assert_eq!(checked["valid"], true);
    assert_eq!(checked["seq"], 2);
    // A forged proof is rejected.
    let mut forged = hex::decode(&proof).unwrap();
    let n = forged.len();
    forged[n - 1] ^= 1;
    fails(&home, &["check-proof", &hex::encode(forged)], None, "fork proof rejected");
}

#[test]
fn agora_home_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("env-home");
    let out = Command::new(env!("CARGO_BIN_EXE_agora")).args(["--json", "init"]).env("AGORA_HOME", &home).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["home"], home.display().to_string());
    assert!(home.join("agent.key").exists() && home.join("store").is_dir());
}

#[test]
fn a_damaged_store_gives_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let home = init(dir.path(), "a");
    ok(&home, &["append"], Some(b"one"));
    let store = home.join("store");
    // RocksDB's CURRENT names the live manifest; damage it.
    std::fs::write(store.join("CURRENT"), b"MANIFEST-999999\n").unwrap();
    let listing_before: Vec<_> = std::fs::read_dir(&store).unwrap().map(|e| e.unwrap().file_name()).collect();
    let out = fails(&home, &["log"], None, "store corrupt");
    assert!(out.stderr.contains("manifest"), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let mut listing_after: Vec<_> = std::fs::read_dir(&store).unwrap().map(|e| e.unwrap().file_name()).collect();
    let mut before = listing_before.clone();
    before.sort();
    listing_after.sort();
    assert_eq!(before, listing_after, "a failed open must not create or delete files");
}

/// `agora sim sweep` plays a scenario at each size, one line per run, and
/// writes the sweep's report and plots, and each run's report and plots; the
/// same sweep gives the same report; the axis must be given, one way only.
#[test]
fn sim_sweep_plays_each_size_and_draws_the_curves() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../simulations/scenarios/debate-partition.toml");
    let scenario = scenario.to_str().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let out = ok(dir.path(), &["sim", "sweep", scenario, "--sizes", "3,5", "--out", a.to_str().unwrap()], None);
    let shown = "simulations/scenarios/debate-partition.toml";
    assert!(out.contains(&format!("replay: agora sim sweep {shown} --sizes 3,5 --seed 1")), "{out}");
    assert!(out.contains("  3 nodes, 3 agents, seed 1: converged") && out.contains("  5 nodes, 3 agents, seed 1: converged"), "{out}");
    assert!(out.contains("every invariant held in every run") && !out.contains("VIOLATED"), "{out}");
    ok(dir.path(), &["sim", "sweep", scenario, "--sizes", "3,5", "--out", b.to_str().unwrap()], None);
    let (sa, sb) = (std::fs::read(a.join("sweep.json")).unwrap(), std::fs::read(b.join("sweep.json")).unwrap());
    assert_eq!(same_bytes(&sa), same_bytes(&sb), "the same sweep gives the same report");
    let report: Value = serde_json::from_slice(&sa).unwrap();
    assert_eq!((report["axis"].as_str(), report["ok"].as_bool()), (Some("nodes"), Some(true)));
    let nodes: Vec<u64> = report["points"].as_array().unwrap().iter().map(|p| p["nodes"].as_u64().unwrap()).collect();
    assert_eq!(nodes, [3, 5]);
    assert_eq!(report["points"][1]["replay"], format!("agora sim sweep {shown} --sizes 5 --seed 1"));
    for stem in ["sweep-convergence", "sweep-bandwidth"] {
        assert!(std::fs::read(a.join(format!("{stem}.png"))).unwrap().starts_with(b"\x89PNG"), "{stem}.png");
        assert!(std::fs::read_to_string(a.join(format!("{stem}.svg"))).unwrap().contains("<svg"), "{stem}.svg");
        assert!(out.contains(&format!("plot: {}", a.join(format!("{stem}.png")).display())), "{out}");
    }
    for n in [3, 5] {
        let run: Value = serde_json::from_slice(&std::fs::read(a.join(format!("runs/nodes-{n}/report.json"))).unwrap()).unwrap();
        assert_eq!(run["swarm"]["honest_nodes"], n);
        assert!(a.join(format!("runs/nodes-{n}/run-timeline.png")).exists());
    }
    let seeds = json(dir.path(), &["sim", "sweep", scenario, "--seeds", "1..2"], None);
    assert_eq!(seeds["points"].as_array().unwrap().iter().map(|p| p["seed"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    fails(dir.path(), &["sim", "sweep", scenario], None, "--sizes <SIZES>|--seeds <SEEDS>");
    // Sizes and seeds together: every size with each seed, each run kept
    // under its size and seed.
    let grid = json(dir.path(), &["sim", "sweep", scenario, "--sizes", "3,4", "--seeds", "1..2", "--out", dir.path().join("grid").to_str().unwrap()], None);
    let runs: Vec<(u64, u64)> = grid["points"].as_array().unwrap().iter().map(|p| (p["nodes"].as_u64().unwrap(), p["seed"].as_u64().unwrap())).collect();
    assert_eq!(runs, [(3, 1), (3, 2), (4, 1), (4, 2)]);
    assert!(dir.path().join("grid/runs/nodes-4-seed-2/report.json").exists());
    fails(dir.path(), &["sim", "sweep", scenario, "--sizes", "3", "--seeds", "1..2", "--seed", "4"], None, "cannot be used with");
    fails(dir.path(), &["sim", "sweep", scenario, "--sizes", "3,0"], None, "at least one honest node");
}

/// `agora sim run` plays a checked-in scenario: it prints its seed and the
/// command that replays it, writes a report whose invariants all hold, gives
/// the same report for the same seed, and refuses a scenario that does not
/// make sense, naming the problem.
#[test]
fn sim_run_plays_a_scenario_and_replays_it_from_its_seed() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../simulations/scenarios/debate-partition.toml");
    let scenario = scenario.to_str().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let out = ok(dir.path(), &["sim", "run", scenario, "--seed", "5", "--out", a.to_str().unwrap()], None);
    // The replay names the file from the repository's root, whatever path
    // it was given by: the report is the same bytes.
    let shown = "simulations/scenarios/debate-partition.toml";
    assert!(out.contains("seed 5") && out.contains(&format!("replay: agora sim run {shown} --seed 5")), "{out}");
    assert!(!out.contains("VIOLATED"), "{out}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(["sim", "run", shown, "--seed", "5", "--out", b.to_str().unwrap()])
        .current_dir(root)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "sim run from the repository's root");
    let (ra, rb) = (std::fs::read(a.join("report.json")).unwrap(), std::fs::read(b.join("report.json")).unwrap());
    assert_eq!(same_bytes(&ra), same_bytes(&rb), "the same seed gives the same report, whatever path the scenario was given by");
    assert!(std::fs::read(a.join("run-timeline.png")).unwrap().starts_with(b"\x89PNG"), "sim run --out draws the run's timeline");
    assert!(out.contains(&format!("plot: {}", a.join("run-timeline.svg").display())), "{out}");
    let report: Value = serde_json::from_slice(&ra).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["entries_written"]["honest"], 6);
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nnodes = 2\nduration_ms = 10\n[[partitions]]\nat_ms = 5\nheal_ms = 1\ngroups = [[0], [1]]\n").unwrap();
    fails(dir.path(), &["sim", "run", bad.to_str().unwrap()], None, "heal_ms 1 is not after at_ms 5");
}
