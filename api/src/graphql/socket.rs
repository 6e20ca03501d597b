//! `GET /graphql/ws`: the `graphql-transport-ws` protocol (what the `graphql-ws` client speaks).
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
//! initialise within the configured time (10 s) is closed with 4408. A socket ends (4403) as soon as its
//! session or key is ended or revoked through this instance, and within a minute when that
//! happens on another instance or the credential expires. The server pings (every 15 s by
//! default) and drops a peer that has not answered for three times as long. A peer that does not
//! take a message within [`SEND_TIMEOUT`] is dropped: its subscriptions would otherwise fall
//! behind forever.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::db::Db;
use async_graphql::Data;
use async_graphql::http::{WebSocket as GraphqlSocket, WebSocketProtocols, WsMessage};
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::{Instant, MissedTickBehavior};

use super::GraphqlEndpoint;
use super::adopt::{self, Adopted, Adoptions, Claim};
use crate::admission::OpenSlot;
use crate::auth::{Caller, ClientAddress, OriginCheck, bearer_token, resolve_caller};
use crate::service::sessions::{self, Lookup};

/// How long one message may take to send.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a closing socket waits for its peer's close.
const LINGER: Duration = Duration::from_secs(2);

/// Upgrade to a websocket speaking the negotiated GraphQL protocol.
pub async fn upgrade(
    State(state): State<GraphqlEndpoint>,
    client: ClientAddress,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    // The first subprotocol the client offers that we speak; `graphql-transport-ws` is what
    // current clients send.
    let protocol = headers
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|p| p.trim().parse::<WebSocketProtocols>().ok());
    let Some(protocol) = protocol else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            "offer the graphql-transport-ws subprotocol",
        )
            .into_response();
    };
    let limits = state.config.live;
    let upgrade_caller =
        match resolve_caller(&headers, &state.db, &state.config, chrono::Utc::now()).await {
            Ok(caller) if caller.origin == OriginCheck::Same || !caller.via_cookie => caller,
            _ => Caller::default(),
        };
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
                socket: Arc::new(Mutex::new(Some(socket))),
                waiting: None,
            })
    } else {
        state
            .uninitialised
            .clone()
            .try_acquire_owned()
            .map(|waiting| Permits {
                socket: Arc::new(Mutex::new(None)),
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
        .protocols(async_graphql::http::ALL_WEBSOCKET_PROTOCOLS);
    match permits {
        Ok(permits) => upgrade.on_upgrade(move |socket| {
            serve(
                socket,
                state,
                protocol,
                Opened {
                    caller: upgrade_caller,
                    token: upgrade_token,
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

/// Why a socket past the instance-wide cap is closed (1013).
const AT_CAPACITY: &str = "askloop is at its websocket limit; try again later";

/// 429 with `Retry-After` (whole seconds, at least one), before any upgrade.
fn too_many(wait: Duration, why: &'static str) -> Response {
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
/// The sends are boxed futures: a socket's task lives as long as its peer stays, mostly idle,
/// and inline these (a timer each) would size every idle socket for the moment it sends.
fn send(sink: &mut Sink, message: Message) -> BoxFuture<'_, bool> {
    tokio::time::timeout(SEND_TIMEOUT, sink.send(message))
        .map(|sent| matches!(sent, Ok(Ok(()))))
        .boxed()
}

/// What a socket holds of the caps while it is open.
struct Permits {
    /// Its place under ASKLOOP_MAX_WEBSOCKETS: taken at the upgrade when it came signed in, at
    /// `connection_init` otherwise (shared with the protocol's init callback, which takes it).
    socket: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
    /// An anonymous socket's places among those waiting to sign in, given back once it has.
    waiting: Option<Waiting>,
}

/// An anonymous socket's places while it has not signed in.
struct Waiting {
    _instance: OwnedSemaphorePermit,
    _address: Option<OpenSlot>,
}

/// Why `connection_init` was refused, for the close code the protocol prescribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InitRefusal {
    /// No credential, or one that is not valid: 4403.
    Forbidden,
    /// Signed in, but the instance holds as many signed-in sockets as it may: 1013.
    AtCapacity,
}

/// The operations a peer has running, by id, so one socket cannot start without bound; each
/// with the serial number of the subscribe that started it, so a hand-over from an earlier
/// subscribe under the same id is never taken for it.
#[derive(Default)]
struct Operations {
    running: HashMap<String, u64>,
    subscribes: u64,
}

/// What a message from the peer asks of its operations.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    /// Start operation `id`, as the subscribe numbered `serial`.
    Start(String, u64),
    /// Stop operation `id`.
    Stop(String),
    /// Start one more than a connection may run.
    TooMany,
    /// Nothing the socket itself looks at.
    Other,
}

/// The parts of a `graphql-transport-ws` message the socket itself looks at.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
}

impl Operations {
    /// A message from the peer: what it asks of the operations.
    fn heard(&mut self, text: &str, max: usize) -> Heard {
        let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(text) else {
            // Not ours to judge: the protocol answers a malformed message itself.
            return Heard::Other;
        };
        match (envelope.kind.as_ref(), envelope.id) {
            ("subscribe" | "start", Some(id)) => {
                let id = id.into_owned();
                self.subscribes += 1;
                self.running.insert(id.clone(), self.subscribes);
                if self.running.len() <= max {
                    Heard::Start(id, self.subscribes)
                } else {
                    Heard::TooMany
                }
            }
            ("complete" | "stop", Some(id)) => {
                self.running.remove(id.as_ref());
                Heard::Stop(id.into_owned())
            }
            _ => Heard::Other,
        }
    }

    /// The serial of the subscribe running as operation `id`, if one is.
    fn serial(&self, id: &str) -> Option<u64> {
        self.running.get(id).copied()
    }

    /// Operation `id`, served by the socket, has ended: it is no longer running.
    fn ended(&mut self, id: &str) {
        self.running.remove(id);
    }

    /// A message to the peer: an operation that completed or failed is no longer running.
    fn said(&mut self, text: &str) {
        if let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(text)
            && matches!(envelope.kind.as_ref(), "complete" | "error")
            && let Some(id) = envelope.id
        {
            self.running.remove(id.as_ref());
        }
    }
}

/// Set a socket up, then run it. The setup is not part of the future that runs it: an async
/// function keeps its arguments for as long as it runs, and every idle socket would carry what
/// setting it up took (the websocket itself, before it was split; the caller, the client).
fn serve(
    socket: WebSocket,
    state: GraphqlEndpoint,
    protocol: WebSocketProtocols,
    opened: Opened,
    client: ClientAddress,
    permits: Permits,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let limits = state.config.live;
    let (sink, incoming) = socket.split();
    let (to_graphql, from_client) = tokio::sync::mpsc::channel::<Inbound>(limits.inbox.max(1));
    let operations = Operations::default();
    // The token the connection was opened with, and whose it is, checked again now and then
    // and whenever one of its owner's credentials ends here: a socket ends with its session or
    // key.
    let Opened {
        caller: upgrade_caller,
        token: upgrade_token,
    } = opened;
    let from_upgrade = upgrade_token
        .zip(upgrade_caller.viewer.as_ref().map(|viewer| viewer.user_id))
        .map(|(token, user_id)| Held { token, user_id });
    let credential = Arc::new(std::sync::Mutex::new(from_upgrade));
    let initialised = Arc::new(AtomicBool::new(false));

    let refusal = Arc::new(OnceLock::new());
    let init_state = state.clone();
    let init_flag = initialised.clone();
    let refused = refusal.clone();
    let init_credential = credential.clone();
    let init_place = permits.socket.clone();
    // The subscriptions this connection's queue resolvers hand over to be served here.
    let adoptions = Adoptions::new(state.schema.clone(), protocol);
    let claims = adoptions.clone();
    let on_init = move |payload: serde_json::Value| async move {
        let token = payload
            .get("token")
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        let caller = match token {
            Some(token) => {
                let resolved =
                    sessions::resolve(&init_state.db, &token, chrono::Utc::now(), Lookup::Use)
                        .await
                        .ok()
                        .flatten();
                let Some(resolved) = resolved else {
                    let _ = refused.set(InitRefusal::Forbidden);
                    return Err(async_graphql::Error::new("that token is not valid"));
                };
                if let Ok(mut held) = init_credential.lock() {
                    *held = Some(Held {
                        token: token.clone(),
                        user_id: resolved.0.user_id,
                    });
                }
                Caller {
                    viewer: Some(resolved.0),
                    credential: Some(resolved.1),
                    session_token: None,
                    via_cookie: false,
                    origin: OriginCheck::Unknown,
                }
            }
            None => upgrade_caller,
        };
        if caller.viewer.is_none() {
            let _ = refused.set(InitRefusal::Forbidden);
            return Err(async_graphql::Error::new("sign in first"));
        }
        // An anonymous upgrade takes its place under ASKLOOP_MAX_WEBSOCKETS now it has signed in.
        if let Ok(mut place) = init_place.lock()
            && place.is_none()
        {
            match init_state.sockets.clone().try_acquire_owned() {
                Ok(permit) => *place = Some(permit),
                Err(_) => {
                    let _ = refused.set(InitRefusal::AtCapacity);
                    return Err(async_graphql::Error::new(AT_CAPACITY));
                }
            }
        }
        init_flag.store(true, Ordering::SeqCst);
        let mut data = Data::default();
        let starts = super::live::SubscriptionStarts::default();
        if let Some(adoptions) = adoptions {
            // The same data for the one-shot runs of what this connection serves itself.
            let mut session = Data::default();
            session.insert(caller.clone());
            session.insert(client);
            session.insert(starts.clone());
            adoptions.initialised(session);
            data.insert(adoptions);
        }
        data.insert(caller);
        data.insert(client);
        data.insert(starts);
        Ok(data)
    };
    // Boxed rather than pinned on the stack, so it can be dropped the moment the loop ends.
    let graphql = Box::pin(
        GraphqlSocket::new(state.schema.clone(), tokio_stream_of(from_client), protocol)
            .on_connection_init(on_init),
    );
    run(Socket {
        sink,
        incoming,
        graphql,
        to_graphql,
        operations,
        credential,
        initialised,
        refusal,
        claims,
        permits,
        state,
    })
}

/// A message from the peer, on its way to the protocol. One pointer wide: the queue's block of
/// slots (32 of them) is allocated for every socket, idle or not, and messages are rare, so
/// the second allocation per message is the cheaper side.
#[allow(clippy::box_collection)]
struct Inbound(Box<Vec<u8>>);

impl From<&[u8]> for Inbound {
    fn from(bytes: &[u8]) -> Self {
        Self(Box::new(bytes.to_vec()))
    }
}

impl AsRef<[u8]> for Inbound {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The credential a socket was opened with.
struct Held {
    token: String,
    user_id: i64,
}

/// The credential held in `credential`, if any: its token and owner.
fn held(credential: &std::sync::Mutex<Option<Held>>) -> Option<(String, i64)> {
    credential
        .lock()
        .ok()
        .and_then(|held| held.as_ref().map(|h| (h.token.clone(), h.user_id)))
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

/// A socket, set up.
struct Socket<G> {
    sink: Sink,
    incoming: futures::stream::SplitStream<WebSocket>,
    /// The protocol's side: messages from the peer go in through `to_graphql`, and come out
    /// as the messages to send.
    graphql: Pin<Box<G>>,
    to_graphql: tokio::sync::mpsc::Sender<Inbound>,
    operations: Operations,
    credential: Arc<std::sync::Mutex<Option<Held>>>,
    initialised: Arc<AtomicBool>,
    refusal: Arc<OnceLock<InitRefusal>>,
    claims: Option<Adoptions>,
    permits: Permits,
    state: GraphqlEndpoint,
}

async fn run<G>(socket: Socket<G>)
where
    G: futures::Stream<Item = WsMessage> + Send,
{
    let Socket {
        mut sink,
        mut incoming,
        mut graphql,
        to_graphql,
        mut operations,
        credential,
        initialised,
        refusal,
        claims,
        mut permits,
        state,
    } = socket;
    // The operations handed over by the library, served here.
    let mut adopted = Adopted::default();
    let live = &state.config.live;
    let limits = live;
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

    loop {
        tokio::select! {
            message = incoming.next() => {
                last_heard = Instant::now();
                let bytes = match message {
                    Some(Ok(Message::Text(text))) => match operations.heard(text.as_str(), limits.max_subscriptions) {
                        Heard::TooMany => {
                            let reason = format!("at most {} operations at once on one connection", limits.max_subscriptions);
                            close(&mut sink, 4429, &reason).await;
                            break;
                        }
                        Heard::Start(id, serial) => {
                            // A new operation under a served id replaces it, as the library
                            // replaces its own.
                            adopted.remove(&id);
                            match claims.as_ref().and_then(|_| adopt::tagged(text.as_str(), serial)) {
                                Some(tagged) => Inbound::from(tagged.as_bytes()),
                                None => Inbound::from(text.as_str().as_bytes()),
                            }
                        }
                        Heard::Stop(id) if adopted.remove(&id) => {
                            if !send(&mut sink, Message::Text(adopt::complete_message(&id).into())).await {
                                break;
                            }
                            continue;
                        }
                        Heard::Stop(_) => {
                            // A hand-over of it that came before will never be served.
                            Adoptions::forget_stopped(claims.as_ref(), |id| operations.serial(id));
                            Inbound::from(text.as_str().as_bytes())
                        }
                        Heard::Other => Inbound::from(text.as_str().as_bytes()),
                    },
                    Some(Ok(Message::Binary(bytes))) => Inbound::from(bytes.as_ref()),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                };
                // Never wait here: the protocol that drains this queue is polled by this same
                // loop, so waiting for room would stall the socket (and the database
                // connections its operations hold). A peer that outruns it is flooding.
                match to_graphql.try_send(bytes) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        close(&mut sink, 1008, "too many messages at once").await;
                        break;
                    }
                    Err(TrySendError::Closed(_)) => break,
                }
            }
            outgoing = graphql.next() => match outgoing {
                Some(WsMessage::Text(text)) => {
                    match Adoptions::claim(claims.as_ref(), &text, |id| operations.serial(id)) {
                        Claim::Adopt(id, served) => {
                            adopted.insert(id, served);
                            continue;
                        }
                        Claim::Drop => continue,
                        Claim::Send => {}
                    }
                    operations.said(&text);
                    if permits.waiting.is_some() && initialised.load(Ordering::SeqCst) {
                        permits.waiting = None;
                    }
                    if !send(&mut sink, Message::Text(text.into())).await {
                        tracing::info!("dropping a websocket peer that does not keep up");
                        break;
                    }
                }
                Some(WsMessage::Close(code, reason)) => {
                    let (code, reason) = protocol_close(code, reason, refusal.get().copied());
                    close(&mut sink, code, &reason).await;
                    break;
                }
                None => break,
            },
            (id, message) = adopted.next(), if !adopted.is_empty() => {
                // A served stream's messages are `next`s; only its end completes the operation.
                // Nothing here is parsed: this branch carries every shared fan-out message.
                let text = match message {
                    Some(text) => text,
                    None => {
                        operations.ended(&id);
                        adopt::complete_message(&id)
                    }
                };
                if !send(&mut sink, Message::Text(text.into())).await {
                    tracing::info!("dropping a websocket peer that does not keep up");
                    break;
                }
            }
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
                    && initialised.load(Ordering::SeqCst)
                    && has_ended(&state.db, token).await
                {
                    close(&mut sink, 4403, "the session or key has ended").await;
                    break;
                }
                if !send(&mut sink, Message::Ping(Vec::new().into())).await {
                    break;
                }
            }
            changed = notices.changed() => {
                let owner = held(&credential).filter(|_| initialised.load(Ordering::SeqCst));
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
            }
            () = &mut init_deadline, if !initialised.load(Ordering::SeqCst) => {
                close(&mut sink, 4408, "Connection initialisation timeout").await;
                break;
            }
        }
    }
    // Its operations go first: one still starting may hold a pooled database connection, and
    // not polled while the socket lingers, it would keep it from everyone else until the peer
    // answers the close.
    drop(adopted);
    if let Some(claims) = &claims {
        claims.clear();
    }
    drop(graphql);
    drop(to_graphql);
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

/// The close codes `graphql-transport-ws` prescribes, where the library uses generic ones:
/// 4401 for a subscribe before the acknowledgement, 4403 for a refused `connection_init`, 4400
/// for a message that is not the protocol's; and 1013 (try again later) for a `connection_init`
/// refused only because the instance is at its websocket limit.
fn protocol_close(code: u16, reason: String, refusal: Option<InitRefusal>) -> (u16, String) {
    match (code, refusal) {
        (1011, _) => (4401, "Unauthorized".to_owned()),
        (1002, Some(InitRefusal::Forbidden)) => (
            4403,
            format!("Forbidden: {reason}; send a session token or API key as payload.token"),
        ),
        (1002, Some(InitRefusal::AtCapacity)) => (1013, reason),
        (1002, None) => (4400, reason),
        _ => (code, reason),
    }
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Inbound>,
) -> impl futures::Stream<Item = Inbound> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscribe(id: &str) -> String {
        format!(
            r#"{{"type":"subscribe","id":"{id}","payload":{{"query":"subscription {{ awaitingMe {{ change }} }}"}}}}"#
        )
    }

    fn complete(id: &str) -> String {
        format!(r#"{{"type":"complete","id":"{id}"}}"#)
    }

    #[test]
    fn every_subscribe_gets_its_own_serial_and_the_id_runs_under_the_latest() {
        let mut operations = Operations::default();
        assert_eq!(
            operations.heard(&subscribe("q"), 5),
            Heard::Start("q".into(), 1)
        );
        assert_eq!(
            operations.heard(&subscribe("q"), 5),
            Heard::Start("q".into(), 2)
        );
        assert_eq!(operations.serial("q"), Some(2));
        assert_eq!(operations.heard(&complete("q"), 5), Heard::Stop("q".into()));
        assert_eq!(operations.serial("q"), None);
    }

    #[test]
    fn a_served_operation_counts_under_the_cap_until_its_complete_is_sent() {
        let mut operations = Operations::default();
        assert_eq!(
            operations.heard(&subscribe("a"), 1),
            Heard::Start("a".into(), 1)
        );
        // Adopted: the library's `complete` is claimed, never `said`, so "a" still counts.
        assert_eq!(operations.heard(&subscribe("b"), 1), Heard::TooMany);
        let mut operations = Operations::default();
        operations.heard(&subscribe("a"), 1);
        operations.said(&complete("a"));
        assert_eq!(
            operations.heard(&subscribe("b"), 1),
            Heard::Start("b".into(), 2)
        );
    }

    /// The race, message by message: subscribe, the resolver hands over, the client completes,
    /// then the library completes its empty stream. Nothing is served, and the cap counts
    /// nothing for it.
    #[test]
    fn a_complete_racing_the_hand_over_leaves_nothing_counted() {
        let mut operations = Operations::default();
        let Heard::Start(id, serial) = operations.heard(&subscribe("q"), 1) else {
            panic!("a start");
        };
        assert_eq!((id.as_str(), serial), ("q", 1));
        assert_eq!(operations.heard(&complete("q"), 1), Heard::Stop("q".into()));
        // What `Adoptions::claim` is told about "q" when the library's `complete` comes out.
        assert_eq!(operations.serial("q"), None);
        assert_eq!(
            operations.heard(&subscribe("r"), 1),
            Heard::Start("r".into(), 2)
        );
    }

    #[test]
    fn an_error_sent_ends_an_operation_and_a_next_does_not() {
        let mut operations = Operations::default();
        operations.heard(&subscribe("a"), 2);
        operations.said(r#"{"type":"next","id":"a","payload":{"data":{"t":"\"complete\""}}}"#);
        assert_eq!(operations.serial("a"), Some(1));
        operations.said(r#"{"type":"error","id":"a","payload":[]}"#);
        assert_eq!(operations.serial("a"), None);
    }

    #[test]
    fn malformed_and_other_messages_are_left_to_the_protocol() {
        let mut operations = Operations::default();
        assert_eq!(operations.heard("not json", 1), Heard::Other);
        assert_eq!(operations.heard(r#"{"type":"ping"}"#, 1), Heard::Other);
        assert_eq!(operations.heard(r#"{"type":"subscribe"}"#, 1), Heard::Other);
    }

    #[test]
    fn the_library_close_codes_become_the_protocols() {
        assert_eq!(protocol_close(1011, "x".into(), None).0, 4401);
        assert_eq!(
            protocol_close(1002, "x".into(), Some(InitRefusal::Forbidden)).0,
            4403
        );
        assert_eq!(
            protocol_close(1002, "x".into(), Some(InitRefusal::AtCapacity)).0,
            1013
        );
        assert_eq!(protocol_close(1002, "x".into(), None).0, 4400);
        assert_eq!(protocol_close(4409, "x".into(), None).0, 4409);
    }
}
