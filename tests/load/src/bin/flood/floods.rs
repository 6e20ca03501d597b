//! The floods, from one other address until the run ends: idle TCP connections, connections that
//! trickle their headers, anonymous websockets that never sign in (each reopened as soon as it is
//! closed or refused), and one member's burst of `subscribe` messages; what each got is tallied.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::FloodArgs;

/// What the flooding socket saw.
#[derive(Debug, Default)]
pub(super) struct FloodOutcome {
    pub(super) sent: usize,
    pub(super) answered: usize,
    pub(super) closed: Option<String>,
}

/// What one kind of flooding connection got, over every time it was opened.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Opened and held until the server closed it (or the run ended).
    pub(super) held: AtomicUsize,
    /// Refused at once: 429 or 503.
    pub(super) refused: AtomicUsize,
    /// Could not connect at all.
    pub(super) failed: AtomicUsize,
    /// Closed by the server after being held.
    pub(super) closed: AtomicUsize,
}

impl Tally {
    pub(super) fn line(&self, what: &str, count: usize, from: IpAddr) {
        println!(
            "flood    {count} {what} from {from}: held {} times (closed by the server {}), refused at once {}, connect failed {}",
            self.held.load(Ordering::Relaxed),
            self.closed.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        );
    }
}

/// The floods from one address, running until the run ends.
pub(super) struct Floods {
    pub(super) tasks: tokio::task::JoinSet<()>,
    pub(super) idle: (usize, Arc<Tally>),
    pub(super) trickle: (usize, Arc<Tally>),
    pub(super) anonymous: (usize, Arc<Tally>),
    /// How the anonymous websockets were closed: code and count.
    pub(super) closes: Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>,
}

impl Floods {
    pub(super) fn start(
        args: &FloodArgs,
        target: SocketAddr,
        socket_url: &str,
        until: Instant,
    ) -> Self {
        let mut floods = Self {
            tasks: tokio::task::JoinSet::new(),
            idle: (args.idle, Arc::default()),
            trickle: (args.trickle, Arc::default()),
            anonymous: (args.anonymous, Arc::default()),
            closes: Arc::default(),
        };
        let reopen = Duration::from_millis(args.reopen_ms);
        let from = args.from;
        // Started in turn, so that each kind gets its share of what the address may hold.
        for n in 0..args.idle.max(args.trickle).max(args.anonymous) {
            if n < args.idle {
                let tally = floods.idle.1.clone();
                floods.tasks.spawn(again_and_again(until, reopen, move || {
                    hold_idle(from, target, until, tally.clone())
                }));
            }
            if n < args.trickle {
                let tally = floods.trickle.1.clone();
                floods.tasks.spawn(again_and_again(until, reopen, move || {
                    hold_trickling(from, target, until, tally.clone())
                }));
            }
            if n < args.anonymous {
                let tally = floods.anonymous.1.clone();
                let closes = floods.closes.clone();
                let url = socket_url.to_owned();
                floods.tasks.spawn(again_and_again(until, reopen, move || {
                    hold_anonymous(
                        from,
                        target,
                        url.clone(),
                        until,
                        tally.clone(),
                        closes.clone(),
                    )
                }));
            }
        }
        floods
    }

    pub(super) async fn finish(mut self) -> Self {
        while self.tasks.join_next().await.is_some() {}
        self
    }

    pub(super) fn print(&self, from: IpAddr) {
        self.idle.1.line("idle connections", self.idle.0, from);
        self.trickle
            .1
            .line("header-trickling connections", self.trickle.0, from);
        self.anonymous
            .1
            .line("anonymous websockets", self.anonymous.0, from);
        let closes = self.closes.lock().map(|c| c.clone()).unwrap_or_default();
        if !closes.is_empty() {
            let said: Vec<String> = closes
                .iter()
                .map(|(code, n)| format!("{code} ×{n}"))
                .collect();
            println!(
                "         the anonymous websockets held were closed with {}",
                said.join(", ")
            );
        }
    }
}

/// Run `open` again and again (pausing `reopen` after each) until `until`.
pub(super) async fn again_and_again<F, Fut>(until: Instant, reopen: Duration, open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    while Instant::now() < until {
        open().await;
        tokio::time::sleep(reopen).await;
    }
}

/// A TCP connection to `target` from `from`.
pub(super) async fn connect_from(from: IpAddr, target: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match target {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.bind(SocketAddr::new(from, 0))?;
    tokio::time::timeout(Duration::from_secs(5), socket.connect(target))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))?
}

/// Whether what the server said refuses the connection (429 or 503).
pub(super) fn refusal(heard: &[u8]) -> bool {
    heard.starts_with(b"HTTP/1.1 429") || heard.starts_with(b"HTTP/1.1 503")
}

