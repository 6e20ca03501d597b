//! The GraphQL API (docs/contract.md#graphql): the schema is merged from one part per area;
//! resolvers are thin (parse → service → map) and return GraphQL types, never entities.

use std::sync::Arc;

use async_graphql::http::GraphiQLSource;
use async_graphql::{Context, ErrorExtensions, MergedObject, MergedSubscription, Response, Schema};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};
use sea_orm::DatabaseConnection;

use crate::auth::{Caller, LoginThrottle, resolve_caller};
use crate::config::Config;
use crate::live::LiveHub;
use crate::startup::AppState;

mod accounts;
mod admin;
mod deliveries;
mod live;
mod money;
mod niches;
mod questions;
mod scores;
pub mod socket;
pub mod types;

/// How deep a query may nest.
pub const MAX_DEPTH: usize = 12;
/// How costly a query may be (each field counts 1 unless it says otherwise).
pub const MAX_COMPLEXITY: usize = 2_000;

/// Every query, merged from the areas.
#[derive(MergedObject, Default)]
#[graphql(name = "Query")]
pub struct QueryRoot(
    accounts::AccountQuery,
    niches::NicheQuery,
    questions::QuestionQuery,
    scores::ScoreQuery,
    admin::AdminQuery,
    deliveries::DeliveryQuery,
    money::MoneyQuery,
);

/// Every mutation, merged from the areas.
#[derive(MergedObject, Default)]
#[graphql(name = "Mutation")]
pub struct MutationRoot(
    accounts::AccountMutation,
    questions::QuestionMutation,
    admin::AdminMutation,
    deliveries::DeliveryMutation,
    money::MoneyMutation,
    money::PayoutMutation,
);

/// Every subscription.
#[derive(MergedSubscription, Default)]
#[graphql(name = "Subscription")]
pub struct SubscriptionRoot(live::LiveSubscription, money::MoneySubscription);

/// askloop's schema.
pub type AskloopSchema = Schema<QueryRoot, MutationRoot, SubscriptionRoot>;

/// Build the schema with its limits and the data resolvers read. Without a hub (the SDL
/// export) subscriptions answer with an error.
pub fn build_schema(
    db: DatabaseConnection,
    config: Arc<Config>,
    throttle: Arc<LoginThrottle>,
    hub: Option<LiveHub>,
) -> AskloopSchema {
    let mut builder = Schema::build(
        QueryRoot::default(),
        MutationRoot::default(),
        SubscriptionRoot::default(),
    )
    .limit_depth(MAX_DEPTH)
    .limit_complexity(MAX_COMPLEXITY)
    .data(db)
    .data(config)
    .data(throttle);
    if let Some(hub) = hub {
        builder = builder.data(hub);
    }
    builder.finish()
}

/// The SDL of the schema, as committed in `schema.graphql`.
pub fn sdl() -> String {
    build_schema(
        DatabaseConnection::default(),
        Arc::new(Config::defaults()),
        Arc::new(LoginThrottle::default()),
        None,
    )
    .sdl()
}

/// Tell the live hub a mutation wrote something (a hint; it never fails the mutation).
pub fn changed(ctx: &Context<'_>) {
    if let Ok(hub) = ctx.data::<LiveHub>() {
        hub.changed();
    }
}

/// The caller of the current request (inserted by [`execute`]).
pub fn caller_of<'a>(ctx: &Context<'a>) -> async_graphql::Result<&'a Caller> {
    ctx.data::<Caller>()
}

/// `POST /graphql`: resolve the caller once, then run the operation with it.
pub async fn execute(
    State(state): State<AppState>,
    headers: HeaderMap,
    request: GraphQLRequest,
) -> GraphQLResponse {
    match resolve_caller(&headers, &state, chrono::Utc::now()).await {
        Ok(caller) => state
            .schema
            .execute(request.into_inner().data(caller))
            .await
            .into(),
        Err(err) => {
            Response::from_errors(vec![err.extend().into_server_error(Default::default())]).into()
        }
    }
}

/// `GET /graphql`: GraphiQL.
pub async fn graphiql() -> impl IntoResponse {
    Html(
        GraphiQLSource::build()
            .endpoint("/graphql")
            .subscription_endpoint("/graphql/ws")
            .finish(),
    )
}
