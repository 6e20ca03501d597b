//! Payouts and payout accounts as GraphQL shows them, and the payout mutations: my address; for
//! admins verification, scheduling and settlement (docs/contract.md#revenue-and-payouts).

use crate::db::Db;
use async_graphql::{Context, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::payout_accounts;

use crate::error::ServiceError;
use crate::graphql::enums::PayoutStatus;
use crate::graphql::error_door::GqlResultExt;
use crate::graphql::{caller_of, writer};
use crate::service::money::ledger_views::{self, PayoutRow};
use crate::service::{money::payouts, people::access};

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

pub(super) fn payout_view(row: PayoutRow) -> Payout {
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

pub(super) fn payout_id(id: &ID) -> Result<i64, ServiceError> {
    id.parse()
        .map_err(|_| ServiceError::BadInput(format!("'{}' is not a payout id", id.as_str())))
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
