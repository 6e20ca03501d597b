//! The A2A methods askloop answers (docs/contract.md#a2a), each a thin adapter: parse the
//! parameters, call the service the MCP tools and the signed REST routes call, shape the task.
//!
//! - `SendMessage` without a `taskId` asks a question: the text parts are the question, and one
//!   optional data part carries `niche`, `title`, `context`, `options`, `urgency`,
//!   `bountyMinor`, `expiresInSeconds` and `externalId` — the fields of MCP's `ask_expert`, whose
//!   intake it goes through. The question's external id is the data part's `externalId`, else
//!   `a2a:<messageId>`, so a message sent again is the same question (and the same task).
//! - `SendMessage` with a `taskId` is the agent's reply on that task: its text is the research
//!   a person asked for (`add_research`), and the task is `WORKING` again. A settled task takes
//!   no more messages (`-32004`).
//! - `GetTask`, `ListTasks` (the caller's own tasks, newest first) and `CancelTask` (the agent
//!   withdraws the question; a settled one is `-32002`). Another agent's task is not found
//!   (`-32001`), exactly like one that does not exist.
//! - Push notification configs (`Create`/`Get`/`List`/`DeleteTaskPushNotificationConfig`, and
//!   one given with `SendMessage`): see [`crate::service::agents::a2a_tasks`]. A config's credentials
//!   are never echoed back.

use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};

use super::task::{self, TaskState, task_json};
use super::{RpcError, codes, cut};
use crate::domain::text::{CONTEXT_MAX, cap, first_control_character};
use crate::error::ServiceError;
use crate::mcp::tools::{AskExpert, OptionArg, UrgencyArg};
use crate::service::agents::a2a_tasks::{self, NewPushConfig};
use crate::service::agents::registry::Asker;
use crate::service::questions::lookup::{self, OwnCursor, OwnQuestion, QuestionRef};
use crate::service::questions::research::add_findings;
use crate::service::questions::withdrawal::{WithdrawOutcome, withdraw};
use crate::state::AppState;

/// Whether push notification configs are offered (the card's `pushNotifications`).
pub const PUSH_NOTIFICATIONS: bool = true;

/// The most tasks one `ListTasks` page holds, and how many when the client does not say.
const PAGE_MAX: i32 = 100;
const PAGE_DEFAULT: i32 = 50;

/// The longest title derived from the question's first line.
const DERIVED_TITLE_MAX: usize = 120;

/// Answer the method `method` with `params` for `asker`.
pub async fn call(
    state: &AppState,
    asker: &Asker,
    method: &str,
    params: Value,
) -> Result<Value, RpcError> {
    match method {
        "SendMessage" => send_message(state, asker, parse(method, params)?).await,
        "GetTask" => get_task(state, asker, parse(method, params)?).await,
        "ListTasks" => list_tasks(state, asker, parse(method, params)?).await,
        "CancelTask" => cancel_task(state, asker, parse(method, params)?).await,
        "CreateTaskPushNotificationConfig" => {
            create_push_config(state, asker, parse(method, params)?).await
        }
        "GetTaskPushNotificationConfig" => {
            get_push_config(state, asker, parse(method, params)?).await
        }
        "ListTaskPushNotificationConfigs" => {
            list_push_configs(state, asker, parse(method, params)?).await
        }
        "DeleteTaskPushNotificationConfig" => {
            delete_push_config(state, asker, parse(method, params)?).await
        }
        "SendStreamingMessage" | "SubscribeToTask" => Err(RpcError::new(
            codes::UNSUPPORTED_OPERATION,
            "askloop does not stream (a question waits for a person for minutes to days): \
             use SendMessage, then GetTask",
        )),
        "GetExtendedAgentCard" => Err(RpcError::new(
            -32007,
            "askloop has no extended agent card: the card at /.well-known/agent-card.json, \
             fetched with the agent token, is this agent's",
        )),
        other => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!(
                "Method not found: askloop has no method '{}'",
                cut(other, 60)
            ),
        )),
    }
}

/// The parameters as `T`, or `-32602` naming the field at fault.
fn parse<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(params).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        RpcError::invalid_params(if path == "." {
            format!("{method}'s params: {inner}")
        } else {
            format!("{method}'s params: {path}: {inner}")
        })
    })
}

