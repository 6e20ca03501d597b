//! The REST shim: the signed intake routes agents call, health and metrics. Handlers are thin:
//! verify, parse, call a service, map the result.

use axum::Router;
use axum::routing::{get, post};

use crate::startup::AppState;

mod health;
mod intake;
mod signed;

/// The REST routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/internal/expert-questions",
            post(intake::receive_question),
        )
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
}
