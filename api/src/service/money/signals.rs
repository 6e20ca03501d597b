//! Anomaly signals (docs/contract.md#anomaly-signals): what the monitor noticed, appended to a log
//! that admins read. A signal changes nothing else: no status, score, tier, ledger or budget moves
//! because of one, and it writes no other row (not even an audit entry). The same signalId books
//! once.

use std::collections::HashSet;
use std::sync::Arc;

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::anomaly_signals;
use futures::Stream;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter, QueryOrder, QuerySelect,
    TryInsertResult,
};
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::domain::text::{cap, char_len};
use crate::error::{Conflict, ServiceError};
use crate::live::{ChangeHint, LiveEvent};
use crate::service::people::access::{self, Viewer};

/// What a signal may be about.
pub const SUBJECT_TYPES: [&str; 4] = ["question", "answer", "operator", "agent"];
/// How bad it is.
pub const SEVERITIES: [&str; 4] = ["low", "medium", "high", "critical"];
/// The longest finding kept.
pub const FINDING_MAX: usize = 4000;

/// A signal as received, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSignal {
    /// The monitor's id.
    pub signal_id: String,
    /// One of [`SUBJECT_TYPES`].
    pub subject_type: String,
    /// The subject's id.
    pub subject_id: String,
    /// What kind of anomaly.
    pub kind: String,
    /// One of [`SEVERITIES`].
    pub severity: String,
    /// What was found (at most [`FINDING_MAX`] characters).
    pub finding: String,
}

/// Parse and check a signal (also inside `payload`).
pub fn parse(body: &Value) -> Result<NewSignal, ServiceError> {
    let fields = body
        .get("payload")
        .filter(|p| p.is_object())
        .unwrap_or(body);
    let bad = |m: String| ServiceError::BadInput(m);
    let text = |key: &str| -> Result<String, ServiceError> {
        match fields.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
            Some(Value::Number(n)) if key == "subjectId" => Ok(n.to_string()),
            _ => Err(bad(format!("{key} is required"))),
        }
    };
    let signal_id = text("signalId")?;
    let subject_type = text("subjectType")?;
    if !SUBJECT_TYPES.contains(&subject_type.as_str()) {
        return Err(bad(format!(
            "subjectType '{subject_type}' is not one of: {}",
            SUBJECT_TYPES.join(", ")
        )));
    }
    let severity = text("severity")?;
    if !SEVERITIES.contains(&severity.as_str()) {
        return Err(bad(format!(
            "severity '{severity}' is not one of: {}",
            SEVERITIES.join(", ")
        )));
    }
    let finding = text("finding")?;
    if char_len(&finding) > FINDING_MAX {
        return Err(bad(format!(
            "finding is longer than {FINDING_MAX} characters"
        )));
    }
    let short = |key: &str, value: String| -> Result<String, ServiceError> {
        if char_len(&value) > 200 {
            Err(bad(format!("{key} is longer than 200 characters")))
        } else {
            Ok(cap(&value, 200))
        }
    };
    Ok(NewSignal {
        signal_id: short("signalId", signal_id)?,
        subject_type,
        subject_id: short("subjectId", text("subjectId")?)?,
        kind: short("kind", text("kind")?)?,
        severity,
        finding,
    })
}

/// Append a signal; the same signalId again books nothing. The row, and whether it was there.
pub async fn append(
    db: &Db,
    hint: &ChangeHint,
    new: NewSignal,
    now: DateTime<Utc>,
) -> Result<(anomaly_signals::Model, bool), ServiceError> {
    let txn = db.begin_write().await?;
    let inserted = anomaly_signals::Entity::insert(anomaly_signals::ActiveModel {
        id: NotSet,
        signal_id: Set(new.signal_id.clone()),
        subject_type: Set(new.subject_type),
        subject_id: Set(new.subject_id),
        kind: Set(new.kind),
        severity: Set(new.severity),
        finding: Set(new.finding),
        received_at: Set(now),
    })
    .on_conflict(
        OnConflict::column(anomaly_signals::Column::SignalId)
            .do_nothing()
            .to_owned(),
    )
    .try_insert()
    .exec(&txn)
    .await?;
    let duplicate = !matches!(inserted, TryInsertResult::Inserted(_));
    let row = anomaly_signals::Entity::find()
        .filter(anomaly_signals::Column::SignalId.eq(new.signal_id))
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("signal vanished")))?;
    txn.commit().await?;
    if !duplicate {
        hint.changed();
    }
    Ok((row, duplicate))
}

/// Signals, newest first; with `after`, only those with a larger id (oldest first).
pub async fn list(
    db: &Db,
    after: Option<i64>,
    limit: u64,
) -> Result<Vec<anomaly_signals::Model>, ServiceError> {
    let query = anomaly_signals::Entity::find();
    let rows = match after {
        Some(after) => {
            query
                .filter(anomaly_signals::Column::Id.gt(after))
                .order_by_asc(anomaly_signals::Column::Id)
                .limit(limit)
                .all(db)
                .await?
        }
        None => {
            query
                .order_by_desc(anomaly_signals::Column::Id)
                .limit(limit)
                .all(db)
                .await?
        }
    };
    Ok(rows)
}

/// New anomaly signals from `rx` on, oldest first (admins only). The hub's feed reads the log
/// once per round for every subscriber; a subscriber that falls behind is told so and ended.
/// The subscription starts from the signals already logged: those among the newest when it
/// starts are never sent, even if the feed broadcasts them after `rx` was taken.
pub async fn watch(
    db: &Db,
    viewer: Option<&Viewer>,
    rx: broadcast::Receiver<LiveEvent>,
) -> Result<
    impl Stream<Item = Result<Arc<anomaly_signals::Model>, ServiceError>> + use<>,
    ServiceError,
> {
    access::admin(viewer)?;
    let logged: HashSet<i64> = list(db, None, STARTING_WINDOW)
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    Ok(futures::stream::unfold(Some(rx), move |rx| {
        let logged = logged.clone();
        async move {
            let mut rx = rx?;
            loop {
                match rx.recv().await {
                    Ok(LiveEvent::Signal(signal)) if !logged.contains(&signal.id) => {
                        return Some((Ok(signal), Some(rx)));
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        return Some((Err(Conflict::SubscriptionFellBehind.into()), None));
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        }
    }))
}

/// How many of the newest signals count as "already logged" when a subscription starts (the
/// same window the feed reads).
const STARTING_WINDOW: u64 = 200;