/// A message part as a client sends it: askloop takes text and data parts.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartIn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    raw: Option<Value>,
    #[serde(default)]
    url: Option<Value>,
}

/// A message as a client sends it (fields askloop does not use are ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageIn {
    message_id: String,
    #[serde(default)]
    role: Option<String>,
    parts: Vec<PartIn>,
    #[serde(default)]
    task_id: Option<String>,
}

/// `SendMessage`'s configuration: only a push notification config matters to askloop.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigurationIn {
    #[serde(default)]
    task_push_notification_config: Option<PushConfigIn>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendMessageParams {
    message: MessageIn,
    #[serde(default)]
    configuration: Option<ConfigurationIn>,
}

/// The data part of a question: the fields of `ask_expert` besides the question itself, typed
/// as `ask_expert`'s own arguments.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct QuestionData {
    #[serde(default)]
    niche: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    options: Option<Vec<OptionArg>>,
    #[serde(default)]
    urgency: Option<UrgencyArg>,
    #[serde(default)]
    bounty_minor: Option<i64>,
    #[serde(default)]
    expires_in_seconds: Option<i64>,
    #[serde(default)]
    external_id: Option<String>,
}

/// The message's text (its text parts, joined) and its one data part, if any.
fn read_parts(parts: Vec<PartIn>) -> Result<(String, Option<Value>), RpcError> {
    let mut texts = Vec::new();
    let mut data = None;
    for (at, part) in parts.into_iter().enumerate() {
        if part.raw.is_some() || part.url.is_some() {
            return Err(RpcError::new(
                -32005,
                format!(
                    "message.parts[{at}]: askloop takes text and data parts, not files (put \
                     what a person should read in a text part)"
                ),
            ));
        }
        match (part.text, part.data) {
            (Some(text), None) => texts.push(text),
            (None, Some(value)) if data.is_none() => data = Some(value),
            (None, Some(_)) => {
                return Err(RpcError::invalid_params(format!(
                    "message.parts[{at}]: a message carries at most one data part"
                )));
            }
            _ => {
                return Err(RpcError::invalid_params(format!(
                    "message.parts[{at}]: a part is either text or data"
                )));
            }
        }
    }
    let text = texts
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    Ok((text, data))
}

/// The external id a message asks under when its data part gives none.
fn message_external_id(message_id: &str) -> String {
    if message_id.chars().count() <= 190 {
        format!("a2a:{message_id}")
    } else {
        use sha2::{Digest, Sha256};
        format!(
            "a2a:{}",
            hex::encode(&Sha256::digest(message_id.as_bytes())[..16])
        )
    }
}

async fn send_message(
    state: &AppState,
    asker: &Asker,
    params: SendMessageParams,
) -> Result<Value, RpcError> {
    let message = params.message;
    if message.message_id.trim().is_empty() {
        return Err(RpcError::invalid_params("message.messageId is required"));
    }
    if let Some(role) = message.role.as_deref()
        && role != "ROLE_USER"
    {
        return Err(RpcError::invalid_params(format!(
            "message.role must be ROLE_USER (the agent asking), not '{}'",
            cut(role, 40)
        )));
    }
    let push = params
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .map(new_push_config)
        .transpose()?;
    let (text, data) = read_parts(message.parts)?;
    if let Some(refused) = first_control_character(&json!({"text": text, "data": data})) {
        return Err(ServiceError::from(refused).into());
    }
    // Everything is checked before anything is stored: a refused config must not leave a
    // question asked, with its bounty reserved, behind a -32602.
    if let Some(push) = &push {
        a2a_tasks::check_push_config(&state.db, asker, push)
            .await
            .map_err(RpcError::from)?;
    }
    let mut push = push;
    let sent = match message.task_id.as_deref().filter(|id| !id.is_empty()) {
        Some(task_id) => {
            // On a task that exists the config is set first: one the task cannot take (its
            // configs are full) refuses the message before its research is stored.
            if let Some(push) = push.take() {
                let question = task_question(state, asker, task_id).await?;
                a2a_tasks::set_push_config(&state.db, asker, question, push, Utc::now())
                    .await
                    .map_err(push_refusal(task_id))?;
            }
            reply_on_task(state, asker, task_id, &text, data.as_ref()).await
        }
        None => ask(state, asker, &message.message_id, text, data).await,
    }?;
    if let Some(push) = push {
        let question = sent["task"]["metadata"]["questionId"]
            .as_i64()
            .unwrap_or_default();
        a2a_tasks::set_push_config(&state.db, asker, question, push, Utc::now())
            .await
            .map_err(RpcError::from)?;
    }
    Ok(sent)
}

