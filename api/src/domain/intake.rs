//! An agent's question (docs/contract.md#asking-a-question): the typed request and its
//! validation live in `askloop-wire` ([`AskRequest`] into [`NewQuestion`]), shared with every
//! surface and the agent SDK; this module re-exports them for the server and reads the options
//! a stored question keeps.

use serde_json::Value;

pub use askloop_wire::ask::{
    AnswersRequest, AnswersWanted, AskOption, AskRequest, DEFAULT_AGREEMENT_BPS, ExchangeKind,
    Identifier, IntakeError, MAX_LIFETIME_SECS, MIN_LIFETIME_SECS, NewQuestion, NicheRef,
    QuestionOption, Urgency,
};

/// The options of a stored question (its `options` JSON); none when it holds no list of them.
pub fn stored_options(options: &Value) -> Vec<QuestionOption> {
    serde_json::from_value(options.clone()).unwrap_or_default()
}

/// The label of option `id` among a stored question's `options`, if it offers that option.
pub fn option_label(options: &Value, id: &str) -> Option<String> {
    stored_options(options)
        .into_iter()
        .find(|option| option.id == id)
        .map(|option| option.label)
}

/// Parse an intake body (`{"payload": {...}}` or the bare object) as received: read it as an
/// [`AskRequest`], then check it into a [`NewQuestion`].
pub fn parse_new_question(body: &Value) -> Result<NewQuestion, IntakeError> {
    NewQuestion::try_from(AskRequest::from_json(body)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::text::char_len;
    use serde_json::json;

    fn minimal() -> Value {
        json!({"nicheSlug": "games", "title": "Which date?", "question": "EA or 1.0?"})
    }

    #[test]
    fn the_payload_envelope_and_the_bare_object_parse_alike() {
        let bare = parse_new_question(&minimal()).expect("bare");
        let wrapped = parse_new_question(&json!({"payload": minimal()})).expect("wrapped");
        assert_eq!(bare, wrapped);
        assert_eq!(bare.niche, NicheRef::Slug("games".into()));
        assert_eq!(bare.urgency, Urgency::Normal);
    }

    #[test]
    fn the_envelope_id_stands_in_for_a_missing_external_id() {
        let q = parse_new_question(&json!({"id": "evt-9", "payload": minimal()})).expect("ok");
        assert_eq!(q.external_id.as_deref(), Some("evt-9"));
        let mut with_own = minimal();
        with_own["externalId"] = json!("q-1");
        let q = parse_new_question(&json!({"id": "evt-9", "payload": with_own})).expect("ok");
        assert_eq!(q.external_id.as_deref(), Some("q-1"));
    }

    #[test]
    fn a_task_needs_a_limit_and_takes_no_bounty_or_options() {
        let mut task = minimal();
        task["kind"] = json!("Task");
        task["budgetLimitMinor"] = json!(500);
        task["deliverable"] = json!("  three prices, with links ");
        let parsed = parse_new_question(&task).expect("a task");
        assert_eq!(parsed.kind, ExchangeKind::Task);
        assert_eq!(parsed.budget_limit_minor, Some(500));
        assert_eq!(
            parsed.deliverable.as_deref(),
            Some("three prices, with links")
        );
        let refused = |change: &dyn Fn(&mut Value), problem: &str| {
            let mut body = task.clone();
            change(&mut body);
            let err = parse_new_question(&body).expect_err("refused");
            assert!(err.0.contains(problem), "{problem}: {err}");
        };
        refused(
            &|b| b["budgetLimitMinor"] = Value::Null,
            "needs budgetLimitMinor",
        );
        refused(&|b| b["budgetLimitMinor"] = json!(0), "more than 0");
        refused(&|b| b["budgetLimitMinor"] = json!(-5), "cannot be negative");
        refused(&|b| b["budgetLimitMinor"] = json!("5"), "whole number");
        refused(&|b| b["bountyMinor"] = json!(5), "not bountyMinor");
        refused(
            &|b| b["options"] = json!([{"id": "a", "label": "A"}]),
            "no options",
        );
        refused(
            &|b| b["deliverable"] = json!("x".repeat(501)),
            "at most 500",
        );
        refused(&|b| b["kind"] = json!("chore"), "kind must be");
        refused(&|b| b["kind"] = json!(3), "kind must be");
        let mut question = minimal();
        question["budgetLimitMinor"] = json!(5);
        assert!(
            parse_new_question(&question).is_err(),
            "a limit is for tasks"
        );
        let plain = parse_new_question(&minimal()).expect("a question");
        assert_eq!(plain.kind, ExchangeKind::Question);
    }

    #[test]
    fn a_list_where_an_object_belongs_is_refused_as_before() {
        let refused = |body: Value| parse_new_question(&body).map_err(|e| e.0);
        assert_eq!(
            refused(json!({"payload": ["games", "t", "q"]})),
            Err("payload must be an object".into())
        );
        assert_eq!(
            refused(json!({"payload": null})),
            Err("payload must be an object".into())
        );
        assert_eq!(
            refused(json!(["games", "t", "q"])),
            Err("the body must be a JSON object".into())
        );
        let mut body = minimal();
        body["options"] = json!([["a", "A"]]);
        assert_eq!(
            refused(body.clone()),
            Err("options[0] needs an id and a label".into())
        );
        body["options"] = json!([{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]);
        body["answers"] = json!([2, 0.5]);
        assert_eq!(
            refused(body.clone()),
            Err("answers must be an object: {wanted, agreement}".into())
        );
        body["answers"] = json!({"wanted": 2, "quorum": 1});
        assert_eq!(
            refused(body.clone()),
            Err("answers takes wanted and agreement; 'quorum' is not one of them".into())
        );
        body["answers"] = json!({"wanted": "2"});
        assert_eq!(refused(body), Err("wanted must be a whole number".into()));
    }

    #[test]
    fn missing_title_or_question_is_refused() {
        for key in ["title", "question"] {
            let mut body = minimal();
            body[key] = json!("   ");
            assert_eq!(
                parse_new_question(&body),
                Err(IntakeError(format!("{key} is required")))
            );
        }
        let mut body = minimal();
        body.as_object_mut().map(|o| o.remove("nicheSlug"));
        assert_eq!(
            parse_new_question(&body),
            Err(IntakeError("nicheSlug is required".into()))
        );
    }

    #[test]
    fn caps_cut_in_chars_and_options_beyond_twelve_are_dropped() {
        let mut body = minimal();
        body["title"] = json!("é".repeat(301));
        body["context"] = json!("🦀".repeat(20_001));
        body["options"] = json!(
            (0..15)
                .map(|i| json!({"id": format!("o{i}"), "label": "x"}))
                .collect::<Vec<_>>()
        );
        let q = parse_new_question(&body).expect("ok");
        assert_eq!(char_len(&q.title), 300);
        assert_eq!(q.context.as_deref().map(char_len), Some(20_000));
        assert_eq!(q.options.len(), 12);
        assert_eq!(q.options[11].id, "o11");
    }

    #[test]
    fn unknown_urgency_becomes_normal() {
        let mut body = minimal();
        body["urgency"] = json!("URGENT!!");
        assert_eq!(
            parse_new_question(&body).map(|q| q.urgency),
            Ok(Urgency::Normal)
        );
        body["urgency"] = json!("High");
        assert_eq!(
            parse_new_question(&body).map(|q| q.urgency),
            Ok(Urgency::High)
        );
    }

    #[test]
    fn malformed_fields_say_which() {
        let cases = [
            (
                "options",
                json!([{"id": "a"}]),
                "options[0] needs an id and a label",
            ),
            (
                "options",
                json!([{"id": "a", "label": "x"}, {"id": "a", "label": "y"}]),
                "option id 'a' appears twice",
            ),
            (
                "options",
                json!("a,b"),
                "options must be a list of {id, label}",
            ),
            ("bountyMinor", json!(-1), "bountyMinor cannot be negative"),
            (
                "bountyMinor",
                json!(1_000_000_000_000_001_i64),
                "bountyMinor is above the largest amount askloop keeps (1000000000000000 minor units)",
            ),
            (
                "bountyMinor",
                json!(1.5),
                "bountyMinor must be a whole number",
            ),
            (
                "expiresInSeconds",
                json!(59),
                "expiresInSeconds must be between 60 and 2592000",
            ),
            (
                "externalId",
                json!("x".repeat(201)),
                "externalId is longer than 200 characters",
            ),
            ("title", json!(7), "title must be a string"),
        ];
        for (key, value, message) in cases {
            let mut body = minimal();
            body[key] = value;
            assert_eq!(
                parse_new_question(&body),
                Err(IntakeError(message.into())),
                "{key}"
            );
        }
    }
}
