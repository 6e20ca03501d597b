//! Receiving askloop's events (docs/contract.md#events-for-the-agent): verify a delivery by its
//! endpoint's [scheme](docs/contract.md#webhook-schemes), parse the envelope, and drop a
//! redelivery by its envelope id.
//!
//! - **`chovy`** (the default, and always the default agent's): `X-Chovy-Signature:
//!   t=<unix>,v1=<hex>`, HMAC-SHA256 over `"<t>.<body>"` keyed with the secret's text.
//! - **`standard`** ([Standard Webhooks](https://www.standardwebhooks.com/)): `webhook-id`,
//!   `webhook-timestamp`, `webhook-signature: v1,<base64>` over `"<id>.<timestamp>.<body>"`, keyed
//!   with the bytes the base64 after `whsec_` stands for.
//!
//! Both carry one signature per active secret while a secret rotates, and a delivery verifies
//! when any one matches any secret the [`Verifier`] holds. Signatures are compared in constant
//! time (`hmac`'s `verify_slice`), and the timestamp must be within [`TOLERANCE_SECS`] of the
//! receiver's clock. The body is verified as the raw bytes received, before it is parsed.
//!
//! A delivery can arrive more than once (askloop retries until it gets a 2xx, and an admin may
//! redeliver); its envelope id never changes. [`Verifier::receive`] verifies and then records the
//! id in a [`SeenStore`] — the bounded in-memory [`Deduplicator`], or the caller's own — and
//! says whether this copy is new:
//!
//! ```no_run
//! use askloop_agent::webhook::{Deduplicator, Delivery, EventData, Verifier};
//!
//! // Made once, when the receiver starts (`Verifier::standard("whsec_…")`,
//! // `Deduplicator::default()`), and shared by every request; the body is the raw bytes.
//! async fn handle(
//!     verifier: &Verifier,
//!     seen: &Deduplicator,
//!     headers: &reqwest::header::HeaderMap,
//!     body: &[u8],
//! ) -> u16 {
//!     match verifier.receive(seen, headers, body).await {
//!         Ok(Delivery::New(event)) => {
//!             if let Ok(EventData::AnswerCreated(answer)) = event.data() {
//!                 println!("{:?}: {:?}", answer.external_id, answer.answer);
//!             }
//!             200
//!         }
//!         // Already handled: say so with a 2xx, or askloop keeps retrying.
//!         Ok(Delivery::Duplicate(_)) => 200,
//!         Err(_) => 401,
//!     }
//! }
//! ```

mod dedupe;
mod event;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::Mac;

pub use dedupe::{Deduplicator, SeenStore};
pub use event::{
    AnswerCreated, AnswerRejected, AnswerVerified, Event, EventData, NeedsContext,
    QuestionDismissed, QuestionExpired, ResearchRequested, TaskCompleted,
};

pub use crate::signing::TOLERANCE_SECS;
use crate::signing::{SIGNATURE_HEADER, chovy_mac, hmac_sha256};

/// The Standard Webhooks header with the envelope id.
pub const WEBHOOK_ID_HEADER: &str = "webhook-id";
/// The Standard Webhooks header with the signing time (unix seconds).
pub const WEBHOOK_TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The Standard Webhooks header with the signatures.
pub const WEBHOOK_SIGNATURE_HEADER: &str = "webhook-signature";
/// The prefix of a secret as askloop shows it.
pub const SECRET_PREFIX: &str = "whsec_";

/// How an endpoint's deliveries are signed (chosen per endpoint in askloop's agent registry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `X-Chovy-Signature`.
    Chovy,
    /// Standard Webhooks.
    Standard,
}

/// Why a delivery was refused. The signature reasons read as askloop's own (`no signature`,
/// `malformed signature`, `signature expired`, `bad signature`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The verifier holds no secret (every one given was empty).
    #[error("no signing secret is configured")]
    NoSecret,
    /// The scheme's signature header (or, for Standard Webhooks, its id or timestamp) is missing
    /// or empty.
    #[error("no signature")]
    Missing,
    /// The header is there but cannot be read: no integer time, or no `v1` signature.
    #[error("malformed signature")]
    Malformed,
    /// The signing time is further than the tolerance from the receiver's clock.
    #[error("signature expired")]
    Expired,
    /// No signature matches any secret.
    #[error("bad signature")]
    Mismatch,
    /// The signature is good but the body is not askloop's envelope.
    #[error("the body is not an askloop event: {0}")]
    BadEnvelope(String),
}

