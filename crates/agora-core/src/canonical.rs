//! Canonical postcard encodings and the framing every payload and wire format
//! shares.
//!
//! postcard decoding is not canonical on its own (it accepts overlong varints
//! and, with `take_from_bytes`, trailing bytes), so every decoder of a signed
//! or hashed format re-encodes what it decoded and refuses bytes that differ.
//! [`encodes_to`] does that comparison while serializing, without building a
//! copy of the encoding.
//!
//! Every format above the entry (reasoning events `agev`, merge events
//! `agmg`, roster events `agrs`, the replication wire) is framed the same way:
//! a magic (empty for the wire, whose transport already names it), one version
//! byte, then a postcard value, usually an enum whose first varint is its kind
//! code. [`Framing`] is that framing, written once: each format declares its
//! magic, version, body limit and number of kinds, and maps [`FrameError`] to
//! its own error codes.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The framing of one format: `magic || version || postcard(value)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framing {
    /// What every encoding starts with (may be empty).
    pub magic: &'static [u8],
    /// The one version this implementation reads and writes.
    pub version: u8,
    /// Largest body (after magic and version) accepted; longer bodies are
    /// refused before postcard allocates anything.
    pub body_max: usize,
    /// For enums: the number of kinds. A body whose first varint is at least
    /// this is [`FrameError::UnknownKind`] (a newer kind), told apart from
    /// bytes that are merely malformed. `None` for formats that are not enums.
    pub kinds: Option<u32>,
}

/// Why framed bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The bytes do not start with the magic: not this format at all.
    #[error("no magic")]
    NoMagic,
    /// Nothing follows the magic.
    #[error("no version byte")]
    NoVersion,
    /// Another version of the format.
    #[error("unknown version {0}")]
    Version(u8),
    /// The body is longer than [`Framing::body_max`].
    #[error("body of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// The body's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The kind code is not one this version defines.
    #[error("unknown kind {0}")]
    UnknownKind(u32),
    /// Not a valid postcard value, trailing bytes, or a non-canonical encoding.
    #[error("{0}")]
    Malformed(String),
}

impl Framing {
    /// `magic || version || postcard(value)`.
    pub fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.magic.len() + 1 + 64);
        out.extend_from_slice(self.magic);
        out.push(self.version);
        // Serializing the formats' plain types (integers, byte arrays,
        // strings, options, sequences; no maps) into a Vec cannot fail.
        postcard::to_extend(value, out).unwrap_or_default()
    }

    /// `magic || version || body`, the body as given rather than encoded:
    /// bytes the decoder refuses in a chosen way (another version, a
    /// malformed body). A residue keeps the error of a payload that did not
    /// decode this way.
    pub fn frame_raw(&self, version: u8, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.magic.len() + 1 + body.len());
        out.extend_from_slice(self.magic);
        out.push(version);
        out.extend_from_slice(body);
        out
    }

    /// Does `bytes` claim to be this format (start with its magic)?
    pub fn claims(&self, bytes: &[u8]) -> bool {
        bytes.starts_with(self.magic)
    }

    /// Check the magic, the version, the body limit and the kind code, and
    /// return the body: what a format with a decoder of its own (the graph's
    /// one-pass reader) needs before it reads the body.
    pub fn body<'a>(&self, bytes: &'a [u8]) -> Result<&'a [u8], FrameError> {
        let rest = bytes.strip_prefix(self.magic).ok_or(FrameError::NoMagic)?;
        let (&version, body) = rest.split_first().ok_or(FrameError::NoVersion)?;
        if version != self.version {
            return Err(FrameError::Version(version));
        }
        if body.len() > self.body_max {
            return Err(FrameError::TooLarge { len: body.len(), max: self.body_max });
        }
        if let Some(kinds) = self.kinds {
            let (code, _) = postcard::take_from_bytes::<u32>(body).map_err(|e| FrameError::Malformed(e.to_string()))?;
            if code >= kinds {
                return Err(FrameError::UnknownKind(code));
            }
        }
        Ok(body)
    }

    /// Decode canonically: [`Framing::body`], then [`decode_body`].
    pub fn decode<T: Serialize + DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, FrameError> {
        decode_body(self.body(bytes)?)
    }
}

