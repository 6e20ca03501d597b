//! Reading questions: a niche's queue (waiting: most urgent first, then oldest; settled: newest
//! first), one question with its answers, timeline, budget entries and (for admins) deliveries,
//! the question an answer-contribution was for, and "awaiting me" across my niches.
//! Pagination is keyset (a cursor, never an offset), so a page costs the same at any depth and
//! every read walks an index.

use chrono::{DateTime, Utc};
use entity::agent_questions::{self, QuestionStatus};
use std::collections::HashMap;

use crate::db::Db;
use entity::agent_answers::{self, AnswerKind};
use entity::contribution_events::{self, ContributionStatus};
use entity::{audit_log, budget_entries, deliveries, niches};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait, Select, Statement,
};

use crate::error::ServiceError;
use crate::service::people::access::{self, Viewer};

/// The predicate of the `agent_questions_waiting_idx` partial index, word for word.
const WAITING_PREDICATE: &str = "status IN ('open', 'researching')";

/// The most questions one page may hold.
pub const MAX_PAGE: u64 = 100;
/// The page size when none is asked for.
pub const DEFAULT_PAGE: u64 = 20;

/// Which questions to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueFilter {
    /// Open and researching: what still needs someone.
    Waiting,
    /// Only one status.
    Only(QuestionStatus),
}

/// A page of questions and where the next one starts.
#[derive(Debug, Clone)]
pub struct Page {
    /// The questions, in queue order.
    pub items: Vec<agent_questions::Model>,
    /// Whether more follow.
    pub has_next: bool,
}

/// Where a page starts: after the question with this sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The urgency rank (waiting order) or 0 (settled order).
    pub rank: i16,
    /// The question id.
    pub id: i64,
}

impl Cursor {
    /// The opaque text clients pass back.
    pub fn encode(self) -> String {
        format!("q{}.{}", self.rank, self.id)
    }

    /// Read a cursor a client passed back.
    pub fn decode(raw: &str) -> Result<Self, ServiceError> {
        let bad = || ServiceError::BadInput("that cursor is not one askloop gave out".into());
        let rest = raw.strip_prefix('q').ok_or_else(bad)?;
        let (rank, id) = rest.split_once('.').ok_or_else(bad)?;
        Ok(Self {
            rank: rank.parse().map_err(|_| bad())?,
            id: id.parse().map_err(|_| bad())?,
        })
    }

    /// The cursor of `question` in a list filtered by `filter`.
    pub fn of(question: &agent_questions::Model, filter: QueueFilter) -> Self {
        match sorts_by_urgency(filter) {
            true => Self {
                rank: question.urgency_rank,
                id: question.id,
            },
            false => Self {
                rank: 0,
                id: question.id,
            },
        }
    }
}

fn sorts_by_urgency(filter: QueueFilter) -> bool {
    matches!(
        filter,
        QueueFilter::Waiting
            | QueueFilter::Only(QuestionStatus::Open)
            | QueueFilter::Only(QuestionStatus::Researching)
    )
}

/// Clamp a requested page size to 1..=100; 0 or less is refused.
pub fn page_size(first: Option<i32>) -> Result<u64, ServiceError> {
    match first {
        None => Ok(DEFAULT_PAGE),
        Some(n) if n >= 1 && i64::from(n) <= MAX_PAGE as i64 => Ok(n as u64),
        Some(_) => Err(ServiceError::BadInput(format!(
            "first must be between 1 and {MAX_PAGE}"
        ))),
    }
}

/// The niche with this slug, or 404.
pub async fn niche_by_slug(db: &Db, slug: &str) -> Result<niches::Model, ServiceError> {
    niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug.trim().to_lowercase()))
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{slug}'")))
}

/// A page of `niche`'s questions, for someone allowed to read them.
pub async fn niche_questions(
    db: &Db,
    viewer: Option<&Viewer>,
    niche: &niches::Model,
    filter: QueueFilter,
    first: u64,
    after: Option<Cursor>,
    now: DateTime<Utc>,
) -> Result<Page, ServiceError> {
    access::can_read_questions(db, viewer, niche).await?;
    let condition = Condition::all().add(agent_questions::Column::NicheId.eq(niche.id));
    page(db, condition, filter, first, after, now).await
}

