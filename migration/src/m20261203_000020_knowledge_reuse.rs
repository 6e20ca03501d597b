//! Reuse pays the contributor (docs/contract.md#knowledge): an agent that relies on a knowledge
//! entry instead of asking again records a reuse, and a question an operator settles by pointing
//! to an entry credits the entry's author the same way.
//!
//! `knowledge_reuses` is the reuse ledger, append-only: one `reuse` row per reliance (what it
//! cost, the revenue event that paid the author) and, when the entry is retracted, one `refund`
//! row naming it. A niche's `reuse_price_minor` is what one reuse costs its agents (0: free).
//! An answer that settled a question from an entry names it in `knowledge_entry_id`.
//! `knowledge_terms` counts, per niche, how many entries hold each word, as entries are written
//! (entries written before this migration are not counted: their words count as rare).

use crate::prelude::*;
use crate::sea_orm::ConnectionTrait;
use crate::sea_query::ExprTrait;

use crate::checks::count;
use crate::columns::{foreign_key, id, non_negative, one_of, reference, timestamp};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000020_knowledge_reuse"
    }
}

#[derive(DeriveIden, Clone)]
enum KnowledgeReuses {
    Table,
    Id,
    NicheId,
    EntryId,
    Kind,
    AgentId,
    ExternalId,
    QuestionId,
    AnswerId,
    AmountMinor,
    Month,
    RevenueEventId,
    Refunds,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum KnowledgeTerms {
    Table,
    NicheId,
    Term,
    Entries,
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
    ReusePriceMinor,
}

#[derive(DeriveIden, Clone)]
enum AgentAnswers {
    Table,
    KnowledgeEntryId,
}

#[derive(DeriveIden, Clone)]
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

/// The contribution of an operator who settled a question by pointing to an entry.
const POINTER_TYPE: &str = "knowledge_pointer";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use KnowledgeReuses as R;
        manager
            .create_table(
                Table::create()
                    .table(R::Table)
                    .col(id(R::Id))
                    .col(reference(R::NicheId))
                    .col(reference(R::EntryId))
                    .col(one_of(R::Kind, &["reuse", "refund"]))
                    .col(ColumnDef::new(R::AgentId).big_integer().null())
                    .col(ColumnDef::new(R::ExternalId).string().null())
                    .col(ColumnDef::new(R::QuestionId).big_integer().null())
                    .col(ColumnDef::new(R::AnswerId).big_integer().null())
                    .col(non_negative(R::AmountMinor))
                    .col(ColumnDef::new(R::Month).string().not_null())
                    .col(ColumnDef::new(R::RevenueEventId).big_integer().null())
                    .col(ColumnDef::new(R::Refunds).big_integer().null().unique_key())
                    .col(timestamp(R::CreatedAt))
                    // A reuse comes from an agent's call (its external id) or from an answer
                    // that pointed to the entry; a refund names the reuse it gives back.
                    .check(
                        Expr::col(R::Kind)
                            .eq("reuse")
                            .and(Expr::col(R::Refunds).is_null())
                            .and(
                                Expr::col(R::ExternalId)
                                    .is_not_null()
                                    .or(Expr::col(R::AnswerId).is_not_null()),
                            )
                            .or(Expr::col(R::Kind)
                                .eq("refund")
                                .and(Expr::col(R::Refunds).is_not_null())),
                    )
                    .foreign_key(&mut foreign_key(R::Table, R::NicheId, Alias::new("niches")))
                    .foreign_key(&mut foreign_key(
                        R::Table,
                        R::EntryId,
                        Alias::new("knowledge_entries"),
                    ))
                    .foreign_key(&mut foreign_key(R::Table, R::AgentId, Alias::new("agents")))
                    .foreign_key(&mut foreign_key(
                        R::Table,
                        R::QuestionId,
                        Alias::new("agent_questions"),
                    ))
                    .foreign_key(&mut foreign_key(
                        R::Table,
                        R::AnswerId,
                        Alias::new("agent_answers"),
                    ))
                    .foreign_key(&mut foreign_key(
                        R::Table,
                        R::RevenueEventId,
                        Alias::new("revenue_events"),
                    ))
                    .foreign_key(&mut foreign_key(R::Table, R::Refunds, R::Table))
                    .to_owned(),
            )
            .await?;
        // One reuse per external id in a niche (whichever agent sent it), and one per answer
        // (a refund carries neither, and NULLs never collide).
        manager
            .create_index(
                Index::create()
                    .name("knowledge_reuses_external_id")
                    .table(R::Table)
                    .col(R::NicheId)
                    .col(R::ExternalId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("knowledge_reuses_answer")
                    .table(R::Table)
                    .col(R::AnswerId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("knowledge_reuses_by_entry")
                    .table(R::Table)
                    .col(R::EntryId)
                    .col(R::Kind)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("knowledge_reuses_by_month")
                    .table(R::Table)
                    .col(R::NicheId)
                    .col(R::Month)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Niches::Table)
                    .add_column(non_negative(Niches::ReusePriceMinor))
                    .to_owned(),
            )
            .await?;
        // How many of a niche's entries hold each word (its rough stem), and under the empty
        // word how many entries the niche has: counted as entries are written, so a likes query
        // can leave out the words a large share of the niche holds.
        manager
            .create_table(
                Table::create()
                    .table(KnowledgeTerms::Table)
                    .col(reference(KnowledgeTerms::NicheId))
                    .col(ColumnDef::new(KnowledgeTerms::Term).string().not_null())
                    .col(non_negative(KnowledgeTerms::Entries))
                    .primary_key(
                        Index::create()
                            .col(KnowledgeTerms::NicheId)
                            .col(KnowledgeTerms::Term),
                    )
                    .foreign_key(&mut foreign_key(
                        KnowledgeTerms::Table,
                        KnowledgeTerms::NicheId,
                        Alias::new("niches"),
                    ))
                    .to_owned(),
            )
            .await?;
        // Both stores add a nullable referencing column in the same words.
        manager
            .get_connection()
            .execute_unprepared(
                "ALTER TABLE agent_answers ADD COLUMN knowledge_entry_id BIGINT NULL \
             REFERENCES knowledge_entries (id)",
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
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
                        POINTER_TYPE.into(),
                        "Settled a question from knowledge".into(),
                        1.into(),
                        0.into(),
                        1.into(),
                        Option::<i32>::None.into(),
                        Option::<i32>::None.into(),
                        false.into(),
                    ])
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    /// Refused while a reuse or a question settled from knowledge is stored: below this
    /// migration neither the money nor the answer's source could be kept.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let reuses = count(manager, "SELECT COUNT(*) FROM knowledge_reuses").await?;
        let pointed = count(
            manager,
            "SELECT COUNT(*) FROM agent_answers WHERE knowledge_entry_id IS NOT NULL",
        )
        .await?;
        if reuses + pointed > 0 {
            return Err(DbErr::Migration(format!(
                "{reuses} knowledge reuse(s) and {pointed} answer(s) from knowledge are stored; \
                 askloop before this migration cannot keep them, so it is not undone"
            )));
        }
        manager
            .drop_table(Table::drop().table(KnowledgeTerms::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentAnswers::Table)
                    .drop_column(AgentAnswers::KnowledgeEntryId)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Niches::Table)
                    .drop_column(Niches::ReusePriceMinor)
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(ContributionTypes::Table)
                    .and_where(Expr::col(ContributionTypes::Key).eq(POINTER_TYPE))
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(KnowledgeReuses::Table).to_owned())
            .await
    }
}
