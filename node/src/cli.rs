//! Command-line arguments.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Agora: signed, hash-linked reasoning chains for agent swarms.
#[derive(Parser, Debug)]
#[command(name = "agora", version, about, propagate_version = true)]
pub struct Args {
    /// Directory holding the agent key and the data store.
    /// Default: $AGORA_HOME, else ~/.agora.
    #[arg(long, global = true, env = "AGORA_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
    Log {
        /// Author whose chain to list.
        #[arg(long, conflicts_with = "all")]
        author: Option<String>,
        /// List every author's chain.
        #[arg(long)]
        all: bool,
        /// First seq to list.
        #[arg(long, default_value_t = 1)]
        from: u64,
        /// Most entries to list.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
    /// Show one entry: header, signature, payload or why it is absent.
    Show {
        /// Entry id or a unique prefix of one.
        entry: String,
    },
    /// Verify stored chains end to end: signatures, links, payload hashes, tips.
    Verify {
        /// Only this author.
        #[arg(long)]
        author: Option<String>,
        /// Verification threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// Delete an entry's payload here and record it; the chain still verifies.
    Redact {
        /// Entry id or a unique prefix of one.
        entry: String,
    },
    /// Write entries and payloads as a JSONL pack.
    Export {
        /// Only this author.
        #[arg(long)]
        author: Option<String>,
        /// Output file (default: stdout).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Import a JSONL pack. Verifies the whole pack before writing anything.
    Import {
        /// Pack file; `-` for stdin.
        file: PathBuf,
    },
    /// List the authors stored here with their tips.
    Authors,
    /// List stored fork proofs (standalone, hex-encoded).
    Forks {
        /// Only this author.
        #[arg(long)]
        author: Option<String>,
    },
    /// Check a hex-encoded fork proof with no other data.
    CheckProof {
        /// The proof, hex.
        proof: String,
    },
}
