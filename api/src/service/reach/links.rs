//! The signed links mail carries: address verification and one-click unsubscribe, signed with
//! the installation's link key.

use chrono::{DateTime, Duration, Utc};
use entity::{
    link_keys, niches, notification_preferences, notification_settings, notifications, users,
};
use hmac::{Hmac, KeyInit, Mac};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};
use sha2::Sha256;

use super::preferences::save_preference;
use super::settings::{VERIFY_LINK_HOURS, upsert_settings};
use crate::db::Db;
use crate::domain::placement::Digest;
use crate::error::ServiceError;

type HmacSha256 = Hmac<Sha256>;

/// The installation's link key, made on first use (every instance reads the same one): read
/// first, and only a process that finds none writes it, in a write transaction of its own.
async fn link_key(db: &Db) -> Result<Vec<u8>, ServiceError> {
    let find = || link_keys::Entity::find().filter(link_keys::Column::Purpose.eq("links"));
    if let Some(key) = find().one(db).await? {
        return Ok(hex::decode(key.secret).unwrap_or_default());
    }
    let secret: [u8; 32] = rand::random();
    let txn = db.begin_write().await?;
    // Another process (or instance) may make it meanwhile: the first one kept is everyone's.
    link_keys::Entity::insert(link_keys::ActiveModel {
        id: NotSet,
        purpose: Set("links".into()),
        secret: Set(hex::encode(secret)),
        created_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::column(link_keys::Column::Purpose)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(&txn)
    .await?;
    let key = find()
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("the link key was not kept")))?;
    txn.commit().await?;
    Ok(hex::decode(key.secret).unwrap_or_default())
}

fn mac(key: &[u8], message: &str) -> String {
    let mut mac = HmacSha256::new_from_slice(key).unwrap_or_else(|_| unreachable!("any length"));
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// `message.mac`, with `message` in URL-safe base64.
async fn sign(db: &Db, message: &str) -> Result<String, ServiceError> {
    use base64::Engine as _;
    let key = link_key(db).await?;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(message);
    Ok(format!("{encoded}.{}", mac(&key, message)))
}

/// The message of a token signed by this installation, or a clear refusal.
async fn open(db: &Db, token: &str) -> Result<String, ServiceError> {
    use base64::Engine as _;
    let refused = || ServiceError::BadInput("this link is not valid (it may be cut short)".into());
    if token.len() > 2048 {
        return Err(refused());
    }
    let (encoded, signature) = token.trim().split_once('.').ok_or_else(refused)?;
    let message = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(refused)?;
    let key = link_key(db).await?;
    let expected = mac(&key, &message);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        expected.as_bytes(),
        signature.as_bytes(),
    )) {
        return Err(refused());
    }
    Ok(message)
}

/// The token of a link that verifies `email` for `user_id` until `VERIFY_LINK_HOURS` from now.
pub async fn verification_token(
    db: &Db,
    user_id: i64,
    email: &str,
    now: DateTime<Utc>,
) -> Result<String, ServiceError> {
    let until = (now + Duration::hours(VERIFY_LINK_HOURS)).timestamp();
    sign(db, &format!("verify:{user_id}:{until}:{email}")).await
}

