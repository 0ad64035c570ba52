//! Explicit limits. Every length that comes from outside is checked against one of
//! these before any buffer of that length is allocated.

/// The entry format version without key fields.
pub const FORMAT_VERSION: u8 = 1;

/// The entry format version with key fields (`protocol-spec/keys.md`): a
/// signer, the commitment to the next key, a key event.
pub const KEYED_FORMAT_VERSION: u8 = 2;

/// Largest payload an entry may bind: 1 MiB. Reasoning events are small; larger
/// artefacts belong outside the log, referenced by hash.
pub const PAYLOAD_BYTES_MAX: u32 = 1 << 20;

/// Largest encoded header. A version-1 header is at most 123 bytes
/// (1 + 32 + 10 + 33 + 10 + 5 + 32), a version-2 header 189 (its key fields
/// add 33 + 32 + 1); anything longer is rejected unread.
pub const HEADER_BYTES_MAX: usize = 189;

/// Length of an Ed25519 signature.
pub const SIGNATURE_BYTES: usize = 64;

/// Largest encoded signed entry (header followed by signature).
pub const SIGNED_ENTRY_BYTES_MAX: usize = HEADER_BYTES_MAX + SIGNATURE_BYTES;

/// Largest encoded fork proof: version byte, two length-prefixed signed entries.
pub const FORK_PROOF_BYTES_MAX: usize = 1 + 2 * (2 + SIGNED_ENTRY_BYTES_MAX);

/// Largest line of a pack file: a payload of [`PAYLOAD_BYTES_MAX`] in base64 plus
/// the hex entry and JSON framing, with room to spare.
pub const PACK_LINE_BYTES_MAX: usize = (PAYLOAD_BYTES_MAX as usize).div_ceil(3) * 4 + 1024;

/// Number of signatures verified together in one batch. From about 190
/// points the multiscalar multiplication switches to Pippenger's method: on
/// the development machine, batches of one key verify at 41k/s with 64
/// signatures, 46k/s with 256 and 49k/s with 512. 256 takes most of that gain
/// while a failed batch (each signature then checked alone, about 6 ms) stays
/// cheap; a peer that sends one is banned after the first.
pub const VERIFY_BATCH_LEN: usize = 256;

/// How far ahead of the receiving node's clock an entry's timestamp may be
/// when it is stored. An entry dated further ahead is not stored (nor
/// applied) until the node's clock reaches `timestamp - FUTURE_SKEW_MAX_MS`;
/// it is fetched again then. Because every node holds entries back this way,
/// an honest agent that saw an entry signs its own later entries no earlier
/// than it, so timestamp order agrees with what each agent saw, and a
/// forward-dated entry cannot take effect before its time. One minute covers
/// any clock kept by NTP.
pub const FUTURE_SKEW_MAX_MS: u64 = 60_000;
