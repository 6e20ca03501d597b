//! The niches each registered agent may ask in.

use sea_orm::entity::prelude::*;

/// One row of `agent_niches`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "agent_niches")]
pub struct Model {
    /// The agent.
    #[sea_orm(primary_key, auto_increment = false)]
    pub agent_id: i64,
    /// A niche it may ask in.
    #[sea_orm(primary_key, auto_increment = false)]
    pub niche_id: i64,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
