//! Niche knowledge (docs/contract.md#knowledge): every verified answer to a question becomes an
//! entry of its niche's knowledge — append-only versions, each `current`, `superseded` or
//! `retracted` — searchable by its title, question and answer words (never the agent's context).
//!
//! The full-text index is each store's own: on SQLite an FTS5 table (`knowledge_search`, rowid =
//! the entry's id; Porter stemming over unicode61 with diacritics folded); on PostgreSQL a stored
//! `tsvector` column over the `askloop_search` configuration (English stemming, and diacritics
//! folded by `unaccent` where the server has it) with a GIN index. Both change in the
//! transaction that writes the entry. Today's verified answers are written as entries here.

use crate::prelude::*;
use crate::sea_orm::{ConnectionTrait, DbBackend, Statement};
use crate::sea_query::ExprTrait;

use crate::checks::{count, one_of as check_one_of, replace_check};
use crate::columns::{foreign_key, id, one_of, reference, timestamp, timestamp_null};

pub struct Migration;

/// The event types before this migration.
const EVENTS_BEFORE: &[&str] = &[
    "expert_answer.created",
    "agent.research_requested",
    "expert_question.expired",
    "expert_question.dismissed",
    "expert_question.needs_context",
    "expert_answer.verified",
    "expert_answer.rejected",
    "expert_question.escalated",
    "question.waiting",
    "question.escalated",
    "task.completed",
];

/// The event types added: a knowledge entry an agent received was replaced or retracted.
const EVENTS_ADDED: &[&str] = &["knowledge.superseded", "knowledge.retracted"];

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000019_knowledge"
    }
}

