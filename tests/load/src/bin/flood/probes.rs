//! The probes that run during a flood as other clients would, from 127.0.0.1: a signed intake, a
//! GraphQL query, `/readyz`, a `ping` on the member's websocket and a new signed-in websocket, each
//! answer timed.

use std::time::{Duration, Instant};

use chrono::Utc;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use askloop::domain::signing::{SIGNATURE_HEADER, sign};

/// One probe's answers: when each was asked (after the run started) and how long it took.
pub(super) struct Probe {
    pub(super) samples: Vec<(Duration, Duration)>,
    pub(super) failures: usize,
    pub(super) started: Instant,
}

impl Probe {
    pub(super) fn new(started: Instant) -> Self {
        Self {
            samples: Vec::new(),
            failures: 0,
            started,
        }
    }

    pub(super) fn record(&mut self, sent: Instant, ok: bool) {
        self.samples.push((sent - self.started, sent.elapsed()));
        if !ok {
            self.failures += 1;
        }
    }

    /// p50, p99 and the slowest (with when it was asked) of the answers asked from `from` on.
    pub(super) fn figures(&self, from: Duration) -> (usize, f64, f64, f64, f64) {
        let mut took: Vec<(Duration, Duration)> = self
            .samples
            .iter()
            .filter(|(at, _)| *at >= from)
            .map(|(at, took)| (*took, *at))
            .collect();
        took.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        let pick = |q: f64| {
            let index = ((took.len() as f64 - 1.0) * q).round() as usize;
            took.get(index).map_or(0.0, |(d, _)| ms(*d))
        };
        let (max, at) = took
            .last()
            .map_or((0.0, 0.0), |(d, at)| (ms(*d), at.as_secs_f64()));
        (took.len(), pick(0.50), pick(0.99), max, at)
    }

    /// The whole run, then the answers asked from the flood on (`flood_at` after the start).
    pub(super) fn print(&self, label: &str, flood_at: Duration) {
        let (n, p50, p99, max, at) = self.figures(Duration::ZERO);
        println!(
            "probe {label:<8} n={n:<5} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   max {max:>7.2} ms (asked at {at:>5.2} s)   failures {}",
            self.failures
        );
        let (n, p50, p99, max, at) = self.figures(flood_at);
        println!(
            "  from the flood on    n={n:<5} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   max {max:>7.2} ms (asked at {at:>5.2} s)"
        );
    }
}

/// What the probes reach, as the member and the agent.
pub(super) struct Probed {
    pub(super) client: reqwest::Client,
    pub(super) base: String,
    pub(super) socket_url: String,
    pub(super) secret: String,
    pub(super) slug: String,
    pub(super) token: String,
}

/// Each probe's answers.
pub(super) struct Probes {
    pub(super) intake: Probe,
    pub(super) graphql: Probe,
    pub(super) ready: Probe,
    /// A `ping` → `pong` round trip on the member's open websocket.
    pub(super) ping: Probe,
    /// Opening a new websocket signed in as the member: upgrade, `connection_init`, `ack`.
    pub(super) connect: Probe,
}

/// Ask, query, check readiness, ping the member's socket and open a new one in turn until
/// `until`.
pub(super) async fn probe(probed: Probed, until: Instant, every: Duration) -> Probes {
    let Probed {
        client,
        base,
        socket_url,
        secret,
        slug,
        token,
    } = probed;
    let started = Instant::now();
    let mut probes = Probes {
        intake: Probe::new(started),
        graphql: Probe::new(started),
        ready: Probe::new(started),
        ping: Probe::new(started),
        connect: Probe::new(started),
    };
    let Probes {
        intake,
        graphql,
        ready,
        ping,
        connect,
    } = &mut probes;
    let mut member = member_socket(&socket_url, &token).await.ok();
    let mut round = 0usize;
    while Instant::now() < until {
        round += 1;
        let body = json!({"payload": {
            "nicheSlug": slug,
            "externalId": format!("probe-{round}"),
            "title": format!("Probe {round}"),
            "question": "Still answering?",
        }})
        .to_string();
        let header = sign(&secret, body.as_bytes(), Utc::now().timestamp());
        let sent = Instant::now();
        let asked = client
            .post(format!("{base}/api/v1/internal/expert-questions"))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, header)
            .body(body)
            .send()
            .await;
        intake.record(sent, matches!(&asked, Ok(r) if r.status().as_u16() == 201));

        let sent = Instant::now();
        let queried = client
            .post(format!("{base}/graphql"))
            .bearer_auth(&token)
            .json(&json!({"query": "{ niches { slug } }"}))
            .send()
            .await;
        let ok = match queried {
            Ok(r) if r.status().is_success() => {
                r.json::<Value>().await.is_ok_and(|v| v["errors"].is_null())
            }
            _ => false,
        };
        graphql.record(sent, ok);

        let sent = Instant::now();
        let checked = client.get(format!("{base}/readyz")).send().await;
        ready.record(sent, matches!(&checked, Ok(r) if r.status().is_success()));

        let sent = Instant::now();
        let ponged = match member.as_mut() {
            Some(socket) => pinged(socket).await,
            None => false,
        };
        ping.record(sent, ponged);
        if !ponged {
            // Dropped: the next round pings a new one.
            member = member_socket(&socket_url, &token).await.ok();
        }

        let sent = Instant::now();
        let opened = member_socket(&socket_url, &token).await;
        connect.record(sent, opened.is_ok());
        if let Ok(mut socket) = opened {
            socket.close(None).await.ok();
        }
        tokio::time::sleep(every).await;
    }
    probes
}

pub(super) type ClientSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// A websocket signed in as the member, acknowledged. It signs in on the upgrade
/// (`Authorization: Bearer`), as a client that can set headers does: a signed-in upgrade never
/// waits behind the bounds on anonymous ones, even from a flooded address.
pub(super) async fn member_socket(url: &str, token: &str) -> anyhow::Result<ClientSocket> {
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("graphql-transport-ws"),
    );
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}"))?,
    );
    let (mut socket, _) = tokio::time::timeout(
        Duration::from_secs(5),
        tokio_tungstenite::connect_async(request),
    )
    .await??;
    socket
        .send(Message::text(
            json!({"type": "connection_init", "payload": {}}).to_string(),
        ))
        .await?;
    let acknowledged = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message
                && text.contains("connection_ack")
            {
                return true;
            }
        }
        false
    })
    .await;
    anyhow::ensure!(
        matches!(acknowledged, Ok(true)),
        "the member's socket was not acknowledged"
    );
    Ok(socket)
}

/// One `ping` on `socket`, answered by its `pong` (within 5 s).
pub(super) async fn pinged(socket: &mut ClientSocket) -> bool {
    if socket
        .send(Message::text(json!({"type": "ping"}).to_string()))
        .await
        .is_err()
    {
        return false;
    }
    let ponged = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message
                && text.contains("\"pong\"")
            {
                return true;
            }
        }
        false
    })
    .await;
    matches!(ponged, Ok(true))
}
