//! Niches in GraphQL.

use async_graphql::{Context, Object, Result, SimpleObject};
use entity::niches;
use sea_orm::DatabaseConnection;

use crate::error::GqlResultExt;
use crate::service;

/// A niche: the field an agent works in.
#[derive(SimpleObject)]
pub struct Niche {
    /// Unique, lowercased.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// `draft`, `open`, `operated` or `archived`.
    pub status: String,
    /// What the niche covers.
    pub description: String,
}

impl From<niches::Model> for Niche {
    fn from(model: niches::Model) -> Self {
        let status = match model.status {
            niches::NicheStatus::Draft => "draft",
            niches::NicheStatus::Open => "open",
            niches::NicheStatus::Operated => "operated",
            niches::NicheStatus::Archived => "archived",
        };
        Self {
            slug: model.slug,
            name: model.name,
            status: status.to_owned(),
            description: model.description,
        }
    }
}

/// Niche queries.
#[derive(Default)]
pub struct NicheQuery;

#[Object]
impl NicheQuery {
    /// The niches taking questions (open or operated), by name.
    async fn niches(&self, ctx: &Context<'_>) -> Result<Vec<Niche>> {
        let db = ctx.data::<DatabaseConnection>()?;
        let found = service::niches::list_public_niches(db).await.gql()?;
        Ok(found.into_iter().map(Niche::from).collect())
    }
}
