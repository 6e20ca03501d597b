//! What admins watch: anomaly signals (with their live subscription) and the audit log's rows
//! (docs/contract.md#anomaly-signals).

use crate::db::Db;
use async_graphql::{ComplexObject, Context, ID, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use entity::anomaly_signals;
use futures::{Stream, StreamExt};

use crate::error::ServiceError;
use crate::graphql::caller_of;
use crate::graphql::enums::{Severity, SignalSubject};
use crate::graphql::error_door::GqlResultExt;
use crate::live::LiveHub;
use crate::service::{money::signals, people::admin_desk};

/// An anomaly signal (the finding is untrusted text).
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct AnomalySignal {
    /// Its id.
    pub id: ID,
    /// The monitor's id.
    pub signal_id: String,
    /// What it is about.
    pub subject_type: SignalSubject,
    /// The subject's id.
    pub subject_id: String,
    /// What kind of anomaly.
    pub kind: String,
    /// How serious it is.
    pub severity: Severity,
    /// What was found.
    pub finding: String,
    /// When it arrived.
    pub received_at: DateTime<Utc>,
}

impl From<anomaly_signals::Model> for AnomalySignal {
    fn from(s: anomaly_signals::Model) -> Self {
        Self {
            id: ID(s.id.to_string()),
            signal_id: s.signal_id,
            // Both words are checked when the signal arrives; a row edited by hand to something
            // else is shown at its most alarming rather than hidden.
            subject_type: SignalSubject::from_stored(&s.subject_type).unwrap_or_else(|| {
                tracing::warn!(id = s.id, word = %s.subject_type, "unknown signal subject");
                SignalSubject::Operator
            }),
            subject_id: s.subject_id,
            kind: s.kind,
            severity: Severity::from_stored(&s.severity).unwrap_or_else(|| {
                tracing::warn!(id = s.id, word = %s.severity, "unknown signal severity");
                Severity::Critical
            }),
            finding: s.finding,
            received_at: s.received_at,
        }
    }
}

/// One row of the audit log.
#[derive(SimpleObject, Clone)]
pub struct AuditEntryView {
    /// Its id.
    pub id: ID,
    /// Who (`user:<id>`, `agent:<id>`, `system`, `cli`).
    pub actor: String,
    /// Who, as people name them: a person's handle, else the label itself.
    pub actor_name: String,
    /// What happened.
    pub action: String,
    /// The kind of subject.
    pub subject_type: String,
    /// The subject's id.
    pub subject_id: String,
    /// The subject as people name it (`contribution 12`, a person's handle).
    pub subject_name: String,
    /// Details (JSON text).
    pub detail: String,
    /// The details in words, one pair per detail.
    pub details: Vec<AuditDetail>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// One detail of an audit entry, in words.
#[derive(SimpleObject, Clone)]
pub struct AuditDetail {
    /// What it is ("note", "amount minor", "person").
    pub name: String,
    /// Its value as text (a person as their handle, nothing as "—").
    pub value: String,
}

impl From<admin_desk::AuditLine> for AuditEntryView {
    fn from(line: admin_desk::AuditLine) -> Self {
        let e = line.entry;
        Self {
            id: ID(e.id.to_string()),
            actor: e.actor,
            actor_name: line.actor_name,
            action: e.action,
            subject_type: e.subject_type,
            subject_id: e.subject_id,
            subject_name: line.subject_name,
            detail: e.detail.to_string(),
            details: line
                .details
                .into_iter()
                .map(|(name, value)| AuditDetail { name, value })
                .collect(),
            created_at: e.created_at,
        }
    }
}

#[ComplexObject]
impl AnomalySignal {
    /// Who acknowledged it (a handle), if anyone has.
    async fn acknowledged_by(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse().unwrap_or_default();
        Ok(admin_desk::acknowledgements(db, [id])
            .await
            .gql()?
            .remove(&id)
            .map(|(who, _)| who))
    }
}

/// The entry id an audit cursor (`a<id>`) names.
pub(super) fn audit_cursor(cursor: &str) -> Result<i64, ServiceError> {
    cursor
        .strip_prefix('a')
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            ServiceError::BadInput(format!("'{cursor}' is not a cursor of the audit log"))
        })
}

/// Money subscriptions.
#[derive(Default)]
pub struct MoneySubscription;

#[Subscription]
impl MoneySubscription {
    /// New anomaly signals as they arrive (admins only). Every instance reads the signal log,
    /// so signals received by any of them arrive.
    async fn anomaly_signals(
        &self,
        ctx: &Context<'_>,
    ) -> Result<impl Stream<Item = Result<AnomalySignal>> + use<>> {
        let db = ctx.data::<Db>()?;
        let rx = ctx.data::<LiveHub>()?.subscribe();
        let signals = signals::watch(db, caller_of(ctx)?.viewer(), rx)
            .await
            .gql()?;
        // Registered with the hub: counted in askloop_live_subscriptions_served from now.
        let serving = crate::live::shared::Serving::of(ctx);
        Ok(signals.map(move |signal| {
            let _held = &serving;
            signal
                .map(|s| AnomalySignal::from(s.as_ref().clone()))
                .gql()
        }))
    }
}
