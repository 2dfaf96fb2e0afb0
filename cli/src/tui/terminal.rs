//! Taking over the terminal for a full-screen view and giving it back on every exit path.
//!
//! [`Screen::enter`] switches to raw mode and the alternate screen; dropping the [`Screen`]
//! (normal return, `?` error, or unwinding panic) switches back. A process-wide panic hook,
//! installed once, restores the terminal *before* the panic message is printed, so the
//! message lands on the normal screen instead of vanishing with the alternate one.

use std::io::{IsTerminal, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyEvent, KeyEventKind};
use ratatui::crossterm::{cursor, execute, terminal};

/// Whether a [`Screen`] currently owns the terminal (read by the panic hook).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// The terminal in raw mode on the alternate screen; restored on drop.
pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// Checks that the views can run: keys come from stdin and the screen is stdout.
///
/// Errors: stdin or stdout is not a terminal.
pub fn require_tty() -> Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!("this view needs an interactive terminal: stdin and stdout must be a TTY");
    }
    Ok(())
}

/// Leaves raw mode and the alternate screen; safe to call when they were never entered.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        if KEEP_ALTERNATE.load(Ordering::SeqCst) {
            let _ = execute!(std::io::stdout(), cursor::Show);
        } else {
            let _ = execute!(
                std::io::stdout(),
                terminal::LeaveAlternateScreen,
                cursor::Show
            );
        }
        let _ = std::io::stdout().flush();
    }
}

/// Set while the interactive mode's full-screen layout owns the alternate screen: a view
/// draws there and leaves it as it is, instead of switching screens under that layout (a
/// second switch would also overwrite the cursor position saved for the normal screen).
static KEEP_ALTERNATE: AtomicBool = AtomicBool::new(false);

/// Tells the views whether the alternate screen is the interactive mode's already.
pub fn keep_alternate_screen(on: bool) {
    KEEP_ALTERNATE.store(on, Ordering::SeqCst);
}

impl Screen {
    /// Takes over the terminal.
    ///
    /// Errors: stdin or stdout is not a terminal (the views need a TTY to read keys from and
    /// draw on), or the terminal refuses raw mode.
    pub fn enter() -> Result<Screen> {
        require_tty()?;
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        terminal::enable_raw_mode().context("cannot switch the terminal to raw mode")?;
        ACTIVE.store(true, Ordering::SeqCst);
        // From here on the guard exists, so any failure below still restores the terminal.
        let mut stdout = std::io::stdout();
        let guard_on_error = scopeguard_restore();
        // Cleared too: in full-screen mode the alternate screen is pith's already, and the
        // view draws only the cells it fills.
        if KEEP_ALTERNATE.load(Ordering::SeqCst) {
            // The view draws only the cells it fills: what full-screen mode drew goes.
            execute!(
                stdout,
                terminal::Clear(terminal::ClearType::All),
                cursor::Hide
            )
            .context("cannot clear the screen")?;
        } else {
            execute!(stdout, terminal::EnterAlternateScreen, cursor::Hide)
                .context("cannot enter the alternate screen")?;
        }
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))
            .context("cannot set up the terminal")?;
        std::mem::forget(guard_on_error);
        Ok(Screen { terminal })
    }

    /// The ratatui terminal to draw on.
    pub fn terminal(&mut self) -> &mut Terminal<CrosstermBackend<Stdout>> {
        &mut self.terminal
    }

    /// Draws `lines` as the whole view and waits up to 250 ms for a key: `None` when none
    /// came (or the terminal was resized), time to draw again.
    ///
    /// Errors: drawing or reading the terminal failed.
    pub fn show(&mut self, lines: Vec<ratatui::text::Line<'static>>) -> Result<Option<KeyEvent>> {
        self.terminal.draw(|frame| {
            frame.render_widget(ratatui::widgets::Paragraph::new(lines), frame.area())
        })?;
        next_key(Duration::from_millis(250))
    }

    /// The terminal size as (columns, rows).
    ///
    /// Errors: the size cannot be read.
    pub fn size(&self) -> Result<(u16, u16)> {
        let s = self
            .terminal
            .size()
            .context("cannot read the terminal size")?;
        Ok((s.width, s.height))
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Restores the terminal when dropped, unless forgotten: covers the steps of
/// [`Screen::enter`] between raw mode and a finished [`Screen`].
fn scopeguard_restore() -> impl Drop {
    struct Guard;
    impl Drop for Guard {
        fn drop(&mut self) {
            restore();
        }
    }
    Guard
}

/// Waits up to `timeout` for a key press. Releases and repeats from terminals that report
/// them are dropped; a resize returns `Ok(None)` so the caller redraws.
///
/// Errors: reading the terminal failed, or it hung up.
pub fn next_key(timeout: Duration) -> Result<Option<KeyEvent>> {
    if !poll_event(timeout)? {
        return Ok(None);
    }
    match event::read().context("cannot read the terminal")? {
        Event::Key(key) if key.kind == KeyEventKind::Press => Ok(Some(key)),
        _ => Ok(None),
    }
}

/// Waits up to `timeout` for an event, as crossterm's `event::poll` does, but fails when the
/// terminal has hung up (its window closed, the ssh connection dropped) instead of entering
/// crossterm, which then spins on a core forever: a hung-up terminal reads as end-of-file
/// and polls as always ready, and crossterm 0.29 reads again until it would block. stdin is
/// polled here first, and crossterm is only asked once input (or the timeout, for a pending
/// resize) is there.
///
/// Errors: the terminal hung up, or reading it failed.
pub fn poll_event(timeout: Duration) -> Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let wait = |t: Duration| -> Result<()> {
        let stdin = std::io::stdin();
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        let t = Timespec::try_from(t).unwrap_or(Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        });
        match poll(&mut fds, Some(&t)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e).context("cannot read the terminal"),
        }
        if fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL)
        {
            bail!("the terminal hung up");
        }
        Ok(())
    };
    // Events crossterm has read but not yet handed out come first.
    wait(Duration::ZERO)?;
    if event::poll(Duration::ZERO).context("cannot read the terminal")? {
        return Ok(true);
    }
    wait(timeout)?;
    event::poll(Duration::ZERO).context("cannot read the terminal")
}
