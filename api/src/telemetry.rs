//! Structured logs through `tracing`: pretty for people, JSON for shippers.
//!
//! Lines are written to stderr by a thread of their own, so a request never waits on the
//! terminal or the log shipper's pipe; when that thread falls behind by more than its buffer,
//! writers wait rather than drop lines.

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Keeps the log thread running; dropping it writes out what is still buffered.
#[must_use = "logs written after the guard is dropped are lost"]
pub struct LogGuard(
    #[expect(
        dead_code,
        reason = "held only for its drop, which flushes the log thread"
    )]
    WorkerGuard,
);

/// How many lines may wait for the log thread before writers wait for it.
const BUFFERED_LINES: usize = 64 * 1024;

/// Install the global subscriber (once, in `main`), writing the lines `filter` lets through
/// (`RUST_LOG`, checked when the configuration was read). Hold the guard until the process ends.
pub fn init(format: LogFormat, filter: &str) -> LogGuard {
    let filter = EnvFilter::new(filter);
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(BUFFERED_LINES)
        .thread_name("askloop-log")
        .finish(std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init(),
        LogFormat::Pretty => builder.init(),
    }
    LogGuard(guard)
}
