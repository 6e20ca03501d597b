//! The GraphQL API (docs/contract.md#graphql): the schema is merged from one part per area;
//! resolvers are thin (parse → service → map) and return GraphQL types, never entities. The
//! HTTP handlers that serve it are in `http`, and the websocket that serves it over
//! `graphql-transport-ws` is the live subsystem's (`live::socket`); the endpoint state both share
//! and the HTTP routes are here, so neither handler imports the other.

use std::sync::Arc;

use crate::db::Db;
use async_graphql::dataloader::DataLoader;
use async_graphql::{Context, MergedObject, MergedSubscription, Schema};
use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::routing::get;
use tokio::sync::Semaphore;

use crate::auth::Caller;
use crate::config::Config;
use crate::live::adopt::ticket::Adoptable;
use crate::live::shared::SharedPayloads;
use crate::live::socket::gate::{HANDSHAKES_AT_ONCE, HandshakeGate, OVERLOADED_AFTER};
use crate::live::{ChangeHint, CredentialsEnded, LiveHub};
use crate::net::admission::{OpenPerAddress, RatePerAddress};
use crate::net::login_throttle::LoginThrottle;

mod accounts;
mod admin;
mod agents;
mod deliveries;
pub mod enums;
pub mod error_door;
pub mod http;
pub(crate) mod knowledge;
pub mod limits;
pub(crate) mod live;
mod money;
mod niches;
pub mod one_login;
mod questions;
pub(crate) mod queue_change;
mod reach;
mod scores;
pub mod text_rule;
pub mod triage;
pub mod types;

/// Every query, merged from the areas.
#[derive(MergedObject, Default)]
#[graphql(name = "Query")]
pub struct QueryRoot(
    accounts::AccountQuery,
    niches::NicheQuery,
    questions::QuestionQuery,
    scores::ScoreQuery,
    admin::AdminQuery,
    admin::AdminDeskQuery,
    deliveries::DeliveryQuery,
    money::MoneyQuery,
    agents::AgentQuery,
    reach::ReachQuery,
    knowledge::KnowledgeQuery,
    triage::ActivityQuery,
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
    agents::AgentMutation,
    reach::ReachMutation,
    knowledge::KnowledgeMutation,
    triage::PresenceMutation,
);

/// Every subscription.
#[derive(MergedSubscription, Default)]
#[graphql(name = "Subscription")]
pub struct SubscriptionRoot(
    live::LiveSubscription,
    money::MoneySubscription,
    triage::PresenceSubscription,
);

/// askloop's schema.
pub type AskloopSchema = Schema<QueryRoot, MutationRoot, SubscriptionRoot>;

/// What the GraphQL handlers reach: the schema, and what resolving a caller and serving a
/// websocket need.
#[derive(Clone)]
pub struct GraphqlEndpoint {
    /// The schema, with its limits and data.
    pub schema: AskloopSchema,
    /// The database pool (to resolve callers).
    pub db: Db,
    /// The configuration.
    pub config: Arc<Config>,
    /// The live hub (its stop closes websockets on shutdown).
    pub live: LiveHub,
    /// One permit per open websocket, up to `ASKLOOP_MAX_WEBSOCKETS`.
    pub sockets: Arc<Semaphore>,
    /// One permit per anonymous websocket still waiting for `connection_init`.
    pub uninitialised: Arc<Semaphore>,
    /// Anonymous websockets open per address, up to `ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS`.
    pub anonymous: Arc<OpenPerAddress>,
    /// Anonymous upgrades per address, at `ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND`.
    pub handshakes: Arc<RatePerAddress>,
    /// Turns for the credential lookups of websocket handshakes (`live/socket/gate.rs`).
    pub handshake_gate: Arc<HandshakeGate>,
}

impl GraphqlEndpoint {
    /// The endpoint for `schema`, with socket permits sized from the configuration.
    pub fn new(schema: AskloopSchema, db: Db, config: Arc<Config>, live: LiveHub) -> Self {
        Self {
            sockets: Arc::new(Semaphore::new(config.live.max_sockets)),
            uninitialised: Arc::new(Semaphore::new(config.live.max_uninitialised)),
            anonymous: OpenPerAddress::new(config.live.max_anonymous_per_address),
            handshakes: Arc::new(RatePerAddress::new(config.live.handshakes_per_second)),
            handshake_gate: HandshakeGate::new(HANDSHAKES_AT_ONCE, OVERLOADED_AFTER),
            schema,
            db,
            config,
            live,
        }
    }
}

