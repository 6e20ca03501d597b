//! A `graphql-transport-ws` client over a real websocket, for subscription tests: open (with
//! the subprotocol), `connection_init` → `connection_ack`, subscribe, and read what arrives.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message, http};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A connected socket.
pub struct GqlSocket {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

/// What the server sent.
#[derive(Debug)]
pub enum Received {
    /// A protocol message (`next`, `error`, `complete`, …).
    Json(Value),
    /// The server closed the connection with this code.
    Closed(Option<u16>),
    /// Nothing arrived in time.
    Nothing,
}

/// How an upgrade was refused: its status and `Retry-After`.
#[derive(Debug)]
pub struct Refused {
    /// The HTTP status.
    pub status: u16,
    /// `Retry-After`, if sent.
    pub retry_after: Option<String>,
}

impl GqlSocket {
    /// Open a websocket to `base` from the loopback address `source` (127.0.0.2, …: one test
    /// can be several clients), with `headers` on the upgrade; how it was refused, if it was.
    pub async fn try_open_from(
        base: &str,
        source: IpAddr,
        headers: &[(&str, &str)],
    ) -> Result<Self, Refused> {
        let url = format!("{}/graphql/ws", base.replacen("http", "ws", 1));
        let mut request = url.into_client_request().expect("a request");
        request.headers_mut().insert(
            "sec-websocket-protocol",
            "graphql-transport-ws".parse().expect("a header"),
        );
        for (name, value) in headers {
            request.headers_mut().insert(
                http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                value.parse().expect("a header value"),
            );
        }
        let stream = connect_from(base, source).await;
        match tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(stream)).await {
            Ok((ws, _)) => Ok(Self { ws }),
            Err(tungstenite::Error::Http(response)) => Err(Refused {
                status: response.status().as_u16(),
                retry_after: response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            }),
            Err(err) => panic!("the upgrade failed: {err}"),
        }
    }

    /// Open from `source` with `headers`, and send `connection_init` with `token` (if any) and
    /// wait for `connection_ack`.
    pub async fn connect_from(
        base: &str,
        source: IpAddr,
        headers: &[(&str, &str)],
        token: Option<&str>,
    ) -> Self {
        let mut socket = Self::try_open_from(base, source, headers)
            .await
            .expect("the upgrade is accepted");
        socket.init(token).await;
        socket
    }

    /// Send `connection_init` with `token` (if any) and wait for `connection_ack`.
    async fn init(&mut self, token: Option<&str>) {
        let payload = match token {
            Some(token) => json!({ "token": token }),
            None => json!({}),
        };
        self.send(json!({"type": "connection_init", "payload": payload}))
            .await;
        match self.receive(Duration::from_secs(5)).await {
            Received::Json(message) if message["type"] == "connection_ack" => {}
            other => panic!("no connection_ack: {other:?}"),
        }
    }

    /// Open a websocket to `base` (http://…) offering `graphql-transport-ws`.
    pub async fn open(base: &str) -> Self {
        let url = format!("{}/graphql/ws", base.replacen("http", "ws", 1));
        let mut request = url.into_client_request().expect("a request");
        request.headers_mut().insert(
            "sec-websocket-protocol",
            "graphql-transport-ws".parse().expect("a header"),
        );
        let (ws, response) = tokio_tungstenite::connect_async(request)
            .await
            .expect("the websocket opens");
        assert_eq!(
            response
                .headers()
                .get("sec-websocket-protocol")
                .and_then(|v| v.to_str().ok()),
            Some("graphql-transport-ws")
        );
        Self { ws }
    }

    /// Open, send `connection_init` with `token`, and wait for `connection_ack`.
    pub async fn connect(base: &str, token: Option<&str>) -> Self {
        let mut socket = Self::open(base).await;
        socket.init(token).await;
        socket
    }

    /// Send a protocol message.
    pub async fn send(&mut self, message: Value) {
        self.ws
            .send(Message::Text(message.to_string().into()))
            .await
            .expect("sent");
    }

    /// Send many protocol messages at once: all written, then flushed once, as a flooding
    /// client would.
    pub async fn send_burst(&mut self, messages: impl IntoIterator<Item = Value>) {
        for message in messages {
            if self
                .ws
                .feed(Message::Text(message.to_string().into()))
                .await
                .is_err()
            {
                // The server may close mid-burst; what it says is read afterwards.
                return;
            }
        }
        let _ = self.ws.flush().await;
    }

    /// Subscribe as operation `id`.
    pub async fn subscribe(&mut self, id: &str, query: &str, variables: Value) {
        self.send(json!({"id": id, "type": "subscribe", "payload": {"query": query, "variables": variables}}))
            .await;
    }

    /// The next protocol message, close, or nothing within `wait`.
    pub async fn receive(&mut self, wait: Duration) -> Received {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.ws.next()).await {
                Err(_) => return Received::Nothing,
                Ok(None) => return Received::Closed(None),
                Ok(Some(Err(_))) => return Received::Closed(None),
                Ok(Some(Ok(Message::Text(text)))) => {
                    return Received::Json(serde_json::from_str(&text).expect("JSON"));
                }
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return Received::Closed(frame.map(|f| u16::from(f.code)));
                }
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    /// The next `error` message's payload (the list of errors) for operation `id`: the operation
    /// failed as a whole, and no `complete` follows (panics on anything else).
    pub async fn error_payload(&mut self, id: &str) -> Value {
        match self.receive(Duration::from_secs(10)).await {
            Received::Json(message) if message["type"] == "error" && message["id"] == id => {
                message["payload"].clone()
            }
            other => panic!("expected error for {id}, got {other:?}"),
        }
    }

    /// The next `next` payload's data for operation `id` (panics on anything else).
    pub async fn next_data(&mut self, id: &str) -> Value {
        match self.receive(Duration::from_secs(10)).await {
            Received::Json(message) if message["type"] == "next" && message["id"] == id => {
                message["payload"].clone()
            }
            other => panic!("expected next for {id}, got {other:?}"),
        }
    }
}

/// A TCP connection to `base` (http://host:port) from the loopback address `source`.
pub async fn connect_from(base: &str, source: IpAddr) -> TcpStream {
    let target: SocketAddr = base
        .trim_start_matches("http://")
        .parse()
        .expect("http://ip:port");
    let socket = match source {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
    .expect("a socket");
    socket
        .bind(SocketAddr::new(source, 0))
        .expect("a loopback source address");
    socket.connect(target).await.expect("connected")
}
