//! The A2A server (docs/contract.md#a2a): askloop speaks the Agent2Agent protocol 1.0 to
//! registered agents, over its JSON-RPC binding, as the official SDKs do.
//!
//! - `GET /.well-known/agent-card.json` is the Agent Card: one JSON-RPC interface at `/a2a`
//!   (protocol version 1.0), the agent token as an HTTP bearer security scheme, and one skill per
//!   niche taking questions that the caller may ask in (every such niche for a caller without a
//!   token; a bearer that names no live agent is refused as on `/a2a`).
//! - `POST /a2a` takes one JSON-RPC 2.0 request per body (no batches), authenticated exactly as
//!   `/mcp` is (missing, unknown or revoked token → 401, a disabled agent → 403, before the body
//!   is read). Its methods are in [`methods`]; the task a question is, in [`task`]; push
//!   notification configs and their pushes, which are outbox deliveries, in
//!   [`crate::service::agents::a2a_tasks`].
//!
//! Every JSON-RPC answer, success or error, is HTTP 200 with `application/json` — except a
//! database out of reach (503 with `Retry-After`, the error still JSON-RPC) and a body over the
//! limit (413, the REST error body). A body that is not JSON is `-32700`; JSON that is not one
//! request object is `-32600`; an unknown method `-32601`; parameters that do not fit `-32602`.
//! A request without an `id` (a notification) is refused as `-32600`: every A2A method answers.
//! An `A2A-Version` header naming anything but 1.x is `-32009`.
//!
//! Streaming is not offered: a question waits for a person for minutes to days, longer than a
//! connection should stay open, so the card says `streaming: false` and `SendStreamingMessage`
//! and `SubscribeToTask` are `-32004` (unsupported operation). Clients poll `GetTask`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::error::ServiceError;
use crate::mcp::McpAgent;
use crate::service::agents::agent_tokens::{self, TokenHolder};
use crate::service::agents::registry::Asker;
use crate::state::AppState;

pub mod methods;
pub mod task;

/// Where the JSON-RPC endpoint is mounted.
pub const PATH: &str = "/a2a";

/// Where the Agent Card is served (the protocol's well-known path).
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// The protocol version askloop speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The header a client names its protocol version in.
const VERSION_HEADER: &str = "a2a-version";

/// The JSON-RPC and A2A error codes askloop answers with (A2A 1.0, section on JSON-RPC errors).
pub mod codes {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not one JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// askloop failed (or the database is out of reach for now).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// No such task among the caller's.
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// The task is settled and cannot be canceled.
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// Push notifications are not offered.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    /// The operation is not offered (streaming), or not in the task's state.
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// The client's protocol version is not one askloop speaks.
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
}

/// A JSON-RPC error: its code, message and optional data (askloop's REST error body when a
/// service refused).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code ([`codes`]).
    pub code: i64,
    /// What went wrong, for a person reading it.
    pub message: String,
    /// More: `{error, code, reason?}` as REST would answer.
    pub data: Option<Value>,
    /// Whether the database was out of reach (the response is 503 with `Retry-After`).
    pub temporary: bool,
}

impl RpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
            temporary: false,
        }
    }

    /// Invalid parameters (`-32602`).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// The task `id` is not one of the caller's (`-32001`).
    pub fn task_not_found(id: &str) -> Self {
        Self::new(
            codes::TASK_NOT_FOUND,
            format!("this agent has no task '{}'", cut(id, 80)),
        )
    }

    fn json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

impl From<ServiceError> for RpcError {
    /// A service refusal: not found is `-32001` (a task is a question: none of the caller's),
    /// a fault is `-32603`, anything else the caller sent is `-32602`; the REST error body rides
    /// along as `data`.
    fn from(err: ServiceError) -> Self {
        err.log_if_internal();
        let code = match &err {
            ServiceError::NotFound(_) => codes::TASK_NOT_FOUND,
            ServiceError::Internal(_) | ServiceError::TemporarilyUnavailable(_) => {
                codes::INTERNAL_ERROR
            }
            _ => codes::INVALID_PARAMS,
        };
        let message = match &err {
            ServiceError::Internal(_) => "internal error".to_owned(),
            other => other.to_string(),
        };
        Self {
            code,
            message,
            data: Some(err.body()),
            temporary: matches!(err, ServiceError::TemporarilyUnavailable(_)),
        }
    }
}

