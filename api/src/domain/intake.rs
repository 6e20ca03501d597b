//! Parsing an agent's question (docs/contract.md#asking-a-question) into a validated
//! [`NewQuestion`]: the edge where raw JSON becomes types, so the service only ever sees clean
//! input.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::text::{
    CONTEXT_MAX, DELIVERABLE_MAX, IDENTIFIER_MAX, OPTION_LABEL_MAX, OPTIONS_MAX, QUESTION_MAX,
    RELATED_MAX, TITLE_MAX, cap, char_len,
};

/// The shortest lifetime a question may ask for (docs/contract.md#expiry).
pub const MIN_LIFETIME_SECS: i64 = 60;
/// The longest lifetime a question may ask for: 30 days.
pub const MAX_LIFETIME_SECS: i64 = 30 * 24 * 3600;

/// How the agent named the niche.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicheRef {
    /// `nicheSlug` or `niche`, lowercased.
    Slug(String),
    /// `nicheId`.
    Id(i64),
}

/// How urgent the agent says the question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Urgency {
    /// Whenever someone has a minute.
    Low,
    /// The default.
    Normal,
    /// The agent is blocked on it.
    High,
}

impl Urgency {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            Urgency::Low => "low",
            Urgency::Normal => "normal",
            Urgency::High => "high",
        }
    }

    /// The queue's sort key: most urgent first.
    pub fn rank(self) -> i16 {
        match self {
            Urgency::High => 0,
            Urgency::Normal => 1,
            Urgency::Low => 2,
        }
    }

    /// Any word outside the three is `normal` (docs/contract.md#asking-a-question), case aside.
    pub fn parse_lenient(raw: Option<&str>) -> Self {
        match raw.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            Some("low") => Urgency::Low,
            Some("high") => Urgency::High,
            _ => Urgency::Normal,
        }
    }
}

/// What the agent hands to people (docs/contract.md#delegated-tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExchangeKind {
    /// A question, answered for its bounty (the default).
    #[default]
    Question,
    /// A task, completed for an actual cost up to its budget limit.
    Task,
}

impl ExchangeKind {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            ExchangeKind::Question => "question",
            ExchangeKind::Task => "task",
        }
    }
}

/// One answer the agent offers to choose from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// The option's id, echoed back in the answer.
    pub id: String,
    /// What a person reads.
    pub label: String,
}

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

/// A question as the service receives it: every field checked and capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewQuestion {
    /// The niche it is for.
    pub niche: NicheRef,
    /// The agent's own id for it; a second intake with the same id is a duplicate.
    pub external_id: Option<String>,
    /// Which agent asked.
    pub agent_id: Option<String>,
    /// Capped at [`TITLE_MAX`] chars.
    pub title: String,
    /// Capped at [`QUESTION_MAX`] chars.
    pub question: String,
    /// Untrusted research, capped at [`CONTEXT_MAX`] chars.
    pub context: Option<String>,
    /// At most [`OPTIONS_MAX`], ids unique.
    pub options: Vec<QuestionOption>,
    /// Low, normal or high.
    pub urgency: Urgency,
    /// Ids of resources the question is about.
    pub related_resource_ids: Vec<String>,
    /// The bounty the agent offers, when it names one.
    pub bounty_minor: Option<i64>,
    /// How long the question may wait, when the agent names it.
    pub expires_in_seconds: Option<i64>,
    /// A question or a task.
    pub kind: ExchangeKind,
    /// A task's budget limit (required for tasks, more than 0; none for questions).
    pub budget_limit_minor: Option<i64>,
    /// What a task should deliver (tasks only), at most [`DELIVERABLE_MAX`] characters.
    pub deliverable: Option<String>,
    /// How many answers the question takes and the agreement a consensus needs
    /// (docs/contract.md#several-answers); one answer when the agent asks for nothing else.
    pub answers: AnswersWanted,
}

/// How many answers a question takes in a round, and the share of them the plurality option
/// needs for a consensus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswersWanted {
    /// 1 (the first answer settles the question) to 7.
    pub wanted: i32,
    /// 5000–10000 basis points (0.5–1.0).
    pub agreement_bps: i32,
}

/// The agreement a consensus needs when the agent names none: more than half of two to five.
pub const DEFAULT_AGREEMENT_BPS: i32 = 6000;

impl Default for AnswersWanted {
    fn default() -> Self {
        AnswersWanted {
            wanted: 1,
            agreement_bps: DEFAULT_AGREEMENT_BPS,
        }
    }
}

