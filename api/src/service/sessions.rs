//! Signing in and out, and turning a presented token (session or API key) into a [`Viewer`].
//! Only SHA-256 hashes of tokens are stored; a token is shown once, when it is made.

use chrono::{DateTime, Duration, Utc};
use entity::users::{self, UserRole};
use entity::{api_keys, sessions};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, NotSet, QueryFilter,
    TransactionTrait,
};
use serde_json::json;

use crate::domain::handle::Handle;
use crate::error::ServiceError;
use crate::service::access::Viewer;
use crate::service::accounts::{new_token, token_hash};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::passwords;

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
/// answer, so the error says nothing about which accounts exist; and both check one password
/// (an unknown handle's against a dummy hash), so neither does the time the answer takes.
pub async fn login(
    db: &DatabaseConnection,
    handle: &Handle,
    password: &str,
    now: DateTime<Utc>,
) -> Result<NewSession, ServiceError> {
    let refused = || ServiceError::Unauthenticated("wrong handle or password".into());
    let found = users::Entity::find()
        .filter(users::Column::Handle.eq(handle.as_str()))
        .one(db)
        .await?;
    let stored = found.as_ref().map(|user| user.credential_hash.as_str());
    let verified = passwords::verify(password, stored).await?;
    let Some(user) = found.filter(|_| verified) else {
        return Err(refused());
    };
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use migration::{Migrator, MigratorTrait};

    use super::*;
    use crate::service::accounts::{self, NewUser};
    use crate::service::passwords::CHECKS;

    const PASSWORD: &str = "correct horse battery staple";

    /// A fresh, migrated SQLite database in a file of its own (removed when the test ends).
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            for suffix in ["", "-wal", "-shm"] {
                let mut path = self.0.clone().into_os_string();
                path.push(suffix);
                let _ = std::fs::remove_file(path);
            }
        }
    }

    async fn database() -> (Scratch, DatabaseConnection) {
        let path =
            std::env::temp_dir().join(format!("askloop-sessions-{}.db", uuid::Uuid::new_v4()));
        let db = crate::db::connect(&format!("sqlite://{}?mode=rwc", path.display()))
            .await
            .expect("a database");
        Migrator::up(&db, None).await.expect("migrated");
        (Scratch(path), db)
    }

    /// Sign in as `handle` and count the passwords checked meanwhile.
    async fn checks_while_signing_in(
        db: &DatabaseConnection,
        handle: &str,
        password: &str,
    ) -> (bool, u32) {
        let handle = Handle::parse(handle).expect("a handle");
        CHECKS
            .scope(Cell::new(0), async {
                let outcome = login(db, &handle, password, Utc::now()).await;
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
