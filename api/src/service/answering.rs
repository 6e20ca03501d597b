//! Answering, declining and dismissing (docs/contract.md#answering), in one place that every
//! surface calls.
//!
//! Exactly one answer wins: the status change is a conditional UPDATE (only from open or
//! researching, only before expiry) in the same transaction as the answer row and the
//! contribution. The loser's UPDATE matches no row and it gets a clean 409.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Duration, Utc};
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, ExchangeKind, QuestionStatus};
use entity::budget_entries::BudgetEntryKind;
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_entries;
use entity::niche_members::{self, MemberRole, MemberStatus};
use entity::niches;
use sea_orm::sea_query::{Alias, Expr, JoinType, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait,
    FromQueryResult, IdenStatic, Iterable, NotSet, PaginatorTrait, QueryFilter, QueryTrait,
    TryInsertResult,
};
use serde_json::json;

use crate::db::{Db, Turns, WriteTxn};
use crate::domain::answer::{self, Kind, ValidAnswer};
use crate::domain::intake::{QuestionOption, option_label};
use crate::domain::{scoring, weighing};
use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::access::{self, Viewer};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::outbox::{self, EventType, NewEvent};
use crate::service::{budget, knowledge, reuse, revenue, scores, standing};

/// An answer as a surface received it; checked here, after the caller's rights.
#[derive(Debug, Clone)]
pub struct AnswerRequest {
    /// The question.
    pub question_id: i64,
    /// `answered`, `insufficient_context` or `needs_research`.
    pub kind: String,
    /// The chosen option.
    pub option_id: Option<String>,
    /// The words (completing a task: its result).
    pub body: Option<String>,
    /// Completing a task: what it cost, 0 up to the task's limit (docs/contract.md#delegated-tasks).
    pub actual_cost_minor: Option<i64>,
    /// `from_knowledge`: the current knowledge entry of the question's niche that answers it.
    pub entry_id: Option<i64>,
    /// How sure the answerer is, in percent (50–100); answers and task completions only.
    pub confidence: Option<i32>,
}

/// The answer kind that settles a question by pointing to a knowledge entry.
pub const FROM_KNOWLEDGE: &str = "from_knowledge";

/// What answering did.
#[derive(Debug, Clone)]
pub struct AnswerOutcome {
    /// The stored answer row.
    pub answer: agent_answers::Model,
    /// The question after the change.
    pub question: agent_questions::Model,
    /// Points the answer earned (0 for declines).
    pub points: i64,
    /// The contribution's review state, for answers.
    pub contribution_status: Option<ContributionStatus>,
    /// What to tell the person.
    pub notice: String,
}

/// The waiting statuses (the vocabulary lives with the entity).
pub use entity::agent_questions::WAITING;

/// The question's options as stored.
pub fn options_of(question: &agent_questions::Model) -> Vec<QuestionOption> {
    crate::domain::intake::stored_options(&question.options)
}

/// What `question` is, for checking what is said of it: a question with `options`, or a task and
/// its limit.
pub fn exchange_of<'a>(
    question: &agent_questions::Model,
    options: &'a [QuestionOption],
) -> answer::Exchange<'a> {
    match question.kind {
        ExchangeKind::Question => answer::Exchange::Question(options),
        ExchangeKind::Task => answer::Exchange::Task {
            limit_minor: question.bounty_minor,
        },
    }
}

/// Whether a question still waits for someone at `now`.
pub fn is_waiting(question: &agent_questions::Model, now: DateTime<Utc>) -> bool {
    WAITING.contains(&question.status) && question.expires_at > now
}

/// How a waiting question closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    /// The winning answer: answered, at `now`. Only while its time runs.
    Answered,
    /// Dismissed by a member or an admin. Only while its time runs.
    Dismissed,
    /// Withdrawn by the agent that asked it: dismissed, saying so. Only while its time runs.
    Withdrawn,
    /// Its time ran out: expired. Only once it has.
    Expired,
}

/// Close `question_id` if it still waits — the one place a waiting question closes, for the
/// winning answer, a dismissal and expiry alike. The update is conditional (still waiting, and
/// its time still running, or for expiry run out), so of any number of closers racing, on any
/// number of instances, one wins. The question as closed, or `None` when it no longer waited.
pub async fn close_if_waiting(
    txn: &WriteTxn,
    question_id: i64,
    closing: Closing,
    now: DateTime<Utc>,
) -> Result<Option<agent_questions::Model>, ServiceError> {
    let (status, time) = match closing {
        Closing::Answered => (
            QuestionStatus::Answered,
            agent_questions::Column::ExpiresAt.gt(now),
        ),
        Closing::Dismissed | Closing::Withdrawn => (
            QuestionStatus::Dismissed,
            agent_questions::Column::ExpiresAt.gt(now),
        ),
        Closing::Expired => (
            QuestionStatus::Expired,
            agent_questions::Column::ExpiresAt.lte(now),
        ),
    };
    let mut update = agent_questions::Entity::update_many()
        .col_expr(agent_questions::Column::Status, Expr::value(status))
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now));
    if closing == Closing::Answered {
        update = update.col_expr(agent_questions::Column::AnsweredAt, Expr::value(Some(now)));
    }
    if closing == Closing::Withdrawn {
        update = update.col_expr(agent_questions::Column::WithdrawnAt, Expr::value(Some(now)));
    }
    let closed = update
        .filter(agent_questions::Column::Id.eq(question_id))
        .filter(agent_questions::Column::Status.is_in(WAITING))
        .filter(time)
        .exec_with_returning(txn)
        .await?;
    Ok(closed.into_iter().next())
}

