//! What the money pages read (see `docs/contract.md`): a niche's budget, my revenue, a niche's
//! revenue, and for admins the revenue events, payouts, payout addresses, anomaly signals and the
//! audit log; plus setting a niche's budget. Each function checks who may read or write it, so
//! every surface gets the same rule, and resolves ids to handles and slugs in one query a batch.

use std::collections::HashMap;

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::budget_entries::BudgetEntryKind;
use entity::knowledge_reuses::{self, ReuseKind};
use entity::{
    agent_questions, allocations, anomaly_signals, budget_entries, niches, payout_accounts,
    payouts, revenue_events,
};
use sea_orm::sea_query::{Alias, Expr, Func};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::json;

use crate::domain::ledger::{self, Budget};
use crate::error::ServiceError;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::money::revenue::Balance;
use crate::service::people::access::{self, Viewer};
use crate::service::questions::queue::niche_by_slug;
use crate::service::{
    money::budget, money::payouts as payout_service, money::revenue, money::scores, money::signals,
    money::standing, people::names,
};

/// What one exchange (a question or a task) reserved, cost and released, over its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeCost {
    /// The question or task.
    pub question_id: i64,
    /// Its title (untrusted text).
    pub title: String,
    /// A question or a task.
    pub kind: agent_questions::ExchangeKind,
    /// Its limit: a task's budget limit, a question's bounty.
    pub limit: i64,
    /// Everything reserved for it (more than the limit when it was reopened and reserved again).
    pub reserved: i64,
    /// What it actually cost: charged, less any charge given back.
    pub actual: i64,
    /// Released back to the budget.
    pub released: i64,
    /// Still reserved: neither charged nor released yet.
    pub outstanding: i64,
}

/// A month's spending (charges less charges given back), questions apart from tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendByKind {
    /// On questions' bounties.
    pub questions: i64,
    /// On tasks' actual costs.
    pub tasks: i64,
    /// On reuses of the niche's knowledge (less reuses given back).
    pub reuses: i64,
}

/// A niche's budget this month, with its newest entries.
#[derive(Debug, Clone)]
pub struct BudgetView {
    /// The niche (its bounty settings included).
    pub niche: niches::Model,
    /// Limit, spent and reserved this month.
    pub budget: Budget,
    /// The month's entries, newest first.
    pub entries: Vec<budget_entries::Model>,
    /// When the budget month starts again.
    pub resets_at: DateTime<Utc>,
    /// The exchanges with entries this month, most recently moved first.
    pub exchanges: Vec<ExchangeCost>,
    /// This month's spending on questions and on tasks.
    pub spend: SpendByKind,
}

/// An allocation with the names it is shown with.
#[derive(Debug, Clone)]
pub struct AllocationRow {
    /// The allocation.
    pub allocation: allocations::Model,
    /// Its niche's slug.
    pub niche_slug: String,
    /// Whose it is (none: the platform's).
    pub handle: Option<String>,
    /// The revenue event it came from.
    pub event: Option<revenue_events::Model>,
}

/// A payout with its payee's handle.
#[derive(Debug, Clone)]
pub struct PayoutRow {
    /// The payout.
    pub payout: payouts::Model,
    /// The payee.
    pub handle: String,
}

/// My money, everywhere.
#[derive(Debug, Clone)]
pub struct MyRevenue {
    /// One balance per currency.
    pub balances: Vec<Balance>,
    /// My allocations, newest first.
    pub allocations: Vec<AllocationRow>,
    /// My payouts, newest first.
    pub payouts: Vec<PayoutRow>,
    /// Where I want to be paid.
    pub account: Option<payout_accounts::Model>,
}

