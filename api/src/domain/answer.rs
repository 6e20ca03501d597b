//! What makes an answer acceptable (docs/contract.md#answering), checked after the caller's
//! rights so every surface refuses in the same order.

use super::intake::QuestionOption;
use super::text::{ANSWER_BODY_MAX, char_len};

/// The three kinds, two of which are not answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Settles the question; scored.
    Answered,
    /// "Not enough context": free, the question stays open for someone else.
    InsufficientContext,
    /// Sent back to the agent for more research: free.
    NeedsResearch,
}

impl Kind {
    /// Parse the wire word; anything else is refused, never taken as "answered".
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "answered" => Ok(Kind::Answered),
            "insufficient_context" => Ok(Kind::InsufficientContext),
            "needs_research" => Ok(Kind::NeedsResearch),
            _ => Err(format!(
                "'{raw}' is not an answer kind: use answered, insufficient_context or needs_research"
            )),
        }
    }
}

/// A checked answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidAnswer {
    /// Its kind.
    pub kind: Kind,
    /// The chosen option, one of the question's.
    pub option_id: Option<String>,
    /// The words, trimmed; none when empty.
    pub body: Option<String>,
}

/// Check an answer against the question's options.
pub fn validate(
    kind: &str,
    option_id: Option<&str>,
    body: Option<&str>,
    options: &[QuestionOption],
) -> Result<ValidAnswer, String> {
    let kind = Kind::parse(kind)?;
    let option_id = option_id.map(str::trim).filter(|o| !o.is_empty());
    let body = body.map(str::trim).filter(|b| !b.is_empty());
    if let Some(body) = body
        && char_len(body) > ANSWER_BODY_MAX
    {
        return Err(format!("an answer is at most {ANSWER_BODY_MAX} characters"));
    }
    if let Some(option) = option_id
        && !options.iter().any(|o| o.id == option)
    {
        return Err(format!("this question has no option '{option}'"));
    }
    if kind == Kind::Answered && option_id.is_none() && body.is_none() {
        return Err("an answer needs an option or some words".into());
    }
    Ok(ValidAnswer {
        kind,
        option_id: option_id.map(str::to_owned),
        body: body.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Vec<QuestionOption> {
        vec![QuestionOption {
            id: "ea".into(),
            label: "Early access".into(),
        }]
    }

    #[test]
    fn an_unknown_kind_is_refused_not_taken_as_an_answer() {
        let err = validate("yes", Some("ea"), None, &options()).expect_err("refused");
        assert!(err.contains("is not an answer kind"));
    }

    #[test]
    fn an_answer_needs_an_option_or_words_but_a_decline_does_not() {
        assert_eq!(
            validate("answered", None, Some("  "), &options()),
            Err("an answer needs an option or some words".into())
        );
        assert!(validate("answered", None, Some("1.0 is the release"), &options()).is_ok());
        assert!(validate("answered", Some("ea"), None, &options()).is_ok());
        assert!(validate("insufficient_context", None, None, &options()).is_ok());
        assert!(validate("needs_research", None, None, &options()).is_ok());
    }

    #[test]
    fn the_option_must_be_one_of_the_questions() {
        assert_eq!(
            validate("answered", Some("full"), None, &options()),
            Err("this question has no option 'full'".into())
        );
    }

    #[test]
    fn the_body_is_capped_at_eight_thousand_characters() {
        let long = "é".repeat(8_001);
        assert!(validate("answered", None, Some(&long), &options()).is_err());
        let fits = "é".repeat(8_000);
        assert!(validate("answered", None, Some(&fits), &options()).is_ok());
    }
}
