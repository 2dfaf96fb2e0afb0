//! A terminal that goes away under a running pith (the window closed, the ssh connection
//! dropped): pith must end on its own, not sit on a core holding the session's lock. The
//! pseudo-terminal is made here rather than through rexpect, whose process owns the master
//! side and kills the child when it is dropped; closing the master is what hangs the terminal
//! up. pith is not made the terminal's session leader, so no SIGHUP comes: the hangup itself
//! must be noticed.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

use crate::interactive::{setup, text_reply};

/// Reads the master side into `seen` (answering cursor position queries) until `stop`.
fn read_master(master: File, seen: Arc<Mutex<String>>, stop: Arc<AtomicBool>) {
    let mut master = master;
    let mut buf = [0u8; 8192];
    while !stop.load(Ordering::SeqCst) {
        let ready = {
            let mut fds = [PollFd::new(&master, PollFlags::IN)];
            let timeout = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            poll(&mut fds, Some(&timeout)).unwrap_or(0)
        };
        if ready == 0 {
            continue;
        }
        let Ok(n) = master.read(&mut buf) else { break };
        if n == 0 {
            break;
        }
        let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
        if chunk.contains("\x1b[6n") {
            let _ = master.write_all(b"\x1b[1;1R");
        }
        seen.lock().unwrap().push_str(&chunk);
    }
}

fn wait_for(seen: &Mutex<String>, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !seen.lock().unwrap().contains(needle) {
        assert!(
            Instant::now() < deadline,
            "{needle:?} never appeared:\n{}",
            seen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pith_ends_when_its_terminal_hangs_up_while_the_tree_is_open() {
    let s = setup(&format!("[{}]", text_reply("the reply")));
    let master: OwnedFd =
        openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    rustix::termios::tcsetwinsize(
        &master,
        rustix::termios::Winsize {
            ws_row: 40,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .unwrap();
    let slave = File::options()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pith"));
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .arg("--faux-script")
        .arg(&s.script)
        .env("PITH_AGENT_DIR", &s.agent)
        .env("HOME", &s.root)
        .env("TERM", "xterm-256color")
        .current_dir(&s.work)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let master = File::from(master);
    let mut input = master.try_clone().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (seen, stop, master) = (seen.clone(), stop.clone(), master.try_clone().unwrap());
        std::thread::spawn(move || read_master(master, seen, stop))
    };
    wait_for(&seen, "faux-1");
    std::thread::sleep(Duration::from_millis(300));
    input.write_all(b"hello\r").unwrap();
    wait_for(&seen, "the reply");
    std::thread::sleep(Duration::from_millis(300));
    input.write_all(b"/tree\r").unwrap();
    wait_for(&seen, "Session Tree");

    // Close every handle on the master side: the terminal hangs up.
    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    drop(input);
    drop(master);

    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pith kept running 15 s after its terminal hung up");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Nothing typed before the hangup is lost.
    let sessions = s.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let text = std::fs::read_to_string(&sessions[0]).unwrap();
    assert!(
        text.contains("\"hello\"") && text.contains("the reply"),
        "{text}"
    );
    assert!(status.code().is_some(), "pith died of a signal: {status:?}");
}
