//! The REST shim's wire types: what each route reads and answers, as Rust types, so the
//! OpenAPI document (`rest::openapi`) is generated from the very types the handlers serialise.
//!
//! The request bodies of the signed routes are parsed field by field from JSON (every field's
//! own error message; `rest::signed`); their types here describe that body for the document,
//! and a unit test in `rest::openapi` holds each one to its parser.

use chrono::{DateTime, SecondsFormat, Utc};
use entity::agent_answers::AnswerKind;
use entity::agent_questions::{self, QuestionStatus, Urgency};
use entity::contribution_events::ContributionStatus;
use serde::{Deserialize, Serialize};
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

/// One answer the agent offers to choose from: the wire crate's checked option, one shape for
/// the ask body and the answers shown.
pub use crate::domain::intake::QuestionOption as OptionBody;

/// The intake's body (`POST /api/v1/internal/expert-questions`): the wire crate's typed request,
/// documented as `AskBody`.
pub use crate::domain::intake::AskRequest as AskBody;

/// A question, briefly: which one and where it is.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionRef {
    /// askloop's id.
    pub id: i64,
    /// Where it is now.
    pub status: StatusWord,
}

/// A stored question as the intake answers: which one, where it is, until when.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredQuestion {
    /// askloop's id.
    pub id: i64,
    /// Where it is now (a duplicate's *current* status).
    pub status: StatusWord,
    /// When it stops waiting.
    pub expires_at: String,
}

/// The intake's answer (201 stored, 200 stored before).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskResponse {
    /// Always true: the question is stored.
    pub stored: bool,
    /// Whether it had been stored before under the same external id.
    pub duplicate: bool,
    /// The question.
    pub question: StoredQuestion,
    /// The niche's budget after the intake.
    pub budget: BudgetView,
    /// Asked with `"similar": true`: up to three current knowledge entries like the question,
    /// best first (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similar: Option<Vec<KnowledgeResult>>,
}

/// The research route's body: the wire crate's typed request, documented as `ResearchBody`.
pub use crate::domain::research::ResearchRequest as ResearchBody;

/// The research route's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResearchResponse {
    /// The question, open again.
    pub question: QuestionRef,
}

/// The withdrawal route's body: the wire crate's typed request, documented as `WithdrawBody`.
pub use crate::domain::withdraw::WithdrawRequest as WithdrawBody;

/// What a withdrawal did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WithdrawOutcomeWord {
    /// Withdrawn now: dismissed, its reservation released, out of every queue.
    Withdrawn,
    /// It had been withdrawn before; nothing changed.
    AlreadyWithdrawn,
    /// It was settled before (answered, dismissed by a person, expired); nothing changed.
    Settled,
}

/// The withdrawal route's answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WithdrawalResponse {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id for it, if it gave one.
    pub external_id: Option<String>,
    /// Where it is now: `dismissed` once withdrawn, else as it was.
    pub status: StatusWord,
    /// What this request did.
    pub outcome: WithdrawOutcomeWord,
    /// When it was withdrawn (RFC 3339), if it was.
    pub withdrawn_at: Option<String>,
    /// What this request released of the bounty or task limit, in minor units.
    pub released_minor: i64,
}

impl WithdrawalResponse {
    /// A withdrawal as the signed route and the MCP tool return it.
    pub fn of(withdrawal: &crate::service::questions::withdrawal::Withdrawal) -> Self {
        use crate::service::questions::withdrawal::WithdrawOutcome;
        let question = &withdrawal.question;
        Self {
            question_id: question.id,
            external_id: question.external_id.clone(),
            status: StatusWord::from(question.status),
            outcome: match withdrawal.outcome {
                WithdrawOutcome::Withdrawn => WithdrawOutcomeWord::Withdrawn,
                WithdrawOutcome::AlreadyWithdrawn => WithdrawOutcomeWord::AlreadyWithdrawn,
                WithdrawOutcome::Settled => WithdrawOutcomeWord::Settled,
            },
            withdrawn_at: question.withdrawn_at.map(seconds),
            released_minor: withdrawal.released_minor,
        }
    }
}

/// The lookup route's body: the wire crate's typed request, documented as `LookupBody`.
pub use crate::service::questions::lookup::LookupRequest as LookupBody;

