//! Indexes for the answer and verification path (docs/benchmarks.md, "The answer path"): every
//! statement an answer or a verdict runs reads through an index, so its cost does not grow with
//! the author's history or the niche's size.
//!
//! - `agent_answers(contribution_event_id, confidence)`: an answerer's record joins their
//!   contributions to their answers by it for the confidence each stated
//!   (`service::people::weighing::history`), read from the index alone, and a verdict finds its answer
//!   by it; without it each contribution scanned every answer.
//! - `contribution_events(niche_id, user_id, status, type_id, points, created_at, id)`: a
//!   person's record and score in a niche are added up from this index alone, without reading
//!   a row of the table for each contribution they ever made.
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
    Confidence,
}

#[derive(DeriveIden, Clone)]
enum ContributionEvents {
    Table,
    Id,
    NicheId,
    UserId,
    Status,
    TypeId,
    Points,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum Allocations {
    Table,
    RevenueEventId,
}

const ANSWERS: &str = "agent_answers_contribution_idx";
const ALLOCATIONS: &str = "allocations_revenue_event_idx";
const RECORDS: &str = "contribution_events_record_idx";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(ANSWERS)
                    .table(AgentAnswers::Table)
                    .col(AgentAnswers::ContributionEventId)
                    .col(AgentAnswers::Confidence)
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
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(RECORDS)
                    .table(ContributionEvents::Table)
                    .col(ContributionEvents::NicheId)
                    .col(ContributionEvents::UserId)
                    .col(ContributionEvents::Status)
                    .col(ContributionEvents::TypeId)
                    .col(ContributionEvents::Points)
                    .col(ContributionEvents::CreatedAt)
                    .col(ContributionEvents::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(RECORDS)
                    .table(ContributionEvents::Table)
                    .to_owned(),
            )
            .await?;
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
