//! `POST /api/v1/internal/research-results`: research comes back for a question (signed).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::signed::agent_signed_and_parsed;
use super::views::{ErrorBody, QuestionRef, ResearchBody, ResearchResponse};
use crate::service::questions::research;
use crate::state::AppState;

/// Verify, parse and apply research results.
#[utoipa::path(
    post,
    path = "/api/v1/internal/research-results",
    tag = "agents",
    operation_id = "addResearch",
    summary = "Return research for a question",
    description = "The findings are appended to the question's context under a dated heading and \
        the question is open again for a new round. See docs/contract.md#research-results.",
    request_body = ResearchBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 200, description = "Added; the question is open.", body = ResearchResponse),
        (status = 400, description = "A field is missing or wrong, or the context would pass 20000 characters.", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 403, description = "The agent is disabled.", body = ErrorBody),
        (status = 404, description = "No such niche, or no question of this agent with that external id in it.", body = ErrorBody),
        (status = 409, description = "The question is settled or its time is up (reason NOT_AWAITING_RESEARCH).", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
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
        Ok(question) => Json(ResearchResponse {
            question: QuestionRef {
                id: question.id,
                status: question.status.into(),
            },
        })
        .into_response(),
        Err(err) => err.into_response(),
    }
}
