//! The ledger views: a niche's budget, my revenue, a niche's revenue; for admins the revenue
//! events, the anomaly signals (with a live subscription) and the audit log; and the admin mutation
//! that sets a niche's budget and bounties. Their rules: docs/contract.md#revenue-and-payouts,
//! docs/contract.md#budgets-and-bounties and docs/contract.md#anomaly-signals.

use std::time::Duration;

use async_graphql::{Context, Enum, ID, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use entity::allocations::AllocationStatus;
use entity::budget_entries::{self, BudgetEntryKind};
use entity::payouts::{self as payout_rows, PayoutStatus};
use entity::{
    allocations, anomaly_signals, audit_log, niches, payout_accounts, revenue_events, users,
};
use futures::Stream;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::json;

use super::admin::admin_write;
use super::caller_of;
use crate::db::begin_write;
use crate::domain::ledger::{self, BudgetState as LedgerState};
use crate::error::{GqlResultExt, ServiceError};
use crate::service::access::{self, Viewer};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::queue::{niche_by_slug, page_size};
use crate::service::{budget, payouts, revenue, scores, signals, standing};

/// How a budget stands.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
pub enum BudgetState {
    /// Plenty left, or no limit.
    Ample,
    /// Less than a fifth left.
    Tight,
    /// Nothing left.
    Exhausted,
}

impl From<LedgerState> for BudgetState {
    fn from(state: LedgerState) -> Self {
        match state {
            LedgerState::Ample => BudgetState::Ample,
            LedgerState::Tight => BudgetState::Tight,
            LedgerState::Exhausted => BudgetState::Exhausted,
        }
    }
}

/// One line of a niche's budget ledger.
#[derive(SimpleObject, Clone)]
pub struct BudgetEntry {
    /// `reserve`, `charge` or `release`.
    pub kind: String,
    /// How much, minor units.
    pub amount_minor: i64,
    /// The question whose bounty it is.
    pub question_id: ID,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl From<budget_entries::Model> for BudgetEntry {
    fn from(e: budget_entries::Model) -> Self {
        Self {
            kind: match e.kind {
                BudgetEntryKind::Reserve => "reserve",
                BudgetEntryKind::Charge => "charge",
                BudgetEntryKind::Release => "release",
            }
            .to_owned(),
            amount_minor: e.amount_minor,
            question_id: ID(e.question_id.to_string()),
            created_at: e.created_at,
        }
    }
}

/// A niche's agent budget this month.
#[derive(SimpleObject, Clone)]
pub struct Budget {
    /// The niche.
    pub niche_slug: String,
    /// The monthly limit; null is no limit.
    pub limit_minor: Option<i64>,
    /// Charged this month.
    pub spent_minor: i64,
    /// Reserved and not yet charged or released.
    pub reserved_minor: i64,
    /// What is left; null without a limit.
    pub remaining_minor: Option<i64>,
    /// Ample, tight or exhausted.
    pub state: BudgetState,
    /// When the month starts again.
    pub resets_at: DateTime<Utc>,
    /// The bounty a question gets unless it names its own.
    pub bounty_minor: i64,
    /// The largest bounty a question may carry.
    pub max_bounty_minor: i64,
    /// This month's entries, newest first.
    pub entries: Vec<BudgetEntry>,
}

/// An allocation of revenue.
#[derive(SimpleObject, Clone)]
pub struct Allocation {
    /// Its id.
    pub id: ID,
    /// The niche's slug.
    pub niche_slug: String,
    /// The person's handle; null for the platform.
    pub handle: Option<String>,
    /// The share applied, basis points (as at finalisation).
    pub share_bps: i32,
    /// The amount, minor units.
    pub amount_minor: i64,
    /// `accrued`, `scheduled`, `paid` or `reversed`.
    pub status: String,
    /// The event's source.
    pub source_type: String,
    /// The event's currency.
    pub currency: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A revenue event.
#[derive(SimpleObject, Clone)]
pub struct RevenueEvent {
    /// Its id.
    pub id: ID,
    /// The niche's slug.
    pub niche_slug: String,
    /// The source's id.
    pub external_id: String,
    /// Where it came from.
    pub source_type: String,
    /// Gross, minor units.
    pub gross_minor: i64,
    /// Net of costs.
    pub net_minor: i64,
    /// ISO 4217.
    pub currency: String,
    /// When it was booked.
    pub created_at: DateTime<Utc>,
}

/// A payout.
#[derive(SimpleObject, Clone)]
pub struct Payout {
    /// Its id.
    pub id: ID,
    /// Who is paid.
    pub handle: String,
    /// How much, minor units.
    pub amount_minor: i64,
    /// ISO 4217.
    pub currency: String,
    /// `scheduled`, `paid` or `failed`.
    pub status: String,
    /// Where it goes.
    pub address: String,
    /// The settlement's reference, once paid.
    pub external_reference: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// When it was scheduled.
    pub created_at: DateTime<Utc>,
    /// When it was paid or failed.
    pub settled_at: Option<DateTime<Utc>>,
}

/// Where a person wants to be paid.
#[derive(SimpleObject, Clone)]
pub struct PayoutAccount {
    /// Whose it is.
    pub handle: Option<String>,
    /// The address.
    pub address: String,
    /// Whether an admin verified it (a change clears this).
    pub verified: bool,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<payout_accounts::Model> for PayoutAccount {
    fn from(a: payout_accounts::Model) -> Self {
        Self {
            handle: None,
            address: a.address,
            verified: a.verified_at.is_some(),
            updated_at: a.updated_at,
        }
    }
}

async fn payout_views(
    db: &DatabaseConnection,
    rows: Vec<payout_rows::Model>,
) -> Result<Vec<Payout>, ServiceError> {
    let handles: std::collections::HashMap<i64, String> = users::Entity::find()
        .filter(users::Column::Id.is_in(rows.iter().map(|p| p.user_id)))
        .all(db)
        .await?
        .into_iter()
        .map(|u| (u.id, u.handle))
        .collect();
    Ok(rows
        .into_iter()
        .map(|p| Payout {
            id: ID(p.id.to_string()),
            handle: handles.get(&p.user_id).cloned().unwrap_or_default(),
            amount_minor: p.amount_minor,
            currency: p.currency,
            status: match p.status {
                PayoutStatus::Scheduled => "scheduled",
                PayoutStatus::Paid => "paid",
                PayoutStatus::Failed => "failed",
            }
            .to_owned(),
            address: p.address,
            external_reference: p.external_reference,
            failure_reason: p.failure_reason,
            created_at: p.created_at,
            settled_at: p.settled_at,
        })
        .collect())
}

fn payout_id(id: &ID) -> Result<i64, ServiceError> {
    id.parse()
        .map_err(|_| ServiceError::BadInput(format!("'{}' is not a payout id", id.as_str())))
}

/// My money in one currency, by where it is.
#[derive(SimpleObject, Clone)]
pub struct Balance {
    /// ISO 4217.
    pub currency: String,
    /// Accrued and not yet in a payout.
    pub owed_minor: i64,
    /// In a scheduled payout.
    pub in_flight_minor: i64,
    /// Paid out.
    pub paid_minor: i64,
    /// Reversed.
    pub reversed_minor: i64,
}

/// My money, by currency and where it is, with my allocations and payouts.
#[derive(SimpleObject, Clone)]
pub struct MyRevenue {
    /// One balance per currency I have money in.
    pub balances: Vec<Balance>,
    /// My allocations, newest first.
    pub allocations: Vec<Allocation>,
    /// My payouts, newest first.
    pub payouts: Vec<Payout>,
    /// Where I want to be paid.
    pub payout_account: Option<PayoutAccount>,
}

/// A member's current share of a niche.
#[derive(SimpleObject, Clone)]
pub struct MemberShare {
    /// Their handle.
    pub handle: String,
    /// Basis points of the niche's revenue.
    pub share_bps: i64,
}

/// A niche's revenue.
#[derive(SimpleObject, Clone)]
pub struct NicheRevenue {
    /// The niche.
    pub niche_slug: String,
    /// Gross over all events.
    pub gross_minor: i64,
    /// Net over all events.
    pub net_minor: i64,
    /// How many events.
    pub event_count: i64,
    /// The latest events.
    pub recent_events: Vec<RevenueEvent>,
    /// Members' shares now (future events are split by these).
    pub shares: Vec<MemberShare>,
    /// My allocations in this niche, newest first.
    pub my_allocations: Vec<Allocation>,
}

/// An anomaly signal (the finding is untrusted text).
#[derive(SimpleObject, Clone)]
pub struct AnomalySignal {
    /// Its id.
    pub id: ID,
    /// The monitor's id.
    pub signal_id: String,
    /// `question`, `answer`, `operator` or `agent`.
    pub subject_type: String,
    /// The subject's id.
    pub subject_id: String,
    /// What kind of anomaly.
    pub kind: String,
    /// `low`, `medium`, `high` or `critical`.
    pub severity: String,
    /// What was found.
    pub finding: String,
    /// When it arrived.
    pub received_at: DateTime<Utc>,
}

impl From<anomaly_signals::Model> for AnomalySignal {
    fn from(s: anomaly_signals::Model) -> Self {
        Self {
            id: ID(s.id.to_string()),
            signal_id: s.signal_id,
            subject_type: s.subject_type,
            subject_id: s.subject_id,
            kind: s.kind,
            severity: s.severity,
            finding: s.finding,
            received_at: s.received_at,
        }
    }
}

/// One row of the audit log.
#[derive(SimpleObject, Clone)]
pub struct AuditEntryView {
    /// Its id.
    pub id: ID,
    /// Who (`user:<id>`, `agent:<id>`, `system`, `cli`).
    pub actor: String,
    /// What happened.
    pub action: String,
    /// The kind of subject.
    pub subject_type: String,
    /// The subject's id.
    pub subject_id: String,
    /// Details (JSON text).
    pub detail: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

fn allocation_status_word(status: AllocationStatus) -> &'static str {
    match status {
        AllocationStatus::Accrued => "accrued",
        AllocationStatus::Scheduled => "scheduled",
        AllocationStatus::Paid => "paid",
        AllocationStatus::Reversed => "reversed",
    }
}

/// Allocation views with their niche slugs, handles and events' details.
async fn allocation_views(
    db: &DatabaseConnection,
    rows: Vec<allocations::Model>,
) -> Result<Vec<Allocation>, ServiceError> {
    let niche_slugs: std::collections::HashMap<i64, String> = niches::Entity::find()
        .filter(niches::Column::Id.is_in(rows.iter().map(|a| a.niche_id)))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.slug))
        .collect();
    let handles: std::collections::HashMap<i64, String> = users::Entity::find()
        .filter(users::Column::Id.is_in(rows.iter().filter_map(|a| a.user_id)))
        .all(db)
        .await?
        .into_iter()
        .map(|u| (u.id, u.handle))
        .collect();
    let events: std::collections::HashMap<i64, revenue_events::Model> =
        revenue_events::Entity::find()
            .filter(revenue_events::Column::Id.is_in(rows.iter().map(|a| a.revenue_event_id)))
            .all(db)
            .await?
            .into_iter()
            .map(|e| (e.id, e))
            .collect();
    Ok(rows
        .into_iter()
        .map(|a| {
            let event = events.get(&a.revenue_event_id);
            Allocation {
                id: ID(a.id.to_string()),
                niche_slug: niche_slugs.get(&a.niche_id).cloned().unwrap_or_default(),
                handle: a.user_id.and_then(|u| handles.get(&u).cloned()),
                share_bps: a.share_bps,
                amount_minor: a.amount_minor,
                status: allocation_status_word(a.status).to_owned(),
                source_type: event.map(|e| e.source_type.clone()).unwrap_or_default(),
                currency: event.map(|e| e.currency.clone()).unwrap_or_default(),
                created_at: a.created_at,
            }
        })
        .collect())
}

fn event_view(e: revenue_events::Model, slug: &str) -> RevenueEvent {
    RevenueEvent {
        id: ID(e.id.to_string()),
        niche_slug: slug.to_owned(),
        external_id: e.external_id,
        source_type: e.source_type,
        gross_minor: e.gross_minor,
        net_minor: e.net_minor,
        currency: e.currency,
        created_at: e.created_at,
    }
}

/// The niche named `slug` if the caller may see its money: its active members and admins.
async fn member_niche(
    db: &DatabaseConnection,
    viewer: Option<&Viewer>,
    slug: &str,
) -> Result<niches::Model, ServiceError> {
    let niche = niche_by_slug(db, slug).await?;
    access::can_read_questions(db, viewer, &niche).await?;
    Ok(niche)
}

/// The budget of `niche` as GraphQL shows it.
pub async fn budget_view(
    db: &DatabaseConnection,
    niche: &niches::Model,
    now: DateTime<Utc>,
) -> Result<Budget, ServiceError> {
    let state = budget::budget_of(db, niche, now).await?;
    let entries = budget::entries_of(db, niche.id, &ledger::month_of(now), 100).await?;
    Ok(Budget {
        niche_slug: niche.slug.clone(),
        limit_minor: state.limit,
        spent_minor: state.spent,
        reserved_minor: state.reserved,
        remaining_minor: state.remaining(),
        state: state.state().into(),
        resets_at: ledger::resets_at(now),
        bounty_minor: niche.bounty_minor,
        max_bounty_minor: niche.max_bounty_minor,
        entries: entries.into_iter().map(BudgetEntry::from).collect(),
    })
}

/// Money queries.
#[derive(Default)]
pub struct MoneyQuery;

#[Object]
impl MoneyQuery {
    /// A niche's agent budget this month, with its entries (its active members and admins).
    async fn budget(&self, ctx: &Context<'_>, niche_slug: String) -> Result<Budget> {
        let db = ctx.data::<DatabaseConnection>()?;
        let niche = member_niche(db, caller_of(ctx)?.viewer(), &niche_slug)
            .await
            .gql()?;
        budget_view(db, &niche, Utc::now()).await.gql()
    }

    /// My revenue: balances by where the money is, and my allocations.
    async fn my_revenue(&self, ctx: &Context<'_>, first: Option<i32>) -> Result<MyRevenue> {
        let db = ctx.data::<DatabaseConnection>()?;
        let viewer = access::signed_in(caller_of(ctx)?.viewer()).gql()?;
        let first = page_size(first).gql()?;
        let balances = revenue::balances_of(db, viewer.user_id).await.gql()?;
        let rows = revenue::allocations_of_user(db, viewer.user_id, None, first)
            .await
            .gql()?;
        let mine = payouts::list(db, Some(viewer.user_id), first).await.gql()?;
        Ok(MyRevenue {
            balances: balances
                .into_iter()
                .map(|b| Balance {
                    currency: b.currency,
                    owed_minor: b.owed,
                    in_flight_minor: b.in_flight,
                    paid_minor: b.paid,
                    reversed_minor: b.reversed,
                })
                .collect(),
            allocations: allocation_views(db, rows).await.gql()?,
            payouts: payout_views(db, mine).await.gql()?,
            payout_account: payouts::account_of(db, viewer.user_id)
                .await
                .gql()?
                .map(PayoutAccount::from),
        })
    }

    /// A niche's revenue: totals, recent events, members' shares and my allocations (its
    /// active members and admins).
    async fn niche_revenue(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        first: Option<i32>,
    ) -> Result<NicheRevenue> {
        let db = ctx.data::<DatabaseConnection>()?;
        let viewer = caller_of(ctx)?.viewer();
        let niche = member_niche(db, viewer, &niche_slug).await.gql()?;
        let first = page_size(first).gql()?;
        let (gross, net, count) = revenue::niche_totals(db, niche.id).await.gql()?;
        let recent = revenue::events_of(db, Some(niche.id), first).await.gql()?;
        let ladder = scores::ladder(db).await.gql()?;
        let shares = standing::niche_shares(db, niche.id, &ladder).await.gql()?;
        let handles: std::collections::HashMap<i64, String> = users::Entity::find()
            .filter(users::Column::Id.is_in(shares.iter().map(|(u, _)| *u)))
            .all(db)
            .await?
            .into_iter()
            .map(|u| (u.id, u.handle))
            .collect();
        let mine = match viewer {
            Some(v) => revenue::allocations_of_user(db, v.user_id, Some(niche.id), first)
                .await
                .gql()?,
            None => Vec::new(),
        };
        Ok(NicheRevenue {
            niche_slug: niche.slug.clone(),
            gross_minor: gross,
            net_minor: net,
            event_count: count,
            recent_events: recent
                .into_iter()
                .map(|e| event_view(e, &niche.slug))
                .collect(),
            shares: shares
                .into_iter()
                .map(|(user, bps)| MemberShare {
                    handle: handles.get(&user).cloned().unwrap_or_default(),
                    share_bps: i64::from(bps),
                })
                .collect(),
            my_allocations: allocation_views(db, mine).await.gql()?,
        })
    }

    /// Revenue events across niches, newest first (admins only).
    async fn revenue_events(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> Result<Vec<RevenueEvent>> {
        let db = ctx.data::<DatabaseConnection>()?;
        access::admin(caller_of(ctx)?.viewer()).gql()?;
        let first = page_size(first).gql()?;
        let events = revenue::events_of(db, None, first).await.gql()?;
        let slugs: std::collections::HashMap<i64, String> = niches::Entity::find()
            .filter(niches::Column::Id.is_in(events.iter().map(|e| e.niche_id)))
            .all(db)
            .await?
            .into_iter()
            .map(|n| (n.id, n.slug))
            .collect();
        Ok(events
            .into_iter()
            .map(|e| {
                let slug = slugs.get(&e.niche_id).cloned().unwrap_or_default();
                event_view(e, &slug)
            })
            .collect())
    }

    /// Everyone's payout addresses, unverified first (admins only).
    async fn payout_accounts(&self, ctx: &Context<'_>) -> Result<Vec<PayoutAccount>> {
        let db = ctx.data::<DatabaseConnection>()?;
        access::admin(caller_of(ctx)?.viewer()).gql()?;
        Ok(payouts::accounts(db)
            .await
            .gql()?
            .into_iter()
            .map(|(account, handle)| PayoutAccount {
                handle: Some(handle),
                ..account.into()
            })
            .collect())
    }

    /// Payouts, newest first (admins only).
    async fn payouts(&self, ctx: &Context<'_>, first: Option<i32>) -> Result<Vec<Payout>> {
        let db = ctx.data::<DatabaseConnection>()?;
        access::admin(caller_of(ctx)?.viewer()).gql()?;
        let first = page_size(first).gql()?;
        let rows = payouts::list(db, None, first).await.gql()?;
        payout_views(db, rows).await.gql()
    }

    /// Anomaly signals, newest first (admins only).
    async fn anomaly_signals(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> Result<Vec<AnomalySignal>> {
        let db = ctx.data::<DatabaseConnection>()?;
        access::admin(caller_of(ctx)?.viewer()).gql()?;
        let first = page_size(first).gql()?;
        Ok(signals::list(db, None, first)
            .await
            .gql()?
            .into_iter()
            .map(AnomalySignal::from)
            .collect())
    }

    /// The audit log, newest first, optionally of one kind of subject (admins only).
    async fn audit_log(
        &self,
        ctx: &Context<'_>,
        subject_type: Option<String>,
        first: Option<i32>,
    ) -> Result<Vec<AuditEntryView>> {
        let db = ctx.data::<DatabaseConnection>()?;
        access::admin(caller_of(ctx)?.viewer()).gql()?;
        let first = page_size(first).gql()?;
        let mut query = audit_log::Entity::find();
        if let Some(kind) = subject_type {
            query = query.filter(audit_log::Column::SubjectType.eq(kind));
        }
        Ok(query
            .order_by_desc(audit_log::Column::Id)
            .limit(first)
            .all(db)
            .await?
            .into_iter()
            .map(|e| AuditEntryView {
                id: ID(e.id.to_string()),
                actor: e.actor,
                action: e.action,
                subject_type: e.subject_type,
                subject_id: e.subject_id,
                detail: e.detail.to_string(),
                created_at: e.created_at,
            })
            .collect())
    }
}

/// Money mutations.
#[derive(Default)]
pub struct MoneyMutation;

#[Object]
impl MoneyMutation {
    /// Set a niche's monthly agent budget (null: no limit), its default bounty and its largest
    /// bounty (admins only; audited).
    async fn set_niche_budget(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        monthly_budget_minor: Option<i64>,
        bounty_minor: i64,
        max_bounty_minor: i64,
    ) -> Result<Budget> {
        let (db, _, admin) = admin_write(ctx)?;
        let now = Utc::now();
        if monthly_budget_minor.is_some_and(|b| b < 0) || bounty_minor < 0 || max_bounty_minor < 0 {
            return Err(ServiceError::BadInput("amounts cannot be negative".into())).gql();
        }
        if bounty_minor > max_bounty_minor {
            return Err(ServiceError::BadInput(
                "the default bounty cannot be above the largest bounty".into(),
            ))
            .gql();
        }
        let niche = niche_by_slug(db, &niche_slug).await.gql()?;
        let txn = begin_write(db).await?;
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
            .col_expr(niches::Column::UpdatedAt, Expr::value(now))
            .filter(niches::Column::Id.eq(niche.id))
            .exec(&txn)
            .await?;
        audit::record(
            &txn,
            AuditEntry {
                actor: &Actor::User(admin.user_id),
                action: "budget.set",
                subject_type: "niche",
                subject_id: niche.id,
                niche_id: Some(niche.id),
                detail: json!({
                    "monthlyBudgetMinor": monthly_budget_minor,
                    "bountyMinor": bounty_minor,
                    "maxBountyMinor": max_bounty_minor,
                }),
            },
            now,
        )
        .await?;
        txn.commit().await?;
        let niche = niche_by_slug(db, &niche_slug).await.gql()?;
        budget_view(db, &niche, now).await.gql()
    }
}

/// Payout mutations: my address; for admins verification, scheduling and settlement.
#[derive(Default)]
pub struct PayoutMutation;

#[Object]
impl PayoutMutation {
    /// Save where I want to be paid; a changed address must be verified again.
    async fn set_payout_address(
        &self,
        ctx: &Context<'_>,
        address: String,
    ) -> Result<PayoutAccount> {
        let db = ctx.data::<DatabaseConnection>()?;
        let caller = caller_of(ctx)?;
        let viewer = access::signed_in(caller.viewer()).gql()?;
        caller.check_write().gql()?;
        Ok(payouts::set_address(db, viewer, &address, Utc::now())
            .await
            .gql()?
            .into())
    }

    /// Verify a person's payout address: `address` is the one checked; nothing is verified if
    /// theirs is different now (admins only).
    async fn verify_payout_address(
        &self,
        ctx: &Context<'_>,
        handle: String,
        address: String,
    ) -> Result<PayoutAccount> {
        let (db, _, admin) = admin_write(ctx)?;
        Ok(
            payouts::verify_address(db, admin, &handle, &address, Utc::now())
                .await
                .gql()?
                .into(),
        )
    }

    /// Gather everything owed to a person in one currency into a payout (admins only).
    async fn schedule_payout(
        &self,
        ctx: &Context<'_>,
        handle: String,
        #[graphql(default = "USD")] currency: String,
    ) -> Result<Payout> {
        let (db, _, admin) = admin_write(ctx)?;
        let payout = payouts::schedule(db, admin, &handle, &currency, Utc::now())
            .await
            .gql()?;
        Ok(payout_views(db, vec![payout]).await.gql()?.remove(0))
    }

    /// Record that a payout was paid, with the settlement's unique reference (admins only).
    async fn mark_payout_paid(
        &self,
        ctx: &Context<'_>,
        id: ID,
        external_reference: String,
    ) -> Result<Payout> {
        let (db, _, admin) = admin_write(ctx)?;
        let id = payout_id(&id).gql()?;
        let payout = payouts::mark_paid(db, admin, id, &external_reference, Utc::now())
            .await
            .gql()?;
        Ok(payout_views(db, vec![payout]).await.gql()?.remove(0))
    }

    /// Record that a payout failed: its allocations are owed again (admins only).
    async fn mark_payout_failed(
        &self,
        ctx: &Context<'_>,
        id: ID,
        reason: String,
    ) -> Result<Payout> {
        let (db, _, admin) = admin_write(ctx)?;
        let id = payout_id(&id).gql()?;
        let payout = payouts::mark_failed(db, admin, id, &reason, Utc::now())
            .await
            .gql()?;
        Ok(payout_views(db, vec![payout]).await.gql()?.remove(0))
    }
}

/// How many of the newest signals the live subscription looks at on each read.
const WINDOW: u64 = 200;

/// Money subscriptions.
#[derive(Default)]
pub struct MoneySubscription;

#[Subscription]
impl MoneySubscription {
    /// New anomaly signals as they arrive (admins only). The log is read every second, so
    /// signals received by any instance arrive.
    async fn anomaly_signals(
        &self,
        ctx: &Context<'_>,
    ) -> Result<impl Stream<Item = Result<AnomalySignal>> + use<>> {
        let db = ctx.data::<DatabaseConnection>()?.clone();
        access::admin(caller_of(ctx)?.viewer()).gql()?;
        // Signals are read newest first and those not seen yet are sent, oldest first: one
        // committed after a later-numbered one (PostgreSQL hands out ids before commit) is
        // still within the window the next read looks at.
        let seen: std::collections::HashSet<i64> = signals::list(&db, None, WINDOW)
            .await
            .gql()?
            .into_iter()
            .map(|s| s.id)
            .collect();
        Ok(futures::stream::unfold(
            (
                db,
                seen,
                std::collections::VecDeque::<anomaly_signals::Model>::new(),
            ),
            |(db, mut seen, mut pending)| async move {
                loop {
                    if let Some(next) = pending.pop_front() {
                        return Some((Ok(AnomalySignal::from(next)), (db, seen, pending)));
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    match signals::list(&db, None, WINDOW).await {
                        Ok(mut rows) => {
                            // Ids older than the window can no longer come back: forget them.
                            if rows.len() as u64 == WINDOW
                                && let Some(oldest) = rows.iter().map(|s| s.id).min()
                            {
                                seen.retain(|id| *id >= oldest);
                            }
                            rows.retain(|s| seen.insert(s.id));
                            rows.sort_by_key(|s| s.id);
                            pending.extend(rows);
                        }
                        Err(err) => {
                            use async_graphql::ErrorExtensions;
                            return Some((Err(err.extend()), (db, seen, pending)));
                        }
                    }
                }
            },
        ))
    }
}
