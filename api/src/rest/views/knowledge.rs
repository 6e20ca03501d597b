//! The agent's knowledge routes: search and reuse, their bodies (the wire crate's typed requests)
//! and their answers.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

/// The knowledge search's body: the wire crate's typed request, documented as
/// `KnowledgeSearchBody`.
pub use crate::domain::knowledge::KnowledgeSearchRequest as KnowledgeSearchBody;

/// The search's answer: the niche's current entries, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct KnowledgeSearchResponse {
    /// The entries found.
    pub results: Vec<KnowledgeResult>,
}

/// One current knowledge entry found by an agent's search.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeResult {
    /// The entry's id.
    pub entry_id: i64,
    /// Its version (1 for its question's first entry).
    pub version: i64,
    /// The question's title.
    pub title: String,
    /// The answer's words.
    pub answer: Option<String>,
    /// The chosen option's id.
    pub option_id: Option<String>,
    /// The chosen option's label.
    pub option_label: Option<String>,
    /// When it was verified.
    pub verified_at: DateTime<Utc>,
    /// How well it matched (higher is better; comparable only within one response).
    pub score: f64,
    /// For a similar entry: the share of the question's content words it holds, 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likeness: Option<f64>,
}

impl KnowledgeResult {
    /// A found entry as a result.
    pub fn of(found: crate::service::knowledge::Found, likeness_bps: Option<i32>) -> Self {
        Self {
            entry_id: found.entry.id,
            version: found.entry.version,
            title: found.entry.title,
            answer: found.entry.answer,
            option_id: found.entry.option_id,
            option_label: found.entry.option_label,
            verified_at: found.entry.verified_at,
            score: found.score,
            likeness: likeness_bps.map(|bps| f64::from(bps) / 10_000.0),
        }
    }
}

/// The reuse route's body: the wire crate's typed request, documented as
/// `KnowledgeReuseBody`.
pub use crate::domain::knowledge::ReuseRequest as KnowledgeReuseBody;

/// Where an entry is in its life.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KnowledgeStatusWord {
    /// The version to rely on.
    Current,
    /// A newer version replaced it.
    Superseded,
    /// Withdrawn: its answer was rejected or reversed.
    Retracted,
}

impl From<entity::knowledge_entries::KnowledgeStatus> for KnowledgeStatusWord {
    fn from(status: entity::knowledge_entries::KnowledgeStatus) -> Self {
        use entity::knowledge_entries::KnowledgeStatus as S;
        match status {
            S::Current => Self::Current,
            S::Superseded => Self::Superseded,
            S::Retracted => Self::Retracted,
        }
    }
}

/// A reuse as recorded, with the entry relied on as it is now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeReuseResponse {
    /// The reuse's id.
    pub reuse_id: i64,
    /// The agent's id for it.
    pub external_id: String,
    /// The entry relied on.
    pub entry_id: i64,
    /// Its version.
    pub version: i64,
    /// Its status now (a replayed reuse of an entry since replaced or withdrawn says so).
    pub status: KnowledgeStatusWord,
    /// The question's title.
    pub title: String,
    /// The answer's words.
    pub answer: Option<String>,
    /// The chosen option's id.
    pub option_id: Option<String>,
    /// The chosen option's label.
    pub option_label: Option<String>,
    /// How it was verified: `trust` (on arrival) or `review`.
    pub verification: String,
    /// When it was verified.
    pub verified_at: DateTime<Utc>,
    /// What the reuse cost from the niche's budget, minor units (0 when free).
    pub charged_minor: i64,
    /// Whether the cost was given back (the entry was retracted).
    pub refunded: bool,
    /// Whether this external id had been recorded before.
    pub duplicate: bool,
}

impl KnowledgeReuseResponse {
    /// A recorded reuse as the agent reads it.
    pub fn of(reused: crate::service::knowledge::reuse::Reused) -> Self {
        let entry = reused.entry;
        Self {
            reuse_id: reused.reuse.id,
            external_id: reused.reuse.external_id.unwrap_or_default(),
            entry_id: entry.id,
            version: entry.version,
            status: entry.status.into(),
            title: entry.title,
            answer: entry.answer,
            option_id: entry.option_id,
            option_label: entry.option_label,
            verification: match entry.verification {
                entity::knowledge_entries::Verification::Trust => "trust".into(),
                entity::knowledge_entries::Verification::Review => "review".into(),
            },
            verified_at: entry.verified_at,
            charged_minor: reused.reuse.amount_minor,
            refunded: reused.refunded,
            duplicate: reused.duplicate,
        }
    }
}
