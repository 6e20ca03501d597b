//! The change feed: read audit rows after the last one seen, and anomaly signals not seen yet,
//! and turn them into [`LiveEvent`]s.
//!
//! Audit rows are read by id alone (`id > last`, the primary key's range: a read costs what it
//! returns, however long the log grows), and filtered here. PostgreSQL hands out ids before
//! commit, so a row may become visible after rows with higher ids were read (two batches of
//! intakes committing in the other order): every id skipped over is kept as a gap and looked for
//! again on each round until it shows up or [`GAP_WAIT`] has passed (an id taken by a
//! transaction that rolled back never shows up).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use entity::{agent_questions, anomaly_signals, audit_log, niche_members};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait,
};

use super::{LiveEvent, LiveHub, QuestionChange};
use entity::agent_questions::WAITING;

/// Rows read per round.
const BATCH: u64 = 500;

/// How long an id skipped over is looked for: longer than any transaction that writes audit
/// rows stays open.
pub const GAP_WAIT: Duration = Duration::from_secs(60);

/// The most gaps kept; past it, the oldest are given up first.
const MOST_GAPS: usize = 10_000;

/// Where the feed is in the audit log: the newest id read, and the ids below it not seen yet.
pub struct AuditCursor {
    last: i64,
    gaps: BTreeMap<i64, Instant>,
}

impl AuditCursor {
    /// Start after `last`.
    pub fn after(last: i64) -> Self {
        Self {
            last,
            gaps: BTreeMap::new(),
        }
    }

    /// Note what a read returned: the rows `found` (ids ascending) after `self.last`, and
    /// `filled`, gaps that showed up. Every id skipped over becomes a gap; gaps past
    /// [`GAP_WAIT`] are given up.
    fn advance(&mut self, found: &[i64], filled: &[i64], now: Instant) {
        for id in filled {
            self.gaps.remove(id);
        }
        let mut expected = self.last + 1;
        for &id in found {
            for skipped in expected..id.min(expected.saturating_add(MOST_GAPS as i64)) {
                self.gaps.insert(skipped, now);
            }
            expected = id + 1;
            self.last = self.last.max(id);
        }
        self.gaps
            .retain(|_, noticed| now.duration_since(*noticed) < GAP_WAIT);
        while self.gaps.len() > MOST_GAPS {
            self.gaps.pop_first();
        }
    }
}

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

    /// Mark the signals `ids` (the newest [`SIGNAL_WINDOW`]) seen without broadcasting them:
    /// nobody was listening when they were read.
    fn mark_seen(&mut self, ids: Vec<i64>) {
        if ids.len() as u64 == SIGNAL_WINDOW
            && let Some(oldest) = ids.iter().copied().min()
        {
            self.seen.retain(|id| *id >= oldest);
        }
        self.seen.extend(ids);
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
    crate::db::all_with_fixed_limits(
        db,
        anomaly_signals::Entity::find()
            .order_by_desc(anomaly_signals::Column::Id)
            .limit(SIGNAL_WINDOW),
    )
    .await
}

/// The least time between the starts of two reading rounds. Under a stream of writes a hint
/// arrives every few milliseconds; reading at each would cost the database a round of queries
/// per commit. Hints that arrive meanwhile are kept (a `Notify` permit) and fold into the next
/// round, which then reads all of them at once.
pub const ROUND_SPACING: Duration = Duration::from_millis(10);

/// Run forever: wait for a hint (or the poll), then read and broadcast everything new.
pub async fn run(hub: LiveHub, last: i64, mut signals: SignalWindow, poll: Duration) {
    let mut cursor = AuditCursor::after(last);
    let mut round_started = tokio::time::Instant::now();
    loop {
        tokio::time::sleep_until(round_started + ROUND_SPACING).await;
        let _ = tokio::time::timeout(poll, hub.wake().notified()).await;
        round_started = tokio::time::Instant::now();
        // One read of the signal log per round, shared by every subscriber of this instance.
        if let Err(err) = read_signals(&hub, &mut signals).await {
            tracing::warn!(error = %err, "the signal feed could not read; retrying");
        }
        loop {
            match read_after(&hub, &mut cursor).await {
                Ok(true) => {}
                Ok(false) => break,
                Err(err) => {
                    tracing::warn!(error = %err, "the change feed could not read; retrying");
                    break;
                }
            }
        }
    }
}

