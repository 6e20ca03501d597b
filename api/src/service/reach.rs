//! Reaching operators when the dashboard is closed (docs/contract.md#reaching-operators): a
//! person's mail settings and per-niche preferences, the signed links mail carries (address
//! verification, one-click unsubscribe), and the notification rows a new question writes in its
//! own transaction.
//!
//! A notification row starts `planned`: the mail worker places it by the person's preferences
//! as they are when it looks (at once, in a digest, after quiet hours, or dropped), so the
//! intake transaction does no more than one `INSERT … SELECT`.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Timelike, Utc};
use entity::agent_questions::Urgency;
use entity::{
    link_keys, niche_members, niches, notification_preferences, notification_settings,
    notifications, users,
};
use hmac::{Hmac, KeyInit, Mac};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait,
    NotSet, QueryFilter, Statement,
};
use sha2::Sha256;

use crate::error::{Conflict, ServiceError};
use crate::service::access::Viewer;

/// How long an address-verification link works.
pub const VERIFY_LINK_HOURS: i64 = 48;

/// How many verification mails one person may have waiting at once.
const VERIFY_PENDING_MAX: u64 = 1;

/// How many verification mails one person may ask for in an hour: an address is not a way to
/// flood someone else's inbox.
pub const VERIFY_PER_HOUR: u64 = 5;

/// A person's mail settings as they see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailSettings {
    /// Their address.
    pub email: String,
    /// Whether that address is verified.
    pub verified: bool,
    /// Their IANA time zone.
    pub time_zone: String,
    /// Quiet hours, as minutes after their midnight (start, end).
    pub quiet_hours: Option<(i32, i32)>,
    /// Whether quiet hours hold back high-urgency mail too.
    pub quiet_includes_high: bool,
}

/// How a person wants to hear about one niche.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preference {
    /// The niche.
    pub niche_id: i64,
    /// Its slug.
    pub niche_slug: String,
    /// Its name.
    pub niche_name: String,
    /// `false`: no mail about it at all.
    pub enabled: bool,
    /// The urgencies mailed at once.
    pub immediate: Vec<Urgency>,
    /// How the rest are gathered.
    pub digest: Digest,
}

/// How the urgencies not mailed at once are gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digest {
    /// One mail an hour, on the hour.
    Hourly,
    /// One mail a day, at 08:00 in the person's time zone.
    Daily,
    /// Not mailed.
    Off,
}

impl Digest {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Digest::Hourly => "hourly",
            Digest::Daily => "daily",
            Digest::Off => "off",
        }
    }

    fn parse(raw: &str) -> Self {
        match raw {
            "daily" => Digest::Daily,
            "off" => Digest::Off,
            _ => Digest::Hourly,
        }
    }
}

/// The urgency as stored in a preference.
pub fn urgency_name(urgency: Urgency) -> &'static str {
    match urgency {
        Urgency::Low => "low",
        Urgency::Normal => "normal",
        Urgency::High => "high",
    }
}

fn parse_urgencies(raw: &str) -> Vec<Urgency> {
    let mut found: Vec<Urgency> = raw
        .split(',')
        .filter_map(|part| match part.trim() {
            "low" => Some(Urgency::Low),
            "normal" => Some(Urgency::Normal),
            "high" => Some(Urgency::High),
            _ => None,
        })
        .collect();
    found.sort_by_key(|u| std::cmp::Reverse(rank(*u)));
    found.dedup();
    found
}

fn rank(urgency: Urgency) -> u8 {
    match urgency {
        Urgency::Low => 0,
        Urgency::Normal => 1,
        Urgency::High => 2,
    }
}

/// The defaults for a niche nobody set a preference for: high at once, the rest hourly.
fn default_preference(niche: &niches::Model) -> Preference {
    Preference {
        niche_id: niche.id,
        niche_slug: niche.slug.clone(),
        niche_name: niche.name.clone(),
        enabled: true,
        immediate: vec![Urgency::High],
        digest: Digest::Hourly,
    }
}

