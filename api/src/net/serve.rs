//! Serving connections: askloop's own accept loop over hyper's HTTP/1.1 server
//! (`hyper::server::conn::http1` with hyper-util's `TokioTimer`), in place of `axum::serve`,
//! which runs hyper without a timer so that no header timeout ever applies.
//!
//! Every connection is admitted first ([`Connections`]): past the instance-wide cap it is
//! answered `503` and closed, past its address's cap `429`; the last part of the cap is a
//! reserve in which only `/healthz`, `/readyz` and requests carrying a credential are served,
//! so a flood of anonymous connections cannot keep monitoring or signed-in people out. Then:
//!
//! - a request's line and headers must arrive within the header timeout, counted from when the
//!   connection starts waiting for them (hyper's `header_read_timeout`): a peer that trickles
//!   its headers is closed then;
//! - a connection with no request in flight that moves no byte either way for the idle timeout
//!   is closed (kept-alive and never-used connections alike); a request in flight — a long poll,
//!   a streamed response — keeps it open until its response body ends;
//! - websocket upgrades go through hyper's upgrades; the upgraded socket keeps the connection's
//!   place in the caps until it closes, and keeps its own pings and timeouts
//!   (`live/socket/connection.rs`);
//! - accepting runs on a thread of its own, with a listen backlog asked for explicitly
//!   (`ASKLOOP_LISTEN_BACKLOG`), and hands connections to the runtime a bounded number at a time,
//!   the newest first once the oldest have waited too long, so a reconnect storm is accepted
//!   without overflowing the kernel's queue and a connection opened in the middle of it is served
//!   at once;
//! - on shutdown, accepting stops, idle connections close at once and in-flight requests finish
//!   (the grace period is `startup`'s); websockets are closed with 1001 by the live hub.
//!
//! Each request's client address is worked out once, here, and handed to the handlers as a
//! [`ClientAddress`] extension (beside the peer's `ConnectInfo<SocketAddr>`): the peer, or, when
//! the peer is a trusted proxy (`ASKLOOP_TRUSTED_PROXIES`), the client it forwards for
//! (`domain/proxies.rs`). A trusted proxy's connections count under the instance-wide cap only,
//! never under its own address's: each request it forwards holds a place under its client's
//! address instead, for as long as the request is in flight and, for a websocket, as long as
//! the socket lives; past that cap the request is answered 429. The limits and their variables
//! are in `docs/security.md`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::auth::{ClientAddress, bearer_token, cookie_token};
use crate::config::ConnectionSettings;
use crate::domain::signing::SIGNATURE_HEADER;
use crate::net::admission::{OpenPerAddress, OpenSlot, next_waiting};
use crate::net::client_address::{ForwardingHeaders, TrustedProxies};

/// The instance-wide and per-address caps on open connections.
#[derive(Debug)]
pub struct Connections {
    max: usize,
    /// Connections admitted from this count on are in the reserve.
    reserve_from: usize,
    open: Arc<AtomicUsize>,
    per_address: Arc<OpenPerAddress>,
}

/// What admitting a connection decided.
#[derive(Debug)]
pub enum Admission {
    /// Served; in the reserve when `reserved`.
    Admitted {
        /// Its place in the caps, given back when the connection (or its websocket) closes.
        place: ConnectionPlace,
        /// Only health checks and requests with a credential are served on it.
        reserved: bool,
    },
    /// Its address holds as many connections as it may.
    AddressFull,
    /// The instance holds as many connections as it may.
    Full,
}

/// One connection's place in the caps.
#[derive(Debug)]
pub struct ConnectionPlace {
    /// Its place under its address's cap; none for a trusted proxy's connection, whose
    /// requests hold places under their clients' addresses instead.
    _address: Option<OpenSlot>,
    open: Arc<AtomicUsize>,
}