/// A new question from a message.
async fn ask(
    state: &AppState,
    asker: &Asker,
    message_id: &str,
    text: String,
    data: Option<Value>,
) -> Result<Value, RpcError> {
    if text.is_empty() {
        return Err(RpcError::invalid_params(
            "the message needs a text part: the question a person should answer",
        ));
    }
    let data: QuestionData = match data {
        None => QuestionData::default(),
        Some(value) => serde_path_to_error::deserialize(value).map_err(|err| {
            let path = err.path().to_string();
            RpcError::invalid_params(format!(
                "the data part: {}{}",
                if path == "." {
                    String::new()
                } else {
                    format!("{path}: ")
                },
                err.into_inner()
            ))
        })?,
    };
    let niche = match data
        .niche
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
    {
        Some(niche) => niche,
        None => only_niche(state, asker).await?,
    };
    let title = data
        .title
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| {
            cap(
                text.lines().next().unwrap_or_default().trim(),
                DERIVED_TITLE_MAX,
            )
        });
    let external_id = data
        .external_id
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| message_external_id(message_id.trim()));
    // ask_expert's own path: the intake's typed request, caps, niche rule, budget and
    // idempotency.
    let input = AskExpert {
        niche,
        title,
        question: text,
        context: data.context,
        options: data.options,
        urgency: data.urgency,
        bounty_minor: data.bounty_minor,
        expires_in_seconds: data.expires_in_seconds,
        external_id: Some(external_id),
        // An argument the data part does not carry is left to ask_expert's default.
        ..AskExpert::default()
    };
    let asked = crate::mcp::tools::ask_expert(state, asker, input)
        .await
        .map_err(|err| match err {
            // A niche the agent may not use is a parameter it chose, not a missing task.
            ServiceError::NotFound(_) => {
                let mut refused = RpcError::from(err);
                refused.code = codes::INVALID_PARAMS;
                refused
            }
            other => RpcError::from(other),
        })?;
    let id = asked["questionId"].as_i64().ok_or_else(|| {
        RpcError::from(ServiceError::Internal(anyhow::anyhow!(
            "ask_expert gave no question id"
        )))
    })?;
    let own = read_own(state, asker, id).await?;
    Ok(json!({"task": task_json(&own)}))
}

/// The one niche `asker` may ask in, when it has exactly one; else the refusal that asks it to
/// name one.
async fn only_niche(state: &AppState, asker: &Asker) -> Result<String, RpcError> {
    let slugs = match asker.agent_id() {
        Some(id) => crate::service::agents::registry::niche_slugs(&state.db, &[id])
            .await
            .map_err(RpcError::from)?
            .remove(&id)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    match slugs.as_slice() {
        [only] => Ok(only.clone()),
        _ => Err(RpcError::invalid_params(format!(
            "name the niche in a data part, {{\"niche\": \"<slug>\"}} (this agent asks in: {})",
            if slugs.is_empty() {
                "no niche".to_owned()
            } else {
                slugs.join(", ")
            }
        ))),
    }
}

/// The agent's message on an existing task: its research.
async fn reply_on_task(
    state: &AppState,
    asker: &Asker,
    task_id: &str,
    text: &str,
    data: Option<&Value>,
) -> Result<Value, RpcError> {
    let own = own_task(state, asker, task_id).await?;
    let current = TaskState::of(&own.question);
    if current.is_terminal() {
        return Err(RpcError::new(
            codes::UNSUPPORTED_OPERATION,
            format!(
                "task {task_id} is in a terminal state ({}): it takes no more messages",
                current.as_str()
            ),
        ));
    }
    if data.is_some() {
        return Err(RpcError::invalid_params(
            "a reply on a task carries its findings as text only (no data part)",
        ));
    }
    if text.is_empty() {
        return Err(RpcError::invalid_params(
            "the reply needs a text part: the findings a person asked for",
        ));
    }
    let findings = cap(text, CONTEXT_MAX);
    // The same reply sent again (a retried request) is not appended twice: the task is working
    // on it already.
    if current == TaskState::Working
        && own
            .question
            .context
            .as_deref()
            .is_some_and(|context| context.contains(findings.as_str()))
    {
        return Ok(json!({"task": task_json(&own)}));
    }
    add_findings(
        &state.db,
        &state.hint(),
        &own.question,
        &findings,
        Utc::now(),
    )
    .await
    .map_err(RpcError::from)?;
    let own = read_own(state, asker, own.question.id).await?;
    Ok(json!({"task": task_json(&own)}))
}

/// The question `id` of `asker`, with its answer.
async fn read_own(state: &AppState, asker: &Asker, id: i64) -> Result<OwnQuestion, RpcError> {
    lookup::await_own(&state.db, &state.live, asker, &QuestionRef::Id(id), None)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound(_) => RpcError::task_not_found(&task::task_id(id)),
            other => RpcError::from(other),
        })
}

