//! The home directory: `agent.key` (the secret seed, mode 0600), `store/`
//! (the RocksDB store), `agents/` (the keyring: one `<name>.key` per named
//! agent, each mode 0600, in a directory of mode 0700) and `next-keys/`
//! (each agent's pre-committed next key, `<name>.key`, until it is exported
//! to be kept apart, and its commitment, `<name>.commitment`; the home's
//! own agent is `self`). See `protocol-spec/storage.md` and `keys.md`.

use agora_core::AgentKey;
use agora_core::identity::{KEY_FILE_BYTES, ROTATED_KEY_FILE_BYTES};
use agora_store::{Store, StoreOptions};
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Name of the key file inside the home directory.
pub const KEY_FILE: &str = "agent.key";
/// Name of the store directory inside the home directory.
pub const STORE_DIR: &str = "store";
/// Name of the keyring directory inside the home directory.
pub const AGENTS_DIR: &str = "agents";
/// Name of the directory of next keys and their commitments.
pub const NEXT_KEYS_DIR: &str = "next-keys";
/// The name commands give the home's own agent (`agent.key`); no agent of
/// the keyring can take it.
pub const OWN_AGENT: &str = "self";
/// Longest agent name, in bytes.
pub const AGENT_NAME_MAX: usize = 64;

