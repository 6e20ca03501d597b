//! The ledger views: a niche's budget, my revenue, a niche's revenue; for admins the revenue
//! events, the anomaly signals (with a live subscription) and the audit log; and the admin mutation
//! that sets a niche's budget and bounties. Their rules: docs/contract.md#revenue-and-payouts,
//! docs/contract.md#budgets-and-bounties and docs/contract.md#anomaly-signals.

use crate::db::Db;
use async_graphql::connection::{Connection, Edge};
use async_graphql::{ComplexObject, Context, Enum, ID, Object, Result, SimpleObject, Subscription};
use chrono::{DateTime, Utc};
use entity::{anomaly_signals, budget_entries, payout_accounts, revenue_events};
use futures::{Stream, StreamExt};

use super::enums::{AllocationStatus, BudgetEntryKind, PayoutStatus, Severity, SignalSubject};
use super::{caller_of, writer};
use crate::domain::ledger::BudgetState as LedgerState;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::live::LiveHub;
use crate::service::money::ledger_views::{
    self, AllocationRow, BudgetView, NicheBudget, PayoutRow,
};
use crate::service::questions::queue::page_size;
use crate::service::{money::payouts, money::signals, people::access, people::admin_desk};

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
    /// What the line records.
    pub kind: BudgetEntryKind,
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
            kind: e.kind.into(),
            amount_minor: e.amount_minor,
            question_id: ID(e.question_id.to_string()),
            created_at: e.created_at,
        }
    }
}

/// What one exchange reserved, cost and released over its life (reserved = actual + released +
/// still reserved, counting a charge given back as never charged).
#[derive(SimpleObject, Clone)]
pub struct ExchangeCost {
    /// The question or task.
    pub question_id: ID,
    /// Its title: UNTRUSTED text.
    pub title: String,
    /// A question or a task.
    pub kind: super::enums::ExchangeKind,
    /// Its limit: a task's budget limit, a question's bounty.
    pub limit_minor: i64,
    /// Everything reserved for it (more than the limit if it was reopened and reserved again).
    pub reserved_minor: i64,
    /// What it actually cost: charged, less any charge given back.
    pub actual_minor: i64,
    /// Released back to the budget.
    pub released_minor: i64,
    /// Still reserved.
    pub outstanding_minor: i64,
}