#[derive(DeriveIden, Clone)]
enum KnowledgeEntries {
    Table,
    Id,
    NicheId,
    QuestionId,
    AnswerId,
    ContributionEventId,
    Version,
    Replaces,
    Status,
    Title,
    Question,
    OptionId,
    OptionLabel,
    Answer,
    AnsweredBy,
    VerifiedBy,
    Verification,
    VerifiedAt,
    EndedAt,
    EndedReason,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum KnowledgeCorrections {
    Table,
    Id,
    EntryId,
    NicheId,
    ProposedBy,
    OptionId,
    Answer,
    Note,
    ContributionEventId,
    Status,
    CreatedAt,
    DecidedAt,
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

/// The contribution a proposed correction is: reviewed by someone other than its author.
const CORRECTION_TYPE: &str = "knowledge_correction";

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
    SimilarityThresholdBps,
}

/// At most one current version per question's line of versions.
const ONE_CURRENT: &str = "knowledge_entries_one_current";
/// A niche's entries by status, newest first: the knowledge page without a search.
const BY_NICHE: &str = "knowledge_entries_by_niche";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use KnowledgeEntries as K;
        manager
            .create_table(
                Table::create()
                    .table(K::Table)
                    .col(id(K::Id))
                    .col(reference(K::NicheId))
                    .col(reference(K::QuestionId))
                    .col(ColumnDef::new(K::AnswerId).big_integer().null())
                    .col(reference(K::ContributionEventId).unique_key())
                    .col(
                        ColumnDef::new(K::Version)
                            .big_integer()
                            .not_null()
                            .check(Expr::col(K::Version).gte(1)),
                    )
                    .col(ColumnDef::new(K::Replaces).big_integer().null())
                    .col(one_of(K::Status, &["current", "superseded", "retracted"]))
                    .col(ColumnDef::new(K::Title).text().not_null())
                    .col(ColumnDef::new(K::Question).text().not_null())
                    .col(ColumnDef::new(K::OptionId).text().null())
                    .col(ColumnDef::new(K::OptionLabel).text().null())
                    .col(ColumnDef::new(K::Answer).text().null())
                    .col(reference(K::AnsweredBy))
                    .col(ColumnDef::new(K::VerifiedBy).big_integer().null())
                    .col(one_of(K::Verification, &["trust", "review"]))
                    .col(timestamp(K::VerifiedAt))
                    .col(timestamp_null(K::EndedAt))
                    .col(ColumnDef::new(K::EndedReason).text().null())
                    .col(timestamp(K::CreatedAt))
                    .foreign_key(&mut foreign_key(K::Table, K::NicheId, Alias::new("niches")))
                    .foreign_key(&mut foreign_key(
                        K::Table,
                        K::QuestionId,
                        Alias::new("agent_questions"),
                    ))
                    .foreign_key(&mut foreign_key(
                        K::Table,
                        K::AnswerId,
                        Alias::new("agent_answers"),
                    ))
                    .foreign_key(&mut foreign_key(
                        K::Table,
                        K::ContributionEventId,
                        Alias::new("contribution_events"),
                    ))
                    .foreign_key(&mut foreign_key(K::Table, K::Replaces, K::Table))
                    .foreign_key(&mut foreign_key(
                        K::Table,
                        K::AnsweredBy,
                        Alias::new("users"),
                    ))
                    .foreign_key(&mut foreign_key(
                        K::Table,
                        K::VerifiedBy,
                        Alias::new("users"),
                    ))
                    .index(
                        Index::create()
                            .name("knowledge_entries_question_version")
                            .col(K::QuestionId)
                            .col(K::Version)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(BY_NICHE)
                    .table(K::Table)
                    .col(K::NicheId)
                    .col(K::Status)
                    .col(K::VerifiedAt)
                    .col(K::Id)
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        // Both stores take a partial unique index in the same words.
        db.execute_unprepared(&format!(
            "CREATE UNIQUE INDEX {ONE_CURRENT} ON knowledge_entries (question_id) \
             WHERE status = 'current'"
        ))
        .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Niches::Table)
                    .add_column(
                        ColumnDef::new(Niches::SimilarityThresholdBps)
                            .integer()
                            .not_null()
                            .default(3000)
                            .check(
                                Expr::col(Niches::SimilarityThresholdBps)
                                    .gte(0)
                                    .and(Expr::col(Niches::SimilarityThresholdBps).lte(10000)),
                            ),
                    )
                    .to_owned(),
            )
            .await?;
        match manager.get_database_backend() {
            DbBackend::Sqlite => {
                db.execute_unprepared(
                    "CREATE VIRTUAL TABLE knowledge_search USING fts5(\
                     title, question, answer, \
                     tokenize = 'porter unicode61 remove_diacritics 2')",
                )
                .await?;
            }
            DbBackend::Postgres => {
                let unaccent = db
                    .query_one_raw(Statement::from_string(
                        DbBackend::Postgres,
                        "SELECT 1 FROM pg_available_extensions WHERE name = 'unaccent'",
                    ))
                    .await?
                    .is_some();
                db.execute_unprepared(
                    "CREATE TEXT SEARCH CONFIGURATION askloop_search (COPY = pg_catalog.english)",
                )
                .await?;
                if unaccent {
                    db.execute_unprepared("CREATE EXTENSION IF NOT EXISTS unaccent")
                        .await?;
                    db.execute_unprepared(
                        "ALTER TEXT SEARCH CONFIGURATION askloop_search \
                         ALTER MAPPING FOR hword, hword_part, word \
                         WITH unaccent, english_stem",
                    )
                    .await?;
                }
                db.execute_unprepared(
                    "ALTER TABLE knowledge_entries ADD COLUMN search tsvector \
                     GENERATED ALWAYS AS (\
                     setweight(to_tsvector('askloop_search'::regconfig, title), 'A') || \
                     setweight(to_tsvector('askloop_search'::regconfig, \
                       coalesce(option_label, '') || ' ' || coalesce(answer, '')), 'A') || \
                     setweight(to_tsvector('askloop_search'::regconfig, question), 'B')\
                     ) STORED",
                )
                .await?;
                db.execute_unprepared(
                    "CREATE INDEX knowledge_entries_search ON knowledge_entries USING GIN (search)",
                )
                .await?;
            }
            other => return Err(DbErr::Migration(format!("{other:?} is not supported"))),
        }
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        replace_check(
            manager,
            "deliveries",
            "event_type",
            &check_one_of("event_type", EVENTS_BEFORE),
            &check_one_of("event_type", &after),
        )
        .await?;
        corrections(manager).await?;
        backfill(manager).await
    }

    /// Refused while a knowledge event is stored: below this migration no delivery may carry
    /// one, and an agent's notice that an entry was withdrawn is not thrown away.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let events = count(
            manager,
            "SELECT COUNT(*) FROM deliveries WHERE event_type LIKE 'knowledge.%'",
        )
        .await?;
        if events > 0 {
            return Err(DbErr::Migration(format!(
                "{events} knowledge event(s) are stored; askloop before this migration cannot \
                 keep them, so it is not undone while they exist"
            )));
        }
        let proposed = count(manager, "SELECT COUNT(*) FROM knowledge_corrections").await?;
        if proposed > 0 {
            return Err(DbErr::Migration(format!(
                "{proposed} knowledge correction(s) are stored, and their contributions count in \
                 scores; askloop before this migration has neither, so it is not undone"
            )));
        }
        manager
            .drop_table(Table::drop().table(KnowledgeCorrections::Table).to_owned())
            .await?;
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(ContributionTypes::Table)
                    .and_where(Expr::col(ContributionTypes::Key).eq(CORRECTION_TYPE))
                    .to_owned(),
            )
            .await?;
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        replace_check(
            manager,
            "deliveries",
            "event_type",
            &check_one_of("event_type", &after),
            &check_one_of("event_type", EVENTS_BEFORE),
        )
        .await?;
        match manager.get_database_backend() {
            DbBackend::Sqlite => {
                db.execute_unprepared("DROP TABLE knowledge_search").await?;
            }
            _ => {
                db.execute_unprepared("DROP INDEX knowledge_entries_search")
                    .await?;
            }
        }
        manager
            .drop_table(Table::drop().table(KnowledgeEntries::Table).to_owned())
            .await?;
        if manager.get_database_backend() == DbBackend::Postgres {
            db.execute_unprepared("DROP TEXT SEARCH CONFIGURATION askloop_search")
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Niches::Table)
                    .drop_column(Niches::SimilarityThresholdBps)
                    .to_owned(),
            )
            .await
    }
}