// ----------------------------------------------------------------------------------------------
// Settings

async fn settings_row<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<Option<notification_settings::Model>, ServiceError> {
    Ok(notification_settings::Entity::find()
        .filter(notification_settings::Column::UserId.eq(user_id))
        .one(db)
        .await?)
}

/// The signed-in person's mail settings.
pub async fn settings_of(
    db: &DatabaseConnection,
    viewer: &Viewer,
) -> Result<MailSettings, ServiceError> {
    let user = users::Entity::find_by_id(viewer.user_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such person".into()))?;
    let row = settings_row(db, viewer.user_id).await?;
    Ok(view(&user, row.as_ref()))
}

fn view(user: &users::Model, row: Option<&notification_settings::Model>) -> MailSettings {
    MailSettings {
        email: user.email.clone(),
        verified: row.is_some_and(|r| r.verified_email.as_deref() == Some(user.email.as_str())),
        time_zone: row.map_or_else(|| "UTC".to_owned(), |r| r.time_zone.clone()),
        quiet_hours: row.and_then(|r| Some((r.quiet_start_minute?, r.quiet_end_minute?))),
        quiet_includes_high: row.is_some_and(|r| r.quiet_includes_high),
    }
}

/// A time zone askloop knows, by its IANA name.
pub fn parse_time_zone(name: &str) -> Result<chrono_tz::Tz, ServiceError> {
    name.trim().parse::<chrono_tz::Tz>().map_err(|_| {
        ServiceError::BadInput(format!(
            "'{}' is not an IANA time zone (such as Europe/Paris or America/New_York)",
            crate::domain::text::cap(name, 60)
        ))
    })
}

/// Change the time zone and quiet hours (`quiet`: start and end minutes after midnight, both
/// 0..1440 and different; none clears them).
pub async fn set_quiet_hours(
    db: &DatabaseConnection,
    viewer: &Viewer,
    time_zone: &str,
    quiet: Option<(i32, i32)>,
    includes_high: bool,
    now: DateTime<Utc>,
) -> Result<MailSettings, ServiceError> {
    let tz = parse_time_zone(time_zone)?;
    if let Some((start, end)) = quiet {
        for (name, minute) in [("start", start), ("end", end)] {
            if !(0..1440).contains(&minute) {
                return Err(ServiceError::BadInput(format!(
                    "quiet hours' {name} must be a minute of the day, 0 to 1439; got {minute}"
                )));
            }
        }
        if start == end {
            return Err(ServiceError::BadInput(
                "quiet hours must start and end at different times".into(),
            ));
        }
    }
    let txn = crate::db::begin_write(db).await?;
    upsert_settings(
        &txn,
        viewer.user_id,
        notification_settings::ActiveModel {
            time_zone: Set(tz.name().to_owned()),
            quiet_start_minute: Set(quiet.map(|q| q.0)),
            quiet_end_minute: Set(quiet.map(|q| q.1)),
            quiet_includes_high: Set(includes_high),
            updated_at: Set(now),
            ..Default::default()
        },
        &[
            notification_settings::Column::TimeZone,
            notification_settings::Column::QuietStartMinute,
            notification_settings::Column::QuietEndMinute,
            notification_settings::Column::QuietIncludesHigh,
            notification_settings::Column::UpdatedAt,
        ],
    )
    .await?;
    txn.commit().await?;
    settings_of(db, viewer).await
}

async fn upsert_settings<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    mut row: notification_settings::ActiveModel,
    update: &[notification_settings::Column],
) -> Result<(), ServiceError> {
    row.id = NotSet;
    row.user_id = Set(user_id);
    if row.time_zone.is_not_set() {
        row.time_zone = Set("UTC".into());
    }
    if row.quiet_includes_high.is_not_set() {
        row.quiet_includes_high = Set(false);
    }
    if row.verified_email.is_not_set() {
        row.verified_email = Set(None);
    }
    if row.email_verified_at.is_not_set() {
        row.email_verified_at = Set(None);
    }
    if row.quiet_start_minute.is_not_set() {
        row.quiet_start_minute = Set(None);
        row.quiet_end_minute = Set(None);
    }
    notification_settings::Entity::insert(row)
        .on_conflict(
            OnConflict::column(notification_settings::Column::UserId)
                .update_columns(update.iter().copied())
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// Change the signed-in person's address: it is unverified until its link is followed, and a
/// verification mail is queued to it.
pub async fn set_email(
    db: &DatabaseConnection,
    viewer: &Viewer,
    email: &str,
    mail_on: bool,
    now: DateTime<Utc>,
) -> Result<MailSettings, ServiceError> {
    let email = crate::service::accounts::normalise_email(email)?;
    let txn = crate::db::begin_write(db).await?;
    let taken = users::Entity::find()
        .filter(users::Column::Email.eq(email.clone()))
        .filter(users::Column::Id.ne(viewer.user_id))
        .one(&txn)
        .await?;
    if taken.is_some() {
        return Err(Conflict::AccountTaken.into());
    }
    // Two people taking the same address at once: the unique key decides, and the loser is
    // told as if it had been taken before.
    users::Entity::update_many()
        .col_expr(users::Column::Email, sea_orm::sea_query::Expr::value(email))
        .filter(users::Column::Id.eq(viewer.user_id))
        .exec(&txn)
        .await
        .map_err(|err| match err.sql_err() {
            Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) => {
                ServiceError::from(Conflict::AccountTaken)
            }
            _ => err.into(),
        })?;
    if mail_on {
        // Past the hourly limit the address still changes; its link is asked for later.
        let _ = queue_verification(&txn, viewer.user_id, now).await?;
    }
    txn.commit().await?;
    settings_of(db, viewer).await
}

/// Queue a verification mail to the signed-in person's current address (one at a time).
pub async fn request_verification(
    db: &DatabaseConnection,
    viewer: &Viewer,
    mail_on: bool,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if !mail_on {
        return Err(ServiceError::Unavailable(
            "askloop sends no mail here: ASKLOOP_SMTP_URL is not set".into(),
        ));
    }
    let settings = settings_of(db, viewer).await?;
    if settings.verified {
        return Err(ServiceError::BadInput(format!(
            "{} is already verified",
            settings.email
        )));
    }
    let txn = crate::db::begin_write(db).await?;
    let queued = queue_verification(&txn, viewer.user_id, now).await?;
    txn.commit().await?;
    if !queued {
        return Err(ServiceError::BadInput(format!(
            "at most {VERIFY_PER_HOUR} verification links an hour; use the last one, or ask again later"
        )));
    }
    Ok(())
}

/// Queue a verification mail, unless one waits already (then nothing is needed: true) or the
/// hour's limit is reached (false).
async fn queue_verification<C: ConnectionTrait>(
    txn: &C,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    use sea_orm::PaginatorTrait;
    let verifications = || {
        notifications::Entity::find()
            .filter(notifications::Column::UserId.eq(user_id))
            .filter(notifications::Column::Reason.eq("verify_email"))
    };
    let waiting = verifications()
        .filter(notifications::Column::Status.eq("pending"))
        .count(txn)
        .await?;
    if waiting >= VERIFY_PENDING_MAX {
        return Ok(true);
    }
    let this_hour = verifications()
        .filter(notifications::Column::CreatedAt.gt(now - Duration::hours(1)))
        .count(txn)
        .await?;
    if this_hour >= VERIFY_PER_HOUR {
        return Ok(false);
    }
    notifications::Entity::insert(notifications::ActiveModel {
        id: NotSet,
        user_id: Set(user_id),
        niche_id: Set(None),
        question_id: Set(None),
        reason: Set("verify_email".into()),
        status: Set("pending".into()),
        digest: Set(false),
        due_at: Set(now),
        attempts: Set(0),
        claim_token: Set(None),
        claimed_until: Set(None),
        last_error: Set(None),
        retry_from: Set(now),
        sent_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    })
    .exec_without_returning(txn)
    .await?;
    Ok(true)
}

// ----------------------------------------------------------------------------------------------
// Preferences

/// The signed-in person's preference for each niche they belong to (the defaults where they set
/// none).
pub async fn preferences_of(
    db: &DatabaseConnection,
    viewer: &Viewer,
) -> Result<Vec<Preference>, ServiceError> {
    let member_of: Vec<i64> = niche_members::Entity::find()
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .filter(niche_members::Column::Status.eq(niche_members::MemberStatus::Active))
        .all(db)
        .await?
        .into_iter()
        .map(|m| m.niche_id)
        .collect();
    let niches = niches::Entity::find()
        .filter(niches::Column::Id.is_in(member_of))
        .all(db)
        .await?;
    let set: std::collections::HashMap<i64, notification_preferences::Model> =
        notification_preferences::Entity::find()
            .filter(notification_preferences::Column::UserId.eq(viewer.user_id))
            .all(db)
            .await?
            .into_iter()
            .map(|p| (p.niche_id, p))
            .collect();
    let mut found: Vec<Preference> = niches
        .iter()
        .map(|niche| match set.get(&niche.id) {
            Some(row) => Preference {
                enabled: row.enabled,
                immediate: parse_urgencies(&row.immediate_urgencies),
                digest: Digest::parse(&row.digest),
                ..default_preference(niche)
            },
            None => default_preference(niche),
        })
        .collect();
    found.sort_by(|a, b| a.niche_slug.cmp(&b.niche_slug));
    Ok(found)
}

/// Set the signed-in person's preference for a niche they belong to.
pub async fn set_preference(
    db: &DatabaseConnection,
    viewer: &Viewer,
    niche_slug: &str,
    enabled: bool,
    immediate: &[Urgency],
    digest: Digest,
    now: DateTime<Utc>,
) -> Result<Preference, ServiceError> {
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(niche_slug.trim()))
        .one(db)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound(format!(
                "no niche {}",
                crate::domain::text::cap(niche_slug, 80)
            ))
        })?;
    let member = niche_members::Entity::find()
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::Status.eq(niche_members::MemberStatus::Active))
        .one(db)
        .await?;
    if member.is_none() {
        return Err(ServiceError::NotFound(format!(
            "you are not an active member of {}",
            niche.slug
        )));
    }
    let mut immediate = immediate.to_vec();
    immediate.sort_by_key(|u| std::cmp::Reverse(rank(*u)));
    immediate.dedup();
    let stored = immediate
        .iter()
        .map(|u| urgency_name(*u))
        .collect::<Vec<_>>()
        .join(",");
    save_preference(db, viewer.user_id, niche.id, enabled, &stored, digest, now).await?;
    Ok(Preference {
        enabled,
        immediate,
        digest,
        ..default_preference(&niche)
    })
}

