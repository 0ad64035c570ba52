//! An operation's failure, as a front end returns it: the message, the rule
//! broken and the entry it concerns.

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
    /// The kind of failure, where the one that failed said it (a node's
    /// answer to a forwarded operation); else it follows from the rule.
    pub code: Option<String>,
}

impl OpError {
    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        Self { message: message.into(), rule: None, entry: None, code: None }
    }

    /// A command's error: its causes in one message, the rule and entry
    /// its typed causes name ([`crate::output::error_rule`]).
    pub fn from_error(error: &anyhow::Error) -> Self {
        let message = error.chain().map(|e| e.to_string()).collect::<Vec<_>>().join(": ");
        match crate::output::error_rule(error) {
            Some((rule, entry)) => Self { message, rule: Some(rule.to_string()), entry, code: None },
            None => Self::msg(message),
        }
    }

    /// An input that does not match the operation's schema.
    pub fn input(message: impl Into<String>) -> Self {
        Self { message: message.into(), rule: Some("input_schema".to_string()), entry: None, code: None }
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
