//! Signing in and out, and turning a presented token (session or API key) into a [`Viewer`].
//! Only SHA-256 hashes of tokens are stored; a token is shown once, when it is made.

use crate::db::Db;
use chrono::{DateTime, Duration, Utc};
use entity::users::{self, UserRole};
use entity::{api_keys, sessions};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, EntityTrait, NotSet, QueryFilter, QueryOrder,
};
use serde_json::json;

use crate::domain::handle::Handle;
use crate::domain::tokens::{new_token, token_hash};
use crate::error::ServiceError;
use crate::live::CredentialsEnded;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};
use crate::service::people::passwords;

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

/// How often, at most, a session's `last_seen_at` or a key's `last_used_at` is written: using a
/// credential is a read, and writing its time on every request would make every request a write.
pub const TOUCH_EVERY: Duration = Duration::minutes(1);

/// The most of a `User-Agent` kept with a session: enough to tell browsers apart.
pub const USER_AGENT_MAX_CHARS: usize = 200;

/// Where a sign-in came from, as the request said: kept with the session so its owner can tell
/// their sessions apart. Shown back to them, never used to decide anything.
#[derive(Debug, Clone, Default)]
pub struct SignInPlace {
    /// The browser's `User-Agent`, if it sent one.
    pub user_agent: Option<String>,
    /// The client's address (`ClientAddress`: the peer, or the client a trusted proxy forwards
    /// for), if known.
    pub client_address: Option<String>,
}