/// The 409 for a question that no longer waits.
fn not_waiting(question: &agent_questions::Model) -> ServiceError {
    if question.status == QuestionStatus::Expired || WAITING.contains(&question.status) {
        Conflict::QuestionExpired.into()
    } else if question.status == QuestionStatus::Answered && question.answers_wanted > 1 {
        Conflict::AnswersComplete(question.answers_wanted).into()
    } else {
        Conflict::QuestionSettled.into()
    }
}

async fn find_question<C: ConnectionTrait>(
    conn: &C,
    id: i64,
) -> Result<agent_questions::Model, ServiceError> {
    agent_questions::Entity::find_by_id(id)
        .one(conn)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such question".into()))
}

/// A question, its niche and `viewer`'s membership there, in one read: answering reads all three
/// before anything else, and under a burst every round trip in front of the turn queue counts.
async fn question_niche_and_membership<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    viewer: &Viewer,
) -> Result<
    (
        agent_questions::Model,
        niches::Model,
        Option<niche_members::Model>,
    ),
    ServiceError,
> {
    use sea_orm::sea_query::ExprTrait;
    let mut select = agent_questions::Entity::find_by_id(id)
        .find_also_related(niches::Entity)
        .into_query();
    select.join(
        JoinType::LeftJoin,
        niche_members::Entity,
        Condition::all()
            .add(
                Expr::col((niche_members::Entity, niche_members::Column::NicheId))
                    .equals((agent_questions::Entity, agent_questions::Column::NicheId)),
            )
            .add(
                Expr::col((niche_members::Entity, niche_members::Column::UserId))
                    .eq(viewer.user_id),
            ),
    );
    for column in niche_members::Column::iter() {
        select.expr_as(
            column.select_as(Expr::col((niche_members::Entity, column))),
            Alias::new(format!("{MEMBER}{}", column.as_str())),
        );
    }
    let row = conn
        .query_one_raw(conn.get_database_backend().build(&select))
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such question".into()))?;
    let question = agent_questions::Model::from_query_result(&row, "A_")?;
    let niche = niches::Model::from_query_result_optional(&row, "B_")?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question without a niche")))?;
    let member = niche_members::Model::from_query_result_optional(&row, MEMBER)?;
    Ok((question, niche, member))
}

/// The prefix of the membership's columns in [`question_niche_and_membership`]'s row (the
/// question's and the niche's are sea-orm's own `A_` and `B_`).
const MEMBER: &str = "C_";

async fn niche_of<C: ConnectionTrait>(
    conn: &C,
    question: &agent_questions::Model,
) -> Result<niches::Model, ServiceError> {
    niches::Entity::find_by_id(question.niche_id)
        .one(conn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question without a niche")))
}

/// Answer question `question_id` only if it belongs to the niche named `slug`: the member route
/// names both, and a question of another niche is "not found" there rather than answered.
pub async fn answer_in_niche(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    slug: &str,
    request: AnswerRequest,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    access::signed_in(viewer)?;
    let niche = crate::service::queue::niche_by_slug(db, slug).await?;
    let belongs = agent_questions::Entity::find_by_id(request.question_id)
        .one(db)
        .await?
        .is_some_and(|q| q.niche_id == niche.id);
    if !belongs {
        return Err(ServiceError::NotFound(
            "no such question in that niche".into(),
        ));
    }
    answer_question(db, hint, viewer, request, now).await
}

/// The turns of this process's writers to each question of the database `db` opens; a turn that
/// settles its question leaves the refusal for the writers queued behind it, and one that
/// reopens it clears that (`admin::review`). (Per database: two databases have questions with
/// the same ids.)
pub fn question_turns(db: &Db) -> Arc<Turns<Conflict>> {
    static TURNS: OnceLock<Mutex<HashMap<String, Arc<Turns<Conflict>>>>> = OnceLock::new();
    TURNS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(db.key())
        .or_default()
        .clone()
}

/// Answer, decline or send back a question, in the order of docs/contract.md#answering: signed in
/// (401) → the question exists (404) → it still waits (409) → an active, non-observer member of its
/// niche (403) → a known kind (400) → an answer has an option or words (400) → one row per person.
pub async fn answer_question(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    request: AnswerRequest,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    // Everyone in this process answering the question queues here first, one at a time, holding
    // no pooled connection while they wait. A turn that settles the question leaves a note, and
    // the writers queued behind it are refused from the note, with no read at all: a settled
    // question is 409 whoever asks, whatever they send (the order above puts 409 before 403 and
    // 400). So under a burst, only the winner's statements reach the database while it writes.
    let turns = question_turns(db);
    let mut turn = turns.take(request.question_id).await;
    if let Some(settled) = turn.note() {
        return Err(settled.clone().into());
    }
    let (question, niche, member) =
        question_niche_and_membership(db, request.question_id, viewer).await?;
    if !is_waiting(&question, now) {
        return Err(not_waiting(&question));
    }
    if !access::acts_on_questions(member.as_ref()) {
        return Err(access::not_a_member(&niche));
    }
    if request.kind.trim().eq_ignore_ascii_case(FROM_KNOWLEDGE) {
        let entry = pointed_entry(db, &question, &request).await?;
        // Read before the write begins, as for any answer.
        let trusted = crate::service::weighing::history(db, niche.id, viewer.user_id, None)
            .await?
            .record_with(None)
            .trusted(niche.trust_lower_bound_bps);
        let txn = db
            .begin_write_checked(|| async {
                let now_it_is = find_question(db, question.id).await?;
                if !is_waiting(&now_it_is, now) {
                    return Err(not_waiting(&now_it_is));
                }
                Ok(())
            })
            .await?;
        let result = settle_from_knowledge(&txn, viewer, &question, &entry, trusted, now).await;
        return match result {
            Ok(outcome) => {
                txn.commit().await?;
                turn.leave(Conflict::QuestionSettled);
                hint.changed();
                Ok(outcome)
            }
            Err(err) => {
                txn.rollback().await?;
                Err(err)
            }
        };
    }
    if request.entry_id.is_some() {
        return Err(ServiceError::BadInput(format!(
            "entryId is only for an answer of kind {FROM_KNOWLEDGE}"
        )));
    }
    let options = options_of(&question);
    let valid = answer::validate_for(
        &request.kind,
        request.option_id.as_deref(),
        request.body.as_deref(),
        request.actual_cost_minor,
        exchange_of(&question, &options),
    )
    .map_err(ServiceError::BadInput)?;
    let confidence = weighing::confidence(request.confidence).map_err(ServiceError::BadInput)?;
    if confidence.is_some() && valid.kind != Kind::Answered {
        return Err(ServiceError::BadInput(
            "confidence is given with an answer, not with a decline or a request for research"
                .into(),
        ));
    }

    // The answerer's judged history is read here, before the write begins: on SQLite the one
    // writer would otherwise wait on a read that grows with the person's history. A verdict
    // landing between this read and the write is counted from the next answer on.
    let answer_type = scores::contribution_type(db, "agent_answer").await?;
    let window_start = answer_type
        .diminish_window_days
        .map(|days| now - Duration::days(i64::from(days)));
    let history = match valid.kind {
        Kind::Answered => {
            crate::service::weighing::history(db, question.niche_id, viewer.user_id, window_start)
                .await?
        }
        Kind::InsufficientContext | Kind::NeedsResearch => Default::default(),
    };
    let txn = db
        .begin_write_checked(|| async {
            let now_it_is = find_question(db, question.id).await?;
            if is_waiting(&now_it_is, now) {
                Ok(())
            } else {
                Err(not_waiting(&now_it_is))
            }
        })
        .await?;
    let answering = Answering {
        viewer,
        question: &question,
        valid: &valid,
        confidence,
        history: &history,
        answer_type: &answer_type,
    };
    let result = match valid.kind {
        Kind::Answered if question.answers_wanted > 1 => {
            settle_one_of_several(&txn, &answering, now).await
        }
        Kind::Answered => settle(&txn, &answering, now).await,
        Kind::InsufficientContext | Kind::NeedsResearch => {
            decline(&txn, viewer, &question, &valid, now).await
        }
    };
    match result {
        Ok(outcome) => {
            txn.commit().await?;
            if outcome.question.status == QuestionStatus::Answered {
                turn.leave(match outcome.question.answers_wanted {
                    1 => Conflict::QuestionSettled,
                    wanted => Conflict::AnswersComplete(wanted),
                });
            }
            hint.changed();
            Ok(outcome)
        }
        Err(err) => {
            txn.rollback().await?;
            Err(err)
        }
    }
}

/// One person's answer as the write transaction takes it: who, to what, what they said, and
/// their judged history read before the transaction began.
struct Answering<'a> {
    viewer: &'a Viewer,
    question: &'a agent_questions::Model,
    valid: &'a ValidAnswer,
    confidence: Option<i32>,
    history: &'a crate::service::weighing::History,
    answer_type: &'a entity::contribution_types::Model,
}

