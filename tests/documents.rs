//! The documents name only what exists: every repository path and every
//! `Type::member` (or `agora_crate::module::item`) written in backticks in
//! ARCHITECTURE.md and README.md is looked up in the tree, so a map that
//! names a moved file or a renamed function fails here instead of rotting.
//!
//! A path is a backticked span without spaces that contains a `/` and whose
//! first segment is an entry of the repository's root (`crates/...`,
//! `node/...`, `protocol-spec/...`), or that ends in `.rs` (then it must be
//! the end of some file's path, as `graph/rules.rs` is). An item is
//! `Type::member` with an upper-case type (the type must be declared, and the
//! member be a function, constant or enum variant of a file that declares or
//! implements the type), or a path of modules from an `agora_*` crate
//! (each module a file; a last lower-case segment a function or constant in
//! it, or a module).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Types of other crates that the documents name (not looked up).
const EXTERNAL_TYPES: &[&str] = &["SwarmEvent", "DefaultBodyLimit", "AutoCommit", "WriteBatch", "IdentTopic"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository root").to_path_buf()
}

/// Every `.rs` file of the repository (not the build outputs).
fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The inline code spans of a Markdown text, outside fenced blocks, with
/// their line numbers.
fn spans(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    // Spans may wrap onto the next line: join each paragraph first.
    let mut para = String::new();
    let mut para_line = 0;
    let flush = |para: &mut String, line: usize, out: &mut Vec<(usize, String)>| {
        let parts: Vec<&str> = para.split('`').collect();
        for (i, part) in parts.iter().enumerate() {
            if i % 2 == 1 && i + 1 < parts.len() {
                out.push((line, part.trim().to_string()));
            }
        }
        para.clear();
    };
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            flush(&mut para, para_line, &mut out);
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') || line.starts_with('|') {
            flush(&mut para, para_line, &mut out);
            if line.starts_with('|') || line.starts_with('#') {
                para.push_str(line);
                para_line = n + 1;
                flush(&mut para, para_line, &mut out);
            }
            continue;
        }
        if para.is_empty() {
            para_line = n + 1;
        } else {
            para.push(' ');
        }
        para.push_str(line);
    }
    flush(&mut para, para_line, &mut out);
    out
}

/// The types a file declares (struct, enum, trait, type alias, union).
fn declarations(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in text.lines() {
        let mut t = l.trim_start();
        for vis in ["pub(crate) ", "pub(super) ", "pub "] {
            t = t.strip_prefix(vis).unwrap_or(t);
        }
        for k in ["struct ", "enum ", "trait ", "type ", "union "] {
            if let Some(rest) = t.strip_prefix(k) {
                out.insert(ident_at(rest).to_string());
            }
        }
    }
    out
}

/// A file's members: functions, constants, statics, macros, and the words
/// that start a line with a capital (enum variants).
fn members_of(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in text.lines() {
        let t = l.trim_start();
        for k in ["fn ", "const ", "static ", "macro_rules! "] {
            let mut rest = t;
            while let Some(i) = rest.find(k) {
                let before = &rest[..i];
                rest = &rest[i + k.len()..];
                if before.is_empty() || before.ends_with(' ') {
                    out.insert(ident_at(rest).to_string());
                }
            }
        }
        if t.starts_with(|c: char| c.is_ascii_uppercase()) {
            out.insert(ident_at(t).to_string());
        }
        // A struct's fields: `name: Type,` or `pub name: Type,`.
        let field = t.strip_prefix("pub ").unwrap_or(t);
        let name = ident_at(field);
        if !name.is_empty() && field[name.len()..].starts_with(": ") {
            out.insert(name.to_string());
        }
    }
    out
}

/// The names a file re-exports (`pub use ...;`, over several lines too).
fn re_exports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("pub use ") {
        rest = &rest[i + 8..];
        let end = rest.find(';').unwrap_or(rest.len());
        for word in rest[..end].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !word.is_empty() {
                out.insert(word.to_string());
            }
        }
        rest = &rest[end..];
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit())
}

