//! The one error door of the GraphQL transport (see `docs/contract.md#errors`): every error that
//! leaves carries `extensions.code`. Errors from askloop's services arrive with a code already;
//! the library's own refusals (a query that does not parse, fails validation or costs too much,
//! an argument that cannot be coerced, a subscription sent over HTTP) are given one here (the
//! limits askloop measures itself, in `limits`, carry theirs already); anything else is an
//! error nobody classified, so it becomes `INTERNAL`, is logged once (inside the request's span,
//! which carries its id) and its text, which may be a driver's, never reaches the client.

use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextRequest, NextSubscribe,
    NextValidation,
};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{
    ErrorExtensions, Response, ServerError, ServerResult, ValidationResult, Value, Variables,
};
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::error::{ErrorCode, ServiceError};

/// The query text is not GraphQL.
pub const PARSE_FAILED: &str = ErrorCode::GraphqlParseFailed.as_str();
/// The query does not fit the schema.
pub const VALIDATION_FAILED: &str = ErrorCode::GraphqlValidationFailed.as_str();
/// The query nests deeper than askloop answers.
pub const TOO_DEEP: &str = ErrorCode::QueryTooDeep.as_str();
/// The query would cost more than askloop answers.
pub const TOO_COMPLEX: &str = ErrorCode::QueryTooComplex.as_str();
/// An argument or variable has the wrong shape.
pub const BAD_USER_INPUT: &str = ErrorCode::BadUserInput.as_str();
/// The HTTP body is not a single GraphQL request.
pub const BAD_REQUEST: &str = ErrorCode::BadRequest.as_str();
/// A fault inside askloop.
pub const INTERNAL: &str = ErrorCode::Internal.as_str();

/// A service error as GraphQL says it: its text (only `internal error` for an internal fault,
/// whose cause is logged here, once) with `extensions.code`, and `reason` and
/// `retryAfterSeconds` where it has them.
impl ErrorExtensions for ServiceError {
    fn extend(&self) -> async_graphql::Error {
        self.log_if_internal();
        let (code, reason, retry_after) = (self.code(), self.reason(), self.retry_after_seconds());
        let message = match self {
            // The cause is logged above; the client learns only that it was ours.
            ServiceError::Internal(_) => "internal error".to_owned(),
            _ => self.to_string(),
        };
        async_graphql::Error::new(message).extend_with(|_, e| {
            e.set("code", code.as_str());
            if let Some(reason) = reason {
                e.set("reason", reason);
            }
            if let Some(seconds) = retry_after {
                e.set("retryAfterSeconds", seconds);
            }
        })
    }
}

/// `?` in a resolver would convert through async-graphql's blanket `From<Display>` and drop the
/// code; `.gql()?` keeps it.
pub trait GqlResultExt<T> {
    /// Map the error to a GraphQL error carrying `extensions.code`.
    fn gql(self) -> async_graphql::Result<T>;
}

impl<T> GqlResultExt<T> for Result<T, ServiceError> {
    fn gql(self) -> async_graphql::Result<T> {
        self.map_err(|err| err.extend())
    }
}

/// Whether `errors` refuse a request before it runs: it does not parse, does not validate, or
/// costs more than askloop answers (graphql-transport-ws's `error` message, where an error of
/// execution is a `next` that carries it).
pub fn refused_before_running(errors: &[ServerError]) -> bool {
    !errors.is_empty()
        && errors.iter().all(|error| {
            error
                .extensions
                .as_ref()
                .and_then(|e| e.get("code"))
                .is_some_and(|code| {
                    [PARSE_FAILED, VALIDATION_FAILED, TOO_DEEP, TOO_COMPLEX]
                        .iter()
                        .any(|before| *code == Value::from(*before))
                })
        })
}

/// The extension that installs the door on a schema.
pub struct ErrorDoor;

impl ExtensionFactory for ErrorDoor {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(ErrorDoorExtension)
    }
}

struct ErrorDoorExtension;

fn has_code(error: &ServerError) -> bool {
    error
        .extensions
        .as_ref()
        .is_some_and(|e| e.get("code").is_some())
}

fn with_code(mut error: ServerError, code: &'static str) -> ServerError {
    if !has_code(&error) {
        error
            .extensions
            .get_or_insert_with(Default::default)
            .set("code", Value::from(code));
    }
    error
}

/// How async-graphql words its depth refusal (askloop measures depth itself, in `limits`, but
/// the library's wording still gets its code should it ever be raised).
pub const LIBRARY_TOO_DEEP: &str = "Query is nested too deep.";
/// How async-graphql words its complexity refusal: the node limit (`limits` rewords it).
pub const LIBRARY_TOO_COMPLEX: &str = "Query is too complex.";
/// How async-graphql words a subscription sent over `POST /graphql`.
const LIBRARY_SUBSCRIPTION_OVER_HTTP: &str = "Subscriptions are not supported on this transport.";
/// The reason of a subscription sent over `POST /graphql`.
pub const SUBSCRIPTION_NEEDS_WEBSOCKET: &str = "SUBSCRIPTION_NEEDS_WEBSOCKET";

