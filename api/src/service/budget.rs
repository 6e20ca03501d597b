//! Budgets and bounties (docs/contract.md#budgets-and-bounties): intake reserves a question's
//! bounty against its niche's monthly agent budget, `answered` charges it, dismissal and expiry
//! release it; a rejected answer's charge is given back (`charge_reversal`) and its reopened
//! question reserved again (docs/contract.md#held-money). The ledger (`budget_entries`) is
//! append-only. A reservation is settled once, by a charge or a release, in the transaction
//! whose conditional status change settles the question, so for every question reserved =
//! charged + released + still reserved, and a charge is reversed at most once.

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
        // A reversal is booked in the month of the charge it gives back.
        spent: of(&this_month, BudgetEntryKind::Charge)
            - of(&this_month, BudgetEntryKind::ChargeReversal),
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

/// A question's entries, oldest first.
async fn entries_of_question<C: ConnectionTrait>(
    conn: &C,
    question_id: i64,
) -> Result<Vec<budget_entries::Model>, ServiceError> {
    Ok(budget_entries::Entity::find()
        .filter(budget_entries::Column::QuestionId.eq(question_id))
        .order_by_asc(budget_entries::Column::Id)
        .all(conn)
        .await?)
}

/// The sum of a question's entries of one kind.
fn sum_of(entries: &[budget_entries::Model], kind: BudgetEntryKind) -> i64 {
    entries
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.amount_minor)
        .sum()
}

/// Settle a question's outstanding reservation as `kind` (charge or release), in the transaction
/// that settles the question; a charge counts in the month it is made. The amount, or `None`
/// when nothing is reserved. A question answered with nothing reserved (no bounty, or a reopened
/// question the budget could no longer cover) still leaves a charge of 0, so the cost ledger
/// counts every exchange; `None` is returned for it too.
pub async fn settle<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    question_id: i64,
    kind: BudgetEntryKind,
    now: DateTime<Utc>,
) -> Result<Option<i64>, ServiceError> {
    let entries = entries_of_question(conn, question_id).await?;
    let outstanding = sum_of(&entries, BudgetEntryKind::Reserve)
        - sum_of(&entries, BudgetEntryKind::Charge)
        - sum_of(&entries, BudgetEntryKind::Release);
    if outstanding <= 0 {
        if kind == BudgetEntryKind::Charge {
            append(conn, niche_id, question_id, kind, 0, month_of(now), now).await?;
        }
        return Ok(None);
    }
    append(
        conn,
        niche_id,
        question_id,
        kind,
        outstanding,
        month_of(now),
        now,
    )
    .await?;
    Ok(Some(outstanding))
}

/// Give back a question's last charge (its answer was rejected or reversed), booked in the
/// month the charge counted in so that month's spending falls by it. The amount, or `None` when
/// there is no charge left to give back (a zero charge, or one already reversed).
pub async fn reverse_charge<C: ConnectionTrait>(
    conn: &C,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<i64>, ServiceError> {
    let entries = entries_of_question(conn, question_id).await?;
    let unreversed = sum_of(&entries, BudgetEntryKind::Charge)
        - sum_of(&entries, BudgetEntryKind::ChargeReversal);
    let Some(charge) = entries
        .iter()
        .rev()
        .find(|e| e.kind == BudgetEntryKind::Charge && e.amount_minor > 0)
    else {
        return Ok(None);
    };
    if unreversed <= 0 {
        return Ok(None);
    }
    let amount = unreversed.min(charge.amount_minor);
    append(
        conn,
        charge.niche_id,
        question_id,
        BudgetEntryKind::ChargeReversal,
        amount,
        charge.month.clone(),
        now,
    )
    .await?;
    Ok(Some(amount))
}

/// Reserve a reopened question's bounty again, if the niche's budget still covers it (after
/// [`lock_niche`], inside the transaction that reopens it). Whether it was reserved; a bounty of
/// 0 needs nothing and counts as reserved.
pub async fn reserve_again<C: ConnectionTrait>(
    conn: &C,
    niche: &niches::Model,
    question_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    if amount <= 0 {
        return Ok(true);
    }
    lock_niche(conn, niche.id).await?;
    if !budget_of(conn, niche, now).await?.fits(amount) {
        return Ok(false);
    }
    reserve(conn, niche.id, question_id, amount, now).await?;
    Ok(true)
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
