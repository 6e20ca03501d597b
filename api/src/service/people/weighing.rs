//! People's records in a niche (docs/contract.md#weighing-answers): read from their judged
//! answers and the confidence each stated, for the trust rule's figures on the standing page,
//! each review item, every answer delivered to an agent and the weights of a consensus.

use std::collections::HashMap;

use entity::agent_answers;
use entity::contribution_events::{self, ContributionStatus};
use entity::contribution_types;
use sea_orm::sea_query::{Expr, JoinType};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde_json::{Value, json};

use crate::domain::weighing::{Judged, Record};
use crate::error::ServiceError;
use crate::service::money::scores;

/// The contribution type every answer (and task completion) books.
pub const ANSWER_TYPE: &str = "agent_answer";

/// The judged answers of niche `niche_id`, each contribution joined to its answer (for the
/// confidence stated) and its type (matched by key in the same statement), selecting nothing
/// yet: what a record is read from.
fn judged_answers(niche_id: i64) -> sea_orm::Select<contribution_events::Entity> {
    contribution_events::Entity::find()
        .select_only()
        .join(
            JoinType::LeftJoin,
            contribution_events::Entity::belongs_to(agent_answers::Entity)
                .from(contribution_events::Column::Id)
                .to(agent_answers::Column::ContributionEventId)
                .into(),
        )
        .join(
            JoinType::InnerJoin,
            contribution_events::Entity::belongs_to(contribution_types::Entity)
                .from(contribution_events::Column::TypeId)
                .to(contribution_types::Column::Id)
                .into(),
        )
        .filter(contribution_events::Column::NicheId.eq(niche_id))
        .filter(contribution_types::Column::Key.eq(ANSWER_TYPE))
        .filter(contribution_events::Column::Status.is_in(scores::JUDGED))
}

/// The records of `user_ids` in `niche_id` (everyone with a judged answer there when `None`);
/// a person with no judged answer has an empty record.
pub async fn records<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    user_ids: Option<&[i64]>,
) -> Result<HashMap<i64, Record>, ServiceError> {
    // The answer type is matched by its key in the same statement: a settling answer reads this
    // record inside its transaction, and a separate look-up of the type would be one more round
    // trip there.
    let mut query = judged_answers(niche_id)
        .column(contribution_events::Column::UserId)
        .column(contribution_events::Column::Status)
        .column(agent_answers::Column::Confidence);
    if let Some(ids) = user_ids {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        query = query.filter(contribution_events::Column::UserId.is_in(ids.iter().copied()));
    }
    let rows: Vec<(i64, ContributionStatus, Option<i32>)> = query.into_tuple().all(conn).await?;
    let mut judged: HashMap<i64, Vec<Judged>> = HashMap::new();
    for (user, status, confidence) in rows {
        judged.entry(user).or_default().push(Judged {
            confidence,
            verified: status == ContributionStatus::Verified,
        });
    }
    let mut out: HashMap<i64, Record> = judged
        .into_iter()
        .map(|(user, answers)| (user, Record::of(&answers)))
        .collect();
    for id in user_ids.unwrap_or_default() {
        out.entry(*id).or_insert_with(|| Record::of(&[]));
    }
    Ok(out)
}

/// One person's judged answers in a niche, summed: read before an answer's write transaction,
/// in one row the database adds up, so neither the single writer nor the answer waits on the
/// person's whole history (docs/contract.md#weighing-answers). What the trust rule, diminishing
/// returns and the record the agent receives are computed from.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Judged answers (verified, rejected or reversed).
    judged: u64,
    /// Of which verified.
    verified: u64,
    /// Of which verified since the diminishing window's start.
    verified_in_window: u64,
    /// Of the judged, those that stated a confidence.
    with_confidence: u64,
    /// Over those, the sum of (stated confidence − outcome)².
    squared_errors: f64,
}

impl History {
    /// The counts for diminishing returns and the trust rule.
    pub fn counts(&self) -> scores::AnswerCounts {
        scores::AnswerCounts {
            verified_in_window: self.verified_in_window,
            verified: self.verified,
            judged: self.judged,
        }
    }

