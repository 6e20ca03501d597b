//! JSON shapes of the REST shim (its own types, not the entities).

use entity::agent_questions::{self, QuestionStatus};
use serde_json::{Value, json};

/// The wire word of a question status.
pub fn status_word(status: QuestionStatus) -> &'static str {
    match status {
        QuestionStatus::Open => "open",
        QuestionStatus::Researching => "researching",
        QuestionStatus::Answered => "answered",
        QuestionStatus::Dismissed => "dismissed",
        QuestionStatus::Expired => "expired",
    }
}

/// A question as the REST shim shows it.
pub fn question_json(q: &agent_questions::Model) -> Value {
    json!({
        "id": q.id,
        "externalId": q.external_id,
        "title": q.title,
        "question": q.question,
        "context": q.context,
        "options": q.options,
        "urgency": q.urgency,
        "status": status_word(q.status),
        "bountyMinor": q.bounty_minor,
        "createdAt": q.created_at,
        "answeredAt": q.answered_at,
        "expiresAt": q.expires_at,
    })
}

/// A niche's budget as the REST shim shows it (docs/contract.md#budgets-and-bounties).
pub fn budget_json(
    budget: &crate::domain::ledger::Budget,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    use crate::domain::ledger::{BudgetState, resets_at};
    json!({
        "limitMinor": budget.limit,
        "spentMinor": budget.spent,
        "reservedMinor": budget.reserved,
        "remainingMinor": budget.remaining(),
        "state": match budget.state() {
            BudgetState::Ample => "AMPLE",
            BudgetState::Tight => "TIGHT",
            BudgetState::Exhausted => "EXHAUSTED",
        },
        "resetsAt": resets_at(now).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    })
}