/// The winning answer, step by step in one transaction: close the question, book the
/// contribution, store the answer and the score, audit both, charge the agent, pay the answerer
/// their share, write the knowledge entry when it is verified on arrival, and tell the agent.
async fn settle(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let (viewer, question, valid) = (answering.viewer, answering.question, answering.valid);
    // The question as this transaction leaves it: nothing below changes its row.
    let Some(closed) = close_if_waiting(txn, question.id, Closing::Answered, now).await? else {
        // Someone else won (or the clock ran out) between our read and our write.
        return Err(not_waiting(&find_question(txn, question.id).await?));
    };
    let (contribution, answer) = record_the_answer(txn, answering, now).await?;
    let actor = Actor::User(viewer.user_id);
    if let Some(amount) = charge_the_agent(txn, &actor, question, valid, now).await? {
        pay_the_answerer(txn, viewer, question, &answer, amount, &contribution, now).await?;
        budget_audit(txn, &actor, question, "budget.charged", amount, now).await?;
    }
    if contribution.verified() {
        // Verified on arrival: it is the niche's knowledge from this transaction on.
        knowledge::record_verified_answer(txn, question, &answer, contribution.id, None, now)
            .await?;
    }
    tell_the_agent(txn, answering, question, &answer, &contribution, now).await?;
    let notice = if contribution.verified() {
        format!("Thanks. That is {} points.", contribution.points)
    } else {
        "Thanks. It goes to review before it counts.".to_owned()
    };
    Ok(AnswerOutcome {
        answer,
        question: closed,
        points: contribution.points,
        contribution_status: Some(contribution.status),
        notice,
    })
}

/// Claim one of a several-answer question's places (docs/contract.md#several-answers): one
/// conditional update counts the answer in while the question waits and has a place left, and
/// the answer that fills the last place settles it. Of any number of answerers racing, on any
/// number of instances, exactly as many as there are places succeed. The question as claimed.
async fn claim_a_place(
    txn: &WriteTxn,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<agent_questions::Model>, ServiceError> {
    use sea_orm::sea_query::ExprTrait;
    let answers_in = || Expr::col(agent_questions::Column::AnswersIn);
    let fills = || {
        Condition::all().add(ExprTrait::gte(
            ExprTrait::add(answers_in(), 1),
            Expr::col(agent_questions::Column::AnswersWanted),
        ))
    };
    let claimed = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::AnswersIn,
            ExprTrait::add(answers_in(), 1),
        )
        .col_expr(
            agent_questions::Column::Status,
            Expr::case(fills(), Expr::value(QuestionStatus::Answered))
                .finally(Expr::col(agent_questions::Column::Status))
                .into(),
        )
        .col_expr(
            agent_questions::Column::AnsweredAt,
            Expr::case(fills(), Expr::value(Some(now)))
                .finally(Expr::col(agent_questions::Column::AnsweredAt))
                .into(),
        )
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now))
        .filter(agent_questions::Column::Id.eq(question_id))
        .filter(agent_questions::Column::Status.is_in(WAITING))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .filter(ExprTrait::lt(
            answers_in(),
            Expr::col(agent_questions::Column::AnswersWanted),
        ))
        .exec_with_returning(txn)
        .await?;
    Ok(claimed.into_iter().next())
}

