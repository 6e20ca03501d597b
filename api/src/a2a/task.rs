//! The A2A task a question is (docs/contract.md#a2a): its id, its state, and the answer as its
//! artifact.
//!
//! A task is not stored apart from its question: its id is `question-<id>` (the same id MCP's
//! tasks use), its context id the same, and its state is read from the question each time, so
//! any instance answers for it and nothing can drift. States follow docs/contract.md#a2a: open →
//! `WORKING`; researching → `INPUT_REQUIRED` (with an agent message saying what to send);
//! answered → `COMPLETED`; dismissed → `REJECTED`, or `CANCELED` when its agent withdrew it;
//! expired → `FAILED`.
//!
//! A completed task carries one artifact, `answer`: a text part with the answer's words (when
//! it has any) and a data part with what `get_answer` returns over MCP — the option chosen, the
//! review state, the confidence when given, a task's result and actual cost. The review state is
//! read fresh, so a later verdict shows in the same artifact.

use entity::agent_questions;
use serde_json::{Value, json};

use crate::mcp::tools::answer_json;
use crate::service::questions::lookup::OwnQuestion;

pub use crate::service::agents::a2a_tasks::{TaskState, task_id, timestamp};

/// The question a task id names, if it names one.
pub fn question_of(task_id: &str) -> Option<i64> {
    task_id
        .strip_prefix("question-")
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|id| id.parse().ok())
        .filter(|id| *id > 0)
}

/// What the status message of a task in `state` says, if it says anything.
fn status_text(question: &agent_questions::Model, state: TaskState) -> Option<String> {
    match state {
        TaskState::InputRequired => Some(
            "A person asked for more research before answering: reply on this task with your \
             findings (a text part)."
                .to_owned(),
        ),
        TaskState::Working => Some(format!(
            "Waiting for a person; the question expires at {}.",
            timestamp(question.expires_at)
        )),
        TaskState::Rejected => Some("Dismissed by a person: not answered.".to_owned()),
        TaskState::Canceled => Some("Withdrawn by this agent.".to_owned()),
        TaskState::Failed => Some("Nobody answered before the question expired.".to_owned()),
        TaskState::Completed => None,
    }
}

/// `question` (with its answer) as an A2A `Task`.
pub fn task_json(own: &OwnQuestion) -> Value {
    let question = &own.question;
    let state = TaskState::of(question);
    let id = task_id(question.id);
    let mut status = json!({
        "state": state.as_str(),
        "timestamp": timestamp(question.updated_at),
    });
    if let Some(text) = status_text(question, state) {
        status["message"] = json!({
            "messageId": format!("{id}-status-{}", question.updated_at.timestamp_millis()),
            "role": "ROLE_AGENT",
            "taskId": id,
            "contextId": id,
            "parts": [{"text": text}],
        });
    }
    let mut task = json!({
        "id": id,
        "contextId": id,
        "status": status,
        "metadata": {
            "questionId": question.id,
            "externalId": question.external_id,
            "expiresAt": timestamp(question.expires_at),
        },
    });
    if let Some(artifact) = answer_artifact(own) {
        task["artifacts"] = json!([artifact]);
    }
    task
}

/// The answer as an artifact, once the question has one.
pub fn answer_artifact(own: &OwnQuestion) -> Option<Value> {
    let found = own.answer.as_ref()?;
    let mut parts = Vec::new();
    if let Some(words) = found.answer.body.as_deref().filter(|w| !w.is_empty()) {
        parts.push(json!({"text": words}));
    }
    parts.push(json!({"data": answer_json(own), "mediaType": "application/json"}));
    Some(json!({
        "artifactId": format!("answer-{}", found.answer.id),
        "name": "answer",
        "description": "The answer a person gave, with its review state (pending until an admin \
                        checks it; rejected or reversed means discard it).",
        "parts": parts,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_names_a_question_only_in_its_one_spelling() {
        assert_eq!(question_of(&task_id(42)), Some(42));
        for nonsense in [
            "question-",
            "question-0",
            "question--4",
            "question-+4",
            "question-4x",
            "42",
            "question-99999999999999999999",
        ] {
            assert_eq!(question_of(nonsense), None, "{nonsense}");
        }
    }
}