/// A niche's revenue as its members see it.
#[derive(Debug, Clone)]
pub struct NicheRevenue {
    /// The niche.
    pub niche: niches::Model,
    /// Gross over the events that stand (a reversed event, e.g. a rejected answer's bounty whose
    /// charge the budget gives back, is not counted).
    pub gross: i64,
    /// Net over the events that stand.
    pub net: i64,
    /// How many events stand.
    pub count: i64,
    /// The newest events.
    pub recent: Vec<revenue_events::Model>,
    /// The events reversed after they were booked, newest first (the gross they had is not in
    /// `gross`).
    pub reversed: Vec<revenue_events::Model>,
    /// Members' shares now, by handle, basis points.
    pub shares: Vec<(String, i64)>,
    /// The caller's allocations in this niche.
    pub mine: Vec<AllocationRow>,
}

/// A niche's budget settings, as an admin sets them.
#[derive(Debug, Clone, Copy)]
pub struct NicheBudget {
    /// The monthly limit (none: no limit), minor units.
    pub monthly_budget_minor: Option<i64>,
    /// The default bounty, minor units.
    pub bounty_minor: i64,
    /// The largest bounty, minor units.
    pub max_bounty_minor: i64,
    /// What one reuse of the niche's knowledge costs an agent, minor units (none: unchanged).
    pub reuse_price_minor: Option<i64>,
}

/// The niche named `slug` if `viewer` may see its money: its active members and admins.
async fn member_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
) -> Result<niches::Model, ServiceError> {
    let niche = niche_by_slug(db, slug).await?;
    access::can_read_questions(db, viewer, &niche).await?;
    Ok(niche)
}

async fn budget_of_niche(
    db: &Db,
    niche: niches::Model,
    now: DateTime<Utc>,
) -> Result<BudgetView, ServiceError> {
    let state = budget::budget_of(db, &niche, now).await?;
    let month = ledger::month_of(now);
    let entries = budget::entries_of(db, niche.id, &month, 100).await?;
    let exchanges = exchanges_of(db, niche.id, &month, 100).await?;
    let spend = spend_by_kind(db, niche.id, &month).await?;
    Ok(BudgetView {
        niche,
        budget: state,
        entries,
        resets_at: ledger::resets_at(now),
        exchanges,
        spend,
    })
}

/// The `limit` exchanges of a niche whose budget moved in `month`, most recently moved first,
/// each with its whole ledger summed (three queries).
async fn exchanges_of(
    db: &Db,
    niche_id: i64,
    month: &str,
    limit: u64,
) -> Result<Vec<ExchangeCost>, ServiceError> {
    let latest: Vec<(i64, i64)> = budget_entries::Entity::find()
        .select_only()
        .column(budget_entries::Column::QuestionId)
        .column_as(budget_entries::Column::Id.max(), "latest")
        .filter(budget_entries::Column::NicheId.eq(niche_id))
        .filter(budget_entries::Column::Month.eq(month))
        .group_by(budget_entries::Column::QuestionId)
        .order_by_desc(Expr::col(Alias::new("latest")))
        .limit(limit)
        .into_tuple()
        .all(db)
        .await?;
    let ids: Vec<i64> = latest.iter().map(|(id, _)| *id).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let entries = budget_entries::Entity::find()
        .filter(budget_entries::Column::QuestionId.is_in(ids.clone()))
        .all(db)
        .await?;
    let questions: HashMap<i64, agent_questions::Model> = agent_questions::Entity::find()
        .filter(agent_questions::Column::Id.is_in(ids.clone()))
        .all(db)
        .await?
        .into_iter()
        .map(|q| (q.id, q))
        .collect();
    Ok(ids
        .into_iter()
        .filter_map(|id| {
            let question = questions.get(&id)?;
            let sum = |kind: BudgetEntryKind| -> i64 {
                entries
                    .iter()
                    .filter(|e| e.question_id == id && e.kind == kind)
                    .map(|e| e.amount_minor)
                    .sum()
            };
            let reserved = sum(BudgetEntryKind::Reserve);
            let charged = sum(BudgetEntryKind::Charge);
            let released = sum(BudgetEntryKind::Release);
            Some(ExchangeCost {
                question_id: id,
                title: question.title.clone(),
                kind: question.kind,
                limit: question.bounty_minor,
                reserved,
                actual: charged - sum(BudgetEntryKind::ChargeReversal),
                released,
                outstanding: reserved - charged - released,
            })
        })
        .collect())
}