/// `answers: {wanted: 2..7, agreement: 0.5..1.0}`, for a question with options (the answers
/// agree or not on an option); absent, one answer.
fn parse_answers(
    fields: &Map<String, Value>,
    kind: ExchangeKind,
    options: &[QuestionOption],
) -> Result<AnswersWanted, IntakeError> {
    let object = match fields.get("answers") {
        None | Some(Value::Null) => return Ok(AnswersWanted::default()),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(bad("answers must be an object: {wanted, agreement}")),
    };
    if let Some(unknown) = object
        .keys()
        .find(|k| !["wanted", "agreement"].contains(&k.as_str()))
    {
        return Err(bad(format!(
            "answers takes wanted and agreement; '{unknown}' is not one of them"
        )));
    }
    let wanted = match optional_integer(object, "wanted")? {
        None => return Err(bad("answers needs wanted, how many answers (2 to 7)")),
        Some(w) if (1..=7).contains(&w) => i32::try_from(w).unwrap_or(1),
        Some(_) => return Err(bad("answers.wanted must be from 1 to 7")),
    };
    let agreement_bps = match object.get("agreement") {
        None | Some(Value::Null) => DEFAULT_AGREEMENT_BPS,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(a) if (0.5..=1.0).contains(&a) => (a * 10_000.0).round() as i32,
            _ => return Err(bad("answers.agreement must be from 0.5 to 1.0")),
        },
        Some(_) => return Err(bad("answers.agreement must be a number from 0.5 to 1.0")),
    };
    if wanted > 1 {
        if kind == ExchangeKind::Task {
            return Err(bad(
                "a task is done by one person: answers is for questions with options",
            ));
        }
        if options.len() < 2 {
            return Err(bad("several answers need at least two options to agree on"));
        }
    }
    Ok(AnswersWanted {
        wanted,
        agreement_bps,
    })
}

/// Why an intake body was refused (a 400 with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IntakeError(pub String);

fn bad(message: impl Into<String>) -> IntakeError {
    IntakeError(message.into())
}

/// Parse an intake body: `{"payload": {...}}` or the bare object.
pub fn parse_new_question(body: &Value) -> Result<NewQuestion, IntakeError> {
    let envelope = body
        .as_object()
        .ok_or_else(|| bad("the body must be a JSON object"))?;
    let fields = match envelope.get("payload") {
        Some(Value::Object(payload)) => payload,
        Some(_) => return Err(bad("payload must be an object")),
        None => envelope,
    };

    let niche = parse_niche_ref(fields)?;
    let external_id = match optional_identifier(fields, "externalId")? {
        Some(id) => Some(id),
        None => optional_identifier(envelope, "id")?,
    };
    let agent_id = optional_identifier(fields, "agentId")?;

    let title = required_text(fields, "title", TITLE_MAX)?;
    let question = required_text(fields, "question", QUESTION_MAX)?;
    let context = optional_string(fields, "context")?
        .filter(|c| !c.trim().is_empty())
        .map(|c| cap(&c, CONTEXT_MAX));
    let kind = parse_kind(fields)?;
    let options = parse_options(fields.get("options"))?;
    let bounty_minor = optional_amount(fields, "bountyMinor")?;
    let budget_limit_minor = optional_amount(fields, "budgetLimitMinor")?;
    let deliverable = optional_string(fields, "deliverable")?
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty());
    if deliverable
        .as_deref()
        .is_some_and(|d| char_len(d) > DELIVERABLE_MAX)
    {
        return Err(bad(format!(
            "deliverable is at most {DELIVERABLE_MAX} characters"
        )));
    }
    let answers = parse_answers(fields, kind, &options)?;
    match kind {
        ExchangeKind::Task => {
            match budget_limit_minor {
                None => return Err(bad("a task needs budgetLimitMinor, the most it may cost")),
                Some(0) => return Err(bad("budgetLimitMinor must be more than 0")),
                Some(_) => {}
            }
            if bounty_minor.is_some() {
                return Err(bad(
                    "a task has budgetLimitMinor, not bountyMinor: it is charged what it cost",
                ));
            }
            if !options.is_empty() {
                return Err(bad("a task has no options"));
            }
        }
        ExchangeKind::Question => {
            if budget_limit_minor.is_some() || deliverable.is_some() {
                return Err(bad(
                    "budgetLimitMinor and deliverable are for tasks (kind \"task\")",
                ));
            }
        }
    }

    Ok(NewQuestion {
        niche,
        external_id,
        agent_id,
        title,
        question,
        context,
        options,
        urgency: Urgency::parse_lenient(fields.get("urgency").and_then(Value::as_str)),
        related_resource_ids: parse_related(fields.get("relatedResourceIds"))?,
        bounty_minor,
        expires_in_seconds: optional_integer(fields, "expiresInSeconds")?
            .map(|s| {
                if (MIN_LIFETIME_SECS..=MAX_LIFETIME_SECS).contains(&s) {
                    Ok(s)
                } else {
                    Err(bad(format!(
                        "expiresInSeconds must be between {MIN_LIFETIME_SECS} and {MAX_LIFETIME_SECS}"
                    )))
                }
            })
            .transpose()?,
        kind,
        budget_limit_minor,
        deliverable,
        answers,
    })
}

