//! Where people stand: memberships with score, tier, share and next tier; the niche's shares
//! split so they never exceed 80% together; a person's contributions; a contributor's record in
//! a niche, as a reviewer weighs it.

use crate::db::Db;
use entity::contribution_events::{self, ContributionStatus};
use entity::knowledge_reuses::{self, ReuseKind};
use entity::niche_members::{self, MemberRole, MemberStatus};
use entity::{contribution_scores, contribution_types, knowledge_entries, niches};
use sea_orm::PaginatorTrait;
use sea_orm::sea_query::Query;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use crate::domain::scoring::{self, Tier};
use crate::error::ServiceError;
use crate::service::money::scores;
use crate::service::people::access::{self, Viewer};

/// One membership as its holder sees it.
#[derive(Debug, Clone)]
pub struct MembershipStanding {
    /// The niche.
    pub niche: niches::Model,
    /// The membership.
    pub member: niche_members::Model,
    /// Sum of verified points.
    pub score: i64,
    /// Verified contributions.
    pub verified_count: i64,
    /// Contributions awaiting review.
    pub pending_count: i64,
    /// The tier the score is in.
    pub tier: Tier,
    /// The next tier up, if any.
    pub next_tier: Option<Tier>,
    /// The member's share of the niche's revenue, basis points, after the 80% split.
    pub share_bps: u32,
    /// How many times agents relied on the knowledge entries they wrote in the niche.
    pub reuse_count: u64,
    /// Their record there: verified rate, its lower bound, Brier score, calibration.
    pub record: crate::domain::weighing::Record,
}

/// Shares of every active operator/specialist of a niche, in membership order, after
/// [`scoring::apportion`]: `(user_id, share_bps)`.
pub async fn niche_shares<C: ConnectionTrait>(
    db: &C,
    niche_id: i64,
    ladder: &[Tier],
) -> Result<Vec<(i64, u32)>, ServiceError> {
    let members = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche_id))
        .filter(niche_members::Column::Status.eq(MemberStatus::Active))
        .filter(niche_members::Column::Role.ne(MemberRole::Observer))
        .order_by_asc(niche_members::Column::Id)
        .all(db)
        .await?;
    let scores: Vec<(i64, i64)> = contribution_scores::Entity::find()
        .select_only()
        .column(contribution_scores::Column::UserId)
        .column(contribution_scores::Column::Score)
        .filter(contribution_scores::Column::NicheId.eq(niche_id))
        .into_tuple()
        .all(db)
        .await?;
    let wants: Vec<u32> = members
        .iter()
        .map(|m| {
            let score = scores
                .iter()
                .find(|(user, _)| *user == m.user_id)
                .map_or(0, |(_, s)| *s);
            let tier_share = scoring::tier_for(score, ladder).map_or(0, |t| t.share_bps);
            scoring::member_share_bps(tier_share, u32::try_from(m.share_cap_bps).unwrap_or(0))
        })
        .collect();
    let shares = scoring::apportion(&wants);
    Ok(members.iter().map(|m| m.user_id).zip(shares).collect())
}

/// The viewer's memberships (every status), with their standing in each.
pub async fn memberships(
    db: &Db,
    viewer: &Viewer,
) -> Result<Vec<MembershipStanding>, ServiceError> {
    let ladder = scores::ladder(db).await?;
    let rows = niche_members::Entity::find()
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .find_also_related(niches::Entity)
        .order_by_asc(niche_members::Column::Id)
        .all(db)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for (member, niche) in rows {
        let Some(niche) = niche else { continue };
        let cached = contribution_scores::Entity::find()
            .filter(contribution_scores::Column::NicheId.eq(niche.id))
            .filter(contribution_scores::Column::UserId.eq(viewer.user_id))
            .one(db)
            .await?;
        let (score, verified_count, pending_count) =
            cached.map_or((0, 0, 0), |c| (c.score, c.verified_count, c.pending_count));
        let tier = scoring::tier_for(score, &ladder)
            .cloned()
            .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("the tier ladder is empty")))?;
        let share_bps = if access::acts_on_questions(Some(&member)) {
            niche_shares(db, niche.id, &ladder)
                .await?
                .into_iter()
                .find(|(user, _)| *user == viewer.user_id)
                .map_or(0, |(_, share)| share)
        } else {
            0
        };
        let reuse_count = reuses_of_author(db, niche.id, viewer.user_id).await?;
        let record = crate::service::people::weighing::record(db, niche.id, viewer.user_id).await?;
        out.push(MembershipStanding {
            reuse_count,
            record,
            next_tier: scoring::next_tier(score, &ladder).cloned(),
            niche,
            member,
            score,
            verified_count,
            pending_count,
            tier,
            share_bps,
        });
    }
    Ok(out)
}

/// A contribution with its type's key and its niche.
#[derive(Debug, Clone)]
pub struct ContributionView {
    /// The event.
    pub event: contribution_events::Model,
    /// Its type's key.
    pub type_key: String,
    /// Its niche's slug.
    pub niche_slug: String,
}

/// One contribution with its type and niche.
pub async fn contribution(db: &Db, id: i64) -> Result<ContributionView, ServiceError> {
    contributions_where(db, Some(id), None, None, None, 1)
        .await?
        .pop()
        .ok_or_else(|| ServiceError::NotFound("no such contribution".into()))
}

/// Contributions, newest first, optionally only one person's or only one status.
pub async fn contributions(
    db: &Db,
    user_id: Option<i64>,
    status: Option<ContributionStatus>,
    limit: u64,
) -> Result<Vec<ContributionView>, ServiceError> {
    contributions_where(db, None, None, user_id, status, limit).await
}

