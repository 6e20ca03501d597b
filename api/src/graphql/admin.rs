//! Admin queries and mutations: niches, members, the review queue and manual adjustments.
//! Every resolver checks for an admin through the service, which audits each decision.

use crate::db::Db;
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::Utc;
use entity::niche_members::MemberStatus;

use super::money::AnomalySignal;
use super::types::{
    Contribution, Member, MemberRole, Niche, NicheStatus, RoutingMode, member_view,
};
use super::{caller_of, writer};
use crate::domain::slug::Slug;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::service::people::admin::{self, Decision, NicheChanges};
use crate::service::people::admin_desk;
use crate::service::questions::queue::page_size;
use crate::service::{money::standing, people::niches};

/// A niche to create.
#[derive(InputObject)]
pub struct CreateNicheInput {
    /// 2..63 of a-z, 0-9 and '-'.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Where it starts.
    #[graphql(default_with = "NicheStatus::Open")]
    pub status: NicheStatus,
}

/// Changes to a niche; omitted fields stay as they are.
#[derive(InputObject)]
pub struct UpdateNicheInput {
    /// New name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New status.
    pub status: Option<NicheStatus>,
}

/// A niche's routing to set.
#[derive(InputObject)]
pub struct RoutingInput {
    /// Broadcast, or a first wave.
    pub mode: RoutingMode,
    /// The first wave's size, 1–50 (required for `FIRST_WAVE`, refused for `BROADCAST`).
    pub first_wave: Option<i32>,
}

fn contribution_id(id: &ID) -> Result<i64, ServiceError> {
    id.parse()
        .map_err(|_| ServiceError::BadInput(format!("'{}' is not a contribution id", id.as_str())))
}

/// Admin queries.
#[derive(Default)]
pub struct AdminQuery;

#[Object]
impl AdminQuery {
    /// Every niche, drafts and archived ones included, by name (admins only).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn all_niches(&self, ctx: &Context<'_>) -> Result<Vec<Niche>> {
        let db = ctx.data::<Db>()?;
        let found = admin::all_niches(db, caller_of(ctx)?.viewer())
            .await
            .gql()?;
        Ok(found.into_iter().map(Niche::from).collect())
    }

    /// Contributions awaiting review, newest first (admins only), of one niche and/or one
    /// answerer (a handle) when given.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn review_queue(
        &self,
        ctx: &Context<'_>,
        niche_slug: Option<String>,
        answerer: Option<String>,
        first: Option<i32>,
    ) -> Result<Vec<Contribution>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        let viewer = caller_of(ctx)?.viewer();
        Ok(admin::review_queue(
            db,
            viewer,
            niche_slug.as_deref(),
            answerer.as_deref(),
            first,
        )
        .await
        .gql()?
        .into_iter()
        .map(Contribution::from)
        .collect())
    }
}

/// The numbers on the admin tabs.
#[derive(SimpleObject)]
pub struct AdminCounts {
    /// Contributions awaiting review.
    pub review: i64,
    /// Deliveries that gave up (exhausted).
    pub failed_deliveries: i64,
    /// People owed something (one per person and currency).
    pub owed: i64,
    /// Anomaly signals nobody has acknowledged.
    pub new_signals: i64,
    /// How many admins askloop has: an admin's own answer waits for another one.
    pub admins: i64,
}

/// Something in the review inbox arrived or was decided: read the inbox and its counts again.
#[derive(SimpleObject)]
pub struct ReviewInboxChange {
    /// The event, in the order askloop recorded them.
    pub event: ID,
}

/// What one person is owed in one currency, not yet in a payout.
#[derive(SimpleObject)]
pub struct Owed {
    /// Their handle.
    pub handle: String,
    /// The currency.
    pub currency: String,
    /// How much, minor units (net of clawbacks; more than 0).
    pub amount_minor: i64,
    /// How many allocations make it up.
    pub allocations: i64,
    /// Whether their payout address is verified (scheduling a payout needs it).
    pub address_verified: bool,
}

