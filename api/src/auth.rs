//! The caller extractor every surface uses: a bearer token (API key or session) or the session
//! cookie resolves to a [`Viewer`]; nothing resolves to anonymous. It also records whether the
//! request came from askloop's own origin, which cookie-authenticated writes require.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::db::Db;
use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN, USER_AGENT};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::domain::handle::Handle;
use crate::error::ServiceError;
use crate::service::access::Viewer;
use crate::service::sessions::{self, Credential, Lookup};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "askloop_session";

/// Who is calling, and how.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The signed-in person, if any.
    pub viewer: Option<Viewer>,
    /// How they signed in.
    pub credential: Option<Credential>,
    /// The raw session token, when the caller used one (so logout can end it).
    pub session_token: Option<String>,
    /// Whether that session came from the cookie (rather than a bearer header).
    pub via_cookie: bool,
    /// Where the request came from, as far as the browser says.
    pub origin: OriginCheck,
}

/// What the request's `Origin` (or `Sec-Fetch-Site`) says about where it came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OriginCheck {
    /// askloop's own pages.
    Same,
    /// Another site.
    Cross,
    /// Nothing said (command-line clients, server-to-server calls).
    #[default]
    Unknown,
}

impl Caller {
    /// The viewer, for reads.
    pub fn viewer(&self) -> Option<&Viewer> {
        self.viewer.as_ref()
    }

    /// Writes by a cookie session must come from askloop's own pages: a page elsewhere can make
    /// the browser send our cookie, but not our Origin. API keys and bearer tokens are not sent
    /// by browsers on their own, so they need no such check.
    pub fn check_write(&self) -> Result<(), ServiceError> {
        if self.credential == Some(Credential::Session)
            && self.via_cookie
            && self.origin != OriginCheck::Same
        {
            return Err(ServiceError::Forbidden(
                "cross-site request refused: writes with a session cookie must come from askloop's own pages".into(),
            ));
        }
        Ok(())
    }

    /// Signing in from another site's page is refused (login CSRF); clients that send no Origin
    /// at all are not browsers and may sign in.
    pub fn check_login(&self) -> Result<(), ServiceError> {
        if self.origin == OriginCheck::Cross {
            return Err(ServiceError::Forbidden(
                "cross-site request refused: sign in from askloop's own pages".into(),
            ));
        }
        Ok(())
    }
}

/// Any state that can hand out the pool and the configuration can resolve callers.
impl<S> FromRequestParts<S> for Caller
where
    S: Send + Sync,
    Db: FromRef<S>,
    Arc<Config>: FromRef<S>,
{
    type Rejection = ServiceError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let db = Db::from_ref(state);
        let config = Arc::<Config>::from_ref(state);
        resolve_caller(&parts.headers, &db, &config, Utc::now()).await
    }
}

/// Resolve the caller from request headers.
pub async fn resolve_caller(
    headers: &HeaderMap,
    db: &Db,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<Caller, ServiceError> {
    let origin = origin_check(headers, config);
    if let Some(token) = bearer_token(headers) {
        // A bearer that does not resolve is an error, not anonymity: the caller meant to be
        // someone, and silently serving them as anonymous would hide the mistake.
        let (viewer, credential) = sessions::resolve(db, &token, now, Lookup::Use)
            .await?
            .ok_or_else(|| ServiceError::Unauthenticated("that token is not valid".into()))?;
        return Ok(Caller {
            viewer: Some(viewer),
            credential: Some(credential),
            session_token: (credential == Credential::Session).then_some(token),
            via_cookie: false,
            origin,
        });
    }
    if let Some(token) = cookie_token(headers) {
        // An expired or unknown cookie is simply anonymous: the browser will be sent to /login.
        if let Some((viewer, credential)) = sessions::resolve(db, &token, now, Lookup::Use).await? {
            return Ok(Caller {
                viewer: Some(viewer),
                credential: Some(credential),
                session_token: Some(token),
                via_cookie: true,
                origin,
            });
        }
    }
    Ok(Caller {
        origin,
        ..Caller::default()
    })
}

/// The token of an `Authorization: Bearer <token>` header (scheme case aside), if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// The session token from the `Cookie` header(s).
pub fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|v| !v.is_empty())
}