/// Contributions of one `status`, newest first, narrowed to a niche and/or a person.
pub async fn contributions_in(
    db: &Db,
    niche_id: Option<i64>,
    user_id: Option<i64>,
    status: ContributionStatus,
    limit: u64,
) -> Result<Vec<ContributionView>, ServiceError> {
    contributions_where(db, None, niche_id, user_id, Some(status), limit).await
}

async fn contributions_where(
    db: &Db,
    id: Option<i64>,
    niche_id: Option<i64>,
    user_id: Option<i64>,
    status: Option<ContributionStatus>,
    limit: u64,
) -> Result<Vec<ContributionView>, ServiceError> {
    let mut query = contribution_events::Entity::find();
    if let Some(id) = id {
        query = query.filter(contribution_events::Column::Id.eq(id));
    }
    if let Some(niche_id) = niche_id {
        query = query.filter(contribution_events::Column::NicheId.eq(niche_id));
    }
    if let Some(user_id) = user_id {
        query = query.filter(contribution_events::Column::UserId.eq(user_id));
    }
    if let Some(status) = status {
        query = query.filter(contribution_events::Column::Status.eq(status));
    }
    let events = query
        .order_by_desc(contribution_events::Column::Id)
        .limit(limit)
        .all(db)
        .await?;
    let types = contribution_types::Entity::find().all(db).await?;
    let niche_ids: Vec<i64> = events.iter().map(|e| e.niche_id).collect();
    let niches = niches::Entity::find()
        .filter(niches::Column::Id.is_in(niche_ids))
        .all(db)
        .await?;
    Ok(events
        .into_iter()
        .map(|event| ContributionView {
            type_key: types
                .iter()
                .find(|t| t.id == event.type_id)
                .map_or_else(String::new, |t| t.key.clone()),
            niche_slug: niches
                .iter()
                .find(|n| n.id == event.niche_id)
                .map_or_else(String::new, |n| n.slug.clone()),
            event,
        })
        .collect())
}

/// A person's record in one niche, as a reviewer weighs their answer: how many of their
/// contributions were verified, rejected, are pending or were reversed, their score and tier.
#[derive(Debug, Clone)]
pub struct ContributorRecord {
    /// Their handle.
    pub handle: String,
    /// Their answers' record in the niche (the trust rule's figures).
    pub record: crate::domain::weighing::Record,
    /// The niche's trust threshold, basis points.
    pub trust_lower_bound_bps: i32,
    /// Verified contributions.
    pub verified_count: i64,
    /// Rejected contributions.
    pub rejected_count: i64,
    /// Contributions awaiting review.
    pub pending_count: i64,
    /// Contributions verified, then reversed.
    pub reversed_count: i64,
    /// Sum of verified points.
    pub score: i64,
    /// The tier the score is in.
    pub tier: Tier,
}

/// `user_id`'s record in `niche_id`: for admins, and for the person themselves.
pub async fn contributor_record(
    db: &Db,
    viewer: Option<&Viewer>,
    niche_id: i64,
    user_id: i64,
) -> Result<ContributorRecord, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    if !viewer.is_admin && viewer.user_id != user_id {
        return Err(ServiceError::Forbidden(
            "only admins see another person's record".into(),
        ));
    }
    let handle = crate::service::people::names::handles(db, [user_id])
        .await?
        .remove(&user_id)
        .unwrap_or_default();
    let statuses: Vec<ContributionStatus> = contribution_events::Entity::find()
        .select_only()
        .column(contribution_events::Column::Status)
        .filter(contribution_events::Column::NicheId.eq(niche_id))
        .filter(contribution_events::Column::UserId.eq(user_id))
        .into_tuple()
        .all(db)
        .await?;
    let count = |status| statuses.iter().filter(|s| **s == status).count() as i64;
    let score = contribution_scores::Entity::find()
        .filter(contribution_scores::Column::NicheId.eq(niche_id))
        .filter(contribution_scores::Column::UserId.eq(user_id))
        .one(db)
        .await?
        .map_or(0, |c| c.score);
    let ladder = scores::ladder(db).await?;
    let tier = scoring::tier_for(score, &ladder)
        .cloned()
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("the tier ladder is empty")))?;
    let record = crate::service::people::weighing::record(db, niche_id, user_id).await?;
    let trust_lower_bound_bps = entity::niches::Entity::find_by_id(niche_id)
        .one(db)
        .await?
        .map_or(
            crate::domain::weighing::DEFAULT_TRUST_LOWER_BOUND_BPS,
            |n| n.trust_lower_bound_bps,
        );
    Ok(ContributorRecord {
        record,
        trust_lower_bound_bps,
        handle,
        verified_count: count(ContributionStatus::Verified),
        rejected_count: count(ContributionStatus::Rejected),
        pending_count: count(ContributionStatus::Pending),
        reversed_count: count(ContributionStatus::Reversed),
        score,
        tier,
    })
}

/// How many times the entries `user_id` wrote in niche `niche_id` were reused: their standing.
async fn reuses_of_author<C: ConnectionTrait>(
    conn: &C,
    niche_id: i64,
    user_id: i64,
) -> Result<u64, ServiceError> {
    let authored = Query::select()
        .column(knowledge_entries::Column::Id)
        .from(knowledge_entries::Entity)
        .and_where(knowledge_entries::Column::NicheId.eq(niche_id))
        .and_where(knowledge_entries::Column::AnsweredBy.eq(user_id))
        .to_owned();
    Ok(knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::EntryId.in_subquery(authored))
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Reuse))
        .count(conn)
        .await?)
}
