//! The one error a caller matches on. askloop's refusals arrive as a status and
//! `{"error": "<message>", "code": "<CODE>", "reason"?}` (docs/contract.md#errors); each code
//! becomes its own variant, so a caller matches on the code (and a conflict's reason), never on
//! the message, which askloop may reword.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::question::QuestionState;

/// What went wrong talking to askloop.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `BAD_USER_INPUT` (400, or 413 for a body over 256 KiB): the input is wrong and nothing
    /// changed. Retrying the same request cannot help.
    #[error("askloop refused the input: {message}")]
    BadInput {
        /// askloop's message (names the field).
        message: String,
    },
    /// `UNAUTHENTICATED` (401): the signature failed — wrong secret, a retired secret, an
    /// unknown agent slug, or a clock more than 300 s off.
    #[error("askloop did not accept the signature: {message}")]
    Unauthenticated {
        /// askloop's message (`bad signature`, `signature expired`, …).
        message: String,
    },
    /// `FORBIDDEN` (403): the agent is disabled, or may not ask in that niche.
    #[error("askloop forbids it: {message}")]
    Forbidden {
        /// askloop's message.
        message: String,
    },
    /// `NOT_FOUND` (404), or a lookup that found no such question: no such niche, or no
    /// question of this agent's with that external id.
    #[error("not found: {message}")]
    NotFound {
        /// askloop's message.
        message: String,
    },
    /// `CONFLICT` (409): the niche is closed, the external id belongs to another agent's
    /// question, or the question is not waiting for research.
    #[error("conflict: {message}")]
    Conflict {
        /// askloop's message.
        message: String,
        /// The stable reason (`NICHE_CLOSED`, `EXTERNAL_ID_TAKEN`, `NOT_AWAITING_RESEARCH`, …).
        reason: Option<String>,
    },
    /// `OVER_BUDGET` (402): the bounty does not fit the niche's budget this month; nothing was
    /// stored.
    #[error("over budget: {} left until {}", show(.remaining_minor), show(.resets_at))]
    OverBudget {
        /// What is left this month, in minor units.
        remaining_minor: Option<i64>,
        /// When the budget starts again.
        resets_at: Option<DateTime<Utc>>,
    },
    /// 429: askloop (or something in front of it) asks the agent to slow down. Retried.
    #[error("askloop asks to slow down (HTTP 429)")]
    RateLimited {
        /// How long it asked to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// `UNAVAILABLE` (503 from askloop itself) without a `Retry-After`: askloop has no signing
    /// secret configured. Not retried: it does not pass by waiting.
    #[error("askloop is not configured for this: {message}")]
    Unavailable {
        /// askloop's message.
        message: String,
    },
    /// `UNAVAILABLE` with reason `TEMPORARILY_UNAVAILABLE` (503, with `Retry-After`): askloop
    /// cannot reach its database just now (restarting, unreachable, out of connections).
    /// Retried, no sooner than askloop asks.
    #[error("askloop is unavailable for now: {message}")]
    TemporarilyUnavailable {
        /// askloop's message.
        message: String,
        /// How long askloop asked to wait (its `Retry-After`, or `retryAfterSeconds`).
        retry_after: Option<Duration>,
    },
    /// A 5xx: a fault inside askloop or in front of it. Retried.
    #[error("askloop failed (HTTP {status}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// askloop's message, or the start of whatever body came.
        message: String,
    },
    /// A status or code this crate does not expect.
    #[error("unexpected answer from askloop (HTTP {status}): {message}")]
    Unexpected {
        /// The HTTP status.
        status: u16,
        /// The code, if the body had one.
        code: Option<String>,
        /// The message, or the start of whatever body came.
        message: String,
    },
    /// askloop could not be reached, or the connection failed or timed out. Retried.
    #[error("could not reach askloop: {0}")]
    Transport(#[source] reqwest::Error),
    /// A success whose body this crate could not read.
    #[error("askloop's answer could not be read: {0}")]
    InvalidResponse(String),
    /// [`Client::wait_for_answer`](crate::Client::wait_for_answer): the caller's timeout passed
    /// while the question was still open. It stays open; wait again to keep waiting.
    #[error("the question is still open after the wait")]
    TimedOut {
        /// The question as last read.
        last: Box<QuestionState>,
    },
    /// [`Client::wait_for_answer`](crate::Client::wait_for_answer): the question's time ran out
    /// (with a minute's grace for askloop's expiry sweep) and askloop still shows it open. No
    /// answer can come any more.
    #[error("the question's time ran out at {} without an answer", .last.expires_at)]
    PastExpiry {
        /// The question as last read.
        last: Box<QuestionState>,
    },
}

fn show<T: std::fmt::Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "unknown".to_owned(), ToString::to_string)
}

