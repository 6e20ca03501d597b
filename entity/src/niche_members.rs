//! Who belongs to which niche, in what role and state.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `niche_members`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "niche_members")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche.
    pub niche_id: i64,
    /// The person.
    pub user_id: i64,
    /// `operator`, `specialist` or `observer`.
    pub role: MemberRole,
    /// `pending`, `active`, `suspended` or `left`.
    pub status: MemberStatus,
    /// The most this member's share may be, in basis points (0..=8000).
    pub share_cap_bps: i32,
    /// When they joined.
    pub created_at: DateTimeUtc,
    /// When their membership last changed.
    pub updated_at: DateTimeUtc,
}

/// The niche a membership is of.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The niche.
    #[sea_orm(
        belongs_to = "super::niches::Entity",
        from = "Column::NicheId",
        to = "super::niches::Column::Id"
    )]
    Niche,
}

impl Related<super::niches::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Niche.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

/// What a member does in a niche.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum MemberRole {
    /// `operator`.
    #[sea_orm(string_value = "operator")]
    Operator,
    /// `specialist`.
    #[sea_orm(string_value = "specialist")]
    Specialist,
    /// `observer`.
    #[sea_orm(string_value = "observer")]
    Observer,
}

/// Whether a membership is in force.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// `pending`.
    #[sea_orm(string_value = "pending")]
    Pending,
    /// `active`.
    #[sea_orm(string_value = "active")]
    Active,
    /// `suspended`.
    #[sea_orm(string_value = "suspended")]
    Suspended,
    /// `left`.
    #[sea_orm(string_value = "left")]
    Left,
}
