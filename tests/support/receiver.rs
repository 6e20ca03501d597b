//! A test agent that receives askloop's webhooks: it verifies every signature with askloop's
//! own verify function (`X-Chovy-Signature`, or the Standard Webhooks headers when they come), counts envelope ids, notices two copies of one envelope in flight at
//! once, and answers as a test scripts it (down, failing, hanging, or fine).

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askloop::domain::signing::{SIGNATURE_HEADER, SigningKeys};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::net::TcpListener;

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy)]
pub enum Reply {
    /// This status (with a `Retry-After` in seconds, if given).
    Status(u16, Option<u64>),
    /// Never answer.
    Hang,
    /// Answer this 3xx status with a `Location` on another host.
    Redirect(u16, SocketAddr),
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The envelope.
    pub envelope: Value,
    /// The raw body.
    pub body: String,
    /// The signature header as sent.
    pub signature: String,
    /// Whether it verified with the receiver's secret (the test secret unless given another).
    pub verified: bool,
    /// Every header as sent, names lowercased.
    pub headers: Vec<(String, String)>,
}

impl Received {
    /// The first value of header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Reply>,
    received: Vec<Received>,
    in_flight: HashSet<String>,
    overlaps: Vec<String>,
}

/// A running test receiver.
#[derive(Clone)]
pub struct Receiver {
    /// Where askloop should POST (`CHOVY_WEBHOOK_URL`).
    pub url: String,
    addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    keys: SigningKeys,
    secret: String,
}

/// A free local port, for a receiver that is "down" until it starts on it.
///
/// The port is not held between this call and the receiver's start, so it comes from below the
/// kernel's ephemeral range (32768 and up here), where no outgoing connection or port-0 bind of
/// another test can take it meanwhile, and never twice from this process.
pub fn reserve_port() -> SocketAddr {
    use std::sync::atomic::{AtomicU16, Ordering};
    const FIRST: u16 = 20_000;
    const SPAN: u16 = 12_000;
    static NEXT: AtomicU16 = AtomicU16::new(0);
    // Processes started together begin at different places of the span.
    let start = (std::process::id() % u32::from(SPAN)) as u16;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + (start + n % SPAN) % SPAN;
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            return listener.local_addr().expect("an address");
        }
    }
    panic!("no free port between {FIRST} and {}", FIRST + SPAN);
}

impl Receiver {
    /// The URL a receiver on `addr` will have.
    pub fn url_for(addr: SocketAddr) -> String {
        format!("http://{addr}/hooks/askloop")
    }

    /// Start on `addr` (use [`reserve_port`] for "down first, then up"), answering with
    /// `script` in order and 200 after it runs out.
    pub async fn start_on(addr: SocketAddr, script: Vec<Reply>) -> Self {
        Self::start_verifying(addr, crate::SECRET, script).await
    }

    /// Start on `addr`, verifying signatures with `secret` (a registered agent's) instead of the
    /// test secret.
    pub async fn start_verifying(addr: SocketAddr, secret: &str, script: Vec<Reply>) -> Self {
        let receiver = Self {
            url: Self::url_for(addr),
            addr,
            inner: Arc::new(Mutex::new(Inner {
                script: script.into(),
                ..Inner::default()
            })),
            keys: SigningKeys::new(Some(secret.to_owned()), None),
            secret: secret.to_owned(),
        };
        let listener = TcpListener::bind(addr).await.expect("the receiver binds");
        let app = Router::new()
            .route("/hooks/askloop", post(receive))
            .with_state(receiver.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        receiver
    }

    /// Start on a random port.
    pub async fn start(script: Vec<Reply>) -> Self {
        Self::start_on(reserve_port(), script).await
    }

    /// Start where `app` delivers: its webhook URL must be one [`Receiver::url_for`] made (an
    /// agent that was down until now, or one started after the app).
    pub async fn start_for(app: &crate::TestApp, script: Vec<Reply>) -> Self {
        let url = app
            .config()
            .webhook_url
            .as_deref()
            .expect("the app delivers to a webhook URL");
        let addr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .and_then(|addr| addr.parse().ok())
            .unwrap_or_else(|| panic!("{url} is not a receiver URL"));
        assert_eq!(url, Self::url_for(addr), "not a receiver URL");
        Self::start_on(addr, script).await
    }

    /// Answer from now on with `script`, then 200.
    pub fn set_script(&self, script: Vec<Reply>) {
        self.lock().script = script.into();
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// How many requests carried each envelope id.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for r in &self.lock().received {
            let id = r.envelope["id"].as_str().unwrap_or_default().to_owned();
            *counts.entry(id).or_insert(0) += 1;
        }
        counts
    }

