//! What a plain HTML form posts: `POST /dashboard/questions/:id/answer|dismiss`. The answer is
//! a 303 back to a same-site `next` with `notice` or `error` in its query — never an open
//! redirect.

use axum::extract::{Path, State};
use axum::http::header::LOCATION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use utoipa::ToSchema;

use super::edge::{FormRefusal, TextForm};
use super::views::ErrorBody;
use crate::auth::Caller;
use crate::error::ServiceError;
use crate::service::questions::answering::{self, AnswerRequest};
use crate::state::AppState;

/// Where to go when `next` is missing or unsafe.
const HOME: &str = "/dashboard/niches";

/// Fields of the answer form.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AnswerForm {
    /// `answered`, `insufficient_context`, `needs_research` or `from_knowledge`.
    kind: Option<String>,
    /// `from_knowledge`: the knowledge entry that answers the question.
    entry_id: Option<String>,
    /// The chosen option (radio buttons).
    option_id: Option<String>,
    /// The words (text area); completing a task, its result.
    body: Option<String>,
    /// Completing a task: what it cost, in minor units (a number field; empty is none).
    actual_cost_minor: Option<String>,
    /// How sure, in percent (radio buttons or a number field; empty is none).
    confidence: Option<String>,
    /// Where to return.
    next: Option<String>,
}

/// Fields of the dismiss form.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DismissForm {
    /// Where to return.
    next: Option<String>,
    /// Why, for the agent (optional).
    reason: Option<String>,
}

/// `next` if it is a path on this site; otherwise the dashboard. Rejects `//host`, `/\host`,
/// schemes and anything with control characters.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && !path.chars().any(|c| c.is_control() || c == '\\') =>
        {
            path.to_owned()
        }
        _ => HOME.to_owned(),
    }
}

fn see_other(next: &str, key: &str, message: &str) -> Response {
    let separator = if next.contains('?') { '&' } else { '?' };
    let query = serde_urlencoded::to_string([(key, message)]).unwrap_or_default();
    let location = format!("{next}{separator}{query}");
    match HeaderValue::from_str(&location) {
        Ok(value) => (StatusCode::SEE_OTHER, [(LOCATION, value)]).into_response(),
        Err(_) => (
            StatusCode::SEE_OTHER,
            [(LOCATION, HeaderValue::from_static(HOME))],
        )
            .into_response(),
    }
}

fn outcome(next: &str, result: Result<String, ServiceError>) -> Response {
    match result {
        Ok(notice) => see_other(next, "notice", &notice),
        Err(ServiceError::Unauthenticated(_)) => {
            let query = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
            match HeaderValue::from_str(&format!("/login?{query}")) {
                Ok(value) => (StatusCode::SEE_OTHER, [(LOCATION, value)]).into_response(),
                Err(_) => (
                    StatusCode::SEE_OTHER,
                    [(LOCATION, HeaderValue::from_static("/login"))],
                )
                    .into_response(),
            }
        }
        // askloop's own failures are not the reader's to fix: a status, not a notice.
        Err(err @ (ServiceError::Internal(_) | ServiceError::TemporarilyUnavailable(_))) => {
            err.into_response()
        }
        Err(err) => see_other(next, "error", &err.to_string()),
    }
}

/// The question a form acts on, once the caller may write: signed in, and (with the session
/// cookie) posting from askloop's own pages.
fn writable_question(caller: &Caller, id: &str) -> Result<i64, ServiceError> {
    crate::service::people::access::signed_in(caller.viewer())?;
    caller.check_write()?;
    id.parse()
        .map_err(|_| ServiceError::NotFound("no such question".into()))
}

/// A form's optional whole number: empty is none, anything else must be one.
fn whole_number<N: std::str::FromStr>(
    field: Option<&str>,
    name: &str,
) -> Result<Option<N>, ServiceError> {
    match field.map(str::trim).filter(|f| !f.is_empty()) {
        None => Ok(None),
        Some(number) => number
            .parse()
            .map(Some)
            .map_err(|_| ServiceError::BadInput(format!("{name} must be a whole number"))),
    }
}

