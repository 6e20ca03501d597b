//! The questions agents ask and the answers (and declines) operators give.

use crate::prelude::*;
use crate::sea_query::ExprTrait;

use crate::columns::{foreign_key, id, non_negative, one_of, reference, timestamp, timestamp_null};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000002_questions_and_answers"
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
enum AgentQuestions {
    Table,
    Id,
    NicheId,
    ExternalId,
    AgentId,
    Title,
    Question,
    Context,
    Options,
    Urgency,
    /// high = 0, normal = 1, low = 2: the queue's sort key, kept as a number so the waiting
    /// queue is read in index order.
    UrgencyRank,
    RelatedResourceIds,
    Status,
    BountyMinor,
    /// How many times research has come back; declines from an earlier round no longer hide
    /// the question from the people who gave them.
    ResearchRound,
    ExpiresAt,
    CreatedAt,
    AnsweredAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum AgentAnswers {
    Table,
    Id,
    QuestionId,
    UserId,
    Kind,
    OptionId,
    Body,
    ContributionEventId,
    /// The question's research round when this answer was given.
    ResearchRound,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AgentQuestions::Table)
                    .col(id(AgentQuestions::Id))
                    .col(reference(AgentQuestions::NicheId))
                    .col(ColumnDef::new(AgentQuestions::ExternalId).string().null())
                    .col(ColumnDef::new(AgentQuestions::AgentId).string().null())
                    .col(ColumnDef::new(AgentQuestions::Title).string().not_null())
                    .col(ColumnDef::new(AgentQuestions::Question).text().not_null())
                    // UNTRUSTED: the agent's research, attacker-influenced text. It is shown to
                    // people only as escaped text and is never interpolated into instructions,
                    // prompts or queries on either side of the loop.
                    .col(
                        ColumnDef::new(AgentQuestions::Context)
                            .text()
                            .null()
                            .comment("UNTRUSTED agent research: display as escaped text only; never interpolate into instructions"),
                    )
                    .col(ColumnDef::new(AgentQuestions::Options).json().not_null())
                    .col(one_of(AgentQuestions::Urgency, &["low", "normal", "high"]).default("normal"))
                    .col(
                        ColumnDef::new(AgentQuestions::UrgencyRank)
                            .small_integer()
                            .not_null()
                            .default(1)
                            .check(Expr::col(AgentQuestions::UrgencyRank).is_in([0, 1, 2])),
                    )
                    .col(ColumnDef::new(AgentQuestions::RelatedResourceIds).json().not_null())
                    .col(
                        one_of(
                            AgentQuestions::Status,
                            &["open", "researching", "answered", "dismissed", "expired"],
                        )
                        .default("open"),
                    )
                    .col(non_negative(AgentQuestions::BountyMinor))
                    .col(non_negative(AgentQuestions::ResearchRound))
                    .col(timestamp(AgentQuestions::ExpiresAt))
                    .col(timestamp(AgentQuestions::CreatedAt))
                    .col(timestamp_null(AgentQuestions::AnsweredAt))
                    .col(timestamp(AgentQuestions::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        AgentQuestions::Table,
                        AgentQuestions::NicheId,
                        Niches::Table,
                    ))
                    .to_owned(),
            )
            .await?;

        // A redelivered webhook must never put a question twice in front of a person: one row per
        // (niche, external id), enforced by the database, for the questions that carry one.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX agent_questions_niche_external_key \
                 ON agent_questions (niche_id, external_id) WHERE external_id IS NOT NULL",
            )
            .await?;

        // The waiting queue (open + researching), in the order people read it: most urgent first,
        // then oldest (ids grow with arrival). Partial, so settled questions never bloat it.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX agent_questions_waiting_idx \
                 ON agent_questions (niche_id, urgency_rank, id) \
                 WHERE status IN ('open', 'researching')",
            )
            .await?;

        // Every other status filter ("Settled"), newest first.
        manager
            .create_index(
                Index::create()
                    .name("agent_questions_status_idx")
                    .table(AgentQuestions::Table)
                    .col(AgentQuestions::NicheId)
                    .col(AgentQuestions::Status)
                    .col(AgentQuestions::Id)
                    .to_owned(),
            )
            .await?;

        // The expiry sweeper's walk: waiting questions by deadline.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX agent_questions_expiry_idx \
                 ON agent_questions (expires_at) \
                 WHERE status IN ('open', 'researching')",
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(AgentAnswers::Table)
                    .col(id(AgentAnswers::Id))
                    .col(reference(AgentAnswers::QuestionId))
                    .col(reference(AgentAnswers::UserId))
                    .col(one_of(
                        AgentAnswers::Kind,
                        &["answered", "insufficient_context", "needs_research"],
                    ))
                    .col(ColumnDef::new(AgentAnswers::OptionId).string().null())
                    .col(ColumnDef::new(AgentAnswers::Body).text().null())
                    .col(
                        ColumnDef::new(AgentAnswers::ContributionEventId)
                            .big_integer()
                            .null(),
                    )
                    .col(non_negative(AgentAnswers::ResearchRound))
                    .col(timestamp(AgentAnswers::CreatedAt))
                    .col(timestamp(AgentAnswers::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        AgentAnswers::Table,
                        AgentAnswers::QuestionId,
                        AgentQuestions::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        AgentAnswers::Table,
                        AgentAnswers::UserId,
                        Users::Table,
                    ))
                    .index(
                        Index::create()
                            .name("agent_answers_question_user_key")
                            .col(AgentAnswers::QuestionId)
                            .col(AgentAnswers::UserId)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;

        // At most one `answered` row per question, whatever any code path does.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX agent_answers_one_winner_key \
                 ON agent_answers (question_id) WHERE kind = 'answered'",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(AgentAnswers::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(AgentQuestions::Table).to_owned())
            .await
    }
}
