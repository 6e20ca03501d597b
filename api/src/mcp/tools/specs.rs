//! The tools as `tools/list` shows them: each one's name, what it is for, and the JSON schema
//! generated from its argument type, so the schema describes what really parses.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::arguments::{
    AddResearch, AskExpert, DelegateTask, GetAnswer, ListQuestions, SearchKnowledge, UseKnowledge,
    WithdrawQuestion,
};

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
