//! An admin's decisions on niches and memberships: creating and changing niches, adding members,
//! suspending and restoring them, and who is waiting to join. Every decision is audited.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::niche_members::{self, MemberStatus};
use entity::niches::{self, NicheStatus};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};
use crate::service::people::accounts::user_by_handle;
use crate::service::people::niches::NewNiche;
use crate::service::questions::queue::niche_by_slug;
use crate::service::{people::accounts, people::niches as niche_service};

/// Changes to a niche; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct NicheChanges {
    /// New display name (1..=120 chars).
    pub name: Option<String>,
    /// New description (≤ 2000 chars).
    pub description: Option<String>,
    /// New status.
    pub status: Option<NicheStatus>,
}

/// Create a niche (admins only; audited).
pub async fn create_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    new: NewNiche,
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    niche_service::create_niche(db, new, &Actor::User(admin.user_id), now).await
}

/// Every niche, drafts and archived ones included, by name (admins only).
pub async fn all_niches(
    db: &Db,
    viewer: Option<&Viewer>,
) -> Result<Vec<niches::Model>, ServiceError> {
    access::admin(viewer)?;
    niche_service::list_all_niches(db).await
}

/// A niche's members with their handles, by handle (admins only).
pub async fn members_of(
    db: &Db,
    viewer: Option<&Viewer>,
    niche_id: i64,
) -> Result<Vec<(niche_members::Model, String)>, ServiceError> {
    access::admin(viewer)?;
    niche_service::members_of(db, niche_id).await
}

/// Make a person an active member of a niche (admins only; audited).
pub async fn add_member(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    slug: &str,
    handle: &str,
    role: niche_members::MemberRole,
    now: DateTime<Utc>,
) -> Result<niche_members::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    accounts::add_member(
        db,
        hint,
        slug,
        handle,
        role,
        &Actor::User(admin.user_id),
        now,
    )
    .await
}

/// Update a niche.
pub async fn update_niche(
    db: &Db,
    viewer: Option<&Viewer>,
    slug: &str,
    changes: NicheChanges,
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let niche = niche_by_slug(db, slug).await?;
    let mut row: niches::ActiveModel = niche.clone().into();
    if let Some(name) = changes.name {
        let name = crate::domain::text::one_line("name", name.trim())?.to_owned();
        if name.is_empty() || name.chars().count() > 120 {
            return Err(ServiceError::BadInput(
                "a niche name is 1 to 120 characters".into(),
            ));
        }
        row.name = Set(name);
    }
    if let Some(description) = changes.description {
        if description.chars().count() > 2000 {
            return Err(ServiceError::BadInput(
                "a description is at most 2000 characters".into(),
            ));
        }
        row.description = Set(description);
    }
    if let Some(status) = changes.status {
        row.status = Set(status);
    }
    row.updated_at = Set(now);
    let txn = db.begin_write().await?;
    let updated = row.update(&txn).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action: "niche.updated",
            subject_type: "niche",
            subject_id: niche.id,
            niche_id: Some(niche.id),
            detail: json!({ "name": updated.name, "status": updated.status }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// Set a membership's status (suspend, reinstate, leave).
pub async fn set_member_status(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    slug: &str,
    handle: &str,
    status: MemberStatus,
    now: DateTime<Utc>,
) -> Result<niche_members::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let niche = niche_by_slug(db, slug).await?;
    let user = user_by_handle(db, handle).await?;
    let member = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::UserId.eq(user.id))
        .one(db)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound(format!(
                "'{}' is not a member of '{}'",
                user.handle, niche.slug
            ))
        })?;
    let txn = db.begin_write().await?;
    let mut row: niche_members::ActiveModel = member.clone().into();
    row.status = Set(status);
    row.updated_at = Set(now);
    let updated = row.update(&txn).await?;
    // Suspended or gone: they hear nothing more of the niche from this moment — what waits for
    // their webhooks and their mail is dropped with the change (an admin hears of every niche).
    if status != MemberStatus::Active && user.role != entity::users::UserRole::Admin {
        crate::service::reach::operator_hooks::drop_for_departed(&txn, user.id, niche.id, now)
            .await?;
        crate::service::reach::drop_mail_for_departed(&txn, user.id, niche.id, now).await?;
    }
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action: "member.status_changed",
            subject_type: "member",
            subject_id: member.id,
            niche_id: Some(niche.id),
            detail: json!({ "user": user.handle, "from": member.status, "to": status }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    hint.changed();
    Ok(updated)
}

/// Someone waiting to take part: signed up but an active member of no niche, with the niche
/// whose membership is pending, if one is.
#[derive(Debug, Clone)]
pub struct Waiting {
    /// Their handle.
    pub handle: String,
    /// When they signed up.
    pub signed_up_at: DateTime<Utc>,
    /// The niches where their membership is pending, by slug.
    pub pending_in: Vec<String>,
}

/// The most people [`waiting_to_join`] lists.
pub const WAITING_MAX: usize = 50;

/// People who are an active member of no niche (admins only; not admins themselves), newest
/// sign-up first, at most [`WAITING_MAX`]: who an admin may add to a niche.
pub async fn waiting_to_join(
    db: &Db,
    viewer: Option<&Viewer>,
) -> Result<Vec<Waiting>, ServiceError> {
    use sea_orm::sea_query::Query;
    use sea_orm::{QueryOrder, QuerySelect};
    access::admin(viewer)?;
    let active_members = Query::select()
        .column(niche_members::Column::UserId)
        .from(niche_members::Entity)
        .and_where(niche_members::Column::Status.eq(MemberStatus::Active))
        .to_owned();
    let people = entity::users::Entity::find()
        .filter(entity::users::Column::Role.ne(entity::users::UserRole::Admin))
        .filter(entity::users::Column::Id.not_in_subquery(active_members))
        .order_by_desc(entity::users::Column::CreatedAt)
        .order_by_desc(entity::users::Column::Id)
        .limit(WAITING_MAX as u64)
        .all(db)
        .await?;
    let pending = niche_members::Entity::find()
        .filter(niche_members::Column::Status.eq(MemberStatus::Pending))
        .filter(niche_members::Column::UserId.is_in(people.iter().map(|u| u.id)))
        .all(db)
        .await?;
    let slugs =
        crate::service::people::names::slugs(db, pending.iter().map(|m| m.niche_id)).await?;
    Ok(people
        .into_iter()
        .map(|u| Waiting {
            pending_in: pending
                .iter()
                .filter(|m| m.user_id == u.id)
                .filter_map(|m| slugs.get(&m.niche_id).cloned())
                .collect(),
            handle: u.handle,
            signed_up_at: u.created_at,
        })
        .collect())
}
