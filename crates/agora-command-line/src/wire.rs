//! The control channel's wire: a forwarded command (`POST /v1/command`: a
//! request line, then the command's standard input), the frames its output
//! comes back in, and the hello handshake's proof. Pure: no sockets, no
//! files. The client and the node's server both use these functions, so the
//! two cannot disagree. `protocol-spec` does not cover this channel: it is
//! local to one home (127.0.0.1, its owner's token), not between peers.

use crate::cli::Args;
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Largest standard input forwarded to a node (a pack piped into `import`).
pub const STDIN_BYTES_MAX: usize = 256 << 20;
/// Largest request line (the JSON arguments) before a command's input.
pub const COMMAND_LINE_BYTES_MAX: usize = 8 << 20;
/// Largest frame a client accepts from a node.
pub const FRAME_BYTES_MAX: usize = 64 << 20;
/// The header carrying a client's challenge to `GET /v1/hello`.
pub const CHALLENGE_HEADER: &str = "x-agora-challenge";
/// The header carrying the node's answer.
pub const PROOF_HEADER: &str = "x-agora-proof";

/// Frame kinds: standard output.
pub const FRAME_STDOUT: u8 = 1;
/// Standard error.
pub const FRAME_STDERR: u8 = 2;
/// The exit code (one byte).
pub const FRAME_EXIT: u8 = 3;

/// The first line of a `POST /v1/command` body (standard input follows).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    /// The arguments, program name first.
    pub argv: Vec<String>,
    /// The caller's working directory, against which relative paths resolve.
    pub cwd: PathBuf,
}

/// Why a request body was refused.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// No newline within [`COMMAND_LINE_BYTES_MAX`] bytes.
    #[error("no request line within {COMMAND_LINE_BYTES_MAX} bytes")]
    NoRequestLine,
    /// The request line is not a [`CommandRequest`].
    #[error("request line: {0}")]
    RequestLine(#[from] serde_json::Error),
}

/// Encode a request body: the request line, a newline, standard input.
pub fn encode_request(request: &CommandRequest, stdin: &[u8]) -> Vec<u8> {
    let mut body = serde_json::to_vec(request).expect("a command request serializes");
    body.push(b'\n');
    body.extend_from_slice(stdin);
    body
}

/// Split a request body into its request and the command's standard input.
/// Looks at most [`COMMAND_LINE_BYTES_MAX`] bytes for the line's end, so a
/// body without one costs no more than that.
pub fn decode_request(body: &[u8]) -> Result<(CommandRequest, &[u8]), RequestError> {
    let split = body.iter().take(COMMAND_LINE_BYTES_MAX).position(|b| *b == b'\n').ok_or(RequestError::NoRequestLine)?;
    let request: CommandRequest = serde_json::from_slice(&body[..split])?;
    Ok((request, &body[split + 1..]))
}

/// Parse a forwarded command line with the CLI's own grammar.
pub fn parse_args(argv: &[String]) -> Result<Args, clap::Error> {
    Args::try_parse_from(argv)
}

/// Encode one frame: kind, u32 big-endian length, bytes.
pub fn frame(kind: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + bytes.len());
    out.push(kind);
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
    out
}

/// Why a frame was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A kind that is not stdout, stderr or exit.
    #[error("unknown control frame kind {0}")]
    UnknownKind(u8),
    /// Longer than [`FRAME_BYTES_MAX`].
    #[error("control frame of {0} bytes from the node exceeds {FRAME_BYTES_MAX} bytes")]
    TooLong(usize),
}

/// A frame's head (its first five bytes): its kind and length, checked
/// before the client allocates room for the bytes.
pub fn frame_head(head: [u8; 5]) -> Result<(u8, usize), FrameError> {
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if !matches!(head[0], FRAME_STDOUT | FRAME_STDERR | FRAME_EXIT) {
        return Err(FrameError::UnknownKind(head[0]));
    }
    if len > FRAME_BYTES_MAX {
        return Err(FrameError::TooLong(len));
    }
    Ok((head[0], len))
}

/// The answer to a challenge that proves knowledge of `token`:
/// hex(SHA-256(`"agora-control-proof/1"` || token || challenge)).
pub fn proof(token: &str, challenge: &str) -> String {
    let mut bytes = b"agora-control-proof/1".to_vec();
    bytes.extend_from_slice(token.as_bytes());
    bytes.extend_from_slice(challenge.as_bytes());
    hex::encode(agora_core::sha256(&bytes))
}

/// Compare a presented token with the expected one in time independent of
/// where they differ.
pub fn token_matches(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_with_its_input() {
        let request = CommandRequest { argv: vec!["agora".into(), "--json".into(), "import".into(), "-".into()], cwd: "/tmp".into() };
        let body = encode_request(&request, b"line 1\nline 2\n");
        let (back, stdin) = decode_request(&body).unwrap();
        assert_eq!(back, request);
        assert_eq!(stdin, b"line 1\nline 2\n");
        assert!(parse_args(&back.argv).is_ok());
    }

    #[test]
    fn bad_bodies_are_refused_with_what_is_wrong() {
        assert!(matches!(decode_request(b"{\"argv\": []}"), Err(RequestError::NoRequestLine)));
        assert!(matches!(decode_request(b"not json\n"), Err(RequestError::RequestLine(_))));
        assert!(matches!(decode_request(b"{\"argv\": [1], \"cwd\": \"/\"}\n"), Err(RequestError::RequestLine(_))));
        let long = vec![b' '; COMMAND_LINE_BYTES_MAX + 1];
        assert!(matches!(decode_request(&long), Err(RequestError::NoRequestLine)));
    }

    #[test]
    fn frame_heads_are_checked_before_their_bytes_are_read() {
        let f = frame(FRAME_STDOUT, b"hello");
        assert_eq!(frame_head(f[..5].try_into().unwrap()), Ok((FRAME_STDOUT, 5)));
        assert_eq!(frame_head([9, 0, 0, 0, 1]), Err(FrameError::UnknownKind(9)));
        assert_eq!(frame_head([FRAME_STDERR, 0xff, 0xff, 0xff, 0xff]), Err(FrameError::TooLong(u32::MAX as usize)));
    }

    #[test]
    fn the_proof_binds_token_and_challenge() {
        assert_eq!(proof("t", "c"), proof("t", "c"));
        assert_ne!(proof("t", "c"), proof("t", "d"));
        assert_ne!(proof("t", "c"), proof("u", "c"));
        assert!(token_matches("abc", "abc") && !token_matches("abc", "abd") && !token_matches("ab", "abc"));
    }
}
