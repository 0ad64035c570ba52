//! Agent and entry identifiers and their text form.
//!
//! Both are 32 bytes. Their one text form is 64 lowercase hexadecimal digits,
//! which sorts in the same order as the bytes. Parsing accepts upper case too but
//! printing never produces it. Entry ids may be abbreviated by callers that look
//! them up (the store resolves unique prefixes); the full form is canonical.

use std::fmt;
use std::str::FromStr;

/// Why a text id could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseIdError {
    /// The text is not 64 characters long.
    #[error("expected 64 hex digits, got {0} characters")]
    Length(usize),
    /// The text contains a character that is not a hex digit.
    #[error("not a hex digit at position {0}")]
    Digit(usize),
}

fn parse_hex32(text: &str) -> Result<[u8; 32], ParseIdError> {
    if text.len() != 64 {
        return Err(ParseIdError::Length(text.chars().count()));
    }
    if let Some(pos) = text.bytes().position(|b| !b.is_ascii_hexdigit()) {
        return Err(ParseIdError::Digit(pos));
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).map_err(|_| ParseIdError::Digit(0))?;
    Ok(out)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        // Serialize: a newtype over [u8; 32], so postcard writes the 32 bytes
        // as they are. Used by payload formats that reference ids (events).
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
        pub struct $name(pub [u8; 32]);

        impl $name {
            /// The raw bytes.
            pub fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }
            /// The first 8 hex digits, for logs and tables. Not unique.
            pub fn short(&self) -> String {
                hex::encode(&self.0[..4])
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&hex::encode(self.0))
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.short())
            }
        }
        impl FromStr for $name {
            type Err = ParseIdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                parse_hex32(s).map(Self)
            }
        }
    };
}

id_type!(
    /// An agent: the 32-byte compressed Ed25519 public key that signs its chain.
    AgentId
);
id_type!(
    /// An entry's content-derived id: SHA-256 of its encoded header.
    EntryId
);

/// Names an entry: its author, position and id. Ordered by (author, seq,
/// id), a store's order.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub struct EntryRef {
    /// The author.
    pub author: AgentId,
    /// Position in the author's chain.
    pub seq: u64,
    /// The entry id.
    pub id: EntryId,
}

impl fmt::Display for EntryRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entry {} (author {}, seq {})", self.id, self.author, self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip_and_errors() {
        let id = EntryId([0xab; 32]);
        let text = id.to_string();
        assert_eq!(text.len(), 64);
        assert_eq!(text.parse::<EntryId>(), Ok(id));
        assert_eq!(text.to_uppercase().parse::<EntryId>(), Ok(id));
        assert_eq!("abc".parse::<EntryId>(), Err(ParseIdError::Length(3)));
        let mut bad = text.clone();
        bad.replace_range(10..11, "g");
        assert_eq!(bad.parse::<AgentId>(), Err(ParseIdError::Digit(10)));
    }
}
