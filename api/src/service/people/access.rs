//! Who may see and do what — the one place the rules live, so GraphQL, REST, form posts and
//! subscriptions all apply the same ones (docs/contract.md#who-may-see-and-do-what: questions
//! only to active members of their niche and admins, because they carry the agent's raw
//! research).

use entity::niche_members::{self, MemberRole, MemberStatus};
use entity::niches;
use entity::users::{self, UserRole};
use std::collections::HashSet;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};

use crate::error::ServiceError;

/// A signed-in person, as the services see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    /// Their user id.
    pub user_id: i64,
    /// Their handle.
    pub handle: String,
    /// Whether they administer askloop.
    pub is_admin: bool,
}

/// The error for anyone not signed in.
pub fn sign_in_first() -> ServiceError {
    ServiceError::Unauthenticated("sign in first".into())
}

/// `viewer`, or "sign in first".
pub fn signed_in(viewer: Option<&Viewer>) -> Result<&Viewer, ServiceError> {
    viewer.ok_or_else(sign_in_first)
}

/// `viewer` if they are an admin.
pub fn admin(viewer: Option<&Viewer>) -> Result<&Viewer, ServiceError> {
    let viewer = signed_in(viewer)?;
    if viewer.is_admin {
        Ok(viewer)
    } else {
        Err(ServiceError::Forbidden("only admins may do that".into()))
    }
}

/// The viewer's membership of a niche, if any.
pub async fn membership<C: ConnectionTrait>(
    conn: &C,
    viewer: &Viewer,
    niche_id: i64,
) -> Result<Option<niche_members::Model>, ServiceError> {
    Ok(niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche_id))
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .one(conn)
        .await?)
}

/// The niches where `viewer` is an active operator or specialist: where they answer.
pub async fn acting_niches<C: ConnectionTrait>(
    conn: &C,
    viewer: &Viewer,
) -> Result<HashSet<i64>, ServiceError> {
    let ids: Vec<i64> = niche_members::Entity::find()
        .select_only()
        .column(niche_members::Column::NicheId)
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .filter(niche_members::Column::Status.eq(MemberStatus::Active))
        .filter(niche_members::Column::Role.ne(MemberRole::Observer))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(ids.into_iter().collect())
}

/// Whether `member` may read the niche's questions: any active membership.
pub fn reads_questions(member: Option<&niche_members::Model>) -> bool {
    member.is_some_and(|m| m.status == MemberStatus::Active)
}

/// Whether `member` may answer and dismiss: active, and not an observer.
pub fn acts_on_questions(member: Option<&niche_members::Model>) -> bool {
    member.is_some_and(|m| m.status == MemberStatus::Active && m.role != MemberRole::Observer)
}

/// The niche's questions are visible to `viewer` (an admin or an active member), or an error
/// saying why not.
pub async fn can_read_questions<C: ConnectionTrait>(
    conn: &C,
    viewer: Option<&Viewer>,
    niche: &niches::Model,
) -> Result<(), ServiceError> {
    let viewer = signed_in(viewer)?;
    if viewer.is_admin || reads_questions(membership(conn, viewer, niche.id).await?.as_ref()) {
        Ok(())
    } else {
        Err(not_a_member(niche))
    }
}

/// Of `user_ids`, those who may hear of `niche_id`'s questions outside the dashboard (operator
/// webhooks, mail): admins, and its active members. Checked where each is written and again
/// where each is sent, so a suspended or departed member hears nothing from the moment they
/// are (docs/contract.md#reaching-operators).
pub async fn who_may_hear<C: ConnectionTrait>(
    conn: &C,
    user_ids: &[i64],
    niche_id: i64,
) -> Result<HashSet<i64>, ServiceError> {
    if user_ids.is_empty() {
        return Ok(HashSet::new());
    }
    let mut allowed: HashSet<i64> = users::Entity::find()
        .select_only()
        .column(users::Column::Id)
        .filter(users::Column::Id.is_in(user_ids.to_vec()))
        .filter(users::Column::Role.eq(UserRole::Admin))
        .into_tuple::<i64>()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    allowed.extend(
        niche_members::Entity::find()
            .select_only()
            .column(niche_members::Column::UserId)
            .filter(niche_members::Column::NicheId.eq(niche_id))
            .filter(niche_members::Column::UserId.is_in(user_ids.to_vec()))
            .filter(niche_members::Column::Status.eq(MemberStatus::Active))
            .into_tuple::<i64>()
            .all(conn)
            .await?,
    );
    Ok(allowed)
}

/// The error for someone who is not an active member of `niche`.
pub fn not_a_member(niche: &niches::Model) -> ServiceError {
    ServiceError::Forbidden(format!("you are not an active member of '{}'", niche.slug))
}
