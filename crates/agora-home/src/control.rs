//! The control channel's two settings a home keeps between node runs, so
//! that a client's configuration (an MCP client's URL and bearer token, a
//! script's header file) stays good across restarts:
//!
//! - **The token**, in `<home>/control.token` (mode 0600), made once from
//!   the OS random source at the node's first start (or by `agora token
//!   show`), and replaced only by `agora token rotate`. A node may be given
//!   another file instead (`--token-file`, `AGORA_TOKEN_FILE`, `token_file`
//!   in agora.toml): a container's mounted secret. A running node reads the
//!   file again whenever it changes, so a rotation takes effect at once.
//! - **The default control address**: 127.0.0.1 with a port picked free at
//!   the first start without a setting, kept in `<home>/control.address`, so
//!   several homes of one machine never collide and a restart keeps the
//!   endpoint.

use anyhow::{Context, Result, bail};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The home's own token file.
pub const TOKEN_FILE: &str = "control.token";
/// Where the default control address is kept.
pub const CONTROL_ADDRESS_FILE: &str = "control.address";
/// The control address a home uses when nothing is set and it has none
/// kept yet: loopback, a free port (then kept).
pub const CONTROL_DEFAULT: &str = "127.0.0.1:0";
/// Bounds of a token's length: 32 characters is 128 bits in hex, the least
/// a given secret may hold; a made one is 64 hex digits.
pub const TOKEN_CHARS: std::ops::RangeInclusive<usize> = 32..=512;

/// Characters a token may hold: they go into an HTTP header and a
/// WebSocket subprotocol name (`agora-token.<token>`), so no space, `/` or `=`.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

/// The token file a node of `home` reads when none is given.
pub fn home_token_file(home: &Path) -> PathBuf {
    home.join(TOKEN_FILE)
}

/// A new token: 32 bytes of the OS random source, hex.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
    let mut token = String::with_capacity(64);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(token, "{b:02x}");
    }
    Ok(token)
}

/// A token file's text: the token, with surrounding white space (a final
/// newline) ignored.
pub fn parse_token(text: &str, path: &Path) -> Result<String> {
    let token = text.trim();
    if !TOKEN_CHARS.contains(&token.len()) || !token.chars().all(token_char) {
        bail!(
            "the control token in {} must be {} to {} characters of A-Z, a-z, 0-9, '-', '.', '_' or '~' (make one with `openssl rand -hex 32`)",
            path.display(),
            TOKEN_CHARS.start(),
            TOKEN_CHARS.end()
        );
    }
    Ok(token.to_string())
}

/// Read the token from `path`.
pub fn read_token(path: &Path) -> Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("reading the control token file {}", path.display()))?;
    let mut text = String::new();
    file.take(*TOKEN_CHARS.end() as u64 + 64).read_to_string(&mut text).with_context(|| format!("reading the control token file {}", path.display()))?;
    parse_token(&text, path)
}

/// The token of a node: read from `given` (a file the operator made, any
/// mode), or from the home's own file, made now with mode 0600 if missing
/// and refused if others may read it.
pub fn load_or_create_token(home: &Path, given: Option<&Path>) -> Result<(String, PathBuf)> {
    if let Some(path) = given {
        return Ok((read_token(path)?, path.to_path_buf()));
    }
    let path = home_token_file(home);
    match std::fs::metadata(&path) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                bail!("control token file {} has mode {mode:04o}: other users can access it; run `chmod 600 {}`", path.display(), path.display());
            }
            Ok((read_token(&path)?, path))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = new_token()?;
            crate::home::write_private_file(&path, format!("{token}\n").as_bytes())?;
            Ok((token, path))
        }
        Err(e) => Err(e).with_context(|| format!("reading the control token file {}", path.display())),
    }
}

/// Replace the token in `path` at once (a new file, mode 0600, renamed over
/// the old one): a reader sees the old token or the new one, never part.
pub fn write_token(path: &Path, token: &str) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().with_context(|| format!("{} names no file", path.display()))?;
    let tmp = dir.join(format!(".{}.new", name.to_string_lossy()));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("creating {} (a token given as a read-only file is rotated by replacing that file)", tmp.display()))?;
    file.write_all(format!("{token}\n").as_bytes()).with_context(|| format!("writing {}", tmp.display()))?;
    file.sync_all().with_context(|| format!("syncing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// What identifies a version of a file cheaply: device, inode, length,
/// modification and change times. A replacement by rename changes the
/// inode; a rewrite in place changes the times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp([i64; 7]);

/// The stamp of `path` now, `None` when it cannot be read.
pub fn stamp(path: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(FileStamp([m.dev() as i64, m.ino() as i64, m.len() as i64, m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()]))
}

/// The control address this home used last by default, if any.
pub fn kept_control_address(home: &Path) -> Result<Option<SocketAddr>> {
    let path = home.join(CONTROL_ADDRESS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map(Some).with_context(|| format!("{} does not hold ADDR:PORT; delete it to pick a new free port", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Keep `addr` as this home's default control address.
pub fn keep_control_address(home: &Path, addr: SocketAddr) -> Result<()> {
    let path = home.join(CONTROL_ADDRESS_FILE);
    let tmp = home.join(format!(".{CONTROL_ADDRESS_FILE}.new"));
    let _ = std::fs::remove_file(&tmp);
    crate::home::write_private_file(&tmp, format!("{addr}\n").as_bytes())?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_token_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (token, path) = load_or_create_token(dir.path(), None).unwrap();
        assert_eq!(path, dir.path().join(TOKEN_FILE));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load_or_create_token(dir.path(), None).unwrap().0, token);
        let before = stamp(&path).unwrap();
        write_token(&path, &"a".repeat(40)).unwrap();
        assert_ne!(stamp(&path), Some(before));
        assert_eq!(read_token(&path).unwrap(), "a".repeat(40));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(format!("{:#}", load_or_create_token(dir.path(), None).unwrap_err()).contains("chmod 600"));
    }

    #[test]
    fn a_given_token_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        for bad in ["short", &"a b".repeat(20), &"x/".repeat(20), &"z".repeat(600)] {
            std::fs::write(&path, bad).unwrap();
            assert!(format!("{:#}", load_or_create_token(dir.path(), Some(&path)).unwrap_err()).contains("openssl rand -hex 32"), "{bad}");
        }
        std::fs::write(&path, format!("{}\n", "0123456789abcdef".repeat(4))).unwrap();
        assert_eq!(load_or_create_token(dir.path(), Some(&path)).unwrap().0, "0123456789abcdef".repeat(4));
        assert!(!dir.path().join(TOKEN_FILE).exists(), "a given file is used instead of the home's");
    }

    #[test]
    fn the_default_address_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(kept_control_address(dir.path()).unwrap(), None);
        let addr: SocketAddr = "127.0.0.1:45678".parse().unwrap();
        keep_control_address(dir.path(), addr).unwrap();
        assert_eq!(kept_control_address(dir.path()).unwrap(), Some(addr));
        std::fs::write(dir.path().join(CONTROL_ADDRESS_FILE), "nope").unwrap();
        assert!(format!("{:#}", kept_control_address(dir.path()).unwrap_err()).contains("delete it"));
    }
}
