//! The signed revenue route's body (docs/contract.md#revenue-and-payouts), parsed and checked
//! before anything is booked: pure, like intake's parser beside it.

use serde_json::Value;

use crate::domain::ledger::{self, Costs};
use crate::domain::text::{IDENTIFIER_MAX, char_len};

/// Where revenue may come from through the signed route.
pub const SOURCE_TYPES: [&str; 4] = ["subscription", "usage", "sponsorship", "one_time"];
/// The source of bounties askloop books itself when an answer settles a question.
pub const BOUNTY_SOURCE: &str = "agent_bounty";
/// The source of what completed tasks cost, booked like bounties but counted apart.
pub const TASK_SOURCE: &str = "agent_task";
/// The currency bounties are counted in.
pub const BOUNTY_CURRENCY: &str = "USD";

/// A revenue event as the route received it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRevenue {
    /// The niche.
    pub niche_slug: String,
    /// The source's id.
    pub external_id: String,
    /// One of [`SOURCE_TYPES`].
    pub source_type: String,
    /// Gross, minor units.
    pub gross: i64,
    /// The costs.
    pub costs: Costs,
    /// ISO 4217, upper case.
    pub currency: String,
}

/// Parse and check a revenue event (also inside `payload`); a refusal says what is wrong.
pub fn parse(body: &Value) -> Result<NewRevenue, String> {
    let fields = body
        .get("payload")
        .filter(|p| p.is_object())
        .unwrap_or(body);
    let bad = |m: String| m;
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let amount = |key: &str, required: bool| -> Result<i64, String> {
        match fields.get(key) {
            None | Some(Value::Null) if !required => Ok(0),
            None | Some(Value::Null) => Err(bad(format!("{key} is required"))),
            Some(v) => {
                let n = v.as_i64().filter(|n| *n >= 0).ok_or_else(|| {
                    bad(format!(
                        "{key} must be a whole number of minor units, 0 or more"
                    ))
                })?;
                match ledger::amount_problem(key, n) {
                    Some(problem) => Err(bad(problem)),
                    None => Ok(n),
                }
            }
        }
    };
    let niche_slug = text("nicheSlug")
        .ok_or_else(|| bad("nicheSlug is required".into()))?
        .to_lowercase();
    let external_id = text("externalId").ok_or_else(|| bad("externalId is required".into()))?;
    // Counted in characters, as every limit is: bytes would refuse a short id in another script.
    if char_len(external_id) > IDENTIFIER_MAX {
        return Err(bad(format!(
            "externalId is longer than {IDENTIFIER_MAX} characters"
        )));
    }
    if external_id.starts_with(BOUNTY_SOURCE) {
        return Err(bad(format!(
            "externalIds starting with '{BOUNTY_SOURCE}' are askloop's own (charged bounties)"
        )));
    }
    let source_type = text("sourceType").ok_or_else(|| bad("sourceType is required".into()))?;
    if !SOURCE_TYPES.contains(&source_type) {
        return Err(bad(format!(
            "sourceType '{source_type}' is not one of: {}",
            SOURCE_TYPES.join(", ")
        )));
    }
    let currency = text("currency").ok_or_else(|| bad("currency is required".into()))?;
    if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(bad(format!(
            "currency '{currency}' is not a three-letter code"
        )));
    }
    Ok(NewRevenue {
        niche_slug,
        external_id: external_id.to_owned(),
        source_type: source_type.to_owned(),
        gross: amount("grossMinor", true)?,
        costs: Costs {
            processing: amount("processingMinor", false)?,
            network: amount("networkMinor", false)?,
            infra: amount("infraMinor", false)?,
            refund: amount("refundMinor", false)?,
        },
        currency: currency.to_ascii_uppercase(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse;

    #[test]
    fn an_event_inside_payload_parses_with_its_currency_upper_cased() {
        let event = parse(
            &json!({"payload": {"nicheSlug": "Games", "externalId": "inv-1",
            "sourceType": "usage", "grossMinor": 1000, "infraMinor": 50, "currency": "eur"}}),
        )
        .expect("a valid event");
        assert_eq!(event.niche_slug, "games");
        assert_eq!(event.currency, "EUR");
        assert_eq!(
            (event.gross, event.costs.infra, event.costs.refund),
            (1000, 50, 0)
        );
    }

    #[test]
    fn each_refusal_names_what_is_wrong() {
        let base = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "usage",
            "grossMinor": 1000, "currency": "EUR"});
        let with = |key: &str, value: serde_json::Value| {
            let mut body = base.clone();
            body[key] = value;
            parse(&body).expect_err("refused")
        };
        assert_eq!(with("nicheSlug", json!(" ")), "nicheSlug is required");
        assert!(with("sourceType", json!("gift")).starts_with("sourceType 'gift' is not one of"));
        assert!(with("currency", json!("EURO")).contains("three-letter code"));
        assert!(with("grossMinor", json!(-1)).contains("whole number of minor units"));
        assert!(with("externalId", json!("agent_bounty:7")).contains("askloop's own"));
    }
}