/// The lookup's answer: one entry per external id asked, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct LookupResponse {
    /// The questions.
    pub questions: Vec<LookedUp>,
}

/// One looked-up question: found (with its state) or not.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LookedUp {
    /// The agent asked this question.
    Found(Box<FoundQuestion>),
    /// No question of this agent has that id in the niche.
    Missing(MissingQuestion),
}

/// A question the agent asked.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundQuestion {
    /// The agent's id.
    pub external_id: String,
    /// Always true.
    pub found: bool,
    /// askloop's id.
    pub id: i64,
    /// `question` or `task`.
    #[schema(example = "question")]
    pub kind: String,
    /// A task's budget limit, minor units (absent for a question).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_limit_minor: Option<i64>,
    /// Where it is.
    pub status: StatusWord,
    /// When it stops waiting.
    pub expires_at: DateTime<Utc>,
    /// When it was answered.
    pub answered_at: Option<DateTime<Utc>>,
    /// The answer (a task: its completion); `null` until it is answered. For a question that
    /// takes several answers, the newest of them; `several` has them all.
    pub answer: Option<LookedUpAnswer>,
    /// A question that takes several answers (docs/contract.md#several-answers):
    /// `{wanted, in, agreement, answers: [{answerId, optionId, optionLabel, answer, answeredBy,
    /// confidence, review, answerer}], consensus}`; `consensus` (`{optionId, optionLabel,
    /// agreement, weightedAgreement, required, reached}`) once its places are filled or it
    /// expired with answers in. Absent for one-answer questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub several: Option<serde_json::Value>,
}

/// An id the agent has no question under.
// `deny_unknown_fields` makes the document say "no other fields", so a found question never
// also reads as a missing one.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MissingQuestion {
    /// The agent's id.
    pub external_id: String,
    /// Always false.
    pub found: bool,
}

/// The answer a question was settled with.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LookedUpAnswer {
    /// The answer's id.
    pub answer_id: i64,
    /// The option chosen, if any.
    pub option_id: Option<String>,
    /// The words, if any (a task: its result).
    pub body: Option<String>,
    /// A completed task: what it cost, minor units (absent for a question's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_cost_minor: Option<i64>,
    /// The handle of who answered.
    pub answered_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// Where it stands in review.
    pub review: ReviewWord,
    /// The knowledge entry the answer was given from (an operator pointed to it) or became once
    /// verified, as it is now: absent while it is neither.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knowledge: Option<KnowledgeRef>,
    /// How sure the answerer said they were, in percent (50–100), when they said.
    pub confidence: Option<i32>,
    /// The answerer's record in the niche, as it is now.
    pub answerer: AnswererView,
}

/// How often a person's answers in a niche are verified (docs/contract.md#weighing-answers).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswererView {
    /// Verified answers among those with a verdict, 0–1.
    pub verified_rate: f64,
    /// The Wilson 95 % lower bound of that rate: trust holds at the niche's threshold.
    pub lower_bound: f64,
    /// The Brier score of the confidence they stated (0 is perfect), when they stated any.
    pub brier: Option<f64>,
    /// Answers with a verdict.
    pub answers: u64,
}

impl AnswererView {
    /// The view of a record, rates rounded to four places.
    pub fn of(record: &crate::domain::weighing::Record) -> Self {
        use crate::service::people::weighing::round4;
        AnswererView {
            verified_rate: round4(record.verified_rate),
            lower_bound: round4(record.lower_bound),
            brier: record.brier.map(round4),
            answers: record.answers,
        }
    }
}

/// A knowledge entry an answer relied on or became, as it is now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeRef {
    /// The entry's id.
    pub entry_id: i64,
    /// Its version.
    pub version: i64,
    /// `current`, `superseded` (a newer version replaced it) or `retracted` (withdrawn).
    pub status: KnowledgeStatusWord,
    /// Whether the answer was given by pointing to the entry (an answer from knowledge).
    pub from_knowledge: bool,
}

impl KnowledgeRef {
    /// The entry `entry` as an answer `from_knowledge` or not refers to it.
    pub fn of(entry: &entity::knowledge_entries::Model, from_knowledge: bool) -> Self {
        Self {
            entry_id: entry.id,
            version: entry.version,
            status: entry.status.into(),
            from_knowledge,
        }
    }
}