/// The task `task_id` of `asker`: not found for an id that names none of its questions.
async fn own_task(state: &AppState, asker: &Asker, task_id: &str) -> Result<OwnQuestion, RpcError> {
    let id = task::question_of(task_id).ok_or_else(|| RpcError::task_not_found(task_id))?;
    read_own(state, asker, id)
        .await
        .map_err(|err| match err.code {
            codes::TASK_NOT_FOUND => RpcError::task_not_found(task_id),
            _ => err,
        })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskIdParams {
    id: String,
    #[serde(default)]
    history_length: Option<i64>,
}

async fn get_task(
    state: &AppState,
    asker: &Asker,
    params: TaskIdParams,
) -> Result<Value, RpcError> {
    check_history_length(params.history_length)?;
    let own = own_task(state, asker, &params.id).await?;
    Ok(task_json(&own))
}

/// A negative history length is refused (askloop keeps no message history: any other is fine).
fn check_history_length(history_length: Option<i64>) -> Result<(), RpcError> {
    match history_length {
        Some(n) if n < 0 => Err(RpcError::invalid_params(
            "historyLength must not be negative",
        )),
        _ => Ok(()),
    }
}

async fn cancel_task(
    state: &AppState,
    asker: &Asker,
    params: TaskIdParams,
) -> Result<Value, RpcError> {
    let id = task::question_of(&params.id).ok_or_else(|| RpcError::task_not_found(&params.id))?;
    let withdrawal = withdraw(
        &state.db,
        &state.hint(),
        asker,
        &QuestionRef::Id(id),
        None,
        Utc::now(),
    )
    .await
    .map_err(|err| match err {
        ServiceError::NotFound(_) => RpcError::task_not_found(&params.id),
        other => RpcError::from(other),
    })?;
    if withdrawal.outcome == WithdrawOutcome::Settled {
        return Err(RpcError::new(
            codes::TASK_NOT_CANCELABLE,
            format!(
                "task {} is settled ({}): it can no longer be canceled",
                params.id,
                TaskState::of(&withdrawal.question).as_str()
            ),
        ));
    }
    Ok(task_json(&OwnQuestion {
        question: withdrawal.question,
        answer: None,
    }))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListTasksParams {
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    page_size: Option<i32>,
    #[serde(default)]
    page_token: Option<String>,
    #[serde(default)]
    history_length: Option<i64>,
    #[serde(default)]
    status_timestamp_after: Option<chrono::DateTime<Utc>>,
    #[serde(default)]
    include_artifacts: Option<bool>,
}

async fn list_tasks(
    state: &AppState,
    asker: &Asker,
    params: ListTasksParams,
) -> Result<Value, RpcError> {
    check_history_length(params.history_length)?;
    let wanted = match params.status.as_deref() {
        None | Some("" | "TASK_STATE_UNSPECIFIED") => None,
        Some(name) => Some(TaskState::parse(name).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "status: askloop's tasks are WORKING, INPUT_REQUIRED, COMPLETED, REJECTED, \
                 CANCELED or FAILED (as TASK_STATE_…), not '{}'",
                cut(name, 40)
            ))
        })?),
    };
    let page_size = params.page_size.unwrap_or(PAGE_DEFAULT);
    if !(1..=PAGE_MAX).contains(&page_size) {
        return Err(RpcError::invalid_params(format!(
            "pageSize must be between 1 and {PAGE_MAX}"
        )));
    }
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(OwnCursor::decode)
        .transpose()
        .map_err(|_| RpcError::invalid_params("pageToken is not one askloop gave out"))?;
    let include_artifacts = params.include_artifacts.unwrap_or(false);
    let keep = |question: &entity::agent_questions::Model| {
        wanted.is_none_or(|state| TaskState::of(question) == state)
            && params
                .status_timestamp_after
                .is_none_or(|after| question.updated_at > after)
    };
    // A context is one task here: its id names the question.
    if let Some(context) = params.context_id.as_deref().filter(|c| !c.is_empty()) {
        let tasks = match own_task(state, asker, context).await {
            Ok(own) if keep(&own.question) => vec![listed(own, include_artifacts)],
            Ok(_) => Vec::new(),
            Err(err) if err.code == codes::TASK_NOT_FOUND => Vec::new(),
            Err(err) => return Err(err),
        };
        let mut listed = page(tasks, None, page_size);
        listed["totalSize"] = json!(listed["tasks"].as_array().map_or(0, Vec::len));
        return Ok(listed);
    }
    let total = a2a_tasks::count_own(&state.db, asker, wanted.map(TaskState::status))
        .await
        .map_err(RpcError::from)?;
    let page_of = lookup::list_own(
        &state.db,
        asker,
        wanted.map(TaskState::status),
        u64::try_from(page_size).unwrap_or(50),
        after,
    )
    .await
    .map_err(RpcError::from)?;
    let mut tasks = Vec::new();
    for (question, _niche) in page_of.items {
        if !keep(&question) {
            continue;
        }
        let own = if include_artifacts && question.answered_at.is_some() {
            read_own(state, asker, question.id).await?
        } else {
            OwnQuestion {
                question,
                answer: None,
            }
        };
        tasks.push(listed(own, include_artifacts));
    }
    let mut listed = page(tasks, page_of.next.map(OwnCursor::encode), page_size);
    listed["totalSize"] = json!(total);
    Ok(listed)
}

