//! The anomaly-signal log: what the monitor noticed. Append-only; it changes nothing else.

use sea_orm::entity::prelude::*;

/// One row of `anomaly_signals`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "anomaly_signals")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The monitor's id; books once.
    #[sea_orm(unique)]
    pub signal_id: String,
    /// `question`, `answer`, `operator` or `agent`.
    pub subject_type: String,
    /// The subject's id.
    pub subject_id: String,
    /// What kind of anomaly.
    pub kind: String,
    /// `low`, `medium`, `high` or `critical`.
    pub severity: String,
    /// What was found (untrusted text, at most 4000 characters).
    pub finding: String,
    /// When it arrived.
    pub received_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
