//! One websocket's life once upgraded: the loop that reads frames into the protocol's state
//! machine and carries out its steps, runs the operations, pings and closes a silent peer,
//! enforces the `connection_init` deadline, ends the socket with its credential and closes it
//! with 1001 when askloop stops (docs/architecture.md#over-the-websocket).

use std::sync::Arc;
use std::time::Duration;

use async_graphql::Data;
use axum::extract::ws::{Message, WebSocket};
use futures::StreamExt;
use futures::future::{BoxFuture, OptionFuture};
use tokio::time::{Instant, MissedTickBehavior};

use super::gate::Class;
use super::operations::{Event, Operations, Running, Source};
use super::protocol::{self, AT_CAPACITY, InitRefusal, Input, Protocol, Step};
use super::send::{Sink, close, send};
use super::sign_in::{Accepted, Held, decide_init, has_ended, held};
use super::{Opened, Permits};
use crate::auth::{Caller, ClientAddress};
use crate::graphql::GraphqlEndpoint;
use crate::graphql::live::SubscriptionStarts;
use crate::live::adopt::Adoptions;
use crate::live::adopt::ticket::Ticket;

/// How long a closing socket waits for its peer's close.
const LINGER: Duration = Duration::from_secs(2);

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
pub(super) fn serve(
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