/// One answer of a several-answer question, in one transaction: claim a place, book the
/// contribution, store the answer, charge the agent this answer's part of the bounty (the rest
/// stays reserved), pay the answerer that part (held until its own verdict), tell the agent,
/// and when this answer fills the last place, conclude: consensus or disagreement.
async fn settle_one_of_several(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let (viewer, question) = (answering.viewer, answering.question);
    let Some(claimed) = claim_a_place(txn, question.id, now).await? else {
        return Err(not_waiting(&find_question(txn, question.id).await?));
    };
    let (contribution, answer) = record_the_answer(txn, answering, now).await?;
    let actor = Actor::User(viewer.user_id);
    let part = weighing::bounty_part(
        question.bounty_minor,
        claimed.answers_wanted,
        claimed.answers_in,
    );
    let charged = budget::charge_part(txn, question.niche_id, question.id, part, now).await?;
    if charged > 0 {
        pay_the_answerer(txn, viewer, question, &answer, charged, &contribution, now).await?;
        budget_audit(txn, &actor, question, "budget.charged", charged, now).await?;
    }
    if contribution.verified() {
        knowledge::record_verified_answer(txn, question, &answer, contribution.id, None, now)
            .await?;
    }
    tell_the_agent(txn, answering, &claimed, &answer, &contribution, now).await?;
    if claimed.status == QuestionStatus::Answered {
        crate::service::consensus::conclude(txn, &claimed, now).await?;
        // Only now may its answers become knowledge (docs/contract.md#several-answers).
        knowledge::record_concluded(txn, claimed.id, now).await?;
    }
    let count = format!(
        "{} of {} answers are in",
        claimed.answers_in, claimed.answers_wanted
    );
    let notice = if contribution.verified() {
        format!("Thanks. That is {} points; {count}.", contribution.points)
    } else {
        format!("Thanks. It goes to review before it counts; {count}.")
    };
    Ok(AnswerOutcome {
        answer,
        question: claimed,
        points: contribution.points,
        contribution_status: Some(contribution.status),
        notice,
    })
}

/// The entry an answer `from_knowledge` points to, checked: only `entryId` is sent (400
/// otherwise), the question is a question (a task's result is not knowledge: 400), and the
/// entry is one of the question's niche (404 otherwise, as for an entry that does not exist).
/// Whether it is still current is checked in the writing transaction.
async fn pointed_entry(
    db: &Db,
    question: &agent_questions::Model,
    request: &AnswerRequest,
) -> Result<knowledge_entries::Model, ServiceError> {
    let bad = |m: &str| Err(ServiceError::BadInput(m.to_owned()));
    let Some(entry_id) = request.entry_id else {
        return bad("an answer from knowledge needs entryId, the entry that answers it");
    };
    let words = |t: &Option<String>| t.as_deref().is_some_and(|t| !t.trim().is_empty());
    if words(&request.option_id)
        || words(&request.body)
        || request.actual_cost_minor.is_some()
        || request.confidence.is_some()
    {
        return bad(
            "an answer from knowledge gives the entry's option and words: send only entryId",
        );
    }
    if question.kind == ExchangeKind::Task {
        return bad("a task cannot be settled from knowledge");
    }
    if question.answers_wanted > 1 {
        return bad("a question asking for several answers takes each person's own answer");
    }
    let entry = knowledge_entries::Entity::find_by_id(entry_id)
        .one(db)
        .await?
        .filter(|e| e.niche_id == question.niche_id && e.question_id != question.id)
        .ok_or_else(|| {
            ServiceError::NotFound(format!("no knowledge entry {entry_id} in this niche"))
        })?;
    option_for_entry(question, &entry)?;
    Ok(entry)
}

/// The question's option an entry's chosen option stands for, matched by label (ignoring case
/// and surrounding spaces): an entry answers a question with options only when it chose one of
/// them (400 otherwise, naming the entry's choice). `None` for a question without options.
fn option_for_entry(
    question: &agent_questions::Model,
    entry: &knowledge_entries::Model,
) -> Result<Option<String>, ServiceError> {
    let options = options_of(question);
    if options.is_empty() {
        return Ok(None);
    }
    let same = |a: &str, b: &str| a.trim().to_lowercase() == b.trim().to_lowercase();
    let chosen = entry.option_label.as_deref().unwrap_or_default();
    options
        .iter()
        .find(|o| !chosen.trim().is_empty() && same(&o.label, chosen))
        .map(|o| Some(o.id.clone()))
        .ok_or_else(|| {
            ServiceError::BadInput(if chosen.trim().is_empty() {
                format!(
                    "knowledge entry {} chose no option, and this question asks for one of its options",
                    entry.id
                )
            } else {
                format!(
                    "knowledge entry {} chose \"{chosen}\", which is not one of this question's options",
                    entry.id
                )
            })
        })
}