/// Decode a postcard body that must be consumed exactly and be the canonical
/// encoding of what it decodes to.
pub fn decode_body<T: Serialize + DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    let (value, trailing): (T, &[u8]) = postcard::take_from_bytes(body).map_err(|e| FrameError::Malformed(e.to_string()))?;
    if !trailing.is_empty() {
        return Err(FrameError::Malformed(format!("{} trailing bytes", trailing.len())));
    }
    if !encodes_to(&value, body) {
        return Err(FrameError::Malformed("non-canonical encoding".into()));
    }
    Ok(value)
}

/// Whether postcard's encoding of `value` is exactly `expected`.
pub fn encodes_to<T: Serialize + ?Sized>(value: &T, expected: &[u8]) -> bool {
    postcard::serialize_with_flavor(value, CompareFlavor { expected, pos: 0, equal: true }).unwrap_or(false)
}

/// A postcard output that compares what would be written with `expected`
/// instead of storing it.
struct CompareFlavor<'a> {
    expected: &'a [u8],
    pos: usize,
    equal: bool,
}

impl postcard::ser_flavors::Flavor for CompareFlavor<'_> {
    type Output = bool;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        let end = self.pos + data.len();
        self.equal = self.equal && self.expected.get(self.pos..end) == Some(data);
        self.pos = end;
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.equal = self.equal && self.expected.get(self.pos) == Some(&data);
        self.pos += 1;
        Ok(())
    }

    fn finalize(self) -> postcard::Result<bool> {
        Ok(self.equal && self.pos == self.expected.len())
    }
}

#[cfg(test)]
mod tests {
    use super::{FrameError, Framing, encodes_to};

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    enum Kind {
        A(u64),
        B { text: String },
    }

    const FRAMING: Framing = Framing { magic: b"test", version: 1, body_max: 64, kinds: Some(2) };

    #[test]
    fn framing_round_trips_and_refuses_each_way_of_being_wrong() {
        let bytes = FRAMING.encode(&Kind::B { text: "hi".into() });
        assert_eq!(bytes, b"test\x01\x01\x02hi");
        assert_eq!(FRAMING.decode::<Kind>(&bytes), Ok(Kind::B { text: "hi".into() }));
        assert!(FRAMING.claims(&bytes) && !FRAMING.claims(b"tes"));
        assert_eq!(FRAMING.decode::<Kind>(b"nope\x01\x00\x00"), Err(FrameError::NoMagic));
        assert_eq!(FRAMING.decode::<Kind>(b"test"), Err(FrameError::NoVersion));
        assert_eq!(FRAMING.decode::<Kind>(b"test\x02\x00\x00"), Err(FrameError::Version(2)));
        assert_eq!(FRAMING.decode::<Kind>(b"test\x01\x02"), Err(FrameError::UnknownKind(2)));
        let mut long = b"test\x01".to_vec();
        long.extend([0u8; 65]);
        assert_eq!(FRAMING.decode::<Kind>(&long), Err(FrameError::TooLarge { len: 65, max: 64 }));
        let mut trailing = FRAMING.encode(&Kind::A(5));
        trailing.push(0);
        assert!(matches!(FRAMING.decode::<Kind>(&trailing), Err(FrameError::Malformed(m)) if m.contains("trailing")));
        // An overlong varint (0x85 0x00 for 5) is not canonical.
        assert!(matches!(FRAMING.decode::<Kind>(b"test\x01\x00\x85\x00"), Err(FrameError::Malformed(m)) if m.contains("canonical")));
        assert!(matches!(FRAMING.decode::<Kind>(b"test\x01\x01"), Err(FrameError::Malformed(_))));
        // No magic at all (the wire's framing).
        let wire = Framing { magic: b"", version: 1, body_max: 8, kinds: None };
        assert_eq!(wire.encode(&7u64), vec![1, 7]);
        assert_eq!(wire.decode::<u64>(&[1, 7]), Ok(7));
    }

    #[test]
    fn equal_only_for_the_exact_encoding() {
        let value: (u64, Vec<u8>) = (300, vec![1, 2, 3]);
        let bytes = postcard::to_allocvec(&value).unwrap();
        assert!(encodes_to(&value, &bytes));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(!encodes_to(&value, &longer), "trailing byte");
        assert!(!encodes_to(&value, &bytes[..bytes.len() - 1]), "truncated");
        let mut other = bytes.clone();
        other[0] ^= 1;
        assert!(!encodes_to(&value, &other), "changed byte");
    }
}
