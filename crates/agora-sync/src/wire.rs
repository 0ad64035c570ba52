//! The replication wire format: what peers exchange, byte for byte
//! (`protocol-spec/replication.md`), and the messages the replicator speaks.
//!
//! Three message families, each one version byte followed by a postcard
//! enum (the framing every format shares, `agora_core::canonical::Framing`,
//! here without a magic: the transport names the protocol), decoded
//! canonically (no trailing bytes; re-encoding must give the input back) and
//! bounded in size before decoding:
//! - [`WireRequest`]: a libp2p request-response request (frontier, range);
//! - [`WireResponse`]: its response (ack, entries, wrong workspace, busy, wait);
//! - [`Gossip`]: a gossipsub message (one entry, one announcement, one fork proof).

use agora_core::canonical::{FrameError, Framing};
use agora_core::{AgentId, EntryId, SignedEntry, sha256};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// The only wire version this implementation speaks. Version 2 changed the
/// range request (a `RangeStart` instead of a seq) and the gossip message id
/// (the hash of the bytes instead of the entry id). The version is also in
/// the protocol name and the gossip topic, so nodes of different versions
/// never exchange bytes they would misread (and ban each other for).
pub const WIRE_VERSION: u8 = 2;

/// The libp2p request-response protocol name of range sync.
pub const SYNC_PROTOCOL: &str = "/agora/sync/2";

/// Largest request: a frontier message of `Config::frontier_heads_max`
/// (50,000) heads of at most 74 bytes each fits with room to spare.
pub const REQUEST_BYTES_MAX: usize = 9 << 20;

/// Largest response. Responses are cut at [`crate::Config::response_bytes_max`]
/// (2 MiB by default) at an entry boundary, and a single entry carries at
/// most 1 MiB of payload, so 8 MiB leaves room to spare.
pub const RESPONSE_BYTES_MAX: usize = 8 << 20;

/// Largest gossip message (gossipsub's `max_transmit_size` is set to this).
pub const GOSSIP_BYTES_MAX: usize = 64 << 10;

/// Payloads up to this size travel inline in gossip; larger entries are
/// announced as a [`Gossip::Announce`] and fetched by range sync.
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
        format!("agora/v{WIRE_VERSION}/{}", hex::encode(self.0))
    }
}

impl std::fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// One tip of an author's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Head {
    /// The author.
    pub author: AgentId,
    /// The tip's seq.
    pub seq: u64,
    /// The tip's id.
    pub id: EntryId,
}

/// A signed entry with its payload, as bytes on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireEntry {
    /// Signed entry bytes (see protocol-spec/entry-format.md).
    #[serde(with = "serde_bytes")]
    pub entry: Vec<u8>,
    /// The payload, if the sender holds it.
    #[serde(with = "serde_bytes")]
    pub payload: Option<Vec<u8>>,
}

impl WireEntry {
    /// Bytes this entry occupies in a response (entry, payload, framing).
    pub fn wire_len(&self) -> usize {
        self.entry.len() + self.payload.as_ref().map_or(0, Vec::len) + 8
    }
}

/// Where a range starts: a seq, and optionally an entry of that seq after
/// which to continue (a response cut inside a seq with many branches is
/// resumed from its last entry, so no seq is ever too large to transfer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RangeStart {
    /// First seq wanted.
    pub seq: u64,
    /// Only entries of `seq` whose id is greater than this (all when `None`).
    pub after: Option<EntryId>,
}

impl RangeStart {
    /// The whole of `seq`.
    pub fn at(seq: u64) -> Self {
        Self { seq, after: None }
    }
}

/// A replication message, as the replicator sends and receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Tips the sender holds. On connect: every tip. Afterwards: the tips of
    /// the authors that changed, which replace the receiver's view of those
    /// authors (this is also how new heads are announced).
    Frontier(Vec<Head>),
    /// Ask for `author`'s entries from `start`, with seq below
    /// `start.seq + limit`, all branches.
    Request {
        /// Request id, echoed in the response.
        req: u64,
        /// The author.
        author: AgentId,
        /// Where the range starts.
        start: RangeStart,
        /// Most seqs wanted.
        limit: u32,
    },
    /// Entries answering a request, in (seq, id) order.
    Response {
        /// The request id.
        req: u64,
        /// The entries.
        entries: Vec<WireEntry>,
        /// The response was cut (by the entry or byte budget, or the
        /// sender's read limit) before the end of the range asked for: the
        /// requester asks for the rest, after the last entry sent.
        more: bool,
    },
}