/// A task as listed: without its artifacts unless they were asked for.
fn listed(own: OwnQuestion, include_artifacts: bool) -> Value {
    let mut task = task_json(&own);
    if !include_artifacts && let Some(fields) = task.as_object_mut() {
        fields.remove("artifacts");
    }
    task
}

/// A `ListTasks` result.
fn page(tasks: Vec<Value>, next: Option<String>, page_size: i32) -> Value {
    json!({
        "tasks": tasks,
        "nextPageToken": next.unwrap_or_default(),
        "pageSize": page_size,
    })
}

/// A push config's `authentication` as a client sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthenticationIn {
    scheme: String,
    #[serde(default)]
    credentials: Option<String>,
}

/// A `TaskPushNotificationConfig` as a client sends it (its `taskId` is read where it matters).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushConfigIn {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    task_id: Option<String>,
    url: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    authentication: Option<AuthenticationIn>,
}

/// The config as the service takes it, refused when it holds control characters.
fn new_push_config(config: PushConfigIn) -> Result<NewPushConfig, RpcError> {
    let authentication = config
        .authentication
        .map(|a| (a.scheme.trim().to_owned(), a.credentials));
    let checked = json!({
        "id": config.id, "url": config.url, "token": config.token,
        "authentication": authentication,
    });
    if let Some(refused) = first_control_character(&checked) {
        return Err(ServiceError::from(refused).into());
    }
    Ok(NewPushConfig {
        config_id: config.id.map(|id| id.trim().to_owned()),
        url: config.url.trim().to_owned(),
        token: config.token.filter(|t| !t.is_empty()),
        authentication,
    })
}

