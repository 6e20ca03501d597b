//! `POST /api/v1/internal/expert-questions/lookup`: an agent reads its questions by external id
//! (signed), optionally waiting up to 55 s for one of them to change.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::signed::verified_json;
use crate::service::lookup;
use crate::startup::AppState;

/// Verify, parse and answer a lookup.
pub async fn lookup(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let value = match verified_json(
        &state.config.signing,
        &headers,
        body,
        Utc::now().timestamp(),
    ) {
        Ok(value) => value,
        Err(refusal) => return refusal.error.into_response(),
    };
    let request = match lookup::parse(&value) {
        Ok(request) => request,
        Err(err) => return err.into_response(),
    };
    match lookup::lookup(&state.db, &state.live, request).await {
        Ok(found) => Json(found).into_response(),
        Err(err) => err.into_response(),
    }
}
