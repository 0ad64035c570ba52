//! The replication wire format: what peers exchange, byte for byte
//! (`protocol-spec/replication.md`).
//!
//! Three message families, each one version byte followed by a postcard
//! enum, decoded canonically (no trailing bytes; re-encoding must give the
//! input back) and bounded in size before decoding:
//! - [`WireRequest`]: a libp2p request-response request (frontier, range);
//! - [`WireResponse`]: its response (ack, entries, wrong workspace);
//! - [`Gossip`]: a gossipsub message (one entry, one announcement, one fork proof).

use crate::replicator::{Gossip, Head, Message, WireEntry};
use agora_core::{sha256, AgentId, SignedEntry};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The only wire version this implementation speaks.
pub const WIRE_VERSION: u8 = 1;

/// The libp2p request-response protocol name of range sync.
pub const SYNC_PROTOCOL: &str = "/agora/sync/1";

/// Largest request: a frontier message of `Config::frontier_heads_max`
/// (50,000) heads of at most 74 bytes each fits with room to spare.
pub const REQUEST_BYTES_MAX: usize = 9 << 20;

/// Largest response. Responses are cut at [`crate::Config::response_bytes_max`]
/// (2 MiB by default) at a seq boundary, and a single entry carries at most
/// 1 MiB of payload, so 8 MiB leaves room for several forked entries of one seq.
pub const RESPONSE_BYTES_MAX: usize = 8 << 20;

/// Largest gossip message (gossipsub's `max_transmit_size` is set to this).
pub const GOSSIP_BYTES_MAX: usize = 64 << 10;

/// Payloads up to this size travel inline in gossip; larger entries are
/// announced as a [`Gossip::Head`] and fetched by range sync.
pub const GOSSIP_INLINE_PAYLOAD_MAX: usize = 32 << 10;

/// Identifies a workspace (a swarm): SHA-256 of
/// `"agora-workspace-v1" || founder (32 bytes) || name (UTF-8)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WorkspaceId(pub [u8; 32]);

impl WorkspaceId {
    /// The id of the workspace `name` founded by `founder`.
    pub fn new(founder: &AgentId, name: &str) -> Self {
        let mut bytes = b"agora-workspace-v1".to_vec();
        bytes.extend_from_slice(founder.as_bytes());
        bytes.extend_from_slice(name.as_bytes());
        Self(sha256(&bytes))
    }

    /// The gossipsub topic of this workspace.
    pub fn topic(&self) -> String {
        format!("agora/v1/{}", hex::encode(self.0))
    }
}

impl std::fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// A request, as sent over request-response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireRequest {
    /// 0: the sender's tips (see [`Message::Frontier`]).
    Frontier {
        /// The sender's workspace; a receiver in another workspace answers
        /// [`WireResponse::WrongWorkspace`] and ignores it.
        workspace: WorkspaceId,
        /// Tips.
        heads: Vec<Head>,
    },
    /// 1: a range of one author's chain (see [`Message::Request`]).
    Range {
        /// The sender's workspace.
        workspace: WorkspaceId,
        /// Request id.
        req: u64,
        /// The author.
        author: AgentId,
        /// First seq.
        from_seq: u64,
        /// Most seqs.
        limit: u32,
    },
}

/// A response, as sent over request-response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireResponse {
    /// 0: a frontier was received.
    Ack,
    /// 1: entries answering a range request (see [`Message::Response`]).
    Entries {
        /// The request id.
        req: u64,
        /// Entries in (seq, id) order.
        entries: Vec<WireEntry>,
        /// The sender holds more beyond this range.
        more: bool,
    },
    /// 2: the receiver is in another workspace.
    WrongWorkspace,
    /// 3: the receiver will not answer now (overloaded, or the request was
    /// refused); ask again later.
    Busy,
}

