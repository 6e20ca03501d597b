//! The public list of niches.

use crate::db::Db;
use async_graphql::{Context, Object, Result};

use super::types::Niche;
use crate::graphql::error_door::GqlResultExt;
use crate::service;

/// Niche queries.
#[derive(Default)]
pub struct NicheQuery;

#[Object]
impl NicheQuery {
    /// The niches taking questions (open or operated), by name.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn niches(&self, ctx: &Context<'_>) -> Result<Vec<Niche>> {
        let db = ctx.data::<Db>()?;
        let found = service::people::niches::list_public_niches(db)
            .await
            .gql()?;
        Ok(found.into_iter().map(Niche::from).collect())
    }
}