impl From<ledger_views::ExchangeCost> for ExchangeCost {
    fn from(e: ledger_views::ExchangeCost) -> Self {
        Self {
            question_id: ID(e.question_id.to_string()),
            title: e.title,
            kind: e.kind.into(),
            limit_minor: e.limit,
            reserved_minor: e.reserved,
            actual_minor: e.actual,
            released_minor: e.released,
            outstanding_minor: e.outstanding,
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
    /// What one reuse of the niche's knowledge costs an agent (0: free).
    pub reuse_price_minor: i64,
    /// This month's entries, newest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub entries: Vec<BudgetEntry>,
    /// The exchanges whose budget moved this month (at most 100), most recently moved first:
    /// limit, actual cost and released for each.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub exchanges: Vec<ExchangeCost>,
    /// Spent this month on questions' bounties (charges less charges given back).
    pub question_spend_minor: i64,
    /// Spent this month on tasks' actual costs (charges less charges given back).
    pub task_spend_minor: i64,
    /// Spent this month on reuses of the niche's knowledge (less reuses given back).
    pub reuse_spend_minor: i64,
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
    /// The amount, minor units (negative for a clawback).
    pub amount_minor: i64,
    /// Where its money is.
    pub status: AllocationStatus,
    /// For a clawback: the allocation it takes back (its answer was reversed after it was paid
    /// out or while it was in a payout).
    pub claws_back: Option<ID>,
    /// The event's source.
    pub source_type: String,
    /// The revenue event it is a part of.
    pub revenue_event_id: ID,
    /// The question the event paid for (a bounty or a reuse), if any.
    pub question_id: Option<ID>,
    /// The payout it is in, once scheduled.
    pub payout_id: Option<ID>,
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
    /// The question it paid for (a bounty or a reuse), if any.
    pub question_id: Option<ID>,
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
    /// Where it is.
    pub status: PayoutStatus,
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

fn payout_view(row: PayoutRow) -> Payout {
    let p = row.payout;
    Payout {
        id: ID(p.id.to_string()),
        handle: row.handle,
        amount_minor: p.amount_minor,
        currency: p.currency,
        status: p.status.into(),
        address: p.address,
        external_reference: p.external_reference,
        failure_reason: p.failure_reason,
        created_at: p.created_at,
        settled_at: p.settled_at,
    }
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
    /// Accrued and not yet in a payout; clawbacks of reversed answers count against it, so it
    /// is negative while the person owes more than they are owed.
    pub owed_minor: i64,
    /// Held until the answers it is for are verified (not owed, in no payout).
    pub held_minor: i64,
    /// In a scheduled payout.
    pub in_flight_minor: i64,
    /// Paid out.
    pub paid_minor: i64,
    /// Reversed.
    pub reversed_minor: i64,
}

// Its lists are the page `myRevenue(first)` asks for; that field's cost counts them.
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

// Its lists are the page `nicheRevenue(first)` asks for; that field's cost counts them.
/// A niche's revenue.
#[derive(SimpleObject, Clone)]
pub struct NicheRevenue {
    /// The niche.
    pub niche_slug: String,
    /// Gross over the events that stand: a reversed event (a rejected or reversed answer's
    /// bounty, whose charge the budget gives back; a retracted entry's reuse) is not counted.
    pub gross_minor: i64,
    /// Net over the events that stand.
    pub net_minor: i64,
    /// How many events stand.
    pub event_count: i64,
    /// The gross of the reversed events (not in `grossMinor`).
    pub reversed_gross_minor: i64,
    /// The events reversed after they were booked, newest first.
    pub reversed_events: Vec<RevenueEvent>,
    /// The latest events (reversed ones included; `reversedEvents` names them).
    pub recent_events: Vec<RevenueEvent>,
    /// Members' shares now (future events are split by these).
    pub shares: Vec<MemberShare>,
    /// My allocations in this niche, newest first.
    pub my_allocations: Vec<Allocation>,
}

/// An anomaly signal (the finding is untrusted text).
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct AnomalySignal {
    /// Its id.
    pub id: ID,
    /// The monitor's id.
    pub signal_id: String,
    /// What it is about.
    pub subject_type: SignalSubject,
    /// The subject's id.
    pub subject_id: String,
    /// What kind of anomaly.
    pub kind: String,
    /// How serious it is.
    pub severity: Severity,
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
            // Both words are checked when the signal arrives; a row edited by hand to something
            // else is shown at its most alarming rather than hidden.
            subject_type: SignalSubject::from_stored(&s.subject_type).unwrap_or_else(|| {
                tracing::warn!(id = s.id, word = %s.subject_type, "unknown signal subject");
                SignalSubject::Operator
            }),
            subject_id: s.subject_id,
            kind: s.kind,
            severity: Severity::from_stored(&s.severity).unwrap_or_else(|| {
                tracing::warn!(id = s.id, word = %s.severity, "unknown signal severity");
                Severity::Critical
            }),
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
    /// Who, as people name them: a person's handle, else the label itself.
    pub actor_name: String,
    /// What happened.
    pub action: String,
    /// The kind of subject.
    pub subject_type: String,
    /// The subject's id.
    pub subject_id: String,
    /// The subject as people name it (`contribution 12`, a person's handle).
    pub subject_name: String,
    /// Details (JSON text).
    pub detail: String,
    /// The details in words, one pair per detail.
    pub details: Vec<AuditDetail>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// One detail of an audit entry, in words.
#[derive(SimpleObject, Clone)]
pub struct AuditDetail {
    /// What it is ("note", "amount minor", "person").
    pub name: String,
    /// Its value as text (a person as their handle, nothing as "—").
    pub value: String,
}

impl From<admin_desk::AuditLine> for AuditEntryView {
    fn from(line: admin_desk::AuditLine) -> Self {
        let e = line.entry;
        Self {
            id: ID(e.id.to_string()),
            actor: e.actor,
            actor_name: line.actor_name,
            action: e.action,
            subject_type: e.subject_type,
            subject_id: e.subject_id,
            subject_name: line.subject_name,
            detail: e.detail.to_string(),
            details: line
                .details
                .into_iter()
                .map(|(name, value)| AuditDetail { name, value })
                .collect(),
            created_at: e.created_at,
        }
    }
}

#[ComplexObject]
impl AnomalySignal {
    /// Who acknowledged it (a handle), if anyone has.
    async fn acknowledged_by(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        let db = ctx.data::<Db>()?;
        let id: i64 = self.id.parse().unwrap_or_default();
        Ok(admin_desk::acknowledgements(db, [id])
            .await
            .gql()?
            .remove(&id)
            .map(|(who, _)| who))
    }
}

fn allocation_view(row: AllocationRow) -> Allocation {
    let a = row.allocation;
    Allocation {
        id: ID(a.id.to_string()),
        niche_slug: row.niche_slug,
        handle: row.handle,
        share_bps: a.share_bps,
        amount_minor: a.amount_minor,
        status: a.status.into(),
        claws_back: a.claws_back.map(|id| ID(id.to_string())),
        source_type: row
            .event
            .as_ref()
            .map(|e| e.source_type.clone())
            .unwrap_or_default(),
        revenue_event_id: ID(a.revenue_event_id.to_string()),
        question_id: row
            .event
            .as_ref()
            .and_then(|e| e.question_id)
            .map(|id| ID(id.to_string())),
        payout_id: a.payout_id.map(|id| ID(id.to_string())),
        currency: row.event.map(|e| e.currency).unwrap_or_default(),
        created_at: a.created_at,
    }
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
        question_id: e.question_id.map(|id| ID(id.to_string())),
        created_at: e.created_at,
    }
}

fn budget_of(view: BudgetView) -> Budget {
    let state = view.budget;
    Budget {
        niche_slug: view.niche.slug,
        limit_minor: state.limit,
        spent_minor: state.spent,
        reserved_minor: state.reserved,
        remaining_minor: state.remaining(),
        state: state.state().into(),
        resets_at: view.resets_at,
        bounty_minor: view.niche.bounty_minor,
        max_bounty_minor: view.niche.max_bounty_minor,
        reuse_price_minor: view.niche.reuse_price_minor,
        entries: view.entries.into_iter().map(BudgetEntry::from).collect(),
        exchanges: view.exchanges.into_iter().map(ExchangeCost::from).collect(),
        question_spend_minor: view.spend.questions,
        task_spend_minor: view.spend.tasks,
        reuse_spend_minor: view.spend.reuses,
    }
}

/// Money queries.
#[derive(Default)]
pub struct MoneyQuery;

#[Object]
impl MoneyQuery {
    /// A niche's agent budget this month, with its entries (its active members and admins).
    async fn budget(&self, ctx: &Context<'_>, niche_slug: String) -> Result<Budget> {
        let db = ctx.data::<Db>()?;
        let viewer = caller_of(ctx)?.viewer();
        let view = ledger_views::budget_view(db, viewer, &niche_slug, Utc::now())
            .await
            .gql()?;
        Ok(budget_of(view))
    }

    /// My revenue: balances by where the money is, and my allocations.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn my_revenue(&self, ctx: &Context<'_>, first: Option<i32>) -> Result<MyRevenue> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        let mine = ledger_views::my_revenue(db, caller_of(ctx)?.viewer(), first)
            .await
            .gql()?;
        Ok(MyRevenue {
            balances: mine
                .balances
                .into_iter()
                .map(|b| Balance {
                    currency: b.currency,
                    owed_minor: b.owed,
                    held_minor: b.held,
                    in_flight_minor: b.in_flight,
                    paid_minor: b.paid,
                    reversed_minor: b.reversed,
                })
                .collect(),
            allocations: mine.allocations.into_iter().map(allocation_view).collect(),
            payouts: mine.payouts.into_iter().map(payout_view).collect(),
            payout_account: mine.account.map(PayoutAccount::from),
        })
    }

    /// A niche's revenue: totals, recent events, members' shares and my allocations (its
    /// active members and admins).
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn niche_revenue(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        first: Option<i32>,
    ) -> Result<NicheRevenue> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        let view = ledger_views::niche_revenue(db, caller_of(ctx)?.viewer(), &niche_slug, first)
            .await
            .gql()?;
        let slug = view.niche.slug;
        Ok(NicheRevenue {
            gross_minor: view.gross,
            net_minor: view.net,
            event_count: view.count,
            reversed_gross_minor: view.reversed.iter().map(|e| e.gross_minor).sum(),
            reversed_events: view
                .reversed
                .into_iter()
                .map(|e| event_view(e, &slug))
                .collect(),
            recent_events: view
                .recent
                .into_iter()
                .map(|e| event_view(e, &slug))
                .collect(),
            shares: view
                .shares
                .into_iter()
                .map(|(handle, share_bps)| MemberShare { handle, share_bps })
                .collect(),
            my_allocations: view.mine.into_iter().map(allocation_view).collect(),
            niche_slug: slug,
        })
    }

    /// Revenue events across niches, newest first (admins only).
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn revenue_events(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> Result<Vec<RevenueEvent>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        Ok(
            ledger_views::revenue_events(db, caller_of(ctx)?.viewer(), first)
                .await
                .gql()?
                .into_iter()
                .map(|(event, slug)| event_view(event, &slug))
                .collect(),
        )
    }

    /// Everyone's payout addresses, unverified first (admins only).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn payout_accounts(&self, ctx: &Context<'_>) -> Result<Vec<PayoutAccount>> {
        let db = ctx.data::<Db>()?;
        Ok(ledger_views::payout_accounts(db, caller_of(ctx)?.viewer())
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
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn payouts(&self, ctx: &Context<'_>, first: Option<i32>) -> Result<Vec<Payout>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        Ok(ledger_views::payouts(db, caller_of(ctx)?.viewer(), first)
            .await
            .gql()?
            .into_iter()
            .map(payout_view)
            .collect())
    }

    /// Anomaly signals, newest first (admins only).
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn anomaly_signals(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> Result<Vec<AnomalySignal>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        Ok(
            ledger_views::anomaly_signals(db, caller_of(ctx)?.viewer(), first)
                .await
                .gql()?
                .into_iter()
                .map(AnomalySignal::from)
                .collect(),
        )
    }

    /// The audit log, newest first, optionally of one kind of subject (admins only).
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn audit_log(
        &self,
        ctx: &Context<'_>,
        subject_type: Option<String>,
        first: Option<i32>,
    ) -> Result<Vec<AuditEntryView>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        let filter = admin_desk::AuditFilter {
            subject_type,
            sign_ins: true,
            ..Default::default()
        };
        let page = admin_desk::audit_page(db, caller_of(ctx)?.viewer(), filter, None, first)
            .await
            .gql()?;
        Ok(page.lines.into_iter().map(AuditEntryView::from).collect())
    }

