//! Signing in and out, and turning a presented token (session or API key) into a [`Viewer`].
//! Only SHA-256 hashes of tokens are stored; a token is shown once, when it is made.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordVerifier};
use chrono::{DateTime, Duration, Utc};
use entity::users::{self, UserRole};
use entity::{api_keys, sessions};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, NotSet, QueryFilter,
    TransactionTrait,
};
use serde_json::json;

use crate::error::ServiceError;
use crate::service::access::Viewer;
use crate::service::accounts::{new_token, token_hash};
use crate::service::audit::{self, Actor, AuditEntry};

/// How long a session lasts.
pub const SESSION_LIFETIME_DAYS: i64 = 14;
/// Session tokens start with this, API keys with [`API_KEY_PREFIX`].
pub const SESSION_PREFIX: &str = "al_sess_";
/// API keys start with this.
pub const API_KEY_PREFIX: &str = "al_key_";

/// How the caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A browser session (cookie, or the token sent as a bearer).
    Session,
    /// An integrator's API key.
    ApiKey,
}

/// A new session.
pub struct NewSession {
    /// The token for the cookie (or the bearer header); shown once.
    pub token: String,
    /// Who signed in.
    pub viewer: Viewer,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

fn viewer_of(user: &users::Model) -> Viewer {
    Viewer {
        user_id: user.id,
        handle: user.handle.clone(),
        is_admin: user.role == UserRole::Admin,
    }
}

/// Check a handle and password and open a session. Wrong handle and wrong password give the same
/// answer, so the error says nothing about which accounts exist.
pub async fn login(
    db: &DatabaseConnection,
    handle: &str,
    password: &str,
    now: DateTime<Utc>,
) -> Result<NewSession, ServiceError> {
    let refused = || ServiceError::Unauthenticated("wrong handle or password".into());
    let user = users::Entity::find()
        .filter(users::Column::Handle.eq(handle.trim().to_lowercase()))
        .one(db)
        .await?;
    let Some(user) = user else {
        return Err(refused());
    };
    let parsed = PasswordHash::new(&user.credential_hash)
        .map_err(|e| ServiceError::Internal(anyhow::anyhow!("stored hash is unreadable: {e}")))?;
    if Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_err()
    {
        return Err(refused());
    }
    let token = new_token(SESSION_PREFIX);
    let expires_at = now + Duration::days(SESSION_LIFETIME_DAYS);
    let txn = db.begin().await?;
    let session = sessions::Entity::insert(sessions::ActiveModel {
        id: NotSet,
        user_id: Set(user.id),
        token_hash: Set(token_hash(&token)),
        created_at: Set(now),
        expires_at: Set(expires_at),
        last_seen_at: Set(now),
    })
    .exec_with_returning(&txn)
    .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(user.id),
            action: "session.created",
            subject_type: "session",
            subject_id: session.id,
            niche_id: None,
            detail: json!({ "user": user.handle, "expiresAt": expires_at }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(NewSession {
        token,
        viewer: viewer_of(&user),
        expires_at,
    })
}

/// End the session whose token this is (audited; a no-op for unknown tokens).
pub async fn logout(
    db: &DatabaseConnection,
    token: &str,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let txn = db.begin().await?;
    let Some(session) = sessions::Entity::find()
        .filter(sessions::Column::TokenHash.eq(token_hash(token)))
        .one(&txn)
        .await?
    else {
        txn.rollback().await?;
        return Ok(());
    };
    let ended = sessions::Entity::delete_many()
        .filter(sessions::Column::Id.eq(session.id))
        .exec(&txn)
        .await?;
    if ended.rows_affected == 1 {
        audit::record(
            &txn,
            AuditEntry {
                actor: &Actor::User(session.user_id),
                action: "session.ended",
                subject_type: "session",
                subject_id: session.id,
                niche_id: None,
                detail: json!({}),
            },
            now,
        )
        .await?;
    }
    txn.commit().await?;
    Ok(())
}

/// The person a token belongs to, if it is a live session or an unrevoked API key.
pub async fn resolve(
    db: &DatabaseConnection,
    token: &str,
    now: DateTime<Utc>,
) -> Result<Option<(Viewer, Credential)>, ServiceError> {
    let hash = token_hash(token);
    if token.starts_with(SESSION_PREFIX) {
        let found = sessions::Entity::find()
            .filter(sessions::Column::TokenHash.eq(hash))
            .filter(sessions::Column::ExpiresAt.gt(now))
            .find_also_related(users::Entity)
            .one(db)
            .await?;
        return Ok(found
            .and_then(|(_, user)| user)
            .map(|user| (viewer_of(&user), Credential::Session)));
    }
    if token.starts_with(API_KEY_PREFIX) {
        let found = api_keys::Entity::find()
            .filter(api_keys::Column::TokenHash.eq(hash))
            .filter(api_keys::Column::RevokedAt.is_null())
            .find_also_related(users::Entity)
            .one(db)
            .await?;
        return Ok(found
            .and_then(|(_, user)| user)
            .map(|user| (viewer_of(&user), Credential::ApiKey)));
    }
    Ok(None)
}
