//! Revenue (docs/contract.md#revenue-and-payouts): events booked once per external id and finalised
//! at once into allocations — each active operator/specialist's share of the net
//! (docs/contract.md#scoring-and-review; floored, the share stamped on the row) and the platform's
//! rest, so the parts always sum to the net. A bounty charged on an answer is booked the same way,
//! with the answerer as the only member.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Utc};
use entity::allocations::{self, AllocationStatus};
use entity::{niches, revenue_events};
use sea_orm::sea_query::{Alias, Expr, Func, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait, NotSet, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, TryInsertResult,
};
use serde_json::{Value, json};

use crate::domain::intake::NicheRef;
use crate::domain::ledger::{self, Costs, WHOLE_BPS};
use crate::error::ServiceError;
use crate::service::agents::registry::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::niches::find_niche;
use crate::service::{money::scores, money::standing};

pub use crate::domain::revenue::{
    BOUNTY_CURRENCY, BOUNTY_SOURCE, NewRevenue, SOURCE_TYPES, TASK_SOURCE,
};

/// Parse and check a revenue event (also inside `payload`): 400 with what is wrong.
pub fn parse(body: &Value) -> Result<NewRevenue, ServiceError> {
    crate::domain::revenue::parse(body).map_err(ServiceError::BadInput)
}

/// A booked event with its allocations.
#[derive(Debug, Clone)]
pub struct Booked {
    /// The event.
    pub event: revenue_events::Model,
    /// Its allocations (the platform's has no user).
    pub allocations: Vec<allocations::Model>,
    /// Whether it had been booked before under the same external id.
    pub duplicate: bool,
}

/// Book a revenue event and finalise it; the same external id again books nothing.
/// A registered agent books revenue only in its niches (403 elsewhere).
pub async fn book(
    db: &Db,
    asker: &Asker,
    new: NewRevenue,
    now: DateTime<Utc>,
) -> Result<Booked, ServiceError> {
    let niche = find_niche(db, &NicheRef::Slug(new.niche_slug.clone()))
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no niche '{}'", new.niche_slug)))?;
    if !asker.may_use_niche(niche.id) {
        return Err(ServiceError::Forbidden(format!(
            "this agent may not book revenue in '{}'",
            niche.slug
        )));
    }
    let ladder = scores::ladder(db).await?;
    let shares = standing::niche_shares(db, niche.id, &ladder).await?;
    let txn = db.begin_write().await?;
    // The niche's total stays where the database's sums fit (checked in the writing
    // transaction; a redelivery of a booked event is still answered as a duplicate below).
    let (gross_so_far, _, _) = niche_totals(&txn, niche.id).await?;
    if gross_so_far.saturating_add(new.gross) > ledger::MAX_NICHE_GROSS_MINOR
        && !event_booked(&txn, niche.id, &new.external_id).await?
    {
        txn.rollback().await?;
        return Err(ServiceError::BadInput(format!(
            "this event would take niche '{}' past the largest revenue total askloop keeps ({} minor units)",
            niche.slug,
            ledger::MAX_NICHE_GROSS_MINOR
        )));
    }
    let inserted = insert_event(
        &txn,
        &niche,
        &new.external_id,
        &new.source_type,
        new.gross,
        new.costs,
        &new.currency,
        None,
        now,
    )
    .await?;
    let Some(event) = inserted else {
        txn.rollback().await?;
        let event = revenue_events::Entity::find()
            .filter(revenue_events::Column::NicheId.eq(niche.id))
            .filter(revenue_events::Column::ExternalId.eq(new.external_id.clone()))
            .one(db)
            .await?
            .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("conflict without a row")))?;
        let allocations = allocations_of(db, event.id).await?;
        return Ok(Booked {
            event,
            allocations,
            duplicate: true,
        });
    };
    let allocations = finalise(&txn, &event, &shares, AllocationStatus::Accrued, now).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::Agent(None),
            action: "revenue.booked",
            subject_type: "revenue_event",
            subject_id: event.id,
            niche_id: Some(niche.id),
            detail: json!({ "externalId": event.external_id, "netMinor": event.net_minor }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(Booked {
        event,
        allocations,
        duplicate: false,
    })
}

