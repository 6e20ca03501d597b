//! The append-only audit log: every state change of a question, contribution, payout or budget.

use crate::prelude::*;

use crate::columns::{id, timestamp};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000004_audit_log"
    }
}

#[derive(DeriveIden, Clone)]
enum AuditLog {
    Table,
    Id,
    /// Who acted: `user:<id>`, `agent:<agent id>`, `system`, `cli`.
    Actor,
    Action,
    SubjectType,
    SubjectId,
    NicheId,
    Detail,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .col(id(AuditLog::Id))
                    .col(ColumnDef::new(AuditLog::Actor).string().not_null())
                    .col(ColumnDef::new(AuditLog::Action).string().not_null())
                    .col(ColumnDef::new(AuditLog::SubjectType).string().not_null())
                    .col(ColumnDef::new(AuditLog::SubjectId).string().not_null())
                    .col(ColumnDef::new(AuditLog::NicheId).big_integer().null())
                    .col(ColumnDef::new(AuditLog::Detail).json().not_null())
                    .col(timestamp(AuditLog::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("audit_log_subject_idx")
                    .table(AuditLog::Table)
                    .col(AuditLog::SubjectType)
                    .col(AuditLog::SubjectId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(AuditLog::Table).to_owned())
            .await
    }
}
