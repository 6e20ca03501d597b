//! askloop's schema, as migrations that run unchanged on SQLite and PostgreSQL, written with
//! sea-query's schema statements and run by [`runner`].
//!
//! Migrations never import `entity`: a migration describes the schema as it was on the day it
//! was written, while entities follow the schema as it is now.

pub use runner::{
    Applied, MIGRATIONS_TABLE, MigrationName, MigrationTrait, MigratorTrait, SchemaManager,
};
pub use sea_orm::{self, DbErr, sea_query};

/// What every migration file starts from.
pub mod prelude {
    pub use crate::runner::{MigrationName, MigrationTrait, SchemaManager};
    pub use sea_orm::sea_query::{self, *};
    pub use sea_orm::{self, ConnectionTrait, DbErr, DeriveIden};
}

mod checks;
mod columns;
mod m20261129_000001_accounts_and_niches;
mod m20261129_000002_questions_and_answers;
mod m20261129_000003_contributions;
mod m20261129_000004_audit_log;
mod m20261129_000005_seed_reference_data;
mod m20261129_000006_deliveries;
mod m20261129_000007_money;
mod m20261129_000008_payouts;
mod m20261130_000009_revenue_ids_per_niche;
mod m20261130_000010_declines_speak;
mod m20261130_000011_money_waits_for_the_verdict;
mod m20261130_000012_budget_balance;
mod m20261130_000013_agents;
mod m20261130_000014_agent_tokens;
mod m20261201_000015_reaching_operators;
mod m20261201_000016_access_settings;
mod m20261201_000017_delegated_tasks;
mod m20261202_000018_delivery_lanes;
mod m20261203_000019_knowledge;
mod m20261203_000020_knowledge_reuse;
mod m20261203_000021_search_scope;
mod m20261204_000022_search_without_pending_list;
mod m20261204_000023_weighed_answers;
mod m20261205_000024_withdrawal;
mod m20261205_000025_a2a;
mod m20261207_000026_answer_path_indexes;
pub mod runner;

/// Every migration askloop knows, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261129_000001_accounts_and_niches::Migration),
            Box::new(m20261129_000002_questions_and_answers::Migration),
            Box::new(m20261129_000003_contributions::Migration),
            Box::new(m20261129_000004_audit_log::Migration),
            Box::new(m20261129_000005_seed_reference_data::Migration),
            Box::new(m20261129_000006_deliveries::Migration),
            Box::new(m20261129_000007_money::Migration),
            Box::new(m20261129_000008_payouts::Migration),
            Box::new(m20261130_000009_revenue_ids_per_niche::Migration),
            Box::new(m20261130_000010_declines_speak::Migration),
            Box::new(m20261130_000011_money_waits_for_the_verdict::Migration),
            Box::new(m20261130_000012_budget_balance::Migration),
            Box::new(m20261130_000013_agents::Migration),
            Box::new(m20261130_000014_agent_tokens::Migration),
            Box::new(m20261201_000015_reaching_operators::Migration),
            Box::new(m20261201_000016_access_settings::Migration),
            Box::new(m20261201_000017_delegated_tasks::Migration),
            Box::new(m20261202_000018_delivery_lanes::Migration),
            Box::new(m20261203_000019_knowledge::Migration),
            Box::new(m20261203_000020_knowledge_reuse::Migration),
            Box::new(m20261203_000021_search_scope::Migration),
            Box::new(m20261204_000022_search_without_pending_list::Migration),
            Box::new(m20261204_000023_weighed_answers::Migration),
            Box::new(m20261205_000024_withdrawal::Migration),
            Box::new(m20261205_000025_a2a::Migration),
            Box::new(m20261207_000026_answer_path_indexes::Migration),
        ]
    }
}
