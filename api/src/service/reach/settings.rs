//! A person's mail settings: their address (and its verification mail), time zone and quiet
//! hours.

use chrono::{DateTime, Duration, Utc};
use entity::{notification_settings, notifications, users};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet, QueryFilter};

use crate::db::{Db, WriteTxn};
use crate::error::{Conflict, ServiceError};
use crate::service::people::access::Viewer;

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
pub async fn settings_of(db: &Db, viewer: &Viewer) -> Result<MailSettings, ServiceError> {
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
    db: &Db,
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
    let txn = db.begin_write().await?;
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

pub(super) async fn upsert_settings(
    db: &WriteTxn,
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
    db: &Db,
    viewer: &Viewer,
    email: &str,
    mail_on: bool,
    now: DateTime<Utc>,
) -> Result<MailSettings, ServiceError> {
    let email = crate::service::people::accounts::normalise_email(email)?;
    let txn = db.begin_write().await?;
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
    db: &Db,
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
    let txn = db.begin_write().await?;
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
async fn queue_verification(
    txn: &WriteTxn,
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
