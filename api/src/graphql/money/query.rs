//! The money queries: a niche's budget, my revenue, a niche's revenue, payouts, and for admins
//! the revenue events, anomaly signals and audit log.

use crate::db::Db;
use async_graphql::connection::{Connection, Edge};
use async_graphql::{Context, Object, Result};
use chrono::{DateTime, Utc};

use super::budget::budget_of;
use super::oversight::audit_cursor;
use super::payouts::payout_view;
use super::revenue::{allocation_view, event_view};
use super::{
    AnomalySignal, AuditEntryView, Balance, Budget, MemberShare, MyRevenue, NicheRevenue, Payout,
    PayoutAccount, RevenueEvent,
};
use crate::graphql::caller_of;
use crate::graphql::error_door::GqlResultExt;
use crate::service::money::ledger_views;
use crate::service::questions::queue::page_size;
use crate::service::{people::access, people::admin_desk};

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
