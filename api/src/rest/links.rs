//! The signed links askloop mails (docs/contract.md#email): `GET /email/verify` verifies an
//! address; `GET /notifications/unsubscribe` shows what the link stops and a button, and `POST`
//! to the same URL (the button, or a mail client's one-click `List-Unsubscribe-Post`) stops it.
//! The token in the link is the only credential; a link that is not askloop's, is cut short or
//! ran out is refused with 400 and changes nothing.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY};
use axum::response::{Html, IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::domain::html::escape;
use crate::error::ServiceError;
use crate::service::reach;
use crate::state::AppState;

/// The query of a signed link.
#[derive(Debug, Deserialize, IntoParams)]
pub struct LinkQuery {
    /// The signed token from the mail.
    token: Option<String>,
}

/// A small page of askloop's own: a heading, a message, and maybe a form.
fn page(status: StatusCode, title: &str, message: &str, form: Option<(&str, &str)>) -> Response {
    let form = form
        .map(|(action, label)| {
            format!(
                "<form method=\"post\" action=\"{}\"><button type=\"submit\">{}</button></form>",
                escape(action),
                escape(label)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · askloop</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}}\
         button{{font-size:1rem;padding:.5rem 1rem}}button:focus-visible,a:focus-visible{{outline:3px solid #1a56db;outline-offset:2px}}</style>\
         </head><body><main><h1>{title}</h1><p>{message}</p>{form}\
         <p><a href=\"/dashboard/settings\">Your notification settings</a></p></main></body></html>",
        title = escape(title),
        message = escape(message),
    );
    (
        status,
        [
            (CACHE_CONTROL, "no-store"),
            (REFERRER_POLICY, "no-referrer"),
            (
                CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
            ),
        ],
        Html(body),
    )
        .into_response()
}

fn refused(err: &ServiceError) -> Response {
    match err {
        ServiceError::BadInput(message) | ServiceError::NotFound(message) => page(
            StatusCode::BAD_REQUEST,
            "This link does not work",
            message,
            None,
        ),
        other => {
            tracing::warn!(error = %other, "a mailed link failed");
            // A database out of reach is said as temporary; anything else is askloop's fault.
            let status = if other.retry_after().is_some() {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            let mut response = page(
                status,
                "Something went wrong",
                "askloop could not do this just now; try the link again in a moment.",
                None,
            );
            if let Some(wait) = super::errors::retry_after(other) {
                response
                    .headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, wait);
            }
            response
        }
    }
}

fn token_of(query: &LinkQuery) -> Result<&str, ServiceError> {
    query
        .token
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            ServiceError::BadInput(
                "this link has no token; use the whole link from the mail".into(),
            )
        })
}

/// Verify an address from its mailed link.
#[utoipa::path(
    get,
    path = "/email/verify",
    tag = "links",
    operation_id = "verifyEmail",
    summary = "Verify an email address from its mailed link",
    params(LinkQuery),
    responses(
        (status = 200, description = "Verified; an HTML page says so.", content_type = "text/html"),
        (status = 400, description = "Not askloop's link, cut short, run out, or for an address that is no longer the person's; nothing changed.", content_type = "text/html"),
    )
)]
pub async fn verify_email(
    State(state): State<AppState>,
    Query(query): Query<LinkQuery>,
) -> Response {
    let result = async {
        let token = token_of(&query)?;
        reach::verify_email(&state.db, token, Utc::now()).await
    }
    .await;
    match result {
        Ok(email) => page(
            StatusCode::OK,
            "Address verified",
            &format!("askloop will send question notifications to {email}, as your settings say."),
            None,
        ),
        Err(err) => refused(&err),
    }
}

/// What an unsubscribe link stops, with a button to stop it.
#[utoipa::path(
    get,
    path = "/notifications/unsubscribe",
    tag = "links",
    operation_id = "unsubscribePage",
    summary = "Show what an unsubscribe link stops",
    description = "Changes nothing (mail scanners follow links); the page's button POSTs to the same URL.",
    params(LinkQuery),
    responses(
        (status = 200, description = "The page with the button.", content_type = "text/html"),
        (status = 400, description = "Not askloop's link; nothing changed.", content_type = "text/html"),
    )
)]
pub async fn unsubscribe_page(
    State(state): State<AppState>,
    Query(query): Query<LinkQuery>,
) -> Response {
    let result = async {
        let token = token_of(&query)?;
        reach::unsubscribe_target(&state.db, token).await
    }
    .await;
    match result {
        Ok((_, niche)) => {
            let action = format!(
                "/notifications/unsubscribe?{}",
                serde_urlencoded::to_string([("token", query.token.as_deref().unwrap_or(""))])
                    .unwrap_or_default()
            );
            page(
                StatusCode::OK,
                "Stop mail about this niche?",
                &format!(
                    "askloop will stop mailing you about questions in {}.",
                    niche.name
                ),
                Some((&action, "Stop these mails")),
            )
        }
        Err(err) => refused(&err),
    }
}

/// Stop a niche's mail for the link's person (one click).
#[utoipa::path(
    post,
    path = "/notifications/unsubscribe",
    tag = "links",
    operation_id = "unsubscribe",
    summary = "Stop a niche's mail (one-click unsubscribe)",
    description = "What the page's button and a mail client's List-Unsubscribe-Post send. Doing it twice is harmless.",
    params(LinkQuery),
    responses(
        (status = 200, description = "Stopped; an HTML page says so.", content_type = "text/html"),
        (status = 400, description = "Not askloop's link; nothing changed.", content_type = "text/html"),
    )
)]
pub async fn unsubscribe(
    State(state): State<AppState>,
    Query(query): Query<LinkQuery>,
) -> Response {
    let result = async {
        let token = token_of(&query)?;
        reach::unsubscribe(&state.db, token, Utc::now()).await
    }
    .await;
    match result {
        Ok(niche) => page(
            StatusCode::OK,
            "Unsubscribed",
            &format!(
                "askloop will not mail you about {} any more. You can turn it back on in your settings.",
                niche.name
            ),
            None,
        ),
        Err(err) => refused(&err),
    }
}
