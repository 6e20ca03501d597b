//! The reference data askloop's rules read: the contribution types and the tier ladder
//! (docs/contract.md#scoring-and-review). They are data, not code, so that the ladder has exactly
//! one source of truth.

use crate::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000005_seed_reference_data"
    }
}

#[derive(DeriveIden)]
enum ContributionTypes {
    Table,
    Key,
    Name,
    DefaultPoints,
    MinPoints,
    MaxPoints,
    DiminishAfter,
    DiminishWindowDays,
    AdminOnly,
}

#[derive(DeriveIden)]
enum ContributionTiers {
    Table,
    Name,
    MinScore,
    ShareBps,
}

/// The seeded ladder: name, minimum score, share in basis points.
const TIERS: [(&str, i64, i32); 7] = [
    ("Contributor", 0, 2000),
    ("Specialist", 100, 3000),
    ("Expert", 250, 4000),
    ("Lead Expert", 500, 5000),
    ("Niche Operator", 900, 6000),
    ("Senior Operator", 1500, 7000),
    ("Top Knowledge Influencer", 2500, 8000),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let types = Query::insert()
            .into_table(ContributionTypes::Table)
            .columns([
                ContributionTypes::Key,
                ContributionTypes::Name,
                ContributionTypes::DefaultPoints,
                ContributionTypes::MinPoints,
                ContributionTypes::MaxPoints,
                ContributionTypes::DiminishAfter,
                ContributionTypes::DiminishWindowDays,
                ContributionTypes::AdminOnly,
            ])
            .values_panic([
                "agent_answer".into(),
                "Answered an agent's question".into(),
                3.into(),
                3.into(),
                3.into(),
                Some(30).into(),
                Some(30).into(),
                false.into(),
            ])
            .values_panic([
                "manual_adjustment".into(),
                "Manual adjustment by an admin".into(),
                0.into(),
                0.into(),
                500.into(),
                Option::<i32>::None.into(),
                Option::<i32>::None.into(),
                true.into(),
            ])
            .to_owned();
        manager.exec_stmt(types).await?;

        let mut tiers = Query::insert()
            .into_table(ContributionTiers::Table)
            .columns([
                ContributionTiers::Name,
                ContributionTiers::MinScore,
                ContributionTiers::ShareBps,
            ])
            .to_owned();
        for (name, min_score, share_bps) in TIERS {
            tiers.values_panic([name.into(), min_score.into(), share_bps.into()]);
        }
        manager.exec_stmt(tiers).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(ContributionTiers::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(ContributionTypes::Table)
                    .to_owned(),
            )
            .await
    }
}
