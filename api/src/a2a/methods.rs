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
//!
//! By method family: `SendMessage` (`send`), the task reads and cancel (`tasks`), and the push
//! notification configs (`push`).

mod push;
mod send;
mod tasks;

use push::{create_push_config, delete_push_config, get_push_config, list_push_configs};
use send::send_message;
use tasks::{cancel_task, get_task, list_tasks};

use serde_json::Value;

use super::{RpcError, codes, cut};
use crate::service::agents::registry::Asker;
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
