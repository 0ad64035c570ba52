//! The signed log's and the roster's operations, with the three that have
//! code of their own: their input or result is not the command's (a payload
//! or a pack given inline instead of on standard input; a pack returned
//! instead of written). `catalog.rs` lists them after its own.

use super::*;
use crate::ops::invoke::value_of;
use crate::run::Produced;
use base64::Engine;

/// A raw entry: a payload appended to this agent's chain as it is.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendRaw {
    /// The payload as UTF-8 text.
    #[serde(default)]
    pub text: Option<String>,
    /// The payload as base64 (standard alphabet, padded), for binary payloads.
    #[serde(default)]
    pub base64: Option<String>,
}

/// `append`: the payload goes to the command on its standard input.
fn append(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let a: AppendRaw = parse("append", input)?;
    let payload = match (a.text, a.base64) {
        (Some(t), None) => t.into_bytes(),
        (None, Some(b)) => {
            base64::engine::general_purpose::STANDARD.decode(b.trim()).map_err(|e| OpError::input(format!("append: `base64` is not base64: {e}")))?
        }
        _ => {
            return Err(OpError::input("append: give the payload as exactly one of `text` or `base64`"));
        }
    };
    value_of(runner.produce(Command::Chain(ChainCommand::Append { file: Some("-".into()) }), &payload)?).map(as_object)
}

/// What a raw append returns: the entry's header.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Appended {
    /// The new entry's id.
    pub id: String,
    /// Its author (this agent).
    pub author: String,
    /// Its position in the chain.
    pub seq: u64,
    /// The entry before it in the chain (none for the first).
    pub backlink: Option<String>,
    /// When the author signed it, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The payload's length in bytes.
    pub payload_len: u64,
    /// The payload's SHA-256, hex: the signed header binds the payload by it.
    pub payload_hash: String,
    /// The entry format's version.
    pub version: u64,
}

/// `export`: the pack the command writes to its standard output.
fn export(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let e: Export = parse("export", input)?;
    let out = match runner.produce(Command::Chain(ChainCommand::Export(e)), &[])? {
        Produced::Bytes(out) => out,
        Produced::Value(_) => return Err(OpError::msg("export: the command wrote no pack")),
    };
    let pack = String::from_utf8(out).map_err(|_| OpError::msg("export: the pack is not UTF-8".to_string()))?;
    // The first line is the pack's header; every other line one entry.
    let entries = pack.lines().skip(1).filter(|l| !l.trim().is_empty()).count();
    Ok(json!({ "entries": entries, "pack": pack }))
}

/// What `export` returns.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Exported {
    /// How many entries the pack holds.
    pub entries: usize,
    /// The pack: JSON lines, a header line then one entry per line (protocol-spec/pack.md).
    pub pack: String,
}

/// Import a pack.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Import {
    /// The pack: JSON lines as `export` writes them. Verified whole before anything is stored.
    pub pack: String,
}

/// `import`: the pack goes to the command on its standard input.
fn import(runner: &dyn Runner, input: Value) -> Result<Value, OpError> {
    let i: Import = parse("import", input)?;
    value_of(runner.produce(Command::Chain(ChainCommand::Import { file: "-".into() }), i.pack.as_bytes())?).map(as_object)
}

