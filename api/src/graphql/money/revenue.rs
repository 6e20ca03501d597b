//! Revenue as GraphQL shows it: revenue events and their allocations, my balances, and a niche's
//! revenue with its members' shares (docs/contract.md#revenue-and-payouts).

use async_graphql::{ID, SimpleObject};
use chrono::{DateTime, Utc};
use entity::revenue_events;

use super::{Payout, PayoutAccount};
use crate::graphql::enums::AllocationStatus;
use crate::service::money::ledger_views::AllocationRow;

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

pub(super) fn allocation_view(row: AllocationRow) -> Allocation {
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

pub(super) fn event_view(e: revenue_events::Model, slug: &str) -> RevenueEvent {
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
