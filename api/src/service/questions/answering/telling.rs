//! What a change to a question writes beside the change itself, in its transaction: the audit
//! row and the agent's event (docs/contract.md#events-for-the-agent), and for a question closed
//! without an answer the release of what is still reserved for it. One function per shape, so
//! every path that dismisses, withdraws, expires or turns a question writes the same rows in the
//! same order.

use chrono::{DateTime, Utc};
use entity::agent_questions;
use entity::budget_entries::BudgetEntryKind;

use super::budget_audit;
use crate::db::WriteTxn;
use crate::error::ServiceError;
use crate::service::agents::outbox::{self, NewEvent};
use crate::service::audit::{self, AuditEntry};
use crate::service::money::budget;

/// Record `audit`, then queue `event` for the agent.
pub async fn audit_and_tell(
    txn: &WriteTxn,
    audit: AuditEntry<'_>,
    event: NewEvent,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    audit::record(txn, audit, now).await?;
    outbox::enqueue(txn, event, now).await?;
    Ok(())
}

/// After `question` closed without an answer (dismissed, withdrawn, expired): record `audit`,
/// release what is still reserved of its bounty or task limit (with that release's own audit
/// row, by the same actor), then queue `event` for the agent. How much was released, in minor
/// units.
pub async fn record_closing(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    audit: AuditEntry<'_>,
    event: NewEvent,
    now: DateTime<Utc>,
) -> Result<i64, ServiceError> {
    let actor = audit.actor;
    audit::record(txn, audit, now).await?;
    let released = budget::settle(
        txn,
        question.niche_id,
        question.id,
        BudgetEntryKind::Release,
        now,
    )
    .await?;
    if let Some(amount) = released {
        budget_audit(txn, actor, question, "budget.released", amount, now).await?;
    }
    outbox::enqueue(txn, event, now).await?;
    Ok(released.unwrap_or(0))
}
