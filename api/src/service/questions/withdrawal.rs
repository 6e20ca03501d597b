//! An agent withdraws a question it no longer needs (docs/contract.md#withdrawal): the signed
//! route, MCP `withdraw_question` and `tasks/cancel`, A2A `CancelTask`, the SDK and the CLI all
//! end here.
//!
//! A waiting question (open, or with the agent for research) becomes `dismissed` with the reason
//! "withdrawn by the agent" and `withdrawn_at` set, in the one conditional update every closing
//! goes through ([`close_if_waiting`]), so a person's answer racing the withdrawal either lands
//! first (the question is answered and stays so) or is refused as settled. What is still
//! reserved of its bounty (or a task's limit) is released; the live feed sees the audit row and
//! takes it out of every queue; mail and operator webhooks about it are dropped when they come
//! to be sent, since it no longer waits. Withdrawing again is a no-op that says so, and a
//! question already settled (answered, dismissed by a person, expired) stays as it is.

use chrono::{DateTime, Utc};
use entity::agent_questions::{self, QuestionStatus};
use sea_orm::EntityTrait;
use serde_json::json;

use crate::db::Db;
use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::agents::outbox::{EventType, NewEvent};
use crate::service::agents::registry::Asker;
use crate::service::audit::{Actor, AuditEntry};
use crate::service::questions::answering::{Closing, close_if_waiting, record_closing};
use crate::service::questions::lookup::{QuestionRef, find_own};

/// The reason a withdrawn question carries, whatever the agent adds.
pub const WITHDRAWN_REASON: &str = "withdrawn by the agent";

/// The longest reason an agent may give, in characters.
pub const REASON_MAX: usize = 500;

/// What a withdrawal came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithdrawOutcome {
    /// Withdrawn now.
    Withdrawn,
    /// It had been withdrawn already; nothing changed.
    AlreadyWithdrawn,
    /// It was settled before (answered, dismissed by a person, expired); nothing changed.
    Settled,
}

/// A withdrawal's result: the question as it stands after it, and what happened.
#[derive(Debug, Clone)]
pub struct Withdrawal {
    /// The question as it is now.
    pub question: agent_questions::Model,
    /// What the request did.
    pub outcome: WithdrawOutcome,
    /// What was released of its bounty or task limit, in minor units.
    pub released_minor: i64,
}

/// The agent's own reason, trimmed (empty is none); refused when too long or holding control
/// characters.
pub fn agent_reason(reason: Option<&str>) -> Result<Option<String>, ServiceError> {
    let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if crate::domain::text::char_len(reason) > REASON_MAX {
        return Err(ServiceError::BadInput(format!(
            "a reason is at most {REASON_MAX} characters"
        )));
    }
    crate::domain::text::checked("reason", reason, crate::domain::text::TextKind::Lines)?;
    Ok(Some(reason.to_owned()))
}

/// Nothing to withdraw: `question` is settled (or its time ran out and the expiry sweep has
/// yet to say so, when it reads as expired already).
fn settled(mut question: agent_questions::Model, now: DateTime<Utc>) -> Withdrawal {
    if agent_questions::WAITING.contains(&question.status) && question.expires_at <= now {
        question.status = QuestionStatus::Expired;
    }
    let outcome = if question.withdrawn_at.is_some() {
        WithdrawOutcome::AlreadyWithdrawn
    } else {
        WithdrawOutcome::Settled
    };
    Withdrawal {
        question,
        outcome,
        released_minor: 0,
    }
}

/// `asker` withdraws its question `which`, saying why if it likes (see the module). Another
/// agent's question is not found, exactly like one that does not exist.
pub async fn withdraw(
    db: &Db,
    hint: &ChangeHint,
    asker: &Asker,
    which: &QuestionRef,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Withdrawal, ServiceError> {
    let reason = agent_reason(reason)?;
    let question = find_own(db, asker, which).await?;
    if !matches!(
        question.status,
        QuestionStatus::Open | QuestionStatus::Researching
    ) {
        return Ok(settled(question, now));
    }
    let txn = db.begin_write().await?;
    let Some(closed) = close_if_waiting(&txn, question.id, Closing::Withdrawn, now).await? else {
        // Settled meanwhile, or its time ran out (the expiry sweep will say so).
        let current = agent_questions::Entity::find_by_id(question.id)
            .one(&txn)
            .await?
            .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question vanished")))?;
        txn.rollback().await?;
        return Ok(settled(current, now));
    };
    let actor = Actor::Agent(question.agent_id.clone());
    let released = record_closing(
        &txn,
        &question,
        AuditEntry::about_question(
            &actor,
            "question.withdrawn",
            &question,
            json!({ "reason": WITHDRAWN_REASON, "agentReason": reason }),
        ),
        NewEvent::about_question(
            EventType::QuestionDismissed,
            &question,
            None,
            json!({
                "dismissedBy": null,
                "withdrawn": true,
                "reason": WITHDRAWN_REASON,
                "agentReason": reason,
            }),
        ),
        now,
    )
    .await?;
    txn.commit().await?;
    hint.changed();
    Ok(Withdrawal {
        question: closed,
        outcome: WithdrawOutcome::Withdrawn,
        released_minor: released,
    })
}