struct Tree {
    root: PathBuf,
    root_entries: BTreeSet<String>,
    files: Vec<(String, String)>,
    /// Per file: the types it declares and the members it has (functions,
    /// constants, macros, and capitalised words that start a line: variants).
    declared: Vec<BTreeSet<String>>,
    members: Vec<BTreeSet<String>>,
}

impl Tree {
    fn load() -> Tree {
        let root = root();
        let root_entries = std::fs::read_dir(&root).expect("the root").flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
        let files = rust_files(&root)
            .into_iter()
            .map(|p| {
                let rel = p.strip_prefix(&root).expect("under the root").to_string_lossy().to_string();
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                (rel, text)
            })
            .collect::<Vec<(String, String)>>();
        let declared = files.iter().map(|(_, t)| declarations(t)).collect();
        let members = files.iter().map(|(_, t)| members_of(t)).collect();
        Tree { root, root_entries, files, declared, members }
    }

    /// Whether a span that looks like a path names something that exists.
    fn path_exists(&self, span: &str) -> Option<bool> {
        if span.contains(' ') || !span.contains('/') || span.contains("://") || span.contains('<') || span.contains('*') {
            return None;
        }
        let path = span.trim_end_matches('/');
        let first = path.split('/').next().unwrap_or("");
        if self.root_entries.contains(first) {
            return Some(self.root.join(path).exists());
        }
        if path.ends_with(".rs") && !path.starts_with('/') {
            let suffix = format!("/{path}");
            return Some(self.files.iter().any(|(rel, _)| rel.ends_with(&suffix)));
        }
        None
    }

    fn declares(&self, file: usize, ty: &str) -> bool {
        self.declared[file].contains(ty)
    }

    /// `Type::member`: the type is declared, and a file that declares or
    /// implements it has the member.
    fn item_exists(&self, ty: &str, member: &str) -> bool {
        let declared = (0..self.files.len()).any(|f| self.declares(f, ty));
        let implements = |t: &str| {
            t.contains(&format!("impl {ty} "))
                || t.contains(&format!("impl {ty}<"))
                || t.contains(&format!(" for {ty} "))
                || t.contains(&format!(" for {ty}<"))
                || t.contains(&format!("> {ty}<"))
                || t.contains(&format!("> {ty} {{"))
        };
        declared && (0..self.files.len()).any(|f| (self.declares(f, ty) || implements(&self.files[f].1)) && self.members[f].contains(member))
    }

    /// `agora_crate::module::...::item`: each module a file of the crate; a
    /// last lower-case segment a module, or a function or constant in the
    /// last module; an upper-case segment a type declared there (then an
    /// item after it is looked up as `Type::member`).
    fn module_path_exists(&self, segments: &[&str]) -> bool {
        let krate = segments[0].replace('_', "-");
        let base = if krate == "agora-sim" { "simulations/src".to_string() } else { format!("crates/{krate}/src") };
        if !self.root.join(&base).exists() {
            return false;
        }
        let mut dir = base.clone();
        let mut file = format!("{base}/lib.rs");
        for (i, seg) in segments.iter().enumerate().skip(1) {
            if seg.starts_with(|c: char| c.is_ascii_uppercase()) {
                let declared_in_crate = (0..self.files.len()).any(|f| self.files[f].0.starts_with(&base) && self.declares(f, seg));
                if !declared_in_crate {
                    return false;
                }
                return match segments.get(i + 1) {
                    Some(member) => self.item_exists(seg, member),
                    None => true,
                };
            }
            let as_file = format!("{dir}/{seg}.rs");
            let as_dir = format!("{dir}/{seg}/mod.rs");
            if self.root.join(&as_file).exists() {
                file = as_file;
                dir = format!("{dir}/{seg}");
            } else if self.root.join(&as_dir).exists() {
                file = as_dir;
                dir = format!("{dir}/{seg}");
            } else {
                // The last segment may be a function, constant or macro of the module.
                let Some(f) = self.files.iter().position(|(r, _)| *r == file) else { return false };
                let text = &self.files[f].1;
                let re_exported = re_exports(text).contains(*seg);
                return i + 1 == segments.len() && (self.members[f].contains(*seg) || text.contains(&format!("mod {seg}")) || re_exported);
            }
        }
        true
    }