/// Reading a header by name, whatever holds the request's headers. Names are matched without
/// regard to case, as HTTP says.
pub trait Headers {
    /// The value of header `name` (given lowercase), if present and text.
    fn header(&self, name: &str) -> Option<&str>;
}

impl Headers for reqwest::header::HeaderMap {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|value| value.to_str().ok())
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Headers for [(K, V)] {
    fn header(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(key, _)| key.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_ref())
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Headers for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<&str> {
        self.as_slice().header(name)
    }
}

/// Verifies deliveries for one endpoint: its scheme and the secret(s) it holds.
#[derive(Clone)]
pub struct Verifier {
    scheme: Scheme,
    secrets: Vec<String>,
    tolerance: Duration,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets are never printed, not even in debug output.
        f.debug_struct("Verifier")
            .field("scheme", &self.scheme)
            .field("secrets", &self.secrets.len())
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

/// What [`Verifier::receive`] made of a delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// The first copy of this envelope: handle it.
    New(Event),
    /// An envelope seen before: answer 2xx and do nothing more.
    Duplicate(Event),
}

impl Delivery {
    /// The event, new or not.
    pub fn event(&self) -> &Event {
        match self {
            Delivery::New(event) | Delivery::Duplicate(event) => event,
        }
    }

    /// Whether the envelope was seen before.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Delivery::Duplicate(_))
    }
}

/// Why [`Verifier::receive`] did not accept a delivery.
#[derive(Debug, thiserror::Error)]
pub enum ReceiveError<E: std::error::Error + 'static> {
    /// The delivery itself was refused (answer 4xx).
    #[error(transparent)]
    Rejected(#[from] WebhookError),
    /// The store of seen envelope ids failed (answer 5xx so that askloop sends it again).
    #[error("the store of seen envelope ids failed: {0}")]
    Store(#[source] E),
}

impl Verifier {
    /// A verifier for an endpoint of `scheme` holding `secret` (the text askloop printed).
    pub fn new(scheme: Scheme, secret: impl Into<String>) -> Self {
        Self {
            scheme,
            secrets: vec![secret.into()],
            tolerance: Duration::from_secs(TOLERANCE_SECS),
        }
    }

    /// A verifier for a `chovy` endpoint.
    pub fn chovy(secret: impl Into<String>) -> Self {
        Self::new(Scheme::Chovy, secret)
    }

    /// A verifier for a `standard` (Standard Webhooks) endpoint.
    pub fn standard(secret: impl Into<String>) -> Self {
        Self::new(Scheme::Standard, secret)
    }

    /// Also accept `secret` (while rotating: the previous secret until askloop retires it, or the
    /// new one before the agent switches).
    pub fn also_accept(mut self, secret: impl Into<String>) -> Self {
        self.secrets.push(secret.into());
        self
    }

    /// Accept signing times up to `tolerance` from the clock (300 s by default).
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// The scheme it verifies.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Verify a delivery against the clock and parse its envelope.
    pub fn verify<H: Headers + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
    ) -> Result<Event, WebhookError> {
        self.verify_at(headers, body, chrono::Utc::now().timestamp())
    }

    /// [`Verifier::verify`] at clock `now` (unix seconds).
    pub fn verify_at<H: Headers + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: i64,
    ) -> Result<Event, WebhookError> {
        self.verify_signature_at(headers, body, now)?;
        serde_json::from_slice(body).map_err(|err| WebhookError::BadEnvelope(err.to_string()))
    }

    /// Only the signature, at clock `now` (unix seconds): the body is not parsed.
    pub fn verify_signature_at<H: Headers + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: i64,
    ) -> Result<(), WebhookError> {
        let secrets: Vec<&str> = self
            .secrets
            .iter()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .collect();
        if secrets.is_empty() {
            return Err(WebhookError::NoSecret);
        }
        match self.scheme {
            Scheme::Chovy => verify_chovy(&secrets, headers, body, now, self.tolerance),
            Scheme::Standard => verify_standard(&secrets, headers, body, now, self.tolerance),
        }
    }

    /// Verify a delivery, then record its envelope id in `seen`: [`Delivery::New`] the first
    /// time, [`Delivery::Duplicate`] after. A refused delivery records nothing. If handling a new
    /// one fails, [`SeenStore::forget`] its id so that askloop's next attempt is handled.
    pub async fn receive<S: SeenStore + ?Sized, H: Headers + ?Sized>(
        &self,
        seen: &S,
        headers: &H,
        body: &[u8],
    ) -> Result<Delivery, ReceiveError<S::Error>> {
        let event = self.verify(headers, body)?;
        let first = seen.insert(&event.id).await.map_err(ReceiveError::Store)?;
        Ok(if first {
            Delivery::New(event)
        } else {
            Delivery::Duplicate(event)
        })
    }
}

