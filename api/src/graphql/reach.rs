//! Reaching operators (docs/contract.md#reaching-operators): the signed-in person's mail
//! settings, per-niche preferences and operator webhooks.

use std::sync::Arc;

use crate::db::Db;
use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::caller_of;
use super::enums::Urgency;
use crate::config::Config;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::service::people::access::{self, Viewer};
use crate::service::{reach, reach::operator_hooks};

/// How the urgencies not mailed at once are gathered.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum DigestFrequency {
    /// One mail an hour.
    Hourly,
    /// One mail a day, at 08:00 in your time zone.
    Daily,
    /// Not mailed.
    Off,
}

impl From<reach::Digest> for DigestFrequency {
    fn from(d: reach::Digest) -> Self {
        match d {
            reach::Digest::Hourly => Self::Hourly,
            reach::Digest::Daily => Self::Daily,
            reach::Digest::Off => Self::Off,
        }
    }
}

impl From<DigestFrequency> for reach::Digest {
    fn from(d: DigestFrequency) -> Self {
        match d {
            DigestFrequency::Hourly => Self::Hourly,
            DigestFrequency::Daily => Self::Daily,
            DigestFrequency::Off => Self::Off,
        }
    }
}

/// Quiet hours, in your time zone: mail other than high urgency waits for their end.
#[derive(SimpleObject, InputObject, Clone, Copy)]
#[graphql(input_name = "QuietHoursInput")]
pub struct QuietHours {
    /// Minutes after midnight they start (0–1439).
    pub start_minute: i32,
    /// Minutes after midnight they end (0–1439).
    pub end_minute: i32,
}

/// Your mail settings.
#[derive(SimpleObject)]
pub struct MailSettings {
    /// Whether this askloop sends mail at all (`ASKLOOP_SMTP_URL` is set).
    pub mail_enabled: bool,
    /// Your address.
    pub email: String,
    /// Whether it is verified (nothing but the verification is mailed before).
    pub email_verified: bool,
    /// Your IANA time zone.
    pub time_zone: String,
    /// Your quiet hours, if any.
    pub quiet_hours: Option<QuietHours>,
    /// Whether quiet hours hold back high urgency too.
    pub quiet_includes_high: bool,
}

/// What you want mailed about one niche.
#[derive(SimpleObject)]
pub struct NotificationPreference {
    /// The niche's slug.
    pub niche_slug: String,
    /// The niche's name.
    pub niche_name: String,
    /// `false`: no mail about it.
    pub enabled: bool,
    /// Urgencies mailed at once.
    pub immediate: Vec<Urgency>,
    /// How the rest are gathered.
    pub digest: DigestFrequency,
}

impl From<reach::Preference> for NotificationPreference {
    fn from(p: reach::Preference) -> Self {
        Self {
            niche_slug: p.niche_slug,
            niche_name: p.niche_name,
            enabled: p.enabled,
            immediate: p.immediate.into_iter().map(Into::into).collect(),
            digest: p.digest.into(),
        }
    }
}

/// A webhook you registered.
#[derive(SimpleObject)]
pub struct OperatorWebhook {
    /// Its id.
    pub id: ID,
    /// The niche it hears about.
    pub niche_slug: String,
    /// Where events go.
    pub url: String,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
}

impl From<operator_hooks::Hook> for OperatorWebhook {
    fn from(h: operator_hooks::Hook) -> Self {
        Self {
            id: ID(h.hook.id.to_string()),
            niche_slug: h.niche_slug,
            url: h.hook.url,
            created_at: h.hook.created_at,
        }
    }
}

/// A webhook just registered, with its signing secret (shown this once).
#[derive(SimpleObject)]
pub struct OperatorWebhookCreated {
    /// The webhook.
    pub webhook: OperatorWebhook,
    /// The secret its events are signed with (`X-Chovy-Signature`, docs/contract.md).
    pub secret: String,
}