/// Answer from a form.
#[utoipa::path(
    post,
    path = "/dashboard/questions/{id}/answer",
    tag = "forms",
    operation_id = "answerFromForm",
    summary = "Answer from a plain HTML form",
    description = "The same rules as the answer route. Always a 303: back to `next` (a path on \
        this site, else the dashboard) with `notice` or `error` in its query, or to /login when \
        not signed in.",
    params(("id" = String, Path, description = "The question's id.")),
    request_body(content = AnswerForm, content_type = "application/x-www-form-urlencoded"),
    security(("sessionCookie" = []), ("bearer" = [])),
    responses(
        (status = 303, description = "Done or refused; see the Location header.", headers(("Location" = String, description = "Where to go next."))),
        (status = 500, description = "askloop's fault.", body = ErrorBody),
    )
)]
pub async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    form: Result<TextForm<AnswerForm>, FormRefusal>,
) -> Response {
    let form = match form {
        Ok(TextForm(form)) => form,
        Err(refused) => return outcome(&safe_next(refused.next.as_deref()), Err(refused.error)),
    };
    let next = safe_next(form.next.as_deref());
    let result = async {
        let question_id = writable_question(&caller, &id)?;
        let done = answering::answer_question(
            &state.db,
            &state.hint(),
            caller.viewer(),
            AnswerRequest {
                question_id,
                kind: form.kind.unwrap_or_default(),
                option_id: form.option_id,
                body: form.body,
                actual_cost_minor: whole_number(
                    form.actual_cost_minor.as_deref(),
                    "actualCostMinor",
                )?,
                confidence: whole_number(form.confidence.as_deref(), "confidence")?,
                entry_id: form
                    .entry_id
                    .as_deref()
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(|e| {
                        e.parse::<i64>().map_err(|_| {
                            ServiceError::BadInput("entryId must be a whole number".into())
                        })
                    })
                    .transpose()?,
            },
            Utc::now(),
        )
        .await?;
        Ok(done.notice)
    }
    .await;
    outcome(&next, result)
}

/// Dismiss from a form.
#[utoipa::path(
    post,
    path = "/dashboard/questions/{id}/dismiss",
    tag = "forms",
    operation_id = "dismissFromForm",
    summary = "Dismiss from a plain HTML form",
    description = "By an active, non-observer member of the niche or an admin, while the \
        question waits. Always a 303, like the answer form.",
    params(("id" = String, Path, description = "The question's id.")),
    request_body(content = DismissForm, content_type = "application/x-www-form-urlencoded"),
    security(("sessionCookie" = []), ("bearer" = [])),
    responses(
        (status = 303, description = "Done or refused; see the Location header.", headers(("Location" = String, description = "Where to go next."))),
        (status = 500, description = "askloop's fault.", body = ErrorBody),
    )
)]
pub async fn dismiss(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    form: Result<TextForm<DismissForm>, FormRefusal>,
) -> Response {
    let form = match form {
        Ok(TextForm(form)) => form,
        Err(refused) => return outcome(&safe_next(refused.next.as_deref()), Err(refused.error)),
    };
    let next = safe_next(form.next.as_deref());
    let result = async {
        let question_id = writable_question(&caller, &id)?;
        answering::dismiss_question(
            &state.db,
            &state.hint(),
            caller.viewer(),
            question_id,
            form.reason.as_deref(),
            Utc::now(),
        )
        .await?;
        Ok("Dismissed. Nobody will be asked about it again.".to_owned())
    }
    .await;
    outcome(&next, result)
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_never_leaves_the_site() {
        assert_eq!(
            safe_next(Some("/dashboard/niches/games/questions")),
            "/dashboard/niches/games/questions"
        );
        for hostile in [
            "https://evil.example",
            "//evil.example",
            "/\\evil.example",
            "javascript:alert(1)",
            "/x\r\nSet-Cookie: a=b",
            "",
        ] {
            assert_eq!(safe_next(Some(hostile)), "/dashboard/niches", "{hostile:?}");
        }
        assert_eq!(safe_next(None), "/dashboard/niches");
    }
}
