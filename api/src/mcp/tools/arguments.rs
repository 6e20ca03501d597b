//! The tools' arguments as clients send them, JSON-schema'd for the client's model, and how
//! `ask_expert`'s and `delegate_task`'s become the intake's typed request.

use entity::agent_questions::QuestionStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::domain::intake::{AnswersRequest, AskOption, AskRequest, ExchangeKind};
use crate::error::ServiceError;
use crate::service::questions::lookup;
use askloop_wire::Field;

/// How urgent a question is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UrgencyArg {
    /// Whenever someone has a minute.
    Low,
    /// The default.
    Normal,
    /// The agent is blocked on it.
    High,
}

/// One answer a person may choose.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionArg {
    /// The option's id (echoed back as `optionId` in the answer); at most 200 characters, unique.
    pub id: String,
    /// What a person reads; cut to 300 characters.
    pub label: String,
}

/// `ask_expert`'s arguments.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskExpert {
    /// The niche's slug; one of the niches this agent may ask in.
    pub niche: String,
    /// A short title; cut to 300 characters.
    pub title: String,
    /// The question itself; cut to 8000 characters.
    pub question: String,
    /// What the agent found so far (people see it as untrusted text); cut to 20000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Answers to choose from; the first 12 are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<OptionArg>>,
    /// `low`, `normal` (the default) or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgency: Option<UrgencyArg>,
    /// The bounty offered, in minor units; defaults to the niche's, and may not pass its maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounty_minor: Option<i64>,
    /// How long the question may wait for an answer: 60 to 2592000 seconds (the niche's default
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<i64>,
    /// The agent's own id for the question (at most 200 characters): asking again with the same
    /// one returns the same question. Without it, the question is named after these arguments,
    /// so the same arguments again are the same question too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Also return up to three current entries of the niche's knowledge like the question, as
    /// `similar` (the question is stored either way; this does not change which question the
    /// same arguments name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_similar: Option<bool>,
    /// Ask several people (a question with options): `{wanted: 2..7, agreement: 0.5..1.0}`.
    /// Each answers on their own; once `wanted` are in, get_answer shows the consensus (or the
    /// disagreement, which goes to the niche's admins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<AnswersArg>,
}

/// How many answers a question takes, and the share the plurality needs.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswersArg {
    /// How many people answer: 1 to 7.
    pub wanted: i64,
    /// The share of the answers the plurality option needs for a consensus: 0.5 to 1.0
    /// (0.6 when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f64>,
}

impl UrgencyArg {
    /// The intake's word for it.
    fn word(self) -> String {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
        }
        .to_owned()
    }
}

/// `ask_expert`'s arguments as the intake's typed request: MCP names the slug `niche` (the
/// request's other name for `nicheSlug`); `checkSimilar` is the tool's, not the question's.
impl From<AskExpert> for AskRequest {
    fn from(input: AskExpert) -> Self {
        AskRequest {
            niche: Field::Given(input.niche),
            title: Field::Given(input.title),
            question: Field::Given(input.question),
            context: input.context.into(),
            options: input
                .options
                .map(|options| {
                    options
                        .into_iter()
                        .map(|o| Field::Given(AskOption::new(o.id, o.label)))
                        .collect()
                })
                .into(),
            urgency: input.urgency.map(UrgencyArg::word).into(),
            bounty_minor: input.bounty_minor.into(),
            expires_in_seconds: input.expires_in_seconds.into(),
            external_id: input.external_id.map(Into::into).into(),
            answers: input
                .answers
                .map(|answers| AnswersRequest {
                    wanted: Field::Given(answers.wanted),
                    agreement: answers.agreement.into(),
                    unknown: Map::new(),
                })
                .into(),
            ..AskRequest::default()
        }
    }
}

/// `delegate_task`'s arguments as the intake's typed request: a task (`kind`), whose words
/// (`task`) are the request's `question`.
impl From<DelegateTask> for AskRequest {
    fn from(input: DelegateTask) -> Self {
        AskRequest {
            niche: Field::Given(input.niche),
            title: Field::Given(input.title),
            question: Field::Given(input.task),
            kind: Field::Given(ExchangeKind::Task.as_str().to_owned()),
            budget_limit_minor: Field::Given(input.budget_limit_minor),
            deliverable: input.deliverable.into(),
            context: input.context.into(),
            urgency: input.urgency.map(UrgencyArg::word).into(),
            expires_in_seconds: input.expires_in_seconds.into(),
            external_id: input.external_id.map(Into::into).into(),
            ..AskRequest::default()
        }
    }
}

/// `search_knowledge`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchKnowledge {
    /// The niche's slug; one of the niches this agent may ask in.
    pub niche: String,
    /// What to look for (at most 1000 characters): entries holding any of its words, best first.
    pub query: String,
    /// How many results, 1 to 20 (5 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 20))]
    pub first: Option<u64>,
}

