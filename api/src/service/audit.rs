//! Appending to the audit log, inside the caller's transaction so the record and the change it
//! records commit (or vanish) together.

use chrono::{DateTime, Utc};
use entity::{agent_questions, audit_log};
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbBackend, DbErr, EntityTrait, NotSet};

use crate::db::{WriteTxn, bulk};
use serde_json::Value;

/// Who did something.
#[derive(Debug, Clone)]
pub enum Actor {
    /// A signed-in person.
    User(i64),
    /// An agent over the signed routes (its `agentId`, when it sent one).
    Agent(Option<String>),
    /// An operator at the command line.
    Cli,
    /// askloop itself (workers, sweepers).
    System,
}

impl Actor {
    fn label(&self) -> String {
        match self {
            Actor::User(id) => format!("user:{id}"),
            Actor::Agent(Some(id)) => format!("agent:{id}"),
            Actor::Agent(None) => "agent".to_owned(),
            Actor::Cli => "cli".to_owned(),
            Actor::System => "system".to_owned(),
        }
    }
}

/// One audit entry.
pub struct AuditEntry<'a> {
    /// Who.
    pub actor: &'a Actor,
    /// What happened, as `subject.verb` (`question.created`).
    pub action: &'a str,
    /// The kind of subject (`question`, `niche`, `user`, `member`, `api_key`).
    pub subject_type: &'a str,
    /// The subject's id.
    pub subject_id: i64,
    /// The niche, when there is one.
    pub niche_id: Option<i64>,
    /// Details worth keeping.
    pub detail: Value,
}

impl<'a> AuditEntry<'a> {
    /// `actor` did `action` to `question`.
    pub fn about_question(
        actor: &'a Actor,
        action: &'a str,
        question: &agent_questions::Model,
        detail: Value,
    ) -> Self {
        Self {
            actor,
            action,
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail,
        }
    }
}

/// Append `entry` at `at`.
pub async fn record(
    conn: &WriteTxn,
    entry: AuditEntry<'_>,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    audit_log::Entity::insert(row(entry, at))
        .exec_without_returning(conn)
        .await?;
    Ok(())
}

/// The row `entry` at `at` becomes, for writers that append several at once ([`record_all`]).
pub fn row(entry: AuditEntry<'_>, at: DateTime<Utc>) -> audit_log::ActiveModel {
    audit_log::ActiveModel {
        id: NotSet,
        actor: Set(entry.actor.label()),
        action: Set(entry.action.to_owned()),
        subject_type: Set(entry.subject_type.to_owned()),
        subject_id: Set(entry.subject_id.to_string()),
        niche_id: Set(entry.niche_id),
        detail: Set(entry.detail),
        created_at: Set(at),
    }
}

/// Append `rows` in one statement, in their order (nothing for none); on PostgreSQL one statement
/// whatever their number ([`bulk`]).
pub async fn record_all(conn: &WriteTxn, rows: Vec<audit_log::ActiveModel>) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    if conn.get_database_backend() == DbBackend::Postgres {
        conn.execute_raw(bulk::insert_rows(&rows, "")?).await?;
    } else {
        audit_log::Entity::insert_many(rows)
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}
