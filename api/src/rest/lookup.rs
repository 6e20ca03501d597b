//! `POST /api/v1/internal/expert-questions/lookup`: an agent reads its questions by external id
//! (signed), optionally waiting up to 55 s for one of them to change.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::signed::agent_signed_and_parsed;
use crate::service::lookup;
use crate::state::AppState;

/// Verify, parse and answer a lookup.
pub async fn lookup(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (request, asker) =
        match agent_signed_and_parsed(&state, &headers, body, lookup::parse).await {
            Ok(parsed) => parsed,
            Err(refused) => return refused.into_response(),
        };
    match lookup::lookup(&state.db, &state.live, &asker, request).await {
        Ok(found) => Json(found).into_response(),
        Err(err) => err.into_response(),
    }
}