/// `text` cut to `max` characters (for echoing what a client sent).
pub(crate) fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The A2A routes: the Agent Card, and the JSON-RPC endpoint behind the agent-token check `/mcp`
/// uses.
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route(
            PATH,
            post(serve_rpc).route_layer(axum::middleware::from_fn_with_state(
                state.clone(),
                crate::mcp::authenticate,
            )),
        )
        .route(CARD_PATH, get(serve_card))
}

/// One JSON-RPC response with `id`, as HTTP 200 (503 when the database was out of reach).
fn respond(id: Value, outcome: Result<Value, RpcError>) -> Response {
    match outcome {
        Ok(result) => {
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
        }
        Err(error) => {
            let body = json!({"jsonrpc": "2.0", "id": id, "error": error.json()});
            if error.temporary {
                let mut response =
                    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
                response.headers_mut().insert(
                    header::RETRY_AFTER,
                    crate::rest::errors::temporary_retry_after(),
                );
                response
            } else {
                axum::Json(body).into_response()
            }
        }
    }
}

/// Whether `headers` name a protocol version askloop does not speak (absent is 1.0's default).
fn unsupported_version(headers: &HeaderMap) -> Option<String> {
    let asked = headers.get(VERSION_HEADER)?;
    let asked = asked.to_str().unwrap_or("?").trim();
    let major = asked.split('.').next().unwrap_or("");
    (major != "1").then(|| cut(asked, 20))
}

/// `POST /a2a`: read one JSON-RPC request (within the body limit), answer it.
async fn serve_rpc(State(state): State<AppState>, request: Request) -> Response {
    let Some(asker) = request
        .extensions()
        .get::<McpAgent>()
        .map(|agent| agent.0.clone())
    else {
        // Only reachable if the route were mounted without its authentication layer.
        return respond(
            Value::Null,
            Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "no agent for this request",
            )),
        );
    };
    let version = unsupported_version(request.headers());
    let bytes = match Bytes::from_request(request, &state).await {
        Ok(bytes) => bytes,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ServiceError::TooLarge(format!(
                "the request body is larger than {} KiB",
                state.config.max_body_bytes / 1024
            ))
            .into_response();
        }
        Err(_) => {
            return ServiceError::BadInput("the request body could not be read".into())
                .into_response();
        }
    };
    let (id, method, params) = match read_request(&bytes) {
        Ok(request) => request,
        Err((id, error)) => return respond(id, Err(error)),
    };
    if let Some(asked) = version {
        return respond(
            id,
            Err(RpcError::new(
                codes::VERSION_NOT_SUPPORTED,
                format!("askloop speaks A2A {PROTOCOL_VERSION}, not '{asked}'"),
            )),
        );
    }
    let outcome = methods::call(&state, &asker, &method, params).await;
    respond(id, outcome)
}

/// The request's id, method and params, or the error to answer with (and the id to answer
/// under, null when none could be read).
fn read_request(bytes: &[u8]) -> Result<(Value, String, Value), (Value, RpcError)> {
    let value: Value = serde_json::from_slice(bytes).map_err(|err| {
        (
            Value::Null,
            RpcError::new(
                codes::PARSE_ERROR,
                format!("Parse error: the body is not JSON ({err})"),
            ),
        )
    })?;
    let invalid = |id: Value, why: &str| {
        (
            id,
            RpcError::new(codes::INVALID_REQUEST, format!("Invalid Request: {why}")),
        )
    };
    let Value::Object(mut request) = value else {
        return Err(invalid(
            Value::Null,
            "the body is not one JSON-RPC request object (batches are not accepted)",
        ));
    };
    let id = match request.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(Value::Null) | None => {
            return Err(invalid(
                Value::Null,
                "a request needs an id (string or number); every A2A method answers",
            ));
        }
        Some(_) => return Err(invalid(Value::Null, "id must be a string or a number")),
    };
    if request.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let method = match request.remove("method") {
        Some(Value::String(method)) => method,
        _ => return Err(invalid(id, "method must be a string")),
    };
    let params = match request.remove("params") {
        None => json!({}),
        Some(params @ Value::Object(_)) => params,
        Some(_) => {
            return Err((id, RpcError::invalid_params("params must be an object")));
        }
    };
    Ok((id, method, params))
}