async fn save_preference<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    niche_id: i64,
    enabled: bool,
    immediate: &str,
    digest: Digest,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    notification_preferences::Entity::insert(notification_preferences::ActiveModel {
        id: NotSet,
        user_id: Set(user_id),
        niche_id: Set(niche_id),
        enabled: Set(enabled),
        immediate_urgencies: Set(immediate.to_owned()),
        digest: Set(digest.as_str().to_owned()),
        updated_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            notification_preferences::Column::UserId,
            notification_preferences::Column::NicheId,
        ])
        .update_columns([
            notification_preferences::Column::Enabled,
            notification_preferences::Column::ImmediateUrgencies,
            notification_preferences::Column::Digest,
            notification_preferences::Column::UpdatedAt,
        ])
        .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

// ----------------------------------------------------------------------------------------------
// Signed links

type HmacSha256 = Hmac<Sha256>;

/// The installation's link key, made on first use (every instance reads the same one).
async fn link_key<C: ConnectionTrait>(db: &C) -> Result<Vec<u8>, ServiceError> {
    let find = || link_keys::Entity::find().filter(link_keys::Column::Purpose.eq("links"));
    if let Some(key) = find().one(db).await? {
        return Ok(hex::decode(key.secret).unwrap_or_default());
    }
    let secret: [u8; 32] = rand::random();
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
    .exec_without_returning(db)
    .await?;
    let key = find()
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("the link key was not kept")))?;
    Ok(hex::decode(key.secret).unwrap_or_default())
}

