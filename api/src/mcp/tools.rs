//! The MCP tools (docs/contract.md#mcp): their inputs, JSON-schema'd for the client, and
//! what each does — parse, call the same service the signed REST route calls, shape the result.
//! Nothing here knows the MCP SDK: a tool takes the calling agent and its arguments and returns
//! a JSON result or the [`ServiceError`] the REST route would have answered with.
//!
//! By job: the argument types (`arguments`), the listed specs (`specs`), and the tools
//! themselves by area (`questions`, `knowledge`); this module dispatches a call by name.

mod arguments;
mod knowledge;
mod questions;
mod specs;
#[cfg(test)]
mod tests;

pub use arguments::{
    AddResearch, AnswersArg, AskExpert, DelegateTask, GetAnswer, IdArg, ListQuestions, OptionArg,
    SearchKnowledge, StatusArg, UrgencyArg, UseKnowledge, WithdrawQuestion,
};
pub use questions::{answer_json, ask_expert, derived_external_id};
pub use specs::{ToolSpec, specs};

use knowledge::{search_knowledge, use_knowledge};
use questions::{add_research, delegate_task, get_answer, list_questions, withdraw_question};

use serde_json::{Map, Value};

use crate::domain::text::first_control_character;
use crate::error::ServiceError;
use crate::service::agents::registry::Asker;
use crate::state::AppState;

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
