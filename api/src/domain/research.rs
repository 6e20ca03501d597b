//! The signed research route's body (docs/contract.md#research-results), parsed and checked
//! before anything is looked up (the typed request and its check live in `askloop-wire`), and
//! how findings join a question's context: pure.

use chrono::{DateTime, Utc};
use serde_json::Value;

pub use askloop_wire::research::{ResearchRequest, ResearchResult};

/// Parse `{nicheSlug, externalId, context}` (or inside `payload`) as the wire crate's typed
/// request, then check it.
pub fn parse(body: &Value) -> Result<ResearchResult, String> {
    ResearchRequest::from_json(body)
        .and_then(ResearchResult::try_from)
        .map_err(|refused| refused.0)
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
