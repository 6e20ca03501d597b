//! `POST /api/v1/internal/expert-questions`: an agent asks (docs/contract.md#asking-a-question).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;

use super::signed::verified_agent_json;
use super::views::status_word;
use crate::domain::intake::parse_new_question;
use crate::error::ServiceError;
use crate::service::intake::{IntakeOutcome, receive_question as receive, refusal_reason};
use crate::state::AppState;

/// Verify, parse and store an agent's question.
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
    let mut new = match parse_new_question(&signed.value) {
        Ok(new) => new,
        Err(err) => {
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
            intake_response(&outcome)
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

fn intake_response(outcome: &IntakeOutcome) -> Response {
    let status = if outcome.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let body = json!({
        "stored": true,
        "duplicate": outcome.duplicate,
        "question": {
            "id": outcome.question_id,
            "status": status_word(outcome.status),
            "expiresAt": outcome.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
        "budget": super::views::budget_json(&outcome.budget, chrono::Utc::now()),
    });
    (status, Json(body)).into_response()
}
