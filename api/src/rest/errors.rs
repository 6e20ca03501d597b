//! How the HTTP surfaces (REST, the dashboard's form routes, MCP's transport) say a
//! [`ServiceError`]: a status, the JSON body [`ServiceError::body`] and, when waiting helps,
//! `Retry-After` in whole seconds. Internal faults are logged once, here, as the response is made.

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{self, ServiceError};

/// The HTTP status of `err`.
pub fn status(err: &ServiceError) -> StatusCode {
    match err {
        ServiceError::BadInput(_) => StatusCode::BAD_REQUEST,
        ServiceError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
        ServiceError::Forbidden(_) | ServiceError::SelfReview(_) => StatusCode::FORBIDDEN,
        ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
        ServiceError::Conflict(_) => StatusCode::CONFLICT,
        ServiceError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        ServiceError::Unavailable(_) | ServiceError::TemporarilyUnavailable(_) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ServiceError::OverBudget { .. } => StatusCode::PAYMENT_REQUIRED,
        ServiceError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The `Retry-After` value of `err`, when waiting helps.
pub fn retry_after(err: &ServiceError) -> Option<HeaderValue> {
    err.retry_after_seconds().map(HeaderValue::from)
}

/// The `Retry-After` value of a temporary failure: [`error::RETRY_AFTER`] in whole seconds.
pub fn temporary_retry_after() -> HeaderValue {
    HeaderValue::from(error::RETRY_AFTER.as_secs().max(1))
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        self.log_if_internal();
        let wait = retry_after(&self);
        let mut response = (status(&self), axum::Json(self.body())).into_response();
        if let Some(value) = wait {
            response.headers_mut().insert(RETRY_AFTER, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Conflict;

    fn retry_after_of(response: &Response) -> Option<&str> {
        response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
    }

    #[test]
    fn each_error_has_its_status_and_only_waiting_errors_say_retry_after() {
        let cases = [
            (ServiceError::BadInput("x".into()), 400, None),
            (ServiceError::TooLarge("x".into()), 413, None),
            (ServiceError::Unauthenticated("x".into()), 401, None),
            (ServiceError::Forbidden("x".into()), 403, None),
            (ServiceError::SelfReview("x".into()), 403, None),
            (ServiceError::NotFound("x".into()), 404, None),
            (ServiceError::Conflict(Conflict::QuestionSettled), 409, None),
            // Not configured: waiting does not help.
            (ServiceError::Unavailable("x".into()), 503, None),
            (
                ServiceError::TemporarilyUnavailable(anyhow::anyhow!("57P03")),
                503,
                Some("2"),
            ),
            (
                ServiceError::OverBudget {
                    remaining_minor: 0,
                    resets_at: chrono::Utc::now(),
                },
                402,
                None,
            ),
            (
                ServiceError::RateLimited {
                    message: "x".into(),
                    reason: error::TEST_SENDS_PER_WEBHOOK,
                    retry_after: std::time::Duration::from_millis(1500),
                },
                429,
                Some("2"),
            ),
            (ServiceError::Internal(anyhow::anyhow!("secret")), 500, None),
        ];
        for (err, expected, wait) in cases {
            let code = err.code();
            let response = err.into_response();
            assert_eq!(response.status().as_u16(), expected, "{code}");
            assert_eq!(retry_after_of(&response), wait, "{code}");
        }
        assert_eq!(temporary_retry_after(), "2");
    }
}
