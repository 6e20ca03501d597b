//! What the measuring tools (`bench-queue`, `flood`, `contention`) start from: a fresh open
//! niche and operators of it, signed in.

use chrono::Utc;
use entity::niche_members::MemberRole;
use entity::niches::{self, NicheStatus};

use askloop::db::Db;
use askloop::domain::handle::Handle;
use askloop::domain::slug::Slug;
use askloop::live::ChangeHint;
use askloop::service::audit::Actor;
use askloop::service::people::accounts::{self, NewUser, new_token};
use askloop::service::people::niches::{NewNiche, create_niche};
use askloop::service::people::sessions;

/// A fresh niche and its operator.
pub struct Seeded {
    /// The niche (its slug is `<prefix>-<run id>`).
    pub niche: niches::Model,
    /// The operator's session token.
    pub token: String,
}

/// Create an open niche named `name` with slug `<prefix>-<random>` and an operator of it with the
/// same handle, signed in.
pub async fn niche_with_operator(db: &Db, prefix: &str, name: &str) -> anyhow::Result<Seeded> {
    let run_id: String = new_token("").chars().take(8).collect();
    let slug = format!("{prefix}-{run_id}");
    let now = Utc::now();
    let niche = create_niche(
        db,
        NewNiche {
            slug: Slug::parse(&slug)?,
            name: name.into(),
            status: NicheStatus::Open,
        },
        &Actor::Cli,
        now,
    )
    .await?;
    let token = signed_in_operator(db, &slug, &slug).await?;
    Ok(Seeded { niche, token })
}

/// Create `handle`, make them an operator of niche `slug` and sign them in; their session token.
pub async fn signed_in_operator(db: &Db, slug: &str, handle: &str) -> anyhow::Result<String> {
    signed_in(db, handle, Some(slug)).await
}

/// Create `handle`, an admin, and sign them in; their session token.
pub async fn signed_in_admin(db: &Db, handle: &str) -> anyhow::Result<String> {
    signed_in(db, handle, None).await
}

/// Create `handle` — an operator of niche `slug`, or an admin without one — and sign them in.
async fn signed_in(db: &Db, handle: &str, operator_of: Option<&str>) -> anyhow::Result<String> {
    let now = Utc::now();
    let handle = handle.to_owned();
    let password = new_token("");
    accounts::create_user(
        db,
        NewUser {
            handle: handle.clone(),
            email: format!("{handle}@askloop.invalid"),
            password: password.clone(),
            admin: operator_of.is_none(),
        },
        &Actor::Cli,
        now,
    )
    .await?;
    if let Some(slug) = operator_of {
        accounts::add_member(
            db,
            &ChangeHint::none(),
            slug,
            &handle,
            MemberRole::Operator,
            &Actor::Cli,
            now,
        )
        .await?;
    }
    Ok(sessions::login(
        db,
        &Handle::parse(&handle)?,
        &password,
        sessions::SignInPlace::default(),
        askloop::service::people::passwords::Share::local(),
        now,
    )
    .await?
    .token)
}
