//! The push notification config methods (`Create`, `Get`, `List` and
//! `DeleteTaskPushNotificationConfig`), over [`crate::service::agents::a2a_tasks`]; a config's
//! credentials are never echoed back.

use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};

use super::tasks::own_task;
use crate::a2a::RpcError;
use crate::a2a::task;
use crate::domain::text::first_control_character;
use crate::error::ServiceError;
use crate::service::agents::a2a_tasks::{self, NewPushConfig};
use crate::service::agents::registry::Asker;
use crate::state::AppState;

/// A push config's `authentication` as a client sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuthenticationIn {
    scheme: String,
    #[serde(default)]
    credentials: Option<String>,
}

/// A `TaskPushNotificationConfig` as a client sends it (its `taskId` is read where it matters).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PushConfigIn {
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
pub(super) fn new_push_config(config: PushConfigIn) -> Result<NewPushConfig, RpcError> {
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
pub(super) async fn task_question(
    state: &AppState,
    asker: &Asker,
    task_id: &str,
) -> Result<i64, RpcError> {
    Ok(own_task(state, asker, task_id).await?.question.id)
}

/// A push config service refusal: a missing task is `-32001`, the rest as usual.
pub(super) fn push_refusal(task_id: &str) -> impl Fn(ServiceError) -> RpcError + '_ {
    move |err| match err {
        ServiceError::NotFound(_) => RpcError::task_not_found(task_id),
        other => RpcError::from(other),
    }
}

pub(super) async fn create_push_config(
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
pub(super) struct PushConfigRef {
    task_id: String,
    id: String,
}

pub(super) async fn get_push_config(
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

pub(super) async fn delete_push_config(
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
pub(super) struct ListPushConfigsParams {
    task_id: String,
}

pub(super) async fn list_push_configs(
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
