//! People, memberships and API keys as an admin sets them up (the CLI today, GraphQL next).

use crate::db::Db;
use chrono::{DateTime, Duration, Utc};
use entity::niche_members::{self, MemberRole, MemberStatus};
use entity::users::{self, UserRole};
use entity::{api_keys, niches};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter, QueryOrder, SqlErr,
};
use serde_json::json;

use crate::domain::handle::{self, Handle};
/// Tokens are made in `domain::tokens`; named here too for the callers that know them by accounts.
pub use crate::domain::tokens::{new_token, token_hash};
use crate::error::{Conflict, ServiceError};
use crate::live::{ChangeHint, CredentialsEnded};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};
use crate::service::people::passwords;

/// The shortest password askloop accepts.
pub const PASSWORD_MIN: usize = 10;

/// A person to create.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// As typed: stored in its normal form (see [`Handle`]), which must be 2..=40 of a-z, 0-9,
    /// '_' and '-'.
    pub handle: String,
    /// Must look like an address.
    pub email: String,
    /// At least [`PASSWORD_MIN`] chars; only its argon2id hash is kept.
    pub password: String,
    /// Whether they administer askloop.
    pub admin: bool,
}

/// Create a person. Handles and emails are unique case-insensitively: the handle is stored in
/// its normal form (NFKC, trimmed, lowercased), the one sign-in folds what is typed to; the email
/// is lowercased.
pub async fn create_user(
    db: &Db,
    new: NewUser,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<users::Model, ServiceError> {
    let handle = Handle::parse(&new.handle)
        .map_err(|e| ServiceError::BadInput(e.to_string()))?
        .as_str()
        .to_owned();
    let email = normalise_email(&new.email)?;
    if new.password.chars().count() < PASSWORD_MIN {
        return Err(ServiceError::BadInput(format!(
            "a password needs at least {PASSWORD_MIN} characters"
        )));
    }
    let credential_hash = passwords::hash(&new.password).await?;
    let txn = db.begin_write().await?;
    let user = users::Entity::insert(users::ActiveModel {
        id: NotSet,
        handle: Set(handle.clone()),
        email: Set(email),
        credential_hash: Set(credential_hash),
        role: Set(if new.admin {
            UserRole::Admin
        } else {
            UserRole::Member
        }),
        created_at: Set(now),
    })
    .exec_with_returning(&txn)
    .await
    .map_err(|err| match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => ServiceError::from(Conflict::AccountTaken),
        _ => err.into(),
    })?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "user.created",
            subject_type: "user",
            subject_id: user.id,
            niche_id: None,
            detail: json!({ "handle": handle, "role": user.role }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(user)
}

/// An email address as askloop keeps it (trimmed, lower case), or why it is not one.
pub fn normalise_email(raw: &str) -> Result<String, ServiceError> {
    let email = raw.trim().to_lowercase();
    let email_ok = email
        .split_once('@')
        .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'))
        && email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        // An address mail can actually be sent to, or it could never be verified.
        && email.parse::<lettre::Address>().is_ok();
    if !email_ok {
        return Err(ServiceError::BadInput(format!(
            "'{}' is not an email address",
            crate::domain::text::cap(&email, 80)
        )));
    }
    Ok(email)
}

/// Find a person by handle (folded as sign-in folds it), or say who is missing.
pub async fn user_by_handle(db: &Db, handle: &str) -> Result<users::Model, ServiceError> {
    let handle = handle::fold(handle);
    users::Entity::find()
        .filter(users::Column::Handle.eq(handle.as_str()))
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no user '{handle}'")))
}

/// Make `handle` an active member of niche `slug` in `role`; an existing membership is a conflict.
pub async fn add_member(
    db: &Db,
    hint: &ChangeHint,
    slug: &str,
    handle: &str,
    role: MemberRole,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<niche_members::Model, ServiceError> {
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug.trim().to_lowercase()))
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{slug}'")))?;
    let user = user_by_handle(db, handle).await?;
    let txn = db.begin_write().await?;
    let member = niche_members::Entity::insert(niche_members::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        user_id: Set(user.id),
        role: Set(role),
        status: Set(MemberStatus::Active),
        share_cap_bps: Set(8000),
        created_at: Set(now),
        updated_at: Set(now),
    })
    .exec_with_returning(&txn)
    .await
    .map_err(|err| match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => ServiceError::from(Conflict::AlreadyMember {
            handle: user.handle.clone(),
            niche: niche.slug.clone(),
        }),
        _ => err.into(),
    })?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "member.added",
            subject_type: "member",
            subject_id: member.id,
            niche_id: Some(niche.id),
            detail: json!({ "user": user.handle, "role": role }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    hint.changed();
    Ok(member)
}

