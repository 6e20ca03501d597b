//! `POST /api/v1/internal/expert-questions/withdraw`: an agent withdraws a question it no
//! longer needs (signed).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::signed::agent_signed_and_parsed;
use super::views::{ErrorBody, WithdrawBody, WithdrawalResponse};
use crate::domain::withdraw::{Withdraw, WithdrawRequest};
use crate::error::ServiceError;
use crate::service::questions::withdrawal;
use crate::state::AppState;

/// Verify, parse and withdraw.
#[utoipa::path(
    post,
    path = "/api/v1/internal/expert-questions/withdraw",
    tag = "agents",
    operation_id = "withdraw",
    summary = "Withdraw a question the agent no longer needs",
    description = "A waiting question (open or researching) is dismissed with the reason \
        \"withdrawn by the agent\", what was reserved for it is released, and it leaves every \
        queue. An answered question stays answered (outcome settled); withdrawing again changes \
        nothing (outcome already_withdrawn). Another agent's question is not found. See \
        docs/contract.md#withdrawal.",
    request_body = WithdrawBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 200, description = "Withdrawn, or already settled (see outcome).", body = WithdrawalResponse),
        (status = 400, description = "A field is missing or wrong (both or neither of questionId and externalId, a questionId that is not a whole number, a reason past 500 characters).", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 403, description = "The agent is disabled.", body = ErrorBody),
        (status = 404, description = "No question of this agent by that id (another agent's included).", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn withdraw(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (request, asker) = match agent_signed_and_parsed(&state, &headers, body, parse).await {
        Ok(parsed) => parsed,
        Err(refused) => return refused.into_response(),
    };
    match withdrawal::withdraw(
        &state.db,
        &state.hint(),
        &asker,
        &request.which,
        request.reason.as_deref(),
        Utc::now(),
    )
    .await
    {
        Ok(withdrawn) => Json(WithdrawalResponse::of(&withdrawn)).into_response(),
        Err(err) => err.into_response(),
    }
}

/// The body as the typed request, checked: 400 with what is wrong.
pub fn parse(body: &serde_json::Value) -> Result<Withdraw, ServiceError> {
    Ok(Withdraw::try_from(WithdrawRequest::from_json(body)?)?)
}