/// `kind`: `question` (also when absent) or `task`.
fn parse_kind(fields: &Map<String, Value>) -> Result<ExchangeKind, IntakeError> {
    match fields.get("kind") {
        None | Some(Value::Null) => Ok(ExchangeKind::Question),
        Some(Value::String(word)) => match word.trim().to_ascii_lowercase().as_str() {
            "question" => Ok(ExchangeKind::Question),
            "task" => Ok(ExchangeKind::Task),
            _ => Err(bad("kind must be \"question\" or \"task\"")),
        },
        Some(_) => Err(bad("kind must be \"question\" or \"task\"")),
    }
}

/// An amount in minor units, when given: 0 up to the largest askloop keeps.
fn optional_amount(fields: &Map<String, Value>, key: &str) -> Result<Option<i64>, IntakeError> {
    optional_integer(fields, key)?
        .map(
            |amount| match crate::domain::ledger::amount_problem(key, amount) {
                Some(problem) => Err(bad(problem)),
                None => Ok(amount),
            },
        )
        .transpose()
}

fn parse_niche_ref(fields: &Map<String, Value>) -> Result<NicheRef, IntakeError> {
    for key in ["nicheSlug", "niche"] {
        if let Some(value) = fields.get(key).filter(|v| !v.is_null()) {
            let slug = value
                .as_str()
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty())
                .ok_or_else(|| bad(format!("{key} must be a non-empty string")))?;
            return Ok(NicheRef::Slug(slug));
        }
    }
    match fields.get("nicheId").filter(|v| !v.is_null()) {
        Some(Value::Number(n)) => n
            .as_i64()
            .map(NicheRef::Id)
            .ok_or_else(|| bad("nicheId must be an integer")),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(NicheRef::Id)
            .map_err(|_| bad("nicheId must be an integer")),
        Some(_) => Err(bad("nicheId must be an integer")),
        None => Err(bad("nicheSlug is required")),
    }
}

fn optional_string(fields: &Map<String, Value>, key: &str) -> Result<Option<String>, IntakeError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{key} must be a string"))),
    }
}

fn required_text(
    fields: &Map<String, Value>,
    key: &str,
    max: usize,
) -> Result<String, IntakeError> {
    let text = optional_string(fields, key)?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad(format!("{key} is required")))?;
    Ok(cap(&text, max))
}

/// An identifier is refused rather than cut when too long: cutting two distinct ids could make
/// them equal, and a duplicate would then silently swallow a real question.
fn optional_identifier(
    fields: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, IntakeError> {
    let id = match fields.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(bad(format!("{key} must be a string"))),
    };
    if id.is_empty() {
        return Ok(None);
    }
    if char_len(&id) > IDENTIFIER_MAX {
        return Err(bad(format!(
            "{key} is longer than {IDENTIFIER_MAX} characters"
        )));
    }
    Ok(Some(id))
}

fn optional_integer(fields: &Map<String, Value>, key: &str) -> Result<Option<i64>, IntakeError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| bad(format!("{key} must be a whole number"))),
        Some(_) => Err(bad(format!("{key} must be a whole number"))),
    }
}

fn parse_options(value: Option<&Value>) -> Result<Vec<QuestionOption>, IntakeError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(bad("options must be a list of {id, label}")),
    };
    let mut options: Vec<QuestionOption> = Vec::new();
    for (index, item) in items.iter().take(OPTIONS_MAX).enumerate() {
        let id = item
            .get("id")
            .and_then(|v| match v {
                Value::String(s) => Some(s.trim().to_owned()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .filter(|s| !s.is_empty() && char_len(s) <= IDENTIFIER_MAX);
        let label = item
            .get("label")
            .and_then(Value::as_str)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        let (Some(id), Some(label)) = (id, label) else {
            return Err(bad(format!("options[{index}] needs an id and a label")));
        };
        if options.iter().any(|o| o.id == id) {
            return Err(bad(format!("option id '{id}' appears twice")));
        }
        options.push(QuestionOption {
            id,
            label: cap(&label, OPTION_LABEL_MAX),
        });
    }
    Ok(options)
}

fn parse_related(value: Option<&Value>) -> Result<Vec<String>, IntakeError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(bad("relatedResourceIds must be a list of strings")),
    };
    items
        .iter()
        .take(RELATED_MAX)
        .map(|item| match item {
            Value::String(s) => Ok(cap(s.trim(), IDENTIFIER_MAX)),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(bad("relatedResourceIds must be a list of strings")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
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
