//! Fixtures: builder functions that set up exactly what a test needs — niches and intake
//! bodies — through askloop's own services, never shared mutable seed data.

use askloop::db::Db;
use askloop::domain::slug::Slug;
use askloop::service::audit::Actor;
use askloop::service::people::niches::{NewNiche, create_niche};
use entity::niches::{self, NicheStatus};
use serde_json::{Value, json};

/// A niche `slug` in `status`.
pub async fn niche(db: &Db, slug: &str, status: NicheStatus) -> niches::Model {
    create_niche(
        db,
        NewNiche {
            slug: Slug::parse(slug).expect("a valid slug"),
            name: format!("Niche {slug}"),
            status,
        },
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("the niche is created")
}

/// An open niche `slug`.
pub async fn open_niche(db: &Db, slug: &str) -> niches::Model {
    niche(db, slug, NicheStatus::Open).await
}

/// A valid intake body for niche `slug` with external id `external_id`.
pub fn question_body(slug: &str, external_id: &str) -> Value {
    json!({"payload": {
        "nicheSlug": slug,
        "externalId": external_id,
        "title": "Which date?",
        "question": "Early access or 1.0?",
        "context": "Steam lists both an early-access date and a 1.0 date.",
        "urgency": "high",
        "options": [{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}],
    }})
}
