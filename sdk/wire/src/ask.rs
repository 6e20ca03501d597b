//! Asking a question or delegating a task (docs/contract.md#asking-a-question,
//! docs/contract.md#delegated-tasks): [`AskRequest`], the intake body as agents send it, and
//! [`NewQuestion`], what it becomes once checked and capped — the only form the server's
//! intake service accepts.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::field::Field;
use crate::limits::{
    CONTEXT_MAX, DELIVERABLE_MAX, IDENTIFIER_MAX, OPTION_LABEL_MAX, OPTIONS_MAX, QUESTION_MAX,
    RELATED_MAX, TITLE_MAX, amount_problem, cap, char_len,
};

/// The shortest lifetime a question may ask for (docs/contract.md#expiry).
pub const MIN_LIFETIME_SECS: i64 = 60;
/// The longest lifetime a question may ask for: 30 days.
pub const MAX_LIFETIME_SECS: i64 = 30 * 24 * 3600;
/// The agreement a consensus needs when the agent names none: more than half of two to five.
pub const DEFAULT_AGREEMENT_BPS: i32 = 6000;

/// An identifier as agents send it: a string, or a number taken as its digits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Identifier {
    /// Sent as a string.
    Text(String),
    /// Sent as a number.
    Number(Number),
}

impl From<String> for Identifier {
    fn from(text: String) -> Self {
        Identifier::Text(text)
    }
}

impl From<&str> for Identifier {
    fn from(text: &str) -> Self {
        Identifier::Text(text.to_owned())
    }
}

/// One option as sent: an id (string or number) and a label; anything else in it is ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AskOption {
    /// The option's id.
    #[serde(skip_serializing_if = "Field::is_unset")]
    pub id: Field<Identifier>,
    /// What a person reads.
    #[serde(skip_serializing_if = "Field::is_unset")]
    pub label: Field<String>,
}

impl AskOption {
    /// The option `id`, labelled `label`.
    pub fn new(id: impl Into<String>, label: impl Into<String>) -> Self {
        AskOption {
            id: Field::Given(Identifier::Text(id.into())),
            label: Field::Given(label.into()),
        }
    }
}

/// `answers` as sent: how many answers and the agreement a consensus needs
/// (docs/contract.md#several-answers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = AnswersBody))]
pub struct AnswersRequest {
    /// How many people answer, 1 to 7 (2 or more need at least two options).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = i64, required = true, minimum = 1, maximum = 7))]
    pub wanted: Field<i64>,
    /// The share of the answers the plurality option needs for a consensus, 0.5 to 1.0 (0.6
    /// when not given).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<f64>, minimum = 0.5, maximum = 1.0))]
    pub agreement: Field<f64>,
    /// Any other key, refused by name.
    #[serde(flatten)]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub unknown: Map<String, Value>,
}

