//! Budgets and bounties (docs/contract.md#budgets-and-bounties): intake reserves a question's
//! bounty against its niche's monthly agent budget, `answered` charges it, dismissal and expiry
//! release it; a rejected answer's charge is given back (`charge_reversal`) and its reopened
//! question reserved again (docs/contract.md#held-money). The ledger (`budget_entries`) is
//! append-only. A reservation is settled once, by a charge or a release, in the transaction
//! whose conditional status change settles the question, so for every question reserved =
//! charged + released + still reserved, and a charge is reversed at most once.
//!
//! Every entry also moves the niche's balance (what is reserved, and what was spent in the
//! balance's month) in the same transaction, so the budget is read from one row and a
//! reservation is checked and made by one conditional update of it, never by summing the ledger.

use chrono::{DateTime, Utc};
use entity::budget_entries::{self, BudgetEntryKind};
use entity::niches;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait,
    NotSet, QueryFilter, QueryOrder, QuerySelect,
};

use crate::db::WriteTxn;
use crate::domain::ledger::{Budget, month_of, resets_at};
use crate::error::ServiceError;

/// A niche's budget at `now` from its balance (docs/contract.md#budgets-and-bounties):
/// reservations still outstanding, whatever month they were made in, plus what was charged in
/// the month of `now` (nothing yet when the balance last moved in an earlier month).
pub fn balance_of(niche: &niches::Model, now: DateTime<Utc>) -> Budget {
    let this_month = niche.budget_month.as_deref() == Some(month_of(now).as_str());
    Budget {
        limit: niche.monthly_budget_minor,
        spent: if this_month {
            niche.budget_spent_minor
        } else {
            0
        },
        reserved: niche.budget_reserved_minor,
    }
}

/// The niche's budget at `now`, from its balance as `conn` sees it now.
pub async fn budget_of<C: ConnectionTrait>(
    conn: &C,
    niche: &niches::Model,
    now: DateTime<Utc>,
) -> Result<Budget, ServiceError> {
    let current = niches::Entity::find_by_id(niche.id)
        .one(conn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("niche vanished")))?;
    Ok(balance_of(&current, now))
}

/// What the niche spent in `month` as its balance reads it: its spending when `month` is the
/// balance's month, nothing otherwise.
fn spent_in(month: &str) -> Expr {
    Expr::case(
        Expr::col(niches::Column::BudgetMonth).eq(month),
        Expr::col(niches::Column::BudgetSpentMinor),
    )
    .finally(Expr::val(0_i64))
    .into()
}

/// The niche's budget has room for `amount` more in `month`: no limit, or what was spent in the
/// month and what is reserved, plus `amount`, within it.
fn fits(month: &str, amount: i64) -> Condition {
    Condition::any()
        .add(niches::Column::MonthlyBudgetMinor.is_null())
        .add(
            spent_in(month)
                .add(Expr::col(niches::Column::BudgetReservedMinor))
                .add(amount)
                .lte(Expr::col(niches::Column::MonthlyBudgetMinor)),
        )
}

/// Reserve `amount` for question `question_id` if the niche's budget covers it: one conditional
/// update of the niche's balance (concurrent reservations in one niche queue on its row and each
/// sees the others' effect, so none overspends), then the ledger entry. Whether it was reserved;
/// an amount of 0 needs nothing and is always reserved.
pub async fn try_reserve(
    conn: &WriteTxn,
    niche_id: i64,
    question_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    if amount <= 0 {
        return Ok(true);
    }
    let month = month_of(now);
    let reserved = niches::Entity::update_many()
        .col_expr(
            niches::Column::BudgetReservedMinor,
            Expr::col(niches::Column::BudgetReservedMinor).add(amount),
        )
        .filter(niches::Column::Id.eq(niche_id))
        .filter(fits(&month, amount))
        .exec(conn)
        .await?;
    if reserved.rows_affected == 0 {
        return Ok(false);
    }
    insert_entry(
        conn,
        niche_id,
        question_id,
        BudgetEntryKind::Reserve,
        amount,
        month,
        now,
    )
    .await?;
    Ok(true)
}

/// The 402 for a bounty the budget cannot cover.
pub fn over_budget(budget: &Budget, now: DateTime<Utc>) -> ServiceError {
    ServiceError::OverBudget {
        remaining_minor: budget.remaining().unwrap_or(0),
        resets_at: resets_at(now),
    }
}