/// Settle a waiting question by pointing to a current knowledge entry of its niche, in one
/// transaction (docs/contract.md#knowledge): close it, store the entry's option and words as the
/// winning answer naming the entry, book the pointer's contribution (verified: the entry was),
/// release the question's reservation and credit the entry's author as for a reuse, and tell
/// the agent the entry's answer, version and verdict. 409 `KNOWLEDGE_NOT_CURRENT` when the entry
/// stopped being current.
async fn settle_from_knowledge(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    entry: &knowledge_entries::Model,
    trusted: bool,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let entry = reuse::current_for_update(txn, entry.id)
        .await?
        .ok_or(ServiceError::Conflict(Conflict::KnowledgeNotCurrent))?;
    let option_id = option_for_entry(question, &entry)?;
    let Some(closed) = close_if_waiting(txn, question.id, Closing::Answered, now).await? else {
        return Err(not_waiting(&find_question(txn, question.id).await?));
    };
    // An answer like any other (docs/contract.md#knowledge): verified on arrival only for an
    // operator the niche trusts, and never when it points at their own entry (four eyes: the
    // pointer earns its author a reuse credit).
    let niche = niche_of(txn, question).await?;
    let status = if trusted && entry.answered_by != viewer.user_id {
        ContributionStatus::Verified
    } else {
        ContributionStatus::Pending
    };
    let verified = status == ContributionStatus::Verified;
    let pointer = scores::contribution_type(txn, knowledge::POINTER_TYPE).await?;
    let contribution = contribution_events::Entity::insert(contribution_events::ActiveModel {
        id: NotSet,
        niche_id: Set(question.niche_id),
        user_id: Set(viewer.user_id),
        type_id: Set(pointer.id),
        points: Set(pointer.default_points),
        status: Set(status),
        source: Set("answer".into()),
        evidence: Set(json!({ "questionId": question.id, "entryId": entry.id })),
        dedupe_key: Set(None),
        verified_at: Set(verified.then_some(now)),
        verified_by: Set(None),
        reverses: Set(None),
        created_at: Set(now),
    })
    .exec(txn)
    .await?
    .last_insert_id;
    let valid = ValidAnswer {
        kind: Kind::Answered,
        option_id: option_id.clone().or_else(|| entry.option_id.clone()),
        body: entry.answer.clone(),
        actual_cost_minor: None,
    };
    let answer = store_answer(
        txn,
        viewer,
        question,
        &valid,
        Stored {
            contribution_event_id: Some(contribution),
            knowledge_entry_id: Some(entry.id),
            confidence: None,
        },
        now,
    )
    .await?;
    scores::recompute(txn, question.niche_id, viewer.user_id, now).await?;
    let actor = Actor::User(viewer.user_id);
    let booked = Contribution {
        id: contribution,
        points: pointer.default_points,
        status,
    };
    audit_the_answer(txn, &actor, question, &answer, &valid, &booked, now).await?;
    if let Some(released) = budget::settle(
        txn,
        question.niche_id,
        question.id,
        BudgetEntryKind::Release,
        now,
    )
    .await?
    {
        budget_audit(txn, &actor, question, "budget.released", released, now).await?;
    }
    // The author's credit is held until this pointer is verified (docs/contract.md#held-money).
    let reuse = reuse::credit_pointer(
        txn, &niche, &entry, question, answer.id, !verified, &actor, now,
    )
    .await?;
    if reuse.amount_minor > 0 {
        budget_audit(
            txn,
            &actor,
            question,
            "budget.charged",
            reuse.amount_minor,
            now,
        )
        .await?;
    }
    let event = NewEvent {
        event: EventType::AnswerCreated,
        niche_id: question.niche_id,
        question_id: Some(question.id),
        user_id: Some(viewer.user_id),
        payload: json!({
            "questionId": question.id,
            "externalId": question.external_id,
            "answerId": answer.id,
            "answer": entry.answer,
            "optionId": valid.option_id,
            "optionLabel": entry.option_label,
            "answeredBy": viewer.handle,
            "review": if verified { "verified" } else { "pending" },
            "entryId": entry.id,
            "version": entry.version,
            "verdict": knowledge::verdict_word(&entry),
            "verifiedAt": entry.verified_at,
        }),
    };
    outbox::enqueue_to(txn, event, question.registered_agent_id, now).await?;
    let notice = if verified {
        format!(
            "Thanks. The agent has the answer from knowledge. That is {} point{}.",
            pointer.default_points,
            if pointer.default_points == 1 { "" } else { "s" }
        )
    } else {
        "Thanks. The agent has the answer from knowledge; it goes to review before it counts."
            .to_owned()
    };
    Ok(AnswerOutcome {
        answer,
        question: closed,
        points: pointer.default_points,
        contribution_status: Some(status),
        notice,
    })
}

