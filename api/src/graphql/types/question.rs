//! A question as GraphQL shows it: its options, answers, consensus, routed wave and timeline.

use crate::db::Db;
use async_graphql::ErrorExtensions;
use async_graphql::dataloader::DataLoader;
use async_graphql::{ComplexObject, Context, Enum, ID, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind as StoredKind};
use entity::agent_questions::{self, QuestionStatus as StoredStatus};
use entity::audit_log;

use super::{Niche, NicheLoader};
use crate::error::ServiceError;
use crate::graphql::caller_of;
use crate::graphql::deliveries::Delivery;
use crate::graphql::enums::{ContributionStatus, Urgency};
use crate::graphql::error_door::GqlResultExt;
use crate::graphql::knowledge::{KnowledgeEntry, known_of};
use crate::graphql::money::BudgetEntry;
use crate::service::questions::queue::{self};
use crate::service::{knowledge, people::names, questions::consensus};

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
            AnswerKind::FromKnowledge => crate::service::questions::answering::FROM_KNOWLEDGE,
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
    pub kind: crate::graphql::enums::ExchangeKind,
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
        let rows = crate::service::questions::routing::routes_of(db, id)
            .await
            .gql()?;
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
        let consensus = consensus::consensus_of_question(db, id).await.gql()?;
        Ok(consensus.map(|(c, answers)| ConsensusView {
            option_label: self
                .options
                .iter()
                .find(|o| o.id == c.option_id)
                .map(|o| o.label.clone()),
            option_id: c.option_id,
            agreement: c.agreement,
            weighted_agreement: c.weighted_agreement,
            reached: c.reached,
            answers: i32::try_from(answers).unwrap_or(i32::MAX),
        }))
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
