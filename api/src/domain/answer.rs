//! What makes an answer acceptable (docs/contract.md#answering), checked after the caller's
//! rights so every surface refuses in the same order.

use super::intake::QuestionOption;
use super::text::{ANSWER_BODY_MAX, TASK_RESULT_MAX, char_len};

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
                "'{raw}' is not an answer kind: use answered, insufficient_context, needs_research or from_knowledge"
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
    /// The words, trimmed; none when empty (a task's result).
    pub body: Option<String>,
    /// What completing a task cost (task completions only).
    pub actual_cost_minor: Option<i64>,
}

/// What is being answered: a question, or a task whose budget limit is `limit_minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exchange<'a> {
    /// A question and its options.
    Question(&'a [QuestionOption]),
    /// A task and its budget limit.
    Task {
        /// The most completing it may cost.
        limit_minor: i64,
    },
}

/// Check an answer against the question's options.
pub fn validate(
    kind: &str,
    option_id: Option<&str>,
    body: Option<&str>,
    options: &[QuestionOption],
) -> Result<ValidAnswer, String> {
    validate_for(kind, option_id, body, None, Exchange::Question(options))
}

/// Check an answer, decline or task completion against what it answers. Completing a task
/// (`answered` on a task) needs its result (at most [`TASK_RESULT_MAX`] characters) and the
/// actual cost, 0 up to the task's limit; it has no options. An actual cost anywhere else is
/// refused rather than ignored.
pub fn validate_for(
    kind: &str,
    option_id: Option<&str>,
    body: Option<&str>,
    actual_cost_minor: Option<i64>,
    exchange: Exchange<'_>,
) -> Result<ValidAnswer, String> {
    let kind = Kind::parse(kind)?;
    let option_id = option_id.map(str::trim).filter(|o| !o.is_empty());
    let body = body.map(str::trim).filter(|b| !b.is_empty());
    let actual_cost_minor = match (exchange, kind, actual_cost_minor) {
        (Exchange::Question(_), _, Some(_)) => {
            return Err("actualCostMinor is for completing a task; this is a question".into());
        }
        (Exchange::Task { .. }, Kind::InsufficientContext | Kind::NeedsResearch, Some(_)) => {
            return Err("actualCostMinor is for completing a task, not for declining it".into());
        }
        (Exchange::Task { limit_minor }, Kind::Answered, actual) => {
            let Some(actual) = actual else {
                return Err("completing a task needs actualCostMinor, what it cost".into());
            };
            if !(0..=limit_minor).contains(&actual) {
                return Err(format!(
                    "actualCostMinor must be between 0 and the task's limit of {limit_minor}"
                ));
            }
            Some(actual)
        }
        _ => None,
    };
    let body_max = match exchange {
        Exchange::Task { .. } if kind == Kind::Answered => TASK_RESULT_MAX,
        _ => ANSWER_BODY_MAX,
    };
    if let Some(body) = body
        && char_len(body) > body_max
    {
        return Err(match exchange {
            Exchange::Task { .. } if kind == Kind::Answered => {
                format!("a task's result is at most {body_max} characters")
            }
            _ => format!("an answer is at most {body_max} characters"),
        });
    }
    match exchange {
        Exchange::Question(options) => {
            if let Some(option) = option_id
                && !options.iter().any(|o| o.id == option)
            {
                return Err(format!("this question has no option '{option}'"));
            }
            if kind == Kind::Answered && option_id.is_none() && body.is_none() {
                return Err("an answer needs an option or some words".into());
            }
        }
        Exchange::Task { .. } => {
            if option_id.is_some() {
                return Err("a task has no options".into());
            }
            if kind == Kind::Answered && body.is_none() {
                return Err("completing a task needs its result".into());
            }
        }
    }
    Ok(ValidAnswer {
        kind,
        option_id: option_id.map(str::to_owned),
        body: body.map(str::to_owned),
        actual_cost_minor,
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
    fn completing_a_task_needs_its_result_and_a_cost_within_the_limit() {
        let task = Exchange::Task { limit_minor: 500 };
        let done = validate_for("answered", None, Some("Done: 3 prices"), Some(120), task)
            .expect("a completion");
        assert_eq!(done.actual_cost_minor, Some(120));
        assert!(validate_for("answered", None, Some("r"), Some(0), task).is_ok());
        assert!(validate_for("answered", None, Some("r"), Some(500), task).is_ok());
        for (actual, problem) in [
            (Some(501), "between 0 and the task's limit of 500"),
            (Some(-1), "between 0 and the task's limit of 500"),
            (None, "needs actualCostMinor"),
        ] {
            let err = validate_for("answered", None, Some("r"), actual, task).expect_err("refused");
            assert!(err.contains(problem), "{err}");
        }
        let err = validate_for("answered", None, None, Some(1), task).expect_err("refused");
        assert!(err.contains("needs its result"), "{err}");
        let err =
            validate_for("answered", Some("ea"), Some("r"), Some(1), task).expect_err("refused");
        assert!(err.contains("no options"), "{err}");
        let err = validate_for("needs_research", None, None, Some(1), task).expect_err("refused");
        assert!(err.contains("not for declining"), "{err}");
        assert!(validate_for("insufficient_context", None, None, None, task).is_ok());
        let long = "r".repeat(20_001);
        let err = validate_for("answered", None, Some(&long), Some(1), task).expect_err("refused");
        assert!(err.contains("at most 20000"), "{err}");
        assert!(validate_for("answered", None, Some(&"r".repeat(20_000)), Some(1), task).is_ok());
    }

    #[test]
    fn a_cost_on_a_question_is_refused() {
        let err = validate_for(
            "answered",
            Some("ea"),
            None,
            Some(5),
            Exchange::Question(&options()),
        )
        .expect_err("refused");
        assert!(err.contains("this is a question"), "{err}");
    }

    #[test]
    fn the_body_is_capped_at_eight_thousand_characters() {
        let long = "é".repeat(8_001);
        assert!(validate("answered", None, Some(&long), &options()).is_err());
        let fits = "é".repeat(8_000);
        assert!(validate("answered", None, Some(&fits), &options()).is_ok());
    }
}