/// What a niche spent in `month` on questions and on tasks: its charges less the charges given
/// back, summed by the database per kind of exchange.
async fn spend_by_kind(db: &Db, niche_id: i64, month: &str) -> Result<SpendByKind, ServiceError> {
    let rows: Vec<(agent_questions::ExchangeKind, BudgetEntryKind, Option<i64>)> =
        budget_entries::Entity::find()
            .select_only()
            .column(agent_questions::Column::Kind)
            .column(budget_entries::Column::Kind)
            // Cast, so both databases give an i64 (PostgreSQL sums a BIGINT as NUMERIC).
            .column_as(
                Expr::expr(Func::cast_as(
                    Func::sum(Expr::col(budget_entries::Column::AmountMinor)),
                    Alias::new("BIGINT"),
                )),
                "total",
            )
            .join(
                sea_orm::JoinType::InnerJoin,
                budget_entries::Entity::belongs_to(agent_questions::Entity)
                    .from(budget_entries::Column::QuestionId)
                    .to(agent_questions::Column::Id)
                    .into(),
            )
            .filter(budget_entries::Column::NicheId.eq(niche_id))
            .filter(budget_entries::Column::Month.eq(month))
            .filter(
                budget_entries::Column::Kind
                    .is_in([BudgetEntryKind::Charge, BudgetEntryKind::ChargeReversal]),
            )
            .group_by(agent_questions::Column::Kind)
            .group_by(budget_entries::Column::Kind)
            .into_tuple()
            .all(db)
            .await?;
    let mut spend = SpendByKind::default();
    for (exchange, entry, total) in rows {
        let signed = match entry {
            BudgetEntryKind::ChargeReversal => -total.unwrap_or(0),
            _ => total.unwrap_or(0),
        };
        match exchange {
            agent_questions::ExchangeKind::Question => spend.questions += signed,
            agent_questions::ExchangeKind::Task => spend.tasks += signed,
        }
    }
    let reuses: Vec<(ReuseKind, Option<i64>)> = knowledge_reuses::Entity::find()
        .select_only()
        .column(knowledge_reuses::Column::Kind)
        .column_as(
            Expr::expr(Func::cast_as(
                Func::sum(Expr::col(knowledge_reuses::Column::AmountMinor)),
                Alias::new("BIGINT"),
            )),
            "total",
        )
        .filter(knowledge_reuses::Column::NicheId.eq(niche_id))
        .filter(knowledge_reuses::Column::Month.eq(month))
        .group_by(knowledge_reuses::Column::Kind)
        .into_tuple()
        .all(db)
        .await?;
    for (kind, total) in reuses {
        spend.reuses += match kind {
            ReuseKind::Reuse => total.unwrap_or(0),
            ReuseKind::Refund => -total.unwrap_or(0),
        };
    }
    Ok(spend)
}

/// A niche's budget this month (its active members and admins).
pub async fn budget_view(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
    now: DateTime<Utc>,
) -> Result<BudgetView, ServiceError> {
    let niche = member_niche(db, viewer, slug).await?;
    budget_of_niche(db, niche, now).await
}

