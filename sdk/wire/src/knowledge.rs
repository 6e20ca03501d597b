//! An agent and the niche's knowledge (docs/contract.md#knowledge): searching it
//! ([`KnowledgeSearchRequest`] into [`AgentSearch`]) and relying on an entry
//! ([`ReuseRequest`] into [`NewReuse`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BadRequest;
use crate::ask::Identifier;
use crate::field::Field;
use crate::limits::{IDENTIFIER_MAX, char_len};

/// The longest search text, in characters.
pub const QUERY_MAX: usize = 1000;
/// The most results an agent's search returns.
pub const MAX_AGENT_RESULTS: u64 = 20;
/// How many results an agent's search returns when it names no number.
pub const DEFAULT_AGENT_RESULTS: u64 = 5;

/// `POST /api/v1/internal/knowledge/search`: an agent searches a niche's knowledge.
// A text field of the wrong type reads as one left out (the route has always read them so), and
// the fields may come inside `payload`; unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = KnowledgeSearchBody))]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeSearchRequest {
    /// The niche, one the agent may ask in.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub niche_slug: Field<String>,
    /// What to look for (at most 1000 characters): entries holding any of its words, best first.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub query: Field<String>,
    /// How many results, 1 to 20 (default 5).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<u64>, minimum = 1, maximum = 20))]
    pub first: Field<u64>,
    /// An event envelope's fields: when an object, the request is read from here.
    #[serde(default, skip_serializing_if = "Field::is_absent")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub payload: Field<Box<KnowledgeSearchRequest>>,
}

impl KnowledgeSearchRequest {
    /// A search of `niche_slug`'s knowledge for `query`, `first` results (5 when `None`).
    pub fn new(
        niche_slug: impl Into<String>,
        query: impl Into<String>,
        first: Option<u64>,
    ) -> Self {
        KnowledgeSearchRequest {
            niche_slug: Field::Given(niche_slug.into()),
            query: Field::Given(query.into()),
            first: first.into(),
            payload: Field::Absent,
        }
    }

    /// A body as received; every field is read as sent, for [`AgentSearch::try_from`].
    pub fn from_json(body: &Value) -> Result<Self, BadRequest> {
        // Cannot fail on an object (every field is a `Field`); anything else names nothing.
        Ok(KnowledgeSearchRequest::deserialize(body).unwrap_or_default())
    }
}

/// An agent's search, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSearch {
    /// The niche, by slug.
    pub niche_slug: String,
    /// What to look for: any of its words, ranked.
    pub query: String,
    /// How many, 1 to [`MAX_AGENT_RESULTS`] (default 5).
    pub first: u64,
}

impl TryFrom<KnowledgeSearchRequest> for AgentSearch {
    type Error = BadRequest;

    fn try_from(body: KnowledgeSearchRequest) -> Result<Self, BadRequest> {
        let fields = body.payload.payload_or(&body);
        let bad = |m: String| BadRequest(m);
        let niche_slug = fields
            .niche_slug
            .nonblank()
            .ok_or_else(|| bad("nicheSlug is required".into()))?
            .to_lowercase();
        let query = fields
            .query
            .nonblank()
            .ok_or_else(|| bad("query is required".into()))?;
        if char_len(query) > QUERY_MAX {
            return Err(bad(format!("a search is at most {QUERY_MAX} characters")));
        }
        let first = match &fields.first {
            Field::Absent | Field::Null => DEFAULT_AGENT_RESULTS,
            Field::Given(n) if (1..=MAX_AGENT_RESULTS).contains(n) => *n,
            Field::Given(_) | Field::Wrong(_) => {
                return Err(bad(format!(
                    "first must be a whole number from 1 to {MAX_AGENT_RESULTS}"
                )));
            }
        };
        Ok(AgentSearch {
            niche_slug,
            query: query.to_owned(),
            first,
        })
    }
}

/// `POST /api/v1/internal/knowledge/reuse`: an agent relies on a knowledge entry.
// The fields may come inside `payload`; unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = KnowledgeReuseBody))]
#[serde(rename_all = "camelCase")]
pub struct ReuseRequest {
    /// The entry (a number, or a string of digits), current and of a niche the agent may ask in.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = i64, required = true))]
    pub entry_id: Field<Identifier>,
    /// The agent's id for this reuse, unique in the niche (at most 200 characters): the same id
    /// again records nothing more and answers with the first reuse.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub external_id: Field<String>,
    /// An event envelope's fields: when an object, the request is read from here.
    #[serde(default, skip_serializing_if = "Field::is_absent")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub payload: Field<Box<ReuseRequest>>,
}

