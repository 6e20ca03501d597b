//! What the admin sections read beyond each area's own lists: the audit log a page at a time
//! (filtered, with people's handles and readable details), who is owed what, acknowledging
//! anomaly signals, and the counts the admin tabs show. Admins only, every one.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use entity::allocations::{self, AllocationStatus};
use entity::contribution_events::{self, ContributionStatus};
use entity::deliveries::{self, DeliveryStatus};
use entity::{anomaly_signals, audit_log, revenue_events, users};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::{Value, json};

use crate::db::Db;
use crate::error::{Conflict, ServiceError};
use crate::live::LiveEvent;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};
use crate::service::people::names;

/// The actions that record a sign-in or sign-out; the audit log hides them unless asked.
pub const SIGN_IN_PREFIX: &str = "session.";

/// The audit log's action for an acknowledged anomaly signal.
pub const SIGNAL_ACKNOWLEDGED: &str = "signal.acknowledged";

/// What to narrow the audit log to.
#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    /// Who: a person's handle, or `agent:<id>`, `agent`, `system`, `cli`.
    pub actor: Option<String>,
    /// What happened, exactly (`contribution.rejected`).
    pub action: Option<String>,
    /// The kind of subject (`contribution`).
    pub subject_type: Option<String>,
    /// The subject's id.
    pub subject_id: Option<String>,
    /// Only entries at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Only entries before this.
    pub until: Option<DateTime<Utc>>,
    /// Include sign-ins and sign-outs (`session.*`), hidden by default.
    pub sign_ins: bool,
}

/// One audit entry as a person reads it.
#[derive(Debug, Clone)]
pub struct AuditLine {
    /// The stored row.
    pub entry: audit_log::Model,
    /// Who, as people name them (a handle for a person).
    pub actor_name: String,
    /// The subject, as people name it (`contribution 12`, a person's handle).
    pub subject_name: String,
    /// The detail as (what, value) pairs in words.
    pub details: Vec<(String, String)>,
}

/// A page of the audit log, newest first.
#[derive(Debug, Clone)]
pub struct AuditPage {
    /// Its entries.
    pub lines: Vec<AuditLine>,
    /// Whether older entries match too.
    pub has_next: bool,
}

/// The id a `user:<id>` actor label names.
fn user_of_label(label: &str) -> Option<i64> {
    label.strip_prefix("user:")?.parse().ok()
}

/// A detail's key in words: `amountMinor` → "amount minor", `userId` → "user id".
fn key_words(key: &str) -> String {
    let mut words = String::new();
    for (i, c) in key.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            words.push(' ');
        }
        if c == '_' {
            words.push(' ');
        } else {
            words.push(c.to_ascii_lowercase());
        }
    }
    words
}

