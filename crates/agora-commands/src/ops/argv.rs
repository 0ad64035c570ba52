//! A tool call written as the `agora` command line it stands for.
//!
//! Every tool runs one or more of the CLI's own commands, parsed by the
//! CLI's own argument definitions (`cli.rs`) and run by its own dispatcher
//! (`commands::run`): a tool can do nothing the command line cannot, and
//! means the same. Options come first and the positional arguments after a
//! `--`, so a text that starts with a dash is never read as an option.

/// One command line under construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    words: Vec<String>,
    options: Vec<String>,
    positional: Vec<String>,
}

impl Argv {
    /// `agora --json <command words...>`.
    pub fn new(command: &[&str]) -> Self {
        let mut words = vec!["agora".to_string(), "--json".to_string()];
        words.extend(command.iter().map(|w| w.to_string()));
        Self { words, options: Vec::new(), positional: Vec::new() }
    }

    /// A positional argument.
    pub fn arg(mut self, value: impl Into<String>) -> Self {
        self.positional.push(value.into());
        self
    }

    /// Positional arguments.
    pub fn args<S: Into<String>>(mut self, values: impl IntoIterator<Item = S>) -> Self {
        self.positional.extend(values.into_iter().map(Into::into));
        self
    }

    /// `--name value`, when there is a value.
    pub fn opt(mut self, name: &str, value: Option<impl ToString>) -> Self {
        if let Some(v) = value {
            self.options.push(format!("--{name}"));
            self.options.push(v.to_string());
        }
        self
    }

    /// `--name v` for each value.
    pub fn each(mut self, name: &str, values: &[String]) -> Self {
        for v in values {
            self.options.push(format!("--{name}"));
            self.options.push(v.clone());
        }
        self
    }

    /// `--name` when set.
    pub fn switch(mut self, name: &str, on: bool) -> Self {
        if on {
            self.options.push(format!("--{name}"));
        }
        self
    }

    /// The command line, program name first.
    pub fn build(self) -> Vec<String> {
        let mut out = self.words;
        out.extend(self.options);
        if !self.positional.is_empty() {
            out.push("--".to_string());
            out.extend(self.positional);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_before_the_positionals_which_follow_a_double_dash() {
        let argv = Argv::new(&["refine"]).arg("abc").arg("-5 degrees is too cold").each("resolves", &["c1".into(), "c2".into()]).build();
        assert_eq!(argv, ["agora", "--json", "refine", "--resolves", "c1", "--resolves", "c2", "--", "abc", "-5 degrees is too cold"]);
        assert_eq!(Argv::new(&["decisions"]).build(), ["agora", "--json", "decisions"]);
    }
}
