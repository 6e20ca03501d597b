//! The MCP tools (docs/contract.md#mcp): their inputs, JSON-schema'd for the client, and
//! what each does — parse, call the same service the signed REST route calls, shape the result.
//! Nothing here knows the MCP SDK: a tool takes the calling agent and its arguments and returns
//! a JSON result or the [`ServiceError`] the REST route would have answered with.

use std::time::Duration;

use chrono::Utc;
use entity::agent_questions::{self, QuestionStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::domain::intake::{
    AnswersRequest, AskOption, AskRequest, ExchangeKind, Identifier, NewQuestion, option_label,
};
use crate::domain::knowledge::{AgentSearch, KnowledgeSearchRequest, NewReuse, ReuseRequest};
use crate::domain::text::{CONTEXT_MAX, cap, first_control_character};
use crate::error::ServiceError;
use crate::rest::views::{
    KnowledgeRef, KnowledgeResult, KnowledgeReuseResponse, ReviewWord, StatusWord,
    WithdrawalResponse, seconds,
};
use crate::service::agents::registry::Asker;
use crate::service::questions::intake::{receive_question, refusal_reason};
use crate::service::questions::lookup::{
    self, FoundAnswer, MAX_WAIT_SECS, OwnCursor, OwnQuestion, question_ref,
};
use crate::service::questions::queue::page_size;
use crate::service::questions::research::add_findings;
use crate::service::{knowledge, knowledge::reuse, people::weighing, questions::withdrawal};
use crate::state::AppState;
use askloop_wire::Field;

/// The tools' names, in the order they are listed.
pub const TOOL_NAMES: [&str; 8] = [
    "ask_expert",
    "delegate_task",
    "get_answer",
    "add_research",
    "withdraw_question",
    "list_questions",
    "search_knowledge",
    "use_knowledge",
];

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
fn id_of(field: &str, arg: Option<&IdArg>) -> Result<Option<i64>, ServiceError> {
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

/// A tool as listed: its name, what it is for, and the JSON schema of its arguments.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// The name clients call it by.
    pub name: &'static str,
    /// What it does, for the model choosing it.
    pub description: &'static str,
    /// The JSON schema of its arguments (an object schema).
    pub input_schema: Map<String, Value>,
    /// Whether it only reads.
    pub read_only: bool,
}

fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(map)) => map,
        // A derived schema is always an object; an empty one still lists the tool.
        _ => Map::new(),
    }
}

/// The tools, with their schemas.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "ask_expert",
            description: "Ask people who have done the job a question in one of this agent's \
                          niches. Returns at once with the question's id and status; then call \
                          get_answer to wait for the answer. Asking again with the same \
                          externalId (or, without one, the same arguments) returns the same \
                          question with duplicate: true.",
            input_schema: schema_of::<AskExpert>(),
            read_only: false,
        },
        ToolSpec {
            name: "delegate_task",
            description: "Hand people a sub-task in one of this agent's niches (\"fetch and \
                          pre-chew this URL\", \"check these three prices\") with the most it \
                          may cost (budgetLimitMinor, reserved against the niche's budget). \
                          Returns at once with its id; call get_answer to wait for the result. \
                          The agent is charged the actual cost the person reports (0 up to the \
                          limit) and the rest is released. Same externalId rules as ask_expert.",
            input_schema: schema_of::<DelegateTask>(),
            read_only: false,
        },
        ToolSpec {
            name: "get_answer",
            description: "Read one of this agent's questions: its status and, once answered, \
                          the answer (text, the option chosen) with its review state (pending, \
                          verified, rejected, reversed); for a task, its result and \
                          actualCostMinor. With waitSeconds (at most 55) it waits \
                          while the question is open; call it again while the status is open. \
                          Status researching means a person asked for more research: call \
                          add_research.",
            input_schema: schema_of::<GetAnswer>(),
            read_only: true,
        },
        ToolSpec {
            name: "add_research",
            description: "Add findings to one of this agent's waiting questions (for instance \
                          after a person sent it back for research): they are appended to its \
                          context and the question is open again for everyone.",
            input_schema: schema_of::<AddResearch>(),
            read_only: false,
        },
        ToolSpec {
            name: "withdraw_question",
            description: "Withdraw one of this agent's questions or tasks it no longer needs: \
                          while it waits (open or researching) it is dismissed as withdrawn by \
                          the agent, what was reserved for it is released and people stop \
                          seeing it. An answered question stays answered (outcome settled); \
                          withdrawing again changes nothing (outcome already_withdrawn).",
            input_schema: schema_of::<WithdrawQuestion>(),
            read_only: false,
        },
        ToolSpec {
            name: "list_questions",
            description: "List this agent's own questions, newest first, optionally only those \
                          in one status; pass nextCursor as after for the next page.",
            input_schema: schema_of::<ListQuestions>(),
            read_only: true,
        },
        ToolSpec {
            name: "search_knowledge",
            description: "Search the knowledge of one of this agent's niches: verified answers \
                          to earlier questions, best first, each with its entryId, version, \
                          title, answer words, the option chosen and when it was verified. Look \
                          here before asking: a question asked twice should cost a person once.",
            input_schema: schema_of::<SearchKnowledge>(),
            read_only: true,
        },
        ToolSpec {
            name: "use_knowledge",
            description: "Rely on a knowledge entry instead of asking a person again: records \
                          the reuse (once per externalId), charges the niche's reuse price from \
                          its budget and pays the entry's author. If the entry is later replaced \
                          or withdrawn this agent receives knowledge.superseded or \
                          knowledge.retracted, and a withdrawal gives the charge back.",
            input_schema: schema_of::<UseKnowledge>(),
            read_only: false,
        },
    ]
}