/// What gossip carries (one message per new entry, or a fork proof).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Gossip {
    /// A new entry with its payload inline.
    Entry(WireEntry),
    /// A new entry (signed entry bytes) whose payload is too large to carry
    /// inline: verified like any entry, then fetched by range sync.
    Announce(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A standalone fork proof (encoded, see protocol-spec/fork-proofs.md).
    ForkProof(#[serde(with = "serde_bytes")] Vec<u8>),
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
        /// Where the range starts.
        start: RangeStart,
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
        /// Cut before the end of the range asked for (see [`Message::Response`]).
        more: bool,
    },
    /// 2: the receiver is in another workspace.
    WrongWorkspace,
    /// 3: the receiver will not answer now (overloaded, or the request was
    /// refused) and has no estimate of when it will; ask again later.
    Busy,
    /// 4: the receiver will not answer now; ask again after `ms`
    /// milliseconds (when its rate budget for the sender has refilled). The
    /// sender bounds the wait ([`crate::WAIT_MIN_MS`], [`crate::BUSY_BACKOFF_MS`]).
    Wait {
        /// Milliseconds until the receiver expects to serve the sender.
        ms: u32,
    },
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

/// The framing of the three families: a version byte, then postcard; the
/// size limit is checked on the whole message before anything is decoded.
const fn framing(max: usize) -> Framing {
    Framing { magic: b"", version: WIRE_VERSION, body_max: max - 1, kinds: None }
}

fn decode<T: Serialize + DeserializeOwned>(what: &'static str, bytes: &[u8], max: usize) -> Result<T, WireError> {
    if bytes.len() > max {
        return Err(WireError::TooLarge { what, len: bytes.len(), max });
    }
    framing(max).decode(bytes).map_err(|e| match e {
        FrameError::Version(version) => WireError::Version { what, version },
        FrameError::NoVersion | FrameError::NoMagic => WireError::Malformed { what, detail: "empty".into() },
        FrameError::TooLarge { len, max } => WireError::TooLarge { what, len: len + 1, max: max + 1 },
        FrameError::UnknownKind(k) => WireError::Malformed { what, detail: format!("unknown kind {k}") },
        FrameError::Malformed(detail) => WireError::Malformed { what, detail },
    })
}

impl WireRequest {
    /// The bytes of this request.
    pub fn encode(&self) -> Vec<u8> {
        framing(REQUEST_BYTES_MAX).encode(self)
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
            Message::Request { req, author, start, limit } => Ok(Self::Range { workspace, req, author, start, limit }),
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
            Self::Range { req, author, start, limit, .. } => Message::Request { req, author, start, limit },
        }
    }
}

impl WireResponse {
    /// The bytes of this response.
    pub fn encode(&self) -> Vec<u8> {
        framing(RESPONSE_BYTES_MAX).encode(self)
    }
    /// Decode a response canonically.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        decode("response", bytes, RESPONSE_BYTES_MAX)
    }
    /// The answer to a declined request (`Output::Decline`): `Wait` when
    /// the wait is known, `Busy` when not.
    pub fn declined(wait_ms: Option<u32>) -> Self {
        wait_ms.map_or(Self::Busy, |ms| Self::Wait { ms })
    }
}

impl Gossip {
    /// The bytes of this gossip message.
    pub fn encode(&self) -> Vec<u8> {
        framing(GOSSIP_BYTES_MAX).encode(self)
    }
    /// Decode a gossip message canonically.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        decode("gossip", bytes, GOSSIP_BYTES_MAX)
    }
    /// The gossip message announcing a new entry: inline when its payload is
    /// small, as the signed entry alone (an announcement) otherwise.
    pub fn for_entry(entry: &SignedEntry, payload: Option<&[u8]>) -> Self {
        match payload {
            Some(p) if p.len() <= GOSSIP_INLINE_PAYLOAD_MAX => Gossip::Entry(WireEntry { entry: entry.encode(), payload: Some(p.to_vec()) }),
            _ => Gossip::Announce(entry.encode()),
        }
    }
}

/// The gossipsub message id of gossip bytes: SHA-256 of the bytes. Encodings
/// are canonical, so one message relayed by many nodes has one id and is
/// delivered once; and an entry relayed without its payload (or announced
/// instead of carried) is a different message, so a stripped copy can never
/// make gossip drop the full one as a duplicate. Needs no decoding.
pub fn gossip_message_id(bytes: &[u8]) -> [u8; 32] {
    sha256(bytes)
}
