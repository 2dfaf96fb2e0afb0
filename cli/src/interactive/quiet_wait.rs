//! Waiting for a summary while the editor is not reading (a `/tree` branch summary): keys
//! typed meanwhile are neither echoed nor kept, except Esc, Ctrl+C and Ctrl+D, which cancel
//! the wait (pi's `abortBranchSummary` on Esc).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::oneshot;

/// The terminal without echo and line editing, restored (and unread keys dropped) on drop.
pub struct QuietInput {
    saved: Option<rustix::termios::Termios>,
}

impl QuietInput {
    /// Turns echo and canonical mode off; nothing happens when stdin is not a terminal.
    pub fn new() -> QuietInput {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        let saved = tcgetattr(std::io::stdin()).ok();
        if let Some(mut quiet) = saved.clone() {
            quiet.local_modes &= !(LocalModes::ECHO | LocalModes::ICANON);
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &quiet);
        }
        QuietInput { saved }
    }

    /// Watches the keys typed from now on: the receiver fires at the first Esc, Ctrl+C (when
    /// it arrives as a key) or Ctrl+D. Other keys are read and dropped, as they would be on
    /// drop. The watch ends with the returned guard.
    pub fn watch_cancel_keys(&self) -> (KeyWatch, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let stop = Arc::new(AtomicBool::new(false));
        if self.saved.is_some() {
            let stop = stop.clone();
            std::thread::spawn(move || watch(&stop, tx));
        }
        (KeyWatch { stop }, rx)
    }
}

impl Drop for QuietInput {
    fn drop(&mut self) {
        use rustix::termios::{OptionalActions, QueueSelector, tcflush, tcsetattr};
        if let Some(saved) = &self.saved {
            let _ = tcflush(std::io::stdin(), QueueSelector::IFlush);
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, saved);
        }
    }
}

/// Ends the key watch when dropped.
pub struct KeyWatch {
    stop: Arc<AtomicBool>,
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Polls stdin every 20 ms until `stop`, so the thread never holds a read the editor needs
/// afterwards.
fn watch(stop: &AtomicBool, cancel: oneshot::Sender<()>) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&tick)) {
            Ok(n) if n > 0 && !stop.load(Ordering::Relaxed) => {}
            Ok(_) => continue,
            Err(_) => return,
        }
        match rustix::io::read(&stdin, &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                // Esc, Ctrl+C, Ctrl+D.
                if buf[..n].iter().any(|b| matches!(b, 0x1b | 0x03 | 0x04)) {
                    let _ = cancel.send(());
                    return;
                }
            }
        }
    }
}