    /// Envelope ids that arrived while another copy was still in flight.
    pub fn overlaps(&self) -> Vec<String> {
        self.lock().overlaps.clone()
    }

    /// Wait until `check` holds over what was received (at most `limit`).
    pub async fn wait_until(
        &self,
        limit: Duration,
        what: &str,
        check: impl Fn(&[Received]) -> bool,
    ) {
        let started = std::time::Instant::now();
        loop {
            if check(&self.lock().received) {
                return;
            }
            assert!(
                started.elapsed() < limit,
                "timed out waiting for {what}; received {} requests",
                self.lock().received.len()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let signature = headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let verified = match headers
        .get("webhook-signature")
        .and_then(|v| v.to_str().ok())
    {
        Some(standard) => verifies_standard(&receiver.secret, &headers, standard, &body),
        None => receiver
            .keys
            .verify(Some(&signature), &body, chrono::Utc::now().timestamp())
            .is_ok(),
    };
    let all_headers = headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let envelope: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = envelope["id"].as_str().unwrap_or_default().to_owned();
    let reply = {
        let mut inner = receiver.lock();
        if !inner.in_flight.insert(id.clone()) {
            inner.overlaps.push(id.clone());
        }
        inner.received.push(Received {
            envelope,
            body: String::from_utf8_lossy(&body).into_owned(),
            signature,
            verified,
            headers: all_headers,
        });
        inner.script.pop_front().unwrap_or(Reply::Status(200, None))
    };
    // Whatever happens next (even askloop giving up and closing the connection, which drops
    // this future), the copy is no longer in flight afterwards.
    let _leaving = InFlight {
        receiver: receiver.clone(),
        id,
    };
    // Hold briefly so two copies sent at once would overlap here.
    tokio::time::sleep(Duration::from_millis(5)).await;
    match reply {
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        }
        Reply::Status(code, retry_after) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            match retry_after {
                Some(secs) => (status, [("retry-after", secs.to_string())]).into_response(),
                None => status.into_response(),
            }
        }
        Reply::Redirect(code, elsewhere) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::TEMPORARY_REDIRECT);
            let location = Receiver::url_for(elsewhere);
            (status, [("location", location)]).into_response()
        }
    }
}

struct InFlight {
    receiver: Receiver,
    id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.receiver.lock().in_flight.remove(&self.id);
    }
}

/// Whether a Standard Webhooks delivery verifies with `secret`: one of the space-separated
/// `v1,` entries is the signature of `"<webhook-id>.<webhook-timestamp>.<body>"`, and the
/// timestamp is within five minutes of now.
fn verifies_standard(secret: &str, headers: &HeaderMap, signatures: &str, body: &[u8]) -> bool {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(id), Some(timestamp)) = (get("webhook-id"), get("webhook-timestamp")) else {
        return false;
    };
    let Ok(timestamp) = timestamp.parse::<i64>() else {
        return false;
    };
    if (chrono::Utc::now().timestamp() - timestamp).abs() > 300 {
        return false;
    }
    let key = askloop::domain::agents::secret_key_bytes(secret);
    let expected = askloop::domain::agents::standard_signature(&key, id, timestamp, body);
    signatures.split(' ').any(|entry| entry == expected)
}
