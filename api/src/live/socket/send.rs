//! Sending to a websocket peer, each send bounded by [`SEND_TIMEOUT`]: a peer that does not take
//! a message in time is dropped, or its subscriptions would fall behind forever.

use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::future::{BoxFuture, Either, Ready};
use futures::{FutureExt, SinkExt};

use super::SEND_TIMEOUT;

/// The half of a websocket askloop writes to.
pub(super) type Sink = futures::stream::SplitSink<WebSocket, Message>;

/// Send our close frame (for [`SEND_TIMEOUT`] at most).
pub(super) fn close<'a>(sink: &'a mut Sink, code: u16, reason: &str) -> BoxFuture<'a, ()> {
    let frame = Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }));
    send(sink, frame).map(|_| ()).boxed()
}

/// Send `message` to the peer: whether it was taken within [`SEND_TIMEOUT`].
///
/// Nearly every send is taken at once (the socket's buffer has room): it is done here, with no
/// timer and no allocation — a fan-out makes one per subscriber. One that has to wait becomes a
/// boxed future under the timeout: a socket's task lives as long as its peer stays, mostly idle,
/// and inline it (a timer) would size every idle socket for the moment it sends. Polling first
/// with a waker that does nothing loses no wake-up: the next poll registers the task's own.
pub(super) fn send<S>(sink: &mut S, message: Message) -> Either<Ready<bool>, BoxFuture<'_, bool>>
where
    S: futures::Sink<Message> + Unpin + Send,
{
    send_within(sink, message, SEND_TIMEOUT)
}

/// [`send`] with `limit` for the timeout.
fn send_within<S>(
    sink: &mut S,
    message: Message,
    limit: Duration,
) -> Either<Ready<bool>, BoxFuture<'_, bool>>
where
    S: futures::Sink<Message> + Unpin + Send,
{
    let mut sending = sink.send(message);
    let mut at_once = Context::from_waker(futures::task::noop_waker_ref());
    match sending.poll_unpin(&mut at_once) {
        Poll::Ready(sent) => Either::Left(futures::future::ready(sent.is_ok())),
        Poll::Pending => Either::Right(
            tokio::time::timeout(limit, sending)
                .map(|sent| matches!(sent, Ok(Ok(()))))
                .boxed(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio::time::Instant;

    /// A peer with room for one frame, whose reader takes nothing until it reads.
    fn peer() -> (
        futures::channel::mpsc::Sender<Message>,
        futures::channel::mpsc::Receiver<Message>,
    ) {
        futures::channel::mpsc::channel(1)
    }

    const LIMIT: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_send_taken_at_once_needs_no_timer_and_one_that_waits_still_has_its_limit() {
        let (mut sink, mut reader) = peer();
        assert!(
            matches!(
                send_within(&mut sink, Message::Text("one".into()), LIMIT),
                Either::Left(_)
            ),
            "a send the peer has room for is done at once"
        );
        // Now full: the next send waits, under the timeout.
        let waiting = send_within(&mut sink, Message::Text("two".into()), LIMIT);
        assert!(
            matches!(waiting, Either::Right(_)),
            "a full peer makes it wait"
        );
        let started = Instant::now();
        assert!(!waiting.await, "a peer that takes nothing is given up on");
        assert!(started.elapsed() >= LIMIT);
        // What was taken first is there, once.
        assert!(matches!(reader.try_recv(), Ok(Message::Text(t)) if t.as_str() == "one"));
    }

    #[tokio::test]
    async fn a_send_that_waits_is_delivered_once_the_peer_reads() {
        let (mut sink, mut reader) = peer();
        assert!(send(&mut sink, Message::Text("one".into())).await);
        let waiting = send(&mut sink, Message::Text("two".into()));
        assert!(
            matches!(waiting, Either::Right(_)),
            "a full peer makes it wait"
        );
        let reading = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(Message::Text(text)) = reader.next().await {
                got.push(text.as_str().to_owned());
            }
            got
        });
        assert!(waiting.await, "taken once the peer reads, within the limit");
        drop(sink);
        assert_eq!(reading.await.expect("the reader"), ["one", "two"]);
    }
}