/// Where an answer stands in review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewWord {
    /// Checked and counted.
    Verified,
    /// Not yet checked by an admin: treat with care.
    Pending,
    /// An admin rejected it: discard it.
    Rejected,
    /// Reversed after it was verified: discard it.
    Reversed,
}

impl From<ContributionStatus> for ReviewWord {
    fn from(status: ContributionStatus) -> Self {
        match status {
            ContributionStatus::Pending => ReviewWord::Pending,
            ContributionStatus::Verified => ReviewWord::Verified,
            ContributionStatus::Rejected => ReviewWord::Rejected,
            ContributionStatus::Reversed => ReviewWord::Reversed,
        }
    }
}

/// `POST /api/v1/internal/revenue-events`: money came in for a niche.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueBody {
    /// The niche.
    pub niche_slug: String,
    /// Unique within the niche (at most 200 characters; not starting with `agent_bounty`).
    pub external_id: String,
    /// `subscription`, `usage`, `sponsorship` or `one_time`.
    #[schema(example = "subscription")]
    pub source_type: String,
    /// Gross amount in minor units (≥ 0).
    #[schema(minimum = 0)]
    pub gross_minor: i64,
    /// Processing costs (default 0).
    #[schema(minimum = 0)]
    pub processing_minor: Option<i64>,
    /// Network costs (default 0).
    #[schema(minimum = 0)]
    pub network_minor: Option<i64>,
    /// Infrastructure costs (default 0).
    #[schema(minimum = 0)]
    pub infra_minor: Option<i64>,
    /// Refunds (default 0).
    #[schema(minimum = 0)]
    pub refund_minor: Option<i64>,
    /// Three letters.
    #[schema(example = "EUR")]
    pub currency: String,
}

/// The revenue route's answer (201 booked, 200 booked before).
#[derive(Debug, Serialize, ToSchema)]
pub struct RevenueResponse {
    /// Whether the external id was booked before (nothing booked again).
    pub duplicate: bool,
    /// The event.
    pub event: RevenueEventView,
    /// How its net was split.
    pub allocations: Vec<AllocationView>,
}

/// A booked revenue event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueEventView {
    /// askloop's id.
    pub id: i64,
    /// The agent's id.
    pub external_id: String,
    /// Its source type.
    pub source_type: String,
    /// Gross, minor units.
    pub gross_minor: i64,
    /// Net: gross minus costs, never below 0.
    pub net_minor: i64,
    /// Three letters.
    pub currency: String,
}

/// One part of a revenue event's net.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationView {
    /// Who receives it; `null` is the platform.
    pub user_id: Option<i64>,
    /// Their share in basis points.
    pub share_bps: i32,
    /// The amount, minor units.
    pub amount_minor: i64,
}

/// `POST /api/v1/internal/anomaly-signals`: a monitor's finding, logged for admins only.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalBody {
    /// The monitor's id for the signal (at most 200 characters); the same one again appends
    /// nothing.
    pub signal_id: String,
    /// `question`, `answer`, `operator` or `agent`.
    pub subject_type: String,
    /// What it is about (string or number; at most 200 characters).
    #[schema(value_type = String)]
    pub subject_id: serde_json::Value,
    /// The kind of finding (at most 200 characters).
    pub kind: String,
    /// `low`, `medium`, `high` or `critical`.
    pub severity: String,
    /// The finding (at most 4000 characters).
    pub finding: String,
}

/// The anomaly route's answer (201 appended, 200 seen before).
#[derive(Debug, Serialize, ToSchema)]
pub struct SignalResponse {
    /// Whether the signal id was seen before.
    pub duplicate: bool,
    /// The logged signal.
    pub signal: SignalRef,
}

/// A logged signal.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalRef {
    /// askloop's id.
    pub id: i64,
    /// The monitor's id.
    pub signal_id: String,
}

