//! Signing in and out, the viewer, API keys and sign-in sessions (docs/contract.md#authentication).

use std::sync::Arc;
use std::time::Instant;

use crate::db::Db;
use async_graphql::{Context, ID, Object, Result, SimpleObject};
use axum::http::header::SET_COOKIE;
use chrono::{DateTime, Utc};

use super::types::{Membership, User};
use super::{caller_of, credentials_ended, writer};
use crate::auth::{self, ClientAddress, UserAgent};
use crate::config::Config;
use crate::domain::handle::Handle;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::net::login_throttle::{LoginThrottle, Refused, ThrottleKey};
use crate::service::audit::Actor;
use crate::service::people::access;
use crate::service::people::accounts;
use crate::service::people::passwords::Share;
use crate::service::people::sessions::SignInPlace;
use crate::service::{money::standing, people::sessions};

/// The signed-in person and where they stand.
#[derive(SimpleObject)]
pub struct Viewer {
    /// Who.
    pub user: User,
    /// Their memberships, with score, tier, share and next tier.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub memberships: Vec<Membership>,
    /// Their IANA time zone, as set in their settings ("UTC" when they set none): the zone
    /// the dashboard shows exact times in.
    pub time_zone: String,
}

/// Someone signed up who is an active member of no niche yet (see `waitingToJoin`).
#[derive(SimpleObject)]
pub struct WaitingPerson {
    /// Their handle.
    pub handle: String,
    /// When they signed up.
    pub signed_up_at: DateTime<Utc>,
    /// The niches where their membership is pending, by slug.
    pub pending_in: Vec<String>,
}

/// A new session.
#[derive(SimpleObject)]
pub struct Session {
    /// The session token (also set as an HttpOnly cookie); send it as a bearer token from
    /// non-browser clients.
    pub token: String,
    /// Who signed in.
    pub user: User,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

/// An API key as listed (the key itself is shown only once, at creation).
#[derive(SimpleObject)]
pub struct ApiKey {
    /// Its id.
    pub id: ID,
    /// What its owner called it.
    pub name: String,
    /// Its first characters, to recognise it.
    pub prefix: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// When it was last used (recorded at most once a minute), or null if never.
    pub last_used_at: Option<DateTime<Utc>>,
    /// When it stops working on its own, or null if it works until revoked.
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<entity::api_keys::Model> for ApiKey {
    fn from(key: entity::api_keys::Model) -> Self {
        Self {
            id: ID(key.id.to_string()),
            name: key.name,
            prefix: key.prefix,
            created_at: key.created_at,
            last_used_at: key.last_used_at,
            expires_at: key.expires_at,
        }
    }
}

/// One of your sign-in sessions: when and where it was opened, and when last used.
#[derive(SimpleObject)]
pub struct SignInSession {
    /// Its id (for `endSession`).
    pub id: ID,
    /// When it was opened.
    pub created_at: DateTime<Utc>,
    /// When it was last used (recorded at most once a minute).
    pub last_seen_at: DateTime<Utc>,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
    /// The browser's `User-Agent` at sign-in (shortened), as it said; null if it sent none.
    pub user_agent: Option<String>,
    /// The browser and system its `User-Agent` names, as people read them ("Chrome on Linux");
    /// "Unknown browser" when it names none askloop knows.
    pub device: String,
    /// The address the sign-in came from (behind a trusted proxy, the client it forwarded for).
    pub client_address: Option<String>,
    /// Whether this is the session making this request.
    pub current: bool,
}

/// A newly created API key.
#[derive(SimpleObject)]
pub struct ApiKeyCreated {
    /// The key: shown this once, never again.
    pub token: String,
    /// The stored key.
    pub key: ApiKey,
}

/// Account queries.
#[derive(Default)]
pub struct AccountQuery;

#[Object]
impl AccountQuery {
    /// The signed-in person, or null.
    async fn viewer(&self, ctx: &Context<'_>) -> Result<Option<Viewer>> {
        let db = ctx.data::<Db>()?;
        let Some(viewer) = caller_of(ctx)?.viewer() else {
            return Ok(None);
        };
        let user = accounts::account_of(db, viewer).await.gql()?;
        let memberships = standing::memberships(db, viewer).await.gql()?;
        let time_zone = crate::service::reach::settings_of(db, viewer)
            .await
            .gql()?
            .time_zone;
        Ok(Some(Viewer {
            user: User::from(&user),
            memberships: memberships.into_iter().map(Membership::from).collect(),
            time_zone,
        }))
    }

