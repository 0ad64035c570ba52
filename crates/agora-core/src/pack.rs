//! Packs: JSON Lines files of signed entries and payloads, for export and import.
//!
//! ```text
//! line 1:   {"agora_pack":1}
//! line n>1: {"id":"<64 hex>","entry":"<hex signed entry>","payload":"<base64>"|null}
//! ```
//!
//! `id` is redundant (it is the hash of the entry's header) and is checked, so a
//! pack edited by hand fails loudly instead of importing something unexpected.
//! `payload` is `null` when the exporter does not hold it (redacted). Lines are
//! limited to [`PACK_LINE_BYTES_MAX`] bytes, checked before parsing.

use crate::entry::SignedEntry;
use crate::id::EntryId;
use crate::limits::{PACK_LINE_BYTES_MAX, PAYLOAD_BYTES_MAX, SIGNED_ENTRY_BYTES_MAX};
use crate::verify::{VerifyError, verify_payload};
use base64::Engine;
use serde::{Deserialize, Serialize};

/// The pack format version written in the first line.
pub const PACK_VERSION: u32 = 1;

/// A problem with one line of a pack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pack line {line}: {problem}")]
pub struct PackError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub problem: PackProblem,
}

/// What is wrong with a pack line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackProblem {
    /// The line is longer than the limit.
    #[error("line is {0} bytes, more than the limit of {PACK_LINE_BYTES_MAX}")]
    LineTooLong(usize),
    /// The first line is not a pack header of a known version.
    #[error("not an Agora pack header (expected {{\"agora_pack\":{PACK_VERSION}}}): {0}")]
    BadHeader(String),
    /// The line is not the expected JSON object.
    #[error("not a pack entry line: {0}")]
    Json(String),
    /// A field is not valid hex/base64 or is too long.
    #[error("field {field}: {problem}")]
    Field {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The entry does not decode.
    #[error("entry: {0}")]
    Entry(crate::entry::DecodeError),
    /// The `id` field is not the entry's id.
    #[error("id field {claimed} is not the entry's id {actual}")]
    IdMismatch {
        /// As written.
        claimed: String,
        /// As computed.
        actual: EntryId,
    },
    /// The payload does not match the entry.
    #[error("{0}")]
    Payload(VerifyError),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PackHeaderLine {
    agora_pack: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PackEntryLine {
    id: String,
    entry: String,
    payload: Option<String>,
}

/// The first line of every pack (without the newline).
pub fn header_line() -> String {
    serde_json::to_string(&PackHeaderLine { agora_pack: PACK_VERSION }).unwrap_or_default()
}

/// One entry line (without the newline).
pub fn entry_line(entry: &SignedEntry, payload: Option<&[u8]>) -> String {
    let line = PackEntryLine {
        id: entry.id().to_string(),
        entry: hex::encode(entry.encode()),
        payload: payload.map(|p| base64::engine::general_purpose::STANDARD.encode(p)),
    };
    serde_json::to_string(&line).unwrap_or_default()
}

fn problem(line: usize, problem: PackProblem) -> PackError {
    PackError { line, problem }
}

/// Check the first line of a pack.
pub fn parse_header_line(text: &str) -> Result<(), PackError> {
    if text.len() > PACK_LINE_BYTES_MAX {
        return Err(problem(1, PackProblem::LineTooLong(text.len())));
    }
    match serde_json::from_str::<PackHeaderLine>(text) {
        Ok(h) if h.agora_pack == PACK_VERSION => Ok(()),
        Ok(h) => Err(problem(1, PackProblem::BadHeader(format!("version {}", h.agora_pack)))),
        Err(e) => Err(problem(1, PackProblem::BadHeader(e.to_string()))),
    }
}

/// Parse one entry line: decode the entry canonically, check the id field, and
/// check the payload against the header when present. Signatures and chain
/// links are *not* checked here; importers verify them for the whole pack.
pub fn parse_entry_line(line_no: usize, text: &str) -> Result<(SignedEntry, Option<Vec<u8>>), PackError> {
    let err = |p| problem(line_no, p);
    if text.len() > PACK_LINE_BYTES_MAX {
        return Err(err(PackProblem::LineTooLong(text.len())));
    }
    let line: PackEntryLine = serde_json::from_str(text).map_err(|e| err(PackProblem::Json(e.to_string())))?;
    if line.entry.len() > 2 * SIGNED_ENTRY_BYTES_MAX {
        return Err(err(PackProblem::Field { field: "entry", problem: format!("{} hex digits is too long", line.entry.len()) }));
    }
    let bytes = hex::decode(&line.entry).map_err(|e| err(PackProblem::Field { field: "entry", problem: e.to_string() }))?;
    let entry = SignedEntry::decode(&bytes).map_err(|e| err(PackProblem::Entry(e)))?;
    if line.id != entry.id().to_string() {
        return Err(err(PackProblem::IdMismatch { claimed: line.id, actual: entry.id() }));
    }
    let payload = match line.payload {
        None => None,
        Some(b64) => {
            let max = (PAYLOAD_BYTES_MAX as usize).div_ceil(3) * 4;
            if b64.len() > max {
                return Err(err(PackProblem::Field { field: "payload", problem: format!("{} base64 characters is too long", b64.len()) }));
            }
            let payload = base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map_err(|e| err(PackProblem::Field { field: "payload", problem: e.to_string() }))?;
            verify_payload(&entry, &payload).map_err(|e| err(PackProblem::Payload(e)))?;
            Some(payload)
        }
    };
    Ok((entry, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::next_header;
    use crate::identity::AgentKey;

    #[test]
    fn lines_round_trip_and_bad_lines_are_named() {
        let key = AgentKey::from_seed([1; 32]);
        let e = SignedEntry::sign(next_header(key.agent_id(), None, 5, b"hello").unwrap(), &key);
        parse_header_line(&header_line()).unwrap();
        assert!(parse_header_line("{\"agora_pack\":2}").is_err());
        let line = entry_line(&e, Some(b"hello"));
        let (back, payload) = parse_entry_line(2, &line).unwrap();
        assert_eq!(back, e);
        assert_eq!(payload.as_deref(), Some(&b"hello"[..]));
        let redacted = entry_line(&e, None);
        assert_eq!(parse_entry_line(2, &redacted).unwrap().1, None);

        let wrong_payload =
            line.replace(&base64::engine::general_purpose::STANDARD.encode(b"hello"), &base64::engine::general_purpose::STANDARD.encode(b"hellO"));
        let err = parse_entry_line(7, &wrong_payload).unwrap_err();
        assert_eq!(err.line, 7);
        assert!(matches!(err.problem, PackProblem::Payload(_)));
        let wrong_id = line.replacen(&e.id().to_string(), &EntryId([0; 32]).to_string(), 1);
        assert!(matches!(parse_entry_line(3, &wrong_id).unwrap_err().problem, PackProblem::IdMismatch { .. }));
        assert!(matches!(parse_entry_line(3, "{}").unwrap_err().problem, PackProblem::Json(_)));
    }
}
