//! Withdrawing a question the agent no longer needs (docs/contract.md#withdrawal):
//! [`WithdrawRequest`], the signed route's body, and [`Withdraw`], what it names once checked;
//! and [`QuestionRef`], how every agent request names one of its questions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BadRequest;
use crate::ask::Identifier;
use crate::field::Field;
use crate::limits::{IDENTIFIER_MAX, char_len};

/// Which of its questions an agent means: askloop's id for it, or the agent's own external id
/// (with the niche's slug, needed only when the agent used that external id in several niches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionRef {
    /// askloop's id.
    Id(i64),
    /// The agent's external id.
    External {
        /// The external id.
        external_id: String,
        /// The niche's slug, lowercased.
        niche: Option<String>,
    },
}

/// An id given as text (a string of digits, as GraphQL spells ids), or a refusal naming `field`.
pub fn id_from_text(field: &str, text: &str) -> Result<i64, BadRequest> {
    let text = text.trim();
    text.parse::<i64>()
        .ok()
        .filter(|_| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            BadRequest(format!(
                "{field} must be a whole number, as a number or a string of digits (not '{}')",
                text.chars().take(40).collect::<String>()
            ))
        })
}

/// Which question `questionId` or `externalId` (exactly one) names, `niche` narrowing an
/// external id used in several niches.
pub fn question_ref(
    question_id: Option<i64>,
    external_id: Option<String>,
    niche: Option<String>,
) -> Result<QuestionRef, BadRequest> {
    let external_id = external_id
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty());
    match (question_id, external_id) {
        (Some(id), None) => Ok(QuestionRef::Id(id)),
        (None, Some(external_id)) => {
            // No question's id is longer (intake refuses those).
            if char_len(&external_id) > IDENTIFIER_MAX {
                return Err(BadRequest(format!(
                    "externalId is longer than {IDENTIFIER_MAX} characters"
                )));
            }
            Ok(QuestionRef::External {
                external_id,
                niche: niche
                    .map(|n| n.trim().to_lowercase())
                    .filter(|n| !n.is_empty()),
            })
        }
        (Some(_), Some(_)) => Err(BadRequest(
            "name the question with questionId or externalId, not both".into(),
        )),
        (None, None) => Err(BadRequest(
            "name the question with questionId or externalId".into(),
        )),
    }
}

/// `POST /api/v1/internal/expert-questions/withdraw`: the agent withdraws a question it no
/// longer needs. Name it with `questionId` or `externalId` (exactly one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = WithdrawBody))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WithdrawRequest {
    /// askloop's id of the question, as a number or a string of digits.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>, example = "42"))]
    pub question_id: Field<Identifier>,
    /// The agent's id for the question (at most 200 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The question's niche, needed only when the agent used that external id in several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub niche_slug: Option<String>,
    /// Why (at most 500 characters): kept in the audit log and sent with the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl WithdrawRequest {
    /// A body as received: an unknown field or a field of the wrong type is refused, naming it.
    pub fn from_json(body: &Value) -> Result<Self, BadRequest> {
        serde_path_to_error::deserialize(body).map_err(|err| {
            let path = err.path().to_string();
            BadRequest(if path == "." {
                err.into_inner().to_string()
            } else {
                format!("{path}: {}", err.into_inner())
            })
        })
    }
}

/// What a withdrawal request names and says, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdraw {
    /// The question.
    pub which: QuestionRef,
    /// The agent's reason, if it gave one (checked by the withdrawal itself, which every door
    /// shares).
    pub reason: Option<String>,
}

impl TryFrom<WithdrawRequest> for Withdraw {
    type Error = BadRequest;

    fn try_from(body: WithdrawRequest) -> Result<Self, BadRequest> {
        let id = match body.question_id {
            Field::Absent | Field::Null => None,
            Field::Given(Identifier::Number(n)) => Some(
                n.as_i64()
                    .ok_or_else(|| BadRequest("questionId must be a whole number".into()))?,
            ),
            Field::Given(Identifier::Text(text)) => Some(id_from_text("questionId", &text)?),
            Field::Wrong(_) => {
                return Err(BadRequest(
                    "questionId must be a whole number, as a number or a string of digits".into(),
                ));
            }
        };
        Ok(Withdraw {
            which: question_ref(id, body.external_id, body.niche_slug)?,
            reason: body.reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checked(body: Value) -> Result<Withdraw, String> {
        WithdrawRequest::from_json(&body)
            .and_then(Withdraw::try_from)
            .map_err(|e| e.0)
    }

    #[test]
    fn a_withdrawal_names_its_question_by_exactly_one_id() {
        assert_eq!(
            checked(json!({"questionId": " 42 "})).map(|w| w.which),
            Ok(QuestionRef::Id(42))
        );
        assert_eq!(
            checked(json!({"externalId": "q-1", "nicheSlug": " Games ", "reason": "done"})),
            Ok(Withdraw {
                which: QuestionRef::External {
                    external_id: "q-1".into(),
                    niche: Some("games".into())
                },
                reason: Some("done".into())
            })
        );
        assert_eq!(
            checked(json!({"questionId": 7, "externalId": "q-1"})),
            Err("name the question with questionId or externalId, not both".into())
        );
        assert_eq!(
            checked(json!({})),
            Err("name the question with questionId or externalId".into())
        );
    }

    #[test]
    fn a_malformed_withdrawal_says_which_field() {
        assert_eq!(
            checked(json!({"questionId": 1.5})),
            Err("questionId must be a whole number".into())
        );
        assert_eq!(
            checked(json!({"questionId": true})),
            Err("questionId must be a whole number, as a number or a string of digits".into())
        );
        let unknown = checked(json!({"questionId": 1, "why": "x"})).expect_err("refused");
        assert!(unknown.starts_with("why: unknown field `why`"), "{unknown}");
        let mistyped = checked(json!({"externalId": 5})).expect_err("refused");
        assert!(
            mistyped.starts_with("externalId: invalid type"),
            "{mistyped}"
        );
    }

    #[test]
    fn a_withdrawal_is_sent_with_only_what_it_names() {
        let body = WithdrawRequest {
            external_id: Some("q-1".into()),
            reason: Some("solved".into()),
            ..WithdrawRequest::default()
        };
        assert_eq!(
            serde_json::to_value(body).expect("a body"),
            json!({"externalId": "q-1", "reason": "solved"})
        );
    }
}
