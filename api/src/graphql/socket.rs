//! `GET /graphql/ws`: the `graphql-transport-ws` protocol (what the `graphql-ws` client speaks),
//! spoken here: [`protocol`] is the protocol's state machine, this module the connection that
//! feeds it frames and events and carries out what it says. The schema is used through its
//! public API only: each `subscribe` runs as `Schema::execute_stream_with_session_data` with the
//! connection's data from `connection_init` (docs/architecture.md#over-the-websocket).
//!
//! Every socket must sign in: with the session cookie or an `Authorization: Bearer` header on
//! the upgrade (the cookie only when the upgrade came from askloop's own origin, so another site
//! cannot open a socket in a visitor's name), or with the `token` in `connection_init`'s payload
//! (an API key or session token). Every subscription needs a signed-in caller, so a
//! `connection_init` with neither is refused as the protocol says, with 4403 (Forbidden).
//!
//! A socket that came signed in takes its place under `ASKLOOP_MAX_WEBSOCKETS` at the upgrade.
//! One that did not is anonymous until `connection_init`: it takes no place under that cap
//! (strangers cannot fill it), only one among the sockets waiting to sign in — per address
//! (`ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS`) and instance-wide — after passing its
//! address's rate of anonymous upgrades (`ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND`); past either
//! per-address bound the upgrade is answered 429 with `Retry-After`. A connection that does not
//! initialise within the configured time (10 s) is closed with 4408. A socket ends (4403) as
//! soon as its session or key is ended or revoked through this instance, and within a minute
//! when that happens on another instance or the credential expires. The server pings (every
//! 15 s by default) and drops a peer that has not answered for three times as long (4000). A
//! peer that does not take a message within [`SEND_TIMEOUT`] is dropped: its subscriptions would
//! otherwise fall behind forever. askloop stopping closes every socket with 1001.
//!
//! A subscription handed over by its resolver (`adopt`) is served here from the moment the
//! library's stream for exactly that subscribe (its id and serial) ends; a client `complete`
//! removes the operation from the state machine at once, so a hand-over that comes later is
//! dropped and never served.

pub mod gate;
pub mod protocol;

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::db::Db;
use async_graphql::{Data, Response};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use futures::future::{BoxFuture, Either, OptionFuture, Ready};
use futures::stream::BoxStream;
use futures::{FutureExt, SinkExt, StreamExt};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, MissedTickBehavior};

use super::GraphqlEndpoint;
use super::adopt::{Adoptions, Served, Ticket};
use super::live::SubscriptionStarts;
use crate::auth::{Caller, ClientAddress, OriginCheck, bearer_token, cookie_token, resolve_caller};
use crate::net::admission::OpenSlot;
use crate::service::people::sessions::{self, Lookup};
use gate::{Class, HandshakeGate, Turn};
use protocol::{AT_CAPACITY, InitRefusal, Input, Protocol, Step};

/// The subprotocol askloop speaks.
pub const SUBPROTOCOL: &str = "graphql-transport-ws";

/// How long one message may take to send.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a closing socket waits for its peer's close.
const LINGER: Duration = Duration::from_secs(2);

