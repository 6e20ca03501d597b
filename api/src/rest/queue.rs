//! The member routes: `GET /api/v1/niches/:slug/questions` and
//! `POST /api/v1/niches/:slug/questions/:id/answer`. Same rules as GraphQL: they call the same
//! services with the same caller.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;
use utoipa::IntoParams;

use super::edge::TextJson;
use super::views::{
    AnswerBody, AnswerResponse, AnswerView, ErrorBody, QuestionRef, QuestionView, QueuePage,
};
use crate::auth::Caller;
use crate::error::ServiceError;
use crate::service::questions::answering::{self, AnswerRequest};
use crate::service::questions::queue::{self, Cursor, QueueFilter};
use crate::state::AppState;

/// Query string of the queue route.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueueParams {
    /// `waiting` (open or researching; the default), `open`, `researching`, `answered`,
    /// `dismissed` or `expired`.
    status: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    first: Option<i32>,
    /// The `nextCursor` of the page before.
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
#[utoipa::path(
    get,
    path = "/api/v1/niches/{slug}/questions",
    tag = "members",
    operation_id = "listQuestions",
    summary = "A page of a niche's questions",
    description = "For the niche's active members and admins; the same rules as the GraphQL \
        queue. See docs/contract.md#member-routes.",
    params(("slug" = String, Path, description = "The niche's slug."), QueueParams),
    security(("bearer" = []), ("sessionCookie" = [])),
    responses(
        (status = 200, description = "A page.", body = QueuePage),
        (status = 400, description = "A bad status, page size or cursor.", body = ErrorBody),
        (status = 401, description = "Not signed in, or a bearer token that does not resolve.", body = ErrorBody),
        (status = 403, description = "Not a member of the niche.", body = ErrorBody),
        (status = 404, description = "No such niche.", body = ErrorBody),
    )
)]
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
    Ok(Json(QueuePage {
        niche: niche.slug,
        questions: page.items.iter().map(QuestionView::of).collect(),
        next_cursor: next,
    })
    .into_response())
}

/// Answer a question of niche `slug` (the question must belong to it, else 404).
#[utoipa::path(
    post,
    path = "/api/v1/niches/{slug}/questions/{id}/answer",
    tag = "members",
    operation_id = "answerQuestion",
    summary = "Answer, decline or send back a question",
    description = "By an active, non-observer member of the niche. Exactly one answer wins; the \
        others get 409. With the session cookie the request must come from askloop's own \
        origin. See docs/contract.md#answering.",
    params(
        ("slug" = String, Path, description = "The question's niche."),
        ("id" = i64, Path, description = "The question's id."),
    ),
    request_body = AnswerBody,
    security(("bearer" = []), ("sessionCookie" = [])),
    responses(
        (status = 200, description = "Stored.", body = AnswerResponse),
        (status = 400, description = "A bad kind, or an answer with neither an option nor words.", body = ErrorBody),
        (status = 401, description = "Not signed in, or a bearer token that does not resolve.", body = ErrorBody),
        (status = 403, description = "Not an active, non-observer member of the niche; or a cookie write from another site.", body = ErrorBody),
        (status = 404, description = "No such question in this niche.", body = ErrorBody),
        (status = 409, description = "The question is settled or expired, or already answered by this person.", body = ErrorBody),
    )
)]
pub async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    Path((slug, id)): Path<(String, String)>,
    body: Result<TextJson<AnswerBody>, ServiceError>,
) -> Result<Response, ServiceError> {
    // Who, then whether from here, then what: an anonymous caller hears 401 whatever they sent.
    crate::service::people::access::signed_in(caller.viewer())?;
    caller.check_write()?;
    let question_id: i64 = id
        .parse()
        .map_err(|_| ServiceError::NotFound("no such question".into()))?;
    let TextJson(body) = body?;
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
            actual_cost_minor: body.actual_cost_minor,
            entry_id: body.entry_id,
            confidence: body.confidence,
        },
        Utc::now(),
    )
    .await?;
    Ok(Json(AnswerResponse {
        answer: AnswerView {
            id: outcome.answer.id,
            kind: outcome.answer.kind.into(),
            option_id: outcome.answer.option_id,
            body: outcome.answer.body,
        },
        question: QuestionRef {
            id: outcome.question.id,
            status: outcome.question.status.into(),
        },
        points: outcome.points,
        contribution_status: outcome.contribution_status.map(Into::into),
        notice: outcome.notice,
    })
    .into_response())
}
