//! `POST /api/v1/internal/expert-questions/lookup`: an agent reads its questions by external id
//! (signed), optionally waiting up to 55 s for one of them to change.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use entity::agent_questions::ExchangeKind;

use super::signed::agent_signed_and_parsed;
use super::views::{
    AnswererView, ErrorBody, FoundQuestion, KnowledgeRef, LookedUp, LookedUpAnswer, LookupBody,
    LookupResponse, MissingQuestion,
};
use crate::service::questions::lookup::{self, Looked};
use crate::state::AppState;

/// Verify, parse and answer a lookup.
#[utoipa::path(
    post,
    path = "/api/v1/internal/expert-questions/lookup",
    tag = "agents",
    operation_id = "lookup",
    summary = "Read the agent's own questions, optionally waiting for a change",
    description = "Each external id's question, in the order asked: its status and, once \
        answered, the answer with its review state. With waitSeconds and none of them settled, \
        the request is held until one changes or the time is up. Another agent's questions are \
        reported as not found. See docs/contract.md#looking-up-questions.",
    request_body = LookupBody,
    security(("agentSignature" = [], "agentSlug" = []), ("agentSignature" = [])),
    responses(
        (status = 200, description = "The questions.", body = LookupResponse),
        (status = 400, description = "A field is missing or wrong.", body = ErrorBody),
        (status = 401, description = "No, a malformed, an expired or a wrong signature.", body = ErrorBody),
        (status = 403, description = "The agent is disabled.", body = ErrorBody),
        (status = 404, description = "No such niche.", body = ErrorBody),
        (status = 413, description = "The body is larger than 256 KiB.", body = ErrorBody),
        (status = 503, description = "No signing secret is configured; or, with reason `TEMPORARILY_UNAVAILABLE` and `Retry-After`, the database is out of reach for now (send the same request again).", body = ErrorBody),
    )
)]
pub async fn lookup(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (request, asker) =
        match agent_signed_and_parsed(&state, &headers, body, lookup::parse).await {
            Ok(parsed) => parsed,
            Err(refused) => return refused.into_response(),
        };
    let found = match lookup::lookup(&state.db, &state.live, &asker, request).await {
        Ok(found) => found,
        Err(err) => return err.into_response(),
    };
    let mut questions = Vec::with_capacity(found.len());
    for looked in found {
        let several = match &looked.found {
            Some((question, _)) => {
                match crate::service::questions::consensus::several_json(&state.db, question).await
                {
                    Ok(several) => several,
                    Err(err) => return err.into_response(),
                }
            }
            None => None,
        };
        let mut entry = looked_up(looked);
        if let LookedUp::Found(found) = &mut entry {
            found.several = several;
        }
        questions.push(entry);
    }
    Json(LookupResponse { questions }).into_response()
}

fn looked_up(looked: Looked) -> LookedUp {
    match looked.found {
        None => LookedUp::Missing(MissingQuestion {
            external_id: looked.external_id,
            found: false,
        }),
        Some((q, answer)) => LookedUp::Found(Box::new(FoundQuestion {
            external_id: looked.external_id,
            found: true,
            id: q.id,
            kind: match q.kind {
                ExchangeKind::Question => "question".into(),
                ExchangeKind::Task => "task".into(),
            },
            budget_limit_minor: (q.kind == ExchangeKind::Task).then_some(q.bounty_minor),
            status: q.status.into(),
            expires_at: q.expires_at,
            answered_at: q.answered_at,
            several: None,
            answer: answer.map(|found| LookedUpAnswer {
                knowledge: found.knowledge.as_ref().map(|entry| {
                    KnowledgeRef::of(entry, found.answer.knowledge_entry_id.is_some())
                }),
                answer_id: found.answer.id,
                option_id: found.answer.option_id,
                body: found.answer.body,
                actual_cost_minor: found.answer.actual_cost_minor,
                answered_by: found.handle,
                created_at: found.answer.created_at,
                review: found.review.into(),
                confidence: found.answer.confidence,
                answerer: AnswererView::of(&found.answerer),
            }),
        })),
    }
}
