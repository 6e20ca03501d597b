//! A revenue event's external id is unique within its niche, not across niches: two niches'
//! billing systems may well number their invoices alike, and the second niche's revenue must
//! book rather than be taken for the first one's.

use crate::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000009_revenue_ids_per_niche"
    }
}

#[derive(DeriveIden)]
enum RevenueEvents {
    Table,
    NicheId,
    ExternalId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("revenue_events_external_key")
                    .table(RevenueEvents::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("revenue_events_niche_external_key")
                    .table(RevenueEvents::Table)
                    .col(RevenueEvents::NicheId)
                    .col(RevenueEvents::ExternalId)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("revenue_events_niche_external_key")
                    .table(RevenueEvents::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("revenue_events_external_key")
                    .table(RevenueEvents::Table)
                    .col(RevenueEvents::ExternalId)
                    .unique()
                    .to_owned(),
            )
            .await
    }
}
