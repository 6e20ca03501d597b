//! GraphQL output types. They are their own structs, built from entities with `From`, so the
//! storage schema can change without changing the API.

use std::collections::HashMap;
use std::sync::Arc;

use crate::db::Db;
use async_graphql::ErrorExtensions;
use async_graphql::connection::{Connection, Edge};
use async_graphql::dataloader::{DataLoader, Loader};
use async_graphql::{ComplexObject, Context, Enum, ID, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind as StoredKind};
use entity::agent_questions::{self, QuestionStatus as StoredStatus};
use entity::niche_members::{MemberRole as StoredRole, MemberStatus as StoredMemberStatus};
use entity::{audit_log, niches, users};

use super::caller_of;
use super::deliveries::Delivery;
use super::enums::{ContributionStatus, MemberStatus, Urgency};
use super::money::BudgetEntry;
use crate::domain::scoring;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::graphql::knowledge::{KnowledgeEntry, known_of};
use crate::service::queue::{self, Cursor, Page, QueueFilter as ServiceFilter};
use crate::service::standing::{self, ContributionView, ContributorRecord, MembershipStanding};
use crate::service::{consensus, knowledge, names};

/// The three kinds of answer.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum AnswerKind {
    /// Settles the question; scored.
    Answered,
    /// "Not enough context": free; the question stays open for someone else.
    InsufficientContext,
    /// Sent back to the agent for more research: free.
    NeedsResearch,
    /// Settles the question by pointing to a current knowledge entry of its niche (`entryId`):
    /// the agent receives the entry's answer; 1 point, and the entry's author is credited as
    /// for a reuse. Stored as `ANSWERED` naming the entry (`Answer.knowledgeEntryId`).
    FromKnowledge,
}

impl AnswerKind {
    /// The wire word the answering service checks.
    pub fn word(self) -> &'static str {
        match self {
            AnswerKind::Answered => "answered",
            AnswerKind::InsufficientContext => "insufficient_context",
            AnswerKind::NeedsResearch => "needs_research",
            AnswerKind::FromKnowledge => crate::service::answering::FROM_KNOWLEDGE,
        }
    }
}

impl From<StoredKind> for AnswerKind {
    fn from(kind: StoredKind) -> Self {
        match kind {
            StoredKind::Answered => AnswerKind::Answered,
            StoredKind::InsufficientContext => AnswerKind::InsufficientContext,
            StoredKind::NeedsResearch => AnswerKind::NeedsResearch,
        }
    }
}

/// Where a question is.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum QuestionStatus {
    /// Waiting for someone.
    Open,
    /// Sent back to the agent for more research.
    Researching,
    /// Answered.
    Answered,
    /// Not worth anybody's time.
    Dismissed,
    /// Nobody answered in time.
    Expired,
}

impl From<StoredStatus> for QuestionStatus {
    fn from(status: StoredStatus) -> Self {
        match status {
            StoredStatus::Open => QuestionStatus::Open,
            StoredStatus::Researching => QuestionStatus::Researching,
            StoredStatus::Answered => QuestionStatus::Answered,
            StoredStatus::Dismissed => QuestionStatus::Dismissed,
            StoredStatus::Expired => QuestionStatus::Expired,
        }
    }
}

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

