//! The agent's client of askloop's signed routes (docs/contract.md#signed-routes): ask, look up,
//! wait for the answer with the lookup's long poll, and bring research back. Every request is
//! signed afresh at each attempt (a retry minutes later must not carry an expired signature), and
//! transient failures — the network, a 5xx, a 429 — are retried with backoff; a 4xx never is.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::Rng;

use askloop_wire::lookup::LookupRequest;
use askloop_wire::research::ResearchRequest;
use askloop_wire::withdraw::WithdrawRequest;

use crate::error::Error;
use crate::question::{
    Asked, IntakeResponse, LookedUp, LookupResponse, Question, QuestionState, ResearchAdded,
    ResearchResponse, Status, Withdrawn,
};
use crate::signing::{AGENT_HEADER, SIGNATURE_HEADER, sign};

/// `POST` here to ask (docs/contract.md#asking-a-question).
pub const INTAKE_PATH: &str = "/api/v1/internal/expert-questions";
/// `POST` here to read questions by external id (docs/contract.md#looking-up-questions).
pub const LOOKUP_PATH: &str = "/api/v1/internal/expert-questions/lookup";
/// `POST` here to bring research back (docs/contract.md#research-results).
pub const RESEARCH_PATH: &str = "/api/v1/internal/research-results";

/// The withdrawal route's path.
pub const WITHDRAW_PATH: &str = "/api/v1/internal/expert-questions/withdraw";

/// The longest askloop holds one lookup (its `waitSeconds` maximum).
pub const LOOKUP_MAX_WAIT: Duration = Duration::from_secs(55);

/// How long after a question's `expiresAt` a wait goes on for askloop's expiry sweep to mark it
/// expired (it runs every few seconds), before giving up with [`Error::PastExpiry`].
pub const EXPIRY_GRACE: Duration = Duration::from_secs(60);

/// How long a request may take beyond the time askloop is asked to hold it.
const RESPONSE_MARGIN: Duration = Duration::from_secs(15);

/// A long poll that comes back sooner than this while the question is still open (askloop
/// shutting down, or a change to something else) is followed by a pause of this length, so a
/// wait never turns into a stream of back-to-back requests.
const SHORTEST_ROUND: Duration = Duration::from_secs(1);

