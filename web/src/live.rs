//! Live updates: one `graphql-transport-ws` connection to `/graphql/ws` for the whole app,
//! carrying every page's subscriptions side by side (the protocol's operation ids keep them
//! apart), so moving between pages never reconnects.
//!
//! The connection opens with the first subscription; the browser sends the session cookie with
//! the upgrade (same origin), so `connection_init` carries no token. When the socket drops,
//! every subscription is told at once and the client reconnects after a random pause of up to
//! 1 s, the ceiling doubling with each failed attempt up to 30 s ([`reconnect_pause`]), so
//! thousands of dashboards dropped at once (a restart, a fail-over) come back spread out
//! instead of in one storm; every acknowledged (re)subscription is reported as
//! [`LiveEvent::Connected`], which is the page's cue to re-read what it shows, since changes
//! made while it was away were not delivered. After "fell behind" (a `CONFLICT` error, then
//! `complete`) the subscription starts again the same way; after any other error it stays ended.
//! A connection refused at `connection_init` (4403: no session) ends every subscription with
//! `UNAUTHENTICATED` instead of reconnecting.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use graphql_client::GraphQLQuery;
use leptos::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CloseEvent, MessageEvent, WebSocket};

use crate::api::{ApiError, ErrorCode, GraphqlError, RawResponse, first_error};

/// What a subscription reports to its page.
#[derive(Debug, Clone)]
pub enum LiveEvent<T> {
    /// (Re)subscribed: re-read the page's data.
    Connected,
    /// One result of the subscription, typed by its operation.
    Next(T),
    /// The server refused or ended the subscription with an error.
    Failed(ApiError),
    /// The connection dropped; a reconnection is scheduled.
    Dropped,
}

/// A live event before its payload is typed.
enum RawEvent {
    Connected,
    Next(RawResponse),
    Failed(ApiError),
    Dropped,
}

#[derive(Deserialize)]
struct ServerMessage {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    payload: Value,
}

struct Subscription {
    /// The `subscribe` payload: query, variables and operation name.
    payload: Value,
    handler: Rc<dyn Fn(RawEvent)>,
    /// The last error's code, to tell "fell behind" (start again) from a refusal (stop).
    last_failure: Option<ErrorCode>,
    /// Ended by the server for good.
    finished: bool,
}

struct Handlers {
    _open: Closure<dyn FnMut()>,
    _message: Closure<dyn FnMut(MessageEvent)>,
    _close: Closure<dyn FnMut(CloseEvent)>,
}

#[derive(Default)]
struct Client {
    socket: Option<WebSocket>,
    handlers: Option<Handlers>,
    /// The server acknowledged `connection_init` on the current socket.
    acknowledged: bool,
    /// Failed attempts since the last acknowledged connection.
    attempts: u32,
    reconnect_scheduled: bool,
    next_id: u32,
    subscriptions: BTreeMap<u32, Subscription>,
}

type Shared = Rc<RefCell<Client>>;

/// The app's live connection, shared through the context (see [`Live::provide`]).
#[derive(Clone, Copy)]
pub struct Live(StoredValue<Shared, LocalStorage>);

/// A subscription's handle, to end it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriptionId(u32);

impl Live {
    /// Create the connection (opened on first use) and provide it to every page below.
    pub fn provide() -> Self {
        let live = Self(StoredValue::new_local(Rc::default()));
        provide_context(live);
        live
    }

    /// The app's live connection.
    pub fn get() -> Self {
        expect_context()
    }

    fn client(self) -> Shared {
        self.0.get_value()
    }

