//! Agents: the registry and its secrets, MCP tokens, A2A tasks, and the outbox of events each
//! agent receives.

pub mod a2a_tasks;
pub mod agent_tokens;
pub mod outbox;
pub mod registry;
