//! How a browser gets into the live page without ever holding the control
//! token.
//!
//! The token drives everything (writes, commands, the MCP tools), and a
//! browser keeps what it is given where other local pages can reach it:
//! cookies are scoped by host, not port, so a cookie set by
//! `127.0.0.1:PORT` is sent to every server on 127.0.0.1 whose path it
//! matches. So the page gets its own secret, which opens less, and is sent
//! to fewer places:
//!
//! - **A login code** ([`LOGIN_CODE_TTL`], one use): `agora open` asks the
//!   node for one with the token (`POST /v1/page/code`) and hands it to the
//!   browser in a file of the home (mode 0600), never in a command line; a
//!   browser posts it to `/v1/page/session`.
//! - **A page session** ([`PAGE_SESSION_TTL`], at most
//!   [`PAGE_SESSIONS_MAX`]): what the code is exchanged for, set as the
//!   cookie `agora_page_<port>`: HttpOnly (no script reads it), SameSite
//!   Strict (no other site's page sends it), and with the path of this
//!   node's run, `/page/<32 random hex digits>/`, under which the page and
//!   its reads are served. A server on another port of 127.0.0.1 is sent the
//!   cookie only for a request under that path, which it cannot know.
//! - **What a session opens**: the page's files, the read operations of the
//!   JSON API, the change stream and the automerge-repo WebSocket, all under
//!   the path. No write, no command, no MCP, no status: those take the
//!   token.
//!
//! Why this way, and not another:
//!
//! - *The token, or any replayable secret, in the browser's command line*
//!   (a URL with `#token=` or `#code=`): every local user reads every
//!   process's arguments (`/proc/<pid>/cmdline`, `ps`). A one-time code
//!   there does not help: a process polling `/proc` sees the opener's
//!   arguments within milliseconds, long before a browser has started, and
//!   spends the code first. So the command line carries only a path, and
//!   the code is in a file only the owner can read (0600, in the owner's
//!   home). The path is no secret; the file's contents are, for a minute.
//! - *The token in a cookie*: cookies are scoped by host, not port, so any
//!   server on 127.0.0.1 that a browser visits can be sent it; and a token
//!   opens writes. The session opens reads, and only its own path gets it.
//! - *The page keeping a secret in script-readable storage*: any script in
//!   the page (or injected into it) could read it; an HttpOnly cookie no
//!   script reads, and the browser attaches it only to the page's path.
//!
//! What it does not defend against: a process running as the owner (it
//! can read `node.json` anyway), and a browser or extension that hands its
//! cookies out. A browser confined away from hidden directories (some
//! sandboxed packages) cannot open the file: `agora open` also prints the
//! code as a URL, on the owner's terminal, for a browser started by hand.

use agora_commands::control::token_matches;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a login code may wait for its browser: long enough for a
/// browser to start on a loaded desktop, short enough that a code left in
/// the home's `open.html` is dead soon after.
pub const LOGIN_CODE_TTL: Duration = Duration::from_secs(60);
/// Codes outstanding at once; a new one past this drops the oldest.
pub const LOGIN_CODES_MAX: usize = 8;
/// How long a page session lasts: a working day; then `agora open` again.
pub const PAGE_SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Page sessions at once (browsers, tabs logged in separately); a new one
/// past this ends the oldest.
pub const PAGE_SESSIONS_MAX: usize = 16;

/// 32 bytes from the OS random source, hex.
fn random_hex(bytes: usize) -> anyhow::Result<String> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("OS random source failed: {e}"))?;
    Ok(hex::encode(b))
}

/// Secrets with an expiry, at most `max`, oldest first.
struct Expiring {
    max: usize,
    items: VecDeque<(String, Instant)>,
}

impl Expiring {
    fn new(max: usize) -> Self {
        Self { max, items: VecDeque::new() }
    }

    fn add(&mut self, secret: String, until: Instant, now: Instant) {
        self.items.retain(|(_, t)| *t > now);
        while self.items.len() >= self.max {
            self.items.pop_front();
        }
        self.items.push_back((secret, until));
    }

    /// Where `secret` is among the live ones. Every entry is compared, in
    /// time independent of where a comparison fails.
    fn find(&self, secret: &str, now: Instant) -> Option<usize> {
        let mut found = None;
        for (i, (s, until)) in self.items.iter().enumerate() {
            if token_matches(secret, s) && *until > now {
                found = Some(i);
            }
        }
        found
    }
}

/// The node's page secrets.
pub struct PageAccess {
    /// `/page/<32 hex digits>`: where the page and its reads are served,
    /// new on each run.
    pub prefix: String,
    /// `agora_page_<control port>`: two nodes of one host keep their own.
    pub cookie_name: String,
    codes: Mutex<Expiring>,
    sessions: Mutex<Expiring>,
}