    /// Start operation `Q` (a subscription) with `variables`; `on_event` hears everything that
    /// happens to it until [`Live::unsubscribe`].
    pub fn subscribe<Q: GraphQLQuery + 'static>(
        self,
        variables: Q::Variables,
        on_event: impl Fn(LiveEvent<Q::ResponseData>) + 'static,
    ) -> SubscriptionId {
        let handler: Rc<dyn Fn(RawEvent)> = Rc::new(move |event| {
            on_event(match event {
                RawEvent::Connected => LiveEvent::Connected,
                RawEvent::Dropped => LiveEvent::Dropped,
                RawEvent::Failed(err) => LiveEvent::Failed(err),
                RawEvent::Next(raw) => match raw.into_data::<Q>() {
                    Ok(data) => LiveEvent::Next(data),
                    Err(err) => LiveEvent::Failed(err),
                },
            })
        });
        let payload = serde_json::to_value(Q::build_query(variables)).unwrap_or_default();
        let client = self.client();
        let (id, acknowledged) = {
            let mut c = client.borrow_mut();
            c.next_id += 1;
            let id = c.next_id;
            c.subscriptions.insert(
                id,
                Subscription {
                    payload,
                    handler,
                    last_failure: None,
                    finished: false,
                },
            );
            (id, c.acknowledged)
        };
        if acknowledged {
            send_subscribe(&client, id);
            // Told after the page has finished setting up, as it would be by a fresh socket.
            let later = client.clone();
            leptos::task::spawn_local(async move { emit(&later, id, RawEvent::Connected) });
        } else if client.borrow().socket.is_none() {
            connect(&client);
        }
        SubscriptionId(id)
    }

    /// End a subscription; the connection stays open for the others (and the next page).
    pub fn unsubscribe(self, id: SubscriptionId) {
        let client = self.client();
        let mut c = client.borrow_mut();
        let Some(subscription) = c.subscriptions.remove(&id.0) else {
            return;
        };
        if c.acknowledged
            && !subscription.finished
            && let Some(socket) = &c.socket
        {
            send(
                socket,
                &json!({ "id": id.0.to_string(), "type": "complete" }),
            );
        }
    }

    /// Drop the connection and open a new one for whoever is signed in now: the server
    /// authenticates a socket once, when it opens.
    pub fn restart(self) {
        let client = self.client();
        let active = {
            let mut c = client.borrow_mut();
            close_quietly(&mut c);
            c.attempts = 0;
            c.subscriptions.values().any(|s| !s.finished)
        };
        if active {
            connect(&client);
        }
    }
}

/// Subscribe to `Q` for as long as the calling component lives.
pub fn subscribe<Q: GraphQLQuery + 'static>(
    variables: Q::Variables,
    on_event: impl Fn(LiveEvent<Q::ResponseData>) + 'static,
) {
    let live = Live::get();
    let id = live.subscribe::<Q>(variables, on_event);
    on_cleanup(move || live.unsubscribe(id));
}

/// The socket's address; a reconnection says so (`?reconnect=1`): when thousands of dashboards
/// reconnect at once, askloop serves sockets opened for the first time ahead of them.
fn socket_url(reconnecting: bool) -> String {
    let location = window().location();
    let scheme = match location.protocol().as_deref() {
        Ok("https:") => "wss",
        _ => "ws",
    };
    let host = location.host().unwrap_or_default();
    let query = if reconnecting { "?reconnect=1" } else { "" };
    format!("{scheme}://{host}/graphql/ws{query}")
}

fn send(socket: &WebSocket, message: &Value) {
    let _ = socket.send_with_str(&message.to_string());
}

/// Tell subscription `id` about `event`. No borrow is held while the page reacts, so it may
/// subscribe or unsubscribe from inside.
fn emit(client: &Shared, id: u32, event: RawEvent) {
    let handler = client
        .borrow()
        .subscriptions
        .get(&id)
        .map(|s| s.handler.clone());
    if let Some(handler) = handler {
        handler(event);
    }
}

/// The error a subscription ends with when askloop refuses the connection's sign-in.
fn signed_out() -> RawEvent {
    RawEvent::Failed(ApiError {
        code: ErrorCode::Unauthenticated,
        reason: None,
        message: "Sign in to receive live updates.".into(),
    })
}

/// End every subscription still running with `event`: none of them starts again.
fn end_all(client: &Shared, event: fn() -> RawEvent) {
    let ids: Vec<u32> = client
        .borrow_mut()
        .subscriptions
        .iter_mut()
        .filter(|(_, s)| !s.finished)
        .map(|(id, s)| {
            s.finished = true;
            *id
        })
        .collect();
    for id in ids {
        emit(client, id, event());
    }
}

