//! An agent's signing key and the bytes of its key file.
//!
//! The key file of an agent that signs with the key it was created with holds
//! exactly the 32-byte Ed25519 secret seed; one that has rotated
//! (`protocol-spec/keys.md`) holds its agent id then the current key's seed,
//! 64 bytes. Nothing else, so the length alone tells a truncated or foreign
//! file apart. Reading the file, and checking that nobody else can read it,
//! is the caller's job: this crate does no I/O.

use crate::id::AgentId;
use ed25519_dalek::{Signer, SigningKey};

/// Length of the key file of an agent signing with its inception key.
pub const KEY_FILE_BYTES: usize = 32;

/// Length of the key file of an agent that has rotated: its id, then the seed.
pub const ROTATED_KEY_FILE_BYTES: usize = 64;

/// Why key-file bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyFileError {
    /// The file is neither [`KEY_FILE_BYTES`] nor [`ROTATED_KEY_FILE_BYTES`] long.
    #[error("key file must be exactly {KEY_FILE_BYTES} or {ROTATED_KEY_FILE_BYTES} bytes, found {0}")]
    Length(usize),
}

/// An agent's secret signing key: the agent's current key, and the agent it
/// signs for. Zeroized on drop (ed25519-dalek's `zeroize`).
pub struct AgentKey {
    signing: SigningKey,
    public: AgentId,
    id: AgentId,
    commitment: Option<[u8; 32]>,
}

impl AgentKey {
    /// The key with this 32-byte secret seed, signing for the agent it
    /// creates (the agent id is its public key). Callers draw the seed from
    /// the OS random source; tests use fixed seeds so that vectors are
    /// reproducible.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(&seed);
        let id = AgentId(signing.verifying_key().to_bytes());
        Self { signing, public: id, id, commitment: None }
    }

    /// This key signing for `agent`, which it does not name (a rotated
    /// agent's current key, or a key about to become it).
    pub fn for_agent(mut self, agent: AgentId) -> Self {
        self.id = agent;
        self
    }

    /// This key, committing the agent's chain to the next key `commitment`
    /// (`protocol-spec/keys.md`) when it next writes an entry to a chain
    /// that commits to none yet (its first entry, or after version-1 ones).
    pub fn committing_to(mut self, commitment: [u8; 32]) -> Self {
        self.commitment = Some(commitment);
        self
    }

    /// The commitment this key makes for a chain that makes none yet.
    pub fn commitment(&self) -> Option<[u8; 32]> {
        self.commitment
    }

    /// Parse the contents of a key file.
    pub fn from_key_file_bytes(bytes: &[u8]) -> Result<Self, KeyFileError> {
        match bytes.len() {
            KEY_FILE_BYTES => Ok(Self::from_seed(bytes.try_into().map_err(|_| KeyFileError::Length(bytes.len()))?)),
            ROTATED_KEY_FILE_BYTES => {
                let (id, seed) = bytes.split_at(32);
                let id: [u8; 32] = id.try_into().map_err(|_| KeyFileError::Length(bytes.len()))?;
                Ok(Self::from_seed(seed.try_into().map_err(|_| KeyFileError::Length(bytes.len()))?).for_agent(AgentId(id)))
            }
            n => Err(KeyFileError::Length(n)),
        }
    }

    /// The contents of this key's file: the seed, preceded by the agent id
    /// when the key is not the agent's inception key.
    pub fn to_key_file_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ROTATED_KEY_FILE_BYTES);
        if self.id != self.public {
            out.extend_from_slice(self.id.as_bytes());
        }
        out.extend_from_slice(&self.signing.to_bytes());
        out
    }

    /// The agent this key signs for: the agent's id, which is the public key
    /// it was created with.
    pub fn agent_id(&self) -> AgentId {
        self.id
    }

    /// The public half of this key (the agent id, until the agent rotates).
    pub fn public_key(&self) -> AgentId {
        self.public
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
        write!(f, "AgentKey({} signing with {})", self.id.short(), self.public.short())
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
        let rotated = AgentKey::from_seed([6; 32]).for_agent(key.agent_id());
        let again = AgentKey::from_key_file_bytes(&rotated.to_key_file_bytes()).unwrap();
        assert_eq!((again.agent_id(), again.public_key()), (key.agent_id(), rotated.public_key()));
        assert_eq!(rotated.to_key_file_bytes().len(), ROTATED_KEY_FILE_BYTES);
        assert!(!format!("{key:?}").contains(&hex::encode(bytes)));
    }
}