fn page_query(
    condition: Condition,
    filter: QueueFilter,
    first: u64,
    after: Option<Cursor>,
    now: DateTime<Utc>,
) -> Select<agent_questions::Entity> {
    let mut query = agent_questions::Entity::find().filter(condition);
    query = match filter {
        // Written with literals, exactly as the partial index's predicate: planners only use a
        // partial index when they can prove the query implies its WHERE, which bound
        // parameters do not allow.
        QueueFilter::Waiting => query
            .filter(Expr::cust(WAITING_PREDICATE))
            .filter(agent_questions::Column::ExpiresAt.gt(now)),
        QueueFilter::Only(status) => query.filter(agent_questions::Column::Status.eq(status)),
    };
    if sorts_by_urgency(filter) {
        if let Some(after) = after {
            query = query.filter(
                Expr::tuple([
                    Expr::col(agent_questions::Column::UrgencyRank),
                    Expr::col(agent_questions::Column::Id),
                ])
                .gt(Expr::tuple([
                    Expr::value(after.rank),
                    Expr::value(after.id),
                ])),
            );
        }
        query = query
            .order_by_asc(agent_questions::Column::UrgencyRank)
            .order_by_asc(agent_questions::Column::Id);
    } else {
        if let Some(after) = after {
            query = query.filter(agent_questions::Column::Id.lt(after.id));
        }
        query = query.order_by_desc(agent_questions::Column::Id);
    }
    query.limit(first + 1)
}

async fn page(
    db: &Db,
    condition: Condition,
    filter: QueueFilter,
    first: u64,
    after: Option<Cursor>,
    now: DateTime<Utc>,
) -> Result<Page, ServiceError> {
    let mut items = page_query(condition, filter, first, after, now)
        .all(db)
        .await?;
    let has_next = items.len() as u64 > first;
    items.truncate(first as usize);
    Ok(Page { items, has_next })
}

/// The database's plan for a page of a niche's waiting queue (for the queue benchmark: it shows
/// the page is read through the partial index, not by scanning the table).
pub async fn explain_waiting_page(
    db: &Db,
    niche_id: i64,
    after: Option<Cursor>,
) -> Result<String, ServiceError> {
    let backend = db.get_database_backend();
    let condition = Condition::all().add(agent_questions::Column::NicheId.eq(niche_id));
    let statement = page_query(
        condition,
        QueueFilter::Waiting,
        DEFAULT_PAGE,
        after,
        Utc::now(),
    )
    .build(backend);
    let prefix = match backend {
        DbBackend::Sqlite => "EXPLAIN QUERY PLAN ",
        _ => "EXPLAIN ",
    };
    let explain = Statement::from_sql_and_values(
        backend,
        format!("{prefix}{}", statement.sql),
        statement.values.map(|v| v.0).unwrap_or_default(),
    );
    let rows = db.query_all_raw(explain).await?;
    let mut plan = Vec::new();
    for row in rows {
        let line = match backend {
            DbBackend::Sqlite => row.try_get::<String>("", "detail"),
            _ => row.try_get::<String>("", "QUERY PLAN"),
        };
        plan.push(line.unwrap_or_default());
    }
    Ok(plan.join("\n"))
}

/// "Your agent needs you": waiting questions in my active operator/specialist niches that I have
/// not acted on in their current research round.
pub async fn awaiting_me(
    db: &Db,
    viewer: Option<&Viewer>,
    first: u64,
    after: Option<Cursor>,
    now: DateTime<Utc>,
) -> Result<Page, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let niche_ids = access::acting_niches(db, viewer).await?;
    if niche_ids.is_empty() {
        return Ok(Page {
            items: Vec::new(),
            has_next: false,
        });
    }
    let condition = Condition::all()
        .add(agent_questions::Column::NicheId.is_in(niche_ids))
        .add(not_acted_on_by(viewer));
    page(db, condition, QueueFilter::Waiting, first, after, now).await
}