/// Upgrade to a websocket speaking `graphql-transport-ws`.
pub async fn upgrade(
    State(state): State<GraphqlEndpoint>,
    client: ClientAddress,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    upgrade: WebSocketUpgrade,
) -> HttpResponse {
    // The one subprotocol askloop speaks (the legacy `graphql-ws` of subscriptions-transport-ws
    // is not offered: see docs/architecture.md#over-the-websocket).
    let offered = headers
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim().eq_ignore_ascii_case(SUBPROTOCOL));
    if !offered {
        return (
            StatusCode::BAD_REQUEST,
            "offer the graphql-transport-ws subprotocol",
        )
            .into_response();
    }
    let limits = state.config.live;
    let class = class_of(query.as_deref());
    // A credential is looked up in its turn through the handshake gate, so a reconnect storm's
    // thousands of lookups cannot keep a socket opened now waiting behind all of them.
    let turn = if bearer_token(&headers).is_some() || cookie_token(&headers).is_some() {
        match turn_within(&state.handshake_gate, class, HANDSHAKE_WAIT).await {
            Some(turn) => Some(turn),
            None => return busy(),
        }
    } else {
        None
    };
    let upgrade_caller =
        match resolve_caller(&headers, &state.db, &state.config, chrono::Utc::now()).await {
            Ok(caller) if caller.origin == OriginCheck::Same || !caller.via_cookie => caller,
            _ => Caller::default(),
        };
    drop(turn);
    let signed_in = upgrade_caller.viewer.is_some();
    // An anonymous upgrade passes its address's bounds first, answered before any upgrade: a
    // flood from one address costs a status line each, and nobody else's place.
    let address_slot = if signed_in {
        None
    } else {
        if let Err(wait) = state.handshakes.take(client, std::time::Instant::now()) {
            return too_many(
                wait,
                "too many websocket upgrades without a credential from this address; sign in \
                 (cookie or Authorization header) or wait",
            );
        }
        match state.anonymous.try_open(client) {
            Some(slot) => Some(slot),
            None => {
                return too_many(
                    Duration::from_secs(1),
                    "this address holds as many websockets that have not signed in as it may",
                );
            }
        }
    };
    // The instance-wide caps are taken before the upgrade; a socket past them is accepted only
    // to be told, with a close code clients understand, to come back later. A signed-in socket
    // takes its place under ASKLOOP_MAX_WEBSOCKETS now; an anonymous one only a place among those
    // waiting to sign in, and the other at `connection_init`.
    let permits = if signed_in {
        state
            .sockets
            .clone()
            .try_acquire_owned()
            .map(|socket| Permits {
                socket: Some(socket),
                waiting: None,
            })
    } else {
        state
            .uninitialised
            .clone()
            .try_acquire_owned()
            .map(|waiting| Permits {
                socket: None,
                waiting: Some(Waiting {
                    _instance: waiting,
                    _address: address_slot,
                }),
            })
    };
    // The credential to look up again later: the cookie's session, or the bearer's token.
    let upgrade_token = upgrade_caller.viewer.as_ref().and(
        upgrade_caller
            .session_token
            .clone()
            .or_else(|| bearer_token(&headers)),
    );
    // Queue changes are a few KiB at most; tungstenite's 128 KiB default buffers would make
    // every idle subscriber cost a quarter of a megabyte. The write buffer is bounded so a peer
    // that stops reading cannot grow it without limit.
    let upgrade = upgrade
        .read_buffer_size(512)
        .write_buffer_size(0)
        .max_write_buffer_size(256 * 1024)
        .max_message_size(limits.max_message_bytes)
        .max_frame_size(limits.max_message_bytes)
        .protocols([SUBPROTOCOL]);
    match permits {
        Ok(permits) => upgrade.on_upgrade(move |socket| {
            serve(
                socket,
                state,
                Opened {
                    caller: upgrade_caller,
                    token: upgrade_token,
                    class,
                },
                client,
                permits,
            )
        }),
        Err(_) => upgrade.on_upgrade(|socket| async move {
            let (mut sink, _) = socket.split();
            close(&mut sink, 1013, AT_CAPACITY).await;
        }),
    }
}

/// How long an upgrade waits for its turn through the handshake gate before it is told to come
/// back (`503`, `Retry-After: 1`).
const HANDSHAKE_WAIT: Duration = Duration::from_secs(20);

/// Why a socket that waited [`HANDSHAKE_WAIT`] for its turn is told to come back.
const SIGNING_IN_BUSY: &str = "too many websockets are signing in at once; try again shortly";

/// A turn through the handshake gate within `wait`, or none.
async fn turn_within(gate: &Arc<HandshakeGate>, class: Class, wait: Duration) -> Option<Turn> {
    tokio::time::timeout(wait, gate.turn(class)).await.ok()
}