impl SignInPlace {
    /// The place from a raw `User-Agent` (shortened to [`USER_AGENT_MAX_CHARS`], control
    /// characters dropped; blank counts as none) and the peer address.
    pub fn new(user_agent: Option<&str>, client_address: Option<String>) -> Self {
        let user_agent = user_agent
            .map(|raw| {
                raw.chars()
                    .filter(|c| !c.is_control())
                    .take(USER_AGENT_MAX_CHARS)
                    .collect::<String>()
                    .trim()
                    .to_owned()
            })
            .filter(|ua| !ua.is_empty());
        Self {
            user_agent,
            client_address,
        }
    }
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
/// answer, so the error says nothing about which accounts exist; and both check one password
/// (an unknown handle's against a dummy hash), so neither does the time the answer takes. The
/// check waits for its turn in `share`'s lane of the password permits.
pub async fn login(
    db: &Db,
    handle: &Handle,
    password: &str,
    place: SignInPlace,
    share: passwords::Share,
    now: DateTime<Utc>,
) -> Result<NewSession, ServiceError> {
    let refused = || ServiceError::Unauthenticated("wrong handle or password".into());
    let found = users::Entity::find()
        .filter(users::Column::Handle.eq(handle.as_str()))
        .one(db)
        .await?;
    let stored = found.as_ref().map(|user| user.credential_hash.as_str());
    let verified = passwords::verify(password, stored, share).await?;
    let Some(user) = found.filter(|_| verified) else {
        return Err(refused());
    };
    let token = new_token(SESSION_PREFIX);
    let expires_at = now + Duration::days(SESSION_LIFETIME_DAYS);
    let txn = db.begin_write().await?;
    let session = sessions::Entity::insert(sessions::ActiveModel {
        id: NotSet,
        user_id: Set(user.id),
        token_hash: Set(token_hash(&token)),
        created_at: Set(now),
        expires_at: Set(expires_at),
        last_seen_at: Set(now),
        user_agent: Set(place.user_agent),
        client_address: Set(place.client_address.clone()),
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
            // Where the sign-in came from: the client address (behind a trusted proxy, the client
            // it forwards for), as the session keeps it.
            detail: json!({
                "user": user.handle,
                "expiresAt": expires_at,
                "clientAddress": place.client_address,
            }),
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
    db: &Db,
    ended_here: &CredentialsEnded,
    token: &str,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let txn = db.begin_write().await?;
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
    ended_here.ended(session.user_id);
    Ok(())
}

/// What a lookup of a token does besides finding its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The token is being used (a request, a socket opening): its time of use is written, at
    /// most every [`TOUCH_EVERY`].
    Use,
    /// The token is only checked again (an open socket's periodic check): nothing is written.
    Recheck,
}

/// The person a token belongs to, if it is a live session or an API key neither revoked nor
/// expired. A [`Lookup::Use`] records when it was used (see [`TOUCH_EVERY`]).
pub async fn resolve(
    db: &Db,
    token: &str,
    now: DateTime<Utc>,
    lookup: Lookup,
) -> Result<Option<(Viewer, Credential)>, ServiceError> {
    let hash = token_hash(token);
    if token.starts_with(SESSION_PREFIX) {
        let found = sessions::Entity::find()
            .filter(sessions::Column::TokenHash.eq(hash))
            .filter(sessions::Column::ExpiresAt.gt(now))
            .find_also_related(users::Entity)
            .one(db)
            .await?;
        let Some((session, Some(user))) = found else {
            return Ok(None);
        };
        if lookup == Lookup::Use && now - session.last_seen_at >= TOUCH_EVERY {
            touch(
                db,
                sessions::Entity::update_many()
                    .col_expr(sessions::Column::LastSeenAt, Expr::value(now))
                    .filter(sessions::Column::Id.eq(session.id))
                    .filter(sessions::Column::LastSeenAt.lt(now - TOUCH_EVERY)),
            )
            .await;
        }
        return Ok(Some((viewer_of(&user), Credential::Session)));
    }
    if token.starts_with(API_KEY_PREFIX) {
        let found = api_keys::Entity::find()
            .filter(api_keys::Column::TokenHash.eq(hash))
            .filter(api_keys::Column::RevokedAt.is_null())
            .filter(
                Condition::any()
                    .add(api_keys::Column::ExpiresAt.is_null())
                    .add(api_keys::Column::ExpiresAt.gt(now)),
            )
            .find_also_related(users::Entity)
            .one(db)
            .await?;
        let Some((key, Some(user))) = found else {
            return Ok(None);
        };
        if lookup == Lookup::Use && key.last_used_at.is_none_or(|at| now - at >= TOUCH_EVERY) {
            touch(
                db,
                api_keys::Entity::update_many()
                    .col_expr(api_keys::Column::LastUsedAt, Expr::value(Some(now)))
                    .filter(api_keys::Column::Id.eq(key.id))
                    .filter(
                        Condition::any()
                            .add(api_keys::Column::LastUsedAt.is_null())
                            .add(api_keys::Column::LastUsedAt.lt(now - TOUCH_EVERY)),
                    ),
            )
            .await;
        }
        return Ok(Some((viewer_of(&user), Credential::ApiKey)));
    }
    Ok(None)
}

/// Write a time of use. Its condition repeats the staleness test, so simultaneous requests
/// write it once; a failure is logged and the request goes on, since the time is only shown.
///
/// It is skipped, not queued, while another write of this process holds the turn (SQLite):
/// an authenticated request never waits behind the writers for it, and the next request
/// after the writer is done writes it (the row stays stale until then, so it asks again).
async fn touch<E: EntityTrait>(db: &Db, update: sea_orm::UpdateMany<E>) {
    let written = async {
        let Some(txn) = db.try_begin_write().await? else {
            tracing::debug!("the writer is busy; a credential's time of use waits");
            return Ok(());
        };
        update.exec(&txn).await?;
        txn.commit().await
    };
    if let Err(err) = written.await {
        tracing::warn!(error = %err, "could not record when a credential was used");
    }
}

/// One of a person's sessions as listed.
#[derive(Debug, Clone)]
pub struct ListedSession {
    /// The stored row.
    pub session: sessions::Model,
    /// Whether it is the one the listing was asked through.
    pub current: bool,
}

/// The signed-in person's live sessions, the most recently used first; `current` is the token
/// of the session asking, if it is one.
pub async fn my_sessions(
    db: &Db,
    viewer: Option<&Viewer>,
    current: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<ListedSession>, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let current = current.map(token_hash);
    Ok(sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(viewer.user_id))
        .filter(sessions::Column::ExpiresAt.gt(now))
        .order_by_desc(sessions::Column::LastSeenAt)
        .order_by_desc(sessions::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(|session| ListedSession {
            current: current.as_deref() == Some(session.token_hash.as_str()),
            session,
        })
        .collect())
}

/// End one of the signed-in person's sessions (audited); whether it was the one whose token is
/// `current` (the caller's own). Someone else's, or one already ended, is "not found", so ids
/// cannot be probed.
pub async fn end_session(
    db: &Db,
    ended_here: &CredentialsEnded,
    viewer: Option<&Viewer>,
    session_id: i64,
    current: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let txn = db.begin_write().await?;
    let found = sessions::Entity::find_by_id(session_id)
        .filter(sessions::Column::UserId.eq(viewer.user_id))
        .one(&txn)
        .await?;
    let ended = match &found {
        Some(session) => {
            sessions::Entity::delete_many()
                .filter(sessions::Column::Id.eq(session.id))
                .exec(&txn)
                .await?
                .rows_affected
        }
        None => 0,
    };
    let (Some(session), 1) = (found, ended) else {
        txn.rollback().await?;
        return Err(ServiceError::NotFound("no such session".into()));
    };
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "session.ended",
            subject_type: "session",
            subject_id: session.id,
            niche_id: None,
            detail: json!({ "user": viewer.handle }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    ended_here.ended(viewer.user_id);
    Ok(current.is_some_and(|token| token_hash(token) == session.token_hash))
}

/// End every session of the signed-in person but the one whose token is `keep` (the caller's
/// own, when they signed in with a session; with an API key, none is kept). Each is audited;
/// the answer is how many ended.
pub async fn end_other_sessions(
    db: &Db,
    ended_here: &CredentialsEnded,
    viewer: Option<&Viewer>,
    keep: Option<&str>,
    now: DateTime<Utc>,
) -> Result<u64, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let mut others = sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(viewer.user_id))
        .filter(sessions::Column::ExpiresAt.gt(now));
    if let Some(keep) = keep {
        others = others.filter(sessions::Column::TokenHash.ne(token_hash(keep)));
    }
    let txn = db.begin_write().await?;
    let ids: Vec<i64> = others
        .all(&txn)
        .await?
        .into_iter()
        .map(|session| session.id)
        .collect();
    if ids.is_empty() {
        txn.rollback().await?;
        return Ok(0);
    }
    let ended = sessions::Entity::delete_many()
        .filter(sessions::Column::Id.is_in(ids.clone()))
        .exec(&txn)
        .await?;
    for id in ids {
        audit::record(
            &txn,
            AuditEntry {
                actor: &Actor::User(viewer.user_id),
                action: "session.ended",
                subject_type: "session",
                subject_id: id,
                niche_id: None,
                detail: json!({ "user": viewer.handle, "everywhereElse": true }),
            },
            now,
        )
        .await?;
    }
    txn.commit().await?;
    ended_here.ended(viewer.user_id);
    Ok(ended.rows_affected)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::service::people::accounts::{self, NewUser};
    use crate::service::people::passwords::CHECKS;

    const PASSWORD: &str = "correct horse battery staple";

    async fn database() -> (crate::db::scratch::Scratch, Db) {
        crate::db::scratch::database(crate::db::PoolSize::Serving(None)).await
    }

    /// Sign in as `handle` and count the passwords checked meanwhile.
    async fn checks_while_signing_in(db: &Db, handle: &str, password: &str) -> (bool, u32) {
        let handle = Handle::parse(handle).expect("a handle");
        CHECKS
            .scope(Cell::new(0), async {
                let outcome =
                    login(
                        db,
                        &handle,
                        password,
                        SignInPlace::default(),
                        passwords::Share::local(),
                        Utc::now(),
                    )
                    .await;
                if let Err(err) = &outcome {
                    assert!(
                        matches!(err, ServiceError::Unauthenticated(m) if m == "wrong handle or password"),
                        "{err:?}"
                    );
                }
                (outcome.is_ok(), CHECKS.with(Cell::get))
            })
            .await
    }

    #[test]
    fn a_user_agent_is_kept_short_and_printable() {
        let long = format!("Mozilla/5.0\n{}", "x".repeat(1000));
        let place = SignInPlace::new(Some(&long), None);
        let kept = place.user_agent.expect("kept");
        assert_eq!(kept.chars().count(), USER_AGENT_MAX_CHARS);
        assert!(kept.starts_with("Mozilla/5.0x"), "{kept}");
        assert_eq!(SignInPlace::new(Some("  \t "), None).user_agent, None);
    }

    #[tokio::test]
    async fn an_unknown_handle_checks_one_password_like_a_known_one() {
        let (_scratch, db) = database().await;
        accounts::create_user(
            &db,
            NewUser {
                handle: "ana".into(),
                email: "ana@example.com".into(),
                password: PASSWORD.into(),
                admin: false,
            },
            &Actor::Cli,
            Utc::now(),
        )
        .await
        .expect("ana");
        assert_eq!(
            checks_while_signing_in(&db, "nobody", PASSWORD).await,
            (false, 1)
        );
        assert_eq!(
            checks_while_signing_in(&db, "ana", "a wrong one").await,
            (false, 1)
        );
        assert_eq!(
            checks_while_signing_in(&db, "ana", PASSWORD).await,
            (true, 1)
        );
        // The handle is looked up in its normal form.
        assert_eq!(
            checks_while_signing_in(&db, "\u{3000}ANA ", PASSWORD).await,
            (true, 1)
        );
    }
}