/// A member's role in a niche.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "StoredRole")]
pub enum MemberRole {
    /// Answers questions.
    Operator,
    /// Answers questions in a speciality.
    Specialist,
    /// Reads, never answers.
    Observer,
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

/// The stored word of a serde-serialisable enum (`"open"`, `"verified"`, …).
pub fn word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A person.
#[derive(SimpleObject, Clone)]
pub struct User {
    /// Their id.
    pub id: ID,
    /// Their handle.
    pub handle: String,
    /// Whether they administer askloop.
    pub is_admin: bool,
}

impl From<&users::Model> for User {
    fn from(user: &users::Model) -> Self {
        Self {
            id: ID(user.id.to_string()),
            handle: user.handle.clone(),
            is_admin: user.role == users::UserRole::Admin,
        }
    }
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
                    #[allow(clippy::cast_precision_loss)]
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
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn queue(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        sort: Option<QueueSort>,
        urgency: Option<Urgency>,
        kind: Option<super::enums::ExchangeKind>,
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
        let members = crate::service::admin::members_of(db, caller_of(ctx)?.viewer(), self.id)
            .await
            .gql()?;
        Ok(members
            .into_iter()
            .map(|(m, handle)| member_view(&handle, &self.slug, m.role, m.status, m.share_cap_bps))
            .collect())
    }
}

/// One of the answers an agent offers.
#[derive(SimpleObject, Clone, serde::Deserialize)]
pub struct QuestionOption {
    /// Echoed back in the answer.
    pub id: String,
    /// What a person reads.
    pub label: String,
}

/// A question an agent asked.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Question {
    /// Its id.
    pub id: ID,
    #[graphql(skip)]
    pub niche_id: i64,
    /// The agent's own id for it.
    pub external_id: Option<String>,
    /// Which agent asked, as it named itself (UNTRUSTED text); none when it did not say.
    pub agent_name: Option<String>,
    /// Up to 300 characters.
    pub title: String,
    /// Up to 8000 characters.
    pub question: String,
    /// What the agent found: UNTRUSTED text, to be shown only as text.
    pub context: Option<String>,
    /// The answers the agent offers.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub options: Vec<QuestionOption>,
    /// How urgent the agent says it is.
    pub urgency: Urgency,
    /// Where it is.
    pub status: QuestionStatus,
    /// The bounty for its answer, minor units (a task: its budget limit, reserved).
    pub bounty_minor: i64,
    /// A question, or a task handed to people.
    pub kind: super::enums::ExchangeKind,
    /// A task's budget limit in minor units: the most completing it may cost. None for a
    /// question.
    pub budget_limit_minor: Option<i64>,
    /// What a task should deliver, in the agent's words: UNTRUSTED text, like the context.
    pub deliverable: Option<String>,
    /// How many times research has come back.
    pub research_round: i64,
    /// How far it escalated in this round for want of an answer: 0 not, 1 everyone of the niche
    /// was told, 2 the admins were too.
    pub escalation_step: i32,
    /// When it arrived.
    pub created_at: DateTime<Utc>,
    /// When it was answered.
    pub answered_at: Option<DateTime<Utc>>,
    /// When the agent that asked it withdrew it (it is then DISMISSED); null otherwise.
    pub withdrawn_at: Option<DateTime<Utc>>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When it stops waiting.
    pub expires_at: DateTime<Utc>,
    /// How many answers it takes in a round (1: the first answer settles it).
    pub answers_wanted: i32,
    /// How many of them are in ("2 of 3 answers in").
    pub answers_in: i32,
    /// The share of the answers the plurality option needs for a consensus (0.5–1.0).
    pub agreement: f64,
}

/// One operator of a question's routed first wave (docs/contract.md#routed-first-wave).
#[derive(SimpleObject, Clone, Debug)]
pub struct Route {
    /// Who was notified first.
    pub handle: String,
    /// Their place in the wave, 1 first.
    pub rank: i32,
    /// What they were ranked by: their verified answers' likeness to the question times their
    /// lower bound.
    pub score: f64,
    /// Why, in words.
    pub reason: String,
}

/// What several answers came to (docs/contract.md#several-answers).
#[derive(SimpleObject, Clone, Debug)]
pub struct ConsensusView {
    /// The plurality option.
    pub option_id: String,
    /// Its label, as the question offered it (untrusted text).
    pub option_label: Option<String>,
    /// Its share of the standing answers, 0–1.
    pub agreement: f64,
    /// Its share of their weight (each answer weighs its author's lower bound), 0–1.
    pub weighted_agreement: f64,
    /// Whether the share reaches the question's `agreement`: a consensus, else a disagreement.
    pub reached: bool,
    /// How many answers stand.
    pub answers: i32,
}

