//! The knowledge tools: `search_knowledge` and `use_knowledge`, over the services the signed
//! knowledge routes call.

use serde_json::{Value, json};

use super::arguments::IdArg;
use super::arguments::{SearchKnowledge, UseKnowledge};
use crate::domain::intake::Identifier;
use crate::domain::knowledge::{AgentSearch, KnowledgeSearchRequest, NewReuse, ReuseRequest};
use crate::error::ServiceError;
use crate::rest::views::{KnowledgeResult, KnowledgeReuseResponse};
use crate::service::agents::registry::Asker;
use crate::service::{knowledge, knowledge::reuse};
use crate::state::AppState;
use askloop_wire::Field;

pub(super) async fn search_knowledge(
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

pub(super) async fn use_knowledge(
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
