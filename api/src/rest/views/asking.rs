//! The agent's question routes: the intake (ask), research, withdrawal and lookup — their bodies
//! (the wire crate's typed requests) and their answers.

use chrono::{DateTime, Utc};
use entity::contribution_events::ContributionStatus;
use serde::Serialize;
use utoipa::ToSchema;

use super::{BudgetView, KnowledgeResult, KnowledgeStatusWord, StatusWord, seconds};

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
