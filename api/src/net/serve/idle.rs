//! The idle timeout (`ASKLOOP_IDLE_TIMEOUT_MS`): a connection with no request in flight that
//! moves no byte either way for it is closed — a kept-alive connection between requests, or one
//! opened and never used — while a request in flight (a long poll, a streamed response) keeps
//! its connection until its response body ends. Goal: floods of connections from one address
//! leave every other client's requests fast (docs/benchmarks.md#floods); without it a connection
//! that never sends a byte past its first request, or never sends one at all, is held for good.
//!
//! hyper has no such timeout (its `header_read_timeout` covers only a request head that trickles
//! in), so it is kept in the connection's stream ([`Watched`]): once the connection has been idle
//! for the timeout, a read that finds nothing finds the end of the stream instead, and hyper ends
//! the connection as it does when its peer closes one between requests, saying nothing.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::starting::StartSlot;
use crate::net::admission::{ConnectionPlace, OpenSlot};

/// When a connection last moved a byte, how many of its requests are in flight, and whether it
/// has been upgraded.
pub(super) struct Activity {
    started: Instant,
    /// Microseconds after `started`. (Whole milliseconds, truncated, made a connection look
    /// quiet for up to a millisecond longer than it was: it was closed that much early.)
    last: AtomicU64,
    in_flight: AtomicUsize,
    /// Upgraded to a websocket, which keeps its own pings and timeouts (`live/socket/connection.rs`).
    upgraded: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            last: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            upgraded: AtomicBool::new(false),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Release);
    }

    /// How long since a byte last moved.
    fn quiet_for(&self) -> Duration {
        let last = Duration::from_micros(self.last.load(Ordering::Acquire));
        self.started.elapsed().saturating_sub(last)
    }

    /// A request is in flight until the returned guard (and its response body) is dropped.
    pub(super) fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Busy(self.clone())
    }

    /// When to look again whether the connection is idle, or `None` once it has been idle for
    /// `idle`. While a request is in flight that is a whole `idle` from now.
    fn next_look(&self, idle: Duration) -> Option<tokio::time::Instant> {
        let now = tokio::time::Instant::now();
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Some(now + idle);
        }
        let quiet = self.quiet_for();
        (quiet < idle).then(|| now + (idle - quiet))
    }
}

/// A request in flight.
pub(super) struct Busy(Arc<Activity>);

impl Busy {
    /// The request upgraded its connection: the idle timeout no longer applies to it.
    pub(super) fn upgraded(&self) {
        self.0.upgraded.store(true, Ordering::Release);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// The connection's stream, noting every byte moved and ending it once it has been idle for the
/// timeout, and holding the connection's place in the caps for as long as it lives (past an
/// upgrade, for as long as the websocket does).
pub(super) struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
    idle_timeout: Duration,
    /// Armed while a read waits: when to look again whether the connection is idle.
    look_again: Option<Pin<Box<Sleep>>>,
    /// Idle for the timeout: every read from now on finds the end of the stream.
    ended: bool,
    _place: ConnectionPlace,
    /// A forwarded websocket's place under its client's cap (`connection.rs`).
    _upgraded_client: Arc<Mutex<Option<OpenSlot>>>,
    /// The connection's place among those starting, until its first read finds nothing yet.
    start: Option<Arc<StartSlot>>,
}

impl Watched {
    /// `stream`, closed after `idle_timeout` idle, holding `place` and `upgraded_client`, and
    /// `start` until its first read finds nothing yet.
    pub(super) fn new(
        stream: TcpStream,
        idle_timeout: Duration,
        place: ConnectionPlace,
        upgraded_client: Arc<Mutex<Option<OpenSlot>>>,
        start: Arc<StartSlot>,
    ) -> Self {
        Self {
            stream,
            activity: Arc::new(Activity::new()),
            idle_timeout,
            look_again: None,
            ended: false,
            _place: place,
            _upgraded_client: upgraded_client,
            start: Some(start),
        }
    }

    /// What the requests on this connection report to.
    pub(super) fn activity(&self) -> Arc<Activity> {
        self.activity.clone()
    }

    /// Whether the connection has been idle for the timeout; until then, the task is woken when
    /// it may have been.
    fn idle_ended(&mut self, cx: &mut Context<'_>) -> bool {
        if self.activity.upgraded.load(Ordering::Acquire) {
            return false;
        }
        loop {
            let Some(at) = self.activity.next_look(self.idle_timeout) else {
                return true;
            };
            let sleep = self
                .look_again
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if sleep.deadline() != at {
                sleep.as_mut().reset(at);
            }
            if sleep.as_mut().poll(cx).is_pending() {
                return false;
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if read.is_ready() {
            if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
                this.activity.touch();
            }
            return read;
        }
        // Waiting for bytes costs nothing: a connection that has started no longer holds a
        // place among those starting (a silent one cannot hold it either).
        if let Some(start) = this.start.take() {
            start.give_back();
        }
        if this.idle_ended(cx) {
            this.ended = true;
            this.look_again = None;
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_never_quiet_for_longer_than_it_was() {
        let activity = Activity::new();
        // Touched half a millisecond or more into a millisecond, where a count of whole
        // milliseconds would lose that half.
        while activity.started.elapsed().subsec_micros() % 1000 < 500 {
            std::hint::spin_loop();
        }
        let before = Instant::now();
        activity.touch();
        let quiet = activity.quiet_for();
        assert!(
            quiet <= before.elapsed() + Duration::from_micros(1),
            "quiet for {quiet:?}, touched {:?} ago",
            before.elapsed()
        );
    }
}
