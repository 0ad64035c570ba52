//! Output types of operations whose answer `crate::answers` does not type
//! yet: what their commands print with `--json`, field by field, for the
//! operations' output schemas.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `identity` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IdentityAnswer {
    /// This agent's id (64 hex characters): what others pass as `agent`.
    pub agent: String,
}