    /// People signed up who are an active member of no niche yet, newest first, at most 50
    /// (admins only; admins themselves are not listed): whom to add to a niche.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn waiting_to_join(&self, ctx: &Context<'_>) -> Result<Vec<WaitingPerson>> {
        let db = ctx.data::<Db>()?;
        let waiting = crate::service::people::admin::waiting_to_join(db, caller_of(ctx)?.viewer())
            .await
            .gql()?;
        Ok(waiting
            .into_iter()
            .map(|w| WaitingPerson {
                handle: w.handle,
                signed_up_at: w.signed_up_at,
                pending_in: w.pending_in,
            })
            .collect())
    }

    /// Your API keys that are not revoked (expired ones included), the newest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn my_api_keys(&self, ctx: &Context<'_>) -> Result<Vec<ApiKey>> {
        let db = ctx.data::<Db>()?;
        let keys = accounts::my_api_keys(db, caller_of(ctx)?.viewer())
            .await
            .gql()?;
        Ok(keys.into_iter().map(ApiKey::from).collect())
    }

    /// Your sign-in sessions that have not ended or expired, the most recently used first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn my_sessions(&self, ctx: &Context<'_>) -> Result<Vec<SignInSession>> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        let listed = sessions::my_sessions(
            db,
            caller.viewer(),
            caller.session_token.as_deref(),
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(listed
            .into_iter()
            .map(|listed| SignInSession {
                id: ID(listed.session.id.to_string()),
                current: listed.current,
                created_at: listed.session.created_at,
                last_seen_at: listed.session.last_seen_at,
                expires_at: listed.session.expires_at,
                device: crate::domain::user_agent::describe(listed.session.user_agent.as_deref()),
                user_agent: listed.session.user_agent,
                client_address: listed.session.client_address,
            })
            .collect())
    }
}

/// Account mutations.
#[derive(Default)]
pub struct AccountMutation;

#[Object]
impl AccountMutation {
    /// Sign in; also sets the session cookie. The handle is folded to its normal form first
    /// (NFKC, trimmed, lowercased). After five failed sign-ins for a handle from one address,
    /// each further attempt from there waits, 1 s doubling up to 15 minutes; and one address
    /// may fail only so often whatever the handles (20 at once, then one every 3 s by default).
    /// One `login` per request: an operation that selects it twice is refused whole.
    async fn login(&self, ctx: &Context<'_>, handle: String, password: String) -> Result<Session> {
        let db = ctx.data::<Db>()?;
        let config = ctx.data::<Arc<Config>>()?;
        let throttle = ctx.data::<Arc<LoginThrottle>>()?;
        caller_of(ctx)?.check_login().gql()?;
        // A handle that cannot be anyone's is refused before it is counted or checked.
        let handle = Handle::parse(&handle)
            .map_err(|e| ServiceError::BadInput(e.to_string()))
            .gql()?;
        let client = ctx.data_opt::<ClientAddress>().copied().unwrap_or_default();
        let attempt = throttle
            .attempt(&ThrottleKey::new(&handle, client), Instant::now())
            .map_err(|refused| {
                // Whole seconds, rounded up: "try again in 0 s" would be refused again.
                let left = refused.wait();
                let wait = (left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1);
                ServiceError::Unauthenticated(match refused {
                    Refused::Handle(_) => {
                        format!("too many failed sign-ins; try again in {wait} s")
                    }
                    Refused::Address(_) => {
                        format!("too many failed sign-ins from this address; try again in {wait} s")
                    }
                })
            })
            .gql()?;
        let place = SignInPlace::new(
            ctx.data_opt::<UserAgent>().and_then(|ua| ua.0.as_deref()),
            client.ip().map(|ip| ip.to_string()),
        );
        // The password waits for its check in its address's lane, so one address's flood of
        // guesses holds back only itself.
        let share = Share::address(
            client.throttle_address(),
            throttle.settings().checks_per_address,
        );
        let session = match sessions::login(db, &handle, &password, place, share, Utc::now()).await
        {
            Ok(session) => {
                attempt.succeeded();
                session
            }
            Err(err) => {
                if matches!(err, ServiceError::Unauthenticated(_)) {
                    attempt.failed();
                } else {
                    attempt.withdrawn();
                }
                return Err(err).gql();
            }
        };
        ctx.append_http_header(SET_COOKIE, auth::session_cookie(&session.token, config));
        Ok(Session {
            token: session.token,
            user: User {
                id: ID(session.viewer.user_id.to_string()),
                handle: session.viewer.handle,
                is_admin: session.viewer.is_admin,
            },
            expires_at: session.expires_at,
        })
    }

