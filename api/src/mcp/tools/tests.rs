//! The tools' argument parsing, derived external ids and listed schemas.

use super::*;
use crate::domain::intake::{AskRequest, ExchangeKind, NewQuestion};
use crate::service::questions::lookup::QuestionRef;
use crate::service::questions::lookup::question_ref;
use serde_json::json;

fn asker(id: i64) -> Asker {
    Asker::Registered {
        id,
        slug: format!("agent-{id}"),
        niche_ids: vec![1],
    }
}

fn ask(title: &str) -> AskExpert {
    serde_json::from_value(json!({"niche": "games", "title": title, "question": "EA or 1.0?"}))
        .expect("valid arguments")
}

#[test]
fn ask_expert_passes_several_answers_to_intake_under_the_contracts_name() {
    let asked: AskExpert = serde_json::from_value(json!({
        "niche": "games", "title": "T", "question": "Q?",
        "answers": {"wanted": 3, "agreement": 0.6},
    }))
    .expect("valid arguments");
    let request = AskRequest::from(asked);
    let body = serde_json::to_value(&request).expect("a body");
    assert_eq!(body["answers"], json!({"wanted": 3, "agreement": 0.6}));
    assert_eq!(body["niche"], "games");
    let unknown = serde_json::from_value::<AskExpert>(json!({
        "niche": "games", "title": "T", "question": "Q?",
        "answers": {"wanted": 3, "quorum": 2},
    }));
    assert!(unknown.is_err(), "an unknown field of answers is refused");
}

#[test]
fn delegate_task_is_a_task_whose_words_are_the_question() {
    let delegated: DelegateTask = serde_json::from_value(json!({
        "niche": "Games", "title": "Prices", "task": "check three prices",
        "budgetLimitMinor": 900, "deliverable": "a table", "externalId": "t-1",
    }))
    .expect("valid arguments");
    let new = NewQuestion::try_from(AskRequest::from(delegated)).expect("a valid task");
    assert_eq!(new.kind, ExchangeKind::Task);
    assert_eq!(new.question, "check three prices");
    assert_eq!(new.budget_limit_minor, Some(900));
    assert_eq!(new.deliverable.as_deref(), Some("a table"));
    assert_eq!(new.external_id.as_deref(), Some("t-1"));
    assert_eq!(
        new.niche,
        crate::domain::intake::NicheRef::Slug("games".into())
    );
    let free: DelegateTask = serde_json::from_value(json!({
        "niche": "games", "title": "Prices", "task": "check", "budgetLimitMinor": 0,
    }))
    .expect("valid arguments");
    assert_eq!(
        NewQuestion::try_from(AskRequest::from(free)).map_err(|e| e.0),
        Err("budgetLimitMinor must be more than 0".to_owned())
    );
}

#[test]
fn the_same_arguments_from_the_same_agent_derive_the_same_external_id() {
    let first = derived_external_id(&asker(1), &ask("Which date?"));
    assert!(
        first.starts_with("mcp:") && first.len() == 4 + 32,
        "{first}"
    );
    // The same arguments in another order are the same arguments.
    let reordered: AskExpert = serde_json::from_value(
        json!({"question": "EA or 1.0?", "title": "Which date?", "niche": "games"}),
    )
    .expect("valid arguments");
    assert_eq!(derived_external_id(&asker(1), &reordered), first);
    assert_ne!(derived_external_id(&asker(2), &ask("Which date?")), first);
    assert_ne!(derived_external_id(&asker(1), &ask("Which year?")), first);
}

#[test]
fn a_question_is_named_by_exactly_one_of_its_ids() {
    assert_eq!(
        question_ref(Some(7), None, None).ok(),
        Some(QuestionRef::Id(7))
    );
    assert_eq!(
        question_ref(None, Some(" q-1 ".into()), Some(" Games ".into())).ok(),
        Some(QuestionRef::External {
            external_id: "q-1".into(),
            niche: Some("games".into())
        })
    );
    for (id, external) in [
        (None, None),
        (Some(7), Some("q-1".to_owned())),
        (None, Some("  ".to_owned())),
    ] {
        let err = question_ref(id, external, None).expect_err("refused");
        assert_eq!(err.code(), "BAD_USER_INPUT");
    }
    let long = question_ref(None, Some("x".repeat(201)), None).expect_err("refused");
    assert_eq!(long.to_string(), "externalId is longer than 200 characters");
}

#[test]
fn every_tool_has_an_object_schema_that_names_its_required_arguments() {
    let specs = specs();
    assert_eq!(
        specs.iter().map(|s| s.name).collect::<Vec<_>>(),
        TOOL_NAMES.to_vec()
    );
    let ask = &specs[0].input_schema;
    assert_eq!(ask["type"], "object");
    let mut required: Vec<&str> = ask["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    required.sort_unstable();
    assert_eq!(required, ["niche", "question", "title"]);
    assert_eq!(ask["additionalProperties"], false);
    assert!(ask["properties"]["bountyMinor"].is_object());
    let get = &specs[2].input_schema;
    assert_eq!(get["properties"]["waitSeconds"]["maximum"], 55);
}

#[test]
fn unknown_or_mistyped_arguments_are_bad_input() {
    let err = parse::<AskExpert>(
        "ask_expert",
        json!({"niche": "games", "title": "t", "question": "q", "nicheSlug": "games"}),
    )
    .expect_err("refused");
    assert_eq!(err.code(), "BAD_USER_INPUT");
    assert!(err.to_string().contains("nicheSlug"), "{err}");
    // A string is taken here (a string of digits is an id; "seven" is refused when read as
    // one, see `IdArg::id`); a list is neither.
    let err = parse::<GetAnswer>("get_answer", json!({"questionId": [7]})).expect_err("refused");
    assert!(
        err.to_string()
            .starts_with("get_answer's arguments: questionId: "),
        "{err}"
    );
    let word = IdArg::Text("seven".into())
        .id("questionId")
        .expect_err("refused");
    assert_eq!(word.code(), "BAD_USER_INPUT");
    assert!(
        word.to_string()
            .contains("questionId must be a whole number"),
        "{word}"
    );
    assert_eq!(IdArg::Text(" 42 ".into()).id("questionId").ok(), Some(42));
    assert!(IdArg::Text("-3".into()).id("questionId").is_err());
}