/// Run the tool `name` for `asker` with `arguments`: its JSON result, or the error to return as
/// a tool error. Unknown arguments, wrong types and values the REST route would refuse are all
/// `BAD_USER_INPUT`, and change nothing.
pub async fn call(
    state: &AppState,
    asker: &Asker,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Value, ServiceError> {
    let arguments = Value::Object(arguments);
    // The signed routes' one check before any field is read (docs/contract.md#signed-routes).
    if let Some(refused) = first_control_character(&arguments) {
        return Err(refused.into());
    }
    match name {
        "ask_expert" => ask_expert(state, asker, parse(name, arguments)?).await,
        "delegate_task" => delegate_task(state, asker, parse(name, arguments)?).await,
        "get_answer" => get_answer(state, asker, parse(name, arguments)?).await,
        "add_research" => add_research(state, asker, parse(name, arguments)?).await,
        "withdraw_question" => withdraw_question(state, asker, parse(name, arguments)?).await,
        "list_questions" => list_questions(state, asker, parse(name, arguments)?).await,
        "search_knowledge" => search_knowledge(state, asker, parse(name, arguments)?).await,
        "use_knowledge" => use_knowledge(state, asker, parse(name, arguments)?).await,
        _ => Err(ServiceError::NotFound(format!(
            "askloop has no tool '{}' (it has {})",
            name.chars().take(60).collect::<String>(),
            TOOL_NAMES.join(", ")
        ))),
    }
}

/// The arguments as `T`, or a refusal that names the field at fault (`urgency: unknown variant
/// …`).
fn parse<T: serde::de::DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, ServiceError> {
    serde_path_to_error::deserialize(arguments).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        ServiceError::BadInput(if path == "." {
            format!("{tool}'s arguments: {inner}")
        } else {
            format!("{tool}'s arguments: {path}: {inner}")
        })
    })
}

/// The external id of a question asked without one: `mcp:` and the first 128 bits (hex) of
/// SHA-256 over the agent and the arguments as parsed. The same agent asking with the same
/// arguments — a retried tool call — names the same question.
pub fn derived_external_id<T: Serialize>(asker: &Asker, input: &T) -> String {
    let mut hasher = Sha256::new();
    hasher.update(asker.agent_id().unwrap_or(0).to_string().as_bytes());
    hasher.update(b".");
    // Serialising a struct writes its fields in declaration order: the same arguments always
    // hash alike, whatever order the client sent them in.
    hasher.update(serde_json::to_string(input).unwrap_or_default().as_bytes());
    format!("mcp:{}", hex::encode(&hasher.finalize()[..16]))
}

/// `input` with the `externalId` it is asked under: its own, or (when it gives none, or a blank
/// one) one derived from the arguments, so a retried call is the same question.
fn with_external_id<T: Serialize>(
    asker: &Asker,
    mut input: T,
    id: fn(&mut T) -> &mut Option<String>,
) -> T {
    if id(&mut input)
        .as_deref()
        .is_none_or(|given| given.trim().is_empty())
    {
        *id(&mut input) = None;
        let derived = derived_external_id(asker, &input);
        *id(&mut input) = Some(derived);
    }
    input
}

