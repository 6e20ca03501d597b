//! Reaching operators when the dashboard is closed (docs/contract.md#reaching-operators).
//!
//! - `notification_settings`: per person, the address they verified (mail goes only to a
//!   verified address that is still theirs), their time zone and quiet hours.
//! - `notification_preferences`: per person and niche, which urgencies are mailed at once, how
//!   the rest are gathered (hourly or daily digest, or not at all), or nothing.
//! - `notifications`: the mail outbox. One row per (person, question, reason), written in the
//!   transaction that causes it, sent by the mail worker with leases and retries like
//!   `deliveries`; an address verification is a row with no question.
//! - `escalations`: one row per (question, round, step); the unique key makes each step happen
//!   once. `agent_questions.escalate_at` is when the question's next step is due (set at intake
//!   and again when it reopens), and `escalation_step` the last step taken in its round.
//! - `niches.escalate_*_secs`: the wait per urgency before step 1 (step 2 at twice it); null is
//!   never.
//! - `operator_webhooks`: URLs people (or admins, for a niche) register for new and escalated
//!   questions; their events go through `deliveries` (`webhook_id`), with the same retries and
//!   attempt log as the agent's.
//! - `link_keys`: the installation's secret for signed links (address verification,
//!   unsubscribe), made on first use.

use crate::prelude::*;
use crate::sea_query::ExprTrait;

use crate::checks::{one_of as check_one_of, replace_check};
use crate::columns::{foreign_key, id, non_negative, one_of, reference, timestamp, timestamp_null};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000015_reaching_operators"
    }
}

/// The outbox's event types before this migration.
const EVENTS_BEFORE: &[&str] = &[
    "expert_answer.created",
    "agent.research_requested",
    "expert_question.expired",
    "expert_question.dismissed",
    "expert_question.needs_context",
    "expert_answer.verified",
    "expert_answer.rejected",
];

/// The event types added: the agent's escalation event, and the operator webhooks' two.
const EVENTS_ADDED: &[&str] = &[
    "expert_question.escalated",
    "question.waiting",
    "question.escalated",
];

