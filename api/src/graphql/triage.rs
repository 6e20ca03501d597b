//! The dashboard's working day: "My activity" (`myActivity`) and who is answering what
//! (`answering`, `answeringNow`). The triage queue itself is `Niche.queue` (`types`).

use std::sync::Arc;
use std::time::Instant;

use async_graphql::connection::{Connection, Edge};
use async_graphql::{Context, ID, Object, Result, SimpleObject, Subscription};
use chrono::Utc;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::broadcast::error::RecvError;

use super::caller_of;
use super::types::{Answer, Question, QuestionOption};
use crate::db::Db;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::live::LiveHub;
use crate::service::questions::presence::{Answering, Presence};
use crate::service::questions::triage;
use crate::service::{people::access, questions::queue, reach::subscriptions};

/// One thing I did to a question.
#[derive(SimpleObject)]
pub struct Activity {
    /// My answer or decline, with its review state.
    pub answer: Answer,
    /// The question as it is now.
    pub question: Question,
    /// The question's niche.
    pub niche_slug: String,
}

/// A page of my activity.
pub type ActivityConnection = Connection<String, Activity>;

/// "My activity".
#[derive(Default)]
pub struct ActivityQuery;

#[Object]
impl ActivityQuery {
    /// What I answered, declined and sent back, newest first, with each question's state now and
    /// my answer's review verdict; questions of niches I may no longer read are left out.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn my_activity(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<ActivityConnection> {
        let db = ctx.data::<Db>()?;
        let first = queue::page_size(first).gql()?;
        let before = after
            .as_deref()
            .map(|raw| {
                raw.strip_prefix('a')
                    .and_then(|id| id.parse::<i64>().ok())
                    .ok_or_else(|| {
                        ServiceError::BadInput("that cursor is not one askloop gave out".into())
                    })
            })
            .transpose()
            .gql()?;
        let (items, has_next) = triage::my_activity(db, caller_of(ctx)?.viewer(), first, before)
            .await
            .gql()?;
        let handle = caller_of(ctx)?
            .viewer()
            .map(|v| v.handle.clone())
            .unwrap_or_default();
        let mut connection = Connection::new(before.is_some(), has_next);
        connection.edges.extend(items.into_iter().map(|item| {
            let options: Vec<QuestionOption> =
                serde_json::from_value(item.question.options.clone()).unwrap_or_default();
            let cursor = format!("a{}", item.answer.id);
            Edge::new(
                cursor,
                Activity {
                    answer: Answer::from_model(item.answer, handle.clone(), item.review, &options),
                    question: Question::from(item.question),
                    niche_slug: item.niche_slug,
                },
            )
        }));
        Ok(connection)
    }
}

fn parse_question_id(id: &ID) -> Result<i64, ServiceError> {
    id.parse()
        .map_err(|_| ServiceError::BadInput(format!("'{}' is not a question id", id.as_str())))
}

/// Saying what I am answering.
#[derive(Default)]
pub struct PresenceMutation;

#[Object]
impl PresenceMutation {
    /// I have waiting question `questionId`'s answer form open (`open: true`, renewed at least
    /// every 30 s while it stays open), or none any more (`open: false`). Others of the niche see
    /// "mara is answering" through `answeringNow`; best effort, never a lock. Marking another
    /// question ends the last mark.
    async fn answering(&self, ctx: &Context<'_>, question_id: ID, open: bool) -> Result<bool> {
        let db = ctx.data::<Db>()?;
        let viewer = access::signed_in(caller_of(ctx)?.viewer()).gql()?.clone();
        let presence = ctx.data::<Arc<Presence>>()?;
        if !open {
            presence.mark(viewer.user_id, &viewer.handle, None, Instant::now());
            return Ok(true);
        }
        let id = parse_question_id(&question_id).gql()?;
        let (question, _) = queue::question(db, Some(&viewer), id).await.gql()?;
        if !entity::agent_questions::WAITING.contains(&question.status)
            || question.expires_at <= Utc::now()
        {
            return Err(ServiceError::BadInput(
                "that question is no longer waiting".into(),
            ))
            .gql();
        }
        presence.mark(
            viewer.user_id,
            &viewer.handle,
            Some((question.niche_id, question.id)),
            Instant::now(),
        );
        Ok(true)
    }
}

/// Who is answering one question now.
#[derive(SimpleObject, Clone)]
pub struct AnsweringNow {
    /// The question.
    pub question_id: ID,
    /// The handles of those with its answer form open (possibly none: whoever had it closed it).
    pub handles: Vec<String>,
}

impl From<Answering> for AnsweringNow {
    fn from(answering: Answering) -> Self {
        Self {
            question_id: ID(answering.question_id.to_string()),
            handles: answering.handles,
        }
    }
}

/// Presence.
#[derive(Default)]
pub struct PresenceSubscription;

#[Subscription]
impl PresenceSubscription {
    /// Who is answering the waiting questions of a niche: first who is now (one item per
    /// question someone is answering), then every change on this instance of askloop. For the
    /// niche's active members and admins. A mark not renewed within 30 s has lapsed.
    async fn answering_now(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
    ) -> Result<BoxStream<'static, Result<AnsweringNow>>> {
        let db = ctx.data::<Db>()?;
        // Subscribed before access is checked: a suspension committed after the check is heard.
        let members = ctx.data::<LiveHub>()?.subscribe();
        let niche = queue::niche_by_slug(db, &niche_slug).await.gql()?;
        let viewer = caller_of(ctx)?.viewer();
        access::can_read_questions(db, viewer, &niche).await.gql()?;
        let viewer = access::signed_in(viewer).gql()?.clone();
        let presence = ctx.data::<Arc<Presence>>()?.clone();
        let rx = presence.subscribe();
        let now: Vec<AnsweringNow> = presence
            .of_niche(niche.id, Instant::now())
            .into_iter()
            .map(AnsweringNow::from)
            .collect();
        let niche_id = niche.id;
        let later = futures::stream::unfold(rx, move |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(answering) if answering.niche_id == niche_id => {
                        return Some((AnsweringNow::from(answering), rx));
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return None,
                }
            }
        });
        let items = futures::stream::iter(now).chain(later).boxed();
        // Ends with FORBIDDEN when the subscriber's access to the niche ends, by the same rule
        // and watcher as every niche subscription.
        Ok(
            subscriptions::while_reading(items, members, db.clone(), viewer, niche_id)
                .map(|item| item.gql())
                .boxed(),
        )
    }
}