/// A question as the member routes show it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionView {
    /// askloop's id.
    pub id: i64,
    /// The agent's id.
    pub external_id: Option<String>,
    /// The title.
    pub title: String,
    /// The question.
    pub question: String,
    /// What the agent found (untrusted text).
    pub context: Option<String>,
    /// The answers to choose from.
    pub options: Vec<OptionBody>,
    /// How urgent.
    pub urgency: UrgencyWord,
    /// Where it is.
    pub status: StatusWord,
    /// The bounty, minor units (a task: its budget limit).
    pub bounty_minor: i64,
    /// `question` or `task`.
    #[schema(example = "question")]
    pub kind: String,
    /// A task's budget limit, minor units (absent for a question).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_limit_minor: Option<i64>,
    /// What a task should deliver (untrusted text; absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliverable: Option<String>,
    /// When it was asked.
    pub created_at: DateTime<Utc>,
    /// When it was answered.
    pub answered_at: Option<DateTime<Utc>>,
    /// When it stops waiting.
    pub expires_at: DateTime<Utc>,
}

impl QuestionView {
    /// `q` for the member routes.
    pub fn of(q: &agent_questions::Model) -> Self {
        QuestionView {
            id: q.id,
            external_id: q.external_id.clone(),
            title: q.title.clone(),
            question: q.question.clone(),
            context: q.context.clone(),
            options: crate::service::questions::answering::options_of(q),
            urgency: q.urgency.into(),
            status: q.status.into(),
            bounty_minor: q.bounty_minor,
            kind: match q.kind {
                agent_questions::ExchangeKind::Question => "question".into(),
                agent_questions::ExchangeKind::Task => "task".into(),
            },
            budget_limit_minor: (q.kind == agent_questions::ExchangeKind::Task)
                .then_some(q.bounty_minor),
            deliverable: q.deliverable.clone(),
            created_at: q.created_at,
            answered_at: q.answered_at,
            expires_at: q.expires_at,
        }
    }
}

/// A page of a niche's questions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuePage {
    /// The niche's slug.
    pub niche: String,
    /// The questions, most urgent and oldest first.
    pub questions: Vec<QuestionView>,
    /// Pass as `after` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// `POST /api/v1/niches/{slug}/questions/{id}/answer`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerBody {
    /// `answered`, `insufficient_context`, `needs_research` or `from_knowledge` (with `entryId`).
    #[schema(example = "answered")]
    pub kind: Option<String>,
    /// `from_knowledge`: the current knowledge entry of the question's niche that answers it.
    pub entry_id: Option<i64>,
    /// The chosen option.
    pub option_id: Option<String>,
    /// The words; completing a task, its result (at most 20,000 characters).
    pub body: Option<String>,
    /// Completing a task (`answered` on a task): what it cost, 0 up to its limit.
    pub actual_cost_minor: Option<i64>,
    /// How sure the answerer is, in percent (50–100); answers only, optional.
    #[schema(minimum = 50, maximum = 100, example = 80)]
    pub confidence: Option<i32>,
}

/// The answer route's answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerResponse {
    /// The stored answer.
    pub answer: AnswerView,
    /// The question after it.
    pub question: QuestionRef,
    /// Points it earned (0 for a decline).
    pub points: i64,
    /// The contribution's review state (answers only).
    pub contribution_status: Option<ReviewWord>,
    /// What to tell the person.
    pub notice: String,
}

/// A stored answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerView {
    /// Its id.
    pub id: i64,
    /// What kind of answer.
    pub kind: AnswerKindWord,
    /// The chosen option.
    pub option_id: Option<String>,
    /// The words.
    pub body: Option<String>,
}

/// The three answers, two of which are not answers (docs/contract.md#answering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKindWord {
    /// An answer: the question closes.
    Answered,
    /// A free decline: the question stays open for someone else.
    InsufficientContext,
    /// Sent back to the agent for research.
    NeedsResearch,
}

impl From<AnswerKind> for AnswerKindWord {
    fn from(kind: AnswerKind) -> Self {
        match kind {
            AnswerKind::Answered => AnswerKindWord::Answered,
            AnswerKind::InsufficientContext => AnswerKindWord::InsufficientContext,
            AnswerKind::NeedsResearch => AnswerKindWord::NeedsResearch,
        }
    }
}

/// The knowledge search's body: the wire crate's typed request, documented as
/// `KnowledgeSearchBody`.
pub use crate::domain::knowledge::KnowledgeSearchRequest as KnowledgeSearchBody;

