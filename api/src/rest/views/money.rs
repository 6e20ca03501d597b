//! The agent's money routes: revenue events and anomaly signals, their bodies and answers.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /api/v1/internal/revenue-events`: money came in for a niche.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueBody {
    /// The niche.
    pub niche_slug: String,
    /// Unique within the niche (at most 200 characters; not starting with `agent_bounty`).
    pub external_id: String,
    /// `subscription`, `usage`, `sponsorship` or `one_time`.
    #[schema(example = "subscription")]
    pub source_type: String,
    /// Gross amount in minor units (≥ 0).
    #[schema(minimum = 0)]
    pub gross_minor: i64,
    /// Processing costs (default 0).
    #[schema(minimum = 0)]
    pub processing_minor: Option<i64>,
    /// Network costs (default 0).
    #[schema(minimum = 0)]
    pub network_minor: Option<i64>,
    /// Infrastructure costs (default 0).
    #[schema(minimum = 0)]
    pub infra_minor: Option<i64>,
    /// Refunds (default 0).
    #[schema(minimum = 0)]
    pub refund_minor: Option<i64>,
    /// Three letters.
    #[schema(example = "EUR")]
    pub currency: String,
}

/// The revenue route's answer (201 booked, 200 booked before).
#[derive(Debug, Serialize, ToSchema)]
pub struct RevenueResponse {
    /// Whether the external id was booked before (nothing booked again).
    pub duplicate: bool,
    /// The event.
    pub event: RevenueEventView,
    /// How its net was split.
    pub allocations: Vec<AllocationView>,
}

/// A booked revenue event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevenueEventView {
    /// askloop's id.
    pub id: i64,
    /// The agent's id.
    pub external_id: String,
    /// Its source type.
    pub source_type: String,
    /// Gross, minor units.
    pub gross_minor: i64,
    /// Net: gross minus costs, never below 0.
    pub net_minor: i64,
    /// Three letters.
    pub currency: String,
}

/// One part of a revenue event's net.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllocationView {
    /// Who receives it; `null` is the platform.
    pub user_id: Option<i64>,
    /// Their share in basis points.
    pub share_bps: i32,
    /// The amount, minor units.
    pub amount_minor: i64,
}

/// `POST /api/v1/internal/anomaly-signals`: a monitor's finding, logged for admins only.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalBody {
    /// The monitor's id for the signal (at most 200 characters); the same one again appends
    /// nothing.
    pub signal_id: String,
    /// `question`, `answer`, `operator` or `agent`.
    pub subject_type: String,
    /// What it is about (string or number; at most 200 characters).
    #[schema(value_type = String)]
    pub subject_id: serde_json::Value,
    /// The kind of finding (at most 200 characters).
    pub kind: String,
    /// `low`, `medium`, `high` or `critical`.
    pub severity: String,
    /// The finding (at most 4000 characters).
    pub finding: String,
}

/// The anomaly route's answer (201 appended, 200 seen before).
#[derive(Debug, Serialize, ToSchema)]
pub struct SignalResponse {
    /// Whether the signal id was seen before.
    pub duplicate: bool,
    /// The logged signal.
    pub signal: SignalRef,
}

/// A logged signal.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalRef {
    /// askloop's id.
    pub id: i64,
    /// The monitor's id.
    pub signal_id: String,
}