/// Not acted on by `viewer` in the question's current research round (nor answered at all:
/// an answer rejected from a reopened question bars its author from answering it again).
/// What "needs me" means everywhere: the niches page, the queue's heading and its groups.
pub(crate) fn not_acted_on_by(viewer: &Viewer) -> sea_orm::sea_query::SimpleExpr {
    let acted = Query::select()
        .expr(Expr::val(1))
        .from(agent_answers::Entity)
        .and_where(
            Expr::col((agent_answers::Entity, agent_answers::Column::QuestionId))
                .equals((agent_questions::Entity, agent_questions::Column::Id)),
        )
        .and_where(
            Expr::col((agent_answers::Entity, agent_answers::Column::UserId)).eq(viewer.user_id),
        )
        // Acted on in this round, or answered at all: an answer rejected from a reopened
        // question bars its author from answering it again.
        .cond_where(
            Condition::any()
                .add(
                    Expr::col((agent_answers::Entity, agent_answers::Column::ResearchRound))
                        .equals((
                            agent_questions::Entity,
                            agent_questions::Column::ResearchRound,
                        )),
                )
                .add(
                    Expr::col((agent_answers::Entity, agent_answers::Column::Kind))
                        .eq(AnswerKind::Answered),
                ),
        )
        .to_owned();
    Expr::exists(acted).not()
}

/// "Your agent needs you", niche by niche: for each of my active operator/specialist niches with
/// a question waiting for me, its `per_niche` most urgent and how many wait in all.
pub async fn awaiting_me_by_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    per_niche: u64,
    now: DateTime<Utc>,
) -> Result<Vec<(niches::Model, Page, u64)>, ServiceError> {
    use sea_orm::PaginatorTrait;
    let viewer = access::signed_in(viewer)?;
    let niche_ids = access::acting_niches(db, viewer).await?;
    if niche_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut niches = niches::Entity::find()
        .filter(niches::Column::Id.is_in(niche_ids))
        .all(db)
        .await?;
    niches.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    let mut out = Vec::new();
    for niche in niches {
        let condition = || {
            Condition::all()
                .add(agent_questions::Column::NicheId.eq(niche.id))
                .add(not_acted_on_by(viewer))
        };
        let count = agent_questions::Entity::find()
            .filter(condition())
            .filter(Expr::cust(WAITING_PREDICATE))
            .filter(agent_questions::Column::ExpiresAt.gt(now))
            .count(db)
            .await?;
        if count == 0 {
            continue;
        }
        let top = page(db, condition(), QueueFilter::Waiting, per_niche, None, now).await?;
        out.push((niche, top, count));
    }
    Ok(out)
}

/// One question, for someone allowed to read its niche.
pub async fn question(
    db: &Db,
    viewer: Option<&Viewer>,
    id: i64,
) -> Result<(agent_questions::Model, niches::Model), ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let question = agent_questions::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such question".into()))?;
    let niche = niches::Entity::find_by_id(question.niche_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question without a niche")))?;
    access::can_read_questions(db, Some(viewer), &niche).await?;
    Ok((question, niche))
}

/// The answers given to a question, oldest first.
pub async fn answers_of(
    db: &Db,
    question_id: i64,
) -> Result<Vec<agent_answers::Model>, ServiceError> {
    Ok(agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question_id))
        .order_by_asc(agent_answers::Column::Id)
        .all(db)
        .await?)
}