/// Insert an event unless its external id is booked already (then `None`).
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per column of the revenue event the caller decides"
)]
async fn insert_event(
    conn: &WriteTxn,
    niche: &niches::Model,
    external_id: &str,
    source_type: &str,
    gross: i64,
    costs: Costs,
    currency: &str,
    question_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Option<revenue_events::Model>, ServiceError> {
    let row = revenue_events::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        external_id: Set(external_id.to_owned()),
        source_type: Set(source_type.to_owned()),
        gross_minor: Set(gross),
        processing_minor: Set(costs.processing),
        network_minor: Set(costs.network),
        infra_minor: Set(costs.infra),
        refund_minor: Set(costs.refund),
        net_minor: Set(ledger::net(gross, costs)),
        currency: Set(currency.to_owned()),
        question_id: Set(question_id),
        created_at: Set(now),
    };
    let inserted = revenue_events::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                revenue_events::Column::NicheId,
                revenue_events::Column::ExternalId,
            ])
            .do_nothing()
            .to_owned(),
        )
        .try_insert()
        .exec(conn)
        .await?;
    match inserted {
        TryInsertResult::Inserted(result) => {
            Ok(revenue_events::Entity::find_by_id(result.last_insert_id)
                .one(conn)
                .await?)
        }
        TryInsertResult::Conflicted | TryInsertResult::Empty => Ok(None),
    }
}

/// Split an event's net among `shares` (`(user, bps)`; zero shares get no row) and the platform.
async fn finalise(
    conn: &WriteTxn,
    event: &revenue_events::Model,
    shares: &[(i64, u32)],
    members_status: AllocationStatus,
    now: DateTime<Utc>,
) -> Result<Vec<allocations::Model>, ServiceError> {
    let members: Vec<(i64, u32)> = shares.iter().copied().filter(|(_, bps)| *bps > 0).collect();
    let bps: Vec<u32> = members.iter().map(|(_, bps)| *bps).collect();
    let (parts, platform) = ledger::allocate(event.net_minor, &bps);
    let platform_bps = WHOLE_BPS.saturating_sub(bps.iter().sum::<u32>());
    let mut rows: Vec<(Option<i64>, u32, i64)> = members
        .iter()
        .zip(parts)
        .map(|((user, bps), amount)| (Some(*user), *bps, amount))
        .collect();
    rows.push((None, platform_bps, platform));
    let mut stored = Vec::with_capacity(rows.len());
    for (user, bps, amount) in rows {
        let model = allocations::ActiveModel {
            id: NotSet,
            revenue_event_id: Set(event.id),
            niche_id: Set(event.niche_id),
            user_id: Set(user),
            share_bps: Set(i32::try_from(bps).unwrap_or(0)),
            amount_minor: Set(amount),
            // The platform's part is never paid out, so it is never held.
            status: Set(if user.is_some() {
                members_status
            } else {
                AllocationStatus::Accrued
            }),
            payout_id: Set(None),
            claws_back: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        };
        let inserted = allocations::Entity::insert(model).exec(conn).await?;
        if let Some(row) = allocations::Entity::find_by_id(inserted.last_insert_id)
            .one(conn)
            .await?
        {
            stored.push(row);
        }
    }
    Ok(stored)
}

/// The external id of the bounty charged for answer `answer_id` (askloop's own, so no agent's
/// revenue event can take it; one per answer, since a question reopened after a rejection may be
/// answered and charged again).
pub fn bounty_external_id(answer_id: i64) -> String {
    format!("{BOUNTY_SOURCE}:answer:{answer_id}")
}

/// Book a charged bounty (inside the answer's transaction): a revenue event of source
/// `source` (`agent_bounty`, or `agent_task` for what a task cost), allocated to the answerer at
/// their share and the platform the rest. The
/// answerer's part is `held` while the answer waits for review (docs/contract.md#held-money).
#[expect(
    clippy::too_many_arguments,
    reason = "the question, answer, answerer, amount and source of a bounty are each the caller's"
)]
pub async fn book_bounty(
    conn: &WriteTxn,
    niche: &niches::Model,
    question_id: i64,
    answer_id: i64,
    answerer: (i64, u32),
    amount: i64,
    source: &str,
    held: bool,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let Some(event) = insert_event(
        conn,
        niche,
        &bounty_external_id(answer_id),
        source,
        amount,
        Costs::default(),
        BOUNTY_CURRENCY,
        Some(question_id),
        now,
    )
    .await?
    else {
        return Ok(());
    };
    let status = if held {
        AllocationStatus::Held
    } else {
        AllocationStatus::Accrued
    };
    finalise(conn, &event, &[answerer], status, now).await?;
    Ok(())
}

