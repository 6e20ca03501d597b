//! Agent tokens (docs/contract.md#mcp): the bearer tokens a registered agent reaches `/mcp` with.
//! Only a hash of each token is stored; the token is shown once.

use sea_orm::entity::prelude::*;

/// One row of `agent_tokens`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "agent_tokens")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The agent it speaks for.
    pub agent_id: i64,
    /// The first characters of the token, to recognise it in a list.
    pub prefix: String,
    /// SHA-256 of the token, hex.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// When it was issued.
    pub created_at: DateTimeUtc,
    /// When it was revoked; a revoked token never works again.
    pub revoked_at: Option<DateTimeUtc>,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
