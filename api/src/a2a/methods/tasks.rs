//! `GetTask`, `ListTasks` and `CancelTask`: an agent's own tasks, and another agent's task not
//! found exactly like one that does not exist.

use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{PAGE_DEFAULT, PAGE_MAX};
use crate::a2a::task::{self, TaskState, task_json};
use crate::a2a::{RpcError, codes, cut};
use crate::error::ServiceError;
use crate::service::agents::a2a_tasks;
use crate::service::agents::registry::Asker;
use crate::service::questions::lookup::{self, OwnCursor, OwnQuestion, QuestionRef};
use crate::service::questions::withdrawal::{WithdrawOutcome, withdraw};
use crate::state::AppState;

/// The question `id` of `asker`, with its answer.
pub(super) async fn read_own(
    state: &AppState,
    asker: &Asker,
    id: i64,
) -> Result<OwnQuestion, RpcError> {
    lookup::await_own(&state.db, &state.live, asker, &QuestionRef::Id(id), None)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound(_) => RpcError::task_not_found(&task::task_id(id)),
            other => RpcError::from(other),
        })
}

/// The task `task_id` of `asker`: not found for an id that names none of its questions.
pub(super) async fn own_task(
    state: &AppState,
    asker: &Asker,
    task_id: &str,
) -> Result<OwnQuestion, RpcError> {
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
pub(super) struct TaskIdParams {
    id: String,
    #[serde(default)]
    history_length: Option<i64>,
}

pub(super) async fn get_task(
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

pub(super) async fn cancel_task(
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
pub(super) struct ListTasksParams {
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

pub(super) async fn list_tasks(
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