/// A detail's value in words: text as itself, nothing as "—", anything nested as compact JSON.
fn value_words(value: &Value, handles: &HashMap<i64, String>, key: &str) -> String {
    match value {
        Value::Null => "—".to_owned(),
        Value::String(text) => text.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        Value::Number(n) => match (key, n.as_i64()) {
            ("userId", Some(id)) => handles.get(&id).cloned().unwrap_or_else(|| n.to_string()),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn detail_pairs(detail: &Value, handles: &HashMap<i64, String>) -> Vec<(String, String)> {
    match detail {
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| {
                let name = if key == "userId" {
                    "person".to_owned()
                } else {
                    key_words(key)
                };
                (name, value_words(value, handles, key))
            })
            .collect(),
        Value::Null => Vec::new(),
        other => vec![("detail".to_owned(), other.to_string())],
    }
}

/// The stored actor label `typed` names: a person's handle becomes `user:<id>`.
async fn actor_label(db: &Db, typed: &str) -> Result<String, ServiceError> {
    let typed = typed.trim();
    if typed == "system" || typed == "cli" || typed == "agent" || typed.starts_with("agent:") {
        return Ok(typed.to_owned());
    }
    let handle = typed.trim_start_matches('@').to_lowercase();
    users::Entity::find()
        .filter(users::Column::Handle.eq(handle.clone()))
        .one(db)
        .await?
        .map(|u| format!("user:{}", u.id))
        .ok_or_else(|| {
            ServiceError::BadInput(format!(
                "nobody is called '{handle}': the actor is a person's handle, 'agent:<id>', 'system' or 'cli'"
            ))
        })
}

/// A page of the audit log, newest first, older than the entry `before` (admins only).
pub async fn audit_page(
    db: &Db,
    viewer: Option<&Viewer>,
    filter: AuditFilter,
    before: Option<i64>,
    first: u64,
) -> Result<AuditPage, ServiceError> {
    access::admin(viewer)?;
    if let (Some(since), Some(until)) = (filter.since, filter.until)
        && since >= until
    {
        return Err(ServiceError::BadInput(
            "the time range is empty: 'since' must be before 'until'".into(),
        ));
    }
    let mut query = audit_log::Entity::find();
    if let Some(actor) = filter.actor.as_deref().filter(|a| !a.trim().is_empty()) {
        query = query.filter(audit_log::Column::Actor.eq(actor_label(db, actor).await?));
    }
    if let Some(action) = filter
        .action
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        query = query.filter(audit_log::Column::Action.eq(action));
    } else if !filter.sign_ins {
        query = query.filter(audit_log::Column::Action.not_like(format!("{SIGN_IN_PREFIX}%")));
    }
    if let Some(kind) = filter
        .subject_type
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        query = query.filter(audit_log::Column::SubjectType.eq(kind));
    }
    if let Some(id) = filter
        .subject_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        query = query.filter(audit_log::Column::SubjectId.eq(id));
    }
    if let Some(since) = filter.since {
        query = query.filter(audit_log::Column::CreatedAt.gte(since));
    }
    if let Some(until) = filter.until {
        query = query.filter(audit_log::Column::CreatedAt.lt(until));
    }
    if let Some(before) = before {
        query = query.filter(audit_log::Column::Id.lt(before));
    }
    let mut rows = query
        .order_by_desc(audit_log::Column::Id)
        .limit(first + 1)
        .all(db)
        .await?;
    let has_next = rows.len() as u64 > first;
    rows.truncate(first as usize);
    let mut people: HashSet<i64> = HashSet::new();
    for row in &rows {
        people.extend(user_of_label(&row.actor));
        if row.subject_type == "user" {
            people.extend(row.subject_id.parse::<i64>().ok());
        }
        if let Some(id) = row.detail.get("userId").and_then(Value::as_i64) {
            people.insert(id);
        }
    }
    let handles = names::handles(db, people).await?;
    let lines = rows
        .into_iter()
        .map(|entry| {
            let actor_name = user_of_label(&entry.actor)
                .and_then(|id| handles.get(&id).cloned())
                .unwrap_or_else(|| entry.actor.clone());
            let subject_name = match entry.subject_type.as_str() {
                "user" => entry
                    .subject_id
                    .parse::<i64>()
                    .ok()
                    .and_then(|id| handles.get(&id).cloned())
                    .unwrap_or_else(|| format!("user {}", entry.subject_id)),
                kind => format!("{} {}", kind.replace('_', " "), entry.subject_id),
            };
            let details = detail_pairs(&entry.detail, &handles);
            AuditLine {
                entry,
                actor_name,
                subject_name,
                details,
            }
        })
        .collect();
    Ok(AuditPage { lines, has_next })
}

/// What one person is owed in one currency: accrued allocations in no payout, net of clawbacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    /// Their handle.
    pub handle: String,
    /// The currency.
    pub currency: String,
    /// How much, minor units (more than 0).
    pub amount_minor: i64,
    /// How many allocations make it up.
    pub allocations: i64,
    /// Whether their payout address is verified (a payout needs it).
    pub address_verified: bool,
}

/// Everyone owed something, by handle then currency (admins only). Only positive balances: a
/// person who owes more than they are owed is not paid.
pub async fn owed(db: &Db, viewer: Option<&Viewer>) -> Result<Vec<Owed>, ServiceError> {
    access::admin(viewer)?;
    owed_rows(db).await
}