/// What every answer that counts writes, alone or one of several: its contribution (points and
/// review state by the rules), the answer row, the answerer's score, and the audit rows.
async fn record_the_answer(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<(Contribution, agent_answers::Model), ServiceError> {
    let (viewer, question, valid, confidence) = (
        answering.viewer,
        answering.question,
        answering.valid,
        answering.confidence,
    );
    let contribution = book_contribution(txn, answering, now).await?;
    let answer = store_answer(
        txn,
        viewer,
        question,
        valid,
        Stored {
            contribution_event_id: Some(contribution.id),
            knowledge_entry_id: None,
            confidence,
        },
        now,
    )
    .await?;
    scores::recompute(txn, question.niche_id, viewer.user_id, now).await?;
    let actor = Actor::User(viewer.user_id);
    audit_the_answer(txn, &actor, question, &answer, valid, &contribution, now).await?;
    Ok((contribution, answer))
}

/// The contribution a winning answer earns, as booked.
struct Contribution {
    /// Its row.
    id: i64,
    /// Its points, diminished by the answerer's recent answers in the niche.
    points: i64,
    /// Verified on arrival (for an answerer the niche already trusts) or pending review.
    status: ContributionStatus,
}

impl Contribution {
    fn verified(&self) -> bool {
        self.status == ContributionStatus::Verified
    }
}

/// Book the answer's contribution: its points and review state by the scoring rules, once per
/// question (the dedupe key derives from it, so even a double-scored path books once).
async fn book_contribution(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<Contribution, ServiceError> {
    let (viewer, question, valid, confidence) = (
        answering.viewer,
        answering.question,
        answering.valid,
        answering.confidence,
    );
    let answer_type = answering.answer_type;
    let counts = answering.history.counts();
    let points = scoring::diminished_points(
        answer_type.default_points,
        counts.verified_in_window,
        answer_type
            .diminish_after
            .map_or(0, |d| u64::try_from(d).unwrap_or(0)),
    );
    // The trust rule (docs/contract.md#weighing-answers): the Wilson lower bound of the
    // person's verified rate in the niche against the niche's threshold.
    let niche = niche_of(txn, question).await?;
    let lower_bound = weighing::wilson_lower_bound(counts.verified, counts.judged);
    let status = if weighing::trusted(lower_bound, niche.trust_lower_bound_bps) {
        ContributionStatus::Verified
    } else {
        ContributionStatus::Pending
    };
    let verified = status == ContributionStatus::Verified;
    let dedupe_key = format!("agent_answer:question:{}", question.id);
    let inserted = contribution_events::Entity::insert(contribution_events::ActiveModel {
        id: NotSet,
        niche_id: Set(question.niche_id),
        user_id: Set(viewer.user_id),
        type_id: Set(answer_type.id),
        points: Set(points),
        status: Set(status),
        source: Set("answer".into()),
        evidence: Set(json!({
            "questionId": question.id,
            "optionId": valid.option_id,
            "confidence": confidence,
        })),
        dedupe_key: Set(Some(dedupe_key.clone())),
        verified_at: Set(verified.then_some(now)),
        verified_by: Set(None),
        reverses: Set(None),
        created_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            contribution_events::Column::NicheId,
            contribution_events::Column::UserId,
            contribution_events::Column::DedupeKey,
        ])
        .target_and_where(contribution_events::Column::DedupeKey.is_not_null())
        .do_nothing()
        .to_owned(),
    )
    .try_insert()
    .exec(txn)
    .await?;
    let id = match inserted {
        TryInsertResult::Inserted(result) => result.last_insert_id,
        TryInsertResult::Conflicted | TryInsertResult::Empty => contribution_events::Entity::find()
            .filter(contribution_events::Column::NicheId.eq(question.niche_id))
            .filter(contribution_events::Column::UserId.eq(viewer.user_id))
            .filter(contribution_events::Column::DedupeKey.eq(dedupe_key))
            .one(txn)
            .await?
            .map(|e| e.id)
            .ok_or_else(|| {
                ServiceError::Internal(anyhow::anyhow!("dedupe conflict without a row"))
            })?,
    };
    Ok(Contribution { id, points, status })
}

/// The answer's audit rows: the question answered (or the task completed) and the contribution
/// made, in one statement (this transaction holds the question's turn).
async fn audit_the_answer(
    txn: &WriteTxn,
    actor: &Actor,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    valid: &ValidAnswer,
    contribution: &Contribution,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let task = question.kind == ExchangeKind::Task;
    audit::record_all(
        txn,
        vec![
            audit::row(
                AuditEntry {
                    actor,
                    action: if task {
                        "task.completed"
                    } else {
                        "question.answered"
                    },
                    subject_type: "question",
                    subject_id: question.id,
                    niche_id: Some(question.niche_id),
                    detail: json!({
                        "answerId": answer.id,
                        "optionId": valid.option_id,
                        "actualCostMinor": valid.actual_cost_minor,
                    }),
                },
                now,
            ),
            audit::row(
                AuditEntry {
                    actor,
                    action: "contribution.created",
                    subject_type: "contribution",
                    subject_id: contribution.id,
                    niche_id: Some(question.niche_id),
                    detail: json!({
                        "points": contribution.points,
                        "status": contribution.status,
                        "questionId": question.id,
                    }),
                },
                now,
            ),
        ],
    )
    .await?;
    Ok(())
}

/// Settle the agent's reservation in the ledger: a question is charged its bounty; a task what
/// it cost, the rest of its reservation released together. What was charged, if anything.
async fn charge_the_agent(
    txn: &WriteTxn,
    actor: &Actor,
    question: &agent_questions::Model,
    valid: &ValidAnswer,
    now: DateTime<Utc>,
) -> Result<Option<i64>, ServiceError> {
    let task = question.kind == ExchangeKind::Task;
    match valid.actual_cost_minor.filter(|_| task) {
        Some(actual) => {
            let settled =
                budget::settle_at_cost(txn, question.niche_id, question.id, actual, now).await?;
            if settled.released > 0 {
                budget_audit(
                    txn,
                    actor,
                    question,
                    "budget.released",
                    settled.released,
                    now,
                )
                .await?;
            }
            Ok((settled.charged > 0).then_some(settled.charged))
        }
        None => Ok(budget::settle(
            txn,
            question.niche_id,
            question.id,
            BudgetEntryKind::Charge,
            now,
        )
        .await?),
    }
}

/// Book the `amount` charged as revenue, the answerer's share by their standing in the niche;
/// held until review when the contribution is not verified yet.
async fn pay_the_answerer(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    amount: i64,
    contribution: &Contribution,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let niche = niche_of(txn, question).await?;
    let ladder = scores::ladder(txn).await?;
    let share = standing::niche_shares(txn, niche.id, &ladder)
        .await?
        .into_iter()
        .find(|(user, _)| *user == viewer.user_id)
        .map_or(0, |(_, bps)| bps);
    revenue::book_bounty(
        txn,
        &niche,
        question.id,
        answer.id,
        (viewer.user_id, share),
        amount,
        if question.kind == ExchangeKind::Task {
            revenue::TASK_SOURCE
        } else {
            revenue::BOUNTY_SOURCE
        },
        !contribution.verified(),
        now,
    )
    .await?;
    Ok(())
}

/// The agent's event, in the outbox: `expert_answer.created`, or `task.completed` for a task.
async fn tell_the_agent(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    contribution: &Contribution,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let (viewer, valid) = (answering.viewer, answering.valid);
    let review = if contribution.verified() {
        "verified"
    } else {
        "pending"
    };
    // How much the answer weighs: the answerer's record in the niche as it stands now — the
    // history read before the write, and this answer when it was verified on arrival.
    let record = answering
        .history
        .record_with(contribution.verified().then_some(weighing::Judged {
            confidence: answer.confidence,
            verified: true,
        }));
    let answerer = crate::service::weighing::answerer_json(&record);
    let event = if question.kind == ExchangeKind::Task {
        NewEvent {
            event: EventType::TaskCompleted,
            niche_id: question.niche_id,
            question_id: Some(question.id),
            user_id: Some(viewer.user_id),
            payload: json!({
                "questionId": question.id,
                "externalId": question.external_id,
                "answerId": answer.id,
                "result": valid.body,
                "actualCostMinor": valid.actual_cost_minor,
                "budgetLimitMinor": question.bounty_minor,
                "completedBy": viewer.handle,
                "review": review,
                "confidence": answer.confidence,
                "answerer": answerer,
            }),
        }
    } else {
        NewEvent {
            event: EventType::AnswerCreated,
            niche_id: question.niche_id,
            question_id: Some(question.id),
            user_id: Some(viewer.user_id),
            payload: json!({
                "questionId": question.id,
                "externalId": question.external_id,
                "answerId": answer.id,
                "answer": valid.body,
                "optionId": valid.option_id,
                "optionLabel": valid
                    .option_id
                    .as_deref()
                    .and_then(|chosen| option_label(&question.options, chosen)),
                "answeredBy": viewer.handle,
                "review": review,
                "confidence": answer.confidence,
                "answerer": answerer,
                "answers": {
                    "wanted": question.answers_wanted,
                    "in": question.answers_in.max(1),
                },
            }),
        }
    };
    outbox::enqueue_to(txn, event, question.registered_agent_id, now).await?;
    Ok(())
}

/// "Not enough context" or "ask the agent to research more": free, recorded, one row per person.
async fn decline(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    valid: &ValidAnswer,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let mut update = agent_questions::Entity::update_many()
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now));
    if valid.kind == Kind::NeedsResearch {
        update = update.col_expr(
            agent_questions::Column::Status,
            Expr::value(QuestionStatus::Researching),
        );
    }
    // Conditional like the winning answer, so a decline never lands on a settled question.
    let touched = update
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(agent_questions::Column::Status.is_in(WAITING))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .exec(txn)
        .await?;
    if touched.rows_affected == 0 {
        return Err(not_waiting(&find_question(txn, question.id).await?));
    }
    let answer = store_answer(txn, viewer, question, valid, Stored::default(), now).await?;
    let (action, notice) = match valid.kind {
        Kind::NeedsResearch => (
            "question.research_requested",
            "Sent back to the agent for more research.",
        ),
        _ => (
            "question.declined",
            "Noted. It stays open for someone else.",
        ),
    };
    audit::record(
        txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action,
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({ "answerId": answer.id }),
        },
        now,
    )
    .await?;
    if valid.kind == Kind::InsufficientContext {
        tell_if_context_is_needed(txn, question, now).await?;
    }
    if valid.kind == Kind::NeedsResearch {
        outbox::enqueue(
            txn,
            NewEvent {
                event: EventType::ResearchRequested,
                niche_id: question.niche_id,
                question_id: Some(question.id),
                user_id: Some(viewer.user_id),
                payload: json!({
                    "questionId": question.id,
                    "externalId": question.external_id,
                    "note": valid.body,
                }),
            },
            now,
        )
        .await?;
    }
    Ok(AnswerOutcome {
        answer,
        question: find_question(txn, question.id).await?,
        points: 0,
        contribution_status: None,
        notice: notice.to_owned(),
    })
}

