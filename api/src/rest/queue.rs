//! The member routes: `GET /api/v1/niches/:slug/questions` and
//! `POST /api/v1/niches/:slug/questions/:id/answer`. Same rules as GraphQL: they call the same
//! services with the same caller.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;

use super::views::{question_json, status_word};
use crate::auth::Caller;
use crate::error::ServiceError;
use crate::service::answering::{self, AnswerRequest};
use crate::service::queue::{self, Cursor, QueueFilter};
use crate::state::AppState;

/// Query string of the queue route.
#[derive(Debug, Deserialize)]
pub struct QueueParams {
    /// `waiting` (default), `open`, `researching`, `answered`, `dismissed` or `expired`.
    status: Option<String>,
    /// Page size, 1..=100.
    first: Option<i32>,
    /// The cursor of the last question seen.
    after: Option<String>,
}

fn parse_filter(raw: Option<&str>) -> Result<QueueFilter, ServiceError> {
    use entity::agent_questions::QuestionStatus as S;
    Ok(match raw.map(str::to_ascii_lowercase).as_deref() {
        None | Some("waiting") => QueueFilter::Waiting,
        Some("open") => QueueFilter::Only(S::Open),
        Some("researching") => QueueFilter::Only(S::Researching),
        Some("answered") => QueueFilter::Only(S::Answered),
        Some("dismissed") => QueueFilter::Only(S::Dismissed),
        Some("expired") => QueueFilter::Only(S::Expired),
        Some(other) => {
            return Err(ServiceError::BadInput(format!(
                "'{other}' is not a status: use waiting, open, researching, answered, dismissed or expired"
            )));
        }
    })
}

/// A page of a niche's questions, for its active members and admins.
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Query(params): Query<QueueParams>,
) -> Result<Response, ServiceError> {
    let niche = queue::niche_by_slug(&state.db, &slug).await?;
    let filter = parse_filter(params.status.as_deref())?;
    let first = queue::page_size(params.first)?;
    let after = params.after.as_deref().map(Cursor::decode).transpose()?;
    let page = queue::niche_questions(
        &state.db,
        caller.viewer(),
        &niche,
        filter,
        first,
        after,
        Utc::now(),
    )
    .await?;
    let next = page
        .has_next
        .then(|| page.items.last().map(|q| Cursor::of(q, filter).encode()))
        .flatten();
    Ok(Json(json!({
        "niche": niche.slug,
        "questions": page.items.iter().map(question_json).collect::<Vec<_>>(),
        "nextCursor": next,
    }))
    .into_response())
}

/// Body of the answer route.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerBody {
    /// `answered`, `insufficient_context` or `needs_research`.
    kind: Option<String>,
    /// The chosen option.
    option_id: Option<String>,
    /// The words.
    body: Option<String>,
}

/// Answer a question of niche `slug` (the question must belong to it, else 404).
pub async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    Path((slug, id)): Path<(String, String)>,
    body: Result<Json<AnswerBody>, JsonRejection>,
) -> Result<Response, ServiceError> {
    // Who, then whether from here, then what: an anonymous caller hears 401 whatever they sent.
    crate::service::access::signed_in(caller.viewer())?;
    caller.check_write()?;
    let question_id: i64 = id
        .parse()
        .map_err(|_| ServiceError::NotFound("no such question".into()))?;
    let Json(body) = body.map_err(|e| ServiceError::BadInput(e.body_text()))?;
    let outcome = answering::answer_in_niche(
        &state.db,
        &state.hint(),
        caller.viewer(),
        &slug,
        AnswerRequest {
            question_id,
            kind: body.kind.unwrap_or_default(),
            option_id: body.option_id,
            body: body.body,
        },
        Utc::now(),
    )
    .await?;
    Ok(Json(json!({
        "answer": {
            "id": outcome.answer.id,
            "kind": outcome.answer.kind,
            "optionId": outcome.answer.option_id,
            "body": outcome.answer.body,
        },
        "question": { "id": outcome.question.id, "status": status_word(outcome.question.status) },
        "points": outcome.points,
        "contributionStatus": outcome.contribution_status,
        "notice": outcome.notice,
    }))
    .into_response())
}