/// `ask_expert`: store the question (under a derived external id when it names none) and, when
/// asked, find similar knowledge. The A2A door asks through here too.
pub async fn ask_expert(
    state: &AppState,
    asker: &Asker,
    mut input: AskExpert,
) -> Result<Value, ServiceError> {
    // Whether to look for similar entries is not part of what the question is.
    let check_similar = input.check_similar.take().unwrap_or(false);
    let input = with_external_id(asker, input, |i| &mut i.external_id);
    // The intake's typed request: the same validation and caps as the signed route.
    let mut asked = intake(state, asker, input.into()).await?;
    if check_similar {
        let stored = asked["questionId"]
            .as_i64()
            .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("intake gave no question id")))?;
        let similar = knowledge::similar_to_question(&state.db, stored).await?;
        asked["similar"] = json!(
            similar
                .into_iter()
                .map(|s| KnowledgeResult::of(s.found, Some(s.likeness_bps)))
                .collect::<Vec<_>>()
        );
    }
    Ok(asked)
}

async fn search_knowledge(
    state: &AppState,
    asker: &Asker,
    input: SearchKnowledge,
) -> Result<Value, ServiceError> {
    // The signed route's typed request: the same checks and the same defaults.
    let request = AgentSearch::try_from(KnowledgeSearchRequest::new(
        input.niche,
        input.query,
        input.first,
    ))?;
    let found = knowledge::for_agent(&state.db, asker, &request).await?;
    Ok(json!({
        "results": found
            .into_iter()
            .map(|found| KnowledgeResult::of(found, None))
            .collect::<Vec<_>>()
    }))
}

async fn use_knowledge(
    state: &AppState,
    asker: &Asker,
    input: UseKnowledge,
) -> Result<Value, ServiceError> {
    // The signed route's own parser and service: the same checks, the same reuse.
    let request = NewReuse::try_from(ReuseRequest {
        entry_id: Field::Given(match input.entry_id {
            IdArg::Number(id) => Identifier::Number(id.into()),
            IdArg::Text(text) => Identifier::Text(text),
        }),
        external_id: Field::Given(input.external_id),
        payload: Field::Absent,
    })?;
    let reused = reuse::reuse(&state.db, asker, &request, chrono::Utc::now()).await?;
    serde_json::to_value(KnowledgeReuseResponse::of(reused))
        .map_err(|err| ServiceError::Internal(anyhow::anyhow!("use_knowledge result: {err}")))
}

async fn delegate_task(
    state: &AppState,
    asker: &Asker,
    input: DelegateTask,
) -> Result<Value, ServiceError> {
    let input = with_external_id(asker, input, |i| &mut i.external_id);
    intake(state, asker, input.into()).await
}

/// Store what an agent asked or delegated, given as the intake's typed request: the same
/// validation and service as the signed route, counted in the same metric.
async fn intake(
    state: &AppState,
    asker: &Asker,
    request: AskRequest,
) -> Result<Value, ServiceError> {
    let new = match NewQuestion::try_from(request) {
        Ok(new) => new,
        Err(err) => {
            state.metrics.intake_outcome("bad_input");
            return Err(ServiceError::BadInput(err.0));
        }
    };
    let external_id = new.external_id.clone().unwrap_or_default();
    let kind = new.kind;
    // Counted with the REST intakes: the metric is about questions, whichever door they use.
    let outcome = match receive_question(&state.db, &state.hint(), asker, new, Utc::now()).await {
        Ok(outcome) => {
            state.metrics.intake_outcome(if outcome.duplicate {
                "duplicate"
            } else {
                "created"
            });
            outcome
        }
        Err(err) => {
            state.metrics.intake_outcome(refusal_reason(&err));
            return Err(err);
        }
    };
    Ok(json!({
        "questionId": outcome.question_id,
        "externalId": external_id,
        "kind": kind.as_str(),
        "status": StatusWord::from(outcome.status),
        "expiresAt": seconds(outcome.expires_at),
        "duplicate": outcome.duplicate,
    }))
}

