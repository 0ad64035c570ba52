//! The front ends for programs and people over Agora's command API
//! (`agora-commands`): the Model Context Protocol server ([`mcp`]), the JSON
//! API with its OpenAPI document ([`http_api`]) and the live graph page
//! ([`live_page`]).
//!
//! Each one lists or runs the operations of `agora_commands::ops` through a
//! [`Backend`](agora_commands::ops::Backend) the caller gives it: `agora mcp`
//! gives the home (commands forwarded to its node, or run on its store); a
//! running node gives its open store. Nothing here adds a rule, opens a store
//! or knows the daemon: a front end turns a protocol's request into an
//! operation's input and its result into the protocol's answer. The caller
//! mounts the routes and puts them behind its token.
#![forbid(unsafe_code)]

pub mod http_api;
pub mod live_page;
pub mod mcp;
