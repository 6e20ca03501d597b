//! The caller extractor every surface uses: a bearer token (API key or session) or the session
//! cookie resolves to a [`Viewer`]; nothing resolves to anonymous. It also records whether the
//! request came from askloop's own origin, which cookie-authenticated writes require.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use crate::db::Db;
use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN, USER_AGENT};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::error::ServiceError;
use crate::service::people::access::Viewer;
use crate::service::people::sessions::{self, Credential, Lookup};

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

/// Where a request came from: the client address the serving layer (`serve.rs`) worked out once
/// for the request — the connection's peer, or, when the peer is a trusted proxy
/// (`ASKLOOP_TRUSTED_PROXIES`), the client it forwards for (`domain/proxies.rs`). Every limit
/// keyed by address, the sessions' sign-in address and the audit log use this one value.
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
        // The serving layer inserts the client it worked out; a router served some other way
        // (without it) falls back to the peer, never to a header.
        if let Some(client) = parts.extensions.get::<ClientAddress>() {
            return Ok(*client);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
