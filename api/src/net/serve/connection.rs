//! One admitted connection, served by hyper-util's connection builder: HTTP/1.1 with upgrades
//! (websockets), hyper's `header_read_timeout` on hyper-util's timer, and hyper-util's graceful
//! shutdown. What askloop adds to each request before the router sees it:
//!
//! - its client address, worked out once ([`client_of`], `net/client_address.rs`) and handed on
//!   as a [`ClientAddress`] extension beside the peer's `ConnectInfo<SocketAddr>`;
//! - on a connection from a trusted proxy, a place under its client's per-address cap, held while
//!   the request is in flight (a websocket: while it is open), or `429` past that cap
//!   (docs/security.md#behind-a-proxy);
//! - on a connection admitted in the reserve, only health checks and requests with a credential
//!   are served; anything else is answered `503` (docs/security.md#denial-of-service);
//! - HTTP/2, which the builder brings with it, is answered `505` (`net/serve.rs` says why).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Version, header};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use tokio::net::TcpStream;
use tower::ServiceExt;

use super::idle::{Busy, Watched};
use super::starting::StartSlot;
use crate::auth::{ClientAddress, bearer_token, cookie_token};
use crate::config::ConnectionSettings;
use crate::domain::signing::SIGNATURE_HEADER;
use crate::net::admission::{ConnectionPlace, Connections, OpenSlot};
use crate::net::client_address::{ForwardingHeaders, TrustedProxies};

/// One admitted connection.
pub(super) struct Connection {
    pub(super) peer: SocketAddr,
    /// Whether the peer is a trusted proxy.
    pub(super) from_proxy: bool,
    /// Whether it was admitted in the reserve.
    pub(super) reserved: bool,
    pub(super) trusted: Arc<TrustedProxies>,
    pub(super) connections: Arc<Connections>,
    pub(super) router: Router,
    pub(super) settings: ConnectionSettings,
}

impl Connection {
    /// Serve the connection on `stream` until it ends, holding `place` in the caps for as long as
    /// it (or its websocket) lives, and its place among those starting (`slot`) until its first
    /// read finds nothing yet or its first request arrives; `shutdown` shuts it down gracefully.
    pub(super) async fn serve(
        self,
        stream: TcpStream,
        place: ConnectionPlace,
        slot: Arc<StartSlot>,
        shutdown: Watcher,
    ) {
        let Self {
            peer,
            from_proxy,
            reserved,
            trusted,
            connections,
            router,
            settings,
        } = self;
        // The place a websocket forwarded by a trusted proxy holds under its client's cap, kept
        // with the stream, which outlives the upgrade for as long as the socket does.
        let upgraded_client: Arc<Mutex<Option<OpenSlot>>> = Arc::default();
        let watched = Watched::new(
            stream,
            settings.idle_timeout,
            place,
            upgraded_client.clone(),
            slot.clone(),
        );
        let activity = watched.activity();
        let io = TokioIo::new(watched);
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            slot.give_back();
            let client = client_of(&trusted, peer.ip(), request.headers());
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(client);
            let refusal = if request.version() == Version::HTTP_2 {
                Some(http2_refusal())
            } else if reserved && !may_use_the_reserve(&request) {
                Some(reserve_refusal())
            } else {
                None
            };
            // A forwarded request holds a place under its client's cap; past it, it is refused
            // before it costs anything, as a direct connection past it would be.
            let held = (from_proxy && refusal.is_none()).then(|| connections.hold_for(client));
            let busy = activity.begin();
            let router = router.clone();
            let upgraded_client = upgraded_client.clone();
            async move {
                if let Some(refusal) = refusal {
                    return Ok::<_, Infallible>(refusal);
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
                    // The socket is the websocket's from now on: it keeps its own pings and
                    // timeouts (`live/socket/connection.rs`), not the idle timeout.
                    busy.upgraded();
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
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(settings.header_timeout)
            .keep_alive(true);
        let connection = builder.serve_connection_with_upgrades(io, service);
        if let Err(err) = shutdown.watch(connection).await {
            tracing::debug!(%peer, "connection ended: {err}");
        }
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

/// The answer to an HTTP/2 request: askloop serves HTTP/1.1 only.
fn http2_refusal() -> Response<Body> {
    let mut response = Response::new(Body::from("askloop serves HTTP/1.1 only"));
    *response.status_mut() = StatusCode::HTTP_VERSION_NOT_SUPPORTED;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
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

/// The answer to a request on a connection in the reserve that may not use it.
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

#[cfg(test)]
mod tests {
    use super::*;

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
