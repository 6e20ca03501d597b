//! Budgets and bounties (docs/contract.md#budgets-and-bounties): intake reserves a question's
//! bounty against its niche's monthly agent budget, `answered` charges it, dismissal and expiry
//! release it. The ledger (`budget_entries`) is append-only and each question is reserved, charged
//! and released at most once (a unique key), so for every settled question reserved = charged +
//! released.

use chrono::{DateTime, Utc};
use entity::budget_entries::{self, BudgetEntryKind};
use entity::niches;
use sea_orm::sea_query::{Alias, Expr, Func};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait,
    NotSet, QueryFilter, QueryOrder, QuerySelect, Statement,
};

use crate::domain::ledger::{Budget, month_of, resets_at};
use crate::error::ServiceError;

/// Hold the niche's row until the transaction ends, so concurrent intakes into one niche check
/// and reserve one after another (SQLite's IMMEDIATE transactions already do).
pub async fn lock_niche<C: ConnectionTrait>(conn: &C, niche_id: i64) -> Result<(), ServiceError> {
    if conn.get_database_backend() == DbBackend::Postgres {
        conn.execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT id FROM niches WHERE id = $1 FOR UPDATE",
            [niche_id.into()],
        ))
        .await?;
    }
    Ok(())
}

/// The niche's budget in the month of `now` (docs/contract.md#budgets-and-bounties): reservations
/// still outstanding, whatever month they were made in, plus what was charged this month.
pub async fn budget_of<C: ConnectionTrait>(
    conn: &C,
    niche: &niches::Model,
    now: DateTime<Utc>,
) -> Result<Budget, ServiceError> {
    let all_time = totals(conn, niche.id, None).await?;
    let this_month = totals(conn, niche.id, Some(&month_of(now))).await?;
    let of = |totals: &[(BudgetEntryKind, i64)], kind| {
        totals
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, amount)| *amount)
    };
    let outstanding = of(&all_time, BudgetEntryKind::Reserve)
        - of(&all_time, BudgetEntryKind::Charge)
        - of(&all_time, BudgetEntryKind::Release);
    Ok(Budget {
        limit: niche.monthly_budget_minor,
        spent: of(&this_month, BudgetEntryKind::Charge),
        reserved: outstanding,
    })
}

/// A niche's entry totals by kind (summed by the database), over all time or in one month.
async fn totals<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    month: Option<&str>,
) -> Result<Vec<(BudgetEntryKind, i64)>, ServiceError> {
    // SUM of a BIGINT is NUMERIC on PostgreSQL: cast it back so both databases give an i64.
    let sum = Func::cast_as(
        Func::sum(Expr::col(budget_entries::Column::AmountMinor)),
        Alias::new("BIGINT"),
    );
    let mut query = budget_entries::Entity::find()
        .select_only()
        .column(budget_entries::Column::Kind)
        .column_as(Expr::expr(sum), "total")
        .filter(budget_entries::Column::NicheId.eq(niche_id))
        .group_by(budget_entries::Column::Kind);
    if let Some(month) = month {
        query = query.filter(budget_entries::Column::Month.eq(month));
    }
    Ok(query.into_tuple().all(conn).await?)
}

/// The 402 for a bounty the budget cannot cover.
pub fn over_budget(budget: &Budget, now: DateTime<Utc>) -> ServiceError {
    ServiceError::OverBudget {
        remaining_minor: budget.remaining().unwrap_or(0),
        resets_at: resets_at(now),
    }
}

async fn append<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    question_id: i64,
    kind: BudgetEntryKind,
    amount: i64,
    month: String,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    budget_entries::ActiveModel {
        id: NotSet,
        niche_id: Set(niche_id),
        question_id: Set(question_id),
        kind: Set(kind),
        amount_minor: Set(amount),
        month: Set(month),
        created_at: Set(now),
    }
    .insert(conn)
    .await?;
    Ok(())
}

/// Reserve `amount` for a question just stored (inside the intake's transaction, after
/// [`lock_niche`] and a check that it fits). Nothing is recorded for a bounty of 0.
pub async fn reserve<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    question_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if amount <= 0 {
        return Ok(());
    }
    append(
        conn,
        niche_id,
        question_id,
        BudgetEntryKind::Reserve,
        amount,
        month_of(now),
        now,
    )
    .await
}

/// Settle a question's reservation as `kind` (charge or release), in the transaction that
/// settles the question; a charge counts in the month it is made. The amount, or `None` when
/// nothing was reserved or it is already settled. A question answered without a bounty (nothing
/// reserved, nothing recorded) still leaves a charge of 0, so the cost ledger counts every
/// exchange; `None` is returned for it too.
pub async fn settle<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    question_id: i64,
    kind: BudgetEntryKind,
    now: DateTime<Utc>,
) -> Result<Option<i64>, ServiceError> {
    let entries = budget_entries::Entity::find()
        .filter(budget_entries::Column::QuestionId.eq(question_id))
        .order_by_asc(budget_entries::Column::Id)
        .all(conn)
        .await?;
    if entries.is_empty() && kind == BudgetEntryKind::Charge {
        append(conn, niche_id, question_id, kind, 0, month_of(now), now).await?;
        return Ok(None);
    }
    let Some(reserved) = entries.iter().find(|e| e.kind == BudgetEntryKind::Reserve) else {
        return Ok(None);
    };
    if entries.iter().any(|e| e.kind != BudgetEntryKind::Reserve) {
        return Ok(None);
    }
    append(
        conn,
        reserved.niche_id,
        question_id,
        kind,
        reserved.amount_minor,
        month_of(now),
        now,
    )
    .await?;
    Ok(Some(reserved.amount_minor))
}

/// A niche's budget entries of a month, newest first.
pub async fn entries_of<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    month: &str,
    limit: u64,
) -> Result<Vec<budget_entries::Model>, ServiceError> {
    Ok(budget_entries::Entity::find()
        .filter(budget_entries::Column::NicheId.eq(niche_id))
        .filter(budget_entries::Column::Month.eq(month))
        .order_by_desc(budget_entries::Column::Id)
        .limit(limit)
        .all(conn)
        .await?)
}