async fn owed_rows(db: &Db) -> Result<Vec<Owed>, ServiceError> {
    let rows: Vec<(Option<i64>, i64, i64)> = allocations::Entity::find()
        .select_only()
        .column(allocations::Column::UserId)
        .column(allocations::Column::RevenueEventId)
        .column(allocations::Column::AmountMinor)
        .filter(allocations::Column::Status.eq(AllocationStatus::Accrued))
        .filter(allocations::Column::PayoutId.is_null())
        .filter(allocations::Column::UserId.is_not_null())
        .into_tuple()
        .all(db)
        .await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let event_ids: HashSet<i64> = rows.iter().map(|(_, event, _)| *event).collect();
    let currencies: HashMap<i64, String> = revenue_events::Entity::find()
        .select_only()
        .column(revenue_events::Column::Id)
        .column(revenue_events::Column::Currency)
        .filter(revenue_events::Column::Id.is_in(event_ids))
        .into_tuple::<(i64, String)>()
        .all(db)
        .await?
        .into_iter()
        .collect();
    let mut sums: BTreeMap<(i64, String), (i64, i64)> = BTreeMap::new();
    for (user, event, amount) in rows {
        let (Some(user), Some(currency)) = (user, currencies.get(&event)) else {
            continue;
        };
        let sum = sums.entry((user, currency.clone())).or_default();
        sum.0 += amount;
        sum.1 += 1;
    }
    let handles = names::handles(db, sums.keys().map(|(user, _)| *user)).await?;
    let verified: HashSet<i64> = entity::payout_accounts::Entity::find()
        .filter(entity::payout_accounts::Column::VerifiedAt.is_not_null())
        .all(db)
        .await?
        .into_iter()
        .map(|a| a.user_id)
        .collect();
    let mut owed: Vec<Owed> = sums
        .into_iter()
        .filter(|(_, (amount, _))| *amount > 0)
        .map(|((user, currency), (amount_minor, allocations))| Owed {
            handle: handles.get(&user).cloned().unwrap_or_default(),
            currency,
            amount_minor,
            allocations,
            address_verified: verified.contains(&user),
        })
        .collect();
    owed.sort_by(|a, b| (&a.handle, &a.currency).cmp(&(&b.handle, &b.currency)));
    Ok(owed)
}

/// Who acknowledged each of `signal_ids` and when, by signal row id.
pub async fn acknowledgements(
    db: &Db,
    signal_ids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, (String, DateTime<Utc>)>, ServiceError> {
    let ids: Vec<String> = signal_ids.into_iter().map(|id| id.to_string()).collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq(SIGNAL_ACKNOWLEDGED))
        .filter(audit_log::Column::SubjectType.eq("anomaly_signal"))
        .filter(audit_log::Column::SubjectId.is_in(ids))
        .order_by_asc(audit_log::Column::Id)
        .all(db)
        .await?;
    let handles = names::handles(db, rows.iter().filter_map(|r| user_of_label(&r.actor))).await?;
    let mut acks = HashMap::new();
    for row in rows {
        let Ok(id) = row.subject_id.parse::<i64>() else {
            continue;
        };
        let who = user_of_label(&row.actor)
            .and_then(|user| handles.get(&user).cloned())
            .unwrap_or(row.actor);
        acks.entry(id).or_insert((who, row.created_at));
    }
    Ok(acks)
}

/// An admin acknowledges anomaly signal `id`: they have looked at it (audited; the record is
/// the acknowledgement). Acknowledging one twice is refused.
pub async fn acknowledge_signal(
    db: &Db,
    viewer: Option<&Viewer>,
    id: i64,
    now: DateTime<Utc>,
) -> Result<anomaly_signals::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let signal = anomaly_signals::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such anomaly signal".into()))?;
    if let Some((who, _)) = acknowledgements(db, [id]).await?.remove(&id) {
        return Err(ServiceError::BadInput(format!(
            "that signal is already acknowledged (by {who})"
        )));
    }
    let txn = db.begin_write().await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action: SIGNAL_ACKNOWLEDGED,
            subject_type: "anomaly_signal",
            subject_id: signal.id,
            niche_id: None,
            detail: json!({ "signal": signal.signal_id, "kind": signal.kind, "severity": signal.severity }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(signal)
}

/// The numbers on the admin tabs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Contributions awaiting review.
    pub review: i64,
    /// Deliveries that gave up (exhausted).
    pub failed_deliveries: i64,
    /// People and currencies owed something.
    pub owed: i64,
    /// Anomaly signals nobody has acknowledged.
    pub new_signals: i64,
    /// How many admins askloop has (an admin's own answer needs another one to review it).
    pub admins: i64,
}

