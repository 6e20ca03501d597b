//! How a person wants to hear about each niche they belong to.

use chrono::{DateTime, Utc};
use entity::agent_questions::Urgency;
use entity::{niche_members, niches, notification_preferences};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};

use crate::db::{Db, WriteTxn};
use crate::domain::placement::{Digest, parse_urgencies, rank, urgency_name};
use crate::error::ServiceError;
use crate::service::people::access::Viewer;

/// How a person wants to hear about one niche.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preference {
    /// The niche.
    pub niche_id: i64,
    /// Its slug.
    pub niche_slug: String,
    /// Its name.
    pub niche_name: String,
    /// `false`: no mail about it at all.
    pub enabled: bool,
    /// The urgencies mailed at once.
    pub immediate: Vec<Urgency>,
    /// How the rest are gathered.
    pub digest: Digest,
}

/// The defaults for a niche nobody set a preference for: high at once, the rest hourly.
fn default_preference(niche: &niches::Model) -> Preference {
    Preference {
        niche_id: niche.id,
        niche_slug: niche.slug.clone(),
        niche_name: niche.name.clone(),
        enabled: true,
        immediate: vec![Urgency::High],
        digest: Digest::Hourly,
    }
}

pub async fn preferences_of(db: &Db, viewer: &Viewer) -> Result<Vec<Preference>, ServiceError> {
    let member_of: Vec<i64> = niche_members::Entity::find()
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .filter(niche_members::Column::Status.eq(niche_members::MemberStatus::Active))
        .all(db)
        .await?
        .into_iter()
        .map(|m| m.niche_id)
        .collect();
    let niches = niches::Entity::find()
        .filter(niches::Column::Id.is_in(member_of))
        .all(db)
        .await?;
    let set: std::collections::HashMap<i64, notification_preferences::Model> =
        notification_preferences::Entity::find()
            .filter(notification_preferences::Column::UserId.eq(viewer.user_id))
            .all(db)
            .await?
            .into_iter()
            .map(|p| (p.niche_id, p))
            .collect();
    let mut found: Vec<Preference> = niches
        .iter()
        .map(|niche| match set.get(&niche.id) {
            Some(row) => Preference {
                enabled: row.enabled,
                immediate: parse_urgencies(&row.immediate_urgencies),
                digest: Digest::parse(&row.digest),
                ..default_preference(niche)
            },
            None => default_preference(niche),
        })
        .collect();
    found.sort_by(|a, b| a.niche_slug.cmp(&b.niche_slug));
    Ok(found)
}

/// Set the signed-in person's preference for a niche they belong to.
pub async fn set_preference(
    db: &Db,
    viewer: &Viewer,
    niche_slug: &str,
    enabled: bool,
    immediate: &[Urgency],
    digest: Digest,
    now: DateTime<Utc>,
) -> Result<Preference, ServiceError> {
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(niche_slug.trim()))
        .one(db)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound(format!(
                "no niche {}",
                crate::domain::text::cap(niche_slug, 80)
            ))
        })?;
    let member = niche_members::Entity::find()
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::Status.eq(niche_members::MemberStatus::Active))
        .one(db)
        .await?;
    if member.is_none() {
        return Err(ServiceError::NotFound(format!(
            "you are not an active member of {}",
            niche.slug
        )));
    }
    let mut immediate = immediate.to_vec();
    immediate.sort_by_key(|u| std::cmp::Reverse(rank(*u)));
    immediate.dedup();
    let stored = immediate
        .iter()
        .map(|u| urgency_name(*u))
        .collect::<Vec<_>>()
        .join(",");
    let txn = db.begin_write().await?;
    save_preference(
        &txn,
        viewer.user_id,
        niche.id,
        enabled,
        &stored,
        digest,
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(Preference {
        enabled,
        immediate,
        digest,
        ..default_preference(&niche)
    })
}

pub(super) async fn save_preference(
    db: &WriteTxn,
    user_id: i64,
    niche_id: i64,
    enabled: bool,
    immediate: &str,
    digest: Digest,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    notification_preferences::Entity::insert(notification_preferences::ActiveModel {
        id: NotSet,
        user_id: Set(user_id),
        niche_id: Set(niche_id),
        enabled: Set(enabled),
        immediate_urgencies: Set(immediate.to_owned()),
        digest: Set(digest.as_str().to_owned()),
        updated_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            notification_preferences::Column::UserId,
            notification_preferences::Column::NicheId,
        ])
        .update_columns([
            notification_preferences::Column::Enabled,
            notification_preferences::Column::ImmediateUrgencies,
            notification_preferences::Column::Digest,
            notification_preferences::Column::UpdatedAt,
        ])
        .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}
