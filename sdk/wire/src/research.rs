//! Research coming back for a question (docs/contract.md#research-results):
//! [`ResearchRequest`], the signed route's body, and [`ResearchResult`], what it says once
//! checked.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BadRequest;
use crate::ask::NicheRef;
use crate::field::Field;
use crate::limits::{CONTEXT_MAX, IDENTIFIER_MAX, cap, char_len};

/// `POST /api/v1/internal/research-results`: research comes back for a waiting question.
// A field of the wrong type reads as one left out (the route has always read them so), and the
// fields may come inside `payload`; unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = ResearchBody))]
#[serde(rename_all = "camelCase")]
pub struct ResearchRequest {
    /// The question's niche (`niche` and `nicheId` are accepted too).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>))]
    pub niche_slug: Field<String>,
    /// `nicheSlug`'s other name.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub niche: Field<String>,
    /// The niche by its number, instead of its slug.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<i64>))]
    pub niche_id: Field<i64>,
    /// The agent's id for the question (at most 200 characters).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub external_id: Field<String>,
    /// The findings, appended under a dated heading (untrusted).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub context: Field<String>,
    /// An event envelope's fields: when an object, the request is read from here.
    #[serde(default, skip_serializing_if = "Field::is_absent")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub payload: Field<Box<ResearchRequest>>,
}

impl ResearchRequest {
    /// `context` for the question `external_id` in the niche `niche_slug`.
    pub fn new(
        niche_slug: impl Into<String>,
        external_id: impl Into<String>,
        context: impl Into<String>,
    ) -> Self {
        ResearchRequest {
            niche_slug: Field::Given(niche_slug.into()),
            external_id: Field::Given(external_id.into()),
            context: Field::Given(context.into()),
            ..ResearchRequest::default()
        }
    }

    /// A body as received; every field is read as sent, for [`ResearchResult::try_from`].
    pub fn from_json(body: &Value) -> Result<Self, BadRequest> {
        // Cannot fail on an object (every field is a `Field`); anything else names nothing.
        Ok(ResearchRequest::deserialize(body).unwrap_or_default())
    }
}

/// Research results as the agent sent them, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResearchResult {
    /// The niche.
    pub niche: NicheRef,
    /// The agent's id for the question.
    pub external_id: String,
    /// The new context (untrusted; capped).
    pub context: String,
}

impl TryFrom<ResearchRequest> for ResearchResult {
    type Error = BadRequest;

    fn try_from(body: ResearchRequest) -> Result<Self, BadRequest> {
        let fields = body.payload.payload_or(&body);
        let bad = |m: &str| BadRequest(m.to_owned());
        let niche = match (
            fields.niche_slug.nonblank().or(fields.niche.nonblank()),
            &fields.niche_id,
        ) {
            (Some(slug), _) => NicheRef::Slug(slug.to_lowercase()),
            (None, Field::Given(id)) => NicheRef::Id(*id),
            (None, _) => return Err(bad("nicheSlug is required")),
        };
        let external_id = fields
            .external_id
            .nonblank()
            .ok_or_else(|| bad("externalId is required"))?;
        // No question's id is longer (intake refuses those); refused here rather than looked up
        // and echoed back in a 404.
        if char_len(external_id) > IDENTIFIER_MAX {
            return Err(BadRequest(format!(
                "externalId is longer than {IDENTIFIER_MAX} characters"
            )));
        }
        Ok(ResearchResult {
            niche,
            external_id: external_id.to_owned(),
            context: cap(
                fields
                    .context
                    .nonblank()
                    .ok_or_else(|| bad("context is required"))?,
                CONTEXT_MAX,
            ),
        })
    }
}