impl From<agent_questions::Model> for Question {
    fn from(q: agent_questions::Model) -> Self {
        Self {
            id: ID(q.id.to_string()),
            niche_id: q.niche_id,
            external_id: q.external_id,
            agent_name: q.agent_id,
            title: q.title,
            question: q.question,
            context: q.context,
            options: serde_json::from_value(q.options).unwrap_or_default(),
            urgency: q.urgency.into(),
            status: q.status.into(),
            bounty_minor: q.bounty_minor,
            kind: q.kind.into(),
            budget_limit_minor: (q.kind == agent_questions::ExchangeKind::Task)
                .then_some(q.bounty_minor),
            deliverable: q.deliverable,
            research_round: q.research_round,
            escalation_step: q.escalation_step,
            created_at: q.created_at,
            answered_at: q.answered_at,
            withdrawn_at: q.withdrawn_at,
            updated_at: q.updated_at,
            expires_at: q.expires_at,
            answers_wanted: q.answers_wanted,
            answers_in: q.answers_in,
            agreement: f64::from(q.agreement_bps) / 10_000.0,
        }
    }
}

#[ComplexObject]
impl Question {
    /// The newest version of the knowledge this question's answer became (any status), once an
    /// answer to it was verified.
    async fn knowledge_entry(&self, ctx: &Context<'_>) -> Result<Option<KnowledgeEntry>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        let Some(entry) = knowledge::of_question(db, id).await.gql()? else {
            return Ok(None);
        };
        let known = known_of(db, &[&entry]).await?;
        Ok(Some(KnowledgeEntry::from_model(entry, &known, 0.0)))
    }

    /// "Already answered?": up to `first` (at most 3; 2 by default) current entries of the
    /// niche like this question, best first (never its own).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn similar_knowledge(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 2)] first: i32,
    ) -> Result<Vec<KnowledgeEntry>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        let limit = usize::try_from(first)
            .ok()
            .filter(|n| (1..=knowledge::SIMILAR_MAX).contains(n))
            .ok_or_else(|| {
                ServiceError::BadInput(format!(
                    "first must be between 1 and {}",
                    knowledge::SIMILAR_MAX
                ))
            })
            .gql()?;
        let similar = knowledge::similar(
            db,
            self.niche_id,
            (&self.title, &self.question),
            Some(id),
            limit,
        )
        .await
        .gql()?;
        let entries: Vec<_> = similar.iter().map(|s| &s.found.entry).collect();
        let known = known_of(db, &entries).await?;
        Ok(similar
            .into_iter()
            .map(|s| KnowledgeEntry::from_model(s.found.entry, &known, s.found.score))
            .collect())
    }

    /// The niche it was asked in.
    async fn niche(&self, ctx: &Context<'_>) -> Result<Niche> {
        let niche = ctx
            .data::<DataLoader<NicheLoader>>()?
            .load_one(self.niche_id)
            .await
            .map_err(|err| err.extend())?
            .ok_or_else(|| {
                ServiceError::Internal(anyhow::anyhow!("question without its niche")).extend()
            })?;
        Ok(niche.into())
    }

    /// Whom its notifications went to first and why, when its niche routes a first wave
    /// (admins only; empty for everyone else and for a broadcast).
    async fn routes(&self, ctx: &Context<'_>) -> Result<Vec<Route>> {
        if !caller_of(ctx)?.viewer().is_some_and(|v| v.is_admin) {
            return Ok(Vec::new());
        }
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        let rows = crate::service::routing::routes_of(db, id).await.gql()?;
        let handles = names::handles(db, rows.iter().map(|r| r.user_id))
            .await
            .gql()?;
        Ok(rows
            .into_iter()
            .map(|r| Route {
                handle: handles.get(&r.user_id).cloned().unwrap_or_default(),
                rank: r.rank,
                score: r.score,
                reason: r.reason,
            })
            .collect())
    }

    /// What its answers came to, once a several-answer question has all its places filled or
    /// has expired with answers in; none before (no one sees others' choices while answering).
    async fn consensus(&self, ctx: &Context<'_>) -> Result<Option<ConsensusView>> {
        let waiting = matches!(
            self.status,
            QuestionStatus::Open | QuestionStatus::Researching
        );
        if self.answers_wanted <= 1 || waiting {
            return Ok(None);
        }
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        let Some(question) = <agent_questions::Entity as sea_orm::EntityTrait>::find_by_id(id)
            .one(db)
            .await?
        else {
            return Ok(None);
        };
        let standing = consensus::standing_answers(db, &question).await.gql()?;
        Ok(
            consensus::consensus_of(&question, &standing).map(|c| ConsensusView {
                option_label: self
                    .options
                    .iter()
                    .find(|o| o.id == c.option_id)
                    .map(|o| o.label.clone()),
                option_id: c.option_id,
                agreement: c.agreement,
                weighted_agreement: c.weighted_agreement,
                reached: c.reached,
                answers: i32::try_from(standing.len()).unwrap_or(i32::MAX),
            }),
        )
    }

    /// Every answer and decline given, oldest first. While a several-answer question waits,
    /// the choices and words of others' answers are withheld (`withheld: true`) from a member
    /// who has not answered it yet, so no one follows the herd; admins see them.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn answers(&self, ctx: &Context<'_>) -> Result<Vec<Answer>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        let answers = queue::answers_of(db, id).await.gql()?;
        let viewer = caller_of(ctx)?.viewer();
        let waiting = matches!(
            self.status,
            QuestionStatus::Open | QuestionStatus::Researching
        );
        let withhold = self.answers_wanted > 1
            && waiting
            && !viewer.is_some_and(|v| v.is_admin)
            && !answers.iter().any(|a| {
                a.kind == StoredKind::Answered && Some(a.user_id) == viewer.map(|v| v.user_id)
            });
        let handles = names::handles(db, answers.iter().map(|a| a.user_id))
            .await
            .gql()?;
        let reviews = queue::reviews_of(db, answers.iter().filter_map(|a| a.contribution_event_id))
            .await
            .gql()?;
        Ok(answers
            .into_iter()
            .map(|a| {
                let handle = handles.get(&a.user_id).cloned().unwrap_or_default();
                let review = a
                    .contribution_event_id
                    .and_then(|c| reviews.get(&c).copied());
                let hide = withhold && a.kind == StoredKind::Answered;
                let mut answer = Answer::from_model(a, handle, review, &self.options);
                if hide {
                    answer.option_id = None;
                    answer.option_label = None;
                    answer.body = None;
                    answer.confidence = None;
                    answer.withheld = true;
                }
                answer
            })
            .collect())
    }

    /// Its lines in the niche's budget ledger (the bounty reserved, charged, released, …),
    /// oldest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn budget_entries(&self, ctx: &Context<'_>) -> Result<Vec<BudgetEntry>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        Ok(queue::budget_entries_of(db, id)
            .await
            .gql()?
            .into_iter()
            .map(BudgetEntry::from)
            .collect())
    }

    /// The events written for the agent about it, each with its attempts, oldest first (admins
    /// only: anyone else gets `FORBIDDEN`).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn deliveries(&self, ctx: &Context<'_>) -> Result<Vec<Delivery>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        Ok(queue::deliveries_of(db, caller_of(ctx)?.viewer(), id)
            .await
            .gql()?
            .into_iter()
            .map(Delivery::from)
            .collect())
    }

    /// What happened to it, oldest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn timeline(&self, ctx: &Context<'_>) -> Result<Vec<TimelineEntry>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse()?;
        let entries = queue::timeline_of(db, id).await.gql()?;
        let people = entries
            .iter()
            .flat_map(|(e, answerer)| user_of(&e.actor).into_iter().chain(*answerer));
        let handles = names::handles(db, people).await.gql()?;
        let viewer = caller_of(ctx)?.viewer();
        Ok(entries
            .into_iter()
            .map(|(entry, answerer)| {
                let handle = user_of(&entry.actor).and_then(|u| handles.get(&u).cloned());
                // A review's reason is read by admins and the answerer, as on their record.
                let note = answerer
                    .filter(|owner| viewer.is_some_and(|v| v.is_admin || v.user_id == *owner))
                    .and_then(|_| entry.detail.get("note")?.as_str().map(str::to_owned))
                    .filter(|note| !note.trim().is_empty());
                TimelineEntry {
                    actor_handle: handle,
                    answerer_handle: answerer.and_then(|u| handles.get(&u).cloned()),
                    note,
                    ..TimelineEntry::from(entry)
                }
            })
            .collect())
    }
}

