//! Scored contributions: their types, the append-only events, the tier ladder, cached scores and
//! the history of tier changes.

use crate::prelude::*;
use crate::sea_query::ExprTrait;

use crate::columns::{
    basis_points, foreign_key, id, non_negative, one_of, reference, timestamp, timestamp_null,
};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000003_contributions"
    }
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
}

#[derive(DeriveIden, Clone)]
enum Users {
    Table,
}

#[derive(DeriveIden, Clone)]
enum ContributionTypes {
    Table,
    Id,
    Key,
    Name,
    DefaultPoints,
    MinPoints,
    MaxPoints,
    DiminishAfter,
    DiminishWindowDays,
    AdminOnly,
}

#[derive(DeriveIden, Clone)]
enum ContributionEvents {
    Table,
    Id,
    NicheId,
    UserId,
    TypeId,
    Points,
    Status,
    Source,
    Evidence,
    DedupeKey,
    VerifiedAt,
    VerifiedBy,
    Reverses,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum ContributionTiers {
    Table,
    Id,
    Name,
    MinScore,
    ShareBps,
}

#[derive(DeriveIden, Clone)]
enum ContributionScores {
    Table,
    Id,
    NicheId,
    UserId,
    Score,
    VerifiedCount,
    PendingCount,
    TierId,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum TierHistory {
    Table,
    Id,
    NicheId,
    UserId,
    FromTierId,
    ToTierId,
    Score,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ContributionTypes::Table)
                    .col(id(ContributionTypes::Id))
                    .col(
                        ColumnDef::new(ContributionTypes::Key)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(ContributionTypes::Name).string().not_null())
                    .col(non_negative(ContributionTypes::DefaultPoints))
                    .col(non_negative(ContributionTypes::MinPoints))
                    .col(non_negative(ContributionTypes::MaxPoints))
                    .col(
                        ColumnDef::new(ContributionTypes::DiminishAfter)
                            .integer()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(ContributionTypes::DiminishWindowDays)
                            .integer()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(ContributionTypes::AdminOnly)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .check(
                        Expr::col(ContributionTypes::MinPoints)
                            .lte(Expr::col(ContributionTypes::MaxPoints)),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ContributionTiers::Table)
                    .col(id(ContributionTiers::Id))
                    .col(
                        ColumnDef::new(ContributionTiers::Name)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(non_negative(ContributionTiers::MinScore).unique_key())
                    .col(basis_points(ContributionTiers::ShareBps, 8000))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ContributionEvents::Table)
                    .col(id(ContributionEvents::Id))
                    .col(reference(ContributionEvents::NicheId))
                    .col(reference(ContributionEvents::UserId))
                    .col(reference(ContributionEvents::TypeId))
                    .col(non_negative(ContributionEvents::Points))
                    .col(one_of(
                        ContributionEvents::Status,
                        &["pending", "verified", "rejected", "reversed"],
                    ))
                    .col(
                        ColumnDef::new(ContributionEvents::Source)
                            .string()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(ContributionEvents::Evidence)
                            .json()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(ContributionEvents::DedupeKey)
                            .string()
                            .null(),
                    )
                    .col(timestamp_null(ContributionEvents::VerifiedAt))
                    .col(
                        ColumnDef::new(ContributionEvents::VerifiedBy)
                            .big_integer()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(ContributionEvents::Reverses)
                            .big_integer()
                            .null(),
                    )
                    .col(timestamp(ContributionEvents::CreatedAt))
                    .foreign_key(&mut foreign_key(
                        ContributionEvents::Table,
                        ContributionEvents::NicheId,
                        Niches::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        ContributionEvents::Table,
                        ContributionEvents::UserId,
                        Users::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        ContributionEvents::Table,
                        ContributionEvents::TypeId,
                        ContributionTypes::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        ContributionEvents::Table,
                        ContributionEvents::VerifiedBy,
                        Users::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        ContributionEvents::Table,
                        ContributionEvents::Reverses,
                        ContributionEvents::Table,
                    ))
                    .to_owned(),
            )
            .await?;

        // A double-scored path books once: the dedupe key is unique per (niche, person).
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX contribution_events_dedupe_key \
                 ON contribution_events (niche_id, user_id, dedupe_key) WHERE dedupe_key IS NOT NULL",
            )
            .await?;

        manager
            .create_index(
                Index::create()
                    .name("contribution_events_member_idx")
                    .table(ContributionEvents::Table)
                    .col(ContributionEvents::NicheId)
                    .col(ContributionEvents::UserId)
                    .col(ContributionEvents::Status)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ContributionScores::Table)
                    .col(id(ContributionScores::Id))
                    .col(reference(ContributionScores::NicheId))
                    .col(reference(ContributionScores::UserId))
                    .col(non_negative(ContributionScores::Score))
                    .col(non_negative(ContributionScores::VerifiedCount))
                    .col(non_negative(ContributionScores::PendingCount))
                    .col(reference(ContributionScores::TierId))
                    .col(timestamp(ContributionScores::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        ContributionScores::Table,
                        ContributionScores::NicheId,
                        Niches::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        ContributionScores::Table,
                        ContributionScores::UserId,
                        Users::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        ContributionScores::Table,
                        ContributionScores::TierId,
                        ContributionTiers::Table,
                    ))
                    .index(
                        Index::create()
                            .name("contribution_scores_niche_user_key")
                            .col(ContributionScores::NicheId)
                            .col(ContributionScores::UserId)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TierHistory::Table)
                    .col(id(TierHistory::Id))
                    .col(reference(TierHistory::NicheId))
                    .col(reference(TierHistory::UserId))
                    .col(ColumnDef::new(TierHistory::FromTierId).big_integer().null())
                    .col(reference(TierHistory::ToTierId))
                    .col(non_negative(TierHistory::Score))
                    .col(timestamp(TierHistory::CreatedAt))
                    .foreign_key(&mut foreign_key(
                        TierHistory::Table,
                        TierHistory::NicheId,
                        Niches::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        TierHistory::Table,
                        TierHistory::UserId,
                        Users::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        TierHistory::Table,
                        TierHistory::FromTierId,
                        ContributionTiers::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        TierHistory::Table,
                        TierHistory::ToTierId,
                        ContributionTiers::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            TierHistory::Table.into_iden(),
            ContributionScores::Table.into_iden(),
            ContributionEvents::Table.into_iden(),
            ContributionTiers::Table.into_iden(),
            ContributionTypes::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
