//! The HTTP side of the GraphQL transport: `POST /graphql` (queries and mutations), `GET
//! /graphql` (GraphiQL) and the `/graphql/ws` upgrade, as a router with its own small state so
//! the schema never has to live in the application's state.

use std::sync::Arc;

use async_graphql::ParseRequestError;
use async_graphql::http::GraphiQLSource;
use async_graphql::{ErrorExtensions, Response};
use async_graphql_axum::rejection::GraphQLRejection;
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::Router;
use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use sea_orm::DatabaseConnection;

use super::{AskloopSchema, error_door, socket};
use crate::auth::resolve_caller;
use crate::config::Config;
use crate::live::LiveHub;

/// What the GraphQL handlers reach: the schema, and what resolving a caller and serving a
/// websocket need.
#[derive(Clone)]
pub struct GraphqlEndpoint {
    /// The schema, with its limits and data.
    pub schema: AskloopSchema,
    /// The database pool (to resolve callers).
    pub db: DatabaseConnection,
    /// The configuration.
    pub config: Arc<Config>,
    /// The live hub (its stop closes websockets on shutdown).
    pub live: LiveHub,
}

impl FromRef<GraphqlEndpoint> for DatabaseConnection {
    fn from_ref(endpoint: &GraphqlEndpoint) -> Self {
        endpoint.db.clone()
    }
}

impl FromRef<GraphqlEndpoint> for Arc<Config> {
    fn from_ref(endpoint: &GraphqlEndpoint) -> Self {
        endpoint.config.clone()
    }
}

/// `/graphql` and `/graphql/ws`, ready to merge into any router.
pub fn routes<S>(endpoint: GraphqlEndpoint) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/graphql", get(graphiql).post(execute))
        .route("/graphql/ws", get(socket::upgrade))
        .with_state(endpoint)
}

/// `POST /graphql`: resolve the caller once, then run the operation with it.
pub async fn execute(
    State(endpoint): State<GraphqlEndpoint>,
    headers: HeaderMap,
    request: Result<GraphQLRequest, GraphQLRejection>,
) -> axum::response::Response {
    let request = match request {
        Ok(request) => request,
        Err(rejection) => return refused(rejection),
    };
    let response: GraphQLResponse =
        match resolve_caller(&headers, &endpoint.db, &endpoint.config, chrono::Utc::now()).await {
            Ok(caller) => endpoint
                .schema
                .execute(request.into_inner().data(caller))
                .await
                .into(),
            Err(err) => {
                Response::from_errors(vec![err.extend().into_server_error(Default::default())])
                    .into()
            }
        };
    response.into_response()
}

/// A body that is not one GraphQL request still gets a GraphQL error body with a code, so
/// clients handle it like every other error.
fn refused(rejection: GraphQLRejection) -> axum::response::Response {
    let (status, reason, message) = match &rejection.0 {
        ParseRequestError::UnsupportedBatch => (
            StatusCode::BAD_REQUEST,
            Some("BATCH_UNSUPPORTED"),
            "askloop takes one operation per request; send a batch as separate requests".to_owned(),
        ),
        ParseRequestError::PayloadTooLarge => (
            StatusCode::PAYLOAD_TOO_LARGE,
            Some("PAYLOAD_TOO_LARGE"),
            "the request body is larger than askloop accepts".to_owned(),
        ),
        other => (
            StatusCode::BAD_REQUEST,
            None,
            format!("not a GraphQL request: {other}"),
        ),
    };
    let mut extensions = serde_json::Map::new();
    extensions.insert("code".into(), error_door::BAD_REQUEST.into());
    if let Some(reason) = reason {
        extensions.insert("reason".into(), reason.into());
    }
    let body = serde_json::json!({
        "data": null,
        "errors": [{ "message": message, "extensions": extensions }],
    });
    (status, axum::Json(body)).into_response()
}

/// `GET /graphql`: GraphiQL.
pub async fn graphiql() -> impl IntoResponse {
    Html(
        GraphiQLSource::build()
            .endpoint("/graphql")
            .subscription_endpoint("/graphql/ws")
            .finish(),
    )
}