/// The source type of what an agent paid to reuse a knowledge entry.
pub const REUSE_SOURCE: &str = "knowledge_reuse";

/// Book what a knowledge reuse cost (inside the reuse's transaction): a revenue event of source
/// `knowledge_reuse` under askloop's own external id `external_id`, split as a bounty is — the
/// entry's author (`author`, their share now) and the platform the rest — and owed at once (the
/// entry is verified), or `held` while the answer that relied on it waits for review. The
/// event's id; none when the reuse was free.
pub async fn book_reuse(
    conn: &WriteTxn,
    niche: &niches::Model,
    external_id: &str,
    author: (i64, u32),
    amount: i64,
    held: bool,
    now: DateTime<Utc>,
) -> Result<Option<i64>, ServiceError> {
    if amount <= 0 {
        return Ok(None);
    }
    let Some(event) = insert_event(
        conn,
        niche,
        external_id,
        REUSE_SOURCE,
        amount,
        Costs::default(),
        BOUNTY_CURRENCY,
        None,
        now,
    )
    .await?
    else {
        return Err(ServiceError::Internal(anyhow::anyhow!(
            "a reuse's revenue id {external_id} is taken"
        )));
    };
    let status = if held {
        AllocationStatus::Held
    } else {
        AllocationStatus::Accrued
    };
    finalise(conn, &event, &[author], status, now).await?;
    Ok(Some(event.id))
}

/// Verify → the held parts of revenue event `event_id` become owed (a held reuse credit).
pub async fn release_held_event(
    conn: &WriteTxn,
    event_id: i64,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, ServiceError> {
    let ids: Vec<i64> = allocations_of(conn, event_id)
        .await?
        .iter()
        .filter(|a| a.status == AllocationStatus::Held)
        .map(|a| a.id)
        .collect();
    move_allocations(
        conn,
        &ids,
        &[AllocationStatus::Held],
        AllocationStatus::Accrued,
        now,
    )
    .await
}

/// What a verdict did to the money of an answer's bounty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BountyVerdict {
    /// Allocations whose status changed (held → accrued, or → reversed).
    pub moved: Vec<i64>,
    /// Clawbacks booked: (the allocation taken back, the clawback's id, its negative amount).
    pub clawbacks: Vec<(i64, i64, i64)>,
}

/// The allocations of the bounty charged for answer `answer_id` (none when it had no bounty).
async fn bounty_allocations<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    answer_id: i64,
) -> Result<Vec<allocations::Model>, ServiceError> {
    let Some(event) = revenue_events::Entity::find()
        .filter(revenue_events::Column::NicheId.eq(niche_id))
        .filter(revenue_events::Column::ExternalId.eq(bounty_external_id(answer_id)))
        .one(conn)
        .await?
    else {
        return Ok(Vec::new());
    };
    allocations_of(conn, event.id).await
}

/// Move allocations `ids` from `from` to `to`, only those still in `from`; the ids moved.
async fn move_allocations(
    conn: &WriteTxn,
    ids: &[i64],
    from: &[AllocationStatus],
    to: AllocationStatus,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, ServiceError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut moved = Vec::new();
    for id in ids {
        // One conditional update per row, so a row a payout claimed in the meantime is seen as
        // claimed (and clawed back) rather than reversed under the payout.
        let changed = allocations::Entity::update_many()
            .col_expr(allocations::Column::Status, Expr::value(to))
            .col_expr(allocations::Column::UpdatedAt, Expr::value(now))
            .filter(allocations::Column::Id.eq(*id))
            .filter(allocations::Column::Status.is_in(from.iter().copied()))
            .filter(allocations::Column::PayoutId.is_null())
            .exec(conn)
            .await?;
        if changed.rows_affected == 1 {
            moved.push(*id);
        }
    }
    Ok(moved)
}