/// Whether the request's `Origin` is askloop's own: the configured public origin, or else the
/// origin the `Host` header names. Without an `Origin`, `Sec-Fetch-Site` decides; without
/// either, nothing is known.
pub fn origin_check(headers: &HeaderMap, config: &Config) -> OriginCheck {
    let same = |yes: bool| {
        if yes {
            OriginCheck::Same
        } else {
            OriginCheck::Cross
        }
    };
    let origin = headers.get(ORIGIN).and_then(|v| v.to_str().ok());
    match origin {
        Some(origin) => same(match &config.public_origin {
            Some(public) => origin.eq_ignore_ascii_case(public.trim_end_matches('/')),
            None => {
                let host = headers.get(HOST).and_then(|v| v.to_str().ok());
                let origin_host = origin.split_once("://").map(|(_, rest)| rest);
                matches!((origin_host, host), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
            }
        }),
        None => match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
            Some("same-origin") => OriginCheck::Same,
            Some("none") | None => OriginCheck::Unknown,
            Some(_) => OriginCheck::Cross,
        },
    }
}

/// The `Set-Cookie` value that stores a session.
pub fn session_cookie(token: &str, config: &Config) -> HeaderValue {
    let secure = if config
        .public_origin
        .as_deref()
        .is_some_and(|o| o.starts_with("https://"))
    {
        "; Secure"
    } else {
        ""
    };
    let max_age = sessions::SESSION_LIFETIME_DAYS * 24 * 3600;
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={token}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("askloop_session=; Path=/; Max-Age=0"))
}

/// The `Set-Cookie` value that clears the session.
pub fn clear_session_cookie() -> HeaderValue {
    HeaderValue::from_static("askloop_session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0")
}

/// Where a request came from: the peer address of its connection. askloop has no setting that
/// names a trusted proxy, so `X-Forwarded-For` and its kin are never believed; behind a proxy,
/// every request comes from the proxy's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientAddress(Option<IpAddr>);

impl ClientAddress {
    /// The client at `ip`.
    pub fn new(ip: IpAddr) -> Self {
        Self(Some(ip))
    }

    /// The peer's address, if known, with an IPv4 address written as IPv4 (also when it came
    /// as IPv6): how a session records where it was opened.
    pub fn ip(self) -> Option<IpAddr> {
        self.0.map(|ip| ip.to_canonical())
    }

    /// The address a throttle counts under: IPv4 as is (also when written as IPv6), IPv6 by its
    /// /64 (one subscriber's network), and one shared address for requests whose peer is not
    /// known (a router served without connection info).
    pub fn throttle_address(self) -> IpAddr {
        match self.0.map(|ip| ip.to_canonical()) {
            Some(IpAddr::V6(v6)) => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(bits))
            }
            Some(ip) => ip,
            None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| peer.ip()),
        ))
    }
}

/// The request's `User-Agent`, as sent (a sign-in keeps a shortened copy with its session).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserAgent(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for UserAgent {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .headers
                .get(USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        ))
    }
}

pub use crate::config::SignInSettings;

/// Why a sign-in attempt was not let through, and how long until it would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// This handle failed too often from this address: its backoff runs.
    Handle(Duration),
    /// This address failed too often, whatever the handles: its bucket is empty.
    Address(Duration),
}

impl Refused {
    /// How long until an attempt would be let through.
    pub fn wait(self) -> Duration {
        match self {
            Refused::Handle(wait) | Refused::Address(wait) => wait,
        }
    }
}

/// Whose failed sign-ins a count is: a handle in normal form, tried from one address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThrottleKey {
    handle: Handle,
    address: IpAddr,
}

