//! Property tests at the edges, no server needed: the intake, research and revenue parsers
//! against arbitrary JSON (never a panic, never a field past its documented limit, valid bodies
//! read back exactly), the control-character check against a plain reference, and the money
//! arithmetic (net, allocation, budgets, scoring shares) for any integers.
//!
//! The signature header's properties live beside its parser, in `api/src/domain/signing.rs`.

use askloop::domain::intake::{
    MAX_LIFETIME_SECS, MIN_LIFETIME_SECS, NewQuestion, NicheRef, QuestionOption, Urgency,
    parse_new_question,
};
use askloop::domain::ledger::{
    Budget, BudgetState, Costs, MAX_AMOUNT_MINOR, WHOLE_BPS, allocate, amount_problem, month_of,
    net, resets_at,
};
use askloop::domain::scoring::{
    ContributionState, MAX_SHARE_BPS, Tier, apportion, diminished_points, member_share_bps,
    next_tier, score, tier_for,
};
use askloop::domain::text::{
    CONTEXT_MAX, IDENTIFIER_MAX, OPTION_LABEL_MAX, OPTIONS_MAX, QUESTION_MAX, RELATED_MAX,
    TITLE_MAX, control_character_at,
};
use askloop::service::money::revenue::{BOUNTY_SOURCE, NewRevenue, SOURCE_TYPES};
use askloop::service::{money::revenue, questions::research};
use chrono::{DateTime, Datelike, Duration, Timelike, Utc};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// The field names the parsers read, so arbitrary objects hit them often.
const KEYS: &[&str] = &[
    "payload",
    "id",
    "nicheSlug",
    "niche",
    "nicheId",
    "externalId",
    "agentId",
    "title",
    "question",
    "context",
    "options",
    "label",
    "urgency",
    "relatedResourceIds",
    "bountyMinor",
    "expiresInSeconds",
    "sourceType",
    "grossMinor",
    "processingMinor",
    "networkMinor",
    "infraMinor",
    "refundMinor",
    "currency",
];

/// Mostly plain letters, some spaces and multi-byte characters, now and then any character
/// at all (controls, Unicode whitespace, the last plane).
fn character() -> impl Strategy<Value = char> {
    prop_oneof![
        10 => prop::char::range('a', 'z'),
        2 => Just(' '),
        1 => prop::char::range('A', 'Z'),
        1 => prop::char::range('0', '9'),
        1 => select(vec!['é', 'ß', 'İ', '🦀', '\u{a0}', '\u{3000}', '\t', '\n', '\u{0}']),
        1 => any::<char>(),
    ]
}

fn text(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(character(), len).prop_map(String::from_iter)
}

/// Text whose length is right at a limit, one or two characters either side.
fn near(limit: usize) -> impl Strategy<Value = String> {
    (
        select(vec!["x", "é", "🦀", " "]),
        limit - 2..=limit + 2,
        text(0..=2),
    )
        .prop_map(|(fill, n, tail)| format!("{}{tail}", fill.repeat(n)))
}

/// Text that is non-blank with no surrounding whitespace, so it reads back unchanged.
fn word(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
    text(len).prop_filter_map("blank", |s| {
        let trimmed = s.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_owned())
    })
}

fn numbers() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        select(vec![
            0,
            1,
            -1,
            MIN_LIFETIME_SECS - 1,
            MIN_LIFETIME_SECS,
            MAX_LIFETIME_SECS,
            MAX_LIFETIME_SECS + 1,
            MAX_AMOUNT_MINOR,
            MAX_AMOUNT_MINOR + 1,
            i64::MIN,
            i64::MAX,
        ])
        .prop_map(Value::from),
        any::<f64>().prop_filter_map("not finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
    ]
}

fn strings() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => text(0..=12),
        2 => select(vec![
            "", "  ", "low", "HIGH", " high ", "normal", "subscription", "usage", "one_time",
            "sponsorship", "usd", "EUR", "eu", "€ur", "agent_bounty", "agent_bounty-7", "games",
            "12", " 12 ", "-3", "1e3", "null",
        ])
        .prop_map(str::to_owned),
        1 => prop_oneof![near(IDENTIFIER_MAX), near(TITLE_MAX)],
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        numbers(),
        strings().prop_map(Value::String),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![3 => select(KEYS).prop_map(str::to_owned), 1 => text(0..=6)]
}

/// Any JSON value, at most four levels deep.
fn json() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// An object with the parsers' fields set to anything, wrapped in a `payload` or not.
fn json_object() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((select(KEYS).prop_map(str::to_owned), json()), 0..12),
        any::<bool>(),
    )
        .prop_map(|(fields, wrap)| {
            let fields: Map<String, Value> = fields.into_iter().collect();
            if wrap {
                json!({"payload": fields})
            } else {
                Value::Object(fields)
            }
        })
}

/// One change to a body: a field set to anything, or removed.
#[derive(Debug, Clone)]
enum Change {
    Set(String, Value),
    Remove(String),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => (select(KEYS).prop_map(str::to_owned), json()).prop_map(|(k, v)| Change::Set(k, v)),
        1 => select(KEYS).prop_map(|k| Change::Remove(k.to_owned())),
    ]
}

