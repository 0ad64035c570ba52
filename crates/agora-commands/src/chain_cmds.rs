//! The commands of the signed log itself: keys, entries, verification,
//! redaction, packs, authors and fork proofs. One function per command;
//! each returns the exit code on success.

use crate::answers::SeqEntry;
use crate::args::{now_ms, parse_author};
use crate::cli::ChainCommand;
use crate::output;
use crate::session::Session;
use agora_command_line::inputs;
use agora_core::pack;
use agora_core::{AgentId, ForkProof, SignedEntry};
use agora_store::{ImportItem, PayloadState, Store, StoredEntry};
use anyhow::{Context, Result};
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;

/// Run one command of the signed log.
pub fn run(s: &Session, command: ChainCommand) -> Result<ExitCode> {
    match command {
        ChainCommand::Init => init(s),
        ChainCommand::Id => {
            let key = s.key()?;
            s.print(&IdentityAnswer { agent: key.agent_id().to_string() }, || key.agent_id().to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        ChainCommand::Append { file } => append(s, file.as_deref()),
        ChainCommand::Log(inputs::Log { author, all, from, limit }) => {
            if all && author.is_some() {
                return Err(crate::output::refused("input_schema", "give an author or every chain (all), not both"));
            }
            log(s, author.as_deref(), all, from.unwrap_or(1), limit.unwrap_or(1000))
        }
        ChainCommand::Show(inputs::EntryRef { entry }) => show(s, &entry),
        ChainCommand::Verify(inputs::Verify { author, threads }) => verify(s, author.as_deref(), threads),
        ChainCommand::Redact(inputs::EntryRef { entry }) => redact(s, &entry),
        ChainCommand::Export(inputs::Export { author, output }) => export(s, author.as_deref(), output.as_deref()),
        ChainCommand::Import { file } => import(s, &file),
        ChainCommand::Authors => authors(s),
        ChainCommand::Forks(inputs::AuthorFilter { author }) => forks(s, author.as_deref()),
        ChainCommand::CheckProof(inputs::CheckProof { proof }) => check_proof(s, &proof),
        ChainCommand::Key(command) => crate::keys::run(s, command),
    }
}

fn init(s: &Session) -> Result<ExitCode> {
    let key = s.home.init()?;
    let id = key.agent_id().to_string();
    let next_key = s.home.next_key_path(None)?.display().to_string();
    let answer = Initialised { agent: id.clone(), home: s.home.dir.display().to_string(), next_key: next_key.clone() };
    s.print(&answer, || {
        format!(
            "initialised {}\nagent {id}\nnext key {next_key}: keep it apart from this home (`agora key next --export FILE`); it is what rotates a stolen key away",
            s.home.dir.display()
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Read at most `PAYLOAD_BYTES_MAX + 1` bytes, so an oversized input is
/// refused without being read whole.
fn read_payload(s: &Session, file: Option<&Path>) -> Result<Vec<u8>> {
    let max = agora_core::limits::PAYLOAD_BYTES_MAX as u64;
    let mut buf = Vec::new();
    let source = match file {
        None => "stdin".to_string(),
        Some(p) if p == Path::new("-") => "stdin".to_string(),
        Some(p) => p.display().to_string(),
    };
    if source == "stdin" {
        s.with_input(|input| input.take(max + 1).read_to_end(&mut buf)).context("reading payload from stdin")?;
    } else {
        let file = std::fs::File::open(&source).with_context(|| format!("opening payload {source}"))?;
        file.take(max + 1).read_to_end(&mut buf).with_context(|| format!("reading payload from {source}"))?;
    }
    if buf.len() as u64 > max {
        return Err(crate::output::refused("payload_too_large", format!("payload from {source} is larger than the limit of {max} bytes")));
    }
    Ok(buf)
}

fn append(s: &Session, file: Option<&Path>) -> Result<ExitCode> {
    s.key()?;
    let payload = read_payload(s, file)?;
    crate::reasoning::check_appended_payload(s, &payload)?;
    let entry = crate::own_chain::append_own(s, &payload)?;
    s.print(&EntryHeader::of(&entry), || entry.id().to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn log(s: &Session, author: Option<&str>, all: bool, from: u64, limit: usize) -> Result<ExitCode> {
    let (store, json) = (s.store()?, s.json);
    let authors: Vec<AgentId> = if all {
        store.authors()?.into_iter().map(|a| a.author).collect()
    } else if let Some(a) = author {
        vec![parse_author(a)?]
    } else {
        vec![s.key().context("no author given and no agent key to default to")?.agent_id()]
    };
    let mut rows = Vec::new();
    let mut text = Vec::new();
    for a in authors {
        for e in store.chain(&a, from, limit)? {
            if json {
                rows.push(LoggedEntry::of(&e));
            } else {
                let h = e.signed.header();
                text.push(format!("{} {:>6}  {}  {:>13}  {}", h.author.short(), h.seq, e.signed.id(), h.timestamp_ms, output::preview(&e.payload)));
            }
        }
    }
    s.print(&rows, || text.join("\n"))?;
    Ok(ExitCode::SUCCESS)
}

fn show(s: &Session, entry: &str) -> Result<ExitCode> {
    let store = s.store()?;
    let id = store.resolve(entry)?;
    let e = store.get(&id)?.with_context(|| format!("entry {id} vanished while reading"))?;
    s.print(&ShownEntry::of(&e), || {
        let h = e.signed.header();
        let mut out = vec![
            format!("id            {}", e.signed.id()),
            format!("author        {}", h.author),
            format!("seq           {}", h.seq),
            format!("backlink      {}", h.backlink.map_or("none (first entry)".into(), |b| b.to_string())),
            format!("timestamp_ms  {}", h.timestamp_ms),
            format!("payload_len   {}", h.payload_len),
            format!("payload_hash  {}", hex::encode(h.payload_hash)),
            format!("signature     {}", hex::encode(e.signed.signature())),
            format!("payload       {}", output::payload_status(&e.payload)),
        ];
        if let PayloadState::Held(p) = &e.payload {
            out.push(String::new());
            out.push(match std::str::from_utf8(p) {
                Ok(t) => t.to_string(),
                Err(_) => format!("<{} bytes binary; use --json for base64>", p.len()),
            });
        }
        out.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

fn verify(s: &Session, author: Option<&str>, threads: usize) -> Result<ExitCode> {
    let store = s.store()?;
    let author = author.map(parse_author).transpose()?;
    let total: u64 = match &author {
        Some(a) => store.tip_summary(a)?.map_or(0, |s| s.head.seq),
        None => store.authors()?.iter().map(|a| a.max_seq).sum(),
    };
    let bar = s.progress(total, "verify {bar:40} {pos}/{len} entries ({per_sec}, eta {eta})");
    let report = store.audit_observed(author.as_ref(), threads, &|n| bar.set_position(n))?;
    bar.finish_and_clear();
    let clean = report.is_clean();
    let answer = VerifyAnswer {
        ok: clean,
        entries: report.entries(),
        authors: report
            .authors
            .iter()
            .map(|a| VerifiedChain {
                author: a.author.to_string(),
                entries: a.entries,
                max_seq: a.max_seq,
                tips: a.tips,
                forked: a.tips > 1 || !a.fork_seqs.is_empty(),
                fork_seqs: a.fork_seqs.clone(),
                payloads_held: a.payloads_held,
                payloads_redacted: a.payloads_redacted,
                payloads_not_held: a.payloads_not_held,
                problem_count: a.problem_count,
                problems: a.problems.clone(),
            })
            .collect(),
    };
    s.print(&answer, || {
        let mut out = Vec::new();
        for a in &report.authors {
            let fork = if a.fork_seqs.is_empty() { String::new() } else { format!(", FORKED at seq {:?}", a.fork_seqs) };
            out.push(format!(
                "{}: {} entries, max seq {}, {} tip(s){fork}; payloads {} held, {} redacted, {} not held; {} problem(s)",
                a.author, a.entries, a.max_seq, a.tips, a.payloads_held, a.payloads_redacted, a.payloads_not_held, a.problem_count
            ));
            for p in &a.problems {
                out.push(format!("  problem: {p}"));
            }
        }
        out.push(if clean { format!("ok: {} entries verified", report.entries()) } else { "FAILED: problems found".into() });
        out.join("\n")
    })?;
    Ok(if clean { ExitCode::SUCCESS } else { ExitCode::from(3) })
}

fn redact(s: &Session, entry: &str) -> Result<ExitCode> {
    let store = s.store()?;
    let id = store.resolve(entry)?;
    // Keep what the payload meant, without its text, so that no view
    // changes (see agora_core::payload); the store refuses if it is not held.
    let residue = match store.get(&id)?.map(|e| e.payload) {
        Some(agora_store::PayloadState::Held(p)) => Some(agora_view::residue(&p)),
        _ => None,
    };
    let report = store.redact(&id, now_ms(), residue.as_deref())?;
    // Erased: no file of the store holds the payload's bytes any more. Not
    // erased: reads that began before (a long `verify`) still held a
    // snapshot when the wait ended; the last of them erases it when it ends.
    let window = (!report.erased()).then(|| {
        format!(
            "{} read(s) that began before the redaction were still open after {:.1} s (the oldest for {:.1} s): the payload's bytes stay in the store's files until they end, and are erased then",
            report.reads_left,
            report.waited.as_secs_f64(),
            report.oldest_read_age.as_secs_f64()
        )
    });
    let answer = RedactAnswer {
        id: id.to_string(),
        redacted: true,
        erased: report.erased(),
        waited_ms: report.waited.as_millis() as u64,
        reads_left: report.reads_left,
        window: window.clone(),
    };
    s.print(&answer, || match &window {
        None => format!("redacted payload of {id}"),
        Some(w) => format!("redacted payload of {id}; {w}"),
    })?;
    Ok(ExitCode::SUCCESS)
}

fn export(s: &Session, author: Option<&str>, output: Option<&Path>) -> Result<ExitCode> {
    let store = s.store()?;
    let author = author.map(parse_author).transpose()?;
    let to_file = output.filter(|p| *p != Path::new("-"));
    let count = match to_file {
        Some(p) => {
            let file = std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?;
            write_pack(store, author.as_ref(), &mut BufWriter::new(file))?
        }
        None => s.with_out(|out| write_pack(store, author.as_ref(), &mut BufWriter::new(out)))?,
    };
    if let Some(p) = to_file {
        let answer = ExportedTo { entries: count, output: p.display().to_string() };
        s.print(&answer, || format!("exported {count} entries to {}", p.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_pack(store: &Store, author: Option<&AgentId>, out: &mut impl Write) -> Result<u64> {
    writeln!(out, "{}", pack::header_line())?;
    let mut count = 0u64;
    store.for_each_entry(author, |e| {
        let payload = match &e.payload {
            PayloadState::Held(p) => Some(p.as_slice()),
            _ => None,
        };
        writeln!(out, "{}", pack::entry_line(&e.signed, payload)).map_err(|err| agora_store::StoreError::Limit(format!("writing the pack: {err}")))?;
        count += 1;
        Ok(())
    })?;
    out.flush().context("writing the pack")?;
    Ok(count)
}

/// Read one line of at most `max` bytes (without the newline). `None` at EOF.
fn read_line_bounded(reader: &mut impl BufRead, max: usize, line_no: usize) -> Result<Option<String>> {
    let mut buf = Vec::new();
    let n = reader.take(max as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > max {
        return Err(crate::output::refused("bad_pack", format!("pack line {line_no}: longer than the limit of {max} bytes")));
    }
    String::from_utf8(buf).map(Some).map_err(|_| crate::output::refused("bad_pack", format!("pack line {line_no}: not UTF-8")))
}

fn import(s: &Session, file: &Path) -> Result<ExitCode> {
    let items = if file == Path::new("-") {
        s.with_input(|input| read_pack("stdin", &mut std::io::BufReader::new(input)))?
    } else {
        let name = file.display().to_string();
        let f = std::fs::File::open(file).with_context(|| format!("opening {name}"))?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        let bar = s.progress(size, "read  {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})");
        let items = read_pack(&name, &mut std::io::BufReader::new(bar.wrap_read(f)))?;
        bar.finish_and_clear();
        items
    };
    let store = s.store()?;
    let bar = s.progress(0, &format!("{{spinner}} verifying and storing {} entries ({{elapsed}})", items.len()));
    let report = store.import(items, now_ms());
    bar.finish_and_clear();
    let report = report?;
    let answer = ImportAnswer {
        imported: report.imported,
        already_present: report.already_present,
        payloads_filled: report.payloads_filled,
        forks: report.forks.iter().map(|(a, seq)| AuthorSeq { author: a.to_string(), seq: *seq }).collect(),
        deferred: report.deferred.as_ref().map(|d| Deferred { count: d.count, first: d.first.id.to_string(), until_ms: d.until_ms }),
    };
    s.print(&answer, || {
        let mut t = format!("imported {} entries, {} already present", report.imported, report.already_present);
        if report.payloads_filled > 0 {
            t.push_str(&format!(", {} missing payloads filled in", report.payloads_filled));
        }
        if let Some(d) = report.deferred {
            t.push_str(&format!(
                "\n{} entries dated more than a minute ahead of this machine's clock were not stored (from {}); import again after {} ms since the epoch",
                d.count, d.first, d.until_ms
            ));
        }
        for (a, s) in &report.forks {
            t.push_str(&format!("\nfork detected: author {a} at seq {s} (proof stored)"));
        }
        t
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Read and parse a whole pack; nothing is stored until it all parses.
fn read_pack(name: &str, reader: &mut impl BufRead) -> Result<Vec<ImportItem>> {
    let name = name.to_string();
    let max = agora_core::limits::PACK_LINE_BYTES_MAX;
    let first = read_line_bounded(reader, max, 1)?.ok_or_else(|| crate::output::refused("bad_pack", format!("{name}: empty file, not a pack")))?;
    pack::parse_header_line(&first).with_context(|| name.clone())?;
    let mut items = Vec::new();
    let mut line_no = 1;
    while let Some(line) = read_line_bounded(reader, max, line_no + 1)? {
        line_no += 1;
        if line.trim().is_empty() {
            continue;
        }
        let (entry, payload) = pack::parse_entry_line(line_no, &line).with_context(|| name.clone())?;
        items.push(ImportItem { entry, payload, origin: format!("{name} line {line_no}") });
    }
    Ok(items)
}

fn authors(s: &Session) -> Result<ExitCode> {
    let store = s.store()?;
    let list = store.authors()?;
    let rows: Vec<StoredAuthor> = list
        .iter()
        .map(|a| StoredAuthor {
            author: a.author.to_string(),
            max_seq: a.max_seq,
            forked: a.tips.len() > 1 || a.fork_proofs > 0,
            fork_proofs: a.fork_proofs,
            tips: a.tips.iter().map(|t| SeqEntry { seq: t.seq, id: t.id.to_string() }).collect(),
        })
        .collect();
    s.print(&rows, || {
        list.iter()
            .map(|a| {
                let tips: Vec<String> = a.tips.iter().map(|t| format!("{}@{}", t.id.short(), t.seq)).collect();
                format!("{}  max seq {}  tips {}  fork proofs {}", a.author, a.max_seq, tips.join(","), a.fork_proofs)
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

fn forks(s: &Session, author: Option<&str>) -> Result<ExitCode> {
    let store = s.store()?;
    let author = author.map(parse_author).transpose()?;
    let proofs = store.fork_proofs(author.as_ref())?;
    let rows: Vec<ForkProofAnswer> = proofs
        .iter()
        .map(|p| {
            let (a, b) = p.entries();
            ForkProofAnswer { author: p.author().to_string(), seq: p.seq(), a: a.id().to_string(), b: b.id().to_string(), proof: hex::encode(p.encode()) }
        })
        .collect();
    s.print(&rows, || {
        proofs
            .iter()
            .map(|p| {
                let (a, b) = p.entries();
                format!("author {} seq {}: {} vs {}\n  proof {}", p.author(), p.seq(), a.id(), b.id(), hex::encode(p.encode()))
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

fn check_proof(s: &Session, text: &str) -> Result<ExitCode> {
    let bytes = hex::decode(text.trim()).map_err(|e| crate::output::refused("bad_fork_proof", format!("fork proof is not hex: {e}")))?;
    let proof = ForkProof::decode(&bytes).context("fork proof rejected")?;
    let (a, b) = proof.entries();
    let answer = ProofChecked { valid: true, author: proof.author().to_string(), seq: proof.seq(), a: a.id().to_string(), b: b.id().to_string() };
    s.print(&answer, || format!("valid fork proof: author {} signed both {} and {} at seq {}", proof.author(), a.id(), b.id(), proof.seq()))?;
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------
// The answers

/// What `init` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Initialised {
    /// The new agent's id.
    pub agent: String,
    /// The home made.
    pub home: String,
    /// The agent's next key, which its first entry commits to: keep it
    /// apart from the home (`agora key next --export FILE`).
    pub next_key: String,
}

/// An entry's signed header: what `append` returns, and how `log` begins each entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EntryHeader {
    /// The entry's id.
    pub id: String,
    /// Its author.
    pub author: String,
    /// Its position in the chain.
    pub seq: u64,
    /// The entry before it in the chain (null for the first).
    pub backlink: Option<String>,
    /// When the author signed it, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The payload's length in bytes.
    pub payload_len: u64,
    /// The payload's SHA-256, hex: the signed header binds the payload by it.
    pub payload_hash: String,
    /// The entry format's version.
    pub version: u64,
    /// The key that signed it, when not the author's own (the agent has
    /// rotated: protocol-spec/keys.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The key event it is (`rotate`, `recover`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_event: Option<String>,
}

impl EntryHeader {
    /// The header of `e`.
    pub fn of(e: &SignedEntry) -> Self {
        let h = e.header();
        Self {
            id: e.id().to_string(),
            author: h.author.to_string(),
            seq: h.seq,
            backlink: h.backlink.map(|b| b.to_string()),
            timestamp_ms: h.timestamp_ms,
            payload_len: u64::from(h.payload_len),
            payload_hash: hex::encode(h.payload_hash),
            version: u64::from(h.version),
            signer: h.keys.and_then(|k| k.signer).map(|k| k.to_string()),
            key_event: Some(h.key_event()).filter(|e| *e != agora_core::KeyEvent::None).map(|e| e.name().to_string()),
        }
    }
}

impl LoggedEntry {
    /// A stored entry's header and its payload's state.
    pub fn of(s: &StoredEntry) -> Self {
        let (status, redacted_at_ms) = match &s.payload {
            PayloadState::Held(_) => ("held", None),
            PayloadState::Redacted { at_ms, .. } => ("redacted", Some(*at_ms)),
            PayloadState::NotHeld => ("not_held", None),
        };
        Self { header: EntryHeader::of(&s.signed), payload_status: status.to_string(), redacted_at_ms }
    }
}

impl ShownEntry {
    /// A stored entry in full: its signature, and its payload when held.
    pub fn of(s: &StoredEntry) -> Self {
        let held = match &s.payload {
            PayloadState::Held(p) => Some(p),
            _ => None,
        };
        Self {
            entry: LoggedEntry::of(s),
            signature: hex::encode(s.signed.signature()),
            payload_base64: held.map(|p| base64::engine::general_purpose::STANDARD.encode(p)),
            payload_utf8: held.map(|p| std::str::from_utf8(p).ok().map(str::to_string)),
        }
    }
}

/// What `export --output FILE` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExportedTo {
    /// Entries written.
    pub entries: u64,
    /// The file written.
    pub output: String,
}

/// What `identity` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IdentityAnswer {
    /// This agent's id (64 hex characters): what others pass as `agent`.
    pub agent: String,
}

/// An entry's signed header and its payload's state.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LoggedEntry {
    /// Its signed header.
    #[serde(flatten)]
    pub header: EntryHeader,
    /// `held`, `redacted` or `not_held`.
    pub payload_status: String,
    /// When redacted, ms since the Unix epoch (null otherwise).
    pub redacted_at_ms: Option<u64>,
}

/// `show`: one entry in full.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ShownEntry {
    /// Its header and payload state.
    #[serde(flatten)]
    pub entry: LoggedEntry,
    /// The signature, hex.
    pub signature: String,
    /// The payload, base64 (when held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_base64: Option<String>,
    /// The payload as text (when held; null when not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_utf8: Option<Option<String>>,
}

/// `verify`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VerifyAnswer {
    /// Everything verified.
    pub ok: bool,
    /// Entries verified.
    pub entries: u64,
    /// Each chain's report.
    pub authors: Vec<VerifiedChain>,
}

/// One chain verified.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VerifiedChain {
    /// The author.
    pub author: String,
    /// Entries stored (all branches).
    pub entries: u64,
    /// Highest seq.
    pub max_seq: u64,
    /// How many tips.
    pub tips: usize,
    /// More than one tip, or a fork seq.
    pub forked: bool,
    /// Seqs with more than one entry.
    pub fork_seqs: Vec<u64>,
    /// Payloads held and checked.
    pub payloads_held: u64,
    /// Payloads redacted here.
    pub payloads_redacted: u64,
    /// Payloads never received.
    pub payloads_not_held: u64,
    /// Problems found, listed or not.
    pub problem_count: usize,
    /// The problems listed.
    pub problems: Vec<String>,
}

/// `redact`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RedactAnswer {
    /// The entry redacted.
    pub id: String,
    /// Always true.
    pub redacted: bool,
    /// No file of the store holds the payload's bytes any more.
    pub erased: bool,
    /// How long it waited for earlier reads, ms.
    pub waited_ms: u64,
    /// Earlier reads still open.
    pub reads_left: usize,
    /// When not erased: why, and when it will be (null otherwise).
    pub window: Option<String>,
}

/// `import`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImportAnswer {
    /// Entries stored.
    pub imported: usize,
    /// Entries already held.
    pub already_present: usize,
    /// Missing payloads filled in.
    pub payloads_filled: usize,
    /// Forks detected (their proofs stored).
    pub forks: Vec<AuthorSeq>,
    /// Entries dated ahead of this clock, not stored (null when none).
    pub deferred: Option<Deferred>,
}

/// An author's chain at a seq.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AuthorSeq {
    /// The author.
    pub author: String,
    /// The seq.
    pub seq: u64,
}

/// Entries dated ahead of this machine's clock.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Deferred {
    /// How many.
    pub count: usize,
    /// The first of them.
    pub first: String,
    /// Import again after this, ms since the Unix epoch.
    pub until_ms: u64,
}

/// An author whose chain is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StoredAuthor {
    /// The author.
    pub author: String,
    /// Its highest seq.
    pub max_seq: u64,
    /// More than one tip, or a fork proof.
    pub forked: bool,
    /// Fork proofs stored.
    pub fork_proofs: usize,
    /// Its tips.
    pub tips: Vec<SeqEntry>,
}

/// A fork proof.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ForkProofAnswer {
    /// The author.
    pub author: String,
    /// The seq.
    pub seq: u64,
    /// One entry at it.
    pub a: String,
    /// The other.
    pub b: String,
    /// The proof, hex (`check_proof` checks it).
    pub proof: String,
}

/// `check_proof`: a valid proof's contents (an invalid one is an error).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProofChecked {
    /// Always true.
    pub valid: bool,
    /// The author who signed both.
    pub author: String,
    /// The seq.
    pub seq: u64,
    /// One entry.
    pub a: String,
    /// The other.
    pub b: String,
}
