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

/// Runs `cmd` with its stdout closed before it writes anything (`pith … | head -c0`), and
/// returns what it exited with and wrote to stderr.
fn output_with_reader_gone(cmd: &mut std::process::Command) -> std::process::Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    drop(child.stdout.take());
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}