impl ThrottleKey {
    /// Sign-ins for `handle` from `client`.
    pub fn new(handle: &Handle, client: ClientAddress) -> Self {
        Self {
            handle: handle.clone(),
            address: client.throttle_address(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    /// Attempts counted: each is counted as it starts, and forgotten when one succeeds.
    count: u32,
    /// When the last was counted.
    last: Instant,
}

#[derive(Debug)]
struct Counts {
    by_key: HashMap<ThrottleKey, Failures>,
    /// Each address's bucket, as the moment it will be full again: every failure counted moves
    /// it one refill later, and an attempt is let through while it is at most a burst's worth
    /// of refills ahead of now (the generic cell rate algorithm). Addresses whose moment has
    /// passed are full, the same as not kept.
    by_address: HashMap<IpAddr, Instant>,
    swept: Instant,
}

/// Slows down guessing: after [`LoginThrottle::FREE_FAILURES`] failed sign-ins for a handle
/// from one address, each further attempt from there must wait, doubling up to
/// [`LoginThrottle::LONGEST_WAIT`]. Counting by handle *and* address means a stranger who fails
/// on purpose slows down only themselves, never the person signing in from their own address.
///
/// Guessing across handles is bounded too: each address (an IPv4 address, an IPv6 /64) has a
/// bucket of [`SignInSettings::address_burst`] failures, refilled one every
/// [`SignInSettings::address_refill`]; an attempt from an address whose bucket is empty is
/// refused before its password is checked, so it never waits for an argon2 permit. Successes
/// give their attempt back, so people who sign in from one shared address are not counted
/// against each other.
///
/// An attempt is counted when it starts, before its password is checked, and the count is
/// forgotten when one succeeds: so a burst of simultaneous guesses gets no more checks than the
/// free allowance. Counts are forgotten [`LoginThrottle::FORGET_AFTER`] after their last
/// attempt, and at most [`LoginThrottle::CAPACITY`] are kept; past it the least telling go
/// first (fewest failures, then oldest); the same cap holds the buckets, the fullest going
/// first. Per process: with several instances the limit applies per instance.
#[derive(Debug)]
pub struct LoginThrottle {
    counts: Mutex<Counts>,
    capacity: usize,
    settings: SignInSettings,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        Self::new(SignInSettings::default())
    }
}

/// A counted sign-in attempt: it stays counted as a failure unless it is marked
/// [`succeeded`](Attempt::succeeded) or [`withdrawn`](Attempt::withdrawn).
#[derive(Debug)]
#[must_use = "an attempt is a failure unless marked otherwise"]
pub struct Attempt<'a> {
    throttle: &'a LoginThrottle,
    key: ThrottleKey,
}

impl Attempt<'_> {
    /// The password was right: forget this handle's failures from this address, and give the
    /// attempt back to the address's bucket.
    pub fn succeeded(self) {
        let mut counts = self.throttle.lock();
        counts.by_key.remove(&self.key);
        self.throttle.give_back(&mut counts, self.key.address);
    }

    /// The password was wrong: the attempt stays counted.
    pub fn failed(self) {}

    /// The attempt could not be judged (askloop failed, not the password): uncount it.
    pub fn withdrawn(self) {
        let mut counts = self.throttle.lock();
        if let Some(failures) = counts.by_key.get_mut(&self.key) {
            failures.count = failures.count.saturating_sub(1);
        }
        self.throttle.give_back(&mut counts, self.key.address);
    }
}

impl LoginThrottle {
    /// Failures allowed before waiting starts.
    pub const FREE_FAILURES: u32 = 5;
    /// The longest wait between attempts.
    pub const LONGEST_WAIT: Duration = Duration::from_secs(15 * 60);
    /// How long after its last attempt a count is forgotten.
    pub const FORGET_AFTER: Duration = Duration::from_secs(60 * 60);
    /// The most counts kept at once.
    pub const CAPACITY: usize = 20_000;
    /// The longest an address may be made to wait for one failed sign-in back.
    pub const LONGEST_REFILL: Duration = SignInSettings::LONGEST_REFILL;
    /// How often forgotten counts are swept out even when nothing is full.
    const SWEEP_EVERY: Duration = Duration::from_secs(60);