    /// The audit log a page at a time, newest first (admins only), narrowed by who (a
    /// person's handle, `agent:<id>`, `system`, `cli`), what (an action, exactly), the
    /// subject's kind and id, and a time range (`since` inclusive, `until` exclusive).
    /// Sign-ins and sign-outs (`session.*`) are left out unless `signIns` is true or
    /// `action` names one.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    #[expect(
        clippy::too_many_arguments,
        reason = "each filter of the audit log is an argument of the GraphQL field"
    )]
    async fn audit_entries(
        &self,
        ctx: &Context<'_>,
        actor: Option<String>,
        action: Option<String>,
        subject_type: Option<String>,
        subject_id: Option<String>,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        sign_ins: Option<bool>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<Connection<String, AuditEntryView>> {
        let db = ctx.data::<Db>()?;
        let viewer = caller_of(ctx)?.viewer();
        access::admin(viewer).gql()?;
        let first = page_size(first).gql()?;
        let before = after.as_deref().map(audit_cursor).transpose().gql()?;
        let filter = admin_desk::AuditFilter {
            actor,
            action,
            subject_type,
            subject_id,
            since,
            until,
            sign_ins: sign_ins.unwrap_or(false),
        };
        let page = admin_desk::audit_page(db, viewer, filter, before, first)
            .await
            .gql()?;
        let mut connection = Connection::new(before.is_some(), page.has_next);
        connection.edges.extend(page.lines.into_iter().map(|line| {
            let cursor = format!("a{}", line.entry.id);
            Edge::new(cursor, AuditEntryView::from(line))
        }));
        Ok(connection)
    }
}