/// The review state of the answers whose contributions are `contribution_ids`, by contribution.
pub async fn reviews_of<C: ConnectionTrait>(
    conn: &C,
    contribution_ids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, ContributionStatus>, ServiceError> {
    let ids: Vec<i64> = contribution_ids.into_iter().collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(contribution_events::Entity::find()
        .filter(contribution_events::Column::Id.is_in(ids))
        .all(conn)
        .await?
        .into_iter()
        .map(|c| (c.id, c.status))
        .collect())
}

/// A question's timeline, oldest first: its own audit entries, the verdicts on its answers
/// (verified, rejected, reversed; each with the id of the person whose answer it was) and what
/// happened to the knowledge written from it.
pub async fn timeline_of(
    db: &Db,
    question_id: i64,
) -> Result<Vec<(audit_log::Model, Option<i64>)>, ServiceError> {
    let answerers: HashMap<String, i64> = agent_answers::Entity::find()
        .select_only()
        .column(agent_answers::Column::ContributionEventId)
        .column(agent_answers::Column::UserId)
        .filter(agent_answers::Column::QuestionId.eq(question_id))
        .filter(agent_answers::Column::ContributionEventId.is_not_null())
        .into_tuple::<(Option<i64>, i64)>()
        .all(db)
        .await?
        .into_iter()
        .filter_map(|(contribution, user)| Some((contribution?.to_string(), user)))
        .collect();
    let entries: Vec<String> = entity::knowledge_entries::Entity::find()
        .select_only()
        .column(entity::knowledge_entries::Column::Id)
        .filter(entity::knowledge_entries::Column::QuestionId.eq(question_id))
        .into_tuple::<i64>()
        .all(db)
        .await?
        .into_iter()
        .map(|id| id.to_string())
        .collect();
    let subject = |kind: &str, ids: Vec<String>| {
        Condition::all()
            .add(audit_log::Column::SubjectType.eq(kind))
            .add(audit_log::Column::SubjectId.is_in(ids))
    };
    let mut about = Condition::any().add(subject("question", vec![question_id.to_string()]));
    if !answerers.is_empty() {
        about = about.add(
            subject("contribution", answerers.keys().cloned().collect()).add(
                audit_log::Column::Action.is_in([
                    "contribution.verified",
                    "contribution.rejected",
                    "contribution.reversed",
                ]),
            ),
        );
    }
    if !entries.is_empty() {
        about = about.add(subject("knowledge_entry", entries));
    }
    Ok(audit_log::Entity::find()
        .filter(about)
        .order_by_asc(audit_log::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(|row| {
            let answerer = (row.subject_type == "contribution")
                .then(|| answerers.get(&row.subject_id).copied())
                .flatten();
            (row, answerer)
        })
        .collect())
}

/// A question's budget ledger rows (reserve, charge, release, …), oldest first. Who may read
/// them is who may read the question: callers reach this only through a question they read.
pub async fn budget_entries_of(
    db: &Db,
    question_id: i64,
) -> Result<Vec<budget_entries::Model>, ServiceError> {
    Ok(budget_entries::Entity::find()
        .filter(budget_entries::Column::QuestionId.eq(question_id))
        .order_by_asc(budget_entries::Column::Id)
        .all(db)
        .await?)
}

/// The events written for the agent about a question, oldest first (admins only: deliveries
/// carry envelopes and the agent's endpoint's answers).
pub async fn deliveries_of(
    db: &Db,
    viewer: Option<&Viewer>,
    question_id: i64,
) -> Result<Vec<deliveries::Model>, ServiceError> {
    access::admin(viewer)?;
    Ok(deliveries::Entity::find()
        .filter(deliveries::Column::QuestionId.eq(question_id))
        .order_by_asc(deliveries::Column::Id)
        .all(db)
        .await?)
}

/// The answer that earned contribution `contribution_id` and the question it answered, for
/// someone allowed to read that question; `None` when the contribution was not earned by an
/// answer (a manual adjustment).
pub async fn answered_question(
    db: &Db,
    viewer: Option<&Viewer>,
    contribution_id: i64,
) -> Result<Option<(agent_answers::Model, agent_questions::Model)>, ServiceError> {
    access::signed_in(viewer)?;
    let Some(answer) = agent_answers::Entity::find()
        .filter(agent_answers::Column::ContributionEventId.eq(contribution_id))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let (question, _) = question(db, viewer, answer.question_id).await?;
    Ok(Some((answer, question)))
}

/// What I did to a waiting question, as the queue's "Handled by you" group shows it; or, for
/// [`MyPart::ResearchBack`], that it needs me again because the agent's research came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MyPart {
    /// I declined it ("not enough context") in this research round.
    Declined,
    /// I sent it back for research in this round: waiting for the agent's research.
    SentBack,
    /// I answered it; the answer is awaiting review (or verified, on a several-answer
    /// question still filling its places).
    Answered,
    /// My answer was rejected; I may not answer it again.
    Rejected,
    /// I declined or sent it back in an earlier round and the agent's research has come back
    /// since: it needs me again.
    ResearchBack,
}

impl MyPart {
    /// Whether the question still needs me (only once research came back).
    pub fn needs_me(self) -> bool {
        self == MyPart::ResearchBack
    }
}

/// My part in one waiting question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MyPartOf {
    /// The question.
    pub question_id: i64,
    /// What I did.
    pub part: MyPart,
    /// The question's research round now.
    pub round: i64,
}

