//! The change feed: read audit rows after the last one seen, and anomaly signals not seen yet,
//! and turn them into [`LiveEvent`]s.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use entity::{agent_questions, anomaly_signals, audit_log, niche_members};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::{LiveEvent, LiveHub, QuestionChange};

/// Rows read per round.
const BATCH: u64 = 500;

/// The newest audit row now: the feed starts after it.
pub async fn last_audit_id(db: &DatabaseConnection) -> Result<i64, sea_orm::DbErr> {
    Ok(audit_log::Entity::find()
        .order_by_desc(audit_log::Column::Id)
        .one(db)
        .await?
        .map_or(0, |row| row.id))
}

/// How many of the newest signals each read looks at.
const SIGNAL_WINDOW: u64 = 200;

/// Which anomaly signals were broadcast already. Signals are read as the newest
/// [`SIGNAL_WINDOW`] and those not seen are sent, oldest first: one committed after a
/// later-numbered one (PostgreSQL hands out ids before commit) is still inside the window the
/// next read looks at, so it is not skipped.
pub struct SignalWindow {
    seen: HashSet<i64>,
}

impl SignalWindow {
    /// Start from the signals logged now: only later ones are broadcast.
    pub async fn start(db: &DatabaseConnection) -> Result<Self, sea_orm::DbErr> {
        Ok(Self {
            seen: newest_signals(db)
                .await?
                .into_iter()
                .map(|s| s.id)
                .collect(),
        })
    }

    /// The signals not broadcast yet, oldest first, now marked as seen.
    fn take_new(&mut self, mut rows: Vec<anomaly_signals::Model>) -> Vec<anomaly_signals::Model> {
        // Ids older than the window can no longer come back: forget them.
        if rows.len() as u64 == SIGNAL_WINDOW
            && let Some(oldest) = rows.iter().map(|s| s.id).min()
        {
            self.seen.retain(|id| *id >= oldest);
        }
        rows.retain(|s| self.seen.insert(s.id));
        rows.sort_by_key(|s| s.id);
        rows
    }
}

async fn newest_signals(
    db: &DatabaseConnection,
) -> Result<Vec<anomaly_signals::Model>, sea_orm::DbErr> {
    anomaly_signals::Entity::find()
        .order_by_desc(anomaly_signals::Column::Id)
        .limit(SIGNAL_WINDOW)
        .all(db)
        .await
}

/// Run forever: wait for a hint (or the poll), then read and broadcast everything new.
pub async fn run(hub: LiveHub, mut last: i64, mut signals: SignalWindow, poll: Duration) {
    loop {
        let _ = tokio::time::timeout(poll, hub.wake().notified()).await;
        // One read of the signal log per round, shared by every subscriber of this instance.
        match newest_signals(hub.db()).await {
            Ok(rows) => {
                for signal in signals.take_new(rows) {
                    hub.publish(LiveEvent::Signal(Arc::new(signal)));
                }
            }
            Err(err) => tracing::warn!(error = %err, "the signal feed could not read; retrying"),
        }
        loop {
            match read_after(&hub, last).await {
                Ok((Some(newest), full)) => {
                    last = newest;
                    if !full {
                        break;
                    }
                }
                Ok((None, _)) => break,
                Err(err) => {
                    tracing::warn!(error = %err, "the change feed could not read; retrying");
                    break;
                }
            }
        }
    }
}

/// Broadcast the changes after `last`; returns the newest id read and whether the batch was full.
async fn read_after(hub: &LiveHub, last: i64) -> Result<(Option<i64>, bool), sea_orm::DbErr> {
    let db = hub.db();
    let rows = audit_log::Entity::find()
        .filter(audit_log::Column::Id.gt(last))
        .filter(audit_log::Column::SubjectType.is_in(["question", "member"]))
        .order_by_asc(audit_log::Column::Id)
        .limit(BATCH)
        .all(db)
        .await?;
    let Some(newest) = rows.last().map(|r| r.id) else {
        return Ok((None, false));
    };
    let full = rows.len() as u64 == BATCH;
    let ids = |kind: &str| -> Vec<i64> {
        rows.iter()
            .filter(|r| r.subject_type == kind)
            .filter_map(|r| r.subject_id.parse().ok())
            .collect()
    };
    let questions = agent_questions::Entity::find()
        .filter(agent_questions::Column::Id.is_in(ids("question")))
        .all(db)
        .await?;
    let members = niche_members::Entity::find()
        .filter(niche_members::Column::Id.is_in(ids("member")))
        .all(db)
        .await?;
    for row in rows {
        let Ok(subject) = row.subject_id.parse::<i64>() else {
            continue;
        };
        let actor_user_id = row
            .actor
            .strip_prefix("user:")
            .and_then(|id| id.parse().ok());
        match row.subject_type.as_str() {
            "question" => {
                if let Some(question) = questions.iter().find(|q| q.id == subject) {
                    hub.publish(LiveEvent::Question(Arc::new(QuestionChange {
                        event: row.id,
                        niche_id: question.niche_id,
                        action: row.action,
                        actor_user_id,
                        question: question.clone(),
                    })));
                }
            }
            _ => {
                if let Some(member) = members.iter().find(|m| m.id == subject) {
                    hub.publish(LiveEvent::Member {
                        niche_id: member.niche_id,
                        user_id: member.user_id,
                    });
                }
            }
        }
    }
    Ok((Some(newest), full))
}
