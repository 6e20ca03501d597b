//! The service error enum and its one mapping per transport: a status and JSON body for REST, a
//! code in `extensions.code` for GraphQL. Internal errors are logged once, here, and never shown.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use sea_orm::DbErr;
use serde_json::json;

/// What went wrong in a use-case, in terms every transport can express.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input is wrong; nothing changed.
    #[error("{0}")]
    BadInput(String),
    /// Nobody is signed in (or the signature did not verify).
    #[error("{0}")]
    Unauthenticated(String),
    /// Signed in, but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// No such thing (or not visible to the caller).
    #[error("{0}")]
    NotFound(String),
    /// The thing is not in a state that allows this.
    #[error("{0}")]
    Conflict(String),
    /// The request body is larger than askloop accepts.
    #[error("{0}")]
    TooLarge(String),
    /// A feature is not configured (no secret, no webhook).
    #[error("{0}")]
    Unavailable(String),
    /// The niche's monthly agent budget cannot cover the bounty; nothing was stored.
    #[error("over budget: {remaining_minor} left until {resets_at}")]
    OverBudget {
        /// What is left this month, minor units.
        remaining_minor: i64,
        /// When the budget month starts again.
        resets_at: chrono::DateTime<chrono::Utc>,
    },
    /// A fault inside askloop or its database.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl From<DbErr> for ServiceError {
    fn from(err: DbErr) -> Self {
        ServiceError::Internal(err.into())
    }
}

impl ServiceError {
    /// The stable code clients match on.
    pub fn code(&self) -> &'static str {
        match self {
            ServiceError::BadInput(_) | ServiceError::TooLarge(_) => "BAD_USER_INPUT",
            ServiceError::Unauthenticated(_) => "UNAUTHENTICATED",
            ServiceError::Forbidden(_) => "FORBIDDEN",
            ServiceError::NotFound(_) => "NOT_FOUND",
            ServiceError::Conflict(_) => "CONFLICT",
            ServiceError::Unavailable(_) => "UNAVAILABLE",
            ServiceError::OverBudget { .. } => "OVER_BUDGET",
            ServiceError::Internal(_) => "INTERNAL",
        }
    }

    /// The HTTP status for the REST shim.
    pub fn status(&self) -> StatusCode {
        match self {
            ServiceError::BadInput(_) => StatusCode::BAD_REQUEST,
            ServiceError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ServiceError::Forbidden(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            ServiceError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServiceError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::OverBudget { .. } => StatusCode::PAYMENT_REQUIRED,
            ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Log internal faults once, with their cause chain; the caller's span carries the request id.
    fn log_if_internal(&self) {
        if let ServiceError::Internal(cause) = self {
            tracing::error!(error = format!("{cause:#}"), "internal error");
        }
    }
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        self.log_if_internal();
        let body = match &self {
            ServiceError::OverBudget {
                remaining_minor,
                resets_at,
            } => json!({
                "error": "over budget",
                "code": self.code(),
                "remainingMinor": remaining_minor,
                "resetsAt": resets_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            }),
            _ => json!({ "error": self.to_string(), "code": self.code() }),
        };
        (self.status(), axum::Json(body)).into_response()
    }
}

impl async_graphql::ErrorExtensions for ServiceError {
    fn extend(&self) -> async_graphql::Error {
        self.log_if_internal();
        let code = self.code();
        async_graphql::Error::new(self.to_string()).extend_with(|_, e| e.set("code", code))
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
        use async_graphql::ErrorExtensions;
        self.map_err(|err| err.extend())
    }
}