/// The entry id an audit cursor (`a<id>`) names.
fn audit_cursor(cursor: &str) -> Result<i64, ServiceError> {
    cursor
        .strip_prefix('a')
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            ServiceError::BadInput(format!("'{cursor}' is not a cursor of the audit log"))
        })
}

/// Money mutations.
#[derive(Default)]
pub struct MoneyMutation;

#[Object]
impl MoneyMutation {
    /// Set a niche's monthly agent budget (null: no limit), its default bounty, its largest
    /// bounty and, when given, what one reuse of its knowledge costs an agent (admins only;
    /// audited).
    async fn set_niche_budget(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        monthly_budget_minor: Option<i64>,
        bounty_minor: i64,
        max_bounty_minor: i64,
        reuse_price_minor: Option<i64>,
    ) -> Result<Budget> {
        let (db, caller) = writer(ctx)?;
        let view = ledger_views::set_niche_budget(
            db,
            caller.viewer(),
            &niche_slug,
            NicheBudget {
                monthly_budget_minor,
                bounty_minor,
                max_bounty_minor,
                reuse_price_minor,
            },
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(budget_of(view))
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
        let db = ctx.data::<Db>()?;
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
        let (db, caller) = writer(ctx)?;
        Ok(
            payouts::verify_address(db, caller.viewer(), &handle, &address, Utc::now())
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
        let (db, caller) = writer(ctx)?;
        let payout = payouts::schedule(db, caller.viewer(), &handle, &currency, Utc::now())
            .await
            .gql()?;
        let mut rows = ledger_views::payout_rows(db, vec![payout]).await.gql()?;
        Ok(payout_view(rows.remove(0)))
    }

    /// Record that a payout was paid, with the settlement's unique reference (admins only).
    async fn mark_payout_paid(
        &self,
        ctx: &Context<'_>,
        id: ID,
        external_reference: String,
    ) -> Result<Payout> {
        let (db, caller) = writer(ctx)?;
        let id = payout_id(&id).gql()?;
        let payout = payouts::mark_paid(db, caller.viewer(), id, &external_reference, Utc::now())
            .await
            .gql()?;
        let mut rows = ledger_views::payout_rows(db, vec![payout]).await.gql()?;
        Ok(payout_view(rows.remove(0)))
    }

    /// Record that a payout failed: its allocations are owed again (admins only).
    async fn mark_payout_failed(
        &self,
        ctx: &Context<'_>,
        id: ID,
        reason: String,
    ) -> Result<Payout> {
        let (db, caller) = writer(ctx)?;
        let id = payout_id(&id).gql()?;
        let payout = payouts::mark_failed(db, caller.viewer(), id, &reason, Utc::now())
            .await
            .gql()?;
        let mut rows = ledger_views::payout_rows(db, vec![payout]).await.gql()?;
        Ok(payout_view(rows.remove(0)))
    }
}

/// Money subscriptions.
#[derive(Default)]
pub struct MoneySubscription;

#[Subscription]
impl MoneySubscription {
    /// New anomaly signals as they arrive (admins only). Every instance reads the signal log,
    /// so signals received by any of them arrive.
    async fn anomaly_signals(
        &self,
        ctx: &Context<'_>,
    ) -> Result<impl Stream<Item = Result<AnomalySignal>> + use<>> {
        let db = ctx.data::<Db>()?;
        let rx = ctx.data::<LiveHub>()?.subscribe();
        let signals = signals::watch(db, caller_of(ctx)?.viewer(), rx)
            .await
            .gql()?;
        // Registered with the hub: counted in askloop_live_subscriptions_served from now.
        let serving = crate::live::shared::Serving::of(ctx);
        Ok(signals.map(move |signal| {
            let _held = &serving;
            signal
                .map(|s| AnomalySignal::from(s.as_ref().clone()))
                .gql()
        }))
    }
}