/// The admin desk's own reads.
#[derive(Default)]
pub struct AdminDeskQuery;

#[Object]
impl AdminDeskQuery {
    /// The numbers on the admin tabs (admins only).
    async fn admin_counts(&self, ctx: &Context<'_>) -> Result<AdminCounts> {
        let db = ctx.data::<Db>()?;
        let counts = admin_desk::counts(db, caller_of(ctx)?.viewer())
            .await
            .gql()?;
        Ok(AdminCounts {
            review: counts.review,
            failed_deliveries: counts.failed_deliveries,
            owed: counts.owed,
            new_signals: counts.new_signals,
            admins: counts.admins,
        })
    }

    /// Everyone owed money not yet in a payout, by handle then currency (admins only).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn owed(&self, ctx: &Context<'_>) -> Result<Vec<Owed>> {
        let db = ctx.data::<Db>()?;
        Ok(admin_desk::owed(db, caller_of(ctx)?.viewer())
            .await
            .gql()?
            .into_iter()
            .map(|o| Owed {
                handle: o.handle,
                currency: o.currency,
                amount_minor: o.amount_minor,
                allocations: o.allocations,
                address_verified: o.address_verified,
            })
            .collect())
    }
}

/// Admin mutations.
#[derive(Default)]
pub struct AdminMutation;

async fn decide(
    ctx: &Context<'_>,
    id: ID,
    decision: Decision,
    note: Option<String>,
) -> Result<Contribution> {
    let (db, caller) = writer(ctx)?;
    let event = admin::review(
        db,
        &super::hint(ctx),
        caller.viewer(),
        contribution_id(&id).gql()?,
        decision,
        note,
        Utc::now(),
    )
    .await
    .gql()?;
    Ok(standing::contribution(db, event.id).await.gql()?.into())
}

async fn member_status(
    ctx: &Context<'_>,
    niche_slug: String,
    handle: String,
    status: MemberStatus,
) -> Result<Member> {
    let (db, caller) = writer(ctx)?;
    let member = admin::set_member_status(
        db,
        &super::hint(ctx),
        caller.viewer(),
        &niche_slug,
        &handle,
        status,
        Utc::now(),
    )
    .await
    .gql()?;
    Ok(member_view(
        &handle.to_lowercase(),
        &niche_slug.to_lowercase(),
        member.role,
        member.status,
        member.share_cap_bps,
    ))
}

