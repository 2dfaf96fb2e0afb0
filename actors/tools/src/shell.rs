//! Running one shell command as pi's `createLocalBashOperations().exec` does: pi's shell
//! resolution, the command in its own session and process group (Node's `detached: true`),
//! stdout and stderr streamed as they come, the whole group killed with SIGKILL on timeout or
//! abort, and at most 100 ms spent waiting for pipes that background children keep open.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::node_error;

/// pi's `shellPath` and `shellCommandPrefix` settings, shared by the bash tool and user bash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellConfig {
    /// A shell to use instead of pi's resolution (`/bin/bash`, `bash` on `PATH`, `sh`); it is
    /// run as `<shell> -c <command>`.
    pub shell_path: Option<PathBuf>,
    /// Prepended to every command with a newline (e.g. `shopt -s expand_aliases`).
    pub command_prefix: Option<String>,
}

impl ShellConfig {
    /// `command` with the prefix applied, as pi builds it.
    pub fn apply_prefix(&self, command: &str) -> String {
        match self.command_prefix.as_deref() {
            Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{command}"),
            _ => command.to_owned(),
        }
    }
}

/// Why a command could not run; the texts are pi's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShellError {
    /// The working directory is gone.
    #[error("Working directory does not exist: {0}\nCannot execute bash commands.")]
    MissingCwd(String),
    /// `shell_path` names no file.
    #[error("Custom shell path not found: {0}")]
    ShellNotFound(String),
    /// The shell could not be started (Node's `spawn <shell> <CODE>`).
    #[error("{0}")]
    Spawn(String),
    /// Waiting for the shell failed.
    #[error("{0}")]
    Wait(String),
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecEnd {
    /// It exited; `None` when a signal killed it (Node's `null` exit code).
    Exited(Option<i64>),
    /// The abort flag was raised (checked first, as pi does).
    Aborted,
    /// The timeout fired and the group was killed.
    TimedOut,
}

/// After the shell exits, how long pipes held open by its background children are still read.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);

/// Runs `command` in `cwd`, sending output chunks (stdout and stderr as they arrive) to `out`.
/// `timeout` is in seconds; `None` or not positive means none. The sender is dropped when this
/// returns, so a reader knows the output is complete.
pub(crate) async fn exec(
    command: &str,
    cwd: &Path,
    shell_path: Option<&Path>,
    timeout: Option<f64>,
    abort: CancellationToken,
    out: mpsc::UnboundedSender<Vec<u8>>,
) -> Result<ExecEnd, ShellError> {
    let (shell, args) = resolve_shell(shell_path).await?;
    if !cwd.exists() {
        return Err(ShellError::MissingCwd(cwd.display().to_string()));
    }
    let mut cmd = tokio::process::Command::new(&shell);
    cmd.args(args)
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
    #[cfg(unix)]
    wrap.wrap(process_wrap::tokio::ProcessSession);
    let mut child = wrap.spawn().map_err(|e| {
        let code = node_error::code_and_description(&e).map_or("UNKNOWN", |(c, _)| c);
        ShellError::Spawn(format!("spawn {} {code}", shell.display()))
    })?;
    let mut group = GroupGuard { pid: child.id() };
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout().take(), child.stderr().take())
    else {
        group.kill();
        return Err(ShellError::Spawn("spawn: no output pipes".to_owned()));
    };

    let timeout_at = timeout
        .filter(|t| *t > 0.0)
        .and_then(|t| Duration::try_from_secs_f64(t).ok())
        .and_then(|d| Instant::now().checked_add(d));
    let mut timed_out = false;
    let mut killed_on_abort = false;
    let (mut out_buf, mut err_buf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let (mut out_open, mut err_open) = (true, true);
    let mut status: Option<Option<i64>> = None;
    let mut grace_until: Option<Instant> = None;
    loop {
        if status.is_some() && !out_open && !err_open {
            break;
        }
        // Biased so that stdout wins over stderr when both are ready (as Node's event loop
        // reports them), and the rare events go first so a flood of output cannot starve
        // them.
        tokio::select! {
            biased;
            () = abort.cancelled(), if !killed_on_abort => {
                group.kill();
                killed_on_abort = true;
            }
            _ = sleep_until(timeout_at.unwrap_or_else(Instant::now)),
                if timeout_at.is_some() && !timed_out && status.is_none() => {
                timed_out = true;
                group.kill();
            }
            _ = sleep_until(grace_until.unwrap_or_else(Instant::now)), if grace_until.is_some() => break,
            r = child.wait(), if status.is_none() => {
                let exit = r.map_err(|e| ShellError::Wait(e.to_string()))?;
                status = Some(exit.code().map(i64::from));
                grace_until = Some(Instant::now() + EXIT_STDIO_GRACE);
                // Background children of a finished command live on, as under pi.
                group.pid = None;
            }
            r = stdout.read(&mut out_buf), if out_open => match r {
                Ok(n) if n > 0 => { let _ = out.send(out_buf[..n].to_vec()); }
                _ => out_open = false,
            },
            r = stderr.read(&mut err_buf), if err_open => match r {
                Ok(n) if n > 0 => { let _ = out.send(err_buf[..n].to_vec()); }
                _ => err_open = false,
            },
        }
    }
    let code = status.flatten();
    Ok(if abort.is_cancelled() {
        ExecEnd::Aborted
    } else if timed_out {
        ExecEnd::TimedOut
    } else {
        ExecEnd::Exited(code)
    })
}

/// pi's `getShellConfig` on Unix: the configured shell (must exist), else `/bin/bash`, else
/// `bash` found by `which`, else `sh`; always with `-c`.
async fn resolve_shell(custom: Option<&Path>) -> Result<(PathBuf, [&'static str; 1]), ShellError> {
    if let Some(path) = custom {
        if path.exists() {
            return Ok((path.to_path_buf(), ["-c"]));
        }
        return Err(ShellError::ShellNotFound(path.display().to_string()));
    }
    let bin_bash = Path::new("/bin/bash");
    if bin_bash.exists() {
        return Ok((bin_bash.to_path_buf(), ["-c"]));
    }
    let found = tokio::process::Command::new("which")
        .arg("bash")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .lines()
                .next()
                .map(PathBuf::from)
        });
    Ok((found.unwrap_or_else(|| PathBuf::from("sh")), ["-c"]))
}

/// Kills the command's process group when the command is stopped, or when the future running
/// it is dropped before the command finished (so no orphaned group outlives its caller).
struct GroupGuard {
    /// The group leader's pid (the group id, since the shell leads its own session); `None`
    /// once the shell has exited.
    pid: Option<u32>,
}

impl GroupGuard {
    /// SIGKILL to the whole group, falling back to the shell alone, as pi's `killProcessTree`.
    fn kill(&self) {
        let Some(raw) = self.pid.and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process, kill_process_group};
            if let Some(pid) = Pid::from_raw(raw)
                && kill_process_group(pid, Signal::KILL).is_err()
            {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        #[cfg(not(unix))]
        let _ = raw;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