/// The object the fields are in: the payload when there is one, else the body.
fn fields_mut(body: &mut Value) -> Option<&mut Map<String, Value>> {
    if body.get("payload").is_some_and(Value::is_object) {
        body.get_mut("payload").and_then(Value::as_object_mut)
    } else {
        body.as_object_mut()
    }
}

fn apply(body: &mut Value, change: &Change) {
    if let Some(fields) = fields_mut(body) {
        match change {
            Change::Set(key, value) => {
                fields.insert(key.clone(), value.clone());
            }
            Change::Remove(key) => {
                fields.remove(key);
            }
        }
    }
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn first_chars(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

fn wrap(fields: Value, wrapped: bool) -> Value {
    if wrapped {
        json!({ "payload": fields })
    } else {
        fields
    }
}

// ---------------------------------------------------------------------------------------------
// Intake
// ---------------------------------------------------------------------------------------------

/// A valid intake body and the question it must parse to.
fn valid_intake() -> impl Strategy<Value = (Value, NewQuestion)> {
    let niche = prop_oneof![
        (select(vec!["nicheSlug", "niche"]), word(1..=20))
            .prop_map(|(key, slug)| (json!({ key: slug }), NicheRef::Slug(slug.to_lowercase()))),
        any::<i64>().prop_map(|id| (json!({"nicheId": id}), NicheRef::Id(id))),
        any::<i64>().prop_map(|id| (json!({"nicheId": format!(" {id} ")}), NicheRef::Id(id))),
    ];
    let identifier = || {
        prop_oneof![
            word(1..=IDENTIFIER_MAX).prop_map(|id| (json!(id), id)),
            any::<i64>().prop_map(|n| (json!(n), n.to_string())),
        ]
    };
    let label = prop_oneof![word(1..=40), near(OPTION_LABEL_MAX)]
        .prop_filter("a blank label is refused", |l| !l.trim().is_empty());
    let options = prop::collection::vec((word(1..=20), label), 0..=OPTIONS_MAX + 3);
    let related = prop::collection::vec(
        prop_oneof![
            word(0..=20).prop_map(|s| (json!(s), s)),
            any::<u64>().prop_map(|n| (json!(n), n.to_string())),
            near(IDENTIFIER_MAX).prop_map(|s| {
                let kept = first_chars(s.trim(), IDENTIFIER_MAX);
                (json!(s), kept)
            }),
        ],
        0..=RELATED_MAX + 3,
    );
    (
        niche,
        (
            prop::option::of(identifier()),
            prop::option::of(identifier()),
            prop::option::of(identifier()),
        ),
        (
            prop_oneof![word(1..=40), near(TITLE_MAX)],
            prop_oneof![word(1..=40), near(QUESTION_MAX)],
            prop::option::of(prop_oneof![text(0..=40), near(CONTEXT_MAX)]),
        ),
        (options, related),
        (
            prop::option::of(select(vec!["low", " LOW ", "normal", "High", "urgent", ""])),
            prop::option::of(prop_oneof![0..=MAX_AMOUNT_MINOR, Just(MAX_AMOUNT_MINOR)]),
            prop::option::of(prop_oneof![
                MIN_LIFETIME_SECS..=MAX_LIFETIME_SECS,
                select(vec![MIN_LIFETIME_SECS, MAX_LIFETIME_SECS]),
            ]),
        ),
        any::<bool>(),
    )
        .prop_filter_map(
            "a blank title or question is refused",
            |(
                (niche_json, niche),
                (external, envelope_id, agent),
                (title, question, context),
                (options, related),
                (urgency, bounty, expires),
                wrapped,
            )| {
                if title.trim().is_empty() || question.trim().is_empty() {
                    return None;
                }
                let mut fields = niche_json;
                let mut set = |key: &str, value: Value| {
                    if let Some(object) = fields.as_object_mut() {
                        object.insert(key.to_owned(), value);
                    }
                };
                set("title", json!(title));
                set("question", json!(question));
                if let Some((value, _)) = &external {
                    set("externalId", value.clone());
                }
                if let Some((value, _)) = &agent {
                    set("agentId", value.clone());
                }
                if let Some(context) = &context {
                    set("context", json!(context));
                }
                // Option ids made unique by their position.
                let options: Vec<(String, String)> = options
                    .into_iter()
                    .enumerate()
                    .map(|(i, (id, label))| (format!("{i}-{id}"), label))
                    .collect();
                set(
                    "options",
                    json!(
                        options
                            .iter()
                            .map(|(id, label)| json!({"id": id, "label": label}))
                            .collect::<Vec<_>>()
                    ),
                );
                set(
                    "relatedResourceIds",
                    Value::Array(related.iter().map(|(value, _)| value.clone()).collect()),
                );
                if let Some(urgency) = urgency {
                    set("urgency", json!(urgency));
                }
                if let Some(bounty) = bounty {
                    set("bountyMinor", json!(bounty));
                }
                if let Some(expires) = expires {
                    set("expiresInSeconds", json!(expires));
                }
                // The envelope's id stands in for a missing externalId, wrapped or bare.
                let mut body = wrap(fields, wrapped);
                if let (Some((value, _)), Some(object)) = (&envelope_id, body.as_object_mut()) {
                    object.insert("id".to_owned(), value.clone());
                }
                let expected = NewQuestion {
                    niche,
                    external_id: external.or(envelope_id).map(|(_, id)| id),
                    agent_id: agent.map(|(_, id)| id),
                    title: first_chars(title.trim(), TITLE_MAX),
                    question: first_chars(question.trim(), QUESTION_MAX),
                    context: context
                        .filter(|c| !c.trim().is_empty())
                        .map(|c| first_chars(&c, CONTEXT_MAX)),
                    options: options
                        .into_iter()
                        .take(OPTIONS_MAX)
                        .map(|(id, label)| QuestionOption {
                            id,
                            label: first_chars(label.trim(), OPTION_LABEL_MAX),
                        })
                        .collect(),
                    urgency: match urgency.map(|u| u.trim().to_ascii_lowercase()).as_deref() {
                        Some("low") => Urgency::Low,
                        Some("high") => Urgency::High,
                        _ => Urgency::Normal,
                    },
                    related_resource_ids: related
                        .into_iter()
                        .take(RELATED_MAX)
                        .map(|(_, id)| id)
                        .collect(),
                    bounty_minor: bounty,
                    expires_in_seconds: expires,
                    kind: Default::default(),
                    budget_limit_minor: None,
                    deliverable: None,
                    answers: Default::default(),
                };
                Some((body, expected))
            },
        )
}

/// Every documented limit of an accepted question (docs/contract.md#asking-a-question).
fn question_within_limits(q: &NewQuestion) -> Result<(), TestCaseError> {
    if let NicheRef::Slug(slug) = &q.niche {
        prop_assert!(!slug.trim().is_empty(), "blank niche slug");
    }
    for id in [&q.external_id, &q.agent_id].into_iter().flatten() {
        prop_assert!(
            !id.is_empty() && chars(id) <= IDENTIFIER_MAX,
            "identifier {id:?}"
        );
    }
    prop_assert!(!q.title.trim().is_empty() && chars(&q.title) <= TITLE_MAX);
    prop_assert!(!q.question.trim().is_empty() && chars(&q.question) <= QUESTION_MAX);
    if let Some(context) = &q.context {
        prop_assert!(!context.is_empty() && chars(context) <= CONTEXT_MAX);
    }
    prop_assert!(q.options.len() <= OPTIONS_MAX);
    for (i, option) in q.options.iter().enumerate() {
        prop_assert!(!option.id.is_empty() && chars(&option.id) <= IDENTIFIER_MAX);
        prop_assert!(!option.label.trim().is_empty() && chars(&option.label) <= OPTION_LABEL_MAX);
        prop_assert!(
            q.options[..i].iter().all(|o| o.id != option.id),
            "option id {:?} twice",
            option.id
        );
    }
    prop_assert!(q.related_resource_ids.len() <= RELATED_MAX);
    for id in &q.related_resource_ids {
        prop_assert!(
            chars(id) <= IDENTIFIER_MAX,
            "related id of {} chars",
            chars(id)
        );
    }
    if let Some(bounty) = q.bounty_minor {
        prop_assert!((0..=MAX_AMOUNT_MINOR).contains(&bounty), "bounty {bounty}");
    }
    if let Some(seconds) = q.expires_in_seconds {
        prop_assert!((MIN_LIFETIME_SECS..=MAX_LIFETIME_SECS).contains(&seconds));
    }
    Ok(())
}

/// Whether an intake body with `key` set to `value` (everything else valid) is accepted, for
/// the fields whose rule is simple to state; `None` for the others.
fn intake_accepts(key: &str, value: &Value) -> Option<bool> {
    let identifier = |value: &Value| match value {
        Value::Null => true,
        Value::String(s) => chars(s.trim()) <= IDENTIFIER_MAX,
        Value::Number(n) => chars(&n.to_string()) <= IDENTIFIER_MAX,
        _ => false,
    };
    let whole = |value: &Value, range: std::ops::RangeInclusive<i64>| match value {
        Value::Null => true,
        _ => value.as_i64().is_some_and(|n| range.contains(&n)),
    };
    Some(match key {
        "title" | "question" => value.as_str().is_some_and(|s| !s.trim().is_empty()),
        "context" => value.is_null() || value.is_string(),
        "agentId" | "externalId" => identifier(value),
        "urgency" | "label" | "sourceType" | "currency" | "grossMinor" => true,
        "bountyMinor" => whole(value, 0..=MAX_AMOUNT_MINOR),
        "expiresInSeconds" => whole(value, MIN_LIFETIME_SECS..=MAX_LIFETIME_SECS),
        "relatedResourceIds" => match value {
            Value::Null => true,
            Value::Array(items) => items
                .iter()
                .take(RELATED_MAX)
                .all(|item| item.is_string() || item.is_number()),
            _ => false,
        },
        _ => return None,
    })
}

proptest! {
    // Question bodies are the largest values generated here (texts up to 20000 characters):
    // fewer cases keep the run short.
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A valid question, bare or in a payload, reads back exactly: trimmed, cut to its
    /// limits in characters, the first 12 options and 50 related ids kept.
    #[test]
    fn a_valid_question_reads_back_exactly((body, expected) in valid_intake()) {
        let parsed = parse_new_question(&body);
        prop_assert_eq!(parsed, Ok(expected));
    }

    /// Any JSON at all: an answer, never a panic, and nothing accepted past a limit.
    #[test]
    fn any_json_is_parsed_or_refused_as_a_question(body in prop_oneof![json(), json_object()]) {
        if let Ok(question) = parse_new_question(&body) {
            question_within_limits(&question)?;
        }
    }

    /// A valid question with one field set to anything or removed: accepted exactly when
    /// that field's rule allows it, and then within every limit.
    #[test]
    fn one_changed_field_of_a_question_is_judged_by_its_rule(
        (body, _) in valid_intake(),
        change in change(),
    ) {
        let mut changed = body;
        apply(&mut changed, &change);
        let parsed = parse_new_question(&changed);
        if let Ok(question) = &parsed {
            question_within_limits(question)?;
        }
        match &change {
            Change::Set(key, value) => {
                if let Some(accepted) = intake_accepts(key, value) {
                    prop_assert_eq!(parsed.is_ok(), accepted, "{} = {}", key, value);
                }
                if let (Ok(question), "bountyMinor") = (&parsed, key.as_str()) {
                    prop_assert_eq!(question.bounty_minor, value.as_i64());
                }
            }
            Change::Remove(key) if matches!(key.as_str(), "title" | "question") => {
                prop_assert!(parsed.is_err(), "accepted without {}", key);
            }
            Change::Remove(_) => {}
        }
    }

    /// A bounty and a lifetime are accepted exactly within their bounds, edges included.
    #[test]
    fn bounty_and_lifetime_are_accepted_exactly_within_bounds(
        bounty in prop_oneof![
            any::<i64>(),
            -2_i64..=2,
            MAX_AMOUNT_MINOR - 2..=MAX_AMOUNT_MINOR + 2,
            select(vec![i64::MIN, i64::MAX]),
        ],
        seconds in prop_oneof![
            any::<i64>(),
            MIN_LIFETIME_SECS - 2..=MIN_LIFETIME_SECS + 2,
            MAX_LIFETIME_SECS - 2..=MAX_LIFETIME_SECS + 2,
            select(vec![i64::MIN, -1, 0, i64::MAX]),
        ],
    ) {
        let body = json!({"nicheSlug": "g", "title": "t", "question": "q",
            "bountyMinor": bounty, "expiresInSeconds": seconds});
        let bounty_ok = (0..=MAX_AMOUNT_MINOR).contains(&bounty);
        let seconds_ok = (MIN_LIFETIME_SECS..=MAX_LIFETIME_SECS).contains(&seconds);
        match parse_new_question(&body) {
            Ok(question) => {
                prop_assert!(bounty_ok && seconds_ok, "accepted {} and {}", bounty, seconds);
                prop_assert_eq!(question.bounty_minor, Some(bounty));
                prop_assert_eq!(question.expires_in_seconds, Some(seconds));
            }
            Err(_) => prop_assert!(!(bounty_ok && seconds_ok), "refused {} and {}", bounty, seconds),
        }
    }

    /// An option list of anything: accepted lists keep at most 12 options with unique ids
    /// of at most 200 characters.
    #[test]
    fn any_options_keep_their_limits(
        (body, _) in valid_intake(),
        options in prop::collection::vec(
            prop_oneof![
                json(),
                (prop_oneof![strings().prop_map(Value::String), numbers()], prop_oneof![strings().prop_map(Value::String), json()])
                    .prop_map(|(id, label)| json!({"id": id, "label": label})),
            ],
            0..20,
        ),
    ) {
        let mut changed = body;
        apply(&mut changed, &Change::Set("options".into(), Value::Array(options)));
        if let Ok(question) = parse_new_question(&changed) {
            question_within_limits(&question)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Research results
// ---------------------------------------------------------------------------------------------

fn valid_research() -> impl Strategy<Value = (Value, research::ResearchResult)> {
    (
        prop_oneof![
            (select(vec!["nicheSlug", "niche"]), word(1..=20)).prop_map(|(key, slug)| (
                json!({ key: format!(" {slug}") }),
                NicheRef::Slug(slug.to_lowercase())
            )),
            any::<i64>().prop_map(|id| (json!({"nicheId": id}), NicheRef::Id(id))),
        ],
        word(1..=IDENTIFIER_MAX),
        prop_oneof![text(1..=40), near(CONTEXT_MAX)],
        any::<bool>(),
    )
        .prop_filter_map(
            "blank context is refused",
            |((mut fields, niche), external_id, context, wrapped)| {
                let kept = context.trim();
                if kept.is_empty() {
                    return None;
                }
                let expected = research::ResearchResult {
                    niche,
                    external_id: external_id.clone(),
                    context: first_chars(kept, CONTEXT_MAX),
                };
                let object = fields.as_object_mut()?;
                object.insert("externalId".into(), json!(format!("{external_id} ")));
                object.insert("context".into(), json!(context));
                Some((wrap(fields, wrapped), expected))
            },
        )
}

fn research_within_limits(result: &research::ResearchResult) -> Result<(), TestCaseError> {
    if let NicheRef::Slug(slug) = &result.niche {
        prop_assert!(!slug.trim().is_empty());
    }
    prop_assert!(
        !result.external_id.is_empty() && chars(&result.external_id) <= IDENTIFIER_MAX,
        "externalId of {} chars",
        chars(&result.external_id)
    );
    prop_assert!(!result.context.is_empty() && chars(&result.context) <= CONTEXT_MAX);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Valid research results read back exactly: trimmed, the context cut to 20000 characters.
    #[test]
    fn valid_research_reads_back_exactly((body, expected) in valid_research()) {
        let parsed = research::parse(&body);
        prop_assert!(parsed.is_ok(), "{:?}", parsed);
        let parsed = parsed.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parsed.niche, expected.niche);
        prop_assert_eq!(parsed.external_id, expected.external_id);
        prop_assert_eq!(parsed.context, expected.context);
    }

    /// Any JSON, or valid research with one field changed: never a panic, never an external
    /// id or context past its limit, and never accepted without its required fields.
    #[test]
    fn any_research_body_is_parsed_or_refused(
        body in prop_oneof![
            json(),
            json_object(),
            (valid_research(), change()).prop_map(|((mut body, _), change)| {
                apply(&mut body, &change);
                body
            }),
            (valid_research(), near(IDENTIFIER_MAX)).prop_map(|((mut body, _), id)| {
                apply(&mut body, &Change::Set("externalId".into(), json!(id)));
                body
            }),
        ],
    ) {
        let parsed = research::parse(&body);
        if let Ok(result) = &parsed {
            research_within_limits(result)?;
        }
        let fields = body.get("payload").filter(|p| p.is_object()).unwrap_or(&body);
        let present = |key: &str| {
            fields.get(key).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty())
        };
        if !present("externalId") || !present("context") {
            prop_assert!(parsed.is_err());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Revenue events
// ---------------------------------------------------------------------------------------------

const AMOUNTS: [&str; 5] = [
    "grossMinor",
    "processingMinor",
    "networkMinor",
    "infraMinor",
    "refundMinor",
];

fn amount() -> impl Strategy<Value = i64> {
    prop_oneof![
        0..=1_000_000_i64,
        0..=MAX_AMOUNT_MINOR,
        select(vec![0, MAX_AMOUNT_MINOR - 1, MAX_AMOUNT_MINOR]),
    ]
}

fn valid_revenue() -> impl Strategy<Value = (Value, NewRevenue)> {
    (
        word(1..=20),
        word(1..=IDENTIFIER_MAX)
            .prop_filter("askloop's own ids", |id| !id.starts_with(BOUNTY_SOURCE)),
        select(SOURCE_TYPES.to_vec()),
        amount(),
        [
            prop::option::of(amount()),
            prop::option::of(amount()),
            prop::option::of(amount()),
            prop::option::of(amount()),
        ],
        "[a-zA-Z]{3}",
        any::<bool>(),
    )
        .prop_map(
            |(slug, external_id, source_type, gross, costs, currency, wrapped)| {
                let mut fields = json!({
                    "nicheSlug": slug,
                    "externalId": format!(" {external_id}"),
                    "sourceType": source_type,
                    "grossMinor": gross,
                    "currency": currency,
                });
                for (key, cost) in AMOUNTS[1..].iter().zip(costs) {
                    if let (Some(cost), Some(object)) = (cost, fields.as_object_mut()) {
                        object.insert((*key).to_owned(), json!(cost));
                    }
                }
                let [processing, network, infra, refund] = costs.map(|c| c.unwrap_or(0));
                let expected = NewRevenue {
                    niche_slug: slug.to_lowercase(),
                    external_id,
                    source_type: source_type.to_owned(),
                    gross,
                    costs: Costs {
                        processing,
                        network,
                        infra,
                        refund,
                    },
                    currency: currency.to_ascii_uppercase(),
                };
                (wrap(fields, wrapped), expected)
            },
        )
}

fn revenue_within_limits(event: &NewRevenue) -> Result<(), TestCaseError> {
    let Costs {
        processing,
        network,
        infra,
        refund,
    } = event.costs;
    for amount in [event.gross, processing, network, infra, refund] {
        prop_assert!((0..=MAX_AMOUNT_MINOR).contains(&amount), "amount {amount}");
    }
    prop_assert!(!event.niche_slug.trim().is_empty());
    prop_assert!(!event.external_id.is_empty() && chars(&event.external_id) <= IDENTIFIER_MAX);
    prop_assert!(!event.external_id.starts_with(BOUNTY_SOURCE));
    prop_assert!(SOURCE_TYPES.contains(&event.source_type.as_str()));
    prop_assert!(
        event.currency.len() == 3 && event.currency.bytes().all(|b| b.is_ascii_uppercase()),
        "currency {:?}",
        event.currency
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A valid revenue event reads back exactly, whatever characters its external id has
    /// (up to 200 of them, counted in characters as everywhere else).
    #[test]
    fn a_valid_revenue_event_reads_back_exactly((body, expected) in valid_revenue()) {
        let parsed = revenue::parse(&body);
        prop_assert!(parsed.is_ok(), "{:?} for {}", parsed, body);
        prop_assert_eq!(parsed.map_err(|e| TestCaseError::fail(e.to_string()))?, expected);
    }

    /// An amount set to anything is accepted exactly when it is a whole number from 0 to the
    /// cap (a missing cost counts as 0, a missing gross is refused).
    #[test]
    fn revenue_amounts_are_accepted_only_within_the_cap(
        (body, _) in valid_revenue(),
        field in select(AMOUNTS.to_vec()),
        value in prop_oneof![numbers(), json()],
    ) {
        let mut changed = body;
        apply(&mut changed, &Change::Set(field.to_owned(), value.clone()));
        let parsed = revenue::parse(&changed);
        let accepted = match &value {
            Value::Null => field != "grossMinor",
            _ => value.as_i64().is_some_and(|n| (0..=MAX_AMOUNT_MINOR).contains(&n)),
        };
        prop_assert_eq!(parsed.is_ok(), accepted, "{} = {}", field, value);
        if let Ok(event) = parsed {
            revenue_within_limits(&event)?;
        }
    }

    /// Any JSON, or a valid event with one field changed: never a panic, nothing accepted
    /// past a limit.
    #[test]
    fn any_revenue_body_is_parsed_or_refused(
        body in prop_oneof![
            json(),
            json_object(),
            (valid_revenue(), change()).prop_map(|((mut body, _), change)| {
                apply(&mut body, &change);
                body
            }),
            (valid_revenue(), near(IDENTIFIER_MAX)).prop_map(|((mut body, _), id)| {
                apply(&mut body, &Change::Set("externalId".into(), json!(id)));
                body
            }),
        ],
    ) {
        if let Ok(event) = revenue::parse(&body) {
            revenue_within_limits(&event)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Control characters
// ---------------------------------------------------------------------------------------------

/// The reference: C0 controls other than tab, line feed and carriage return, and DEL.
fn refused(c: char) -> bool {
    let code = u32::from(c);
    (code < 0x20 && !matches!(code, 0x09 | 0x0a | 0x0d)) || code == 0x7f
}

/// Every place in `value` holding a refused character, in the order the object's fields and
/// the array's items come, each as the path askloop names.
fn refused_places(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::String(s) if s.chars().any(refused) => found.push(path.to_owned()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                refused_places(item, &format!("{path}[{i}]"), found);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                let shown = key.escape_default().to_string();
                let inner = if path.is_empty() {
                    shown
                } else {
                    format!("{path}.{shown}")
                };
                if key.chars().any(refused) {
                    found.push(inner);
                } else {
                    refused_places(item, &inner, found);
                }
            }
        }
        _ => {}
    }
}

/// Strings where a refused character is neither everywhere nor nowhere.
fn control_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            20 => prop::char::range('a', 'z'),
            2 => select(vec!['\t', '\n', '\r', ' ', '\u{80}', '\u{9f}', '\u{85}', '\u{2028}', 'é']),
            1 => prop::char::range('\u{0}', '\u{1f}'),
            1 => Just('\u{7f}'),
            1 => any::<char>(),
        ],
        0..8,
    )
    .prop_map(String::from_iter)
}

fn control_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        control_text().prop_map(Value::String),
    ]
    .prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((control_text(), inner), 0..5)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `control_character_at` finds a refused character exactly when some string or key
    /// holds one, and names the first such place (`the body` for a bare string).
    #[test]
    fn control_characters_are_found_exactly_where_they_are(value in control_json()) {
        let mut places = Vec::new();
        refused_places(&value, "", &mut places);
        let expected = places
            .first()
            .map(|p| if p.is_empty() { "the body".to_owned() } else { p.clone() });
        prop_assert_eq!(control_character_at(&value), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Money
// ---------------------------------------------------------------------------------------------

fn any_amount() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        amount(),
        select(vec![i64::MIN, -1, 0, 1, MAX_AMOUNT_MINOR + 1, i64::MAX]),
    ]
}

fn costs<S: Strategy<Value = i64>>(amount: impl Fn() -> S) -> impl Strategy<Value = Costs> {
    (amount(), amount(), amount(), amount()).prop_map(|(processing, network, infra, refund)| {
        Costs {
            processing,
            network,
            infra,
            refund,
        }
    })
}

fn cost_sum(c: &Costs) -> i128 {
    [c.processing, c.network, c.infra, c.refund]
        .into_iter()
        .map(i128::from)
        .sum()
}

/// Shares summing to at most the whole: `whole` spread over weights.
fn whole_shares() -> impl Strategy<Value = Vec<u32>> {
    (
        prop::collection::vec(0_u32..1_000, 0..25),
        prop_oneof![0..=WHOLE_BPS, Just(WHOLE_BPS), Just(MAX_SHARE_BPS)],
    )
        .prop_map(|(weights, whole)| {
            let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
            weights
                .iter()
                .map(|&w| {
                    u32::try_from(u64::from(w) * u64::from(whole) / total.max(1)).unwrap_or(0)
                })
                .collect()
        })
}

fn ladder() -> impl Strategy<Value = Vec<Tier>> {
    prop::collection::vec((any_amount(), any::<u32>()), 0..8).prop_map(|rungs| {
        rungs
            .into_iter()
            .enumerate()
            .map(|(i, (min_score, share_bps))| Tier {
                id: i64::try_from(i).unwrap_or(0),
                name: format!("rung {i}"),
                min_score,
                share_bps,
            })
            .collect()
    })
}

fn state() -> impl Strategy<Value = ContributionState> {
    select(vec![
        ContributionState::Pending,
        ContributionState::Verified,
        ContributionState::Rejected,
        ContributionState::Reversed,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `amount_problem` passes exactly 0 ..= the cap and names the field otherwise.
    #[test]
    fn amounts_pass_exactly_from_zero_to_the_cap(amount in any_amount()) {
        let problem = amount_problem("grossMinor", amount);
        prop_assert_eq!(problem.is_none(), (0..=MAX_AMOUNT_MINOR).contains(&amount));
        if let Some(problem) = problem {
            prop_assert!(problem.starts_with("grossMinor "), "{}", problem);
        }
    }

    /// Net is gross less costs, never below zero and never above gross: exact for
    /// non-negative inputs, and an answer without a panic for any at all.
    #[test]
    fn net_is_gross_less_costs_within_zero_and_gross(
        gross in any_amount(),
        costs in costs(any_amount),
        edge_gross in 0..=MAX_AMOUNT_MINOR,
        edge_costs in costs(|| 0..=MAX_AMOUNT_MINOR),
    ) {
        prop_assert!(net(gross, costs) >= 0);
        for (gross, costs) in [(gross, costs), (edge_gross, edge_costs)] {
            let all_non_negative =
                gross >= 0 && [costs.processing, costs.network, costs.infra, costs.refund]
                    .iter()
                    .all(|c| *c >= 0);
            if all_non_negative {
                let exact = (i128::from(gross) - cost_sum(&costs)).max(0);
                let net = net(gross, costs);
                prop_assert_eq!(i128::from(net), exact);
                prop_assert!((0..=gross).contains(&net));
            }
        }
    }

    /// Shares summing to at most the whole: each floored exactly, every part ≥ 0, and the
    /// parts and the platform's rest sum to the net (0 for a negative net), to the unit.
    #[test]
    fn an_allocation_sums_to_the_net_exactly(net in any_amount(), shares in whole_shares()) {
        let (parts, platform) = allocate(net, &shares);
        let net = net.max(0);
        prop_assert_eq!(parts.len(), shares.len());
        prop_assert!(platform >= 0);
        for (part, bps) in parts.iter().zip(&shares) {
            let floored = i128::from(net) * i128::from(*bps) / i128::from(WHOLE_BPS);
            prop_assert_eq!(i128::from(*part), floored);
        }
        let total: i128 = parts.iter().map(|&p| i128::from(p)).sum::<i128>() + i128::from(platform);
        prop_assert_eq!(total, i128::from(net));
    }

    /// Any shares at all, summing far past the whole: no panic, no negative part, no part
    /// above its floored share, and the parts and the platform's rest still sum to the net.
    #[test]
    fn an_allocation_of_any_shares_never_exceeds_the_net(
        net in any_amount(),
        shares in prop::collection::vec(
            prop_oneof![any::<u32>(), 0..=WHOLE_BPS, Just(WHOLE_BPS)],
            0..40,
        ),
    ) {
        let (parts, platform) = allocate(net, &shares);
        let net = net.max(0);
        prop_assert_eq!(parts.len(), shares.len());
        prop_assert!(platform >= 0, "platform {}", platform);
        for (part, bps) in parts.iter().zip(&shares) {
            let floored = i128::from(net) * i128::from((*bps).min(WHOLE_BPS)) / i128::from(WHOLE_BPS);
            prop_assert!(*part >= 0 && i128::from(*part) <= floored);
        }
        let total: i128 = parts.iter().map(|&p| i128::from(p)).sum::<i128>() + i128::from(platform);
        prop_assert_eq!(total, i128::from(net));
    }

    /// A budget's remainder is limit − spent − reserved, never below zero; a bounty fits
    /// exactly when it is at most that; the state follows the remainder. Any integers: no panic.
    #[test]
    fn a_budget_stands_where_its_numbers_say(
        limit in prop::option::of(any_amount()),
        spent in any_amount(),
        reserved in any_amount(),
        bounty in any_amount(),
    ) {
        let budget = Budget { limit, spent, reserved };
        let remaining = budget.remaining();
        prop_assert_eq!(remaining.is_some(), limit.is_some());
        if let (Some(limit), Some(left)) = (limit, remaining) {
            prop_assert!(left >= 0);
            if spent >= 0 && reserved >= 0 {
                let exact = (i128::from(limit) - i128::from(spent) - i128::from(reserved)).max(0);
                prop_assert_eq!(i128::from(left), exact);
            }
            let expected = if left == 0 {
                BudgetState::Exhausted
            } else if i128::from(left) * 5 < i128::from(limit) {
                BudgetState::Tight
            } else {
                BudgetState::Ample
            };
            prop_assert_eq!(budget.state(), expected);
        } else {
            prop_assert_eq!(budget.state(), BudgetState::Ample);
        }
        prop_assert_eq!(budget.fits(bounty), remaining.is_none_or(|left| bounty <= left));
    }

    /// A budget month ends at the first instant of the next month, after `at`, at most 31
    /// days on, and the last second before it is still in `at`'s month.
    #[test]
    fn a_budget_month_resets_at_the_next_month(seconds in -60_000_000_000_i64..250_000_000_000) {
        let at = DateTime::<Utc>::from_timestamp(seconds, 0);
        prop_assert!(at.is_some());
        let at = at.unwrap_or_default();
        let reset = resets_at(at);
        prop_assert!(reset > at && reset - at <= Duration::days(31), "{} → {}", at, reset);
        prop_assert_eq!((reset.day(), reset.hour(), reset.minute(), reset.second()), (1, 0, 0, 0));
        prop_assert_eq!(month_of(reset - Duration::seconds(1)), month_of(at));
        prop_assert_ne!(month_of(reset), month_of(at));
    }

    /// Diminishing returns for any points and counts: full, half or a quarter rounded half
    /// up, or nothing, by where the count stands against the limit; no overflow anywhere.
    #[test]
    fn diminished_points_follow_the_steps(
        base in any_amount(),
        verified in prop_oneof![any::<u64>(), 0_u64..200],
        limit in prop_oneof![any::<u64>(), 0_u64..50],
    ) {
        let half_up = |divisor: i128| {
            // floor((2·base + divisor) / (2·divisor)) is base/divisor rounded half up.
            (2 * i128::from(base) + divisor).div_euclid(2 * divisor)
        };
        let (count, limit_wide) = (u128::from(verified), u128::from(limit));
        let expected = if limit == 0 || count < limit_wide {
            i128::from(base)
        } else if count < 2 * limit_wide {
            half_up(2)
        } else if count < 4 * limit_wide {
            half_up(4)
        } else {
            0
        };
        prop_assert_eq!(i128::from(diminished_points(base, verified, limit)), expected);
    }

    /// A score sums verified points only, never below zero; exact whenever the sum cannot
    /// saturate.
    #[test]
    fn a_score_counts_verified_points_only(
        events in prop::collection::vec((state(), prop_oneof![-1_000_000_i64..1_000_000, any_amount()]), 0..30),
    ) {
        let computed = score(events.iter().copied());
        prop_assert!(computed >= 0);
        let verified: Vec<i64> = events
            .iter()
            .filter(|(s, _)| *s == ContributionState::Verified)
            .map(|(_, p)| *p)
            .collect();
        if verified.iter().all(|p| p.unsigned_abs() <= 1 << 40) {
            let exact = verified.iter().map(|&p| i128::from(p)).sum::<i128>().max(0);
            prop_assert_eq!(i128::from(computed), exact);
        }
    }

    /// The tier is the highest rung at or below the score, the next tier the lowest above it.
    #[test]
    fn tiers_are_the_rungs_around_the_score(score in any_amount(), ladder in ladder()) {
        let reached = tier_for(score, &ladder).map(|t| t.min_score);
        let best = ladder.iter().map(|t| t.min_score).filter(|m| *m <= score).max();
        prop_assert_eq!(reached, best);
        let next = next_tier(score, &ladder).map(|t| t.min_score);
        let above = ladder.iter().map(|t| t.min_score).filter(|m| *m > score).min();
        prop_assert_eq!(next, above);
    }

    /// A member's share is the least of tier share, cap and 80 %.
    #[test]
    fn a_member_share_is_the_least_of_three(tier in any::<u32>(), cap in any::<u32>()) {
        prop_assert_eq!(member_share_bps(tier, cap), tier.min(cap).min(MAX_SHARE_BPS));
    }

    /// Apportioning any wants: unchanged within 80 %; otherwise exactly 80 % in all, each
    /// member within one point of their exact quota and never above what they wanted, and a
    /// larger want never gets less.
    #[test]
    fn apportioned_shares_fill_exactly_eighty_percent(
        wants in prop::collection::vec(
            prop_oneof![any::<u32>(), 0..=MAX_SHARE_BPS, Just(MAX_SHARE_BPS), Just(0)],
            0..30,
        ),
    ) {
        let shares = apportion(&wants);
        prop_assert_eq!(shares.len(), wants.len());
        let total: u128 = wants.iter().map(|&w| u128::from(w)).sum();
        if total <= u128::from(MAX_SHARE_BPS) {
            prop_assert_eq!(&shares, &wants);
        } else {
            let given: u128 = shares.iter().map(|&s| u128::from(s)).sum();
            prop_assert_eq!(given, u128::from(MAX_SHARE_BPS));
            let pool = u128::from(MAX_SHARE_BPS);
            for (&share, &want) in shares.iter().zip(&wants) {
                let floor = pool * u128::from(want) / total;
                let share = u128::from(share);
                prop_assert!(share == floor || share == floor + 1);
                prop_assert!(share <= u128::from(want));
            }
            for (i, j) in (0..wants.len()).flat_map(|i| (0..wants.len()).map(move |j| (i, j))) {
                if wants[i] > wants[j] {
                    prop_assert!(shares[i] >= shares[j], "{:?} → {:?}", wants, shares);
                }
            }
        }
    }
}

/// The month arithmetic at chrono's very ends answers without a panic.
#[test]
fn budget_months_at_the_ends_of_time_do_not_panic() {
    for at in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
        let reset = resets_at(at);
        assert!(reset >= at);
        assert!(!month_of(at).is_empty());
    }
}
