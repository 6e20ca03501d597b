//! `POST /api/v1/internal/revenue-events` (signed with the agent secret) and
//! `POST /api/v1/internal/anomaly-signals` (signed with the monitor's secret).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;

use super::signed::{agent_signed_and_parsed, signed_and_parsed};
use crate::service::{revenue, signals};
use crate::state::AppState;

/// Book a revenue event: 201 with its allocations, 200 for an external id booked before.
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
            let e = &booked.event;
            let body = json!({
                "duplicate": booked.duplicate,
                "event": {
                    "id": e.id,
                    "externalId": e.external_id,
                    "sourceType": e.source_type,
                    "grossMinor": e.gross_minor,
                    "netMinor": e.net_minor,
                    "currency": e.currency,
                },
                "allocations": booked.allocations.iter().map(|a| json!({
                    "userId": a.user_id,
                    "shareBps": a.share_bps,
                    "amountMinor": a.amount_minor,
                })).collect::<Vec<_>>(),
            });
            (status, Json(body)).into_response()
        }
        Err(err) => err.into_response(),
    }
}

/// Append an anomaly signal: 201, or 200 for a signalId seen before. Nothing else changes.
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
            (
                status,
                Json(json!({ "duplicate": duplicate, "signal": { "id": row.id, "signalId": row.signal_id } })),
            )
                .into_response()
        }
        Err(err) => err.into_response(),
    }
}