/// Declines speak (docs/contract.md#events-for-the-agent): when this round's "not enough context"
/// declines reach the niche's `declines_to_notify` (or every active operator's, when there are
/// fewer), the agent is told once per round with `expert_question.needs_context`. The question's
/// `needs_context_round` is claimed by one conditional update, so declines arriving together tell
/// it once.
async fn tell_if_context_is_needed(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let round = question.research_round;
    let declines = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question.id))
        .filter(agent_answers::Column::Kind.eq(AnswerKind::InsufficientContext))
        .filter(agent_answers::Column::ResearchRound.eq(round))
        .count(txn)
        .await?;
    let niche = niche_of(txn, question).await?;
    let operators = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::Status.eq(MemberStatus::Active))
        .filter(niche_members::Column::Role.ne(MemberRole::Observer))
        .count(txn)
        .await?;
    let threshold = niche
        .declines_to_notify
        .min(i64::try_from(operators).unwrap_or(i64::MAX))
        .max(1);
    if i64::try_from(declines).unwrap_or(i64::MAX) < threshold {
        return Ok(());
    }
    let claimed = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::NeedsContextRound,
            Expr::value(Some(round)),
        )
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(
            Condition::any()
                .add(agent_questions::Column::NeedsContextRound.is_null())
                .add(agent_questions::Column::NeedsContextRound.lt(round)),
        )
        .exec(txn)
        .await?;
    if claimed.rows_affected == 0 {
        return Ok(());
    }
    audit::record(
        txn,
        AuditEntry {
            actor: &Actor::System,
            action: "question.needs_context",
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({ "round": round, "declines": declines }),
        },
        now,
    )
    .await?;
    outbox::enqueue(
        txn,
        NewEvent {
            event: EventType::NeedsContext,
            niche_id: question.niche_id,
            question_id: Some(question.id),
            user_id: None,
            payload: json!({
                "questionId": question.id,
                "externalId": question.external_id,
                "round": round,
                "declines": declines,
            }),
        },
        now,
    )
    .await?;
    Ok(())
}

