//! Turning ids into the names people read: user ids into handles, niche ids into slugs or whole
//! niches. One query per batch (an `IN` list of the distinct ids), so a page of rows costs one
//! look-up, never one per row.

use std::collections::{BTreeSet, HashMap};

use entity::{niches, users};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use crate::error::ServiceError;

fn distinct(ids: impl IntoIterator<Item = i64>) -> BTreeSet<i64> {
    ids.into_iter().collect()
}

/// The handles of the users `ids` names (missing ids are simply absent).
pub async fn handles<C: ConnectionTrait>(
    db: &C,
    ids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, String>, ServiceError> {
    let ids = distinct(ids);
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(users::Entity::find()
        .filter(users::Column::Id.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|u| (u.id, u.handle))
        .collect())
}

/// The niches `ids` names, by id.
pub async fn niches<C: ConnectionTrait>(
    db: &C,
    ids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, niches::Model>, ServiceError> {
    let ids = distinct(ids);
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(niches::Entity::find()
        .filter(niches::Column::Id.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n))
        .collect())
}

/// The slugs of the niches `ids` names.
pub async fn slugs<C: ConnectionTrait>(
    db: &C,
    ids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, String>, ServiceError> {
    Ok(niches(db, ids)
        .await?
        .into_iter()
        .map(|(id, n)| (id, n.slug))
        .collect())
}
