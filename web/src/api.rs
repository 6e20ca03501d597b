//! The GraphQL transport: one generic [`run`] that posts a generated operation to `/graphql` on
//! the same origin (and [`send`], for mutations whose answer no page reads), and the one error
//! type every page and the live connection share.
//!
//! Errors are told apart by the server's `extensions.code` (and `extensions.reason` where the
//! server adds one), never by their wording: the codes are askloop's stable contract, the
//! messages are for people and may change.

use gloo_net::http::Request;
use graphql_client::GraphQLQuery;
use serde::Deserialize;
use serde_json::Value;

/// The stable codes of askloop's GraphQL errors, plus `Network` for a call that never got an
/// answer the client could read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorCode {
    /// `BAD_USER_INPUT`.
    BadUserInput,
    /// `UNAUTHENTICATED`: signed out, or the session ended.
    Unauthenticated,
    /// `FORBIDDEN`.
    Forbidden,
    /// `NOT_FOUND`.
    NotFound,
    /// `CONFLICT` (also "fell behind" on a subscription).
    Conflict,
    /// `OVER_BUDGET`.
    OverBudget,
    /// `INTERNAL`, or an error without a code.
    Internal,
    /// askloop could not be reached, or its answer could not be read.
    Network,
    /// A code this build does not know yet.
    Other(String),
}

impl ErrorCode {
    fn of(code: &str) -> Self {
        match code {
            "BAD_USER_INPUT" => Self::BadUserInput,
            "UNAUTHENTICATED" => Self::Unauthenticated,
            "FORBIDDEN" => Self::Forbidden,
            "NOT_FOUND" => Self::NotFound,
            "CONFLICT" => Self::Conflict,
            "OVER_BUDGET" => Self::OverBudget,
            "INTERNAL" => Self::Internal,
            other => Self::Other(other.to_owned()),
        }
    }
}

/// A failed call: what the server's `extensions` said, and its message for people.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// `extensions.code`.
    pub code: ErrorCode,
    /// `extensions.reason`, for the conflicts that carry one.
    pub reason: Option<String>,
    /// For people.
    pub message: String,
}

impl ApiError {
    /// A call that got no readable answer.
    pub fn network(err: impl std::fmt::Display) -> Self {
        Self {
            code: ErrorCode::Network,
            reason: None,
            message: err.to_string(),
        }
    }
}

/// The error as a sentence, whatever the server's wording: a capital first letter (askloop's own
/// name stays lower case) and a full stop at the end.
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words = match self.code {
            ErrorCode::Network => format!("askloop could not be reached ({})", self.message),
            _ => self.message.trim().to_owned(),
        };
        f.write_str(&sentence(&words))
    }
}

/// `words` as a sentence: its first letter a capital (unless it starts with "askloop") and a
/// full stop at its end unless it already ends a sentence.
pub fn sentence(words: &str) -> String {
    let words = words.trim();
    let mut out = String::with_capacity(words.len() + 1);
    let mut chars = words.chars();
    match chars.next() {
        Some(first) if !words.starts_with("askloop") => {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
        _ => out.push_str(words),
    }
    if !out.is_empty() && !out.ends_with(['.', '!', '?', '…']) {
        out.push('.');
    }
    out
}

impl std::error::Error for ApiError {}

/// One entry of a response's `errors`.
#[derive(Debug, Deserialize)]
pub struct GraphqlError {
    message: String,
    #[serde(default)]
    extensions: Value,
}

/// The first of a response's errors, as an [`ApiError`].
pub fn first_error(errors: Vec<GraphqlError>) -> Option<ApiError> {
    errors.into_iter().next().map(|first| ApiError {
        code: ErrorCode::of(first.extensions["code"].as_str().unwrap_or("INTERNAL")),
        reason: first.extensions["reason"].as_str().map(str::to_owned),
        message: first.message,
    })
}

/// A response (or a subscription's `next` payload) before its `data` is typed.
#[derive(Debug, Deserialize)]
pub struct RawResponse {
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

impl RawResponse {
    /// Take the first error out, leaving the response without errors.
    pub fn take_error(&mut self) -> Option<ApiError> {
        first_error(std::mem::take(&mut self.errors))
    }

    /// The typed `data` of operation `Q`, or the first error. Errors come first: with one,
    /// `data` may be partial and not of the operation's shape.
    pub fn into_data<Q: GraphQLQuery>(self) -> Result<Q::ResponseData, ApiError> {
        if let Some(err) = first_error(self.errors) {
            return Err(err);
        }
        let data = self
            .data
            .ok_or_else(|| ApiError::network("the server sent no data"))?;
        crate::decode::from_value(data).map_err(ApiError::network)
    }
}

/// Run operation `Q` with `variables` over `POST /graphql` and decode its `data`.
pub async fn run<Q: GraphQLQuery>(variables: Q::Variables) -> Result<Q::ResponseData, ApiError> {
    post(request_body::<Q>(variables)).await?.into_data::<Q>()
}

/// Run mutation `Q` for what it does, not what it answers: its errors are checked and its
/// `data` is not decoded (so no decoder for it is compiled into the dashboard).
pub async fn send<Q: GraphQLQuery>(variables: Q::Variables) -> Result<(), ApiError> {
    let mut response = post(request_body::<Q>(variables)).await?;
    match response.take_error() {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

fn request_body<Q: GraphQLQuery>(variables: Q::Variables) -> Result<String, ApiError> {
    serde_json::to_string(&Q::build_query(variables)).map_err(ApiError::network)
}

/// The one untyped step every operation shares (kept out of the generic functions so it is
/// compiled once).
async fn post(body: Result<String, ApiError>) -> Result<RawResponse, ApiError> {
    let response = Request::post("/graphql")
        .header("content-type", "application/json")
        .body(body?)
        .map_err(ApiError::network)?
        .send()
        .await
        .map_err(ApiError::network)?;
    response.json().await.map_err(ApiError::network)
}