impl Drop for ConnectionPlace {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Connections {
    /// The caps of `settings` for a process allowed `file_limit` open files.
    pub fn new(settings: &ConnectionSettings, file_limit: u64) -> Arc<Self> {
        let max = settings.max_connections_for(file_limit);
        Arc::new(Self {
            max,
            reserve_from: max - settings.reserved_of(max),
            open: Arc::new(AtomicUsize::new(0)),
            per_address: OpenPerAddress::new(settings.max_per_address),
        })
    }

    /// Admit a connection from `client`, or say why not.
    pub fn admit(&self, client: ClientAddress) -> Admission {
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        if before >= self.max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Admission::Full;
        }
        let Some(address) = self.per_address.try_open(client) else {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Admission::AddressFull;
        };
        Admission::Admitted {
            place: ConnectionPlace {
                _address: Some(address),
                open: self.open.clone(),
            },
            reserved: before >= self.reserve_from,
        }
    }

    /// Admit a connection from a trusted proxy: under the instance-wide cap only. Its address is
    /// every forwarded client's, so a cap on it would be one cap for all of them; each request
    /// it forwards is held to its client's cap instead ([`Connections::hold_for`]).
    pub fn admit_from_proxy(&self) -> Admission {
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        if before >= self.max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Admission::Full;
        }
        Admission::Admitted {
            place: ConnectionPlace {
                _address: None,
                open: self.open.clone(),
            },
            reserved: before >= self.reserve_from,
        }
    }

    /// A place under `client`'s per-address cap for a request a trusted proxy forwards, unless
    /// that address holds as many as it may.
    pub fn hold_for(&self, client: ClientAddress) -> Option<OpenSlot> {
        self.per_address.try_open(client)
    }

    /// How many places `client`'s address holds under the per-address cap.
    pub fn held_by(&self, client: ClientAddress) -> usize {
        self.per_address.held_by(client)
    }

    /// How many connections are open.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The instance-wide cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// The open-file limit in force (the soft limit), or 1,024 where it cannot be read.
pub fn file_limit() -> u64 {
    #[cfg(unix)]
    if let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE) {
        return soft;
    }
    1_024
}

/// Raise the soft open-file limit to the hard limit, so that the connection cap is not set
/// by a shell's default of 1,024; logs what it did, or why it could not.
pub fn raise_file_limit() {
    #[cfg(unix)]
    {
        let (soft, hard) = match rlimit::getrlimit(rlimit::Resource::NOFILE) {
            Ok(limits) => limits,
            Err(err) => {
                tracing::warn!("cannot read the open-file limit ({err}); serving with it as it is");
                return;
            }
        };
        if soft >= hard {
            tracing::info!(
                limit = soft,
                "the open-file limit is already its hard limit"
            );
            return;
        }
        match rlimit::increase_nofile_limit(hard) {
            Ok(now) => tracing::info!(from = soft, to = now, "raised the open-file limit"),
            Err(err) => tracing::warn!(
                limit = soft,
                hard,
                "cannot raise the open-file limit to the hard limit ({err}); fewer connections \
                 fit (raise it with `ulimit -n` or the service manager's LimitNOFILE)"
            ),
        }
    }
}