async fn insert_entry(
    conn: &WriteTxn,
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

/// Append a charge, release or charge reversal of `amount` booked in `month`, and move the
/// niche's balance with it in the same transaction.
async fn append(
    conn: &WriteTxn,
    niche_id: i64,
    question_id: i64,
    kind: BudgetEntryKind,
    amount: i64,
    month: String,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let reserved = Expr::col(niches::Column::BudgetReservedMinor);
    let spent = Expr::col(niches::Column::BudgetSpentMinor);
    let balance = niches::Entity::update_many().filter(niches::Column::Id.eq(niche_id));
    let balance = match kind {
        BudgetEntryKind::Reserve => {
            return Err(ServiceError::Internal(anyhow::anyhow!(
                "a reservation is made by try_reserve"
            )));
        }
        BudgetEntryKind::Release => {
            balance.col_expr(niches::Column::BudgetReservedMinor, reserved.sub(amount))
        }
        // A charge settles the reservation and counts in its month (which it starts, when the
        // balance last moved in an earlier one).
        BudgetEntryKind::Charge => balance
            .col_expr(niches::Column::BudgetReservedMinor, reserved.sub(amount))
            .col_expr(
                niches::Column::BudgetSpentMinor,
                spent_in(&month).add(amount),
            )
            .col_expr(niches::Column::BudgetMonth, Expr::val(month.clone())),
        // Given back in the month of the charge: this month's spending falls only when that is
        // the balance's month.
        BudgetEntryKind::ChargeReversal => balance
            .col_expr(niches::Column::BudgetSpentMinor, spent.sub(amount))
            .filter(niches::Column::BudgetMonth.eq(month.clone())),
    };
    balance.exec(conn).await?;
    insert_entry(conn, niche_id, question_id, kind, amount, month, now).await
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

/// What is still reserved for a question: reserved, less charged and released (never below 0).
fn outstanding(entries: &[budget_entries::Model]) -> i64 {
    std::cmp::max(
        sum_of(entries, BudgetEntryKind::Reserve)
            - sum_of(entries, BudgetEntryKind::Charge)
            - sum_of(entries, BudgetEntryKind::Release),
        0,
    )
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
pub async fn settle(
    conn: &WriteTxn,
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

/// Charge one answer's part of a several-answer question's reservation (docs/contract.md#several-answers):
/// `amount`, at most what is still reserved, the rest staying reserved for the other answers.
/// The amount charged (a charge of 0 is still booked, as for any answered exchange).
pub async fn charge_part(
    conn: &WriteTxn,
    niche_id: i64,
    question_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<i64, ServiceError> {
    let outstanding = outstanding(&entries_of_question(conn, question_id).await?);
    let charged = amount.clamp(0, outstanding);
    append(
        conn,
        niche_id,
        question_id,
        BudgetEntryKind::Charge,
        charged,
        month_of(now),
        now,
    )
    .await?;
    Ok(charged)
}

/// How a task's reservation was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtCost {
    /// Charged: the actual cost, at most what was reserved.
    pub charged: i64,
    /// Released: the rest of the reservation.
    pub released: i64,
}

/// Settle a completed task's outstanding reservation at its actual cost (docs/contract.md#delegated-tasks):
/// a charge of the actual cost and a release of the rest, both in the transaction that settles
/// it, so reserved = charged + released. A task reopened when the budget could no longer cover
/// it has nothing reserved and is charged 0, as a question is; so is the part of an actual cost
/// above what is reserved.
pub async fn settle_at_cost(
    conn: &WriteTxn,
    niche_id: i64,
    question_id: i64,
    actual: i64,
    now: DateTime<Utc>,
) -> Result<AtCost, ServiceError> {
    // The actual cost as a part of the reservation, then the rest released.
    let charged = charge_part(conn, niche_id, question_id, actual, now).await?;
    let released = settle(conn, niche_id, question_id, BudgetEntryKind::Release, now)
        .await?
        .unwrap_or(0);
    Ok(AtCost { charged, released })
}

/// Give back a question's last charge (its answer was rejected or reversed), booked in the
/// month the charge counted in so that month's spending falls by it. The amount, or `None` when
/// there is no charge left to give back (a zero charge, or one already reversed).
pub async fn reverse_charge(
    conn: &WriteTxn,
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
    let amount = std::cmp::min(unreversed, charge.amount_minor);
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

/// Reserve a reopened question's bounty again, if the niche's budget still covers it (inside
/// the transaction that reopens it). Whether it was reserved; a bounty of 0 needs nothing and
/// counts as reserved.
pub async fn reserve_again(
    conn: &WriteTxn,
    niche: &niches::Model,
    question_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    try_reserve(conn, niche.id, question_id, amount, now).await
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

/// Charge a knowledge reuse of `amount` against the niche's budget if it covers it (what is
/// reserved plus what was spent this month, plus this, within the limit): one conditional update
/// of the niche's balance, as a reservation is made. Whether it was charged; 0 always is, and
/// moves nothing. The reuse ledger (`knowledge_reuses`) holds the row.
pub async fn charge_reuse(
    conn: &WriteTxn,
    niche_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    if amount <= 0 {
        return Ok(true);
    }
    let month = month_of(now);
    let charged = niches::Entity::update_many()
        .col_expr(
            niches::Column::BudgetSpentMinor,
            spent_in(&month).add(amount),
        )
        .filter(niches::Column::Id.eq(niche_id))
        .filter(fits(&month, amount))
        .col_expr(niches::Column::BudgetMonth, Expr::val(month))
        .exec(conn)
        .await?;
    Ok(charged.rows_affected == 1)
}

/// Charge a reuse the agent already set money aside for (a question settled from knowledge, its
/// reservation released in the same transaction): the balance moves whatever the limit.
pub async fn charge_reserved_reuse(
    conn: &WriteTxn,
    niche_id: i64,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if amount <= 0 {
        return Ok(());
    }
    let month = month_of(now);
    niches::Entity::update_many()
        .col_expr(
            niches::Column::BudgetSpentMinor,
            spent_in(&month).add(amount),
        )
        .col_expr(niches::Column::BudgetMonth, Expr::val(month))
        .filter(niches::Column::Id.eq(niche_id))
        .exec(conn)
        .await?;
    Ok(())
}

/// Give a reuse's `amount`, charged in `month`, back: this month's spending falls only when
/// `month` is the balance's month (as for a charge reversal).
pub async fn refund_reuse(
    conn: &WriteTxn,
    niche_id: i64,
    amount: i64,
    month: &str,
) -> Result<(), ServiceError> {
    if amount <= 0 {
        return Ok(());
    }
    niches::Entity::update_many()
        .col_expr(
            niches::Column::BudgetSpentMinor,
            Expr::col(niches::Column::BudgetSpentMinor).sub(amount),
        )
        .filter(niches::Column::Id.eq(niche_id))
        .filter(niches::Column::BudgetMonth.eq(month))
        .exec(conn)
        .await?;
    Ok(())
}
