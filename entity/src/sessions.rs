//! Signed-in browser sessions; only a hash of each token is stored.

use sea_orm::entity::prelude::*;

/// One row of `sessions`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sessions")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose session.
    pub user_id: i64,
    /// SHA-256 of the token, hex.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// When it was opened.
    pub created_at: DateTimeUtc,
    /// When it stops working.
    pub expires_at: DateTimeUtc,
    /// When it was last used (updated at most once a minute).
    pub last_seen_at: DateTimeUtc,
    /// The browser's `User-Agent` at sign-in, shortened; shown back to the person, never trusted.
    pub user_agent: Option<String>,
    /// The client's address at sign-in (see `ClientAddress`: behind a trusted proxy, the client
    /// it forwarded for), as text.
    pub client_address: Option<String>,
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