/// Allocations with their niches' slugs, handles and events: three queries for any number.
pub async fn allocation_rows(
    db: &Db,
    rows: Vec<allocations::Model>,
) -> Result<Vec<AllocationRow>, ServiceError> {
    let slugs = names::slugs(db, rows.iter().map(|a| a.niche_id)).await?;
    let handles = names::handles(db, rows.iter().filter_map(|a| a.user_id)).await?;
    let events: HashMap<i64, revenue_events::Model> = if rows.is_empty() {
        HashMap::new()
    } else {
        revenue_events::Entity::find()
            .filter(revenue_events::Column::Id.is_in(rows.iter().map(|a| a.revenue_event_id)))
            .all(db)
            .await?
            .into_iter()
            .map(|e| (e.id, e))
            .collect()
    };
    Ok(rows
        .into_iter()
        .map(|allocation| AllocationRow {
            niche_slug: slugs.get(&allocation.niche_id).cloned().unwrap_or_default(),
            handle: allocation.user_id.and_then(|u| handles.get(&u).cloned()),
            event: events.get(&allocation.revenue_event_id).cloned(),
            allocation,
        })
        .collect())
}

/// Payouts with their payees' handles.
pub async fn payout_rows(
    db: &Db,
    rows: Vec<payouts::Model>,
) -> Result<Vec<PayoutRow>, ServiceError> {
    let handles = names::handles(db, rows.iter().map(|p| p.user_id)).await?;
    Ok(rows
        .into_iter()
        .map(|payout| PayoutRow {
            handle: handles.get(&payout.user_id).cloned().unwrap_or_default(),
            payout,
        })
        .collect())
}

/// The caller's money: balances, allocations, payouts and payout address.
pub async fn my_revenue(
    db: &Db,
    viewer: Option<&Viewer>,
    first: u64,
) -> Result<MyRevenue, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let balances = revenue::balances_of(db, viewer.user_id).await?;
    let rows = revenue::allocations_of_user(db, viewer.user_id, None, first).await?;
    let mine = payout_service::list(db, Some(viewer.user_id), first).await?;
    Ok(MyRevenue {
        balances,
        allocations: allocation_rows(db, rows).await?,
        payouts: payout_rows(db, mine).await?,
        account: payout_service::account_of(db, viewer.user_id).await?,
    })
}

/// A niche's revenue: totals, newest events, members' shares and the caller's allocations (its
/// active members and admins).
pub async fn niche_revenue(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
    first: u64,
) -> Result<NicheRevenue, ServiceError> {
    let niche = member_niche(db, viewer, slug).await?;
    let (gross, net, count) = revenue::niche_totals(db, niche.id).await?;
    let reversed = revenue::reversed_events_of(db, niche.id).await?;
    let (gross, net, count) = reversed.iter().fold((gross, net, count), |(g, n, c), e| {
        (g - e.gross_minor, n - e.net_minor, c - 1)
    });
    let recent = revenue::events_of(db, Some(niche.id), first).await?;
    let ladder = scores::ladder(db).await?;
    let shares = standing::niche_shares(db, niche.id, &ladder).await?;
    let handles = names::handles(db, shares.iter().map(|(u, _)| *u)).await?;
    let mine = match viewer {
        Some(v) => revenue::allocations_of_user(db, v.user_id, Some(niche.id), first).await?,
        None => Vec::new(),
    };
    Ok(NicheRevenue {
        gross,
        net,
        count,
        recent,
        reversed,
        shares: shares
            .into_iter()
            .map(|(user, bps)| {
                (
                    handles.get(&user).cloned().unwrap_or_default(),
                    i64::from(bps),
                )
            })
            .collect(),
        mine: allocation_rows(db, mine).await?,
        niche,
    })
}

/// Revenue events across niches with their slugs, newest first (admins only).
pub async fn revenue_events(
    db: &Db,
    viewer: Option<&Viewer>,
    first: u64,
) -> Result<Vec<(revenue_events::Model, String)>, ServiceError> {
    access::admin(viewer)?;
    let events = revenue::events_of(db, None, first).await?;
    let slugs = names::slugs(db, events.iter().map(|e| e.niche_id)).await?;
    Ok(events
        .into_iter()
        .map(|e| {
            let slug = slugs.get(&e.niche_id).cloned().unwrap_or_default();
            (e, slug)
        })
        .collect())
}

