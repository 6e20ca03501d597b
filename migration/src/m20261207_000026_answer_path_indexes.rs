//! Indexes for the answer and verification path (docs/benchmarks.md, "The answer path"): every
//! statement an answer or a verdict runs reads through an index, so its cost does not grow with
//! the author's history or the niche's size.
//!
//! - `agent_answers(contribution_event_id)`: an answerer's record joins their contributions to
//!   their answers by it (`service::weighing::records`), and a verdict finds its answer by it;
//!   without it each contribution scanned every answer.
//! - `allocations(revenue_event_id)`: a verdict moves the allocations of the answer's revenue
//!   event (held → owed, or reversed), read by it; without it each verdict scanned every
//!   allocation.

use crate::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261207_000026_answer_path_indexes"
    }
}

#[derive(DeriveIden, Clone)]
enum AgentAnswers {
    Table,
    ContributionEventId,
}

#[derive(DeriveIden, Clone)]
enum Allocations {
    Table,
    RevenueEventId,
}

const ANSWERS: &str = "agent_answers_contribution_idx";
const ALLOCATIONS: &str = "allocations_revenue_event_idx";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(ANSWERS)
                    .table(AgentAnswers::Table)
                    .col(AgentAnswers::ContributionEventId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(ALLOCATIONS)
                    .table(Allocations::Table)
                    .col(Allocations::RevenueEventId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(ALLOCATIONS)
                    .table(Allocations::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name(ANSWERS)
                    .table(AgentAnswers::Table)
                    .to_owned(),
            )
            .await
    }
}