#[derive(DeriveIden, Clone)]
enum NotificationSettings {
    Table,
    Id,
    UserId,
    VerifiedEmail,
    EmailVerifiedAt,
    TimeZone,
    QuietStartMinute,
    QuietEndMinute,
    QuietIncludesHigh,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum NotificationPreferences {
    Table,
    Id,
    UserId,
    NicheId,
    Enabled,
    ImmediateUrgencies,
    Digest,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum Notifications {
    Table,
    Id,
    UserId,
    NicheId,
    QuestionId,
    Reason,
    Status,
    Digest,
    DueAt,
    Attempts,
    ClaimToken,
    ClaimedUntil,
    LastError,
    RetryFrom,
    SentAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum Escalations {
    Table,
    Id,
    QuestionId,
    Round,
    Step,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum OperatorWebhooks {
    Table,
    Id,
    UserId,
    NicheId,
    Url,
    Secret,
    CreatedAt,
    RevokedAt,
}

#[derive(DeriveIden, Clone)]
enum LinkKeys {
    Table,
    Id,
    Purpose,
    Secret,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
    EscalateHighSecs,
    EscalateNormalSecs,
    EscalateLowSecs,
}

#[derive(DeriveIden, Clone)]
enum AgentQuestions {
    Table,
    Status,
    EscalateAt,
    EscalationStep,
}

#[derive(DeriveIden, Clone)]
enum Deliveries {
    Table,
    WebhookId,
}

#[derive(DeriveIden, Clone)]
enum Users {
    Table,
}

/// An optional wait in seconds that, when set, is positive.
fn wait<T: IntoIden + Clone + 'static>(name: T, default: i64) -> ColumnDef {
    ColumnDef::new(name.clone())
        .big_integer()
        .null()
        .default(default)
        .check(Expr::col(name).gt(0))
        .take()
}

/// An optional minute of the day, 0..1440.
fn minute_of_day<T: IntoIden + Clone + 'static>(name: T) -> ColumnDef {
    ColumnDef::new(name.clone())
        .integer()
        .null()
        .check(Expr::col(name.clone()).gte(0).and(Expr::col(name).lt(1440)))
        .take()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the check is changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        replace_check(
            manager,
            "deliveries",
            "event_type",
            &check_one_of("event_type", EVENTS_BEFORE),
            &check_one_of("event_type", &after),
        )
        .await?;

        manager
            .create_table(
                Table::create()
                    .table(NotificationSettings::Table)
                    .col(id(NotificationSettings::Id))
                    .col(reference(NotificationSettings::UserId).unique_key())
                    .col(
                        ColumnDef::new(NotificationSettings::VerifiedEmail)
                            .string()
                            .null(),
                    )
                    .col(timestamp_null(NotificationSettings::EmailVerifiedAt))
                    .col(
                        ColumnDef::new(NotificationSettings::TimeZone)
                            .string()
                            .not_null()
                            .default("UTC"),
                    )
                    .col(minute_of_day(NotificationSettings::QuietStartMinute))
                    .col(minute_of_day(NotificationSettings::QuietEndMinute))
                    .col(
                        ColumnDef::new(NotificationSettings::QuietIncludesHigh)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .col(timestamp(NotificationSettings::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        NotificationSettings::Table,
                        NotificationSettings::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(NotificationPreferences::Table)
                    .col(id(NotificationPreferences::Id))
                    .col(reference(NotificationPreferences::UserId))
                    .col(reference(NotificationPreferences::NicheId))
                    .col(
                        ColumnDef::new(NotificationPreferences::Enabled)
                            .boolean()
                            .not_null()
                            .default(true),
                    )
                    // A comma-separated subset of low, normal, high.
                    .col(
                        ColumnDef::new(NotificationPreferences::ImmediateUrgencies)
                            .string()
                            .not_null()
                            .default("high"),
                    )
                    .col(one_of(
                        NotificationPreferences::Digest,
                        &["hourly", "daily", "off"],
                    ))
                    .col(timestamp(NotificationPreferences::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        NotificationPreferences::Table,
                        NotificationPreferences::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("notification_preferences_person_niche_key")
                    .table(NotificationPreferences::Table)
                    .col(NotificationPreferences::UserId)
                    .col(NotificationPreferences::NicheId)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Notifications::Table)
                    .col(id(Notifications::Id))
                    .col(reference(Notifications::UserId))
                    // Both none for an address verification.
                    .col(ColumnDef::new(Notifications::NicheId).big_integer().null())
                    .col(
                        ColumnDef::new(Notifications::QuestionId)
                            .big_integer()
                            .null(),
                    )
                    .col(one_of(
                        Notifications::Reason,
                        &["waiting", "escalated", "escalated_admin", "verify_email"],
                    ))
                    .col(one_of(
                        Notifications::Status,
                        &["planned", "pending", "sent", "dropped", "exhausted"],
                    ))
                    .col(
                        ColumnDef::new(Notifications::Digest)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .col(timestamp(Notifications::DueAt))
                    .col(non_negative(Notifications::Attempts))
                    .col(ColumnDef::new(Notifications::ClaimToken).string().null())
                    .col(timestamp_null(Notifications::ClaimedUntil))
                    .col(ColumnDef::new(Notifications::LastError).string().null())
                    .col(timestamp(Notifications::RetryFrom))
                    .col(timestamp_null(Notifications::SentAt))
                    .col(timestamp(Notifications::CreatedAt))
                    .col(timestamp(Notifications::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        Notifications::Table,
                        Notifications::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("notifications_once_key")
                    .table(Notifications::Table)
                    .col(Notifications::UserId)
                    .col(Notifications::QuestionId)
                    .col(Notifications::Reason)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("notifications_due_idx")
                    .table(Notifications::Table)
                    .col(Notifications::Status)
                    .col(Notifications::DueAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Escalations::Table)
                    .col(id(Escalations::Id))
                    .col(reference(Escalations::QuestionId))
                    .col(non_negative(Escalations::Round))
                    .col(
                        ColumnDef::new(Escalations::Step)
                            .integer()
                            .not_null()
                            .check(Expr::col(Escalations::Step).is_in([1, 2])),
                    )
                    .col(timestamp(Escalations::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("escalations_once_key")
                    .table(Escalations::Table)
                    .col(Escalations::QuestionId)
                    .col(Escalations::Round)
                    .col(Escalations::Step)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(OperatorWebhooks::Table)
                    .col(id(OperatorWebhooks::Id))
                    .col(reference(OperatorWebhooks::UserId))
                    .col(reference(OperatorWebhooks::NicheId))
                    .col(ColumnDef::new(OperatorWebhooks::Url).string().not_null())
                    // Sealed with ASKLOOP_DATA_KEY when one is set, like agents' secrets.
                    .col(ColumnDef::new(OperatorWebhooks::Secret).string().not_null())
                    .col(timestamp(OperatorWebhooks::CreatedAt))
                    .col(timestamp_null(OperatorWebhooks::RevokedAt))
                    .foreign_key(&mut foreign_key(
                        OperatorWebhooks::Table,
                        OperatorWebhooks::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("operator_webhooks_niche_idx")
                    .table(OperatorWebhooks::Table)
                    .col(OperatorWebhooks::NicheId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(LinkKeys::Table)
                    .col(id(LinkKeys::Id))
                    .col(
                        ColumnDef::new(LinkKeys::Purpose)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(LinkKeys::Secret).string().not_null())
                    .col(timestamp(LinkKeys::CreatedAt))
                    .to_owned(),
            )
            .await?;

        // SQLite takes one column per ALTER TABLE.
        for (column, default) in [
            (Niches::EscalateHighSecs, 15 * 60),
            (Niches::EscalateNormalSecs, 4 * 3600),
            (Niches::EscalateLowSecs, 24 * 3600),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Niches::Table)
                        .add_column(wait(column, default))
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(timestamp_null(AgentQuestions::EscalateAt))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(
                        ColumnDef::new(AgentQuestions::EscalationStep)
                            .integer()
                            .not_null()
                            .default(0)
                            .check(Expr::col(AgentQuestions::EscalationStep).is_in([0, 1, 2])),
                    )
                    .to_owned(),
            )
            .await?;
        // The sweep reads open questions due by now: by status first, so the settled ones (whose
        // step times have all passed) are never scanned.
        manager
            .create_index(
                Index::create()
                    .name("agent_questions_escalate_at_idx")
                    .table(AgentQuestions::Table)
                    .col(AgentQuestions::Status)
                    .col(AgentQuestions::EscalateAt)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .add_column(ColumnDef::new(Deliveries::WebhookId).big_integer().null())
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .drop_column(Deliveries::WebhookId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("agent_questions_escalate_at_idx")
                    .table(AgentQuestions::Table)
                    .to_owned(),
            )
            .await?;
        for column in [AgentQuestions::EscalationStep, AgentQuestions::EscalateAt] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AgentQuestions::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        for column in [
            Niches::EscalateHighSecs,
            Niches::EscalateNormalSecs,
            Niches::EscalateLowSecs,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Niches::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        for table in [
            LinkKeys::Table.into_iden(),
            OperatorWebhooks::Table.into_iden(),
            Escalations::Table.into_iden(),
            Notifications::Table.into_iden(),
            NotificationPreferences::Table.into_iden(),
            NotificationSettings::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        replace_check(
            manager,
            "deliveries",
            "event_type",
            &check_one_of("event_type", &after),
            &check_one_of("event_type", EVENTS_BEFORE),
        )
        .await
    }
}