impl ReuseRequest {
    /// A body as received; every field is read as sent, for [`NewReuse::try_from`].
    pub fn from_json(body: &Value) -> Result<Self, BadRequest> {
        // Cannot fail on an object (every field is a `Field`); anything else names nothing.
        Ok(ReuseRequest::deserialize(body).unwrap_or_default())
    }
}

/// A reuse as an agent sends it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReuse {
    /// The entry relied on.
    pub entry_id: i64,
    /// The agent's id for this reuse: the same id again records nothing more.
    pub external_id: String,
}

impl TryFrom<ReuseRequest> for NewReuse {
    type Error = BadRequest;

    /// An id may come as a number or as a string of digits, as GraphQL spells ids.
    fn try_from(body: ReuseRequest) -> Result<Self, BadRequest> {
        let fields = body.payload.payload_or(&body);
        let bad = |m: &str| BadRequest(m.to_owned());
        let entry_id = match &fields.entry_id {
            Field::Given(Identifier::Number(n)) => n.as_i64(),
            Field::Given(Identifier::Text(s)) => s.trim().parse::<i64>().ok(),
            Field::Absent | Field::Null => return Err(bad("entryId is required")),
            Field::Wrong(_) => None,
        }
        .filter(|id| *id > 0)
        .ok_or_else(|| bad("entryId must be a positive whole number"))?;
        let external_id = match &fields.external_id {
            Field::Given(s) => s.trim(),
            Field::Absent | Field::Null => return Err(bad("externalId is required")),
            Field::Wrong(_) => return Err(bad("externalId must be a string")),
        };
        if external_id.is_empty() {
            return Err(bad("externalId is required"));
        }
        if char_len(external_id) > IDENTIFIER_MAX {
            return Err(BadRequest(format!(
                "externalId is longer than {IDENTIFIER_MAX} characters"
            )));
        }
        if external_id.chars().any(char::is_control) {
            return Err(bad("externalId holds a control character"));
        }
        Ok(NewReuse {
            entry_id,
            external_id: external_id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn search(body: Value) -> Result<AgentSearch, String> {
        KnowledgeSearchRequest::from_json(&body)
            .and_then(AgentSearch::try_from)
            .map_err(|e| e.0)
    }

    fn reuse(body: Value) -> Result<NewReuse, String> {
        ReuseRequest::from_json(&body)
            .and_then(NewReuse::try_from)
            .map_err(|e| e.0)
    }

    #[test]
    fn a_search_names_a_niche_and_a_query_and_takes_five_by_default() {
        assert_eq!(
            search(json!({"payload": {"nicheSlug": " Games ", "query": " dates "}})),
            Ok(AgentSearch {
                niche_slug: "games".into(),
                query: "dates".into(),
                first: 5
            })
        );
        assert_eq!(
            search(json!({"nicheSlug": 7, "query": "q"})),
            Err("nicheSlug is required".into())
        );
        assert_eq!(
            search(json!({"nicheSlug": "g", "query": "q", "first": 21})),
            Err("first must be a whole number from 1 to 20".into())
        );
        assert_eq!(
            search(json!({"nicheSlug": "g", "query": "q", "first": "3"})),
            Err("first must be a whole number from 1 to 20".into())
        );
        assert_eq!(
            search(json!({"nicheSlug": "g", "query": "x".repeat(1001)})),
            Err("a search is at most 1000 characters".into())
        );
    }

    #[test]
    fn a_reuse_names_a_positive_entry_and_its_own_id() {
        assert_eq!(
            reuse(json!({"entryId": " 12 ", "externalId": " r-1 "})),
            Ok(NewReuse {
                entry_id: 12,
                external_id: "r-1".into()
            })
        );
        for (body, message) in [
            (json!({"externalId": "r"}), "entryId is required"),
            (
                json!({"entryId": 0, "externalId": "r"}),
                "entryId must be a positive whole number",
            ),
            (
                json!({"entryId": [1], "externalId": "r"}),
                "entryId must be a positive whole number",
            ),
            (json!({"entryId": 1}), "externalId is required"),
            (
                json!({"entryId": 1, "externalId": 5}),
                "externalId must be a string",
            ),
            (
                json!({"entryId": 1, "externalId": "a\u{7}b"}),
                "externalId holds a control character",
            ),
        ] {
            assert_eq!(reuse(body), Err(message.to_owned()));
        }
    }
}