    /// Whether a span that looks like an item names something that exists.
    fn item_span_exists(&self, span: &str) -> Option<bool> {
        let span = span.trim_end_matches("()");
        let span = span.split('(').next().unwrap_or(span);
        if !span.contains("::") {
            return None;
        }
        let segments: Vec<&str> = span.split("::").collect();
        if !segments.iter().all(|s| is_ident(s)) {
            return None;
        }
        if segments[0].starts_with("agora_") {
            return Some(self.module_path_exists(&segments));
        }
        if segments.len() == 2 && EXTERNAL_TYPES.contains(&segments[0]) {
            return None;
        }
        if segments.len() == 2 && segments[0].starts_with(|c: char| c.is_ascii_uppercase()) {
            return Some(self.item_exists(segments[0], segments[1]));
        }
        None
    }
}

fn check(document: &str) -> Vec<String> {
    let tree = Tree::load();
    let text = std::fs::read_to_string(tree.root.join(document)).expect("the document");
    let mut wrong = Vec::new();
    for (line, span) in spans(&text) {
        if let Some(false) = tree.path_exists(&span) {
            wrong.push(format!("{document}:{line}: no such path `{span}`"));
        }
        if let Some(false) = tree.item_span_exists(&span) {
            wrong.push(format!("{document}:{line}: no such item `{span}`"));
        }
    }
    wrong
}

#[test]
fn architecture_names_only_paths_and_items_that_exist() {
    let wrong = check("ARCHITECTURE.md");
    assert!(wrong.is_empty(), "ARCHITECTURE.md names what does not exist:\n{}", wrong.join("\n"));
}

#[test]
fn readme_names_only_paths_and_items_that_exist() {
    let wrong = check("README.md");
    assert!(wrong.is_empty(), "README.md names what does not exist:\n{}", wrong.join("\n"));
}

/// The entry and the map stay short enough to read in one sitting.
#[test]
fn readme_and_architecture_stay_under_450_lines() {
    for document in ["README.md", "ARCHITECTURE.md"] {
        let lines = std::fs::read_to_string(root().join(document)).expect("the document").lines().count();
        assert!(lines < 450, "{document} has {lines} lines; keep it under 450");
    }
}

#[test]
fn the_checker_finds_a_moved_file_and_a_renamed_function() {
    let tree = Tree::load();
    assert_eq!(tree.path_exists("crates/agora-sync/src/replicator/planning.rs"), Some(true));
    assert_eq!(tree.path_exists("node/src/graph_cache.rs"), Some(false));
    assert_eq!(tree.path_exists("graph/rules.rs"), Some(true));
    assert_eq!(tree.path_exists("graph/no_such_file.rs"), Some(false));
    assert_eq!(tree.path_exists("/v1/ops/<name>"), None);
    assert_eq!(tree.item_span_exists("Replicator::poll"), Some(true));
    assert_eq!(tree.item_span_exists("Replicator::no_such_fn"), Some(false));
    assert_eq!(tree.item_span_exists("Net::after_commit"), Some(false));
    assert_eq!(tree.item_span_exists("Output::Ban"), Some(true));
    assert_eq!(tree.item_span_exists("agora_core::limits"), Some(true));
    assert_eq!(tree.item_span_exists("agora_core::no_such_module"), Some(false));
    assert_eq!(tree.item_span_exists("agora_view::load_graph"), Some(true));
}