/// A config as askloop answers with it: never its credentials.
fn push_config_json(config: &entity::a2a_push_configs::Model) -> Value {
    let mut shown = json!({
        "id": config.config_id,
        "taskId": task::task_id(config.question_id),
        "url": config.url,
    });
    if let Some(token) = &config.token {
        shown["token"] = json!(token);
    }
    if let Some(scheme) = &config.auth_scheme {
        shown["authentication"] = json!({"scheme": scheme});
    }
    shown
}

/// The question of `asker`'s task `task_id`, or `-32001`.
async fn task_question(state: &AppState, asker: &Asker, task_id: &str) -> Result<i64, RpcError> {
    Ok(own_task(state, asker, task_id).await?.question.id)
}

/// A push config service refusal: a missing task is `-32001`, the rest as usual.
fn push_refusal(task_id: &str) -> impl Fn(ServiceError) -> RpcError + '_ {
    move |err| match err {
        ServiceError::NotFound(_) => RpcError::task_not_found(task_id),
        other => RpcError::from(other),
    }
}

async fn create_push_config(
    state: &AppState,
    asker: &Asker,
    params: PushConfigIn,
) -> Result<Value, RpcError> {
    let task_id = params
        .task_id
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| RpcError::invalid_params("taskId is required"))?;
    let question = task_question(state, asker, &task_id).await?;
    let config = new_push_config(params)?;
    let saved = a2a_tasks::set_push_config(&state.db, asker, question, config, Utc::now())
        .await
        .map_err(push_refusal(&task_id))?;
    Ok(push_config_json(&saved))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushConfigRef {
    task_id: String,
    id: String,
}

async fn get_push_config(
    state: &AppState,
    asker: &Asker,
    params: PushConfigRef,
) -> Result<Value, RpcError> {
    let question = task_question(state, asker, &params.task_id).await?;
    let found = a2a_tasks::get_push_config(&state.db, asker, question, &params.id)
        .await
        .map_err(push_refusal(&params.task_id))?;
    Ok(push_config_json(&found))
}

async fn delete_push_config(
    state: &AppState,
    asker: &Asker,
    params: PushConfigRef,
) -> Result<Value, RpcError> {
    let question = task_question(state, asker, &params.task_id).await?;
    a2a_tasks::delete_push_config(&state.db, asker, question, &params.id)
        .await
        .map_err(push_refusal(&params.task_id))?;
    Ok(json!({}))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListPushConfigsParams {
    task_id: String,
}

async fn list_push_configs(
    state: &AppState,
    asker: &Asker,
    params: ListPushConfigsParams,
) -> Result<Value, RpcError> {
    let question = task_question(state, asker, &params.task_id).await?;
    let configs = a2a_tasks::list_push_configs(&state.db, asker, question)
        .await
        .map_err(push_refusal(&params.task_id))?;
    // At most CONFIGS_PER_TASK: one page.
    Ok(json!({
        "configs": configs.iter().map(push_config_json).collect::<Vec<_>>(),
        "nextPageToken": "",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_its_text_parts_and_at_most_one_data_part() {
        let parts = |value: Value| -> Vec<PartIn> { serde_json::from_value(value).expect("parts") };
        let (text, data) = read_parts(parts(json!([
            {"text": " Early access or 1.0? "},
            {"data": {"niche": "games"}},
            {"text": "Steam lists both."},
        ])))
        .expect("read");
        assert_eq!(text, "Early access or 1.0?\n\nSteam lists both.");
        assert_eq!(data, Some(json!({"niche": "games"})));
        let two = read_parts(parts(json!([{"data": {}}, {"data": {}}]))).expect_err("refused");
        assert_eq!(two.code, codes::INVALID_PARAMS);
        let file =
            read_parts(parts(json!([{"url": "https://x.test/a.pdf"}]))).expect_err("refused");
        assert_eq!(file.code, -32005);
        let both = read_parts(parts(json!([{"text": "a", "data": {}}]))).expect_err("refused");
        assert_eq!(both.code, codes::INVALID_PARAMS);
    }

    #[test]
    fn a_message_without_an_external_id_asks_under_its_message_id() {
        assert_eq!(message_external_id("m-1"), "a2a:m-1");
        let long = message_external_id(&"x".repeat(500));
        assert_eq!(long.len(), 4 + 32, "{long}");
        assert_eq!(long, message_external_id(&"x".repeat(500)));
    }
}