/// Serve `router` on `listener` until `stop` is cancelled, then stop accepting, close idle
/// connections and let in-flight requests finish; returns once every connection has ended.
///
/// Accepting runs on a thread of its own ([`accept_loop`]): when every worker thread is busy
/// with a reconnect storm's handshakes, the kernel's accept queue is still emptied as fast as
/// connections arrive, instead of overflowing (an overflowed handshake is dropped silently and
/// the client waits out its retransmission). Each admitted connection is then served on the
/// runtime `serve` was called on, at most [`STARTING_AT_ONCE`] starting at a time, the newest
/// first when the oldest has waited too long ([`next_waiting`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    connections: Arc<Connections>,
    settings: ConnectionSettings,
    trusted: TrustedProxies,
    stop: CancellationToken,
) {
    // Each connection task holds a sender; the channel closes once the last one has ended.
    let (running, mut all_ended) = tokio::sync::mpsc::channel::<Infallible>(1);
    // Accepting ends with `stop`, or when this future is dropped unfinished.
    let accepting = stop.child_token();
    let _stop_accepting_if_dropped = accepting.clone().drop_guard();
    let (accepted_all, accept_ended) = tokio::sync::oneshot::channel::<()>();
    let served = Served {
        runtime: tokio::runtime::Handle::current(),
        router,
        connections,
        settings,
        trusted: Arc::new(trusted),
        stop,
        running,
        starting: Arc::new(Semaphore::new(STARTING_AT_ONCE)),
    };
    let spawned = match listener.into_std() {
        Ok(listener) => std::thread::Builder::new()
            .name("askloop-accept".into())
            .spawn({
                let accepting = accepting.clone();
                move || {
                    accept_loop(listener, &served, &accepting);
                    drop(served);
                    let _ = accepted_all.send(());
                }
            })
            .map_err(|err| err.to_string()),
        Err(err) => Err(err.to_string()),
    };
    match spawned {
        // The thread ends once accepting stops; every connection it admitted holds a sender.
        Ok(_) => {
            let _ = accept_ended.await;
        }
        Err(err) => {
            tracing::error!("cannot start accepting connections: {err}");
            return;
        }
    }
    let _ = all_ended.recv().await;
}

/// What every accepted connection is served with.
struct Served {
    /// The runtime the connections are served on.
    runtime: tokio::runtime::Handle,
    router: Router,
    connections: Arc<Connections>,
    settings: ConnectionSettings,
    /// The peers whose forwarding headers are believed.
    trusted: Arc<TrustedProxies>,
    stop: CancellationToken,
    running: tokio::sync::mpsc::Sender<Infallible>,
    /// Places among the connections starting ([`STARTING_AT_ONCE`]).
    starting: Arc<Semaphore>,
}

