//! Niches: creating them and finding them by the ways agents and people name them.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::niche_members;
use entity::niches::{self, NicheStatus};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet, QueryFilter, QueryOrder,
    SqlErr,
};
use serde_json::json;

use crate::domain::intake::NicheRef;
use crate::domain::slug::Slug;
use crate::error::{Conflict, ServiceError};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

/// A niche to create.
#[derive(Debug, Clone)]
pub struct NewNiche {
    /// Its slug.
    pub slug: Slug,
    /// Display name (1..=120 chars).
    pub name: String,
    /// Where it starts; `open` takes questions at once.
    pub status: NicheStatus,
}

/// Create a niche; a taken slug is a conflict.
pub async fn create_niche(
    db: &Db,
    new: NewNiche,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    let name = crate::domain::text::one_line("name", new.name.trim())?.to_owned();
    if name.is_empty() || name.chars().count() > 120 {
        return Err(ServiceError::BadInput(
            "a niche name is 1 to 120 characters".into(),
        ));
    }
    let txn = db.begin_write().await?;
    let inserted = niches::Entity::insert(niches::ActiveModel {
        id: NotSet,
        slug: Set(new.slug.as_str().to_owned()),
        name: Set(name),
        description: Set(String::new()),
        status: Set(new.status),
        primary_agent_id: Set(None),
        bounty_minor: Set(0),
        max_bounty_minor: Set(0),
        monthly_budget_minor: Set(None),
        reuse_price_minor: Set(0),
        default_question_lifetime_secs: Set(7 * 24 * 3600),
        declines_to_notify: Set(3),
        budget_month: Set(None),
        budget_spent_minor: Set(0),
        budget_reserved_minor: Set(0),
        // The column defaults (docs/contract.md#escalation).
        escalate_high_secs: NotSet,
        escalate_normal_secs: NotSet,
        escalate_low_secs: NotSet,
        similarity_threshold_bps: NotSet,
        trust_lower_bound_bps: NotSet,
        first_wave: NotSet,
        created_at: Set(now),
        updated_at: Set(now),
    })
    .exec_with_returning(&txn)
    .await
    .map_err(|err| match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => {
            ServiceError::from(Conflict::NicheSlugTaken(new.slug.to_string()))
        }
        _ => err.into(),
    })?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "niche.created",
            subject_type: "niche",
            subject_id: inserted.id,
            niche_id: Some(inserted.id),
            detail: json!({ "slug": inserted.slug, "status": inserted.status }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(inserted)
}

/// How a niche weighs its answers (docs/contract.md#weighing-answers); `None` leaves a setting
/// as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Weighing {
    /// The Wilson lower bound at which a member's answers verify on arrival, 0.5–1.0.
    pub trust_lower_bound: Option<f64>,
    /// Routing: `Some(None)` notifies everyone at once, `Some(Some(k))` the k best first.
    pub first_wave: Option<Option<i32>>,
}

/// The largest first wave.
pub const FIRST_WAVE_MAX: i32 = 50;

/// A trust threshold, checked and in basis points.
pub fn trust_bps(bound: f64) -> Result<i32, ServiceError> {
    if !bound.is_finite() || !(0.5..=1.0).contains(&bound) {
        return Err(ServiceError::BadInput(format!(
            "trustLowerBound is from 0.5 to 1.0 (1.0: every answer is reviewed); got {bound}"
        )));
    }
    Ok((bound * 10_000.0).round() as i32)
}

/// Change how `slug` weighs its answers, audited as `niche.weighing_changed`. Checked before
/// anything is written: a bad value changes nothing.
pub async fn set_weighing(
    db: &Db,
    actor: &Actor,
    slug: &str,
    weighing: Weighing,
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    let trust = weighing.trust_lower_bound.map(trust_bps).transpose()?;
    if let Some(Some(k)) = weighing.first_wave
        && !(1..=FIRST_WAVE_MAX).contains(&k)
    {
        return Err(ServiceError::BadInput(format!(
            "a first wave is 1 to {FIRST_WAVE_MAX} operators; got {k}"
        )));
    }
    let niche = crate::service::questions::queue::niche_by_slug(db, slug).await?;
    let mut row: niches::ActiveModel = niche.clone().into();
    if let Some(bps) = trust {
        row.trust_lower_bound_bps = Set(bps);
    }
    if let Some(wave) = weighing.first_wave {
        row.first_wave = Set(wave);
    }
    row.updated_at = Set(now);
    let txn = db.begin_write().await?;
    let updated = sea_orm::ActiveModelTrait::update(row, &txn).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "niche.weighing_changed",
            subject_type: "niche",
            subject_id: niche.id,
            niche_id: Some(niche.id),
            detail: json!({
                "trustLowerBoundBps": updated.trust_lower_bound_bps,
                "firstWave": updated.first_wave,
            }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// The niche an agent named, if it exists.
pub async fn find_niche<C: ConnectionTrait>(
    conn: &C,
    by: &NicheRef,
) -> Result<Option<niches::Model>, ServiceError> {
    let query = match by {
        NicheRef::Slug(slug) => {
            niches::Entity::find().filter(niches::Column::Slug.eq(slug.as_str()))
        }
        NicheRef::Id(id) => niches::Entity::find_by_id(*id),
    };
    Ok(query.one(conn).await?)
}

/// Niches anyone may see listed: those taking questions (open or operated), by name.
pub async fn list_public_niches(db: &Db) -> Result<Vec<niches::Model>, ServiceError> {
    Ok(niches::Entity::find()
        .filter(niches::Column::Status.is_in([NicheStatus::Open, NicheStatus::Operated]))
        .order_by_asc(niches::Column::Name)
        .all(db)
        .await?)
}

/// Every niche, whatever its status, by name (for admins).
pub async fn list_all_niches(db: &Db) -> Result<Vec<niches::Model>, ServiceError> {
    Ok(niches::Entity::find()
        .order_by_asc(niches::Column::Name)
        .all(db)
        .await?)
}

/// A niche's members with their handles, by handle (for admins).
pub async fn members_of(
    db: &Db,
    niche_id: i64,
) -> Result<Vec<(niche_members::Model, String)>, ServiceError> {
    let rows = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche_id))
        .all(db)
        .await?;
    let handles =
        crate::service::people::names::handles(db, rows.iter().map(|m| m.user_id)).await?;
    let mut members: Vec<_> = rows
        .into_iter()
        .filter_map(|member| handles.get(&member.user_id).cloned().map(|h| (member, h)))
        .collect();
    members.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(members)
}

/// The niche named `slug` if `viewer` may see it: open and operated niches are public; drafts
/// and archived ones only to their members and admins. `None` either way it is hidden, so a
/// hidden niche cannot be told from a missing one.
pub async fn visible_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
) -> Result<Option<niches::Model>, ServiceError> {
    let niche = match crate::service::questions::queue::niche_by_slug(db, slug).await {
        Ok(niche) => niche,
        Err(ServiceError::NotFound(_)) => return Ok(None),
        Err(err) => return Err(err),
    };
    if matches!(niche.status, NicheStatus::Open | NicheStatus::Operated) {
        return Ok(Some(niche));
    }
    let visible = match viewer {
        Some(v) if v.is_admin => true,
        Some(v) => access::membership(db, v, niche.id).await?.is_some(),
        None => false,
    };
    Ok(visible.then_some(niche))
}