/// One delivery to a webhook.
#[derive(SimpleObject)]
pub struct OperatorWebhookDelivery {
    /// Its id.
    pub id: ID,
    /// `question.waiting` or `question.escalated`.
    pub event_type: String,
    /// `pending`, `delivered`, `exhausted` or `dropped`.
    pub status: String,
    /// Attempts so far.
    pub attempts: i64,
    /// The last HTTP status.
    pub last_status_code: Option<i32>,
    /// What the last attempt came to: `HTTP <status>`, `refused: not a public address`, or
    /// `no response`.
    pub last_error: Option<String>,
    /// Why it was not sent, when it is `dropped`.
    pub dropped_reason: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

fn viewer_of<'a>(ctx: &'a Context<'_>) -> Result<&'a Viewer> {
    access::signed_in(caller_of(ctx)?.viewer()).gql()
}

fn writer_of<'a>(ctx: &'a Context<'_>) -> Result<&'a Viewer> {
    let caller = caller_of(ctx)?;
    let viewer = access::signed_in(caller.viewer()).gql()?;
    caller.check_write().gql()?;
    Ok(viewer)
}

fn mail_on(ctx: &Context<'_>) -> bool {
    ctx.data::<Arc<Config>>()
        .map(|c| c.mail.is_some())
        .unwrap_or(false)
}

fn settings(ctx: &Context<'_>, s: reach::MailSettings) -> MailSettings {
    MailSettings {
        mail_enabled: mail_on(ctx),
        email: s.email,
        email_verified: s.verified,
        time_zone: s.time_zone,
        quiet_hours: s.quiet_hours.map(|(start_minute, end_minute)| QuietHours {
            start_minute,
            end_minute,
        }),
        quiet_includes_high: s.quiet_includes_high,
    }
}

fn id_of(id: &ID, what: &str) -> Result<i64> {
    id.parse::<i64>()
        .map_err(|_| ServiceError::BadInput(format!("not {what} id")))
        .gql()
}

/// Reading your notification settings.
#[derive(Default)]
pub struct ReachQuery;

#[Object]
impl ReachQuery {
    /// Your mail settings.
    async fn my_mail_settings(&self, ctx: &Context<'_>) -> Result<MailSettings> {
        let viewer = viewer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let found = reach::settings_of(db, viewer).await.gql()?;
        Ok(settings(ctx, found))
    }

