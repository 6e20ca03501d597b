//! Liveness, readiness and Prometheus metrics.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

/// The process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    operation_id = "healthz",
    summary = "Liveness",
    responses((status = 200, description = "The process is up.", body = String, content_type = "text/plain", example = "ok"))
)]
pub async fn healthz() -> &'static str {
    "ok"
}

/// The database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    operation_id = "readyz",
    summary = "Readiness",
    responses(
        (status = 200, description = "The database answers.", body = String, content_type = "text/plain", example = "ready"),
        (status = 503, description = "The database does not answer.", body = String, content_type = "text/plain"),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.db.ping().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response()
        }
    }
}

/// Counters and histograms in the Prometheus text format.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    operation_id = "metrics",
    summary = "Prometheus metrics",
    responses(
        (status = 200, description = "Counters and histograms.", body = String, content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
        (status = 500, description = "Rendering failed.")
    )
)]
pub async fn metrics(State(state): State<AppState>) -> Response {
    match state.metrics.render() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(err) => {
            tracing::error!(error = %err, "rendering metrics failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