/// Is `name` a valid agent name: 1 to [`AGENT_NAME_MAX`] ASCII letters,
/// digits, `-` or `_`, starting with a letter or digit? (It names a file, so
/// no path separator or dot can be in it.)
pub fn valid_agent_name(name: &str) -> bool {
    (1..=AGENT_NAME_MAX).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric()
}

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
        let commitment = self.create_next_key(None)?;
        Ok(key.committing_to(commitment))
    }

    /// The directory of next keys.
    pub fn next_keys_dir(&self) -> PathBuf {
        self.dir.join(NEXT_KEYS_DIR)
    }

    /// The file of `name`'s next key (`None`: the home's own agent).
    pub fn next_key_path(&self, name: Option<&str>) -> Result<PathBuf> {
        Ok(self.next_keys_dir().join(format!("{}.key", self.key_name(name)?)))
    }

    fn commitment_path(&self, name: Option<&str>) -> Result<PathBuf> {
        Ok(self.next_keys_dir().join(format!("{}.commitment", self.key_name(name)?)))
    }

    fn key_name<'a>(&self, name: Option<&'a str>) -> Result<&'a str> {
        match name {
            None => Ok(OWN_AGENT),
            Some(n) if valid_agent_name(n) && n != OWN_AGENT => Ok(n),
            Some(n) => bail!("{n:?} is not an agent name of the keyring"),
        }
    }

    /// Draw `name`'s next key, write it (mode 0600) with its commitment, and
    /// return the commitment. Refused if a next key or commitment is there.
    pub fn create_next_key(&self, name: Option<&str>) -> Result<[u8; 32]> {
        let dir = self.next_keys_dir();
        if !dir.exists() {
            std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).with_context(|| format!("setting mode 0700 on {}", dir.display()))?;
        let next = Self::draw_key()?;
        let commitment = agora_core::key_commitment(&next.public_key());
        write_private_file(&self.next_key_path(name)?, &next.to_key_file_bytes())?;
        write_private_file(&self.commitment_path(name)?, &commitment)?;
        Ok(commitment)
    }

    /// `name`'s commitment to its next key, if the home holds one.
    pub fn commitment(&self, name: Option<&str>) -> Result<Option<[u8; 32]>> {
        let path = self.commitment_path(name)?;
        if !path.exists() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let c: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| anyhow::anyhow!("{}: must be 32 bytes, found {}", path.display(), b.len()))?;
        Ok(Some(c))
    }

    /// `name`'s next key: from `file` when given (where its owner kept it
    /// apart), else from the home.
    pub fn load_next_key(&self, name: Option<&str>, file: Option<&Path>) -> Result<AgentKey> {
        let path = match file {
            Some(f) => f.to_path_buf(),
            None => self.next_key_path(name)?,
        };
        if !path.exists() {
            bail!("no next key at {}: give the file it was exported to with --next-key", path.display());
        }
        load_key_file(&path)
    }

    /// Move `name`'s next key out of the home to `to` (created, mode 0600,
    /// synced before the home's copy is removed). The commitment stays.
    pub fn export_next_key(&self, name: Option<&str>, to: &Path) -> Result<()> {
        let from = self.next_key_path(name)?;
        if !from.exists() {
            bail!("no next key in this home ({}): it was exported already", from.display());
        }
        let key = load_key_file(&from)?;
        write_private_file(to, &key.to_key_file_bytes())?;
        std::fs::remove_file(&from).with_context(|| format!("removing {}", from.display()))
    }

    /// A new key from the OS random source.
    pub fn draw_key() -> Result<AgentKey> {
        let mut seed = [0u8; KEY_FILE_BYTES];
        getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
        let key = AgentKey::from_seed(seed);
        seed.fill(0);
        Ok(key)
    }

    /// After a key event of `name`'s chain: `current` signs for the agent
    /// from now on (its key file is replaced, atomically) and `next` is its
    /// next key (written to the next-keys directory with its commitment,
    /// replacing the one that became current).
    pub fn install_keys(&self, name: Option<&str>, current: &AgentKey, next: &AgentKey) -> Result<()> {
        let key_path = match name {
            None => self.key_path(),
            Some(n) => self.agent_key_path(n)?,
        };
        replace_private_file(&key_path, &current.to_key_file_bytes())?;
        replace_private_file(&self.next_key_path(name)?, &next.to_key_file_bytes())?;
        replace_private_file(&self.commitment_path(name)?, &agora_core::key_commitment(&next.public_key()))
    }

    /// Load the agent key, refusing a file that others can read or write, or
    /// that has the wrong length.
    pub fn load_key(&self) -> Result<AgentKey> {
        self.with_commitment(None, load_key_file(&self.key_path())?)
    }

    fn with_commitment(&self, name: Option<&str>, key: AgentKey) -> Result<AgentKey> {
        Ok(match self.commitment(name)? {
            Some(c) => key.committing_to(c),
            None => key,
        })
    }

    /// The keyring's directory.
    pub fn agents_dir(&self) -> PathBuf {
        self.dir.join(AGENTS_DIR)
    }

    /// The key file of the named agent `name`.
    pub fn agent_key_path(&self, name: &str) -> Result<PathBuf> {
        if !valid_agent_name(name) {
            bail!("{name:?} is not an agent name: 1 to {AGENT_NAME_MAX} ASCII letters, digits, '-' or '_', starting with a letter or digit");
        }
        Ok(self.agents_dir().join(format!("{name}.key")))
    }

    /// The key of the agent a command acts as: the named agent of the
    /// keyring, or the home's own agent (`agent.key`) when none is named.
    /// Its commitment to a next key, if the home holds one, goes with it:
    /// the agent's chain makes it when it commits to none yet.
    pub fn load_agent_key(&self, name: Option<&str>) -> Result<AgentKey> {
        let Some(name) = name else { return self.load_key() };
        let path = self.agent_key_path(name)?;
        if !path.exists() {
            bail!("no agent named {name:?} in this home's keyring ({}); `agora agent new {name}` creates it", self.agents_dir().display());
        }
        self.with_commitment(Some(name), load_key_file(&path)?)
    }

    /// Create the named agent `name`: a new key in the keyring (mode 0600).
    /// An existing name is refused: a key is never overwritten.
    pub fn new_agent(&self, name: &str) -> Result<AgentKey> {
        let path = self.agent_key_path(name)?;
        if !self.dir.exists() {
            bail!("{} is not an Agora home; run `agora init` first", self.dir.display());
        }
        let dir = self.agents_dir();
        if !dir.exists() {
            std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).with_context(|| format!("setting mode 0700 on {}", dir.display()))?;
        if path.exists() {
            bail!("an agent named {name:?} exists already ({}); refusing to overwrite an agent key", path.display());
        }
        let mut seed = [0u8; KEY_FILE_BYTES];
        getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
        let key = AgentKey::from_seed(seed);
        seed.fill(0);
        write_private_file(&path, &key.to_key_file_bytes())?;
        let commitment = self.create_next_key(Some(name))?;
        Ok(key.committing_to(commitment))
    }

    /// The keyring's agents, by name (ascending), with their keys. A file
    /// of the directory that is not `<valid name>.key` is left out.
    pub fn agents(&self) -> Result<Vec<(String, AgentKey)>> {
        let dir = self.agents_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let file = entry.file_name();
            let Some(name) = file.to_str().and_then(|f| f.strip_suffix(".key")) else { continue };
            if valid_agent_name(name) {
                out.push((name.to_string(), self.with_commitment(Some(name), load_key_file(&entry.path())?)?));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
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
        bail!("key file {}: must be exactly {KEY_FILE_BYTES} or {ROTATED_KEY_FILE_BYTES} bytes, found {}", path.display(), meta.len());
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading key file {}", path.display()))?;
    AgentKey::from_key_file_bytes(&bytes).with_context(|| format!("key file {}", path.display()))
}

/// Replace the secret file `path` with `bytes`: written beside it (mode
/// 0600, synced), then renamed over it, so a crash leaves the old or the new.
pub fn replace_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("new");
    if tmp.exists() {
        std::fs::remove_file(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    write_private_file(&tmp, bytes)?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Create `path` (it must not exist) with mode 0600, write `bytes` and sync:
/// how every secret of a home (agent key, node key, control token) is written.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).with_context(|| format!("writing {}", path.display()))?;
    file.sync_all().with_context(|| format!("syncing {}", path.display()))
}