/// `503` with `Retry-After: 1`: too many sockets are signing in at once.
fn busy() -> HttpResponse {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, HeaderValue::from_static("1"))],
        SIGNING_IN_BUSY,
    )
        .into_response()
}

/// 429 with `Retry-After` (whole seconds, at least one), before any upgrade.
fn too_many(wait: Duration, why: &'static str) -> HttpResponse {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let retry_after = HeaderValue::from(seconds.max(1));
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, retry_after)],
        why,
    )
        .into_response()
}

/// Who the upgrade came signed in as, if anyone.
struct Opened {
    caller: Caller,
    /// The credential to look up again while the socket is open.
    token: Option<String>,
    /// Whether it is a reconnection (its turns through the handshake gate come after others').
    class: Class,
}

/// A socket whose address says `reconnect=1` (any value but `0`) is a reconnection.
fn class_of(query: Option<&str>) -> Class {
    let reconnecting = query.is_some_and(|query| {
        query.split('&').any(|pair| match pair.split_once('=') {
            Some((key, value)) => key == "reconnect" && value != "0",
            None => pair == "reconnect",
        })
    });
    if reconnecting {
        Class::Reconnection
    } else {
        Class::First
    }
}

type Sink = futures::stream::SplitSink<WebSocket, Message>;

/// Send our close frame (for [`SEND_TIMEOUT`] at most).
fn close<'a>(sink: &'a mut Sink, code: u16, reason: &str) -> BoxFuture<'a, ()> {
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
fn send<S>(sink: &mut S, message: Message) -> Either<Ready<bool>, BoxFuture<'_, bool>>
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

/// What a socket holds of the caps while it is open.
struct Permits {
    /// Its place under ASKLOOP_MAX_WEBSOCKETS: taken at the upgrade when it came signed in, at
    /// `connection_init` otherwise.
    socket: Option<OwnedSemaphorePermit>,
    /// An anonymous socket's places among those waiting to sign in, given back once it has.
    waiting: Option<Waiting>,
}

/// An anonymous socket's places while it has not signed in.
struct Waiting {
    _instance: OwnedSemaphorePermit,
    _address: Option<OpenSlot>,
}

/// The credential a socket was opened with.
struct Held {
    token: String,
    user_id: i64,
}

/// A `connection_init` accepted: who the connection is, and the credential to look up again
/// when it came in the payload.
struct Accepted {
    caller: Caller,
    held: Option<Held>,
}

/// Decide a `connection_init` with `payload`, for a socket whose upgrade came signed in as
/// `upgrade_caller`: the payload's `token` when it has one, the upgrade's caller otherwise.
/// Boxed: it is kept beside the socket only while it is being decided.
fn decide_init(
    db: Db,
    (gate, class): (Arc<HandshakeGate>, Class),
    payload: serde_json::Value,
    upgrade_caller: Caller,
) -> BoxFuture<'static, Result<Accepted, (InitRefusal, &'static str)>> {
    async move {
        let token = payload
            .get("token")
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        let Some(token) = token else {
            return match upgrade_caller.viewer {
                Some(_) => Ok(Accepted {
                    caller: upgrade_caller,
                    held: None,
                }),
                None => Err((InitRefusal::Forbidden, "sign in first")),
            };
        };
        let Some(turn) = turn_within(&gate, class, HANDSHAKE_WAIT).await else {
            return Err((InitRefusal::AtCapacity, SIGNING_IN_BUSY));
        };
        let resolved = sessions::resolve(&db, &token, chrono::Utc::now(), Lookup::Use)
            .await
            .ok()
            .flatten();
        drop(turn);
        let Some((viewer, credential)) = resolved else {
            return Err((InitRefusal::Forbidden, "that token is not valid"));
        };
        Ok(Accepted {
            held: Some(Held {
                token,
                user_id: viewer.user_id,
            }),
            caller: Caller {
                viewer: Some(viewer),
                credential: Some(credential),
                session_token: None,
                via_cookie: false,
                origin: OriginCheck::Unknown,
            },
        })
    }
    .boxed()
}

