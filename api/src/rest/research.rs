//! `POST /api/v1/internal/research-results`: research comes back for a question (signed).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;

use super::signed::verified_json;
use super::views::status_word;
use crate::service::research;
use crate::startup::AppState;

/// Verify, parse and apply research results.
pub async fn research_returned(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let now = Utc::now();
    let value = match verified_json(&state.config.signing, &headers, body, now.timestamp()) {
        Ok(value) => value,
        Err(refusal) => return refusal.error.into_response(),
    };
    let result = match research::parse(&value) {
        Ok(result) => result,
        Err(err) => return err.into_response(),
    };
    match research::research_returned(&state.db, result, now).await {
        Ok(question) => {
            state.live.changed();
            Json(json!({
                "question": { "id": question.id, "status": status_word(question.status) },
            }))
            .into_response()
        }
        Err(err) => err.into_response(),
    }
}