/// The longest `Retry-After` the client honours; a longer one is cut to this.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// How often and how patiently a request is retried after a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retry). A wait for an answer is bounded by
    /// its timeout instead, and retries until then.
    pub attempts: u32,
    /// The pause after the first failure; each further failure doubles it.
    pub base: Duration,
    /// The longest pause.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Four attempts, pausing about 0.5 s, 1 s and 2 s between them.
    fn default() -> Self {
        Self {
            attempts: 4,
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// One attempt, no retry.
    pub fn none() -> Self {
        Self {
            attempts: 1,
            ..Self::default()
        }
    }

    /// The pause after the `failures`-th failure (1-based): `base · 2^(failures-1)` up to
    /// `max_delay`, scaled by a random factor between ½ and 1 so that many agents retrying at
    /// once spread out; a longer `Retry-After` wins, up to a minute.
    fn delay(&self, failures: u32, asked: Option<Duration>) -> Duration {
        let doublings = failures.saturating_sub(1).min(20);
        let full = self
            .base
            .saturating_mul(1_u32 << doublings)
            .min(self.max_delay);
        let jittered = full.mul_f64(0.5 + 0.5 * rand::rng().random::<f64>());
        match asked {
            Some(asked) => jittered.max(asked.min(RETRY_AFTER_CAP)),
            None => jittered,
        }
    }
}

/// A client of askloop for one agent.
///
/// ```no_run
/// # async fn run() -> Result<(), askloop_agent::Error> {
/// use std::time::Duration;
/// use askloop_agent::{Client, Question};
///
/// let askloop = Client::new("https://askloop.example", "whsec_…").agent("research-bot");
/// let question = Question::new("games", "Which date?", "Early access or 1.0?")
///     .option("ea", "Early access")
///     .option("full", "1.0");
/// let asked = askloop.ask(&question).await?;
/// let settled = askloop
///     .wait_for_answer(&asked.niche, &asked.external_id, Duration::from_secs(600))
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    secret: String,
    agent: Option<String>,
    retry: RetryPolicy,
    request_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never printed, not even in debug output.
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("agent", &self.agent)
            .field("retry", &self.retry)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the askloop at `base_url` (`https://askloop.example`), signing with
    /// `signing_secret`, as the built-in default agent until [`Client::agent`] names one.
    pub fn new(base_url: impl Into<String>, signing_secret: impl Into<String>) -> Self {
        // Redirects are not followed: a signed request goes where it was addressed, and a 3xx is
        // an unexpected answer rather than a reason to send the body elsewhere.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("askloop-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            http,
            base: base_url.into().trim_end_matches('/').to_owned(),
            secret: signing_secret.into(),
            agent: None,
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(30),
        }
    }

    /// Speak as the registered agent `slug` (`X-Askloop-Agent`); the signing secret is then that
    /// agent's own.
    pub fn agent(mut self, slug: impl Into<String>) -> Self {
        self.agent = Some(slug.into());
        self
    }

    /// Retry transient failures by `policy` instead of the default.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// How long one request (other than a long poll) may take; 30 s by default.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Send through this `reqwest` client (proxies, certificates, …). Follow no redirects with
    /// it: askloop never sends one on these routes.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = http;
        self
    }

    /// Ask `question`. Transient failures are retried under the same external id, so a retry
    /// whose first attempt did arrive is the same question (`duplicate: true`).
    pub async fn ask(&self, question: &Question) -> Result<Asked, Error> {
        let body = question.to_body().to_string().into_bytes();
        let bytes = self
            .post_retrying(
                INTAKE_PATH,
                &body,
                self.request_timeout,
                Error::is_transient,
            )
            .await?;
        let response: IntakeResponse = read_json(&bytes)?;
        Ok(Asked {
            id: response.question.id,
            niche: question.niche.clone(),
            external_id: question.external_id.clone(),
            duplicate: response.duplicate,
            status: response.question.status,
            expires_at: response.question.expires_at,
            budget: response.budget,
        })
    }

    /// Read the agent's questions `external_ids` (1 to 100) in `niche`. With `wait` (whole
    /// seconds, at most [`LOOKUP_MAX_WAIT`]) and none of them settled yet, askloop holds the
    /// request until one changes or the time is up.
    pub async fn lookup(
        &self,
        niche: &str,
        external_ids: &[&str],
        wait: Option<Duration>,
    ) -> Result<Vec<LookedUp>, Error> {
        let (body, timeout) = lookup_request(niche, external_ids, wait, self.request_timeout);
        let bytes = self
            .post_retrying(LOOKUP_PATH, &body, timeout, Error::is_transient)
            .await?;
        read_lookup(&bytes)
    }

    /// Wait until the question `external_id` in `niche` is no longer open, and return it:
    /// answered (with the answer, the option chosen and its review state), dismissed, expired —
    /// or sent back for research (`Researching`: add research with [`Client::add_research`] and
    /// wait again).
    ///
    /// It loops over the lookup's long poll, at most 55 s per request. It stops with
    /// [`Error::TimedOut`] when `timeout` passes and with [`Error::PastExpiry`] when the question's
    /// `expiresAt` has passed (by [`EXPIRY_GRACE`]) and askloop still shows it open, whichever
    /// comes first. Transient failures are retried with backoff until then; any other error ends
    /// the wait at once ([`Error::NotFound`] when the agent has no such question).
    pub async fn wait_for_answer(
        &self,
        niche: &str,
        external_id: &str,
        timeout: Duration,
    ) -> Result<QuestionState, Error> {
        let deadline = Instant::now() + timeout;
        let mut expires_at: Option<DateTime<Utc>> = None;
        let mut failures = 0_u32;
        loop {
            let wait = next_wait(deadline, expires_at, Instant::now(), Utc::now());
            let started = Instant::now();
            let read = self.lookup_once(niche, external_id, wait).await;
            let now = Instant::now();
            match read {
                Ok(state) if state.status != Status::Open => return Ok(state),
                Ok(state) => {
                    failures = 0;
                    if now >= deadline {
                        return Err(Error::TimedOut {
                            last: Box::new(state),
                        });
                    }
                    if past_expiry(state.expires_at, Utc::now()) {
                        return Err(Error::PastExpiry {
                            last: Box::new(state),
                        });
                    }
                    expires_at = Some(state.expires_at);
                    if !wait.is_zero() && now - started < SHORTEST_ROUND {
                        tokio::time::sleep(SHORTEST_ROUND.min(deadline - now)).await;
                    }
                }
                Err(err) if err.is_transient() && now < deadline => {
                    failures += 1;
                    let pause = self
                        .retry
                        .delay(failures, err.retry_after())
                        .min(deadline - now);
                    tokio::time::sleep(pause).await;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Bring research back for the question `external_id` in `niche`: `findings` are appended to
    /// its context and it is open again (docs/contract.md#research-results). A settled or expired
    /// question is [`Error::Conflict`] with reason `NOT_AWAITING_RESEARCH`.
    ///
    /// Unlike asking, this is not idempotent — the same findings sent twice are appended twice —
    /// so it is resent only when askloop cannot have applied it: the connection was never made,
    /// or askloop answered 429. After a timeout or a 5xx, look the question up before sending
    /// the findings again.
    pub async fn add_research(
        &self,
        niche: &str,
        external_id: &str,
        findings: &str,
    ) -> Result<ResearchAdded, Error> {
        // The wire crate's typed request; only strings, so serialising it cannot fail.
        let body = serde_json::to_vec(&ResearchRequest::new(niche, external_id, findings))
            .unwrap_or_default();
        let bytes = self
            .post_retrying(RESEARCH_PATH, &body, self.request_timeout, never_arrived)
            .await?;
        let response: ResearchResponse = read_json(&bytes)?;
        Ok(response.question)
    }

    /// Withdraw the question `external_id` in `niche`, which the agent no longer needs
    /// (docs/contract.md#withdrawal): while it waits (open or researching) it is dismissed as
    /// withdrawn by the agent, what was reserved for it is released and people stop seeing it.
    /// An answered question stays answered ([`WithdrawOutcome::Settled`]); withdrawing again
    /// changes nothing ([`WithdrawOutcome::AlreadyWithdrawn`]), so this is retried like a lookup.
    /// Another agent's question, or none, is [`Error::NotFound`].
    pub async fn withdraw(
        &self,
        niche: &str,
        external_id: &str,
        reason: Option<&str>,
    ) -> Result<Withdrawn, Error> {
        // The wire crate's typed request: the body askloop's withdrawal route parses.
        let request = WithdrawRequest {
            niche_slug: Some(niche.to_owned()),
            external_id: Some(external_id.to_owned()),
            reason: reason.map(str::to_owned),
            ..WithdrawRequest::default()
        };
        // Only strings: serialising them cannot fail.
        let body = serde_json::to_vec(&request).unwrap_or_default();
        let bytes = self
            .post_retrying(
                WITHDRAW_PATH,
                &body,
                self.request_timeout,
                Error::is_transient,
            )
            .await?;
        read_json(&bytes)
    }

    /// One lookup of one question, without retries (the wait retries on its own terms).
    async fn lookup_once(
        &self,
        niche: &str,
        external_id: &str,
        wait: Duration,
    ) -> Result<QuestionState, Error> {
        let (body, timeout) =
            lookup_request(niche, &[external_id], Some(wait), self.request_timeout);
        let bytes = self.post(LOOKUP_PATH, &body, timeout).await?;
        read_lookup(&bytes)?
            .into_iter()
            .next()
            .and_then(|found| found.question)
            .ok_or_else(|| Error::NotFound {
                message: format!(
                    "this agent has no question with externalId '{external_id}' in '{niche}'"
                ),
            })
    }

    /// POST `body` to `path`, retrying by the client's policy the failures `resend` allows.
    async fn post_retrying(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
        resend: fn(&Error) -> bool,
    ) -> Result<Vec<u8>, Error> {
        let mut failures = 0_u32;
        loop {
            match self.post(path, body, timeout).await {
                Err(err) if resend(&err) && failures + 1 < self.retry.attempts => {
                    failures += 1;
                    tokio::time::sleep(self.retry.delay(failures, err.retry_after())).await;
                }
                done => return done,
            }
        }
    }

    /// One signed POST: the body's bytes, signed now; a 2xx's body, or the error it stands for.
    async fn post(&self, path: &str, body: &[u8], timeout: Duration) -> Result<Vec<u8>, Error> {
        let signature = sign(&self.secret, body, Utc::now().timestamp());
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, signature)
            .timeout(timeout)
            .body(body.to_vec());
        if let Some(agent) = &self.agent {
            request = request.header(AGENT_HEADER, agent);
        }
        let response = request.send().await.map_err(Error::Transport)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let bytes = response.bytes().await.map_err(Error::Transport)?;
        if (200..300).contains(&status) {
            Ok(bytes.to_vec())
        } else {
            Err(Error::from_response(status, retry_after, &bytes))
        }
    }
}

/// Whether a failed request certainly did not reach askloop's handler: no connection was made,
/// or askloop refused it with 429 before doing anything. Only such a request is resent when
/// sending it twice would do the work twice.
fn never_arrived(err: &Error) -> bool {
    match err {
        Error::Transport(cause) => cause.is_connect(),
        Error::RateLimited { .. } => true,
        _ => false,
    }
}

/// The lookup's body and how long to let the request take.
fn lookup_request(
    niche: &str,
    external_ids: &[&str],
    wait: Option<Duration>,
    request_timeout: Duration,
) -> (Vec<u8>, Duration) {
    let wait_seconds = wait
        .map(|w| w.min(LOOKUP_MAX_WAIT).as_secs())
        .filter(|&s| s > 0);
    // The wire crate's typed request; only strings and a number, so serialising cannot fail.
    let body = serde_json::to_vec(&LookupRequest::new(niche, external_ids, wait_seconds))
        .unwrap_or_default();
    let held = Duration::from_secs(wait_seconds.unwrap_or(0));
    (body, request_timeout.max(held + RESPONSE_MARGIN))
}

fn read_lookup(bytes: &[u8]) -> Result<Vec<LookedUp>, Error> {
    let response: LookupResponse = read_json(bytes)?;
    response
        .questions
        .into_iter()
        .map(|entry| {
            let external_id = entry["externalId"].as_str().unwrap_or_default().to_owned();
            let question = if entry["found"].as_bool() == Some(true) {
                Some(serde_json::from_value(entry).map_err(|err| {
                    Error::InvalidResponse(format!("question '{external_id}': {err}"))
                })?)
            } else {
                None
            };
            Ok(LookedUp {
                external_id,
                question,
            })
        })
        .collect()
}

/// How long the next long poll may hold: what is left of the caller's time and of the
/// question's (its expiry plus [`EXPIRY_GRACE`]), at most [`LOOKUP_MAX_WAIT`], in whole seconds
/// rounded up (so the last stretch before a deadline is one held request, not a spin of
/// immediate ones).
fn next_wait(
    deadline: Instant,
    expires_at: Option<DateTime<Utc>>,
    now: Instant,
    clock: DateTime<Utc>,
) -> Duration {
    let mut left = deadline.saturating_duration_since(now).min(LOOKUP_MAX_WAIT);
    if let Some(expires_at) = expires_at {
        let grace = chrono::Duration::from_std(EXPIRY_GRACE).unwrap_or(chrono::Duration::MAX);
        // Negative once the grace has passed (no wait at all then); unbounded past chrono's range.
        let until_given_up = expires_at
            .checked_add_signed(grace)
            .map_or(Duration::MAX, |given_up| {
                (given_up - clock).to_std().unwrap_or(Duration::ZERO)
            });
        left = left.min(until_given_up);
    }
    let whole = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    Duration::from_secs(whole).min(LOOKUP_MAX_WAIT)
}

/// Whether a question that expires at `expires_at` is past its time and the grace given to
/// askloop's expiry sweep.
fn past_expiry(expires_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    let grace = chrono::Duration::from_std(EXPIRY_GRACE).unwrap_or(chrono::Duration::MAX);
    expires_at
        .checked_add_signed(grace)
        .is_some_and(|given_up| now >= given_up)
}

/// A `Retry-After` value: delay-seconds, or an HTTP date (relative to `now`).
fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.with_timezone(&Utc) - now)
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

fn read_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|err| Error::InvalidResponse(err.to_string()))
}

#[cfg(test)]
mod tests;