impl Error {
    /// Whether trying the same request again may succeed: network failures, 5xx (a database out
    /// of reach for now included, but not askloop's own "not configured") and 429. Never a 4xx:
    /// the same request would be refused again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Transport(_)
                | Error::Server { .. }
                | Error::RateLimited { .. }
                | Error::TemporarilyUnavailable { .. }
        )
    }

    /// How long askloop (or something in front of it) asked to wait before the same request is
    /// sent again, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after }
            | Error::TemporarilyUnavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The error a non-2xx response stands for: its `code` decides, and the status where there
    /// is no code (a proxy's error page, say).
    pub(crate) fn from_response(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Self {
        let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
        let code = parsed.as_ref().and_then(|b| b.code.clone());
        let message = parsed
            .as_ref()
            .and_then(|b| b.error.clone())
            .unwrap_or_else(|| snippet(body));
        if status == 429 {
            return Error::RateLimited { retry_after };
        }
        match (code.as_deref(), status) {
            (Some("BAD_USER_INPUT"), _) | (None, 400 | 413) => Error::BadInput { message },
            (Some("UNAUTHENTICATED"), _) | (None, 401) => Error::Unauthenticated { message },
            (Some("FORBIDDEN"), _) | (None, 403) => Error::Forbidden { message },
            (Some("NOT_FOUND"), _) | (None, 404) => Error::NotFound { message },
            (Some("CONFLICT"), _) | (None, 409) => Error::Conflict {
                message,
                reason: parsed.and_then(|b| b.reason),
            },
            (Some("OVER_BUDGET"), _) | (None, 402) => Error::OverBudget {
                remaining_minor: parsed.as_ref().and_then(|b| b.remaining_minor),
                resets_at: parsed.and_then(|b| b.resets_at),
            },
            (Some("UNAVAILABLE"), _) => {
                let said = retry_after.or_else(|| {
                    parsed
                        .as_ref()
                        .and_then(|b| b.retry_after_seconds)
                        .map(Duration::from_secs)
                });
                let temporary = parsed
                    .as_ref()
                    .and_then(|b| b.reason.as_deref())
                    .is_some_and(|reason| reason == TEMPORARILY_UNAVAILABLE);
                if temporary || said.is_some() {
                    Error::TemporarilyUnavailable {
                        message,
                        retry_after: said,
                    }
                } else {
                    Error::Unavailable { message }
                }
            }
            (Some("INTERNAL") | None, 500..=599) => Error::Server { status, message },
            _ => Error::Unexpected {
                status,
                code,
                message,
            },
        }
    }
}

/// The start of a body that is not askloop's error JSON, for a message.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(no body)".to_owned()
    } else {
        text.chars().take(200).collect()
    }
}

/// The reason of a 503 that passes by waiting (docs/contract.md#errors).
const TEMPORARILY_UNAVAILABLE: &str = "TEMPORARILY_UNAVAILABLE";

