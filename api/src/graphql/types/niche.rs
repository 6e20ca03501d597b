//! A niche as GraphQL shows it: its settings, routing, agreement and the questions it lists.

use std::collections::HashMap;
use std::sync::Arc;

use crate::db::Db;
use async_graphql::ErrorExtensions;
use async_graphql::connection::{Connection, Edge};
use async_graphql::dataloader::{DataLoader, Loader};
use async_graphql::{ComplexObject, Context, Enum, ID, Result, SimpleObject};
use chrono::Utc;
use entity::agent_questions::QuestionStatus as StoredStatus;
use entity::niches;

use super::{
    Member, MyPartIn, Question, QueueSort, TriageConnection, WaitingCounts, counts_of, member_view,
    queue_of,
};
use crate::error::ServiceError;
use crate::graphql::caller_of;
use crate::graphql::enums::Urgency;
use crate::graphql::error_door::GqlResultExt;
use crate::service::questions::queue::{self, Cursor, Page, QueueFilter as ServiceFilter};
use crate::service::{people::names, questions::consensus};

/// Which questions to list.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum QueueFilter {
    /// Open and researching.
    Waiting,
    /// Open only.
    Open,
    /// Researching only.
    Researching,
    /// Answered.
    Answered,
    /// Dismissed.
    Dismissed,
    /// Expired.
    Expired,
}

impl From<QueueFilter> for ServiceFilter {
    fn from(filter: QueueFilter) -> Self {
        match filter {
            QueueFilter::Waiting => ServiceFilter::Waiting,
            QueueFilter::Open => ServiceFilter::Only(StoredStatus::Open),
            QueueFilter::Researching => ServiceFilter::Only(StoredStatus::Researching),
            QueueFilter::Answered => ServiceFilter::Only(StoredStatus::Answered),
            QueueFilter::Dismissed => ServiceFilter::Only(StoredStatus::Dismissed),
            QueueFilter::Expired => ServiceFilter::Only(StoredStatus::Expired),
        }
    }
}
/// A niche's lifecycle status.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "niches::NicheStatus")]
pub enum NicheStatus {
    /// Being set up; takes no questions.
    Draft,
    /// Takes questions.
    Open,
    /// Takes questions and has operators.
    Operated,
    /// Closed; its records are kept.
    Archived,
}
/// A niche: the field an agent works in.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Niche {
    #[graphql(skip)]
    pub id: i64,
    /// Unique, lowercased.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Where the niche is in its life.
    pub status: NicheStatus,
    /// What the niche covers.
    pub description: String,
    /// How long a high-urgency question waits before it escalates, in seconds (none: never).
    pub escalate_high_secs: Option<i64>,
    /// The same for normal urgency.
    pub escalate_normal_secs: Option<i64>,
    /// The same for low urgency.
    pub escalate_low_secs: Option<i64>,
    /// A member's answers verify on arrival once the Wilson 95 % lower bound of their verified
    /// rate here reaches this (0.5–1.0; default 0.85, about 22 answers with no rejection).
    pub trust_lower_bound: f64,
    /// Whom a new question's immediate notifications go to first.
    pub routing: Routing,
}

/// How a niche's new questions are announced (the queue is the same for every member).
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum RoutingMode {
    /// Every active operator is notified at once.
    Broadcast,
    /// The `firstWave` best-placed operators at once; everyone else at half the escalation wait.
    FirstWave,
}

/// A niche's routing.
#[derive(SimpleObject, Clone, Debug, PartialEq)]
pub struct Routing {
    /// Broadcast or a first wave.
    pub mode: RoutingMode,
    /// The first wave's size (first-wave routing only).
    pub first_wave: Option<i32>,
}

impl From<niches::Model> for Niche {
    fn from(model: niches::Model) -> Self {
        Self {
            id: model.id,
            status: model.status.into(),
            slug: model.slug,
            name: model.name,
            description: model.description,
            escalate_high_secs: model.escalate_high_secs,
            escalate_normal_secs: model.escalate_normal_secs,
            escalate_low_secs: model.escalate_low_secs,
            trust_lower_bound: f64::from(model.trust_lower_bound_bps) / 10_000.0,
            routing: Routing {
                mode: if model.first_wave.is_some() {
                    RoutingMode::FirstWave
                } else {
                    RoutingMode::Broadcast
                },
                first_wave: model.first_wave,
            },
        }
    }
}

/// A connection of questions, Relay style.
pub type QuestionConnection = Connection<String, Question>;

/// Turn a service page into a connection.
pub fn connection(page: Page, filter: ServiceFilter, had_cursor: bool) -> QuestionConnection {
    let mut connection = Connection::new(had_cursor, page.has_next);
    connection.edges.extend(
        page.items
            .into_iter()
            .map(|q| Edge::new(Cursor::of(&q, filter).encode(), Question::from(q))),
    );
    connection
}

impl Niche {
    /// The niche as stored (through the request's loader).
    async fn model(&self, ctx: &Context<'_>) -> Result<niches::Model> {
        ctx.data::<DataLoader<NicheLoader>>()?
            .load_one(self.id)
            .await
            .map_err(|err| err.extend())?
            .ok_or_else(|| ServiceError::NotFound("no such niche".into()).extend())
    }
}

/// How a niche's people agree over its several-answer questions (docs/contract.md#several-answers).
#[derive(SimpleObject, Clone, Debug)]
pub struct NicheAgreement {
    /// Krippendorff's alpha (nominal) over the newest 200 such questions' standing answers: 1 is
    /// full agreement, 0 no better than chance; none while it is undefined (fewer than two
    /// answers to compare, or one option chosen throughout).
    pub alpha: Option<f64>,
    /// Questions with two or more standing answers that it covers.
    pub questions: i32,
    /// Each person's agreement with the plurality, most answers first.
    pub people: Vec<PersonAgreement>,
}