/// `POST /api/v1/internal/expert-questions`: an agent asks. The fields may also come wrapped as
/// `{"id": …, "payload": {…}}` (an event envelope), whose `id` then stands for `externalId`.
// Every field is read as sent (`Field`); `NewQuestion::try_from` checks them in the contract's
// order and words each refusal. Unknown fields are ignored. (A comment, not a doc line: the doc
// lines are the OpenAPI document's description.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = AskBody))]
#[serde(rename_all = "camelCase")]
pub struct AskRequest {
    /// The niche (lowercased). `niche` is accepted as another name for it.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>, example = "roofing"))]
    pub niche_slug: Field<String>,
    /// `nicheSlug`'s other name.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub niche: Field<String>,
    /// The niche by its number, instead of its slug.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<i64>))]
    pub niche_id: Field<Identifier>,
    /// The agent's own id for the question (string or number; at most 200 characters). Asking
    /// again with the same one is the same question (200, `duplicate: true`).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>, example = "job-4711-q1"))]
    pub external_id: Field<Identifier>,
    /// Which of the agent's runs asked (at most 200 characters).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>))]
    pub agent_id: Field<Identifier>,
    /// Required; cut to 300 characters.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true, example = "Can I re-roof over one layer of asphalt shingles?"))]
    pub title: Field<String>,
    /// Required; cut to 8000 characters.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, required = true))]
    pub question: Field<String>,
    /// What the agent found so far: untrusted; cut to 20000 characters.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>))]
    pub context: Field<String>,
    /// Answers to choose from; the first 12 are kept.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Vec<QuestionOption>>))]
    pub options: Field<Vec<Field<AskOption>>>,
    /// `low`, `normal` or `high`; any other word counts as `normal`.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>, example = "normal"))]
    pub urgency: Field<String>,
    /// Ids of what the question is about; the first 50 are kept.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Vec<String>>))]
    pub related_resource_ids: Field<Vec<Field<Identifier>>>,
    /// The bounty in minor units (≥ 0, at most the niche's maximum); defaults to the niche's.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<i64>, minimum = 0))]
    pub bounty_minor: Field<i64>,
    /// How long the question may wait, 60 s to 30 days; defaults to the niche's lifetime.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<i64>, minimum = 60, maximum = 2_592_000))]
    pub expires_in_seconds: Field<i64>,
    /// `question` (the default) or `task`: a sub-task handed to people, charged what it
    /// actually cost (docs/contract.md#delegated-tasks). A task has no options and no
    /// `bountyMinor`.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>, example = "question"))]
    pub kind: Field<String>,
    /// A task's budget limit in minor units: required for a task (more than 0, at most the
    /// niche's maximum bounty), refused for a question. Reserved like a bounty (402 the same way).
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<i64>, minimum = 1))]
    pub budget_limit_minor: Field<i64>,
    /// What a task should deliver (at most 500 characters); tasks only.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<String>))]
    pub deliverable: Field<String>,
    /// Ask several people (a question with options; docs/contract.md#several-answers): once
    /// `wanted` answers are in, the consensus or the disagreement settles it.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<AnswersRequest>))]
    pub answers: Field<AnswersRequest>,
    /// Also answer with up to three current knowledge entries like the question
    /// (docs/contract.md#knowledge); the question is stored either way.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<bool>))]
    pub similar: Field<bool>,
    /// An event envelope's id: stands for `externalId` when the fields give none.
    #[serde(skip_serializing_if = "Field::is_unset")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub id: Field<Identifier>,
    /// An event envelope's fields: when present, the question is read from here. Left out is
    /// not `null` here (`null` is refused), hence its own default.
    #[serde(default, skip_serializing_if = "Field::is_absent")]
    #[cfg_attr(feature = "utoipa", schema(ignore))]
    pub payload: Field<Box<AskRequest>>,
}

impl AskRequest {
    /// A question in the niche `niche_slug`, with nothing optional set.
    pub fn new(
        niche_slug: impl Into<String>,
        title: impl Into<String>,
        question: impl Into<String>,
    ) -> Self {
        AskRequest {
            niche_slug: Field::Given(niche_slug.into()),
            title: Field::Given(title.into()),
            question: Field::Given(question.into()),
            ..AskRequest::default()
        }
    }

    /// A body as received: refused only when it is not a JSON object; every field is then read
    /// as sent, for [`NewQuestion::try_from`] to check.
    pub fn from_json(body: &Value) -> Result<Self, IntakeError> {
        if !body.is_object() {
            return Err(bad("the body must be a JSON object"));
        }
        // Cannot fail on an object: every field is a `Field`, which keeps a mismatch.
        AskRequest::deserialize(body).map_err(|_| bad("the body must be a JSON object"))
    }

    /// `self` wrapped as an event envelope, `{"payload": self}`.
    pub fn in_envelope(self) -> Self {
        AskRequest {
            payload: Field::Given(Box::new(self)),
            ..AskRequest::default()
        }
    }

    /// The question's fields: the envelope's payload when there is one, else the body itself.
    fn fields(&self) -> &AskRequest {
        self.payload.payload_or(self)
    }

    /// Whether the body asks for similar entries: `similar` (beside the fields or inside
    /// `payload`) is `true`, or absent or `false`; anything else is refused.
    pub fn wants_similar(&self) -> Result<bool, IntakeError> {
        self.fields()
            .similar
            .clone()
            .value()
            .map(|wanted| wanted.unwrap_or(false))
            .map_err(|()| bad("similar must be true or false"))
    }
}

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
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema), schema(as = OptionBody))]
pub struct QuestionOption {
    /// Echoed back in the answer; unique within the question, at most 200 characters.
    pub id: String,
    /// What a person reads; cut to 300 characters.
    pub label: String,
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

impl Default for AnswersWanted {
    fn default() -> Self {
        AnswersWanted {
            wanted: 1,
            agreement_bps: DEFAULT_AGREEMENT_BPS,
        }
    }
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

/// Why an intake body was refused (a 400 with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IntakeError(pub String);

fn bad(message: impl Into<String>) -> IntakeError {
    IntakeError(message.into())
}

impl TryFrom<AskRequest> for NewQuestion {
    type Error = IntakeError;

