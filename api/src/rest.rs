//! The REST shim: the signed intake routes agents call, health and metrics. Handlers are thin:
//! verify, parse, call a service, map the result; text enters through `edge`.

use axum::Router;
use axum::routing::{get, post};

use crate::state::AppState;

mod edge;
pub mod errors;
mod forms;
mod health;
mod intake;
mod knowledge;
mod links;
mod lookup;
mod money;
pub mod openapi;
mod queue;
mod research;
mod signed;
pub mod views;
mod withdraw;

/// The REST routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/internal/expert-questions",
            post(intake::receive_question),
        )
        .route(
            "/api/v1/internal/expert-questions/lookup",
            post(lookup::lookup),
        )
        .route(
            "/api/v1/internal/expert-questions/withdraw",
            post(withdraw::withdraw),
        )
        .route("/api/v1/internal/knowledge/search", post(knowledge::search))
        .route("/api/v1/internal/knowledge/reuse", post(knowledge::reuse))
        .route(
            "/api/v1/niches/{slug}/knowledge/export",
            get(knowledge::export),
        )
        .route(
            "/api/v1/internal/revenue-events",
            post(money::revenue_event),
        )
        .route(
            "/api/v1/internal/anomaly-signals",
            post(money::anomaly_signal),
        )
        .route(
            "/api/v1/internal/research-results",
            post(research::research_returned),
        )
        .route("/api/v1/niches/{slug}/questions", get(queue::list))
        .route(
            "/api/v1/niches/{slug}/questions/{id}/answer",
            post(queue::answer),
        )
        .route("/dashboard/questions/{id}/answer", post(forms::answer))
        .route("/dashboard/questions/{id}/dismiss", post(forms::dismiss))
        .route("/email/verify", get(links::verify_email))
        .route(
            "/notifications/unsubscribe",
            get(links::unsubscribe_page).post(links::unsubscribe),
        )
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/openapi.json", get(openapi::openapi_json))
        // The one text rule for every route's path and query (bodies: `edge::TextJson`,
        // `edge::TextForm`, and the signed routes' own check).
        .route_layer(axum::middleware::from_fn(edge::refuse_control_characters))
}