    /// What you want mailed about each niche you belong to.
    async fn my_notification_preferences(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Vec<NotificationPreference>> {
        let viewer = viewer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        Ok(reach::preferences_of(db, viewer)
            .await
            .gql()?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Your operator webhooks.
    async fn my_operator_webhooks(&self, ctx: &Context<'_>) -> Result<Vec<OperatorWebhook>> {
        let viewer = viewer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        Ok(operator_hooks::mine(db, viewer)
            .await
            .gql()?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// The most recent deliveries to one of your webhooks (at most 50), while you are an active
    /// member of its niche (`FORBIDDEN` once you are not).
    async fn operator_webhook_deliveries(
        &self,
        ctx: &Context<'_>,
        id: ID,
        #[graphql(default = 20)] first: i32,
    ) -> Result<Vec<OperatorWebhookDelivery>> {
        let viewer = viewer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let id = id_of(&id, "a webhook")?;
        let limit = u64::try_from(first.clamp(1, 50)).unwrap_or(20);
        Ok(operator_hooks::recent_deliveries(db, viewer, id, limit)
            .await
            .gql()?
            .into_iter()
            .map(|view| {
                let d = view.delivery;
                OperatorWebhookDelivery {
                    id: ID(d.id.to_string()),
                    event_type: d.event_type,
                    status: format!("{:?}", d.status).to_lowercase(),
                    attempts: d.attempts,
                    last_status_code: d.last_status_code,
                    last_error: view.last_error,
                    dropped_reason: d.dropped_reason,
                    created_at: d.created_at,
                }
            })
            .collect())
    }
}

/// Changing your notification settings.
#[derive(Default)]
pub struct ReachMutation;

#[Object]
impl ReachMutation {
    /// Change your address: it is unverified until you follow the link mailed to it.
    async fn set_my_email(&self, ctx: &Context<'_>, email: String) -> Result<MailSettings> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let found = reach::set_email(db, viewer, &email, mail_on(ctx), Utc::now())
            .await
            .gql()?;
        Ok(settings(ctx, found))
    }

    /// Mail a verification link to your address (one waits at a time).
    async fn send_verification_email(&self, ctx: &Context<'_>) -> Result<bool> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        reach::request_verification(db, viewer, mail_on(ctx), Utc::now())
            .await
            .gql()?;
        Ok(true)
    }

    /// Set your time zone and quiet hours (none: no quiet hours).
    async fn set_quiet_hours(
        &self,
        ctx: &Context<'_>,
        time_zone: String,
        quiet_hours: Option<QuietHours>,
        #[graphql(default = false)] include_high: bool,
    ) -> Result<MailSettings> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let found = reach::set_quiet_hours(
            db,
            viewer,
            &time_zone,
            quiet_hours.map(|q| (q.start_minute, q.end_minute)),
            include_high,
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(settings(ctx, found))
    }

    /// Choose what is mailed about a niche you belong to.
    async fn set_notification_preference(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        enabled: bool,
        immediate: Vec<Urgency>,
        digest: DigestFrequency,
    ) -> Result<NotificationPreference> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let immediate: Vec<_> = immediate.into_iter().map(Into::into).collect();
        Ok(reach::set_preference(
            db,
            viewer,
            &niche_slug,
            enabled,
            &immediate,
            digest.into(),
            Utc::now(),
        )
        .await
        .gql()?
        .into())
    }

    /// Set how long a niche's questions wait before they escalate, per urgency, in seconds (60
    /// to 30 days; null: never). Admins only.
    async fn set_niche_escalation(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        high_secs: Option<i64>,
        normal_secs: Option<i64>,
        low_secs: Option<i64>,
    ) -> Result<super::types::Niche> {
        let caller = caller_of(ctx)?;
        caller.check_write().gql()?;
        let db = ctx.data::<Db>()?;
        Ok(crate::service::questions::escalation::set_waits(
            db,
            caller.viewer(),
            &niche_slug,
            [high_secs, normal_secs, low_secs],
            Utc::now(),
        )
        .await
        .gql()?
        .into())
    }

    /// Register a webhook that hears of new and escalated questions in a niche you belong to
    /// (an admin: any niche). Its secret is shown this once.
    async fn register_operator_webhook(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        url: String,
    ) -> Result<OperatorWebhookCreated> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let config = ctx.data::<Arc<Config>>()?;
        let (hook, secret) = operator_hooks::register(
            db,
            config.data_key.as_ref(),
            viewer,
            &niche_slug,
            &url,
            &operator_hooks::PlainHttp::of(config),
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(OperatorWebhookCreated {
            webhook: hook.into(),
            secret,
        })
    }

    /// Remove one of your webhooks.
    async fn remove_operator_webhook(&self, ctx: &Context<'_>, id: ID) -> Result<bool> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let id = id_of(&id, "a webhook")?;
        operator_hooks::remove(db, viewer, id, Utc::now())
            .await
            .gql()
    }

    /// Send a test event to one of your webhooks; its delivery shows in its recent deliveries.
    /// It is sent once and not retried. A few per webhook and per person in a sliding window:
    /// past either, `RATE_LIMITED` with `extensions.reason` (`TEST_SENDS_PER_WEBHOOK` or
    /// `TEST_SENDS_PER_PERSON`) and `extensions.retryAfterSeconds`, the seconds until the next may go.
    async fn test_operator_webhook(&self, ctx: &Context<'_>, id: ID) -> Result<ID> {
        let viewer = writer_of(ctx)?;
        let db = ctx.data::<Db>()?;
        let config = ctx.data::<Arc<Config>>()?;
        let id = id_of(&id, "a webhook")?;
        let delivery = operator_hooks::send_test(db, viewer, id, &config.webhook_tests, Utc::now())
            .await
            .gql()?;
        Ok(ID(delivery.id.to_string()))
    }
}
