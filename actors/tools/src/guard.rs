//! The child guard: long-lived children (extension processes, stdio MCP servers) never outlive
//! pith, even when pith is SIGKILLed (issue 13).
//!
//! Such a child notices pith's end only when it next reads its stdin (EOF); one busy in a
//! long call (an extension's tool sleeping, a synchronous MCP server mid-call) keeps running
//! for as long as the call takes. The kernel's `PR_SET_PDEATHSIG` would end it, but setting it
//! needs `pre_exec`, which is `unsafe` (forbidden in this workspace). So pith starts such a
//! child through itself: `pith __guard PROGRAM ARGS…` ([`ChildGuard::wrap`]). The guard
//! ([`run`]) spawns the program with its own stdio, working directory, environment and process
//! group (the guard leads the group pith created, so pith's group signals reach both), waits
//! for it, and checks every [`POLL`] whether its parent is still pith. When pith is gone it
//! sends the program SIGTERM, waits [`GRACE`], then SIGKILLs the whole group, itself
//! included: the stop sequence of spec extensions.md §1.2 "Lifecycle" step 4. When the program
//! ends first, the guard ends the same way (the exit status, or the same signal).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

/// The first argument that makes `pith` a guard.
pub const GUARD_ARG: &str = "__guard";

/// How often the guard checks that its parent is alive.
pub const POLL: Duration = Duration::from_millis(50);

/// How long the guarded program has to exit after SIGTERM before the group is SIGKILLed.
pub const GRACE: Duration = Duration::from_secs(2);

/// Starts long-lived children under the guard: the path of the `pith` executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildGuard {
    exe: PathBuf,
}

impl ChildGuard {
    /// A guard run by `exe` (the running `pith`, whose [`GUARD_ARG`] mode calls [`run`]).
    pub fn new(exe: PathBuf) -> ChildGuard {
        ChildGuard { exe }
    }

    /// The running executable as the guard, for the `pith` binary itself (which answers
    /// [`GUARD_ARG`]); `None` when the executable cannot be found (replaced on disk), and
    /// children then start directly.
    pub fn this_executable() -> Option<ChildGuard> {
        std::env::current_exe()
            .ok()
            .filter(|exe| exe.is_file())
            .map(ChildGuard::new)
    }

    /// The program and arguments that run `program args` under the guard.
    ///
    /// A program that cannot be found (a path naming no file, or a bare name on no `PATH`
    /// entry; `dir` is the child's working directory, `path_var` its `PATH`) is left as it is,
    /// so that spawning it fails with its own error, as without the guard.
    pub fn wrap(
        &self,
        program: &OsStr,
        args: Vec<OsString>,
        dir: &Path,
        path_var: Option<&OsStr>,
    ) -> (OsString, Vec<OsString>) {
        if !findable(program, dir, path_var) {
            return (program.to_owned(), args);
        }
        let mut wrapped = Vec::with_capacity(args.len() + 2);
        wrapped.push(OsString::from(GUARD_ARG));
        wrapped.push(program.to_owned());
        wrapped.extend(args);
        (self.exe.clone().into_os_string(), wrapped)
    }
}

/// Whether `program` names an existing file: a path (relative to `dir`), or a bare name found
/// on `path_var`.
fn findable(program: &OsStr, dir: &Path, path_var: Option<&OsStr>) -> bool {
    let p = Path::new(program);
    if p.components().count() > 1 || p.is_absolute() {
        return dir.join(p).is_file();
    }
    let Some(path_var) = path_var else {
        return false;
    };
    std::env::split_paths(path_var).any(|d| dir.join(d).join(p).is_file())
}

/// The guard's main: runs `argv` (program, then arguments) and returns the exit status to
/// exit with. It does not return when the program died of a signal (it dies of the same one)
/// or when its parent died (it SIGKILLs its own group).
pub fn run(argv: &[OsString]) -> i32 {
    let Some((program, args)) = argv.split_first() else {
        eprintln!("pith {GUARD_ARG}: no program given");
        return 2;
    };
    let parent = rustix::process::getppid();
    let mut child = match Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "pith {GUARD_ARG}: could not start {}: {e}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    loop {
        match rx.recv_timeout(POLL) {
            Ok(Ok(status)) => return exit_like(status),
            Ok(Err(e)) => {
                eprintln!("pith {GUARD_ARG}: could not wait for the program: {e}");
                return 1;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if rustix::process::getppid() != parent {
            stop(pid, &rx);
        }
    }
}

/// pith is gone: SIGTERM to the program, [`GRACE`] to exit, then SIGKILL to the group.
fn stop(pid: Option<Pid>, exited: &mpsc::Receiver<std::io::Result<ExitStatus>>) -> ! {
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, Signal::TERM);
    }
    let start = Instant::now();
    while start.elapsed() < GRACE {
        if exited.recv_timeout(POLL).is_ok() {
            break;
        }
    }
    // Whatever the program left in the group (its children), and the guard itself.
    let _ = rustix::process::kill_current_process_group(Signal::KILL);
    let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::KILL);
    std::process::exit(137)
}

/// The exit status for the program's `status`: its code, or (killed by a signal) the same
/// signal raised on the guard, so pith sees what it would have seen without the guard.
fn exit_like(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return code;
    }
    let raw = status.signal().unwrap_or(0);
    if let Some(signal) = Signal::from_named_raw(raw) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
    }
    128 + raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_findable_program_is_wrapped_and_a_missing_one_is_not() {
        let guard = ChildGuard::new(PathBuf::from("/opt/pith"));
        let path = OsString::from("/nonexistent:/bin:/usr/bin");
        let (program, args) = guard.wrap(
            OsStr::new("sh"),
            vec!["-c".into(), "true".into()],
            Path::new("/"),
            Some(&path),
        );
        assert_eq!(program, "/opt/pith");
        assert_eq!(args, ["__guard", "sh", "-c", "true"]);
        let (program, args) = guard.wrap(
            OsStr::new("/nonexistent/server"),
            vec!["x".into()],
            Path::new("/"),
            Some(&path),
        );
        assert_eq!(program, "/nonexistent/server");
        assert_eq!(args, ["x"]);
        let (program, _) = guard.wrap(
            OsStr::new("no-such-program-anywhere"),
            vec![],
            Path::new("/"),
            Some(&path),
        );
        assert_eq!(program, "no-such-program-anywhere");
    }
}
