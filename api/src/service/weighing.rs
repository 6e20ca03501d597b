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