/// Everyone's payout addresses with their handles, unverified first (admins only).
pub async fn payout_accounts(
    db: &Db,
    viewer: Option<&Viewer>,
) -> Result<Vec<(payout_accounts::Model, String)>, ServiceError> {
    access::admin(viewer)?;
    payout_service::accounts(db).await
}

/// Payouts, newest first (admins only).
pub async fn payouts(
    db: &Db,
    viewer: Option<&Viewer>,
    first: u64,
) -> Result<Vec<PayoutRow>, ServiceError> {
    access::admin(viewer)?;
    let rows = payout_service::list(db, None, first).await?;
    payout_rows(db, rows).await
}

/// Anomaly signals, newest first (admins only).
pub async fn anomaly_signals(
    db: &Db,
    viewer: Option<&Viewer>,
    first: u64,
) -> Result<Vec<anomaly_signals::Model>, ServiceError> {
    access::admin(viewer)?;
    signals::list(db, None, first).await
}

/// Set a niche's monthly budget and bounties (admins only; audited), and return its budget.
pub async fn set_niche_budget(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
    settings: NicheBudget,
    now: DateTime<Utc>,
) -> Result<BudgetView, ServiceError> {
    let admin = access::admin(viewer)?;
    apply_niche_budget(db, &Actor::User(admin.user_id), slug, settings, now).await
}

/// Set a niche's monthly budget and bounties as `actor` (the caller has checked who may), audited,
/// and return its budget.
pub async fn apply_niche_budget(
    db: &Db,
    actor: &Actor,
    slug: &str,
    settings: NicheBudget,
    now: DateTime<Utc>,
) -> Result<BudgetView, ServiceError> {
    let NicheBudget {
        monthly_budget_minor,
        bounty_minor,
        max_bounty_minor,
        reuse_price_minor,
    } = settings;
    let problem = [
        ("monthlyBudgetMinor", monthly_budget_minor.unwrap_or(0)),
        ("bountyMinor", bounty_minor),
        ("maxBountyMinor", max_bounty_minor),
        ("reusePriceMinor", reuse_price_minor.unwrap_or(0)),
    ]
    .into_iter()
    .find_map(|(field, amount)| crate::domain::ledger::amount_problem(field, amount));
    if let Some(problem) = problem {
        return Err(ServiceError::BadInput(problem));
    }
    if bounty_minor > max_bounty_minor {
        return Err(ServiceError::BadInput(
            "the default bounty cannot be above the largest bounty".into(),
        ));
    }
    let niche = niche_by_slug(db, slug).await?;
    let reuse_price_minor = reuse_price_minor.unwrap_or(niche.reuse_price_minor);
    let txn = db.begin_write().await?;
    niches::Entity::update_many()
        .col_expr(
            niches::Column::MonthlyBudgetMinor,
            Expr::value(monthly_budget_minor),
        )
        .col_expr(niches::Column::BountyMinor, Expr::value(bounty_minor))
        .col_expr(
            niches::Column::MaxBountyMinor,
            Expr::value(max_bounty_minor),
        )
        .col_expr(
            niches::Column::ReusePriceMinor,
            Expr::value(reuse_price_minor),
        )
        .col_expr(niches::Column::UpdatedAt, Expr::value(now))
        .filter(niches::Column::Id.eq(niche.id))
        .exec(&txn)
        .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "budget.set",
            subject_type: "niche",
            subject_id: niche.id,
            niche_id: Some(niche.id),
            detail: json!({
                "monthlyBudgetMinor": monthly_budget_minor,
                "bountyMinor": bounty_minor,
                "maxBountyMinor": max_bounty_minor,
                "reusePriceMinor": reuse_price_minor,
            }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    let niche = niche_by_slug(db, slug).await?;
    budget_of_niche(db, niche, now).await
}
