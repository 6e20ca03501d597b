//! The mail outbox: one row per (person, question, reason), sent by the mail worker.

use sea_orm::entity::prelude::*;

/// One row of `notifications`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notifications")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Who is told.
    pub user_id: i64,
    /// The question's niche (none for an address verification).
    pub niche_id: Option<i64>,
    /// The question (none for an address verification).
    pub question_id: Option<i64>,
    /// `waiting` (a new question), `escalated` (step 1), `escalated_admin` (step 2) or
    /// `verify_email`.
    pub reason: String,
    /// `planned` (not yet placed by the person's preferences), `pending`, `sent`, `dropped`
    /// (nothing to say any more) or `exhausted` (retries ran out).
    pub status: String,
    /// Whether it goes out in a digest rather than on its own.
    pub digest: bool,
    /// When it may next be sent.
    pub due_at: DateTimeUtc,
    /// Attempts made so far.
    pub attempts: i64,
    /// The current sender's claim, while one is sending it.
    pub claim_token: Option<String>,
    /// Until when the claim holds.
    pub claimed_until: Option<DateTimeUtc>,
    /// The last attempt's error, if any.
    pub last_error: Option<String>,
    /// Retries stop about three days after this.
    pub retry_from: DateTimeUtc,
    /// When the mail server took it.
    pub sent_at: Option<DateTimeUtc>,
    /// When it was written.
    pub created_at: DateTimeUtc,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
