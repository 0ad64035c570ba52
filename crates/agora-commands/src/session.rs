//! Where a command runs: which store it uses, where its output goes and where
//! its input comes from.
//!
//! The same command code runs in two places. Run by hand with no node, a
//! command opens the store itself (waiting briefly if another short-lived
//! command holds it). While a node runs on the home directory, the `agora`
//! process forwards the command to it over the control channel and the node
//! runs it on its own open store, with output streamed back; the store is
//! never opened a second time, so one process writes each chain.

use agora_core::AgentId;
use agora_graph::Graph;
use agora_home::home::Home;
use agora_live_views::graph_cache::GraphCache;
use agora_live_views::merge_cache::MergeCache;
use agora_store::Store;
use anyhow::Result;
use serde_json::Value;
use std::cell::{OnceCell, RefCell};
use std::io::{Read, Write};

/// One command's context.
pub struct Session<'a> {
    /// The home directory (key, store, node files).
    pub home: &'a Home,
    /// Print JSON instead of text.
    pub json: bool,
    out: RefCell<&'a mut dyn Write>,
    input: RefCell<&'a mut dyn Read>,
    shared: Option<&'a Store>,
    opened: OnceCell<Store>,
    graph: Option<&'a GraphCache>,
    own_graph: OnceCell<GraphCache>,
    merge: Option<&'a MergeCache>,
    founder: Option<AgentId>,
    /// For a program (an operation): the result a command would print,
    /// kept as a value instead ([`Session::capturing`]).
    captured: Option<RefCell<Option<Value>>>,
    /// The named agent of the home's keyring the command acts as (`--as`);
    /// none: the home's own agent.
    agent: Option<String>,
}

impl<'a> Session<'a> {
    /// A session that opens the store itself when a command needs it.
    pub fn local(home: &'a Home, json: bool, out: &'a mut dyn Write, input: &'a mut dyn Read) -> Self {
        Self {
            home,
            json,
            out: RefCell::new(out),
            input: RefCell::new(input),
            shared: None,
            opened: OnceCell::new(),
            graph: None,
            own_graph: OnceCell::new(),
            merge: None,
            founder: None,
            captured: None,
            agent: None,
        }
    }

    /// A session inside the node: its open store, its live graph and its
    /// live merged view.
    #[allow(clippy::too_many_arguments)]
    pub fn in_node(
        home: &'a Home,
        json: bool,
        out: &'a mut dyn Write,
        input: &'a mut dyn Read,
        store: &'a Store,
        graph: &'a GraphCache,
        merge: &'a MergeCache,
        founder: AgentId,
    ) -> Self {
        Self {
            home,
            json,
            out: RefCell::new(out),
            input: RefCell::new(input),
            shared: Some(store),
            opened: OnceCell::new(),
            graph: Some(graph),
            own_graph: OnceCell::new(),
            merge: Some(merge),
            founder: Some(founder),
            captured: None,
            agent: None,
        }
    }

    /// This session, for a program: what its command would print as JSON is
    /// kept ([`Session::take_result`]) rather than written; only a command
    /// that streams (export) still writes to the output.
    pub fn capturing(mut self) -> Self {
        self.json = true;
        self.captured = Some(RefCell::new(None));
        self
    }

    /// This session, acting as the named agent `agent` of the home's keyring
    /// (none: the home's own agent).
    pub fn acting_as(mut self, agent: Option<String>) -> Self {
        self.agent = agent;
        self
    }

