//! The operations one websocket runs, by id: the library's execution of each `subscribe`, or a
//! subscription handed over to the socket (`live::adopt`), polled together for the next message.

use std::collections::HashMap;
use std::task::Poll;

use async_graphql::Response;
use futures::StreamExt;
use futures::stream::BoxStream;

use super::protocol;
use crate::graphql::error_door::refused_before_running;
use crate::live::adopt::Served;

/// Where a running operation's messages come from.
pub(super) enum Source {
    /// The library's execution of the request: its responses become `next` messages.
    Library(BoxStream<'static, Response>),
    /// A subscription handed over to the socket (`adopt`): its messages, ready to send.
    Served(Served),
}

/// An operation the socket runs.
pub(super) struct Running {
    /// The serial of the subscribe that started it.
    pub(super) serial: u64,
    pub(super) source: Source,
}

/// What one of the running operations has to say.
pub(super) enum Event {
    /// A message to send.
    Message(String),
    /// The stream of operation `id` (subscribe `serial`) ended; `library` when it was the
    /// library's (and a hand-over may wait for it).
    Ended {
        id: String,
        serial: u64,
        library: bool,
    },
    /// The library refused operation `id` (subscribe `serial`) before running it: it did not
    /// parse or validate, or costs too much. `errors` is the serialised list. It has been
    /// removed.
    Failed {
        id: String,
        serial: u64,
        errors: String,
    },
}

/// What polling one running operation gave.
enum Polled {
    /// A message to send.
    Message(String),
    /// A failure as a whole: these errors, serialised.
    Failed(String),
}

/// The operations a socket runs, by id: exactly those its [`Protocol`](super::protocol::Protocol) counts as running.
#[derive(Default)]
pub(super) struct Operations(pub(super) HashMap<String, Running>);

impl Operations {
    /// The next event of any running operation. An ended stream is removed at once.
    pub(super) async fn next(&mut self) -> Event {
        futures::future::poll_fn(|cx| {
            let mut ended = None;
            let mut failed = None;
            for (id, running) in &mut self.0 {
                let polled = match &mut running.source {
                    Source::Library(stream) => stream.poll_next_unpin(cx).map(|response| {
                        response.map(|response| {
                            if response.data == async_graphql::Value::Null
                                && refused_before_running(&response.errors)
                            {
                                let errors = serde_json::to_string(&response.errors)
                                    .unwrap_or_else(|_| "[]".to_owned());
                                return Polled::Failed(errors);
                            }
                            let payload = serde_json::to_string(&response)
                                .unwrap_or_else(|_| "{}".to_owned());
                            Polled::Message(protocol::next_message(id, &payload))
                        })
                    }),
                    Source::Served(stream) => {
                        stream.poll_next_unpin(cx).map(|m| m.map(Polled::Message))
                    }
                };
                match polled {
                    Poll::Ready(Some(Polled::Message(message))) => {
                        return Poll::Ready(Event::Message(message));
                    }
                    Poll::Ready(Some(Polled::Failed(errors))) => {
                        failed = Some((id.clone(), errors));
                        break;
                    }
                    Poll::Ready(None) => {
                        ended = Some(id.clone());
                        break;
                    }
                    Poll::Pending => {}
                }
            }
            if let Some((id, errors)) = failed
                && let Some((id, running)) = self.0.remove_entry(&id)
            {
                return Poll::Ready(Event::Failed {
                    id,
                    serial: running.serial,
                    errors,
                });
            }
            match ended.and_then(|id| self.0.remove_entry(&id)) {
                Some((id, running)) => Poll::Ready(Event::Ended {
                    id,
                    serial: running.serial,
                    library: matches!(running.source, Source::Library(_)),
                }),
                None => Poll::Pending,
            }
        })
        .await
    }
}