/// The numbers on the admin tabs (admins only).
pub async fn counts(db: &Db, viewer: Option<&Viewer>) -> Result<Counts, ServiceError> {
    access::admin(viewer)?;
    let review = contribution_events::Entity::find()
        .filter(contribution_events::Column::Status.eq(ContributionStatus::Pending))
        .count(db)
        .await?;
    let failed_deliveries = deliveries::Entity::find()
        .filter(deliveries::Column::Status.eq(DeliveryStatus::Exhausted))
        .count(db)
        .await?;
    let owed = owed_rows(db).await?.len();
    let admins = users::Entity::find()
        .filter(users::Column::Role.eq(users::UserRole::Admin))
        .count(db)
        .await?;
    let signals = anomaly_signals::Entity::find().count(db).await?;
    let acknowledged = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq(SIGNAL_ACKNOWLEDGED))
        .filter(audit_log::Column::SubjectType.eq("anomaly_signal"))
        .select_only()
        .column(audit_log::Column::SubjectId)
        .distinct()
        .into_tuple::<String>()
        .all(db)
        .await?
        .len();
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(Counts {
        review: wide(review),
        failed_deliveries: wide(failed_deliveries),
        owed: wide(owed as u64),
        new_signals: wide(signals)
            .saturating_sub(wide(acknowledged as u64))
            .max(0),
        admins: wide(admins),
    })
}

/// Changes to the review inbox from `rx` on (admins only, as the inbox itself): the audit
/// row's id each time something to review arrives or is decided, for the page to read the
/// inbox and its counts again. Whether the viewer is an admin is read again whenever the hub
/// says they missed events, and the stream ends with FORBIDDEN once they are not; a viewer
/// whose session ends loses the socket the stream runs on.
pub async fn watch_review(
    db: Db,
    viewer: Option<&Viewer>,
    rx: tokio::sync::broadcast::Receiver<LiveEvent>,
) -> Result<impl futures::Stream<Item = Result<i64, ServiceError>> + use<>, ServiceError> {
    use tokio::sync::broadcast::error::RecvError;
    let viewer = access::admin(viewer)?.clone();
    still_admin(&db, viewer.user_id).await?;
    Ok(futures::stream::unfold(Some(rx), move |rx| {
        let db = db.clone();
        let user_id = viewer.user_id;
        async move {
            let mut rx = rx?;
            loop {
                match rx.recv().await {
                    Ok(LiveEvent::Review(event)) => return Some((Ok(event), Some(rx))),
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        let ended = match Box::pin(still_admin(&db, user_id)).await {
                            Ok(()) => Conflict::SubscriptionFellBehind.into(),
                            Err(err) => err,
                        };
                        return Some((Err(ended), None));
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        }
    }))
}

/// FORBIDDEN unless person `user_id` is an admin now.
async fn still_admin(db: &Db, user_id: i64) -> Result<(), ServiceError> {
    let admin = users::Entity::find_by_id(user_id)
        .one(db)
        .await?
        .is_some_and(|u| u.role == users::UserRole::Admin);
    if admin {
        Ok(())
    } else {
        Err(ServiceError::Forbidden("only admins may do that".into()))
    }
}

/// The note of the newest review decision on contribution `id` (owned by `owner`), for the
/// owner and admins; none when no decision gave one.
pub async fn review_note(
    db: &Db,
    viewer: Option<&Viewer>,
    id: i64,
    owner: i64,
) -> Result<Option<String>, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    if !viewer.is_admin && viewer.user_id != owner {
        return Err(ServiceError::Forbidden(
            "only the contributor and admins read a review note".into(),
        ));
    }
    let decision = audit_log::Entity::find()
        .filter(audit_log::Column::SubjectType.eq("contribution"))
        .filter(audit_log::Column::SubjectId.eq(id.to_string()))
        .filter(audit_log::Column::Action.is_in([
            "contribution.verified",
            "contribution.rejected",
            "contribution.reversed",
        ]))
        .order_by_desc(audit_log::Column::Id)
        .one(db)
        .await?;
    Ok(decision
        .and_then(|row| {
            row.detail
                .get("note")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .filter(|note| !note.is_empty()))
}