/// Broadcast the signals not broadcast yet. With nobody listening only their ids are read, to
/// mark them seen (see [`read_after`]).
async fn read_signals(hub: &LiveHub, signals: &mut SignalWindow) -> Result<(), sea_orm::DbErr> {
    if hub.listeners() == 0 {
        let ids = ids_of(
            hub.db(),
            anomaly_signals::Entity::find()
                .order_by_desc(anomaly_signals::Column::Id)
                .limit(SIGNAL_WINDOW),
        )
        .await?;
        if hub.listeners() == 0 {
            signals.mark_seen(ids);
            return Ok(());
        }
    }
    for signal in signals.take_new(newest_signals(hub.db()).await?) {
        hub.publish(LiveEvent::Signal(Arc::new(signal)));
    }
    Ok(())
}

/// The ids `select` finds, and nothing else of its rows.
async fn ids_of<E: EntityTrait>(
    db: &DatabaseConnection,
    select: sea_orm::Select<E>,
) -> Result<Vec<i64>, sea_orm::DbErr> {
    let stmt = crate::db::fixed_limits(
        select
            .select_only()
            .column_as(sea_orm::sea_query::Expr::col("id"), "id")
            .build(db.get_database_backend()),
    );
    db.query_all_raw(stmt)
        .await?
        .iter()
        .map(|row| row.try_get::<i64>("", "id"))
        .collect()
}

/// The audit rows among the cursor's gaps, oldest first.
fn in_gaps(cursor: &AuditCursor) -> sea_orm::Select<audit_log::Entity> {
    audit_log::Entity::find()
        .filter(audit_log::Column::Id.is_in(cursor.gaps.keys().copied()))
        .order_by_asc(audit_log::Column::Id)
}

/// The next [`BATCH`] audit rows after the cursor, oldest first.
fn after_last(cursor: &AuditCursor) -> sea_orm::Select<audit_log::Entity> {
    audit_log::Entity::find()
        .filter(audit_log::Column::Id.gt(cursor.last))
        .order_by_asc(audit_log::Column::Id)
        .limit(BATCH)
}

/// Broadcast the changes after the cursor and those among its gaps; returns whether the batch
/// was full (more may follow at once).
///
/// Whether audit row `row` changes what the admins' review inbox holds: a contribution
/// recorded or decided, or a correction proposed (its contribution is recorded with it).
fn for_review(row: &audit_log::Model) -> bool {
    row.subject_type == "contribution" || row.action == "knowledge.correction_proposed"
}

