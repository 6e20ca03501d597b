//! `POST /api/v1/internal/revenue-events` (signed with the agent secret) and
//! `POST /api/v1/internal/anomaly-signals` (signed with the monitor's secret).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::signed::{agent_signed_and_parsed, signed_and_parsed};
use super::views::{
    AllocationView, ErrorBody, RevenueBody, RevenueEventView, RevenueResponse, SignalBody,
    SignalRef, SignalResponse,
};
use crate::service::{money::revenue, money::signals};
use crate::state::AppState;

/// Book a revenue event: 201 with its allocations, 200 for an external id booked before.
#[utoipa::path(
    post,
    path = "/api/v1/internal/revenue-events",
    tag = "agents",
    operation_id = "bookRevenue",
    summary = "Book a revenue event for a niche",
    description = "Net (gross minus costs, never below 0) is split among the niche's operators by \
        their shares at once; the same external id books once. See \
        docs/contract.md#revenue-events.",
    request_body = RevenueBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 201, description = "Booked.", body = RevenueResponse),
        (status = 200, description = "Booked before under this external id; nothing booked again.", body = RevenueResponse),
        (status = 400, description = "A field is missing or wrong.", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 403, description = "The agent is disabled, or the niche is not one of its niches.", body = ErrorBody),
        (status = 404, description = "No such niche.", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn revenue_event(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let now = Utc::now();
    let (new, asker) = match agent_signed_and_parsed(&state, &headers, body, revenue::parse).await {
        Ok(parsed) => parsed,
        Err(refused) => return refused.into_response(),
    };
    match revenue::book(&state.db, &asker, new, now).await {
        Ok(booked) => {
            let status = if booked.duplicate {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            let e = booked.event;
            let body = RevenueResponse {
                duplicate: booked.duplicate,
                event: RevenueEventView {
                    id: e.id,
                    external_id: e.external_id,
                    source_type: e.source_type,
                    gross_minor: e.gross_minor,
                    net_minor: e.net_minor,
                    currency: e.currency,
                },
                allocations: booked
                    .allocations
                    .into_iter()
                    .map(|a| AllocationView {
                        user_id: a.user_id,
                        share_bps: a.share_bps,
                        amount_minor: a.amount_minor,
                    })
                    .collect(),
            };
            (status, Json(body)).into_response()
        }
        Err(err) => err.into_response(),
    }
}

/// Append an anomaly signal: 201, or 200 for a signalId seen before. Nothing else changes.
#[utoipa::path(
    post,
    path = "/api/v1/internal/anomaly-signals",
    tag = "monitors",
    operation_id = "appendAnomalySignal",
    summary = "Log an anomaly signal for the admins",
    description = "Appended to a log only admins read; it changes nothing else. Signed with the \
        monitor's secret (ASKLOOP_MONITOR_SECRET), not an agent's. See \
        docs/contract.md#anomaly-signals.",
    request_body = SignalBody,
    security(("monitorSignature" = [])),
    responses(
        (status = 201, description = "Appended.", body = SignalResponse),
        (status = 200, description = "This signalId was seen before; nothing is appended.", body = SignalResponse),
        (status = 400, description = "A field is missing or wrong.", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "ASKLOOP_MONITOR_SECRET is not set; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn anomaly_signal(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let now = Utc::now();
    let new = match signed_and_parsed(&state.config.monitor, &headers, body, signals::parse) {
        Ok(new) => new,
        Err(refused) => return refused.into_response(),
    };
    match signals::append(&state.db, &state.hint(), new, now).await {
        Ok((row, duplicate)) => {
            let status = if duplicate {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            let body = SignalResponse {
                duplicate,
                signal: SignalRef {
                    id: row.id,
                    signal_id: row.signal_id,
                },
            };
            (status, Json(body)).into_response()
        }
        Err(err) => err.into_response(),
    }
}