/// Tell every subscription still running about `event`.
fn broadcast(client: &Shared, event: fn() -> RawEvent) {
    let ids: Vec<u32> = client
        .borrow()
        .subscriptions
        .iter()
        .filter(|(_, s)| !s.finished)
        .map(|(id, _)| *id)
        .collect();
    for id in ids {
        emit(client, id, event());
    }
}

fn send_subscribe(client: &Shared, id: u32) {
    let mut c = client.borrow_mut();
    let Some(subscription) = c.subscriptions.get_mut(&id) else {
        return;
    };
    subscription.last_failure = None;
    let message = json!({
        "id": id.to_string(),
        "type": "subscribe",
        "payload": subscription.payload,
    });
    if let Some(socket) = &c.socket {
        send(socket, &message);
    }
}

fn close_quietly(c: &mut Client) {
    if let Some(old) = c.socket.take() {
        old.set_onopen(None);
        old.set_onmessage(None);
        old.set_onclose(None);
        let _ = old.close();
    }
    c.handlers = None;
    c.acknowledged = false;
}

fn connect(client: &Shared) {
    let reconnecting = client.borrow().attempts > 0;
    let Ok(socket) = WebSocket::new_with_str(&socket_url(reconnecting), "graphql-transport-ws")
    else {
        schedule_reconnect(client);
        return;
    };

    let on_open = {
        let socket = socket.clone();
        Closure::<dyn FnMut()>::new(move || {
            send(
                &socket,
                &json!({ "type": "connection_init", "payload": {} }),
            );
        })
    };

    let on_message = {
        let client = client.clone();
        let socket = socket.clone();
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let Some(text) = event.data().as_string() else {
                return;
            };
            let Ok(message) = serde_json::from_str::<ServerMessage>(&text) else {
                return;
            };
            let id = message.id.as_deref().and_then(|id| id.parse::<u32>().ok());
            match (message.kind.as_str(), id) {
                ("connection_ack", _) => acknowledged(&client),
                ("ping", _) => send(&socket, &json!({ "type": "pong" })),
                ("next", Some(id)) => {
                    let Ok(mut result) = crate::decode::from_value::<RawResponse>(message.payload)
                    else {
                        return;
                    };
                    match result.take_error() {
                        Some(err) => failed(&client, id, err, false),
                        None => emit(&client, id, RawEvent::Next(result)),
                    }
                }
                ("error", Some(id)) => {
                    let errors = crate::decode::from_value::<Vec<GraphqlError>>(message.payload)
                        .unwrap_or_default();
                    let err = first_error(errors)
                        .unwrap_or_else(|| ApiError::network("the subscription was refused"));
                    failed(&client, id, err, true);
                }
                ("complete", Some(id)) => completed(&client, id),
                _ => {}
            }
        })
    };

    let on_close = {
        let client = client.clone();
        Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
            let (active, was_acknowledged) = {
                let mut c = client.borrow_mut();
                c.socket = None;
                let was_acknowledged = std::mem::replace(&mut c.acknowledged, false);
                (
                    c.subscriptions.values().any(|s| !s.finished),
                    was_acknowledged,
                )
            };
            if !active {
                return;
            }
            // 4403 before the acknowledgement: askloop refused the connection itself (no
            // session, or it has ended). Coming back as the same nobody would be refused again,
            // so every subscription ends as a refused subscribe would. After the
            // acknowledgement it is a session that ended while open: reconnecting picks up a
            // newer session if there is one, and is refused like this otherwise.
            if event.code() == 4403 && !was_acknowledged {
                end_all(&client, signed_out);
                return;
            }
            broadcast(&client, || RawEvent::Dropped);
            schedule_reconnect(&client);
        })
    };

    socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));

    let mut c = client.borrow_mut();
    close_quietly(&mut c);
    c.socket = Some(socket);
    c.handlers = Some(Handlers {
        _open: on_open,
        _message: on_message,
        _close: on_close,
    });
}

/// The server took `connection_init`: (re)start every subscription still running.
fn acknowledged(client: &Shared) {
    let ids: Vec<u32> = {
        let mut c = client.borrow_mut();
        c.acknowledged = true;
        c.attempts = 0;
        c.subscriptions
            .iter()
            .filter(|(_, s)| !s.finished)
            .map(|(id, _)| *id)
            .collect()
    };
    for id in &ids {
        send_subscribe(client, *id);
    }
    for id in ids {
        emit(client, id, RawEvent::Connected);
    }
}