/// `GET /.well-known/agent-card.json`: the card for the caller (see the module's
/// documentation).
async fn serve_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let asker = match crate::auth::bearer_token(&headers) {
        None => None,
        Some(token) => match agent_tokens::resolve(&state.db, &token).await {
            Ok(Some(TokenHolder::Active(asker))) => Some(asker),
            Ok(Some(TokenHolder::Disabled)) => {
                return ServiceError::Forbidden("this agent is disabled".into()).into_response();
            }
            Ok(None) => {
                let mut response =
                    ServiceError::Unauthenticated("that agent token is unknown or revoked".into())
                        .into_response();
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer realm=\"askloop\""),
                );
                return response;
            }
            Err(err) => return err.into_response(),
        },
    };
    match card(&state, &headers, asker.as_ref()).await {
        Ok(card) => axum::Json(card).into_response(),
        Err(err) => err.into_response(),
    }
}

/// The origin the card's interface URL starts with: `ASKLOOP_PUBLIC_ORIGIN`, else the host the
/// caller reached (when it is a plain host name or address), else this instance's own address.
fn origin(state: &AppState, headers: &HeaderMap) -> String {
    if state.config.public_origin.is_some() {
        return state.config.link_origin();
    }
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host.len() <= 255
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .map_or_else(
            || state.config.link_origin(),
            |host| format!("http://{host}"),
        )
}

/// The Agent Card for `asker` (none: a caller without a token).
async fn card(
    state: &AppState,
    headers: &HeaderMap,
    asker: Option<&Asker>,
) -> Result<Value, ServiceError> {
    let niches = crate::service::people::niches::list_public_niches(&state.db).await?;
    let skills: Vec<Value> = niches
        .iter()
        .filter(|niche| asker.is_none_or(|asker| asker.may_use_niche(niche.id)))
        .map(|niche| {
            json!({
                "id": niche.slug,
                "name": niche.name,
                "description": format!(
                    "Ask people who have done the job in {}: send a message with the question \
                     as text and, when this agent may ask in several niches, a data part \
                     {{\"niche\": \"{}\"}}.",
                    niche.name, niche.slug
                ),
                "tags": [niche.slug],
                "inputModes": ["text/plain", "application/json"],
                "outputModes": ["text/plain", "application/json"],
            })
        })
        .collect();
    let origin = origin(state, headers);
    Ok(json!({
        "name": "askloop",
        "description": "Puts an agent's questions in front of the people who operate a niche. \
                        Send a message with the question; the task stays WORKING while people \
                        read it, INPUT_REQUIRED when a person asks for more research (reply on \
                        the task with the findings), and COMPLETED with the answer as an \
                        artifact. Poll GetTask.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [{
            "url": format!("{origin}{PATH}"),
            "protocolBinding": "JSONRPC",
            "protocolVersion": PROTOCOL_VERSION,
        }],
        "provider": {"organization": "askloop", "url": origin},
        "capabilities": {
            "streaming": false,
            "pushNotifications": methods::PUSH_NOTIFICATIONS,
            "extendedAgentCard": false,
        },
        "securitySchemes": {
            "agentToken": {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "The agent token askloop issued to the registered agent \
                                (`askloop agent token <slug>`).",
            }},
        },
        "securityRequirements": [{"schemes": {"agentToken": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(body: &str) -> (Value, i64) {
        let (id, error) = read_request(body.as_bytes()).expect_err("refused");
        (id, error.code)
    }

    #[test]
    fn a_body_that_is_not_one_request_is_refused_with_the_json_rpc_code() {
        assert_eq!(error_of("{not json"), (Value::Null, codes::PARSE_ERROR));
        assert_eq!(error_of("[]"), (Value::Null, codes::INVALID_REQUEST));
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","method":"GetTask"}"#),
            (Value::Null, codes::INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"1.0","id":7,"method":"GetTask"}"#),
            (json!(7), codes::INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":"a","method":3}"#),
            (json!("a"), codes::INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":[1]}"#),
            (json!("a"), codes::INVALID_PARAMS)
        );
        let (id, method, params) =
            read_request(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask"}"#).expect("a request");
        assert_eq!(
            (id, method.as_str(), params),
            (json!("a"), "GetTask", json!({}))
        );
    }

    #[test]
    fn only_version_one_is_spoken() {
        let mut headers = HeaderMap::new();
        assert_eq!(unsupported_version(&headers), None);
        headers.insert(VERSION_HEADER, "1.0".parse().expect("a value"));
        assert_eq!(unsupported_version(&headers), None);
        headers.insert(VERSION_HEADER, "0.3".parse().expect("a value"));
        assert_eq!(unsupported_version(&headers), Some("0.3".into()));
    }
}