#[Object]
impl AdminMutation {
    /// Create a niche.
    async fn create_niche(&self, ctx: &Context<'_>, input: CreateNicheInput) -> Result<Niche> {
        let (db, caller) = writer(ctx)?;
        let slug = Slug::parse(&input.slug)
            .map_err(|e| ServiceError::BadInput(e.to_string()))
            .gql()?;
        let niche = admin::create_niche(
            db,
            caller.viewer(),
            niches::NewNiche {
                slug,
                name: input.name,
                status: input.status.into(),
            },
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(niche.into())
    }

    /// Change how a niche weighs its answers: the trust threshold (0.5–1.0) and the routing of
    /// new questions' notifications (admins only; audited). What is not given stays.
    async fn set_niche_weighing(
        &self,
        ctx: &Context<'_>,
        slug: String,
        trust_lower_bound: Option<f64>,
        routing: Option<RoutingInput>,
    ) -> Result<Niche> {
        let (db, caller) = writer(ctx)?;
        let admin = crate::service::people::access::admin(caller.viewer()).gql()?;
        let first_wave = match routing {
            None => None,
            Some(RoutingInput {
                mode: RoutingMode::Broadcast,
                first_wave: None,
            }) => Some(None),
            Some(RoutingInput {
                mode: RoutingMode::FirstWave,
                first_wave: Some(k),
            }) => Some(Some(k)),
            Some(RoutingInput {
                mode: RoutingMode::Broadcast,
                ..
            }) => {
                return Err(ServiceError::BadInput(
                    "broadcast routing takes no firstWave".into(),
                ))
                .gql();
            }
            Some(RoutingInput { .. }) => {
                return Err(ServiceError::BadInput(
                    "first-wave routing needs firstWave, how many operators go first".into(),
                ))
                .gql();
            }
        };
        let niche = niches::set_weighing(
            db,
            &crate::service::audit::Actor::User(admin.user_id),
            &slug,
            niches::Weighing {
                trust_lower_bound,
                first_wave,
            },
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(niche.into())
    }

    /// Change a niche's name, description or status.
    async fn update_niche(
        &self,
        ctx: &Context<'_>,
        slug: String,
        input: UpdateNicheInput,
    ) -> Result<Niche> {
        let (db, caller) = writer(ctx)?;
        let niche = admin::update_niche(
            db,
            caller.viewer(),
            &slug,
            NicheChanges {
                name: input.name,
                description: input.description,
                status: input.status.map(Into::into),
            },
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(niche.into())
    }

    /// Make a person an active member of a niche.
    async fn add_member(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        handle: String,
        #[graphql(default_with = "MemberRole::Operator")] role: MemberRole,
    ) -> Result<Member> {
        let (db, caller) = writer(ctx)?;
        let member = admin::add_member(
            db,
            &super::hint(ctx),
            caller.viewer(),
            &niche_slug,
            &handle,
            role.into(),
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(member_view(
            &handle.to_lowercase(),
            &niche_slug.to_lowercase(),
            member.role,
            member.status,
            member.share_cap_bps,
        ))
    }

    /// Suspend a member: they stop seeing and answering the niche's questions at once.
    async fn suspend_member(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        handle: String,
    ) -> Result<Member> {
        member_status(ctx, niche_slug, handle, MemberStatus::Suspended).await
    }

    /// Reinstate a suspended member.
    async fn reinstate_member(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        handle: String,
    ) -> Result<Member> {
        member_status(ctx, niche_slug, handle, MemberStatus::Active).await
    }

    /// Verify a pending contribution: its points start to count.
    async fn verify_contribution(
        &self,
        ctx: &Context<'_>,
        id: ID,
        note: Option<String>,
    ) -> Result<Contribution> {
        decide(ctx, id, Decision::Verify, note).await
    }

    /// Acknowledge an anomaly signal: an admin has looked at it (admins only; audited, and
    /// refused for one already acknowledged).
    async fn acknowledge_signal(&self, ctx: &Context<'_>, id: ID) -> Result<AnomalySignal> {
        let (db, caller) = writer(ctx)?;
        let id: i64 = id
            .parse()
            .map_err(|_| ServiceError::BadInput(format!("'{}' is not a signal id", id.as_str())))
            .gql()?;
        let signal = admin_desk::acknowledge_signal(db, caller.viewer(), id, Utc::now())
            .await
            .gql()?;
        Ok(signal.into())
    }

    /// Reject a pending contribution with a reason (required; the answerer and the agent are
    /// told it): it never counts, the agent's charge is given back and the question reopens.
    async fn reject_contribution(
        &self,
        ctx: &Context<'_>,
        id: ID,
        note: Option<String>,
    ) -> Result<Contribution> {
        decide(ctx, id, Decision::Reject, note).await
    }

    /// Reverse a verified contribution with a reason (required; the answerer and the agent are
    /// told it): it keeps its points but leaves the score.
    async fn reverse_contribution(
        &self,
        ctx: &Context<'_>,
        id: ID,
        note: Option<String>,
    ) -> Result<Contribution> {
        decide(ctx, id, Decision::Reverse, note).await
    }

    /// Record a manual adjustment (0..500 points, verified at once) for a member.
    async fn adjust_contribution(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        handle: String,
        points: i64,
        note: String,
    ) -> Result<Contribution> {
        let (db, caller) = writer(ctx)?;
        let event = admin::manual_adjustment(
            db,
            caller.viewer(),
            &niche_slug,
            &handle,
            points,
            note,
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(Contribution::new(
            event,
            "manual_adjustment".into(),
            niche_slug.to_lowercase(),
        ))
    }
}
