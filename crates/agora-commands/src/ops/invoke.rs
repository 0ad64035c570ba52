//! Where an operation's command line runs: the same places the CLI's commands run
//! (see `session.rs`). `agora mcp` over stdio forwards each command to the
//! node running on its home, or, with no node, opens the store for that
//! command alone, as `agora <command>` would. The node's own front ends run
//! them on its open store, with an invoker of the node's
//! ([`crate::run::run_in_open_store`]).

use crate::control;
use crate::run::run_at_home;
use agora_home::home::Home;
use serde_json::Value;

/// A failure to turn a call into commands, or of the commands themselves:
/// returned to the model as a tool error, with the rule that was broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    /// What went wrong, as the CLI says it.
    pub message: String,
    /// The rule broken, by name, where a typed cause names it.
    pub rule: Option<String>,
    /// The entry it concerns, where there is one.
    pub entry: Option<String>,
}

impl OpError {
    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        Self { message: message.into(), rule: None, entry: None }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        match (&self.rule, &self.entry) {
            (Some(rule), Some(entry)) => write!(f, " (rule: {rule}; entry: {entry})"),
            (Some(rule), None) => write!(f, " (rule: {rule})"),
            _ => Ok(()),
        }
    }
}

/// Runs a command line.
pub trait Invoke {
    /// Run `argv` (as built by [`super::argv::Argv`]) with `stdin` as its standard
    /// input: its output and exit code.
    fn run(&self, argv: Vec<String>, stdin: &[u8]) -> Result<Ran, OpError>;

    /// Run `argv` with no input: the command's JSON output, or its error as
    /// the CLI words it.
    fn invoke(&self, argv: Vec<String>) -> Result<Value, OpError> {
        self.run(argv, &[])?.into_result()
    }
}

/// A command's output and exit code.
pub struct Ran {
    pub code: u8,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Ran {
    /// The command's JSON result, or the error it reported. Exit code 3 is a
    /// finding, not a failure (an audit that found problems reports them).
    pub fn into_result(self) -> Result<Value, OpError> {
        let text = String::from_utf8_lossy(&self.stdout);
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let parsed: Option<Value> = serde_json::from_str(last).ok();
        if self.code == 0 || self.code == 3 {
            return match parsed {
                Some(v) => Ok(v),
                None => Err(OpError::msg(format!("the command printed no JSON result: {}", text.trim()))),
            };
        }
        Err(self.error(parsed))
    }

    /// The command's standard output as it printed it (a pack), or the
    /// error it reported.
    pub fn into_output(self) -> Result<Vec<u8>, OpError> {
        if self.code == 0 {
            return Ok(self.stdout);
        }
        let text = String::from_utf8_lossy(&self.stdout);
        let parsed: Option<Value> = text.lines().rev().find(|l| !l.trim().is_empty()).and_then(|l| serde_json::from_str(l).ok());
        Err(self.error(parsed))
    }

    fn error(&self, parsed: Option<Value>) -> OpError {
        // With --json a failed command prints {"error": ...}; clap's own
        // errors (a malformed argument) go to standard error.
        let field = |k: &str| parsed.as_ref().and_then(|v| v.get(k)).and_then(Value::as_str).map(str::to_string);
        let message = field("error").unwrap_or_else(|| String::from_utf8_lossy(&self.stderr).trim().trim_start_matches("error: ").to_string());
        let message = if message.is_empty() { format!("the command failed with exit code {}", self.code) } else { message };
        // A usage error (exit 2) is the caller's: clap's own message.
        let rule = field("rule").or_else(|| (self.code == 2).then(|| "usage".to_string()));
        OpError { message, rule, entry: field("entry") }
    }
}

/// Commands of `agora mcp`: forwarded to this home's node, else run here,
/// exactly as `agora <command>` runs them ([`run_at_home`]).
pub struct HomeInvoker {
    pub home: Home,
}

impl Invoke for HomeInvoker {
    fn run(&self, argv: Vec<String>, stdin: &[u8]) -> Result<Ran, OpError> {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        match run_at_home(&self.home, &argv, stdin, false, &mut stdout, &mut stderr) {
            Ok(code) => Ok(Ran { code, stdout, stderr }),
            Err(e) => {
                let mut out = Vec::new();
                crate::output::write_error(&e, true, &mut out, &mut stderr);
                Ok(Ran { code: 1, stdout: out, stderr })
            }
        }
    }
}

impl super::Backend for HomeInvoker {
    fn node_status(&self) -> Result<Value, OpError> {
        if let Some(node) = control::find_node(&self.home.dir)
            && control::verify_node(&node).is_ok()
        {
            return control::status(&node).map_err(|e| OpError::msg(format!("{e:#}")));
        }
        let agent = self.invoke(super::argv::Argv::new(&["id"]).build())?;
        let authors = self.invoke(super::argv::Argv::new(&["authors"]).build())?;
        Ok(serde_json::json!({ "node_running": false, "home": self.home.dir, "agent": agent, "authors": authors }))
    }
}