/// An id, as a number or as a string of digits (GraphQL spells ids as strings, and models
/// often send numbers as strings).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdArg {
    /// The id as a number.
    Number(i64),
    /// The id as a string of digits.
    Text(String),
}

impl IdArg {
    /// The id, or a refusal naming `field` when it is not a whole number.
    pub fn id(&self, field: &str) -> Result<i64, ServiceError> {
        match self {
            Self::Number(id) => Ok(*id),
            Self::Text(text) => lookup::id_from_text(field, text),
        }
    }
}

/// An optional id argument as a number.
pub(super) fn id_of(field: &str, arg: Option<&IdArg>) -> Result<Option<i64>, ServiceError> {
    arg.map(|arg| arg.id(field)).transpose()
}

/// `use_knowledge`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UseKnowledge {
    /// The entry relied on (`entryId` from search_knowledge or `similar`); current, and of one
    /// of this agent's niches.
    pub entry_id: IdArg,
    /// The agent's own id for this reuse (at most 200 characters, unique in the niche): using
    /// it again records nothing more and returns the first reuse.
    pub external_id: String,
}

/// `delegate_task`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegateTask {
    /// The niche's slug; one of the niches this agent may ask in.
    pub niche: String,
    /// A short title; cut to 300 characters.
    pub title: String,
    /// What to do ("fetch and pre-chew this URL", "check these three prices"); cut to 8000
    /// characters.
    pub task: String,
    /// The most the task may cost, in minor units: more than 0, at most the niche's maximum
    /// bounty. It is reserved against the niche's budget now; the agent is charged what the
    /// person reports it cost, and the rest is released.
    pub budget_limit_minor: i64,
    /// What the result should be (at most 500 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliverable: Option<String>,
    /// What the agent found so far (people see it as untrusted text); cut to 20000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// `low`, `normal` (the default) or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgency: Option<UrgencyArg>,
    /// How long the task may wait: 60 to 2592000 seconds (the niche's default otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<i64>,
    /// The agent's own id for the task (at most 200 characters): delegating again with the same
    /// one returns the same task. Without it, the task is named after these arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
}

/// `get_answer`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetAnswer {
    /// askloop's id of the question (as `ask_expert` returned it, a number or a string of
    /// digits); or give `externalId`.
    #[serde(default)]
    pub question_id: Option<IdArg>,
    /// The agent's own id of the question; or give `questionId`.
    #[serde(default)]
    pub external_id: Option<String>,
    /// The niche's slug, needed only when the same `externalId` was used in several niches.
    #[serde(default)]
    pub niche: Option<String>,
    /// While the question is open, wait up to this many seconds (0 to 55) for it to change.
    #[serde(default)]
    #[schemars(range(min = 0, max = 55))]
    pub wait_seconds: Option<u64>,
}

/// `add_research`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddResearch {
    /// askloop's id of the question (a number or a string of digits); or give `externalId`.
    #[serde(default)]
    pub question_id: Option<IdArg>,
    /// The agent's own id of the question; or give `questionId`.
    #[serde(default)]
    pub external_id: Option<String>,
    /// The niche's slug, needed only when the same `externalId` was used in several niches.
    #[serde(default)]
    pub niche: Option<String>,
    /// What the agent found: appended to the question's context under a dated heading.
    pub findings: String,
}

/// `withdraw_question`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WithdrawQuestion {
    /// askloop's id of the question (a number or a string of digits); or give `externalId`.
    #[serde(default)]
    pub question_id: Option<IdArg>,
    /// The agent's own id of the question; or give `questionId`.
    #[serde(default)]
    pub external_id: Option<String>,
    /// The niche's slug, needed only when the same `externalId` was used in several niches.
    #[serde(default)]
    pub niche: Option<String>,
    /// Why (at most 500 characters); kept in the audit log and sent with the event.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A question's status, as a filter.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusArg {
    /// Waiting for a person.
    Open,
    /// Sent back to the agent for more research.
    Researching,
    /// Answered.
    Answered,
    /// Dismissed as not worth anybody's time.
    Dismissed,
    /// Its time ran out.
    Expired,
}

impl From<StatusArg> for QuestionStatus {
    fn from(status: StatusArg) -> Self {
        match status {
            StatusArg::Open => QuestionStatus::Open,
            StatusArg::Researching => QuestionStatus::Researching,
            StatusArg::Answered => QuestionStatus::Answered,
            StatusArg::Dismissed => QuestionStatus::Dismissed,
            StatusArg::Expired => QuestionStatus::Expired,
        }
    }
}

/// `list_questions`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListQuestions {
    /// Only questions in this status.
    #[serde(default)]
    pub status: Option<StatusArg>,
    /// How many (1 to 100; 20 when omitted).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub first: Option<i32>,
    /// The `nextCursor` of the previous page.
    #[serde(default)]
    pub after: Option<String>,
}