/// A new API key: the token is in here once and never again.
pub struct IssuedApiKey {
    /// The stored row (hash only).
    pub key: api_keys::Model,
    /// The token to hand to the integrator.
    pub token: String,
}

/// The furthest ahead an API key's expiry may be set: further is a typo more likely than a plan.
pub const API_KEY_LONGEST_LIFETIME_DAYS: i64 = 5 * 366;

/// Issue an API key for `handle`, working until `expires_at` when given: that must be in the
/// future and at most [`API_KEY_LONGEST_LIFETIME_DAYS`] away.
pub async fn create_api_key(
    db: &Db,
    handle: &str,
    name: &str,
    expires_at: Option<DateTime<Utc>>,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<IssuedApiKey, ServiceError> {
    let name = crate::domain::text::one_line("name", name.trim())?;
    if name.is_empty() || name.chars().count() > 80 {
        return Err(ServiceError::BadInput(
            "a key name is 1 to 80 characters".into(),
        ));
    }
    if let Some(expires_at) = expires_at {
        if expires_at <= now {
            return Err(ServiceError::BadInput(
                "an API key's expiry must be in the future".into(),
            ));
        }
        if expires_at > now + Duration::days(API_KEY_LONGEST_LIFETIME_DAYS) {
            return Err(ServiceError::BadInput(
                "an API key's expiry may be at most five years ahead".into(),
            ));
        }
    }
    let user = user_by_handle(db, handle).await?;
    let token = new_token("al_key_");
    let txn = db.begin_write().await?;
    let key = api_keys::Entity::insert(api_keys::ActiveModel {
        id: NotSet,
        user_id: Set(user.id),
        name: Set(name.to_owned()),
        prefix: Set(token.chars().take(14).collect()),
        token_hash: Set(token_hash(&token)),
        created_at: Set(now),
        last_used_at: Set(None),
        revoked_at: Set(None),
        expires_at: Set(expires_at),
    })
    .exec_with_returning(&txn)
    .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "api_key.created",
            subject_type: "api_key",
            subject_id: key.id,
            niche_id: None,
            detail: json!({ "user": user.handle, "name": key.name, "prefix": key.prefix,
                "expiresAt": key.expires_at }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(IssuedApiKey { key, token })
}

/// Revoke one of `viewer`'s own API keys (audited); `false` when it was revoked already.
/// Someone else's key is "not found", so ids cannot be probed.
pub async fn revoke_api_key(
    db: &Db,
    ended_here: &CredentialsEnded,
    viewer: Option<&Viewer>,
    key_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let txn = db.begin_write().await?;
    let revoked = api_keys::Entity::update_many()
        .col_expr(api_keys::Column::RevokedAt, Expr::value(Some(now)))
        .filter(api_keys::Column::Id.eq(key_id))
        .filter(api_keys::Column::UserId.eq(viewer.user_id))
        .filter(api_keys::Column::RevokedAt.is_null())
        .exec(&txn)
        .await?;
    if revoked.rows_affected == 0 {
        txn.rollback().await?;
        let exists = api_keys::Entity::find_by_id(key_id)
            .filter(api_keys::Column::UserId.eq(viewer.user_id))
            .one(db)
            .await?
            .is_some();
        return if exists {
            Ok(false)
        } else {
            Err(ServiceError::NotFound("no such API key".into()))
        };
    }
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "api_key.revoked",
            subject_type: "api_key",
            subject_id: key_id,
            niche_id: None,
            detail: json!({ "user": viewer.handle }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    ended_here.ended(viewer.user_id);
    Ok(true)
}

/// The signed-in person's API keys that are not revoked (expired ones included, so their owner
/// sees why they stopped working), the newest first.
pub async fn my_api_keys(
    db: &Db,
    viewer: Option<&Viewer>,
) -> Result<Vec<api_keys::Model>, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    Ok(api_keys::Entity::find()
        .filter(api_keys::Column::UserId.eq(viewer.user_id))
        .filter(api_keys::Column::RevokedAt.is_null())
        .order_by_desc(api_keys::Column::CreatedAt)
        .order_by_desc(api_keys::Column::Id)
        .all(db)
        .await?)
}

/// The signed-in person's account, or `Unauthenticated` when it no longer exists.
pub async fn account_of(db: &Db, viewer: &Viewer) -> Result<users::Model, ServiceError> {
    users::Entity::find_by_id(viewer.user_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::Unauthenticated("that account no longer exists".into()))
}
