//! The home directory: `agent.key` (the secret seed, mode 0600) and `store/`
//! (the RocksDB store). See `protocol-spec/storage.md`.

use agora_core::AgentKey;
use agora_core::identity::KEY_FILE_BYTES;
use agora_store::{Store, StoreOptions};
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Name of the key file inside the home directory.
pub const KEY_FILE: &str = "agent.key";
/// Name of the store directory inside the home directory.
pub const STORE_DIR: &str = "store";

pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    pub fn resolve(home: Option<PathBuf>) -> Result<Self> {
        Ok(Self { dir: agora_node_client::home_dir(home)? })
    }

    pub fn key_path(&self) -> PathBuf {
        self.dir.join(KEY_FILE)
    }

    pub fn store_path(&self) -> PathBuf {
        self.dir.join(STORE_DIR)
    }

    /// Create the home directory, the store and a new key. Nothing existing is
    /// overwritten: an existing key file is refused, and a store directory made
    /// by something else is refused before the key is written.
    pub fn init(&self) -> Result<AgentKey> {
        let key_path = self.key_path();
        if key_path.exists() {
            bail!("{} already exists; refusing to overwrite an agent key", key_path.display());
        }
        if !self.dir.exists() {
            std::fs::create_dir_all(&self.dir).with_context(|| format!("creating {}", self.dir.display()))?;
        }
        // Also when the directory existed before (made by a shell with mode
        // 0755, say): the home holds the key and the store.
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700)).with_context(|| format!("setting mode 0700 on {}", self.dir.display()))?;
        Store::open(self.store_path(), &StoreOptions { create: true, ..Default::default() })?;
        let mut seed = [0u8; KEY_FILE_BYTES];
        getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
        let key = AgentKey::from_seed(seed);
        seed.fill(0);
        write_private_file(&key_path, &key.to_key_file_bytes())?;
        Ok(key)
    }

    /// Load the agent key, refusing a file that others can read or write, or
    /// that has the wrong length.
    pub fn load_key(&self) -> Result<AgentKey> {
        load_key_file(&self.key_path())
    }

    pub fn open_store(&self) -> Result<Store> {
        self.make_private()?;
        Ok(Store::open(self.store_path(), &StoreOptions::default())?)
    }

    /// The store, with a block cache of `block_cache_bytes` (a node's
    /// `store_cache_mib`).
    pub fn open_store_with_cache(&self, block_cache_bytes: usize) -> Result<Store> {
        self.make_private()?;
        Ok(Store::open(self.store_path(), &StoreOptions { block_cache_bytes, ..StoreOptions::default() })?)
    }

    /// Mode 0700 on the home, if it grants anything to others (a home
    /// initialised before `init` set the mode of an existing directory).
    /// The store sets its own (`Store::open`).
    /// A home that does not exist is left to the store's open, whose error
    /// says to run `agora init`.
    fn make_private(&self) -> Result<()> {
        let Ok(meta) = std::fs::metadata(&self.dir) else { return Ok(()) };
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("setting mode 0700 on {}", self.dir.display()))?;
        }
        Ok(())
    }
}

pub fn load_key_file(path: &Path) -> Result<AgentKey> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading key file {} (run `agora init` first?)", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!("key file {} has mode {mode:04o}: other users can access it; run `chmod 600 {}`", path.display(), path.display());
    }
    if meta.len() > 4096 {
        bail!("key file {}: must be exactly {KEY_FILE_BYTES} bytes, found {}", path.display(), meta.len());
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading key file {}", path.display()))?;
    AgentKey::from_key_file_bytes(&bytes).with_context(|| format!("key file {}", path.display()))
}

/// Create `path` (it must not exist) with mode 0600, write `bytes` and sync:
/// how every secret of a home (agent key, node key, control token) is written.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).with_context(|| format!("writing {}", path.display()))?;
    file.sync_all().with_context(|| format!("syncing {}", path.display()))
}