    /// The record, with `this` answer counted when it was judged on arrival (verified).
    pub fn record_with(&self, this: Option<Judged>) -> Record {
        let mut sums = self.clone();
        if let Some(this) = this {
            sums.judged += 1;
            sums.verified += u64::from(this.verified);
            if let Some(confidence) = this.confidence {
                let outcome = if this.verified { 1.0 } else { 0.0 };
                let error = f64::from(confidence) / 100.0 - outcome;
                sums.with_confidence += 1;
                sums.squared_errors += error * error;
            }
        }
        Record::of_sums(
            sums.judged,
            sums.verified,
            sums.with_confidence,
            sums.squared_errors,
        )
    }
}

/// `user_id`'s judged answers in `niche_id` summed, those verified since `since` counted apart:
/// one row, added up by the database over the contributions' member index.
pub async fn history<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    user_id: i64,
    since: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<History, ServiceError> {
    use sea_orm::sea_query::{Func, SimpleExpr};
    let verified = || contribution_events::Column::Status.eq(ContributionStatus::Verified);
    // COUNT skips the NULLs the CASE gives every other row; SUM adds what it gives.
    let count_of = |when: SimpleExpr| -> SimpleExpr {
        Func::count(Expr::case(when, Expr::val(1)).finally(Expr::null())).into()
    };
    let mut in_window = verified();
    if let Some(since) = since {
        in_window =
            sea_orm::ExprTrait::and(in_window, contribution_events::Column::CreatedAt.gte(since));
    }
    let confidence = || Expr::col((agent_answers::Entity, agent_answers::Column::Confidence));
    // (confidence / 100 − outcome)², as a float on both stores (built from parts: a custom
    // SQL string's placeholders differ between them).
    let float = || sea_orm::sea_query::Alias::new("DOUBLE PRECISION");
    let error = || {
        sea_orm::ExprTrait::sub(
            sea_orm::ExprTrait::div(
                SimpleExpr::from(Func::cast_as(confidence(), float())),
                Expr::val(100.0),
            ),
            Expr::case(verified(), Expr::val(1.0)).finally(Expr::val(0.0)),
        )
    };
    let squared = sea_orm::ExprTrait::mul(error(), error());
    let row: Option<(i64, i64, i64, i64, Option<f64>)> = judged_answers(niche_id)
        .column_as(contribution_events::Column::Id.count(), "judged")
        .column_as(count_of(verified()), "verified")
        .column_as(count_of(in_window), "in_window")
        .column_as(
            SimpleExpr::from(Func::count(confidence())),
            "with_confidence",
        )
        .column_as(
            SimpleExpr::from(Func::cast_as(Func::sum(squared), float())),
            "squared_errors",
        )
        .filter(contribution_events::Column::UserId.eq(user_id))
        .into_tuple()
        .one(conn)
        .await?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(row.map_or_else(
        History::default,
        |(judged, verified, in_window, with_confidence, squared)| History {
            judged: count(judged),
            verified: count(verified),
            verified_in_window: count(in_window),
            with_confidence: count(with_confidence),
            squared_errors: squared.unwrap_or(0.0),
        },
    ))
}

/// One person's record in a niche.
pub async fn record<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    user_id: i64,
) -> Result<Record, ServiceError> {
    Ok(records(conn, niche_id, Some(&[user_id]))
        .await?
        .remove(&user_id)
        .unwrap_or_else(|| Record::of(&[])))
}

/// A record as the agent receives it with each answer: `answerer {verifiedRate, lowerBound,
/// brier, answers}`, rates rounded to four places.
pub fn answerer_json(record: &Record) -> Value {
    json!({
        "verifiedRate": round4(record.verified_rate),
        "lowerBound": round4(record.lower_bound),
        "brier": record.brier.map(round4),
        "answers": record.answers,
    })
}

/// `x` to four decimal places.
pub fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
