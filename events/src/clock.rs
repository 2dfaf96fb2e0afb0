//! The clock seam (STYLE: traits at the seams): pi's timestamps come from it, so tests and
//! replays can run on a deterministic one.

use std::sync::atomic::{AtomicI64, Ordering};

/// Wall-clock time in ms since the Unix epoch.
pub trait Clock: Send + Sync {
    /// Now, in ms since the epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        // Before the epoch is impossible on a sane machine; count it as the epoch.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that starts at a given instant and advances by `step_ms` on every reading.
#[derive(Debug)]
pub struct SteppingClock {
    next: AtomicI64,
    step_ms: i64,
}

impl SteppingClock {
    /// Starts at `start_ms`, advancing `step_ms` per call.
    pub fn new(start_ms: i64, step_ms: i64) -> SteppingClock {
        SteppingClock {
            next: AtomicI64::new(start_ms),
            step_ms,
        }
    }
}

impl Clock for SteppingClock {
    fn now_ms(&self) -> i64 {
        self.next.fetch_add(self.step_ms, Ordering::Relaxed)
    }
}