fn mac(key: &[u8], message: &str) -> String {
    let mut mac = HmacSha256::new_from_slice(key).unwrap_or_else(|_| unreachable!("any length"));
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// `message.mac`, with `message` in URL-safe base64.
async fn sign<C: ConnectionTrait>(db: &C, message: &str) -> Result<String, ServiceError> {
    use base64::Engine as _;
    let key = link_key(db).await?;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(message);
    Ok(format!("{encoded}.{}", mac(&key, message)))
}

/// The message of a token signed by this installation, or a clear refusal.
async fn open<C: ConnectionTrait>(db: &C, token: &str) -> Result<String, ServiceError> {
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
pub async fn verification_token<C: ConnectionTrait>(
    db: &C,
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
    db: &DatabaseConnection,
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
    let txn = crate::db::begin_write(db).await?;
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
pub async fn unsubscribe_token<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    niche_id: i64,
) -> Result<String, ServiceError> {
    sign(db, &format!("unsubscribe:{user_id}:{niche_id}")).await
}

/// What an unsubscribe link is for: the person and the niche (its slug).
pub async fn unsubscribe_target(
    db: &DatabaseConnection,
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
    db: &DatabaseConnection,
    token: &str,
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    let (user_id, niche) = unsubscribe_target(db, token).await?;
    let txn = crate::db::begin_write(db).await?;
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

/// Inside the transaction that takes `user_id` out of `niche_id`: the mail waiting to tell them
/// of its questions is not sent.
pub async fn drop_mail_for_departed<C: ConnectionTrait>(
    txn: &C,
    user_id: i64,
    niche_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    notifications::Entity::update_many()
        .col_expr(
            notifications::Column::Status,
            sea_orm::sea_query::Expr::value("dropped"),
        )
        .col_expr(
            notifications::Column::ClaimToken,
            sea_orm::sea_query::Expr::value(None::<String>),
        )
        .col_expr(
            notifications::Column::UpdatedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(notifications::Column::UserId.eq(user_id))
        .filter(notifications::Column::NicheId.eq(niche_id))
        .filter(notifications::Column::Status.is_in(["planned", "pending"]))
        .exec(txn)
        .await?;
    Ok(())
}

// ----------------------------------------------------------------------------------------------
// New questions

/// `sql` with `?` placeholders, as `backend` takes it.
pub(crate) fn statement(backend: DbBackend, sql: &str, values: Vec<sea_orm::Value>) -> Statement {
    let sql = match backend {
        DbBackend::Postgres => {
            let mut out = String::with_capacity(sql.len() + 16);
            let mut n = 0;
            for c in sql.chars() {
                if c == '?' {
                    n += 1;
                    out.push_str(&format!("${n}"));
                } else {
                    out.push(c);
                }
            }
            out
        }
        _ => sql.to_owned(),
    };
    Statement::from_sql_and_values(backend, sql, values)
}

/// Inside the transaction that stored `question_ids`: one planned notification per question and
/// per active operator or specialist of its niche whose address is verified and who has not
/// turned its mail off.
pub async fn plan_for_new_questions<C: ConnectionTrait>(
    txn: &C,
    question_ids: &[i64],
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if question_ids.is_empty() {
        return Ok(());
    }
    let marks = vec!["?"; question_ids.len()].join(", ");
    let sql = format!(
        "INSERT INTO notifications (user_id, niche_id, question_id, reason, status, digest, \
         due_at, attempts, retry_from, created_at, updated_at) \
         SELECT m.user_id, q.niche_id, q.id, 'waiting', 'planned', ?, ?, 0, ?, ?, ? \
         FROM agent_questions q \
         JOIN niche_members m ON m.niche_id = q.niche_id AND m.status = 'active' \
              AND m.role IN ('operator', 'specialist') \
         JOIN users u ON u.id = m.user_id \
         JOIN notification_settings s ON s.user_id = m.user_id AND s.verified_email = u.email \
         LEFT JOIN notification_preferences p ON p.user_id = m.user_id AND p.niche_id = q.niche_id \
         WHERE q.id IN ({marks}) AND (p.enabled IS NULL OR p.enabled = ?) \
         ON CONFLICT DO NOTHING"
    );
    let mut values: Vec<sea_orm::Value> =
        vec![false.into(), now.into(), now.into(), now.into(), now.into()];
    values.extend(question_ids.iter().map(|id| sea_orm::Value::from(*id)));
    values.push(true.into());
    txn.execute_raw(statement(txn.get_database_backend(), &sql, values))
        .await?;
    Ok(())
}

/// Step 1 of an escalation, inside its transaction: everyone of the niche who may be mailed and
/// has not been told of `question_id` yet is told now; what was waiting for a digest or the end
/// of quiet hours is not sent as well.
pub async fn plan_escalation<C: ConnectionTrait>(
    txn: &C,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let sql = "INSERT INTO notifications (user_id, niche_id, question_id, reason, status, digest, \
         due_at, attempts, retry_from, created_at, updated_at) \
         SELECT m.user_id, q.niche_id, q.id, 'escalated', 'planned', ?, ?, 0, ?, ?, ? \
         FROM agent_questions q \
         JOIN niche_members m ON m.niche_id = q.niche_id AND m.status = 'active' \
              AND m.role IN ('operator', 'specialist') \
         JOIN users u ON u.id = m.user_id \
         JOIN notification_settings s ON s.user_id = m.user_id AND s.verified_email = u.email \
         LEFT JOIN notification_preferences p ON p.user_id = m.user_id AND p.niche_id = q.niche_id \
         WHERE q.id = ? AND (p.enabled IS NULL OR p.enabled = ?) \
         AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.user_id = m.user_id \
              AND n.question_id = q.id AND n.reason = 'waiting' AND n.status = 'sent') \
         ON CONFLICT DO NOTHING";
    let values: Vec<sea_orm::Value> = vec![
        false.into(),
        now.into(),
        now.into(),
        now.into(),
        now.into(),
        question_id.into(),
        true.into(),
    ];
    let backend = txn.get_database_backend();
    txn.execute_raw(statement(backend, sql, values)).await?;
    let superseded = "UPDATE notifications SET status = 'dropped', updated_at = ? \
         WHERE question_id = ? AND reason = 'waiting' AND status IN ('planned', 'pending') \
         AND user_id IN (SELECT user_id FROM notifications WHERE question_id = ? \
              AND reason = 'escalated')";
    txn.execute_raw(statement(
        backend,
        superseded,
        vec![now.into(), question_id.into(), question_id.into()],
    ))
    .await?;
    Ok(())
}

/// Step 2 of an escalation, inside its transaction: askloop's admins who may be mailed are told.
pub async fn plan_admin_escalation<C: ConnectionTrait>(
    txn: &C,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let sql = "INSERT INTO notifications (user_id, niche_id, question_id, reason, status, digest, \
         due_at, attempts, retry_from, created_at, updated_at) \
         SELECT u.id, q.niche_id, q.id, 'escalated_admin', 'planned', ?, ?, 0, ?, ?, ? \
         FROM agent_questions q \
         JOIN users u ON u.role = 'admin' \
         JOIN notification_settings s ON s.user_id = u.id AND s.verified_email = u.email \
         LEFT JOIN notification_preferences p ON p.user_id = u.id AND p.niche_id = q.niche_id \
         WHERE q.id = ? AND (p.enabled IS NULL OR p.enabled = ?) \
         ON CONFLICT DO NOTHING";
    let values: Vec<sea_orm::Value> = vec![
        false.into(),
        now.into(),
        now.into(),
        now.into(),
        now.into(),
        question_id.into(),
        true.into(),
    ];
    txn.execute_raw(statement(txn.get_database_backend(), sql, values))
        .await?;
    Ok(())
}

// ----------------------------------------------------------------------------------------------
// Placing a planned notification

/// A person's settings as the planner reads them.
#[derive(Debug, Clone)]
pub struct Recipient {
    /// The time zone.
    pub tz: chrono_tz::Tz,
    /// Quiet hours (start, end minutes).
    pub quiet: Option<(i32, i32)>,
    /// Whether quiet hours hold high urgency too.
    pub quiet_includes_high: bool,
}

impl Recipient {
    /// From a settings row (UTC, no quiet hours, where it says nothing usable).
    pub fn of(row: Option<&notification_settings::Model>) -> Self {
        Self {
            tz: row
                .and_then(|r| r.time_zone.parse().ok())
                .unwrap_or(chrono_tz::UTC),
            quiet: row.and_then(|r| Some((r.quiet_start_minute?, r.quiet_end_minute?))),
            quiet_includes_high: row.is_some_and(|r| r.quiet_includes_high),
        }
    }

    /// When quiet hours that hold `now` end, if they do.
    pub fn quiet_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let (start, end) = self.quiet?;
        let local = now.with_timezone(&self.tz);
        let minute = (local.hour() * 60 + local.minute()) as i32;
        let inside = if start < end {
            (start..end).contains(&minute)
        } else {
            minute >= start || minute < end
        };
        if !inside {
            return None;
        }
        let end_time = NaiveTime::from_hms_opt((end / 60) as u32, (end % 60) as u32, 0)?;
        let mut date = local.date_naive();
        if minute >= end {
            date = date.succ_opt()?;
        }
        Some(local_instant(self.tz, date.and_time(end_time)))
    }

    /// When a digest gathering `now` goes out.
    pub fn next_digest(&self, digest: Digest, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = now.with_timezone(&self.tz);
        let at = match digest {
            Digest::Off => return None,
            Digest::Hourly => {
                let hour = local.date_naive().and_hms_opt(local.hour(), 0, 0)?;
                local_instant(self.tz, hour) + Duration::hours(1)
            }
            Digest::Daily => {
                let eight = NaiveTime::from_hms_opt(8, 0, 0)?;
                let mut date = local.date_naive();
                if local.time() >= eight {
                    date = date.succ_opt()?;
                }
                local_instant(self.tz, date.and_time(eight))
            }
        };
        // A digest due in quiet hours waits for their end.
        Some(self.quiet_until(at).unwrap_or(at))
    }
}

/// A local wall-clock time in `tz` as an instant (a time skipped by a clock change is read an
/// hour later; a repeated one, the first time).
fn local_instant(tz: chrono_tz::Tz, local: chrono::NaiveDateTime) -> DateTime<Utc> {
    tz.from_local_datetime(&local)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(local + Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| local.and_utc())
}

/// Where a planned notification goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On its own, at this time.
    Alone(DateTime<Utc>),
    /// In a digest, at this time.
    Digest(DateTime<Utc>),
    /// Not sent.
    Dropped,
}

/// Place a notification about a question of `urgency` for `recipient` with `preference` (none:
/// the defaults), for `reason`, at `now`.
pub fn place(
    recipient: &Recipient,
    preference: Option<&notification_preferences::Model>,
    urgency: Urgency,
    reason: &str,
    now: DateTime<Utc>,
) -> Placement {
    let (enabled, immediate, digest) = match preference {
        Some(p) => (
            p.enabled,
            parse_urgencies(&p.immediate_urgencies),
            Digest::parse(&p.digest),
        ),
        None => (true, vec![Urgency::High], Digest::Hourly),
    };
    if !enabled {
        return Placement::Dropped;
    }
    // An escalation overrides digests and quiet hours.
    if reason != "waiting" {
        return Placement::Alone(now);
    }
    if immediate.contains(&urgency) {
        let held = urgency != Urgency::High || recipient.quiet_includes_high;
        return match recipient.quiet_until(now) {
            Some(until) if held => Placement::Alone(until),
            _ => Placement::Alone(now),
        };
    }
    match recipient.next_digest(digest, now) {
        Some(at) => Placement::Digest(at),
        None => Placement::Dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("time")
            .with_timezone(&Utc)
    }

    fn paris(quiet: Option<(i32, i32)>, high: bool) -> Recipient {
        Recipient {
            tz: chrono_tz::Europe::Paris,
            quiet,
            quiet_includes_high: high,
        }
    }

    #[test]
    fn quiet_hours_across_midnight_end_the_next_morning_in_the_persons_zone() {
        let r = paris(Some((22 * 60, 7 * 60)), false);
        // 23:30 in Paris (UTC+1 in December) is inside; they end at 07:00 Paris, 06:00 UTC.
        assert_eq!(
            r.quiet_until(at("2026-12-01T22:30:00Z")),
            Some(at("2026-12-02T06:00:00Z"))
        );
        // 03:00 Paris, the same night after midnight.
        assert_eq!(
            r.quiet_until(at("2026-12-02T02:00:00Z")),
            Some(at("2026-12-02T06:00:00Z"))
        );
        // 12:00 Paris is outside.
        assert_eq!(r.quiet_until(at("2026-12-02T11:00:00Z")), None);
    }

    #[test]
    fn placing_follows_urgency_digest_and_quiet_hours() {
        let night = at("2026-12-01T23:00:00Z"); // 00:00 in Paris
        let quiet = paris(Some((22 * 60, 7 * 60)), false);
        let morning = at("2026-12-02T06:00:00Z");
        // High is sent at once by default, quiet hours or not (unless they include high).
        assert_eq!(
            place(&quiet, None, Urgency::High, "waiting", night),
            Placement::Alone(night)
        );
        assert_eq!(
            place(
                &paris(Some((22 * 60, 7 * 60)), true),
                None,
                Urgency::High,
                "waiting",
                night
            ),
            Placement::Alone(morning)
        );
        // Normal goes to the hourly digest, which waits for the end of quiet hours.
        assert_eq!(
            place(&quiet, None, Urgency::Normal, "waiting", night),
            Placement::Digest(morning)
        );
        // Without quiet hours, the next full hour.
        let plain = paris(None, false);
        assert_eq!(
            place(
                &plain,
                None,
                Urgency::Low,
                "waiting",
                at("2026-12-01T10:20:00Z")
            ),
            Placement::Digest(at("2026-12-01T11:00:00Z"))
        );
        // An escalation is sent at once whatever the hour.
        assert_eq!(
            place(&quiet, None, Urgency::Low, "escalated", night),
            Placement::Alone(night)
        );
        // Off is off, escalation included.
        let off = notification_preferences::Model {
            id: 1,
            user_id: 1,
            niche_id: 1,
            enabled: false,
            immediate_urgencies: "high".into(),
            digest: "hourly".into(),
            updated_at: night,
        };
        assert_eq!(
            place(&plain, Some(&off), Urgency::High, "escalated", night),
            Placement::Dropped
        );
        // A daily digest goes at 08:00 in their zone; a digest that is off drops the rest.
        let daily = notification_preferences::Model {
            enabled: true,
            digest: "daily".into(),
            ..off.clone()
        };
        assert_eq!(
            place(
                &plain,
                Some(&daily),
                Urgency::Normal,
                "waiting",
                at("2026-12-01T10:00:00Z")
            ),
            Placement::Digest(at("2026-12-02T07:00:00Z"))
        );
        let no_digest = notification_preferences::Model {
            enabled: true,
            digest: "off".into(),
            ..off
        };
        assert_eq!(
            place(&plain, Some(&no_digest), Urgency::Normal, "waiting", night),
            Placement::Dropped
        );
    }
}