/// The operations of this file, in the catalog's order.
pub fn operations() -> Vec<Operation> {
    use Effect::*;
    vec![
        tool!(
            "log",
            |i: Log| Command::Chain(ChainCommand::Log(i)),
            "List a chain",
            Read,
            ReadResult,
            "The entries of one agent's chain in seq order (default: this agent's), or of every chain: id, seq, timestamp, payload state and a preview. Use `show` for one entry in full."
        ),
        tool!(
            "show",
            |i: EntryRef| Command::Chain(ChainCommand::Show(i)),
            "Show an entry",
            Read,
            ReadResult,
            "One entry in full: its signed header (author, seq, backlink, timestamp, payload length and hash), its signature, and its payload (text, or base64) or why it is absent (redacted, not received)."
        ),
        tool!(
            "verify",
            |i: Verify| Command::Chain(ChainCommand::Verify(i)),
            "Verify chains",
            Read,
            ReadResult,
            "Verify stored chains end to end: every signature, backlink and payload hash, and the tips. `ok` is false, with the problems listed, when anything fails; forks are reported with their seqs."
        ),
        Operation {
            name: "append",
            title: "Append a raw entry",
            description: "Append a raw payload to this agent's chain as a signed entry (give `text` or `base64`). Reasoning events are better recorded with their own tools (propose, contradict, ...), which encode the payload; a raw payload that is a malformed event is refused.",
            effect: Append,
            input_schema: schema_of::<AppendRaw>,
            output_schema: schema_of::<Appended>,
            run: append,
        },
        tool!(
            "redact",
            |i: EntryRef| Command::Chain(ChainCommand::Redact(i)),
            "Redact a payload",
            Delete,
            ReadResult,
            "Delete an entry's payload from this node's store and record the redaction. The signed header stays, so the chain still verifies, and what the payload meant (its residue) keeps every view unchanged; the text itself is gone from this node for good."
        ),
        Operation {
            name: "export",
            title: "Export a pack",
            description: "Every stored entry (or one author's) with the payloads held, as a pack: JSON lines that `import` (here or on another node) verifies and stores.",
            effect: Read,
            input_schema: schema_of::<Export>,
            output_schema: schema_of::<Exported>,
            run: export,
        },
        Operation {
            name: "import",
            title: "Import a pack",
            description: "Verify a pack (signatures, links, payload hashes, roster) whole, then store its entries; entries already held are counted, never overwritten, and a fork found is stored with its proof. Returns the counts and the forks detected.",
            effect: Store,
            input_schema: schema_of::<Import>,
            output_schema: schema_of::<ReadResult>,
            run: import,
        },
        tool!(
            "authors",
            |_: Nothing| Command::Chain(ChainCommand::Authors),
            "Authors stored",
            Read,
            ReadResult,
            "Every author whose chain is stored here, with its highest seq, its tips (more than one: forked) and its fork proofs."
        ),
        tool!(
            "forks",
            |i: AuthorFilter| Command::Chain(ChainCommand::Forks(i)),
            "Fork proofs",
            Read,
            ReadResult,
            "The fork proofs stored here (or one author's): the two signed entries at one seq, and the proof itself, hex-encoded, which anyone can check with `check_proof` and no other data."
        ),
        tool!(
            "check_proof",
            |i: CheckProof| Command::Chain(ChainCommand::CheckProof(i)),
            "Check a fork proof",
            Read,
            ReadResult,
            "Check a hex-encoded fork proof with no other data: valid when one author signed two different entries at the same seq."
        ),
        tool!(
            "search",
            |i: Search| read(ReadCommand::Search(i)),
            "Search the graph",
            Read,
            answers::SearchAnswer,
            concat!(
                "Full-text search (BM25) over the nodes' text: id, score, status, kind and text, best first. Superseded and retracted nodes are left out unless `all`. `orient` adds the open questions and contested nodes on the topic.",
                statuses!()
            )
        ),
        tool!(
            "orphans",
            |_: Nothing| read(ReadCommand::Orphans),
            "Orphan claims",
            Read,
            answers::NodeList,
            "Derived memory claims with no source event (their provenance is missing)."
        ),
        tool!(
            "admit",
            |i: Admit| Command::Membership(MembershipCommand::Admit(i)),
            "Admit an agent",
            Append,
            ReadResult,
            "Admit an agent to this workspace (the founder only): its entries are then replicated and counted by every node."
        ),
        tool!(
            "remove",
            |i: Remove| Command::Membership(MembershipCommand::Remove(i)),
            "Remove an agent",
            Append,
            ReadResult,
            "Remove an agent from this workspace (the founder only): its entries up to the highest seq held here stay admitted, later ones are admitted nowhere."
        ),
        tool!(
            "roster",
            |_: Nothing| Command::Membership(MembershipCommand::Roster),
            "The roster",
            Read,
            ReadResult,
            "The workspace's members, derived from the founder's chain: who was admitted and removed, and when."
        ),
    ]
}
