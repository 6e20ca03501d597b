//! A `graphql-transport-ws` client over a real websocket, for subscription tests: open (with
//! the subprotocol), `connection_init` → `connection_ack`, subscribe, and read what arrives.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
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

impl GqlSocket {
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
        let payload = match token {
            Some(token) => json!({ "token": token }),
            None => json!({}),
        };
        socket
            .send(json!({"type": "connection_init", "payload": payload}))
            .await;
        match socket.receive(Duration::from_secs(5)).await {
            Received::Json(message) if message["type"] == "connection_ack" => socket,
            other => panic!("no connection_ack: {other:?}"),
        }
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
