//! An Agora home directory: where it is, its agent key and store
//! ([`home`]), and its configuration ([`config`]: `agora.toml`, and the
//! node's settings resolved from it and the command line), and the control
//! channel's token and default address kept between node runs
//! ([`control`]). Commands and the node both open homes through it; it
//! knows no command and no daemon.
#![forbid(unsafe_code)]

pub mod config;
pub mod control;
pub mod home;