/// Whether `token` no longer resolves (looked up without recording a use). Boxed: inline, this
/// rare read would size every idle socket's task.
fn has_ended(db: &Db, token: String) -> BoxFuture<'static, bool> {
    let db = db.clone();
    async move {
        matches!(
            sessions::resolve(&db, &token, chrono::Utc::now(), Lookup::Recheck).await,
            Ok(None)
        )
    }
    .boxed()
}

/// Where a running operation's messages come from.
enum Source {
    /// The library's execution of the request: its responses become `next` messages.
    Library(BoxStream<'static, Response>),
    /// A subscription handed over to the socket (`adopt`): its messages, ready to send.
    Served(Served),
}

/// An operation the socket runs.
struct Running {
    /// The serial of the subscribe that started it.
    serial: u64,
    source: Source,
}

/// What one of the running operations has to say.
enum Event {
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

/// The operations a socket runs, by id: exactly those its [`Protocol`] counts as running.
#[derive(Default)]
struct Operations(HashMap<String, Running>);

impl Operations {
    /// The next event of any running operation. An ended stream is removed at once.
    async fn next(&mut self) -> Event {
        futures::future::poll_fn(|cx| {
            let mut ended = None;
            let mut failed = None;
            for (id, running) in &mut self.0 {
                let polled = match &mut running.source {
                    Source::Library(stream) => stream.poll_next_unpin(cx).map(|response| {
                        response.map(|response| {
                            if response.data == async_graphql::Value::Null
                                && super::error_door::refused_before_running(&response.errors)
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

/// A socket, set up.
struct Socket {
    sink: Sink,
    incoming: futures::stream::SplitStream<WebSocket>,
    /// The upgrade's caller, until `connection_init` decides who the connection is.
    upgrade_caller: Option<Caller>,
    credential: Option<Held>,
    client: ClientAddress,
    class: Class,
    permits: Permits,
    state: GraphqlEndpoint,
}

/// Set a socket up, then run it. The setup is not part of the future that runs it: an async
/// function keeps its arguments for as long as it runs, and every idle socket would carry what
/// setting it up took (the websocket itself, before it was split).
fn serve(
    socket: WebSocket,
    state: GraphqlEndpoint,
    opened: Opened,
    client: ClientAddress,
    permits: Permits,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let (sink, incoming) = socket.split();
    // The token the connection was opened with, and whose it is, checked again now and then
    // and whenever one of its owner's credentials ends here: a socket ends with its session or
    // key.
    let Opened {
        caller,
        token,
        class,
    } = opened;
    let credential = token
        .zip(caller.viewer.as_ref().map(|viewer| viewer.user_id))
        .map(|(token, user_id)| Held { token, user_id });
    run(Socket {
        sink,
        incoming,
        upgrade_caller: Some(caller),
        credential,
        client,
        class,
        permits,
        state,
    })
}

/// What carrying out a step leaves the socket to do.
enum Then {
    /// Go on.
    Go,
    /// Send this frame, then go on.
    Send(String),
    /// Close with this code and reason, and end.
    Close(u16, String),
}

/// A connection's state beside the protocol's: what it runs, and the data its operations run
/// with once `connection_init` is accepted.
struct Connection {
    protocol: Protocol,
    operations: Operations,
    /// The connection's data for every operation (its caller and the rest), once initialised.
    data: Option<Arc<Data>>,
    /// The subscriptions its resolvers hand over, once initialised.
    adoptions: Option<Adoptions>,
    /// The `connection_init` being decided.
    init: Option<BoxFuture<'static, Result<Accepted, (InitRefusal, &'static str)>>>,
}

impl Connection {
    /// Carry out `step`, for a socket on `state`.
    fn carry_out(&mut self, step: Step, socket: &mut SocketSide<'_>) -> Then {
        match step {
            Step::Nothing | Step::Drop(_) => Then::Go,
            Step::Send(text) => Then::Send(text),
            Step::Close(code, reason) => Then::Close(code, reason),
            Step::Init(payload) => {
                let caller = socket.upgrade_caller.take().unwrap_or_default();
                self.init = Some(decide_init(
                    socket.state.db.clone(),
                    (socket.state.handshake_gate.clone(), socket.class),
                    payload,
                    caller,
                ));
                Then::Go
            }
            Step::Start {
                id,
                serial,
                mut request,
            } => {
                let Some(data) = &self.data else {
                    // The protocol starts nothing before the acknowledgement.
                    return Then::Close(4401, "Unauthorized".to_owned());
                };
                // Only this socket writes a ticket: the resolver hands over only a subscription
                // that carries one, for exactly this subscribe.
                request.data.insert(Ticket {
                    id: id.clone(),
                    serial,
                });
                let stream = socket
                    .state
                    .schema
                    .execute_stream_with_session_data(*request, data.clone());
                self.operations.0.insert(
                    id,
                    Running {
                        serial,
                        source: Source::Library(stream),
                    },
                );
                Then::Go
            }
            Step::Stop { id, serial } => {
                self.operations.0.remove(&id);
                if let Some(adoptions) = &self.adoptions {
                    adoptions.forget(&id, serial);
                }
                Then::Send(protocol::complete_message(&id))
            }
            Step::Serve(_) => Then::Go,
            Step::Complete(id) => Then::Send(protocol::complete_message(&id)),
        }
    }

    /// The `connection_init` was accepted as `accepted`: take the socket's place under the
    /// instance's cap if it has none yet, and keep the data its operations will run with.
    fn accepted(&mut self, accepted: Accepted, socket: &mut SocketSide<'_>) -> Step {
        // An anonymous upgrade takes its place under ASKLOOP_MAX_WEBSOCKETS now it has signed in.
        if socket.permits.socket.is_none() {
            match socket.state.sockets.clone().try_acquire_owned() {
                Ok(permit) => socket.permits.socket = Some(permit),
                Err(_) => {
                    return self
                        .protocol
                        .step(Input::InitRefused(InitRefusal::AtCapacity, AT_CAPACITY));
                }
            }
        }
        socket.permits.waiting = None;
        if let Some(held) = accepted.held {
            *socket.credential = Some(held);
        }
        let starts = SubscriptionStarts::new(socket.state.handshake_gate.clone(), socket.class);
        // The data of one-shot runs (`adopt`) is the same, less the hand-overs: they hold it.
        let mut session = Data::default();
        session.insert(accepted.caller.clone());
        session.insert(socket.client);
        session.insert(starts.clone());
        let adoptions = Adoptions::new(socket.state.schema.clone(), session);
        let mut data = Data::default();
        data.insert(accepted.caller);
        data.insert(socket.client);
        data.insert(starts);
        data.insert(adoptions.clone());
        self.data = Some(Arc::new(data));
        self.adoptions = Some(adoptions);
        self.protocol.step(Input::InitAccepted)
    }

    /// An operation failed as a whole: its `error` message, if the client still runs it; a
    /// hand-over it may have left is forgotten.
    fn failed(&mut self, id: &str, serial: u64, errors: &str) -> Step {
        if let Some(adoptions) = &self.adoptions {
            adoptions.forget(id, serial);
        }
        self.protocol.step(Input::Failed { id, serial, errors })
    }

    /// An operation's stream ended: serve its hand-over if that very subscribe is still
    /// running, complete it otherwise.
    fn ended(&mut self, id: String, serial: u64, library: bool) -> Step {
        let handed = match (&self.adoptions, library) {
            (Some(adoptions), true) => adoptions.take(&id, serial),
            _ => None,
        };
        let step = self.protocol.step(Input::Ended {
            id: &id,
            serial,
            handed_over: handed.is_some(),
        });
        if let (Step::Serve(_), Some(served)) = (&step, handed) {
            self.operations.0.insert(
                id,
                Running {
                    serial,
                    source: Source::Served(served),
                },
            );
        }
        step
    }
}

impl Drop for Connection {
    /// A hand-over not taken holds the connection's data; dropping it here lets both go.
    fn drop(&mut self) {
        if let Some(adoptions) = &self.adoptions {
            adoptions.clear();
        }
    }
}

/// What carrying out a step may touch of the socket itself.
struct SocketSide<'a> {
    state: &'a GraphqlEndpoint,
    upgrade_caller: &'a mut Option<Caller>,
    credential: &'a mut Option<Held>,
    permits: &'a mut Permits,
    client: ClientAddress,
    class: Class,
}

async fn run(socket: Socket) {
    let Socket {
        mut sink,
        mut incoming,
        mut upgrade_caller,
        mut credential,
        client,
        class,
        mut permits,
        state,
    } = socket;
    let live = &state.config.live;
    let mut connection = Connection {
        protocol: Protocol::new(live.max_subscriptions, live.inbox),
        operations: Operations::default(),
        data: None,
        adoptions: None,
        init: None,
    };
    let mut ping = tokio::time::interval(live.ping_every);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ping.tick().await;
    let mut last_heard = Instant::now();
    let mut last_checked = Instant::now();
    let init_deadline = tokio::time::sleep(live.init_timeout);
    futures::pin_mut!(init_deadline);
    // Shutdown, and credentials ended here, in one watched value: `seen` is how many ended
    // credentials this socket has taken into account. Marked changed so that a socket opened
    // while askloop is already stopping hears it at once.
    let mut notices = state.live.socket_notices();
    let mut seen = notices.borrow_and_update().ended;
    notices.mark_changed();

    'socket: loop {
        let mut side = SocketSide {
            state: &state,
            upgrade_caller: &mut upgrade_caller,
            credential: &mut credential,
            permits: &mut permits,
            client,
            class,
        };
        let step = tokio::select! {
            message = incoming.next() => {
                last_heard = Instant::now();
                match message {
                    Some(Ok(Message::Text(text))) => {
                        connection.protocol.step(Input::Frame(text.as_str()))
                    }
                    Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                        Ok(text) => connection.protocol.step(Input::Frame(text)),
                        Err(_) => Step::Close(4400, "Invalid message received: not UTF-8".to_owned()),
                    },
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                }
            }
            Some(decided) = OptionFuture::from(connection.init.as_mut()), if connection.init.is_some() => {
                connection.init = None;
                match decided {
                    Ok(accepted) => connection.accepted(accepted, &mut side),
                    Err((refusal, why)) => connection
                        .protocol
                        .step(Input::InitRefused(refusal, why)),
                }
            }
            event = connection.operations.next(), if !connection.operations.0.is_empty() => match event {
                // Every shared fan-out message passes here: it is sent as it is, unparsed.
                Event::Message(text) => {
                    if !send(&mut sink, Message::Text(text.into())).await {
                        tracing::info!("dropping a websocket peer that does not keep up");
                        break;
                    }
                    continue;
                }
                Event::Ended { id, serial, library } => connection.ended(id, serial, library),
                Event::Failed { id, serial, errors } => connection.failed(&id, serial, &errors),
            },
            _ = ping.tick() => {
                if last_heard.elapsed() > live.dead_after {
                    close(&mut sink, 4000, "no answer to pings").await;
                    break;
                }
                // The credential is looked up on its own, slower beat: at every ping it would
                // cost one query per socket per ping across every connected client.
                let due = last_checked.elapsed() >= live.recheck_every;
                let token = due.then(|| held(&credential)).flatten();
                if due {
                    last_checked = Instant::now();
                }
                if let Some((token, _)) = token
                    && connection.protocol.is_ready()
                    && has_ended(&state.db, token).await
                {
                    close(&mut sink, 4403, "the session or key has ended").await;
                    break;
                }
                if !send(&mut sink, Message::Ping(Vec::new().into())).await {
                    break;
                }
                continue;
            }
            changed = notices.changed() => {
                let owner = held(&credential).filter(|_| connection.protocol.is_ready());
                let (stopping, concerned) = match changed {
                    // The hub is gone: nothing will be served any more.
                    Err(_) => (true, false),
                    Ok(()) => {
                        let notice = notices.borrow_and_update();
                        let concerned = owner
                            .as_ref()
                            .is_some_and(|(_, user_id)| notice.concerns(*user_id, seen));
                        seen = notice.ended;
                        (notice.stopping, concerned)
                    }
                };
                if stopping {
                    // Going away: the client reconnects (to this instance restarted, or another).
                    close(&mut sink, 1001, "askloop is restarting").await;
                    break;
                }
                if let Some((token, _)) = owner.filter(|_| concerned)
                    && has_ended(&state.db, token).await
                {
                    close(&mut sink, 4403, "the session or key has ended").await;
                    break;
                }
                continue;
            }
            () = &mut init_deadline, if !connection.protocol.is_ready() => {
                connection.protocol.step(Input::InitTimedOut)
            }
        };
        // The step, then any frames held while `connection_init` was decided (once it is).
        let mut step = Some(step);
        while let Some(next) = step.take() {
            let mut side = SocketSide {
                state: &state,
                upgrade_caller: &mut upgrade_caller,
                credential: &mut credential,
                permits: &mut permits,
                client,
                class,
            };
            match connection.carry_out(next, &mut side) {
                Then::Go => {}
                Then::Send(text) => {
                    if !send(&mut sink, Message::Text(text.into())).await {
                        tracing::info!("dropping a websocket peer that does not keep up");
                        break 'socket;
                    }
                }
                Then::Close(code, reason) => {
                    close(&mut sink, code, &reason).await;
                    break 'socket;
                }
            }
            step = connection
                .protocol
                .held_frame()
                .map(|frame| connection.protocol.step(Input::Frame(&frame)));
        }
    }
    // Its operations go first: one still starting may hold a pooled database connection, and
    // not polled while the socket lingers, it would keep it from everyone else until the peer
    // answers the close. A hand-over holds the connection's data, which holds the hand-overs.
    drop(connection);
    // The closing handshake: read (and drop) what the peer still sends until it answers our
    // close, for a moment at most. Closing a TCP connection with unread data resets it, and a
    // reset can destroy our close frame before the peer reads it, leaving it no reason why.
    let _ = Box::pin(tokio::time::timeout(LINGER, async {
        while let Some(Ok(message)) = incoming.next().await {
            if matches!(message, Message::Close(_)) {
                break;
            }
        }
    }))
    .await;
}

/// The credential held in `credential`, if any: its token and owner.
fn held(credential: &Option<Held>) -> Option<(String, i64)> {
    credential.as_ref().map(|h| (h.token.clone(), h.user_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_handshake_that_waits_too_long_for_its_turn_is_told_to_come_back() {
        let gate = HandshakeGate::new(1, Duration::from_secs(60));
        let held = turn_within(&gate, Class::First, Duration::from_millis(10))
            .await
            .expect("a free turn is taken at once");
        assert!(
            turn_within(&gate, Class::First, Duration::from_millis(20))
                .await
                .is_none(),
            "every turn held: the wait runs out"
        );
        // The one that gave up left nothing behind: the turn given back is free again.
        drop(held);
        assert!(
            turn_within(&gate, Class::Reconnection, Duration::from_millis(10))
                .await
                .is_some()
        );
        let refused = busy();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            refused.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("1"))
        );
    }

    #[test]
    fn a_socket_is_a_reconnection_only_when_its_address_says_so() {
        for query in [
            None,
            Some(""),
            Some("reconnect=0"),
            Some("reconnected=1&x=2"),
        ] {
            assert_eq!(class_of(query), Class::First, "{query:?}");
        }
        for query in ["reconnect=1", "reconnect", "a=b&reconnect=yes"] {
            assert_eq!(class_of(Some(query)), Class::Reconnection, "{query}");
        }
    }

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