/// Open a connection and send nothing, until the server closes it or the run ends.
pub(super) async fn hold_idle(from: IpAddr, target: SocketAddr, until: Instant, tally: Arc<Tally>) {
    let Ok(mut stream) = connect_from(from, target).await else {
        tally.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let mut heard = [0u8; 64];
    match tokio::time::timeout_at(until.into(), stream.read(&mut heard)).await {
        Ok(Ok(n)) if refusal(&heard[..n]) => {
            tally.refused.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {
            tally.held.fetch_add(1, Ordering::Relaxed);
            tally.closed.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => {
            tally.held.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Open a connection and send a request's head a byte every 500 ms, never finishing it, until
/// the server closes it or the run ends.
pub(super) async fn hold_trickling(
    from: IpAddr,
    target: SocketAddr,
    until: Instant,
    tally: Arc<Tally>,
) {
    let Ok(stream) = connect_from(from, target).await else {
        tally.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let (mut reading, mut writing) = stream.into_split();
    let trickle = async move {
        let head = b"GET /readyz HTTP/1.1\r\nhost: askloop\r\nx-slow: ";
        for byte in head.iter().copied().chain(std::iter::repeat(b'x')) {
            if writing.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let mut heard = [0u8; 64];
    let answer = async { reading.read(&mut heard).await };
    tokio::select! {
        () = trickle => {
            tally.held.fetch_add(1, Ordering::Relaxed);
            tally.closed.fetch_add(1, Ordering::Relaxed);
        }
        read = answer => match read {
            Ok(n) if refusal(&heard[..n]) => {
                tally.refused.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                tally.held.fetch_add(1, Ordering::Relaxed);
                tally.closed.fetch_add(1, Ordering::Relaxed);
            }
        },
        () = tokio::time::sleep_until(until.into()) => {
            tally.held.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Open a websocket without a credential and never sign in, until the server closes it or the
/// run ends.
pub(super) async fn hold_anonymous(
    from: IpAddr,
    target: SocketAddr,
    url: String,
    until: Instant,
    tally: Arc<Tally>,
    closes: Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>,
) {
    let Ok(stream) = connect_from(from, target).await else {
        tally.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let Ok(mut request) = url.into_client_request() else {
        return;
    };
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("graphql-transport-ws"),
    );
    let upgraded = tokio::time::timeout_at(
        until.into(),
        tokio_tungstenite::client_async(request, tokio_tungstenite::MaybeTlsStream::Plain(stream)),
    )
    .await;
    let mut socket = match upgraded {
        Ok(Ok((socket, _))) => socket,
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(_))) => {
            tally.refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Ok(Err(_)) => {
            tally.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Err(_) => return,
    };
    tally.held.fetch_add(1, Ordering::Relaxed);
    let closed = tokio::time::timeout_at(until.into(), async {
        while let Some(message) = socket.next().await {
            match message {
                Ok(Message::Close(frame)) => {
                    return frame.map_or_else(
                        || "no code".to_owned(),
                        |frame| u16::from(frame.code).to_string(),
                    );
                }
                Ok(_) => {}
                Err(_) => return "a reset".to_owned(),
            }
        }
        "an end".to_owned()
    })
    .await;
    if let Ok(code) = closed {
        tally.closed.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut closes) = closes.lock() {
            *closes.entry(code).or_default() += 1;
        }
    }
}

/// One member's socket: `connection_init`, then `count` subscribes in one burst, then read what
/// comes back until the socket closes or the run ends.
pub(super) async fn flood(
    url: &str,
    token: &str,
    slug: &str,
    count: usize,
    until: Instant,
) -> anyhow::Result<FloodOutcome> {
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("graphql-transport-ws"),
    );
    let (socket, _) = tokio_tungstenite::connect_async(request).await?;
    let (mut write, mut read) = socket.split();
    write
        .send(Message::text(
            json!({"type": "connection_init", "payload": {"token": token}}).to_string(),
        ))
        .await?;
    loop {
        match read.next().await {
            Some(Ok(Message::Text(text))) if text.contains("connection_ack") => break,
            Some(Ok(_)) => {}
            other => anyhow::bail!("the socket was not acknowledged: {other:?}"),
        }
    }
    let mut outcome = FloodOutcome::default();
    let query = "subscription ($slug: String!) { questionQueue(nicheSlug: $slug) { change } }";
    for id in 0..count {
        let message = json!({"id": id.to_string(), "type": "subscribe",
            "payload": {"query": query, "variables": {"slug": slug}}});
        // `feed` queues without flushing: the whole burst leaves together.
        if write
            .feed(Message::text(message.to_string()))
            .await
            .is_err()
        {
            break;
        }
        outcome.sent += 1;
    }
    write.flush().await.ok();
    let mut answered = std::collections::HashSet::new();
    while let Ok(next) = tokio::time::timeout_at(until.into(), read.next()).await {
        match next {
            Some(Ok(Message::Text(text))) => {
                if let Ok(message) = serde_json::from_str::<Value>(&text)
                    && let Some(id) = message["id"].as_str()
                {
                    answered.insert(id.to_owned());
                }
            }
            Some(Ok(Message::Close(frame))) => {
                outcome.closed = Some(match frame {
                    Some(frame) => {
                        format!("closed with {} ({})", u16::from(frame.code), frame.reason)
                    }
                    None => "closed without a code".into(),
                });
                break;
            }
            Some(Ok(_)) => {}
            Some(Err(err)) => {
                outcome.closed = Some(format!("ended: {err}"));
                break;
            }
            None => {
                outcome.closed = Some("ended".into());
                break;
            }
        }
    }
    outcome.answered = answered.len();
    Ok(outcome)
}
