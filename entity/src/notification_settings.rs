//! A person's mail settings: the address they verified, their time zone and quiet hours.

use sea_orm::entity::prelude::*;

/// One row of `notification_settings` (at most one per person).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_settings")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose settings.
    #[sea_orm(unique)]
    pub user_id: i64,
    /// The address they verified; mail goes to it only while it is still their address.
    pub verified_email: Option<String>,
    /// When they verified it.
    pub email_verified_at: Option<DateTimeUtc>,
    /// Their IANA time zone, for quiet hours and daily digests.
    pub time_zone: String,
    /// Quiet hours start, in minutes after their midnight.
    pub quiet_start_minute: Option<i32>,
    /// Quiet hours end, in minutes after their midnight.
    pub quiet_end_minute: Option<i32>,
    /// Whether quiet hours hold back high-urgency mail too.
    pub quiet_includes_high: bool,
    /// When they last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