/// With nobody listening (no subscription, no long poll) nothing would be broadcast to anyone,
/// so only the ids are read, to move the cursor and keep its gaps: the rows and their questions
/// are not read at all, which under a stream of intakes is most of what the feed costs both
/// askloop and the database. Whether anyone listens is asked again after the ids are read: a
/// listener that came meanwhile gets the round read in full; one that comes after reads its
/// starting state after these rows were committed, so it has them.
async fn read_after(hub: &LiveHub, cursor: &mut AuditCursor) -> Result<bool, sea_orm::DbErr> {
    let db = hub.db();
    if hub.listeners() == 0 {
        let late = if cursor.gaps.is_empty() {
            Vec::new()
        } else {
            ids_of(db, in_gaps(cursor)).await?
        };
        let fresh = ids_of(db, after_last(cursor)).await?;
        if hub.listeners() == 0 {
            cursor.advance(&fresh, &late, Instant::now());
            return Ok(fresh.len() as u64 == BATCH);
        }
    }
    let late = if cursor.gaps.is_empty() {
        Vec::new()
    } else {
        in_gaps(cursor).all(db).await?
    };
    let fresh = crate::db::all_with_fixed_limits(db, after_last(cursor)).await?;
    let full = fresh.len() as u64 == BATCH;
    let filled: Vec<i64> = late.iter().map(|r| r.id).collect();
    let found: Vec<i64> = fresh.iter().map(|r| r.id).collect();
    cursor.advance(&found, &filled, Instant::now());
    let rows: Vec<audit_log::Model> = late.into_iter().chain(fresh).collect();
    for row in rows.iter().filter(|r| for_review(r)) {
        hub.publish(LiveEvent::Review(row.id));
    }
    let rows: Vec<audit_log::Model> = rows
        .into_iter()
        .filter(|r| matches!(r.subject_type.as_str(), "question" | "member"))
        .collect();
    if rows.is_empty() {
        return Ok(full);
    }
    let ids = |kind: &str| -> Vec<i64> {
        rows.iter()
            .filter(|r| r.subject_type == kind)
            .filter_map(|r| r.subject_id.parse().ok())
            .collect()
    };
    let (question_ids, member_ids) = (ids("question"), ids("member"));
    let questions: HashMap<i64, Arc<agent_questions::Model>> = if question_ids.is_empty() {
        HashMap::new()
    } else {
        agent_questions::Entity::find()
            .filter(agent_questions::Column::Id.is_in(question_ids))
            .all(db)
            .await?
            .into_iter()
            .map(|q| (q.id, Arc::new(q)))
            .collect()
    };
    let members: HashMap<i64, niche_members::Model> = if member_ids.is_empty() {
        HashMap::new()
    } else {
        niche_members::Entity::find()
            .filter(niche_members::Column::Id.is_in(member_ids))
            .all(db)
            .await?
            .into_iter()
            .map(|m| (m.id, m))
            .collect()
    };
    for row in rows {
        let Ok(subject) = row.subject_id.parse::<i64>() else {
            continue;
        };
        let late = filled.contains(&row.id);
        let actor_user_id = row
            .actor
            .strip_prefix("user:")
            .and_then(|id| id.parse().ok());
        match row.subject_type.as_str() {
            "question" => {
                if let Some(question) = questions.get(&subject) {
                    // A change that shows up late and would add the question to lists is stale
                    // once the question no longer waits: its later changes told everyone so.
                    let adds = matches!(
                        row.action.as_str(),
                        "question.created" | "question.reopened"
                    );
                    if late && adds && !WAITING.contains(&question.status) {
                        continue;
                    }
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
                if let Some(member) = members.get(&subject) {
                    hub.publish(LiveEvent::Member {
                        niche_id: member.niche_id,
                        user_id: member.user_id,
                    });
                }
            }
        }
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_skipped_over_are_gaps_until_they_show_up_or_their_time_is_up() {
        let start = Instant::now();
        let mut cursor = AuditCursor::after(10);
        // 11 and 13 are not visible yet (their transactions are still open).
        cursor.advance(&[12, 14, 15], &[], start);
        assert_eq!(cursor.last, 15);
        assert_eq!(cursor.gaps.keys().copied().collect::<Vec<_>>(), [11, 13]);
        // 13 shows up; 11 is still looked for.
        cursor.advance(&[16], &[13], start + Duration::from_secs(1));
        assert_eq!(cursor.last, 16);
        assert_eq!(cursor.gaps.keys().copied().collect::<Vec<_>>(), [11]);
        // Nothing new for a long while: 11 was rolled back, and is given up.
        cursor.advance(&[], &[], start + GAP_WAIT + Duration::from_secs(1));
        assert!(cursor.gaps.is_empty());
        assert_eq!(cursor.last, 16);
    }

    #[test]
    fn a_run_of_rows_without_holes_leaves_no_gap() {
        let mut cursor = AuditCursor::after(0);
        cursor.advance(&[1, 2, 3], &[], Instant::now());
        assert!(cursor.gaps.is_empty());
        assert_eq!(cursor.last, 3);
    }

    fn signal(id: i64) -> anomaly_signals::Model {
        anomaly_signals::Model {
            id,
            signal_id: format!("s{id}"),
            subject_type: "question".into(),
            subject_id: "1".into(),
            kind: "burst".into(),
            severity: "low".into(),
            finding: "seen".into(),
            received_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn signals_marked_seen_while_nobody_listened_are_not_broadcast_later() {
        let mut window = SignalWindow {
            seen: HashSet::new(),
        };
        window.mark_seen(vec![3, 2, 1]);
        let new = window.take_new(vec![signal(4), signal(3), signal(2), signal(1)]);
        assert_eq!(new.iter().map(|s| s.id).collect::<Vec<_>>(), [4]);
        assert!(window.take_new(vec![signal(4)]).is_empty());
    }

    #[test]
    fn gaps_are_bounded() {
        let mut cursor = AuditCursor::after(0);
        cursor.advance(&[1_000_000], &[], Instant::now());
        assert!(cursor.gaps.len() <= MOST_GAPS);
        assert_eq!(cursor.last, 1_000_000);
    }
}