/// The audit row of a bounty's reservation settling (`budget.charged` / `budget.released`).
pub async fn budget_audit(
    conn: &WriteTxn,
    actor: &Actor,
    question: &agent_questions::Model,
    action: &str,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    audit::record(
        conn,
        AuditEntry {
            actor,
            action,
            subject_type: "budget",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({ "questionId": question.id, "amountMinor": amount }),
        },
        now,
    )
    .await?;
    Ok(())
}

/// What an answer row links to and states beyond its words.
#[derive(Debug, Clone, Copy, Default)]
struct Stored {
    /// The contribution it earned.
    contribution_event_id: Option<i64>,
    /// The knowledge entry it settled the question from.
    knowledge_entry_id: Option<i64>,
    /// The confidence stated.
    confidence: Option<i32>,
}

/// Insert the person's answer row, or replace their earlier decline. An `answered` row is final.
async fn store_answer(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    valid: &ValidAnswer,
    stored: Stored,
    now: DateTime<Utc>,
) -> Result<agent_answers::Model, ServiceError> {
    let Stored {
        contribution_event_id,
        knowledge_entry_id,
        confidence,
    } = stored;
    let kind = match valid.kind {
        Kind::Answered => AnswerKind::Answered,
        Kind::InsufficientContext => AnswerKind::InsufficientContext,
        Kind::NeedsResearch => AnswerKind::NeedsResearch,
    };
    let existing = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question.id))
        .filter(agent_answers::Column::UserId.eq(viewer.user_id))
        .one(txn)
        .await?;
    match existing {
        Some(row) if row.kind == AnswerKind::Answered => Err(Conflict::AlreadyAnswered.into()),
        Some(row) => {
            let mut row: agent_answers::ActiveModel = row.into();
            row.kind = Set(kind);
            row.option_id = Set(valid.option_id.clone());
            row.body = Set(valid.body.clone());
            row.contribution_event_id = Set(contribution_event_id);
            row.actual_cost_minor = Set(valid.actual_cost_minor);
            row.research_round = Set(question.research_round);
            row.knowledge_entry_id = Set(knowledge_entry_id);
            row.confidence = Set(confidence);
            row.one_of_several = Set(question.answers_wanted > 1);
            row.updated_at = Set(now);
            Ok(row.update(txn).await?)
        }
        None => Ok(agent_answers::ActiveModel {
            id: NotSet,
            question_id: Set(question.id),
            user_id: Set(viewer.user_id),
            kind: Set(kind),
            option_id: Set(valid.option_id.clone()),
            body: Set(valid.body.clone()),
            contribution_event_id: Set(contribution_event_id),
            actual_cost_minor: Set(valid.actual_cost_minor),
            research_round: Set(question.research_round),
            knowledge_entry_id: Set(knowledge_entry_id),
            confidence: Set(confidence),
            one_of_several: Set(question.answers_wanted > 1),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(txn)
        .await?),
    }
}

/// The longest reason for a dismissal, in characters.
pub const DISMISS_REASON_MAX: usize = 500;

/// A dismissal's reason as given: trimmed, empty as none; refused when too long or holding
/// control characters.
fn dismiss_reason(reason: Option<&str>) -> Result<Option<String>, ServiceError> {
    let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if crate::domain::text::char_len(reason) > DISMISS_REASON_MAX {
        return Err(ServiceError::BadInput(format!(
            "a reason is at most {DISMISS_REASON_MAX} characters"
        )));
    }
    crate::domain::text::checked("reason", reason, crate::domain::text::TextKind::Lines)?;
    Ok(Some(reason.to_owned()))
}

/// "Not worth anybody's time": an active non-observer member or an admin closes a waiting
/// question without an answer, optionally saying why (the agent hears the reason). No points.
pub async fn dismiss_question(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    question_id: i64,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<agent_questions::Model, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let reason = dismiss_reason(reason)?;
    let question = find_question(db, question_id).await?;
    if !is_waiting(&question, now) {
        return Err(not_waiting(&question));
    }
    let niche = niche_of(db, &question).await?;
    if !viewer.is_admin
        && !access::acts_on_questions(access::membership(db, viewer, niche.id).await?.as_ref())
    {
        return Err(access::not_a_member(&niche));
    }
    let txn = db.begin_write().await?;
    let Some(closed) = close_if_waiting(&txn, question.id, Closing::Dismissed, now).await? else {
        let current = find_question(&txn, question.id).await?;
        txn.rollback().await?;
        return Err(not_waiting(&current));
    };
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "question.dismissed",
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({ "reason": reason }),
        },
        now,
    )
    .await?;
    if let Some(amount) = budget::settle(
        &txn,
        question.niche_id,
        question.id,
        BudgetEntryKind::Release,
        now,
    )
    .await?
    {
        let actor = Actor::User(viewer.user_id);
        budget_audit(&txn, &actor, &question, "budget.released", amount, now).await?;
    }
    outbox::enqueue(
        &txn,
        NewEvent {
            event: EventType::QuestionDismissed,
            niche_id: question.niche_id,
            question_id: Some(question.id),
            user_id: Some(viewer.user_id),
            payload: json!({
                "questionId": question.id,
                "externalId": question.external_id,
                "dismissedBy": viewer.handle,
                "reason": reason,
            }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    hint.changed();
    Ok(closed)
}
