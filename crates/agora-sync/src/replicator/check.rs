//! Checking a response's entries: the part of verifying a response that
//! costs CPU and needs no state ([`check_entries`]), which a driver may run
//! on a worker thread, and the bound on the entries one response carries.

use super::outputs::{CheckError, VerifiedEntry};
use crate::wire::WireEntry;
use agora_core::SignedEntry;
use agora_core::verify::check_entries as check_signed_entries;

/// Most entries one response carries (beyond the byte budget): a seq with
/// many branches is sent over several responses, each resumed after the last
/// entry of the one before.
pub const RESPONSE_ENTRIES_MAX: usize = 4_096;

/// Decode a response's entries and check each payload against its header and
/// every signature (in batches): the part of verifying a response that costs
/// CPU and needs no state, so a driver may run it on a worker thread and hand
/// the result to [`Replicator::handle_checked_response`](super::Replicator::handle_checked_response). The error names the
/// first bad entry by its position.
pub fn check_entries(entries: Vec<WireEntry>) -> Result<Vec<VerifiedEntry>, CheckError> {
    if entries.len() > RESPONSE_ENTRIES_MAX {
        return Err(CheckError::TooMany { count: entries.len(), max: RESPONSE_ENTRIES_MAX });
    }
    let mut decoded = Vec::with_capacity(entries.len());
    for (index, w) in entries.into_iter().enumerate() {
        let e = SignedEntry::decode(&w.entry).map_err(|error| CheckError::Entry { index, error })?;
        decoded.push((e, w.payload));
    }
    Ok(check_signed_entries(decoded)?)
}
