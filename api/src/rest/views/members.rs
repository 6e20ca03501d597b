//! The member routes: a niche's questions as the queue shows them, and the answer route's body and
//! answer.

use chrono::{DateTime, Utc};
use entity::agent_answers::AnswerKind;
use entity::agent_questions;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{OptionBody, QuestionRef, ReviewWord, StatusWord, UrgencyWord};

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