/// A question as `get_answer` returns it: status, expiry and, once answered, the answer with
/// its review state.
pub fn answer_json(own: &OwnQuestion) -> Value {
    let question = &own.question;
    let task = question.kind == agent_questions::ExchangeKind::Task;
    let mut result = json!({
        "questionId": question.id,
        "externalId": question.external_id,
        "kind": if task { "task" } else { "question" },
        "status": StatusWord::from(question.status),
        "expiresAt": seconds(question.expires_at),
    });
    if task {
        result["budgetLimitMinor"] = json!(question.bounty_minor);
    }
    if let Some(FoundAnswer {
        answer,
        handle,
        review,
        knowledge,
        answerer,
    }) = &own.answer
    {
        if let Some(entry) = knowledge {
            result["knowledge"] =
                json!(KnowledgeRef::of(entry, answer.knowledge_entry_id.is_some()));
        }
        let fields = [
            ("answer", json!(answer.body)),
            ("optionId", json!(answer.option_id)),
            (
                "optionLabel",
                json!(
                    answer
                        .option_id
                        .as_deref()
                        .and_then(|id| option_label(&question.options, id))
                ),
            ),
            ("review", json!(ReviewWord::from(*review))),
            ("answeredBy", json!(handle)),
            ("answeredAt", json!(seconds(answer.created_at))),
            ("confidence", json!(answer.confidence)),
            ("answerer", weighing::answerer_json(answerer)),
        ];
        for (key, value) in fields {
            result[key] = value;
        }
        if task {
            result["result"] = json!(answer.body);
            result["actualCostMinor"] = json!(answer.actual_cost_minor);
        }
    }
    result
}

async fn get_answer(
    state: &AppState,
    asker: &Asker,
    input: GetAnswer,
) -> Result<Value, ServiceError> {
    let which = question_ref(
        id_of("questionId", input.question_id.as_ref())?,
        input.external_id,
        input.niche,
    )?;
    let wait = match input.wait_seconds {
        None | Some(0) => None,
        Some(secs) if secs <= MAX_WAIT_SECS => Some(Duration::from_secs(secs)),
        Some(_) => {
            return Err(ServiceError::BadInput(format!(
                "waitSeconds must be a whole number from 0 to {MAX_WAIT_SECS}"
            )));
        }
    };
    let own = lookup::await_own(&state.db, &state.live, asker, &which, wait).await?;
    let mut result = answer_json(&own);
    if let Some(several) =
        crate::service::questions::consensus::several_json(&state.db, &own.question).await?
    {
        result["several"] = several;
    }
    Ok(result)
}

async fn add_research(
    state: &AppState,
    asker: &Asker,
    input: AddResearch,
) -> Result<Value, ServiceError> {
    let which = question_ref(
        id_of("questionId", input.question_id.as_ref())?,
        input.external_id,
        input.niche,
    )?;
    let findings = input.findings.trim();
    if findings.is_empty() {
        return Err(ServiceError::BadInput("findings is required".into()));
    }
    let findings = cap(findings, CONTEXT_MAX);
    let question = lookup::find_own(&state.db, asker, &which).await?;
    let updated = add_findings(&state.db, &state.hint(), &question, &findings, Utc::now()).await?;
    Ok(json!({
        "questionId": updated.id,
        "status": StatusWord::from(updated.status),
        "round": updated.research_round,
    }))
}

async fn withdraw_question(
    state: &AppState,
    asker: &Asker,
    input: WithdrawQuestion,
) -> Result<Value, ServiceError> {
    let which = question_ref(
        id_of("questionId", input.question_id.as_ref())?,
        input.external_id,
        input.niche,
    )?;
    let withdrawal = withdrawal::withdraw(
        &state.db,
        &state.hint(),
        asker,
        &which,
        input.reason.as_deref(),
        Utc::now(),
    )
    .await?;
    serde_json::to_value(WithdrawalResponse::of(&withdrawal))
        .map_err(|err| ServiceError::Internal(anyhow::anyhow!("withdraw_question result: {err}")))
}

async fn list_questions(
    state: &AppState,
    asker: &Asker,
    input: ListQuestions,
) -> Result<Value, ServiceError> {
    let first = page_size(input.first)?;
    let after = input.after.as_deref().map(OwnCursor::decode).transpose()?;
    let page =
        lookup::list_own(&state.db, asker, input.status.map(Into::into), first, after).await?;
    let questions: Vec<Value> = page
        .items
        .iter()
        .map(|(q, niche)| {
            json!({
                "questionId": q.id,
                "externalId": q.external_id,
                "niche": niche,
                "title": q.title,
                "status": StatusWord::from(q.status),
                "createdAt": seconds(q.created_at),
                "expiresAt": seconds(q.expires_at),
                "answeredAt": q.answered_at.map(seconds),
            })
        })
        .collect();
    Ok(json!({
        "questions": questions,
        "nextCursor": page.next.map(OwnCursor::encode),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::questions::lookup::QuestionRef;

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
        let err =
            parse::<GetAnswer>("get_answer", json!({"questionId": [7]})).expect_err("refused");
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
}
