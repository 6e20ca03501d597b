//! People, their sessions and API keys, niches and who belongs to them.

use crate::prelude::*;

use crate::columns::{
    basis_points, foreign_key, id, non_negative, one_of, reference, timestamp, timestamp_null,
};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000001_accounts_and_niches"
    }
}

#[derive(DeriveIden, Clone)]
enum Users {
    Table,
    Id,
    Handle,
    Email,
    /// An argon2id PHC string; no column is named after the secret itself.
    CredentialHash,
    Role,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum Sessions {
    Table,
    Id,
    UserId,
    TokenHash,
    CreatedAt,
    ExpiresAt,
    LastSeenAt,
}

#[derive(DeriveIden, Clone)]
enum ApiKeys {
    Table,
    Id,
    UserId,
    Name,
    Prefix,
    TokenHash,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
    Id,
    Slug,
    Name,
    Description,
    Status,
    PrimaryAgentId,
    BountyMinor,
    MaxBountyMinor,
    MonthlyBudgetMinor,
    DefaultQuestionLifetimeSecs,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum NicheMembers {
    Table,
    Id,
    NicheId,
    UserId,
    Role,
    Status,
    ShareCapBps,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(id(Users::Id))
                    .col(
                        ColumnDef::new(Users::Handle)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(
                        ColumnDef::new(Users::Email)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(Users::CredentialHash).string().not_null())
                    .col(one_of(Users::Role, &["admin", "member"]).default("member"))
                    .col(timestamp(Users::CreatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .col(id(Sessions::Id))
                    .col(reference(Sessions::UserId))
                    .col(
                        ColumnDef::new(Sessions::TokenHash)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(timestamp(Sessions::CreatedAt))
                    .col(timestamp(Sessions::ExpiresAt))
                    .col(timestamp(Sessions::LastSeenAt))
                    .foreign_key(&mut foreign_key(
                        Sessions::Table,
                        Sessions::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .col(id(ApiKeys::Id))
                    .col(reference(ApiKeys::UserId))
                    .col(ColumnDef::new(ApiKeys::Name).string().not_null())
                    .col(ColumnDef::new(ApiKeys::Prefix).string().not_null())
                    .col(
                        ColumnDef::new(ApiKeys::TokenHash)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(timestamp(ApiKeys::CreatedAt))
                    .col(timestamp_null(ApiKeys::LastUsedAt))
                    .col(timestamp_null(ApiKeys::RevokedAt))
                    .foreign_key(&mut foreign_key(
                        ApiKeys::Table,
                        ApiKeys::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Niches::Table)
                    .col(id(Niches::Id))
                    .col(
                        ColumnDef::new(Niches::Slug)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(Niches::Name).string().not_null())
                    .col(
                        ColumnDef::new(Niches::Description)
                            .text()
                            .not_null()
                            .default(""),
                    )
                    .col(
                        one_of(Niches::Status, &["draft", "open", "operated", "archived"])
                            .default("draft"),
                    )
                    .col(ColumnDef::new(Niches::PrimaryAgentId).string().null())
                    .col(non_negative(Niches::BountyMinor))
                    .col(non_negative(Niches::MaxBountyMinor))
                    .col(
                        ColumnDef::new(Niches::MonthlyBudgetMinor)
                            .big_integer()
                            .null()
                            .check(Expr::col(Niches::MonthlyBudgetMinor).gte(0)),
                    )
                    .col(
                        ColumnDef::new(Niches::DefaultQuestionLifetimeSecs)
                            .big_integer()
                            .not_null()
                            .default(7 * 24 * 3600)
                            .check(Expr::col(Niches::DefaultQuestionLifetimeSecs).gte(60).and(
                                Expr::col(Niches::DefaultQuestionLifetimeSecs).lte(30 * 24 * 3600),
                            )),
                    )
                    .col(timestamp(Niches::CreatedAt))
                    .col(timestamp(Niches::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(NicheMembers::Table)
                    .col(id(NicheMembers::Id))
                    .col(reference(NicheMembers::NicheId))
                    .col(reference(NicheMembers::UserId))
                    .col(one_of(
                        NicheMembers::Role,
                        &["operator", "specialist", "observer"],
                    ))
                    .col(one_of(
                        NicheMembers::Status,
                        &["pending", "active", "suspended", "left"],
                    ))
                    .col(basis_points(NicheMembers::ShareCapBps, 8000).default(8000))
                    .col(timestamp(NicheMembers::CreatedAt))
                    .col(timestamp(NicheMembers::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        NicheMembers::Table,
                        NicheMembers::NicheId,
                        Niches::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        NicheMembers::Table,
                        NicheMembers::UserId,
                        Users::Table,
                    ))
                    .index(
                        Index::create()
                            .name("niche_members_niche_user_key")
                            .col(NicheMembers::NicheId)
                            .col(NicheMembers::UserId)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_index(
                Index::create()
                    .name("niche_members_user_idx")
                    .table(NicheMembers::Table)
                    .col(NicheMembers::UserId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            NicheMembers::Table.into_iden(),
            Niches::Table.into_iden(),
            ApiKeys::Table.into_iden(),
            Sessions::Table.into_iden(),
            Users::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
