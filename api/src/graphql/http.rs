//! The HTTP side of the GraphQL transport: `POST /graphql` (queries and mutations) and `GET
//! /graphql` (GraphiQL). The router that mounts them and the websocket lives in `graphql.rs`.

use async_graphql::http::GraphiQLSource;
use async_graphql::{ErrorExtensions, Response, ServerError};
use async_graphql_axum::GraphQLResponse;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse};

use super::{GraphqlEndpoint, error_door};
use crate::auth::{ClientAddress, UserAgent, resolve_caller};
use crate::error::ServiceError;

/// `POST /graphql`: resolve the caller once, then run the operation with it (and with the
/// address it came from, which sign-in counts failures by, and its `User-Agent`, which a new
/// session keeps to be recognised by).
pub async fn execute(
    State(endpoint): State<GraphqlEndpoint>,
    client: ClientAddress,
    user_agent: UserAgent,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> axum::response::Response {
    let request = match body.map_err(Refusal::Body).and_then(parse_request) {
        Ok(request) => request,
        Err(refusal) => return refused(refusal),
    };
    let response =
        match resolve_caller(&headers, &endpoint.db, &endpoint.config, chrono::Utc::now()).await {
            Ok(caller) => {
                endpoint
                    .schema
                    .execute(request.data(caller).data(client).data(user_agent))
                    .await
            }
            Err(err) => Response::from_errors(vec![unplaced(err.extend())]),
        };
    let retry_after = retry_after_of(&response);
    let mut response = GraphQLResponse::from(response).into_response();
    if let Some(wait) = retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, wait);
    }
    response
}

/// The `Retry-After` an answer should carry: the longest an error in it asks for (the
/// database was out of reach for now), if any asks. The errors themselves say so too, in
/// `extensions.retryAfterSeconds`, for clients that read only the body.
fn retry_after_of(response: &Response) -> Option<HeaderValue> {
    response
        .errors
        .iter()
        .filter_map(|error| error.extensions.as_ref()?.get("retryAfterSeconds"))
        .filter_map(|value| match value {
            async_graphql::Value::Number(n) => n.as_u64(),
            _ => None,
        })
        .max()
        .map(HeaderValue::from)
}

/// An error about the request as a whole (its credential), which has no place in the query text:
/// no `locations`, rather than a line 0 that no query has.
fn unplaced(error: async_graphql::Error) -> ServerError {
    let mut unplaced = ServerError::new(error.message, None);
    unplaced.extensions = error.extensions;
    unplaced
}

/// Why a body is not one GraphQL request.
enum Refusal {
    /// It could not be read (too large, or cut off).
    Body(BytesRejection),
    /// A JSON array: several operations at once.
    Batch,
    /// Not a GraphQL request object.
    Shape(serde_json::Error),
}

/// One GraphQL request from a JSON body: `{"query", "variables"?, "operationName"?}`.
fn parse_request(body: Bytes) -> Result<async_graphql::Request, Refusal> {
    serde_json::from_slice::<async_graphql::Request>(&body).map_err(|err| {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            Refusal::Batch
        } else {
            Refusal::Shape(err)
        }
    })
}

/// A body that is not one GraphQL request still gets a GraphQL error body with a code, so
/// clients handle it like every other error.
fn refused(refusal: Refusal) -> axum::response::Response {
    let (status, reason, message) = match refusal {
        Refusal::Batch => (
            StatusCode::BAD_REQUEST,
            Some("BATCH_UNSUPPORTED"),
            "askloop takes one operation per request; send a batch as separate requests".to_owned(),
        ),
        Refusal::Body(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => (
            StatusCode::PAYLOAD_TOO_LARGE,
            Some("PAYLOAD_TOO_LARGE"),
            "the request body is larger than askloop accepts".to_owned(),
        ),
        Refusal::Body(rejection) => (
            StatusCode::BAD_REQUEST,
            None,
            format!(
                "the request body could not be read: {}",
                rejection.body_text()
            ),
        ),
        Refusal::Shape(err) => (
            StatusCode::BAD_REQUEST,
            None,
            format!("not a GraphQL request: {err}"),
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

/// `GET /graphql`: the GraphiQL explorer with its own CSP (it loads its scripts from unpkg.com),
/// only when `ASKLOOP_GRAPHIQL=1`; otherwise 404.
pub async fn graphiql(State(endpoint): State<GraphqlEndpoint>) -> axum::response::Response {
    if !endpoint.config.graphiql {
        return ServiceError::NotFound(
            "the GraphiQL explorer is off; start askloop with ASKLOOP_GRAPHIQL=1 to serve it here"
                .into(),
        )
        .into_response();
    }
    let page = GraphiQLSource::build()
        .endpoint("/graphql")
        .subscription_endpoint("/graphql/ws")
        .finish();
    (
        [(
            header::CONTENT_SECURITY_POLICY,
            crate::net::security_headers::GRAPHIQL_CONTENT_SECURITY_POLICY,
        )],
        Html(page),
    )
        .into_response()
}
