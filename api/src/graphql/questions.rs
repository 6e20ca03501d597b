//! Niches and their questions: reading queues, answering, declining, dismissing.

use crate::db::Db;
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::Utc;

use super::caller_of;
use super::enums::ContributionStatus;
use super::types::{Answer, AnswerKind, Niche, Question, QuestionConnection, connection};
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::service::questions::answering::{self, AnswerRequest};
use crate::service::questions::queue::{self, Cursor, QueueFilter};
use crate::service::{people::access, people::niches};

fn question_id(id: &ID) -> Result<i64, ServiceError> {
    id.parse()
        .map_err(|_| ServiceError::BadInput(format!("'{}' is not a question id", id.as_str())))
}

/// One niche's part of "Your agent needs you": its most urgent questions and how many wait.
#[derive(SimpleObject)]
pub struct AwaitingInNiche {
    /// The niche.
    pub niche: Niche,
    /// Its most urgent waiting questions I have not acted on, at most `perNiche`.
    pub questions: Vec<Question>,
    /// How many of its questions wait for me in all.
    pub waiting_count: i64,
}

/// An answer to give.
#[derive(InputObject)]
pub struct AnswerInput {
    /// The question.
    pub question_id: ID,
    /// What kind of answer.
    pub kind: AnswerKind,
    /// The option chosen.
    pub option_id: Option<String>,
    /// The words (at most 8000 characters); completing a task, its result (at most 20,000).
    pub body: Option<String>,
    /// Completing a task (`ANSWERED` on a task): what it cost in minor units, 0 up to the
    /// task's `budgetLimitMinor`. Refused on a question and on a decline.
    pub actual_cost_minor: Option<i64>,
    /// `FROM_KNOWLEDGE`: the current knowledge entry of the question's niche that answers it
    /// (then no option or words are sent: the entry's are).
    pub entry_id: Option<ID>,
    /// How sure you are, in percent: 50–100 ("Unsure" 60, "Fairly sure" 80, "Certain" 95).
    /// Optional; answers and task completions only. The agent receives it with the answer.
    pub confidence: Option<i32>,
}

/// What answering did.
#[derive(SimpleObject)]
pub struct AnswerResult {
    /// The stored answer.
    pub answer: Answer,
    /// The question after the change.
    pub question: Question,
    /// Points earned (0 for declines).
    pub points: i64,
    /// Where the answer's contribution is in review; null for declines.
    pub contribution_status: Option<ContributionStatus>,
    /// What happened, in words for the person.
    pub notice: String,
}

/// Question queries.
#[derive(Default)]
pub struct QuestionQuery;

#[Object]
impl QuestionQuery {
    /// A niche by slug. Drafts and archived niches only for their members and admins.
    async fn niche(&self, ctx: &Context<'_>, slug: String) -> Result<Option<Niche>> {
        let db = ctx.data::<Db>()?;
        Ok(niches::visible_niche(db, caller_of(ctx)?.viewer(), &slug)
            .await
            .gql()?
            .map(Niche::from))
    }

    /// One question, for active members of its niche and admins.
    async fn question(&self, ctx: &Context<'_>, id: ID) -> Result<Question> {
        let db = ctx.data::<Db>()?;
        let id = question_id(&id).gql()?;
        let (question, _) = queue::question(db, caller_of(ctx)?.viewer(), id)
            .await
            .gql()?;
        Ok(question.into())
    }

    /// "Your agent needs you": waiting questions in my niches that I have not acted on.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn awaiting_me(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<QuestionConnection> {
        let db = ctx.data::<Db>()?;
        let first = queue::page_size(first).gql()?;
        let after = after.as_deref().map(Cursor::decode).transpose().gql()?;
        let page = queue::awaiting_me(db, caller_of(ctx)?.viewer(), first, after, Utc::now())
            .await
            .gql()?;
        Ok(connection(page, QueueFilter::Waiting, after.is_some()))
    }

    /// "Your agent needs you", niche by niche: for each of my niches with a question waiting
    /// for me, its `perNiche` most urgent (1–20, default 5) and how many wait in all.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn awaiting_me_by_niche(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 5)] per_niche: i32,
    ) -> Result<Vec<AwaitingInNiche>> {
        let db = ctx.data::<Db>()?;
        if !(1..=20).contains(&per_niche) {
            return Err(ServiceError::BadInput(
                "perNiche must be between 1 and 20".into(),
            ))
            .gql();
        }
        let parts =
            queue::awaiting_me_by_niche(db, caller_of(ctx)?.viewer(), per_niche as u64, Utc::now())
                .await
                .gql()?;
        Ok(parts
            .into_iter()
            .map(|(niche, page, count)| AwaitingInNiche {
                niche: niche.into(),
                questions: page.items.into_iter().map(Question::from).collect(),
                waiting_count: count as i64,
            })
            .collect())
    }
}

/// Question mutations.
#[derive(Default)]
pub struct QuestionMutation;

#[Object]
impl QuestionMutation {
    /// Answer, decline ("not enough context") or send back for research.
    async fn answer_question(&self, ctx: &Context<'_>, input: AnswerInput) -> Result<AnswerResult> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let outcome = answering::answer_question(
            db,
            &super::hint(ctx),
            caller.viewer(),
            AnswerRequest {
                question_id: question_id(&input.question_id).gql()?,
                kind: input.kind.word().to_owned(),
                option_id: input.option_id,
                body: input.body,
                actual_cost_minor: input.actual_cost_minor,
                entry_id: input
                    .entry_id
                    .as_ref()
                    .map(|id| {
                        id.parse::<i64>().map_err(|_| {
                            ServiceError::BadInput(format!(
                                "'{}' is not a knowledge entry id",
                                id.as_str()
                            ))
                        })
                    })
                    .transpose()
                    .gql()?,
                confidence: input.confidence,
            },
            Utc::now(),
        )
        .await
        .gql()?;
        let handle = caller
            .viewer()
            .map(|v| v.handle.clone())
            .unwrap_or_default();
        let question = Question::from(outcome.question);
        Ok(AnswerResult {
            answer: Answer::from_model(
                outcome.answer,
                handle,
                outcome.contribution_status,
                &question.options,
            ),
            question,
            points: outcome.points,
            contribution_status: outcome.contribution_status.map(Into::into),
            notice: outcome.notice,
        })
    }

    /// "Not worth anybody's time": close a waiting question without an answer, optionally saying
    /// why (at most 500 characters; the agent receives it).
    async fn dismiss_question(
        &self,
        ctx: &Context<'_>,
        id: ID,
        reason: Option<String>,
    ) -> Result<Question> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        let question = answering::dismiss_question(
            db,
            &super::hint(ctx),
            caller.viewer(),
            question_id(&id).gql()?,
            reason.as_deref(),
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(question.into())
    }
}