/// The server reported an error for subscription `id`; `ended` when it ends the subscription
/// by itself (an `error` message, which no `complete` follows).
fn failed(client: &Shared, id: u32, err: ApiError, ended: bool) {
    if let Some(subscription) = client.borrow_mut().subscriptions.get_mut(&id) {
        subscription.last_failure = Some(err.code.clone());
        subscription.finished |= ended;
    }
    emit(client, id, RawEvent::Failed(err));
}

/// The server ended subscription `id`: after "fell behind" it starts again and the page
/// re-syncs; otherwise it stays ended.
fn completed(client: &Shared, id: u32) {
    let fell_behind = {
        let mut c = client.borrow_mut();
        let Some(subscription) = c.subscriptions.get_mut(&id) else {
            return;
        };
        let fell_behind = subscription.last_failure == Some(ErrorCode::Conflict);
        subscription.finished = !fell_behind;
        fell_behind
    };
    if fell_behind {
        send_subscribe(client, id);
        emit(client, id, RawEvent::Connected);
    }
}

/// The most a reconnection waits, however many attempts failed.
const RECONNECT_CEILING: Duration = Duration::from_secs(30);
/// The least: a socket that keeps failing at once does not spin.
const RECONNECT_FLOOR: Duration = Duration::from_millis(100);

/// How long to wait before reconnection attempt `attempts` (1 for the first), with `random` in
/// [0, 1): "full jitter" — anywhere up to 1 s doubled per earlier failure, at most 30 s — so the
/// dashboards a restart dropped together do not all come back in the same instant.
fn reconnect_pause(attempts: u32, random: f64) -> Duration {
    let ceiling =
        Duration::from_secs(1u64 << attempts.saturating_sub(1).min(5)).min(RECONNECT_CEILING);
    let share = if random.is_finite() {
        random.clamp(0.0, 1.0)
    } else {
        0.0
    };
    ceiling.mul_f64(share).max(RECONNECT_FLOOR)
}

fn schedule_reconnect(client: &Shared) {
    let attempts = {
        let mut c = client.borrow_mut();
        if c.reconnect_scheduled {
            return;
        }
        c.reconnect_scheduled = true;
        c.attempts += 1;
        c.attempts
    };
    let pause = reconnect_pause(attempts, js_sys::Math::random());
    let client = client.clone();
    set_timeout(
        move || {
            let active = {
                let mut c = client.borrow_mut();
                c.reconnect_scheduled = false;
                c.socket.is_none() && c.subscriptions.values().any(|s| !s.finished)
            };
            if active {
                connect(&client);
            }
        },
        pause,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnection_pauses_are_spread_and_grow_to_a_ceiling() {
        // The random draw sets where in the window the pause falls.
        assert_eq!(reconnect_pause(1, 0.5), Duration::from_millis(500));
        assert_eq!(reconnect_pause(1, 0.999), Duration::from_millis(999));
        assert_eq!(reconnect_pause(2, 0.5), Duration::from_secs(1));
        assert_eq!(reconnect_pause(4, 0.5), Duration::from_secs(4));
        // The window doubles to 30 s and stays there.
        assert_eq!(reconnect_pause(6, 0.5), Duration::from_secs(15));
        assert_eq!(reconnect_pause(7, 1.0), RECONNECT_CEILING);
        assert_eq!(reconnect_pause(u32::MAX, 1.0), RECONNECT_CEILING);
        // Never less than the floor, even for a draw of zero or a first attempt counted as 0.
        assert_eq!(reconnect_pause(1, 0.0), RECONNECT_FLOOR);
        assert_eq!(reconnect_pause(0, 0.0), RECONNECT_FLOOR);
        // A draw outside [0, 1] is held inside it.
        assert_eq!(reconnect_pause(1, 7.0), Duration::from_secs(1));
        assert_eq!(reconnect_pause(1, f64::NAN), RECONNECT_FLOOR);
    }
}
