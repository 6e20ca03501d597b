//! Integrators' API keys; only a hash of each key is stored, shown once.

use sea_orm::entity::prelude::*;

/// One row of `api_keys`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose key.
    pub user_id: i64,
    /// What the owner called it.
    pub name: String,
    /// The first characters of the key, to recognise it in a list.
    pub prefix: String,
    /// SHA-256 of the key, hex.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// When it was made.
    pub created_at: DateTimeUtc,
    /// When it was last used.
    pub last_used_at: Option<DateTimeUtc>,
    /// When it was revoked; a revoked key never works again.
    pub revoked_at: Option<DateTimeUtc>,
    /// When it stops working on its own, if ever; an expired key is refused like a revoked one.
    pub expires_at: Option<DateTimeUtc>,
}

/// The owner.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The person this belongs to.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id"
    )]
    User,
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::User.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
