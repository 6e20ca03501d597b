//! The question tools: `ask_expert` and `delegate_task` (through the intake the signed route
//! uses), `get_answer`, `add_research`, `withdraw_question` and `list_questions`.

use std::time::Duration;

use chrono::Utc;
use entity::agent_questions;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::arguments::{
    AddResearch, AskExpert, DelegateTask, GetAnswer, ListQuestions, WithdrawQuestion, id_of,
};
use crate::domain::intake::{AskRequest, NewQuestion, option_label};
use crate::domain::text::{CONTEXT_MAX, cap};
use crate::error::ServiceError;
use crate::rest::views::{
    KnowledgeRef, KnowledgeResult, ReviewWord, StatusWord, WithdrawalResponse, seconds,
};
use crate::service::agents::registry::Asker;
use crate::service::questions::intake::{receive_question, refusal_reason};
use crate::service::questions::lookup::{
    self, FoundAnswer, MAX_WAIT_SECS, OwnCursor, OwnQuestion, question_ref,
};
use crate::service::questions::queue::page_size;
use crate::service::questions::research::add_findings;
use crate::service::{knowledge, people::weighing, questions::withdrawal};
use crate::state::AppState;

/// The external id of a question asked without one: `mcp:` and the first 128 bits (hex) of
/// SHA-256 over the agent and the arguments as parsed. The same agent asking with the same
/// arguments — a retried tool call — names the same question.
pub fn derived_external_id<T: Serialize>(asker: &Asker, input: &T) -> String {
    let mut hasher = Sha256::new();
    hasher.update(asker.agent_id().unwrap_or(0).to_string().as_bytes());
    hasher.update(b".");
    // Serialising a struct writes its fields in declaration order: the same arguments always
    // hash alike, whatever order the client sent them in.
    hasher.update(serde_json::to_string(input).unwrap_or_default().as_bytes());
    format!("mcp:{}", hex::encode(&hasher.finalize()[..16]))
}

/// `input` with the `externalId` it is asked under: its own, or (when it gives none, or a blank
/// one) one derived from the arguments, so a retried call is the same question.
pub(super) fn with_external_id<T: Serialize>(
    asker: &Asker,
    mut input: T,
    id: fn(&mut T) -> &mut Option<String>,
) -> T {
    if id(&mut input)
        .as_deref()
        .is_none_or(|given| given.trim().is_empty())
    {
        *id(&mut input) = None;
        let derived = derived_external_id(asker, &input);
        *id(&mut input) = Some(derived);
    }
    input
}

/// `ask_expert`: store the question (under a derived external id when it names none) and, when
/// asked, find similar knowledge. The A2A door asks through here too.
pub async fn ask_expert(
    state: &AppState,
    asker: &Asker,
    mut input: AskExpert,
) -> Result<Value, ServiceError> {
    // Whether to look for similar entries is not part of what the question is.
    let check_similar = input.check_similar.take().unwrap_or(false);
    let input = with_external_id(asker, input, |i| &mut i.external_id);
    // The intake's typed request: the same validation and caps as the signed route.
    let mut asked = intake(state, asker, input.into()).await?;
    if check_similar {
        let stored = asked["questionId"]
            .as_i64()
            .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("intake gave no question id")))?;
        let similar = knowledge::similar_to_question(&state.db, stored).await?;
        asked["similar"] = json!(
            similar
                .into_iter()
                .map(|s| KnowledgeResult::of(s.found, Some(s.likeness_bps)))
                .collect::<Vec<_>>()
        );
    }
    Ok(asked)
}

pub(super) async fn delegate_task(
    state: &AppState,
    asker: &Asker,
    input: DelegateTask,
) -> Result<Value, ServiceError> {
    let input = with_external_id(asker, input, |i| &mut i.external_id);
    intake(state, asker, input.into()).await
}

/// Store what an agent asked or delegated, given as the intake's typed request: the same
/// validation and service as the signed route, counted in the same metric.
async fn intake(
    state: &AppState,
    asker: &Asker,
    request: AskRequest,
) -> Result<Value, ServiceError> {
    let new = match NewQuestion::try_from(request) {
        Ok(new) => new,
        Err(err) => {
            state.metrics.intake_outcome("bad_input");
            return Err(ServiceError::BadInput(err.0));
        }
    };
    let external_id = new.external_id.clone().unwrap_or_default();
    let kind = new.kind;
    // Counted with the REST intakes: the metric is about questions, whichever door they use.
    let outcome = match receive_question(&state.db, &state.hint(), asker, new, Utc::now()).await {
        Ok(outcome) => {
            state.metrics.intake_outcome(if outcome.duplicate {
                "duplicate"
            } else {
                "created"
            });
            outcome
        }
        Err(err) => {
            state.metrics.intake_outcome(refusal_reason(&err));
            return Err(err);
        }
    };
    Ok(json!({
        "questionId": outcome.question_id,
        "externalId": external_id,
        "kind": kind.as_str(),
        "status": StatusWord::from(outcome.status),
        "expiresAt": seconds(outcome.expires_at),
        "duplicate": outcome.duplicate,
    }))
}

