//! Signing in and out, the viewer, and API keys.

use std::sync::Arc;
use std::time::Instant;

use async_graphql::{Context, ID, Object, Result, SimpleObject};
use axum::http::header::SET_COOKIE;
use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;

use super::caller_of;
use super::types::{Membership, User};
use crate::auth::{self, ClientAddress, LoginThrottle, ThrottleKey};
use crate::config::Config;
use crate::domain::handle::Handle;
use crate::error::{GqlResultExt, ServiceError};
use crate::service::access;
use crate::service::accounts;
use crate::service::audit::Actor;
use crate::service::{sessions, standing};

/// The signed-in person and where they stand.
#[derive(SimpleObject)]
pub struct Viewer {
    /// Who.
    pub user: User,
    /// Their memberships, with score, tier, share and next tier.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub memberships: Vec<Membership>,
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
        let db = ctx.data::<DatabaseConnection>()?;
        let Some(viewer) = caller_of(ctx)?.viewer() else {
            return Ok(None);
        };
        let user = accounts::account_of(db, viewer).await.gql()?;
        let memberships = standing::memberships(db, viewer).await.gql()?;
        Ok(Some(Viewer {
            user: User::from(&user),
            memberships: memberships.into_iter().map(Membership::from).collect(),
        }))
    }
}

/// Account mutations.
#[derive(Default)]
pub struct AccountMutation;

#[Object]
impl AccountMutation {
    /// Sign in; also sets the session cookie. The handle is folded to its normal form first
    /// (NFKC, trimmed, lowercased). After five failed sign-ins for a handle from one address,
    /// each further attempt from there waits, 1 s doubling up to 15 minutes. One `login` per
    /// request: an operation that selects it twice is refused whole.
    async fn login(&self, ctx: &Context<'_>, handle: String, password: String) -> Result<Session> {
        let db = ctx.data::<DatabaseConnection>()?;
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
            .map_err(|wait| {
                ServiceError::Unauthenticated(format!(
                    "too many failed sign-ins; try again in {} s",
                    wait.as_secs().max(1)
                ))
            })
            .gql()?;
        let session = match sessions::login(db, &handle, &password, Utc::now()).await {
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
        let db = ctx.data::<DatabaseConnection>()?;
        let caller = caller_of(ctx)?;
        caller.check_write().gql()?;
        if let Some(token) = &caller.session_token {
            sessions::logout(db, token, Utc::now()).await.gql()?;
        }
        ctx.append_http_header(SET_COOKIE, auth::clear_session_cookie());
        Ok(caller.viewer.is_some())
    }

    /// Issue an API key for yourself (integrators send it as `Authorization: Bearer`).
    async fn create_api_key(&self, ctx: &Context<'_>, name: String) -> Result<ApiKeyCreated> {
        let db = ctx.data::<DatabaseConnection>()?;
        let caller = caller_of(ctx)?;
        let viewer = access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let issued = accounts::create_api_key(
            db,
            &viewer.handle,
            &name,
            &Actor::User(viewer.user_id),
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(ApiKeyCreated {
            token: issued.token,
            key: ApiKey {
                id: ID(issued.key.id.to_string()),
                name: issued.key.name,
                prefix: issued.key.prefix,
                created_at: issued.key.created_at,
            },
        })
    }

    /// Revoke one of your API keys; it never works again.
    async fn revoke_api_key(&self, ctx: &Context<'_>, id: ID) -> Result<bool> {
        let db = ctx.data::<DatabaseConnection>()?;
        let caller = caller_of(ctx)?;
        let viewer = access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let id: i64 = id
            .parse()
            .map_err(|_| ServiceError::BadInput("not an API key id".into()))
            .gql()?;
        accounts::revoke_api_key(db, Some(viewer), id, Utc::now())
            .await
            .gql()
    }
}
