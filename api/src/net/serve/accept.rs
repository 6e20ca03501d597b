//! Accepting connections, on a thread of its own. Goal: the reconnect storm — 10,000 sockets
//! opened at once are all served within the goal's time, and one opened in the middle of it is
//! served at once (docs/benchmarks.md#goals, `storm`; docs/benchmarks.md#fan-out-and-reconnect-storms).
//!
//! When every worker thread is busy with a storm's handshakes, an accept loop on the runtime
//! stops emptying the kernel's accept queue, which then overflows: an overflowed handshake is
//! dropped silently and the client waits out its retransmission. On its own thread the queue is
//! emptied as fast as connections arrive. Each connection is admitted there ([`Connections`]),
//! answered and closed when it is not, and otherwise handed to the serving runtime at most
//! [`STARTING_AT_ONCE`](super::starting::STARTING_AT_ONCE) starting at a time, the newest first when the oldest has waited too long
//! ([`next_waiting`]): in the runtime's queue they would all start in arrival order.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::starting::StartSlot;
use crate::auth::ClientAddress;
use crate::config::ConnectionSettings;
use crate::net::admission::{Admission, ConnectionPlace, Connections, next_waiting};
use crate::net::client_address::TrustedProxies;

/// What every accepted connection is served with.
pub(super) struct Served {
    /// The runtime the connections are served on.
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) router: Router,
    pub(super) connections: Arc<Connections>,
    pub(super) settings: ConnectionSettings,
    /// The peers whose forwarding headers are believed.
    pub(super) trusted: Arc<TrustedProxies>,
    /// Watches every connection started, to shut them down together.
    pub(super) shutdown: GracefulShutdown,
    /// Places among the connections starting ([`STARTING_AT_ONCE`](super::starting::STARTING_AT_ONCE)).
    pub(super) starting: Arc<Semaphore>,
}

/// Accept on `listener` until `accepting` is cancelled, on the calling thread (a
/// single-threaded runtime of its own): admit each connection, answer and close one that is
/// not admitted, and hand the rest to `served.runtime` as places among those starting come
/// free. Dropping the listener on the way out makes the system refuse new connections (and
/// closes those still waiting to start).
pub(super) fn accept_loop(
    listener: std::net::TcpListener,
    served: &Served,
    accepting: &CancellationToken,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            tracing::error!("cannot start the accept loop's runtime: {err}");
            return;
        }
    };
    runtime.block_on(async {
        let listener = match TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(err) => {
                tracing::error!("cannot accept on the listener: {err}");
                return;
            }
        };
        // Admitted connections wait here until a place among those starting is free.
        let mut waiting: VecDeque<Accepted> = VecDeque::new();
        loop {
            tokio::select! {
                biased;
                () = accepting.cancelled() => break,
                started = served.starting.clone().acquire_owned(), if !waiting.is_empty() => {
                    let Ok(started) = started else { break };
                    // Newest first once the oldest has waited too long: in a reconnect storm a
                    // connection opened in the middle of it is served at once.
                    let next = next_waiting(&mut waiting, START_OVERLOADED_AFTER, |a| a.since);
                    if let Some(next) = next {
                        start(next, StartSlot::holding(started), served);
                    }
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let from_proxy = served.trusted.contains(peer.ip());
                        let admission = if from_proxy {
                            served.connections.admit_from_proxy()
                        } else {
                            served.connections.admit(ClientAddress::new(peer.ip()))
                        };
                        match admission {
                            Admission::Admitted { place, reserved } => waiting.push_back(Accepted {
                                stream,
                                peer,
                                from_proxy,
                                place,
                                reserved,
                                since: Instant::now(),
                            }),
                            Admission::AddressFull => turn_away(&stream, TOO_MANY_FROM_ADDRESS),
                            Admission::Full => turn_away(&stream, AT_CAPACITY),
                        }
                    }
                    Err(err) => accept_error(err).await,
                },
            }
        }
    });
}

/// How long the oldest accepted connection may wait to start before the accept loop counts as
/// overloaded and starts the newest first.
const START_OVERLOADED_AFTER: Duration = Duration::from_millis(50);

/// A connection accepted and admitted, waiting to start.
struct Accepted {
    stream: TcpStream,
    peer: SocketAddr,
    from_proxy: bool,
    place: ConnectionPlace,
    reserved: bool,
    since: Instant,
}

/// Hand an accepted connection to the serving runtime (its socket moves to that runtime's
/// reactor), holding its place among those starting until its first read.
fn start(accepted: Accepted, slot: Arc<StartSlot>, served: &Served) {
    let Accepted {
        stream,
        peer,
        from_proxy,
        place,
        reserved,
        ..
    } = accepted;
    let Ok(stream) = stream.into_std() else {
        return;
    };
    without_delay(&stream);
    let connection = Connection {
        peer,
        from_proxy,
        reserved,
        trusted: served.trusted.clone(),
        connections: served.connections.clone(),
        router: served.router.clone(),
        settings: served.settings,
    };
    // Watched from before it is handed over, so a shutdown cannot miss it.
    let shutdown = served.shutdown.watcher();
    served.runtime.spawn(async move {
        if let Ok(stream) = TcpStream::from_std(stream) {
            connection.serve(stream, place, slot, shutdown).await;
        }
    });
}

/// Send what a connection writes at once (`TCP_NODELAY`): a response, a websocket frame. With
/// Nagle's algorithm on, a write made while an earlier one is not yet acknowledged waits for
/// that acknowledgement — up to the peer's delayed-ACK timer, 40 ms on Linux — which is every
/// second frame of a subscription that sends two in a row. askloop writes whole messages, so
/// there is nothing for Nagle to coalesce.
fn without_delay(stream: &std::net::TcpStream) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(error = %err, "TCP_NODELAY could not be set on a connection");
    }
}

/// An accept that failed: a connection reset before it was taken is nothing; anything else
/// (out of file descriptors, mostly) is logged, and accepting pauses for a moment, as hyper's
/// own server did, rather than spinning on the error.
async fn accept_error(err: io::Error) {
    if matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accept error: {err}");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

const TOO_MANY_FROM_ADDRESS: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\n\
connection: close\r\ncontent-type: text/plain\r\ncontent-length: 61\r\n\r\n\
askloop holds as many connections from this address as it may";

const AT_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\n\
connection: close\r\ncontent-type: text/plain\r\ncontent-length: 53\r\n\r\n\
askloop is at its connection limit; try again shortly";

/// Answer a connection that is not admitted and close it, without waiting on it: the answer
/// is written only if the socket takes it at once.
fn turn_away(stream: &TcpStream, answer: &[u8]) {
    let _ = stream.try_write(answer);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_connection_sends_without_delay() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
        let _client = std::net::TcpStream::connect(listener.local_addr().expect("its address"))
            .expect("connected");
        let (accepted, _) = listener.accept().expect("accepted");
        assert!(
            !accepted.nodelay().expect("readable"),
            "Nagle is on by default"
        );
        without_delay(&accepted);
        assert!(accepted.nodelay().expect("readable"));
    }

    #[test]
    fn the_answers_to_connections_turned_away_are_whole_responses() {
        for answer in [TOO_MANY_FROM_ADDRESS, AT_CAPACITY] {
            let text = std::str::from_utf8(answer).expect("text");
            let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .expect("a length");
            assert_eq!(length.parse::<usize>(), Ok(body.len()), "{text}");
        }
    }
}