/// Verify → the answerer's held part of the bounty becomes owed.
pub async fn release_held_bounty(
    conn: &WriteTxn,
    niche_id: i64,
    answer_id: i64,
    now: DateTime<Utc>,
) -> Result<BountyVerdict, ServiceError> {
    let ids: Vec<i64> = bounty_allocations(conn, niche_id, answer_id)
        .await?
        .iter()
        .filter(|a| a.status == AllocationStatus::Held)
        .map(|a| a.id)
        .collect();
    let moved = move_allocations(
        conn,
        &ids,
        &[AllocationStatus::Held],
        AllocationStatus::Accrued,
        now,
    )
    .await?;
    Ok(BountyVerdict {
        moved,
        clawbacks: Vec::new(),
    })
}

/// Reject or reverse → every part of the bounty is reversed (the agent's charge is given back,
/// so neither the answerer nor the platform keeps it). A part already in a payout (scheduled or
/// paid) cannot be undone: a clawback of its negative amount is booked for that person instead,
/// owed against their next payouts.
pub async fn reverse_bounty(
    conn: &WriteTxn,
    niche_id: i64,
    answer_id: i64,
    now: DateTime<Utc>,
) -> Result<BountyVerdict, ServiceError> {
    let parts = bounty_allocations(conn, niche_id, answer_id).await?;
    reverse_parts(conn, parts, now).await
}

/// A retracted entry's reuse → every part of what the reuse paid is reversed, by the rules of
/// [`reverse_bounty`] (a part already in a payout is clawed back).
pub async fn reverse_event(
    conn: &WriteTxn,
    event_id: i64,
    now: DateTime<Utc>,
) -> Result<BountyVerdict, ServiceError> {
    let parts = allocations_of(conn, event_id).await?;
    reverse_parts(conn, parts, now).await
}

/// Reverse an event's `parts` (its allocations): those not yet in a payout are marked reversed;
/// one in a payout gets a clawback of its negative amount, once.
async fn reverse_parts(
    conn: &WriteTxn,
    parts: Vec<allocations::Model>,
    now: DateTime<Utc>,
) -> Result<BountyVerdict, ServiceError> {
    let originals: Vec<&allocations::Model> =
        parts.iter().filter(|a| a.claws_back.is_none()).collect();
    let ids: Vec<i64> = originals.iter().map(|a| a.id).collect();
    let moved = move_allocations(
        conn,
        &ids,
        &[AllocationStatus::Held, AllocationStatus::Accrued],
        AllocationStatus::Reversed,
        now,
    )
    .await?;
    let mut clawbacks = Vec::new();
    for part in originals {
        if moved.contains(&part.id) || part.amount_minor == 0 {
            continue;
        }
        let current = allocations::Entity::find_by_id(part.id)
            .one(conn)
            .await?
            .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("allocation vanished")))?;
        let (Some(user), AllocationStatus::Scheduled | AllocationStatus::Paid) =
            (current.user_id, current.status)
        else {
            continue;
        };
        let inserted = allocations::Entity::insert(allocations::ActiveModel {
            id: NotSet,
            revenue_event_id: Set(current.revenue_event_id),
            niche_id: Set(current.niche_id),
            user_id: Set(Some(user)),
            share_bps: Set(current.share_bps),
            amount_minor: Set(-current.amount_minor),
            status: Set(AllocationStatus::Accrued),
            payout_id: Set(None),
            claws_back: Set(Some(current.id)),
            created_at: Set(now),
            updated_at: Set(now),
        })
        .on_conflict(
            OnConflict::column(allocations::Column::ClawsBack)
                .do_nothing()
                .to_owned(),
        )
        .try_insert()
        .exec(conn)
        .await?;
        if let TryInsertResult::Inserted(result) = inserted {
            clawbacks.push((current.id, result.last_insert_id, -current.amount_minor));
        }
    }
    Ok(BountyVerdict { moved, clawbacks })
}