/// A question as `get_answer` returns it: status, expiry and, once answered, the answer with
/// its review state.
pub fn answer_json(own: &OwnQuestion) -> Value {
    let question = &own.question;
    let task = question.kind == agent_questions::ExchangeKind::Task;
    let mut result = json!({
        "questionId": question.id,
        "externalId": question.external_id,
        "kind": if task { "task" } else { "question" },
        "status": StatusWord::from(question.status),
        "expiresAt": seconds(question.expires_at),
    });
    if task {
        result["budgetLimitMinor"] = json!(question.bounty_minor);
    }
    if let Some(FoundAnswer {
        answer,
        handle,
        review,
        knowledge,
        answerer,
    }) = &own.answer
    {
        if let Some(entry) = knowledge {
            result["knowledge"] =
                json!(KnowledgeRef::of(entry, answer.knowledge_entry_id.is_some()));
        }
        let fields = [
            ("answer", json!(answer.body)),
            ("optionId", json!(answer.option_id)),
            (
                "optionLabel",
                json!(
                    answer
                        .option_id
                        .as_deref()
                        .and_then(|id| option_label(&question.options, id))
                ),
            ),
            ("review", json!(ReviewWord::from(*review))),
            ("answeredBy", json!(handle)),
            ("answeredAt", json!(seconds(answer.created_at))),
            ("confidence", json!(answer.confidence)),
            ("answerer", weighing::answerer_json(answerer)),
        ];
        for (key, value) in fields {
            result[key] = value;
        }
        if task {
            result["result"] = json!(answer.body);
            result["actualCostMinor"] = json!(answer.actual_cost_minor);
        }
    }
    result
}

pub(super) async fn get_answer(
    state: &AppState,
    asker: &Asker,
    input: GetAnswer,
) -> Result<Value, ServiceError> {
    let which = question_ref(
        id_of("questionId", input.question_id.as_ref())?,
        input.external_id,
        input.niche,
    )?;
    let wait = match input.wait_seconds {
        None | Some(0) => None,
        Some(secs) if secs <= MAX_WAIT_SECS => Some(Duration::from_secs(secs)),
        Some(_) => {
            return Err(ServiceError::BadInput(format!(
                "waitSeconds must be a whole number from 0 to {MAX_WAIT_SECS}"
            )));
        }
    };
    let own = lookup::await_own(&state.db, &state.live, asker, &which, wait).await?;
    let mut result = answer_json(&own);
    if let Some(several) =
        crate::service::questions::consensus::several_json(&state.db, &own.question).await?
    {
        result["several"] = several;
    }
    Ok(result)
}

pub(super) async fn add_research(
    state: &AppState,
    asker: &Asker,
    input: AddResearch,
) -> Result<Value, ServiceError> {
    let which = question_ref(
        id_of("questionId", input.question_id.as_ref())?,
        input.external_id,
        input.niche,
    )?;
    let findings = input.findings.trim();
    if findings.is_empty() {
        return Err(ServiceError::BadInput("findings is required".into()));
    }
    let findings = cap(findings, CONTEXT_MAX);
    let question = lookup::find_own(&state.db, asker, &which).await?;
    let updated = add_findings(&state.db, &state.hint(), &question, &findings, Utc::now()).await?;
    Ok(json!({
        "questionId": updated.id,
        "status": StatusWord::from(updated.status),
        "round": updated.research_round,
    }))
}

pub(super) async fn withdraw_question(
    state: &AppState,
    asker: &Asker,
    input: WithdrawQuestion,
) -> Result<Value, ServiceError> {
    let which = question_ref(
        id_of("questionId", input.question_id.as_ref())?,
        input.external_id,
        input.niche,
    )?;
    let withdrawal = withdrawal::withdraw(
        &state.db,
        &state.hint(),
        asker,
        &which,
        input.reason.as_deref(),
        Utc::now(),
    )
    .await?;
    serde_json::to_value(WithdrawalResponse::of(&withdrawal))
        .map_err(|err| ServiceError::Internal(anyhow::anyhow!("withdraw_question result: {err}")))
}

pub(super) async fn list_questions(
    state: &AppState,
    asker: &Asker,
    input: ListQuestions,
) -> Result<Value, ServiceError> {
    let first = page_size(input.first)?;
    let after = input.after.as_deref().map(OwnCursor::decode).transpose()?;
    let page =
        lookup::list_own(&state.db, asker, input.status.map(Into::into), first, after).await?;
    let questions: Vec<Value> = page
        .items
        .iter()
        .map(|(q, niche)| {
            json!({
                "questionId": q.id,
                "externalId": q.external_id,
                "niche": niche,
                "title": q.title,
                "status": StatusWord::from(q.status),
                "createdAt": seconds(q.created_at),
                "expiresAt": seconds(q.expires_at),
                "answeredAt": q.answered_at.map(seconds),
            })
        })
        .collect();
    Ok(json!({
        "questions": questions,
        "nextCursor": page.next.map(OwnCursor::encode),
    }))
}
