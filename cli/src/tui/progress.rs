//! A progress bar on stderr for long work (listing thousands of sessions), shown only when
//! stderr is a terminal and the work is big enough to be worth one.
//!
//! Never use it while a full-screen view owns the terminal: the bar would draw over the view.
//! The views show their own progress in their header instead (pi's `Loading 12/300`).

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Below this many items no bar is drawn: the work is over before one would be seen.
const MIN_ITEMS: usize = 200;

/// A lazily created bar: nothing is drawn until [`Progress::update`] reports a total of at
/// least [`MIN_ITEMS`] while stderr is a terminal. Shareable across the reading threads.
pub struct Progress {
    message: &'static str,
    enabled: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Progress {
    /// A bar labelled `message` (e.g. `"Loading sessions"`), drawn only on a terminal.
    pub fn new(message: &'static str) -> Progress {
        Progress::with_enabled(message, std::io::stderr().is_terminal())
    }

    fn with_enabled(message: &'static str, enabled: bool) -> Progress {
        Progress {
            message,
            enabled,
            bar: Mutex::new(None),
        }
    }

    /// Reports `done` of `total` items; the signature fits `pith_store`'s `progress`
    /// callbacks.
    pub fn update(&self, done: usize, total: usize) {
        if !self.enabled || total < MIN_ITEMS {
            return;
        }
        let Ok(mut bar) = self.bar.lock() else { return };
        // Work that is already done (every file served from the listing index) needs no bar.
        if bar.is_none() && done >= total {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(10),
            );
            if let Ok(style) =
                ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta} left)")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(self.message);
            bar
        });
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    }

    /// Removes the bar from the screen (also done on drop).
    pub fn finish(&self) {
        if let Ok(mut bar) = self.bar.lock()
            && let Some(bar) = bar.take()
        {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_or_small_job_draws_no_bar() {
        let hidden = Progress::with_enabled("x", false);
        hidden.update(10, 5000);
        assert!(hidden.bar.lock().is_ok_and(|b| b.is_none()));
        // Enabled but small: still nothing.
        let small = Progress::with_enabled("x", true);
        small.update(3, 10);
        assert!(small.bar.lock().is_ok_and(|b| b.is_none()));
        // Big but already complete (an index hit for every file): nothing either.
        let cached = Progress::with_enabled("x", true);
        cached.update(5000, 5000);
        assert!(cached.bar.lock().is_ok_and(|b| b.is_none()));
    }

    #[test]
    fn a_big_job_gets_a_bar_that_follows_the_counts() {
        let p = Progress::with_enabled("Loading sessions", true);
        p.update(0, 1000);
        p.update(250, 1000);
        let pos = p
            .bar
            .lock()
            .ok()
            .and_then(|b| b.as_ref().map(|b| (b.position(), b.length())));
        assert_eq!(pos, Some((250, Some(1000))));
        p.finish();
        assert!(p.bar.lock().is_ok_and(|b| b.is_none()));
    }
}
