//! The tier ladder and my contributions.

use crate::db::Db;
use async_graphql::{Context, Object, Result};

use super::caller_of;
use super::types::{Contribution, Tier};
use crate::graphql::error_door::GqlResultExt;
use crate::service::questions::queue::page_size;
use crate::service::{money::scores, money::standing, people::access};

/// Score queries.
#[derive(Default)]
pub struct ScoreQuery;

#[Object]
impl ScoreQuery {
    /// The tier ladder, lowest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn tiers(&self, ctx: &Context<'_>) -> Result<Vec<Tier>> {
        let db = ctx.data::<Db>()?;
        Ok(scores::ladder(db)
            .await
            .gql()?
            .into_iter()
            .map(Tier::from)
            .collect())
    }

    /// My contributions, newest first.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn my_contributions(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> Result<Vec<Contribution>> {
        let db = ctx.data::<Db>()?;
        let viewer = access::signed_in(caller_of(ctx)?.viewer()).gql()?;
        let first = page_size(first).gql()?;
        Ok(
            standing::contributions(db, Some(viewer.user_id), None, first)
                .await
                .gql()?
                .into_iter()
                .map(Contribution::from)
                .collect(),
        )
    }
}
