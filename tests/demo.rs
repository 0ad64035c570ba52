//! The main job (`scripts/demo.sh`) on the binaries already built, with no
//! set-up and no build (`AGORA_DEMO_SKIP_BUILD=1`): three nodes on
//! 127.0.0.1 debate, every node shows the same view hash, the disagreement
//! map shows the dispute with its counter-claim, the live page's address is
//! printed, the nodes stop and the homes are removed, within two minutes.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn the_demo_runs_three_nodes_to_one_view_with_a_dispute_and_the_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository root");
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    // The script's temporary homes go under TMPDIR: here, to check they are gone after.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let start = Instant::now();
    let mut child = Command::new("bash")
        .arg(root.join("scripts/demo.sh"))
        .env("AGORA_DEMO_SKIP_BUILD", "1")
        .env("AGORA_BIN", env!("CARGO_BIN_EXE_agora"))
        .env("TMPDIR", &tmp)
        .env_remove("AGORA_HOME")
        .env_remove("AGORA_DEMO_HOLD")
        .env_remove("AGORA_DEMO_KEEP")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        // Its own process group: on a timeout the script and its nodes are stopped together.
        .process_group(0)
        .spawn()
        .expect("bash runs the demo");
    let read = || (std::fs::read_to_string(&out_path).unwrap_or_default(), std::fs::read_to_string(&err_path).unwrap_or_default());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            // SIGTERM: the script's trap stops the nodes it started.
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-TERM", &group]).status();
            let stopping = Instant::now();
            while child.try_wait().unwrap().is_none() && stopping.elapsed() < Duration::from_secs(15) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = Command::new("kill").args(["-KILL", &group]).status();
            let _ = child.wait();
            let (out, err) = read();
            panic!("the demo took more than {LIMIT:?}:\n{out}\n{err}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let elapsed = start.elapsed();
    let (out, err) = read();
    assert!(status.success(), "the demo failed ({status}):\n{out}\n{err}");
    println!("{out}\nthe demo took {elapsed:?}");

    // The same merged view on the three nodes.
    let hashes: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("node  view hash "))
        .map(|l| l.split_whitespace().last().unwrap_or(""))
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    assert_eq!(hashes.len(), 3, "a view hash per node:\n{out}");
    assert!(hashes.iter().all(|h| *h == hashes[0]), "the nodes differ: {hashes:?}\n{out}");
    // The disagreement map: Bob's dispute of Alice's refinement, with his counter-claim.
    assert!(out.contains("disputed by bob: Two tracks double our billing operations (counter-claim: One plan with usage caps)"), "{out}");
    assert!(out.contains("consensus with quorum 2 of 3 agents"), "{out}");
    assert!(out.contains("perspective of bob"), "{out}");
    // The live page's address, with its one-time login.
    assert!(out.lines().any(|l| l.trim_start().starts_with("http://127.0.0.1:") && l.contains("/#code=")), "the page's address:\n{out}");
    // The nodes stopped, and the temporary homes are gone.
    for who in ["alice", "bob", "carol"] {
        assert!(out.contains(&format!("{who}'s node stopped")), "{out}");
    }
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "the demo left {left:?}");
}
