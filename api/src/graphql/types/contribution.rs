//! A scored contribution and the contributor record a reviewer weighs it against.

use std::sync::Arc;

use crate::db::Db;
use async_graphql::{ComplexObject, Context, ID, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::agent_answers;
use entity::agent_questions;

use super::{Answer, Calibration, Question, QuestionOption, Tier};
use crate::graphql::caller_of;
use crate::graphql::enums::ContributionStatus;
use crate::graphql::error_door::GqlResultExt;
use crate::service::money::standing::{self, ContributionView, ContributorRecord};
use crate::service::people::names;
use crate::service::questions::queue::{self};

/// A scored contribution. For an answer to an agent's question it also carries what a
/// reviewer weighs: the question, the answer, the contributor's record and how long the answer
/// took.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Contribution {
    /// Its id.
    pub id: ID,
    /// The niche's slug.
    pub niche_slug: String,
    /// The contribution type (`agent_answer`, `manual_adjustment`).
    pub kind: String,
    /// Its points (kept even when rejected or reversed).
    pub points: i64,
    /// Where it is in review.
    pub status: ContributionStatus,
    /// What produced it.
    pub source: String,
    /// Supporting facts as JSON text (show as text).
    pub evidence: String,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// When it was verified.
    pub verified_at: Option<DateTime<Utc>>,
    #[graphql(skip)]
    pub row_id: i64,
    #[graphql(skip)]
    pub niche_id: i64,
    #[graphql(skip)]
    pub user_id: i64,
    /// The answer and question behind it, read once however many fields ask.
    #[graphql(skip)]
    answered: Arc<tokio::sync::OnceCell<Option<AnsweredQuestion>>>,
}

/// The answer that earned a contribution and the question it answered.
type AnsweredQuestion = (agent_answers::Model, agent_questions::Model);

impl Contribution {
    /// From a stored event, its type's key and its niche's slug.
    pub fn new(
        e: entity::contribution_events::Model,
        type_key: String,
        niche_slug: String,
    ) -> Self {
        Self {
            id: ID(e.id.to_string()),
            niche_slug,
            kind: type_key,
            points: e.points,
            status: e.status.into(),
            source: e.source,
            evidence: e.evidence.to_string(),
            created_at: e.created_at,
            verified_at: e.verified_at,
            row_id: e.id,
            niche_id: e.niche_id,
            user_id: e.user_id,
            answered: Arc::default(),
        }
    }

    /// The answer and question behind it, for a caller allowed to read the question.
    async fn answered(&self, ctx: &Context<'_>) -> Result<Option<&AnsweredQuestion>> {
        let db = ctx.data::<Db>()?;
        let viewer = caller_of(ctx)?.viewer();
        let found = self
            .answered
            .get_or_try_init(|| queue::answered_question(db, viewer, self.row_id))
            .await
            .gql()?;
        Ok(found.as_ref())
    }
}

impl From<ContributionView> for Contribution {
    fn from(view: ContributionView) -> Self {
        Self::new(view.event, view.type_key, view.niche_slug)
    }
}

#[ComplexObject]
impl Contribution {
    /// The question it answered; none for a contribution not earned by an answer. Readable by
    /// whoever may read the question (its niche's active members and admins).
    async fn question(&self, ctx: &Context<'_>) -> Result<Option<Question>> {
        Ok(self
            .answered(ctx)
            .await?
            .map(|(_, question)| Question::from(question.clone())))
    }

    /// The answer that earned it; none for a contribution not earned by an answer.
    async fn answer(&self, ctx: &Context<'_>) -> Result<Option<Answer>> {
        let Some((answer, question)) = self.answered(ctx).await? else {
            return Ok(None);
        };
        let db = ctx.data::<Db>()?;
        let handle = names::handles(db, [answer.user_id])
            .await
            .gql()?
            .remove(&answer.user_id)
            .unwrap_or_default();
        let options: Vec<QuestionOption> =
            serde_json::from_value(question.options.clone()).unwrap_or_default();
        Ok(Some(Answer::from_model(
            answer.clone(),
            handle,
            Some(self.status.into()),
            &options,
        )))
    }

    /// Seconds from the question's arrival to this answer; none for a contribution not earned
    /// by an answer.
    async fn seconds_to_answer(&self, ctx: &Context<'_>) -> Result<Option<i64>> {
        Ok(self
            .answered(ctx)
            .await?
            .map(|(answer, question)| (answer.created_at - question.created_at).num_seconds()))
    }

    /// The reason its reviewer gave when they rejected, reversed or verified it (the newest
    /// decision's); none when none was given. For the person themselves and admins.
    async fn review_note(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        let db = ctx.data::<Db>()?;
        let viewer = caller_of(ctx)?.viewer();
        crate::service::people::admin_desk::review_note(db, viewer, self.row_id, self.user_id)
            .await
            .gql()
    }

    /// Who contributed and their record in the niche (admins, and the person themselves).
    async fn contributor(&self, ctx: &Context<'_>) -> Result<Contributor> {
        let db = ctx.data::<Db>()?;
        let viewer = caller_of(ctx)?.viewer();
        Ok(
            standing::contributor_record(db, viewer, self.niche_id, self.user_id)
                .await
                .gql()?
                .into(),
        )
    }
}

/// A contributor and their record in one niche: what a reviewer weighs an answer against.
#[derive(SimpleObject, Clone)]
pub struct Contributor {
    /// Their handle.
    pub handle: String,
    /// Contributions verified.
    pub verified_count: i64,
    /// Contributions rejected.
    pub rejected_count: i64,
    /// Contributions awaiting review.
    pub pending_count: i64,
    /// Contributions verified, then reversed.
    pub reversed_count: i64,
    /// Sum of verified points.
    pub score: i64,
    /// The tier the score is in.
    pub tier: Tier,
    /// Their answers' record: verified rate, lower bound, Brier score, calibration.
    pub calibration: Calibration,
}

impl From<ContributorRecord> for Contributor {
    fn from(r: ContributorRecord) -> Self {
        Self {
            calibration: Calibration::of(&r.record, r.trust_lower_bound_bps),
            handle: r.handle,
            verified_count: r.verified_count,
            rejected_count: r.rejected_count,
            pending_count: r.pending_count,
            reversed_count: r.reversed_count,
            score: r.score,
            tier: r.tier.into(),
        }
    }
}
