//! The envelope askloop sends and the payload of each event type
//! (docs/contract.md#events-for-the-agent).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::question::Review;

/// One event as askloop sends it:
///
/// ```json
/// {"id": "evt_…", "type": "expert_answer.created", "version": 1,
///  "occurredAt": "2026-11-29T10:00:00.000Z", "producer": "askloop",
///  "nicheId": 1, "userId": 2, "payload": {…}}
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The envelope id: the same across retries and redeliveries, so dedupe on it. Under
    /// Standard Webhooks it is also the `webhook-id`.
    pub id: String,
    /// What happened (`expert_answer.created`, …); [`Event::data`] reads it with its payload.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The envelope's version (1).
    pub version: u32,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
    /// Who sent it (`askloop`).
    pub producer: String,
    /// askloop's id of the niche.
    pub niche_id: i64,
    /// askloop's id of the person who caused it, if a person did.
    pub user_id: Option<i64>,
    /// The event's own fields, as sent.
    pub payload: Value,
}

/// An event's type with its payload, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventData {
    /// `expert_answer.created`: the question was answered.
    AnswerCreated(AnswerCreated),
    /// `expert_answer.verified`: an admin verified a pending answer.
    AnswerVerified(AnswerVerified),
    /// `expert_answer.rejected`: an admin rejected a pending answer or reversed a verified one;
    /// discard it.
    AnswerRejected(AnswerRejected),
    /// `agent.research_requested`: an operator sent the question back for research.
    ResearchRequested(ResearchRequested),
    /// `expert_question.expired`: its time ran out.
    QuestionExpired(QuestionExpired),
    /// `expert_question.dismissed`: it was dismissed.
    QuestionDismissed(QuestionDismissed),
    /// `expert_question.needs_context`: enough people declined it for lack of context.
    NeedsContext(NeedsContext),
    /// `task.completed`: someone completed a delegated task, at an actual cost.
    TaskCompleted(TaskCompleted),
    /// A type this version of the crate does not know: read [`Event::payload`].
    Other,
}

impl Event {
    /// The payload, typed by the event's type. An error when a known type's payload does not
    /// have its fields.
    pub fn data(&self) -> Result<EventData, serde_json::Error> {
        fn read<T: DeserializeOwned>(payload: &Value) -> Result<T, serde_json::Error> {
            T::deserialize(payload)
        }
        let payload = &self.payload;
        Ok(match self.event_type.as_str() {
            "expert_answer.created" => EventData::AnswerCreated(read(payload)?),
            "expert_answer.verified" => EventData::AnswerVerified(read(payload)?),
            "expert_answer.rejected" => EventData::AnswerRejected(read(payload)?),
            "agent.research_requested" => EventData::ResearchRequested(read(payload)?),
            "expert_question.expired" => EventData::QuestionExpired(read(payload)?),
            "expert_question.dismissed" => EventData::QuestionDismissed(read(payload)?),
            "expert_question.needs_context" => EventData::NeedsContext(read(payload)?),
            "task.completed" => EventData::TaskCompleted(read(payload)?),
            _ => EventData::Other,
        })
    }
}

/// `expert_answer.created`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerCreated {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// askloop's id of the answer.
    pub answer_id: i64,
    /// The answer's text, if it has one.
    pub answer: Option<String>,
    /// The option chosen, if any.
    pub option_id: Option<String>,
    /// That option's label.
    pub option_label: Option<String>,
    /// The handle of the person who answered.
    pub answered_by: String,
    /// `verified` (the answerer is trusted) or `pending` (weigh it accordingly).
    pub review: Review,
}

/// `task.completed`: the agent was charged `actual_cost_minor`, and the rest of the limit was
/// released.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompleted {
    /// askloop's id of the task.
    pub question_id: i64,
    /// The agent's id of the task.
    pub external_id: Option<String>,
    /// askloop's id of the completion (verdicts name it, as they name an answer).
    pub answer_id: i64,
    /// The result.
    pub result: Option<String>,
    /// What it cost, minor units.
    pub actual_cost_minor: i64,
    /// The most it could have cost, minor units.
    pub budget_limit_minor: i64,
    /// The handle of the person who completed it.
    pub completed_by: String,
    /// `verified` or `pending` (weigh it accordingly).
    pub review: Review,
}

/// `expert_answer.verified`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerVerified {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// askloop's id of the answer.
    pub answer_id: i64,
}

/// `expert_answer.rejected`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerRejected {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// askloop's id of the answer to discard.
    pub answer_id: i64,
    /// The admin's note.
    pub note: Option<String>,
    /// What the answer was before: `pending` (rejected) or `verified` (reversed).
    pub previous_review: Review,
}

/// `agent.research_requested`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchRequested {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// What the operator asks for.
    pub note: Option<String>,
}

/// `expert_question.expired`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionExpired {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// When it expired.
    pub expired_at: DateTime<Utc>,
}

/// `expert_question.dismissed`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionDismissed {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// The handle of the person who dismissed it.
    pub dismissed_by: String,
    /// Why, if they said.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `expert_question.needs_context`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NeedsContext {
    /// askloop's id of the question.
    pub question_id: i64,
    /// The agent's id of the question.
    pub external_id: Option<String>,
    /// The research round the declines are in.
    pub round: i64,
    /// How many declined it for lack of context this round.
    pub declines: i64,
}