    /// A throttle with `settings` that keeps at most [`LoginThrottle::CAPACITY`] counts.
    pub fn new(settings: SignInSettings) -> Self {
        Self::with_capacity(settings, Self::CAPACITY)
    }

    /// A throttle with `settings` that keeps at most `capacity` counts and as many buckets (at
    /// least one of each).
    pub fn with_capacity(settings: SignInSettings, capacity: usize) -> Self {
        Self {
            counts: Mutex::new(Counts {
                by_key: HashMap::new(),
                by_address: HashMap::new(),
                swept: Instant::now(),
            }),
            capacity: capacity.max(1),
            settings: SignInSettings {
                address_burst: settings.address_burst.max(1),
                address_refill: settings
                    .address_refill
                    .clamp(Duration::from_millis(1), Self::LONGEST_REFILL),
                checks_per_address: settings.checks_per_address.max(1),
            },
        }
    }

    /// The settings it throttles by.
    pub fn settings(&self) -> SignInSettings {
        self.settings
    }

    /// The counts; a panic elsewhere while they were held leaves them usable (each change
    /// to them is a single step).
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn delay(count: u32) -> Option<Duration> {
        let over = count.checked_sub(Self::FREE_FAILURES)?;
        let seconds = 2u64.saturating_pow(over.min(20));
        Some(Duration::from_secs(seconds).min(Self::LONGEST_WAIT))
    }

    fn forgotten(failures: &Failures, now: Instant) -> bool {
        now.saturating_duration_since(failures.last) >= Self::FORGET_AFTER
    }

    fn wait_of(failures: &Failures, now: Instant) -> Option<Duration> {
        if Self::forgotten(failures, now) {
            return None;
        }
        let ready = failures.last + Self::delay(failures.count)?;
        (ready > now).then(|| ready - now)
    }

    /// How long sign-ins under `key` must still wait, if at all.
    pub fn wait_for(&self, key: &ThrottleKey, now: Instant) -> Option<Duration> {
        Self::wait_of(self.lock().by_key.get(key)?, now)
    }

    /// How far ahead of `now` a bucket may be and still let an attempt through: the burst, less
    /// the one the attempt itself takes.
    fn bucket_depth(&self) -> Duration {
        self.settings
            .address_refill
            .saturating_mul(self.settings.address_burst.saturating_sub(1))
    }

    /// How long an attempt from `address` must wait for its bucket, if at all.
    fn bucket_wait(&self, counts: &Counts, address: IpAddr, now: Instant) -> Option<Duration> {
        let full_at = *counts.by_address.get(&address)?;
        let ahead = full_at.saturating_duration_since(now);
        ahead
            .checked_sub(self.bucket_depth())
            .filter(|wait| !wait.is_zero())
    }

    /// How long sign-ins from `client` must wait because the address failed too often, whatever
    /// the handles, if at all.
    pub fn address_wait(&self, client: ClientAddress, now: Instant) -> Option<Duration> {
        self.bucket_wait(&self.lock(), client.throttle_address(), now)
    }

    /// Take one failure from `address`'s bucket.
    fn take_from_bucket(&self, counts: &mut Counts, address: IpAddr, now: Instant) {
        let refill = self.settings.address_refill;
        let full_at = counts
            .by_address
            .get(&address)
            .copied()
            .filter(|full_at| *full_at > now)
            .unwrap_or(now);
        counts
            .by_address
            .insert(address, full_at.checked_add(refill).unwrap_or(full_at));
    }

    /// Give one attempt back to `address`'s bucket (it was not a failure after all).
    fn give_back(&self, counts: &mut Counts, address: IpAddr) {
        let refill = self.settings.address_refill;
        if let Some(full_at) = counts.by_address.get_mut(&address) {
            match full_at.checked_sub(refill) {
                Some(earlier) => *full_at = earlier,
                None => {
                    counts.by_address.remove(&address);
                }
            }
        }
    }

