//! `SendMessage`: without a `taskId` it asks a question (its text parts and one optional data
//! part, through MCP's `ask_expert` intake); with one it is the agent's reply on that task.

use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};

use super::DERIVED_TITLE_MAX;
use super::push::new_push_config;
use super::push::{PushConfigIn, push_refusal, task_question};
use super::tasks::{own_task, read_own};
use crate::a2a::task::{TaskState, task_json};
use crate::a2a::{RpcError, codes, cut};
use crate::domain::text::{CONTEXT_MAX, cap, first_control_character};
use crate::error::ServiceError;
use crate::mcp::tools::{AskExpert, OptionArg, UrgencyArg};
use crate::service::agents::a2a_tasks;
use crate::service::agents::registry::Asker;
use crate::service::questions::research::add_findings;
use crate::state::AppState;

/// A message part as a client sends it: askloop takes text and data parts.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartIn {
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
pub(super) struct MessageIn {
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
pub(super) struct ConfigurationIn {
    #[serde(default)]
    task_push_notification_config: Option<PushConfigIn>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SendMessageParams {
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

pub(super) async fn send_message(
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