/// Whether `signed` is more than `tolerance` from `now`; checked, so a hostile time far from
/// now is "expired", never an overflow.
fn outside(signed: i64, now: i64, tolerance: Duration) -> bool {
    now.checked_sub(signed)
        .map(i64::unsigned_abs)
        .is_none_or(|skew| skew > tolerance.as_secs())
}

fn non_empty<H: Headers + ?Sized>(headers: &H, name: &str) -> Option<String> {
    headers
        .header(name)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// `t=<unix>,v1=<hex>[,v1=<hex>…]`; other names (`v0=`) are ignored, spaces around parts
/// allowed (docs/contract.md#signing).
fn verify_chovy<H: Headers + ?Sized>(
    secrets: &[&str],
    headers: &H,
    body: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<(), WebhookError> {
    let header = non_empty(headers, SIGNATURE_HEADER).ok_or(WebhookError::Missing)?;
    let mut signed_at = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        let Some((key, value)) = part.split_once('=') else {
            continue;
        };
        match key.trim() {
            "t" => signed_at = value.trim().parse::<i64>().ok(),
            "v1" => candidates.push(value.trim()),
            _ => {}
        }
    }
    let signed_at = signed_at.ok_or(WebhookError::Malformed)?;
    if candidates.is_empty() {
        return Err(WebhookError::Malformed);
    }
    if outside(signed_at, now, tolerance) {
        return Err(WebhookError::Expired);
    }
    // Hex that does not decode simply does not match.
    let decoded: Vec<Vec<u8>> = candidates
        .iter()
        .filter_map(|c| hex::decode(c).ok())
        .collect();
    for secret in secrets {
        let mac = chovy_mac(secret.as_bytes(), signed_at, body);
        if decoded.iter().any(|c| mac.clone().verify_slice(c).is_ok()) {
            return Ok(());
        }
    }
    Err(WebhookError::Mismatch)
}

/// The key a secret signs with under Standard Webhooks: the bytes the base64 after `whsec_`
/// stands for; a secret of another shape signs with its own text (as askloop does).
pub fn standard_key(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|encoded| BASE64.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

/// `webhook-signature: v1,<base64> [v1,<base64> …]` over `"<id>.<timestamp>.<body>"`; entries
/// of other versions are ignored.
fn verify_standard<H: Headers + ?Sized>(
    secrets: &[&str],
    headers: &H,
    body: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<(), WebhookError> {
    let signatures = non_empty(headers, WEBHOOK_SIGNATURE_HEADER).ok_or(WebhookError::Missing)?;
    let id = non_empty(headers, WEBHOOK_ID_HEADER).ok_or(WebhookError::Missing)?;
    let timestamp = non_empty(headers, WEBHOOK_TIMESTAMP_HEADER).ok_or(WebhookError::Missing)?;
    let signed_at = timestamp
        .parse::<i64>()
        .map_err(|_| WebhookError::Malformed)?;
    let candidates: Vec<&str> = signatures
        .split_whitespace()
        .filter_map(|entry| entry.split_once(','))
        .filter(|(version, _)| *version == "v1")
        .map(|(_, signature)| signature)
        .collect();
    if candidates.is_empty() {
        return Err(WebhookError::Malformed);
    }
    if outside(signed_at, now, tolerance) {
        return Err(WebhookError::Expired);
    }
    let decoded: Vec<Vec<u8>> = candidates
        .iter()
        .filter_map(|c| BASE64.decode(c).ok())
        .collect();
    for secret in secrets {
        let mut mac = hmac_sha256(&standard_key(secret));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        if decoded.iter().any(|c| mac.clone().verify_slice(c).is_ok()) {
            return Ok(());
        }
    }
    Err(WebhookError::Mismatch)
}

#[cfg(test)]
mod tests;
