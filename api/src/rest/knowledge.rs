//! `POST /api/v1/internal/knowledge/search`: an agent searches the knowledge of a niche it may
//! ask in (signed), before asking a person (docs/contract.md#knowledge).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::signed::agent_signed_and_parsed;
use super::views::{ErrorBody, KnowledgeResult, KnowledgeSearchBody, KnowledgeSearchResponse};
use crate::service::knowledge;
use crate::state::AppState;

/// Verify, parse and answer a knowledge search.
#[utoipa::path(
    post,
    path = "/api/v1/internal/knowledge/search",
    tag = "agents",
    operation_id = "searchKnowledge",
    summary = "Search a niche's knowledge",
    description = "The niche's current knowledge entries (verified answers) holding any of the \
        query's words, best first. Only niches the agent may ask in. See \
        docs/contract.md#knowledge.",
    request_body = KnowledgeSearchBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 200, description = "The entries found.", body = KnowledgeSearchResponse),
        (status = 400, description = "A field is missing or wrong.", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 403, description = "The agent is disabled, or may not ask in that niche.", body = ErrorBody),
        (status = 404, description = "No such niche.", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (request, asker) = match agent_signed_and_parsed(
        &state,
        &headers,
        body,
        knowledge::parse_agent_search,
    )
    .await
    {
        Ok(parsed) => parsed,
        Err(refused) => return refused.into_response(),
    };
    match knowledge::for_agent(&state.db, &asker, &request).await {
        Ok(found) => Json(KnowledgeSearchResponse {
            results: found
                .into_iter()
                .map(|found| KnowledgeResult::of(found, None))
                .collect(),
        })
        .into_response(),
        Err(err) => err.into_response(),
    }
}