/// Follow a verification link: the address it names is verified, if it is still that person's
/// address and the link has not run out. The address verified.
pub async fn verify_email(
    db: &Db,
    token: &str,
    now: DateTime<Utc>,
) -> Result<String, ServiceError> {
    let message = open(db, token).await?;
    let mut parts = message.splitn(4, ':');
    let (Some("verify"), Some(user), Some(until), Some(email)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ServiceError::BadInput(
            "this is not a verification link".into(),
        ));
    };
    let user_id: i64 = user
        .parse()
        .map_err(|_| ServiceError::BadInput("this is not a verification link".into()))?;
    let until: i64 = until
        .parse()
        .map_err(|_| ServiceError::BadInput("this is not a verification link".into()))?;
    if now.timestamp() > until {
        return Err(ServiceError::BadInput(
            "this verification link has run out; ask for a new one on the settings page".into(),
        ));
    }
    let user = users::Entity::find_by_id(user_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such person".into()))?;
    if user.email != email {
        return Err(ServiceError::BadInput(
            "this link is for an address that is no longer yours".into(),
        ));
    }
    let txn = db.begin_write().await?;
    upsert_settings(
        &txn,
        user_id,
        notification_settings::ActiveModel {
            verified_email: Set(Some(email.to_owned())),
            email_verified_at: Set(Some(now)),
            updated_at: Set(now),
            ..Default::default()
        },
        &[
            notification_settings::Column::VerifiedEmail,
            notification_settings::Column::EmailVerifiedAt,
            notification_settings::Column::UpdatedAt,
        ],
    )
    .await?;
    crate::service::audit::record(
        &txn,
        crate::service::audit::AuditEntry {
            actor: &crate::service::audit::Actor::User(user_id),
            action: "email.verified",
            subject_type: "user",
            subject_id: user_id,
            niche_id: None,
            detail: serde_json::json!({}),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(email.to_owned())
}

/// The token of a one-click unsubscribe link for `user_id` from `niche_id`'s mail.
pub async fn unsubscribe_token(
    db: &Db,
    user_id: i64,
    niche_id: i64,
) -> Result<String, ServiceError> {
    sign(db, &format!("unsubscribe:{user_id}:{niche_id}")).await
}

/// What an unsubscribe link is for: the person and the niche (its slug).
pub async fn unsubscribe_target(
    db: &Db,
    token: &str,
) -> Result<(i64, niches::Model), ServiceError> {
    let message = open(db, token).await?;
    let mut parts = message.splitn(3, ':');
    let not_one = || ServiceError::BadInput("this is not an unsubscribe link".into());
    let (Some("unsubscribe"), Some(user), Some(niche)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(not_one());
    };
    let user_id: i64 = user.parse().map_err(|_| not_one())?;
    let niche_id: i64 = niche.parse().map_err(|_| not_one())?;
    // Signed by us, but for someone no longer here: nothing to stop, and nobody to store a
    // preference for (the row would name a person that does not exist).
    users::Entity::find_by_id(user_id)
        .one(db)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound("this link is for an account that no longer exists".into())
        })?;
    let niche = niches::Entity::find_by_id(niche_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("that niche no longer exists".into()))?;
    Ok((user_id, niche))
}

/// Follow an unsubscribe link: no more mail about its niche for its person (their other
/// choices for it are kept for when they turn it on again). The niche.
pub async fn unsubscribe(
    db: &Db,
    token: &str,
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    let (user_id, niche) = unsubscribe_target(db, token).await?;
    let txn = db.begin_write().await?;
    let current = notification_preferences::Entity::find()
        .filter(notification_preferences::Column::UserId.eq(user_id))
        .filter(notification_preferences::Column::NicheId.eq(niche.id))
        .one(&txn)
        .await?;
    let (immediate, digest) = match &current {
        Some(row) => (row.immediate_urgencies.clone(), Digest::parse(&row.digest)),
        None => ("high".to_owned(), Digest::Hourly),
    };
    save_preference(&txn, user_id, niche.id, false, &immediate, digest, now).await?;
    // What was waiting to be sent about it is not sent.
    notifications::Entity::update_many()
        .col_expr(
            notifications::Column::Status,
            sea_orm::sea_query::Expr::value("dropped"),
        )
        .col_expr(
            notifications::Column::UpdatedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(notifications::Column::UserId.eq(user_id))
        .filter(notifications::Column::NicheId.eq(niche.id))
        .filter(notifications::Column::Status.is_in(["planned", "pending"]))
        .exec(&txn)
        .await?;
    crate::service::audit::record(
        &txn,
        crate::service::audit::AuditEntry {
            actor: &crate::service::audit::Actor::User(user_id),
            action: "notifications.unsubscribed",
            subject_type: "user",
            subject_id: user_id,
            niche_id: Some(niche.id),
            detail: serde_json::json!({}),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(niche)
}
