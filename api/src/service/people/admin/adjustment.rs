//! An admin's manual adjustment of a member's points in a niche, verified at once and audited.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::contribution_events::{self, ContributionStatus};
use entity::niche_members;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};
use serde_json::json;

use crate::error::ServiceError;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::money::scores;
use crate::service::people::access::{self, Viewer};
use crate::service::people::accounts::user_by_handle;
use crate::service::questions::queue::niche_by_slug;

/// Record a manual adjustment (0..=500 points, verified at once) for a member of a niche.
pub async fn manual_adjustment(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
    handle: &str,
    points: i64,
    note: String,
    now: DateTime<Utc>,
) -> Result<contribution_events::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let niche = niche_by_slug(db, slug).await?;
    let user = user_by_handle(db, handle).await?;
    if user.id == admin.user_id {
        return Err(ServiceError::SelfReview(
            "nobody adjusts their own score: another admin must".into(),
        ));
    }
    let kind = scores::contribution_type(db, "manual_adjustment").await?;
    if !(kind.min_points..=kind.max_points).contains(&points) {
        return Err(ServiceError::BadInput(format!(
            "a manual adjustment is {} to {} points",
            kind.min_points, kind.max_points
        )));
    }
    let note = note.trim().to_owned();
    if note.is_empty() || note.chars().count() > 1000 {
        return Err(ServiceError::BadInput(
            "say why, in 1 to 1000 characters".into(),
        ));
    }
    let member = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::UserId.eq(user.id))
        .one(db)
        .await?;
    if member.is_none() {
        return Err(ServiceError::NotFound(format!(
            "'{}' is not a member of '{}'",
            user.handle, niche.slug
        )));
    }
    let txn = db.begin_write().await?;
    let event = contribution_events::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        user_id: Set(user.id),
        type_id: Set(kind.id),
        points: Set(points),
        status: Set(ContributionStatus::Verified),
        source: Set("admin".into()),
        evidence: Set(json!({ "note": note })),
        dedupe_key: Set(None),
        verified_at: Set(Some(now)),
        verified_by: Set(Some(admin.user_id)),
        reverses: Set(None),
        created_at: Set(now),
    }
    .insert(&txn)
    .await?;
    scores::recompute(&txn, niche.id, user.id, now).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action: "contribution.adjusted",
            subject_type: "contribution",
            subject_id: event.id,
            niche_id: Some(niche.id),
            detail: json!({ "user": user.handle, "points": points, "note": note }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(event)
}