/// One person's agreement with the plurality of the questions they answered.
#[derive(SimpleObject, Clone, Debug)]
pub struct PersonAgreement {
    /// Their handle.
    pub handle: String,
    /// Their answers to several-answer questions.
    pub answers: i32,
    /// Of which chose the plurality option.
    pub agreed: i32,
    /// `agreed / answers`.
    pub agreement: f64,
}

#[ComplexObject]
impl Niche {
    /// How its people agree over its several-answer questions (admins only; none for others).
    async fn agreement(&self, ctx: &Context<'_>) -> Result<Option<NicheAgreement>> {
        if !caller_of(ctx)?.viewer().is_some_and(|v| v.is_admin) {
            return Ok(None);
        }
        let db = ctx.data::<Db>()?;
        let agreement = consensus::agreement(db, self.id, 200).await.gql()?;
        let handles = names::handles(db, agreement.people.iter().map(|p| p.0))
            .await
            .gql()?;
        let count = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
        Ok(Some(NicheAgreement {
            alpha: agreement.alpha,
            questions: count(agreement.questions),
            people: agreement
                .people
                .iter()
                .map(|&(user, answers, agreed)| PersonAgreement {
                    handle: handles.get(&user).cloned().unwrap_or_default(),
                    answers: count(answers),
                    agreed: count(agreed),
                    #[expect(
                        clippy::cast_precision_loss,
                        reason = "counts of answers are far below 2^52"
                    )]
                    agreement: if answers == 0 {
                        0.0
                    } else {
                        agreed as f64 / answers as f64
                    },
                })
                .collect(),
        }))
    }

    /// The niche's questions: only for its active members and admins.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn questions(
        &self,
        ctx: &Context<'_>,
        #[graphql(default_with = "Some(QueueFilter::Waiting)")] status: Option<QueueFilter>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<QuestionConnection> {
        let db = ctx.data::<Db>()?;
        let caller = caller_of(ctx)?;
        let first = queue::page_size(first).gql()?;
        let after = after.as_deref().map(Cursor::decode).transpose().gql()?;
        let niche = self.model(ctx).await?;
        let filter = ServiceFilter::from(status.unwrap_or(QueueFilter::Waiting));
        let page = queue::niche_questions(
            db,
            caller.viewer(),
            &niche,
            filter,
            first,
            after,
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(connection(page, filter, after.is_some()))
    }

    /// The niche's waiting questions as the dashboard triages them: filtered (urgency, task or
    /// question, has a bounty, characters of the title in any case), sorted (`URGENCY` by
    /// default: high first, then expiring soonest; `EXPIRING`, `NEWEST`, `BOUNTY`), with `totalCount` of what the filters match. A
    /// cursor reads back only in the sort it was given in. Only for its active members and
    /// admins.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per filter of the GraphQL field"
    )]
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn queue(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        sort: Option<QueueSort>,
        urgency: Option<Urgency>,
        kind: Option<crate::graphql::enums::ExchangeKind>,
        has_bounty: Option<bool>,
        search: Option<String>,
    ) -> Result<TriageConnection> {
        let niche = self.model(ctx).await?;
        queue_of(
            ctx,
            &niche,
            first,
            after,
            sort.unwrap_or_default(),
            urgency,
            kind,
            has_bounty,
            search,
        )
        .await
    }

    /// How many of the niche's questions wait, and how many of them are urgent (the queue's
    /// heading). Only for its active members and admins.
    async fn waiting_counts(&self, ctx: &Context<'_>) -> Result<WaitingCounts> {
        let niche = self.model(ctx).await?;
        counts_of(ctx, &niche).await
    }

    /// My part in each of the niche's waiting questions I have acted on ("Handled by you" on
    /// the queue, and which came back from research): questions I never acted on are not
    /// listed. Only for its active members and admins, each about themselves.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn my_parts(&self, ctx: &Context<'_>) -> Result<Vec<MyPartIn>> {
        let db = ctx.data::<Db>()?;
        let niche = self.model(ctx).await?;
        let parts = queue::my_parts(db, caller_of(ctx)?.viewer(), &niche, Utc::now())
            .await
            .gql()?;
        Ok(parts
            .into_iter()
            .map(|p| MyPartIn {
                question_id: ID(p.question_id.to_string()),
                part: p.part.into(),
                needs_me: p.part.needs_me(),
                round: p.round,
            })
            .collect())
    }

    /// The niche's members, by handle (admins only).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn members(&self, ctx: &Context<'_>) -> Result<Vec<Member>> {
        let db = ctx.data::<Db>()?;
        let members =
            crate::service::people::admin::members_of(db, caller_of(ctx)?.viewer(), self.id)
                .await
                .gql()?;
        Ok(members
            .into_iter()
            .map(|(m, handle)| member_view(&handle, &self.slug, m.role, m.status, m.share_cap_bps))
            .collect())
    }
}
/// Loads niches by id in batches: a page of questions asks for its niches in one query.
pub struct NicheLoader {
    /// The pool.
    pub db: Db,
}

impl Loader<i64> for NicheLoader {
    type Value = niches::Model;
    type Error = Arc<ServiceError>;

    async fn load(&self, keys: &[i64]) -> Result<HashMap<i64, niches::Model>, Self::Error> {
        names::niches(&self.db, keys.iter().copied())
            .await
            .map_err(Arc::new)
    }
}
