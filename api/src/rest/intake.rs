//! `POST /api/v1/internal/expert-questions`: an agent asks (docs/contract.md#asking-a-question).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::signed::verified_agent_json;
use super::views::{
    AskBody, AskResponse, BudgetView, ErrorBody, KnowledgeResult, OverBudgetBody, StoredQuestion,
    seconds,
};
use crate::domain::intake::{AskRequest, NewQuestion};
use crate::error::ServiceError;
use crate::service::knowledge;
use crate::service::questions::intake::{
    IntakeOutcome, receive_question as receive, refusal_reason,
};
use crate::state::AppState;

/// Verify, parse and store an agent's question.
#[utoipa::path(
    post,
    path = "/api/v1/internal/expert-questions",
    tag = "agents",
    operation_id = "ask",
    summary = "Ask a question",
    description = "An agent asks in one of its niches. Idempotent by (niche, externalId): the same \
        id again answers 200 with the question's current status and stores nothing. The bounty \
        is reserved against the niche's monthly budget (402 when it does not fit; nothing \
        stored). See docs/contract.md#asking-a-question.",
    request_body = AskBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 201, description = "Stored.", body = AskResponse),
        (status = 200, description = "Stored before under this external id; nothing stored again.", body = AskResponse),
        (status = 400, description = "A field is missing or wrong (the message names it).", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 402, description = "The bounty does not fit the niche's budget this month; nothing is stored.", body = OverBudgetBody),
        (status = 403, description = "The agent is disabled, or may not ask in this niche.", body = ErrorBody),
        (status = 404, description = "No such niche.", body = ErrorBody),
        (status = 409, description = "The niche is a draft or archived.", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn receive_question(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let now = Utc::now();
    let (signed, asker) = match verified_agent_json(&state, &headers, body, now.timestamp()).await {
        Ok(verified) => verified,
        Err(refusal) => {
            state.metrics.intake_outcome(refusal.reason);
            return refusal.error.into_response();
        }
    };
    // Read once as the typed request; a refused field is the first in the contract's order,
    // and `similar` is checked only after the question's own fields.
    let checked = AskRequest::from_json(&signed.value).and_then(|request| {
        let similar = request.wants_similar();
        NewQuestion::try_from(request).map(|new| (new, similar))
    });
    let (mut new, similar) = match checked {
        Ok((new, Ok(wanted))) => {
            let similar = wanted.then(|| (new.title.clone(), new.question.clone()));
            (new, similar)
        }
        Ok((_, Err(err))) | Err(err) => {
            state.metrics.intake_outcome("bad_input");
            return ServiceError::BadInput(err.0).into_response();
        }
    };
    // Without an id of its own, a question is named by its signed request, so the same bytes
    // under the same signature time (an agent's retry, or a replay) are the same question.
    if new.external_id.is_none() {
        new.external_id = Some(signed_request_id(&signed.digest));
    }
    match receive(&state.db, &state.hint(), &asker, new, now).await {
        Ok(outcome) => {
            state.metrics.intake_outcome(if outcome.duplicate {
                "duplicate"
            } else {
                "created"
            });
            let similar = match similar {
                None => None,
                Some((title, question)) => {
                    match knowledge::similar(
                        &state.db,
                        outcome.niche_id,
                        (&title, &question),
                        None,
                        knowledge::SIMILAR_MAX,
                    )
                    .await
                    {
                        Ok(found) => Some(
                            found
                                .into_iter()
                                .map(|s| KnowledgeResult::of(s.found, Some(s.likeness_bps)))
                                .collect(),
                        ),
                        // Stored already: asking again (the same external id) is safe.
                        Err(err) => return err.into_response(),
                    }
                }
            };
            intake_response(&outcome, similar)
        }
        Err(err) => {
            state.metrics.intake_outcome(refusal_reason(&err));
            err.into_response()
        }
    }
}

/// The external id given to a question that came without one: `signed:<request digest>`.
pub fn signed_request_id(digest: &str) -> String {
    format!("signed:{digest}")
}

fn intake_response(outcome: &IntakeOutcome, similar: Option<Vec<KnowledgeResult>>) -> Response {
    let status = if outcome.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let body = AskResponse {
        stored: true,
        duplicate: outcome.duplicate,
        question: StoredQuestion {
            id: outcome.question_id,
            status: outcome.status.into(),
            expires_at: seconds(outcome.expires_at),
        },
        budget: BudgetView::of(&outcome.budget, Utc::now()),
        similar,
    };
    (status, Json(body)).into_response()
}