/// askloop's error body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody {
    error: Option<String>,
    code: Option<String>,
    reason: Option<String>,
    retry_after_seconds: Option<u64>,
    remaining_minor: Option<i64>,
    resets_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from(status: u16, body: serde_json::Value) -> Error {
        Error::from_response(status, None, body.to_string().as_bytes())
    }

    fn error(code: &str, message: &str) -> serde_json::Value {
        json!({"error": message, "code": code})
    }

    #[test]
    fn each_code_is_its_own_variant_with_askloops_message() {
        assert!(matches!(
            from(400, error("BAD_USER_INPUT", "title is required")),
            Error::BadInput { message } if message == "title is required"
        ));
        assert!(matches!(
            from(
                413,
                error("BAD_USER_INPUT", "the request body is larger than 256 KiB")
            ),
            Error::BadInput { .. }
        ));
        assert!(matches!(
            from(401, error("UNAUTHENTICATED", "bad signature")),
            Error::Unauthenticated { message } if message == "bad signature"
        ));
        assert!(matches!(
            from(403, error("FORBIDDEN", "this agent is disabled")),
            Error::Forbidden { .. }
        ));
        assert!(matches!(
            from(404, error("NOT_FOUND", "no niche 'x'")),
            Error::NotFound { message } if message == "no niche 'x'"
        ));
        assert!(matches!(
            from(503, error("UNAVAILABLE", "no signing secret is configured")),
            Error::Unavailable { .. }
        ));
        assert!(matches!(
            from(500, error("INTERNAL", "internal error")),
            Error::Server { status: 500, .. }
        ));
    }

    #[test]
    fn a_conflict_carries_its_reason() {
        let conflict = from(
            409,
            json!({"error": "closed", "code": "CONFLICT", "reason": "NICHE_CLOSED"}),
        );
        assert!(matches!(
            conflict,
            Error::Conflict { reason: Some(ref r), .. } if r == "NICHE_CLOSED"
        ));
        assert!(matches!(
            from(409, error("CONFLICT", "x")),
            Error::Conflict { reason: None, .. }
        ));
    }

    #[test]
    fn over_budget_carries_what_is_left_and_when_it_resets() {
        let refused = from(
            402,
            json!({"error": "over budget", "code": "OVER_BUDGET", "remainingMinor": 100,
                   "resetsAt": "2026-12-01T00:00:00Z"}),
        );
        let Error::OverBudget {
            remaining_minor,
            resets_at,
        } = refused
        else {
            panic!("not over budget: {refused:?}");
        };
        assert_eq!(remaining_minor, Some(100));
        assert_eq!(
            resets_at.map(|t| t.to_rfc3339()),
            Some("2026-12-01T00:00:00+00:00".to_owned())
        );
        assert!(
            from(402, json!({"error": "over budget", "code": "OVER_BUDGET"}))
                .to_string()
                .contains("unknown left")
        );
    }

    #[test]
    fn without_askloops_body_the_status_decides() {
        let page = |status| Error::from_response(status, None, b"<html>Bad Gateway</html>");
        assert!(matches!(page(400), Error::BadInput { .. }));
        assert!(matches!(page(401), Error::Unauthenticated { .. }));
        assert!(matches!(
            page(402),
            Error::OverBudget {
                remaining_minor: None,
                ..
            }
        ));
        assert!(matches!(page(403), Error::Forbidden { .. }));
        assert!(matches!(page(404), Error::NotFound { .. }));
        assert!(matches!(page(409), Error::Conflict { .. }));
        assert!(matches!(
            page(502),
            Error::Server { status: 502, ref message } if message == "<html>Bad Gateway</html>"
        ));
        assert!(matches!(
            page(418),
            Error::Unexpected {
                status: 418,
                code: None,
                ..
            }
        ));
        assert!(matches!(
            Error::from_response(503, None, b""),
            Error::Server { ref message, .. } if message == "(no body)"
        ));
    }

    #[test]
    fn an_unknown_code_is_unexpected_and_names_it() {
        assert!(matches!(
            from(400, error("SOMETHING_NEW", "x")),
            Error::Unexpected { status: 400, code: Some(ref c), .. } if c == "SOMETHING_NEW"
        ));
    }

    #[test]
    fn a_429_is_rate_limited_with_the_wait_it_asked_for() {
        let limited = Error::from_response(429, Some(Duration::from_secs(3)), b"slow down");
        assert!(matches!(
            limited,
            Error::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(3)
        ));
    }

    #[test]
    fn a_503_that_passes_by_waiting_is_temporary_with_the_wait_it_asked_for() {
        let temporary = json!({"error": "askloop cannot reach its database just now",
            "code": "UNAVAILABLE", "reason": "TEMPORARILY_UNAVAILABLE", "retryAfterSeconds": 2});
        let body = temporary.to_string();
        // The header wins; without it, the body says.
        let with_header = Error::from_response(503, Some(Duration::from_secs(5)), body.as_bytes());
        assert!(matches!(
            with_header,
            Error::TemporarilyUnavailable { retry_after: Some(d), .. } if d == Duration::from_secs(5)
        ));
        let from_body = Error::from_response(503, None, body.as_bytes());
        assert_eq!(from_body.retry_after(), Some(Duration::from_secs(2)));
        assert!(from_body.is_transient());
        // An UNAVAILABLE with a Retry-After but no reason (an older askloop, a proxy's rewrite)
        // is temporary too.
        let header_only = Error::from_response(
            503,
            Some(Duration::from_secs(1)),
            error("UNAVAILABLE", "try later").to_string().as_bytes(),
        );
        assert!(matches!(header_only, Error::TemporarilyUnavailable { .. }));
        // Not configured stays not configured.
        assert!(matches!(
            from(503, error("UNAVAILABLE", "no signing secret is configured")),
            Error::Unavailable { .. }
        ));
        assert_eq!(
            Error::RateLimited {
                retry_after: Some(Duration::from_secs(3))
            }
            .retry_after(),
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn only_network_failures_5xx_and_429_are_transient() {
        assert!(
            Error::Server {
                status: 502,
                message: String::new()
            }
            .is_transient()
        );
        assert!(Error::RateLimited { retry_after: None }.is_transient());
        for lasting in [
            from(400, error("BAD_USER_INPUT", "x")),
            from(401, error("UNAUTHENTICATED", "x")),
            from(403, error("FORBIDDEN", "x")),
            from(404, error("NOT_FOUND", "x")),
            from(409, error("CONFLICT", "x")),
            from(402, error("OVER_BUDGET", "x")),
            from(503, error("UNAVAILABLE", "x")),
            Error::InvalidResponse("x".into()),
        ] {
            assert!(!lasting.is_transient(), "{lasting:?}");
        }
    }
}