impl PageAccess {
    pub fn new(control_port: u16) -> anyhow::Result<Self> {
        Ok(Self {
            prefix: format!("/page/{}", random_hex(16)?),
            cookie_name: format!("agora_page_{control_port}"),
            codes: Mutex::new(Expiring::new(LOGIN_CODES_MAX)),
            sessions: Mutex::new(Expiring::new(PAGE_SESSIONS_MAX)),
        })
    }

    /// A new login code, good once within [`LOGIN_CODE_TTL`].
    pub fn issue_code(&self, now: Instant) -> anyhow::Result<String> {
        let code = random_hex(32)?;
        self.codes.lock().unwrap_or_else(|p| p.into_inner()).add(code.clone(), now + LOGIN_CODE_TTL, now);
        Ok(code)
    }

    /// Exchange a live code (used up here) for a new page session.
    pub fn redeem(&self, code: &str, now: Instant) -> anyhow::Result<Option<String>> {
        {
            let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
            let Some(i) = codes.find(code, now) else { return Ok(None) };
            codes.items.remove(i);
        }
        let session = random_hex(32)?;
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).add(session.clone(), now + PAGE_SESSION_TTL, now);
        Ok(Some(session))
    }

    /// Is this a live page session?
    pub fn session_valid(&self, session: &str, now: Instant) -> bool {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).find(session, now).is_some()
    }

    /// The `Set-Cookie` value for a session.
    pub fn cookie(&self, session: &str) -> String {
        format!("{}={session}; HttpOnly; SameSite=Strict; Path={}/", self.cookie_name, self.prefix)
    }

    /// The session a request's `Cookie` headers carry for this node, if any.
    pub fn session_of<'a>(&self, cookies: impl Iterator<Item = &'a str>) -> Option<&'a str> {
        cookies.flat_map(|v| v.split(';')).find_map(|c| c.trim().strip_prefix(self.cookie_name.as_str())?.strip_prefix('='))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_opens_one_session_once_and_expires() {
        let access = PageAccess::new(4242).unwrap();
        let t0 = Instant::now();
        let code = access.issue_code(t0).unwrap();
        assert_eq!(access.redeem("0123", t0).unwrap(), None, "an unknown code");
        let session = access.redeem(&code, t0 + Duration::from_secs(1)).unwrap().expect("a session");
        assert_ne!(session, code);
        assert_eq!(access.redeem(&code, t0 + Duration::from_secs(2)).unwrap(), None, "a code is good once");
        assert!(access.session_valid(&session, t0 + Duration::from_secs(3)));
        assert!(!access.session_valid(&code, t0), "a code is no session");
        assert!(!access.session_valid(&session, t0 + PAGE_SESSION_TTL + Duration::from_secs(1)), "sessions end");
        let late = access.issue_code(t0).unwrap();
        assert_eq!(access.redeem(&late, t0 + LOGIN_CODE_TTL).unwrap(), None, "codes expire");
    }

    #[test]
    fn codes_and_sessions_are_bounded_oldest_out() {
        let access = PageAccess::new(1).unwrap();
        let now = Instant::now();
        let codes: Vec<String> = (0..LOGIN_CODES_MAX + 1).map(|_| access.issue_code(now).unwrap()).collect();
        assert_eq!(access.redeem(&codes[0], now).unwrap(), None, "the oldest code was dropped");
        let sessions: Vec<String> = codes[1..].iter().map(|c| access.redeem(c, now).unwrap().unwrap()).collect();
        let more: Vec<String> = (0..PAGE_SESSIONS_MAX).map(|_| access.redeem(&access.issue_code(now).unwrap(), now).unwrap().unwrap()).collect();
        assert!(!access.session_valid(&sessions[0], now), "the oldest session ended");
        assert!(more.iter().all(|s| access.session_valid(s, now)));
    }

    #[test]
    fn the_cookie_is_bound_to_the_port_and_the_run() {
        let access = PageAccess::new(4242).unwrap();
        let cookie = access.cookie("abcd");
        assert!(cookie.starts_with("agora_page_4242=abcd; HttpOnly; SameSite=Strict; Path=/page/"), "{cookie}");
        assert_eq!(access.prefix.len(), "/page/".len() + 32);
        assert_eq!(access.session_of(["x=1; agora_page_4242=abcd", "agora_page_1=zz"].into_iter()), Some("abcd"));
        assert_eq!(access.session_of(["agora_page_42420=abcd"].into_iter()), None);
    }
}