/// The search's answer: the niche's current entries, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct KnowledgeSearchResponse {
    /// The entries found.
    pub results: Vec<KnowledgeResult>,
}

/// One current knowledge entry found by an agent's search.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeResult {
    /// The entry's id.
    pub entry_id: i64,
    /// Its version (1 for its question's first entry).
    pub version: i64,
    /// The question's title.
    pub title: String,
    /// The answer's words.
    pub answer: Option<String>,
    /// The chosen option's id.
    pub option_id: Option<String>,
    /// The chosen option's label.
    pub option_label: Option<String>,
    /// When it was verified.
    pub verified_at: DateTime<Utc>,
    /// How well it matched (higher is better; comparable only within one response).
    pub score: f64,
    /// For a similar entry: the share of the question's content words it holds, 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likeness: Option<f64>,
}

impl KnowledgeResult {
    /// A found entry as a result.
    pub fn of(found: crate::service::knowledge::Found, likeness_bps: Option<i32>) -> Self {
        Self {
            entry_id: found.entry.id,
            version: found.entry.version,
            title: found.entry.title,
            answer: found.entry.answer,
            option_id: found.entry.option_id,
            option_label: found.entry.option_label,
            verified_at: found.entry.verified_at,
            score: found.score,
            likeness: likeness_bps.map(|bps| f64::from(bps) / 10_000.0),
        }
    }
}

/// The reuse route's body: the wire crate's typed request, documented as
/// `KnowledgeReuseBody`.
pub use crate::domain::knowledge::ReuseRequest as KnowledgeReuseBody;

/// Where an entry is in its life.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KnowledgeStatusWord {
    /// The version to rely on.
    Current,
    /// A newer version replaced it.
    Superseded,
    /// Withdrawn: its answer was rejected or reversed.
    Retracted,
}

impl From<entity::knowledge_entries::KnowledgeStatus> for KnowledgeStatusWord {
    fn from(status: entity::knowledge_entries::KnowledgeStatus) -> Self {
        use entity::knowledge_entries::KnowledgeStatus as S;
        match status {
            S::Current => Self::Current,
            S::Superseded => Self::Superseded,
            S::Retracted => Self::Retracted,
        }
    }
}

/// A reuse as recorded, with the entry relied on as it is now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeReuseResponse {
    /// The reuse's id.
    pub reuse_id: i64,
    /// The agent's id for it.
    pub external_id: String,
    /// The entry relied on.
    pub entry_id: i64,
    /// Its version.
    pub version: i64,
    /// Its status now (a replayed reuse of an entry since replaced or withdrawn says so).
    pub status: KnowledgeStatusWord,
    /// The question's title.
    pub title: String,
    /// The answer's words.
    pub answer: Option<String>,
    /// The chosen option's id.
    pub option_id: Option<String>,
    /// The chosen option's label.
    pub option_label: Option<String>,
    /// How it was verified: `trust` (on arrival) or `review`.
    pub verification: String,
    /// When it was verified.
    pub verified_at: DateTime<Utc>,
    /// What the reuse cost from the niche's budget, minor units (0 when free).
    pub charged_minor: i64,
    /// Whether the cost was given back (the entry was retracted).
    pub refunded: bool,
    /// Whether this external id had been recorded before.
    pub duplicate: bool,
}

impl KnowledgeReuseResponse {
    /// A recorded reuse as the agent reads it.
    pub fn of(reused: crate::service::knowledge::reuse::Reused) -> Self {
        let entry = reused.entry;
        Self {
            reuse_id: reused.reuse.id,
            external_id: reused.reuse.external_id.unwrap_or_default(),
            entry_id: entry.id,
            version: entry.version,
            status: entry.status.into(),
            title: entry.title,
            answer: entry.answer,
            option_id: entry.option_id,
            option_label: entry.option_label,
            verification: match entry.verification {
                entity::knowledge_entries::Verification::Trust => "trust".into(),
                entity::knowledge_entries::Verification::Review => "review".into(),
            },
            verified_at: entry.verified_at,
            charged_minor: reused.reuse.amount_minor,
            refunded: reused.refunded,
            duplicate: reused.duplicate,
        }
    }
}
