//! The demo data a first run creates when asked (`askloop serve --demo`): a niche `games`, an
//! operator and an admin. Only on an empty database, so it can never touch real data.

use crate::db::Db;
use chrono::Utc;
use entity::niche_members::MemberRole;
use entity::niches::NicheStatus;
use entity::{niches, users};
use sea_orm::{EntityTrait, PaginatorTrait};

use crate::domain::slug::Slug;
use crate::domain::tokens::new_token;
use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::audit::Actor;
use crate::service::people::accounts::{self, NewUser};
use crate::service::people::niches::{NewNiche, create_niche};

/// How to sign in to the demo.
#[derive(Debug, Clone)]
pub struct DemoLogins {
    /// `(handle, password)` of the operator of `games`.
    pub operator: (String, String),
    /// `(handle, password)` of the admin.
    pub admin: (String, String),
}

/// Seed the demo if the database has no users and no niches; `None` when it was not empty.
pub async fn seed_demo(db: &Db) -> Result<Option<DemoLogins>, ServiceError> {
    let people = users::Entity::find().count(db).await?;
    let niche_count = niches::Entity::find().count(db).await?;
    if people > 0 || niche_count > 0 {
        return Ok(None);
    }
    let now = Utc::now();
    let actor = Actor::System;
    let slug = Slug::parse("games").map_err(|e| ServiceError::Internal(e.into()))?;
    create_niche(
        db,
        NewNiche {
            slug,
            name: "Indie games".into(),
            status: NicheStatus::Open,
        },
        &actor,
        now,
    )
    .await?;
    let operator_password = demo_password();
    let admin_password = demo_password();
    accounts::create_user(
        db,
        NewUser {
            handle: "operator".into(),
            email: "operator@askloop.invalid".into(),
            password: operator_password.clone(),
            admin: false,
        },
        &actor,
        now,
    )
    .await?;
    accounts::create_user(
        db,
        NewUser {
            handle: "admin".into(),
            email: "admin@askloop.invalid".into(),
            password: admin_password.clone(),
            admin: true,
        },
        &actor,
        now,
    )
    .await?;
    accounts::add_member(
        db,
        &ChangeHint::none(),
        "games",
        "operator",
        MemberRole::Operator,
        &actor,
        now,
    )
    .await?;
    Ok(Some(DemoLogins {
        operator: ("operator".into(), operator_password),
        admin: ("admin".into(), admin_password),
    }))
}

/// A fresh password for a demo account: printed once, never stored in plain text.
fn demo_password() -> String {
    new_token("").chars().take(20).collect()
}