    /// Check and cap every field, in the contract's order: the first refusal is the one
    /// answered.
    fn try_from(body: AskRequest) -> Result<Self, IntakeError> {
        let AskRequest {
            payload,
            id: envelope_id,
            ..
        } = &body;
        let fields = match payload {
            Field::Absent => &body,
            Field::Given(payload) => payload.as_ref(),
            Field::Null | Field::Wrong(_) => return Err(bad("payload must be an object")),
        };
        let niche = niche_ref(fields)?;
        let external_id = match identifier(&fields.external_id, "externalId")? {
            Some(id) => Some(id),
            None => identifier(envelope_id, "id")?,
        };
        let agent_id = identifier(&fields.agent_id, "agentId")?;
        let title = required_text(&fields.title, "title", TITLE_MAX)?;
        let question = required_text(&fields.question, "question", QUESTION_MAX)?;
        let context = text(&fields.context, "context")?
            .filter(|c| !c.trim().is_empty())
            .map(|c| cap(&c, CONTEXT_MAX));
        let kind = exchange_kind(&fields.kind)?;
        let options = options(&fields.options)?;
        let bounty_minor = amount(&fields.bounty_minor, "bountyMinor")?;
        let budget_limit_minor = amount(&fields.budget_limit_minor, "budgetLimitMinor")?;
        let deliverable = text(&fields.deliverable, "deliverable")?
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
        let answers = answers(&fields.answers, kind, &options)?;
        match kind {
            ExchangeKind::Task => {
                match budget_limit_minor {
                    None => {
                        return Err(bad("a task needs budgetLimitMinor, the most it may cost"));
                    }
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
        let urgency = Urgency::parse_lenient(match &fields.urgency {
            Field::Given(word) => Some(word.as_str()),
            _ => None,
        });
        let related_resource_ids = related(&fields.related_resource_ids)?;
        let expires_in_seconds = integer(&fields.expires_in_seconds, "expiresInSeconds")?
            .map(|s| {
                if (MIN_LIFETIME_SECS..=MAX_LIFETIME_SECS).contains(&s) {
                    Ok(s)
                } else {
                    Err(bad(format!(
                        "expiresInSeconds must be between {MIN_LIFETIME_SECS} and {MAX_LIFETIME_SECS}"
                    )))
                }
            })
            .transpose()?;
        Ok(NewQuestion {
            niche,
            external_id,
            agent_id,
            title,
            question,
            context,
            options,
            urgency,
            related_resource_ids,
            bounty_minor,
            expires_in_seconds,
            kind,
            budget_limit_minor,
            deliverable,
            answers,
        })
    }
}

/// `nicheSlug` (or `niche`), else `nicheId`.
fn niche_ref(fields: &AskRequest) -> Result<NicheRef, IntakeError> {
    for (key, field) in [("nicheSlug", &fields.niche_slug), ("niche", &fields.niche)] {
        match field {
            Field::Absent | Field::Null => {}
            Field::Given(slug) if !slug.trim().is_empty() => {
                return Ok(NicheRef::Slug(slug.trim().to_lowercase()));
            }
            Field::Given(_) | Field::Wrong(_) => {
                return Err(bad(format!("{key} must be a non-empty string")));
            }
        }
    }
    let not_an_integer = || bad("nicheId must be an integer");
    match &fields.niche_id {
        Field::Given(Identifier::Number(n)) => {
            n.as_i64().map(NicheRef::Id).ok_or_else(not_an_integer)
        }
        Field::Given(Identifier::Text(s)) => s
            .trim()
            .parse()
            .map(NicheRef::Id)
            .map_err(|_| not_an_integer()),
        Field::Wrong(_) => Err(not_an_integer()),
        Field::Absent | Field::Null => Err(bad("nicheSlug is required")),
    }
}

/// A string field, when given.
fn text(field: &Field<String>, key: &str) -> Result<Option<String>, IntakeError> {
    field
        .clone()
        .value()
        .map_err(|()| bad(format!("{key} must be a string")))
}

fn required_text(field: &Field<String>, key: &str, max: usize) -> Result<String, IntakeError> {
    let text = text(field, key)?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad(format!("{key} is required")))?;
    Ok(cap(&text, max))
}

/// An identifier is refused rather than cut when too long: cutting two distinct ids could make
/// them equal, and a duplicate would then silently swallow a real question.
fn identifier(field: &Field<Identifier>, key: &str) -> Result<Option<String>, IntakeError> {
    let id = match field {
        Field::Absent | Field::Null => return Ok(None),
        Field::Given(Identifier::Text(s)) => s.trim().to_owned(),
        Field::Given(Identifier::Number(n)) => n.to_string(),
        Field::Wrong(_) => return Err(bad(format!("{key} must be a string"))),
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

fn integer(field: &Field<i64>, key: &str) -> Result<Option<i64>, IntakeError> {
    field
        .clone()
        .value()
        .map_err(|()| bad(format!("{key} must be a whole number")))
}

/// An amount in minor units, when given: 0 up to the largest askloop keeps.
fn amount(field: &Field<i64>, key: &str) -> Result<Option<i64>, IntakeError> {
    integer(field, key)?
        .map(|amount| match amount_problem(key, amount) {
            Some(problem) => Err(bad(problem)),
            None => Ok(amount),
        })
        .transpose()
}

/// `kind`: `question` (also when absent) or `task`.
fn exchange_kind(field: &Field<String>) -> Result<ExchangeKind, IntakeError> {
    match field {
        Field::Absent | Field::Null => Ok(ExchangeKind::Question),
        Field::Given(word) => match word.trim().to_ascii_lowercase().as_str() {
            "question" => Ok(ExchangeKind::Question),
            "task" => Ok(ExchangeKind::Task),
            _ => Err(bad("kind must be \"question\" or \"task\"")),
        },
        Field::Wrong(_) => Err(bad("kind must be \"question\" or \"task\"")),
    }
}

/// The first [`OPTIONS_MAX`] options, each with an id and a label, ids unique; later ones are
/// dropped unread.
fn options(field: &Field<Vec<Field<AskOption>>>) -> Result<Vec<QuestionOption>, IntakeError> {
    let items = match field {
        Field::Absent | Field::Null => return Ok(Vec::new()),
        Field::Given(items) => items,
        Field::Wrong(_) => return Err(bad("options must be a list of {id, label}")),
    };
    let mut options: Vec<QuestionOption> = Vec::new();
    for (index, item) in items.iter().take(OPTIONS_MAX).enumerate() {
        let (id, label) = match item {
            Field::Given(AskOption { id, label }) => (
                match id {
                    Field::Given(Identifier::Text(s)) => Some(s.trim().to_owned()),
                    Field::Given(Identifier::Number(n)) => Some(n.to_string()),
                    _ => None,
                }
                .filter(|s| !s.is_empty() && char_len(s) <= IDENTIFIER_MAX),
                match label {
                    Field::Given(s) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
                    _ => None,
                },
            ),
            _ => (None, None),
        };
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

/// The first [`RELATED_MAX`] related ids, strings cut to [`IDENTIFIER_MAX`].
fn related(field: &Field<Vec<Field<Identifier>>>) -> Result<Vec<String>, IntakeError> {
    let not_strings = || bad("relatedResourceIds must be a list of strings");
    let items = match field {
        Field::Absent | Field::Null => return Ok(Vec::new()),
        Field::Given(items) => items,
        Field::Wrong(_) => return Err(not_strings()),
    };
    items
        .iter()
        .take(RELATED_MAX)
        .map(|item| match item {
            Field::Given(Identifier::Text(s)) => Ok(cap(s.trim(), IDENTIFIER_MAX)),
            Field::Given(Identifier::Number(n)) => Ok(n.to_string()),
            _ => Err(not_strings()),
        })
        .collect()
}

/// `answers: {wanted: 2..7, agreement: 0.5..1.0}`, for a question with options (the answers
/// agree or not on an option); absent, one answer.
fn answers(
    field: &Field<AnswersRequest>,
    kind: ExchangeKind,
    options: &[QuestionOption],
) -> Result<AnswersWanted, IntakeError> {
    let answers = match field {
        Field::Absent | Field::Null => return Ok(AnswersWanted::default()),
        Field::Given(answers) => answers,
        Field::Wrong(_) => return Err(bad("answers must be an object: {wanted, agreement}")),
    };
    if let Some(unknown) = answers.unknown.keys().next() {
        return Err(bad(format!(
            "answers takes wanted and agreement; '{unknown}' is not one of them"
        )));
    }
    let wanted = match integer(&answers.wanted, "wanted")? {
        None => return Err(bad("answers needs wanted, how many answers (2 to 7)")),
        Some(w) if (1..=7).contains(&w) => i32::try_from(w).unwrap_or(1),
        Some(_) => return Err(bad("answers.wanted must be from 1 to 7")),
    };
    let agreement_bps = match &answers.agreement {
        Field::Absent | Field::Null => DEFAULT_AGREEMENT_BPS,
        Field::Given(a) if (0.5..=1.0).contains(a) => {
            // 0.5..=1.0 times 10000 is 5000..=10000: the cast cannot truncate.
            (a * 10_000.0).round() as i32
        }
        Field::Given(_) => return Err(bad("answers.agreement must be from 0.5 to 1.0")),
        Field::Wrong(_) => return Err(bad("answers.agreement must be a number from 0.5 to 1.0")),
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