/// The library's validation refusals, told apart by the limit they name (async-graphql words
/// them; the test suite pins them, so an upgrade that rewords them fails loudly).
fn validation_code(error: &ServerError) -> &'static str {
    match error.message.as_str() {
        LIBRARY_TOO_DEEP => TOO_DEEP,
        LIBRARY_TOO_COMPLEX => TOO_COMPLEX,
        _ => VALIDATION_FAILED,
    }
}

/// Give an error that still has no code the one it deserves.
fn close_the_door(error: ServerError) -> ServerError {
    if has_code(&error) {
        return error;
    }
    let message = error.message.as_str();
    // Argument and variable coercion fails inside execution with the library's own wording.
    if message.starts_with("Failed to parse") || message.starts_with("Invalid value for argument") {
        return with_code(error, BAD_USER_INPUT);
    }
    // A variable the operation declares but the request gave no value for (and that has no
    // default): the caller's input, found when the argument is read.
    if message.starts_with("Variable ") && message.ends_with(" is not defined.") {
        return with_code(error, BAD_USER_INPUT);
    }
    if message.starts_with("Unknown operation named")
        || message.starts_with("Operation name required")
    {
        return with_code(error, VALIDATION_FAILED);
    }
    // A subscription needs the websocket; over `POST /graphql` it is the caller's mistake.
    if message == LIBRARY_SUBSCRIPTION_OVER_HTTP {
        let mut refused = ServerError::new(
            "subscriptions are served over the websocket at /graphql/ws (graphql-transport-ws)",
            None,
        );
        refused.locations = error.locations;
        refused
            .extensions
            .get_or_insert_with(Default::default)
            .set("reason", Value::from(SUBSCRIPTION_NEEDS_WEBSOCKET));
        return with_code(refused, BAD_REQUEST);
    }
    tracing::error!(
        error = %error.message,
        path = ?error.path,
        "internal error: a GraphQL error without a code"
    );
    let mut hidden = ServerError::new("internal error", None);
    hidden.path = error.path;
    with_code(hidden, INTERNAL)
}

fn close_all(mut response: Response) -> Response {
    response.errors = response.errors.into_iter().map(close_the_door).collect();
    response
}

#[async_graphql::async_trait::async_trait]
impl Extension for ErrorDoorExtension {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        close_all(next.run(ctx).await)
    }

    fn subscribe<'s>(
        &self,
        ctx: &ExtensionContext<'_>,
        stream: BoxStream<'s, Response>,
        next: NextSubscribe<'_>,
    ) -> BoxStream<'s, Response> {
        next.run(ctx, stream).map(close_all).boxed()
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        next.run(ctx, query, variables)
            .await
            .map_err(|error| with_code(error, PARSE_FAILED))
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        next.run(ctx).await.map_err(|errors| {
            errors
                .into_iter()
                .map(|error| {
                    let code = validation_code(&error);
                    with_code(error, code)
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(error: &ServerError) -> Option<String> {
        match error.extensions.as_ref()?.get("code")? {
            Value::String(code) => Some(code.clone()),
            _ => None,
        }
    }

    #[test]
    fn an_error_without_a_code_is_internal_and_keeps_none_of_its_text() {
        let closed = close_the_door(ServerError::new(
            "error returned from database: no such table: users",
            None,
        ));
        assert_eq!(code_of(&closed).as_deref(), Some(INTERNAL));
        assert_eq!(closed.message, "internal error");
    }

    #[test]
    fn an_error_with_a_code_passes_unchanged() {
        let coded = with_code(ServerError::new("no such niche", None), "NOT_FOUND");
        let passed = close_the_door(coded);
        assert_eq!(code_of(&passed).as_deref(), Some("NOT_FOUND"));
        assert_eq!(passed.message, "no such niche");
    }

    #[test]
    fn a_coercion_failure_is_the_callers_input() {
        let closed = close_the_door(ServerError::new(
            r#"Failed to parse "Int": invalid digit"#,
            None,
        ));
        assert_eq!(code_of(&closed).as_deref(), Some(BAD_USER_INPUT));
    }

    #[test]
    fn a_variable_declared_but_not_given_is_the_callers_input() {
        let closed = close_the_door(ServerError::new("Variable signIns is not defined.", None));
        assert_eq!(code_of(&closed).as_deref(), Some(BAD_USER_INPUT));
        assert_eq!(closed.message, "Variable signIns is not defined.");
    }

    #[test]
    fn a_subscription_over_http_is_the_callers_mistake_and_says_where_to_go() {
        let closed = close_the_door(ServerError::new(LIBRARY_SUBSCRIPTION_OVER_HTTP, None));
        assert_eq!(code_of(&closed).as_deref(), Some(BAD_REQUEST));
        assert!(closed.message.contains("/graphql/ws"), "{}", closed.message);
        let reason = closed.extensions.as_ref().and_then(|e| e.get("reason"));
        assert_eq!(reason, Some(&Value::from(SUBSCRIPTION_NEEDS_WEBSOCKET)));
    }

    #[test]
    fn the_limits_are_told_apart() {
        for (message, code) in [
            (LIBRARY_TOO_DEEP, TOO_DEEP),
            (LIBRARY_TOO_COMPLEX, TOO_COMPLEX),
            ("Unknown field \"nope\"", VALIDATION_FAILED),
        ] {
            assert_eq!(validation_code(&ServerError::new(message, None)), code);
        }
    }
}
