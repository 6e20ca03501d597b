//! People's records in a niche (docs/contract.md#weighing-answers): read from their judged
//! answers and the confidence each stated, for the trust rule's figures on the standing page,
//! each review item, every answer delivered to an agent and the weights of a consensus.

use std::collections::HashMap;

use entity::agent_answers;
use entity::contribution_events::{self, ContributionStatus};
use entity::contribution_types;
use sea_orm::sea_query::JoinType;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde_json::{Value, json};

use crate::domain::weighing::{Judged, Record};
use crate::error::ServiceError;
use crate::service::scores;

/// The contribution type every answer (and task completion) books.
pub const ANSWER_TYPE: &str = "agent_answer";

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
    let mut query = contribution_events::Entity::find()
        .select_only()
        .column(contribution_events::Column::UserId)
        .column(contribution_events::Column::Status)
        .column(agent_answers::Column::Confidence)
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
        .filter(contribution_events::Column::Status.is_in(scores::JUDGED));
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

/// One person's judged answers in a niche, read before an answer's write transaction so the
/// single writer does not wait on a read of the person's whole history
/// (docs/contract.md#weighing-answers): what the trust rule, diminishing returns and the record
/// the agent receives are computed from.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Each judged answer: when it was booked, whether it was verified, the confidence stated.
    judged: Vec<(chrono::DateTime<chrono::Utc>, Judged)>,
}

impl History {
    /// The counts for diminishing returns (verified since `since`) and the trust rule.
    pub fn counts(&self, since: Option<chrono::DateTime<chrono::Utc>>) -> scores::AnswerCounts {
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let verified = self.judged.iter().filter(|(_, j)| j.verified);
        scores::AnswerCounts {
            verified_in_window: count(
                verified
                    .clone()
                    .filter(|(at, _)| since.is_none_or(|since| *at >= since))
                    .count(),
            ),
            verified: count(verified.count()),
            judged: count(self.judged.len()),
        }
    }

    /// The record, with `this` answer counted when it was judged on arrival (verified).
    pub fn record_with(&self, this: Option<Judged>) -> Record {
        let mut judged: Vec<Judged> = self.judged.iter().map(|(_, j)| *j).collect();
        judged.extend(this);
        Record::of(&judged)
    }
}

/// `user_id`'s judged answers in `niche_id`: one statement, through the contributions' member
/// index and the answers' contribution index.
pub async fn history<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    user_id: i64,
) -> Result<History, ServiceError> {
    let rows: Vec<(
        ContributionStatus,
        Option<i32>,
        chrono::DateTime<chrono::Utc>,
    )> = contribution_events::Entity::find()
        .select_only()
        .column(contribution_events::Column::Status)
        .column(agent_answers::Column::Confidence)
        .column(contribution_events::Column::CreatedAt)
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
        .filter(contribution_events::Column::UserId.eq(user_id))
        .filter(contribution_types::Column::Key.eq(ANSWER_TYPE))
        .filter(contribution_events::Column::Status.is_in(scores::JUDGED))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(History {
        judged: rows
            .into_iter()
            .map(|(status, confidence, at)| {
                (
                    at,
                    Judged {
                        confidence,
                        verified: status == ContributionStatus::Verified,
                    },
                )
            })
            .collect(),
    })
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
