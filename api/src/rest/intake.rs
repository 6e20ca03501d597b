//! `POST /api/v1/internal/expert-questions`: an agent asks (docs/contract.md#asking-a-question).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;

use super::signed::verified_json;
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
    let value = match verified_json(&state.config.signing, &headers, body, now.timestamp()) {
        Ok(value) => value,
        Err(refusal) => {
            state.metrics.intake_outcome(refusal.reason);
            return refusal.error.into_response();
        }
    };
    let new = match parse_new_question(&value) {
        Ok(new) => new,
        Err(err) => {
            state.metrics.intake_outcome("bad_input");
            return ServiceError::BadInput(err.0).into_response();
        }
    };
    match receive(&state.db, &state.hint(), new, now).await {
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