impl FromRef<GraphqlEndpoint> for Db {
    fn from_ref(endpoint: &GraphqlEndpoint) -> Self {
        endpoint.db.clone()
    }
}

impl FromRef<GraphqlEndpoint> for Arc<Config> {
    fn from_ref(endpoint: &GraphqlEndpoint) -> Self {
        endpoint.config.clone()
    }
}

/// `/graphql`, ready to merge into any router (`/graphql/ws` is `live::socket::routes`).
pub fn routes<S>(endpoint: GraphqlEndpoint) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    // The body limit applies before a byte is read: `execute` takes the body through axum's
    // limited extractor, never the library's unbounded one.
    let limit = endpoint.config.graphql_max_body_bytes;
    Router::new()
        .route(
            "/graphql",
            get(http::graphiql)
                .post(http::execute)
                .layer(DefaultBodyLimit::max(limit)),
        )
        .with_state(endpoint)
}

/// Build the schema with its limits (`limits`: depth, selections and introspection measured by
/// askloop; the node count as the library's complexity, capped at `ASKLOOP_GRAPHQL_MAX_NODES`),
/// the one text rule on every string argument (`text_rule`) and the data resolvers read. Without a hub (the SDL export) subscriptions answer with an error.
pub fn build_schema(
    db: Db,
    config: Arc<Config>,
    throttle: Arc<LoginThrottle>,
    hub: Option<LiveHub>,
    shared: Arc<SharedPayloads>,
) -> AskloopSchema {
    let max_nodes = config.graphql_max_nodes;
    let mut builder = Schema::build(
        QueryRoot::default(),
        MutationRoot::default(),
        SubscriptionRoot::default(),
    )
    .limit_complexity(max_nodes)
    // The door first: it sees every error the limits raise.
    .extension(error_door::ErrorDoor)
    .extension(one_login::OneLoginPerRequest)
    // Before anything runs, so no resolver (and no database) sees a refused character.
    .extension(text_rule::TextRule)
    .extension(limits::QueryLimits::new(max_nodes))
    .extension(Adoptable::default())
    .data(DataLoader::new(
        types::NicheLoader { db: db.clone() },
        tokio::spawn,
    ))
    .data(db)
    .data(config)
    .data(throttle)
    .data(shared)
    .data(Arc::new(
        crate::service::questions::presence::Presence::default(),
    ));
    if let Some(hub) = hub {
        builder = builder.data(hub);
    }
    builder.finish()
}

/// The SDL of the schema, as committed in `schema.graphql`.
pub fn sdl() -> String {
    build_schema(
        Db::disconnected(),
        Arc::new(Config::defaults()),
        Arc::new(LoginThrottle::default()),
        None,
        Arc::new(SharedPayloads::new(Default::default())),
    )
    .sdl()
}

/// The hint a mutation hands to the service that writes (none without a hub: the SDL export).
pub fn hint(ctx: &Context<'_>) -> ChangeHint {
    ctx.data::<LiveHub>()
        .map(LiveHub::hint)
        .unwrap_or_else(|_| ChangeHint::none())
}

/// What a mutation that ends a session or revokes a key tells this instance's websockets
/// through (nobody without a hub).
pub fn credentials_ended(ctx: &Context<'_>) -> CredentialsEnded {
    ctx.data::<LiveHub>()
        .map(LiveHub::credentials_ended)
        .unwrap_or_else(|_| CredentialsEnded::none())
}

/// The pool and caller behind a write, once the transport's own rule holds: a write with a
/// session cookie must come from askloop's own pages. Who may make the write is the service's
/// to decide.
pub(crate) fn writer<'a>(ctx: &Context<'a>) -> async_graphql::Result<(&'a Db, &'a Caller)> {
    use crate::graphql::error_door::GqlResultExt;
    let db = ctx.data::<Db>()?;
    let caller = caller_of(ctx)?;
    caller.check_write().gql()?;
    Ok((db, caller))
}

/// The caller of the current request (inserted by the HTTP and websocket handlers).
pub fn caller_of<'a>(ctx: &Context<'a>) -> async_graphql::Result<&'a Caller> {
    ctx.data::<Caller>()
}