/// An answer or decline.
#[derive(SimpleObject, Clone)]
pub struct Answer {
    /// Its id.
    pub id: ID,
    /// What kind.
    pub kind: AnswerKind,
    /// The option chosen.
    pub option_id: Option<String>,
    /// The chosen option's label, as the question offered it (untrusted text, like the
    /// question's).
    pub option_label: Option<String>,
    /// The words (completing a task: its result).
    pub body: Option<String>,
    /// Completing a task: what it cost, minor units, as the person reported it.
    pub actual_cost_minor: Option<i64>,
    /// Who gave it.
    pub answered_by: String,
    /// Where the answer is in review: `VERIFIED` (the answerer is trusted, or an admin checked
    /// it), `PENDING`, `REJECTED` or `REVERSED`; none for a decline.
    pub review: Option<ContributionStatus>,
    /// The contribution it earned (what admins verify, reject or reverse); none for a decline.
    pub contribution_id: Option<ID>,
    /// The knowledge entry it pointed to, when it settled the question from knowledge.
    pub knowledge_entry_id: Option<ID>,
    /// How sure the answerer said they were, in percent (50–100), when they said.
    pub confidence: Option<i32>,
    /// Its choice and words are withheld: a several-answer question still waits and you have
    /// not answered it.
    pub withheld: bool,
    /// When.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl Answer {
    /// From a stored answer, its author's handle, its contribution's review state and the
    /// options of its question (for the chosen one's label).
    pub fn from_model(
        a: agent_answers::Model,
        handle: String,
        review: Option<entity::contribution_events::ContributionStatus>,
        options: &[QuestionOption],
    ) -> Self {
        let option_label = a.option_id.as_deref().and_then(|chosen| {
            options
                .iter()
                .find(|o| o.id == chosen)
                .map(|o| o.label.clone())
        });
        Self {
            id: ID(a.id.to_string()),
            kind: a.kind.into(),
            option_id: a.option_id,
            option_label,
            body: a.body,
            actual_cost_minor: a.actual_cost_minor,
            answered_by: handle,
            review: review.map(Into::into),
            contribution_id: a.contribution_event_id.map(|c| ID(c.to_string())),
            knowledge_entry_id: a.knowledge_entry_id.map(|e| ID(e.to_string())),
            confidence: a.confidence,
            withheld: false,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// One step in a question's life.
#[derive(SimpleObject, Clone)]
pub struct TimelineEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// Who (`user:<id>`, `agent:<id>`, `system`).
    pub actor: String,
    /// The person's handle, when a person did it.
    pub actor_handle: Option<String>,
    /// What (`question.created`, `question.answered`, `contribution.verified`,
    /// `knowledge.corrected`, …).
    pub action: String,
    /// Whose answer a verdict (`contribution.*`) was on.
    pub answerer_handle: Option<String>,
    /// The reason a verdict gave, for admins and the answerer.
    pub note: Option<String>,
}

impl From<audit_log::Model> for TimelineEntry {
    fn from(entry: audit_log::Model) -> Self {
        Self {
            at: entry.created_at,
            actor: entry.actor,
            actor_handle: None,
            action: entry.action,
            answerer_handle: None,
            note: None,
        }
    }
}

/// The user id in an audit actor (`user:<id>`), if a person was the actor.
fn user_of(actor: &str) -> Option<i64> {
    actor.strip_prefix("user:")?.parse().ok()
}

/// A rung of the tier ladder.
#[derive(SimpleObject, Clone)]
pub struct Tier {
    /// Its name.
    pub name: String,
    /// The lowest score in it.
    pub min_score: i64,
    /// Its share of a niche's revenue, basis points.
    pub share_bps: i32,
}

impl From<scoring::Tier> for Tier {
    fn from(tier: scoring::Tier) -> Self {
        Self {
            name: tier.name,
            min_score: tier.min_score,
            share_bps: i32::try_from(tier.share_bps).unwrap_or(0),
        }
    }
}

/// A membership with where its holder stands.
#[derive(SimpleObject, Clone)]
pub struct Membership {
    /// The niche.
    pub niche: Niche,
    /// What they do in the niche.
    pub role: MemberRole,
    /// Where their membership stands.
    pub status: MemberStatus,
    /// Sum of verified points.
    pub score: i64,
    /// Verified contributions.
    pub verified_count: i64,
    /// Contributions awaiting review.
    pub pending_count: i64,
    /// The tier the score is in.
    pub tier: Tier,
    /// The next tier up; none at the top of the ladder.
    pub next_tier: Option<Tier>,
    /// Points still needed for the next tier.
    pub points_to_next_tier: Option<i64>,
    /// Share of the niche's revenue, basis points (after the 80% split).
    pub share_bps: i32,
    /// The most this member's share may be, basis points.
    pub share_cap_bps: i32,
    /// How many times agents relied on the knowledge entries they wrote in the niche.
    pub reuse_count: i64,
    /// How often their answers here are verified and how well their stated confidence matches.
    pub calibration: Calibration,
}

/// A person's record in a niche (docs/contract.md#weighing-answers), over answers with a
/// verdict (verified counts for, rejected or reversed against).
#[derive(SimpleObject, Clone, Debug)]
pub struct Calibration {
    /// Answers with a verdict.
    pub answers: i64,
    /// Of which verified.
    pub verified: i64,
    /// Verified among them, 0–1.
    pub verified_rate: f64,
    /// The Wilson 95 % lower bound of that rate.
    pub lower_bound: f64,
    /// Whether the lower bound reaches the niche's threshold: answers verify on arrival.
    pub trusted: bool,
    /// The niche's threshold.
    pub trust_lower_bound: f64,
    /// The Brier score of the confidence stated (0 is perfect, 0.25 is always saying 50 %);
    /// none until an answer with a stated confidence has a verdict.
    pub brier: Option<f64>,
    /// Answers with a verdict that stated a confidence.
    pub with_confidence: i64,
    /// Stated against observed, in 10-point bins; empty bins left out.
    pub bins: Vec<CalibrationBin>,
}

/// One bin of a calibration table.
#[derive(SimpleObject, Clone, Debug)]
pub struct CalibrationBin {
    /// The lowest confidence in the bin, percent.
    pub from: i32,
    /// The highest, percent.
    pub to: i32,
    /// Answers in it.
    pub answers: i64,
    /// The mean confidence stated, 0–1.
    pub stated: f64,
    /// The share verified, 0–1.
    pub observed: f64,
}

impl Calibration {
    /// The view of `record` against a threshold in basis points.
    pub fn of(record: &crate::domain::weighing::Record, threshold_bps: i32) -> Self {
        let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
        Calibration {
            answers: n(record.answers),
            verified: n(record.verified),
            verified_rate: record.verified_rate,
            lower_bound: record.lower_bound,
            trusted: record.trusted(threshold_bps),
            trust_lower_bound: f64::from(threshold_bps) / 10_000.0,
            brier: record.brier,
            with_confidence: n(record.with_confidence),
            bins: record
                .calibration
                .iter()
                .map(|b| CalibrationBin {
                    from: b.from,
                    to: b.to,
                    answers: n(b.answers),
                    stated: b.stated,
                    observed: b.observed,
                })
                .collect(),
        }
    }
}

impl From<MembershipStanding> for Membership {
    fn from(s: MembershipStanding) -> Self {
        Self {
            role: s.member.role.into(),
            status: s.member.status.into(),
            score: s.score,
            verified_count: s.verified_count,
            pending_count: s.pending_count,
            points_to_next_tier: s.next_tier.as_ref().map(|t| t.min_score - s.score),
            next_tier: s.next_tier.map(Tier::from),
            tier: s.tier.into(),
            share_bps: i32::try_from(s.share_bps).unwrap_or(0),
            share_cap_bps: s.member.share_cap_bps,
            reuse_count: i64::try_from(s.reuse_count).unwrap_or(i64::MAX),
            calibration: Calibration::of(&s.record, s.niche.trust_lower_bound_bps),
            niche: s.niche.into(),
        }
    }
}

/// A member of a niche, as admins see them.
#[derive(SimpleObject, Clone)]
pub struct Member {
    /// The person's handle.
    pub handle: String,
    /// The niche's slug.
    pub niche_slug: String,
    /// Their role.
    pub role: MemberRole,
    /// Their status.
    pub status: MemberStatus,
    /// Their share cap, basis points.
    pub share_cap_bps: i32,
}

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
        crate::service::admin_desk::review_note(db, viewer, self.row_id, self.user_id)
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

/// The roles and statuses stored for members.
pub fn member_view(
    handle: &str,
    niche_slug: &str,
    role: StoredRole,
    status: StoredMemberStatus,
    cap: i32,
) -> Member {
    Member {
        handle: handle.to_owned(),
        niche_slug: niche_slug.to_owned(),
        role: role.into(),
        status: status.into(),
        share_cap_bps: cap,
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

// The triage queue (`Niche.queue`, `Niche.waitingCounts`).

use super::enums::ExchangeKind;
use crate::service::triage::{self, TriageCursor, TriageFilter, TriageSort};
use async_graphql::OutputType;
use async_graphql::connection::{ConnectionNameType, EdgeNameType, EmptyFields};

/// The order of the triage queue.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug, Default)]
pub enum QueueSort {
    /// Most urgent first, then expiring soonest (the default).
    #[default]
    Urgency,
    /// Expiring soonest first.
    Expiring,
    /// Newest first.
    Newest,
    /// Largest bounty (a task: its limit) first.
    Bounty,
}

impl From<QueueSort> for TriageSort {
    fn from(sort: QueueSort) -> Self {
        match sort {
            QueueSort::Urgency => TriageSort::Urgency,
            QueueSort::Expiring => TriageSort::Expiring,
            QueueSort::Newest => TriageSort::Newest,
            QueueSort::Bounty => TriageSort::Bounty,
        }
    }
}

/// What a page of the triage queue says beside its questions.
#[derive(SimpleObject)]
pub struct TriageTotals {
    /// How many waiting questions the filters match, across every page.
    pub total_count: i64,
}

/// The schema's name of a triage page.
pub struct TriageName;

impl ConnectionNameType for TriageName {
    fn type_name<T: OutputType>() -> String {
        "QueuePage".to_owned()
    }
}

/// The schema's name of one question on a triage page.
pub struct TriageEdgeName;

impl EdgeNameType for TriageEdgeName {
    fn type_name<T: OutputType>() -> String {
        "QueueEdge".to_owned()
    }
}

/// A page of the triage queue.
pub type TriageConnection =
    Connection<String, Question, TriageTotals, EmptyFields, TriageName, TriageEdgeName>;

/// How many of a niche's questions wait.
#[derive(SimpleObject)]
pub struct WaitingCounts {
    /// Every waiting question.
    pub total: i64,
    /// Those of high urgency.
    pub high: i64,
    /// Those that need me: not declined, sent back or answered by me in their current research
    /// round (an answer of mine, rejected or not, keeps a question off it). The count the
    /// queue's heading, the document title and the niches page show.
    pub needs_me: i64,
    /// Those of high urgency among them.
    pub needs_me_high: i64,
}

/// What I did to a waiting question (`Niche.myParts`).
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum MyPart {
    /// I declined it ("not enough context") in its current research round.
    Declined,
    /// I sent it back for research in its current round: waiting for the agent's research.
    SentBack,
    /// I answered it; my answer is awaiting review.
    Answered,
    /// My answer was rejected (or reversed); I may not answer it again.
    Rejected,
    /// I declined it or sent it back before, and the agent's research has come back since: it
    /// needs me again.
    ResearchBack,
}

impl From<queue::MyPart> for MyPart {
    fn from(part: queue::MyPart) -> Self {
        match part {
            queue::MyPart::Declined => MyPart::Declined,
            queue::MyPart::SentBack => MyPart::SentBack,
            queue::MyPart::Answered => MyPart::Answered,
            queue::MyPart::Rejected => MyPart::Rejected,
            queue::MyPart::ResearchBack => MyPart::ResearchBack,
        }
    }
}

/// My part in one waiting question.
#[derive(SimpleObject)]
pub struct MyPartIn {
    /// The question.
    pub question_id: ID,
    /// What I did.
    pub part: MyPart,
    /// Whether it needs me (only `RESEARCH_BACK` does).
    pub needs_me: bool,
    /// The question's research round now (the agent's round of findings it is on).
    pub round: i64,
}

/// A page of `niche`'s triage queue, for `Niche.queue`.
#[allow(clippy::too_many_arguments)]
pub async fn queue_of(
    ctx: &Context<'_>,
    niche: &entity::niches::Model,
    first: Option<i32>,
    after: Option<String>,
    sort: QueueSort,
    urgency: Option<Urgency>,
    kind: Option<ExchangeKind>,
    has_bounty: Option<bool>,
    search: Option<String>,
) -> Result<TriageConnection> {
    let db = ctx.data::<Db>()?;
    let first = queue::page_size(first).gql()?;
    let sort = TriageSort::from(sort);
    let after = after
        .as_deref()
        .map(|raw| TriageCursor::decode(raw, sort))
        .transpose()
        .gql()?;
    let filter = TriageFilter {
        urgency: urgency.map(Into::into),
        kind: kind.map(Into::into),
        has_bounty,
        search,
    };
    let page = triage::triage(
        db,
        caller_of(ctx)?.viewer(),
        niche,
        filter,
        sort,
        first,
        after,
        Utc::now(),
    )
    .await
    .gql()?;
    let mut connection = Connection::with_additional_fields(
        after.is_some(),
        page.has_next,
        TriageTotals {
            total_count: i64::try_from(page.total).unwrap_or(i64::MAX),
        },
    );
    connection.edges.extend(
        page.items
            .into_iter()
            .map(|q| Edge::new(TriageCursor::of(&q, sort).encode(), Question::from(q))),
    );
    Ok(connection)
}

/// `niche`'s waiting counts, for `Niche.waitingCounts`.
pub async fn counts_of(ctx: &Context<'_>, niche: &entity::niches::Model) -> Result<WaitingCounts> {
    let db = ctx.data::<Db>()?;
    let counts = triage::waiting_counts(db, caller_of(ctx)?.viewer(), niche, Utc::now())
        .await
        .gql()?;
    Ok(WaitingCounts {
        total: i64::try_from(counts.total).unwrap_or(i64::MAX),
        high: i64::try_from(counts.high).unwrap_or(i64::MAX),
        needs_me: i64::try_from(counts.needs_me).unwrap_or(i64::MAX),
        needs_me_high: i64::try_from(counts.needs_me_high).unwrap_or(i64::MAX),
    })
}