/// A niche's events that were reversed after they were booked (a rejected or reversed answer's
/// bounty, a retracted entry's reuse), newest first: every one with a part reversed or clawed
/// back ([`reverse_parts`] reverses every part at once).
pub async fn reversed_events_of<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
) -> Result<Vec<revenue_events::Model>, ServiceError> {
    let ids: Vec<i64> = allocations::Entity::find()
        .select_only()
        .column(allocations::Column::RevenueEventId)
        .distinct()
        .filter(allocations::Column::NicheId.eq(niche_id))
        .filter(
            Condition::any()
                .add(allocations::Column::Status.eq(AllocationStatus::Reversed))
                .add(allocations::Column::ClawsBack.is_not_null()),
        )
        .into_tuple()
        .all(conn)
        .await?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(revenue_events::Entity::find()
        .filter(revenue_events::Column::Id.is_in(ids))
        .order_by_desc(revenue_events::Column::CreatedAt)
        .order_by_desc(revenue_events::Column::Id)
        .all(conn)
        .await?)
}

/// An event's allocations, members first then the platform.
pub async fn allocations_of<C: ConnectionTrait>(
    conn: &C,
    event_id: i64,
) -> Result<Vec<allocations::Model>, ServiceError> {
    Ok(allocations::Entity::find()
        .filter(allocations::Column::RevenueEventId.eq(event_id))
        .order_by_asc(allocations::Column::Id)
        .all(conn)
        .await?)
}

/// A person's money in one currency, by where it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Balance {
    /// ISO 4217.
    pub currency: String,
    /// Accrued, not yet in a payout (clawbacks included, so it may be negative).
    pub owed: i64,
    /// Held until the answers it is for are verified.
    pub held: i64,
    /// In a scheduled payout.
    pub in_flight: i64,
    /// Paid out.
    pub paid: i64,
    /// Reversed.
    pub reversed: i64,
}

/// A person's balances, one per currency they have money in (amounts of different currencies
/// are never added together).
pub async fn balances_of(db: &Db, user_id: i64) -> Result<Vec<Balance>, ServiceError> {
    let rows: Vec<(i64, AllocationStatus, i64)> = allocations::Entity::find()
        .select_only()
        .column(allocations::Column::RevenueEventId)
        .column(allocations::Column::Status)
        .column(allocations::Column::AmountMinor)
        .filter(allocations::Column::UserId.eq(user_id))
        .into_tuple()
        .all(db)
        .await?;
    let currencies: std::collections::HashMap<i64, String> = revenue_events::Entity::find()
        .select_only()
        .column(revenue_events::Column::Id)
        .column(revenue_events::Column::Currency)
        .filter(revenue_events::Column::Id.is_in(rows.iter().map(|(e, _, _)| *e)))
        .into_tuple::<(i64, String)>()
        .all(db)
        .await?
        .into_iter()
        .collect();
    let mut balances: std::collections::BTreeMap<String, Balance> = Default::default();
    for (event, status, amount) in rows {
        let currency = currencies.get(&event).cloned().unwrap_or_default();
        let balance = balances.entry(currency.clone()).or_insert_with(|| Balance {
            currency,
            ..Balance::default()
        });
        let slot = match status {
            AllocationStatus::Held => &mut balance.held,
            AllocationStatus::Accrued => &mut balance.owed,
            AllocationStatus::Scheduled => &mut balance.in_flight,
            AllocationStatus::Paid => &mut balance.paid,
            AllocationStatus::Reversed => &mut balance.reversed,
        };
        *slot += amount;
    }
    Ok(balances.into_values().collect())
}

/// A person's allocations, newest first.
pub async fn allocations_of_user(
    db: &Db,
    user_id: i64,
    niche_id: Option<i64>,
    limit: u64,
) -> Result<Vec<allocations::Model>, ServiceError> {
    let mut query = allocations::Entity::find().filter(allocations::Column::UserId.eq(user_id));
    if let Some(niche_id) = niche_id {
        query = query.filter(allocations::Column::NicheId.eq(niche_id));
    }
    Ok(query
        .order_by_desc(allocations::Column::Id)
        .limit(limit)
        .all(db)
        .await?)
}

/// A niche's revenue events, newest first.
pub async fn events_of(
    db: &Db,
    niche_id: Option<i64>,
    limit: u64,
) -> Result<Vec<revenue_events::Model>, ServiceError> {
    let mut query = revenue_events::Entity::find();
    if let Some(niche_id) = niche_id {
        query = query.filter(revenue_events::Column::NicheId.eq(niche_id));
    }
    Ok(query
        .order_by_desc(revenue_events::Column::Id)
        .limit(limit)
        .all(db)
        .await?)
}

