//! `GET /graphql/ws`: the `graphql-transport-ws` protocol (what the `graphql-ws` client speaks).
//!
//! Authentication is the `token` in `connection_init`'s payload (an API key or session token) or
//! the session cookie — the cookie only when the upgrade came from askloop's own origin, so
//! another site cannot open a socket in a visitor's name. A connection that does not initialise
//! within the configured time (10 s) is closed with 4408. The server pings (every 15 s by default) and
//! drops a peer that has not answered for three times as long. A peer that does not take a message within
//! [`SEND_TIMEOUT`] is dropped: its subscriptions would otherwise fall behind forever.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_graphql::Data;
use async_graphql::http::{WebSocket as GraphqlSocket, WebSocketProtocols, WsMessage};
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use tokio::time::{Instant, MissedTickBehavior};

use super::http::GraphqlEndpoint;
use crate::auth::{Caller, OriginCheck, resolve_caller};
use crate::service::sessions;

/// How long one message may take to send.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Upgrade to a websocket speaking the negotiated GraphQL protocol.
pub async fn upgrade(
    State(state): State<GraphqlEndpoint>,
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
    let cookie_caller =
        match resolve_caller(&headers, &state.db, &state.config, chrono::Utc::now()).await {
            Ok(caller) if caller.origin == OriginCheck::Same || !caller.via_cookie => caller,
            _ => Caller::default(),
        };
    // Queue changes are a few KiB at most; tungstenite's 128 KiB default buffers would make
    // every idle subscriber cost a quarter of a megabyte. The write buffer is bounded so a peer
    // that stops reading cannot grow it without limit.
    upgrade
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .max_write_buffer_size(256 * 1024)
        .protocols(async_graphql::http::ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |socket| serve(socket, state, protocol, cookie_caller))
}

async fn close(sink: &mut futures::stream::SplitSink<WebSocket, Message>, code: u16, reason: &str) {
    let frame = Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned().into(),
    }));
    let _ = tokio::time::timeout(SEND_TIMEOUT, sink.send(frame)).await;
}

async fn serve(
    socket: WebSocket,
    state: GraphqlEndpoint,
    protocol: WebSocketProtocols,
    cookie_caller: Caller,
) {
    let (mut sink, mut incoming) = socket.split();
    let (to_graphql, from_client) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    let initialised = Arc::new(AtomicBool::new(false));

    let init_refused = Arc::new(AtomicBool::new(false));
    let init_state = state.clone();
    let init_flag = initialised.clone();
    let refused_flag = init_refused.clone();
    let on_init = move |payload: serde_json::Value| async move {
        let token = payload
            .get("token")
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        let caller = match token {
            Some(token) => {
                let resolved = sessions::resolve(&init_state.db, &token, chrono::Utc::now())
                    .await
                    .ok()
                    .flatten();
                let Some(resolved) = resolved else {
                    refused_flag.store(true, Ordering::SeqCst);
                    return Err(async_graphql::Error::new("that token is not valid"));
                };
                Caller {
                    viewer: Some(resolved.0),
                    credential: Some(resolved.1),
                    session_token: None,
                    via_cookie: false,
                    origin: OriginCheck::Unknown,
                }
            }
            None => cookie_caller,
        };
        init_flag.store(true, Ordering::SeqCst);
        let mut data = Data::default();
        data.insert(caller);
        Ok(data)
    };
    let graphql = GraphqlSocket::new(state.schema.clone(), tokio_stream_of(from_client), protocol)
        .on_connection_init(on_init);
    futures::pin_mut!(graphql);

    let live = state.config.live;
    let mut ping = tokio::time::interval(live.ping_every);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ping.tick().await;
    let mut last_heard = Instant::now();
    let init_deadline = tokio::time::sleep(live.init_timeout);
    futures::pin_mut!(init_deadline);
    let stopping = state.live.stopped();
    futures::pin_mut!(stopping);

    loop {
        tokio::select! {
            message = incoming.next() => {
                last_heard = Instant::now();
                let bytes = match message {
                    Some(Ok(Message::Text(text))) => text.as_str().as_bytes().to_vec(),
                    Some(Ok(Message::Binary(bytes))) => bytes.to_vec(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                };
                if to_graphql.send(bytes).await.is_err() {
                    break;
                }
            }
            outgoing = graphql.next() => match outgoing {
                Some(WsMessage::Text(text)) => {
                    let sent = tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into()))).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        tracing::info!("dropping a websocket peer that does not keep up");
                        break;
                    }
                }
                Some(WsMessage::Close(code, reason)) => {
                    let (code, reason) = protocol_close(code, reason, init_refused.load(Ordering::SeqCst));
                    close(&mut sink, code, &reason).await;
                    break;
                }
                None => break,
            },
            _ = ping.tick() => {
                if last_heard.elapsed() > live.dead_after {
                    close(&mut sink, 4000, "no answer to pings").await;
                    break;
                }
                let sent = tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Ping(Vec::new().into()))).await;
                if !matches!(sent, Ok(Ok(()))) {
                    break;
                }
            }
            () = &mut stopping => {
                // Going away: the client reconnects (to this instance restarted, or another).
                close(&mut sink, 1001, "askloop is restarting").await;
                break;
            }
            () = &mut init_deadline, if !initialised.load(Ordering::SeqCst) => {
                close(&mut sink, 4408, "Connection initialisation timeout").await;
                break;
            }
        }
    }
}

/// The close codes `graphql-transport-ws` prescribes, where the library uses generic ones:
/// 4401 for a subscribe before the acknowledgement, 4403 for a refused `connection_init`, 4400
/// for a message that is not the protocol's.
fn protocol_close(code: u16, reason: String, init_refused: bool) -> (u16, String) {
    match code {
        1011 => (4401, "Unauthorized".to_owned()),
        1002 if init_refused => (4403, "Forbidden".to_owned()),
        1002 => (4400, reason),
        _ => (code, reason),
    }
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
) -> impl futures::Stream<Item = Vec<u8>> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
