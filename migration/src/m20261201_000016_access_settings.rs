//! What a person needs to manage their own access (docs/contract.md#api-keys-and-sessions): an
//! optional expiry on each API key (an expired key is refused like a revoked one), and where and
//! how each sign-in session was opened, so a list of sessions can tell them apart. Both session
//! columns are what the browser and the connection said at sign-in, shown back to the person;
//! nothing is decided by them.

use crate::prelude::*;

use crate::columns::timestamp_null;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000016_access_settings"
    }
}

#[derive(DeriveIden, Clone)]
enum ApiKeys {
    Table,
    ExpiresAt,
}

#[derive(DeriveIden, Clone)]
enum Sessions {
    Table,
    UserAgent,
    ClientAddress,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .add_column(timestamp_null(ApiKeys::ExpiresAt))
                    .to_owned(),
            )
            .await?;
        // SQLite adds one column per ALTER TABLE statement.
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .add_column(ColumnDef::new(Sessions::UserAgent).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .add_column(ColumnDef::new(Sessions::ClientAddress).text().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .drop_column(Sessions::ClientAddress)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .drop_column(Sessions::UserAgent)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .drop_column(ApiKeys::ExpiresAt)
                    .to_owned(),
            )
            .await
    }
}
