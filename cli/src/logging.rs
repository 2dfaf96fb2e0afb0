//! Where pith's diagnostics go: errors and warnings to a rotated log file under the agent
//! directory (`<agent dir>/logs/pith.log.YYYY-MM-DD`, one file a day, the last 7 kept), and to
//! stderr in the modes whose stderr is not the screen (print, json, rpc); `--trace FILE` adds
//! a Chrome trace of every actor message. `RUST_LOG` (tracing's `EnvFilter` syntax, e.g.
//! `RUST_LOG=pith_llm=debug`) replaces the default level, `warn`, of the log file and stderr.

use std::path::Path;

use anyhow::{Context, Result};
use tracing_subscriber::filter::{EnvFilter, LevelFilter, filter_fn};
use tracing_subscriber::prelude::*;

/// Log files kept (one a day).
const KEPT_LOG_FILES: usize = 7;

/// What must live until the run ends: dropping it flushes the log and the trace.
pub struct LogGuard {
    _file: Option<tracing_appender::non_blocking::WorkerGuard>,
    _trace: Option<tracing_chrome::FlushGuard>,
}

/// The level filter of the log file and stderr: `RUST_LOG`, else warnings and errors.
fn level() -> EnvFilter {
    EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .from_env_lossy()
}

/// Installs the log file under `agent_dir` (best effort: a log that cannot be opened is
/// reported once on stderr and the run goes on), stderr when `stderr` is true, and the
/// `--trace` writer when `trace` is given.
///
/// Events with a `user_notified` field were already shown to the user (a notice, a failed
/// write) and are kept out of stderr, so nothing is said twice there.
///
/// Errors: the trace file cannot be created; a subscriber is already installed.
pub fn install(agent_dir: &Path, trace: Option<&Path>, stderr: bool) -> Result<LogGuard> {
    let (file_layer, file_guard) = match log_writer(agent_dir) {
        Ok((writer, guard)) => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(false)
                    .with_filter(level()),
            ),
            Some(guard),
        ),
        Err(e) => {
            eprintln!("pith: no log file: {e:#}");
            (None, None)
        }
    };
    let stderr_layer = stderr.then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .without_time()
            .with_target(false)
            .with_ansi(false)
            .with_filter(level())
            .with_filter(filter_fn(|meta| {
                meta.fields().field("user_notified").is_none()
            }))
    });
    let (trace_layer, trace_guard) = match trace {
        Some(path) => {
            let (layer, guard) = trace_layer(path)?;
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(trace_layer)
        .with(file_layer)
        .with(stderr_layer)
        .try_init()
        .context("installing the log")?;
    Ok(LogGuard {
        _file: file_guard,
        _trace: trace_guard,
    })
}

/// A non-blocking writer to today's file in `<agent_dir>/logs` (created 0700).
fn log_writer(
    agent_dir: &Path,
) -> Result<(
    tracing_appender::non_blocking::NonBlocking,
    tracing_appender::non_blocking::WorkerGuard,
)> {
    let dir = agent_dir.join("logs");
    pith_store::dirs::ensure_dir(&dir)?;
    let appender = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("pith")
        .filename_suffix("log")
        .max_log_files(KEPT_LOG_FILES)
        .build(&dir)
        .with_context(|| format!("cannot open a log file in {}", dir.display()))?;
    // tracing-appender's default queue holds 128,000 lines and allocates (and touches) all of
    // them at once: 4 MiB, most of an idle pith's memory. A few thousand lines are plenty for
    // a log written a line at a time; `lossy` (the default) drops lines rather than block
    // when a burst fills it.
    Ok(
        tracing_appender::non_blocking::NonBlockingBuilder::default()
            .buffered_lines_limit(LOG_QUEUE_LINES)
            .finish(appender),
    )
}

/// Lines the log's writer thread may have queued.
const LOG_QUEUE_LINES: usize = 4096;

fn trace_layer<S>(
    path: &Path,
) -> Result<(tracing_chrome::ChromeLayer<S>, tracing_chrome::FlushGuard)>
where
    S: tracing::Subscriber
        + for<'span> tracing_subscriber::registry::LookupSpan<'span>
        + Send
        + Sync,
{
    use std::os::unix::fs::OpenOptionsExt;
    // Created here (not by the trace layer, which panics on errors), private like sessions.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        // Never through a symlink: a trace file is named on the command line, not resolved.
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .with_context(|| format!("cannot write the trace file {}", path.display()))?;
    Ok(tracing_chrome::ChromeLayerBuilder::new()
        .writer(file)
        .include_args(true)
        .trace_style(tracing_chrome::TraceStyle::Async)
        .build())
}
