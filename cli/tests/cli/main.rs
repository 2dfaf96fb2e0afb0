//! pith-cli's integration tests, one binary: the `pith` binary as a user runs it, one module
//! per way of using it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod differential;
mod export;
mod extension_check;
mod extension_trust;
mod extensions;
mod flags16;
mod full_disk;
mod hangup;
mod hostile;
mod interactive;
mod interactive_commands;
mod interactive_editor;
mod interactive_relayout;
mod kill;
mod kill_attached;
mod local_model;
mod mcp;
mod pi16_apis;
mod pi_opens_pith_files;
mod print;
mod rpc;
mod session_cmd;
mod skills_templates;