/// Proposed corrections of entries, each a contribution of its own type, reviewed like an answer.
async fn corrections(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    use KnowledgeCorrections as C;
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
                    CORRECTION_TYPE.into(),
                    "Corrected a knowledge entry".into(),
                    2.into(),
                    0.into(),
                    2.into(),
                    Option::<i32>::None.into(),
                    Option::<i32>::None.into(),
                    false.into(),
                ])
                .to_owned(),
        )
        .await?;
    manager
        .create_table(
            Table::create()
                .table(C::Table)
                .col(id(C::Id))
                .col(reference(C::EntryId))
                .col(reference(C::NicheId))
                .col(reference(C::ProposedBy))
                .col(ColumnDef::new(C::OptionId).text().null())
                .col(ColumnDef::new(C::Answer).text().null())
                .col(ColumnDef::new(C::Note).text().null())
                .col(reference(C::ContributionEventId).unique_key())
                .col(one_of(C::Status, &["pending", "verified", "rejected"]))
                .col(timestamp(C::CreatedAt))
                .col(timestamp_null(C::DecidedAt))
                .foreign_key(&mut foreign_key(
                    C::Table,
                    C::EntryId,
                    Alias::new("knowledge_entries"),
                ))
                .foreign_key(&mut foreign_key(C::Table, C::NicheId, Alias::new("niches")))
                .foreign_key(&mut foreign_key(
                    C::Table,
                    C::ProposedBy,
                    Alias::new("users"),
                ))
                .foreign_key(&mut foreign_key(
                    C::Table,
                    C::ContributionEventId,
                    Alias::new("contribution_events"),
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name("knowledge_corrections_by_entry")
                .table(C::Table)
                .col(C::EntryId)
                .col(C::Status)
                .to_owned(),
        )
        .await
}

/// Today's verified answers to questions become their questions' first entries, as verifying
/// them now would write them: the option's label looked up in the question's options.
async fn backfill(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let db = manager.get_connection();
    let backend = manager.get_database_backend();
    db.execute_unprepared(
        "INSERT INTO knowledge_entries (niche_id, question_id, answer_id, contribution_event_id, \
           version, replaces, status, title, question, option_id, option_label, answer, \
           answered_by, verified_by, verification, verified_at, created_at) \
         SELECT q.niche_id, q.id, a.id, c.id, 1, NULL, 'current', q.title, q.question, \
           a.option_id, NULL, a.body, a.user_id, c.verified_by, \
           CASE WHEN c.verified_by IS NULL THEN 'trust' ELSE 'review' END, \
           COALESCE(c.verified_at, c.created_at), COALESCE(c.verified_at, c.created_at) \
         FROM agent_answers a \
         JOIN contribution_events c ON c.id = a.contribution_event_id \
         JOIN agent_questions q ON q.id = a.question_id \
         WHERE a.kind = 'answered' AND c.status = 'verified' AND q.kind = 'question' \
         ORDER BY a.id",
    )
    .await?;
    // The options as text on both stores (JSON on PostgreSQL, text holding JSON on SQLite).
    let options = match backend {
        DbBackend::Postgres => "q.options::text",
        _ => "q.options",
    };
    let chosen = db
        .query_all_raw(Statement::from_string(
            backend,
            format!(
                "SELECT e.id AS id, e.option_id AS option_id, {options} AS options \
                 FROM knowledge_entries e JOIN agent_questions q ON q.id = e.question_id \
                 WHERE e.option_id IS NOT NULL"
            ),
        ))
        .await?;
    for row in chosen {
        let id: i64 = row.try_get("", "id")?;
        let option_id: String = row.try_get("", "option_id")?;
        let options: String = row.try_get("", "options")?;
        let options: serde_json::Value = serde_json::from_str(&options).unwrap_or_default();
        let label = options.as_array().and_then(|options| {
            options
                .iter()
                .find(|o| o.get("id").and_then(|v| v.as_str()) == Some(option_id.as_str()))
                .and_then(|o| o.get("label"))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        });
        let update = Query::update()
            .table(KnowledgeEntries::Table)
            .value(KnowledgeEntries::OptionLabel, label)
            .and_where(Expr::col(KnowledgeEntries::Id).eq(id))
            .to_owned();
        manager.exec_stmt(update).await?;
    }
    if backend == DbBackend::Sqlite {
        db.execute_unprepared(
            "INSERT INTO knowledge_search (rowid, title, question, answer) \
             SELECT id, title, question, \
               trim(coalesce(option_label, '') || ' ' || coalesce(answer, '')) \
             FROM knowledge_entries",
        )
        .await?;
    }
    Ok(())
}
