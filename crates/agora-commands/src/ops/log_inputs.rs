//! Inputs of the operations on the signed log itself (entries, packs, fork
//! proofs), on workspace membership, and of the plain graph reads (search,
//! orphans): each the CLI command of the same name, as the reasoning moves
//! are. Included by `catalog.rs`, whose macros it uses.

use super::*;
use base64::Engine;

/// One chain or all of them, listed in order.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Log {
    /// The author whose chain to list (64-hex agent id; default: this agent).
    #[serde(default)]
    pub author: Option<String>,
    /// Every author's chain.
    #[serde(default)]
    pub all: bool,
    /// The first seq listed (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub from: Option<u64>,
    /// At most this many entries per chain (default 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub limit: Option<usize>,
}
one_command!(Log, "log", |self| Argv::new(&["log"])
    .opt("author", self.author.as_ref())
    .switch("all", self.all)
    .opt("from", self.from)
    .opt("limit", self.limit));

/// One entry named by id.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryRef {
    /// The entry (its id, or a unique prefix of it).
    pub entry: String,
}
pub struct Show(EntryRef);
pub struct Redact(EntryRef);
same_input!(Show, EntryRef);
one_command!(Show, "show", |self| Argv::new(&["show"]).arg(&self.0.entry));
same_input!(Redact, EntryRef);
one_command!(Redact, "redact", |self| Argv::new(&["redact"]).arg(&self.0.entry));

/// One author's chain, or all of them.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthorFilter {
    /// Only this author (64-hex agent id); every author when absent.
    #[serde(default)]
    pub author: Option<String>,
}
pub struct Verify(AuthorFilter);
pub struct Forks(AuthorFilter);
same_input!(Verify, AuthorFilter);
one_command!(Verify, "verify", |self| Argv::new(&["verify"]).opt("author", self.0.author.as_ref()));
same_input!(Forks, AuthorFilter);
one_command!(Forks, "forks", |self| Argv::new(&["forks"]).opt("author", self.0.author.as_ref()));

pub struct Authors(Nothing);
pub struct Roster(Nothing);
pub struct Orphans(Nothing);
nothing!(Authors, "authors", ["authors"]);
nothing!(Roster, "roster", ["roster"]);
nothing!(Orphans, "orphans", ["orphans"]);

/// A standalone fork proof.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckProof {
    /// The proof, hex-encoded (as `forks` lists it).
    pub proof: String,
}
one_command!(CheckProof, "check_proof", |self| Argv::new(&["check-proof"]).arg(&self.proof));

/// Full-text search.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// The words searched for (BM25 over the nodes' text).
    pub query: String,
    /// Also superseded and retracted nodes (left out by default).
    #[serde(default)]
    pub all: bool,
    /// At most this many hits (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}
one_command!(Search, "search", |self| Argv::new(&["search"]).switch("all", self.all).opt("limit", self.limit).arg(&self.query));

/// Admit an agent to the workspace.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Admit {
    /// The agent (64-hex agent id).
    pub agent: String,
    /// Why, or who it is.
    #[serde(default)]
    pub note: String,
}
one_command!(Admit, "admit", |self| Argv::new(&["admit"]).arg(&self.agent).arg(&self.note));

/// Remove an agent from the workspace.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Remove {
    /// The agent (64-hex agent id).
    pub agent: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
}
one_command!(Remove, "remove", |self| Argv::new(&["remove"]).arg(&self.agent).arg(&self.reason));

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
fn append(invoker: &dyn Invoke, input: Value) -> Result<Value, OpError> {
    let a: AppendRaw = parse("append", input)?;
    let payload = match (a.text, a.base64) {
        (Some(t), None) => t.into_bytes(),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD.decode(b.trim()).map_err(|e| OpError {
            message: format!("append: `base64` is not base64: {e}"),
            rule: Some("input_schema".to_string()),
            entry: None,
        })?,
        _ => {
            return Err(OpError {
                message: "append: give the payload as exactly one of `text` or `base64`".to_string(),
                rule: Some("input_schema".to_string()),
                entry: None,
            });
        }
    };
    invoker.run(Argv::new(&["append"]).arg("-").build(), &payload)?.into_result().map(as_object)
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

/// Export entries as a pack.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Export {
    /// Only this author's chain (64-hex agent id); every chain when absent.
    #[serde(default)]
    pub author: Option<String>,
}

/// `export`: the pack the command writes to its standard output.
fn export(invoker: &dyn Invoke, input: Value) -> Result<Value, OpError> {
    let e: Export = parse("export", input)?;
    let out = invoker.run(Argv::new(&["export"]).opt("author", e.author.as_ref()).build(), &[])?.into_output()?;
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
fn import(invoker: &dyn Invoke, input: Value) -> Result<Value, OpError> {
    let i: Import = parse("import", input)?;
    invoker.run(Argv::new(&["import"]).arg("-").build(), i.pack.as_bytes())?.into_result().map(as_object)
}

/// The operations of this file, in the catalog's order.
pub fn operations() -> Vec<Operation> {
    use Effect::*;
    vec![
        tool!(
            Log,
            "List a chain",
            Read,
            ReadResult,
            "The entries of one agent's chain in seq order (default: this agent's), or of every chain: id, seq, timestamp, payload state and a preview. Use `show` for one entry in full."
        ),
        tool!(
            Show,
            "Show an entry",
            Read,
            ReadResult,
            "One entry in full: its signed header (author, seq, backlink, timestamp, payload length and hash), its signature, and its payload (text, or base64) or why it is absent (redacted, not received)."
        ),
        tool!(
            Verify,
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
            Redact,
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
            Authors,
            "Authors stored",
            Read,
            ReadResult,
            "Every author whose chain is stored here, with its highest seq, its tips (more than one: forked) and its fork proofs."
        ),
        tool!(
            Forks,
            "Fork proofs",
            Read,
            ReadResult,
            "The fork proofs stored here (or one author's): the two signed entries at one seq, and the proof itself, hex-encoded, which anyone can check with `check_proof` and no other data."
        ),
        tool!(
            CheckProof,
            "Check a fork proof",
            Read,
            ReadResult,
            "Check a hex-encoded fork proof with no other data: valid when one author signed two different entries at the same seq."
        ),
        tool!(
            Search,
            "Search the graph",
            Read,
            answers::SearchAnswer,
            concat!(
                "Full-text search (BM25) over the nodes' text: id, score, status, kind and text, best first. Superseded and retracted nodes are left out unless `all`. `orient` adds the open questions and contested nodes on the topic.",
                statuses!()
            )
        ),
        tool!(Orphans, "Orphan claims", Read, answers::NodeList, "Derived memory claims with no source event (their provenance is missing)."),
        tool!(
            Admit,
            "Admit an agent",
            Append,
            ReadResult,
            "Admit an agent to this workspace (the founder only): its entries are then replicated and counted by every node."
        ),
        tool!(
            Remove,
            "Remove an agent",
            Append,
            ReadResult,
            "Remove an agent from this workspace (the founder only): its entries up to the highest seq held here stay admitted, later ones are admitted nowhere."
        ),
        tool!(Roster, "The roster", Read, ReadResult, "The workspace's members, derived from the founder's chain: who was admitted and removed, and when."),
    ]
}
