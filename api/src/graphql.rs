//! The GraphQL API (design §11): the schema is merged from one part per area; resolvers are thin
//! (parse → service → map) and return GraphQL types, never entities.

use async_graphql::http::GraphiQLSource;
use async_graphql::{EmptyMutation, EmptySubscription, MergedObject, Schema};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::extract::State;
use axum::response::{Html, IntoResponse};
use sea_orm::DatabaseConnection;

use crate::startup::AppState;

mod niches;

/// How deep a query may nest.
pub const MAX_DEPTH: usize = 12;
/// How costly a query may be (each field counts 1 unless it says otherwise).
pub const MAX_COMPLEXITY: usize = 2_000;

/// Every query, merged from the areas.
#[derive(MergedObject, Default)]
#[graphql(name = "Query")]
pub struct QueryRoot(niches::NicheQuery);

/// askloop's schema.
pub type AskloopSchema = Schema<QueryRoot, EmptyMutation, EmptySubscription>;

/// Build the schema with its limits and the data resolvers read.
pub fn build_schema(db: DatabaseConnection) -> AskloopSchema {
    Schema::build(QueryRoot::default(), EmptyMutation, EmptySubscription)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .data(db)
        .finish()
}

/// The SDL of the schema, as committed in `schema.graphql`.
pub fn sdl() -> String {
    build_schema(DatabaseConnection::default()).sdl()
}

/// `POST /graphql`.
pub async fn execute(State(state): State<AppState>, request: GraphQLRequest) -> GraphQLResponse {
    state.schema.execute(request.into_inner()).await.into()
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