    /// Sign out: ends the session and clears the cookie.
    async fn logout(&self, ctx: &Context<'_>) -> Result<bool> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        caller.check_write().gql()?;
        if let Some(token) = &caller.session_token {
            sessions::logout(db, &credentials_ended(ctx), token, Utc::now())
                .await
                .gql()?;
        }
        ctx.append_http_header(SET_COOKIE, auth::clear_session_cookie());
        Ok(caller.viewer.is_some())
    }

    /// Issue an API key for yourself (integrators send it as `Authorization: Bearer`). With
    /// `expiresAt` it stops working then: that must be in the future and at most five years
    /// ahead (`BAD_USER_INPUT` otherwise, and no key is made).
    async fn create_api_key(
        &self,
        ctx: &Context<'_>,
        name: String,
        expires_at: Option<DateTime<Utc>>,
    ) -> Result<ApiKeyCreated> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        let viewer = access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let issued = accounts::create_api_key(
            db,
            &viewer.handle,
            &name,
            expires_at,
            &Actor::User(viewer.user_id),
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(ApiKeyCreated {
            token: issued.token,
            key: ApiKey::from(issued.key),
        })
    }

    /// Revoke one of your API keys; it never works again.
    async fn revoke_api_key(&self, ctx: &Context<'_>, id: ID) -> Result<bool> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        let viewer = access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let id: i64 = id
            .parse()
            .map_err(|_| ServiceError::BadInput("not an API key id".into()))
            .gql()?;
        accounts::revoke_api_key(db, &credentials_ended(ctx), Some(viewer), id, Utc::now())
            .await
            .gql()
    }

    /// End one of your sign-in sessions: it stops working at once, and its open subscriptions
    /// on this instance end (4403). Someone else's session is `NOT_FOUND`. Ending the session
    /// making the request also clears its cookie.
    async fn end_session(&self, ctx: &Context<'_>, id: ID) -> Result<bool> {
        let (db, caller) = writer(ctx)?;
        let id: i64 = id
            .parse()
            .map_err(|_| ServiceError::NotFound("no such session".into()))
            .gql()?;
        let ended_this_one = sessions::end_session(
            db,
            &credentials_ended(ctx),
            caller.viewer(),
            id,
            caller.session_token.as_deref(),
            Utc::now(),
        )
        .await
        .gql()?;
        if ended_this_one && caller.via_cookie {
            ctx.append_http_header(SET_COOKIE, auth::clear_session_cookie());
        }
        Ok(true)
    }

    /// End all your sign-in sessions but the one making this request (with an API key, all of
    /// them); how many ended.
    async fn sign_out_other_sessions(&self, ctx: &Context<'_>) -> Result<u64> {
        let (db, caller) = writer(ctx)?;
        sessions::end_other_sessions(
            db,
            &credentials_ended(ctx),
            caller.viewer(),
            caller.session_token.as_deref(),
            Utc::now(),
        )
        .await
        .gql()
    }
}
