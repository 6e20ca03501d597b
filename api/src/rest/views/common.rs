//! The words every REST route shares: a question's status and urgency, how a time is written, the
//! error body and its stable codes, and a niche's budget as the 402 body shows it.

use chrono::{DateTime, SecondsFormat, Utc};
use entity::agent_questions::{QuestionStatus, Urgency};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::ledger::{Budget, BudgetState, resets_at};
use crate::error::ErrorCode;

/// Where a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusWord {
    /// Waiting for an answer.
    Open,
    /// Sent back to the agent for research; waiting for it.
    Researching,
    /// Answered (settled).
    Answered,
    /// Dismissed by an operator (settled).
    Dismissed,
    /// Its time ran out (settled).
    Expired,
}

impl From<QuestionStatus> for StatusWord {
    fn from(status: QuestionStatus) -> Self {
        match status {
            QuestionStatus::Open => StatusWord::Open,
            QuestionStatus::Researching => StatusWord::Researching,
            QuestionStatus::Answered => StatusWord::Answered,
            QuestionStatus::Dismissed => StatusWord::Dismissed,
            QuestionStatus::Expired => StatusWord::Expired,
        }
    }
}

/// How urgent the agent says a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UrgencyWord {
    /// Can wait.
    Low,
    /// The default.
    Normal,
    /// Someone should look now.
    High,
}

impl From<Urgency> for UrgencyWord {
    fn from(urgency: Urgency) -> Self {
        match urgency {
            Urgency::Low => UrgencyWord::Low,
            Urgency::Normal => UrgencyWord::Normal,
            Urgency::High => UrgencyWord::High,
        }
    }
}

/// A time as the signed routes write it: RFC 3339, UTC, whole seconds.
pub fn seconds(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Every error body: `{error, code, reason?, retryAfterSeconds?}` (docs/contract.md#errors).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// What went wrong, for a person.
    #[schema(example = "title is required")]
    pub error: String,
    /// The stable code to match on.
    pub code: ErrorCode,
    /// The finer, stable reason behind some codes (e.g. `NOT_AWAITING_RESEARCH`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With reason `TEMPORARILY_UNAVAILABLE` (the database is out of reach for now): how long to
    /// wait before sending the same request again, as the `Retry-After` header says too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
}

/// The stable error codes REST answers with: [`ErrorCode::SERVICE`], the one list in
/// `crate::error`, so the document cannot name a code the services do not have.
impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("The stable error codes."))
            .enum_values(Some(ErrorCode::SERVICE.iter().map(|code| code.as_str())))
            .into()
    }
}

impl ToSchema for ErrorCode {}

/// The 402 body: the bounty does not fit the niche's budget this month.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverBudgetBody {
    /// Always `over budget`.
    #[schema(example = "over budget")]
    pub error: String,
    /// Always `OVER_BUDGET`.
    pub code: ErrorCode,
    /// What the budget can still take, in minor units.
    pub remaining_minor: i64,
    /// When the budget starts again (the first of next month, UTC).
    pub resets_at: String,
}

/// A niche's budget this month (docs/contract.md#budgets-and-bounties).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetView {
    /// The monthly limit in minor units; `null` is no limit.
    pub limit_minor: Option<i64>,
    /// Charged this month.
    pub spent_minor: i64,
    /// Reserved and neither charged nor released yet.
    pub reserved_minor: i64,
    /// What is left; `null` without a limit.
    pub remaining_minor: Option<i64>,
    /// How much is left, in a word.
    pub state: BudgetWord,
    /// When the month's budget starts again.
    pub resets_at: String,
}

/// How much of a budget is left.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BudgetWord {
    /// Plenty (or no limit).
    Ample,
    /// Less than a fifth.
    Tight,
    /// Nothing.
    Exhausted,
}

impl BudgetView {
    /// `budget` as the REST shim shows it.
    pub fn of(budget: &Budget, now: DateTime<Utc>) -> Self {
        BudgetView {
            limit_minor: budget.limit,
            spent_minor: budget.spent,
            reserved_minor: budget.reserved,
            remaining_minor: budget.remaining(),
            state: match budget.state() {
                BudgetState::Ample => BudgetWord::Ample,
                BudgetState::Tight => BudgetWord::Tight,
                BudgetState::Exhausted => BudgetWord::Exhausted,
            },
            resets_at: seconds(resets_at(now)),
        }
    }
}
