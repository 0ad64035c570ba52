//! An agent's signing key and the bytes of its key file.
//!
//! The key file holds exactly the 32-byte Ed25519 secret seed, nothing else, so
//! its length alone tells a truncated or foreign file apart. Reading the file,
//! and checking that nobody else can read it, is the caller's job: this crate
//! does no I/O.

use crate::id::AgentId;
use ed25519_dalek::{Signer, SigningKey};

/// Length of a key file.
pub const KEY_FILE_BYTES: usize = 32;

/// Why key-file bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyFileError {
    /// The file is not exactly [`KEY_FILE_BYTES`] long.
    #[error("key file must be exactly {KEY_FILE_BYTES} bytes, found {0}")]
    Length(usize),
}

/// An agent's secret signing key. Zeroized on drop (ed25519-dalek's `zeroize`).
pub struct AgentKey {
    signing: SigningKey,
    id: AgentId,
}

impl AgentKey {
    /// The key with this 32-byte secret seed. Callers draw the seed from the OS
    /// random source; tests use fixed seeds so that vectors are reproducible.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(&seed);
        let id = AgentId(signing.verifying_key().to_bytes());
        Self { signing, id }
    }

    /// Parse the contents of a key file.
    pub fn from_key_file_bytes(bytes: &[u8]) -> Result<Self, KeyFileError> {
        let seed: [u8; 32] = bytes.try_into().map_err(|_| KeyFileError::Length(bytes.len()))?;
        Ok(Self::from_seed(seed))
    }

    /// The contents of this key's file.
    pub fn to_key_file_bytes(&self) -> [u8; KEY_FILE_BYTES] {
        self.signing.to_bytes()
    }

    /// The agent id: the public key.
    pub fn agent_id(&self) -> AgentId {
        self.id
    }

    /// Sign `domain || message` (RFC 8032 Ed25519, deterministic).
    pub(crate) fn sign_with_domain(&self, domain: &[u8], message: &[u8]) -> [u8; 64] {
        let mut buf = Vec::with_capacity(domain.len() + message.len());
        buf.extend_from_slice(domain);
        buf.extend_from_slice(message);
        self.signing.sign(&buf).to_bytes()
    }
}

impl std::fmt::Debug for AgentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        write!(f, "AgentKey({})", self.id.short())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_round_trip_and_length_errors() {
        let key = AgentKey::from_seed([5; 32]);
        let bytes = key.to_key_file_bytes();
        let again = AgentKey::from_key_file_bytes(&bytes).unwrap();
        assert_eq!(again.agent_id(), key.agent_id());
        assert_eq!(AgentKey::from_key_file_bytes(&bytes[..31]).unwrap_err(), KeyFileError::Length(31));
        assert_eq!(AgentKey::from_key_file_bytes(&[0; 33]).unwrap_err(), KeyFileError::Length(33));
        assert!(!format!("{key:?}").contains(&hex::encode(bytes)));
    }
}