/// Why bytes from the wire were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Larger than the limit for its kind.
    #[error("{what} of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Which message family.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Another wire version.
    #[error("{what}: unknown wire version {version} (this node speaks {WIRE_VERSION})")]
    Version {
        /// Which message family.
        what: &'static str,
        /// The version byte.
        version: u8,
    },
    /// Not a valid encoding.
    #[error("{what}: malformed: {detail}")]
    Malformed {
        /// Which message family.
        what: &'static str,
        /// What is wrong.
        detail: String,
    },
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![WIRE_VERSION];
    // Serializing these types into a Vec cannot fail (no maps, no
    // unsupported types); an empty body would be refused by any decoder.
    out.extend(postcard::to_allocvec(value).unwrap_or_default());
    out
}

fn decode<T: Serialize + DeserializeOwned>(what: &'static str, bytes: &[u8], max: usize) -> Result<T, WireError> {
    if bytes.len() > max {
        return Err(WireError::TooLarge { what, len: bytes.len(), max });
    }
    let (&version, body) = bytes.split_first().ok_or(WireError::Malformed { what, detail: "empty".into() })?;
    if version != WIRE_VERSION {
        return Err(WireError::Version { what, version });
    }
    let (value, rest): (T, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| WireError::Malformed { what, detail: e.to_string() })?;
    if !rest.is_empty() {
        return Err(WireError::Malformed { what, detail: format!("{} trailing bytes", rest.len()) });
    }
    if postcard::to_allocvec(&value).ok().as_deref() != Some(body) {
        return Err(WireError::Malformed { what, detail: "non-canonical encoding".into() });
    }
    Ok(value)
}

impl WireRequest {
    /// The bytes of this request.
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }
    /// Decode a request canonically.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        decode("request", bytes, REQUEST_BYTES_MAX)
    }
    /// The request that carries a replicator message, if it is one that
    /// travels as a request (frontiers and range requests).
    pub fn from_message(workspace: WorkspaceId, message: Message) -> Result<Self, Message> {
        match message {
            Message::Frontier(heads) => Ok(Self::Frontier { workspace, heads }),
            Message::Request { req, author, from_seq, limit } => Ok(Self::Range { workspace, req, author, from_seq, limit }),
            other => Err(other),
        }
    }
    /// The workspace the sender is in.
    pub fn workspace(&self) -> WorkspaceId {
        match self {
            Self::Frontier { workspace, .. } | Self::Range { workspace, .. } => *workspace,
        }
    }
    /// The replicator message this request carries.
    pub fn into_message(self) -> Message {
        match self {
            Self::Frontier { heads, .. } => Message::Frontier(heads),
            Self::Range { req, author, from_seq, limit, .. } => Message::Request { req, author, from_seq, limit },
        }
    }
}

impl WireResponse {
    /// The bytes of this response.
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }
    /// Decode a response canonically.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        decode("response", bytes, RESPONSE_BYTES_MAX)
    }
}

impl Gossip {
    /// The bytes of this gossip message.
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }
    /// Decode a gossip message canonically.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        decode("gossip", bytes, GOSSIP_BYTES_MAX)
    }
    /// The gossip message announcing a new entry: inline when its payload is
    /// small, as the signed entry alone (an announcement) otherwise.
    pub fn for_entry(entry: &SignedEntry, payload: Option<&[u8]>) -> Self {
        match payload {
            Some(p) if p.len() <= GOSSIP_INLINE_PAYLOAD_MAX => {
                Gossip::Entry(WireEntry { entry: entry.encode(), payload: Some(p.to_vec()) })
            }
            _ => Gossip::Announce(entry.encode()),
        }
    }
}

/// The gossipsub message id of gossip bytes: the entry id for an entry or an
/// announcement (so one entry relayed by many nodes is delivered once), SHA-256 of the
/// proof for a fork proof, SHA-256 of the bytes for anything undecodable.
pub fn gossip_message_id(bytes: &[u8]) -> [u8; 32] {
    match Gossip::decode(bytes) {
        Ok(Gossip::Entry(w)) => match SignedEntry::decode(&w.entry) {
            Ok(e) => e.id().0,
            Err(_) => sha256(bytes),
        },
        Ok(Gossip::Announce(bytes)) => match SignedEntry::decode(&bytes) {
            Ok(e) => e.id().0,
            Err(_) => sha256(&bytes),
        },
        Ok(Gossip::ForkProof(p)) => sha256(&p),
        Err(_) => sha256(bytes),
    }
}
