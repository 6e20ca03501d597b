//! Live updates: one `graphql-transport-ws` subscription over `/graphql/ws`, kept alive.
//!
//! The browser sends the session cookie with the upgrade (same origin), so `connection_init`
//! carries no token. When the socket drops, the page is told at once and the client reconnects
//! with growing pauses (1 s doubling to 10 s); every acknowledged (re)connection is reported as
//! [`LiveEvent::Connected`], which is the page's cue to re-read what it shows, since changes
//! made while it was away were not delivered.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CloseEvent, MessageEvent, WebSocket};

use crate::api::{ApiError, GraphqlError, first_error};

/// What a subscription reports to its page.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// (Re)connected and subscribed: re-read the page's data.
    Connected,
    /// One result of the subscription (its `data`).
    Next(Value),
    /// The server refused or ended the subscription with an error.
    Failed(ApiError),
    /// The connection dropped; a reconnection is scheduled.
    Dropped,
}

#[derive(Deserialize)]
struct ServerMessage {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    payload: Value,
}

#[derive(Deserialize)]
struct ExecutionResult {
    #[serde(default)]
    data: Value,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

struct Handlers {
    _open: Closure<dyn FnMut()>,
    _message: Closure<dyn FnMut(MessageEvent)>,
    _close: Closure<dyn FnMut(CloseEvent)>,
}

struct Client {
    query: String,
    variables: Value,
    on_event: Box<dyn Fn(LiveEvent)>,
    socket: Option<WebSocket>,
    handlers: Option<Handlers>,
    /// Failed attempts since the last acknowledged connection.
    attempts: u32,
    /// The id of the current subscription on the socket.
    next_id: u32,
    /// The last failure's code, to tell "fell behind" (re-subscribe) from a refusal (stop).
    last_failure: Option<String>,
    /// Set when the server refused for good; no more reconnections.
    finished: bool,
}

type Shared = Rc<RefCell<Client>>;

/// Start `query` (a subscription) with `variables`; `on_event` hears everything that happens.
/// The subscription lives as long as the page.
pub fn subscribe(query: &str, variables: Value, on_event: impl Fn(LiveEvent) + 'static) {
    let client = Rc::new(RefCell::new(Client {
        query: query.to_owned(),
        variables,
        on_event: Box::new(on_event),
        socket: None,
        handlers: None,
        attempts: 0,
        next_id: 0,
        last_failure: None,
        finished: false,
    }));
    connect(&client);
}

fn socket_url() -> String {
    let location = leptos::prelude::window().location();
    let scheme = match location.protocol().as_deref() {
        Ok("https:") => "wss",
        _ => "ws",
    };
    let host = location.host().unwrap_or_default();
    format!("{scheme}://{host}/graphql/ws")
}

fn emit(client: &Shared, event: LiveEvent) {
    // The callback may touch page state only; it never calls back into the client.
    let borrowed = client.borrow();
    (borrowed.on_event)(event);
}

fn send(socket: &WebSocket, message: &Value) {
    let _ = socket.send_with_str(&message.to_string());
}

fn start_subscription(client: &Shared) {
    let mut c = client.borrow_mut();
    c.next_id += 1;
    c.last_failure = None;
    let message = json!({
        "id": c.next_id.to_string(),
        "type": "subscribe",
        "payload": { "query": c.query, "variables": c.variables },
    });
    if let Some(socket) = &c.socket {
        send(socket, &message);
    }
}

fn connect(client: &Shared) {
    let Ok(socket) = WebSocket::new_with_str(&socket_url(), "graphql-transport-ws") else {
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
            match message.kind.as_str() {
                "connection_ack" => {
                    client.borrow_mut().attempts = 0;
                    start_subscription(&client);
                    emit(&client, LiveEvent::Connected);
                }
                "ping" => send(&socket, &json!({ "type": "pong" })),
                "next" => {
                    let Ok(result) = serde_json::from_value::<ExecutionResult>(message.payload)
                    else {
                        return;
                    };
                    match first_error(result.errors) {
                        Some(err) => failed(&client, err),
                        None => emit(&client, LiveEvent::Next(result.data)),
                    }
                }
                "error" => {
                    let errors = serde_json::from_value::<Vec<GraphqlError>>(message.payload)
                        .unwrap_or_default();
                    if let Some(err) = first_error(errors) {
                        failed(&client, err);
                    }
                }
                "complete" => completed(&client),
                _ => {}
            }
        })
    };

    let on_close = {
        let client = client.clone();
        Closure::<dyn FnMut(CloseEvent)>::new(move |_event: CloseEvent| {
            if client.borrow().finished {
                return;
            }
            emit(&client, LiveEvent::Dropped);
            schedule_reconnect(&client);
        })
    };

    socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));

    let mut c = client.borrow_mut();
    if let Some(old) = c.socket.take() {
        old.set_onopen(None);
        old.set_onmessage(None);
        old.set_onclose(None);
    }
    c.socket = Some(socket);
    c.handlers = Some(Handlers {
        _open: on_open,
        _message: on_message,
        _close: on_close,
    });
}

fn failed(client: &Shared, err: ApiError) {
    client.borrow_mut().last_failure = Some(err.code.clone());
    emit(client, LiveEvent::Failed(err));
}

/// The server ended the subscription. After "fell behind" (CONFLICT) it starts again and the
/// page re-syncs; after a refusal it stays ended.
fn completed(client: &Shared) {
    let fell_behind = client.borrow().last_failure.as_deref() == Some("CONFLICT");
    if fell_behind {
        start_subscription(client);
        emit(client, LiveEvent::Connected);
        return;
    }
    let mut c = client.borrow_mut();
    c.finished = true;
    if let Some(socket) = &c.socket {
        let _ = socket.close();
    }
}

fn schedule_reconnect(client: &Shared) {
    let attempts = {
        let mut c = client.borrow_mut();
        c.attempts += 1;
        c.attempts
    };
    let pause = Duration::from_millis((500u64 << attempts.min(5)).min(10_000));
    let client = client.clone();
    leptos::prelude::set_timeout(move || connect(&client), pause);
}
