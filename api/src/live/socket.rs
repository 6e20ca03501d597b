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
//!
//! The parts: this module admits an upgrade (the subprotocol, the handshake gate, the caps and
//! rates per address) and hands the socket to [`connection`], whose loop reads frames, runs the
//! operations ([`operations`]), pings and watches the deadlines; [`sign_in`] decides a
//! `connection_init` and looks a held credential up again; [`send`] bounds every send.

mod connection;
pub mod gate;
mod operations;
pub mod protocol;
mod send;
mod sign_in;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::get;
use futures::StreamExt;
use tokio::sync::OwnedSemaphorePermit;

use crate::auth::{Caller, ClientAddress, OriginCheck, bearer_token, cookie_token, resolve_caller};
use crate::graphql::GraphqlEndpoint;
use crate::net::admission::OpenSlot;
use gate::{Class, HandshakeGate, Turn};
use protocol::AT_CAPACITY;

/// The subprotocol askloop speaks.
pub const SUBPROTOCOL: &str = "graphql-transport-ws";

/// How long one message may take to send.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// `/graphql/ws`, ready to merge into any router beside `graphql::routes`.
pub fn routes<S>(endpoint: GraphqlEndpoint) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/graphql/ws", get(upgrade))
        .with_state(endpoint)
}

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
            connection::serve(
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
            send::close(&mut sink, 1013, AT_CAPACITY).await;
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
}
