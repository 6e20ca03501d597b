//! An agent reading its questions (docs/contract.md#looking-up-questions): [`LookupRequest`],
//! the signed route's body, and [`Lookup`], what it asks once checked.

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BadRequest;
use crate::field::Field;

/// The most external ids one lookup may name.
pub const MAX_IDS: usize = 100;
/// The longest a lookup may wait.
pub const MAX_WAIT_SECS: u64 = 55;

/// `POST /api/v1/internal/expert-questions/lookup`: read the agent's own questions.
// The fields may come inside `payload`; unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = LookupBody))]
#[serde(rename_all = "camelCase")]
pub struct LookupRequest {
    /// The questions' niche.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub niche_slug: Field<String>,
    /// The agent's ids for them, 1 to 100 (repeated ones count once).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(
        feature = "utoipa",
        schema(value_type = Vec<String>, required = true, min_items = 1, max_items = 100)
    )]
    pub external_ids: Field<Vec<Field<String>>>,
    /// Hold the request up to this long until one of them changes (long polling).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<u64>, minimum = 0, maximum = 55))]
    pub wait_seconds: Field<u64>,
    /// An event envelope's fields: when an object, the request is read from here.
    #[serde(default, skip_serializing_if = "Field::is_absent")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub payload: Field<Box<LookupRequest>>,
}

impl LookupRequest {
    /// The questions `external_ids` in the niche `niche_slug`, waiting up to `wait_seconds`.
    pub fn new(niche_slug: &str, external_ids: &[&str], wait_seconds: Option<u64>) -> Self {
        LookupRequest {
            niche_slug: Field::Given(niche_slug.to_owned()),
            external_ids: Field::Given(
                external_ids
                    .iter()
                    .map(|id| Field::Given((*id).to_owned()))
                    .collect(),
            ),
            wait_seconds: wait_seconds.into(),
            payload: Field::Absent,
        }
    }

    /// A body as received; every field is read as sent, for [`Lookup::try_from`].
    pub fn from_json(body: &Value) -> Result<Self, BadRequest> {
        // Cannot fail on an object (every field is a `Field`); anything else names nothing.
        Ok(LookupRequest::deserialize(body).unwrap_or_default())
    }
}

/// A lookup, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The niche's slug.
    pub niche_slug: String,
    /// The questions, by the agent's ids, in the order asked (duplicates dropped).
    pub external_ids: Vec<String>,
    /// How long to wait for a change, if at all.
    pub wait: Option<Duration>,
}

impl TryFrom<LookupRequest> for Lookup {
    type Error = BadRequest;

    fn try_from(body: LookupRequest) -> Result<Self, BadRequest> {
        let fields = body.payload.payload_or(&body);
        let bad = |m: String| BadRequest(m);
        let niche_slug = fields
            .niche_slug
            .nonblank()
            .ok_or_else(|| bad("nicheSlug is required".into()))?
            .to_lowercase();
        let Field::Given(ids) = &fields.external_ids else {
            return Err(bad("externalIds must be a list of strings".into()));
        };
        if ids.is_empty() || ids.len() > MAX_IDS {
            return Err(bad(format!(
                "externalIds must name 1 to {MAX_IDS} questions"
            )));
        }
        let mut seen = HashSet::new();
        let mut external_ids = Vec::with_capacity(ids.len());
        for id in ids {
            // Bytes, not characters, as the route has always counted here.
            let id = match id {
                Field::Given(s) => Some(s.trim()).filter(|s| !s.is_empty() && s.len() <= 200),
                _ => None,
            }
            .ok_or_else(|| bad("each externalId must be a string of 1 to 200 characters".into()))?;
            if seen.insert(id.to_owned()) {
                external_ids.push(id.to_owned());
            }
        }
        let wait = match &fields.wait_seconds {
            Field::Absent | Field::Null | Field::Given(0) => None,
            Field::Given(secs) if *secs <= MAX_WAIT_SECS => Some(Duration::from_secs(*secs)),
            Field::Given(_) | Field::Wrong(_) => {
                return Err(bad(format!(
                    "waitSeconds must be a whole number from 0 to {MAX_WAIT_SECS}"
                )));
            }
        };
        Ok(Lookup {
            niche_slug,
            external_ids,
            wait,
        })
    }
}