/// My part in each waiting question of `niche` I have acted on at any time, by question id
/// (questions I never touched are not listed: they need me). The rule is the one of
/// [`not_acted_on_by`]: every part but [`MyPart::ResearchBack`] is "handled by me".
pub async fn my_parts(
    db: &Db,
    viewer: Option<&Viewer>,
    niche: &niches::Model,
    now: DateTime<Utc>,
) -> Result<Vec<MyPartOf>, ServiceError> {
    access::can_read_questions(db, viewer, niche).await?;
    let viewer = access::signed_in(viewer)?;
    let waiting = Query::select()
        .column(agent_questions::Column::Id)
        .from(agent_questions::Entity)
        .and_where(agent_questions::Column::NicheId.eq(niche.id))
        .and_where(Expr::cust(WAITING_PREDICATE))
        .and_where(agent_questions::Column::ExpiresAt.gt(now))
        .to_owned();
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::UserId.eq(viewer.user_id))
        .filter(agent_answers::Column::QuestionId.in_subquery(waiting))
        .order_by_asc(agent_answers::Column::Id)
        .all(db)
        .await?;
    if answers.is_empty() {
        return Ok(Vec::new());
    }
    let rounds: HashMap<i64, i64> = agent_questions::Entity::find()
        .filter(agent_questions::Column::Id.is_in(answers.iter().map(|a| a.question_id)))
        .all(db)
        .await?
        .into_iter()
        .map(|q| (q.id, q.research_round))
        .collect();
    let reviews = reviews_of(db, answers.iter().filter_map(|a| a.contribution_event_id)).await?;
    // Grouped by question, in the order each question first appears (its oldest answer).
    let mut order: Vec<i64> = Vec::new();
    let mut by_question: HashMap<i64, Vec<agent_answers::Model>> = HashMap::new();
    for answer in answers {
        let list = by_question.entry(answer.question_id).or_default();
        if list.is_empty() {
            order.push(answer.question_id);
        }
        list.push(answer);
    }
    let mut parts = Vec::with_capacity(order.len());
    for question_id in order {
        let mine = by_question.remove(&question_id).unwrap_or_default();
        let Some(&round) = rounds.get(&question_id) else {
            continue;
        };
        parts.push(MyPartOf {
            question_id,
            part: part_of(&mine, round, &reviews),
            round,
        });
    }
    Ok(parts)
}

/// My part in a question at research round `round`, from my answers to it (oldest first).
fn part_of(
    mine: &[agent_answers::Model],
    round: i64,
    reviews: &HashMap<i64, ContributionStatus>,
) -> MyPart {
    if let Some(answer) = mine.iter().rev().find(|a| a.kind == AnswerKind::Answered) {
        let review = answer
            .contribution_event_id
            .and_then(|c| reviews.get(&c).copied());
        return match review {
            Some(ContributionStatus::Rejected | ContributionStatus::Reversed) => MyPart::Rejected,
            _ => MyPart::Answered,
        };
    }
    match mine.iter().rev().find(|a| a.research_round == round) {
        Some(a) if a.kind == AnswerKind::NeedsResearch => MyPart::SentBack,
        Some(_) => MyPart::Declined,
        None => MyPart::ResearchBack,
    }
}
