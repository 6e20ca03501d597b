//! The signed research route's body (docs/contract.md#research-results), parsed and checked
//! before anything is looked up, and how findings join a question's context: pure, like intake's
//! and revenue's parsers beside it.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::domain::intake::NicheRef;
use crate::domain::text::{CONTEXT_MAX, IDENTIFIER_MAX, cap, char_len};

/// Research results as the agent sent them.
#[derive(Debug, Clone)]
pub struct ResearchResult {
    /// The niche.
    pub niche: NicheRef,
    /// The agent's id for the question.
    pub external_id: String,
    /// The new context (untrusted; capped).
    pub context: String,
}

/// Parse `{nicheSlug, externalId, context}` (or inside `payload`).
pub fn parse(body: &Value) -> Result<ResearchResult, String> {
    let fields = body
        .get("payload")
        .filter(|p| p.is_object())
        .unwrap_or(body);
    let bad = |m: &str| m.to_owned();
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let niche = match (
        text("nicheSlug").or(text("niche")),
        fields.get("nicheId").and_then(Value::as_i64),
    ) {
        (Some(slug), _) => NicheRef::Slug(slug.to_lowercase()),
        (None, Some(id)) => NicheRef::Id(id),
        (None, None) => return Err(bad("nicheSlug is required")),
    };
    let external_id = text("externalId").ok_or_else(|| bad("externalId is required"))?;
    // No question's id is longer (intake refuses those); refused here rather than looked up
    // and echoed back in a 404.
    if char_len(external_id) > IDENTIFIER_MAX {
        return Err(format!(
            "externalId is longer than {IDENTIFIER_MAX} characters"
        ));
    }
    Ok(ResearchResult {
        niche,
        external_id: external_id.to_owned(),
        context: cap(
            text("context").ok_or_else(|| bad("context is required"))?,
            CONTEXT_MAX,
        ),
    })
}

/// `context` with `findings` appended as a section headed by the time they came back.
pub fn with_findings(context: Option<&str>, findings: &str, now: DateTime<Utc>) -> String {
    let heading = format!("Research, {} UTC:", now.format("%Y-%m-%d %H:%M"));
    match context.filter(|c| !c.trim().is_empty()) {
        Some(context) => format!("{context}\n\n{heading}\n{findings}"),
        None => format!("{heading}\n{findings}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn findings_follow_the_context_under_a_dated_heading() {
        let at = DateTime::parse_from_rfc3339("2026-11-30T14:05:09Z")
            .expect("a time")
            .with_timezone(&Utc);
        assert_eq!(
            with_findings(Some("Steam says June."), "The publisher says July.", at),
            "Steam says June.\n\nResearch, 2026-11-30 14:05 UTC:\nThe publisher says July."
        );
        assert_eq!(
            with_findings(None, "Found it.", at),
            "Research, 2026-11-30 14:05 UTC:\nFound it."
        );
        assert_eq!(
            with_findings(Some("  "), "Found it.", at),
            "Research, 2026-11-30 14:05 UTC:\nFound it."
        );
    }

    /// Found by the research property (tests/suite/properties.rs): an external id of any
    /// length was accepted, though no question can have one over 200 characters.
    #[test]
    fn an_external_id_over_200_characters_is_refused() {
        let body = |id: String| json!({"nicheSlug": "g", "externalId": id, "context": "found"});
        let kept = parse(&body(format!(" {} ", "🦀".repeat(200))))
            .expect("200 characters")
            .external_id;
        assert_eq!(kept, "🦀".repeat(200));
        let err = parse(&body("x".repeat(201))).expect_err("201");
        assert_eq!(err, "externalId is longer than 200 characters");
    }
}
