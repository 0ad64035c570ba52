//! The signed log's commands (`agora init`, `log`, `show`, `verify`...)
//! and their inputs.

use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;

/// The signed log itself: keys, entries, packs, forks.
#[derive(Subcommand, Debug, Clone)]
pub enum ChainCommand {
    /// Create the agent key (mode 0600) and an empty store. Refuses to overwrite.
    Init,
    /// Print this agent's id.
    Id,
    /// Append an entry with a raw payload read from FILE, or stdin if FILE is `-` or absent.
    Append {
        /// Payload file; `-` or absent for stdin.
        file: Option<PathBuf>,
    },
    /// List entries of a chain (default: this agent's).
    Log(Log),
    /// Show one entry: header, signature, payload or why it is absent.
    Show(EntryRef),
    /// Verify stored chains end to end: signatures, links, payload hashes, tips.
    Verify(Verify),
    /// Delete an entry's payload here and record it; the chain still verifies.
    Redact(EntryRef),
    /// Write entries and payloads as a JSONL pack.
    Export(Export),
    /// Import a JSONL pack. Verifies the whole pack before writing anything.
    Import {
        /// Pack file; `-` for stdin.
        file: PathBuf,
    },
    /// List the authors stored here with their tips.
    Authors,
    /// List stored fork proofs (standalone, hex-encoded).
    Forks(AuthorFilter),
    /// Check a hex-encoded fork proof with no other data.
    CheckProof(CheckProof),
    /// This agent's keys: its next key, rotation, revocation, key history.
    #[command(subcommand)]
    Key(KeyCommand),
}

/// An agent's keys (protocol-spec/keys.md).
#[derive(Subcommand, Debug, Clone)]
pub enum KeyCommand {
    /// Where this agent's next key is, and its commitment; --export moves it out of the home.
    Next(KeyNext),
    /// Rotate to the pre-committed next key, after this agent's tip; a new next key is drawn.
    Rotate(KeyRotate),
    /// Revoke the current key after ENTRY, the last entry its owner vouches for.
    Revoke(KeyRevoke),
    /// An agent's key events: each rotation, its boundary, the key that signs from it.
    History(KeyHistory),
    /// Both keys of AGENT lost (founder only): bind it to a new key after --after, its last legitimate entry.
    Recover(KeyRecover),
    /// Carry this agent's chain on under the new key a recovery bound: sign the recover entry, install the key.
    TakeOver(KeyTakeOver),
    /// Make a new key file (mode 0600) and print its public key, for `agora key recover --key`.
    New(KeyNew),
}

// ---------------------------------------------------------------------------
// Inputs

/// One chain or all of them, listed in order.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Log {
    /// The agent whose chain to list (64-hex agent id; default: this agent).
    #[arg(long, conflicts_with = "all")]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
    /// Every author's chain.
    #[arg(long)]
    #[serde(default)]
    pub all: bool,
    /// The first seq listed (default 1).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub from: Option<u64>,
    /// At most this many entries per chain (default 1000).
    #[arg(long)]
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub limit: Option<usize>,
}

/// One entry named by id.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct EntryRef {
    /// The entry (its id, or a unique prefix of it).
    #[serde(rename = "target", alias = "entry")]
    pub entry: String,
}

/// One author's chain, or all of them.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AuthorFilter {
    /// Only this agent's chain (64-hex agent id); every agent's when absent.
    #[arg(long)]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
}

/// Verify stored chains.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    /// Only this agent's chain (64-hex agent id); every agent's when absent.
    #[arg(long)]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
    /// Verification threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    #[schemars(skip)]
    pub threads: usize,
}

/// Export entries as a pack.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Export {
    /// Only this agent's chain (64-hex agent id); every chain when absent.
    #[arg(long)]
    #[serde(default, rename = "agent", alias = "author")]
    pub author: Option<String>,
    /// Output file (default: standard output; an operation returns the pack).
    #[arg(long, short)]
    #[serde(skip)]
    #[schemars(skip)]
    pub output: Option<PathBuf>,
}

/// A standalone fork proof.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct CheckProof {
    /// The proof, hex-encoded (as `forks` lists it).
    pub proof: String,
}

/// This agent's next key.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyNext {
    /// Move the next key to this file (created, mode 0600) and out of the home; keep it apart.
    #[arg(long)]
    #[serde(default)]
    pub export: Option<PathBuf>,
}

/// A rotation to the pre-committed next key.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyRotate {
    /// The next key's file, if it was exported (default: the home's next-keys directory).
    #[arg(long)]
    #[serde(default)]
    pub next_key: Option<PathBuf>,
}

/// A revocation: a rotation placed after the last entry its owner vouches for.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyRevoke {
    /// The last legitimate entry of this agent's chain (id or unique prefix): the trust boundary.
    #[serde(rename = "after")]
    pub after: String,
    /// The next key's file, if it was exported (default: the home's next-keys directory).
    #[arg(long)]
    #[serde(default)]
    pub next_key: Option<PathBuf>,
}

/// Whose key history.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyHistory {
    /// The agent (64-hex agent id; default: this agent).
    #[arg(long)]
    #[serde(default)]
    pub agent: Option<String>,
}

/// A recovery of an agent whose keys are both lost, written by the founder.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyRecover {
    /// The agent: its 64-hex id, or the name of an agent of this home's keyring.
    pub agent: String,
    /// The agent's last legitimate entry (id or prefix): the trust boundary.
    #[arg(long)]
    pub after: String,
    /// The new public key (64 hex, from `agora key new`).
    #[arg(long)]
    pub key: String,
    /// What happened, at most 1,024 bytes.
    #[arg(long, default_value = "")]
    #[serde(default)]
    pub note: String,
}

/// The owner's side of a recovery.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyTakeOver {
    /// The new key's file, the one the founder's recovery binds.
    #[arg(long)]
    pub key: PathBuf,
}

/// A new key file.
#[derive(Args, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct KeyNew {
    /// The file to create (mode 0600); refused if it exists.
    #[arg(long)]
    pub out: PathBuf,
}