    /// Start a sign-in attempt under `key`: counted as a failure at once (for the handle and
    /// the address), or refused with why and how long to wait, counting nothing. Checking and
    /// counting happen under one lock, so simultaneous attempts cannot all pass the check
    /// before any is counted.
    pub fn attempt(&self, key: &ThrottleKey, now: Instant) -> Result<Attempt<'_>, Refused> {
        let mut counts = self.lock();
        if let Some(wait) = counts
            .by_key
            .get(key)
            .and_then(|failures| Self::wait_of(failures, now))
        {
            return Err(Refused::Handle(wait));
        }
        if let Some(wait) = self.bucket_wait(&counts, key.address, now) {
            return Err(Refused::Address(wait));
        }
        if now.saturating_duration_since(counts.swept) >= Self::SWEEP_EVERY {
            Self::sweep(&mut counts, now);
        }
        self.make_room_for_bucket(&mut counts, key.address, now);
        self.take_from_bucket(&mut counts, key.address, now);
        if let Some(failures) = counts.by_key.get_mut(key) {
            if Self::forgotten(failures, now) {
                failures.count = 0;
            }
            failures.count = failures.count.saturating_add(1);
            failures.last = now;
        } else {
            self.make_room(&mut counts, now);
            counts.by_key.insert(
                key.clone(),
                Failures {
                    count: 1,
                    last: now,
                },
            );
        }
        Ok(Attempt {
            throttle: self,
            key: key.clone(),
        })
    }

    /// Sweep out forgotten counts and full buckets, and give back the memory a flood of them
    /// took once they are gone.
    fn sweep(counts: &mut Counts, now: Instant) {
        counts
            .by_key
            .retain(|_, failures| !Self::forgotten(failures, now));
        if counts.by_key.capacity() > 4 * counts.by_key.len().max(256) {
            counts.by_key.shrink_to_fit();
        }
        counts.by_address.retain(|_, full_at| *full_at > now);
        if counts.by_address.capacity() > 4 * counts.by_address.len().max(256) {
            counts.by_address.shrink_to_fit();
        }
        counts.swept = now;
    }

    /// Before a new count is added (forgotten counts are swept out every minute, see
    /// [`LoginThrottle::sweep`]): when full, sweep now; when still full, drop a tenth of the
    /// capacity, the least telling first: fewest failures, then oldest.
    fn make_room(&self, counts: &mut Counts, now: Instant) {
        if counts.by_key.len() >= self.capacity {
            Self::sweep(counts, now);
        }
        let len = counts.by_key.len();
        if len < self.capacity {
            return;
        }
        let drop = (len + 1 - self.capacity).max(self.capacity / 10).min(len);
        let mut ranked: Vec<(u32, Instant, ThrottleKey)> = counts
            .by_key
            .iter()
            .map(|(key, failures)| (failures.count, failures.last, key.clone()))
            .collect();
        ranked.select_nth_unstable_by_key(drop - 1, |(count, last, _)| (*count, *last));
        for (_, _, key) in ranked.into_iter().take(drop) {
            counts.by_key.remove(&key);
        }
    }

    /// Before a bucket for `address` is added: when full, sweep now; when still full, drop a
    /// tenth of the capacity, the fullest first (a full bucket is what no bucket is).
    fn make_room_for_bucket(&self, counts: &mut Counts, address: IpAddr, now: Instant) {
        if counts.by_address.contains_key(&address) {
            return;
        }
        if counts.by_address.len() >= self.capacity {
            Self::sweep(counts, now);
        }
        let len = counts.by_address.len();
        if len < self.capacity {
            return;
        }
        let drop = (len + 1 - self.capacity).max(self.capacity / 10).min(len);
        let mut ranked: Vec<(Instant, IpAddr)> = counts
            .by_address
            .iter()
            .map(|(address, full_at)| (*full_at, *address))
            .collect();
        ranked.select_nth_unstable_by_key(drop - 1, |(full_at, _)| *full_at);
        for (_, address) in ranked.into_iter().take(drop) {
            counts.by_address.remove(&address);
        }
    }

    /// How many counts are kept.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// How many addresses' buckets are kept (those not full again yet, and some that are).
    pub fn addresses_kept(&self) -> usize {
        self.lock().by_address.len()
    }

    /// Whether no counts are kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(ip: [u8; 4]) -> ClientAddress {
        ClientAddress::new(IpAddr::from(ip))
    }

    fn key(typed: &str, from: ClientAddress) -> ThrottleKey {
        ThrottleKey::new(&Handle::parse(typed).expect("a handle"), from)
    }

    const HOME: [u8; 4] = [127, 0, 0, 1];
    const STRANGER: [u8; 4] = [127, 0, 0, 2];

    /// Settings whose address buckets never run dry in these tests (they test the handles).
    fn roomy() -> SignInSettings {
        SignInSettings {
            address_burst: 1_000_000,
            ..SignInSettings::default()
        }
    }

    /// Settings with a bucket of `burst` failures per address, refilled one a second.
    fn bucket_of(burst: u32) -> SignInSettings {
        SignInSettings {
            address_burst: burst,
            address_refill: Duration::from_secs(1),
            checks_per_address: 1,
        }
    }

    #[test]
    fn the_throttle_lets_five_failures_through_then_makes_people_wait_longer_each_time() {
        let throttle = LoginThrottle::default();
        let home = client(HOME);
        let start = Instant::now();
        for _ in 0..5 {
            assert_eq!(throttle.wait_for(&key("Ana", home), start), None);
            throttle
                .attempt(&key("ana", home), start)
                .expect("free")
                .failed();
        }
        assert_eq!(
            throttle.wait_for(&key("ana", home), start),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            throttle
                .attempt(&key("ana", home), start)
                .map(Attempt::failed),
            Err(Refused::Handle(Duration::from_secs(1)))
        );
        let later = start + Duration::from_secs(1);
        throttle
            .attempt(&key("ana", home), later)
            .expect("after the wait")
            .failed();
        assert_eq!(
            throttle.wait_for(&key("ANA", home), later),
            Some(Duration::from_secs(2))
        );
        let ready = later + Duration::from_secs(2);
        assert_eq!(throttle.wait_for(&key("ana", home), ready), None);
        throttle
            .attempt(&key("ana", home), ready)
            .expect("after the wait")
            .succeeded();
        assert_eq!(throttle.wait_for(&key("ana", home), ready), None);
        assert!(throttle.is_empty());
    }

    #[test]
    fn padded_and_differently_cased_handles_share_one_count() {
        let throttle = LoginThrottle::default();
        let home = client(HOME);
        let now = Instant::now();
        for typed in [
            " operator",
            "operator ",
            "\toperator",
            "\u{3000}operator",
            "OPERATOR",
        ] {
            throttle
                .attempt(&key(typed, home), now)
                .expect("free")
                .failed();
        }
        assert_eq!(throttle.len(), 1);
        // The plain handle is the sixth attempt: it waits, whatever the password.
        assert!(throttle.attempt(&key("operator", home), now).is_err());
    }

    #[test]
    fn a_strangers_failures_do_not_hold_back_the_owner_at_their_own_address() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for _ in 0..20 {
            let _ = throttle
                .attempt(&key("ana", client(STRANGER)), now)
                .map(Attempt::failed);
        }
        assert!(
            throttle
                .wait_for(&key("ana", client(STRANGER)), now)
                .is_some()
        );
        assert_eq!(throttle.wait_for(&key("ana", client(HOME)), now), None);
        throttle
            .attempt(&key("ana", client(HOME)), now)
            .expect("the owner is let through")
            .succeeded();
        // The stranger is still held back.
        assert!(
            throttle
                .wait_for(&key("ana", client(STRANGER)), now)
                .is_some()
        );
    }

    #[test]
    fn a_burst_of_simultaneous_attempts_gets_only_the_free_allowance() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        let through = std::thread::scope(|scope| {
            let tries: Vec<_> = (0..20)
                .map(|_| {
                    scope.spawn(|| {
                        // Each attempt stays counted, as a wrong password leaves it.
                        throttle.attempt(&key("ana", client(HOME)), now).is_ok()
                    })
                })
                .collect();
            tries
                .into_iter()
                .map(|t| t.join().unwrap_or(false))
                .filter(|&through| through)
                .count()
        });
        assert_eq!(through, LoginThrottle::FREE_FAILURES as usize);
    }

    #[test]
    fn an_attempt_askloop_could_not_judge_is_not_counted() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for _ in 0..10 {
            throttle
                .attempt(&key("ana", client(HOME)), now)
                .expect("never counted")
                .withdrawn();
        }
        assert_eq!(throttle.wait_for(&key("ana", client(HOME)), now), None);
    }

    #[test]
    fn the_store_stays_within_its_capacity_and_keeps_the_telling_counts() {
        let throttle = LoginThrottle::with_capacity(roomy(), 100);
        let now = Instant::now();
        // A stranger locked out of ana's account from their address.
        let locked = key("ana", client(STRANGER));
        for _ in 0..LoginThrottle::FREE_FAILURES {
            throttle.attempt(&locked, now).expect("free").failed();
        }
        // Then a flood of one-off handles, each one failure.
        for i in 0..1_000 {
            let handle = format!("flood-{i}");
            throttle
                .attempt(&key(&handle, client(STRANGER)), now)
                .expect("a fresh count")
                .failed();
            assert!(throttle.len() <= 100, "{} counts kept", throttle.len());
        }
        // The flood pushed out its own counts, not the one that holds the stranger back.
        assert!(throttle.wait_for(&locked, now).is_some());
    }

    #[test]
    fn counts_are_forgotten_after_an_hour_and_swept_out() {
        let throttle = LoginThrottle::new(roomy());
        let start = Instant::now();
        for i in 0..50 {
            let _ = throttle
                .attempt(&key(&format!("old-{i}"), client(HOME)), start)
                .map(Attempt::failed);
        }
        for _ in 0..10 {
            let _ = throttle
                .attempt(&key("ana", client(HOME)), start)
                .map(Attempt::failed);
        }
        assert!(
            throttle
                .wait_for(&key("ana", client(HOME)), start)
                .is_some()
        );
        let later = start + LoginThrottle::FORGET_AFTER;
        assert_eq!(throttle.wait_for(&key("ana", client(HOME)), later), None);
        throttle
            .attempt(&key("new", client(HOME)), later)
            .expect("free")
            .failed();
        assert_eq!(throttle.len(), 1, "the forgotten counts were swept out");
        // A forgotten count starts again from nothing.
        for _ in 0..LoginThrottle::FREE_FAILURES {
            throttle
                .attempt(&key("ana", client(HOME)), later)
                .expect("free again")
                .failed();
        }
    }

    #[test]
    fn an_address_failing_across_handles_is_refused_past_its_burst_then_refilled() {
        let throttle = LoginThrottle::new(bucket_of(3));
        let now = Instant::now();
        for handle in ["ana", "bob", "cy"] {
            throttle
                .attempt(&key(handle, client(STRANGER)), now)
                .expect("within the burst")
                .failed();
        }
        // A fourth handle, never tried: the address is out of attempts.
        assert_eq!(
            throttle
                .attempt(&key("dee", client(STRANGER)), now)
                .map(Attempt::failed),
            Err(Refused::Address(Duration::from_secs(1)))
        );
        assert_eq!(
            throttle.address_wait(client(STRANGER), now),
            Some(Duration::from_secs(1))
        );
        // The refusal counted nothing: dee has no count of its own.
        assert_eq!(throttle.wait_for(&key("dee", client(STRANGER)), now), None);
        assert_eq!(throttle.len(), 3);
        // Another address is untouched.
        assert_eq!(throttle.address_wait(client(HOME), now), None);
        throttle
            .attempt(&key("dee", client(HOME)), now)
            .expect("another address")
            .failed();
        // One refill later, one more attempt.
        let later = now + Duration::from_secs(1);
        throttle
            .attempt(&key("dee", client(STRANGER)), later)
            .expect("refilled by one")
            .failed();
        assert!(
            throttle
                .attempt(&key("eve", client(STRANGER)), later)
                .is_err()
        );
        // A full bucket later, the whole burst again.
        let rested = later + Duration::from_secs(3);
        for handle in ["f1", "f2", "f3"] {
            throttle
                .attempt(&key(handle, client(STRANGER)), rested)
                .expect("refilled")
                .failed();
        }
    }

    #[test]
    fn successes_and_unjudged_attempts_give_their_attempt_back_to_the_address() {
        let throttle = LoginThrottle::new(bucket_of(2));
        let now = Instant::now();
        for _ in 0..10 {
            throttle
                .attempt(&key("ana", client(HOME)), now)
                .expect("people signing in are not counted against each other")
                .succeeded();
            throttle
                .attempt(&key("bob", client(HOME)), now)
                .expect("nor is askloop's own failure")
                .withdrawn();
        }
        assert_eq!(throttle.address_wait(client(HOME), now), None);
        for handle in ["x1", "x2"] {
            throttle
                .attempt(&key(handle, client(HOME)), now)
                .expect("the burst is whole")
                .failed();
        }
        assert!(throttle.attempt(&key("x3", client(HOME)), now).is_err());
    }

    #[test]
    fn the_buckets_stay_within_the_capacity_and_keep_the_emptiest() {
        let throttle = LoginThrottle::with_capacity(bucket_of(3), 100);
        let now = Instant::now();
        for handle in ["a1", "a2", "a3"] {
            throttle
                .attempt(&key(handle, client(STRANGER)), now)
                .expect("within the burst")
                .failed();
        }
        // A thousand other addresses fail once each.
        for i in 0..1_000_u32 {
            let [_, _, hi, lo] = i.to_be_bytes();
            let from = ClientAddress::new(IpAddr::from([10, 1, hi, lo]));
            throttle
                .attempt(&key("once", from), now)
                .expect("a fresh bucket")
                .failed();
            assert!(
                throttle.addresses_kept() <= 100,
                "{} kept",
                throttle.addresses_kept()
            );
        }
        // The emptied bucket was kept: the stranger is still refused.
        assert!(matches!(
            throttle.attempt(&key("a4", client(STRANGER)), now),
            Err(Refused::Address(_))
        ));
        // Full buckets are swept out once their time has passed.
        let later = now + Duration::from_secs(120);
        throttle
            .attempt(&key("late", client(HOME)), later)
            .expect("free")
            .failed();
        assert_eq!(throttle.addresses_kept(), 1);
    }

    #[test]
    fn addresses_are_counted_by_ipv4_or_by_ipv6_network() {
        let v4: IpAddr = "203.0.113.7".parse().expect("an address");
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().expect("an address");
        assert_eq!(ClientAddress::new(mapped).throttle_address(), v4);
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("an address");
        let same_net: IpAddr = "2001:db8:1:2:bbbb::9".parse().expect("an address");
        let other_net: IpAddr = "2001:db8:1:3::1".parse().expect("an address");
        assert_eq!(
            ClientAddress::new(one).throttle_address(),
            ClientAddress::new(same_net).throttle_address()
        );
        assert_ne!(
            ClientAddress::new(one).throttle_address(),
            ClientAddress::new(other_net).throttle_address()
        );
        assert_eq!(
            ClientAddress::default().throttle_address(),
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        );
    }

    #[test]
    fn the_origin_check_follows_origin_then_sec_fetch_site() {
        let config = Config::defaults();
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:3000"));
        assert_eq!(origin_check(&headers, &config), OriginCheck::Unknown);
        headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert_eq!(origin_check(&headers, &config), OriginCheck::Cross);
        headers.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert_eq!(origin_check(&headers, &config), OriginCheck::Same);
        headers.insert(ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert_eq!(origin_check(&headers, &config), OriginCheck::Cross);
        headers.insert(ORIGIN, HeaderValue::from_static("http://127.0.0.1:3000"));
        assert_eq!(origin_check(&headers, &config), OriginCheck::Same);
    }

    #[test]
    fn the_session_cookie_is_read_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; askloop_session=al_sess_x; b=2"),
        );
        assert_eq!(cookie_token(&headers).as_deref(), Some("al_sess_x"));
    }
}