/// Whether niche `niche_id` has booked an event under `external_id`.
async fn event_booked<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    external_id: &str,
) -> Result<bool, ServiceError> {
    Ok(revenue_events::Entity::find()
        .filter(revenue_events::Column::NicheId.eq(niche_id))
        .filter(revenue_events::Column::ExternalId.eq(external_id))
        .count(conn)
        .await?
        > 0)
}

/// A niche's totals: gross, net and how many events.
pub async fn niche_totals<C: ConnectionTrait>(
    db: &C,
    niche_id: i64,
) -> Result<(i64, i64, i64), ServiceError> {
    // Summed by the database; SUM and COUNT are cast so both databases give an i64 (and an
    // empty niche gives zeros).
    let total = |column: revenue_events::Column| {
        Expr::expr(Func::coalesce([
            Expr::expr(Func::cast_as(
                Func::sum(Expr::col(column)),
                Alias::new("BIGINT"),
            )),
            Expr::val(0_i64),
        ]))
    };
    let totals: Option<(i64, i64, i64)> = revenue_events::Entity::find()
        .select_only()
        .column_as(total(revenue_events::Column::GrossMinor), "gross")
        .column_as(total(revenue_events::Column::NetMinor), "net")
        .column_as(
            Expr::expr(Func::cast_as(
                Func::count(Expr::col(revenue_events::Column::Id)),
                Alias::new("BIGINT"),
            )),
            "events",
        )
        .filter(revenue_events::Column::NicheId.eq(niche_id))
        .into_tuple()
        .one(db)
        .await?;
    Ok(totals.unwrap_or((0, 0, 0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revenue_event_is_checked_field_by_field() {
        let ok = parse(&json!({"payload": {"nicheSlug": "Games", "externalId": "inv-1", "sourceType": "subscription",
            "grossMinor": 1000, "processingMinor": 30, "currency": "eur"}}))
        .expect("valid");
        assert_eq!(ok.niche_slug, "games");
        assert_eq!(ok.currency, "EUR");
        assert_eq!(ok.costs.processing, 30);
        assert_eq!(ok.costs.refund, 0);
        for (body, says) in [
            (
                json!({"externalId": "a", "sourceType": "usage", "grossMinor": 1, "currency": "USD"}),
                "nicheSlug",
            ),
            (
                json!({"nicheSlug": "g", "sourceType": "usage", "grossMinor": 1, "currency": "USD"}),
                "externalId",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "gift", "grossMinor": 1, "currency": "USD"}),
                "subscription, usage, sponsorship, one_time",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "agent_bounty", "grossMinor": 1, "currency": "USD"}),
                "is not one of",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "usage", "currency": "USD"}),
                "grossMinor is required",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "usage", "grossMinor": -1, "currency": "USD"}),
                "grossMinor",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "usage", "grossMinor": 1.5, "currency": "USD"}),
                "grossMinor",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "usage", "grossMinor": 1, "refundMinor": "2", "currency": "USD"}),
                "refundMinor",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "usage", "grossMinor": 1, "currency": "dollars"}),
                "three-letter",
            ),
            (
                json!({"nicheSlug": "g", "externalId": "a", "sourceType": "usage", "grossMinor": 1}),
                "currency is required",
            ),
        ] {
            let err = parse(&body).expect_err("invalid").to_string();
            assert!(err.contains(says), "{body}: {err}");
        }
    }

    /// Found by the revenue property (tests/suite/properties.rs): the id's length was counted
    /// in bytes, so 101 two-byte characters were "longer than 200 characters".
    #[test]
    fn an_external_id_is_measured_in_characters() {
        let body = |id: String| {
            json!({"nicheSlug": "g", "externalId": id, "sourceType": "usage", "grossMinor": 1,
                "currency": "USD"})
        };
        let kept = parse(&body("é".repeat(200)))
            .expect("200 characters")
            .external_id;
        assert_eq!(kept, "é".repeat(200));
        let err = parse(&body("é".repeat(201))).expect_err("201").to_string();
        assert_eq!(err, "externalId is longer than 200 characters");
    }
}
