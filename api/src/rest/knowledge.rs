//! `POST /api/v1/internal/knowledge/search`: an agent searches the knowledge of a niche it may
//! ask in (signed), before asking a person; `POST /api/v1/internal/knowledge/reuse`: it relies on
//! an entry found, which pays the entry's author (docs/contract.md#knowledge).

use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::signed::agent_signed_and_parsed;
use super::views::{
    ErrorBody, KnowledgeResult, KnowledgeReuseBody, KnowledgeReuseResponse, KnowledgeSearchBody,
    KnowledgeSearchResponse,
};
use crate::auth::Caller;
use crate::domain::chain::Sealer;
use crate::domain::knowledge::{AgentSearch, KnowledgeSearchRequest, NewReuse, ReuseRequest};
use crate::error::ServiceError;
use crate::service::{knowledge, knowledge::reuse};
use crate::state::AppState;

/// The header naming an export's head: the last line's hash.
pub const CHAIN_HEAD_HEADER: &str = "x-askloop-chain-head";

/// An admin downloads a niche's knowledge export.
#[utoipa::path(
    get,
    path = "/api/v1/niches/{slug}/knowledge/export",
    tag = "members",
    operation_id = "exportKnowledge",
    summary = "Download a niche's knowledge as chained JSON lines",
    description = "Admins only. The niche's current knowledge entries, oldest first, one JSON \
        object a line with its provenance, each carrying prevHash and hash (SHA-256); the last \
        line's hash is the head, also sent as X-Askloop-Chain-Head. The same file `askloop \
        knowledge export` writes; `askloop knowledge verify` checks it. See \
        docs/contract.md#knowledge.",
    params(("slug" = String, Path, description = "The niche's slug.")),
    security(("bearer" = []), ("sessionCookie" = [])),
    responses(
        (status = 200, description = "The export (application/x-ndjson).", body = String, content_type = "application/x-ndjson"),
        (status = 401, description = "Not signed in, or a bearer token that does not resolve.", body = ErrorBody),
        (status = 403, description = "Not an admin.", body = ErrorBody),
        (status = 404, description = "No such niche.", body = ErrorBody),
    )
)]
pub async fn export(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> Result<Response, ServiceError> {
    let mut sealer = Sealer::default();
    let mut body = String::new();
    knowledge::export_for(&state.db, caller.viewer(), &slug, |record| {
        body.push_str(&sealer.line(record));
        body.push('\n');
        Ok(())
    })
    .await?;
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    if let Ok(head) = HeaderValue::from_str(sealer.head()) {
        headers.insert(CHAIN_HEAD_HEADER, head);
    }
    let name = format!(
        "attachment; filename=\"{}-knowledge.jsonl\"",
        slug.to_lowercase()
    );
    if let Ok(disposition) = HeaderValue::from_str(&name) {
        headers.insert(header::CONTENT_DISPOSITION, disposition);
    }
    Ok(response)
}

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
    let (request, asker) = match agent_signed_and_parsed(&state, &headers, body, parse_search).await
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

/// Verify, parse and record a knowledge reuse.
#[utoipa::path(
    post,
    path = "/api/v1/internal/knowledge/reuse",
    tag = "agents",
    operation_id = "reuseKnowledge",
    summary = "Rely on a knowledge entry instead of asking again",
    description = "Records that the agent relies on a current knowledge entry: charges the \
        niche's reuse price from its budget and pays the entry's author. Idempotent by \
        externalId (201 the first time, 200 with `duplicate` after). If the entry is later \
        replaced or withdrawn the agent receives `knowledge.superseded` or `knowledge.retracted`, \
        and a withdrawal gives the charge back. See docs/contract.md#knowledge.",
    request_body = KnowledgeReuseBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 201, description = "Recorded.", body = KnowledgeReuseResponse),
        (status = 200, description = "Recorded before under this externalId.", body = KnowledgeReuseResponse),
        (status = 400, description = "A field is missing or wrong.", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 402, description = "The niche's budget cannot cover the reuse price; nothing is recorded.", body = ErrorBody),
        (status = 403, description = "The agent is disabled, or may not ask in the entry's niche.", body = ErrorBody),
        (status = 404, description = "No such entry.", body = ErrorBody),
        (status = 409, description = "`KNOWLEDGE_NOT_CURRENT`: the entry was replaced or withdrawn; `EXTERNAL_ID_TAKEN`: another agent's reuse has this externalId.", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn reuse(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (request, asker) = match agent_signed_and_parsed(&state, &headers, body, parse_reuse).await
    {
        Ok(parsed) => parsed,
        Err(refused) => return refused.into_response(),
    };
    match reuse::reuse(&state.db, &asker, &request, chrono::Utc::now()).await {
        Ok(reused) => {
            let status = if reused.duplicate {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            (status, Json(KnowledgeReuseResponse::of(reused))).into_response()
        }
        Err(err) => err.into_response(),
    }
}

/// The search body as the typed request, checked: 400 with what is wrong.
pub fn parse_search(body: &serde_json::Value) -> Result<AgentSearch, ServiceError> {
    Ok(AgentSearch::try_from(KnowledgeSearchRequest::from_json(
        body,
    )?)?)
}

/// The reuse body as the typed request, checked: 400 with what is wrong.
pub fn parse_reuse(body: &serde_json::Value) -> Result<NewReuse, ServiceError> {
    Ok(NewReuse::try_from(ReuseRequest::from_json(body)?)?)
}