    /// The named agent the command acts as, if one is named.
    pub fn agent_name(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The key of the agent the command acts as: its entries are signed
    /// with it, and it is "this agent" of every answer.
    pub fn key(&self) -> Result<agora_core::AgentKey> {
        let name = match self.agent.as_deref() {
            None | Some(agora_home::home::OWN_AGENT) => return self.home.load_key(),
            Some(name) => name,
        };
        if !agora_home::home::valid_agent_name(name) {
            return Err(crate::output::refused(
                "not_an_agent_name",
                format!("{name:?} is not an agent name: 1 to 64 ASCII letters, digits, '-' or '_', starting with a letter or digit"),
            ));
        }
        if !self.home.agent_key_path(name)?.exists() {
            return Err(crate::output::refused(
                "unknown_agent",
                format!("no agent named {name:?} in this home's keyring; `agora agent new {name}` creates it"),
            ));
        }
        self.home.load_agent_key(Some(name))
    }

    /// The result a capturing session's command gave, if it gave one.
    pub fn take_result(&self) -> Option<Value> {
        self.captured.as_ref().and_then(|c| c.borrow_mut().take())
    }

    /// The workspace founder: the node's, else the one in `<home>/agora.toml`,
    /// else this agent (a workspace of its own).
    pub fn founder(&self) -> Result<AgentId> {
        if let Some(f) = self.founder {
            return Ok(f);
        }
        match agora_home::config::workspace_of_home(&self.home.dir)?.founder {
            Some(f) => Ok(f),
            None => Ok(self.home.load_key()?.agent_id()),
        }
    }

    /// A progress bar on standard error for a long command (an import, a
    /// verification): drawn when the command runs in this process and
    /// standard error is a terminal, hidden otherwise (inside a node, whose
    /// standard error is its log; in a script). `len` 0 is a spinner.
    pub fn progress(&self, len: u64, template: &str) -> indicatif::ProgressBar {
        use std::io::IsTerminal;
        if self.shared.is_some() || !std::io::stderr().is_terminal() {
            return indicatif::ProgressBar::hidden();
        }
        let bar = if len == 0 { indicatif::ProgressBar::new_spinner() } else { indicatif::ProgressBar::new(len) };
        bar.set_style(indicatif::ProgressStyle::with_template(template).unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
        if len == 0 {
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
        }
        bar
    }

    /// The store (opened on first use when running by hand).
    pub fn store(&self) -> Result<&Store> {
        if let Some(s) = self.shared {
            return Ok(s);
        }
        if let Some(s) = self.opened.get() {
            return Ok(s);
        }
        let store = self.home.open_store()?;
        Ok(self.opened.get_or_init(|| store))
    }

    /// Run `f` on the reasoning graph of the store: the node's live graph, or
    /// one replayed for this command.
    pub fn with_graph<R>(&self, f: impl FnOnce(&Store, &Graph) -> Result<R>) -> Result<R> {
        let store = self.store()?;
        let cache = match self.graph {
            Some(g) => g,
            None => {
                let founder = self.founder()?;
                self.own_graph.get_or_init(|| GraphCache::new(founder))
            }
        };
        cache.with(store, |g| f(store, g))?
    }

    /// Tell the session this command wrote to the store: a graph replayed
    /// for the command is replayed again when next used, so a command that
    /// records several events (`ingest`) reads its own writes. (A node's
    /// live graph follows every write itself.)
    pub fn wrote(&self) {
        if self.graph.is_none()
            && let Some(own) = self.own_graph.get()
        {
            own.invalidate();
        }
    }

    /// The node's live merged view, when the command runs inside a node.
    pub fn live_merge(&self) -> Option<&MergeCache> {
        self.merge
    }

    /// Print an answer: as one JSON line with `--json`, its keys in the
    /// order a JSON value keeps them (sorted, whatever the order of the
    /// type's fields), else `text()` (nothing when empty).
    pub fn print<T: serde::Serialize + ?Sized>(&self, answer: &T, text: impl FnOnce() -> String) -> Result<()> {
        if let Some(captured) = &self.captured {
            *captured.borrow_mut() = Some(serde_json::to_value(answer)?);
            return Ok(());
        }
        let mut out = self.out.borrow_mut();
        if self.json {
            writeln!(out, "{}", serde_json::to_value(answer)?)?;
        } else {
            let t = text();
            if !t.is_empty() {
                writeln!(out, "{t}")?;
            }
        }
        Ok(())
    }

    /// As [`Session::print`], with the answer built only when it is
    /// printed as JSON (a large answer whose text form is a summary).
    pub fn print_with<T: serde::Serialize>(&self, answer: impl FnOnce() -> T, text: impl FnOnce() -> String) -> Result<()> {
        if self.json { self.print(&answer(), String::new) } else { self.print(&(), text) }
    }

    /// As [`Session::print`], with the JSON built only when it is printed
    /// (a large answer whose text form is a summary), and written as it is
    /// serialized, its keys in the order of the type's fields: an answer
    /// that serializes itself (rather than as a [`Value`] tree) never holds
    /// a second copy of it.
    pub fn print_lazy<V: serde::Serialize>(&self, value: impl FnOnce() -> V, text: impl FnOnce() -> String) -> Result<()> {
        if let Some(captured) = &self.captured {
            *captured.borrow_mut() = Some(serde_json::to_value(value())?);
            return Ok(());
        }
        if self.json {
            let mut out = self.out.borrow_mut();
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut **out);
            serde_json::to_writer(&mut buffered, &value())?;
            writeln!(buffered)?;
            buffered.flush()?;
            Ok(())
        } else {
            self.print(&(), text)
        }
    }

    /// Standard output, for commands that stream (export).
    pub fn with_out<R>(&self, f: impl FnOnce(&mut dyn Write) -> R) -> R {
        let mut out = self.out.borrow_mut();
        f(&mut **out)
    }

    /// Standard input (payloads, packs).
    pub fn with_input<R>(&self, f: impl FnOnce(&mut dyn Read) -> R) -> R {
        let mut input = self.input.borrow_mut();
        f(&mut **input)
    }
}
