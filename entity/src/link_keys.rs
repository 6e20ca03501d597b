//! The installation's secrets for signed links, made on first use.

use sea_orm::entity::prelude::*;

/// One row of `link_keys`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "link_keys")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// What the key signs (`links`).
    #[sea_orm(unique)]
    pub purpose: String,
    /// The secret, hex.
    pub secret: String,
    /// When it was made.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
