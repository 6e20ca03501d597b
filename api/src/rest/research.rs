//! `POST /api/v1/internal/research-results`: research comes back for a question (signed).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;

use super::signed::agent_signed_and_parsed;
use super::views::status_word;
use crate::service::research;
use crate::state::AppState;

/// Verify, parse and apply research results.
pub async fn research_returned(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let now = Utc::now();
    let (result, asker) =
        match agent_signed_and_parsed(&state, &headers, body, research::parse).await {
            Ok(parsed) => parsed,
            Err(refused) => return refused.into_response(),
        };
    match research::research_returned(&state.db, &state.hint(), &asker, result, now).await {
        Ok(question) => Json(json!({
            "question": { "id": question.id, "status": status_word(question.status) },
        }))
        .into_response(),
        Err(err) => err.into_response(),
    }
}