/// Accept on `listener` until `accepting` is cancelled, on the calling thread (a
/// single-threaded runtime of its own): admit each connection, answer and close one that is
/// not admitted, and hand the rest to `served.runtime` as places among those starting come
/// free. Dropping the listener on the way out makes the system refuse new connections (and
/// closes those still waiting to start).
fn accept_loop(listener: std::net::TcpListener, served: &Served, accepting: &CancellationToken) {
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

/// How many accepted connections may be starting at once: handed to the serving runtime and not
/// yet through their first read. The rest wait in the accept loop, where the newest can be
/// started first; in the runtime's queue they would all be started in arrival order.
pub const STARTING_AT_ONCE: usize = 128;

/// How long the oldest accepted connection may wait to start before the accept loop counts as
/// overloaded and starts the newest first.
pub const START_OVERLOADED_AFTER: Duration = Duration::from_millis(50);

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
        stop: served.stop.clone(),
    };
    let running = served.running.clone();
    served.runtime.spawn(async move {
        if let Ok(stream) = TcpStream::from_std(stream) {
            connection.serve(stream, place, slot).await;
        }
        drop(running);
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

/// A connection's place among those starting: given back once, at its first read that finds
/// nothing to read yet, its first request, or its end, whichever comes first.
struct StartSlot {
    starting: Arc<Semaphore>,
    given_back: AtomicBool,
}

impl StartSlot {
    fn holding(permit: OwnedSemaphorePermit) -> Arc<Self> {
        let starting = permit.semaphore().clone();
        permit.forget();
        Arc::new(Self {
            starting,
            given_back: AtomicBool::new(false),
        })
    }

    fn give_back(&self) {
        if !self.given_back.swap(true, Ordering::AcqRel) {
            self.starting.add_permits(1);
        }
    }
}

impl Drop for StartSlot {
    fn drop(&mut self) {
        self.give_back();
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

/// One admitted connection.
struct Connection {
    peer: SocketAddr,
    /// Whether the peer is a trusted proxy.
    from_proxy: bool,
    reserved: bool,
    trusted: Arc<TrustedProxies>,
    connections: Arc<Connections>,
    router: Router,
    settings: ConnectionSettings,
    stop: CancellationToken,
}

impl Connection {
    async fn serve(self, stream: TcpStream, place: ConnectionPlace, slot: Arc<StartSlot>) {
        let activity = Arc::new(Activity::new());
        // The place a websocket forwarded by a trusted proxy holds under its client's cap, kept
        // with the stream, which outlives the upgrade for as long as the socket does.
        let upgraded_client: Arc<Mutex<Option<OpenSlot>>> = Arc::default();
        let io = TokioIo::new(Watched {
            stream,
            activity: activity.clone(),
            _place: place,
            _upgraded_client: upgraded_client.clone(),
            start: Some(slot.clone()),
        });
        let Self {
            peer,
            from_proxy,
            reserved,
            trusted,
            connections,
            router,
            settings,
            stop,
        } = self;
        let requests = activity.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            slot.give_back();
            let client = client_of(&trusted, peer.ip(), request.headers());
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(client);
            let refused = reserved && !may_use_the_reserve(&request);
            // A forwarded request holds a place under its client's cap; past it, it is refused
            // before it costs anything, as a direct connection past it would be.
            let held = (from_proxy && !refused).then(|| connections.hold_for(client));
            let busy = requests.begin();
            let router = router.clone();
            let upgraded_client = upgraded_client.clone();
            async move {
                if refused {
                    return Ok::<_, Infallible>(reserve_refusal());
                }
                let client_place = match held {
                    Some(Some(place)) => Some(place),
                    Some(None) => return Ok(too_many_from_client()),
                    None => None,
                };
                let response = router
                    .oneshot(request)
                    .await
                    .unwrap_or_else(|never| match never {});
                let client_place = if response.status() == StatusCode::SWITCHING_PROTOCOLS {
                    *upgraded_client
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = client_place;
                    None
                } else {
                    client_place
                };
                Ok(response.map(|body| {
                    Body::new(InFlight {
                        body,
                        _busy: busy,
                        _client_place: client_place,
                    })
                }))
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(settings.header_timeout)
            .keep_alive(true);
        let connection = builder.serve_connection(io, service).with_upgrades();
        let mut connection = std::pin::pin!(connection);
        let mut closing = false;
        loop {
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(err) = served {
                        tracing::debug!(%peer, "connection ended: {err}");
                    }
                    break;
                }
                () = stop.cancelled(), if !closing => {
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
                () = activity.until_idle(settings.idle_timeout), if !closing => {
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Whether a request on a reserved connection is served: health checks, and requests that
/// carry a credential (checked for, not verified: the route verifies it as always).
fn may_use_the_reserve<B>(request: &Request<B>) -> bool {
    let headers = request.headers();
    matches!(request.uri().path(), "/healthz" | "/readyz")
        || bearer_token(headers).is_some()
        || cookie_token(headers).is_some()
        || headers.contains_key(SIGNATURE_HEADER)
}

/// The client address of a request that came over a connection from `peer` with `headers`
/// (`domain/proxies.rs`): read from the forwarding headers only when `peer` is trusted.
fn client_of(trusted: &TrustedProxies, peer: IpAddr, headers: &HeaderMap) -> ClientAddress {
    if !trusted.contains(peer) {
        return ClientAddress::new(peer);
    }
    let lines = |name: header::HeaderName| -> Vec<&[u8]> {
        headers
            .get_all(name)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect()
    };
    let forwarded = lines(header::FORWARDED);
    let x_forwarded_for = lines(header::HeaderName::from_static("x-forwarded-for"));
    ClientAddress::new(trusted.client_of(
        peer,
        ForwardingHeaders {
            forwarded: &forwarded,
            x_forwarded_for: &x_forwarded_for,
        },
    ))
}

/// The answer to a forwarded request whose client holds as many connections as it may (the
/// same words a direct connection past its cap is answered with).
fn too_many_from_client() -> Response<Body> {
    let mut response = Response::new(Body::from(
        "askloop holds as many connections from this address as it may",
    ));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn reserve_refusal() -> Response<Body> {
    let mut response = Response::new(Body::from(
        "askloop is near its connection limit: only signed-in requests and health checks are \
         served for now; try again shortly",
    ));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// When a connection last moved a byte, and how many of its requests are in flight.
struct Activity {
    started: Instant,
    /// Microseconds after `started`. (Whole milliseconds, truncated, made a connection look
    /// quiet for up to a millisecond longer than it was: it was closed that much early.)
    last: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            last: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
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
    fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Busy(self.clone())
    }

    /// Resolves once no request is in flight and no byte has moved for `idle`.
    async fn until_idle(&self, idle: Duration) {
        loop {
            let quiet = self.quiet_for();
            let busy = self.in_flight.load(Ordering::Acquire) > 0;
            if !busy && quiet >= idle {
                return;
            }
            let wait = if busy { idle } else { idle - quiet };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A request in flight.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// A response body that keeps its request in flight until it ends (or is dropped), and with
/// it, a forwarded request's place under its client's cap.
struct InFlight {
    body: Body,
    _busy: Busy,
    _client_place: Option<OpenSlot>,
}

impl http_body::Body for InFlight {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The connection's stream, noting every byte moved, and holding the connection's place in the
/// caps for as long as it lives (past an upgrade, for as long as the websocket does).
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
    _place: ConnectionPlace,
    /// A forwarded websocket's place under its client's cap ([`Connection::serve`]).
    _upgraded_client: Arc<Mutex<Option<OpenSlot>>>,
    /// The connection's place among those starting, until its first read finds nothing yet.
    start: Option<Arc<StartSlot>>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.touch();
        }
        // Waiting for bytes costs nothing: a connection that has started no longer holds a
        // place among those starting (a silent one cannot hold it either).
        if read.is_pending()
            && let Some(start) = this.start.take()
        {
            start.give_back();
        }
        read
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
    use std::net::{IpAddr, Ipv4Addr};

    fn from(last: u8) -> ClientAddress {
        ClientAddress::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, last)))
    }

    fn settings(max: usize, reserved: usize, per_address: usize) -> ConnectionSettings {
        ConnectionSettings {
            max_connections: Some(max),
            reserved: Some(reserved),
            max_per_address: per_address,
            ..ConnectionSettings::default()
        }
    }

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
    fn the_last_connections_under_the_cap_are_the_reserve_and_past_it_none_is_admitted() {
        let connections = Connections::new(&settings(3, 1, 10), 20_000);
        let mut held = Vec::new();
        for (n, expect_reserved) in [(1, false), (2, false), (3, true)] {
            match connections.admit(from(n)) {
                Admission::Admitted { place, reserved } => {
                    assert_eq!(reserved, expect_reserved, "connection {n}");
                    held.push(place);
                }
                other => panic!("connection {n}: {other:?}"),
            }
        }
        assert!(matches!(connections.admit(from(4)), Admission::Full));
        assert_eq!(connections.open(), 3);
        held.pop();
        assert_eq!(connections.open(), 2);
        assert!(matches!(
            connections.admit(from(4)),
            Admission::Admitted { reserved: true, .. }
        ));
    }

    #[test]
    fn one_address_cannot_take_more_than_its_share_and_a_refusal_holds_no_place() {
        let connections = Connections::new(&settings(100, 0, 2), 20_000);
        let _a = connections.admit(from(1));
        let _b = connections.admit(from(1));
        assert!(matches!(connections.admit(from(1)), Admission::AddressFull));
        assert_eq!(connections.open(), 2, "the refused one is not counted");
        assert!(matches!(
            connections.admit(from(2)),
            Admission::Admitted { .. }
        ));
    }

    #[test]
    fn a_proxys_connections_hold_no_place_under_its_address_but_its_requests_hold_their_clients() {
        let connections = Connections::new(&settings(2, 0, 1), 20_000);
        let proxy = from(1);
        let _a = connections.admit_from_proxy();
        let _b = connections.admit_from_proxy();
        assert_eq!(
            connections.held_by(proxy),
            0,
            "more than its cap of one, uncounted"
        );
        assert!(
            matches!(connections.admit_from_proxy(), Admission::Full),
            "the instance-wide cap still holds"
        );
        let client = from(7);
        let place = connections.hold_for(client).expect("a place");
        assert!(
            connections.hold_for(client).is_none(),
            "past the client's cap"
        );
        assert!(connections.hold_for(from(8)).is_some(), "another client");
        drop(place);
        assert!(
            connections.hold_for(client).is_some(),
            "the place came back"
        );
    }

    #[test]
    fn forwarding_headers_are_read_from_a_trusted_peer_only_and_unreadable_ones_leave_the_peer() {
        let trusted: TrustedProxies = "198.51.100.1".parse().expect("a list");
        let proxy: IpAddr = "198.51.100.1".parse().expect("an address");
        let stranger: IpAddr = "198.51.100.2".parse().expect("an address");
        let client = |peer: IpAddr, headers: &[(&str, &[u8])]| {
            let mut map = HeaderMap::new();
            for (name, value) in headers {
                map.append(
                    header::HeaderName::from_bytes(name.as_bytes()).expect("a name"),
                    HeaderValue::from_bytes(value).expect("a value"),
                );
            }
            client_of(&trusted, peer, &map)
                .ip()
                .map(|ip| ip.to_string())
        };
        let forwarded_for: &[(&str, &[u8])] = &[("x-forwarded-for", b"203.0.113.5")];
        assert_eq!(client(proxy, forwarded_for).as_deref(), Some("203.0.113.5"));
        assert_eq!(
            client(stranger, forwarded_for).as_deref(),
            Some("198.51.100.2")
        );
        assert_eq!(
            client(
                proxy,
                &[
                    ("x-forwarded-for", b"203.0.113.5"),
                    ("forwarded", b"for=203.0.113.6"),
                ]
            )
            .as_deref(),
            Some("203.0.113.6"),
            "Forwarded first"
        );
        assert_eq!(
            client(
                proxy,
                &[
                    ("x-forwarded-for", b"203.0.113.5"),
                    ("x-forwarded-for", b"\xff")
                ]
            )
            .as_deref(),
            Some("198.51.100.1"),
            "a line that is not text"
        );
        assert_eq!(client(proxy, &[]).as_deref(), Some("198.51.100.1"));
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

    #[test]
    fn health_checks_and_requests_with_a_credential_may_use_the_reserve() {
        let request = |path: &str, header: Option<(&'static str, &'static str)>| {
            let mut builder = Request::builder().uri(path);
            if let Some((name, value)) = header {
                builder = builder.header(name, value);
            }
            builder.body(()).expect("a request")
        };
        assert!(may_use_the_reserve(&request("/readyz", None)));
        assert!(may_use_the_reserve(&request("/healthz", None)));
        assert!(may_use_the_reserve(&request(
            "/graphql",
            Some(("authorization", "Bearer al_sess_x"))
        )));
        assert!(may_use_the_reserve(&request(
            "/graphql/ws",
            Some(("cookie", "askloop_session=al_sess_x"))
        )));
        assert!(may_use_the_reserve(&request(
            "/api/v1/internal/expert-questions",
            Some((SIGNATURE_HEADER, "t=1,v1=00"))
        )));
        assert!(!may_use_the_reserve(&request("/graphql", None)));
        assert!(!may_use_the_reserve(&request(
            "/",
            Some(("cookie", "theme=dark"))
        )));
    }
}
