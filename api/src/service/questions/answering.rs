//! Answering, declining and dismissing (docs/contract.md#answering), in one place that every
//! surface calls.
//!
//! Exactly one answer wins: the status change is a conditional UPDATE (only from open or
//! researching, only before expiry) in the same transaction as the answer row and the
//! contribution. The loser's UPDATE matches no row and it gets a clean 409.

mod booking;
mod decline;
mod dismiss;
mod from_knowledge;
mod several;
mod telling;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use entity::agent_answers;
use entity::agent_questions::{self, ExchangeKind, QuestionStatus};
use entity::contribution_events::ContributionStatus;
use entity::niche_members;
use entity::niches;
use sea_orm::sea_query::{Alias, Expr, JoinType};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, EntityTrait, FromQueryResult, IdenStatic, Iterable,
    QueryFilter, QueryTrait,
};

use crate::db::{Db, Turns, WriteTxn};
use crate::domain::answer::{self, Kind, ValidAnswer};
use crate::domain::intake::QuestionOption;
use crate::domain::weighing;
use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::audit::Actor;
use crate::service::people::access::{self, Viewer};
use crate::service::{knowledge, money::scores};
pub use booking::budget_audit;
use booking::{charge_the_agent, pay_the_answerer, record_the_answer, tell_the_agent};
use decline::decline;
pub use dismiss::dismiss_question;
use from_knowledge::{pointed_entry, settle_from_knowledge};
use several::settle_one_of_several;
pub use telling::{audit_and_tell, record_closing};

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
    let niche = crate::service::questions::queue::niche_by_slug(db, slug).await?;
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

/// The turns of this process's writers to each question of the database `db` opens, kept by its
/// `Db` (two databases have questions with the same ids); a turn that settles its question
/// leaves the refusal for the writers queued behind it, and one that reopens it clears that
/// (`admin::review`).
pub fn question_turns(db: &Db) -> Arc<Turns<Conflict>> {
    db.kept()
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
        let trusted = crate::service::people::weighing::history(db, niche.id, viewer.user_id, None)
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
            crate::service::people::weighing::history(
                db,
                question.niche_id,
                viewer.user_id,
                window_start,
            )
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
    history: &'a crate::service::people::weighing::History,
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
